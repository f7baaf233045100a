#!/usr/bin/env bash
# session 49, call 4 (one H100): the matmul family's op-table rows beside PyTorch (not re-measured since
# stop 47), f32 and bf16, fwd and fwd+bwd.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-400}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j18 --target tritium-bench > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg
F='^(bmm|linear|mm|matmul|addmm|baddbmm|addbmm|mv|addmv|dot|vdot|addr|einsum|inner|outer|tensordot)( |$)'
TRITIUM_CACHE_DIR=/tmp/oc TRITIUM_AUTOTUNE=tune timeout $(( END - 10 - $(el) )) python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter "$F" --json $OUT/logs/rows.json > $OUT/logs/rows.txt 2>&1
echo "rows rc=$? [$(el)] $(grep -i geomean $OUT/logs/rows.txt | tail -1)"
python3 - $OUT/logs/rows.json <<'PY'
import json, sys, os
if os.path.exists(sys.argv[1]):
    for r in sorted(json.load(open(sys.argv[1]))["rows"], key=lambda r: r["ratio"]):
        print(f"{r['ratio']:.3f} {r['op']} {r['variant']} {r['dtype']} {r['mode']} ours {r['tritium_ms']:.4f} torch {r['torch_ms']:.4f}")
PY
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
