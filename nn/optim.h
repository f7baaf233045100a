// Optimisers, as torch.optim, with PyTorch's update formulas. Each step() updates every
// parameter with ONE fused Tritium kernel per parameter (parameter, gradient and state are
// loaded, updated and stored in a single pass), in place and outside autograd. State tensors
// (momentum buffers, exp_avg, exp_avg_sq) are created on a parameter's first step. Parameters
// without a gradient are skipped, as in PyTorch. Parameters and gradients must be f32 and on
// the same device; a parameter must be contiguous (a gradient that is not is copied first).
//
//   nn::AdamW opt(model.parameters(), 1e-3);
//   opt.zero_grad(); loss.backward(); opt.step();
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/tensor.h"

namespace tritium::nn {

using runtime::Tensor;

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params);
  virtual ~Optimizer() = default;
  // Drops every parameter's gradient (PyTorch's set_to_none=True).
  void zero_grad();
  virtual void step() = 0;
  const std::vector<Tensor>& params() const { return params_; }

 protected:
  // Checks parameter i and returns its gradient ready for a kernel (contiguous, same shape), or
  // an undefined tensor when it has none.
  Tensor grad_for_step(size_t i, const char* optimizer) const;

  std::vector<Tensor> params_;
};

// p -= lr * g', where g = grad + weight_decay * p, and with momentum:
// buf = g (first step) or momentum * buf + (1 - dampening) * g; g' = g + momentum * buf if
// nesterov else buf.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, double lr, double momentum = 0, double weight_decay = 0, double dampening = 0,
      bool nesterov = false);
  void step() override;
  double lr, momentum, weight_decay, dampening;
  bool nesterov;
  // The momentum buffer of parameter i (undefined before its first step or without momentum).
  const Tensor& momentum_buffer(size_t i) const { return buffers_.at(i); }

 private:
  std::vector<Tensor> buffers_;
};

// Adam with decoupled weight decay (Loshchilov & Hutter), PyTorch's torch.optim.AdamW:
// t += 1; p *= 1 - lr * weight_decay; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Tensor> params, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
        double eps = 1e-8, double weight_decay = 1e-2);
  void step() override;
  double lr;
  std::pair<double, double> betas;
  double eps, weight_decay;
  const Tensor& exp_avg(size_t i) const { return exp_avg_.at(i); }
  const Tensor& exp_avg_sq(size_t i) const { return exp_avg_sq_.at(i); }
  int64_t step_count(size_t i) const { return steps_.at(i); }

 private:
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
  std::vector<int64_t> steps_;
};

}  // namespace tritium::nn
