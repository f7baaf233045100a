#!/usr/bin/env bash
# session 45, call 2 (two GPUs: four were not lent): main with the stop's branches merged (s45-elem, s45-ops, s45-norms,
# s45-attnbwd, s45-firstrun, s45-sort, s45-dotports, the lead's part-view gradients).
# GPU 0: value suites the branches touched, every suite kernel's check on CUDA, then ops beside PyTorch.
# GPU 1: the kernel suite's changed kernels beside the originals, tutorial 06 fwd+bwd (2 rounds), the
# dot ports. With WITH_TRAIN=1 (a third GPU): first epoch cold (auto / heuristic / tune), the GPT tf32.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-545}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j64 --target tritium-bench tritium-kernels 06-fused-attention train-mnist train-gpt > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built tools $(el)"
(cmake --build /tmp/bg -j32 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 error /tmp/bt.log) > $OUT/logs/tests_build.txt 2>&1 &
B=$!
export LD_LIBRARY_PATH=/tmp/bg
export T0 END OUT; export -f el
kern() { # gpu, groups...
  export CUDA_VISIBLE_DEVICES=$1 TRITIUM_CACHE_DIR=/tmp/kc$1; shift
  for group in "$@"; do
    local left=$(( END - 8 - $(el) )); [ $left -lt 30 ] && { echo "kernels $group NOT-RUN"; continue; }
    timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels $group --rounds 1 --timeout $left > $OUT/logs/kern_${group//,/_}.txt 2>&1
    echo "kernels $group rc=$? [$(el)]"
  done
}
cmp_ops() { # name filter [dtypes]
  local left=$(( END - 8 - $(el) )); [ $left -lt 30 ] && { echo "ops $1 NOT-RUN"; return; }
  timeout $left python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter "$2" --dtypes ${3:-f32,bf16} --json $OUT/logs/ops_$1.json > $OUT/logs/ops_$1.txt 2>&1
  echo "ops $1 rc=$? [$(el)] $(grep geomean $OUT/logs/ops_$1.txt)"
}
export -f kern cmp_ops
( kern 1 sparsemax,poly_norm,attn_res silu_mul_quant_fp8,rope_embedding,cumsum fused_add_rms_norm,rms_norm,group_norm embedding,flaggems_softmax,unsloth_swiglu modulated_rms_norm,swiglu,grpo_loss
  kern 1 implicit_gemm_conv,splitk_matmul
  export CUDA_VISIBLE_DEVICES=1 TRITIUM_CACHE_DIR=/tmp/acache
  timeout 60 /tmp/bg/tutorials/06-fused-attention --backend cuda > $OUT/logs/t06_check.txt 2>&1; echo "t06 check rc=$? $(tail -1 $OUT/logs/t06_check.txt) [$(el)]"
  timeout 280 python3 bench/compare_attention.py --bin /tmp/bg/tutorials --sizes 4096 --dims 64,128 --dtypes f16 --modes fwd,bwd --rounds 2 --timeout 270 > $OUT/logs/attn.txt 2>&1; echo "attn rc=$? [$(el)]"
  kern 1 persistent_matmul,fused_moe
) > $OUT/logs/k2.txt 2>&1 &
[ "${WITH_TRAIN:-0}" = 1 ] && ( export CUDA_VISIBLE_DEVICES=2
  for mode in auto heuristic tune; do
    left=$(( END - 300 - $(el) )); [ $left -lt 20 ] && { echo "mnist $mode NOT-RUN"; continue; }
    rm -rf /tmp/mc; TRITIUM_AUTOTUNE=$mode TRITIUM_LOG=compile TRITIUM_CACHE_DIR=/tmp/mc timeout 70 /tmp/bg/tools/train-mnist --backend cuda --epochs 2 --data .carry/fashion-mnist > $OUT/logs/mnist_$mode.txt 2>&1
    echo "mnist $mode rc=$? $(grep -E 'epoch [12]' $OUT/logs/mnist_$mode.txt | tr '\n' ' ') $(grep -i totals $OUT/logs/mnist_$mode.txt | tail -1) [$(el)]"
  done
  G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0 --tf32"
  P="bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --steps 300 --tf32"
  for mode in auto tune; do
    TRITIUM_AUTOTUNE=$mode TRITIUM_CACHE_DIR=/tmp/g$mode timeout 100 $G --steps 20 > $OUT/logs/gpt_cold_$mode.txt 2>&1; echo "gpt cold $mode rc=$? [$(el)]"
    TRITIUM_AUTOTUNE=$mode TRITIUM_CACHE_DIR=/tmp/g$mode timeout 60 $G --steps 300 > $OUT/logs/gpt_$mode.txt 2>&1; echo "gpt tf32 $mode rc=$?: $(grep -i final $OUT/logs/gpt_$mode.txt | tail -1) [$(el)]"
  done
  TRITIUM_CACHE_DIR=/tmp/gtune timeout 60 $G --steps 12 --profile $OUT/logs/gpt_trace.json > $OUT/logs/gpt_prof.txt 2>&1; echo "gpt profile rc=$? [$(el)]"
  left=$(( END - 5 - $(el) )); [ $left -gt 40 ] && { timeout $left python3 $P > $OUT/logs/torch_gpt.txt 2>&1; echo "torch eager rc=$?: $(grep steady $OUT/logs/torch_gpt.txt) [$(el)]"; }
) > $OUT/logs/g3.txt 2>&1 &
wait $B
suite() { # GPU, suite
  local left=$(( END - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$2.txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite
( export CUDA_VISIBLE_DEVICES=0
  printf '%s\n' test_device_checks test_tensor_indexing test_nn_loss test_nn_embedding test_ops_softmax test_ops_reduce_stats test_ops_reduce_autograd test_ops_unary_math test_matmul_family test_ops_grad_fast_paths test_ops_math_backward test_atomics test_control_flow test_contract_fma test_reductions test_cuda_codegen_row_loops test_layout_ring_register_loads test_attention test_layout_operand_values test_autotune_policy test_autotune test_kernel_cache test_matmul test_autograd_part_grads test_ops_sort test_nn_gpt test_layouts test_layout_dot_ports test_cuda_scans test_layout_attention_fwd test_layout_attention_bwd test_layout_dot_kinds test_layout_wgmma test_layout_epilogue test_layout_tma test_nn_conv test_autograd test_autograd_grad test_tensor_ops test_profiler | xargs -P 16 -I{} bash -c 'suite 0 {}'
  ls kernels/*.cpp | xargs -n1 basename | sed 's/\.cpp$//' | grep -vE '^(main|suite)$' | xargs -P 12 -I{} bash -c 'left=$(( END - 60 - $(el) )); [ $left -lt 20 ] && { echo "check {} NOT-RUN"; exit 0; }; TRITIUM_CACHE_DIR=/tmp/kchk timeout $left /tmp/bg/kernels/tritium-kernels --check {} --backend cuda > '$OUT'/logs/check_{}.txt 2>&1; echo "check {} rc=$?"'
  export TRITIUM_CACHE_DIR=/tmp/ocache0
  cmp_ops ops '^(nll_loss|cross_entropy_loss|embedding|gather|scatter|scatter_add|scatter_reduce|index_select|index_add|index|argmax|argmin|cummax|cummin|cumsum|cumprod|tan|erfc|addr)( |$)'
  cmp_ops sort '^(sort|argsort|topk|kthvalue|median|median\.dim|msort)( |$)'
) > $OUT/logs/g0.txt 2>&1
wait
echo "== gpu0"; cat $OUT/logs/tests_build.txt $OUT/logs/g0.txt | grep -v "rc=0$"
grep -c "rc=0$" $OUT/logs/g0.txt
for f in $OUT/logs/t_*.txt; do grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|failed|fatal" $f | grep -v "skipped because" | head -6 | cut -c1-300; }; done
for f in $OUT/logs/check_*.txt; do grep -qiE "FAIL|error" $f && { echo "-- $(basename $f)"; grep -iE "FAIL|error" $f | head -3 | cut -c1-250; }; done
echo "== kernels"; cat $OUT/logs/k2.txt
for f in $OUT/logs/kern_*.txt; do grep -E "^geomean" $f | sed "s|^|$(basename $f): |" | cut -c1-250; done
tail -8 $OUT/logs/attn.txt
echo "== gpu3"; cat $OUT/logs/g3.txt 2>/dev/null
grep -A14 "Name " $OUT/logs/gpt_prof.txt | head -16 | cut -c1-200
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
