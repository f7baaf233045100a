#include "nn/optim.h"

#include <cmath>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nn/autograd.h"
#include "nn/optim_kernels.h"
#include "ops/ops.h"

namespace tritium::nn {

namespace ok = optim_kernels;

namespace {

// PyTorch's constructor checks, with its wording.
void check_at_least(const std::string& optimizer, const char* what, double value, double low) {
  if (!(value >= low)) fail("{}: invalid {} {}", optimizer, what, value);
}
void check_beta(const std::string& optimizer, int index, double beta) {
  if (!(beta >= 0 && beta < 1)) fail("{}: invalid beta parameter at index {}: {}", optimizer, index, beta);
}
bool flag(const OptionMap& o, const char* name) { return o.at(name) != 0; }

}  // namespace

// ---- ParamGroup -------------------------------------------------------------------------------------

double& ParamGroup::option(const std::string& name) {
  auto it = options.find(name);
  if (it == options.end()) {
    std::vector<std::string> known;
    for (const auto& [k, v] : options) known.push_back(k);
    fail("ParamGroup: no option \"{}\" (the group has {})", name, fmt::join(known, ", "));
  }
  return it->second;
}
double ParamGroup::option(const std::string& name) const { return const_cast<ParamGroup*>(this)->option(name); }

// ---- Optimizer --------------------------------------------------------------------------------------

Optimizer::Optimizer(std::string name, OptionMap defaults) : name_(std::move(name)), defaults_(std::move(defaults)) {}

void Optimizer::init(std::vector<ParamGroup> groups) {
  check_options(defaults_);
  if (groups.empty()) fail("{}: optimizer got an empty parameter list", name_);
  for (ParamGroup& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  if (group.params.empty()) fail("{}: optimizer got an empty parameter list (parameter group {})", name_, groups_.size());
  // A parameter's identity: its storage, offset and shape (parameters may be views of one
  // flat buffer; the same view twice is the same parameter).
  using Key = std::tuple<const void*, int64_t, std::vector<int64_t>>;
  auto key = [](const Tensor& p) { return Key{p.storage().get(), p.storage_offset(), p.shape()}; };
  std::set<Key> seen;
  for (const Tensor& p : params_) seen.insert(key(p));
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    if (!p.defined()) fail("{}: parameter {} of group {} is an undefined tensor", name_, i, groups_.size());
    if (!p.is_leaf()) fail("{}: parameter {} of group {} ({}) is not a leaf tensor", name_, i, groups_.size(), p.str());
    if (!seen.insert(key(p)).second)
      fail("{}: some parameters appear in more than one parameter group (parameter {} of group {})", name_, i,
           groups_.size());
  }
  OptionMap merged = defaults_;
  for (const auto& [k, v] : group.options) merged[k] = v;
  check_options(merged);
  group.options = std::move(merged);
  for (const Tensor& p : group.params) {
    params_.push_back(p);
    state_.emplace_back();
    steps_.push_back(0);
  }
  groups_.push_back(std::move(group));
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

Tensor Optimizer::state(size_t i, const std::string& name) const {
  const auto& s = state_.at(i);
  auto it = s.find(name);
  return it == s.end() ? Tensor() : it->second;
}

Tensor& Optimizer::state_or_fill(size_t i, const std::string& name, double fill) {
  Tensor& t = state_.at(i)[name];
  if (!t.defined()) t = ops::full(params_[i].shape(), fill, params_[i].dtype(), params_[i].device());
  return t;
}

Tensor Optimizer::grad_for_step(size_t i) const {
  const Tensor& p = params_[i];
  Tensor g = p.grad();
  if (!g.defined()) return g;
  if (p.dtype() != DType::f32 && p.dtype() != DType::f16 && p.dtype() != DType::bf16)
    fail("{}: parameter {} is {}; f32, f16 and bf16 parameters are supported", name_, i, dtype_name(p.dtype()));
  if (g.dtype() != p.dtype())
    fail("{}: parameter {} is {} with a {} gradient; they must have the same dtype", name_, i, dtype_name(p.dtype()),
         dtype_name(g.dtype()));
  if (g.shape() != p.shape()) fail("{}: parameter {} is {} but its gradient is {}", name_, i, p.str(), g.str());
  if (!(g.device() == p.device()))
    fail("{}: parameter {} is on {} but its gradient on {}", name_, i, p.device().str(), g.device().str());
  if (!p.is_contiguous()) fail("{}: parameter {} ({}) is not contiguous", name_, i, p.str());
  return g.is_contiguous() ? g : ops::contiguous(g);
}

void Optimizer::step() {
  NoGradGuard no_grad;
  // Everything is checked before anything changes.
  if (found_inf_.defined() && (found_inf_.dtype() != DType::f32 || found_inf_.numel() != 1))
    fail("{}: found_inf must be a 0-dim f32 tensor (skip_if), got {}", name_, found_inf_.str());
  grads_.assign(params_.size(), Tensor());
  for (size_t i = 0; i < params_.size(); ++i) {
    grads_[i] = grad_for_step(i);
    // skip_if's flag is read by the kernels on the parameters' device.
    if (found_inf_.defined() && grads_[i].defined() && !(found_inf_.device() == params_[i].device()))
      fail("{}: found_inf is on {} but parameter {} on {}", name_, found_inf_.device().str(), i,
           params_[i].device().str());
  }
  last_step_launches_ = 0;
  size_t first = 0;
  for (const ParamGroup& group : groups_) {
    // The group's parameters with a gradient, by dtype and device: one list per launch.
    std::vector<std::vector<size_t>> lists;
    for (size_t i = first; i < first + group.params.size(); ++i) {
      if (!grads_[i].defined()) continue;
      auto same = [&](const std::vector<size_t>& l) {
        return params_[l[0]].dtype() == params_[i].dtype() && params_[l[0]].device() == params_[i].device();
      };
      auto it = std::find_if(lists.begin(), lists.end(), same);
      if (it == lists.end()) lists.push_back({i});
      else it->push_back(i);
    }
    for (const auto& idx : lists) last_step_launches_ += update(group.options, idx, foreach && idx.size() > 1);
    for (const auto& idx : lists)
      for (size_t i : idx) params_[i].storage()->bump_version();  // in place, as PyTorch's: a graph that saved p refuses backward
    first += group.params.size();
  }
  grads_.clear();
}

// ---- SGD ---------------------------------------------------------------------------------------------

SGD::SGD(std::vector<Tensor> params, double lr, double momentum, double weight_decay, double dampening, bool nesterov)
    : SGD(std::vector<ParamGroup>{{std::move(params), {}}}, lr, momentum, weight_decay, dampening, nesterov) {}

SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum, double weight_decay, double dampening,
         bool nesterov)
    : Optimizer("SGD", {{"lr", lr}, {"momentum", momentum}, {"dampening", dampening}, {"weight_decay", weight_decay},
                        {"nesterov", nesterov ? 1 : 0}}) {
  init(std::move(groups));
}

void SGD::check_options(const OptionMap& o) const {
  check_at_least(name_, "learning rate", o.at("lr"), 0);
  check_at_least(name_, "momentum", o.at("momentum"), 0);
  check_at_least(name_, "weight_decay", o.at("weight_decay"), 0);
  if (flag(o, "nesterov") && (o.at("momentum") <= 0 || o.at("dampening") != 0))
    fail("SGD: nesterov momentum requires a momentum > 0 and zero dampening (momentum {}, dampening {})",
         o.at("momentum"), o.at("dampening"));
}

std::vector<std::string> SGD::state_names(const OptionMap& o) const {
  if (o.at("momentum") == 0) return {};
  return {"momentum_buffer"};
}

int64_t SGD::update(const OptionMap& o, const std::vector<size_t>& idx, bool multi) {
  double momentum = o.at("momentum");
  std::vector<ok::Slot> slots;
  for (size_t i : idx) {
    ok::Slot s;
    s.p = params_[i], s.g = grads_[i];
    if (momentum != 0) {
      bool first = !state(i, "momentum_buffer").defined();
      s.state[0] = state_or_fill(i, "momentum_buffer");
      s.scalars = {first ? 0.0f : float(momentum), first ? 1.0f : float(1 - o.at("dampening"))};
    }
    slots.push_back(std::move(s));
  }
  return ok::sgd(slots, multi, float(o.at("lr")), float(o.at("weight_decay")), float(momentum), momentum != 0,
                 flag(o, "nesterov"), found_inf_);
}

// ---- Adam and AdamW ----------------------------------------------------------------------------------

Adam::Adam(const char* name, bool decoupled, double lr, std::pair<double, double> betas, double eps,
           double weight_decay, bool amsgrad)
    : Optimizer(name, {{"lr", lr}, {"beta1", betas.first}, {"beta2", betas.second}, {"eps", eps},
                       {"weight_decay", weight_decay}, {"amsgrad", amsgrad ? 1 : 0}}),
      decoupled_(decoupled) {}

Adam::Adam(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps, double weight_decay,
           bool amsgrad)
    : Adam(std::vector<ParamGroup>{{std::move(params), {}}}, lr, betas, eps, weight_decay, amsgrad) {}

Adam::Adam(std::vector<ParamGroup> groups, double lr, std::pair<double, double> betas, double eps, double weight_decay,
           bool amsgrad)
    : Adam("Adam", false, lr, betas, eps, weight_decay, amsgrad) {
  init(std::move(groups));
}

AdamW::AdamW(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps, double weight_decay,
             bool amsgrad)
    : AdamW(std::vector<ParamGroup>{{std::move(params), {}}}, lr, betas, eps, weight_decay, amsgrad) {}

AdamW::AdamW(std::vector<ParamGroup> groups, double lr, std::pair<double, double> betas, double eps,
             double weight_decay, bool amsgrad)
    : Adam("AdamW", true, lr, betas, eps, weight_decay, amsgrad) {
  init(std::move(groups));
}

void Adam::check_options(const OptionMap& o) const {
  check_at_least(name_, "learning rate", o.at("lr"), 0);
  check_at_least(name_, "epsilon", o.at("eps"), 0);
  check_beta(name_, 0, o.at("beta1"));
  check_beta(name_, 1, o.at("beta2"));
  check_at_least(name_, "weight_decay", o.at("weight_decay"), 0);
}

std::vector<std::string> Adam::state_names(const OptionMap& o) const {
  if (flag(o, "amsgrad")) return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"step", "exp_avg", "exp_avg_sq"};
}

int64_t Adam::update(const OptionMap& o, const std::vector<size_t>& idx, bool multi) {
  double lr = o.at("lr"), beta1 = o.at("beta1"), beta2 = o.at("beta2"), wd = o.at("weight_decay");
  bool amsgrad = flag(o, "amsgrad");
  std::vector<ok::Slot> slots;
  for (size_t i : idx) {
    ok::Slot s;
    s.p = params_[i], s.g = grads_[i];
    s.state[0] = state_or_fill(i, "exp_avg");
    s.state[1] = state_or_fill(i, "exp_avg_sq");
    if (amsgrad) s.state[2] = state_or_fill(i, "max_exp_avg_sq");
    double t = double(++steps_[i]);
    double bias_correction1 = 1 - std::pow(beta1, t), bias_correction2 = 1 - std::pow(beta2, t);
    s.scalars = {float(lr / bias_correction1), float(std::sqrt(bias_correction2))};
    slots.push_back(std::move(s));
  }
  return ok::adam(slots, multi, decoupled_ ? float(1 - lr * wd) : 1.0f, decoupled_ ? 0.0f : float(wd), beta1, beta2,
                  float(o.at("eps")), amsgrad, found_inf_);
}

// ---- RMSprop -----------------------------------------------------------------------------------------

RMSprop::RMSprop(std::vector<Tensor> params, double lr, double alpha, double eps, double weight_decay, double momentum,
                 bool centered)
    : RMSprop(std::vector<ParamGroup>{{std::move(params), {}}}, lr, alpha, eps, weight_decay, momentum, centered) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, double lr, double alpha, double eps, double weight_decay,
                 double momentum, bool centered)
    : Optimizer("RMSprop", {{"lr", lr}, {"momentum", momentum}, {"alpha", alpha}, {"eps", eps},
                            {"centered", centered ? 1 : 0}, {"weight_decay", weight_decay}}) {
  init(std::move(groups));
}

void RMSprop::check_options(const OptionMap& o) const {
  check_at_least(name_, "learning rate", o.at("lr"), 0);
  check_at_least(name_, "epsilon", o.at("eps"), 0);
  check_at_least(name_, "momentum", o.at("momentum"), 0);
  check_at_least(name_, "weight_decay", o.at("weight_decay"), 0);
  check_at_least(name_, "alpha", o.at("alpha"), 0);
}

std::vector<std::string> RMSprop::state_names(const OptionMap& o) const {
  std::vector<std::string> names{"step", "square_avg"};
  if (o.at("momentum") > 0) names.push_back("momentum_buffer");
  if (flag(o, "centered")) names.push_back("grad_avg");
  return names;
}

int64_t RMSprop::update(const OptionMap& o, const std::vector<size_t>& idx, bool multi) {
  double momentum = o.at("momentum");
  bool centered = flag(o, "centered");
  std::vector<ok::Slot> slots;
  for (size_t i : idx) {
    ok::Slot s;
    s.p = params_[i], s.g = grads_[i];
    s.state[0] = state_or_fill(i, "square_avg");
    if (centered) s.state[1] = state_or_fill(i, "grad_avg");
    if (momentum > 0) s.state[2] = state_or_fill(i, "momentum_buffer");
    ++steps_[i];
    slots.push_back(std::move(s));
  }
  return ok::rmsprop(slots, multi, float(o.at("lr")), float(o.at("weight_decay")), o.at("alpha"), float(o.at("eps")),
                     float(momentum), centered, momentum > 0, found_inf_);
}

// ---- Adagrad -----------------------------------------------------------------------------------------

Adagrad::Adagrad(std::vector<Tensor> params, double lr, double lr_decay, double weight_decay,
                 double initial_accumulator_value, double eps)
    : Adagrad(std::vector<ParamGroup>{{std::move(params), {}}}, lr, lr_decay, weight_decay, initial_accumulator_value,
              eps) {}

Adagrad::Adagrad(std::vector<ParamGroup> groups, double lr, double lr_decay, double weight_decay,
                 double initial_accumulator_value, double eps)
    : Optimizer("Adagrad", {{"lr", lr}, {"lr_decay", lr_decay}, {"eps", eps}, {"weight_decay", weight_decay},
                            {"initial_accumulator_value", initial_accumulator_value}}) {
  init(std::move(groups));
}

void Adagrad::check_options(const OptionMap& o) const {
  check_at_least(name_, "learning rate", o.at("lr"), 0);
  check_at_least(name_, "lr_decay", o.at("lr_decay"), 0);
  check_at_least(name_, "weight_decay", o.at("weight_decay"), 0);
  check_at_least(name_, "initial_accumulator_value", o.at("initial_accumulator_value"), 0);
  check_at_least(name_, "epsilon", o.at("eps"), 0);
}

int64_t Adagrad::update(const OptionMap& o, const std::vector<size_t>& idx, bool multi) {
  double lr = o.at("lr"), lr_decay = o.at("lr_decay");
  std::vector<ok::Slot> slots;
  for (size_t i : idx) {
    ok::Slot s;
    s.p = params_[i], s.g = grads_[i];
    s.state[0] = state_or_fill(i, "sum", o.at("initial_accumulator_value"));
    double t = double(++steps_[i]);
    s.scalars = {float(lr / (1 + (t - 1) * lr_decay)), 0.0f};
    slots.push_back(std::move(s));
  }
  return ok::adagrad(slots, multi, float(o.at("weight_decay")), float(o.at("eps")), found_inf_);
}

}  // namespace tritium::nn
