#include "nn/activation_modules.h"

#include <fmt/format.h>

namespace tritium::nn {

Tensor SiLU::forward(const Tensor& x) { return tritium::silu(x); }
Tensor Tanh::forward(const Tensor& x) { return tritium::tanh(x); }
Tensor Sigmoid::forward(const Tensor& x) { return tritium::sigmoid(x); }
Tensor Mish::forward(const Tensor& x) { return tritium::mish(x); }
Tensor Hardswish::forward(const Tensor& x) { return tritium::hardswish(x); }
Tensor Hardsigmoid::forward(const Tensor& x) { return tritium::hardsigmoid(x); }
Tensor ReLU6::forward(const Tensor& x) { return tritium::relu6(x); }
Tensor SELU::forward(const Tensor& x) { return tritium::selu(x); }
Tensor Softsign::forward(const Tensor& x) { return tritium::softsign(x); }
Tensor Tanhshrink::forward(const Tensor& x) { return tritium::tanhshrink(x); }

GELU::GELU(std::string approximate_) : approximate(std::move(approximate_)) {
  if (approximate != "none" && approximate != "tanh")
    fail("GELU: approximate argument must be either none or tanh, got '{}'", approximate);
}
Tensor GELU::forward(const Tensor& x) { return approximate == "none" ? tritium::gelu(x) : tritium::gelu(x, approximate); }

Tensor LeakyReLU::forward(const Tensor& x) { return tritium::leaky_relu(x, negative_slope); }
std::string LeakyReLU::extra_repr() const { return "negative_slope=" + python_float(negative_slope); }

Tensor ELU::forward(const Tensor& x) { return tritium::elu(x, alpha); }
std::string ELU::extra_repr() const { return "alpha=" + python_float(alpha); }

CELU::CELU(double alpha_) : alpha(alpha_) {
  if (alpha == 0) fail("CELU: alpha cannot be 0");
}
Tensor CELU::forward(const Tensor& x) { return tritium::celu(x, alpha); }
std::string CELU::extra_repr() const { return "alpha=" + python_float(alpha); }

Tensor Softplus::forward(const Tensor& x) { return tritium::softplus(x, beta, threshold); }
std::string Softplus::extra_repr() const {
  return fmt::format("beta={}, threshold={}", python_float(beta), python_float(threshold));
}

Hardtanh::Hardtanh(double min_val_, double max_val_) : min_val(min_val_), max_val(max_val_) {
  if (min_val > max_val) fail("Hardtanh: max_val ({}) must be greater than min_val ({})", max_val, min_val);
}
Tensor Hardtanh::forward(const Tensor& x) { return tritium::hardtanh(x, min_val, max_val); }
std::string Hardtanh::extra_repr() const {
  return fmt::format("min_val={}, max_val={}", python_float(min_val), python_float(max_val));
}

}  // namespace tritium::nn
