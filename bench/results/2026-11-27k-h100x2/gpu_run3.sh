#!/usr/bin/env bash
# session 46, call 3 (two GPUs), main after merging s46-polynorm and s46-cumsum (native bf16 + - * in the
# element-loop generator; scans in registers).
# GPU 0: the helpers' kernels beside Triton (steady speed, TRITIUM_AUTOTUNE=tune, one round), then
# their value checks on CUDA; the sort family and the gathers beside PyTorch (stop 45's sort_block,
# device checks and nll_loss, not yet timed). GPU 1: the parity fix (deferred checks) on CUDA, train-mnist's first epoch
# cold (the default TRITIUM_AUTOTUNE=auto; issue 28's bar <= 3 s), the GPT in tf32 and bf16 (default
# auto: a cold 20-step run fills the cache, then 300 steps) beside PyTorch eager.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-500}
export T0 END OUT; export -f el
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
( sleep $END; echo "WATCHDOG at $(el)"; pkill -9 -f tritium-tests; pkill -9 -f compare_; pkill -9 -f tritium-kernels; pkill -9 -f train-; pkill -9 -f torch_gpt ) > $OUT/logs/watchdog.txt 2>&1 &
W=$!
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j32 --target tritium-kernels tritium-bench train-mnist train-gpt > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built tools $(el)"
(cmake --build /tmp/bg -j24 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 error /tmp/bt.log) > $OUT/logs/tests_build.txt 2>&1 &
B=$!
export LD_LIBRARY_PATH=/tmp/bg
kern() { # gpu, kernels...
  export CUDA_VISIBLE_DEVICES=$1 TRITIUM_CACHE_DIR=/tmp/kc$1 TRITIUM_AUTOTUNE=tune; shift
  for group in "$@"; do
    local left=$(( END - 8 - $(el) )); [ $left -lt 30 ] && { echo "kernels $group NOT-RUN"; continue; }
    timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels $group --rounds 1 --timeout $left > $OUT/logs/kern_${group//,/_}.txt 2>&1
    echo "kernels $group rc=$? [$(el)]"
  done
}
suite() { # GPU, suite, [env]
  local left=$(( END - 5 - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  env $3 CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout -k 5 $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$2.txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
cmp_ops() { # name filter
  local left=$(( END - 8 - $(el) )); [ $left -lt 30 ] && { echo "ops $1 NOT-RUN"; return; }
  CUDA_VISIBLE_DEVICES=1 TRITIUM_CACHE_DIR=/tmp/ocache TRITIUM_AUTOTUNE=tune timeout $left python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter "$2" --dtypes f32,bf16 --json $OUT/logs/ops_$1.json > $OUT/logs/ops_$1.txt 2>&1
  echo "ops $1 rc=$? [$(el)] $(grep geomean $OUT/logs/ops_$1.txt)"
}
export -f kern suite cmp_ops
( kern 0 poly_norm,grpo_loss cumsum attn_res,rms_norm
  while ! grep -q "tests built" $OUT/logs/tests_build.txt 2>/dev/null; do sleep 2; done
  left=$(( END - 8 - $(el) ))
  ( CUDA_VISIBLE_DEVICES=0 TRITIUM_CACHE_DIR=/tmp/kchk timeout $left /tmp/bg/kernels/tritium-kernels --check all --backend cuda > $OUT/logs/kernel_checks.txt 2>&1; echo "kernel checks rc=$? [$(el)]" ) &
  printf '%s\n' test_attention test_nn_gpt test_cuda_codegen_row_loops test_cuda_codegen test_contract_fma test_reductions test_cuda_scans test_cuda_codegen_loops test_ops_reduce_stats test_ops_reduce_autograd test_amp_autocast test_tensor_indexing test_sampling test_elementwise test_ops_elementwise test_nn_module | xargs -P 6 -I{} bash -c 'suite 0 {}'
  wait
) > $OUT/logs/g0.txt 2>&1 &
G0=$!
( export CUDA_VISIBLE_DEVICES=1
  rm -rf /tmp/mcache; TRITIUM_CACHE_DIR=/tmp/mcache timeout 90 /tmp/bg/tools/train-mnist --backend cuda --epochs 2 --data .carry/fashion-mnist > $OUT/logs/mnist_cold_auto.txt 2>&1
  echo "mnist cold auto rc=$? [$(el)]"; grep -i "epoch" $OUT/logs/mnist_cold_auto.txt | head -3
  for mode in tf32 bf16; do
    flag=$([ $mode = tf32 ] && echo "--tf32" || echo "--amp bf16")
    G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0 $flag"
    P="bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --steps 300 $flag"
    TRITIUM_CACHE_DIR=/tmp/gcache timeout 120 $G --steps 20 > $OUT/logs/gpt_cold_$mode.txt 2>&1; echo "gpt $mode cold rc=$? [$(el)]"; grep -i final $OUT/logs/gpt_cold_$mode.txt | tail -1
    TRITIUM_CACHE_DIR=/tmp/gcache timeout 60 $G --steps 300 > $OUT/logs/gpt_$mode.txt 2>&1; echo "gpt $mode rc=$?: $(grep -i final $OUT/logs/gpt_$mode.txt | tail -1) [$(el)]"
    left=$(( END - 10 - $(el) )); [ $left -gt 40 ] && { timeout $left python3 $P > $OUT/logs/torch_gpt_$mode.txt 2>&1; echo "torch eager $mode rc=$?: $(grep steady $OUT/logs/torch_gpt_$mode.txt) [$(el)]"; }
  done
  while ! grep -q "tests built" $OUT/logs/tests_build.txt 2>/dev/null; do sleep 2; done
  suite 1 test_torch_parity TRITIUM_PARITY_OPS=cross_entropy,cross_entropy_loss,nll_loss,nll_loss2d,embedding,gather,index_select,scatter_add
  cmp_ops sort '^(sort|argsort|topk|kthvalue|median|median\.dim|msort)( |$)'
  cmp_ops gather '^(gather|scatter_add|index_select|argmax|argmin|nll_loss|tan|erfc|addr)( |$)'
) > $OUT/logs/g1.txt 2>&1 &
G1=$!
while kill -0 $G0 2>/dev/null || kill -0 $G1 2>/dev/null; do sleep 2; [ $(el) -gt $(( END + 15 )) ] && break; done
kill $W 2>/dev/null
echo "== gpu0"; cat $OUT/logs/g0.txt
for f in $OUT/logs/kern_*.txt; do grep -iE "geomean|worst|error|fail" $f | head -4 | sed "s|^|$(basename $f): |" | cut -c1-250; done
grep -E "FAIL|error|OK" $OUT/logs/kernel_checks.txt | grep -v " OK$" | head -8 | cut -c1-250; echo "kernel checks OK lines: $(grep -c " OK" $OUT/logs/kernel_checks.txt)"
echo "== gpu1"; cat $OUT/logs/g1.txt $OUT/logs/tests_build.txt $OUT/logs/watchdog.txt
for f in $OUT/logs/t_*.txt; do grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | head -5 | cut -c1-300; }; done
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
