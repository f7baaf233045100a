#!/usr/bin/env bash
# session 49, call 1 (one H100, the bars' card): the launch shape of the element-wise kernel
# (ew_contig's BLOCK and num_warps through a temporary TRITIUM_EW_{BLOCK,WARPS}_EXP override), swept over
# heavy and light math in f32 and bf16 beside PyTorch, two rounds in alternating order; then the kernel
# suite's checks on CUDA with the launch queue (not run since stop 47).
# The override lived only in the working tree for this call (ops/elementwise.cpp read the two variables
# around the contiguous launch) and was removed with fbac292, which kept 2048 x 4 for long bodies:
# rerunning this sweep needs it back.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-570}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j18 --target tritium-bench tritium-kernels > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg
F='^(acos|asin|acosh|asinh|atanh|erfinv|sinh|log1p|tan|exp|gelu|abs|add|sigmoid|remainder)( |$)'
sweep() {  # $1 label, $2 block, $3 warps
  TRITIUM_EW_BLOCK_EXP=$2 TRITIUM_EW_WARPS_EXP=$3 TRITIUM_CACHE_DIR=/tmp/oc TRITIUM_AUTOTUNE=tune timeout 90 \
    python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --modes fwd \
    --filter "$F" --json $OUT/logs/sw_$1.json > $OUT/logs/sw_$1.txt 2>&1
  echo "sweep $1 b=$2 w=$3 rc=$? [$(el)] $(grep -i geomean $OUT/logs/sw_$1.txt | tail -1)"
}
sweep r1_4096x4 4096 4; sweep r1_2048x4 2048 4; sweep r1_1024x4 1024 4; sweep r1_4096x8 4096 8; sweep r1_2048x8 2048 8
sweep r2_2048x8 2048 8; sweep r2_4096x8 4096 8; sweep r2_1024x4 1024 4; sweep r2_2048x4 2048 4; sweep r2_4096x4 4096 4
python3 - $OUT/logs <<'PY'
import json, sys, glob, os, collections
d = sys.argv[1]; ours = collections.defaultdict(dict); torch = collections.defaultdict(list)
cfgs = []
for f in sorted(glob.glob(d + "/sw_*.json")):
    c = os.path.basename(f)[3:-5]; cfgs.append(c)
    for r in json.load(open(f))["rows"]:
        k = f"{r['op']} {r['variant']} {r['dtype']}".replace("  ", " ")
        ours[k][c] = r["tritium_ms"]; torch[k].append(r["torch_ms"])
print("case".ljust(34), " ".join(c[3:].rjust(8) for c in cfgs), "torch(med)")
for k in sorted(ours):
    t = sorted(torch[k])[len(torch[k]) // 2]
    print(k.ljust(34), " ".join(f"{t / ours[k][c]:8.3f}" if c in ours[k] else "       -" for c in cfgs), f"{t:.4f}")
PY
left=$(( END - 5 - $(el) ))
[ $left -gt 30 ] && { TRITIUM_CACHE_DIR=/tmp/kchk timeout $left /tmp/bg/kernels/tritium-kernels --check all --backend cuda > $OUT/logs/kernel_checks.txt 2>&1; echo "kernel checks rc=$? [$(el)]"; tail -5 $OUT/logs/kernel_checks.txt; grep -ci "fail" $OUT/logs/kernel_checks.txt; }
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
