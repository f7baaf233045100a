#!/usr/bin/env bash
# session 54, call 3 (one H200): after the store groups, (1) the 18 kernel checks calls 1-2 did not reach
# on CUDA (their 150 s / time-left limits), (2) one AdamW step over a GPT-2-small parameter list beside
# PyTorch's fused / foreach (the optimisers store p, m, v in one group now), (3) op-table rows whose
# backward stores several gradients (binary ops, norms, losses; fwd+bwd, f32 and bf16) beside PyTorch.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-560}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j16 --target tritium-kernels tritium-bench > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/kc TRITIUM_AUTOTUNE=tune
timeout 200 /tmp/bg/kernels/tritium-kernels --check poly_norm qwen2vl_mrope relu_squared rms_layernorm rms_norm rope \
  rope_embedding silu_mul_quant_fp8 softmax sparsemax splitk_matmul swiglu tvd unsloth_cross_entropy unsloth_geglu \
  unsloth_swiglu var_mean persistent_matmul --backend cuda > $OUT/logs/kernel_checks.txt 2>&1
echo "checks rc=$? [$(el)] $(grep -c OK $OUT/logs/kernel_checks.txt) OK, $(grep -ci fail $OUT/logs/kernel_checks.txt) fail"
timeout 90 /tmp/bg/bench/tritium-bench --optim --device cuda --json $OUT/logs/optim.json > $OUT/logs/optim.txt 2>&1
timeout 90 python3 bench/compare_optim.py --tritium $OUT/logs/optim.json --device cuda > $OUT/logs/compare_optim.txt 2>&1
echo "optim rc=$? [$(el)]"; tail -12 $OUT/logs/compare_optim.txt
left=$(( END - 8 - $(el) ))
timeout $left python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 2 --quick --modes fwd+bwd \
  --filter '^(atan2|gelu|addcmul|addcdiv|hypot|mul|div|sub|lerp\.Tensor|where|silu|mish|group_norm|layer_norm|rms_norm|batch_norm|cross_entropy|log_softmax|max\.dim|sort|topk)( |$)' \
  --dtypes f32,bf16 --json $OUT/logs/ops_groups.json > $OUT/logs/ops_groups.txt 2>&1
echo "ops rc=$? [$(el)]"; grep -E "geomean|below" $OUT/logs/ops_groups.txt | head -5
grep -iE "fail" $OUT/logs/kernel_checks.txt | head -5 | cut -c1-300
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
