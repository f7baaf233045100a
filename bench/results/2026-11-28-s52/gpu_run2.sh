#!/usr/bin/env bash
# session 52, call 2 (two GPUs): call 1 ran out of time in test_dot / test_matmul (cold NVRTC compiles,
# one case after another). Here the value suites' 84 test cases (value_cases.txt, from --list_content)
# run as separate processes, 8 at a time on GPU 0; GPU 1 meanwhile times implicit_gemm_conv beside its
# original (call 1 cut it) and tutorial 06 at N 4096 beside Triton (one round).
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs/cases
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-580}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j30 --target tritium-kernels tritium-tests 06-fused-attention > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures T0 END OUT
one() {  # one test case on GPU 0
  local c=$1 f=$OUT/logs/cases/$(echo $1 | tr / _).txt left=$(( END - 10 - $(el) ))
  [ $left -lt 10 ] && { echo "$c NOT-RUN"; return; }
  CUDA_VISIBLE_DEVICES=0 TRITIUM_CACHE_DIR=/tmp/tc0 timeout $left /tmp/bg/tests/tritium-tests --run_test=$c > $f 2>&1
  local rc=$?; echo "$c rc=$rc [$(el)] $(grep -E 'No errors|failure' $f | tail -1)"
}
export -f one el
(xargs -P 8 -I{} bash -c 'one {}' < bench/results/2026-11-28-s52/value_cases.txt > $OUT/logs/values.txt 2>&1) &
(
  export CUDA_VISIBLE_DEVICES=1 TRITIUM_AUTOTUNE=tune
  TRITIUM_CACHE_DIR=/tmp/kc1 timeout $(( END - 250 )) python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels implicit_gemm_conv --rounds 1 > $OUT/logs/k_implicit_gemm_conv.txt 2>&1
  echo "implicit_gemm_conv rc=$? [$(el)] $(grep -i geomean $OUT/logs/k_implicit_gemm_conv.txt | tail -1)"
  left=$(( END - 5 - $(el) ))
  TRITIUM_CACHE_DIR=/tmp/kc1 timeout $left python3 bench/compare_attention.py --bin /tmp/bg/tutorials \
    --sizes 4096 --dims 128,64 --dtypes f16 --rounds 1 > $OUT/logs/t06.txt 2>&1; echo "t06 rc=$? [$(el)]"
) > $OUT/logs/gpu1.txt 2>&1 &
wait
sort -t' ' -k2 $OUT/logs/values.txt | grep -v "rc=0" ; echo "passed: $(grep -c 'rc=0' $OUT/logs/values.txt) of $(wc -l < bench/results/2026-11-28-s52/value_cases.txt)"
for f in $(grep -L "No errors" $OUT/logs/cases/*.txt); do echo "== $f"; grep -E "error|fatal" $f | head -5 | cut -c1-300; done
cat $OUT/logs/gpu1.txt; grep -A30 "^medians\|^ *mode" $OUT/logs/t06.txt | head -30; tail -15 $OUT/logs/k_implicit_gemm_conv.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
