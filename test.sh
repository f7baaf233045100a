#!/usr/bin/env bash
# The whole test suite: set up, build, run every CTest test (unit suites and tutorials).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/setup.sh"
# Start from an empty test kernel cache so the run exercises compiling, not only loading.
rm -rf "$root/build/test-cache"
cd "$root/build"
ctest --output-on-failure -j "${TRITIUM_TEST_JOBS:-2}" --timeout 900 "$@"
