#!/usr/bin/env bash
# session 48, call 4 (one H100, the bars' card): the MLP's cold first epoch with TRITIUM_ASYNC_COMPILE on
# and off alternating (2 rounds), then the op-table rows that were below 0.8 at stop 47 (four H100s) or in
# call 3 (four H200s) beside PyTorch (TRITIUM_AUTOTUNE=tune, one round).
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-420}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j18 --target tritium-bench train-mnist > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg
for r in 1 2; do
  for a in 1 0; do
    rm -rf /tmp/mn; TRITIUM_ASYNC_COMPILE=$a TRITIUM_CACHE_DIR=/tmp/mn timeout 60 /tmp/bg/tools/train-mnist --backend cuda --data .carry/fashion-mnist --epochs 2 > $OUT/logs/mnist_cold_a${a}_$r.txt 2>&1
    echo "mnist cold async=$a round $r rc=$?: $(grep -E '^epoch 1:' $OUT/logs/mnist_cold_a${a}_$r.txt) [$(el)]"
  done
done
left=$(( END - 5 - $(el) ))
F='^(acos|asin|acosh|asinh|atanh|erfinv|sinh|remainder|remainder\.Scalar|log1p|linalg_vector_norm|max\.dim|amax|argmax|prod|sum|scatter_reduce|cat|stack|max_pool2d|avg_pool2d|avg_pool1d|adaptive_avg_pool2d|rms_norm|softmax|abs|neg)( |$)'
TRITIUM_CACHE_DIR=/tmp/oc TRITIUM_AUTOTUNE=tune timeout $left python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter "$F" --json $OUT/logs/ops_rows.json > $OUT/logs/ops_rows.txt 2>&1
echo "ops rc=$? [$(el)] $(grep -i geomean $OUT/logs/ops_rows.txt | tail -1)"
python3 - $OUT/logs/ops_rows.json <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
for r in sorted(rows, key=lambda r: r["ratio"]):
    print(f"{r['ratio']:.3f} {r['op']} {r['variant']} {r['dtype']} {r['mode']} ours {r['tritium_ms']:.4f} torch {r['torch_ms']:.4f}")
PY
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
