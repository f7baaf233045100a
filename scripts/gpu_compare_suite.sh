#!/usr/bin/env bash
# The benchmarks against Triton and torch on the GPU machine, from carried binaries (BIN_TAR:
# .carry/cuda-build.tar.xz, packed by `PACK_BUILD=1 scripts/gpu_layouts.sh` there, or
# .carry/portable.tar.xz from scripts/portable_build.sh) and the originals' upstream copy
# (bench/kernels/upstream, carried too): tutorial 06 beside Triton's and SDPA, then the kernel
# suite beside its originals (speed, then first-run cost with --cold). Logs in $OUT.
#   scripts/gpu_compare_suite.sh [attention] [kernels] [cold]    (default: all three)
#   ATTN_ARGS / KERNEL_ARGS / COLD_ARGS add arguments to each script.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-/tmp/gpu-compare}"
mkdir -p "$out"
dist=/tmp/tritium-bin
tarball="${BIN_TAR:-$root/.carry/cuda-build.tar.xz}"
[ -f "$tarball" ] || tarball="$root/.carry/portable.tar.xz"
if [ ! -x "$dist/tritium-kernels" ]; then
  rm -rf "$dist" && mkdir -p "$dist" && tar -C "$dist" -xJf "$tarball" || exit 1
fi
export LD_LIBRARY_PATH="$dist${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" TRITIUM_CACHE_DIR=/tmp/tritium-cache
parts="${*:-attention kernels cold}"
start=$(date +%s)
step() { printf '\n== %s (t=%d s)\n' "$*" $(( $(date +%s) - start )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
for part in $parts; do
  case $part in
    attention)
      step "tutorial 06 beside Triton and torch SDPA"
      # shellcheck disable=SC2086
      python3 "$root/bench/compare_attention.py" --bin "$dist" ${ATTN_ARGS:-} >"$out/attention.log" 2>&1
      tail -40 "$out/attention.log" ;;
    kernels)
      step "the kernel suite beside the originals"
      # shellcheck disable=SC2086
      python3 "$root/bench/compare_kernels.py" --bin "$dist" ${KERNEL_ARGS:-} >"$out/kernels.log" 2>&1
      tail -80 "$out/kernels.log" ;;
    cold)
      step "the kernel suite's first-run cost beside the originals'"
      # shellcheck disable=SC2086
      python3 "$root/bench/compare_kernels.py" --bin "$dist" --cold ${COLD_ARGS:-} >"$out/cold.log" 2>&1
      tail -60 "$out/cold.log" ;;
    *) echo "unknown part $part"; exit 2 ;;
  esac
done
step "done"
