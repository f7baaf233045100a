#!/usr/bin/env bash
# session 47, call 3 (one GPU, nothing else running): the GPT under the auto default beside PyTorch eager
# and torch.compile on a quiet host (call 2 ran them beside 20 test processes on the other GPUs, which
# slows a CPU-bound PyTorch eager more than us). tf32 and bf16: one cold run (fills the cache), then two
# alternating rounds of ours / PyTorch eager, 300 steps each, then torch.compile (default mode) once.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j16 --target train-gpt > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg
G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0"
for mode in tf32 bf16; do
  flag=$([ $mode = tf32 ] && echo "--tf32" || echo "--amp bf16")
  P="bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --steps 300 $flag"
  TRITIUM_CACHE_DIR=/tmp/ga-$mode timeout 60 $G $flag --steps 20 > $OUT/logs/gpt_cold_$mode.txt 2>&1
  echo "$mode cold: $(grep final $OUT/logs/gpt_cold_$mode.txt) [$(el)]"
  for r in 1 2; do
    TRITIUM_CACHE_DIR=/tmp/ga-$mode timeout 60 $G $flag --steps 300 > $OUT/logs/gpt_${mode}_$r.txt 2>&1
    echo "$mode ours round $r: $(grep final $OUT/logs/gpt_${mode}_$r.txt) [$(el)]"
    timeout 90 python3 $P > $OUT/logs/torch_${mode}_$r.txt 2>&1
    echo "$mode eager round $r: $(grep steady $OUT/logs/torch_${mode}_$r.txt) [$(el)]"
  done
done
for mode in tf32 bf16; do
  flag=$([ $mode = tf32 ] && echo "--tf32" || echo "--amp bf16")
  timeout 150 python3 bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --steps 300 --compile $flag > $OUT/logs/compile_$mode.txt 2>&1
  echo "$mode torch.compile rc=$?: $(grep steady $OUT/logs/compile_$mode.txt) [$(el)]"
done
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
