#!/usr/bin/env bash
# session 54, call 2 (two H200s): the kernel suite's 34 dot-free kernels beside their originals after
# the store groups (most of them store two or more blocks), split over the GPUs as at stop 53 (one
# round each, alternating Tritium / Triton inside compare_kernels, TRITIUM_AUTOTUNE=tune); GPU 1 first
# runs test_elementwise on CUDA (its new in-place store-group case); GPU 0 ends with every kernel's check on
# CUDA. Carries bench/kernels/upstream.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-580}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
ls bench/kernels/upstream/*/*/ >/dev/null 2>&1 || { echo "no upstream copies"; exit 1; }
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j32 --target tritium-kernels tritium-tests > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures T0 END OUT
kern() { # GPU, kernels...
  local g=$1; shift
  export CUDA_VISIBLE_DEVICES=$g TRITIUM_CACHE_DIR=/tmp/kcache$g TRITIUM_AUTOTUNE=tune
  for k in "$@"; do
    local left=$(( END - 8 - $(el) )); [ $left -lt 20 ] && { echo "$k NOT-RUN"; continue; }
    timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels $k --rounds 1 > $OUT/logs/k_$k.txt 2>&1
    echo "$k rc=$? [$(el)] $(grep -i geomean $OUT/logs/k_$k.txt | tail -1)"
  done
}
gpu0() {
  kern 0 jsd attn_res fused_add_rms_norm histc kl_div per_token_group_quant_fp8 relu_squared rope_embedding \
    unsloth_geglu rms_layernorm silu_mul_quant_fp8 swiglu unsloth_swiglu embedding geglu index_select layer_norm
  local left=$(( END - 5 - $(el) ))
  [ $left -gt 20 ] && CUDA_VISIBLE_DEVICES=0 TRITIUM_CACHE_DIR=/tmp/kcache0 timeout $left /tmp/bg/kernels/tritium-kernels --check all --backend cuda > $OUT/logs/kernel_checks.txt 2>&1
  echo "checks rc=$? [$(el)] $(grep -c OK $OUT/logs/kernel_checks.txt) OK, $(grep -ci fail $OUT/logs/kernel_checks.txt) fail"
}
gpu1() {
  CUDA_VISIBLE_DEVICES=1 TRITIUM_CACHE_DIR=/tmp/tc1 timeout 120 /tmp/bg/tests/tritium-tests --run_test=test_elementwise > $OUT/logs/test_elementwise.txt 2>&1
  echo "test_elementwise rc=$? [$(el)] $(grep -aE 'No errors|failure' $OUT/logs/test_elementwise.txt | tail -1)"
  kern 1 dyt cross_entropy flaggems_softmax group_norm llama4_rope poly_norm rms_norm softmax tvd var_mean \
    cumsum grpo_loss modulated_rms_norm qwen2vl_mrope rope sparsemax unsloth_cross_entropy
}
export -f kern gpu0 gpu1 el
gpu0 > $OUT/logs/gpu0.txt 2>&1 &
gpu1 > $OUT/logs/gpu1.txt 2>&1 &
wait
cat $OUT/logs/gpu0.txt $OUT/logs/gpu1.txt | cut -c1-150
grep -iE "fail" $OUT/logs/kernel_checks.txt | head -5 | cut -c1-300
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
