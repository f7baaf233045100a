// torch.nn.init: in-place initialisers of parameters, with PyTorch's names, defaults, fan and
// gain rules and error messages. Each runs without recording autograd (a parameter that requires
// grad is filled as PyTorch's torch.no_grad() initialisers do), draws from `gen`, and returns its
// tensor. The sampling runs on Tritium kernels on the tensor's device; orthogonal_ alone does its
// QR decomposition on the host (a Householder QR of a rows x cols gaussian in double: fine for
// initialisation, which runs once on small matrices; there is no QR op yet).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "nn/functional.h"

namespace tritium::nn::init {

// The recommended gain for a nonlinearity: 1 for linear, conv*, conv_transpose*, sigmoid; 5/3 for
// tanh; sqrt(2) for relu; sqrt(2 / (1 + slope^2)) for leaky_relu (slope = param, default 0.01);
// 3/4 for selu. Another name is an error.
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);
// {fan_in, fan_out} = {size(1), size(0)} times the product of the dims after the second (the
// receptive field). Fewer than 2 dims is an error.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

Tensor& uniform_(Tensor& tensor, double a = 0.0, double b = 1.0, Generator& gen = ops::default_generator());
Tensor& normal_(Tensor& tensor, double mean = 0.0, double std = 1.0, Generator& gen = ops::default_generator());
// Normal(mean, std) restricted to [a, b] by inverse-CDF sampling (PyTorch's method: a uniform in
// [2 cdf(a) - 1, 2 cdf(b) - 1] through erfinv), so every value lies in [a, b].
Tensor& trunc_normal_(Tensor& tensor, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                      Generator& gen = ops::default_generator());
Tensor& constant_(Tensor& tensor, double value);
Tensor& ones_(Tensor& tensor);
Tensor& zeros_(Tensor& tensor);
// The identity matrix (2-D tensors only).
Tensor& eye_(Tensor& tensor);
// U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)); N(0, gain * sqrt(2 / (fan_in + fan_out))).
Tensor& xavier_uniform_(Tensor& tensor, double gain = 1.0, Generator& gen = ops::default_generator());
Tensor& xavier_normal_(Tensor& tensor, double gain = 1.0, Generator& gen = ops::default_generator());
// std = calculate_gain(nonlinearity, a) / sqrt(fan), fan by mode ("fan_in" or "fan_out");
// uniform bound sqrt(3) * std.
Tensor& kaiming_uniform_(Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu", Generator& gen = ops::default_generator());
Tensor& kaiming_normal_(Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu", Generator& gen = ops::default_generator());
// A (semi-)orthogonal matrix times gain, viewed as [size(0), numel / size(0)]: Q of the QR of a
// gaussian, its columns' signs fixed by diag(R) (PyTorch's construction). 2 or more dims.
Tensor& orthogonal_(Tensor& tensor, double gain = 1.0, Generator& gen = ops::default_generator());

}  // namespace tritium::nn::init
