#!/usr/bin/env bash
# session 53, call 3 (one GPU): the value suites touched since call 2 on CUDA - the strided
# element-wise kernel's COLR bit (flip: a column stride of -1 as a constant), the NCHW store test
# (tiles stored down their columns: CPU-only code, the test runs on every backend), the lane-pattern
# test's i / 8 case - as separate processes, 6 at a time; test_nn_conv alone with a longer limit
# (call 2 cut it at 200 s after it printed no errors); then flip beside PyTorch (2 rounds).
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j16 --target tritium-tests tritium-bench > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures
run_suite() { TRITIUM_CACHE_DIR=/tmp/tc_$1 timeout ${2:-200} /tmp/bg/tests/tritium-tests --run_test=$1 > $OUT/logs/$1.txt 2>&1; echo "$1 rc=$? $(grep -E 'No errors|failure' $OUT/logs/$1.txt | tail -1)"; grep -E "error:|error in" $OUT/logs/$1.txt | head -4 | cut -c1-300; }
export -f run_suite; export OUT
run_suite test_nn_conv 330 > $OUT/logs/conv_line.txt 2>&1 &
echo test_tensor_shape test_ops_elementwise test_lane_patterns test_transposed_loads test_ops_reduce | tr ' ' '\n' | xargs -P 5 -I{} bash -c 'run_suite {}'
echo "tests done $(el)"
TRITIUM_CACHE_DIR=/tmp/tcb timeout $(( 500 - $(el) )) python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda \
  --rounds 2 --filter '^(flip|roll) ' --json $OUT/ops_flip.json > $OUT/logs/ops.txt 2>&1
echo "ops rc=$? [$(el)]"; grep -E "^\| (flip|roll)|geomean" $OUT/logs/ops.txt
wait; cat $OUT/logs/conv_line.txt; echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
