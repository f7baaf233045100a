// fp8 (f8e4m3 = e4m3fn, f8e5m2): every code decoded, f32 values encoded (round to nearest even,
// saturating, ties and subnormals included), arithmetic (computed in f32, rounded back after each
// op), promotion, the host conversions, ops::to_dtype, and the errors. References: the test
// support's fp8_value / fp8_nearest, written from the format's definition (every code searched).
#include "test_support.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/ops.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::f16_t;
using tritium::f8e4m3_t;
using tritium::f8e5m2_t;

namespace {

template <class F> const char* fp8_name() { return tritium::dtype_name(tritium::dtype_of<F>()); }

// out32[i] = float(x[i]); back[i] = F(out32[i]) (the round trip).
template <class F> tritium::Kernel& decode_kernel() {
  static tritium::Kernel k = tritium::kernel("fp8_decode", [](tl::ptr<F> x, tl::ptr<float> out32, tl::ptr<F> back, int n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto f = tl::load(x + offs, mask).to(tl::float32);
    tl::store(out32 + offs, f, mask);
    tl::store(back + offs, f.to(tritium::dtype_of<F>()), mask);
  });
  return k;
}

// out[i] = F(x[i]) from f32, and from f16 (h[i]): both one rounding of the same value when x is an f16 value.
template <class F> tritium::Kernel& encode_kernel() {
  static tritium::Kernel k = tritium::kernel("fp8_encode", [](tl::ptr<float> x, tl::ptr<f16_t> h, tl::ptr<F> out, tl::ptr<F> out_h, int n,
                                                               int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    tl::store(out + offs, tl::load(x + offs, mask).to(tritium::dtype_of<F>()), mask);
    tl::store(out_h + offs, tl::load(h + offs, mask).to(tritium::dtype_of<F>()), mask);
  });
  return k;
}

// Every code: the f32 value is exact (NaN codes give NaN), and converting it back gives the code
// again (NaN -> 0x7f; e5m2's infinities saturate to the largest finite value, 0x7b).
template <class F> void decode_all_codes(const tt::Backend& be) {
  tt::host_vector<F> codes(256);
  for (int c = 0; c < 256; ++c) codes[c] = F{static_cast<uint8_t>(c)};
  auto dx = be.template upload<F>(codes);
  auto d32 = be.template alloc_poisoned<float>(256);
  auto dback = be.template upload<F>(tt::host_vector<F>(256, F{0x55}));
  decode_kernel<F>()[{2}](dx.ptr(), d32.ptr(), dback.ptr(), 256, 128, be.options());
  auto out = d32.download();
  auto back = dback.download();
  size_t bad = 0;
  for (int c = 0; c < 256; ++c) {
    double ref = tt::fp8_value<F>(static_cast<uint8_t>(c));
    bool ok = std::isnan(ref) ? std::isnan(out[c]) : (out[c] == ref && std::signbit(out[c]) == std::signbit(ref));
    uint8_t expect_back = std::isnan(ref) ? 0x7f : std::isinf(ref) ? static_cast<uint8_t>(c - 1) : static_cast<uint8_t>(c);
    if (!ok || back[c].bits != expect_back) {
      if (bad++ < 5)
        BOOST_ERROR(fp8_name<F>() << " code 0x" << std::hex << c << std::dec << ": decoded " << out[c] << " (reference " << ref
                                  << "), back to code 0x" << std::hex << int(back[c].bits) << " (expected 0x" << int(expect_back) << ")");
    }
  }
  BOOST_TEST(bad == 0u, fp8_name<F>() << ": " << bad << " of 256 codes wrong");
}

// f32 inputs around every binade of the format and beyond: random values, exact midpoints
// between neighbouring codes (ties), the codes themselves, signed zeros, saturation, inf, NaN.
template <class F> std::vector<float> encode_inputs(uint32_t seed) {
  std::vector<float> v = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 1e-30f, -1e-30f};
  for (int c = 0; c < 127; ++c) {
    double a = tt::fp8_value<F>(static_cast<uint8_t>(c)), b = tt::fp8_value<F>(static_cast<uint8_t>(c + 1));
    if (!std::isfinite(a) || !std::isfinite(b)) continue;
    for (double x : {a, (a + b) / 2, a + (b - a) * 0.49, a + (b - a) * 0.51}) {
      v.push_back(static_cast<float>(x));
      v.push_back(static_cast<float>(-x));
    }
  }
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> m(1.0f, 2.0f);
  for (int e = -22; e <= 18; ++e)
    for (int i = 0; i < 24; ++i) v.push_back((i & 1 ? -1.0f : 1.0f) * std::ldexp(m(rng), e));
  return v;
}

template <class F> void encode_values(const tt::Backend& be, uint32_t seed) {
  std::vector<float> x = encode_inputs<F>(seed);
  const int n = static_cast<int>(x.size());
  tt::host_vector<float> hx(x.begin(), x.end());
  tt::host_vector<f16_t> hh(n);
  for (int i = 0; i < n; ++i) hh[i] = tt::to_f16(x[i]);
  tt::host_vector<F> ref(n), ref_h(n);
  for (int i = 0; i < n; ++i) {
    ref[i] = tt::fp8_nearest<F>(x[i]);
    ref_h[i] = tt::fp8_nearest<F>(tt::to_float(hh[i]));
  }
  auto dx = be.template upload<float>(hx);
  auto dh = be.template upload<f16_t>(hh);
  auto dout = be.template upload<F>(tt::host_vector<F>(n, F{0x55})), dout_h = be.template upload<F>(tt::host_vector<F>(n, F{0x55}));
  encode_kernel<F>()[{tritium::cdiv(n, 256)}](dx.ptr(), dh.ptr(), dout.ptr(), dout_h.ptr(), n, 256, be.options());
  tt::check_equal<F>(dout.download(), ref, std::string(fp8_name<F>()) + " from f32");
  tt::check_equal<F>(dout_h.download(), ref_h, std::string(fp8_name<F>()) + " from f16");
  // The host conversion (the code generators' constants) agrees too.
  if (be.name == "cpu") {
    tt::host_vector<F> host(n);
    for (int i = 0; i < n; ++i) host[i] = F{tritium::fp8_from_float(x[i], tritium::dtype_of<F>())};
    tt::check_equal<F>(host, ref, std::string(fp8_name<F>()) + " host fp8_from_float");
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_fp8)

BOOST_AUTO_TEST_CASE(decode_every_code) {
  tt::for_each_backend([](const tt::Backend& be) {
    decode_all_codes<f8e4m3_t>(be);
    decode_all_codes<f8e5m2_t>(be);
  });
}

BOOST_AUTO_TEST_CASE(encode_round_to_nearest_even_saturating) {
  tt::for_each_backend([](const tt::Backend& be) {
    encode_values<f8e4m3_t>(be, 1);
    encode_values<f8e5m2_t>(be, 2);
  });
}

// fp8 arithmetic computes in f32 and rounds after each op (as f16 and bf16); constants are
// rounded to fp8; fp8 with f16 promotes to f16, with f32 to f32; the two fp8 kinds mix to f32.
BOOST_AUTO_TEST_CASE(arithmetic_and_promotion) {
  auto k = tritium::kernel("fp8_arith", [](tl::ptr<f8e4m3_t> a, tl::ptr<f8e4m3_t> b, tl::ptr<f8e5m2_t> c, tl::ptr<f16_t> h,
                                           tl::ptr<f8e4m3_t> out8, tl::ptr<f16_t> out16, tl::ptr<float> out32, int n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto x = tl::load(a + offs, mask), y = tl::load(b + offs, mask);
    auto z = x * y - x * 0.3f;  // the literal is rounded to e4m3 (0.3125)
    tl::static_assert_(z.dtype() == tl::float8e4nv, "e4m3 op e4m3 stays e4m3");
    tl::store(out8 + offs, tl::where(x > y, z, tl::maximum(x, y)), mask);
    auto w = x + tl::load(h + offs, mask);
    tl::static_assert_(w.dtype() == tl::float16, "e4m3 + f16 is f16");
    tl::store(out16 + offs, w, mask);
    auto m = x + tl::load(c + offs, mask);
    tl::static_assert_(m.dtype() == tl::float32, "e4m3 + e5m2 is f32");
    tl::store(out32 + offs, m, mask);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000;
    auto a = tt::random_vector<f8e4m3_t>(n, 11, -8, 8), b = tt::random_vector<f8e4m3_t>(n, 12, -8, 8);
    auto c = tt::random_vector<f8e5m2_t>(n, 13, -100, 100);
    auto h = tt::random_vector<f16_t>(n, 14, -4, 4);
    tt::host_vector<f8e4m3_t> ref8(n);
    tt::host_vector<f16_t> ref16(n);
    tt::host_vector<float> ref32(n);
    const double lit = tt::to_double(tt::fp8_nearest<f8e4m3_t>(0.3));
    for (int i = 0; i < n; ++i) {
      double x = tt::to_double(a[i]), y = tt::to_double(b[i]);
      auto r8 = [](double v) { return tt::to_double(tt::fp8_nearest<f8e4m3_t>(v)); };
      double z = r8(r8(x * y) - r8(x * lit));
      ref8[i] = tt::fp8_nearest<f8e4m3_t>(x > y ? z : std::max(x, y));
      ref16[i] = tt::to_f16_exact(x + tt::to_double(h[i]));
      ref32[i] = static_cast<float>(x + tt::to_double(c[i]));
    }
    auto da = be.upload<f8e4m3_t>(a), db = be.upload<f8e4m3_t>(b);
    auto dc = be.upload<f8e5m2_t>(c);
    auto dh = be.upload<f16_t>(h);
    auto o8 = be.upload<f8e4m3_t>(tt::host_vector<f8e4m3_t>(n, f8e4m3_t{0x55}));
    auto o16 = be.alloc_poisoned<f16_t>(n);
    auto o32 = be.alloc_poisoned<float>(n);
    k[{tritium::cdiv(n, 256)}](da.ptr(), db.ptr(), dc.ptr(), dh.ptr(), o8.ptr(), o16.ptr(), o32.ptr(), n, 256, be.options());
    tt::check_equal<f8e4m3_t>(o8.download(), ref8, "where(x > y, x * y - x * 0.3, max(x, y)) in e4m3");
    tt::check_equal<f16_t>(o16.download(), ref16, "e4m3 + f16");
    tt::check_equal<float>(o32.download(), ref32, "e4m3 + e5m2");
  });
}

// The op library's conversion to and from fp8 on each device.
BOOST_AUTO_TEST_CASE(ops_to_dtype) {
  namespace ops = tritium::ops;
  tt::for_each_backend([](const tt::Backend&) {
    const int n = 777;
    auto x = tt::random_vector<float>(n, 21, -600, 600);
    auto t = tritium::Tensor::from_vector<float>(std::vector<float>(x.begin(), x.end()), {n});
    for (tritium::DType d : {tritium::DType::f8e4m3, tritium::DType::f8e5m2}) {
      auto back = ops::to_dtype(ops::to_dtype(t, d), tritium::DType::f32).to_vector<float>();
      tt::host_vector<float> got(back.begin(), back.end()), ref(n);
      for (int i = 0; i < n; ++i)
        ref[i] = d == tritium::DType::f8e4m3 ? tt::to_float(tt::fp8_nearest<f8e4m3_t>(x[i]))
                                              : tt::to_float(tt::fp8_nearest<f8e5m2_t>(x[i]));
      tt::check_equal<float>(got, ref, std::string("to_dtype f32 -> ") + tritium::dtype_name(d) + " -> f32");
    }
  });
}

// A dot of e4m3 by e5m2 names both types; an fp8 scalar argument says what to use instead.
BOOST_AUTO_TEST_CASE(errors) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    auto k = tritium::kernel("fp8_mixed_dot", [&](tl::ptr<f8e4m3_t> a, tl::ptr<f8e5m2_t> b) {
      auto r = tl::arange(0, 16);
      auto offs = r(tl::_, tl::None) * 16 + r(tl::None, tl::_);
      line = __LINE__; auto d = tl::dot(tl::load(a + offs), tl::load(b + offs));
      (void)d;
    });
    k.ir(static_cast<f8e4m3_t*>(nullptr), static_cast<f8e5m2_t*>(nullptr));
  }, __FILE__, line, {"tl::dot", "operand dtypes differ (f8e4m3 and f8e5m2)"}, "e4m3 @ e5m2");
  auto scalar = tritium::kernel("fp8_scalar", [](tl::ptr<float> out, tl::f8e4m3 s) { tl::store(out, s.to(tl::float32)); });
  tt::check_throws([&] { scalar.ir(static_cast<float*>(nullptr), 1.0f); }, {"f8e4m3", "scalar arguments are not supported", "tl::f32"},
                   "an f8e4m3 scalar argument");
}

BOOST_AUTO_TEST_SUITE_END()
