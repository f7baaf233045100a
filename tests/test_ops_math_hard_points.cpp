// Issue 29's f32 math in CUDA's schemes (ops/math_approx.h: log1p and log by the exponent-field
// reduction, asin / acos by sqrt((1 - a) / 2), atan on [0, 1] without a second reduction,
// asinh / atanh through tl::fast_dividef, erfinv's 1 - x^2 by an FMA, fmod's fast quotient)
// against float64 at their hard points: |x| near 1 (asin, acos, atanh, erfinv), x near 1 (acosh),
// large |x| (asinh, atan), tiny and near -1 (log1p), the reduction's binade edges; and fmod /
// remainder exact for negative operands, b = 0, infinities, subnormals and huge quotients, in
// blocks that take the fast path, the exact one, or both in one launch.
#include <boost/math/special_functions/erf.hpp>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/unary_math.h"
#include "ops_test_helpers.h"
#include "ew_test_support.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ew = tritium::test::ew;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

BOOST_AUTO_TEST_SUITE(test_ops_math_hard_points)

namespace {

constexpr double kUlp = 1.1920928955078125e-7;  // 2^-23

std::vector<double> sweep(double lo, double hi, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(lo + (hi - lo) * i / (n - 1));
  return v;
}

// x and its f32 neighbours k ulp either side (k up to `steps`).
void around(std::vector<double>& v, float x, int steps) {
  float lo = x, hi = x;
  v.push_back(x);
  for (int i = 0; i < steps; ++i) {
    lo = std::nextafter(lo, -std::numeric_limits<float>::infinity());
    hi = std::nextafter(hi, std::numeric_limits<float>::infinity());
    v.push_back(lo), v.push_back(hi);
  }
}

Tensor f32(const std::vector<double>& v) {
  return ops::to_dtype(Tensor::from_vector<double>(v, {static_cast<int64_t>(v.size())}), DType::f32);
}

// Every element within rtol of float64's result rounded to f32 (atol for results near 0), NaN
// where it is NaN, signed zeros kept; the worst relative error is reported.
void check(const char* name, const Tensor& in, Tensor (*op)(const Tensor&), double (*ref)(double), double rtol) {
  auto x = ou::values(in);
  std::vector<double> want;
  for (double v : x) want.push_back(static_cast<float>(ref(v)));
  Tensor out = op(in);
  auto got = ou::values(out);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::isfinite(want[i]) && want[i] != 0) worst = std::max(worst, std::abs(got[i] - want[i]) / std::abs(want[i]));
  BOOST_TEST_MESSAGE(name << ": worst " << worst / kUlp << " x 2^-23 over " << got.size());
  ew::check_elements(out, want, rtol, 1e-44, name, /*signed_zero=*/true);
}

double atanh_ref(double x) { return std::abs(x) > 1 ? std::nan("") : std::atanh(x); }
double acosh_ref(double x) { return x < 1 ? std::nan("") : std::acosh(x); }
double log1p_ref(double x) { return x < -1 ? std::nan("") : std::log1p(x); }
double asin_ref(double x) { return std::abs(x) > 1 ? std::nan("") : std::asin(x); }
double acos_ref(double x) { return std::abs(x) > 1 ? std::nan("") : std::acos(x); }
double erfinv_ref(double x) {
  if (std::isnan(x) || std::abs(x) > 1) return std::nan("");
  if (std::abs(x) == 1) return std::copysign(ew::kInf, x);
  if (x == 0) return x;
  return boost::math::erf_inv(x);
}

// Special values every function sees.
void specials(std::vector<double>& v) {
  for (double x : {0.0, -0.0, 1e-45, -1e-45, 1e-38, -1e-38, 1e-30, -1e-30, 1e-8, -1e-8, ew::kInf, -ew::kInf, ew::kNaN})
    v.push_back(x);
}

}  // namespace

// Within 4 x 2^-23 on every backend (the GPU's rcp.approx / rsqrt.approx add up to about an ulp
// to the CPU's exact division and square root; measured on the CPU: see the test log).
BOOST_AUTO_TEST_CASE(unit_interval_functions_near_their_ends) {
  tt::for_each_backend([&](const tt::Backend&) {
    std::vector<double> v = sweep(-1.0, 1.0, 4001);
    for (float e : {1.0f, 0.5625f, 0.5f, 0.41421356f}) {
      around(v, e, 40);
      around(v, -e, 40);
    }
    for (double d : {1e-3, 1e-4, 1e-5, 1e-6, 3e-7}) v.push_back(1 - d), v.push_back(-1 + d);
    for (double x : {1.0000001, -1.0000001, 2.0, -2.0, 1e30}) v.push_back(x);
    specials(v);
    Tensor t = f32(v);
    check("asin f32", t, ops::asin, asin_ref, 4 * kUlp);
    check("acos f32", t, ops::acos, acos_ref, 4 * kUlp);
    check("atanh f32", t, ops::atanh, atanh_ref, 4 * kUlp);
    check("erfinv f32", t, ops::erfinv, erfinv_ref, 8 * kUlp);
  });
}

// bf16 erfinv takes its own degree-6 central piece and no tail (m::erfinv's bf16_values): every
// bf16 value of [-1, 1] (32,514 of them, so many programs), the ends, NaN, the infinities and values
// past 1, each within one bf16 ulp (2^-7 relative) of float64's erfinv rounded to bf16, signed
// zeros kept, infinite at +-1, and under 0.5 % of them off the correctly rounded value.
BOOST_AUTO_TEST_CASE(erfinv_bf16_every_value) {
  tt::for_each_backend([&](const tt::Backend&) {
    std::vector<double> v;
    for (uint32_t bits = 0; bits < 0x10000; ++bits) {
      float f = std::bit_cast<float>(bits << 16);
      if (std::abs(f) <= 1.0f) v.push_back(f);
    }
    for (double x : {1.0078125, -1.0078125, 2.0, -3.0, 1e30}) v.push_back(x);
    v.push_back(std::numeric_limits<double>::infinity());
    v.push_back(-std::numeric_limits<double>::infinity());
    v.push_back(std::nan(""));
    Tensor t = ops::to_dtype(Tensor::from_vector<double>(v, {static_cast<int64_t>(v.size())}), DType::bf16);
    auto x = ou::values(t);
    std::vector<double> want;
    for (double e : x) want.push_back(ew::round_to(erfinv_ref(e), DType::bf16));
    Tensor out = ops::erfinv(t);
    ew::check_elements(out, want, 0x1p-7, 0, "erfinv bf16 every value", /*signed_zero=*/true);
    // Off the correctly rounded value only where the f32 result sits within 2e-6 of a tie.
    auto got = ou::values(out);
    size_t off = 0;
    for (size_t i = 0; i < got.size(); ++i) off += std::isfinite(want[i]) && got[i] != want[i];
    BOOST_TEST(off * 200 < got.size(), "erfinv bf16: " << off << " of " << got.size() << " not correctly rounded");
  });
}

// log and log2 (inline vector logf / log2f on the CPU since stop 49, CUDA's logf / log2f): both ends
// and the middle of every binade, subnormals included, the reduction's switch points (0.75 2^k),
// around 1 (results near 0 keep their relative accuracy), 0 -> -inf, negatives NaN, inf, NaN;
// within 2 ulp of float64, and log2 of every power of two exact.
BOOST_AUTO_TEST_CASE(log_and_log2_every_binade) {
  tt::for_each_backend([&](const tt::Backend&) {
    std::vector<double> v = sweep(0.01, 10.0, 3001), pow2;
    for (int k = -149; k <= 127; ++k) {
      const float p = std::ldexp(1.0f, k);
      around(v, p, 2);
      pow2.push_back(p);
      for (float m : {0.75f, 1.5f, 1.9999999f})
        if (std::isfinite(std::ldexp(m, k))) around(v, std::ldexp(m, k), 1);
    }
    around(v, 1.0f, 200);
    for (double x : {3.4028234e38, 1e-45, -1e-45, -1.0, -1e30}) v.push_back(x);
    specials(v);
    auto log_ref = [](double x) { return x < 0 ? std::nan("") : x == 0 ? -ew::kInf : std::log(x); };
    auto log2_ref = [](double x) { return x < 0 ? std::nan("") : x == 0 ? -ew::kInf : std::log2(x); };
    Tensor t = f32(v);
    check("log f32", t, ops::log, log_ref, 2 * kUlp);
    check("log2 f32", t, ops::log2, log2_ref, 2 * kUlp);
    std::vector<double> exact;
    for (int k = -149; k <= 127; ++k) exact.push_back(k);
    ew::check_elements(ops::log2(f32(pow2)), exact, 0, 0, "log2 of powers of two");
  });
}

// sin and cos (inline on the CPU below |x| = 65536 since stop 49, libm past it; CUDA's sinf / cosf):
// a sweep over +-70000 (both sides of the switch, in one vector too), the floats nearest k pi / 2
// (results near 0 and +-1) with their neighbours up to k = 40000, the six closest of all below
// 65536, signed zeros, infinities, NaN;
// within 4 ulp of float64 (relative, so the results near 0 are held to it too).
BOOST_AUTO_TEST_CASE(sin_and_cos_reduction) {
  tt::for_each_backend([&](const tt::Backend&) {
    std::vector<double> v = sweep(-70000.0, 70000.0, 4001);
    for (double x : sweep(-7.0, 7.0, 1001)) v.push_back(x);
    for (int k : {1, 2, 3, 4, 5, 7, 10, 100, 1000, 1234, 9999, 20000, 31416, 40000})
      for (int sgn : {1, -1}) around(v, static_cast<float>(sgn * k * 1.5707963267948966), 3);
    for (double x : {65536.0, -65536.0, 65537.0, 1e6, -3e7, 1e30}) v.push_back(x);
    // The floats below 65536 nearest a multiple of pi / 2 (relative distance 3e-13 to 9e-12, so a
    // result near 1.6e-8 at the first: the reduction's pi / 2 must hold some 70 bits).
    for (double x : {52516.43359375, 56993.203125, 48039.6640625, 61469.97265625, 43562.89453125, 39086.125})
      v.push_back(x), v.push_back(-x);
    specials(v);
    Tensor t = f32(v);
    check("sin f32", t, ops::sin, [](double x) { return std::sin(x); }, 4 * kUlp);
    check("cos f32", t, ops::cos, [](double x) { return std::cos(x); }, 4 * kUlp);
  });
}

BOOST_AUTO_TEST_CASE(log_based_functions_across_binades) {
  tt::for_each_backend([&](const tt::Backend&) {
    std::vector<double> v = sweep(-1.0, 4.0, 5001);
    for (double x : sweep(1e-7, 1e-3, 200)) v.push_back(x), v.push_back(-x);
    // u = 1 + x at the edges of the reduction's binades (0.75 2^k), and x just above -1.
    for (int k = -24; k <= 127; ++k) {
      float e = std::ldexp(0.75f, k) - 1.0f;
      if (std::isfinite(e)) around(v, e, 3);
    }
    around(v, -1.0f, 4);
    for (double x : {3.4e38, 1e38, 1e20, 8388608.0, 8388609.0, 16777216.0, 2.7e8, -1.5, -1e30}) v.push_back(x);
    specials(v);
    Tensor t = f32(v);
    check("log1p f32", t, ops::log1p, log1p_ref, 4 * kUlp);
    check("asinh f32", t, ops::asinh, [](double x) { return std::asinh(x); }, 4 * kUlp);
    check("acosh f32", t, ops::acosh, acosh_ref, 4 * kUlp);
    check("atan f32", t, ops::atan, [](double x) { return std::atan(x); }, 4 * kUlp);
    // Large and negative arguments too: -x, and x near 1 for acosh.
    std::vector<double> w = sweep(1.0, 1.01, 2001);
    around(w, 1.0f, 50);
    for (double x : sweep(-1e6, 1e6, 2001)) w.push_back(x);
    for (double x : {1e10, -1e10, 1e30, -1e30, 3.4e38, -3.4e38}) w.push_back(x);
    Tensor u = f32(w);
    check("acosh f32 near 1", u, ops::acosh, acosh_ref, 4 * kUlp);
    check("asinh f32 large", u, ops::asinh, [](double x) { return std::asinh(x); }, 4 * kUlp);
    check("atan f32 large", u, ops::atan, [](double x) { return std::atan(x); }, 4 * kUlp);
  });
}

namespace {

// Python's remainder of two floats as f32 computes it: fmod is exact, m + b rounds to f32.
double py_remainder(double a, double b) {
  double m = std::fmod(a, b);
  return m != 0 && ((b < 0) != (m < 0)) ? static_cast<float>(m + b) : m;
}

// fmod and remainder of f32 pairs, fmod exact (the float64 fmod of two floats is a float).
void check_quotients(const std::vector<double>& a, const std::vector<double>& b, const std::string& what) {
  Tensor ta = f32(a), tb = f32(b);
  auto va = ou::values(ta), vb = ou::values(tb);
  std::vector<double> f, r;
  for (size_t i = 0; i < va.size(); ++i) f.push_back(std::fmod(va[i], vb[i])), r.push_back(py_remainder(va[i], vb[i]));
  ew::check_elements(ops::fmod(ta, tb), f, 0, 0, "fmod f32 " + what, /*signed_zero=*/true);
  ew::check_elements(ops::remainder(ta, tb), r, 0, 0, "remainder f32 " + what, /*signed_zero=*/true);
  // bf16 computes in f32 and rounds once.
  Tensor ba = ops::to_dtype(ta, DType::bf16), bb = ops::to_dtype(tb, DType::bf16);
  auto xa = ou::values(ba), xb = ou::values(bb);
  std::vector<double> rb;
  for (size_t i = 0; i < xa.size(); ++i) rb.push_back(ew::round_to(py_remainder(xa[i], xb[i]), DType::bf16));
  ew::check_elements(ops::remainder(ba, bb), rb, 0, 0, "remainder bf16 " + what, /*signed_zero=*/true);
}

}  // namespace

// The fast path: quotients below 2^18 in every sign combination, exact multiples (remainder 0,
// signed), quotients whose f32 value rounds up to the next integer, b near the range's ends.
// Odd sizes over several programs of the 1024 block (under 2^16 elements).
BOOST_AUTO_TEST_CASE(fmod_remainder_fast_path_exact) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto ra = tt::random_vector<double>(9001, 41, -50, 50);
    auto rb = tt::random_vector<double>(9001, 42, -3, 3);
    std::vector<double> a(ra.begin(), ra.end()), b(rb.begin(), rb.end());
    for (size_t i = 0; i < b.size(); ++i)
      if (b[i] == 0) b[i] = 0.5;
    for (double x : {6.0, -6.0, 0.0, -0.0, 7.5, -7.5, 1.0, 262143.0, -262143.0}) {
      for (double y : {3.0, -3.0, 2.5, -2.5, 0.1, -0.1}) a.push_back(x), b.push_back(y);
    }
    // Quotients just below an integer (a = n b - tiny): the rounded quotient is n.
    for (int n : {1, 2, 3, 7, 100, 4097, 200000}) {
      float bb = 0.3f;
      float aa = std::nextafter(static_cast<float>(n) * bb, 0.0f);
      a.push_back(aa), b.push_back(bb), a.push_back(-aa), b.push_back(bb), a.push_back(aa), b.push_back(-bb);
    }
    a.push_back(1e-40), b.push_back(1.0);  // subnormal a: the fast path
    a.push_back(1.0), b.push_back(1.2e-38);  // smallest normal b, quotient past 2^18: exact path
    check_quotients(a, b, "fast");
  });
}

// Programs holding a pair outside the fast range take the exact fmod for the whole block: b = 0
// (NaN), infinite or NaN operands, subnormal b, quotients up to 2^254; the other programs of the
// same launch stay on the fast path.
BOOST_AUTO_TEST_CASE(fmod_remainder_outside_the_fast_range) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto ra = tt::random_vector<double>(12289, 43, -10, 10);
    auto rb = tt::random_vector<double>(12289, 44, 0.5, 4);
    std::vector<double> a(ra.begin(), ra.end()), b(rb.begin(), rb.end());
    const std::vector<std::pair<double, double>> hard = {
        {5.0, 0.0},   {-5.0, -0.0},  {0.0, 0.0},      {ew::kInf, 2.0},  {-ew::kInf, 2.0}, {3.0, ew::kInf}, {-3.0, -ew::kInf},
        {ew::kNaN, 1.0}, {1.0, ew::kNaN}, {1.0, 1e-45}, {-1e-40, 3e-41}, {3e38, 1.1},   {-3e38, 0.7},   {3e38, -1e-30},
        {1e30, 3.0},  {-1e30, -7.0}, {524288.5, 1.0}, {262144.0, -1.0}, {1e-20, 1e-38}, {16777217.0, 3.0}};
    size_t at = 5000;  // inside the second program of 4096
    for (auto [x, y] : hard) a[at] = x, b[at] = y, at += 7;
    check_quotients(a, b, "mixed");
  });
}

BOOST_AUTO_TEST_SUITE_END()
