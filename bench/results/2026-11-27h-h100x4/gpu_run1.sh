#!/usr/bin/env bash
# session 45, call 1 (four GPUs), main at the start of the stop (8887bf2): checks and baselines.
# GPUs 0-1: the whole kernel suite beside the originals under Triton (issue 28; the non-dot kernels last
# ran at stop 37), a few kernels per compare_kernels call so a cut-off keeps what finished.
# GPU 2: the value suites stop 44 changed without a GPU run (test_torch_parity with conv tf32 off,
# test_ops_math_backward's CUDA tolerances, test_ops_grad_fast_paths), then cummax/cummin/prod/addr and
# the sort family beside PyTorch. GPU 3: tutorial 06 backward at D 64 / 128 (3 rounds), then the dot ports.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-540}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j64 --target tritium-bench tritium-kernels 06-fused-attention > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built tools $(el)"
(cmake --build /tmp/bg -j32 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 error /tmp/bt.log) > $OUT/logs/tests_build.txt 2>&1 &
B=$!
export LD_LIBRARY_PATH=/tmp/bg
export T0 END OUT; export -f el
kern() { # gpu, kernels...
  export CUDA_VISIBLE_DEVICES=$1 TRITIUM_CACHE_DIR=/tmp/kc$1; shift
  for group in "$@"; do
    local left=$(( END - 8 - $(el) )); [ $left -lt 30 ] && { echo "kernels $group NOT-RUN"; continue; }
    timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels $group --rounds 1 --timeout $left > $OUT/logs/kern_${group//,/_}.txt 2>&1
    echo "kernels $group rc=$? [$(el)]"
  done
}
export -f kern
kern 0 grpo_loss,silu_mul_quant_fp8,rope_embedding cumsum,poly_norm,attn_res rms_norm,qwen2vl_mrope,fused_add_rms_norm group_norm,modulated_rms_norm,rope swiglu,tvd,unsloth_geglu unsloth_cross_entropy,histc,layer_norm softmax,llama4_rope > $OUT/logs/kern0.txt 2>&1 &
kern 1 unsloth_swiglu,rms_layernorm,relu_squared kl_div,cross_entropy,per_token_group_quant_fp8 geglu,flaggems_softmax,embedding jsd,index_select,dyt var_mean,sparsemax int8_dequant_matmul,fp8_block_matmul > $OUT/logs/kern1.txt 2>&1 &
( export CUDA_VISIBLE_DEVICES=3 TRITIUM_CACHE_DIR=/tmp/acache
  for spec in "4096 64,128 f16 bwd"; do
    set -- $spec; n=$(echo "$spec" | tr ' ,' '__')
    timeout 200 python3 bench/compare_attention.py --bin /tmp/bg/tutorials --sizes $1 --dims $2 --dtypes $3 --modes $4 --rounds 3 --timeout 190 > $OUT/logs/attn_$n.txt 2>&1; echo "attn $spec rc=$? [$(el)]"
  done
  kern 3 persistent_matmul batched_matmul,splitk_matmul grouped_gemm,fused_moe implicit_gemm_conv
) > $OUT/logs/k3.txt 2>&1 &
wait $B
suite() { # GPU, suite
  local left=$(( END - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$2.txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
cmp_ops() { # name filter [dtypes]
  local left=$(( END - 8 - $(el) )); [ $left -lt 30 ] && { echo "ops $1 NOT-RUN"; return; }
  timeout $left python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter "$2" --dtypes ${3:-f32,bf16} --json $OUT/logs/ops_$1.json > $OUT/logs/ops_$1.txt 2>&1
  echo "ops $1 rc=$? [$(el)] $(grep geomean $OUT/logs/ops_$1.txt)"
}
export -f suite cmp_ops
( printf '%s\n' test_torch_parity test_ops_math_backward test_ops_grad_fast_paths test_ops_sort test_ops_reduce test_cuda_scans | xargs -P 6 -I{} bash -c 'suite 2 {}'
  export CUDA_VISIBLE_DEVICES=2 TRITIUM_CACHE_DIR=/tmp/ocache2
  cmp_ops fix '^(cummax|cummin|prod|prod\.dim_int|addr)( |$)'
  cmp_ops sort '^(sort|argsort|topk|kthvalue|median|median\.dim|msort)( |$)'
  cmp_ops gather '^(gather|scatter_add|index_select|argmax|argmin|nll_loss|tan|erfc)( |$)'
) > $OUT/logs/g2.txt 2>&1
wait
echo "== gpu2"; cat $OUT/logs/tests_build.txt $OUT/logs/g2.txt
for f in $OUT/logs/t_*.txt; do grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | head -8 | cut -c1-300; }; done
echo "== kernels"; cat $OUT/logs/kern0.txt $OUT/logs/kern1.txt $OUT/logs/k3.txt
for f in $OUT/logs/kern_*.txt; do grep -iE "geomean|worst|error|fail" $f | head -4 | sed "s|^|$(basename $f): |" | cut -c1-250; done
for f in $OUT/logs/attn_*.txt; do echo "-- $f"; tail -12 $f; done
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
