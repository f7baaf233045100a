// The element-wise tensor ops of issue 29 item 3 as a PyTorch user writes them: math functions,
// clamp, lerp, addcmul/addcdiv, activations (differentiable: one dispatch call each on their
// declarations in ops/decl/unary_math.cpp and ops/decl/activations.cpp), and the predicates,
// bitwise and logical ops (bool or integer results: no gradient, the raw ops themselves).
// Included by nn/tensor_ops.h.
#pragma once
#include <optional>
#include <string>

#include "ops/activations.h"
#include "ops/bitwise.h"
#include "ops/unary_math.h"

namespace tritium {

using runtime::Tensor;

Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor sgn(const Tensor& x);
Tensor square(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor round(const Tensor& x, int decimals = 0);
Tensor frac(const Tensor& x);
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
Tensor nan_to_num(const Tensor& x, std::optional<double> nan = std::nullopt, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor fmin(const Tensor& a, const Tensor& b);
Tensor fmax(const Tensor& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor hypot(const Tensor& a, const Tensor& b);
Tensor copysign(const Tensor& a, const Tensor& b);
Tensor logaddexp(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, ops::Scalar b);
Tensor remainder(const Tensor& a, ops::Scalar b);
// clamp(x, min, max): numbers or tensors (an absent bound: std::nullopt / an undefined tensor).
Tensor clamp(const Tensor& x, std::optional<ops::Scalar> min, std::optional<ops::Scalar> max = std::nullopt);
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max);
Tensor clamp_min(const Tensor& x, ops::Scalar min);
Tensor clamp_max(const Tensor& x, ops::Scalar max);
Tensor clamp_min(const Tensor& x, const Tensor& min);
Tensor clamp_max(const Tensor& x, const Tensor& max);
Tensor lerp(const Tensor& start, const Tensor& end, ops::Scalar weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, ops::Scalar value = ops::Scalar(1));
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, ops::Scalar value = ops::Scalar(1));

// Activations (torch.nn.functional's names and defaults).
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x, double beta = 1, double threshold = 20);
Tensor elu(const Tensor& x, double alpha = 1);
Tensor selu(const Tensor& x);
Tensor celu(const Tensor& x, double alpha = 1);
Tensor mish(const Tensor& x);
Tensor hardswish(const Tensor& x);
Tensor hardsigmoid(const Tensor& x);
Tensor hardtanh(const Tensor& x, double min_val = -1, double max_val = 1);
Tensor relu6(const Tensor& x);
Tensor softsign(const Tensor& x);
Tensor tanhshrink(const Tensor& x);
// gelu(x, "none") is the exact gelu (tritium::gelu(x)); "tanh" the tanh approximation.
Tensor gelu(const Tensor& x, const std::string& approximate);

// Not differentiable (bool or integer results).
using ops::isnan;
using ops::isinf;
using ops::isposinf;
using ops::isneginf;
using ops::isfinite;
using ops::signbit;
using ops::bitwise_and;
using ops::bitwise_or;
using ops::bitwise_xor;
using ops::bitwise_not;
using ops::bitwise_left_shift;
using ops::bitwise_right_shift;
using ops::logical_and;
using ops::logical_or;
using ops::logical_xor;
using ops::logical_not;

}  // namespace tritium
