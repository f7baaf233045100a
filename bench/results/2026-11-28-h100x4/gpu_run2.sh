#!/usr/bin/env bash
# session 50, call 2 (four GPUs): the whole real-world kernel suite beside the originals under Triton (issue 28;
# the last whole run was stop 45's: geomean 1.015 over 39 kernels, eight below 0.85). compare_kernels.py
# --rounds 1, the kernels dealt round-robin to the four GPUs, one process per kernel so a cut-off keeps what
# finished. (Its first version promised the suite's value checks on CUDA after it; it had no such step: gpu_run4.sh
# runs them.)
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-560}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j64 --target tritium-kernels > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg
ks=($(ls bench/kernels/*.py | xargs -n1 basename | grep -v '^_' | sed 's/\.py$//'))
kern() { # GPU, kernels...
  local g=$1; shift
  export CUDA_VISIBLE_DEVICES=$g TRITIUM_CACHE_DIR=/tmp/kcache$g TRITIUM_AUTOTUNE=tune
  for k in "$@"; do
    local left=$(( END - 8 - $(el) )); [ $left -lt 20 ] && { echo "$k NOT-RUN"; continue; }
    timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels $k --rounds 1 > $OUT/logs/k_$k.txt 2>&1
    echo "$k rc=$? [$(el)] $(grep -i geomean $OUT/logs/k_$k.txt | tail -1)"
  done
}
export -f kern el; export T0 END OUT
for g in 0 1 2 3; do
  sel=(); for i in "${!ks[@]}"; do [ $(( i % 4 )) -eq $g ] && sel+=("${ks[$i]}"); done
  kern $g "${sel[@]}" > $OUT/logs/gpu$g.txt 2>&1 &
done
wait
cat $OUT/logs/gpu*.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
