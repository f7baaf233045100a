// Dot operands in the majorness their memory has (issue 27 (a), (b)): out = op(A) @ B over a K
// loop, with A read as stored ([M, K], K-major) or through tl::trans of a [K, M] row-major matrix
// (M-major: a weight gradient X^T dY, attention backward's dK / dV), and B [K, N] row-major
// (N-major) down to N = 16 a block. On Hopper through layouts these reach wgmma from tiles copied
// 16 bytes at a time, with the transpose bits set (tests/test_layout_wgmma.cpp checks the code);
// here the values, on every backend, against float64. Sizes are not multiples of the blocks.
#include "operand_matmul_kernel.h"
#include "test_support.h"

#include <cmath>
#include <string>
#include <vector>

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::test::operand_matmul;
using tritium::bf16_t;
using tritium::f16_t;

namespace {


struct Case {
  int M, N, K, bm, bn, bk, warps;
  bool a_transposed;
};

template <class T> void run_case(const tt::Backend& be, const Case& c, uint32_t seed) {
  auto a = tt::random_vector<T>(size_t(c.M) * c.K, seed, -1, 1);  // logical A [M, K]
  auto b = tt::random_vector<T>(size_t(c.K) * c.N, seed + 1, -1, 1);
  tt::host_vector<T> x = a;  // as stored: A, or A^T row-major ([K, M])
  if (c.a_transposed)
    for (int i = 0; i < c.M; ++i)
      for (int kk = 0; kk < c.K; ++kk) x[size_t(kk) * c.M + i] = a[size_t(i) * c.K + kk];
  std::vector<double> ref(size_t(c.M) * c.N), mag(ref.size());
  for (int i = 0; i < c.M; ++i)
    for (int kk = 0; kk < c.K; ++kk) {
      const double av = tt::to_double(a[size_t(i) * c.K + kk]);
      for (int j = 0; j < c.N; ++j) {
        const double p = av * tt::to_double(b[size_t(kk) * c.N + j]);
        ref[size_t(i) * c.N + j] += p;
        mag[size_t(i) * c.N + j] += std::abs(p);
      }
    }
  const std::string what = std::string(tritium::dtype_name(tritium::dtype_of<T>())) + " " + std::to_string(c.M) + "x" +
                           std::to_string(c.N) + "x" + std::to_string(c.K) + " blocks " + std::to_string(c.bm) + "x" +
                           std::to_string(c.bn) + "x" + std::to_string(c.bk) + " warps " + std::to_string(c.warps) +
                           (c.a_transposed ? " trans(A)" : "");
  BOOST_TEST_CONTEXT(what) {
    auto dx = be.template upload<T>(x), dy = be.template upload<T>(b);
    auto dout = be.template alloc_poisoned<float>(ref.size());
    auto opts = be.options();
    opts.num_warps = c.warps;
    opts.num_stages = 3;
    operand_matmul<T>()[{tritium::cdiv(c.M, c.bm), tritium::cdiv(c.N, c.bn)}](
        dx.ptr(), dy.ptr(), dout.ptr(), c.M, c.N, c.K, c.bm, c.bn, c.bk, c.a_transposed, opts);
    // tf32 on GPUs (DESIGN.md: 1e-3); 16-bit inputs, f32 sums.
    const double tol = std::is_same_v<T, float> ? (be.name == "cpu" ? 1e-5 : 1e-3) : 1e-3;
    tt::check_dot<float>(dout.download(), ref, mag, tol, what);
  }
}

// Block shapes that take each tile form on Hopper (4 warps: one warpgroup; 8: two along M, or
// along N when M is one 64-row unit): an M-major A (128-byte swizzle), N-major B of 32, 64 and
// 128 bytes a unit; sizes a multiple of 16 (16-byte copies) and ragged (element copies).
std::vector<Case> half_cases() {
  return {
      {176, 80, 200, 128, 32, 64, 4, true},   // B: 64-byte rows (64-byte swizzle)
      {150, 70, 130, 128, 32, 64, 4, true},   // ragged everywhere
      {144, 48, 96, 128, 16, 32, 4, true},    // B: 32-byte rows (32-byte swizzle)
      {208, 144, 80, 128, 128, 32, 8, true},  // two warpgroups along M, B in 128-byte blocks
      {96, 112, 136, 64, 64, 64, 8, true},    // two along N: 32 columns (64 bytes) a warpgroup of a 128-byte row
      {96, 112, 136, 64, 64, 64, 8, false},   // the same with A as stored (K-major)
      {176, 48, 72, 128, 16, 32, 4, false},   // A as stored, a 16-wide B
  };
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layout_operand_values)

BOOST_AUTO_TEST_CASE(transposed_a_and_narrow_b_f16) {
  tt::for_each_backend([](const tt::Backend& be) {
    uint32_t seed = 100;
    for (const Case& c : half_cases()) run_case<f16_t>(be, c, seed += 2);
  });
}

BOOST_AUTO_TEST_CASE(transposed_a_and_narrow_b_bf16) {
  tt::for_each_backend([](const tt::Backend& be) {
    uint32_t seed = 200;
    for (const Case& c : half_cases()) run_case<bf16_t>(be, c, seed += 2);
  });
}

// tf32 tiles are K-major for wgmma (no transpose bit for 32-bit types): trans(A) goes through
// registers into a K-major tile; the values must not change.
BOOST_AUTO_TEST_CASE(transposed_a_and_narrow_b_tf32) {
  tt::for_each_backend([](const tt::Backend& be) {
    run_case<float>(be, {144, 48, 72, 64, 32, 32, 4, true}, 300);
    run_case<float>(be, {80, 40, 40, 64, 16, 16, 4, false}, 302);
  });
}

BOOST_AUTO_TEST_SUITE_END()
