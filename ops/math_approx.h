// Private to ops/: the math functions the DSL has no primitive for (atan, atan2, asin, acos,
// the hyperbolic functions, log1p, expm1, erfc, erfinv, trunc, round, fmod, copysign, ...),
// traced from the primitives it has (exp, log, sqrt, sin, cos, tanh, erf, floor, ceil, bit casts)
// and from polynomials fitted by scripts/fit_math_approx.py (ops/math_approx_tables.h). Every
// function takes and returns an f32 or f64 block (f16/bf16 compute in f32) and keeps IEEE
// special values as the C library does (NaN in, NaN out; signed zeros; infinities). Accuracy:
// a few ulp in f32 and f64 (tests/test_ops_unary_math.cpp checks each against float64 / libm).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "dsl/control_flow.h"
#include "dsl/ops.h"
#include "ops/math_approx_tables.h"

namespace tritium::ops::detail::math {

namespace tl = tritium::tl;

constexpr double kPi = 3.14159265358979323846;
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline bool wide(const tl::tensor& x) { return x.dtype() == DType::f64; }

// p[0] + v (p[1] + v (...)): coefficients lowest degree first.
template <size_t N>
tl::tensor horner(const tl::tensor& v, const double (&p)[N]) {
  tl::tensor r = tl::zeros_like(v) + p[N - 1];
  for (size_t i = N - 1; i-- > 0;) r = r * v + p[i];
  return r;
}

// The float's bits as a signed integer of its width (the sign bit is the integer's sign).
inline tl::tensor bits(const tl::tensor& x) { return x.to(wide(x) ? DType::i64 : DType::i32, /*bitcast=*/true); }
inline tl::tensor from_bits(const tl::tensor& b, DType d) { return b.to(d, /*bitcast=*/true); }

// The sign bit (true for -0.0 and negative NaNs too).
inline tl::tensor signbit(const tl::tensor& x) { return bits(x) < 0; }

// |a| with b's sign bit.
inline tl::tensor copysign(const tl::tensor& a, const tl::tensor& b) {
  if (wide(a)) {
    tl::tensor m = bits(a) & std::numeric_limits<int64_t>::max();
    return from_bits(m | (bits(b) & std::numeric_limits<int64_t>::min()), a.dtype());
  }
  tl::tensor m = bits(a) & std::numeric_limits<int32_t>::max();
  return from_bits(m | (bits(b) & std::numeric_limits<int32_t>::min()), a.dtype());
}

inline tl::tensor isnan(const tl::tensor& x) { return x != x; }

inline tl::tensor trunc(const tl::tensor& x) { return tl::where(x < 0, tl::ceil(x), tl::floor(x)); }


// 2^k for whole k in [-126, 127] (an f32 block) from an i32 block, built from the exponent bits.
inline tl::tensor pow2_i32(const tl::tensor& k) { return from_bits((k + 127) << 23, DType::f32); }

// exp(x) 2^shift to a few ulp on both backends (shift 0 or -1: exp(x) / 2 without overflowing
// first, for cosh and sinh). f32: the CUDA backend's tl::exp is Triton's ex2.approx of
// x * log2(e), whose relative error grows like |x| 2^-24 (the product's rounding); here x is
// reduced first (Cody-Waite: r = x - n ln 2, |r| <= ln(2) / 2, exact for the n that matter), so
// tl::exp sees small arguments only (accurate on both backends, vectorised on the CPU), and the
// result is scaled by 2^n in two factors. n is rounded with the 1.5 * 2^23 shifter (an fma and a
// sub; its bits give n as an integer without a conversion) where floor / trunc / float-to-int each
// took a conversion-pipe instruction (FRND, F2I: a quarter of the FP32 rate on sm_90) - five per
// exp, which made sinh, erfc and the activations built on exp issue-bound on the GPU (issue 29).
// x is clamped to [-104, 90] first (NaN passes: the compares are false), past which the result
// underflows to 0 or overflows to inf anyway, so |n| < 2^22 and both factors stay normal.
// exp(r) is tl::exp2(r log2 e): |r| <= ln(2) / 2 never gives a subnormal, so the GPU's
// ex2.approx.ftz serves (the same MUFU.EX2 as tl::exp's ex2.approx.f32, without the latter's
// three instructions of scaling for subnormal results).
// exp_in_range: the same for an f32 x already in [-104, 90] (or NaN), without the clamp; with
// `one_factor`, 2^(n + shift) is one factor, for callers whose n + shift stays in [-126, 127].
inline tl::tensor exp_in_range(const tl::tensor& x, int shift = 0, bool one_factor = false) {
  constexpr double kLog2e = 1.44269504088896340736;
  constexpr double kLn2Hi = 0.693145751953125;          // ln 2 with 16 significant bits: n ln2_hi is exact
  constexpr double kLn2Lo = 1.4286068203094172321e-06;  // ln 2 - kLn2Hi
  constexpr double kShifter = 12582912.0;               // 1.5 * 2^23: t's unit is 1, its bits 0x4b400000 + n
  tl::tensor t = tl::fma(x, kLog2e, kShifter);
  tl::tensor n = t - kShifter;
  tl::tensor r = tl::fma(-n, kLn2Hi, x);
  r = tl::fma(-n, kLn2Lo, r);
  tl::tensor k = bits(t) - (0x4b400000 - shift);
  if (one_factor) return tl::exp2(r * kLog2e) * pow2_i32(k);
  tl::tensor k1 = k >> 1;
  return tl::exp2(r * kLog2e) * pow2_i32(k1) * pow2_i32(k - k1);
}
inline tl::tensor exp(const tl::tensor& x, int shift = 0) {
  if (wide(x)) return shift == 0 ? tl::exp(x) : tl::exp(x) * std::ldexp(1.0, shift);
  return exp_in_range(tl::where(x > 90.0, 90.0, tl::where(x < -104.0, -104.0, x)), shift);
}
inline tl::tensor isinf(const tl::tensor& x) { return tl::abs(x) == kInf; }


// Round half to even: for |x| below 2^23 (2^52 in f64), |x| + 2^23 has no fraction bits left, so
// the addition itself rounds |x| to an integer, to nearest even as IEEE arithmetic does, and
// subtracting 2^23 again is exact. Larger values are integers already; infinities pass through,
// NaN fails the compare and stays NaN; the sign of x is put back (round(-0.3) is -0.0). Four
// operations where floor-based tie detection took a dozen (the CPU's round ran at 0.36 x PyTorch).
inline tl::tensor round_half_even(const tl::tensor& x) {
  const double big = wide(x) ? 4503599627370496.0 : 8388608.0;  // 2^52, 2^23
  tl::tensor a = tl::abs(x);
  tl::tensor r = tl::where(a < big, (a + big) - big, a);
  return copysign(r, x);
}

// atan on [0, 1] (NaN passes): above tan(pi/8) the argument becomes (a - 1) / (a + 1) and pi/4
// is added back; then a + a t Q(t), t = a^2, with Q fitted on |a| <= tan(pi/8).
inline tl::tensor atan_unit(const tl::tensor& a) {
  tl::tensor mid = a > 0.41421356237309504880;
  tl::tensor r = tl::where(mid, (a - 1.0) / (a + 1.0), a);
  tl::tensor t = r * r;
  tl::tensor q = wide(a) ? horner(t, kAtanF64) : horner(t, kAtanF32);
  tl::tensor p = r + r * t * q;
  return tl::where(mid, kPi / 4 + p, p);
}

inline tl::tensor atan2(const tl::tensor& y, const tl::tensor& x) {
  tl::tensor ax = tl::abs(x), ay = tl::abs(y);
  tl::tensor y_larger = ay > ax;
  tl::tensor mx = tl::where(y_larger, ay, ax), mn = tl::where(y_larger, ax, ay);
  tl::tensor a = mn / mx;
  a = tl::where(mx == 0.0, 0.0, a);                     // atan2(+-0, +-0)
  a = tl::where((ax == kInf) && (ay == kInf), 1.0, a);  // atan2(+-inf, +-inf): odd multiples of pi/4
  tl::tensor r = atan_unit(a);
  r = tl::where(y_larger, kPi / 2 - r, r);
  r = tl::where(signbit(x), kPi - r, r);
  r = copysign(r, y);
  return tl::where(isnan(x) || isnan(y), x + y, r);
}

// atan. f32 (CUDA's atanf scheme): r = |x|, or 1 / |x| by one approximate reciprocal above 1
// (rcp.approx: 1 ulp, and atan's slope is at most 1), then r + r t P(t), t = r^2, one degree-8
// polynomial on all of [0, 1] (kAtanUnitF32): no second reduction by (a - 1) / (a + 1), so no
// division at all where two div.full were (issue 29: bf16 atan 0.875 x PyTorch). Past 2^126 the
// reciprocal flushes to 0 and atan is pi/2, as it is in f32. f64: two divisions, as before.
inline tl::tensor atan(const tl::tensor& x) {
  tl::tensor a = tl::abs(x);
  tl::tensor big = a > 1.0;
  if (!wide(x)) {
    tl::tensor r = tl::where(big, tl::fast_dividef(1.0, a), a);
    tl::tensor t = r * r;
    tl::tensor p = tl::fma(r * t, horner(t, kAtanUnitF32), r);
    return copysign(tl::where(big, kPi / 2 - p, p), x);  // NaN: |x| is NaN, p too
  }
  tl::tensor r = atan_unit(tl::where(big, 1.0 / a, a));
  return copysign(tl::where(big, kPi / 2 - r, r), x);
}

// asin and acos in f32 (CUDA's asinf / acosf scheme): with a = |x|, below 0.5625 asin(a) =
// a + a^3 P(a^2) directly (kAsinF32, degree 5); above, asin(a) = pi/2 - 2 asin(s) and
// acos(a) = 2 asin(s) with s = sqrt((1 - a) / 2) <= 0.47, the same polynomial. (1 - a) / 2 is
// exact (Sterbenz); s is h tl::rsqrt(h) (one MUFU.RSQ) plus one Newton step (h = 0 at a = 1 is
// selected: rsqrt(0) is inf). acos(-a) = pi - acos(a). One MUFU.RSQ and about 20 FP32 ops, where
// atan2 of two square roots took two sqrt, two div.full and a degree-4 polynomial behind a second
// reduction (issue 29: bf16 acos 0.65 x, asin 0.69 x PyTorch). |x| > 1 and NaN: h < 0 or NaN
// gives NaN through rsqrt (selected only where a > 0.5625) or through a itself.
constexpr double kPi2A = 0.9045259356498718, kPi2B = 1.7365962266921997;  // f32s; kPi2A kPi2B = pi/2 + 1e-13
inline tl::tensor asin_reduced(const tl::tensor& a, tl::tensor& far) {
  far = a > 0.5625;
  tl::tensor h = tl::fma(a, -0.5, 0.5);
  tl::tensor y = tl::rsqrt(h);
  tl::tensor s = h * y;
  s = tl::fma(s, tl::fma(-s, 0.5 * y, 0.5), s);  // s + s (1/2 - s y / 2): one Newton step for sqrt(h)
  s = tl::where(a == 1.0, 0.0, s);
  tl::tensor r = tl::where(far, s, a);
  tl::tensor t = r * r;
  return tl::fma(r * t, horner(t, kAsinF32), r);  // asin(r)
}
inline tl::tensor asin(const tl::tensor& x) {
  if (!wide(x)) {
    tl::tensor far;
    tl::tensor p = asin_reduced(tl::abs(x), far);
    // pi/2 - 2p with pi/2 as the exact product of two floats (within 1e-13): one FMA, no rounding of pi/2.
    return copysign(tl::where(far, tl::fma(kPi2A, kPi2B, -2.0 * p), p), x);
  }
  return atan2(x, tl::sqrt((1.0 - x) * (1.0 + x)));
}
inline tl::tensor acos(const tl::tensor& x) {
  if (!wide(x)) {
    tl::tensor far;
    tl::tensor p = asin_reduced(tl::abs(x), far);
    tl::tensor r = tl::where(far, 2.0 * p, tl::fma(kPi2A, kPi2B, -p));  // acos(|x|)
    return tl::where(signbit(x), kPi - r, r);
  }
  return 2.0 * atan2(tl::sqrt(1.0 - x), tl::sqrt(1.0 + x));
}

// log(m 2^k) for f32 from the reduction log1p and log share (CUDA's log1pf scheme): kb = k << 23
// (k picked from the bits of the argument so that m lies in [0.75, 1.5)), f = m - 1, and
// log = k ln 2 + f + f^2 P(f), P of degree 8 fitted on [-0.25, 0.5] (kLog1pF32). No MUFU and no
// division: f32 log1p was logf (a polynomial of its own), div.full and a select.
inline tl::tensor log_of_reduced(const tl::tensor& f, const tl::tensor& kb) {
  tl::tensor r = tl::fma(f * horner(f, kLog1pF32), f, f);
  return tl::fma(kb.to(DType::f32), kLn2 * 0x1p-23, r);  // k 2^23 is exact in f32 (|k| <= 128)
}
// log of a positive normal f32 y by the same reduction: f = y 2^-k - 1 (exact: y 2^-k is in
// [0.75, 1.5)).
inline tl::tensor log_normal_f32(const tl::tensor& y) {
  tl::tensor kb = (bits(y) - 0x3f400000) & int32_t(0xff800000);
  return log_of_reduced(from_bits(bits(y) - kb, DType::f32) - 1.0, kb);
}
// log(1 + x). f32: u = 1 + x rounds, but only its exponent is used: k from u's bits, and
// f = (1 + x) 2^-k - 1 is formed as (2^-k - 1) + x 2^-k with both scalings by 2^-k exact integer
// subtractions from the exponent fields, so the rounding of u never reaches f (u rounding up
// across a binade only moves f to just below -0.25, inside the fit's margin). Near x = -1,
// u >= 2^-24 keeps 2^-k normal. Out of (-1, inf): -1 gives -inf, NaN and x < -1 NaN
// (fma(x, inf, inf)), inf inf; -0.0 is kept.
// f64: Goldberg's correction: u = 1 + x rounds, and log(u) * x / (u - 1) cancels the rounding to
// first order.
inline tl::tensor log1p_in_range_f32(const tl::tensor& x) {  // x in (-1, inf), not -0.0
  tl::tensor u = 1.0 + x;
  tl::tensor kb = (bits(u) - 0x3f400000) & int32_t(0xff800000);
  tl::tensor m = from_bits(bits(x) - kb, DType::f32);        // x 2^-k
  tl::tensor s = from_bits(0x40800000 - kb, DType::f32);     // 4 2^-k
  return log_of_reduced(tl::fma(s, 0.25, -1.0) + m, kb);
}
// log1p of an f32 x in [+0, inf] or NaN (exp's results: softplus, logaddexp): one select for
// inf and NaN (x < inf is false for both) where log1p's general edges take four.
inline tl::tensor log1p_nonneg_f32(const tl::tensor& x) { return tl::where(x < kInf, log1p_in_range_f32(x), x); }
inline tl::tensor log1p(const tl::tensor& x) {
  if (!wide(x)) {
    tl::tensor r = tl::where(x == 0.0, x, log1p_in_range_f32(x));
    tl::tensor off = tl::where(x == -1.0, -kInf, tl::fma(x, kInf, kInf));
    return tl::where((x > -1.0) && (x < kInf), r, off);
  }
  tl::tensor u = 1.0 + x;
  tl::tensor r = tl::where(u == 1.0, x, tl::log(u) * (x / (u - 1.0)));
  return tl::where(x == kInf, x, r);
}

// e^x - 1 over x near 0: Taylor's 1, 1/2!, ..., 1/12! (the next term, 1/13!, is 1.6e-10 relative
// at |x| = 1: below f32's rounding).
constexpr double kExpm1OverX[] = {1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
                                  1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600};
// sinh(x) / x: 1, 1/3!, ..., 1/13! in x^2 (1/15! at |x| = 1 is 7.6e-13).
constexpr double kSinhOverX[] = {1.0, 1.0 / 6, 1.0 / 120, 1.0 / 5040, 1.0 / 362880, 1.0 / 39916800, 1.0 / 6227020800.0};

// exp(x) - 1. f32: x P(x) below |x| = 1, where exp(x) - 1 would cancel; above, exp(x) - 1 loses
// at most a factor 1.6 of exp's error (x = 1). One exp and no log or division: Kahan's
// (u - 1) x / log(u) took an exp, a log and two divisions, issue-bound on the GPU (issue 29).
// f64 keeps Kahan's correction.
inline tl::tensor expm1(const tl::tensor& x) {
  if (!wide(x)) {
    tl::tensor near = x * horner(x, kExpm1OverX);  // x times: keeps -0.0
    return tl::where(tl::abs(x) < 1.0, near, exp(x) - 1.0);  // NaN: exp's NaN
  }
  tl::tensor u = exp(x);
  tl::tensor um1 = u - 1.0;
  tl::tensor r = tl::where(u == 1.0, x, um1 * (x / tl::log(u)));
  r = tl::where(um1 == -1.0, -1.0, r);
  return tl::where(u == kInf, u, r);
}

// Overflow-safe exp(|x|) / 2 for large |x|: (exp(|x|/2) / 2) exp(|x|/2).
inline tl::tensor half_exp_abs(const tl::tensor& a) {
  tl::tensor h = exp(0.5 * a);
  return (0.5 * h) * h;
}

// sinh. f32: |x| sinh(|x|)/|x| (Taylor, no cancellation) below |x| = 1; above, h - 1 / (4 h) with
// h = exp(|x|) / 2 (one exp scaled by 2^-1 in its exponent, so it overflows only where sinh
// does; the subtraction loses at most a factor 1.31 of exp's error at |x| = 1). One exp and one
// division, where expm1, log and three divisions were (issue 29).
inline tl::tensor sinh(const tl::tensor& x) {
  tl::tensor a = tl::abs(x);
  if (!wide(x)) {
    tl::tensor h = exp(a, -1);
    tl::tensor large = h - tl::fast_dividef(0.25, h);  // 0.25 / h <= 0.16 of the result: an ulp of it is noise
    return copysign(tl::where(a < 1.0, a * horner(a * a, kSinhOverX), large), x);
  }
  tl::tensor e = expm1(a);
  tl::tensor small = 0.5 * (e + e / (e + 1.0));
  tl::tensor h = exp(0.5 * a);
  tl::tensor large = (0.5 * h) * h - 0.5 / (h * h);
  return copysign(tl::where(a < 1.0, small, large), x);
}

// cosh = h + 1 / (4 h), h = exp(|x|) / 2 (no cancellation anywhere; overflows only where cosh
// does). f64 as before.
inline tl::tensor cosh(const tl::tensor& x) {
  tl::tensor a = tl::abs(x);
  if (!wide(x)) {
    tl::tensor h = exp(a, -1);
    return h + tl::fast_dividef(0.25, h);  // 0.25 / h <= 0.5 of the result; 0 past h = 2^126, as it rounds
  }
  tl::tensor e = exp(a);
  return tl::where(a < 20.0, 0.5 * (e + 1.0 / e), half_exp_abs(a));
}

// Past 2^28, 1 / (4 a^2) is below rounding: asinh(a) = log(a) + ln 2. f32 takes it as log1p(a) +
// ln 2 (log1p(a) is log(a) to 1 / a relative there) through the same log1p, where a second
// logf for every element cost about a fifth of the kernel (issue 29), and from 2^23 on (as CUDA's
// asinhf: log1p(a) + ln 2 is within 2^-23 / 16 of asinh there), which keeps 1 + a^2 finite.
// Below, log1p(a + a^2 / (1 + sqrt(1 + a^2))) with the division by tl::fast_dividef (its divisor
// is in [2, 2^23]) where div.full took 8 instructions, and 1 + sqrt(z) as one FMA of z and
// tl::rsqrt(z) (z >= 1). f64 needs the exact log.
inline tl::tensor asinh(const tl::tensor& x) {
  tl::tensor a = tl::abs(x);
  if (!wide(x)) {
    tl::tensor big = a > 8388608.0;
    tl::tensor z = tl::fma(a, a, 1.0);
    tl::tensor q = tl::fast_dividef(a, tl::fma(z, tl::rsqrt(z), 1.0));  // a / (1 + sqrt(z)), z >= 1
    tl::tensor t = tl::where(big, a, tl::fma(a, q, a));
    return copysign(log1p_nonneg_f32(t) + tl::where(big, kLn2, 0.0), x);  // t in [0, inf] or NaN
  }
  tl::tensor a2 = a * a;
  tl::tensor big = a > 268435456.0;
  tl::tensor r = log1p(a + a2 / (1.0 + tl::sqrt(1.0 + a2)));
  return copysign(tl::where(big, tl::log(a) + kLn2, r), x);
}

// acosh = log1p(t + sqrt(2t + t^2)), t = x - 1 (exact for x in [1, 2]; 2t + t^2 by one FMA).
inline tl::tensor acosh(const tl::tensor& x) {
  tl::tensor t = x - 1.0;
  tl::tensor big = x > 268435456.0;
  tl::tensor r;
  if (!wide(x)) {
    // The argument is in [0, inf] or NaN for x >= 1 (x < 1 is selected below).
    r = log1p_nonneg_f32(tl::where(big, x, t + tl::sqrt(tl::fma(t, t, 2.0 * t)))) + tl::where(big, kLn2, 0.0);
  } else {
    r = tl::where(big, tl::log(x) + kLn2, log1p(t + tl::sqrt(2.0 * t + t * t)));
  }
  return tl::where(x < 1.0, kNaN, r);
}

// atanh(a) = log1p(2a / (1 - a)) / 2. f32: the division by tl::fast_dividef (1 - a is 0 or at
// least 2^-24 below |x| = 1: never subnormal; 1 - a = 0 gives inf).
inline tl::tensor atanh(const tl::tensor& x) {
  tl::tensor a = tl::abs(x);
  if (!wide(x)) {
    // The quotient is in [0, inf] or NaN for |x| <= 1 or NaN; |x| > 1 is selected.
    tl::tensor r = 0.5 * log1p_nonneg_f32(tl::fast_dividef(2.0 * a, 1.0 - a));
    return copysign(tl::where(a > 1.0, kNaN, r), x);
  }
  return copysign(0.5 * log1p(2.0 * a / (1.0 - a)), x);
}

// erfc. f64: 1 - erf(x) below 0.5 (no cancellation there); above, exp(-x^2) R(x) / x with R
// fitted on [0.5, 3] in x and on [3, 27] in 1/x, and exp(-x^2) split as exp(-h^2) exp(-(x - h)(x + h))
// with h = x with its low mantissa bits cleared, so h^2 is exact and the large exponent carries
// no rounding error.
// f32: one formula for every x, as CUDA's erfcf: a = |x| (clamped to 10.19, where erfc has
// underflowed), erfc(a) = exp(-a^2) Q(t) / (1 + 2 a), Q a degree-10 polynomial in
// t = (a - 4) / (a + 4) (Q in [1, 1.24]); a^2 = s + e exactly (e by an FMA), so exp(-a^2) =
// exp(-s) (1 - e); erfc(-a) = 2 - erfc(a). Two divisions, one exp, 10 FMAs: the f64 path's erf,
// two exps, two polynomials (both evaluated for every element) and a division made f32 and bf16
// erfc instruction-bound on the GPU (issue 29: 0.48-0.54 x PyTorch).
inline tl::tensor erfc(const tl::tensor& x) {
  if (!wide(x)) {
    tl::tensor a = tl::abs(x);
    a = tl::where(a > 10.19, 10.19, a);  // NaN passes (the compare is false); a^2 < 104
    // Both divisors lie in [1, 22]: tl::fast_dividef (a reciprocal and a multiply) serves.
    tl::tensor q = horner(tl::fast_dividef(a - 4.0, a + 4.0), kErfcF32);
    tl::tensor s = a * a;
    tl::tensor e = tl::fma(a, a, -s);  // a^2 - s, exact
    tl::tensor ex = exp_in_range(-s, 64, /*one_factor=*/true);  // exp(-s) 2^64: n + 64 in [-86, 64]
    tl::tensor r = tl::fast_dividef(q, tl::fma(a, 2.0, 1.0));
    r = tl::fma(-e, ex, ex) * r * 0x1p-64;  // exp(-s) (1 - e) Q / (1 + 2a); a subnormal rounds twice
    return tl::where(x < 0.0, 2.0 - r, r);
  }
  tl::tensor h = from_bits(bits(x) & int64_t(-4294967296), x.dtype());  // keep 20 mantissa bits
  tl::tensor e = exp(-(h * h)) * exp(-((x - h) * (x + h)));
  tl::tensor near = horner(x - 1.75, kErfcNearF64);
  tl::tensor u = 1.0 / x;
  tl::tensor far = horner(u - 0.2, kErfcFarF64);
  tl::tensor tail = tl::where(x < 3.0, near, far) * u * e;
  tail = tl::where(x == kInf, 0.0, tail);
  return tl::where(x < 0.5, 1.0 - tl::erf(x), tail);
}

// erfinv: x P(w), w = -log((1 - x)(1 + x)) (Giles' variable: (1 - x)(1 + x) keeps its precision
// near |x| = 1), P fitted in w below w = 6.25 and in sqrt(w) above (two pieces in f64).
// `bf16_values`: x holds bf16 values and the result is rounded to bf16. Below |x| = 1 the largest is
// 1 - 2^-8 (w = 4.854), so no program holds a tail element and the central piece alone, at degree 6
// (relative error 2.2e-6, bf16's half ulp 2^-9), does: no block-wide max, no barrier, 4 FMAs fewer
// (erfinv bf16 ran at 0.75-0.78 x PyTorch on an H100 at every launch shape, compute-bound).
inline tl::tensor erfinv(const tl::tensor& x, bool bf16_values = false) {
  tl::tensor r;
  if (bf16_values && !wide(x)) {
    r = horner(-log_normal_f32(tl::fma(-x, x, 1.0)) - 2.4375, kErfinvCentralBf16) * x;
  } else if (wide(x)) {
    tl::tensor w = -tl::log((1.0 - x) * (1.0 + x));
    tl::tensor central = horner(w - 3.125, kErfinvCentralF64);
    tl::tensor s = tl::sqrt(w);
    tl::tensor tail = tl::where(s < 4.0, horner(s - 3.25, kErfinvTailF64), horner(s - 5.0, kErfinvFarTailF64));
    r = tl::where(w < 6.25, central, tail) * x;
  } else {
    // f32: 1 - x^2 by one FMA (correctly rounded, as accurate as (1 - x)(1 + x)) and its log by
    // log_normal_f32 (1 - x^2 >= 2^-23 below |x| = 1; |x| >= 1 and NaN are selected below: there
    // w is finite garbage), where logf took a few more instructions. The tail (|x| > 0.998) is
    // evaluated only in programs holding one (a block-wide max and a run-time branch, as tan's
    // far range): the degree-7 polynomial and the square root for every element were about a
    // quarter of the kernel; CUDA's erfinvf branches there too.
    tl::tensor w = -log_normal_f32(tl::fma(-x, x, 1.0));
    tl::tensor p = x;
    tl::if_(
        tl::max(tl::where(w >= 6.25, 1, 0)) > 0,
        [&] {
          tl::tensor tail = horner(tl::sqrt(w) - 3.25, kErfinvTailF32);
          p = tl::where(w < 6.25, horner(w - 3.125, kErfinvCentralF32), tail);
        },
        [&] { p = horner(w - 3.125, kErfinvCentralF32); });
    r = p * x;
  }
  r = tl::where(tl::abs(x) == 1.0, copysign(tl::zeros_like(x) + kInf, x), r);
  return tl::where(tl::abs(x) > 1.0, kNaN, r);
}

// C's fmod, exact for every pair. The result has a's sign (fmod(-0.0, 3) is -0.0).
// f64, and f32 programs holding any pair outside the fast range: the IR's float remainder (LLVM's
// frem on the CPU, fmodf on CUDA: a loop of shift-and-subtract steps, about 80 SASS instructions
// an element, and 32 copies of it in a thread's code; issue 29: remainder bf16 0.65 x PyTorch).
// f32 fast range (quotient below 2^18, |b| normal and finite): with A = |a|,
// B = |b|, q = A / B (1 + 2^-21) by tl::fast_dividef (a reciprocal within 1 ulp and a product:
// q overestimates A / B by less than 2^-21 relative, so q >= A / B and q < A / B + 0.38), its
// nearest integer n by the 1.5 * 2^23 shifter is trunc(A / B) or one more, r = A - n B by one
// FMA is then exact (A - trunc(A / B) B or that minus B, both representable), and a negative r
// takes B back (exact: the result is the true remainder). Decided per program, as tan's range
// (a block-wide max and a run-time branch).
inline tl::tensor fmod_fast_f32(const tl::tensor& a, const tl::tensor& b) {
  constexpr double kShifter = 12582912.0;  // 1.5 * 2^23
  tl::tensor A = tl::abs(a), B = tl::abs(b);
  tl::tensor n = (tl::fast_dividef(A, B) * (1.0 + 0x1p-21) + kShifter) - kShifter;
  tl::tensor r = tl::fma(-n, B, A);
  return copysign(tl::where(r < 0.0, r + B, r), a);
}
inline tl::tensor fmod(const tl::tensor& a, const tl::tensor& b) {
  if (wide(a)) return a % b;
  // Fast where A < 2^18 B (so q < 2^19) and B is normal and finite (the GPU's reciprocal flushes
  // subnormals; fmod(a, inf) is a); NaN fails the compares. No division here: only a and b live
  // across the branch.
  tl::tensor B = tl::abs(b);
  tl::tensor slow = !((tl::abs(a) < B * 262144.0) && (B >= 0x1p-126) && (B < kInf));
  tl::tensor out = a;
  tl::if_(
      tl::max(tl::where(slow, 1, 0)) > 0, [&] { out = a % b; }, [&] { out = fmod_fast_f32(a, b); });
  return out;
}

// Python's remainder: fmod, moved by one b when its sign differs from b's.
inline tl::tensor remainder(const tl::tensor& a, const tl::tensor& b) {
  tl::tensor m = fmod(a, b);
  return tl::where((m != 0.0) && ((b < 0.0) != (m < 0.0)), m + b, m);
}

// sqrt(x^2 + y^2) without overflow or underflow: m sqrt(1 + (n / m)^2), m = max(|x|, |y|); an
// infinite operand gives inf even when the other is NaN (C's hypot).
inline tl::tensor hypot(const tl::tensor& x, const tl::tensor& y) {
  tl::tensor ax = tl::abs(x), ay = tl::abs(y);
  tl::tensor x_larger = ax > ay;
  tl::tensor m = tl::where(x_larger, ax, ay), n = tl::where(x_larger, ay, ax);
  tl::tensor r = n / m;
  r = m * tl::sqrt(1.0 + r * r);
  r = tl::where(m == 0.0, 0.0, r);
  r = tl::where(isnan(x) || isnan(y), kNaN, r);
  return tl::where((ax == kInf) || (ay == kInf), kInf, r);
}

inline tl::tensor logaddexp(const tl::tensor& x, const tl::tensor& y) {
  tl::tensor m = tl::where(x > y, x, y);
  tl::tensor d = -tl::abs(x - y);
  // d <= 0: only exp's lower clamp applies (NaN passes).
  tl::tensor e = wide(x) ? exp(d) : exp_in_range(tl::where(d < -104.0, -104.0, d));  // in [0, 1], or NaN
  tl::tensor r = m + (wide(x) ? log1p(e) : log1p_nonneg_f32(e));
  return tl::where(isinf(x) && (x == y), x, r);
}

}  // namespace tritium::ops::detail::math
