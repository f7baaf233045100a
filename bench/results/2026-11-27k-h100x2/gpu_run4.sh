#!/usr/bin/env bash
# session 46, call 4 (two GPUs), main at a8dc1a0 (s46-quant merged: row reductions in lane groups, small
# vectors in every warp, fewer barriers). GPU 0: silu_mul_quant_fp8 / attn_res / rms_norm beside Triton
# (TRITIUM_AUTOTUNE=tune, one round), then every kernel's check and the reduction suites on CUDA.
# GPU 1: the GPT under TRITIUM_AUTOTUNE=tune (call 3 ran the default auto: tf32 0.62 x eager, bf16 0.95 x),
# tf32 and bf16, cold 20 steps then 300 warm, beside PyTorch eager again.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-330}
export T0 END OUT; export -f el
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
( sleep $END; echo "WATCHDOG at $(el)"; pkill -9 -f tritium-tests; pkill -9 -f compare_; pkill -9 -f tritium-kernels; pkill -9 -f train-; pkill -9 -f torch_gpt ) > $OUT/logs/watchdog.txt 2>&1 &
W=$!
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j32 --target tritium-kernels train-gpt > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built tools $(el)"
(cmake --build /tmp/bg -j24 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 error /tmp/bt.log) > $OUT/logs/tests_build.txt 2>&1 &
export LD_LIBRARY_PATH=/tmp/bg
suite() { # GPU, suite
  local left=$(( END - 5 - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout -k 5 $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$2.txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite
( export CUDA_VISIBLE_DEVICES=0
  TRITIUM_CACHE_DIR=/tmp/kc0 TRITIUM_AUTOTUNE=tune timeout 120 python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels silu_mul_quant_fp8,attn_res,rms_norm --rounds 1 --timeout 110 > $OUT/logs/kern_quant.txt 2>&1; echo "kernels rc=$? [$(el)]"
  while ! grep -q "tests built" $OUT/logs/tests_build.txt 2>/dev/null; do sleep 2; done
  left=$(( END - 8 - $(el) ))
  ( TRITIUM_CACHE_DIR=/tmp/kchk timeout $left /tmp/bg/kernels/tritium-kernels --check all --backend cuda > $OUT/logs/kernel_checks.txt 2>&1; echo "kernel checks rc=$? [$(el)]" ) &
  printf '%s\n' test_reductions test_ops_reduce test_nn_gpt test_cuda_codegen_row_reduce test_one_warp_reductions test_ops_reduce_stats test_ops_softmax test_ops_sort test_nn_norm test_nn_loss test_cuda_scans test_attention test_optim_cuda_codegen test_sampling | xargs -P 6 -I{} bash -c 'suite 0 {}'
  wait
) > $OUT/logs/g0.txt 2>&1 &
G0=$!
( export CUDA_VISIBLE_DEVICES=1 TRITIUM_AUTOTUNE=tune
  for mode in tf32 bf16; do
    flag=$([ $mode = tf32 ] && echo "--tf32" || echo "--amp bf16")
    G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0 $flag"
    P="bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --steps 300 $flag"
    TRITIUM_CACHE_DIR=/tmp/gt timeout 120 $G --steps 20 > $OUT/logs/gpt_cold_$mode.txt 2>&1; echo "gpt tune $mode cold rc=$? [$(el)]: $(grep -i final $OUT/logs/gpt_cold_$mode.txt | tail -1)"
    TRITIUM_CACHE_DIR=/tmp/gt timeout 60 $G --steps 300 > $OUT/logs/gpt_$mode.txt 2>&1; echo "gpt tune $mode rc=$?: $(grep -i final $OUT/logs/gpt_$mode.txt | tail -1) [$(el)]"
    left=$(( END - 10 - $(el) )); [ $left -gt 30 ] && { timeout $left python3 $P > $OUT/logs/torch_gpt_$mode.txt 2>&1; echo "torch eager $mode rc=$?: $(grep steady $OUT/logs/torch_gpt_$mode.txt) [$(el)]"; }
  done
) > $OUT/logs/g1.txt 2>&1 &
G1=$!
while kill -0 $G0 2>/dev/null || kill -0 $G1 2>/dev/null; do sleep 2; [ $(el) -gt $(( END + 15 )) ] && break; done
kill $W 2>/dev/null
echo "== gpu0"; cat $OUT/logs/g0.txt
grep -E "geomean|worst" $OUT/logs/kern_quant.txt; grep -E "ratio|[0-9]\.[0-9]{3}$" $OUT/logs/kern_quant.txt | cut -c1-110
grep -vE " OK$|^time " $OUT/logs/kernel_checks.txt | head -8 | cut -c1-250; echo "kernel checks OK lines: $(grep -c " OK" $OUT/logs/kernel_checks.txt)"
echo "== gpu1"; cat $OUT/logs/g1.txt $OUT/logs/tests_build.txt $OUT/logs/watchdog.txt
for f in $OUT/logs/t_*.txt; do grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | head -5 | cut -c1-300; }; done
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
