#!/usr/bin/env bash
# session 45, call 3 (two GPUs, a short one): call 2 ran past its 600 s and returned only 8 of its logs
# (tutorial 06's --bench printed nothing in ~450 s). Diagnose with a watchdog that kills everything at END
# and tars what finished. GPU 0: tutorial 06's check with the compile log, then its forward / backward
# bench (one round). GPU 1: the value suites the stop's branches touched, each under a hard timeout.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-330}
export T0 END OUT; export -f el
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
( sleep $END; echo "WATCHDOG at $(el)"; pkill -9 -f tritium-tests; pkill -9 -f 06-fused-attention; pkill -9 -f compare_attention; pkill -9 -f tritium-kernels ) > $OUT/logs/watchdog.txt 2>&1 &
W=$!
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j32 --target 06-fused-attention > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built t06 $(el)"
(cmake --build /tmp/bg -j32 --target tritium-tests tritium-kernels > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 error /tmp/bt.log) > $OUT/logs/tests_build.txt 2>&1 &
B=$!
export LD_LIBRARY_PATH=/tmp/bg
( export CUDA_VISIBLE_DEVICES=0 TRITIUM_CACHE_DIR=/tmp/acache
  TRITIUM_LOG=compile timeout -k 5 100 /tmp/bg/tutorials/06-fused-attention --backend cuda > $OUT/logs/t06_check.txt 2>&1; echo "t06 check rc=$? [$(el)]"
  for m in fwd bwd; do
    left=$(( END - 10 - $(el) )); [ $left -lt 30 ] && { echo "attn $m NOT-RUN"; continue; }
    timeout -k 5 $left python3 bench/compare_attention.py --bin /tmp/bg/tutorials --sizes 4096 --dims 64,128 --dtypes f16 --modes $m --rounds 1 --timeout $left > $OUT/logs/attn_$m.txt 2>&1; echo "attn $m rc=$? [$(el)]"
  done
) > $OUT/logs/g0.txt 2>&1 &
G0=$!
wait $B
suite() { # GPU, suite
  local left=$(( END - 5 - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout -k 5 $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$2.txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite
( printf '%s\n' test_layout_attention_fwd test_layout_attention_bwd test_layout_ring_register_loads test_attention test_layout_dot_ports test_layouts test_layout_dot_kinds test_layout_wgmma test_layout_tma test_layout_epilogue test_passes test_autograd_part_grads test_autotune_policy test_device_checks test_tensor_indexing test_nn_loss test_atomics test_control_flow test_contract_fma test_cuda_codegen_row_loops test_reductions test_cuda_scans test_ops_sort test_nn_gpt test_matmul test_ops_unary_math | xargs -P 16 -I{} bash -c 'suite 1 {}' ) > $OUT/logs/g1.txt 2>&1 &
G1=$!
while kill -0 $G0 2>/dev/null || kill -0 $G1 2>/dev/null; do sleep 2; [ $(el) -gt $(( END + 15 )) ] && break; done
kill $W 2>/dev/null
echo "== gpu0"; cat $OUT/logs/g0.txt; grep -iE "error|fail|mismatch|hang|OK|max" $OUT/logs/t06_check.txt | head -12 | cut -c1-250; tail -4 $OUT/logs/t06_check.txt | cut -c1-250
for m in fwd bwd; do tail -8 $OUT/logs/attn_$m.txt 2>/dev/null; done
echo "== gpu1"; cat $OUT/logs/tests_build.txt $OUT/logs/g1.txt $OUT/logs/watchdog.txt
for f in $OUT/logs/t_*.txt; do grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | head -5 | cut -c1-300; }; done
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
