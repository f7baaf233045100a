#!/usr/bin/env bash
# session 50, call 5 (one H100): the session's changes that reach CUDA. round_half_even (ops/math_approx.h:
# +/- 2^23) in round and remainder, checked by test_ops_unary_math / test_ops_math_hard_points /
# test_ops_elementwise on CUDA, and timed beside PyTorch; the host block cache (runtime/host_block_cache.h)
# under test_memory_stats and test_data (pinned batches) on a machine with a GPU.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-400}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j18 --target tritium-tests tritium-bench > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures
for t in test_ops_unary_math test_ops_math_hard_points test_ops_elementwise test_memory_stats test_data; do
  TRITIUM_CACHE_DIR=/tmp/tc timeout 90 /tmp/bg/tests/tritium-tests --run_test=$t > $OUT/logs/$t.txt 2>&1
  echo "$t rc=$? [$(el)] $(grep -E 'No errors|failure' $OUT/logs/$t.txt | tail -1)"
  grep -E "error:" $OUT/logs/$t.txt | head -4 | cut -c1-300
done
left=$(( END - 10 - $(el) ))
TRITIUM_CACHE_DIR=/tmp/oc TRITIUM_AUTOTUNE=tune timeout $left python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 2 --quick --filter '^(round|remainder)( |$)' --json $OUT/logs/rows.json > $OUT/logs/rows.txt 2>&1
echo "rows rc=$? [$(el)]"; grep -E "^\| (round|remainder)" $OUT/logs/rows.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
