#!/usr/bin/env bash
# Shared by run.sh and test.sh: install what is missing, configure build/ and build.
# Usage: scripts/setup.sh [extra cmake args...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

"$root/scripts/install_packages.sh"

build="$root/build"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
fi
# Two parallel jobs: the CI machine has 2 cores and LLVM-heavy files need ~1 GiB each.
cmake --build "$build" -j "${TRITIUM_BUILD_JOBS:-2}"
