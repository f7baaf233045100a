// Optimizer::state_dict / load_state_dict (nn/optim.h): PyTorch's optimizer.state_dict()
// flattened into safetensors-ready tensors and string metadata, with every parameter group, and
// the per-class JSON of a group's options. Loading validates everything before it changes anything.
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
  if (!std::isfinite(v)) fail("optimizer state_dict: option value {} is not finite", v);
  return fmt::format("{}", v);
}
const char* json_bool(double v) { return v != 0 ? "true" : "false"; }

// The options of `o` that the class did not write (a scheduler's "initial_lr", ...), as numbers.
std::string extra_options_json(const OptionMap& o, const std::set<std::string>& written) {
  std::string out;
  for (const auto& [k, v] : o)
    if (!written.count(k)) out += fmt::format(", \"{}\": {}", k, json_number(v));
  return out;
}

// Keys of PyTorch's param_groups that are constant here (flags this implementation does not
// have): read back and ignored, as are nulls.
const std::set<std::string> kIgnoredKeys = {"maximize", "foreach", "capturable", "differentiable", "fused",
                                            "decoupled_weight_decay", "params"};

// A step count as PyTorch keeps it: a 0-dim f32 on the host, written without a kernel (a
// CUDA-only build has no CPU backend).
Tensor step_tensor(int64_t step) {
  return Tensor::from_vector(std::vector<float>{static_cast<float>(step)}, {}, Device::cpu());
}
float read_scalar(const Tensor& t) { return t.reshape({}).to(Device::cpu()).to_vector<float>().at(0); }

}  // namespace

OptimizerState Optimizer::state_dict() const {
  OptimizerState out;
  std::vector<std::string> groups_json;
  size_t first = 0;
  for (const ParamGroup& g : groups_) {
    std::vector<size_t> indices;
    for (size_t i = first; i < first + g.params.size(); ++i) {
      indices.push_back(i);
      for (const std::string& field : state_names(g.options)) {
        if (field == "step") {
          if (steps_[i] > 0) out.tensors.insert(fmt::format("state.{}.step", i), step_tensor(steps_[i]));
          continue;
        }
        Tensor t = state(i, field);
        if (t.defined()) out.tensors.insert(fmt::format("state.{}.{}", i, field), t);
      }
    }
    groups_json.push_back(fmt::format("{{{}, \"params\": [{}]}}", options_json(g.options), fmt::join(indices, ", ")));
    first += g.params.size();
  }
  out.metadata["optimizer"] = name();
  out.metadata["num_params"] = std::to_string(params_.size());
  out.metadata["param_groups"] = fmt::format("[{}]", fmt::join(groups_json, ", "));
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
  if (list.size() != groups_.size())
    fail("{}: loaded state dict has {} parameter groups, this optimizer has {}", who, list.size(), groups_.size());

  // Each group: the same number of parameters, indices first, first + 1, ... (PyTorch's
  // numbering over the groups in order), and options: every one the class has (numbers; booleans;
  // betas as [beta1, beta2]) plus any other number.
  std::vector<OptionMap> new_options;
  size_t first = 0;
  for (size_t k = 0; k < list.size(); ++k) {
    const io::Json& group = list[k];
    std::string where = fmt::format("{}: param_groups[{}]", who, k);
    const auto& indices = group.at("params", where).as_array(where + " \"params\"");
    if (indices.size() != groups_[k].params.size())
      fail("{} has {} parameters, this optimizer's group {} has {} (loaded state dict contains a parameter group "
           "that doesn't match the size of optimizer's group)", where, indices.size(), k, groups_[k].params.size());
    for (size_t j = 0; j < indices.size(); ++j)
      if (indices[j].as_int64(where + " \"params\"") != static_cast<int64_t>(first + j))
        fail("{} \"params\" must be {}, ..., {}", where, first, first + indices.size() - 1);
    OptionMap o;
    for (const auto& [key, value] : group.as_object(where)) {
      if (kIgnoredKeys.count(key) || value.is_null()) continue;
      if (key == "betas") {
        const auto& b = value.as_array(where + " \"betas\"");
        if (b.size() != 2) fail("{}: betas must hold 2 numbers, got {}", where, b.size());
        o["beta1"] = b[0].as_double(where + " \"betas\""), o["beta2"] = b[1].as_double(where + " \"betas\"");
      } else if (value.is_bool()) {
        o[key] = value.as_bool(where) ? 1 : 0;
      } else {
        o[key] = value.as_double(fmt::format("{} \"{}\"", where, key));
      }
    }
    for (const auto& [key, v] : defaults_)
      if (!o.count(key)) fail("{} has no \"{}\"", where, key == "beta1" || key == "beta2" ? "betas" : key);
    check_options(o);
    new_options.push_back(std::move(o));
    first += indices.size();
  }

  // Every tensor: a known name of its group's state, a parameter index in range, the
  // parameter's shape and dtype (step: one f32, a positive integer).
  std::vector<size_t> group_of(params_.size());
  for (size_t k = 0, i = 0; k < groups_.size(); ++k)
    for (size_t j = 0; j < groups_[k].params.size(); ++j) group_of[i++] = k;
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
    std::vector<std::string> names = state_names(new_options[group_of[i]]);
    if (std::find(names.begin(), names.end(), field) == names.end())
      fail("{}: unexpected key \"{}\" ({} state with these options is {})", who, key, name(), fmt::join(names, ", "));
    bool scalar = field == "step";
    DType want = scalar ? DType::f32 : params_[i].dtype();
    if (t.dtype() != want) fail("{}: \"{}\" is {}, expected {}", who, key, dtype_name(t.dtype()), dtype_name(want));
    if (scalar ? t.numel() != 1 : t.shape() != params_[i].shape())
      fail("{}: \"{}\" has shape [{}], parameter {} has shape [{}]", who, key, fmt::join(t.shape(), ", "), i,
           fmt::join(params_[i].shape(), ", "));
    if (scalar) {
      float step = read_scalar(t);
      if (!(step >= 1) || step != std::floor(step))
        fail("{}: \"{}\" is {}, not a positive integer step count", who, key, step);
    }
    by_param[i][field] = t;
  }
  for (const auto& [i, fields] : by_param) {
    std::vector<std::string> names = state_names(new_options[group_of[i]]);
    if (fields.size() != names.size())
      fail("{}: the state of parameter {} is incomplete (has {} of {})", who, i, fields.size(), fmt::join(names, ", "));
  }

  NoGradGuard no_grad;
  for (size_t k = 0; k < groups_.size(); ++k) groups_[k].options = std::move(new_options[k]);
  for (size_t i = 0; i < params_.size(); ++i) {
    state_[i].clear();
    steps_[i] = 0;
    auto it = by_param.find(i);
    if (it == by_param.end()) continue;
    for (auto& [field, t] : it->second) {
      if (field == "step") steps_[i] = static_cast<int64_t>(read_scalar(t));
      else state_[i][field] = ops::clone(t.to(params_[i].device()));
    }
  }
}

// ---- each class's options, in PyTorch's order ----------------------------------------------------------

std::string SGD::options_json(const OptionMap& o) const {
  return fmt::format("\"lr\": {}, \"momentum\": {}, \"dampening\": {}, \"weight_decay\": {}, \"nesterov\": {}, "
                     "\"maximize\": false, \"foreach\": null, \"differentiable\": false, \"fused\": null{}",
                     json_number(o.at("lr")), json_number(o.at("momentum")), json_number(o.at("dampening")),
                     json_number(o.at("weight_decay")), json_bool(o.at("nesterov")),
                     extra_options_json(o, {"lr", "momentum", "dampening", "weight_decay", "nesterov"}));
}

std::string Adam::options_json(const OptionMap& o) const {
  return fmt::format("\"lr\": {}, \"betas\": [{}, {}], \"eps\": {}, \"weight_decay\": {}, \"amsgrad\": {}, "
                     "\"maximize\": false, \"foreach\": null, \"capturable\": false, \"differentiable\": false, "
                     "\"fused\": null{}{}", json_number(o.at("lr")), json_number(o.at("beta1")),
                     json_number(o.at("beta2")), json_number(o.at("eps")), json_number(o.at("weight_decay")),
                     json_bool(o.at("amsgrad")), decoupled_ ? "" : ", \"decoupled_weight_decay\": false",
                     extra_options_json(o, {"lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad"}));
}

std::string RMSprop::options_json(const OptionMap& o) const {
  return fmt::format("\"lr\": {}, \"momentum\": {}, \"alpha\": {}, \"eps\": {}, \"centered\": {}, "
                     "\"weight_decay\": {}, \"capturable\": false, \"foreach\": null, \"maximize\": false, "
                     "\"differentiable\": false{}", json_number(o.at("lr")), json_number(o.at("momentum")),
                     json_number(o.at("alpha")), json_number(o.at("eps")), json_bool(o.at("centered")),
                     json_number(o.at("weight_decay")),
                     extra_options_json(o, {"lr", "momentum", "alpha", "eps", "centered", "weight_decay"}));
}

std::string Adagrad::options_json(const OptionMap& o) const {
  return fmt::format("\"lr\": {}, \"lr_decay\": {}, \"eps\": {}, \"weight_decay\": {}, "
                     "\"initial_accumulator_value\": {}, \"foreach\": null, \"maximize\": false, "
                     "\"differentiable\": false, \"fused\": null{}", json_number(o.at("lr")),
                     json_number(o.at("lr_decay")), json_number(o.at("eps")), json_number(o.at("weight_decay")),
                     json_number(o.at("initial_accumulator_value")),
                     extra_options_json(o, {"lr", "lr_decay", "eps", "weight_decay", "initial_accumulator_value"}));
}

}  // namespace tritium::nn
