#!/usr/bin/env bash
# session 43, call 2 (four GPUs): main with s43-attnbwd, s43-conv and s43-persistent merged (every
# dot kernel's shared-memory reuse and wgmma zero-start changed). GPU 0: every kernel-suite check,
# then the layout and long suites; GPU 1: tutorial 06 beside Triton and SDPA; GPU 2: the dot ports
# beside their originals (and which config each autotuner picks for the conv); GPU 3: the GPT in
# tf32 and bf16 beside PyTorch eager (LINEAR=1 adds a Linear's products first); last, the
# two-GPU tests on GPUs 1-2 once those are free.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-565}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
git log --oneline -1
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j64 --target tritium-kernels 06-fused-attention tritium-bench train-gpt > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built kernels/attention/bench/gpt $(el)"
(cmake --build /tmp/bg -j56 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 error /tmp/bt.log) &
export LD_LIBRARY_PATH=/tmp/bg
ldconfig -p | grep -q libnccl.so.2 || export TRITIUM_LIBNCCL=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))")/lib/libnccl.so.2
( export CUDA_VISIBLE_DEVICES=1 TRITIUM_CACHE_DIR=/tmp/acache
  timeout 150 /tmp/bg/tutorials/06-fused-attention --backend cuda > $OUT/logs/attn_check.txt 2>&1; echo "tutorial 06 check rc=$? [$(el)]"; grep -ciE "fail|mismatch" $OUT/logs/attn_check.txt; tail -3 $OUT/logs/attn_check.txt
  for d in 128 64; do
    left=$(( END - 20 - $(el) )); [ $left -lt 30 ] && { echo "d$d not run"; continue; }
    timeout $left python3 bench/compare_attention.py --bin /tmp/bg/tutorials --sizes 4096 --dims $d --dtypes f16 --modes fwd,bwd --rounds 2 --timeout 200 > $OUT/logs/attn_d$d.txt 2>&1; echo "attention d$d rc=$? [$(el)]"; tail -6 $OUT/logs/attn_d$d.txt
  done ) > $OUT/logs/attention_summary.txt 2>&1 &
A=$!
( export CUDA_VISIBLE_DEVICES=2 TRITIUM_CACHE_DIR=/tmp/kcache
  for k in ${KERNELS:-implicit_gemm_conv persistent_matmul batched_matmul splitk_matmul int8_dequant_matmul fp8_block_matmul}; do
    left=$(( END - 110 - $(el) )); [ $left -lt 30 ] && { echo "$k not run"; continue; }
    timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels $k --rounds 1 --timeout 200 > $OUT/logs/k_$k.txt 2>&1; echo "kernel $k rc=$? [$(el)]"; tail -7 $OUT/logs/k_$k.txt
    if [ $k = implicit_gemm_conv ]; then  # which config each autotuner picks (s43-conv's open question)
      TRITIUM_CACHE_DIR=/tmp/kprint TRITIUM_PRINT_AUTOTUNING=all timeout 100 /tmp/bg/kernels/tritium-kernels --bench implicit_gemm_conv --backend cuda > $OUT/logs/conv_ours_configs.txt 2>&1
      (cd bench/kernels && TRITON_PRINT_AUTOTUNING=1 timeout 100 python3 -c "import implicit_gemm_conv as m; print(m.bench())") > $OUT/logs/conv_triton_configs.txt 2>&1
      echo "conv configs [$(el)]"; grep -iE "best|chose|picked|selected" $OUT/logs/conv_ours_configs.txt | head -5 | cut -c1-250; grep -iE "best config|finished" $OUT/logs/conv_triton_configs.txt | head -5 | cut -c1-250
    fi
  done ) > $OUT/logs/kernels_summary.txt 2>&1 &
K=$!
( export CUDA_VISIBLE_DEVICES=3 TRITIUM_CACHE_DIR=/tmp/lcache
  for l in ${LINEAR:+16384,384,1536 16384,1536,384}; do
    timeout 150 python3 bench/compare_ops_matmul.py --bench /tmp/bg/bench/tritium-bench --dtypes tf32,bf16 --linear $l > $OUT/logs/lin_$l.txt 2>&1; echo "linear $l rc=$? [$(el)]"; tail -8 $OUT/logs/lin_$l.txt
  done
  G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0 --steps 300"
  P="bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --steps 300"
  for amp in tf32 bf16; do
    left=$(( END - 110 - $(el) )); [ $left -lt 60 ] && { echo "gpt $amp not run"; continue; }
    a="--tf32"; [ $amp = bf16 ] && a="--amp bf16"
    timeout $(( left / 2 + 30 )) $G $a > $OUT/logs/gpt_$amp.txt 2>&1; echo "gpt $amp rc=$?: $(grep -i 'final' $OUT/logs/gpt_$amp.txt | tail -1) [$(el)]"
    left=$(( END - 20 - $(el) )); timeout $left python3 $P $a > $OUT/logs/torch_$amp.txt 2>&1; echo "torch $amp rc=$?: $(grep 'steady' $OUT/logs/torch_$amp.txt) [$(el)]"
  done ) > $OUT/logs/lin_gpt_summary.txt 2>&1 &
L=$!
( export CUDA_VISIBLE_DEVICES=0 TRITIUM_CACHE_DIR=/tmp/ccache0
  /tmp/bg/kernels/tritium-kernels --list | awk '{print $1}' | xargs -P 4 -I{} bash -c 'timeout 150 /tmp/bg/kernels/tritium-kernels --check {} --backend cuda > '$OUT'/logs/check_{}.txt 2>&1; echo "{} rc=$?"' > $OUT/logs/check_rc.txt
  echo "checks done [$(el)]"; grep -v "rc=0" $OUT/logs/check_rc.txt; echo "$(grep -c 'rc=0' $OUT/logs/check_rc.txt) kernels rc=0" ) > $OUT/logs/check_summary.txt 2>&1 &
C=$!
while pgrep -f "target tritium-tests" >/dev/null; do sleep 2; done
suite() { # GPU, suite
  local left=$(( END - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$(echo $2 | tr / _) timeout $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$(echo $2 | tr / _).txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite el; export T0 END OUT
wait $C
SUITES0=${SUITES0:-"test_layouts test_layout_operand_values test_layout_dot_ports test_layout_tf32 test_tf32_values test_layout_wgmma test_layout_dot_kinds test_layout_epilogue test_layout_tma test_layout_data_movement test_attention test_matmul test_dot test_layout_attention_bwd test_matmul_split_k"}
printf '%s\n' $SUITES0 | xargs -P 10 -I{} bash -c 'suite 0 {}' > $OUT/logs/suites0.txt 2>&1 &
S0=$!
wait $K $A
( suite 1,2 test_dist_model_parallel; suite 1,2 test_streams; suite 1,2 test_autotune ) > $OUT/logs/suites12.txt 2>&1
wait $S0 $L
echo "== checks"; cat $OUT/logs/check_summary.txt
for f in $OUT/logs/check_*.txt; do grep -qiE "FAIL|error" $f && { echo "-- $(basename $f)"; grep -iE "FAIL|error" $f | head -4 | cut -c1-300; }; done
echo "== suites"; cat $OUT/logs/suites0.txt $OUT/logs/suites12.txt
for f in $OUT/logs/t_*.txt; do grep -E "error|failed" $f | grep -v "skipped because disabled" | grep -q . && { echo "-- $(basename $f)"; grep -E "error|failed" $f | grep -v "skipped because" | head -8 | cut -c1-300; }; done
echo "== attention"; cat $OUT/logs/attention_summary.txt
echo "== kernels"; cat $OUT/logs/kernels_summary.txt
echo "== linear, gpt"; cat $OUT/logs/lin_gpt_summary.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
