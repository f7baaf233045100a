#!/usr/bin/env bash
# session 48, call 3 (four GPUs), main with s48-assembly merged and the launch queue's exit fix.
# GPU 0-2: the whole op table beside PyTorch (issue 29; TRITIUM_AUTOTUNE=tune as stop 47's call 4), one
# compare_ops run per initial letter. GPU 3: the MLP's cold first epoch, TRITIUM_ASYNC_COMPILE on and
# off alternating (2 rounds), the GPT's first 20 steps cold (tf32, on and off), then the suites that
# crashed at exit in call 2, the launch queue's and debug mode's, and s48-assembly's suites on CUDA.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-470}
export T0 END OUT; export -f el
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
( sleep $END; echo "WATCHDOG at $(el)"; pkill -9 -f tritium-tests; pkill -9 -f train-; pkill -9 -f compare_ops; pkill -9 -f tritium-bench ) > $OUT/logs/watchdog.txt 2>&1 &
W=$!
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j64 --target tritium-bench train-mnist train-gpt > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built tools $(el)"
(cmake --build /tmp/bg -j32 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 -A5 error /tmp/bt.log) > $OUT/logs/tests_build.txt 2>&1 &
export LD_LIBRARY_PATH=/tmp/bg
ops() { # GPU, letters
  export CUDA_VISIBLE_DEVICES=$1 TRITIUM_CACHE_DIR=/tmp/ocache$1 TRITIUM_AUTOTUNE=tune
  for l in $2; do
    local left=$(( END - 8 - $(el) )); [ $left -lt 20 ] && { echo "ops ^$l NOT-RUN"; continue; }
    local f='^'$l; [ $l = c ] && f='^c(?!onv)'
    timeout $left python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter "$f" --json $OUT/logs/ops_$l.json > $OUT/logs/ops_$l.txt 2>&1
    echo "ops ^$l rc=$? [$(el)] $(grep -i geomean $OUT/logs/ops_$l.txt | tail -1)"
  done
}
suite() { # GPU, suite
  local left=$(( END - 5 - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout -k 5 $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$2.txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f ops suite
ops 0 "s m d e f" > $OUT/logs/ops0.txt 2>&1 &
ops 1 "a b c g h" > $OUT/logs/ops1.txt 2>&1 &
ops 2 "l n i k p r t u v w" > $OUT/logs/ops2.txt 2>&1 &
( export CUDA_VISIBLE_DEVICES=3
  for r in 1 2; do
    for a in 1 0; do
      rm -rf /tmp/mn; TRITIUM_ASYNC_COMPILE=$a TRITIUM_CACHE_DIR=/tmp/mn timeout 60 /tmp/bg/tools/train-mnist --backend cuda --data .carry/fashion-mnist --epochs 2 > $OUT/logs/mnist_cold_a${a}_$r.txt 2>&1
      echo "mnist cold async=$a round $r rc=$?: $(grep -E '^epoch 1:' $OUT/logs/mnist_cold_a${a}_$r.txt) [$(el)]"
    done
  done
  G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0"
  for a in 1 0; do
    rm -rf /tmp/gc
    TRITIUM_ASYNC_COMPILE=$a TRITIUM_CACHE_DIR=/tmp/gc timeout 120 $G --tf32 --steps 20 > $OUT/logs/gpt_cold_a$a.txt 2>&1
    echo "gpt cold 20 steps tf32 async=$a rc=$?: $(grep -iE 'final' $OUT/logs/gpt_cold_a$a.txt | tail -1) [$(el)]"
  done
  while ! grep -q "tests built" $OUT/logs/tests_build.txt 2>/dev/null; do sleep 2; done
  cat $OUT/logs/tests_build.txt
  printf "%s\n" test_op_registry test_nn_pool test_nn_module_layers test_nn_walkthrough test_ops_reduce_autograd test_nn_gpt_checkpoint test_launch_queue test_debug_mode test_cat_batched test_cat_pool_codegen test_tensor_shape test_view_grads test_elementwise test_cuda_codegen | xargs -P 7 -I{} bash -c "suite 3 {}"
) > $OUT/logs/g3.txt 2>&1 &
wait $!
sleep 1; while pgrep -f compare_ops >/dev/null; do sleep 2; [ $(el) -gt $(( END + 10 )) ] && break; done
kill $W 2>/dev/null
echo "== gpu3"; cat $OUT/logs/g3.txt
for f in $OUT/logs/t_*.txt; do grep -E "error: in|fatal error|violation|corruption" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|fatal error|violation|corruption" $f | grep -v "skipped because" | head -4 | cut -c1-300; }; done
echo "== ops"; cat $OUT/logs/ops0.txt $OUT/logs/ops1.txt $OUT/logs/ops2.txt
python3 - $OUT/logs <<'PY'
import json, glob, math, sys
rows = []
for f in sorted(glob.glob(sys.argv[1] + "/ops_*.json")):
    try: d = json.load(open(f))
    except Exception: continue
    for r in (d if isinstance(d, list) else d.get("rows", d.get("cases", []))):
        if isinstance(r, dict) and r.get("ratio"): rows.append(r)
if rows:
    g = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
    print(f"ALL: geomean {g:.3f} over {len(rows)} cases, {sum(r['ratio'] < 0.8 for r in rows)} below 0.8")
    for r in sorted(rows, key=lambda r: r["ratio"])[:40]:
        print(f"{r['ratio']:.3f} " + " ".join(str(r.get(k, "")) for k in ("op", "variant", "dtype", "mode")))
PY
cat $OUT/logs/watchdog.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
