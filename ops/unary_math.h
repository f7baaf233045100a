// The element-wise math ops of issue 29 item 3 (raw, non-differentiable; nn/elementwise_ops.h
// records them): PyTorch's names, dtype rules and special values. Each is one launch of the
// generic elementwise kernels (ops/elementwise.cpp) with its op as a meta-parameter; the traced
// math is ops/math_approx.h. docs/ops.md has the table of ops, rules and differences.
#pragma once
#include <optional>

#include "ops/ops.h"

namespace tritium::ops {

// Same dtype as the input (bool refused where PyTorch refuses it).
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor sgn(const Tensor& x);  // sign for real tensors
Tensor square(const Tensor& x);  // bool gives i64
// Integers give a copy (the input's dtype); bool is refused.
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor round(const Tensor& x, int decimals = 0);  // half to even; decimals < 0 rounds to tens, ...
Tensor frac(const Tensor& x);  // floats only

// Float functions: integers and bool compute in f32 (PyTorch's int-to-float rule).
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor erfc(const Tensor& x);
Tensor erfinv(const Tensor& x);

// Predicates: bool results; integer and bool inputs are never NaN or infinite.
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isposinf(const Tensor& x);
Tensor isneginf(const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor signbit(const Tensor& x);

// NaN, +inf and -inf replaced (defaults: 0, the dtype's largest and lowest finite values).
Tensor nan_to_num(const Tensor& x, std::optional<double> nan = std::nullopt, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);

// Binary, broadcasting, PyTorch's type promotion.
Tensor minimum(const Tensor& a, const Tensor& b);  // NaN propagates
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor fmin(const Tensor& a, const Tensor& b);     // NaN ignored (unless both are NaN)
Tensor fmax(const Tensor& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);    // integers give f32
Tensor hypot(const Tensor& a, const Tensor& b);    // floats only
Tensor copysign(const Tensor& a, const Tensor& b); // integers give f32
Tensor logaddexp(const Tensor& a, const Tensor& b);  // floats only
Tensor fmod(const Tensor& a, const Tensor& b);     // C's fmod (integers: truncated division)
Tensor remainder(const Tensor& a, const Tensor& b);  // Python's % (the divisor's sign)
Tensor fmod(const Tensor& a, Scalar b);
Tensor remainder(const Tensor& a, Scalar b);

// clamp: min(max(x, min), max) with either bound optional (not both absent); NaN in x or in a
// bound gives NaN; min > max gives max. The result dtype promotes x with the bounds.
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max);  // either may be undefined
Tensor clamp_min(const Tensor& x, Scalar min);
Tensor clamp_max(const Tensor& x, Scalar max);
Tensor clamp_min(const Tensor& x, const Tensor& min);
Tensor clamp_max(const Tensor& x, const Tensor& max);

// lerp(start, end, weight) = start + weight (end - start) (PyTorch's two-sided form); floats, one dtype.
Tensor lerp(const Tensor& start, const Tensor& end, Scalar weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
// self + value * t1 * t2 and self + value * t1 / t2 (addcdiv refuses integer tensors, as PyTorch).
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value = Scalar(1));
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value = Scalar(1));

// Backward kernels of the binary ops and clamp (derivatives.yaml's formulas in one pass over the
// gradient and the saved operands; the result has grad's dtype and the broadcast shape). The
// declarations (ops/decl/unary_math.cpp) use them when no graph is recorded.
// minimum / maximum (`larger`), fmin / fmax (`nan_skipping`): the gradient of self, or of other.
Tensor minmax_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool larger, bool nan_skipping,
                       bool of_other);
// grad where self is inside the bounds, else 0 (bounds compared in self's promoted dtype).
Tensor clamp_backward(const Tensor& grad, const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max);
// fmod (`floor` false) / remainder: other's gradient, -grad * (self / other rounded to an integer).
Tensor quotient_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool floor);
// copysign: self's gradient, grad * result / self (0 where self is 0).
Tensor copysign_backward(const Tensor& grad, const Tensor& self, const Tensor& result);
// The backward of a one-input math op (tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh,
// log1p, expm1, log2, log10, exp2, reciprocal, rsqrt, erf, erfc, erfinv): grad times its
// derivative from `saved` (self, or the result for tan, expm1, exp2, reciprocal, rsqrt, erfinv).
Tensor unary_math_backward(const char* op, const Tensor& grad, const Tensor& saved);

}  // namespace tritium::ops
