#!/usr/bin/env bash
# session 42, call 1 (nvidia-h100-x4): data-parallel GPT on 1, 2, 4 GPUs beside PyTorch DDP (same
# per-GPU batch 64, bf16 autocast, 300 steps), all-reduce bus bandwidth at 2 and 4 ranks beside
# torch.distributed, the comm-stream NCCL collectives at 4 ranks, the profiler trace at 2 ranks,
# the two-GPU model-parallel test.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c; nvidia-smi topo -m | head -6
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j60 --target tritium-run tritium-dist-worker train-gpt > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head; exit 1; }
echo "built $(el)"
(cmake --build /tmp/bg -j40 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)") &
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_CACHE_DIR=/tmp/tcache
ldconfig -p | grep -q libnccl.so.2 || export TRITIUM_LIBNCCL=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))")/lib/libnccl.so.2
R=/tmp/bg/tools/tritium-run; W=/tmp/bg/tests/tritium-dist-worker
G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0 --amp bf16"
P="bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --amp bf16"
# fill the kernel cache (1 rank, then 2 ranks for the DDP kernels); not timed
timeout 100 $G --steps 20 > $OUT/logs/cold1.txt 2>&1; echo "cold1 rc=$? $(el)"
timeout 60 $R --nproc-per-node 2 $G --steps 10 --batch-size 128 > $OUT/logs/cold2.txt 2>&1; echo "cold2 rc=$? $(el)"
timeout 60 $R --nproc-per-node 4 $W --mode collectives --device cuda > $OUT/logs/collectives4.txt 2>&1; echo "collectives4 rc=$? $(el) $(tail -1 $OUT/logs/collectives4.txt)"
for n in 4 2; do
  timeout 60 $R --nproc-per-node $n $W --mode allreduce-bench --device cuda > $OUT/logs/ar${n}_tritium.txt 2>&1; echo "ar$n rc=$? $(el)"; tail -6 $OUT/logs/ar${n}_tritium.txt
  timeout 80 torchrun --nproc-per-node $n scripts/torch_allreduce_bench.py --device cuda > $OUT/logs/ar${n}_torch.txt 2>&1; echo "torch ar$n rc=$? $(el)"; tail -6 $OUT/logs/ar${n}_torch.txt
done
for n in 1 2 4; do
  b=$((64 * n))
  timeout 45 $R --nproc-per-node $n $G --steps 300 --batch-size $b > $OUT/logs/gpt$n.txt 2>&1; echo "gpt x$n: $(grep -i 'final\|tokens/s' $OUT/logs/gpt$n.txt | tail -2 | tr '\n' ' ') [$(el)]"
  timeout 90 torchrun --nproc-per-node $n $P --steps 300 --batch-size $b > $OUT/logs/torch$n.txt 2>&1; echo "torch x$n: $(grep 'step 300\|steady' $OUT/logs/torch$n.txt | tr '\n' ' ') [$(el)]"
done
timeout 40 $R --nproc-per-node 2 $G --steps 12 --batch-size 128 --profile $OUT/logs/profile2.json > $OUT/logs/profile2.txt 2>&1; echo "profile2 rc=$? $(el)"
wait
timeout 100 /tmp/bg/tests/tritium-tests --run_test=test_dist_model_parallel --report_level=short > $OUT/logs/model_parallel.txt 2>&1; echo "model parallel rc=$? $(el)"; tail -3 $OUT/logs/model_parallel.txt
cd $OUT && gzip -f logs/profile2.json 2>/dev/null; tar czf logs.tgz logs && rm -rf logs
