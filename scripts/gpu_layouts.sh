#!/usr/bin/env bash
# The layout generator on the GPU machine (jit/cuda/lowering): build (CUDA backend only: no LLVM
# there), then value checks of the dot kernels (their suites and tutorials 03 and 06, where dots go
# through layouts by default), then every suite with every kernel through layouts
# (TRITIUM_CUDA_CODEGEN=layouts). Logs in $OUT (the device tool's folder) or build-gpu/out.
#   scripts/gpu_layouts.sh [--bench]   --bench adds tutorial 06's benchmark beside Triton and torch
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-gpu"
out="${OUT:-$build/out}"
mkdir -p "$out"
step() { printf '\n== %s\n' "$*"; }
export TRITIUM_CACHE_DIR=/tmp/tritium-cache

step "build"
t0=$(date +%s)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >"$out/configure.log" 2>&1 \
  || { tail -30 "$out/configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"

suites="test_layouts,test_dot,test_matmul,test_block_ptr,test_fp8,test_attention,test_cuda_codegen"
step "dot suites (default: dot kernels through layouts)"
(cd "$build" && timeout 300 ./tests/tritium-tests --run_test="$suites" --report_level=short) >"$out/dots.log" 2>&1
dots_rc=$?
grep -E "error|failure|passed|failed" "$out/dots.log" | grep -v "^$" | head -40

step "tutorial 06 (cuda)"
timeout 300 "$build/tutorials/06-fused-attention" --backend cuda >"$out/t06.log" 2>&1; t06_rc=$?
tail -15 "$out/t06.log"
step "tutorial 03 (cuda)"
timeout 300 "$build/tutorials/03-matrix-multiplication" --backend cuda >"$out/t03.log" 2>&1; t03_rc=$?
tail -16 "$out/t03.log"

step "the kernel suite (cuda)"
timeout 300 "$build/kernels/tritium-kernels" --check all --backend cuda >"$out/kernels.log" 2>&1; kern_rc=$?
grep -E "OK|FAILED|error" "$out/kernels.log" | head -60

step "every suite, every kernel through layouts"
(cd "$build" && TRITIUM_CUDA_CODEGEN=layouts TRITIUM_CACHE_DIR=/tmp/tritium-cache-layouts timeout 420 ./tests/tritium-tests \
  --report_level=short) >"$out/all_layouts.log" 2>&1
all_rc=$?
grep -E "error|failure" "$out/all_layouts.log" | sort | uniq -c | sort -rn | head -40
tail -4 "$out/all_layouts.log"

printf '\n%-40s %s\n' "check" "result"
printf '%-40s %s\n' "dot suites" "$([ $dots_rc = 0 ] && echo pass || echo FAIL)"
printf '%-40s %s\n' "tutorial 06 cuda" "$([ $t06_rc = 0 ] && echo pass || echo FAIL)"
printf '%-40s %s\n' "tutorial 03 cuda" "$([ $t03_rc = 0 ] && echo pass || echo FAIL)"
printf '%-40s %s\n' "kernel suite cuda" "$([ $kern_rc = 0 ] && echo pass || echo FAIL)"
printf '%-40s %s\n' "all suites through layouts" "$([ $all_rc = 0 ] && echo pass || echo "FAIL ($all_rc)")"
