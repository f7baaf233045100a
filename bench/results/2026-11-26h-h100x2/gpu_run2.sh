#!/usr/bin/env bash
# session 41, call 2 (nvidia-h100-x2): NCCL process groups for the first time on two GPUs (docs/distributed.md)
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader; nvidia-smi topo -m | head -4
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j32 --target tritium-run tritium-dist-worker train-mnist > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_CACHE_DIR=/tmp/tcache
ldconfig -p | grep -q libnccl.so.2 || export TRITIUM_LIBNCCL=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))")/lib/libnccl.so.2
echo "TRITIUM_LIBNCCL=${TRITIUM_LIBNCCL:-system}"
R=/tmp/bg/tools/tritium-run; W=/tmp/bg/tests/tritium-dist-worker
timeout 90 $R --nproc-per-node 2 $W --mode collectives --device cuda > $OUT/logs/collectives.txt 2>&1; echo "collectives rc=$? $(el)"; tail -15 $OUT/logs/collectives.txt
timeout 90 $R --nproc-per-node 1 $W --mode train --device cuda > $OUT/logs/one.txt 2>&1; echo "one rc=$? $(el)"
timeout 90 $R --nproc-per-node 2 $W --mode train --device cuda > $OUT/logs/two.txt 2>&1; echo "two rc=$? $(el)"
paste <(tail -6 $OUT/logs/one.txt) <(tail -6 $OUT/logs/two.txt)
timeout 90 $R --nproc-per-node 2 $W --mode allreduce-bench --device cuda > $OUT/logs/ar_tritium.txt 2>&1; echo "ar rc=$? $(el)"; tail -8 $OUT/logs/ar_tritium.txt
timeout 90 torchrun --nproc-per-node 2 scripts/torch_allreduce_bench.py --device cuda > $OUT/logs/ar_torch.txt 2>&1; echo "torch ar rc=$? $(el)"; tail -8 $OUT/logs/ar_torch.txt
timeout 150 $R --nproc-per-node 2 /tmp/bg/tools/train-mnist --backend cuda --epochs 1 --data .carry/fashion-mnist > $OUT/logs/mnist2.txt 2>&1; echo "mnist2 rc=$? $(el)"; tail -6 $OUT/logs/mnist2.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
