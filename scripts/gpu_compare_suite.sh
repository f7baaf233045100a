#!/usr/bin/env bash
# The benchmarks against Triton and torch on the GPU machine, from carried binaries (BIN_TAR:
# .carry/cuda-build.tar.xz, packed by `PACK_BUILD=1 scripts/gpu_layouts.sh` there, or
# .carry/portable.tar.xz from scripts/portable_build.sh) and the originals' upstream copy
# (bench/kernels/upstream, carried too): tutorial 06 beside Triton's and SDPA, then the kernel
# suite beside its originals (speed, then first-run cost with --cold). Logs in $OUT.
#   scripts/gpu_compare_suite.sh [warm] [attention] [kernels] [cold]    (default: all four)
#   warm: each suite kernel's benchmark once, JOBS (12) processes at a time, to fill the disk cache
#   with its compiled specialisations (its autotuning results, timed on a shared GPU, are deleted
#   after: the timed rounds tune again, from cached binaries)
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
parts="${*:-warm attention kernels cold}"
start=$(date +%s)
step() { printf '\n== %s (t=%d s)\n' "$*" $(( $(date +%s) - start )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
for part in $parts; do
  case $part in
    warm)
      step "warm the disk cache: each suite kernel's benchmark, ${JOBS:-12} at a time"
      "$dist/tritium-kernels" --list | awk '{print $1}' |
        xargs -P "${JOBS:-12}" -I{} timeout "${WARM_TIMEOUT:-200}" "$dist/tritium-kernels" --bench {} --backend cuda \
          >"$out/warm.log" 2>&1
      grep -E "^time|FAILED" "$out/warm.log" | sort -k4 -n -r | head -40
      find "$TRITIUM_CACHE_DIR" -name '*.tune' -delete ;;
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
