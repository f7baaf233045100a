// autograd::Function's context and the recording of its node (see nn/custom_function.h).
#include "nn/custom_function.h"

#include <boost/core/demangle.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tritium::autograd {
namespace {

// The same tensor: one storage, offset, shape and strides (what PyTorch compares by TensorImpl).
bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.storage() == b.storage() && a.storage_offset() == b.storage_offset() &&
         a.shape() == b.shape() && a.strides() == b.strides();
}

bool contains(const tensor_list& list, const Tensor& t) {
  for (const Tensor& x : list)
    if (same_tensor(x, t)) return true;
  return false;
}

}  // namespace

void AutogradContext::save_for_backward(tensor_list to_save) { to_save_ = std::move(to_save); }

void AutogradContext::mark_dirty(const tensor_list& inputs) { dirty_ = inputs; }

void AutogradContext::mark_non_differentiable(const tensor_list& outputs) { non_differentiable_ = outputs; }

bool AutogradContext::needs_input_grad(size_t index) const {
  if (index >= needs_input_grad_.size())
    fail("needs_input_grad: index {} is out of range: the forward took {} arguments", index, needs_input_grad_.size());
  return needs_input_grad_[index];
}

tensor_list AutogradContext::get_saved_variables() const {
  tensor_list out;
  for (size_t i = 0; i < saved_.size(); ++i) {
    const Saved& s = saved_[i];
    if (!s.tensor.defined()) {
      out.emplace_back();
      continue;
    }
    if (s.tensor._version() != s.version)
      fail("{}: one of the variables needed for gradient computation has been modified by an inplace operation: "
           "[{} [{}]], which is {} of {}, is at version {}; expected version {} instead. Hint: the value was saved by "
           "save_for_backward and changed before backward (clone it before the in-place op)",
           name_, dtype_name(s.tensor.dtype()), fmt::join(s.tensor.shape(), ", "),
           s.is_output ? std::string("output 0") : fmt::format("saved tensor {}", i), name_, s.tensor._version(),
           s.version);
    Tensor t = s.tensor;
    if (s.is_output && nn::grad_enabled() && nn::current_backward_node()) {
      // create_graph: the saved output differentiates through this node (saved detached: no cycle).
      auto meta = std::make_shared<nn::AutogradMeta>();
      meta->requires_grad = true;
      meta->grad_fn = nn::current_backward_node();
      t.set_autograd(std::move(meta));
    }
    out.push_back(std::move(t));
  }
  return out;
}

Tensor AutogradContext::finish(const std::shared_ptr<AutogradContext>& ctx, const std::type_info& type,
                               tensor_list inputs, Tensor output,
                               std::function<tensor_list(AutogradContext*, tensor_list)> backward) {
  std::string name = boost::core::demangle(type.name());
  if (auto colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  name += "Backward";
  ctx->name_ = name;
  if (!output.defined()) fail("{}: the forward returned an undefined tensor", name);

  bool any = false;
  ctx->needs_input_grad_.assign(inputs.size(), false);
  if (nn::grad_enabled())
    for (size_t i = 0; i < inputs.size(); ++i) {
      ctx->needs_input_grad_[i] = inputs[i].defined() && inputs[i].requires_grad();
      any = any || ctx->needs_input_grad_[i];
    }

  for (const Tensor& d : ctx->dirty_) {
    if (!contains(inputs, d)) fail("{}: mark_dirty was given a tensor that is not an input of the forward", name);
    if (nn::grad_enabled() && d.requires_grad() && d.is_leaf())
      fail("{}: a leaf Variable that requires grad has been used in an in-place operation ({}).", name, d.str());
  }
  for (const Tensor& t : ctx->non_differentiable_)
    if (!same_tensor(t, output))
      fail("{}: mark_non_differentiable was given a tensor that is not an output of the forward", name);
  const bool differentiable = any && ctx->non_differentiable_.empty();

  // The saved tensors: the output detached (a node must not keep its own output's state alive),
  // inputs with their history; each with its version now.
  for (const Tensor& t : ctx->to_save_) {
    if (differentiable) nn::check_savable(t, name);
    bool is_output = same_tensor(t, output) || contains(ctx->dirty_, t);  // a dirty input is the output
    Tensor kept = is_output ? t.detach() : t;
    if (!is_output && !contains(inputs, t) && t.defined()) kept = t;  // an intermediate: kept as given
    ctx->saved_.push_back({kept, t.defined() ? t._version() : 0, is_output});
  }
  ctx->to_save_.clear();

  // The output that is a dirty input: the handle the caller holds for that input must see the
  // new history, so it is the input's own state that gets this node.
  std::shared_ptr<nn::AutogradMeta> dirty_meta;
  for (const Tensor& in : inputs)
    if (same_tensor(in, output) && contains(ctx->dirty_, in)) dirty_meta = in.autograd();

  if (!differentiable) {
    if (!dirty_meta) output.set_autograd(nullptr);
    return output;
  }
  const size_t n_args = inputs.size();
  std::vector<bool> is_tensor_arg(n_args);
  for (size_t i = 0; i < n_args; ++i) is_tensor_arg[i] = inputs[i].defined();
  Tensor recorded = nn::record(output.detach(), inputs, name,
                               [ctx, backward = std::move(backward), name, is_tensor_arg](const Tensor& g) {
                                 tensor_list grads = backward(ctx.get(), tensor_list{g});
                                 if (grads.size() != is_tensor_arg.size())
                                   fail("function {} returned an incorrect number of gradients (expected {}, got {})",
                                        name, is_tensor_arg.size(), grads.size());
                                 for (size_t i = 0; i < grads.size(); ++i)
                                   if (grads[i].defined() && !is_tensor_arg[i])
                                     fail("function {} returned a gradient different than None at position {}, but "
                                          "the corresponding forward input was not a Variable",
                                          name, i + 1);
                                 return grads;
                               });
  if (dirty_meta) {
    dirty_meta->grad_fn = recorded.autograd()->grad_fn;
    dirty_meta->requires_grad = true;
    output.set_autograd(dirty_meta);
    return output;
  }
  return recorded;
}

}  // namespace tritium::autograd
