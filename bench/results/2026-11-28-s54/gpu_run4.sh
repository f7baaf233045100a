#!/usr/bin/env bash
# session 54, call 4 (one H200, the session's last ~400 s of device time): issue 28's first-run cost
# (item 5: "a cold CUDA compile of any suite kernel is no slower than Triton's compile of the original")
# for kernels stop 36 did not measure - `compare_kernels.py --cold` runs each side's benchmark twice in
# fresh processes (empty cache, then warm) and compares the differences - one kernel a call so a cut-off
# keeps what finished. Carries bench/kernels/upstream.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-330}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
ls bench/kernels/upstream/*/*/ >/dev/null 2>&1 || { echo "no upstream copies"; exit 1; }
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j16 --target tritium-kernels > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg
for k in jsd fused_moe cross_entropy grouped_gemm layer_norm rope swiglu; do
  left=$(( END - 5 - $(el) )); [ $left -lt 25 ] && { echo "$k NOT-RUN"; continue; }
  timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels $k --cold --timeout $(( left / 4 )) > $OUT/logs/cold_$k.txt 2>&1
  echo "$k rc=$? [$(el)] $(grep -E "^$k " $OUT/logs/cold_$k.txt | tail -1)"
done
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
