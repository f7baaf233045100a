#!/usr/bin/env bash
# The CPU bars of issues 30 and 31 on the GPU machine's idle CPU (docs/cpu-backend.md): train-mnist's
# CNN and train-gpt against the PyTorch references, both pinned to the same 2 cores, with both
# sides' profiles. Tritium comes as a tarball of the static-LLVM build (scripts/portable_build.sh's
# programs: libtritium.so, train-mnist, train-gpt, libfmt) in .carry, with .carry/fashion-mnist
# and .carry/fortunes; each tarball named is one build, run in alternation with the others.
# A build may also be a folder holding those files (say, unpacked from one tarball of two builds).
#   bench/cpu_bars_device.sh [--profile] [--rounds R] [--only cnn|gpt] .carry/A.tar.xz [DIR ...]
set -uo pipefail
profile=0 rounds=2 only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile=1; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) break ;;
  esac
done
export OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p $L
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
lscpu | grep -E "Model name|^CPU\(s\)" | tr -s ' '
export TRITIUM_NUM_THREADS=2 OMP_NUM_THREADS=2
PIN="taskset -c 2,3"
builds=()
for t in "$@"; do
  b=$(basename $t .tar.xz); mkdir -p /tmp/$b
  if [ -d $t ]; then cp $t/* /tmp/$b/; else tar -C /tmp/$b -xJf $t; fi
  builds+=($b)
  # Warm each build's own kernel cache (the compiles are not the bars' subject).
  (export LD_LIBRARY_PATH=/tmp/$b TRITIUM_CACHE_DIR=/tmp/cache-$b
   $PIN /tmp/$b/train-mnist --data .carry/fashion-mnist --epochs 1 --model cnn --limit-batches 3 > $L/warm_$b.txt 2>&1
   $PIN /tmp/$b/train-gpt --device cpu --corpus .carry/fortunes --eval-every 1000 --eval-batches 2 --generate 0 \
     --steps 3 >> $L/warm_$b.txt 2>&1)
  echo "warmed $b [$(el)]"
done
M() { LD_LIBRARY_PATH=/tmp/$1 TRITIUM_CACHE_DIR=/tmp/cache-$1 $PIN /tmp/$1/train-mnist --backend cpu \
        --data .carry/fashion-mnist --epochs 1 --model cnn "${@:2}"; }
G() { LD_LIBRARY_PATH=/tmp/$1 TRITIUM_CACHE_DIR=/tmp/cache-$1 $PIN /tmp/$1/train-gpt --device cpu \
        --corpus .carry/fortunes --eval-every 1000 --eval-batches 2 --generate 0 "${@:2}"; }
TM="$PIN python3 ${REFS:-bench}/torch_mnist_reference.py .carry/fashion-mnist 1 cnn cpu 60"
TG="$PIN python3 ${REFS:-bench}/torch_gpt_reference.py --device cpu --threads 2 --corpus .carry/fortunes --eval-every 1000 --eval-batches 2"
for r in $(seq 1 $rounds); do
  [ "$only" = gpt ] || for b in "${builds[@]}"; do
    M $b --limit-batches 60 > $L/cnn_${b}_$r.txt 2>&1; echo "cnn $b $r: $(grep -a final $L/cnn_${b}_$r.txt) [$(el)]"
  done
  [ "$only" = gpt ] || $TM > $L/torch_cnn_$r.txt 2>&1; echo "torch cnn $r: $(tail -1 $L/torch_cnn_$r.txt) [$(el)]"
  [ "$only" = cnn ] || for b in "${builds[@]}"; do
    G $b --steps 60 > $L/gpt_${b}_$r.txt 2>&1; echo "gpt $b $r: $(grep -a final $L/gpt_${b}_$r.txt) [$(el)]"
  done
  [ "$only" = cnn ] || $TG --steps 60 > $L/torch_gpt_$r.txt 2>&1; echo "torch gpt $r: $(tail -2 $L/torch_gpt_$r.txt | tr '\n' ' ') [$(el)]"
done
if [ $profile = 1 ]; then
  for b in "${builds[@]}"; do
    M $b --limit-batches 12 --profile /tmp/cnn_$b.json > $L/prof_cnn_$b.txt 2>&1
    G $b --steps 12 --profile /tmp/gpt_$b.json > $L/prof_gpt_$b.txt 2>&1
    echo "profiled $b [$(el)]"
  done
  $PIN python3 ${REFS:-bench}/torch_cnn_profile.py 10 2 > $L/prof_torch_cnn.txt 2>&1
  $TG --steps 12 --profile > $L/prof_torch_gpt.txt 2>&1
  echo "profiled torch [$(el)]"
fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
