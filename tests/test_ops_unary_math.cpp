// The element-wise math ops (ops/unary_math.h, nn/elementwise_ops.h): each against libm in
// float64 on random inputs plus the domain's edges (NaN, +-inf, signed zeros, huge, tiny,
// subnormal), in f32, f64, f16 and bf16; PyTorch's dtype rules for integers and bool; strided,
// broadcast and empty inputs; clamp, lerp, addcmul/addcdiv; and the errors. Gradients: the
// registry's gradcheck (test_op_registry.cpp) and gradgradcheck (test_autograd_grad.cpp) run every
// declaration's samples.
#include <boost/math/special_functions/erf.hpp>
#include <cmath>

#include "nn/elementwise_inplace.h"
#include "nn/functional.h"
#include "ops_test_helpers.h"
#include "ew_test_support.h"
#include "ops/addcmul_scaled.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ew = tritium::test::ew;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;
using ops::Scalar;

BOOST_AUTO_TEST_SUITE(test_ops_unary_math)

namespace {

struct Unary {
  const char* name;
  Tensor (*op)(const Tensor&);
  double (*ref)(double);
  double lo, hi;       // random inputs (the edges are added)
  double rtol_scale;   // times tol_of(dtype)
};

double erfinv_ref(double x) {
  if (std::isnan(x) || std::abs(x) > 1) return ew::kNaN;
  if (x == 1) return ew::kInf;
  if (x == -1) return -ew::kInf;
  if (x == 0) return x;
  return boost::math::erf_inv(x);
}

const std::vector<Unary>& float_functions() {
  static const std::vector<Unary> fs = {
      {"sin", ops::sin, [](double x) { return std::sin(x); }, -10, 10, 4},
      {"cos", ops::cos, [](double x) { return std::cos(x); }, -10, 10, 4},
      {"tan", ops::tan, [](double x) { return std::tan(x); }, -1.5, 1.5, 6},
      {"asin", ops::asin, [](double x) { return std::asin(x); }, -1, 1, 4},
      {"acos", ops::acos, [](double x) { return std::acos(x); }, -1, 1, 4},
      {"atan", ops::atan, [](double x) { return std::atan(x); }, -20, 20, 4},
      {"sinh", ops::sinh, [](double x) { return std::sinh(x); }, -10, 10, 6},
      {"cosh", ops::cosh, [](double x) { return std::cosh(x); }, -10, 10, 6},
      {"asinh", ops::asinh, [](double x) { return std::asinh(x); }, -100, 100, 4},
      {"acosh", ops::acosh, [](double x) { return std::acosh(x); }, 0.5, 100, 4},
      {"atanh", ops::atanh, [](double x) { return std::atanh(x); }, -1, 1, 4},
      {"log1p", ops::log1p, [](double x) { return std::log1p(x); }, -1, 10, 4},
      {"expm1", ops::expm1, [](double x) { return std::expm1(x); }, -5, 5, 4},
      {"log2", ops::log2, [](double x) { return std::log2(x); }, 0, 100, 4},
      {"log10", ops::log10, [](double x) { return std::log10(x); }, 0, 100, 4},
      {"exp2", ops::exp2, [](double x) { return std::exp2(x); }, -20, 20, 4},
      {"reciprocal", ops::reciprocal, [](double x) { return 1 / x; }, -10, 10, 2},
      {"rsqrt", ops::rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0, 10, 4},
      {"erf", ops::erf, [](double x) { return std::erf(x); }, -3, 3, 6},
      {"erfc", ops::erfc, [](double x) { return std::erfc(x); }, -3, 10, 8},
      {"erfinv", ops::erfinv, erfinv_ref, -1, 1, 8},
  };
  return fs;
}

// The libm reference of op on the stored inputs, rounded to the output dtype.
std::vector<double> reference(const Unary& f, const std::vector<double>& in, DType out) {
  std::vector<double> r(in.size());
  for (size_t i = 0; i < in.size(); ++i) r[i] = ew::round_to(f.ref(in[i]), out);
  return r;
}

}  // namespace

BOOST_AUTO_TEST_CASE(float_functions_f32_f64_against_libm) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (DType d : {DType::f32, DType::f64})
      for (const Unary& f : float_functions()) {
        ew::Input in = ew::make_input(d, 1237, 17, f.lo, f.hi);
        Tensor out = f.op(in.t);
        BOOST_TEST((out.dtype() == d), f.name);
        // Relative tolerance plus an absolute one at the scale of the dtype's subnormals (results
        // that underflow).
        double atol = d == DType::f32 ? 1e-37 : 1e-300;
        ew::check_elements(out, reference(f, in.v, d), f.rtol_scale * ew::tol_of(d), atol,
                           std::string(f.name) + " " + tritium::dtype_name(d), /*signed_zero=*/true);
      }
  });
}

BOOST_AUTO_TEST_CASE(float_functions_half_types_compute_in_f32) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (DType d : {DType::f16, DType::bf16})
      for (const Unary& f : float_functions()) {
        ew::Input in = ew::make_input(d, 301, 23, f.lo, f.hi);
        Tensor out = f.op(in.t);
        BOOST_TEST((out.dtype() == d), f.name);
        // The reference in f64 of the stored input, rounded to d: one rounding (computing in f32
        // adds a few f32 ulp, far below a half ulp of d, except at ties).
        ew::check_elements(out, reference(f, in.v, d), 2 * ew::tol_of(d), 1e-7,
                           std::string(f.name) + " " + tritium::dtype_name(d));
      }
  });
}

BOOST_AUTO_TEST_CASE(integer_and_bool_inputs_give_f32) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor i = Tensor::from_vector<int32_t>({-3, 0, 1, 7, 100}, {5});
    Tensor b = Tensor::from_vector<bool>({true, false, true}, {3});
    for (const Unary& f : float_functions()) {
      Tensor out = f.op(i);
      BOOST_TEST((out.dtype() == DType::f32), f.name);
      std::vector<double> in{-3, 0, 1, 7, 100};
      ew::check_elements(out, reference(f, in, DType::f32), 8 * ew::tol_of(DType::f32), 1e-37, std::string(f.name) + " i32");
      BOOST_TEST((f.op(b).dtype() == DType::f32), f.name);
    }
  });
}

BOOST_AUTO_TEST_CASE(rounding_ops_exact) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      ew::Input in = ew::make_input(d, 999, 31, -20, 20);
      // Exact halves and values near them; values at and past 2^23 (f32's last fractional bit: round
      // adds 2^23) and 2^52 (f64's), infinities, -0.
      auto halves = Tensor::from_vector<double>({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -0.3, 0.49999997, 8388607.5,
                                                 8388608.0, -8388609.0, 16777215.0, 1e10, 4503599627370495.5,
                                                 -4503599627370497.0, 1e300, -1e300, -0.0},
                                                {19});
      ew::Input h{ops::to_dtype(halves, d), ou::values(ops::to_dtype(halves, d))};
      for (const ew::Input* x : {&in, &h}) {
        auto map = [&](double (*f)(double)) {
          std::vector<double> r;
          for (double v : x->v) r.push_back(f(v));
          return r;
        };
        std::string dn = tritium::dtype_name(d);
        ew::check_elements(ops::floor(x->t), map([](double v) { return std::floor(v); }), 0, 0, "floor " + dn, true);
        ew::check_elements(ops::ceil(x->t), map([](double v) { return std::ceil(v); }), 0, 0, "ceil " + dn, true);
        ew::check_elements(ops::trunc(x->t), map([](double v) { return std::trunc(v); }), 0, 0, "trunc " + dn, true);
        ew::check_elements(ops::round(x->t), map([](double v) { return std::nearbyint(v); }), 0, 0, "round " + dn, true);
        ew::check_elements(ops::frac(x->t), map([](double v) { return std::isinf(v) ? ew::kNaN : v - std::trunc(v); }), 0,
                           0, "frac " + dn);
      }
    }
    // round(decimals): PyTorch scales by 10^decimals, rounds half to even, scales back.
    Tensor x = Tensor::from_vector<float>({1.2345f, -2.5e-3f, 1e30f, 0.125f, 1234.5f, -0.0f}, {6});
    ew::check_elements(ops::round(x, 2), {1.23, -0.0, 1e30, 0.12, 1234.5, -0.0}, 3e-7, 0, "round(decimals=2)", true);
    ew::check_elements(ops::round(x, -1), {0.0, -0.0, 1e30, 0.0, 1230.0, -0.0}, 3e-7, 0, "round(decimals=-1)", true);
    // Integers: a copy of the input dtype; bool is refused.
    Tensor i = Tensor::from_vector<int64_t>({-3, 5, 1LL << 60}, {3});
    for (auto* f : {ops::floor, ops::ceil, ops::trunc}) {
      Tensor r = f(i);
      BOOST_TEST((r.dtype() == DType::i64));
      BOOST_TEST((r.to_vector<int64_t>() == std::vector<int64_t>{-3, 5, 1LL << 60}));
    }
    Tensor b = Tensor::from_vector<bool>({true}, {1});
    EW_CHECK_ERROR(ops::floor(b), "floor: not implemented for bool");
    EW_CHECK_ERROR(ops::frac(i), "frac: not implemented for i64");
    EW_CHECK_ERROR(ops::round(i, 1), "round: decimals is only supported for floating-point");
  });
}

BOOST_AUTO_TEST_CASE(abs_sign_square_keep_integers) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor i = Tensor::from_vector<int32_t>({-7, 0, 3, -2147483647}, {4});
    BOOST_TEST((ops::abs(i).dtype() == DType::i32));
    BOOST_TEST((ops::abs(i).to_vector<int32_t>() == std::vector<int32_t>{7, 0, 3, 2147483647}));
    BOOST_TEST((ops::sign(i).to_vector<int32_t>() == std::vector<int32_t>{-1, 0, 1, -1}));
    BOOST_TEST((ops::square(Tensor::from_vector<int8_t>({-3, 4, 12}, {3})).to_vector<int8_t>() ==
                std::vector<int8_t>{9, 16, -112}));  // wraps, as PyTorch
    Tensor b = Tensor::from_vector<bool>({true, false}, {2});
    BOOST_TEST((ops::square(b).dtype() == DType::i64));
    BOOST_TEST((ops::sign(b).dtype() == DType::i1));
    EW_CHECK_ERROR(ops::abs(b), "abs: not implemented for bool tensors");
    for (DType d : {DType::f32, DType::f64, DType::f16}) {
      ew::Input in = ew::make_input(d, 200, 41, -5, 5);
      std::vector<double> ra, rs, rq;
      for (double v : in.v) {
        ra.push_back(std::abs(v));
        rs.push_back(std::isnan(v) ? 0.0 : v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0);  // sign(NaN) = 0, as PyTorch
        rq.push_back(ew::round_to(v * v, d));
      }
      std::string dn = tritium::dtype_name(d);
      ew::check_elements(ops::abs(in.t), ra, 0, 0, "abs " + dn, true);
      ew::check_elements(ops::sign(in.t), rs, 0, 0, "sign " + dn);
      ew::check_elements(ops::square(in.t), rq, ew::tol_of(d), 0, "square " + dn);
    }
  });
}

BOOST_AUTO_TEST_CASE(predicates_and_nan_to_num) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (DType d : {DType::f32, DType::f64, DType::bf16}) {
      ew::Input in = ew::make_input(d, 50, 43, -2, 2);
      std::vector<double> nan, inf, pinf, ninf, fin, sb;
      for (double v : in.v) {
        nan.push_back(std::isnan(v));
        inf.push_back(std::isinf(v));
        pinf.push_back(v == ew::kInf);
        ninf.push_back(v == -ew::kInf);
        fin.push_back(std::isfinite(v));
        sb.push_back(std::signbit(v));
      }
      std::string dn = tritium::dtype_name(d);
      for (auto [out, ref, what] : {std::tuple{ops::isnan(in.t), nan, "isnan"}, std::tuple{ops::isinf(in.t), inf, "isinf"},
                                    std::tuple{ops::isposinf(in.t), pinf, "isposinf"},
                                    std::tuple{ops::isneginf(in.t), ninf, "isneginf"},
                                    std::tuple{ops::isfinite(in.t), fin, "isfinite"},
                                    std::tuple{ops::signbit(in.t), sb, "signbit"}}) {
        BOOST_TEST((out.dtype() == DType::i1), what);
        ew::check_elements(out, ref, 0, 0, std::string(what) + " " + dn);
      }
      // nan_to_num: defaults 0 and the dtype's extremes; given values.
      double big = d == DType::f64 ? std::numeric_limits<double>::max()
                   : d == DType::f32 ? double(std::numeric_limits<float>::max())
                                     : 3.3895313892515355e38;
      std::vector<double> r1, r2;
      for (double v : in.v) {
        r1.push_back(std::isnan(v) ? 0.0 : v == ew::kInf ? big : v == -ew::kInf ? -big : v);
        r2.push_back(std::isnan(v) ? 1.5 : v == ew::kInf ? 100.0 : v == -ew::kInf ? -7.0 : v);
      }
      ew::check_elements(ops::nan_to_num(in.t), r1, 0, 0, "nan_to_num " + dn, true);
      ew::check_elements(ops::nan_to_num(in.t, 1.5, 100.0, -7.0), r2, 0, 0, "nan_to_num(1.5, 100, -7) " + dn, true);
    }
    // Integers and bool: never NaN or infinite; nan_to_num is a copy; signbit of integers.
    Tensor i = Tensor::from_vector<int32_t>({-1, 0, 5}, {3});
    BOOST_TEST((ops::isnan(i).to_vector<bool>() == std::vector<bool>{false, false, false}));
    BOOST_TEST((ops::isfinite(i).to_vector<bool>() == std::vector<bool>{true, true, true}));
    BOOST_TEST((ops::signbit(i).to_vector<bool>() == std::vector<bool>{true, false, false}));
    BOOST_TEST((ops::nan_to_num(i).to_vector<int32_t>() == std::vector<int32_t>{-1, 0, 5}));
    Tensor h = ops::to_dtype(Tensor::from_vector<float>({INFINITY, -INFINITY}, {2}), DType::f16);
    ew::check_elements(ops::nan_to_num(h), {65504.0, -65504.0}, 0, 0, "nan_to_num f16");
  });
}

BOOST_AUTO_TEST_CASE(binary_functions_against_libm) {
  tt::for_each_backend([&](const tt::Backend&) {
    struct Binary {
      const char* name;
      Tensor (*op)(const Tensor&, const Tensor&);
      double (*ref)(double, double);
      double rtol;  // times tol_of
    };
    const std::vector<Binary> fs = {
        {"atan2", ops::atan2, [](double a, double b) { return std::atan2(a, b); }, 4},
        {"hypot", ops::hypot, [](double a, double b) { return std::hypot(a, b); }, 3},
        {"copysign", ops::copysign, [](double a, double b) { return std::copysign(a, b); }, 0},
        {"logaddexp", ops::logaddexp,
         [](double a, double b) {
           if (std::isinf(a) && a == b) return a;
           double m = std::max(a, b);
           return std::isnan(a) || std::isnan(b) ? ew::kNaN : m + std::log1p(std::exp(-std::abs(a - b)));
         },
         4},
        {"fmod", ops::fmod, [](double a, double b) { return std::fmod(a, b); }, 0},
        {"remainder", ops::remainder,
         [](double a, double b) {
           double m = std::fmod(a, b);
           return m != 0 && ((b < 0) != (m < 0)) ? m + b : m;
         },
         0},
        {"minimum", ops::minimum,
         [](double a, double b) { return std::isnan(a) || std::isnan(b) ? ew::kNaN : b < a ? b : a; }, 0},
        {"maximum", ops::maximum,
         [](double a, double b) { return std::isnan(a) || std::isnan(b) ? ew::kNaN : a < b ? b : a; }, 0},
        {"fmin", ops::fmin, [](double a, double b) { return std::isnan(a) ? b : std::isnan(b) ? a : b < a ? b : a; }, 0},
        {"fmax", ops::fmax, [](double a, double b) { return std::isnan(a) ? b : std::isnan(b) ? a : a < b ? b : a; }, 0},
    };
    for (DType d : {DType::f32, DType::f64}) {
      // Every pair of edge values, plus random pairs: [n] x [n] as an outer broadcast [n, 1] op [1, n].
      ew::Input a = ew::make_input(d, 30, 51, -50, 50), b = ew::make_input(d, 30, 52, -5, 5);
      int64_t na = static_cast<int64_t>(a.v.size()), nb = static_cast<int64_t>(b.v.size());
      Tensor ta = a.t.reshape({na, 1}), tb = b.t.reshape({1, nb});
      for (const Binary& f : fs) {
        Tensor out = f.op(ta, tb);
        std::vector<double> ref;  // fmod and remainder exact for every pair (3e38 / 1e-40 included)
        for (double x : a.v)
          for (double y : b.v) ref.push_back(ew::round_to(f.ref(x, y), d));
        BOOST_TEST((out.shape() == ou::Shape{na, nb}), f.name);
        ew::check_elements(out, ref, f.rtol * ew::tol_of(d), d == DType::f32 ? 1e-37 : 1e-300,
                           std::string(f.name) + " " + tritium::dtype_name(d), /*signed_zero=*/f.rtol == 0);
      }
    }
    // Integers: fmod / remainder / minimum in the promoted integer type; atan2 / copysign give f32;
    // hypot / logaddexp refuse them (as PyTorch).
    Tensor i = Tensor::from_vector<int32_t>({5, -5, 5, -5, 7, 0}, {6});
    Tensor j = Tensor::from_vector<int64_t>({3, 3, -3, -3, 1, 4}, {6});
    BOOST_TEST((ops::fmod(i, j).dtype() == DType::i64));
    BOOST_TEST((ops::fmod(i, j).to_vector<int64_t>() == std::vector<int64_t>{2, -2, 2, -2, 0, 0}));
    BOOST_TEST((ops::remainder(i, j).to_vector<int64_t>() == std::vector<int64_t>{2, 1, -1, -2, 0, 0}));
    BOOST_TEST((ops::minimum(i, j).to_vector<int64_t>() == std::vector<int64_t>{3, -5, -3, -5, 1, 0}));
    BOOST_TEST((ops::atan2(i, j).dtype() == DType::f32));
    BOOST_TEST((ops::copysign(i, j).dtype() == DType::f32));
    EW_CHECK_ERROR(ops::hypot(i, j), "hypot: not implemented for i64");
    EW_CHECK_ERROR(ops::logaddexp(i, i), "logaddexp: not implemented for i32");
    // Scalar divisors.
    Tensor x = Tensor::from_vector<float>({5.5f, -5.5f, 0.25f}, {3});
    ew::check_elements(ops::fmod(x, Scalar(2)), {1.5, -1.5, 0.25}, 0, 0, "fmod(x, 2)");
    ew::check_elements(ops::remainder(x, Scalar(-2.0)), {-0.5, -1.5, -1.75}, 0, 0, "remainder(x, -2.0)");
  });
}

BOOST_AUTO_TEST_CASE(strided_broadcast_and_empty_inputs) {
  tt::for_each_backend([&](const tt::Backend&) {
    // A transposed input and an expanded one: the kernels read the views directly.
    Tensor base = ou::random_tensor<float>({37, 29}, 61, -3, 3);
    Tensor t = base.t();  // [29, 37], strides (1, 29)
    auto bv = ou::values(base);
    std::vector<double> ref;
    for (int64_t r = 0; r < 29; ++r)
      for (int64_t c = 0; c < 37; ++c) ref.push_back(static_cast<float>(std::atan(bv[c * 29 + r])));
    ew::check_elements(ops::atan(t), ref, 4 * ew::tol_of(DType::f32), 0, "atan of a transposed view");
    Tensor row = ou::random_tensor<float>({1, 37}, 62, 0.5, 2);
    Tensor ex = row.expand({29, 37});
    auto rv = ou::values(row);
    std::vector<double> r2;
    for (int64_t r = 0; r < 29; ++r)
      for (int64_t c = 0; c < 37; ++c) r2.push_back(ew::round_to(std::hypot(bv[c * 29 + r], rv[c]), DType::f32));
    ew::check_elements(ops::hypot(t, ex), r2, 3 * ew::tol_of(DType::f32), 0, "hypot(transposed, expanded)");
    // Empty tensors give empty results of the rule's dtype.
    Tensor e = Tensor::from_vector<int32_t>({}, {0, 3});
    BOOST_TEST((ops::sin(e).shape() == ou::Shape{0, 3}));
    BOOST_TEST((ops::sin(e).dtype() == DType::f32));
    BOOST_TEST(ops::clamp(e, Scalar(0), Scalar(1)).numel() == 0);
  });
}

BOOST_AUTO_TEST_CASE(clamp_forms) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (DType d : {DType::f32, DType::f64, DType::f16}) {
      ew::Input in = ew::make_input(d, 500, 71, -3, 3);
      auto ref = [&](double lo, double hi, bool has_lo, bool has_hi) {
        std::vector<double> r;
        for (double v : in.v) {
          double y = v;
          if (has_lo && (y < lo || std::isnan(lo))) y = lo;
          if (has_hi && (y > hi || std::isnan(hi))) y = hi;
          r.push_back(y);
        }
        return r;
      };
      std::string dn = tritium::dtype_name(d);
      ew::check_elements(ops::clamp(in.t, Scalar(-1.0), Scalar(0.5)), ref(-1, 0.5, true, true), 0, 0, "clamp " + dn, true);
      ew::check_elements(ops::clamp_min(in.t, Scalar(0.25)), ref(0.25, 0, true, false), 0, 0, "clamp_min " + dn, true);
      ew::check_elements(ops::clamp_max(in.t, Scalar(-0.25)), ref(0, -0.25, false, true), 0, 0, "clamp_max " + dn, true);
      // min > max: every element is max; a NaN bound gives NaN.
      ew::check_elements(ops::clamp(in.t, Scalar(2.5), Scalar(1.5)), ref(2.5, 1.5, true, true), 0, 0, "clamp(min > max) " + dn);
      ew::check_elements(ops::clamp(in.t, Scalar(ew::kNaN), std::nullopt), ref(ew::kNaN, 0, true, false), 0, 0,
                         "clamp(min = NaN) " + dn);
    }
    // Tensor bounds, broadcast: min [n, 1], max [1, m], either optional.
    Tensor x = ou::random_tensor<float>({5, 7}, 72, -2, 2);
    Tensor lo = ou::random_tensor<float>({5, 1}, 73, -1.5, 0);
    Tensor hi = ou::random_tensor<double>({7}, 74, 0, 1.5);
    auto xv = ou::values(x), lv = ou::values(lo), hv = ou::values(hi);
    std::vector<double> both, only_lo, only_hi;
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 7; ++c) {
        double v = xv[r * 7 + c];
        double a = std::max(v, lv[r]);
        both.push_back(std::min(a, hv[c]));
        only_lo.push_back(a);
        only_hi.push_back(std::min(v, hv[c]));
      }
    Tensor out = ops::clamp(x, lo, hi);
    BOOST_TEST((out.dtype() == DType::f64));  // promotes with the f64 max
    ew::check_elements(out, both, 0, 0, "clamp(x, min tensor, max tensor)");
    ew::check_elements(ops::clamp(x, lo, Tensor()), only_lo, 0, 0, "clamp(x, min tensor, None)");
    ew::check_elements(ops::clamp_max(x, hi), only_hi, 1e-7, 0, "clamp_max(x, tensor)");
    // Integers stay integers; a float bound promotes.
    Tensor i = Tensor::from_vector<int32_t>({-5, 0, 9}, {3});
    BOOST_TEST((ops::clamp(i, Scalar(-1), Scalar(4)).to_vector<int32_t>() == std::vector<int32_t>{-1, 0, 4}));
    BOOST_TEST((ops::clamp(i, Scalar(2.5), std::nullopt).dtype() == DType::f32));
    // bool: with integer bounds the result is i64, with bool bounds bool (as PyTorch).
    Tensor b = Tensor::from_vector<bool>({true, false, true}, {3});
    BOOST_TEST((ops::clamp(b, Scalar(0), Scalar(1)).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1}));
    Tensor lob = Tensor::from_vector<bool>({false, true, false}, {3});
    BOOST_TEST((ops::clamp(b, lob, Tensor()).to_vector<bool>() == std::vector<bool>{true, true, true}));
    // Errors: no bound; a bound tensor whose dtype cannot join the input's (u64 with a signed
    // integer, as PyTorch refuses); shapes that do not broadcast; an undefined input.
    EW_CHECK_ERROR(ops::clamp(x, std::nullopt, std::nullopt), "clamp: At least one of 'min' or 'max' must not be None");
    EW_CHECK_ERROR(ops::clamp(x, Tensor(), Tensor()), "clamp: At least one of 'min' or 'max' must not be None");
    Tensor big = Tensor::from_vector<uint64_t>({1, 2, 3}, {3});
    EW_CHECK_ERROR(tritium::clamp(i, big, Tensor()), "clamp: no integer type holds both i32 and u64");
    EW_CHECK_ERROR(ops::clamp(x, lo.reshape({1, 5}), Tensor()), "clamp: shapes [5, 7] and [1, 5] cannot be broadcast");
    EW_CHECK_ERROR(ops::clamp(Tensor(), Scalar(1), Scalar(2)), "clamp: argument 0 is an undefined tensor");
    EW_CHECK_ERROR(tritium::clamp(x, std::nullopt, std::nullopt), "clamp: At least one of 'min' or 'max' must not be None");
  });
}

BOOST_AUTO_TEST_CASE(clamp_devices_mismatch) {
  if (!tritium::runtime::device_available(tritium::Device::cuda()) ||
      !tritium::runtime::device_available(tritium::Device::cpu())) {
    BOOST_TEST_MESSAGE("skipping: one backend only (a device mismatch needs two)");
    return;
  }
  Tensor x = ou::random_tensor<float>({4}, 75).to(tritium::Device::cpu());
  Tensor lo = ou::random_tensor<float>({4}, 76).to(tritium::Device::cuda());
  EW_CHECK_ERROR(ops::clamp(x, lo, Tensor()), "clamp: tensors are on different devices");
  EW_CHECK_ERROR(ops::atan2(x, lo), "atan2: tensors are on different devices");
}

// tan's reduction by pi/2 (ops/math_approx.h): arguments up to the fast path's limit, the f32
// neighbours of multiples of pi/2 (the poles) and of zero, and programs holding one far argument
// (which take sin / cos for their whole block), and +-0 in a program of near arguments only,
// against tan of the rounded input in float64.
BOOST_AUTO_TEST_CASE(tan_reduction_and_far_arguments) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (DType d : {DType::f32, DType::bf16}) {
      std::vector<double> drawn = ou::values(ou::random_tensor<float>({12000}, 91, -65536, 65536));
      std::vector<float> v(drawn.begin(), drawn.end());
      for (int k = 1; k < 3000; k += 7) {
        float c = static_cast<float>(k * M_PI / 2);
        for (float t : {c, std::nextafter(c, 0.f), std::nextafter(c, 1e9f), -c}) v.push_back(t);
      }
      for (float t : {0.f, -0.f, 1e-30f, -1e-7f, 65535.f, -65536.f}) v.push_back(t);
      v[5000] = 1e6f, v[9001] = -3e38f, v[100] = 65537.f;  // far arguments among near ones
      v.push_back(INFINITY), v.push_back(NAN);
      Tensor x = ops::to_dtype(Tensor::from_vector(v, {static_cast<int64_t>(v.size())}), d);
      std::vector<double> ref;
      for (double a : ou::values(x)) ref.push_back(ew::round_to(std::tan(a), d));
      ew::check_elements(ops::tan(x), ref, (d == DType::f32 ? 6 : 2) * ew::tol_of(d), 1e-37,
                         std::string("tan ") + tritium::dtype_name(d), /*signed_zero=*/true);
      // Zeros and tiny values on the fast path (a program without far arguments): signs kept.
      Tensor z = ops::to_dtype(Tensor::from_vector<float>({0.f, -0.f, 1e-30f, -1e-30f, 1e-38f, -0.5f, 3.f}, {7}), d);
      std::vector<double> zref;
      for (double a : ou::values(z)) zref.push_back(ew::round_to(std::tan(a), d));
      ew::check_elements(ops::tan(z), zref, (d == DType::f32 ? 6 : 2) * ew::tol_of(d), 1e-37,
                         std::string("tan of zeros ") + tritium::dtype_name(d), /*signed_zero=*/true);
    }
  });
}

BOOST_AUTO_TEST_CASE(lerp_addcmul_addcdiv) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor s = ou::random_tensor<float>({6, 9}, 81), e = ou::random_tensor<float>({9}, 82);
    Tensor w = ou::random_tensor<float>({6, 1}, 83, 0, 1);
    auto sv = ou::values(s), evs = ou::values(e), wv = ou::values(w);
    auto lerp_ref = [](double a, double b, double t) { return std::abs(t) < 0.5 ? a + t * (b - a) : b - (b - a) * (1 - t); };
    std::vector<double> r1, r2, r3, r4, r5;
    Tensor t2 = ou::random_tensor<float>({6, 9}, 84, 0.5, 2);
    auto t2v = ou::values(t2);
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 9; ++c) {
        double a = sv[r * 9 + c], b = evs[c];
        r1.push_back(static_cast<float>(lerp_ref(a, b, 0.3)));
        r2.push_back(static_cast<float>(lerp_ref(a, b, wv[r])));
        r3.push_back(static_cast<float>(a + 0.5 * b * t2v[r * 9 + c]));
        r4.push_back(static_cast<float>(a - 2.0 * b / t2v[r * 9 + c]));
        r5.push_back(static_cast<float>(-0.75 * a + 0.5 * b * t2v[r * 9 + c]));
      }
    ew::check_elements(ops::lerp(s, e, Scalar(0.3)), r1, 5e-7, 5e-7, "lerp(scalar weight)");
    ew::check_elements(ops::lerp(s, e, w), r2, 5e-7, 5e-7, "lerp(tensor weight)");
    ew::check_elements(ops::addcmul(s, e, t2, Scalar(0.5)), r3, 5e-7, 5e-7, "addcmul");
    ew::check_elements(ops::addcdiv(s, e, t2, Scalar(-2)), r4, 5e-7, 5e-7, "addcdiv");
    ew::check_elements(ops::addcmul_scaled(s, Scalar(-0.75), e, t2, Scalar(0.5)), r5, 5e-7, 5e-7, "addcmul, self scaled");
    // lerp is exact at both ends.
    ew::check_elements(ops::lerp(s, e.expand({6, 9}), Scalar(1.0)), [&] {
      std::vector<double> r;
      for (int k = 0; k < 54; ++k) r.push_back(evs[k % 9]);
      return r;
    }(), 0, 0, "lerp(weight 1) is end");
    // Integers: addcmul computes in the integer type; addcdiv and lerp refuse them.
    Tensor i = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
    BOOST_TEST((ops::addcmul(i, i, i, Scalar(2)).to_vector<int32_t>() == std::vector<int32_t>{3, 10, 21}));
    BOOST_TEST((ops::addcmul_scaled(i, Scalar(3), i, i, Scalar(2)).to_vector<int32_t>() == std::vector<int32_t>{5, 14, 27}));
    EW_CHECK_ERROR(ops::addcdiv(i, i, i), "addcdiv: Integer division with addcdiv is no longer supported");
    EW_CHECK_ERROR(ops::lerp(i, i, Scalar(0.5)), "lerp: not implemented for i32");
    EW_CHECK_ERROR(ops::lerp(s, ops::to_dtype(e, DType::f64), Scalar(0.5)), "lerp: expected dtype f32 for `end`");
  });
}

BOOST_AUTO_TEST_CASE(differentiable_functions_record_and_match_raw_ops) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = ou::random_tensor<float>({5, 3}, 91, 0.1, 0.9);
    x.requires_grad_();
    Tensor y = tritium::sum(tritium::atan2(tritium::erfinv(x), tritium::clamp(x, Scalar(0.2), Scalar(0.7))));
    y.backward();
    BOOST_TEST(x.grad().defined());
    ew::check_elements(tritium::erfinv(x).detach(), ou::values(ops::erfinv(x.detach())), 0, 0, "tritium::erfinv");
  });
}

BOOST_AUTO_TEST_CASE(inplace_forms) {
  tt::for_each_backend([&](const tt::Backend&) {
    // Values, the same storage, the version counter.
    Tensor x = ou::random_tensor<float>({7, 5}, 95, -0.9, 0.9);
    Tensor y = x.clone();
    const uint64_t v0 = y._version();
    Tensor& r = tritium::asin_(y);
    BOOST_TEST(&r == &y);
    BOOST_TEST(y._version() > v0);
    ew::check_elements(y, ou::values(ops::asin(x)), 0, 0, "asin_");
    Tensor z = x.clone();
    tritium::clamp_(z, Scalar(-0.5), Scalar(0.25));
    ew::check_elements(z, ou::values(ops::clamp(x, Scalar(-0.5), Scalar(0.25))), 0, 0, "clamp_");
    Tensor t = x.t().clone().t();  // strided storage: written through its strides
    tritium::addcmul_(t, x, x, Scalar(2));
    ew::check_elements(t, ou::values(ops::addcmul(x, x, x, Scalar(2))), 0, 0, "addcmul_ on a transposed tensor");
    // Autograd through an in-place activation on a non-leaf: d/dw sum(silu(3 w)) = 3 silu'(3 w).
    Tensor w = ou::random_tensor<float>({6}, 96, -2, 2);
    w.requires_grad_();
    Tensor h = tritium::mul(w, ops::full({}, Scalar(3.0f), DType::f32, w.device()));
    tritium::silu_(h);
    tritium::sum(h).backward();
    std::vector<double> ref;
    for (double v : ou::values(w.detach())) {
      double u = 3 * v, s = 1 / (1 + std::exp(-u));
      ref.push_back(3 * s * (1 + u * (1 - s)));
    }
    ew::check_elements(w.grad(), ref, 1e-5, 1e-6, "grad through silu_");
    // PyTorch's refusals: a leaf that requires grad; a float result into an integer tensor.
    EW_CHECK_ERROR(tritium::silu_(w), "silu_: a leaf Variable that requires grad is being used in an in-place operation");
    Tensor i = Tensor::from_vector<int32_t>({-3, 4, 9}, {3});
    EW_CHECK_ERROR(tritium::sin_(i), "sin_: result type f32 can't be cast to the desired output type i32");
    tritium::clamp_(i, Scalar(0), Scalar(5));
    BOOST_TEST((i.to_vector<int32_t>() == std::vector<int32_t>{0, 4, 5}));
  });
}

BOOST_AUTO_TEST_SUITE_END()
