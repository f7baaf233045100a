// The K-loop matmul of the tf32 suites: out[M, N] (f32) = op(A) @ op(B) in fp32 on tf32 tensor
// cores, with each operand as a Linear layer's three products have them: A = x [M, K] as stored
// (K-major) or trans(x) of x [K, M] (M-major: a weight gradient's X^T); B = trans(y) of y [N, K]
// (K-major: the forward's weight) or y [K, N] as stored (N-major: the input gradient's W, the
// weight gradient's dY). Rows and columns wrap (`% M`, `% N`, tutorial 03's form), K is masked:
// the TMA analysis can take K-major tiles (test_layout_tf32.cpp); the values are test_tf32_values.cpp.
#pragma once
#include <tritium/tritium.h>

namespace tritium::test {

inline tritium::Kernel& tf32_linear() {
  namespace tl = tritium::tl;
  static tritium::Kernel k = tritium::kernel(
      "tf32_linear", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 M, tl::i32 N, tl::i32 K, int BM,
                        int BN, int BK, bool A_MN, bool B_MN) {
        auto pid_m = tl::program_id(0), pid_n = tl::program_id(1);
        auto rm = (pid_m * BM + tl::arange(0, BM)) % M, rn = (pid_n * BN + tl::arange(0, BN)) % N;
        auto rk = tl::arange(0, BK);
        auto x_ptrs = A_MN ? x + rk(tl::_, tl::None) * M + rm(tl::None, tl::_) : x + rm(tl::_, tl::None) * K + rk(tl::None, tl::_);
        auto y_ptrs = B_MN ? y + rk(tl::_, tl::None) * N + rn(tl::None, tl::_) : y + rn(tl::_, tl::None) * K + rk(tl::None, tl::_);
        auto acc = tl::zeros({BM, BN}, tl::float32);
        for (auto k : tl::range(0, tl::cdiv(K, BK))) {
          auto left = K - k * BK;
          tl::tensor a = A_MN ? tl::trans(tl::load(x_ptrs, rk(tl::_, tl::None) < left, 0.0))
                              : tl::load(x_ptrs, rk(tl::None, tl::_) < left, 0.0);
          tl::tensor b = B_MN ? tl::load(y_ptrs, rk(tl::_, tl::None) < left, 0.0)
                              : tl::trans(tl::load(y_ptrs, rk(tl::None, tl::_) < left, 0.0));
          acc += tl::dot(a, b);
          if (A_MN) x_ptrs += BK * M;
          else x_ptrs += BK;
          if (B_MN) y_ptrs += BK * N;
          else y_ptrs += BK;
        }
        auto cm = pid_m * BM + tl::arange(0, BM), cn = pid_n * BN + tl::arange(0, BN);
        tl::store(out + cm(tl::_, tl::None) * N + cn(tl::None, tl::_), acc,
                  (cm(tl::_, tl::None) < M) & (cn(tl::None, tl::_) < N));
      });
  return k;
}

}  // namespace tritium::test
