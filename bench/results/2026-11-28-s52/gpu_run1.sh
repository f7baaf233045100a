#!/usr/bin/env bash
# session 52, call 1 (two GPUs, nvidia-h100-x2): stop 51 changed the layout generator (wgmma groups in
# flight past branches, conversions sunk into branches, fast division by run-time divisors, quotient
# caching, use_acc) and ran only eight suites on CUDA. GPU 0: the value suites the layout generator
# lowers, then tutorial 03 and tutorial 06 beside Triton (one round, no-regression). GPU 1: the suite's
# dot kernels beside their originals (one round; persistent_matmul's 3 rounds were stop 51's) and every
# kernel's check on CUDA. Carries bench/kernels/upstream (git-ignored).
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-575}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
ls bench/kernels/upstream/*/*/ >/dev/null 2>&1 || { echo "no upstream copies"; exit 1; }
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j30 --target tritium-kernels tritium-tests 03-matrix-multiplication 06-fused-attention > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures T0 END OUT
gpu0() {
  export CUDA_VISIBLE_DEVICES=0
  for t in ${SUITES:-test_layout_attention_fwd test_layout_attention_bwd test_attention test_dot test_matmul test_matmul_epilogue test_matmul_family test_matmul_split_k test_matmul_block_pointers test_tf32_values test_einsum test_nn_conv test_fma_dot}; do
    left=$(( END - 200 - $(el) )); [ $left -lt 15 ] && { echo "$t NOT-RUN"; continue; }
    TRITIUM_CACHE_DIR=/tmp/tc0 timeout $(( left < 150 ? left : 150 )) /tmp/bg/tests/tritium-tests --run_test=$t > $OUT/logs/$t.txt 2>&1
    echo "$t rc=$? [$(el)] $(grep -E 'No errors|failure' $OUT/logs/$t.txt | tail -1)"
    grep -E "error:|fatal" $OUT/logs/$t.txt | head -4 | cut -c1-300
  done
  left=$(( END - 100 - $(el) ))
  [ $left -gt 30 ] && TRITIUM_CACHE_DIR=/tmp/tc0 TRITIUM_AUTOTUNE=tune timeout $left python3 bench/compare_attention.py --bin /tmp/bg/tutorials \
    --sizes 4096 --dims 64,128 --dtypes f16 --rounds 1 > $OUT/logs/t06.txt 2>&1; echo "t06 rc=$? [$(el)]"
  left=$(( END - 5 - $(el) ))
  [ $left -gt 30 ] && TRITIUM_CACHE_DIR=/tmp/tc0 TRITIUM_AUTOTUNE=tune timeout $left python3 bench/compare_matmul.py --bin /tmp/bg/tutorials \
    --sizes 1024,4096,8192 --dtypes f16,bf16 --rounds 1 > $OUT/logs/t03.txt 2>&1; echo "t03 rc=$? [$(el)]"
}
gpu1() {
  export CUDA_VISIBLE_DEVICES=1 TRITIUM_AUTOTUNE=tune
  for k in ${DOTK:-grouped_gemm fused_moe batched_matmul splitk_matmul int8_dequant_matmul fp8_block_matmul implicit_gemm_conv}; do
    left=$(( END - 90 - $(el) )); [ $left -lt 20 ] && { echo "$k NOT-RUN"; continue; }
    TRITIUM_CACHE_DIR=/tmp/kc1 timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels $k --rounds 1 > $OUT/logs/k_$k.txt 2>&1
    echo "$k rc=$? [$(el)] $(grep -i geomean $OUT/logs/k_$k.txt | tail -1)"
  done
  left=$(( END - 5 - $(el) ))
  TRITIUM_CACHE_DIR=/tmp/kc1 timeout $left /tmp/bg/kernels/tritium-kernels --check all --backend cuda > $OUT/logs/kernel_checks.txt 2>&1
  echo "checks rc=$? [$(el)] $(grep -c OK $OUT/logs/kernel_checks.txt) OK, $(grep -ci fail $OUT/logs/kernel_checks.txt) fail"
}
export -f gpu0 gpu1 el
gpu0 > $OUT/logs/gpu0.txt 2>&1 &
gpu1 > $OUT/logs/gpu1.txt 2>&1 &
wait
cat $OUT/logs/gpu0.txt $OUT/logs/gpu1.txt
grep -hE "^\|? *(fwd|bwd)|ratio|geomean" $OUT/logs/t06.txt $OUT/logs/t03.txt 2>/dev/null | head -40
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
