#!/usr/bin/env bash
# session 50, call 1 (four GPUs): every op of `tritium-bench --ops` beside PyTorch (issue 29; the last whole
# table was stop 47's, geomean 1.274, 28 of 645 below 0.8). TRITIUM_AUTOTUNE=tune as then; one compare_ops
# run per initial letter so a cut-off keeps what finished. Same split as stop 47's gpu_run4.sh.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-560}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j64 --target tritium-bench tritium-kernels > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built $(el)"
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
export -f ops el; export T0 END OUT
ops 0 "s" > $OUT/logs/ops0.txt 2>&1 &
ops 1 "a b c" > $OUT/logs/ops1.txt 2>&1 &
ops 2 "m d e f g h" > $OUT/logs/ops2.txt 2>&1 &
ops 3 "l n i k p r t u v w x z o" > $OUT/logs/ops3.txt 2>&1 &
wait
echo "== ops"; cat $OUT/logs/ops0.txt $OUT/logs/ops1.txt $OUT/logs/ops2.txt $OUT/logs/ops3.txt
python3 - $OUT/logs <<'PY'
import json, glob, math, sys
rows = []
for f in sorted(glob.glob(sys.argv[1] + "/ops_*.json")):
    try: d = json.load(open(f))
    except Exception: continue
    for r in d.get("rows", []):
        if r.get("ratio"): rows.append(r)
if rows:
    g = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
    print(f"ALL: geomean {g:.3f} over {len(rows)} cases, {sum(r['ratio'] < 0.8 for r in rows)} below 0.8")
    for r in sorted(rows, key=lambda r: r["ratio"])[:40]:
        print(f"{r['ratio']:.3f} {r['op']} {r['variant']} {r['dtype']} {r['mode']} ours {r['tritium_ms']:.4f} torch {r['torch_ms']:.4f}")
PY
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
