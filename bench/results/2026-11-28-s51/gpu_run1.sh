#!/usr/bin/env bash
# session 51, calls 1-3 (one H100; call 2 after the fast division and one guarded refill block, call 3 after quotient caching): tl::range's flatten (jit/passes/fuse_nested_loops.h) with the dot's
# use_acc flag, wgmma groups in flight past a branch and conversions sunk into branches. Values first
# (the new tests and the dot suites on CUDA, ew_strided's COL0 from stop 50, never run on a GPU), then
# persistent_matmul beside Triton's tutorial 09 (3 alternating rounds), then the suite's dot kernels'
# checks on CUDA. Carries bench/kernels/upstream (git-ignored).
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-570}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
ls bench/kernels/upstream/*/*/ >/dev/null 2>&1 || { echo "no upstream copies"; exit 1; }
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j18 --target tritium-kernels tritium-tests > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures
for t in test_layout_fast_division test_fuse_nested_loops test_layout_dot_ports test_layout_epilogue test_layout_operand_values test_layout_dot_kinds test_layout_ring_register_loads test_ops_elementwise; do
  TRITIUM_CACHE_DIR=/tmp/tc timeout 120 /tmp/bg/tests/tritium-tests --run_test=$t > $OUT/logs/$t.txt 2>&1
  echo "$t rc=$? [$(el)] $(grep -E 'No errors|failure' $OUT/logs/$t.txt | tail -1)"
  grep -E "error:" $OUT/logs/$t.txt | head -4 | cut -c1-300
done
TRITIUM_CACHE_DIR=/tmp/kc TRITIUM_AUTOTUNE=tune timeout $(( END - 130 - $(el) )) python3 bench/compare_kernels.py \
  --bin /tmp/bg/kernels --kernels persistent_matmul --rounds 3 > $OUT/logs/k_persistent_matmul.txt 2>&1
echo "persistent_matmul rc=$? [$(el)]"; tail -8 $OUT/logs/k_persistent_matmul.txt
left=$(( END - 5 - $(el) ))
for k in persistent_matmul grouped_gemm fused_moe batched_matmul splitk_matmul int8_dequant_matmul fp8_block_matmul implicit_gemm_conv; do
  left=$(( END - 5 - $(el) )); [ $left -lt 10 ] && break
  TRITIUM_CACHE_DIR=/tmp/kchk timeout $left /tmp/bg/kernels/tritium-kernels --check $k --backend cuda >> $OUT/logs/kernel_checks.txt 2>&1
  echo "check $k rc=$? [$(el)]"
done
grep -E "OK|FAIL|fail" $OUT/logs/kernel_checks.txt | cut -c1-200
# What is left: the other persistent / while-loop dot kernels beside their originals, one round.
left=$(( END - 5 - $(el) ))
[ $left -gt 60 ] && TRITIUM_CACHE_DIR=/tmp/kc TRITIUM_AUTOTUNE=tune timeout $left python3 bench/compare_kernels.py \
  --bin /tmp/bg/kernels --kernels grouped_gemm,fused_moe --rounds 1 > $OUT/logs/k_grouped_fused.txt 2>&1
echo "grouped_gemm,fused_moe rc=$? [$(el)]"; grep -A12 "^medians" $OUT/logs/k_grouped_fused.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
