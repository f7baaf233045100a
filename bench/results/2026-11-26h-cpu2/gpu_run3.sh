#!/usr/bin/env bash
# session 41, call 3: the CPU bars of issues 30 and 31 on the GPU machine's idle CPU, both sides pinned
# to the same 2 cores (taskset), Tritium's static-LLVM build of main (f3c6c24) carried in.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
lscpu | grep -E "Model name|^CPU\(s\)|Thread"
D=/tmp/d; mkdir -p $D && tar -C $D -xJf .carry/cpu-bars.tar.xz
export LD_LIBRARY_PATH=$D TRITIUM_CACHE_DIR=/tmp/tcache TRITIUM_NUM_THREADS=2 OMP_NUM_THREADS=2
PIN="taskset -c 2,3"
M="$PIN $D/train-mnist --backend cpu --data .carry/fashion-mnist --epochs 1"
P="$PIN python3 bench/torch_mnist_reference.py .carry/fashion-mnist 1"
G="$PIN $D/train-gpt --device cpu --corpus .carry/fortunes --eval-every 1000 --eval-batches 2 --generate 0"
Q="$PIN python3 bench/torch_gpt_reference.py --device cpu --threads 2 --corpus .carry/fortunes --eval-every 1000 --eval-batches 2"
for round in 1 2; do
  timeout 120 $M > $OUT/logs/mlp_$round.txt 2>&1; echo "mlp $round: $(grep -a final $OUT/logs/mlp_$round.txt) [$(el)]"
  timeout 120 $P mlp cpu > $OUT/logs/torch_mlp_$round.txt 2>&1; echo "torch mlp $round: $(tail -1 $OUT/logs/torch_mlp_$round.txt) [$(el)]"
done
for round in 1 2; do
  timeout 150 $M --model cnn --limit-batches 60 > $OUT/logs/cnn_$round.txt 2>&1; echo "cnn $round: $(grep -a final $OUT/logs/cnn_$round.txt) [$(el)]"
  timeout 150 $P cnn cpu 60 > $OUT/logs/torch_cnn_$round.txt 2>&1; echo "torch cnn $round: $(tail -1 $OUT/logs/torch_cnn_$round.txt) [$(el)]"
done
timeout 100 $G --steps 20 > $OUT/logs/gpt_cold.txt 2>&1; echo "gpt cold: $(grep -a final $OUT/logs/gpt_cold.txt) [$(el)]"
timeout 100 $G --steps 60 > $OUT/logs/gpt.txt 2>&1; echo "gpt: $(grep -a final $OUT/logs/gpt.txt) [$(el)]"
timeout 100 $Q --steps 60 > $OUT/logs/torch_gpt.txt 2>&1; echo "torch gpt: $(tail -2 $OUT/logs/torch_gpt.txt | tr '\n' ' ') [$(el)]"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
