#!/usr/bin/env bash
# session 42, call 2 (one GPU): the suites never run in full on CUDA since every dot went through
# layouts, plus the autotuner's device-model key and cross-device record_stream (two-GPU parts skip
# here); then tutorial 03 in bf16 beside Triton and cuBLAS.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
TARGETS="03-matrix-multiplication" GPU_DEADLINE=430 OUT=$OUT \
SUITES="test_dot test_matmul test_matmul_family test_attention test_nn_gpt test_nn_transformer test_torch_parity test_autotune test_streams test_dist_model_parallel test_matmul_split_k" \
  scripts/gpu_suites.sh
echo "suites done $(( $(date +%s) - T0 ))"
export TRITIUM_CACHE_DIR=/tmp/tcache
left=$(( 580 - ($(date +%s) - T0) ))
[ $left -gt 60 ] && timeout $left python3 bench/compare_matmul.py --bin /tmp/bg/tutorials/03-matrix-multiplication --dtypes bf16 --sizes 4096,8192 --rounds 3 2>&1 | tail -12
cd $OUT && tar czf logs.tgz logs && rm -rf logs
