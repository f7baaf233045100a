// Tensor's PyTorch-style methods (declared in runtime/tensor.h): the metadata views of
// runtime/views.h plus their autograd nodes. Backward functions run under no_grad and are built
// from the same views and the op library (ops::sum_to, ops::zeros, ops::copy_, ops::to_dtype).
#include <memory>
#include <numeric>
#include <utility>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "ops/ops.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_streams.h"
#include "runtime/views.h"

namespace tritium::runtime {
namespace {

using nn::record;

// A raw view never carries the autograd state of the tensor it was taken from (as_strided copies
// the handle); record() gives it its own.
Tensor fresh(Tensor view) {
  view.set_autograd(nullptr);
  return view;
}

// A view is marked as one (an autograd state of its own that does not require grad, when no
// history is recorded), so that a recorded in-place op on it, which would have to rewrite its
// base's history (PyTorch's CopySlices), is refused instead of leaving the base a wrong gradient.
Tensor view_result(Tensor out, const Tensor& input) {
  if (!out.autograd()) out.set_autograd(std::make_shared<nn::AutogradMeta>());
  nn::AutogradMeta& meta = *out.autograd();
  meta.is_view = true;
  if (const auto& in = input.autograd(); meta.requires_grad && in && in->requires_grad) {
    if (in->view_base) {  // a view of a view: the same root base
      meta.view_base = in->view_base;
      meta.base_shape = in->base_shape;
      meta.base_strides = in->base_strides;
      meta.base_offset = in->base_offset;
    } else {
      meta.view_base = in;
      meta.base_shape = input.shape();
      meta.base_strides = input.strides();
      meta.base_offset = input.storage_offset();
    }
  }
  return out;
}

// reshape without autograd: a view when the strides allow one, else a contiguous copy.
Tensor reshape_raw(const Tensor& x, Shape shape) {
  Shape s = infer_shape(std::move(shape), x.numel());
  if (view_strides(x.shape(), x.strides(), s)) return view_of(x, std::move(s));
  return view_of(ops::contiguous(x), std::move(s));
}

// The backwards below are views of the gradient: raw in a plain backward, recorded (the same
// methods) when the backward runs under create_graph, so that it can be differentiated again.
bool recording() { return nn::grad_enabled(); }

// slice/select's backward: zeros of the input's shape with g written into the part `part_of`
// takes; under create_graph its own backward is that part of the incoming gradient.
template <class Part>
Tensor scatter_into_zeros(const Tensor& g, const Shape& in, Part part_of, const char* name) {
  Tensor z = ops::zeros(in, g.dtype(), g.device());
  Tensor part = part_of(z);
  ops::copy_(part, g);
  if (!recording()) return z;
  return record(z, {g}, name, [part_of](const Tensor& gg) { return std::vector<Tensor>{part_of(gg)}; });
}

}  // namespace

Tensor Tensor::view(Shape shape) const {
  Shape in = shape_;
  return view_result(record(fresh(view_of(*this, std::move(shape))), {*this}, "ViewBackward",
                [in](const Tensor& g) { return std::vector<Tensor>{recording() ? g.reshape(in) : reshape_raw(g, in)}; }), *this);
}

Tensor Tensor::reshape(Shape shape) const {
  if (!defined()) fail("reshape: tensor is undefined");
  Shape in = shape_;
  const bool is_view = view_strides(shape_, strides_, infer_shape(shape, numel())).has_value();
  Tensor out = record(fresh(reshape_raw(*this, shape)), {*this}, "ReshapeBackward",
                [in](const Tensor& g) { return std::vector<Tensor>{recording() ? g.reshape(in) : reshape_raw(g, in)}; });
  return is_view ? view_result(std::move(out), *this) : out;
}

Tensor Tensor::permute(std::vector<int> dims) const {
  Tensor out = fresh(permute_of(*this, dims));
  // The inverse permutation: out dim i is input dim dims[i].
  std::vector<int> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inverse[static_cast<size_t>(wrap_dim(dims[i], dim(), "permute"))] = static_cast<int>(i);
  return view_result(record(std::move(out), {*this}, "PermuteBackward",
                [inverse](const Tensor& g) {
                  return std::vector<Tensor>{recording() ? g.permute(inverse) : permute_of(g, inverse)};
                }), *this);
}

Tensor Tensor::transpose(int dim0, int dim1) const {
  return view_result(record(fresh(transpose_of(*this, dim0, dim1)), {*this}, "TransposeBackward",
                [dim0, dim1](const Tensor& g) {
                  return std::vector<Tensor>{recording() ? g.transpose(dim0, dim1) : transpose_of(g, dim0, dim1)};
                }), *this);
}

Tensor Tensor::t() const {
  return view_result(record(fresh(t_of(*this)), {*this}, "TBackward",
                [](const Tensor& g) { return std::vector<Tensor>{recording() ? g.t() : t_of(g)}; }), *this);
}

Tensor Tensor::squeeze(std::optional<int> d) const {
  Shape in = shape_;
  return view_result(record(fresh(squeeze_of(*this, d)), {*this}, "SqueezeBackward",
                [in](const Tensor& g) { return std::vector<Tensor>{recording() ? g.reshape(in) : reshape_raw(g, in)}; }), *this);
}

Tensor Tensor::unsqueeze(int d) const {
  Tensor out = fresh(unsqueeze_of(*this, d));
  int wrapped = wrap_dim(d, dim() + 1, "unsqueeze");
  return view_result(record(std::move(out), {*this}, "UnsqueezeBackward",
                [wrapped](const Tensor& g) {
                  return std::vector<Tensor>{recording() ? g.squeeze(wrapped) : squeeze_of(g, wrapped)};
                }), *this);
}

Tensor Tensor::expand(Shape shape) const {
  Shape in = shape_;
  return view_result(record(fresh(expand_of(*this, shape)), {*this}, "ExpandBackward",
                [in](const Tensor& g) {
                  return std::vector<Tensor>{recording() ? tritium::sum_to(g, in) : ops::sum_to(g, in)};
                }), *this);
}

Tensor Tensor::slice(int d, int64_t start, int64_t end, int64_t step) const {
  Shape in = shape_;
  Tensor out = fresh(slice_of(*this, d, start, end, step));  // checks d, step
  const int dim = wrap_dim(d, this->dim(), "slice");
  const auto [lo, hi] = slice_bounds(shape_[dim], start, end);  // the positions the part lies within
  out = record(std::move(out), {*this}, "SliceBackward", [in, d, start, end, step](const Tensor& g) {
    auto part = [=](const Tensor& t) { return recording() ? t.slice(d, start, end, step) : slice_of(t, d, start, end, step); };
    return std::vector<Tensor>{scatter_into_zeros(g, in, part, "SliceBackwardBackward")};
  });
  nn::set_input_part(out, {[=](const Tensor& t) { return slice_of(t, d, start, end, step); }, in, dtype_, dim, lo, hi});
  return view_result(std::move(out), *this);
}

Tensor Tensor::select(int d, int64_t index) const {
  Shape in = shape_;
  Tensor out = fresh(select_of(*this, d, index));  // checks d, index
  const int dim = wrap_dim(d, this->dim(), "select");
  const int64_t at = index < 0 ? index + shape_[dim] : index;
  out = record(std::move(out), {*this}, "SelectBackward", [in, d, index](const Tensor& g) {
    auto part = [=](const Tensor& t) { return recording() ? t.select(d, index) : select_of(t, d, index); };
    return std::vector<Tensor>{scatter_into_zeros(g, in, part, "SelectBackwardBackward")};
  });
  nn::set_input_part(out, {[=](const Tensor& t) { return select_of(t, d, index); }, in, dtype_, dim, at, at + 1});
  return view_result(std::move(out), *this);
}

Tensor Tensor::contiguous() const {
  if (!defined()) fail("contiguous: tensor is undefined");
  if (is_contiguous()) return *this;  // the same tensor, autograd state included (as PyTorch)
  return record(ops::contiguous(*this), {*this}, "ContiguousBackward",
                [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Tensor Tensor::clone() const {
  if (!defined()) fail("clone: tensor is undefined");
  return record(ops::clone(*this), {*this}, "CloneBackward", [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Tensor Tensor::to(Device device) const {
  if (!defined()) fail("to: tensor is undefined");
  if (device == device_) return *this;
  if (!runtime::memory_available(device))
    fail("to: cannot copy {} to {}: {}", str(), device.str(), runtime::memory_unavailable_reason(device));
  // A contiguous copy on `device`: host -> cuda by H2D from a contiguous host tensor, cuda -> host
  // by copy_to_contiguous (D2H), cuda:i -> cuda:j through the host.
  Tensor out;
  if (device_.is_cpu()) {
    Tensor src = is_contiguous() ? *this : ops::contiguous(*this);
    out = Tensor::empty(shape_, dtype_, device);
    cuda::copy_h2d(cuda::to_deviceptr(out.raw_data()), src.raw_data(), static_cast<size_t>(nbytes()), device.index,
                   cuda::current_stream(device.index));
  } else if (device.is_cpu()) {
    out = Tensor::empty(shape_, dtype_, device);
    copy_to_contiguous(out.raw_data());
  } else {
    out = detach().to(Device::cpu()).to(device);
  }
  Device from = device_;
  return record(std::move(out), {*this}, "ToCopyBackward",
                [from](const Tensor& g) { return std::vector<Tensor>{g.to(from)}; });
}

Tensor Tensor::to(DType dtype) const {
  if (!defined()) fail("to: tensor is undefined");
  if (dtype == dtype_) return *this;
  DType in = dtype_;
  // A conversion to a non-float dtype ends the graph (its result cannot require grad).
  std::vector<Tensor> inputs;
  if (is_float(dtype)) inputs.push_back(*this);
  return record(ops::to_dtype(*this, dtype), inputs, "ToCopyBackward",
                [in](const Tensor& g) { return std::vector<Tensor>{recording() ? g.to(in) : ops::to_dtype(g, in)}; });
}

}  // namespace tritium::runtime
