#!/usr/bin/env bash
# session 52, call 3 (one GPU): this stop's changes that reach CUDA code - index_copy's body factored
# into index_tile (shared with the CPU-only index_accumulate) - and the sort / topk path's shared key
# helper: the indexing and sorting suites and their PyTorch fixtures on CUDA, each suite a process
# (6 at a time). Then tutorial 03 beside Triton and cuBLAS (one round), alone on the GPU: stop 51's
# layout-generator changes had not been timed on it.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-570}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j16 --target tritium-tests 03-matrix-multiplication > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures T0 END OUT
one() {
  local c=$1 f=$OUT/logs/$(echo $1 | tr '/=,' '___').txt left=$(( END - 200 - $(el) ))
  [ $left -lt 10 ] && { echo "$c NOT-RUN"; return; }
  if [ "$c" = parity ]; then
    TRITIUM_PARITY_OPS=index_add,index_put,scatter,scatter.value,scatter_add,scatter_reduce,gather,topk,sort,index_select \
      TRITIUM_CACHE_DIR=/tmp/tc timeout $left /tmp/bg/tests/tritium-tests --run_test=test_torch_parity > $f 2>&1
  else
    TRITIUM_CACHE_DIR=/tmp/tc timeout $left /tmp/bg/tests/tritium-tests --run_test=$c > $f 2>&1
  fi
  echo "$c rc=$? [$(el)] $(grep -E 'No errors|failure' $f | tail -1)"
}
export -f one el
printf '%s\n' test_tensor_indexing test_ops_sort test_ops_reduce_autograd test_index_width test_nn_loss \
  test_ops_grad_fast_paths test_atomics test_nn_embedding parity | xargs -P 6 -I{} bash -c 'one {}' > $OUT/logs/values.txt 2>&1
cat $OUT/logs/values.txt
for f in $(grep -L "No errors" $OUT/logs/*.txt | grep -v values); do echo "== $f"; grep -E "error|fatal" $f | head -5 | cut -c1-300; done
left=$(( END - 5 - $(el) ))
TRITIUM_CACHE_DIR=/tmp/tc TRITIUM_AUTOTUNE=tune timeout $left python3 bench/compare_matmul.py --bin /tmp/bg/tutorials \
  --sizes 4096,8192 --dtypes f16,bf16 --rounds 1 > $OUT/logs/t03.txt 2>&1; echo "t03 rc=$? [$(el)]"
tail -14 $OUT/logs/t03.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
