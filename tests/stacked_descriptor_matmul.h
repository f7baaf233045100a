// C[t] (f32, M x N) = A[t] @ B[t] for nb matrices stacked along the rows, through tensor
// descriptors whose shapes and row stride the kernel computes from its parameters, as tutorial
// 06's Z * H * N_CTX rows: A is one [nb * M, K] tensor of row stride K + pad, B one [nb * K, N].
// On Hopper both tiles are copied by TMA (the launcher evaluates the expressions); a tile reaching
// past K, past N or past the last matrix reads zeros, a B tile reaching into the next matrix's rows
// meets A's zero columns. test_block_ptr checks its values on every backend, test_layout_tma its
// tensor maps and copies.
#pragma once
#include <tritium/tritium.h>

namespace tritium::test {

inline tritium::Kernel& stacked_descriptor_matmul() {
  namespace tl = tritium::tl;
  static tritium::Kernel k = tritium::kernel(
      "stacked_descriptor_matmul",
      [](tl::ptr<f16_t> a, tl::ptr<f16_t> b, tl::ptr<float> c, tl::i32 nb, tl::i32 M, tl::i32 N, tl::i32 K,
         tl::i32 pad, int BM, int BN, int BK) {
        auto pm = tl::program_id(0), pn = tl::program_id(1), t = tl::program_id(2);
        auto a_d = tl::make_tensor_descriptor(a, {nb * M, K}, {K + pad, 1}, {BM, BK});
        auto b_d = tl::make_tensor_descriptor(b, {nb * K, N}, {N, 1}, {BK, BN});
        auto acc = tl::zeros({BM, BN}, tl::float32);
        for (auto kk : tl::range(0, K, BK))
          acc = tl::dot(a_d.load({t * M + pm * BM, kk}), b_d.load({t * K + kk, pn * BN}), acc);
        auto rows = pm * BM + tl::arange(0, BM), cols = pn * BN + tl::arange(0, BN);
        auto mask = (rows(tl::_, tl::None) < M) && (cols(tl::None, tl::_) < N);
        tl::store(c + t * M * N + rows(tl::_, tl::None) * N + cols(tl::None, tl::_), acc, mask);
      });
  return k;
}

}  // namespace tritium::test
