// The op registry and the parts of a declaration that every op shares: attributes, the saved
// values a derivative reads, the dtype rules and the checks of a declaration's consistency.
#include "ops/decl/op_decl.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tritium::ops {

// ---- attributes ----------------------------------------------------------------------------------

bool Attrs::has(std::string_view name) const {
  return std::any_of(values_.begin(), values_.end(), [&](const auto& kv) { return kv.first == name; });
}

void Attrs::set(std::string name, AttrValue value) {
  for (auto& kv : values_)
    if (kv.first == name) {
      kv.second = std::move(value);
      return;
    }
  values_.emplace_back(std::move(name), std::move(value));
}

const AttrValue& Attrs::find(std::string_view name) const {
  for (const auto& kv : values_)
    if (kv.first == name) return kv.second;
  std::vector<std::string> names;
  for (const auto& kv : values_) names.push_back(kv.first);
  fail("op attribute '{}' was not given (attributes: [{}])", name, fmt::join(names, ", "));
}

void Attrs::wrong_type(std::string_view name) const {
  // In AttrValue's order.
  static const char* const kTypeNames[] = {"bool",  "int",   "double",           "Scalar",     "dims (vector<int>)",
                                           "Shape", "optional<double>", "Generator*", "DropoutState", "int64_t",
                                           "string", "tensors (vector<Tensor>)"};
  static_assert(std::size(kTypeNames) == std::variant_size_v<AttrValue>);
  fail("op attribute '{}' holds a value of type {}, not the type its reader expects", name,
       kTypeNames[find(name).index()]);
}

const char* autocast_class_name(AutocastClass c) {
  switch (c) {
    case AutocastClass::lower_precision_fp: return "lower_precision_fp";
    case AutocastClass::fp32: return "fp32";
    case AutocastClass::promote: return "promote";
    case AutocastClass::none: return "none";
  }
  return "?";
}

// ---- saved values -------------------------------------------------------------------------------

namespace {
std::vector<uint64_t> versions_of(const std::vector<Tensor>& tensors) {
  std::vector<uint64_t> v(tensors.size(), 0);
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].defined()) v[i] = tensors[i]._version();
  return v;
}
}  // namespace

DerivativeContext::DerivativeContext(const OpDecl& op, std::vector<Tensor> saved_inputs,
                                     std::vector<Tensor> saved_outputs, std::vector<Shape> input_shapes,
                                     std::vector<bool> needs_input_grad, Attrs attrs)
    : op_(&op), inputs_(std::move(saved_inputs)), outputs_(std::move(saved_outputs)),
      input_versions_(versions_of(inputs_)), output_versions_(versions_of(outputs_)),
      shapes_(std::move(input_shapes)), needs_(std::move(needs_input_grad)), attrs_(std::move(attrs)) {}

void DerivativeContext::attach_output_history(std::shared_ptr<nn::AutogradMeta> meta) {
  if (!outputs_.empty() && outputs_[0].defined()) outputs_[0].set_autograd(std::move(meta));
}

void DerivativeContext::check_version(const Tensor& t, uint64_t saved_version, std::string_view name,
                                      bool is_output) const {
  if (t._version() == saved_version) return;
  fail("{} backward: one of the variables needed for gradient computation has been modified by an inplace "
       "operation: [{} [{}]], which is {} '{}' of {}, is at version {}; expected version {} instead. Hint: the "
       "value was saved by the forward of {} and changed before backward (clone it before the in-place op)",
       op_->name, dtype_name(t.dtype()), fmt::join(t.shape(), ", "), is_output ? "output" : "input", name,
       op_->node_name(), t._version(), saved_version, op_->name);
}

const Tensor& DerivativeContext::saved(std::string_view name) const {
  const Tensor* t = nullptr;
  uint64_t version = 0;
  bool is_output = false;
  if (int i = op_->input_index(name); i >= 0) {
    t = &inputs_[static_cast<size_t>(i)];
    version = input_versions_[static_cast<size_t>(i)];
  } else if (int o = op_->output_index(name); o >= 0) {
    t = &outputs_[static_cast<size_t>(o)];
    version = output_versions_[static_cast<size_t>(o)];
    is_output = true;
  } else {
    fail("{} backward: '{}' is neither an input nor an output of {}", op_->name, name, op_->name);
  }
  // An optional input given as undefined stays undefined; any other undefined value was not saved.
  if (!t->defined() && !(op_->input_index(name) >= 0 && op_->inputs[static_cast<size_t>(op_->input_index(name))].optional))
    fail("{} backward: the derivative reads '{}' but its declaration does not list it in `saves`", op_->name, name);
  if (t->defined()) check_version(*t, version, name, is_output);
  return *t;
}

const Shape& DerivativeContext::input_shape(std::string_view name) const {
  int i = op_->input_index(name);
  if (i < 0) fail("{} backward: no input named '{}'", op_->name, name);
  return shapes_[static_cast<size_t>(i)];
}

bool DerivativeContext::needs_input_grad(std::string_view name) const {
  int i = op_->input_index(name);
  if (i < 0) fail("{} backward: no input named '{}'", op_->name, name);
  return needs_[static_cast<size_t>(i)];
}

// ---- declarations ---------------------------------------------------------------------------------

std::string OpDecl::node_name() const {
  // "log_softmax.Scalar" -> "LogSoftmaxBackward": the overload suffix is dropped, as PyTorch names
  // MulBackward0 for both mul overloads.
  std::string base = name.substr(0, name.find('.'));
  std::string out;
  bool upper = true;
  for (char c : base) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + "Backward";
}

int OpDecl::input_index(std::string_view arg) const {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].name == arg) return static_cast<int>(i);
  return -1;
}

int OpDecl::output_index(std::string_view arg) const {
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i] == arg) return static_cast<int>(i);
  return -1;
}

namespace {

bool accepted(Accepts a, DType d) {
  switch (a) {
    case Accepts::any: return true;
    case Accepts::non_bool: return d != DType::i1;
    case Accepts::floating: return is_float(d);
    case Accepts::integral_index: return d == DType::i64 || d == DType::i32;
    case Accepts::boolean: return d == DType::i1;
  }
  return false;
}

const char* accepts_text(Accepts a) {
  switch (a) {
    case Accepts::any: return "any dtype";
    case Accepts::non_bool: return "a non-bool tensor";
    case Accepts::floating: return "a floating-point tensor";
    case Accepts::integral_index: return "an index tensor of dtype i64 or i32";
    case Accepts::boolean: return "a bool tensor";
  }
  return "?";
}

DType float_or_f32(DType d) { return is_float(d) ? d : DType::f32; }

}  // namespace

DType OpDecl::check_dtypes(const std::vector<Tensor>& args, const Attrs& attrs) const {
  if (has_variadic() ? args.size() < inputs.size() : args.size() != inputs.size())
    fail("{}: expected {}{} tensor arguments, got {}", name, has_variadic() ? "at least " : "", inputs.size(),
         args.size());
  std::vector<const Tensor*> promoting;
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorArg& arg = arg_of(i);
    const Tensor& t = args[i];
    if (!t.defined()) {
      if (!arg.optional) fail("{}: argument '{}' is an undefined tensor", name, arg.name);
      continue;
    }
    if (!accepted(arg.accepts, t.dtype()))
      fail("{}: argument '{}' must be {}, got {} (dtype {})", name, arg.name, accepts_text(arg.accepts), t.str(),
           dtype_name(t.dtype()));
    if (arg.promotes) promoting.push_back(&t);
  }
  if (result_dtype == ResultDType::custom) return custom_result_dtype(args, attrs);
  if (promoting.empty()) fail("{}: declaration has no promoting tensor argument", name);
  DType first = promoting.front()->dtype();
  switch (result_dtype) {
    case ResultDType::promote:
    case ResultDType::promote_to_float: {
      DType r;
      if (!scalar_operand.empty()) r = result_type(*promoting.front(), attrs.get<Scalar>(scalar_operand));
      else if (promoting.size() == 1) r = first;
      else r = result_type(*promoting[0], *promoting[1]);
      if (promoting.size() > 2) fail("{}: promotion over more than two tensors is not declared yet", name);
      return result_dtype == ResultDType::promote_to_float ? float_or_f32(r) : r;
    }
    case ResultDType::int_to_float: return float_or_f32(first);
    case ResultDType::same_as_input: return first;
    case ResultDType::sum: return is_float(first) ? first : DType::i64;
    case ResultDType::same_across: {
      for (const Tensor* t : promoting)
        if (t->dtype() != first) {
          std::vector<std::string> parts;
          for (size_t i = 0; i < args.size(); ++i)
            if (args[i].defined() && arg_of(i).promotes)
              parts.push_back(fmt::format("{} {}", arg_of(i).name, dtype_name(args[i].dtype())));
          fail("{}: expected its arguments to have one dtype, got {}", name, fmt::join(parts, ", "));
        }
      return first;
    }
    case ResultDType::custom: break;
  }
  return first;
}

// ---- the registry -------------------------------------------------------------------------------

const OpDecl* OpRegistry::find(std::string_view name) const {
  for (const auto& op : ops_)
    if (op->name == name) return op.get();
  return nullptr;
}

const OpDecl& OpRegistry::at(std::string_view name) const {
  if (const OpDecl* op = find(name)) return *op;
  fail("no op named '{}' is declared (ops/decl/)", name);
}

std::vector<const OpDecl*> OpRegistry::differentiable() const {
  std::vector<const OpDecl*> out;
  for (const auto& op : ops_)
    if (op->differentiable()) out.push_back(op.get());
  return out;
}

void OpRegistry::add(OpDecl d) {
  const std::string& n = d.name;
  if (n.empty()) fail("op declaration without a name");
  if (find(n)) fail("op '{}' is declared twice", n);
  if (!d.forward) fail("op '{}': no forward", n);
  if (d.result_dtype == ResultDType::custom && !d.custom_result_dtype)
    fail("op '{}': result dtype rule 'custom' without custom_result_dtype", n);
  if (!d.scalar_operand.empty() && d.result_dtype != ResultDType::promote &&
      d.result_dtype != ResultDType::promote_to_float)
    fail("op '{}': a scalar operand only takes part in a promoting dtype rule", n);
  auto known = [&](const std::string& s) { return d.input_index(s) >= 0 || d.output_index(s) >= 0; };
  if (d.fused_backward) {
    if (!d.derivatives.empty()) fail("op '{}': both derivative formulas and a fused backward", n);
    for (const auto& s : d.fused_saves)
      if (!known(s)) fail("op '{}': the fused backward saves '{}', which is no input or output", n, s);
  }
  for (size_t i = 0; i < d.inputs.size(); ++i)
    if (d.inputs[i].variadic && (i + 1 != d.inputs.size() || !d.fused_backward || d.inputs[i].optional))
      fail("op '{}': variadic argument '{}' must be the last, not optional, and differentiated by a fused backward",
           n, d.inputs[i].name);
  for (const TensorArg& arg : d.inputs) {
    size_t count = std::count_if(d.derivatives.begin(), d.derivatives.end(),
                                 [&](const Derivative& v) { return v.input == arg.name; });
    if (arg.differentiable && !d.fused_backward && count != 1)
      fail("op '{}': differentiable input '{}' has {} derivative formulas (expected 1; mark it "
           "differentiable = false if it has none)",
           n, arg.name, count);
    if (!arg.differentiable && count != 0) fail("op '{}': non-differentiable input '{}' has a derivative", n, arg.name);
  }
  for (const Derivative& v : d.derivatives) {
    if (d.input_index(v.input) < 0) fail("op '{}': a derivative for '{}', which is no input", n, v.input);
    if (!v.formula) fail("op '{}': the derivative for '{}' has no formula", n, v.input);
    for (const auto& s : v.saves)
      if (!known(s)) fail("op '{}': the derivative for '{}' saves '{}', which is no input or output", n, v.input, s);
  }
  if (d.differentiable() && !d.gradcheck_samples)
    fail("op '{}': a differentiable op needs gradcheck samples (the registry's gradient check runs them)", n);
  ops_.push_back(std::make_unique<OpDecl>(std::move(d)));
}

// issue 30 item 1 (convolutions, normalisation and losses), declared here so that op_decl.h stays
// untouched.
namespace decl {
void declare_conv(OpRegistry& r);    // ops/decl/conv.cpp: ops/conv.h
void declare_norm(OpRegistry& r);    // ops/decl/norm.cpp: ops/norm.h
void declare_losses(OpRegistry& r);  // ops/decl/losses.cpp: ops/losses.h
// issue 30 item 1, recurrent layers:
void declare_rnn(OpRegistry& r);  // ops/decl/rnn.cpp: ops/rnn.h
void declare_linear(OpRegistry& r);  // issue 31 item 4 (autocast): ops/decl/linear.cpp
}  // namespace decl

const OpRegistry& op_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    decl::declare_elementwise(r);
    decl::declare_reductions(r);
    decl::declare_matmul(r);
    decl::declare_softmax_and_losses(r);
    decl::declare_layer_norm(r);
    decl::declare_attention(r);
    decl::declare_dropout(r);
    decl::declare_shape(r);
    decl::declare_indexing(r);
    decl::declare_matmul_family(r);
    decl::declare_reductions_more(r);
    decl::declare_unary_math(r);   // issue 29 item 3
    decl::declare_activations(r);
    decl::declare_conv(r);  // issue 30 item 1
    decl::declare_pooling(r);  // issue 30 item 1
    decl::declare_norm(r);         // issue 30 item 1
    decl::declare_losses(r);
    decl::declare_rnn(r);  // issue 30 item 1, recurrent layers
    decl::declare_linear(r);  // issue 31 item 4
    return r;
  }();
  return registry;
}

// ---- sample helpers ---------------------------------------------------------------------------------

namespace decl {

Tensor sample_uniform(const Shape& shape, Device device, uint64_t seed, double lo, double hi) {
  Generator gen(seed);
  Tensor u = rand(shape, gen, DType::f64, device);
  return add(mul(u, hi - lo), lo);
}

Tensor sample_away_from_zero(const Shape& shape, Device device, uint64_t seed, double lo, double hi) {
  Tensor magnitude = sample_uniform(shape, device, seed, lo, hi);
  Tensor sign = gt(sample_uniform(shape, device, seed + 1000, 0, 1), Scalar(0.5));
  return where(sign, magnitude, neg(magnitude));
}

}  // namespace decl
}  // namespace tritium::ops
