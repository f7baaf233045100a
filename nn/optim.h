// Optimisers, as torch.optim, with PyTorch's update formulas, over parameter groups.
//
// An optimiser holds a list of ParamGroup, each with its parameters and its own options
// (PyTorch's optimizer.param_groups); options a group does not set come from the constructor's
// (PyTorch's `defaults`). step() updates every parameter that has a gradient, in place and
// outside autograd. With `foreach` (the default) each group's parameters of one dtype and device
// are updated by ONE multi-tensor kernel launch (PyTorch's foreach / fused: nn/optim_kernels.h);
// without it, one launch per parameter. Both give the same values bit for bit. State tensors
// (momentum buffers, exp_avg, ...) are created on a parameter's first step, in the parameter's
// dtype. Parameters may be f32, f16 or bf16 (the gradient of the same dtype): the arithmetic is
// f32 inside the kernel, rounded to the parameter's dtype when stored, as PyTorch's fused
// optimisers. A parameter must be contiguous (a gradient that is not is copied first).
//
//   nn::AdamW opt(model.parameters(), 1e-3);
//   nn::AdamW opt({{decay_params, {}}, {no_decay_params, {{"weight_decay", 0}}}}, 1e-3);
//   opt.param_groups()[0].option("lr") = 1e-4;   // what LR schedulers do
//   opt.zero_grad(); loss.backward(); opt.step();
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/json.h"
#include "nn/state_dict.h"
#include "runtime/tensor.h"

namespace tritium::nn {

using runtime::Tensor;

// Options by PyTorch's names ("lr", "weight_decay", "momentum", ...). C++ has no tuple-valued
// dict entry: Adam's `betas` is "beta1" and "beta2"; booleans (nesterov, amsgrad, centered) are
// 0 or 1. Keys an optimiser does not know (a scheduler's "initial_lr", say) are kept, as
// PyTorch keeps any key of a group.
using OptionMap = std::map<std::string, double>;

// One parameter group, PyTorch's {'params': [...], 'lr': ..., ...}.
struct ParamGroup {
  std::vector<Tensor> params;
  OptionMap options;  // given to a constructor: overrides of the defaults; in an optimiser: all
  // The option `name`; an error naming it and the known ones when the group has none.
  double& option(const std::string& name);
  double option(const std::string& name) const;
  bool has(const std::string& name) const { return options.count(name) != 0; }
};

// An optimiser's state as PyTorch's optimizer.state_dict(), flattened for a safetensors file:
// tensors "state.<i>.<name>" (i the parameter's index counted over the groups in order; "step" a
// 0-dim f32 as PyTorch's, "momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq",
// "square_avg", "grad_avg", "sum": PyTorch's names) and string values "optimizer" (the class
// name), "num_params" and "param_groups" (PyTorch's param_groups as JSON: each group's options
// and "params": its parameters' indices).
struct OptimizerState {
  StateDict tensors;
  io::Metadata metadata;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Drops every parameter's gradient (PyTorch's set_to_none=True).
  void zero_grad();
  // Updates every parameter with a gradient.
  void step();
  // Every parameter, group after group (the indices of state_dict()).
  const std::vector<Tensor>& params() const { return params_; }
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const OptionMap& defaults() const { return defaults_; }
  // Appends a group (PyTorch's add_param_group): options it does not set come from defaults().
  // Errors: no parameters, a parameter already in a group, a parameter that is not a leaf, an
  // invalid option value (PyTorch's checks).
  void add_param_group(ParamGroup group);
  const std::string& name() const { return name_; }

  // One launch per group and dtype/device (true), or one per parameter (false).
  bool foreach = true;
  // Kernel launches made by the last step() (what `foreach` saves).
  int64_t last_step_launches() const { return last_step_launches_; }

  // GradScaler (nn/grad_scaler.h): while found_inf (a 0-dim f32 tensor on the parameters'
  // device) is set, every update kernel (per-parameter and multi-tensor) reads it and leaves the
  // parameters and their state unchanged when it is nonzero, without a host synchronisation
  // (PyTorch's fused optimisers' found_inf). An undefined tensor turns the check off. The host's
  // step counts still advance on a skipped step (nn/grad_scaler.h says what that changes).
  void skip_if(Tensor found_inf) { found_inf_ = std::move(found_inf); }

  // The step count of parameter i (0 before its first step; SGD keeps none).
  int64_t step_count(size_t i) const { return steps_.at(i); }
  // The state tensor `name` of parameter i (PyTorch's state[p][name]; undefined when absent).
  Tensor state(size_t i, const std::string& name) const;

  OptimizerState state_dict() const;
  // Restores the groups' options and the state saved by state_dict() (of an optimiser of the
  // same class whose groups hold parameters of the same shapes). Everything is checked before
  // anything changes: another optimiser class, another number of groups or of parameters in a
  // group, a state tensor of the wrong shape or dtype, an unknown key or a malformed
  // param_groups are errors naming the problem.
  void load_state_dict(const OptimizerState& state);

 protected:
  Optimizer(std::string name, OptionMap defaults);
  // The constructors' tail: checks the defaults and adds the groups.
  void init(std::vector<ParamGroup> groups);

  // What each class defines.
  // Checks a group's options with PyTorch's constructor checks (an Error otherwise).
  virtual void check_options(const OptionMap& o) const = 0;
  // The group's per-parameter state names in state_dict(), "step" first where the class counts
  // steps.
  virtual std::vector<std::string> state_names(const OptionMap& o) const = 0;
  // The JSON of a group's options in PyTorch's order (without "params").
  virtual std::string options_json(const OptionMap& o) const = 0;
  // Updates parameters `idx` (all of group `o`, all with a gradient, of one dtype and device)
  // with one launch per parameter (multi_tensor false) or one for all; returns the launches made.
  virtual int64_t update(const OptionMap& o, const std::vector<size_t>& idx, bool multi_tensor) = 0;

  // Parameter i's gradient ready for a kernel (contiguous, same shape and dtype), or an
  // undefined tensor when it has none.
  Tensor grad_for_step(size_t i) const;
  // The state tensor `name` of parameter i, created filled with `fill` in p's dtype if absent.
  Tensor& state_or_fill(size_t i, const std::string& name, double fill = 0);

  std::string name_;
  OptionMap defaults_;
  std::vector<ParamGroup> groups_;
  std::vector<Tensor> params_;
  std::vector<std::map<std::string, Tensor>> state_;  // per parameter, without "step"
  std::vector<int64_t> steps_;
  std::vector<Tensor> grads_;  // during step(): each parameter's gradient, ready for a kernel
  int64_t last_step_launches_ = 0;
  Tensor found_inf_;  // skip_if's flag (undefined: off), passed to every update kernel
};

// p -= lr * g', where g = grad + weight_decay * p, and with momentum:
// buf = g (first step) or momentum * buf + (1 - dampening) * g; g' = g + momentum * buf if
// nesterov else buf. Options lr, momentum, dampening, weight_decay, nesterov.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, double lr, double momentum = 0, double weight_decay = 0, double dampening = 0,
      bool nesterov = false);
  SGD(std::vector<ParamGroup> groups, double lr, double momentum = 0, double weight_decay = 0, double dampening = 0,
      bool nesterov = false);
  // The momentum buffer of parameter i (undefined before its first step or without momentum).
  Tensor momentum_buffer(size_t i) const { return state(i, "momentum_buffer"); }

 protected:
  void check_options(const OptionMap& o) const override;
  std::vector<std::string> state_names(const OptionMap& o) const override;
  std::string options_json(const OptionMap& o) const override;
  int64_t update(const OptionMap& o, const std::vector<size_t>& idx, bool multi_tensor) override;
};

// Adam with decoupled weight decay (Loshchilov & Hutter), PyTorch's torch.optim.AdamW:
// t += 1; p *= 1 - lr * weight_decay; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps). Options lr, beta1, beta2, eps,
// weight_decay, amsgrad (as Adam's).
// Adam, PyTorch's torch.optim.Adam: weight_decay is L2 added to the gradient (g += wd * p), then
// as AdamW; with amsgrad, max_exp_avg_sq = max(max_exp_avg_sq, v) replaces v in the denominator.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
       double eps = 1e-8, double weight_decay = 0, bool amsgrad = false);
  Adam(std::vector<ParamGroup> groups, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
       double eps = 1e-8, double weight_decay = 0, bool amsgrad = false);
  Tensor exp_avg(size_t i) const { return state(i, "exp_avg"); }
  Tensor exp_avg_sq(size_t i) const { return state(i, "exp_avg_sq"); }
  Tensor max_exp_avg_sq(size_t i) const { return state(i, "max_exp_avg_sq"); }

 protected:
  Adam(const char* name, bool decoupled, double lr, std::pair<double, double> betas, double eps, double weight_decay,
       bool amsgrad);
  void check_options(const OptionMap& o) const override;
  std::vector<std::string> state_names(const OptionMap& o) const override;
  std::string options_json(const OptionMap& o) const override;
  int64_t update(const OptionMap& o, const std::vector<size_t>& idx, bool multi_tensor) override;

 private:
  bool decoupled_;  // AdamW's decay
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
        double eps = 1e-8, double weight_decay = 1e-2, bool amsgrad = false);
  AdamW(std::vector<ParamGroup> groups, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
        double eps = 1e-8, double weight_decay = 1e-2, bool amsgrad = false);
};

// RMSprop, PyTorch's torch.optim.RMSprop: g = grad + wd * p; sq = alpha sq + (1 - alpha) g^2;
// centered: ga = alpha ga + (1 - alpha) g, avg = sqrt(sq - ga^2) + eps, else avg = sqrt(sq) + eps;
// momentum > 0: buf = momentum buf + g / avg, p -= lr buf; else p -= lr g / avg. Options lr,
// alpha, eps, weight_decay, momentum, centered.
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, double lr = 1e-2, double alpha = 0.99, double eps = 1e-8,
          double weight_decay = 0, double momentum = 0, bool centered = false);
  RMSprop(std::vector<ParamGroup> groups, double lr = 1e-2, double alpha = 0.99, double eps = 1e-8,
          double weight_decay = 0, double momentum = 0, bool centered = false);
  Tensor square_avg(size_t i) const { return state(i, "square_avg"); }

 protected:
  void check_options(const OptionMap& o) const override;
  // step and square_avg; momentum_buffer with momentum > 0; grad_avg when centered (as PyTorch).
  std::vector<std::string> state_names(const OptionMap& o) const override;
  std::string options_json(const OptionMap& o) const override;
  int64_t update(const OptionMap& o, const std::vector<size_t>& idx, bool multi_tensor) override;
};

// Adagrad, PyTorch's torch.optim.Adagrad: t += 1; g = grad + wd * p; sum += g^2;
// p -= clr * g / (sqrt(sum) + eps), clr = lr / (1 + (t - 1) * lr_decay). The state (sum filled
// with initial_accumulator_value) is created on a parameter's first step, not in the constructor
// as PyTorch's, so a state_dict before any step is empty. Options lr, lr_decay, weight_decay,
// initial_accumulator_value, eps.
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Tensor> params, double lr = 1e-2, double lr_decay = 0, double weight_decay = 0,
          double initial_accumulator_value = 0, double eps = 1e-10);
  Adagrad(std::vector<ParamGroup> groups, double lr = 1e-2, double lr_decay = 0, double weight_decay = 0,
          double initial_accumulator_value = 0, double eps = 1e-10);
  Tensor sum(size_t i) const { return state(i, "sum"); }

 protected:
  void check_options(const OptionMap& o) const override;
  std::vector<std::string> state_names(const OptionMap&) const override { return {"step", "sum"}; }
  std::string options_json(const OptionMap& o) const override;
  int64_t update(const OptionMap& o, const std::vector<size_t>& idx, bool multi_tensor) override;
};

}  // namespace tritium::nn
