// The differentiable element-wise tensor ops (nn/elementwise_ops.h): one dispatch call each on
// the declarations of ops/decl/unary_math.cpp and ops/decl/activations.cpp.
#include "nn/elementwise_ops.h"

#include "nn/dispatch.h"

namespace tritium {

using ops::Attrs;
using ops::Scalar;

#define TRITIUM_UNARY(name) \
  Tensor name(const Tensor& x) { return nn::call(#name, {x}); }
TRITIUM_UNARY(abs)
TRITIUM_UNARY(sign)
TRITIUM_UNARY(square)
TRITIUM_UNARY(floor)
TRITIUM_UNARY(ceil)
TRITIUM_UNARY(trunc)
TRITIUM_UNARY(frac)
TRITIUM_UNARY(sin)
TRITIUM_UNARY(cos)
TRITIUM_UNARY(tan)
TRITIUM_UNARY(asin)
TRITIUM_UNARY(acos)
TRITIUM_UNARY(atan)
TRITIUM_UNARY(sinh)
TRITIUM_UNARY(cosh)
TRITIUM_UNARY(asinh)
TRITIUM_UNARY(acosh)
TRITIUM_UNARY(atanh)
TRITIUM_UNARY(log1p)
TRITIUM_UNARY(expm1)
TRITIUM_UNARY(log2)
TRITIUM_UNARY(log10)
TRITIUM_UNARY(exp2)
TRITIUM_UNARY(reciprocal)
TRITIUM_UNARY(rsqrt)
TRITIUM_UNARY(erf)
TRITIUM_UNARY(erfc)
TRITIUM_UNARY(erfinv)
TRITIUM_UNARY(silu)
TRITIUM_UNARY(mish)
TRITIUM_UNARY(hardswish)
TRITIUM_UNARY(hardsigmoid)
TRITIUM_UNARY(softsign)
TRITIUM_UNARY(tanhshrink)
#undef TRITIUM_UNARY

#define TRITIUM_BINARY(name) \
  Tensor name(const Tensor& a, const Tensor& b) { return nn::call(#name, {a, b}); }
TRITIUM_BINARY(minimum)
TRITIUM_BINARY(maximum)
TRITIUM_BINARY(fmin)
TRITIUM_BINARY(fmax)
TRITIUM_BINARY(atan2)
TRITIUM_BINARY(hypot)
TRITIUM_BINARY(copysign)
TRITIUM_BINARY(logaddexp)
TRITIUM_BINARY(fmod)
TRITIUM_BINARY(remainder)
#undef TRITIUM_BINARY

Tensor sgn(const Tensor& x) { return sign(x); }
Tensor round(const Tensor& x, int decimals) { return nn::call("round", {x}, Attrs{{"decimals", decimals}}); }
Tensor nan_to_num(const Tensor& x, std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) {
  return nn::call("nan_to_num", {x}, Attrs{{"nan", nan}, {"posinf", posinf}, {"neginf", neginf}});
}
Tensor fmod(const Tensor& a, Scalar b) { return nn::call("fmod.Scalar", {a}, Attrs{{"other", b}}); }
Tensor remainder(const Tensor& a, Scalar b) { return nn::call("remainder.Scalar", {a}, Attrs{{"other", b}}); }

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  if (!min && !max) fail("clamp: At least one of 'min' or 'max' must not be None");
  return nn::call("clamp", {x},
                  Attrs{{"has_min", min.has_value()}, {"has_max", max.has_value()}, {"min", min.value_or(Scalar(0))},
                        {"max", max.value_or(Scalar(0))}});
}
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max) { return nn::call("clamp.Tensor", {x, min, max}); }
Tensor clamp_min(const Tensor& x, Scalar min) { return tritium::clamp(x, min, std::nullopt); }
Tensor clamp_max(const Tensor& x, Scalar max) { return tritium::clamp(x, std::nullopt, max); }
Tensor clamp_min(const Tensor& x, const Tensor& min) { return clamp(x, min, Tensor()); }
Tensor clamp_max(const Tensor& x, const Tensor& max) { return clamp(x, Tensor(), max); }

Tensor lerp(const Tensor& start, const Tensor& end, Scalar weight) {
  return nn::call("lerp.Scalar", {start, end}, Attrs{{"weight", weight}});
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  return nn::call("lerp.Tensor", {start, end, weight});
}
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value) {
  return nn::call("addcmul", {self, t1, t2}, Attrs{{"value", value}});
}
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value) {
  return nn::call("addcdiv", {self, t1, t2}, Attrs{{"value", value}});
}

Tensor leaky_relu(const Tensor& x, double slope) {
  return nn::call("leaky_relu", {x}, Attrs{{"negative_slope", slope}});
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return nn::call("softplus", {x}, Attrs{{"beta", beta}, {"threshold", threshold}});
}
namespace {
Tensor elu_call(const Tensor& x, double alpha, double scale, double input_scale) {
  return nn::call("elu", {x}, Attrs{{"alpha", alpha}, {"scale", scale}, {"input_scale", input_scale}});
}
}  // namespace
Tensor elu(const Tensor& x, double alpha) { return elu_call(x, alpha, 1.0, 1.0); }
Tensor selu(const Tensor& x) { return elu_call(x, ops::kSeluAlpha, ops::kSeluScale, 1.0); }
Tensor celu(const Tensor& x, double alpha) {
  if (alpha == 0) fail("celu: ZeroDivisionError (alpha must not be 0)");
  return elu_call(x, alpha, 1.0, 1.0 / alpha);
}
Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  return nn::call("hardtanh", {x}, Attrs{{"min_val", min_val}, {"max_val", max_val}});
}
Tensor relu6(const Tensor& x) { return hardtanh(x, 0.0, 6.0); }
Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate == "none") return nn::call("gelu", {x});
  if (approximate == "tanh") return nn::call("gelu.tanh", {x});
  fail("gelu: approximate must be \"none\" or \"tanh\", got \"{}\"", approximate);
}

}  // namespace tritium
