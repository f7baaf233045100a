#!/usr/bin/env bash
# session 53, call 2 (one GPU): this stop's changes on CUDA. The reductions over dims on both sides of a
# kept one (two launches instead of a permuted copy), the pooling kernels' constant window strides
# (USH / USW meta-parameters) and the new lane-pattern test (its kernels run on every backend; the
# pattern loads themselves are CPU-only). Value suites as separate processes, 6 at a time; then the
# op table's pooling and sum rows beside PyTorch (2 rounds) for regressions.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j16 --target tritium-tests tritium-bench > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures
run_suite() { TRITIUM_CACHE_DIR=/tmp/tc_$1 timeout 200 /tmp/bg/tests/tritium-tests --run_test=$1 > $OUT/logs/$1.txt 2>&1; echo "$1 rc=$? $(grep -E 'No errors|failure' $OUT/logs/$1.txt | tail -1)"; grep -E "error:|error in" $OUT/logs/$1.txt | head -4 | cut -c1-300; }
export -f run_suite; export OUT
echo test_lane_patterns test_ops_reduce test_ops_reduce_autograd test_nn_pool test_cat_pool_codegen test_nn_conv test_gradcheck test_ops_reduce_stats | tr ' ' '\n' | xargs -P 6 -I{} bash -c 'run_suite {}'
echo "tests done $(el)"
TRITIUM_CACHE_DIR=/tmp/tcb TRITIUM_AUTOTUNE=tune timeout $(( 560 - $(el) )) python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda \
  --rounds 2 --filter '^(max_pool2d|avg_pool2d|max_pool1d|avg_pool1d|sum|mean) ' --json $OUT/ops_pool_sum.json > $OUT/logs/ops.txt 2>&1
echo "ops rc=$? [$(el)]"; tail -40 $OUT/logs/ops.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
