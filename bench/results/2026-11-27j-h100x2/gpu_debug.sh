#!/usr/bin/env bash
# session 45, call 4: the two host crashes of call 3 (null access in the first case of test_attention and of
# test_nn_gpt on CUDA; both pass on the CPU): the compile log before the crash and a backtrace.
export CUDA_CACHE_DISABLE=1
T0=$(date +%s)
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j32 --target tritium-tests > /tmp/bt.log 2>&1 || { grep error /tmp/bt.log | head; exit 1; }
echo "built $(( $(date +%s) - T0 ))"
export LD_LIBRARY_PATH=/tmp/bg
for t in test_nn_gpt/names_shapes_and_tied_head test_attention/matches_float64_at_any_length; do
  echo "== $t"
  TRITIUM_LOG=compile TRITIUM_CACHE_DIR=/tmp/cd timeout -k 3 40 /tmp/bg/tests/tritium-tests --run_test=$t --catch_system_errors=no 2>&1 | grep -vE "skipped because|Entering|Leaving" | tail -6 | cut -c1-300
  if command -v gdb >/dev/null; then
    TRITIUM_CACHE_DIR=/tmp/cd timeout -k 3 60 gdb -q -batch -ex run -ex bt --args /tmp/bg/tests/tritium-tests --run_test=$t --catch_system_errors=no 2>&1 | grep -E "^#|SIGSEGV" | head -14 | cut -c1-300
  else echo "no gdb"; fi
done
echo "end $(( $(date +%s) - T0 ))"
