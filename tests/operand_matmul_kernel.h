// The K-loop matmul both layout-operand suites use: out = op(A) @ B with A = x [M, K] as stored
// (K-major) or trans(x) of x [K, M] (M-major), B = y [K, N] row-major (N-major): the values on
// every backend (test_layout_operand_values.cpp) and the generated wgmma code
// (test_layout_wgmma.cpp).
#pragma once
#include <tritium/tritium.h>

namespace tritium::test {

// out[M, N] (f32, row stride N) = A @ B, A = x [M, K] or trans(x) with x [K, M]; B = y [K, N].
template <class T>
tritium::Kernel& operand_matmul() {
  static tritium::Kernel k = tritium::kernel(
      "operand_matmul", [](tritium::tl::ptr<T> x, tritium::tl::ptr<T> y, tritium::tl::ptr<float> out, tritium::tl::i32 M, tritium::tl::i32 N, tritium::tl::i32 K, int BM,
                           int BN, int BK, bool A_TRANSPOSED) {
        auto pid_m = tritium::tl::program_id(0), pid_n = tritium::tl::program_id(1);
        // Wrapped rows and columns (tutorial 03's form): loads need no mask along M and N.
        auto rm = (pid_m * BM + tritium::tl::arange(0, BM)) % M, rn = (pid_n * BN + tritium::tl::arange(0, BN)) % N;
        auto rk = tritium::tl::arange(0, BK);
        auto x_ptrs = A_TRANSPOSED ? x + rk(tritium::tl::_, tritium::tl::None) * M + rm(tritium::tl::None, tritium::tl::_)
                                   : x + rm(tritium::tl::_, tritium::tl::None) * K + rk(tritium::tl::None, tritium::tl::_);
        auto y_ptrs = y + rk(tritium::tl::_, tritium::tl::None) * N + rn(tritium::tl::None, tritium::tl::_);
        auto acc = tritium::tl::zeros({BM, BN}, tritium::tl::float32);
        for (auto k : tritium::tl::range(0, tritium::tl::cdiv(K, BK))) {
          auto left = K - k * BK;
          tritium::tl::tensor a = A_TRANSPOSED ? tritium::tl::trans(tritium::tl::load(x_ptrs, rk(tritium::tl::_, tritium::tl::None) < left, 0.0))
                                      : tritium::tl::load(x_ptrs, rk(tritium::tl::None, tritium::tl::_) < left, 0.0);
          acc += tritium::tl::dot(a, tritium::tl::load(y_ptrs, rk(tritium::tl::_, tritium::tl::None) < left, 0.0));
          if (A_TRANSPOSED) x_ptrs += BK * M;
          else x_ptrs += BK;
          y_ptrs += BK * N;
        }
        auto cm = pid_m * BM + tritium::tl::arange(0, BM), cn = pid_n * BN + tritium::tl::arange(0, BN);
        tritium::tl::store(out + cm(tritium::tl::_, tritium::tl::None) * N + cn(tritium::tl::None, tritium::tl::_), acc,
                  (cm(tritium::tl::_, tritium::tl::None) < M) & (cn(tritium::tl::None, tritium::tl::_) < N));
      });
  return k;
}

}  // namespace tritium::test
