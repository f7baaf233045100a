// The in-place element-wise ops (nn/elementwise_inplace.h): the differentiable op written into
// x by nn::apply_inplace.
#include "nn/elementwise_inplace.h"

#include "nn/inplace.h"

namespace tritium {

using ops::Scalar;

#define TRITIUM_INPLACE_UNARY(name) \
  Tensor& name##_(Tensor& x) { return nn::apply_inplace(x, #name "_", {}, [](const Tensor& s) { return tritium::name(s); }); }
TRITIUM_INPLACE_UNARY(abs)
TRITIUM_INPLACE_UNARY(sign)
TRITIUM_INPLACE_UNARY(square)
TRITIUM_INPLACE_UNARY(floor)
TRITIUM_INPLACE_UNARY(ceil)
TRITIUM_INPLACE_UNARY(trunc)
TRITIUM_INPLACE_UNARY(frac)
TRITIUM_INPLACE_UNARY(sin)
TRITIUM_INPLACE_UNARY(cos)
TRITIUM_INPLACE_UNARY(tan)
TRITIUM_INPLACE_UNARY(asin)
TRITIUM_INPLACE_UNARY(acos)
TRITIUM_INPLACE_UNARY(atan)
TRITIUM_INPLACE_UNARY(sinh)
TRITIUM_INPLACE_UNARY(cosh)
TRITIUM_INPLACE_UNARY(asinh)
TRITIUM_INPLACE_UNARY(acosh)
TRITIUM_INPLACE_UNARY(atanh)
TRITIUM_INPLACE_UNARY(log1p)
TRITIUM_INPLACE_UNARY(expm1)
TRITIUM_INPLACE_UNARY(log2)
TRITIUM_INPLACE_UNARY(log10)
TRITIUM_INPLACE_UNARY(exp2)
TRITIUM_INPLACE_UNARY(reciprocal)
TRITIUM_INPLACE_UNARY(rsqrt)
TRITIUM_INPLACE_UNARY(erf)
TRITIUM_INPLACE_UNARY(erfc)
TRITIUM_INPLACE_UNARY(erfinv)
TRITIUM_INPLACE_UNARY(silu)
TRITIUM_INPLACE_UNARY(selu)
TRITIUM_INPLACE_UNARY(mish)
TRITIUM_INPLACE_UNARY(hardswish)
TRITIUM_INPLACE_UNARY(hardsigmoid)
TRITIUM_INPLACE_UNARY(relu6)
#undef TRITIUM_INPLACE_UNARY

#define TRITIUM_INPLACE_BINARY(name)                                                                        \
  Tensor& name##_(Tensor& x, const Tensor& other) {                                                         \
    return nn::apply_inplace(x, #name "_", {other}, [&](const Tensor& s) { return tritium::name(s, other); }); \
  }
TRITIUM_INPLACE_BINARY(fmod)
TRITIUM_INPLACE_BINARY(remainder)
TRITIUM_INPLACE_BINARY(atan2)
TRITIUM_INPLACE_BINARY(hypot)
TRITIUM_INPLACE_BINARY(copysign)
#undef TRITIUM_INPLACE_BINARY

Tensor& round_(Tensor& x, int decimals) {
  return nn::apply_inplace(x, "round_", {}, [&](const Tensor& s) { return tritium::round(s, decimals); });
}
Tensor& nan_to_num_(Tensor& x, std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) {
  return nn::apply_inplace(x, "nan_to_num_", {}, [&](const Tensor& s) { return tritium::nan_to_num(s, nan, posinf, neginf); });
}
Tensor& clamp_(Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  return nn::apply_inplace(x, "clamp_", {}, [&](const Tensor& s) { return tritium::clamp(s, min, max); });
}
Tensor& clamp_(Tensor& x, const Tensor& min, const Tensor& max) {
  return nn::apply_inplace(x, "clamp_", {min, max}, [&](const Tensor& s) { return tritium::clamp(s, min, max); });
}
Tensor& clamp_min_(Tensor& x, Scalar min) { return tritium::clamp_(x, min, std::nullopt); }
Tensor& clamp_max_(Tensor& x, Scalar max) { return tritium::clamp_(x, std::nullopt, max); }
Tensor& lerp_(Tensor& x, const Tensor& end, Scalar weight) {
  return nn::apply_inplace(x, "lerp_", {end}, [&](const Tensor& s) { return tritium::lerp(s, end, weight); });
}
Tensor& lerp_(Tensor& x, const Tensor& end, const Tensor& weight) {
  return nn::apply_inplace(x, "lerp_", {end, weight}, [&](const Tensor& s) { return tritium::lerp(s, end, weight); });
}
Tensor& addcmul_(Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value) {
  return nn::apply_inplace(x, "addcmul_", {t1, t2}, [&](const Tensor& s) { return tritium::addcmul(s, t1, t2, value); });
}
Tensor& addcdiv_(Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value) {
  return nn::apply_inplace(x, "addcdiv_", {t1, t2}, [&](const Tensor& s) { return tritium::addcdiv(s, t1, t2, value); });
}
Tensor& leaky_relu_(Tensor& x, double slope) {
  return nn::apply_inplace(x, "leaky_relu_", {}, [&](const Tensor& s) { return tritium::leaky_relu(s, slope); });
}
Tensor& elu_(Tensor& x, double alpha) {
  return nn::apply_inplace(x, "elu_", {}, [&](const Tensor& s) { return tritium::elu(s, alpha); });
}
Tensor& celu_(Tensor& x, double alpha) {
  return nn::apply_inplace(x, "celu_", {}, [&](const Tensor& s) { return tritium::celu(s, alpha); });
}
Tensor& hardtanh_(Tensor& x, double lo, double hi) {
  return nn::apply_inplace(x, "hardtanh_", {}, [&](const Tensor& s) { return tritium::hardtanh(s, lo, hi); });
}

}  // namespace tritium
