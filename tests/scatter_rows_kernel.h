// A gradient scatter (an embedding backward's shape): program p adds row p of `src` ([P, N]) into
// row idx[p] of `table` ([R, N]) with one block atomic_add; rows collide. SPARSE also masks off
// every third column, a mask that is not constant over a vector of lanes. Used by test_atomics
// (values) and test_cuda_codegen_atomics (the vector reductions the CUDA generator emits).
#pragma once

#include <tritium/tritium.h>

#include <cstdint>

namespace tritium::test {

template <class T> tritium::Kernel& scatter_rows_kernel() {
  namespace tl = tritium::tl;
  static tritium::Kernel k = tritium::kernel(
      "scatter_rows_add", [](tl::ptr<T> table, tl::ptr<T> src, tl::ptr<int64_t> idx, int N, int BLOCK, bool SPARSE) {
        auto pid = tl::program_id(0).to(tl::int64);
        auto cols = tl::arange(0, BLOCK);
        auto mask = cols < N;
        if (SPARSE) mask = mask && (cols % 3 != 0);
        auto row = tl::load(idx + pid);
        tl::atomic_add(table + row * N + cols, tl::load(src + pid * N + cols, mask, 0), mask);
      });
  return k;
}

}  // namespace tritium::test
