// The activation functions of issue 29 item 3 (raw, non-differentiable; nn/elementwise_ops.h
// records them) and the fused backward kernels PyTorch has for them (one pass over grad and the
// input instead of a chain of ops). Floats keep their dtype, integers are refused (PyTorch's
// activations are float-only); f16/bf16 compute in f32. One generic elementwise launch each.
#pragma once
#include "ops/ops.h"

namespace tritium::ops {

Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x, double beta = 1, double threshold = 20);
// elu(x) = scale x for x > 0, else scale alpha (exp(input_scale x) - 1): elu, selu and celu.
Tensor elu(const Tensor& x, double alpha = 1, double scale = 1, double input_scale = 1);
Tensor selu(const Tensor& x);
Tensor celu(const Tensor& x, double alpha = 1);
Tensor mish(const Tensor& x);
Tensor hardswish(const Tensor& x);
Tensor hardsigmoid(const Tensor& x);
Tensor hardtanh(const Tensor& x, double min_val = -1, double max_val = 1);
Tensor relu6(const Tensor& x);
Tensor softsign(const Tensor& x);
Tensor tanhshrink(const Tensor& x);
Tensor gelu_tanh(const Tensor& x);  // gelu(approximate="tanh")

// d(activation)/dx times grad, from the input x (grad and x of one shape).
Tensor leaky_relu_backward(const Tensor& grad, const Tensor& x, double negative_slope);
Tensor silu_backward(const Tensor& grad, const Tensor& x);
Tensor softplus_backward(const Tensor& grad, const Tensor& x, double beta, double threshold);
Tensor elu_backward(const Tensor& grad, const Tensor& x, double alpha, double scale, double input_scale);
Tensor mish_backward(const Tensor& grad, const Tensor& x);
Tensor hardswish_backward(const Tensor& grad, const Tensor& x);
Tensor hardsigmoid_backward(const Tensor& grad, const Tensor& x);
Tensor hardtanh_backward(const Tensor& grad, const Tensor& x, double min_val, double max_val);
Tensor gelu_tanh_backward(const Tensor& grad, const Tensor& x);

// SELU's constants (Klambauer et al.), as PyTorch.
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

}  // namespace tritium::ops
