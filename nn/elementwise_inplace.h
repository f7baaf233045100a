// In-place forms of the element-wise ops (PyTorch's torch.abs_, torch.clamp_, ..., and the
// activations' inplace=True): free functions, as torch.abs_(x), since Tensor's methods are
// declared in runtime/tensor.h. Each runs the differentiable op and writes the result into x
// through nn::apply_inplace (version counter, history rebased, PyTorch's refusals). Returns x.
#pragma once
#include <optional>

#include "nn/elementwise_ops.h"

namespace tritium {

Tensor& abs_(Tensor& x);
Tensor& sign_(Tensor& x);
Tensor& square_(Tensor& x);
Tensor& floor_(Tensor& x);
Tensor& ceil_(Tensor& x);
Tensor& trunc_(Tensor& x);
Tensor& round_(Tensor& x, int decimals = 0);
Tensor& frac_(Tensor& x);
Tensor& sin_(Tensor& x);
Tensor& cos_(Tensor& x);
Tensor& tan_(Tensor& x);
Tensor& asin_(Tensor& x);
Tensor& acos_(Tensor& x);
Tensor& atan_(Tensor& x);
Tensor& sinh_(Tensor& x);
Tensor& cosh_(Tensor& x);
Tensor& asinh_(Tensor& x);
Tensor& acosh_(Tensor& x);
Tensor& atanh_(Tensor& x);
Tensor& log1p_(Tensor& x);
Tensor& expm1_(Tensor& x);
Tensor& log2_(Tensor& x);
Tensor& log10_(Tensor& x);
Tensor& exp2_(Tensor& x);
Tensor& reciprocal_(Tensor& x);
Tensor& rsqrt_(Tensor& x);
Tensor& erf_(Tensor& x);
Tensor& erfc_(Tensor& x);
Tensor& erfinv_(Tensor& x);
Tensor& nan_to_num_(Tensor& x, std::optional<double> nan = std::nullopt, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt);
Tensor& clamp_(Tensor& x, std::optional<ops::Scalar> min, std::optional<ops::Scalar> max = std::nullopt);
Tensor& clamp_(Tensor& x, const Tensor& min, const Tensor& max);
Tensor& clamp_min_(Tensor& x, ops::Scalar min);
Tensor& clamp_max_(Tensor& x, ops::Scalar max);
Tensor& fmod_(Tensor& x, const Tensor& other);
Tensor& remainder_(Tensor& x, const Tensor& other);
Tensor& atan2_(Tensor& x, const Tensor& other);
Tensor& hypot_(Tensor& x, const Tensor& other);
Tensor& copysign_(Tensor& x, const Tensor& other);
Tensor& lerp_(Tensor& x, const Tensor& end, ops::Scalar weight);
Tensor& lerp_(Tensor& x, const Tensor& end, const Tensor& weight);
Tensor& addcmul_(Tensor& x, const Tensor& t1, const Tensor& t2, ops::Scalar value = ops::Scalar(1));
Tensor& addcdiv_(Tensor& x, const Tensor& t1, const Tensor& t2, ops::Scalar value = ops::Scalar(1));
// Activations with inplace=True.
Tensor& leaky_relu_(Tensor& x, double negative_slope = 0.01);
Tensor& silu_(Tensor& x);
Tensor& elu_(Tensor& x, double alpha = 1);
Tensor& selu_(Tensor& x);
Tensor& celu_(Tensor& x, double alpha = 1);
Tensor& mish_(Tensor& x);
Tensor& hardswish_(Tensor& x);
Tensor& hardsigmoid_(Tensor& x);
Tensor& hardtanh_(Tensor& x, double min_val = -1, double max_val = 1);
Tensor& relu6_(Tensor& x);

}  // namespace tritium
