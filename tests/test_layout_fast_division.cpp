// Division by a divisor a loop does not change (the layout generator's tt_fastdiv: magic numbers made
// once before the loop, a multiply-high and two shifts a division - a fused loop nest divides its
// counter by the inner trip count every trip). Values on every backend against the host, at the
// edges of the semantics (docs/language.md: C's truncation; division by zero gives the dividend and
// remainder 0; INT_MIN / -1 wraps): dividends and divisors of both signs, 0, +-1, INT_MIN, INT_MAX,
// powers of two and odd primes, in i32 and u32, as blocks (a splat divisor) and as scalars. The
// kernel holds a dot so that CUDA lowers it through the layout generator, where the fast division
// lives; the code for sm_90a shows the magic numbers made before the loop.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_codegen_check.h"
#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::f16_t;

namespace {

constexpr int kBlock = 64;

// Row i of x: q[i] = x[i] / d, r[i] = x[i] % d (blocks); s[i] = (i * 977 - 300) / d (a scalar).
template <class T, tritium::DType D>
tritium::Kernel make_kernel(const char* name) {
  return tritium::kernel(
      name,
      [](tl::ptr<T> x, tl::ptr<T> q, tl::ptr<T> r, tl::ptr<T> s, tl::ptr<f16_t> dummy, tl::ptr<float> dummy_out,
         tl::i32 rows, tl::scalar<D> d) {
        auto offs = tl::arange(0, kBlock);
        for (auto i : tl::range(0, rows)) {
          auto v = tl::load(x + i * kBlock + offs);
          tl::store(q + i * kBlock + offs, v / d);
          tl::store(r + i * kBlock + offs, v % d);
          auto k = (i * 977 - 300).to(D);
          tl::store(s + i, k / d);
        }
        auto a = tl::load(dummy + tl::arange(0, 16)(tl::_, tl::None) * 16 + tl::arange(0, 16)(tl::None, tl::_));
        tl::store(dummy_out + tl::arange(0, 16)(tl::_, tl::None) * 16 + tl::arange(0, 16)(tl::None, tl::_), tl::dot(a, a));
      },
      {"x", "q", "r", "s", "dummy", "dummy_out", "rows", "d"});
}

auto div_i32 = make_kernel<int32_t, tritium::DType::i32>("fast_division_i32");
auto div_u32 = make_kernel<uint32_t, tritium::DType::u32>("fast_division_u32");

// tt_div / tt_rem's semantics, in wrapping 64-bit host arithmetic.
template <class T> T ref_div(T a, T b) {
  if (b == 0) return a;
  if (std::is_signed_v<T> && b == T(-1)) return T(0 - static_cast<uint32_t>(a));
  return T(a / b);
}
template <class T> T ref_rem(T a, T b) {
  if (b == 0 || (std::is_signed_v<T> && b == T(-1))) return 0;
  return T(a % b);
}

template <class T> void run(const tt::Backend& be, tritium::Kernel& k, T d) {
  BOOST_TEST_CONTEXT("divisor " << +d) {
    const int rows = 5;
    std::vector<T> x(rows * kBlock);
    const std::vector<int64_t> edges = {0, 1, -1, 2, -2, 7, -7, INT_MAX, INT_MIN, INT_MIN + 1, 65536, -65536, 1000003};
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = i < edges.size() ? static_cast<T>(edges[i]) : static_cast<T>(static_cast<uint32_t>(i * 2654435761u));
    tt::host_vector<T> hx(x.begin(), x.end());
    auto dx = be.upload<T>(hx);
    auto dq = be.alloc_poisoned<T>(x.size()), dr = be.alloc_poisoned<T>(x.size()), ds = be.alloc_poisoned<T>(rows);
    auto dummy = be.upload<f16_t>(tt::random_vector<f16_t>(256, 3, -1, 1));
    auto dummy_out = be.alloc_poisoned<float>(256);
    k[{1}](dx.ptr(), dq.ptr(), dr.ptr(), ds.ptr(), dummy.ptr(), dummy_out.ptr(), rows, d, be.options());
    auto q = dq.download(), r = dr.download(), s = ds.download();
    size_t bad = 0;
    for (size_t i = 0; i < x.size(); ++i)
      if (q[i] != ref_div<T>(x[i], d) || r[i] != ref_rem<T>(x[i], d)) {
        if (bad++ < 3) BOOST_ERROR(+x[i] << " / " << +d << ": " << +q[i] << " rem " << +r[i] << ", want " << +ref_div<T>(x[i], d) << " rem " << +ref_rem<T>(x[i], d));
      }
    BOOST_TEST(bad == 0u);
    for (int i = 0; i < rows; ++i) {
      const T kv = static_cast<T>(static_cast<uint32_t>(i * 977 - 300));
      BOOST_TEST(s[size_t(i)] == ref_div<T>(kv, d), "scalar row " << i);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layout_fast_division)

BOOST_AUTO_TEST_CASE(division_by_a_loop_invariant_divisor_values) {
  tt::for_each_backend([](const tt::Backend& be) {
    for (int64_t d : {1, -1, 0, 2, -2, 3, 7, -7, 64, 1000003, -1000003, INT_MAX, INT_MIN, INT_MIN + 1})
      run<int32_t>(be, div_i32, static_cast<int32_t>(d));
    for (uint32_t d : {1u, 0u, 2u, 3u, 7u, 64u, 1000003u, 0x7fffffffu, 0x80000000u, 0x80000001u, 0xfffffffeu, 0xffffffffu})
      run<uint32_t>(be, div_u32, d);
  });
}

// sm_90a: the divisor's magic numbers are made before the loop, the loop divides with them.
BOOST_AUTO_TEST_CASE(the_magic_numbers_are_made_before_the_loop) {
  if (!tt::nvrtc_or_skip()) return;
  auto* i = tt::fake_address<int32_t>(1);
  const auto ks = tt::compile_cuda(div_i32, tt::CudaCheck().warps(4), i, i, i, i, tt::fake_address<f16_t>(2),
                                   tt::fake_address<float>(3), 5, int32_t(7));
  const std::string body = tt::kernel_body(ks);
  const size_t magic = body.find("tt_fastdiv_of(");
  const size_t loop = body.find("for (int32_t iv");
  BOOST_TEST_REQUIRE(magic != std::string::npos);
  BOOST_TEST(magic < loop);
  BOOST_TEST(tt::occurrences(body, "tt_div_fast<int32_t>(") > 0u);
  BOOST_TEST(tt::occurrences(body, "tt_rem_fast<int32_t>(") > 0u);
  BOOST_TEST(tt::occurrences(body.substr(loop), "tt_div<int32_t>(") == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
