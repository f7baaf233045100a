// The element-wise math ops (ops/unary_math.h): the host side works out PyTorch's dtype rule of
// each op and makes one call of the generic elementwise mechanism; apply_unary_math() below is
// the traced body the kernels run for these ops (the functions of ops/math_approx.h).
#include "ops/unary_math.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include "dsl/control_flow.h"
#include "ops/addcmul_scaled.h"
#include "ops/elementwise_kernels.h"
#include "ops/math_approx.h"

namespace tritium::ops {

namespace tl = tritium::tl;
using detail::Ew;

namespace {

// The ops of this family (values from Ew::math_first on).
enum class M : int {
  abs = static_cast<int>(Ew::math_first), sign, square, floor, ceil, trunc, round, frac,
  sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh,
  log1p, expm1, log2, log10, exp2, reciprocal, rsqrt, erf, erfc, erfinv,
  isnan, isinf, isposinf, isneginf, isfinite, signbit, nan_to_num,
  minimum, maximum, fmin, fmax, atan2, hypot, copysign, logaddexp, fmod, remainder,
  clamp,        // x, bounds y (min) and z (max) or e[0] / e[1]; PARAM bit 0: has min, bit 1: has max,
                // bit 2: the bounds are tensors
  lerp,         // x + w (y - x), w = z or e[0]
  addcmul, addcdiv,  // x + e[0] * y * z (PARAM 1: e[1] x + e[0] y z), x + e[0] * y / z
  // Backward kernels, x = grad (one pass where the recorded formulas launched one kernel per mask
  // and product: issue 29). PARAM bits say which variant (see the helpers below).
  minmax_bw,    // y = self, z = other
  clamp_bw,     // y = self, bounds e[0] / e[1]
  quotient_bw,  // y = self, z = other: -grad * (self / other rounded to an integer)
  copysign_bw,  // y = self, z = result: grad * result / self (0 where self is 0)
  unary_bw,     // y = self or result: grad times the derivative of the op PARAM (an M value)
  count_,
};
constexpr Ew ew(M m) { return static_cast<Ew>(static_cast<int>(m)); }

constexpr double kLog10_2 = 0.30102999566398119521;

tl::tensor is_nan(const tl::tensor& v) { return v != v; }

// Integer fmod / remainder: C's truncated %, guarded against division by zero and INT_MIN % -1
// (both trap on x86), which give 0.
tl::tensor int_fmod(const tl::tensor& a, const tl::tensor& b) {
  tl::tensor safe = (b == 0) || (b == -1);
  return tl::where(safe, 0, a % tl::where(safe, 1, b));
}

tl::tensor clamp_value(DType cdt, const detail::EwOperands& v) {
  const bool has_min = v.param & 1, has_max = v.param & 2, tensors = v.param & 4;
  tl::tensor r = v.x;
  const bool fl = is_float(cdt);
  if (has_min) {
    const tl::tensor& lo = tensors ? v.y : v.e[0];
    tl::tensor take = r < lo;
    if (fl) take = take || is_nan(lo);
    r = tl::where(take, lo, r);
  }
  if (has_max) {
    const tl::tensor& hi = tensors ? v.z : v.e[1];
    tl::tensor take = r > hi;
    if (fl) take = take || is_nan(hi);
    r = tl::where(take, hi, r);
  }
  return r;
}

// minimum / maximum / fmin / fmax's gradient of one operand: grad where it is the operand taken,
// half of it on ties, else 0 (derivatives.yaml's masks). PARAM bit 0: maximum (else minimum),
// bit 1: fmin / fmax (a NaN is not taken unless both are), bit 2: the other operand's gradient.
tl::tensor minmax_grad(const detail::EwOperands& v) {
  const bool larger = v.param & 1, nan_skip = v.param & 2, other = v.param & 4;
  const tl::tensor& a = v.y;
  const tl::tensor& b = v.z;
  tl::tensor tie = a == b;
  tl::tensor w;
  if (!nan_skip) {
    tl::tensor wins = other ? (larger ? b > a : b < a) : (larger ? a > b : a < b);
    w = tl::where(wins, 1.0, tl::where(tie, 0.5, 0.0));
  } else {
    tl::tensor self_wins = (larger ? a > b : a < b) || is_nan(b);
    tl::tensor wins = other ? !(self_wins || tie) : self_wins;
    w = tl::where(tie, 0.5, tl::where(wins, 1.0, 0.0));
  }
  return v.x * w;
}

// clamp's gradient: grad where the input is inside the bounds (NaN counts as inside). PARAM bit 0:
// has a min (e[0]), bit 1: has a max (e[1]).
tl::tensor clamp_grad(const detail::EwOperands& v) {
  tl::tensor zero = v.x * 0.0;
  tl::tensor r = v.x;
  if (v.param & 1) r = tl::where(v.y < v.e[0], zero, r);
  if (v.param & 2) r = tl::where(v.y > v.e[1], zero, r);
  return r;
}

// fmod / remainder's gradient of `other`: -grad * q, q = (a - rest) / b rounded to the integer it
// is up to rounding (in the compute type, f32 for f16 / bf16), then rounded to the gradient's type
// as the recorded formula's to_dtype did. PARAM bit 0: remainder (floor), bit 1: q in bf16,
// bit 2: q in f16.
tl::tensor quotient_grad(const detail::EwOperands& v) {
  namespace m = detail::math;
  tl::tensor rest = (v.param & 1) ? m::remainder(v.y, v.z) : m::fmod(v.y, v.z);
  tl::tensor q = m::round_half_even((v.y - rest) / v.z);
  if (v.param & 2) q = q.to(DType::bf16).to(q.dtype());
  if (v.param & 4) q = q.to(DType::f16).to(q.dtype());
  return -(v.x * q);
}

constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kSqrtPiOverTwo = 0.88622692545275801365;
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn10 = 2.30258509299404568402;

// The backward of a one-input function: derivatives.yaml's formula of op `f` on x = grad and
// y = what it saves (self, or result where marked), in one pass (the recorded formula launched a
// kernel per product and sum: issue 29). Same operations in the recorded formula's order, each
// result rounded to `half` (bf16 / f16 gradients; undefined otherwise) as the recorded ops
// round theirs - and as PyTorch's composite backward formulas do, which the parity fixtures hold
// us to. exp is the exp op's own (math_approx.h's), as in the recorded formula.
tl::tensor unary_grad(M f, const tl::tensor& g, const tl::tensor& y, std::optional<DType> half) {
  namespace m = detail::math;
  auto r = [&](const tl::tensor& t) { return half ? t.to(*half).to(t.dtype()) : t; };
  auto inv_sqrt = [&](const tl::tensor& t) { return r(1.0 / tl::sqrt(t)); };  // ops::rsqrt
  switch (f) {
    case M::tan: return r(g * r(1.0 + r(y * y)));  // result
    case M::asin: return r(g * inv_sqrt(r(1.0 - r(y * y))));
    case M::acos: return r(-r(g * inv_sqrt(r(1.0 - r(y * y)))));
    case M::atan: return r(g / r(r(y * y) + 1.0));
    case M::sinh: return r(g * r(m::cosh(y)));
    case M::cosh: return r(g * r(m::sinh(y)));
    case M::asinh: return r(g * inv_sqrt(r(r(y * y) + 1.0)));
    case M::acosh: return r(g * inv_sqrt(r(r(y * y) - 1.0)));
    case M::atanh: return r(g / r(1.0 - r(y * y)));
    case M::log1p: return r(g / r(y + 1.0));
    case M::expm1: return r(g * r(y + 1.0));  // result
    case M::log2: return r(g / r(y * kLn2));
    case M::log10: return r(g / r(y * kLn10));
    case M::exp2: return r(g * r(y * kLn2));  // result
    case M::reciprocal: return r(-r(g * r(y * y)));  // result
    case M::rsqrt: return r(r(g * r(r(y * y) * y)) * -0.5);  // result
    case M::erf: return r(g * r(r(m::exp(r(-r(y * y)))) * kTwoOverSqrtPi));
    case M::erfc: return r(g * r(r(m::exp(r(-r(y * y)))) * -kTwoOverSqrtPi));
    case M::erfinv: return r(g * r(r(m::exp(r(y * y))) * kSqrtPiOverTwo));  // result
    default: break;
  }
  fail("elementwise: no fused backward for math op {}", static_cast<int>(f));
}

// tan for f32 (and the 16-bit floats, computed in f32). One Cody-Waite reduction x = k pi/2 + r
// (pi/2 in three f32 parts through FMAs: r is accurate for |x| <= kTanFastLimit, k < 2^16) and
// Lambert's continued fraction to depth 5 on |r| <= pi/4 (the [5/4] Pade approximant
// r (945 - 105 r^2 + r^4) / (945 - 420 r^2 + 15 r^4), relative error 1.4e-8 there), so tan is P / Q
// for even k and -Q / P for odd k: one division. Simulated in exact arithmetic against tan of the
// f32 input: 2e-7 relative at most up to 1e5, poles' neighbours included. sin(x) / cos(x) took two
// reductions (each with CUDA's Payne-Hanek slow path compiled in) and a division, which made bf16
// tan instruction-bound (issue 29: 0.44 x PyTorch). A program holding any |x| above the limit
// (or an infinity) takes sin / cos for its whole block: a run-time branch per program, decided
// before either formula runs, so only x lives across the branch (the fast result computed first
// and kept across the block-wide max and the sin / cos branch made bf16 tan spill registers).
constexpr double kTanFastLimit = 65536;
tl::tensor fast_tan(const tl::tensor& x) {
  if (x.dtype() == DType::f64) return tl::sin(x) / tl::cos(x);
  tl::tensor far = tl::max(tl::where(tl::abs(x) > kTanFastLimit, 1, 0));
  tl::tensor out = x;
  tl::if_(
      far > 0, [&] { out = tl::sin(x) / tl::cos(x); },
      [&] {
        // k = x 2/pi rounded by the 1.5 * 2^23 shifter (exact below 2^22): t's low bits hold k, so
        // its parity is a bit test; floor took a conversion-pipe FRND (a quarter of the FP32 rate)
        // for k and another for its parity. 2 / pi in f32; any nearby integer works.
        constexpr double kShifter = 12582912.0;
        tl::tensor t = tl::fma(x, 0.6366197466850281, kShifter);
        tl::tensor k = t - kShifter;
        tl::tensor r = tl::fma(-k, 1.5707963705062866, x);  // pi/2 = the three f32 parts
        r = tl::fma(-k, -4.371138828673793e-08, r);
        r = tl::fma(-k, -1.7151245100058819e-15, r);
        tl::tensor z = r * r;
        tl::tensor p = ((z - 105.0) * z + 945.0) * r;
        tl::tensor q = (z * 15.0 - 420.0) * z + 945.0;
        tl::tensor odd = (detail::math::bits(t) & 1) != 0;  // NaN: p and q are NaN either way
        // tl::fast_dividef (a reciprocal and a multiply): Q is in [400, 945]; a P small enough to
        // flush (|r| < 2^-126 / 945) would put |tan| past the f32 range, and the flushed
        // reciprocal gives that same infinity.
        out = tl::where(x == 0.0, x, tl::fast_dividef(tl::where(odd, -q, p), tl::where(odd, p, q)));  // keeps -0.0
      });
  return out;
}

}  // namespace

namespace detail {

const int kUnaryMathOps = static_cast<int>(M::count_) - static_cast<int>(Ew::math_first);

tl::tensor apply_unary_math(Ew op, DType cdt, const EwOperands& v) {
  namespace m = detail::math;
  const tl::tensor& x = v.x;
  const tl::tensor& y = v.y;
  const bool fl = is_float(cdt);
  switch (static_cast<M>(static_cast<int>(op))) {
    case M::abs: return tl::abs(x);
    case M::sign: {
      tl::tensor one = tl::zeros_like(x) + 1;
      return tl::where(x > 0, one, tl::where(x < 0, -one, tl::zeros_like(x)));  // NaN gives 0 (as PyTorch)
    }
    case M::square: return x * x;
    case M::floor: return tl::floor(x);
    case M::ceil: return tl::ceil(x);
    case M::trunc: return m::trunc(x);
    case M::round: {
      if (v.param == 0) return m::round_half_even(x);
      // PyTorch's decimals: scale by 10^|d| (multiply for d > 0, divide for d < 0), round, undo.
      const double p = std::pow(10.0, std::abs(v.param));
      if (v.param > 0) return m::round_half_even(x * p) / p;
      return m::round_half_even(x / p) * p;
    }
    case M::frac: return x - m::trunc(x);
    case M::sin: return tl::sin(x);
    case M::cos: return tl::cos(x);
    case M::tan: return fast_tan(x);
    case M::asin: return m::asin(x);
    case M::acos: return m::acos(x);
    case M::atan: return m::atan(x);
    case M::sinh: return m::sinh(x);
    case M::cosh: return m::cosh(x);
    case M::asinh: return m::asinh(x);
    case M::acosh: return m::acosh(x);
    case M::atanh: return m::atanh(x);
    case M::log1p: return m::log1p(x);
    case M::expm1: return m::expm1(x);
    case M::log2: return tl::log2(x);
    case M::log10: return tl::log2(x) * kLog10_2;
    case M::exp2: return tl::exp2(x);
    case M::reciprocal: return 1.0 / x;
    case M::rsqrt: return 1.0 / tl::sqrt(x);
    case M::erf: return tl::erf(x);
    case M::erfc: return m::erfc(x);
    case M::erfinv: return m::erfinv(x, v.param == 1);  // PARAM 1: bf16 values (erfinv() below)
    case M::isnan: return is_nan(x);
    case M::isinf: return tl::abs(x) == m::kInf;
    case M::isposinf: return x == m::kInf;
    case M::isneginf: return x == -m::kInf;
    case M::isfinite: return tl::abs(x) < m::kInf;
    case M::signbit: return fl ? m::signbit(x) : x < 0;
    case M::nan_to_num: {
      tl::tensor r = tl::where(x == m::kInf, v.e[1], tl::where(x == -m::kInf, v.e[2], x));
      return tl::where(is_nan(x), v.e[0], r);
    }
    case M::minimum: {  // std::min's order keeps the first operand on ties (minimum(0, -0) = 0)
      tl::tensor r = tl::where(y < x, y, x);
      return fl ? tl::where(is_nan(x), x, tl::where(is_nan(y), y, r)) : r;
    }
    case M::maximum: {
      tl::tensor r = tl::where(x < y, y, x);
      return fl ? tl::where(is_nan(x), x, tl::where(is_nan(y), y, r)) : r;
    }
    case M::fmin: {
      tl::tensor r = tl::where(y < x, y, x);
      return fl ? tl::where(is_nan(x), y, tl::where(is_nan(y), x, r)) : r;
    }
    case M::fmax: {
      tl::tensor r = tl::where(x < y, y, x);
      return fl ? tl::where(is_nan(x), y, tl::where(is_nan(y), x, r)) : r;
    }
    case M::atan2: return m::atan2(x, y);
    case M::hypot: return m::hypot(x, y);
    case M::copysign: return m::copysign(x, y);
    case M::logaddexp: return m::logaddexp(x, y);
    case M::fmod: return fl ? m::fmod(x, y) : int_fmod(x, y);
    case M::remainder: {
      if (fl) return m::remainder(x, y);
      tl::tensor r = int_fmod(x, y);
      return tl::where((r != 0) && ((r < 0) != (y < 0)), r + y, r);
    }
    case M::clamp: return clamp_value(cdt, v);
    case M::lerp: {
      // PyTorch's two-sided lerp: exact at both ends (w = 0 gives start, w = 1 gives end).
      const tl::tensor& w = v.param == 1 ? v.e[0] : v.z;  // PARAM 1: a scalar weight
      tl::tensor d = y - x;
      return tl::where(tl::abs(w) < 0.5, x + w * d, y - d * (1.0 - w));
    }
    case M::addcmul: return (v.param & 1 ? v.e[1] * x : x) + v.e[0] * y * v.z;  // PARAM 1: e[1] scales self
    case M::addcdiv: return x + v.e[0] * (y / v.z);
    case M::minmax_bw: return minmax_grad(v);
    case M::clamp_bw: return clamp_grad(v);
    case M::quotient_bw: return quotient_grad(v);
    case M::copysign_bw: return x * tl::where(y == 0.0, 0.0, v.z / y);
    case M::unary_bw: {
      const int half = v.param >> 16;  // 1: bf16, 2: f16
      return unary_grad(static_cast<M>(v.param & 0xffff), x, y,
                        half == 1 ? std::optional(DType::bf16) : half == 2 ? std::optional(DType::f16) : std::nullopt);
    }
    case M::count_: break;
  }
  fail("elementwise: unknown math op {}", static_cast<int>(op));
}

}  // namespace detail

namespace {

using detail::math_type;

DType float_or_f32(DType d) { return is_float(d) ? d : DType::f32; }

Tensor run(const char* name, M op, DType out, DType compute, const std::vector<const Tensor*>& in, int param = 0,
           std::array<std::optional<Scalar>, detail::kExtraScalars> extra = {}) {
  return detail::elementwise(detail::ew_call(name, ew(op), compute, param, std::move(extra)), out, in);
}

// A float function: integers and bool compute in f32.
Tensor float_fn(const char* name, M op, const Tensor& x) {
  detail::check_tensors(name, {&x});
  DType r = float_or_f32(x.dtype());
  return run(name, op, r, math_type(r), {&x});
}

[[noreturn]] void not_for(const char* name, DType d) {
  fail("{}: not implemented for {} tensors", name, d == DType::i1 ? "bool" : dtype_name(d));
}

// floor / ceil / trunc / round: integers are already integral (a copy, as PyTorch).
Tensor rounding(const char* name, M op, const Tensor& x, int param = 0) {
  detail::check_tensors(name, {&x});
  if (x.dtype() == DType::i1) not_for(name, x.dtype());
  if (!is_float(x.dtype())) return clone(x);
  return run(name, op, x.dtype(), math_type(x.dtype()), {&x}, param);
}

// A predicate of floats; integers and bool give `integer_value` everywhere.
Tensor predicate(const char* name, M op, const Tensor& x, bool integer_value) {
  detail::check_tensors(name, {&x});
  if (!is_float(x.dtype())) return full(x.shape(), Scalar(integer_value), DType::i1, x.device());
  return run(name, op, DType::i1, math_type(x.dtype()), {&x});
}

Tensor binary(const char* name, M op, const Tensor& a, const Tensor& b, bool to_float, bool floats_only = false) {
  detail::check_tensors(name, {&a, &b});
  DType r = detail::promote_operands(name, {&a, &b});
  if (floats_only && !is_float(r)) not_for(name, r);
  if (to_float) r = float_or_f32(r);
  DType c = r == DType::i1 ? DType::i32 : math_type(r);
  return run(name, op, r, c, {&a, &b});
}

Tensor binary_scalar(const char* name, M op, const Tensor& a, Scalar b) {
  detail::check_tensors(name, {&a});
  DType r = detail::promote_operands(name, {&a}, {b});
  if (r == DType::i1) not_for(name, r);
  // The number is operand y (a kernel argument, no tensor made for it).
  return detail::elementwise(detail::ew_call(name, ew(op), math_type(r), 0, b), r, {&a});
}

}  // namespace

Tensor abs(const Tensor& x) {
  detail::check_tensors("abs", {&x});
  if (x.dtype() == DType::i1) not_for("abs", x.dtype());
  return run("abs", M::abs, x.dtype(), math_type(x.dtype()), {&x});
}
Tensor sign(const Tensor& x) {
  detail::check_tensors("sign", {&x});
  if (x.dtype() == DType::i1) return clone(x);
  return run("sign", M::sign, x.dtype(), math_type(x.dtype()), {&x});
}
Tensor sgn(const Tensor& x) { return sign(x); }
Tensor square(const Tensor& x) {
  detail::check_tensors("square", {&x});
  DType r = x.dtype() == DType::i1 ? DType::i64 : x.dtype();
  return run("square", M::square, r, math_type(r), {&x});
}
Tensor floor(const Tensor& x) { return rounding("floor", M::floor, x); }
Tensor ceil(const Tensor& x) { return rounding("ceil", M::ceil, x); }
Tensor trunc(const Tensor& x) { return rounding("trunc", M::trunc, x); }
Tensor round(const Tensor& x, int decimals) {
  if (decimals != 0 && !is_float(x.dtype()) && x.defined())
    fail("round: decimals is only supported for floating-point tensors, got {}", dtype_name(x.dtype()));
  if (std::abs(decimals) > 300) fail("round: decimals {} is out of range (at most 300 either way)", decimals);
  return rounding("round", M::round, x, decimals);
}
Tensor frac(const Tensor& x) {
  detail::check_tensors("frac", {&x});
  if (!is_float(x.dtype())) not_for("frac", x.dtype());
  return run("frac", M::frac, x.dtype(), math_type(x.dtype()), {&x});
}

Tensor sin(const Tensor& x) { return float_fn("sin", M::sin, x); }
Tensor cos(const Tensor& x) { return float_fn("cos", M::cos, x); }
Tensor tan(const Tensor& x) { return float_fn("tan", M::tan, x); }
Tensor asin(const Tensor& x) { return float_fn("asin", M::asin, x); }
Tensor acos(const Tensor& x) { return float_fn("acos", M::acos, x); }
Tensor atan(const Tensor& x) { return float_fn("atan", M::atan, x); }
Tensor sinh(const Tensor& x) { return float_fn("sinh", M::sinh, x); }
Tensor cosh(const Tensor& x) { return float_fn("cosh", M::cosh, x); }
Tensor asinh(const Tensor& x) { return float_fn("asinh", M::asinh, x); }
Tensor acosh(const Tensor& x) { return float_fn("acosh", M::acosh, x); }
Tensor atanh(const Tensor& x) { return float_fn("atanh", M::atanh, x); }
Tensor log1p(const Tensor& x) { return float_fn("log1p", M::log1p, x); }
Tensor expm1(const Tensor& x) { return float_fn("expm1", M::expm1, x); }
Tensor log2(const Tensor& x) { return float_fn("log2", M::log2, x); }
Tensor log10(const Tensor& x) { return float_fn("log10", M::log10, x); }
Tensor exp2(const Tensor& x) { return float_fn("exp2", M::exp2, x); }
Tensor reciprocal(const Tensor& x) { return float_fn("reciprocal", M::reciprocal, x); }
Tensor rsqrt(const Tensor& x) { return float_fn("rsqrt", M::rsqrt, x); }
Tensor erf(const Tensor& x) { return float_fn("erf", M::erf, x); }
Tensor erfc(const Tensor& x) { return float_fn("erfc", M::erfc, x); }
Tensor erfinv(const Tensor& x) {
  // bf16 tensors take a shorter approximation (m::erfinv's bf16_values), told by PARAM 1.
  detail::check_tensors("erfinv", {&x});
  const DType r = float_or_f32(x.dtype());
  return run("erfinv", M::erfinv, r, math_type(r), {&x}, r == DType::bf16 ? 1 : 0);
}

Tensor isnan(const Tensor& x) { return predicate("isnan", M::isnan, x, false); }
Tensor isinf(const Tensor& x) { return predicate("isinf", M::isinf, x, false); }
Tensor isposinf(const Tensor& x) { return predicate("isposinf", M::isposinf, x, false); }
Tensor isneginf(const Tensor& x) { return predicate("isneginf", M::isneginf, x, false); }
Tensor isfinite(const Tensor& x) { return predicate("isfinite", M::isfinite, x, true); }
Tensor signbit(const Tensor& x) {
  detail::check_tensors("signbit", {&x});
  if (x.dtype() == DType::i1 || is_unsigned_int(x.dtype())) return full(x.shape(), Scalar(false), DType::i1, x.device());
  return run("signbit", M::signbit, DType::i1, math_type(x.dtype()), {&x});
}

Tensor nan_to_num(const Tensor& x, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  detail::check_tensors("nan_to_num", {&x});
  if (!is_float(x.dtype())) return clone(x);
  double big = 0;  // the dtype's largest finite value
  switch (x.dtype()) {
    case DType::f64: big = std::numeric_limits<double>::max(); break;
    case DType::f32: big = std::numeric_limits<float>::max(); break;
    case DType::f16: big = 65504.0; break;
    case DType::bf16: big = 3.3895313892515355e38; break;
    default: not_for("nan_to_num", x.dtype());
  }
  return run("nan_to_num", M::nan_to_num, x.dtype(), math_type(x.dtype()), {&x}, 0,
             {Scalar(nan.value_or(0.0)), Scalar(posinf.value_or(big)), Scalar(neginf.value_or(-big))});
}

Tensor minimum(const Tensor& a, const Tensor& b) { return binary("minimum", M::minimum, a, b, false); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary("maximum", M::maximum, a, b, false); }
Tensor fmin(const Tensor& a, const Tensor& b) { return binary("fmin", M::fmin, a, b, false); }
Tensor fmax(const Tensor& a, const Tensor& b) { return binary("fmax", M::fmax, a, b, false); }
Tensor atan2(const Tensor& a, const Tensor& b) { return binary("atan2", M::atan2, a, b, true); }
Tensor hypot(const Tensor& a, const Tensor& b) { return binary("hypot", M::hypot, a, b, false, true); }
Tensor copysign(const Tensor& a, const Tensor& b) { return binary("copysign", M::copysign, a, b, true); }
Tensor logaddexp(const Tensor& a, const Tensor& b) { return binary("logaddexp", M::logaddexp, a, b, false, true); }
Tensor fmod(const Tensor& a, const Tensor& b) {
  if (a.defined() && b.defined() && detail::promote_operands("fmod", {&a, &b}) == DType::i1) not_for("fmod", DType::i1);
  return binary("fmod", M::fmod, a, b, false);
}
Tensor remainder(const Tensor& a, const Tensor& b) {
  if (a.defined() && b.defined() && detail::promote_operands("remainder", {&a, &b}) == DType::i1)
    not_for("remainder", DType::i1);
  return binary("remainder", M::remainder, a, b, false);
}
Tensor fmod(const Tensor& a, Scalar b) { return binary_scalar("fmod", M::fmod, a, b); }
Tensor remainder(const Tensor& a, Scalar b) { return binary_scalar("remainder", M::remainder, a, b); }

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  detail::check_tensors("clamp", {&x});
  if (!min && !max) fail("clamp: At least one of 'min' or 'max' must not be None");
  std::vector<Scalar> bounds;
  if (min) bounds.push_back(*min);
  if (max) bounds.push_back(*max);
  DType r = detail::promote_operands("clamp", {&x}, bounds);
  DType c = r == DType::i1 ? DType::i32 : math_type(r);  // bool (a bool tensor and bool bounds): compare as 0 / 1
  return run("clamp", M::clamp, r, c, {&x}, (min ? 1 : 0) | (max ? 2 : 0), {min, max, std::nullopt});
}

Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max) {
  if (!x.defined()) fail("clamp: the input is an undefined tensor");
  if (!min.defined() && !max.defined()) fail("clamp: At least one of 'min' or 'max' must not be None");
  std::vector<const Tensor*> all{&x};
  for (const Tensor* b : {&min, &max})
    if (b->defined()) all.push_back(b);
  detail::check_tensors("clamp", all);
  DType r = detail::promote_operands("clamp", all);
  DType c = r == DType::i1 ? DType::i32 : math_type(r);
  const int param = (min.defined() ? 1 : 0) | (max.defined() ? 2 : 0) | 4;
  // The bounds sit in slots y and z; an absent one is x again (never read).
  return run("clamp", M::clamp, r, c, {&x, min.defined() ? &min : &x, max.defined() ? &max : &x}, param);
}
Tensor clamp_min(const Tensor& x, Scalar min) { return clamp(x, min, std::nullopt); }
Tensor clamp_max(const Tensor& x, Scalar max) { return clamp(x, std::nullopt, max); }
Tensor clamp_min(const Tensor& x, const Tensor& min) { return clamp(x, min, Tensor()); }
Tensor clamp_max(const Tensor& x, const Tensor& max) { return clamp(x, Tensor(), max); }

namespace {
void check_lerp(const Tensor& start, const Tensor& end, const Tensor* weight) {
  if (!is_float(start.dtype())) not_for("lerp", start.dtype());
  for (const Tensor* t : {&end, weight})
    if (t && t->dtype() != start.dtype())
      fail("lerp: expected dtype {} for `{}` but got dtype {}", dtype_name(start.dtype()), t == &end ? "end" : "weight",
           dtype_name(t->dtype()));
}
}  // namespace

Tensor lerp(const Tensor& start, const Tensor& end, Scalar weight) {
  detail::check_tensors("lerp", {&start, &end});
  check_lerp(start, end, nullptr);
  DType r = start.dtype();
  return run("lerp", M::lerp, r, math_type(r), {&start, &end}, 1, {weight, std::nullopt, std::nullopt});
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  detail::check_tensors("lerp", {&start, &end, &weight});
  check_lerp(start, end, &weight);
  DType r = start.dtype();
  return run("lerp", M::lerp, r, math_type(r), {&start, &end, &weight});
}

Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value) {
  detail::check_tensors("addcmul", {&self, &t1, &t2});
  DType r = detail::promote_operands("addcmul", {&self, &t1, &t2}, {value});
  DType c = r == DType::i1 ? DType::i32 : math_type(r);
  return run("addcmul", M::addcmul, r, c, {&self, &t1, &t2}, 0, {value, std::nullopt, std::nullopt});
}
Tensor addcmul_scaled(const Tensor& self, Scalar self_scale, const Tensor& t1, const Tensor& t2, Scalar value) {
  detail::check_tensors("addcmul", {&self, &t1, &t2});
  DType r = detail::promote_operands("addcmul", {&self, &t1, &t2}, {value, self_scale});
  DType c = r == DType::i1 ? DType::i32 : math_type(r);
  return run("addcmul", M::addcmul, r, c, {&self, &t1, &t2}, 1, {value, self_scale, std::nullopt});
}
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value) {
  detail::check_tensors("addcdiv", {&self, &t1, &t2});
  if (!is_float(t1.dtype()) && !is_float(t2.dtype()))
    fail("addcdiv: Integer division with addcdiv is no longer supported, and in a future release addcdiv will "
         "perform a true division of tensor1 and tensor2 (tensor1 {}, tensor2 {}); compute (input + value * "
         "trunc(tensor1 / tensor2)) for integer inputs",
         dtype_name(t1.dtype()), dtype_name(t2.dtype()));
  DType r = detail::promote_operands("addcdiv", {&self, &t1, &t2}, {value});
  return run("addcdiv", M::addcdiv, r, math_type(r), {&self, &t1, &t2}, 0, {value, std::nullopt, std::nullopt});
}

// ---- backward kernels ----------------------------------------------------------------------
namespace {

void check_grad(const char* name, const Tensor& g, const std::vector<const Tensor*>& saved) {
  std::vector<const Tensor*> all{&g};
  all.insert(all.end(), saved.begin(), saved.end());
  detail::check_tensors(name, all);
  if (!is_float(g.dtype())) fail("{}: the gradient must be a floating-point tensor, got {}", name, dtype_name(g.dtype()));
  Shape s = g.shape();
  for (const Tensor* t : saved) s = detail::broadcast_shapes(name, s, t->shape());
  if (s != g.shape())
    fail("{}: grad shape {} is not the broadcast shape {} of the operands", name, detail::shape_str(g.shape()),
         detail::shape_str(s));
}

}  // namespace

Tensor minmax_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool larger, bool nan_skipping,
                       bool of_other) {
  check_grad("minmax_backward", grad, {&self, &other});
  // Compares and the weight in the operands' own promoted dtype (as the recorded formula's lt / eq
  // and mask): exact, so the result is the formula's bit for bit.
  DType c = detail::promote_operands("minmax_backward", {&grad, &self, &other});
  const int param = (larger ? 1 : 0) | (nan_skipping ? 2 : 0) | (of_other ? 4 : 0);
  return run("minmax_backward", M::minmax_bw, grad.dtype(), c, {&grad, &self, &other}, param);
}

Tensor clamp_backward(const Tensor& grad, const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max) {
  check_grad("clamp_backward", grad, {&self});
  if (!min && !max) fail("clamp_backward: At least one of 'min' or 'max' must not be None");
  std::vector<Scalar> bounds;
  if (min) bounds.push_back(*min);
  if (max) bounds.push_back(*max);
  // The bounds in self's promoted dtype (a bf16 self compares with bf16 bounds, as the formula).
  DType c = detail::promote_types("clamp_backward", grad.dtype(), detail::promote_operands("clamp_backward", {&self}, bounds));
  return run("clamp_backward", M::clamp_bw, grad.dtype(), c, {&grad, &self}, (min ? 1 : 0) | (max ? 2 : 0),
             {min, max, std::nullopt});
}

Tensor quotient_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool floor) {
  check_grad("quotient_backward", grad, {&self, &other});
  const DType g = grad.dtype();
  const int param = (floor ? 1 : 0) | (g == DType::bf16 ? 2 : 0) | (g == DType::f16 ? 4 : 0);
  return run("quotient_backward", M::quotient_bw, g, g == DType::f64 ? DType::f64 : DType::f32, {&grad, &self, &other},
             param);
}

Tensor copysign_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  check_grad("copysign_backward", grad, {&self, &result});
  DType c = detail::promote_operands("copysign_backward", {&grad, &self, &result});
  return run("copysign_backward", M::copysign_bw, grad.dtype(), c, {&grad, &self, &result});
}

Tensor unary_math_backward(const char* op, const Tensor& grad, const Tensor& saved) {
  static const std::pair<const char*, M> kOps[] = {
      {"tan", M::tan},     {"asin", M::asin},   {"acos", M::acos},     {"atan", M::atan},     {"sinh", M::sinh},
      {"cosh", M::cosh},   {"asinh", M::asinh}, {"acosh", M::acosh},   {"atanh", M::atanh},   {"log1p", M::log1p},
      {"expm1", M::expm1}, {"log2", M::log2},   {"log10", M::log10},   {"exp2", M::exp2},     {"reciprocal", M::reciprocal},
      {"rsqrt", M::rsqrt}, {"erf", M::erf},     {"erfc", M::erfc},     {"erfinv", M::erfinv}};
  const M* f = nullptr;
  for (const auto& [name, m] : kOps)
    if (std::string_view(name) == op) f = &m;
  if (!f) fail("unary_math_backward: no fused backward for '{}'", op);
  check_grad("unary_math_backward", grad, {&saved});
  if (saved.shape() != grad.shape())
    fail("unary_math_backward: saved shape {} differs from grad shape {}", detail::shape_str(saved.shape()),
         detail::shape_str(grad.shape()));
  // In f32 (f64 for f64); a bf16 / f16 formula rounds after each op, as the recorded one.
  DType r = detail::promote_operands("unary_math_backward", {&grad, &saved});
  if (!is_float(r)) r = DType::f32;
  const int half = r == DType::bf16 ? 1 : r == DType::f16 ? 2 : 0;
  return run("unary_math_backward", M::unary_bw, grad.dtype(), math_type(r), {&grad, &saved},
             static_cast<int>(*f) | (half << 16));
}

}  // namespace tritium::ops
