#!/usr/bin/env bash
# session 42, call 4 (two GPUs): issue 32 on the machine it names - GPT at 1 and 2 ranks beside
# PyTorch DDP, and the two-rank profile with the collectives in the trace.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j32 --target tritium-run train-gpt > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_CACHE_DIR=/tmp/tcache
ldconfig -p | grep -q libnccl.so.2 || export TRITIUM_LIBNCCL=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))")/lib/libnccl.so.2
R=/tmp/bg/tools/tritium-run
G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0 --amp bf16"
P="bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --amp bf16"
timeout 100 $R --nproc-per-node 2 $G --steps 12 --batch-size 128 --profile $OUT/logs/profile2.json > $OUT/logs/profile2.txt 2>&1; echo "profile2 (cold) rc=$? $(el)"; grep -i "all_reduce\|nccl\|bucket" $OUT/logs/profile2.txt | head -5
for n in 1 2; do b=$((64 * n))
  timeout 30 $R --nproc-per-node $n $G --steps 300 --batch-size $b > $OUT/logs/gpt$n.txt 2>&1; echo "gpt x$n: $(grep -i 'final' $OUT/logs/gpt$n.txt) [$(el)]"
done
for n in 1 2; do b=$((64 * n))
  [ $(el) -gt 175 ] && { echo "torch x$n not run (time)"; continue; }
  timeout 45 torchrun --nproc-per-node $n $P --steps 300 --batch-size $b > $OUT/logs/torch$n.txt 2>&1; echo "torch x$n: $(grep 'steady' $OUT/logs/torch$n.txt) [$(el)]"
done
python3 - $OUT/logs/profile2.json <<"PY" 2>&1 | tail -5
import json,sys
t=json.load(open(sys.argv[1])); ev=[e for e in (t["traceEvents"] if isinstance(t,dict) else t) if e.get("ph")=="X"]
c=[e for e in ev if e.get("cat")=="collective"]; k=[e for e in ev if e.get("cat")=="kernel"]
print("collective spans", len(c), "kernels", len(k))
ov=sum(1 for x in c if any(y["ts"] < x["ts"]+x["dur"] and x["ts"] < y["ts"]+y["dur"] for y in k))
print("collective spans overlapping a kernel of the compute stream:", ov)
PY
cd $OUT && gzip -f logs/profile2.json 2>/dev/null; tar czf logs.tgz logs && rm -rf logs
