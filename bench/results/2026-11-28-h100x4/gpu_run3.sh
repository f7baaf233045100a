#!/usr/bin/env bash
# session 50, call 3 (four GPUs): gpu_run2.sh again with the upstream originals present. Call 2 ran every
# kernel to rc=1: bench/kernels/upstream/ (git-ignored) was absent from this checkout, so every original
# raised MissingUpstream. The helper put the 45 upstream files there (Liger-Kernel, FlagGems, unsloth,
# bitsandbytes from mirrors at the cited commits; triton, vllm and two FlagGems files from the stored
# file index at the cited commits, lengths checked) and carries the folder with the call. Same as
# gpu_run2.sh otherwise, except that the kernel list is taken from KERNELS (dealt round-robin in order,
# so the slow dot kernels put last in the list run last on their GPU).
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-560}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
ls bench/kernels/upstream/*/*/ >/dev/null 2>&1 || { echo "no upstream copies"; exit 1; }
echo "upstream files: $(find bench/kernels/upstream -type f -name '*.py' | wc -l)"
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j64 --target tritium-kernels > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg
ks=(${KERNELS:-$(ls bench/kernels/*.py | xargs -n1 basename | grep -v '^_' | sed 's/\.py$//')})
echo "kernels: ${#ks[@]}"
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
