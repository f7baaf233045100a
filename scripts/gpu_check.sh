#!/usr/bin/env bash
# One run on the GPU machine: configure and build (the CPU backend only where LLVM 19 is
# installed: the GPU machine has none), run the test suite, the tutorials' CUDA benchmarks and
# the Triton/PyTorch comparison, and print a short summary table last.
#   scripts/gpu_check.sh [ctest -R regex]
#   scripts/gpu_check.sh --portable   the build made here by scripts/portable_build.sh (carried as
#                                     .carry/portable.tar.xz, with LLVM inside: both backends), and
#                                     the data set carried in .carry/fashion-mnist
# Logs go to $OUT (the device tool's output folder) or build-gpu/out.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-gpu"
out="${OUT:-$build/out}"
mkdir -p "$out"
filter="${1:-.}"

if [ "$filter" = "--portable" ]; then
  dist=/tmp/tritium-portable
  rm -rf "$dist" && mkdir -p "$dist" && tar -C "$dist" -xJf "$root/.carry/portable.tar.xz" || exit 1
  export LD_LIBRARY_PATH="$dist${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" TRITIUM_CACHE_DIR=/tmp/tritium-cache
  export TRITIUM_FIXTURES_DIR="$root/tests/fixtures"  # the binary runs away from its source tree
  tests_rc=0
  if [ -z "${GPU_CHECK_SKIP_TESTS:-}" ]; then  # set it to run only the benchmarks (the 10-minute limit)
    printf '\n== all suites, both backends\n'
    (cd "$dist" && ./tritium-tests --log_level=test_suite --report_level=short) >"$out/tests.log" 2>&1
    tests_rc=$?
    grep -E "Leaving test suite|error|failure|skipped" "$out/tests.log" | grep -vE "^\s*$" | tail -40
    tail -5 "$out/tests.log"
    printf '\n== elementwise suites through the CUDA C++ generator only (TRITIUM_FAST_COMPILE=0)\n'
    (cd "$dist" && TRITIUM_FAST_COMPILE=0 ./tritium-tests --run_test=test_elementwise,test_ops_elementwise \
      --report_level=short) >"$out/tests_nvrtc.log" 2>&1 || tests_rc=1
    tail -3 "$out/tests_nvrtc.log"
  fi
  [ -n "${GPU_CHECK_TESTS_ONLY:-}" ] && exit $tests_rc
  printf '\n== tutorial 01 on cuda\n'
  "$dist/01-vector-add" --bench --backend cuda >"$out/vector_add.log" 2>&1; vec_rc=$?
  tail -6 "$out/vector_add.log"
  printf '\n== tritium-bench --device cuda\n'
  "$dist/tritium-bench" --device cuda >"$out/bench_cuda.log" 2>&1; tail -14 "$out/bench_cuda.log"
  printf '\n== comparison with Triton and PyTorch\n'
  python3 "$root/bench/compare_gpu.py" --bench-exe "$dist/tritium-bench" >"$out/compare.log" 2>&1; cmp_rc=$?
  tail -8 "$out/compare.log"
  printf '\n== tutorials 02, 04, 05 on cuda (checks, then --bench) beside Triton and PyTorch\n'
  python3 "$root/bench/compare_reductions.py" --bin "$dist" >"$out/compare_reductions.log" 2>&1; red_rc=$?
  tail -16 "$out/compare_reductions.log"
  printf '\n== tritium-tune matmul on cuda: cold, then again in a new process\n'
  rm -rf /tmp/tritium-tune-cache
  TRITIUM_CACHE_DIR=/tmp/tritium-tune-cache "$dist/tritium-tune" --kernel matmul --device cuda --out "$out" \
    >"$out/tune_cold.log" 2>&1; tune_rc=$?
  tail -16 "$out/tune_cold.log"
  TRITIUM_CACHE_DIR=/tmp/tritium-tune-cache "$dist/tritium-tune" --kernel matmul --device cuda --out "$out/warm" \
    >"$out/tune_warm.log" 2>&1 || tune_rc=1
  tail -2 "$out/tune_warm.log"
  printf '\n== train-mnist --backend cuda (5 epochs)\n'
  "$dist/train-mnist" --backend cuda --data "$root/.carry/fashion-mnist" >"$out/train_cuda.log" 2>&1; train_rc=$?
  tail -3 "$out/train_cuda.log"
  printf '\n%-28s %s\n' "check" "result"
  printf '%-28s %s\n' "all suites, both backends" "$([ $tests_rc = 0 ] && echo pass || echo FAIL)"
  printf '%-28s %s\n' "tutorial 01 --backend cuda" "$([ $vec_rc = 0 ] && echo pass || echo FAIL)"
  printf '%-28s %s\n' "comparison harness" "$([ $cmp_rc = 0 ] && echo ran || echo FAIL)"
  printf '%-28s %s\n' "tutorials 02/04/05 cuda" "$([ $red_rc = 0 ] && echo pass || echo FAIL)"
  printf '%-28s %s\n' "tritium-tune matmul cuda" "$([ $tune_rc = 0 ] && echo pass || echo FAIL)"
  printf '%-28s %s\n' "train-mnist --backend cuda" "$([ $train_rc = 0 ] && echo pass || echo FAIL)"
  [ $tests_rc = 0 ] && [ $vec_rc = 0 ] && [ $tune_rc = 0 ] && [ $train_rc = 0 ] && [ $red_rc = 0 ]
  exit
fi

cpu_backend=ON
[ -d /usr/lib/llvm-19/lib/cmake/llvm ] || cpu_backend=OFF
step() { printf '\n== %s\n' "$*"; }

step "configure (CPU backend $cpu_backend)"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=$cpu_backend >"$out/configure.log" 2>&1 \
  || { tail -30 "$out/configure.log"; exit 1; }
step "build"
cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }

step "tests"
(cd "$build" && ctest -R "$filter" -j 8 --timeout 900 --output-on-failure) >"$out/ctest.log" 2>&1
tests_rc=$?
grep -E "tests passed|tests failed|\*\*\*Failed|Failed|Not Run" "$out/ctest.log" | tail -15

# Short straight-line kernels go through the PTX generator when fast compiles are on (the
# default); the elementwise suites again with them off check the CUDA C++ generator on the same
# kernels.
step "elementwise suites through the CUDA C++ generator only (TRITIUM_FAST_COMPILE=0)"
(cd "$build" && TRITIUM_FAST_COMPILE=0 ctest -R "test_elementwise|test_ops_elementwise" --timeout 900 \
  --output-on-failure) >"$out/ctest_nvrtc.log" 2>&1
nvrtc_rc=$?
grep -E "tests passed|tests failed|\*\*\*Failed" "$out/ctest_nvrtc.log" | tail -5

step "tutorial 01 on cuda"
"$build/tutorials/01-vector-add" --bench --backend cuda >"$out/vector_add.log" 2>&1
vec_rc=$?
tail -18 "$out/vector_add.log"

step "comparison with Triton and PyTorch"
python3 "$root/bench/compare_gpu.py" --build "$build" >"$out/compare.log" 2>&1
cmp_rc=$?
tail -25 "$out/compare.log"

printf '\n%-28s %s\n' "check" "result"
printf '%-28s %s\n' "tests ($filter)" "$([ $tests_rc = 0 ] && echo pass || echo FAIL) ($(grep -Eo '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$out/ctest.log" | tail -1))"
printf '%-28s %s\n' "elementwise, C++ generator" "$([ $nvrtc_rc = 0 ] && echo pass || echo FAIL)"
printf '%-28s %s\n' "tutorial 01 --backend cuda" "$([ $vec_rc = 0 ] && echo pass || echo FAIL)"
printf '%-28s %s\n' "comparison harness" "$([ $cmp_rc = 0 ] && echo ran || echo FAIL)"
[ $tests_rc = 0 ] && [ $nvrtc_rc = 0 ] && [ $vec_rc = 0 ]
