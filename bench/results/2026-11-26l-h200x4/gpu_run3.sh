#!/usr/bin/env bash
# session 42, call 3 (four GPUs): main with the device-model tuning key and cross-device
# record_stream. GPUs 0-1: GPT 1 and 2 ranks beside PyTorch DDP, then the two-GPU tests; GPU 2: the
# kernel suite's dot kernels beside their Triton originals; GPU 3: tutorial 06 beside Triton and
# SDPA; then all four: the GPT at 4 ranks beside PyTorch.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j60 --target tritium-run tritium-dist-worker train-gpt > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head; exit 1; }
echo "built tools $(el)"
(cmake --build /tmp/bg -j48 --target tritium-kernels 06-fused-attention tritium-tests > /tmp/bt.log 2>&1; echo "rest built rc=$? $(el)") &
BUILD=$!
export LD_LIBRARY_PATH=/tmp/bg
ldconfig -p | grep -q libnccl.so.2 || export TRITIUM_LIBNCCL=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))")/lib/libnccl.so.2
R=/tmp/bg/tools/tritium-run; W=/tmp/bg/tests/tritium-dist-worker
G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0 --amp bf16"
P="bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --amp bf16"
export TRITIUM_CACHE_DIR=/tmp/tcache
( export CUDA_VISIBLE_DEVICES=0,1
  timeout 110 $G --steps 20 > $OUT/logs/cold1.txt 2>&1; echo "cold1 rc=$? $(el)"
  for n in 1 2; do b=$((64 * n))
    timeout 45 $R --nproc-per-node $n $G --steps 300 --batch-size $b > $OUT/logs/gpt$n.txt 2>&1; echo "gpt x$n: $(grep -i 'final' $OUT/logs/gpt$n.txt) [$(el)]"
    timeout 90 torchrun --nproc-per-node $n $P --steps 300 --batch-size $b > $OUT/logs/torch$n.txt 2>&1; echo "torch x$n: $(grep 'steady' $OUT/logs/torch$n.txt) [$(el)]"
  done
  while pgrep -f "cmake --build" >/dev/null; do sleep 2; done
  for t in test_dist_model_parallel test_autotune/devices_of_one_model_share_tuning_records test_streams/record_stream_on_another_devices_stream; do
    TRITIUM_CACHE_DIR=/tmp/c-$RANDOM timeout 100 /tmp/bg/tests/tritium-tests --run_test=$t --log_level=test_suite > $OUT/logs/$(echo $t | tr / _).txt 2>&1; echo "$t rc=$? $(el) $(grep -c 'error' $OUT/logs/$(echo $t | tr / _).txt) errors"
  done ) &
G01=$!
while pgrep -f "cmake --build" >/dev/null; do sleep 2; done; echo "build done $(el)"
( export CUDA_VISIBLE_DEVICES=2 TRITIUM_CACHE_DIR=/tmp/kcache
  for k in grouped_gemm fused_moe implicit_gemm_conv batched_matmul int8_dequant_matmul fp8_block_matmul splitk_matmul; do
    [ $(el) -gt 390 ] && { echo "$k not run (time)"; continue; }
    timeout 100 python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels $k --rounds 1 > $OUT/logs/k_$k.txt 2>&1; echo "kernel $k rc=$? [$(el)]"; grep -i "geomean\|worst" $OUT/logs/k_$k.txt | head -3
  done ) > $OUT/logs/kernels_summary.txt 2>&1 &
KS=$!
( export CUDA_VISIBLE_DEVICES=3 TRITIUM_CACHE_DIR=/tmp/acache
  for d in 128 64; do
    timeout 150 python3 bench/compare_attention.py --bin /tmp/bg/tutorials --sizes 4096 --dims $d --dtypes f16 --modes fwd,bwd --rounds 2 > $OUT/logs/attn_d$d.txt 2>&1; echo "attention d$d rc=$? [$(el)]"; tail -12 $OUT/logs/attn_d$d.txt
  done ) > $OUT/logs/attention_summary.txt 2>&1 &
AS=$!
wait $G01; wait $KS; wait $AS
cat $OUT/logs/kernels_summary.txt $OUT/logs/attention_summary.txt
timeout 45 $R --nproc-per-node 4 $G --steps 300 --batch-size 256 > $OUT/logs/gpt4.txt 2>&1; echo "gpt x4: $(grep -i 'final' $OUT/logs/gpt4.txt) $(grep -o 'step 1/300[^l]*loss [0-9.]*  lr [0-9.e+-]*  [0-9]* tokens/s' $OUT/logs/gpt4.txt) [$(el)]"
timeout 90 torchrun --nproc-per-node 4 $P --steps 300 --batch-size 256 > $OUT/logs/torch4.txt 2>&1; echo "torch x4: $(grep 'steady' $OUT/logs/torch4.txt) [$(el)]"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
