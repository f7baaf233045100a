#!/usr/bin/env bash
# session 41, call 4 (one H100): a merge of stop 41's branches so far (split-K, epilogue, matcher
# deleted, GPT launches, DDP): value suites on CUDA, a Linear's products beside cuBLAS with and
# without split-K, tutorial 03 beside Triton.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
T0=$(date +%s); left() { echo $(( ${1} - ($(date +%s) - T0) )); }
TARGETS="train-gpt tritium-bench 03-matrix-multiplication" OPS=linear,matmul,mm,bmm,addmm,baddbmm SUITES="test_dot test_matmul test_matmul_split_k test_matmul_family test_layout_dot_kinds test_layouts test_layout_tma test_layout_wgmma test_layout_operand_values test_attention test_amp_grad_scaler test_nn_optim_more test_amp_autocast test_nn_gpt test_nn_transformer test_torch_parity test_cuda_runtime" GPU_DEADLINE=340 scripts/gpu_suites.sh 2>&1 | tee $OUT/logs/suites.txt
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_CACHE_DIR=/tmp/tcache
for shape in 16384,384,1536 16384,1536,384 16384,384,1152; do
  timeout $(left 470) python3 bench/compare_ops_matmul.py --bench /tmp/bg/bench/tritium-bench --dtypes bf16,tf32 --linear $shape --split-k 0,1 2>&1 | tail -9
done | tee $OUT/logs/linear.txt
L=$(left 590); [ $L -gt 30 ] && { timeout $L python3 bench/compare_matmul.py --bin /tmp/bg/tutorials --dtypes f16,bf16 --sizes 4096,8192 --rounds 1 > $OUT/logs/t03.txt 2>&1; echo "t03 rc=$?"; tail -8 $OUT/logs/t03.txt; }
cd $OUT && tar czf logs.tgz logs && rm -rf logs
