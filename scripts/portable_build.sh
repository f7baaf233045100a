#!/usr/bin/env bash
# Builds Tritium with LLVM linked statically (so the CPU backend runs on a machine without LLVM,
# such as the GPU machine) and Boost.Test header-only, then packs the library and the programs,
# stripped, into .carry/portable.tar.xz for the device tool's `carry`.
#   scripts/portable_build.sh            then, on the GPU machine: scripts/gpu_check.sh --portable
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-portable"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_STATIC_LLVM=ON \
  -DTRITIUM_BOOST_TEST_HEADER_ONLY=ON -DTRITIUM_GLOO=OFF ${CCACHE_DIR:+-DCMAKE_CXX_COMPILER_LAUNCHER=ccache} >/dev/null
cmake --build "$build" -j "${TRITIUM_BUILD_JOBS:-2}"
stage="$(mktemp -d)"
cp "$build/libtritium.so" "$build/tests/tritium-tests" "$build"/tutorials/[0-9][0-9]-* \
   "$build/bench/tritium-bench" "$build/tools/train-mnist" "$build/tools/train-gpt" "$build/tools/tritium-tune" \
   "$build/kernels/tritium-kernels" "$build/tools/tritium-run" "$build/tests/tritium-dist-worker" "$stage/"
strip --strip-unneeded "$stage"/*
mkdir -p "$root/.carry"
tar -C "$stage" -cJf "$root/.carry/portable.tar.xz" .
rm -rf "$stage"
ls -la "$root/.carry/portable.tar.xz"
