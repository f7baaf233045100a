// Loops whose trips load and store rows of one buffer (RoPE's loop over a group's heads). Used by
// test_control_flow (values on every backend) and test_cuda_codegen_loops (the barriers between
// trips the CUDA generator emits).
//   rotate_rows: program p rotates rows [p * R, p * R + R) in place, trip k row k's two halves
//     (x0, x1) -> (x0 c - x1 s, x1 c + x0 s); BLOCK >= D / 2, masked: trips touch disjoint rows.
//   shift_rows: trip k stores row k + 1 reversed into row k; trip k + 1 overwrites the row that
//     trip k read, in other threads' columns: the trips need a barrier between them.
#pragma once

#include <tritium/tritium.h>

namespace tritium::test {

inline tritium::Kernel& rotate_rows_kernel() {
  namespace tl = tritium::tl;
  static tritium::Kernel k = tritium::kernel(
      "rotate_rows", [](tl::ptr<float> x, tl::ptr<float> cs, tl::i32 R, tl::i32 rows, int D, int BLOCK) {
        auto c = tl::arange(0, BLOCK);
        auto mask = c < D / 2;
        auto cosv = tl::load(cs + c, mask, 0);
        auto sinv = tl::load(cs + D / 2 + c, mask, 0);
        auto start = tl::program_id(0) * R;
        for (auto k : tl::range(start, tl::minimum(start + R, rows))) {
          auto o1 = k * D + c;
          auto o2 = k * D + c + D / 2;
          auto x0 = tl::load(x + o1, mask, 0);
          auto x1 = tl::load(x + o2, mask, 0);
          tl::store(x + o1, x0 * cosv - x1 * sinv, mask);
          tl::store(x + o2, x1 * cosv + x0 * sinv, mask);
        }
      });
  return k;
}

inline tritium::Kernel& shift_rows_kernel() {
  namespace tl = tritium::tl;
  static tritium::Kernel k = tritium::kernel("shift_rows", [](tl::ptr<float> x, tl::i32 rows, int D) {
    auto c = tl::arange(0, D);
    for (auto k : tl::range(0, rows - 1)) tl::store(x + k * D + c, tl::load(x + (k + 1) * D + (D - 1 - c)));
  });
  return k;
}

}  // namespace tritium::test
