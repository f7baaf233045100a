#!/usr/bin/env bash
# session 50, call 4 (one H100): what call 3 left out. implicit_gemm_conv beside FlagGems' original alone on
# the GPU (call 3 reached it at 406 s and cut it at 492 s inside the original's check and autotuning); then the
# kernel suite's value checks on CUDA (`tritium-kernels --check all`), which gpu_run2.sh's header promised.
# Carries bench/kernels/upstream (git-ignored) as call 3 did.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-560}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
ls bench/kernels/upstream/*/*/ >/dev/null 2>&1 || { echo "no upstream copies"; exit 1; }
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j18 --target tritium-kernels > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg
TRITIUM_CACHE_DIR=/tmp/kc TRITIUM_AUTOTUNE=tune timeout $(( END - 150 - $(el) )) python3 bench/compare_kernels.py \
  --bin /tmp/bg/kernels --kernels implicit_gemm_conv --rounds 1 > $OUT/logs/k_implicit_gemm_conv.txt 2>&1
echo "implicit_gemm_conv rc=$? [$(el)]"; tail -25 $OUT/logs/k_implicit_gemm_conv.txt
left=$(( END - 5 - $(el) ))
TRITIUM_CACHE_DIR=/tmp/kchk timeout $left /tmp/bg/kernels/tritium-kernels --check all --backend cuda > $OUT/logs/kernel_checks.txt 2>&1
echo "kernel checks rc=$? [$(el)]"; tail -5 $OUT/logs/kernel_checks.txt; echo "lines with fail: $(grep -ci fail $OUT/logs/kernel_checks.txt)"
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
