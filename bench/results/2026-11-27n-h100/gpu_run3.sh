#!/usr/bin/env bash
# session 49, call 3 (one H100, the bars' card): the suites stop 49's merges touched, on CUDA, one process
# a suite (call 2's single run lost its output to the timeout); then the op-table rows below or near 0.8 on
# the H100 beside PyTorch.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-470}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j18 --target tritium-bench tritium-tests > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg
: > $OUT/logs/summary.txt
for t in test_ops_math_hard_points test_ops_unary_math test_ops_math_backward test_ops_elementwise test_ops_activations \
         test_cuda_scans test_reductions test_ops_reduce test_ops_reduce_stats test_ops_reduce_autograd test_ops_argmax \
         test_matmul_family test_layer_norm test_nn_norm test_ops_softmax test_nn_pool test_amp_autocast \
         test_cuda_codegen_norm test_cuda_codegen_reductions test_nn_transformer; do
  [ $(( END - 150 - $(el) )) -lt 20 ] && { echo "$t: not run (time)" >> $OUT/logs/summary.txt; continue; }
  TRITIUM_CACHE_DIR=/tmp/tc timeout 120 /tmp/bg/tests/tritium-tests --run_test=$t > $OUT/logs/$t.txt 2>&1
  rc=$?; echo "$t rc=$rc [$(el)] $(grep -E 'No errors|failure' $OUT/logs/$t.txt | tail -1)" >> $OUT/logs/summary.txt
  [ $rc -ne 0 ] && grep -E "error:" $OUT/logs/$t.txt | head -4 | cut -c1-300 >> $OUT/logs/summary.txt
done
F='^(acos|asin|acosh|erfinv|sinh|cosh|log1p|tan|remainder|max\.dim|argmax|amax|mv|addmv|sum|mean|prod|rms_norm|softmax|log_softmax|adaptive_avg_pool2d)( |$)'
left=$(( END - 10 - $(el) ))
TRITIUM_CACHE_DIR=/tmp/oc TRITIUM_AUTOTUNE=tune timeout $left python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter "$F" --json $OUT/logs/rows.json > $OUT/logs/rows.txt 2>&1
echo "rows rc=$? [$(el)] $(grep -i geomean $OUT/logs/rows.txt | tail -1)"
python3 - $OUT/logs/rows.json <<'PY'
import json, sys, os
if os.path.exists(sys.argv[1]):
    for r in sorted(json.load(open(sys.argv[1]))["rows"], key=lambda r: r["ratio"])[:40]:
        print(f"{r['ratio']:.3f} {r['op']} {r['variant']} {r['dtype']} {r['mode']} ours {r['tritium_ms']:.4f} torch {r['torch_ms']:.4f}")
PY
cat $OUT/logs/summary.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
