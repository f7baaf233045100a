// Optimizer::state_dict / load_state_dict (nn/optim.h): PyTorch's optimizer.state_dict()
// flattened into safetensors-ready tensors and string metadata, and the per-class pieces of SGD
// and AdamW. Loading validates everything before it changes anything.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nn/autograd.h"
#include "nn/optim.h"
#include "ops/ops.h"

namespace tritium::nn {

namespace {

// A double as a JSON number that reads back to the same double.
std::string json_number(double v) {
  if (!std::isfinite(v)) fail("optimizer state_dict: hyperparameter {} is not finite", v);
  return fmt::format("{}", v);
}

double read_number(const io::Json& group, const char* key, const std::string& optimizer) {
  return group.at(key, optimizer + " param_groups").as_double(fmt::format("{} param_groups \"{}\"", optimizer, key));
}

// A step count as PyTorch keeps it: a 0-dim f32 on the host, written without a kernel (a
// CUDA-only build has no CPU backend); and back (load_state_dict has checked it).
Tensor step_tensor(int64_t step) {
  return Tensor::from_vector(std::vector<float>{static_cast<float>(step)}, {}, Device::cpu());
}
int64_t read_step(const Tensor& t) {
  return static_cast<int64_t>(t.reshape({}).to(Device::cpu()).to_vector<float>().at(0));
}

std::pair<double, double> read_betas(const io::Json& group, const std::string& optimizer) {
  const auto& b = group.at("betas", optimizer + " param_groups").as_array(optimizer + " param_groups \"betas\"");
  if (b.size() != 2) fail("{}::load_state_dict: betas must hold 2 numbers, got {}", optimizer, b.size());
  return {b[0].as_double(optimizer + " betas"), b[1].as_double(optimizer + " betas")};
}

bool read_bool(const io::Json& group, const char* key, const std::string& optimizer) {
  return group.at(key, optimizer + " param_groups").as_bool(fmt::format("{} param_groups \"{}\"", optimizer, key));
}

}  // namespace

OptimizerState Optimizer::state_dict() const {
  OptimizerState out;
  for (size_t i = 0; i < params_.size(); ++i)
    for (const std::string& name : state_names()) {
      Tensor t = state_tensor(i, name);
      if (t.defined()) out.tensors.insert(fmt::format("state.{}.{}", i, name), t);
    }
  std::vector<size_t> indices(params_.size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  out.metadata["optimizer"] = name();
  out.metadata["num_params"] = std::to_string(params_.size());
  out.metadata["param_groups"] =
      fmt::format("[{{{}, \"params\": [{}]}}]", hyperparameters_json(), fmt::join(indices, ", "));
  return out;
}

void Optimizer::load_state_dict(const OptimizerState& state) {
  const std::string who = name() + "::load_state_dict";
  auto meta = [&](const char* key) -> const std::string& {
    auto it = state.metadata.find(key);
    if (it == state.metadata.end()) fail("{}: the state has no \"{}\" entry (not an optimizer state?)", who, key);
    return it->second;
  };
  if (meta("optimizer") != name())
    fail("{}: the state is of a {} optimizer, not of a {}", who, meta("optimizer"), name());
  if (meta("num_params") != std::to_string(params_.size()))
    fail("{}: the state is for {} parameters, this optimizer has {}", who, meta("num_params"), params_.size());
  io::Json groups = io::parse_json(meta("param_groups"), who + ": param_groups");
  const auto& list = groups.as_array(who + ": param_groups");
  if (list.size() != 1) fail("{}: {} parameter groups in the state; one is supported", who, list.size());
  const io::Json& group = list[0];
  const auto& indices = group.at("params", who + ": param_groups").as_array(who + ": param_groups \"params\"");
  if (indices.size() != params_.size())
    fail("{}: param_groups lists {} parameters, this optimizer has {}", who, indices.size(), params_.size());
  for (size_t i = 0; i < indices.size(); ++i)
    if (indices[i].as_int64(who + ": param_groups \"params\"") != static_cast<int64_t>(i))
      fail("{}: param_groups \"params\" must be 0, 1, ..., {}", who, params_.size() - 1);

  // Every tensor: a known name, a parameter index in range, the parameter's shape (step: 0-dim), f32.
  const std::vector<std::string> names = state_names();
  std::map<size_t, std::map<std::string, Tensor>> by_param;
  for (const auto& [key, t] : state.tensors) {
    size_t dot1 = key.find('.'), dot2 = key.find('.', dot1 + 1);
    if (key.rfind("state.", 0) != 0 || dot2 == std::string::npos)
      fail("{}: unexpected key \"{}\" (expected state.<index>.<name>)", who, key);
    std::string index_text = key.substr(dot1 + 1, dot2 - dot1 - 1), field = key.substr(dot2 + 1);
    if (index_text.empty() || index_text.find_first_not_of("0123456789") != std::string::npos)
      fail("{}: unexpected key \"{}\" (expected state.<index>.<name>)", who, key);
    size_t i = std::stoul(index_text);
    if (i >= params_.size()) fail("{}: \"{}\" is for parameter {}, this optimizer has {}", who, key, i, params_.size());
    if (std::find(names.begin(), names.end(), field) == names.end())
      fail("{}: unexpected key \"{}\" ({} state is {})", who, key, name(), fmt::join(names, ", "));
    if (t.dtype() != DType::f32) fail("{}: \"{}\" is {}, expected f32", who, key, dtype_name(t.dtype()));
    bool scalar = field == "step";
    if (scalar ? t.numel() != 1 : t.shape() != params_[i].shape())
      fail("{}: \"{}\" has shape [{}], parameter {} has shape [{}]", who, key, fmt::join(t.shape(), ", "), i,
           fmt::join(params_[i].shape(), ", "));
    if (scalar) {
      float step = t.reshape({}).to(Device::cpu()).to_vector<float>().at(0);
      if (!(step >= 1) || step != std::floor(step))
        fail("{}: \"{}\" is {}, not a positive integer step count", who, key, step);
    }
    by_param[i][field] = t;
  }
  for (const auto& [i, fields] : by_param)
    if (fields.size() != names.size())
      fail("{}: the state of parameter {} is incomplete (has {} of {})", who, i, fields.size(), fmt::join(names, ", "));

  set_hyperparameters(group);  // validates and throws before assigning
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    clear_state(i);
    auto it = by_param.find(i);
    if (it == by_param.end()) continue;
    for (auto& [field, t] : it->second) set_state_tensor(i, field, ops::clone(t.to(params_[i].device())));
  }
}

// ---- SGD ------------------------------------------------------------------------------------------

std::string SGD::hyperparameters_json() const {
  return fmt::format("\"lr\": {}, \"momentum\": {}, \"dampening\": {}, \"weight_decay\": {}, \"nesterov\": {}, "
                     "\"maximize\": false, \"foreach\": null, \"differentiable\": false, \"fused\": null",
                     json_number(lr), json_number(momentum), json_number(dampening), json_number(weight_decay),
                     nesterov ? "true" : "false");
}

void SGD::set_hyperparameters(const io::Json& group) {
  double new_lr = read_number(group, "lr", "SGD"), new_momentum = read_number(group, "momentum", "SGD");
  double new_dampening = read_number(group, "dampening", "SGD");
  double new_wd = read_number(group, "weight_decay", "SGD");
  bool new_nesterov = group.at("nesterov", "SGD param_groups").as_bool("SGD param_groups \"nesterov\"");
  lr = new_lr, momentum = new_momentum, dampening = new_dampening, weight_decay = new_wd, nesterov = new_nesterov;
}

Tensor SGD::state_tensor(size_t i, const std::string&) const { return buffers_[i]; }
void SGD::set_state_tensor(size_t i, const std::string&, Tensor value) { buffers_[i] = std::move(value); }

// ---- AdamW ----------------------------------------------------------------------------------------

std::string AdamW::hyperparameters_json() const {
  return fmt::format("\"lr\": {}, \"betas\": [{}, {}], \"eps\": {}, \"weight_decay\": {}, \"amsgrad\": false, "
                     "\"maximize\": false, \"foreach\": null, \"capturable\": false, \"differentiable\": false, "
                     "\"fused\": null", json_number(lr), json_number(betas.first), json_number(betas.second),
                     json_number(eps), json_number(weight_decay));
}

void AdamW::set_hyperparameters(const io::Json& group) {
  double new_lr = read_number(group, "lr", "AdamW"), new_eps = read_number(group, "eps", "AdamW");
  double new_wd = read_number(group, "weight_decay", "AdamW");
  std::pair<double, double> new_betas = read_betas(group, "AdamW");
  if (group.find("amsgrad") && group.at("amsgrad", "AdamW").as_bool("AdamW param_groups \"amsgrad\""))
    fail("AdamW::load_state_dict: the state uses amsgrad, which this AdamW does not implement");
  lr = new_lr, eps = new_eps, weight_decay = new_wd, betas = new_betas;
}

Tensor AdamW::state_tensor(size_t i, const std::string& name) const {
  if (!exp_avg_[i].defined()) return Tensor();
  // On the host as PyTorch keeps it, written without a kernel (a CUDA-only build has no CPU backend).
  if (name == "step") return step_tensor(steps_[i]);
  return name == "exp_avg" ? exp_avg_[i] : exp_avg_sq_[i];
}

void AdamW::set_state_tensor(size_t i, const std::string& name, Tensor value) {
  if (name == "step") {
    steps_[i] = read_step(value);
  } else if (name == "exp_avg") {
    exp_avg_[i] = std::move(value);
  } else {
    exp_avg_sq_[i] = std::move(value);
  }
}

void AdamW::clear_state(size_t i) {
  exp_avg_[i] = Tensor(), exp_avg_sq_[i] = Tensor();
  steps_[i] = 0;
}

// ---- Adam -----------------------------------------------------------------------------------------

std::string Adam::hyperparameters_json() const {
  return fmt::format("\"lr\": {}, \"betas\": [{}, {}], \"eps\": {}, \"weight_decay\": {}, \"amsgrad\": {}, "
                     "\"maximize\": false, \"foreach\": null, \"capturable\": false, \"differentiable\": false, "
                     "\"fused\": null, \"decoupled_weight_decay\": false", json_number(lr), json_number(betas.first),
                     json_number(betas.second), json_number(eps), json_number(weight_decay), amsgrad ? "true" : "false");
}

void Adam::set_hyperparameters(const io::Json& group) {
  double new_lr = read_number(group, "lr", "Adam"), new_eps = read_number(group, "eps", "Adam");
  double new_wd = read_number(group, "weight_decay", "Adam");
  std::pair<double, double> new_betas = read_betas(group, "Adam");
  bool new_amsgrad = read_bool(group, "amsgrad", "Adam");
  if (group.find("decoupled_weight_decay") && read_bool(group, "decoupled_weight_decay", "Adam"))
    fail("Adam::load_state_dict: the state uses decoupled_weight_decay (that is AdamW)");
  lr = new_lr, eps = new_eps, weight_decay = new_wd, betas = new_betas, amsgrad = new_amsgrad;
}

std::vector<std::string> Adam::state_names() const {
  if (amsgrad) return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"step", "exp_avg", "exp_avg_sq"};
}

Tensor Adam::state_tensor(size_t i, const std::string& name) const {
  if (!exp_avg_[i].defined()) return Tensor();
  if (name == "step") return step_tensor(steps_[i]);
  if (name == "exp_avg") return exp_avg_[i];
  return name == "exp_avg_sq" ? exp_avg_sq_[i] : max_exp_avg_sq_[i];
}

void Adam::set_state_tensor(size_t i, const std::string& name, Tensor value) {
  if (name == "step") steps_[i] = read_step(value);
  else if (name == "exp_avg") exp_avg_[i] = std::move(value);
  else if (name == "exp_avg_sq") exp_avg_sq_[i] = std::move(value);
  else max_exp_avg_sq_[i] = std::move(value);
}

void Adam::clear_state(size_t i) {
  exp_avg_[i] = Tensor(), exp_avg_sq_[i] = Tensor(), max_exp_avg_sq_[i] = Tensor();
  steps_[i] = 0;
}

// ---- RMSprop --------------------------------------------------------------------------------------

std::string RMSprop::hyperparameters_json() const {
  return fmt::format("\"lr\": {}, \"momentum\": {}, \"alpha\": {}, \"eps\": {}, \"centered\": {}, "
                     "\"weight_decay\": {}, \"capturable\": false, \"foreach\": null, \"maximize\": false, "
                     "\"differentiable\": false", json_number(lr), json_number(momentum), json_number(alpha),
                     json_number(eps), centered ? "true" : "false", json_number(weight_decay));
}

void RMSprop::set_hyperparameters(const io::Json& group) {
  double new_lr = read_number(group, "lr", "RMSprop"), new_momentum = read_number(group, "momentum", "RMSprop");
  double new_alpha = read_number(group, "alpha", "RMSprop"), new_eps = read_number(group, "eps", "RMSprop");
  double new_wd = read_number(group, "weight_decay", "RMSprop");
  bool new_centered = read_bool(group, "centered", "RMSprop");
  if ((new_momentum > 0) != (momentum > 0) || new_centered != centered)
    fail("RMSprop::load_state_dict: the state is of an RMSprop with momentum {} and centered={}, this one has "
         "momentum {} and centered={} (their state tensors differ)", new_momentum, new_centered, momentum, centered);
  lr = new_lr, momentum = new_momentum, alpha = new_alpha, eps = new_eps, weight_decay = new_wd;
}

std::vector<std::string> RMSprop::state_names() const {
  std::vector<std::string> names{"step", "square_avg"};
  if (momentum > 0) names.push_back("momentum_buffer");
  if (centered) names.push_back("grad_avg");
  return names;
}

Tensor RMSprop::state_tensor(size_t i, const std::string& name) const {
  if (!square_avg_[i].defined()) return Tensor();
  if (name == "step") return step_tensor(steps_[i]);
  if (name == "square_avg") return square_avg_[i];
  return name == "momentum_buffer" ? momentum_buffer_[i] : grad_avg_[i];
}

void RMSprop::set_state_tensor(size_t i, const std::string& name, Tensor value) {
  if (name == "step") steps_[i] = read_step(value);
  else if (name == "square_avg") square_avg_[i] = std::move(value);
  else if (name == "momentum_buffer") momentum_buffer_[i] = std::move(value);
  else grad_avg_[i] = std::move(value);
}

void RMSprop::clear_state(size_t i) {
  square_avg_[i] = Tensor(), grad_avg_[i] = Tensor(), momentum_buffer_[i] = Tensor();
  steps_[i] = 0;
}

// ---- Adagrad --------------------------------------------------------------------------------------

std::string Adagrad::hyperparameters_json() const {
  return fmt::format("\"lr\": {}, \"lr_decay\": {}, \"eps\": {}, \"weight_decay\": {}, "
                     "\"initial_accumulator_value\": {}, \"foreach\": null, \"maximize\": false, "
                     "\"differentiable\": false, \"fused\": null", json_number(lr), json_number(lr_decay),
                     json_number(eps), json_number(weight_decay), json_number(initial_accumulator_value));
}

void Adagrad::set_hyperparameters(const io::Json& group) {
  double new_lr = read_number(group, "lr", "Adagrad"), new_decay = read_number(group, "lr_decay", "Adagrad");
  double new_eps = read_number(group, "eps", "Adagrad"), new_wd = read_number(group, "weight_decay", "Adagrad");
  double new_init = read_number(group, "initial_accumulator_value", "Adagrad");
  lr = new_lr, lr_decay = new_decay, eps = new_eps, weight_decay = new_wd, initial_accumulator_value = new_init;
}

Tensor Adagrad::state_tensor(size_t i, const std::string& name) const {
  if (!sum_[i].defined()) return Tensor();
  return name == "step" ? step_tensor(steps_[i]) : sum_[i];
}

void Adagrad::set_state_tensor(size_t i, const std::string& name, Tensor value) {
  if (name == "step") steps_[i] = read_step(value);
  else sum_[i] = std::move(value);
}

void Adagrad::clear_state(size_t i) {
  sum_[i] = Tensor();
  steps_[i] = 0;
}

}  // namespace tritium::nn
