#!/usr/bin/env bash
# session 44, call 3 (four GPUs): main with every stop-44 branch merged: s44-conv (lanes of a gather along
# the likely smallest step), s44-fp32dot (register-blocked FMA dot, f32 matmul candidates), s44-opsreduce
# (mv/dot as reductions, one-pass max.dim, native 16-bit atomics, split statistics), s44-opsmath (f32 exp
# by bits, one-kernel backwards, dropout by 4 words of Philox), on top of call 2's attnfwd and convnn.
# GPU 0: value suites, then the debug mode's cost; GPU 1: test_dot and test_torch_parity;
# GPU 2: the changed ops beside PyTorch; GPU 3: the dot ports' checks, the conv port beside FlagGems'
# under Triton and under ncu, conv2d beside cuDNN.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-535}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
git log --oneline -1
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j64 --target tritium-bench tritium-kernels 01-vector-add 02-fused-softmax 05-layer-norm > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built tools $(el)"
(cmake --build /tmp/bg -j48 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 error /tmp/bt.log) > $OUT/logs/tests_build.txt 2>&1 &
B=$!
export LD_LIBRARY_PATH=/tmp/bg
cmp_ops() { # name filter [dtypes]
  local left=$(( END - 8 - $(el) )); [ $left -lt 30 ] && { echo "ops $1 NOT-RUN"; return; }
  timeout $left python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter "$2" --dtypes ${3:-f32,bf16} --json $OUT/logs/ops_$1.json > $OUT/logs/ops_$1.txt 2>&1
  echo "ops $1 rc=$? [$(el)] $(grep geomean $OUT/logs/ops_$1.txt)"
}
export -f cmp_ops el; export T0 END OUT
( export CUDA_VISIBLE_DEVICES=2 TRITIUM_CACHE_DIR=/tmp/ocache2
  cmp_ops fp32mm '^(mm|matmul|linear|bmm|addmm|baddbmm|addbmm|addr|scaled_dot_product_attention)( |$)' f32
  cmp_ops reduce '^(adaptive_avg_pool2d|mv|addmv|dot|vdot|max\.dim|min\.dim|argmax|argmin|prod|prod\.dim_int|cummax|cummin|scatter_add|gather|index_select|index_put|std|linalg_vector_norm)( |$)'
  cmp_ops math '^(sinh|cosh|expm1|mish|elu|silu|softplus|erfc|asinh|acosh|tan|rsqrt|logaddexp|fmin|fmax|fmod|remainder|maximum|minimum|clamp|copysign|dropout)( |$)'
) > $OUT/logs/ops.txt 2>&1 &
( export CUDA_VISIBLE_DEVICES=3 TRITIUM_CACHE_DIR=/tmp/kcache
  printf '%s\n' grouped_gemm fused_moe int8_dequant_matmul fp8_block_matmul splitk_matmul batched_matmul persistent_matmul implicit_gemm_conv | xargs -P 8 -I{} bash -c 'timeout 200 /tmp/bg/kernels/tritium-kernels --check {} --backend cuda > '$OUT'/logs/check_{}.txt 2>&1; echo "check {} rc=$?"'
  echo "dot checks done [$(el)]"
  timeout 200 python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels implicit_gemm_conv --rounds 1 --timeout 190 > $OUT/logs/conv_port.txt 2>&1; echo "conv port rc=$? [$(el)]"; tail -6 $OUT/logs/conv_port.txt
  if command -v ncu >/dev/null; then
    M=gpu__time_duration.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread
    TRITIUM_CACHE_DIR=/tmp/kncu timeout 100 /tmp/bg/kernels/tritium-kernels --bench implicit_gemm_conv --backend cuda > $OUT/logs/conv_bench.txt 2>&1
    TRITIUM_CACHE_DIR=/tmp/kncu timeout 90 ncu --clock-control none --kernel-name regex:conv2d_forward --launch-count 1 --metrics $M /tmp/bg/kernels/tritium-kernels --bench implicit_gemm_conv --backend cuda > $OUT/logs/ncu_conv_ours.txt 2>&1; echo "ncu ours rc=$? [$(el)]"
  fi
  cmp_ops conv2d '^conv2d' bf16
) > $OUT/logs/k3.txt 2>&1 &
wait $B
suite() { # GPU, suite
  local left=$(( END - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  TRITIUM_LOG=compile CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$(echo $2 | tr / _) timeout $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$(echo $2 | tr / _).txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite
( printf '%s\n' test_dot test_torch_parity test_op_registry | xargs -P 3 -I{} bash -c 'suite 1 {}' ) > $OUT/logs/suites1.txt 2>&1 &
S1=$!
SUITES0="test_fma_dot test_matmul test_matmul_family test_layout_dot_kinds test_attention test_layouts test_layout_operand_values test_nn_conv test_passes test_ops_math_backward test_ops_unary_math test_ops_activations test_ops_softmax test_ops_reduce test_ops_reduce_stats test_ops_reduce_autograd test_nn_pool test_atomics test_ops_sort test_tensor_indexing test_autograd_grad test_cuda_codegen_reductions test_layout_epilogue test_layout_wgmma test_layout_dot_ports test_nn_embedding test_autograd test_autograd_checkpoint test_nn_transformer test_nn_gpt"
( printf '%s\n' $SUITES0 | xargs -P 16 -I{} bash -c 'suite 0 {}'
  for t in 01-vector-add 02-fused-softmax 05-layer-norm; do for d in 0 1; do
    left=$(( END - 5 - $(el) )); [ $left -lt 20 ] && continue
    CUDA_VISIBLE_DEVICES=0 TRITIUM_DEBUG=$d TRITIUM_CACHE_DIR=/tmp/dcache timeout $left /tmp/bg/tutorials/$t --backend cuda --bench > $OUT/logs/debug_${t}_$d.txt 2>&1; echo "$t debug=$d rc=$? [$(el)]"
  done; done ) > $OUT/logs/suites0.txt 2>&1
wait
echo "== suites"; cat $OUT/logs/tests_build.txt $OUT/logs/suites0.txt $OUT/logs/suites1.txt
for f in $OUT/logs/t_*.txt; do grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | head -8 | cut -c1-300; }; done
echo "== ops"; cat $OUT/logs/ops.txt
echo "== dot checks, conv"; cat $OUT/logs/k3.txt
for f in $OUT/logs/check_*.txt; do grep -qiE "FAIL|error" $f && { echo "-- $(basename $f)"; grep -iE "FAIL|error" $f | head -4 | cut -c1-300; }; done
grep -E "gpu__time|sectors|requests|warps_active|inst_executed|registers" $OUT/logs/ncu_conv_ours.txt | head -12
for f in $OUT/logs/debug_*.txt; do echo "-- $f"; tail -5 $f; done
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
