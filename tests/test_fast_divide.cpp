// tl::fast_dividef (dsl/ops.h, IR op rcp): a / b as a times an approximate reciprocal of b, as
// Triton's libdevice.fast_dividef. Values against float64 on every backend (the CPU divides
// exactly; CUDA's rcp.approx.ftz is within 1 ulp, the product within 2) for divisors across
// [2^-126, 2^126], signs, zeros, infinities and NaN, odd sizes; integers promote to f32, f64
// divides exactly; and the CUDA code of the f32 form: one rcp.approx, no div.full.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <cmath>
#include <limits>

#include "test_support.h"

#if TRITIUM_HAS_CUDA_BACKEND
#include "cuda_codegen_check.h"
#endif

namespace tl = tritium::tl;
namespace tt = tritium::test;

BOOST_AUTO_TEST_SUITE(test_fast_divide)

namespace {

constexpr int kBlock = 256;

template <class T> tritium::Kernel& divide_kernel() {
  static tritium::Kernel k = tritium::kernel("fast_div", [](tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> o, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    auto m = offs < n;
    tl::store(o + offs, tl::fast_dividef(tl::load(a + offs, m), tl::load(b + offs, m)), m);
  });
  return k;
}

}  // namespace

BOOST_AUTO_TEST_CASE(f32_within_two_ulp_of_float64) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {1.f, -1.f, 3.f, 0.f, -0.f, 5.f, -5.f, inf, nan, 2.f, 1e30f, 7.f, 1e-30f};
  std::vector<float> b = {3.f, 3.f, -7.f, 2.f, 2.f, inf, -inf, 2.f, 1.f, nan, 1e-30f, 0x1p125f, 0x1p-125f};
  // Random numerators; divisors of random mantissas and exponents in [-126, 125], random signs.
  auto ra = tt::random_vector<float>(3001, 51, -1e3f, 1e3f);
  auto rm = tt::random_vector<float>(3001, 52, 1.f, 2.f);
  auto re = tt::random_vector<float>(3001, 53, -126.f, 125.99f);
  for (size_t i = 0; i < ra.size(); ++i) {
    a.push_back(ra[i]);
    b.push_back((i % 3 == 0 ? -1.f : 1.f) * std::ldexp(rm[i], static_cast<int>(std::floor(re[i]))));
  }
  const int n = static_cast<int>(a.size());
  tt::for_each_backend([&](const tt::Backend& be) {
    auto da = be.upload<float>(a), db = be.upload<float>(b);
    auto o = be.alloc_poisoned<float>(n);
    divide_kernel<float>()[{(n + kBlock - 1) / kBlock}](da.ptr(), db.ptr(), o.ptr(), n, kBlock, be.options());
    auto out = o.download();
    int bad = 0;
    for (int i = 0; i < n; ++i) {
      double ref = static_cast<double>(a[i]) / static_cast<double>(b[i]), got = out[i];
      bool ok;
      if (std::isnan(ref)) ok = std::isnan(got);
      else if (std::isinf(ref) || ref == 0) ok = got == ref && std::signbit(got) == std::signbit(ref);
      else if (std::abs(ref) < 0x1p-126) ok = std::abs(got - ref) <= 0x1p-126;  // subnormal: may flush
      else ok = std::abs(got - ref) <= 2 * std::ldexp(1.0, std::ilogb(static_cast<float>(ref)) - 23);
      if (!ok && ++bad <= 5) BOOST_ERROR(a[i] << " / " << b[i] << " = " << got << ", float64 gives " << ref);
    }
    BOOST_TEST(bad == 0);
  });
}

BOOST_AUTO_TEST_CASE(f64_divides_exactly_and_integers_promote) {
  std::vector<double> a = {1, -7, 3.5, 1e300, 2};
  std::vector<double> b = {3, 0.1, -1e-300, 1e-10, 1e308};
  const int n = static_cast<int>(a.size());
  static tritium::Kernel ints = tritium::kernel("fast_div_i32", [](tl::ptr<int32_t> a, tl::ptr<int32_t> b,
                                                                   tl::ptr<float> o, tl::i32 n, int B) {
    auto offs = tl::arange(0, B);
    auto m = offs < n;
    auto q = tl::fast_dividef(tl::load(a + offs, m), tl::load(b + offs, m));
    tl::static_assert_(q.dtype() == tritium::DType::f32, "integers promote to f32");
    tl::store(o + offs, q, m);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    auto da = be.upload<double>(a), db = be.upload<double>(b);
    auto o = be.alloc_poisoned<double>(n);
    divide_kernel<double>()[{1}](da.ptr(), db.ptr(), o.ptr(), n, 8, be.options());
    auto out = o.download();
    for (int i = 0; i < n; ++i) BOOST_TEST(out[i] == a[i] / b[i], "f64 " << a[i] << " / " << b[i]);
    std::vector<int32_t> ia = {7, -9, 1, 0}, ib = {2, 4, -3, 5};
    auto dia = be.upload<int32_t>(ia), dib = be.upload<int32_t>(ib);
    auto fo = be.alloc_poisoned<float>(4);
    ints[{1}](dia.ptr(), dib.ptr(), fo.ptr(), 4, 8, be.options());
    auto fout = fo.download();
    for (int i = 0; i < 4; ++i) {
      double ref = static_cast<double>(ia[i]) / ib[i];
      BOOST_TEST(std::abs(fout[i] - ref) <= 2 * std::abs(ref) * 0x1p-23, "i32 " << ia[i] << " / " << ib[i]);
    }
  });
}

#if TRITIUM_HAS_CUDA_BACKEND
// The f32 form on CUDA: tt_rcp (rcp.approx.ftz) and a multiply, where a / b is div.full.
BOOST_AUTO_TEST_CASE(cuda_code_is_one_reciprocal) {
  if (!tt::nvrtc_or_skip()) return;
  auto ks = tt::compile_cuda(divide_kernel<float>(), tt::CudaCheck().routed().also_for("sm_80"),
                             tt::fake_address<float>(0), tt::fake_address<float>(1), tt::fake_address<float>(2), 1000,
                             kBlock);
  const std::string body = tt::kernel_body(ks);
  BOOST_TEST(body.find("tt_rcp(") != std::string::npos);
  BOOST_TEST(body.find("tt_fdiv(") == std::string::npos);
}
#endif

BOOST_AUTO_TEST_SUITE_END()
