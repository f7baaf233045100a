#!/usr/bin/env bash
# session 48, call 2 (four GPUs): main with the launch queue's fixes (empty grids, debug-mode and
# print kernels, exit), s48-reduce and s48-math merged, unused f64 parameters on the PTX path.
# GPU 0: test_dot alone, then the kernel suite's checks on CUDA. GPU 1-3: every other test suite.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-540}
export T0 END OUT; export -f el
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
( sleep $END; echo "WATCHDOG at $(el)"; pkill -9 -f tritium-tests; pkill -9 -f train-; pkill -9 -f tritium-kernels ) > $OUT/logs/watchdog.txt 2>&1 &
W=$!
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j48 --target tritium-tests tritium-kernels > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "tests built rc=0 $(el)" > $OUT/logs/tests_build.txt
export LD_LIBRARY_PATH=/tmp/bg
suite() { # GPU, suite
  local left=$(( END - 5 - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout -k 5 $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$2.txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite
( export CUDA_VISIBLE_DEVICES=0
  while ! grep -q "tests built" $OUT/logs/tests_build.txt 2>/dev/null; do sleep 2; done
  suite 0 test_dot
  left=$(( END - 8 - $(el) ))
  TRITIUM_CACHE_DIR=/tmp/kchk timeout $left /tmp/bg/kernels/tritium-kernels --check all --backend cuda > $OUT/logs/kernel_checks.txt 2>&1; echo "kernel checks rc=$? [$(el)]"
) > $OUT/logs/g0.txt 2>&1 &
G0=$!
while ! grep -q "tests built" $OUT/logs/tests_build.txt 2>/dev/null; do sleep 2; done
cat $OUT/logs/tests_build.txt
all=$(grep -ho "BOOST_AUTO_TEST_SUITE([a-z0-9_]*" tests/*.cpp | sed 's/.*(//' | sort -u)
first="test_launch_queue test_matmul_family test_nn_transformer test_matmul test_nn_gpt test_attention test_amp_autocast test_ops_sort test_tensor_indexing"
rest=$(for s in $all; do [[ " $first test_torch_parity test_dot " == *" $s "* ]] || echo $s; done)
echo test_torch_parity > /tmp/l1; : > /tmp/l2; : > /tmp/l3
i=0; for s in $first $rest; do echo $s >> /tmp/l$((1 + i % 3)); i=$((i + 1)); done
for g in 1 2 3; do ( xargs -P 8 -I{} bash -c "suite $g {}" < /tmp/l$g ) > $OUT/logs/s$g.txt 2>&1 & done
while pgrep -f "xargs -P 8" >/dev/null || kill -0 $G0 2>/dev/null; do sleep 2; [ $(el) -gt $(( END + 15 )) ] && break; done
kill $W 2>/dev/null
cat $OUT/logs/s1.txt $OUT/logs/s2.txt $OUT/logs/s3.txt | sort -t' ' -k3 > $OUT/logs/summary.txt
echo "== not rc=0:"; grep -v "rc=0 " $OUT/logs/summary.txt
echo "== rc=0: $(grep -c "rc=0 " $OUT/logs/summary.txt) of $(echo "$all" | wc -l)"
for f in $OUT/logs/t_*.txt; do grep -E "error: in|fatal error|violation" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|fatal error|violation" $f | grep -v "skipped because" | head -4 | cut -c1-300; }; done
echo "== gpu0"; cat $OUT/logs/g0.txt
grep -vE " OK$|^time " $OUT/logs/kernel_checks.txt | head -8 | cut -c1-250; echo "kernel checks OK lines: $(grep -c " OK" $OUT/logs/kernel_checks.txt)"
cat $OUT/logs/watchdog.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
