#!/usr/bin/env bash
# session 47, call 1 (four GPUs), main at ab8a9f9 (stop 46's end; s46-quant's lane-group reductions and
# if-barrier rule were never run through every suite on CUDA). GPUs 0-2: every test suite on CUDA, 8 at a
# time each, test_torch_parity and test_dot first on their own GPU. GPU 3: the GPT under
# TRITIUM_AUTOTUNE=tune with TRITIUM_PRINT_AUTOTUNING=all (every matmul key's config times: the data the
# auto mode's heuristic needs), then a profile of 5 warm steps in tf32 and bf16, the same under auto
# (cold cache), PyTorch eager's profile beside them, and the MLP's first epoch under auto.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-560}
export T0 END OUT; export -f el
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
( sleep $END; echo "WATCHDOG at $(el)"; pkill -9 -f tritium-tests; pkill -9 -f train-; pkill -9 -f torch_gpt ) > $OUT/logs/watchdog.txt 2>&1 &
W=$!
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j40 --target train-gpt train-mnist > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built tools $(el)"
(cmake --build /tmp/bg -j40 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 error /tmp/bt.log) > $OUT/logs/tests_build.txt 2>&1 &
export LD_LIBRARY_PATH=/tmp/bg
suite() { # GPU, suite
  local left=$(( END - 5 - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout -k 5 $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$2.txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite
( export CUDA_VISIBLE_DEVICES=3
  G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0"
  for mode in tf32 bf16; do
    flag=$([ $mode = tf32 ] && echo "--tf32" || echo "--amp bf16")
    TRITIUM_AUTOTUNE=tune TRITIUM_PRINT_AUTOTUNING=all TRITIUM_CACHE_DIR=/tmp/gt timeout 150 $G $flag --steps 20 > $OUT/logs/gpt_tune_cold_$mode.txt 2>&1; echo "gpt tune cold $mode rc=$? [$(el)]"
    TRITIUM_AUTOTUNE=tune TRITIUM_CACHE_DIR=/tmp/gt timeout 60 $G $flag --steps 9 --profile $OUT/logs/prof_tune_$mode.json > $OUT/logs/gpt_tune_prof_$mode.txt 2>&1; echo "gpt tune prof $mode rc=$? [$(el)]"
  done
  for mode in tf32 bf16; do
    flag=$([ $mode = tf32 ] && echo "--tf32" || echo "--amp bf16")
    TRITIUM_CACHE_DIR=/tmp/ga-$mode timeout 60 $G $flag --steps 30 --profile $OUT/logs/prof_auto_$mode.json > $OUT/logs/gpt_auto_prof_$mode.txt 2>&1; echo "gpt auto prof $mode rc=$? [$(el)]"
    P="bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --steps 9 --profile $flag"
    timeout 90 python3 $P > $OUT/logs/torch_prof_$mode.txt 2>&1; echo "torch prof $mode rc=$? [$(el)]"
  done
  TRITIUM_CACHE_DIR=/tmp/mn timeout 60 /tmp/bg/tools/train-mnist --backend cuda --data .carry/fashion-mnist --epochs 2 > $OUT/logs/mnist_cold_auto.txt 2>&1; echo "mnist cold auto rc=$? [$(el)]"
) > $OUT/logs/g3.txt 2>&1 &
G3=$!
while ! grep -q "tests built" $OUT/logs/tests_build.txt 2>/dev/null; do sleep 2; done
cat $OUT/logs/tests_build.txt
all=$(grep -ho "BOOST_AUTO_TEST_SUITE([a-z0-9_]*" tests/*.cpp | sed 's/.*(//' | sort -u)
first="test_matmul_family test_nn_transformer test_matmul test_nn_gpt test_attention test_amp_autocast"
rest=$(for s in $all; do [[ " $first test_torch_parity test_dot " == *" $s "* ]] || echo $s; done)
echo test_torch_parity > /tmp/l0; echo test_dot > /tmp/l1; : > /tmp/l2
i=0; for s in $first $rest; do echo $s >> /tmp/l$((i % 3)); i=$((i + 1)); done
for g in 0 1 2; do ( xargs -P 8 -I{} bash -c "suite $g {}" < /tmp/l$g ) > $OUT/logs/g$g.txt 2>&1 & done
while pgrep -f "xargs -P 8" >/dev/null || kill -0 $G3 2>/dev/null; do sleep 2; [ $(el) -gt $(( END + 15 )) ] && break; done
kill $W 2>/dev/null
cat $OUT/logs/g0.txt $OUT/logs/g1.txt $OUT/logs/g2.txt | sort -t' ' -k3 > $OUT/logs/summary.txt
echo "== not rc=0:"; grep -v "rc=0 " $OUT/logs/summary.txt
echo "== rc=0: $(grep -c "rc=0 " $OUT/logs/summary.txt) of $(echo "$all" | wc -l)"
for f in $OUT/logs/t_*.txt; do grep -E "error: in|failed|fatal|violation" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|failed|fatal|violation" $f | grep -v "skipped because" | head -4 | cut -c1-300; }; done
echo "== gpu3"; cat $OUT/logs/g3.txt
for f in $OUT/logs/gpt_*.txt $OUT/logs/torch_prof_*.txt; do echo "-- $(basename $f): $(grep -iE "final|steady|tokens/s" $f | tail -2 | tr '\n' ' ' | cut -c1-250)"; done
grep -iE "epoch" $OUT/logs/mnist_cold_auto.txt | head -3
cat $OUT/logs/watchdog.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
