#!/usr/bin/env bash
# Value checks on the GPU machine: tutorials 06 and 03 (dots through layouts by default), every
# kernel of the kernel suite, and every test suite (as shipped, and/or with every kernel through
# layouts), as independent processes run JOBS at a time (compiling is what takes the time, and the
# machine has 16 cores). The binaries come from a build made there (CUDA backend only: no LLVM
# there) or from a carried tarball. Each job's time limit is cut to what is left of GPU_DEADLINE
# (560 s), so a call under the device tool's 10-minute limit still prints its summary.
# Logs (one a job) in $OUT/logs.tar.xz, a summary on stdout.
#   scripts/gpu_layouts.sh                 build there; PACK_BUILD=1 also packs the binaries into
#                                          $OUT/cuda-build.tar.xz (carry it as .carry/cuda-build.tar.xz)
#   scripts/gpu_layouts.sh --carried FILE  unpack FILE (a packed cuda-build.tar.xz, or
#                                          .carry/portable.tar.xz from scripts/portable_build.sh)
#   GPU_SUITES=default,layouts             which passes over the test suites (default, layouts, or none)
#   GPU_ONLY=regex                         only the jobs whose name matches
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-gpu"
out="${OUT:-$build/out}"
logs=/tmp/gpu-logs
rm -rf "$logs" && mkdir -p "$out" "$logs"
start=$(date +%s)
deadline=$(( start + ${GPU_DEADLINE:-560} ))
step() { printf '\n== %s (t=%d s)\n' "$*" $(( $(date +%s) - start )); }
export TRITIUM_CACHE_DIR=/tmp/tritium-cache
export TRITIUM_FIXTURES_DIR="$root/tests/fixtures"  # carried binaries run away from the tree they were built in

dist=/tmp/tritium-bin
if [ "${1:-}" = "--carried" ]; then
  rm -rf "$dist" && mkdir -p "$dist" && tar -C "$dist" -xJf "$2" || exit 1
else
  step "build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >"$logs/configure.log" 2>&1 \
    || { tail -30 "$logs/configure.log"; exit 1; }
  cmake --build "$build" -j "$(nproc)" >"$logs/build.log" 2>&1 || { grep -E "error|Error" "$logs/build.log" | head -40; exit 1; }
  rm -rf "$dist" && mkdir -p "$dist"
  cp "$build/libtritium.so" "$build/tests/tritium-tests" "$build"/tutorials/[0-9][0-9]-* "$build/bench/tritium-bench" \
     "$build/tools/train-mnist" "$build/tools/tritium-tune" "$build/kernels/tritium-kernels" "$dist/"
  strip --strip-unneeded "$dist"/*
  if [ -n "${PACK_BUILD:-}" ]; then
    tar -C "$dist" -cJf "$out/cuda-build.tar.xz" . && ls -la "$out/cuda-build.tar.xz"
  fi
fi
export LD_LIBRARY_PATH="$dist${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

GPU_SUITES="${GPU_SUITES:-default}"
# The jobs: "name<TAB>command", each run as `timeout LIMIT command > logs/name.log`.
jobs="$logs/jobs.tsv"
{
  printf 'tutorial-06\t%s --backend cuda\n' "$dist/06-fused-attention"
  printf 'tutorial-03\t%s --backend cuda\n' "$dist/03-matrix-multiplication"
  for k in $("$dist/tritium-kernels" --list | awk '{print $1}'); do
    printf 'kernel-%s\t%s --check %s --backend cuda\n' "$k" "$dist/tritium-kernels" "$k"
  done
  suites=$("$dist/tritium-tests" --list_content 2>&1 | grep -v '^ ' | tr -d '*')
  for pass in ${GPU_SUITES//,/ }; do
    [ "$pass" = none ] && continue
    codegen=""; [ "$pass" = layouts ] && codegen=layouts
    for s in $suites; do
      printf '%s-%s\tenv TRITIUM_CUDA_CODEGEN=%s TRITIUM_CACHE_DIR=/tmp/tritium-cache-%s %s --run_test=%s --report_level=short\n' \
        "$pass" "$s" "$codegen" "$pass" "$dist/tritium-tests" "$s"
    done
  done
} | grep -E "^${GPU_ONLY:-.}" >"$jobs"
export deadline logs
run_job() {
  local name="$1"; shift
  local left=$(( deadline - $(date +%s) ))
  if [ "$left" -lt 5 ]; then echo "NOT RUN" >"$logs/$name.log"; echo "$name 125 0"; return; fi
  local t0; t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout "$left" stdbuf -oL -eL $* >"$logs/$name.log" 2>&1
  echo "$name $? $(( $(date +%s) - t0 ))"
}
export -f run_job
step "$(wc -l <"$jobs") jobs, ${JOBS:-8} at a time"
tr '\t' '\n' <"$jobs" | xargs -d '\n' -n 2 -P "${JOBS:-8}" bash -c 'run_job "$0" $1' >"$logs/status.txt"

step "results"
sort "$logs/status.txt" | awk '{ r = $2 == 0 ? "pass" : ($2 == 124 || $2 == 137) ? "TIMED OUT" : $2 == 125 ? "not run" : "FAIL (" $2 ")";
  printf "%-44s %-10s %4d s\n", $1, r, $3 }'
for f in $(awk '$2 != 0 && $2 != 125 {print $1}' "$logs/status.txt" | sort); do
  printf '\n--- %s\n' "$f"
  grep -E "error|FAIL|failure|rror:" "$logs/$f.log" | head -12 | cut -c1-400
  tail -3 "$logs/$f.log" | cut -c1-400
done
tar -C "$logs" -cJf "$out/logs.tar.xz" .
printf '\n%d passed, %d failed or timed out, %d not run\n' "$(awk '$2 == 0' "$logs/status.txt" | wc -l)" \
  "$(awk '$2 != 0 && $2 != 125' "$logs/status.txt" | wc -l)" "$(awk '$2 == 125' "$logs/status.txt" | wc -l)"
