#!/usr/bin/env bash
# Builds Tritium with a sanitizer in its own folder and runs the whole CTest suite under it.
#
#   scripts/sanitize.sh address [ctest args...]   # AddressSanitizer + UndefinedBehaviorSanitizer, build-asan/
#   scripts/sanitize.sh thread  [ctest args...]   # ThreadSanitizer, build-tsan/
#   TRITIUM_BUILD_TARGETS=tritium-tests scripts/sanitize.sh thread -R 'test_(data|thread_pool)'
#                                                  # some suites only, building only what they need
#
# Any report fails the test that produced it. What the sanitizers report in code that is not ours
# is suppressed in scripts/{lsan,ubsan,tsan}.supp, each entry with the reason it is not our bug.
# Kernels JIT-compiled by LLVM are not instrumented (their loads and stores are not checked);
# the library around them, the tests and the thread pool that runs them are.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-address}"
shift || true

case "$mode" in
  address)
    build="$root/build-asan"
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    # detect_leaks: LeakSanitizer too. The CUDA and NVRTC libraries are never loaded here.
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
    export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$root/scripts/ubsan.supp"
    # The canary's cases (scripts/sanitizer_canary.cpp) and the report each must print.
    canaries=("heap-overflow:AddressSanitizer: heap-buffer-overflow" "use-after-free:AddressSanitizer: heap-use-after-free"
      "signed-overflow:runtime error: signed integer overflow" "misaligned:runtime error: load of misaligned address"
      "leak:LeakSanitizer: detected memory leaks")
    ;;
  thread)
    build="$root/build-tsan"
    flags="-fsanitize=thread -fno-omit-frame-pointer"
    # halt_on_error: the first race fails its test, with the report in the test's output.
    # die_after_fork=0: tests fork children (the disk cache's concurrent writers, a child that
    # tunes from the disk); those run single-threaded, which TSan allows once told so.
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:die_after_fork=0:suppressions=$root/scripts/tsan.supp"
    canaries=("race:ThreadSanitizer: data race")
    ;;
  *)
    echo "usage: scripts/sanitize.sh [address|thread] [ctest args...]" >&2
    exit 2
    ;;
esac

"$root/scripts/install_packages.sh"
phase_start=$(date +%s)
phase() {  # phase NAME: prints how long the phase that ends now took
  local now; now=$(date +%s)
  echo "[sanitize] $mode: $1 took $((now - phase_start)) s"
  phase_start=$now
}
trap 'echo "[sanitize] $mode: stopped (status $?) after $(( $(date +%s) - phase_start )) s in the current phase" >&2' ERR

# The canary: known bugs built with the same flags and run under the same options must fail with
# their report, else a sanitizer report would not fail a test either (wrong options, a suppression
# that swallows everything, a runtime that is not linked).
mkdir -p "$build"
# shellcheck disable=SC2086  # $flags is a list of flags
c++ -std=c++20 -O1 -g $flags -pthread "$root/scripts/sanitizer_canary.cpp" -o "$build/sanitizer-canary"
for canary in "${canaries[@]}"; do
  name="${canary%%:*}" expected="${canary#*:}"
  rc=0
  out=$("$build/sanitizer-canary" "$name" 2>&1) || rc=$?
  if [ "$rc" -eq 0 ] || ! grep -qF "$expected" <<<"$out"; then
    echo "[sanitize] $mode: the canary '$name' was not caught (status $rc, expected a failure and '$expected'):" >&2
    echo "$out" >&2
    exit 1
  fi
done
phase "canary (${#canaries[@]} known bugs, each failed with its report)"

if [ ! -f "$build/build.ninja" ]; then
  # -O1 -g: readable stacks at a speed the suite can live with.
  # ccache, when present: a second run after a small fix rebuilds in minutes, not an hour.
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags"
fi
# TRITIUM_BUILD_TARGETS (e.g. tritium-tests): build only those, for a run of some suites (-R ...).
# shellcheck disable=SC2086
cmake --build "$build" -j "${TRITIUM_BUILD_JOBS:-2}" ${TRITIUM_BUILD_TARGETS:+--target $TRITIUM_BUILD_TARGETS}
phase build
rm -rf "$build/test-cache"
cd "$build"
status=0
ctest --output-on-failure -j "${TRITIUM_TEST_JOBS:-2}" --timeout 3600 "$@" || status=$?
phase "tests (ctest exit $status)"
exit "$status"
