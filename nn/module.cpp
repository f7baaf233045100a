#include "nn/module.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nn/autograd.h"

namespace tritium::nn {

// ---- Module ------------------------------------------------------------------------------------

Tensor Module::forward(const Tensor&) { fail("{}: this module has no forward()", type_name()); }

std::string Module::str() const { return type_name(); }

void Module::check_new_name(const std::string& name, const char* what) const {
  if (name.empty()) fail("{}::{}: the name is empty", type_name(), what);
  if (name.find('.') != std::string::npos) fail("{}::{}: name \"{}\" contains a '.'", type_name(), what, name);
  for (const auto& [n, p] : parameters_)
    if (n == name) fail("{}::{}: \"{}\" is already a parameter", type_name(), what, name);
  for (const auto& [n, m] : children_)
    if (n == name) fail("{}::{}: \"{}\" is already a child module", type_name(), what, name);
}

Module& Module::to(Device device) {
  for (auto& [name, p] : parameters_) {
    if (p.device() == device) continue;
    bool requires_grad = p.requires_grad();
    Tensor moved = p.detach().to(device);
    if (requires_grad) moved.requires_grad_(true);
    p = moved;
  }
  for (auto& [name, child] : children_) child->to(device);
  parameters_moved();
  return *this;
}

Tensor Module::parameter(const std::string& name) const {
  for (const auto& [n, p] : parameters_)
    if (n == name) return p;
  fail("{}: no parameter named \"{}\"", type_name(), name);
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor) {
  check_new_name(name, "register_parameter");
  if (!tensor.defined()) fail("{}::register_parameter: \"{}\" is an undefined tensor", type_name(), name);
  if (!tensor.is_leaf())
    fail("{}::register_parameter: \"{}\" is not a leaf tensor (detach() it first)", type_name(), name);
  tensor.requires_grad_(true);
  parameters_.emplace_back(name, tensor);
  return tensor;
}

std::shared_ptr<Module> Module::register_module(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "register_module");
  if (!module) fail("{}::register_module: \"{}\" is a null module", type_name(), name);
  children_.emplace_back(name, module);
  return module;
}

void Module::collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, p] : parameters_) out.emplace_back(prefix + name, p);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, p] : named_parameters()) out.push_back(p);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [name, m] : children_) out.push_back(m);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (Tensor& p : parameters()) p.zero_grad();
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
  Tensor y = tritium::matmul(x, weight.t());
  return bias.defined() ? y + bias : y;
}

std::string Linear::str() const {
  return fmt::format("Linear(in_features={}, out_features={}, bias={})", in_features, out_features, bias.defined());
}

// ---- LayerNorm ----------------------------------------------------------------------------------

LayerNorm::LayerNorm(std::vector<int64_t> shape, double eps_, bool elementwise_affine)
    : normalized_shape(std::move(shape)), eps(eps_) {
  if (normalized_shape.empty()) fail("LayerNorm: normalized_shape is empty");
  for (int64_t d : normalized_shape)
    if (d <= 0) fail("LayerNorm: normalized_shape must be positive, got {}", fmt::join(normalized_shape, ", "));
  if (elementwise_affine) {
    NoGradGuard no_grad;
    weight = register_parameter("weight", ops::ones(normalized_shape));
    bias = register_parameter("bias", ops::zeros(normalized_shape));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  if (!x.defined()) fail("LayerNorm::forward: the input is undefined");
  return tritium::layer_norm(x, normalized_shape, weight, bias, eps);
}

std::string LayerNorm::str() const {
  return fmt::format("LayerNorm(({}), eps={}, elementwise_affine={})", fmt::join(normalized_shape, ", "), eps,
                     weight.defined());
}

void LayerNorm::parameters_moved() {
  if (weight.defined()) weight = parameter("weight"), bias = parameter("bias");
}

// ---- ReLU, Dropout -----------------------------------------------------------------------------

Tensor ReLU::forward(const Tensor& x) { return tritium::relu(x); }

Dropout::Dropout(double p_, Generator& gen) : p(p_), gen_(&gen) {
  if (!(p >= 0 && p <= 1)) fail("Dropout: p = {} is not a probability in [0, 1]", p);
}

Tensor Dropout::forward(const Tensor& x) { return tritium::dropout(x, p, is_training(), *gen_); }

std::string Dropout::str() const { return fmt::format("Dropout(p={})", p); }

// ---- Sequential ----------------------------------------------------------------------------------

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(named_children().size()), std::move(module));
}

Module& Sequential::operator[](size_t i) const {
  if (i >= size()) fail("Sequential: index {} is out of range for {} modules", i, size());
  return *named_children()[i].second;
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& [name, m] : named_children()) y = m->forward(y);
  return y;
}

std::string Sequential::str() const {
  std::string s = "Sequential(\n";
  for (auto& [name, m] : named_children()) s += fmt::format("  ({}): {}\n", name, m->str());
  return s + ")";
}

}  // namespace tritium::nn
