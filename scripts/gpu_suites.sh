#!/usr/bin/env bash
# On the GPU machine: a CUDA-only tritium-tests built there (no LLVM there), then the named test
# suites, 12 at a time, each cut to what is left of GPU_DEADLINE (500 s), logs in $OUT/logs.
# Quicker than scripts/gpu_layouts.sh when only some suites changed.
#   SUITES="test_nn_conv test_nn_pool" [OPS=conv2d,max_pool2d] scripts/gpu_suites.sh
# OPS limits test_torch_parity's fixtures and test_op_registry's gradcheck to those ops
# (TRITIUM_PARITY_OPS, TRITIUM_GRADCHECK_OPS). TARGETS names more targets to build into /tmp/bg
# (e.g. TARGETS="train-mnist tritium-bench" for the training and op-comparison runs after it).
set -uo pipefail
: "${SUITES:?name the suites: SUITES=\"test_a test_b\"}"
start=$(date +%s)
deadline=${GPU_DEADLINE:-500}
out=${OUT:-/tmp/gpu-suites}
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1 || { tail -20 /tmp/cfg.log; exit 1; }
cmake --build /tmp/bg -j"$(nproc)" --target tritium-tests ${TARGETS:-} >/tmp/b.log 2>&1 || { grep -E "error" /tmp/b.log | head -30; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
export TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures LD_LIBRARY_PATH=/tmp/bg
[ -n "${OPS:-}" ] && export TRITIUM_PARITY_OPS=$OPS TRITIUM_GRADCHECK_OPS=$OPS
mkdir -p "$out/logs"
run() {
  local left=$(( deadline - ($(date +%s) - start) ))
  [ "$left" -lt 5 ] && { echo "$1 NOT-RUN"; return; }
  local t0; t0=$(date +%s)
  TRITIUM_CACHE_DIR=/tmp/cache-$1 timeout "$left" /tmp/bg/tests/tritium-tests --run_test="$1" --report_level=short \
    >"$out/logs/$1.log" 2>&1
  echo "$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f run; export start deadline out
printf '%s\n' $SUITES | xargs -P 12 -I{} bash -c 'run {}' | sort
for f in "$out"/logs/*.log; do
  grep -q "failed\|error" "$f" && { echo "== $(basename "$f")"; grep -E "error|failed" "$f" | head -6 | cut -c1-300; }
done
