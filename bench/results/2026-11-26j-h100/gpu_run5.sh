#!/usr/bin/env bash
# session 41, call 5 (one H100): merged main: split-K and the cast cache on CUDA, NCCL's stream
# path with one rank, then the GPT (300 steps) beside PyTorch eager and torch.compile, same lease.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j16 --target tritium-tests train-gpt tritium-run tritium-dist-worker > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures
for s in test_matmul_split_k test_matmul_epilogue test_layout_epilogue test_amp_autocast; do
  (TRITIUM_CACHE_DIR=/tmp/c-$s timeout 110 /tmp/bg/tests/tritium-tests --run_test=$s --report_level=short > $OUT/logs/$s.log 2>&1; echo "$s rc=$?") &
done
(TRITIUM_CACHE_DIR=/tmp/c-nccl timeout 60 /tmp/bg/tools/tritium-run --nproc-per-node 1 /tmp/bg/tests/tritium-dist-worker --mode collectives --device cuda > $OUT/logs/nccl1.txt 2>&1; echo "nccl 1 rank rc=$? $(tail -1 $OUT/logs/nccl1.txt)") &
export TRITIUM_CACHE_DIR=/tmp/tcache
G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 150 --generate 0"
P="python3 bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 150"
for prec in "--amp bf16" "--tf32"; do   # fill the kernel cache while the checks run (not timed)
  tag=$(echo $prec | tr -d ' -'); timeout 80 $G $prec --steps 20 --eval-every 1000 > $OUT/logs/cold_$tag.txt 2>&1
done
wait; echo "checks done $(el)"; grep -h "error\|failed" $OUT/logs/test_*.log | head -8 | cut -c1-250
for prec in "--amp bf16" "--tf32"; do
  tag=$(echo $prec | tr -d ' -')
  [ $tag = tf32 ] && [ $(el) -gt 380 ] && { echo "tf32 skipped (time)"; continue; }
  timeout 40 $G $prec --steps 300 > $OUT/logs/gpt_$tag.txt 2>&1; echo "gpt $tag: $(grep final $OUT/logs/gpt_$tag.txt) [$(el)]"
  timeout 40 $P $prec --steps 300 > $OUT/logs/torch_$tag.txt 2>&1; echo "torch $tag: $(grep 'step 300\|steady' $OUT/logs/torch_$tag.txt | tr '\n' ' ') [$(el)]"
  [ $tag = tf32 ] && { echo "compile tf32 not run (device time)"; continue; }
  timeout 110 $P $prec --steps 300 --compile > $OUT/logs/compile_$tag.txt 2>&1; echo "compile $tag: $(grep 'step 300\|steady' $OUT/logs/compile_$tag.txt | tr '\n' ' ') [$(el)]"
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
