#!/usr/bin/env bash
# session 53, call 4 (one GPU, the session's last 335 s of device time): roll's new algorithm (two
# strided copies instead of cat) on CUDA - test_tensor_shape (its roll cases) and roll's PyTorch
# fixtures. Nothing else fits.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j16 --target tritium-tests > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures
/tmp/bg/tests/tritium-tests --run_test=test_tensor_shape/repeat_flip_roll 2>&1 | tail -3
TRITIUM_PARITY_OPS=roll /tmp/bg/tests/tritium-tests --run_test=test_torch_parity 2>&1 | tail -3
echo "end $(el)"
