#!/usr/bin/env bash
# session 43, call 3 (four GPUs): main with every stop-43 branch merged (s43-linear's block pointers,
# split-K model and wgmma wait tie touch every matmul; s43-gputests' heuristic autotuning in tests).
# GPU 0: the matmul and layout suites, then test_streams on GPUs 0-1; GPU 1: a Linear's products
# beside cuBLAS, then tutorial 03 beside Triton; GPU 2: the GPT in tf32 and bf16 beside PyTorch eager
# (each side warm); GPU 3: the dot ports' checks, the conv's kernel under ncu, tutorial 06.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-535}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
git log --oneline -1
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j64 --target tritium-kernels 06-fused-attention 03-matrix-multiplication tritium-bench train-gpt > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built tools $(el)"
(cmake --build /tmp/bg -j56 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 error /tmp/bt.log) &
B=$!
export LD_LIBRARY_PATH=/tmp/bg
( export CUDA_VISIBLE_DEVICES=1 TRITIUM_CACHE_DIR=/tmp/lcache
  for l in 16384,384,1536 16384,1536,384; do
    timeout 170 python3 bench/compare_ops_matmul.py --bench /tmp/bg/bench/tritium-bench --dtypes tf32,bf16 --linear $l > $OUT/logs/lin_$l.txt 2>&1; echo "linear $l rc=$? [$(el)]"; tail -8 $OUT/logs/lin_$l.txt
  done
  left=$(( END - 10 - $(el) )); [ $left -gt 40 ] && { timeout $left python3 bench/compare_matmul.py --bin /tmp/bg/tutorials/03-matrix-multiplication --dtypes f16,bf16 --sizes 4096,8192 --rounds 1 > $OUT/logs/t03.txt 2>&1; echo "tutorial 03 rc=$? [$(el)]"; tail -10 $OUT/logs/t03.txt; }
) > $OUT/logs/lin_summary.txt 2>&1 &
L=$!
( export CUDA_VISIBLE_DEVICES=2 TRITIUM_CACHE_DIR=/tmp/gcache
  G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0"
  P="bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --steps 300"
  for amp in tf32 bf16; do
    a="--tf32"; [ $amp = bf16 ] && a="--amp bf16"
    left=$(( END - 60 - $(el) )); [ $left -lt 60 ] && { echo "gpt $amp not run"; continue; }
    timeout 110 $G $a --steps 20 > $OUT/logs/gpt_cold_$amp.txt 2>&1; echo "gpt $amp cold 20 steps rc=$?: $(grep -i 'final' $OUT/logs/gpt_cold_$amp.txt | tail -1) [$(el)]"
    timeout 60 $G $a --steps 300 > $OUT/logs/gpt_$amp.txt 2>&1; echo "gpt $amp rc=$?: $(grep -i 'final' $OUT/logs/gpt_$amp.txt | tail -1) [$(el)]"
    left=$(( END - 5 - $(el) )); timeout $left python3 $P $a > $OUT/logs/torch_$amp.txt 2>&1; echo "torch $amp rc=$?: $(grep 'steady' $OUT/logs/torch_$amp.txt) [$(el)]"
  done ) > $OUT/logs/gpt_summary.txt 2>&1 &
G=$!
( export CUDA_VISIBLE_DEVICES=3 TRITIUM_CACHE_DIR=/tmp/kcache
  printf '%s\n' grouped_gemm fused_moe int8_dequant_matmul fp8_block_matmul splitk_matmul batched_matmul persistent_matmul implicit_gemm_conv | xargs -P 8 -I{} bash -c 'timeout 200 /tmp/bg/kernels/tritium-kernels --check {} --backend cuda > '$OUT'/logs/check_{}.txt 2>&1; echo "check {} rc=$?"'
  echo "dot checks done [$(el)]"
  if command -v ncu >/dev/null; then  # the conv kernel's time and traffic at the config our autotuner keeps
    TRITIUM_CACHE_DIR=/tmp/kncu timeout 100 /tmp/bg/kernels/tritium-kernels --bench implicit_gemm_conv --backend cuda > $OUT/logs/conv_bench.txt 2>&1
    M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__grid_size,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem
    TRITIUM_CACHE_DIR=/tmp/kncu timeout 90 ncu --clock-control none --kernel-name regex:conv2d_forward --launch-count 2 --metrics $M /tmp/bg/kernels/tritium-kernels --bench implicit_gemm_conv --backend cuda > $OUT/logs/ncu_conv_ours.txt 2>&1; echo "ncu ours rc=$? [$(el)]"
    grep -E "conv2d_forward|gpu__time|dram__bytes|sectors|requests|warps_active|inst_executed|registers|shared_mem|grid_size|occupancy" $OUT/logs/ncu_conv_ours.txt | head -34
  fi
  left=$(( END - 10 - $(el) )); [ $left -gt 40 ] && { timeout $left python3 bench/compare_attention.py --bin /tmp/bg/tutorials --sizes 4096 --dims 128 --dtypes f16 --modes fwd,bwd --rounds 1 --timeout $left > $OUT/logs/attn_d128.txt 2>&1; echo "attention d128 rc=$? [$(el)]"; tail -5 $OUT/logs/attn_d128.txt; }
) > $OUT/logs/k_summary.txt 2>&1 &
K=$!
wait $B
suite() { # GPU, suite
  local left=$(( END - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  TRITIUM_LOG=compile CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$(echo $2 | tr / _) timeout $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$(echo $2 | tr / _).txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite el; export T0 END OUT
SUITES0=${SUITES0:-"test_matmul_block_pointers test_matmul test_matmul_family test_matmul_split_k test_matmul_epilogue test_tf32_values test_layout_operand_values test_layouts test_layout_wgmma test_layout_tma test_layout_dot_ports test_dot test_attention test_nn_transformer test_torch_parity test_nn_gpt test_autotune"}
( printf '%s\n' $SUITES0 | xargs -P 16 -I{} bash -c 'suite 0 {}'; suite 0,1 test_streams ) > $OUT/logs/suites0.txt 2>&1
wait $L $G $K
echo "== suites"; cat $OUT/logs/suites0.txt; grep -h "totals" $OUT/logs/t_*.txt | cut -c1-200 | head -20
for f in $OUT/logs/t_*.txt; do grep -E "error|failed" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error|failed" $f | grep -v "skipped because" | head -8 | cut -c1-300; }; done
echo "== dot checks, attention, ncu"; cat $OUT/logs/k_summary.txt
for f in $OUT/logs/check_*.txt; do grep -qiE "FAIL|error" $f && { echo "-- $(basename $f)"; grep -iE "FAIL|error" $f | head -4 | cut -c1-300; }; done
echo "== linear, tutorial 03"; cat $OUT/logs/lin_summary.txt
echo "== gpt"; cat $OUT/logs/gpt_summary.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
