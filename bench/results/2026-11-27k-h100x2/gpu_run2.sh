#!/usr/bin/env bash
# session 46, call 2 (two GPUs), main at 2e8cbc7+ (the fix of stop 45's host crash): every test suite
# on CUDA, the longest first, 8 at a time on each GPU, each under the watchdog's deadline.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-480}
export T0 END OUT; export -f el
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
( sleep $END; echo "WATCHDOG at $(el)"; pkill -9 -f tritium-tests ) > $OUT/logs/watchdog.txt 2>&1 &
W=$!
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j32 --target tritium-tests > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg
suite() { # GPU, suite
  local left=$(( END - 5 - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout -k 5 $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$2.txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite
first="test_torch_parity test_dot test_matmul_family test_nn_transformer test_matmul test_nn_gpt test_attention test_amp_autocast"
all=$(grep -ho "BOOST_AUTO_TEST_SUITE([a-z0-9_]*" tests/*.cpp | sed 's/.*(//' | sort -u)
rest=$(for s in $all; do [[ " $first " == *" $s "* ]] || echo $s; done)
list=$(printf '%s\n' $first $rest)
i=0; : > /tmp/l0; : > /tmp/l1
for s in $list; do echo $s >> /tmp/l$((i % 2)); i=$((i + 1)); done
( xargs -P 8 -I{} bash -c 'suite 0 {}' < /tmp/l0 ) > $OUT/logs/g0.txt 2>&1 &
G0=$!
( xargs -P 8 -I{} bash -c 'suite 1 {}' < /tmp/l1 ) > $OUT/logs/g1.txt 2>&1 &
G1=$!
while kill -0 $G0 2>/dev/null || kill -0 $G1 2>/dev/null; do sleep 2; [ $(el) -gt $(( END + 15 )) ] && break; done
kill $W 2>/dev/null
cat $OUT/logs/g0.txt $OUT/logs/g1.txt | sort -t' ' -k3 > $OUT/logs/summary.txt
echo "== not rc=0:"; grep -v "rc=0 " $OUT/logs/summary.txt
echo "== rc=0: $(grep -c "rc=0 " $OUT/logs/summary.txt) of $(echo "$list" | wc -l)"
for f in $OUT/logs/t_*.txt; do grep -E "error: in|failed|fatal|violation" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|failed|fatal|violation" $f | grep -v "skipped because" | head -4 | cut -c1-300; }; done
cat $OUT/logs/watchdog.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
