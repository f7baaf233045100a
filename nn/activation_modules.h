// One module per activation function of nn/elementwise_ops.h and nn/functional.h (torch.nn's
// ReLU, GELU, SiLU, ...): forward calls the differentiable function, the constructor checks its
// arguments as PyTorch's, str() is PyTorch's repr ("LeakyReLU(negative_slope=0.01)").
// (ReLU, the first module, is in nn/module.h.)
#pragma once
#include <string>

#include "nn/module.h"

namespace tritium::nn {

// A module without arguments: forward is the function F.
#define TRITIUM_PLAIN_ACTIVATION(Name)                                          \
  class Name : public Module {                                                  \
   public:                                                                      \
    Tensor forward(const Tensor& x) override;                                   \
    std::string type_name() const override { return #Name; }                    \
  };
TRITIUM_PLAIN_ACTIVATION(SiLU)
TRITIUM_PLAIN_ACTIVATION(Tanh)
TRITIUM_PLAIN_ACTIVATION(Sigmoid)
TRITIUM_PLAIN_ACTIVATION(Mish)
TRITIUM_PLAIN_ACTIVATION(Hardswish)
TRITIUM_PLAIN_ACTIVATION(Hardsigmoid)
TRITIUM_PLAIN_ACTIVATION(ReLU6)
TRITIUM_PLAIN_ACTIVATION(SELU)
TRITIUM_PLAIN_ACTIVATION(Softsign)
TRITIUM_PLAIN_ACTIVATION(Tanhshrink)
#undef TRITIUM_PLAIN_ACTIVATION

// approximate: "none" (erf) or "tanh".
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override { return "approximate='" + approximate + "'"; }
  std::string type_name() const override { return "GELU"; }
  std::string approximate;
};

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope(negative_slope) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "LeakyReLU"; }
  double negative_slope;
};

class ELU : public Module {
 public:
  explicit ELU(double alpha = 1.0) : alpha(alpha) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "ELU"; }
  double alpha;
};

class CELU : public Module {
 public:
  explicit CELU(double alpha = 1.0);  // alpha = 0 is an error (PyTorch's)
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "CELU"; }
  double alpha;
};

class Softplus : public Module {
 public:
  explicit Softplus(double beta = 1.0, double threshold = 20.0) : beta(beta), threshold(threshold) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "Softplus"; }
  double beta, threshold;
};

class Hardtanh : public Module {
 public:
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0);  // min_val > max_val is an error
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "Hardtanh"; }
  double min_val, max_val;
};

}  // namespace tritium::nn
