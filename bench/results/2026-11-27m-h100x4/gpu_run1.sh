#!/usr/bin/env bash
# session 48, call 1 (four GPUs): main with the launch queue (cold CUDA compiles on worker threads,
# launches queued in order: runtime/launch_queue.h) and dsl/ops.h's atomics declared once.
# GPU 0: the MLP's cold first epoch, TRITIUM_ASYNC_COMPILE on and off alternating (3 rounds), then
# the GPT's first 20 steps cold, on and off (tf32), then test_launch_queue. GPU 1-3: every test
# suite on CUDA (the queue on: each suite starts cold, so every suite runs through it).
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-540}
export T0 END OUT; export -f el
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
( sleep $END; echo "WATCHDOG at $(el)"; pkill -9 -f tritium-tests; pkill -9 -f train- ) > $OUT/logs/watchdog.txt 2>&1 &
W=$!
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j48 --target train-gpt train-mnist > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built tools $(el)"
(cmake --build /tmp/bg -j40 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 -A5 error /tmp/bt.log) > $OUT/logs/tests_build.txt 2>&1 &
export LD_LIBRARY_PATH=/tmp/bg
suite() { # GPU, suite
  local left=$(( END - 5 - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout -k 5 $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$2.txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite
( export CUDA_VISIBLE_DEVICES=0
  for r in 1 2 3; do
    for a in 1 0; do
      rm -rf /tmp/mn; TRITIUM_ASYNC_COMPILE=$a TRITIUM_CACHE_DIR=/tmp/mn timeout 60 /tmp/bg/tools/train-mnist --backend cuda --data .carry/fashion-mnist --epochs 2 > $OUT/logs/mnist_cold_a${a}_$r.txt 2>&1
      echo "mnist cold async=$a round $r rc=$?: $(grep -E '^epoch 1:' $OUT/logs/mnist_cold_a${a}_$r.txt) [$(el)]"
    done
  done
  G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0"
  for a in 1 0; do
    rm -rf /tmp/gc; s=$(date +%s.%N)
    TRITIUM_ASYNC_COMPILE=$a TRITIUM_CACHE_DIR=/tmp/gc timeout 120 $G --tf32 --steps 20 > $OUT/logs/gpt_cold_a$a.txt 2>&1
    echo "gpt cold 20 steps tf32 async=$a rc=$? wall $(echo "$(date +%s.%N) - $s" | bc) s: $(grep -iE 'final' $OUT/logs/gpt_cold_a$a.txt | tail -1) [$(el)]"
  done
) > $OUT/logs/g0.txt 2>&1 &
G0=$!
while ! grep -q "tests built" $OUT/logs/tests_build.txt 2>/dev/null; do sleep 2; done
cat $OUT/logs/tests_build.txt
all=$(grep -ho "BOOST_AUTO_TEST_SUITE([a-z0-9_]*" tests/*.cpp | sed 's/.*(//' | sort -u)
first="test_launch_queue test_matmul_family test_nn_transformer test_matmul test_nn_gpt test_attention test_amp_autocast test_ops_sort test_tensor_indexing"
rest=$(for s in $all; do [[ " $first test_torch_parity test_dot " == *" $s "* ]] || echo $s; done)
echo test_torch_parity > /tmp/l1; echo test_dot > /tmp/l2; : > /tmp/l3
i=0; for s in $first $rest; do echo $s >> /tmp/l$((1 + i % 3)); i=$((i + 1)); done
for g in 1 2 3; do ( xargs -P 8 -I{} bash -c "suite $g {}" < /tmp/l$g ) > $OUT/logs/s$g.txt 2>&1 & done
while pgrep -f "xargs -P 8" >/dev/null || kill -0 $G0 2>/dev/null; do sleep 2; [ $(el) -gt $(( END + 15 )) ] && break; done
kill $W 2>/dev/null
cat $OUT/logs/s1.txt $OUT/logs/s2.txt $OUT/logs/s3.txt | sort -t' ' -k3 > $OUT/logs/summary.txt
echo "== not rc=0:"; grep -v "rc=0 " $OUT/logs/summary.txt
echo "== rc=0: $(grep -c "rc=0 " $OUT/logs/summary.txt) of $(echo "$all" | wc -l)"
for f in $OUT/logs/t_*.txt; do grep -E "error: in|fatal error|violation" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|fatal error|violation" $f | grep -v "skipped because" | head -4 | cut -c1-300; }; done
echo "== gpu0"; cat $OUT/logs/g0.txt
cat $OUT/logs/watchdog.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
