#!/usr/bin/env bash
# session 49, call 2 (two H100s): stop 49's merges (the element-wise launch shape, erfinv bf16, sinh/cosh,
# s49-rowred's one-launch splits and 2-warp rows, s49-norm's rms_norm/softmax/lane rows, s49-suite's scan
# and store-width fixes) against stop 48's main (fe1f06f, carried as .base/base.tar.gz), same machine.
# GPU 0: op-table rows beside PyTorch, base and new alternating. GPU 1: the touched suites on CUDA, the
# kernel checks, the scan/norm kernels beside Triton.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-560}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
mkdir -p /tmp/base && tar xzf .base/base.tar.gz -C /tmp/base
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake -S /tmp/base -B /tmp/bb -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfgb.log 2>&1
( cmake --build /tmp/bb -j12 --target tritium-bench > /tmp/bb.log 2>&1; echo "base built rc=$? [$(el)]" ) &
cmake --build /tmp/bg -j20 --target tritium-bench tritium-tests tritium-kernels > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "new built $(el)"; wait
F1='^(acos|asin|acosh|asinh|atanh|erfinv|sinh|cosh|log1p|tan|exp|gelu|abs|add|sigmoid|remainder|log|log2)( |$)'
F2='^(mv|addmv|max\.dim|argmax|argmin|amax|sum|mean|prod|logsumexp|linalg_vector_norm|var|cumsum|rms_norm|softmax|log_softmax|adaptive_avg_pool2d)( |$)'
rows() {  # $1 label, $2 build dir, $3 filter, $4 modes
  LD_LIBRARY_PATH=$2 CUDA_VISIBLE_DEVICES=0 TRITIUM_CACHE_DIR=/tmp/oc_$1 TRITIUM_AUTOTUNE=tune timeout 150 \
    python3 bench/compare_ops.py --bin $2/bench/tritium-bench --device cuda --rounds 1 --quick --modes $4 \
    --filter "$3" --json $OUT/logs/rows_$1.json > $OUT/logs/rows_$1.txt 2>&1
  echo "rows $1 rc=$? [$(el)] $(grep -i geomean $OUT/logs/rows_$1.txt | tail -1)"
}
( rows base_math /tmp/bb "$F1" fwd; rows new_math /tmp/bg "$F1" fwd; rows new_red /tmp/bg "$F2" fwd,fwd+bwd; rows base_red /tmp/bb "$F2" fwd,fwd+bwd ) > $OUT/logs/gpu0.txt 2>&1 &
export LD_LIBRARY_PATH=/tmp/bg
S=test_ops_math_hard_points,test_ops_unary_math,test_ops_math_backward,test_ops_elementwise,test_ops_activations,test_cuda_scans,test_reductions,test_ops_reduce,test_ops_reduce_stats,test_ops_reduce_autograd,test_ops_argmax,test_matmul_family,test_layer_norm,test_nn_norm,test_ops_softmax,test_nn_pool,test_nn_transformer,test_amp_autocast,test_cuda_codegen_norm,test_cuda_codegen_reductions
CUDA_VISIBLE_DEVICES=1 timeout 200 /tmp/bg/tests/tritium-tests --run_test=$S > $OUT/logs/suites.txt 2>&1; echo "suites rc=$? [$(el)]"; tail -3 $OUT/logs/suites.txt
grep -E "error:|failure" $OUT/logs/suites.txt | head -12
left=$(( END - 150 - $(el) ))
[ $left -gt 30 ] && { CUDA_VISIBLE_DEVICES=1 TRITIUM_CACHE_DIR=/tmp/kchk timeout $left /tmp/bg/kernels/tritium-kernels --check all --backend cuda > $OUT/logs/kernel_checks.txt 2>&1; echo "kernel checks rc=$? [$(el)] OK=$(grep -c ' OK$' $OUT/logs/kernel_checks.txt)"; grep -iE "FAIL|error" $OUT/logs/kernel_checks.txt | grep -v "rel err" | head -5; }
left=$(( END - 15 - $(el) ))
[ $left -gt 30 ] && { CUDA_VISIBLE_DEVICES=1 TRITIUM_AUTOTUNE=tune timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels cumsum,sparsemax,rms_norm,layer_norm,fused_add_rms_norm --rounds 1 > $OUT/logs/kernels.txt 2>&1; echo "kernels rc=$? [$(el)]"; grep -iE "geomean|^ *[a-z_]+ .*[0-9]\.[0-9]{3}" $OUT/logs/kernels.txt | tail -30; }
wait; cat $OUT/logs/gpu0.txt
python3 - $OUT/logs <<'PY'
import json, sys, os
d = sys.argv[1]
def load(n):
    p = f"{d}/rows_{n}.json"
    return {f"{r['op']} {r['variant']} {r['dtype']} {r['mode']}".replace("  ", " "): r for r in json.load(open(p))["rows"]} if os.path.exists(p) else {}
for a, b in (("base_math", "new_math"), ("base_red", "new_red")):
    A, B = load(a), load(b)
    print(f"== {a} -> {b}: ratio vs PyTorch (ours ms)")
    for k in sorted(set(A) | set(B), key=lambda k: B[k]["ratio"] if k in B else 9):
        fa = f"{A[k]['ratio']:.3f} ({A[k]['tritium_ms']:.4f})" if k in A else "-"
        fb = f"{B[k]['ratio']:.3f} ({B[k]['tritium_ms']:.4f})" if k in B else "-"
        print(f"{k:60s} {fa:>18s} -> {fb:>18s}")
PY
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
