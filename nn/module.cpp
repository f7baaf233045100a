#include "nn/module.h"

#include <cmath>
#include <set>
#include <tuple>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nn/autograd.h"
#include "nn/linear_functional.h"

namespace tritium::nn {

// ---- repr helpers ------------------------------------------------------------------------------

std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);  // shortest round-trip form, as Python's repr
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string python_tuple(const std::vector<int64_t>& values) {
  if (values.size() == 1) return fmt::format("({},)", values[0]);
  return fmt::format("({})", fmt::join(values, ", "));
}

namespace {

// PyTorch's _addindent: every line but the first indented by `spaces`.
std::string add_indent(const std::string& s, int spaces) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out.append(spaces, ' ');
  }
  return out;
}

std::string shape_str(const Tensor& t) { return fmt::format("[{}]", fmt::join(t.shape(), ", ")); }

// Kinds that load_state_dict converts between (PyTorch converts anything with copy_; converting
// a float checkpoint into an integer buffer or back is almost always a checkpoint of another
// model, so it is refused).
const char* dtype_kind(DType d) { return is_float(d) ? "floating" : is_bool(d) ? "bool" : "integer"; }

}  // namespace

// ---- Module: forward and repr --------------------------------------------------------------------

Tensor Module::forward(const Tensor&) { fail("{}: this module has no forward()", type_name()); }

std::vector<Tensor> Module::forward_many(const std::vector<Tensor>& inputs) {
  if (inputs.size() != 1)
    fail("{}::forward_many: this module takes 1 input, got {} (override forward_many for several)", type_name(),
         inputs.size());
  return {forward(inputs[0])};
}

std::string Module::str() const {
  std::vector<std::string> lines;
  std::string extra = extra_repr();
  size_t extra_lines = 0;
  if (!extra.empty()) {
    size_t start = 0;
    for (size_t nl; (nl = extra.find('\n', start)) != std::string::npos; start = nl + 1, ++extra_lines)
      lines.push_back(extra.substr(start, nl - start));
    lines.push_back(extra.substr(start));
    ++extra_lines;
  }
  for (const auto& [name, child] : children_) lines.push_back(fmt::format("({}): {}", name, add_indent(child->str(), 2)));
  std::string s = type_name() + "(";
  if (!lines.empty()) {
    if (extra_lines == 1 && children_.empty())
      s += lines[0];
    else
      s += "\n  " + fmt::format("{}", fmt::join(lines, "\n  ")) + "\n";
  }
  return s + ")";
}

// ---- Module: registration -----------------------------------------------------------------------

void Module::check_new_name(const std::string& name, const char* what) const {
  if (name.empty()) fail("{}::{}: the name is empty", type_name(), what);
  if (name.find('.') != std::string::npos) fail("{}::{}: name \"{}\" contains a '.'", type_name(), what, name);
  for (const auto& [n, p] : parameters_)
    if (n == name) fail("{}::{}: \"{}\" is already a parameter", type_name(), what, name);
  for (const auto& b : buffers_)
    if (b.name == name) fail("{}::{}: \"{}\" is already a buffer", type_name(), what, name);
  for (const auto& [n, m] : children_)
    if (n == name) fail("{}::{}: \"{}\" is already a child module", type_name(), what, name);
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "register_parameter");
  if (!tensor.defined()) fail("{}::register_parameter: \"{}\" is an undefined tensor", type_name(), name);
  if (!tensor.is_leaf())
    fail("{}::register_parameter: \"{}\" is not a leaf tensor (detach() it first)", type_name(), name);
  if (requires_grad && !is_float(tensor.dtype()))
    fail("{}::register_parameter: \"{}\" is {}: only floating-point tensors can require gradients", type_name(), name,
         dtype_name(tensor.dtype()));
  tensor.requires_grad_(requires_grad);
  parameters_.emplace_back(name, tensor);
  return tensor;
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor, bool persistent) {
  check_new_name(name, "register_buffer");
  if (!tensor.defined()) fail("{}::register_buffer: \"{}\" is an undefined tensor", type_name(), name);
  if (tensor.requires_grad())
    fail("{}::register_buffer: \"{}\" requires grad; a buffer is not a parameter (detach() it, or "
         "register_parameter)", type_name(), name);
  buffers_.push_back({name, tensor, persistent});
  return tensor;
}

std::shared_ptr<Module> Module::register_module(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "register_module");
  if (!module) fail("{}::register_module: \"{}\" is a null module", type_name(), name);
  children_.emplace_back(name, module);
  return module;
}

void Module::replace_module(const std::string& name, std::shared_ptr<Module> module) {
  if (!module) fail("{}: \"{}\" is a null module", type_name(), name);
  for (auto& [n, m] : children_)
    if (n == name) {
      m = std::move(module);
      return;
    }
  fail("{}: no child module named \"{}\"", type_name(), name);
}

void Module::reset_children(std::vector<std::pair<std::string, std::shared_ptr<Module>>> children) {
  auto old = std::move(children_);
  children_.clear();
  try {
    for (auto& [name, m] : children) register_module(name, std::move(m));
  } catch (...) {
    children_ = std::move(old);
    throw;
  }
}

Tensor Module::parameter(const std::string& name) const {
  for (const auto& [n, p] : parameters_)
    if (n == name) return p;
  fail("{}: no parameter named \"{}\"", type_name(), name);
}

Tensor Module::buffer(const std::string& name) const {
  for (const auto& b : buffers_)
    if (b.name == name) return b.tensor;
  fail("{}: no buffer named \"{}\"", type_name(), name);
}

// ---- Module: walks --------------------------------------------------------------------------------

void Module::collect_parameters(const std::string& prefix, bool recurse,
                                std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, p] : parameters_) out.emplace_back(prefix + name, p);
  if (recurse)
    for (const auto& [name, child] : children_) child->collect_parameters(prefix + name + ".", true, out);
}

void Module::collect_buffers(const std::string& prefix, bool recurse,
                             std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& b : buffers_) out.emplace_back(prefix + b.name, b.tensor);
  if (recurse)
    for (const auto& [name, child] : children_) child->collect_buffers(prefix + name + ".", true, out);
}

namespace {

// PyTorch's remove_duplicate: a tensor reachable under several names (a module registered twice,
// tied weights) is listed once, under its first name, so an optimiser never steps it twice.
std::vector<std::pair<std::string, Tensor>> without_duplicates(std::vector<std::pair<std::string, Tensor>> all) {
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<std::tuple<const void*, const void*, std::vector<int64_t>, DType>> seen;
  for (auto& [name, t] : all)
    if (seen.emplace(t.storage().get(), t.raw_data(), t.shape(), t.dtype()).second) out.emplace_back(std::move(name), t);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_parameters("", recurse, out);
  return without_duplicates(std::move(out));
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, p] : named_parameters(recurse)) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_buffers("", recurse, out);
  return without_duplicates(std::move(out));
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, b] : named_buffers(recurse)) out.push_back(b);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [name, m] : children_) out.push_back(m);
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out;
  std::unordered_set<const Module*> seen;
  std::function<void(const std::string&, const Module*)> walk = [&](const std::string& prefix, const Module* m) {
    if (!seen.insert(m).second) return;
    out.emplace_back(prefix, m);
    for (const auto& [name, child] : m->children_) walk(prefix.empty() ? name : prefix + "." + name, child.get());
  };
  walk("", this);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  for (auto& [name, m] : std::as_const(*this).named_modules()) out.emplace_back(name, const_cast<Module*>(m));
  return out;
}

std::vector<Module*> Module::modules() {
  std::vector<Module*> out;
  for (auto& [name, m] : named_modules()) out.push_back(m);
  return out;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [name, child] : children_) child->apply(fn);
  fn(*this);
  return *this;
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (const Tensor& p : parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

// ---- Module: flags, grads, devices and dtypes ---------------------------------------------------

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

Module& Module::requires_grad_(bool on) {
  for (Tensor& p : parameters()) {
    if (on && !is_float(p.dtype())) continue;  // integer parameters cannot require grad
    p.requires_grad_(on);
  }
  return *this;
}

void Module::zero_grad() {
  for (Tensor& p : parameters()) p.zero_grad();
}

template <class F>
void Module::convert_tensors(F&& convert) {
  for (auto& [name, p] : parameters_) {
    Tensor moved = convert(p.detach());
    if (moved.storage() == p.storage() && moved.dtype() == p.dtype()) continue;  // already there
    moved = moved.detach();
    moved.requires_grad_(p.requires_grad());
    p = moved;
  }
  for (auto& b : buffers_) b.tensor = convert(b.tensor.detach());
  for (auto& [name, child] : children_) child->convert_tensors(convert);
  parameters_moved();
}

Module& Module::to(Device device) {
  convert_tensors([&](const Tensor& t) { return t.device() == device ? t : t.to(device); });
  return *this;
}

Module& Module::to(DType dtype) {
  if (!is_float(dtype) || is_fp8(dtype))
    fail("{}::to: only floating point dtypes (f16, bf16, f32, f64) are accepted, got {}", type_name(),
         dtype_name(dtype));
  convert_tensors([&](const Tensor& t) { return is_float(t.dtype()) && t.dtype() != dtype ? t.to(dtype) : t; });
  return *this;
}

// ---- Module: state dict ---------------------------------------------------------------------------

void Module::collect_state_targets(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, p] : parameters_) out.emplace_back(prefix + name, p);
  for (const auto& b : buffers_)
    if (b.persistent) out.emplace_back(prefix + b.name, b.tensor);
  for (const auto& [name, child] : children_) child->collect_state_targets(prefix + name + ".", out);
}

StateDict Module::state_dict() const {
  std::vector<std::pair<std::string, Tensor>> targets;
  collect_state_targets("", targets);
  StateDict out;
  for (auto& [name, t] : targets)
    if (!out.contains(name)) out.insert(name, t.detach());
  return out;
}

LoadStateDictResult Module::load_state_dict(const StateDict& dict, bool strict) {
  std::vector<std::pair<std::string, Tensor>> targets;
  collect_state_targets("", targets);
  LoadStateDictResult result;
  std::set<std::string> expected;
  std::vector<std::string> errors;
  for (const auto& [name, target] : targets) {
    expected.insert(name);
    const Tensor* src = dict.find(name);
    if (!src) {
      result.missing_keys.push_back(name);
      continue;
    }
    if (!src->defined()) {
      errors.push_back(fmt::format("\"{}\" is an undefined tensor in the state dict", name));
      continue;
    }
    if (src->shape() != target.shape())
      errors.push_back(fmt::format("size mismatch for \"{}\": copying a tensor of shape {} from the state dict, the "
                                   "shape in the current model is {}", name, shape_str(*src), shape_str(target)));
    else if (std::string(dtype_kind(src->dtype())) != dtype_kind(target.dtype()))
      errors.push_back(fmt::format("dtype mismatch for \"{}\": the state dict holds {} ({}), the model {} ({})", name,
                                   dtype_name(src->dtype()), dtype_kind(src->dtype()), dtype_name(target.dtype()),
                                   dtype_kind(target.dtype())));
  }
  for (const auto& [name, t] : dict)
    if (!expected.contains(name)) result.unexpected_keys.push_back(name);
  auto quoted = [](const std::vector<std::string>& keys) {
    std::vector<std::string> q;
    for (const auto& k : keys) q.push_back("\"" + k + "\"");
    return fmt::format("{}", fmt::join(q, ", "));
  };
  if (strict) {
    if (!result.unexpected_keys.empty())
      errors.insert(errors.begin(), "Unexpected key(s) in state_dict: " + quoted(result.unexpected_keys));
    if (!result.missing_keys.empty())
      errors.insert(errors.begin(), "Missing key(s) in state_dict: " + quoted(result.missing_keys));
  }
  if (!errors.empty())
    fail("Error(s) in loading state_dict for {} (nothing was loaded):\n\t{}", type_name(),
         fmt::join(errors, "\n\t"));

  NoGradGuard no_grad;
  for (auto& [name, target] : targets) {
    const Tensor* src = dict.find(name);
    if (!src) continue;
    Tensor dst = target.detach();
    dst.copy_(src->device() == dst.device() ? *src : src->to(dst.device()));
  }
  return result;
}

// ---- Linear ------------------------------------------------------------------------------------

Linear::Linear(int64_t in, int64_t out, bool with_bias, Generator& gen) : in_features(in), out_features(out) {
  if (in < 0 || out < 0) fail("Linear: in_features ({}) and out_features ({}) must be >= 0", in, out);
  // kaiming_uniform_(a = sqrt(5)): gain = sqrt(2 / (1 + a^2)) = sqrt(1/3), bound = gain * sqrt(3 / fan_in)
  // = 1 / sqrt(fan_in); the bias uses the same bound.
  double bound = in > 0 ? 1.0 / std::sqrt(static_cast<double>(in)) : 0.0;
  NoGradGuard no_grad;
  Tensor w = Tensor::empty({out, in}, DType::f32);
  ops::uniform_(w, -bound, bound, gen);
  weight = register_parameter("weight", w);
  if (with_bias) {
    Tensor b = Tensor::empty({out}, DType::f32);
    ops::uniform_(b, -bound, bound, gen);
    bias = register_parameter("bias", b);
  }
}

void Linear::parameters_moved() {
  weight = parameter("weight");
  if (bias.defined()) bias = parameter("bias");
}

Tensor Linear::forward(const Tensor& x) {
  if (!x.defined()) fail("Linear::forward: the input is undefined");
  if (x.dim() < 1 || x.size(-1) != in_features)
    fail("Linear::forward: input {} does not end in in_features = {}", x.str(), in_features);
  return tritium::linear(x, weight, bias);  // one op: autocast casts the weight once per scope
}

std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_features, out_features,
                     bias.defined() ? "True" : "False");
}

// ---- LayerNorm ----------------------------------------------------------------------------------

LayerNorm::LayerNorm(std::vector<int64_t> shape, double eps_, bool elementwise_affine, bool with_bias)
    : normalized_shape(std::move(shape)), eps(eps_) {
  if (normalized_shape.empty()) fail("LayerNorm: normalized_shape is empty");
  for (int64_t d : normalized_shape)
    if (d <= 0) fail("LayerNorm: normalized_shape must be positive, got {}", fmt::join(normalized_shape, ", "));
  if (elementwise_affine) {
    NoGradGuard no_grad;
    weight = register_parameter("weight", ops::ones(normalized_shape));
    if (with_bias) bias = register_parameter("bias", ops::zeros(normalized_shape));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  if (!x.defined()) fail("LayerNorm::forward: the input is undefined");
  return tritium::layer_norm(x, normalized_shape, weight, bias, eps);
}

std::string LayerNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}, bias={}", python_tuple(normalized_shape), python_float(eps),
                     weight.defined() ? "True" : "False", bias.defined() ? "True" : "False");
}

void LayerNorm::parameters_moved() {
  if (weight.defined()) weight = parameter("weight");
  if (bias.defined()) bias = parameter("bias");
}

// ---- ReLU, Dropout -----------------------------------------------------------------------------

Tensor ReLU::forward(const Tensor& x) { return tritium::relu(x); }

Dropout::Dropout(double p_, Generator& gen) : p(p_), gen_(&gen) {
  if (!(p >= 0 && p <= 1)) fail("Dropout: p = {} is not a probability in [0, 1]", p);
}

Tensor Dropout::forward(const Tensor& x) { return tritium::dropout(x, p, is_training(), *gen_); }

std::string Dropout::extra_repr() const { return fmt::format("p={}, inplace=False", python_float(p)); }

}  // namespace tritium::nn
