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
#include <string>
#include <utility>
#include <vector>

#include "io/json.h"
#include "nn/state_dict.h"
#include "runtime/tensor.h"

namespace tritium::nn {

using runtime::Tensor;

// An optimiser's state as PyTorch's optimizer.state_dict(), flattened for a safetensors file:
// tensors "state.<i>.<name>" (i the parameter's index; "step" a 0-dim f32 as PyTorch's,
// "momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "square_avg", "grad_avg", "sum":
// PyTorch's names) and string values "optimizer" (the class name),
// "num_params" and "param_groups" (PyTorch's param_groups as JSON: the hyperparameters and
// "params": [0, ..., n-1]).
struct OptimizerState {
  StateDict tensors;
  io::Metadata metadata;
};

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params);
  virtual ~Optimizer() = default;
  // Drops every parameter's gradient (PyTorch's set_to_none=True).
  void zero_grad();
  virtual void step() = 0;
  const std::vector<Tensor>& params() const { return params_; }
  virtual std::string name() const = 0;

  // GradScaler (nn/grad_scaler.h): while found_inf (a 0-dim f32 tensor on the parameters'
  // device) is set, every update kernel reads it and leaves the parameter and its state
  // unchanged when it is nonzero, without a host synchronisation (PyTorch's fused optimisers'
  // found_inf). An undefined tensor turns the check off.
  void skip_if(Tensor found_inf) { found_inf_ = std::move(found_inf); }

  OptimizerState state_dict() const;
  // Restores hyperparameters and state saved by state_dict() (of an optimiser of the same class
  // over parameters of the same shapes). Everything is checked before anything changes: another
  // optimiser class, another parameter count, a state tensor of the wrong shape or dtype, an
  // unknown key or a malformed param_groups are errors naming the problem.
  void load_state_dict(const OptimizerState& state);

 protected:
  // Checks parameter i and returns its gradient ready for a kernel (contiguous, same shape), or
  // an undefined tensor when it has none.
  Tensor grad_for_step(size_t i, const char* optimizer) const;

  // What state_dict() / load_state_dict() need of each class: the hyperparameters as a JSON
  // object's members, the names of the per-parameter state tensors, and the state itself.
  virtual std::string hyperparameters_json() const = 0;
  virtual void set_hyperparameters(const io::Json& group) = 0;
  virtual std::vector<std::string> state_names() const = 0;
  // The state tensor `name` of parameter i (undefined when not created yet).
  virtual Tensor state_tensor(size_t i, const std::string& name) const = 0;
  virtual void set_state_tensor(size_t i, const std::string& name, Tensor value) = 0;
  // Clears the state of parameter i (a parameter the loaded state has none for).
  virtual void clear_state(size_t i) = 0;

  // Runs update(i, p, g, n, opts) for every parameter i with a gradient, outside autograd, and
  // marks p as changed in place (a graph that saved p then refuses backward, as PyTorch's).
  template <class Update>
  void update_each(const char* optimizer, Update&& update);

  // skip_if's flag for a launch over p (p itself, never read, when the check is off).
  const Tensor& skip_flag(const Tensor& p) const { return found_inf_.defined() ? found_inf_ : p; }

  std::vector<Tensor> params_;
  Tensor found_inf_;  // skip_if's flag
};

// p -= lr * g', where g = grad + weight_decay * p, and with momentum:
// buf = g (first step) or momentum * buf + (1 - dampening) * g; g' = g + momentum * buf if
// nesterov else buf.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, double lr, double momentum = 0, double weight_decay = 0, double dampening = 0,
      bool nesterov = false);
  void step() override;
  std::string name() const override { return "SGD"; }
  double lr, momentum, weight_decay, dampening;
  bool nesterov;
  // The momentum buffer of parameter i (undefined before its first step or without momentum).
  const Tensor& momentum_buffer(size_t i) const { return buffers_.at(i); }

 protected:
  std::string hyperparameters_json() const override;
  void set_hyperparameters(const io::Json& group) override;
  std::vector<std::string> state_names() const override { return {"momentum_buffer"}; }
  Tensor state_tensor(size_t i, const std::string& name) const override;
  void set_state_tensor(size_t i, const std::string& name, Tensor value) override;
  void clear_state(size_t i) override { buffers_[i] = Tensor(); }

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
  std::string name() const override { return "AdamW"; }
  double lr;
  std::pair<double, double> betas;
  double eps, weight_decay;
  const Tensor& exp_avg(size_t i) const { return exp_avg_.at(i); }
  const Tensor& exp_avg_sq(size_t i) const { return exp_avg_sq_.at(i); }
  int64_t step_count(size_t i) const { return steps_.at(i); }

 protected:
  std::string hyperparameters_json() const override;
  void set_hyperparameters(const io::Json& group) override;
  std::vector<std::string> state_names() const override { return {"step", "exp_avg", "exp_avg_sq"}; }
  Tensor state_tensor(size_t i, const std::string& name) const override;
  void set_state_tensor(size_t i, const std::string& name, Tensor value) override;
  void clear_state(size_t i) override;

 private:
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
  std::vector<int64_t> steps_;
};

// Adam, PyTorch's torch.optim.Adam: weight_decay is L2 added to the gradient (g += wd * p), then
// as AdamW; with amsgrad, max_exp_avg_sq = max(max_exp_avg_sq, v) replaces v in the denominator.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
       double eps = 1e-8, double weight_decay = 0, bool amsgrad = false);
  void step() override;
  std::string name() const override { return "Adam"; }
  double lr;
  std::pair<double, double> betas;
  double eps, weight_decay;
  bool amsgrad;
  const Tensor& exp_avg(size_t i) const { return exp_avg_.at(i); }
  const Tensor& exp_avg_sq(size_t i) const { return exp_avg_sq_.at(i); }
  const Tensor& max_exp_avg_sq(size_t i) const { return max_exp_avg_sq_.at(i); }
  int64_t step_count(size_t i) const { return steps_.at(i); }

 protected:
  std::string hyperparameters_json() const override;
  void set_hyperparameters(const io::Json& group) override;
  std::vector<std::string> state_names() const override;
  Tensor state_tensor(size_t i, const std::string& name) const override;
  void set_state_tensor(size_t i, const std::string& name, Tensor value) override;
  void clear_state(size_t i) override;

 private:
  std::vector<Tensor> exp_avg_, exp_avg_sq_, max_exp_avg_sq_;
  std::vector<int64_t> steps_;
};

// RMSprop, PyTorch's torch.optim.RMSprop: g = grad + wd * p; sq = alpha sq + (1 - alpha) g^2;
// centered: ga = alpha ga + (1 - alpha) g, avg = sqrt(sq - ga^2) + eps, else avg = sqrt(sq) + eps;
// momentum > 0: buf = momentum buf + g / avg, p -= lr buf; else p -= lr g / avg.
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, double lr = 1e-2, double alpha = 0.99, double eps = 1e-8,
          double weight_decay = 0, double momentum = 0, bool centered = false);
  void step() override;
  std::string name() const override { return "RMSprop"; }
  double lr, alpha, eps, weight_decay, momentum;
  bool centered;
  const Tensor& square_avg(size_t i) const { return square_avg_.at(i); }
  int64_t step_count(size_t i) const { return steps_.at(i); }

 protected:
  std::string hyperparameters_json() const override;
  void set_hyperparameters(const io::Json& group) override;
  // step and square_avg; momentum_buffer with momentum > 0; grad_avg when centered (as PyTorch).
  std::vector<std::string> state_names() const override;
  Tensor state_tensor(size_t i, const std::string& name) const override;
  void set_state_tensor(size_t i, const std::string& name, Tensor value) override;
  void clear_state(size_t i) override;

 private:
  std::vector<Tensor> square_avg_, grad_avg_, momentum_buffer_;
  std::vector<int64_t> steps_;
};

// Adagrad, PyTorch's torch.optim.Adagrad: t += 1; g = grad + wd * p; sum += g^2;
// p -= clr * g / (sqrt(sum) + eps), clr = lr / (1 + (t - 1) * lr_decay). The state (sum filled
// with initial_accumulator_value) is created on a parameter's first step, not in the constructor
// as PyTorch's, so a state_dict before any step is empty.
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Tensor> params, double lr = 1e-2, double lr_decay = 0, double weight_decay = 0,
          double initial_accumulator_value = 0, double eps = 1e-10);
  void step() override;
  std::string name() const override { return "Adagrad"; }
  double lr, lr_decay, weight_decay, initial_accumulator_value, eps;
  const Tensor& sum(size_t i) const { return sum_.at(i); }
  int64_t step_count(size_t i) const { return steps_.at(i); }

 protected:
  std::string hyperparameters_json() const override;
  void set_hyperparameters(const io::Json& group) override;
  std::vector<std::string> state_names() const override { return {"step", "sum"}; }
  Tensor state_tensor(size_t i, const std::string& name) const override;
  void set_state_tensor(size_t i, const std::string& name, Tensor value) override;
  void clear_state(size_t i) override;

 private:
  std::vector<Tensor> sum_;
  std::vector<int64_t> steps_;
};

}  // namespace tritium::nn
