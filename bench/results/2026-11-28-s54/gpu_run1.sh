#!/usr/bin/env bash
# session 54, call 1 (two H200s): store groups (consecutive block stores of one shape in one loop nest
# of the element-loop generator, their shared values once per element) change every dot-free kernel
# that stores two or more blocks; the value suites of the element-loop generator on CUDA (every suite
# but the layout generator's, which the change does not reach), longest first, 8 at a time on each
# GPU; GPU 1 first times the Liger / Unsloth kernels with several stores beside their originals
# (2 rounds), then every kernel check on CUDA.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-575}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
ls bench/kernels/upstream/*/*/ >/dev/null 2>&1 || { echo "no upstream copies"; exit 1; }
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j32 --target tritium-kernels tritium-tests > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg T0 END OUT
suite() { # GPU, suite
  local left=$(( END - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$2.txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite el
L=bench/results/2026-11-28-s54/suites_order.txt
( awk 'NR % 2 == 1' $L | xargs -P 8 -I{} bash -c 'suite 0 {}' ) > $OUT/logs/g0.txt 2>&1 &
( export CUDA_VISIBLE_DEVICES=1 TRITIUM_CACHE_DIR=/tmp/kc1 TRITIUM_AUTOTUNE=tune
  timeout 150 python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels swiglu,unsloth_swiglu,geglu,unsloth_geglu --rounds 2 > $OUT/logs/k_stores.txt 2>&1
  echo "kernels rc=$? [$(el)]"
  timeout 150 /tmp/bg/kernels/tritium-kernels --check all --backend cuda > $OUT/logs/kernel_checks.txt 2>&1
  echo "checks rc=$? [$(el)] $(grep -c OK $OUT/logs/kernel_checks.txt) OK, $(grep -ci fail $OUT/logs/kernel_checks.txt) fail"
  awk 'NR % 2 == 0' $L | xargs -P 8 -I{} bash -c 'suite 1 {}'
) > $OUT/logs/g1.txt 2>&1 &
wait
cat $OUT/logs/g1.txt | head -3
echo "suites: $(cat $OUT/logs/g0.txt $OUT/logs/g1.txt | grep -c 'rc=0') rc=0, not 0: $(cat $OUT/logs/g0.txt $OUT/logs/g1.txt | grep 'gpu' | grep -v 'rc=0 ' | tr '\n' ';')"
for f in $OUT/logs/t_*.txt; do grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | head -6 | cut -c1-300; }; done
sed -n '/^medians/,$p' $OUT/logs/k_stores.txt | head -60
grep -iE "fail|error" $OUT/logs/kernel_checks.txt | head -5
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
