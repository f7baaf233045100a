// Tensor's in-place ops (runtime/tensor.h): each computes the out-of-place op (recorded, from a
// clone of self when recording so that what the op saves is never the storage being overwritten),
// writes the result into self's storage, bumps the storage's version counter, and, when recorded,
// makes self the output of the op's node (PyTorch's rebase_history). PyTorch's refusals come
// first: a leaf that requires grad, a recorded in-place on a view, an inference tensor outside
// inference mode.
#include <cmath>
#include <functional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/overlap.h"
#include "nn/autograd.h"
#include "nn/inplace.h"
#include "nn/functional.h"
#include "ops/ops.h"

namespace tritium::runtime {
namespace {

using ops::Scalar;
using Shape = Tensor::Shape;

// Whether PyTorch's in-place rule lets a `from` result be written into a `to` tensor: no float
// into an integer tensor, no number into a bool tensor.
bool can_cast(DType from, DType to) {
  if (is_float(from) && !is_float(to)) return false;
  if (!is_bool(from) && is_bool(to)) return false;
  return true;
}

// Tensor::is_contiguous's rule on a stored geometry (size-1 dims' strides are never used).
bool row_major(const Shape& shape, const Shape& strides) {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

// PyTorch's CopySlices: the base's new history. Its gradient g (of the base's shape) goes to the
// base's old history with the view's region zeroed, and the region to the in-place op's node `op`
// (whose own backward reaches the view's old history, hence the base's, and the operand). The
// base is contiguous, so the view's strides address a contiguous copy of g directly.
void rebase_base_history(const Tensor& view, const nn::AutogradMeta& meta, const std::shared_ptr<nn::Node>& op) {
  const Shape shape = view.shape(), strides = view.strides();
  const int64_t offset = view.storage_offset() - meta.base_offset;
  auto node = std::make_shared<nn::FunctionNode>("CopySlices", [shape, strides, offset](const Tensor& g) {
    if (nn::grad_enabled())
      fail("CopySlices: a double backward through an in-place operation on a view is not supported");
    Tensor base_grad = ops::clone(g);
    Tensor region = base_grad.detach().as_strided(shape, strides, offset);
    Tensor region_grad = ops::clone(region);
    ops::fill_(region, Scalar(0));
    return std::vector<Tensor>{base_grad, region_grad};
  });
  nn::AutogradMeta& base = *meta.view_base;
  node->next = {nn::Edge{base.grad_fn, nullptr}, nn::Edge{op, nullptr}};
  base.grad_fn = std::move(node);
}

Tensor& apply_inplace(Tensor& self, const char* name, const std::vector<Tensor>& others,
                      const std::function<Tensor(const Tensor& self_value)>& compute) {
  if (!self.defined()) fail("{}: the tensor is undefined", name);
  if (self.is_inference() && !nn::is_inference_mode_enabled())
    fail("{}: Inplace update to inference tensor outside InferenceMode is not allowed. You can make a clone to get a "
         "normal tensor before doing inplace update. ({})",
         name, self.str());
  const bool grad_mode = nn::grad_enabled();
  if (grad_mode && self.requires_grad() && self.is_leaf())
    fail("{}: a leaf Variable that requires grad is being used in an in-place operation. ({}; do it under "
         "NoGradGuard, as optimisers do, or on a clone)",
         name, self.str());
  bool record = grad_mode && self.requires_grad();
  for (const Tensor& o : others) record = record || (grad_mode && o.defined() && o.requires_grad());
  runtime::check_no_internal_overlap(name, self);
  // A recorded in-place op on a view rewrites its base's history (CopySlices below); that needs a
  // base that requires grad and is not a leaf.
  const std::shared_ptr<nn::AutogradMeta> view_meta =
      record && self.autograd() && self.autograd()->is_view ? self.autograd() : nullptr;
  if (view_meta) {
    const auto& base = view_meta->view_base;
    if (!base)
      fail("{}: an in-place operation recorded on a view of a tensor that does not require grad is not supported "
           "(the base would have to take the operand's history); apply it to the base, to a clone of the view, or "
           "under NoGradGuard ({})",
           name, self.str());
    if (!base->grad_fn)
      fail("{}: a view of a leaf Variable that requires grad is being used in an in-place operation. ({})", name,
           self.str());
    if (!row_major(view_meta->base_shape, view_meta->base_strides))
      fail("{}: an in-place operation recorded on a view of a non-contiguous tensor is not supported; apply it to a "
           "contiguous base ({})",
           name, self.str());
  }
  for (const Tensor& o : others)
    if (o.defined() && o.device() != self.device())
      fail("{}: expected all tensors to be on the same device, but found {} and {}", name, self.device().str(),
           o.device().str());

  // Recording: the op reads a clone (CloneBackward links it to self's history), so the values it
  // saves are not the ones about to be overwritten.
  Tensor result = compute(record ? self.clone() : self.detach());
  if (result.shape() != self.shape())
    fail("{}: output with shape {} doesn't match the broadcast shape {}", name, fmt::format("[{}]", fmt::join(self.shape(), ", ")),
         fmt::format("[{}]", fmt::join(result.shape(), ", ")));
  if (!can_cast(result.dtype(), self.dtype()))
    fail("{}: result type {} can't be cast to the desired output type {}", name, dtype_name(result.dtype()),
         dtype_name(self.dtype()));
  Tensor dst = self.detach();
  ops::copy_(dst, result.detach());
  self.storage()->bump_version();
  if (record && result.requires_grad() && view_meta) {
    rebase_base_history(self, *view_meta, result.autograd()->grad_fn);
    view_meta->grad_fn = result.autograd()->grad_fn;  // the view is the op's output
    view_meta->requires_grad = true;
  } else if (record && result.requires_grad()) {
    // self is now the op's output: copies of this handle share its state and see the new history.
    if (self.autograd()) {
      self.autograd()->grad_fn = result.autograd()->grad_fn;
      self.autograd()->requires_grad = true;
    } else {
      self.set_autograd(result.autograd());
    }
  }
  return self;
}

}  // namespace

Tensor& Tensor::add_(const Tensor& other) {
  return apply_inplace(*this, "add_", {other}, [&](const Tensor& s) { return tritium::add(s, other); });
}
Tensor& Tensor::add_(const Scalar& other) {
  return apply_inplace(*this, "add_", {}, [&](const Tensor& s) { return s + other; });
}
Tensor& Tensor::sub_(const Tensor& other) {
  return apply_inplace(*this, "sub_", {other}, [&](const Tensor& s) { return tritium::sub(s, other); });
}
Tensor& Tensor::sub_(const Scalar& other) {
  return apply_inplace(*this, "sub_", {}, [&](const Tensor& s) { return s - other; });
}
Tensor& Tensor::mul_(const Tensor& other) {
  return apply_inplace(*this, "mul_", {other}, [&](const Tensor& s) { return tritium::mul(s, other); });
}
Tensor& Tensor::mul_(const Scalar& other) {
  return apply_inplace(*this, "mul_", {}, [&](const Tensor& s) { return s * other; });
}
Tensor& Tensor::div_(const Tensor& other) {
  return apply_inplace(*this, "div_", {other}, [&](const Tensor& s) { return tritium::div(s, other); });
}
Tensor& Tensor::div_(const Scalar& other) {
  return apply_inplace(*this, "div_", {}, [&](const Tensor& s) { return s / other; });
}
Tensor& Tensor::relu_() {
  return apply_inplace(*this, "relu_", {}, [](const Tensor& s) { return tritium::relu(s); });
}

Tensor& Tensor::clamp_(std::optional<double> min, std::optional<double> max) {
  if (!min && !max) fail("clamp_: At least one of 'min' or 'max' must not be None");
  // The declared clamp (one kernel; its gradient reaches x where min <= x <= max, as PyTorch's
  // clamp_backward).
  // On an integer tensor a whole-number bound is an integer (as a Python int would be).
  const bool integral = defined() && !is_float(dtype());
  auto bound = [&](std::optional<double> v) -> std::optional<Scalar> {
    if (!v) return std::nullopt;
    if (integral && *v == std::floor(*v) && std::abs(*v) < 9e18) return Scalar(static_cast<int64_t>(*v));
    return Scalar(*v);
  };
  return apply_inplace(*this, "clamp_", {}, [&](const Tensor& s) { return tritium::clamp(s, bound(min), bound(max)); });
}

Tensor& Tensor::copy_(const Tensor& src) {
  if (!src.defined()) fail("copy_: the source tensor is undefined");
  return apply_inplace(*this, "copy_", {src}, [&](const Tensor& s) {
    // src broadcast to self's shape and converted to self's dtype; gradient: g to src (summed back
    // to its shape, in its dtype by record), zeros to the overwritten values (derivatives.yaml's
    // `self: zeros_like(grad)`): self's old history stays connected but gets nothing, even when
    // src does not require grad.
    Tensor out = Tensor::empty(s.shape(), s.dtype(), s.device());
    ops::copy_(out, src.detach());
    return nn::record(std::move(out), {s, src}, "CopyBackwards",
                      [](const Tensor& g) { return std::vector<Tensor>{ops::zeros_like(g), g}; });
  });
}

Tensor& Tensor::fill_(const Scalar& value) {
  return apply_inplace(*this, "fill_", {}, [&](const Tensor& s) {
    // A constant: self's earlier history gets zeros from here on (PyTorch's FillBackward).
    return nn::record(ops::full(s.shape(), value, s.dtype(), s.device()), {s}, "FillBackward",
                      [](const Tensor& g) { return std::vector<Tensor>{ops::zeros_like(g)}; });
  });
}

Tensor& Tensor::zero_() { return fill_(Scalar(0)); }

}  // namespace tritium::runtime

namespace tritium::nn {

Tensor& apply_inplace(Tensor& self, const char* name, const std::vector<Tensor>& others,
                      const std::function<Tensor(const Tensor& self_value)>& compute) {
  return runtime::apply_inplace(self, name, others, compute);
}

}  // namespace tritium::nn
