// Tensor::index and Tensor::index_put_ (runtime/tensor_index.h): PyTorch's x[...] in two steps.
// The basic indices (integers, slices, None, Ellipsis, C++ bools) become views (select, slice,
// unsqueeze: differentiable for index, raw for index_put_); the tensors left over are one
// advanced index per dim of that view, handed to the declared op `index` (a gather) or to
// ops::index_put_ (a scatter). As in PyTorch, an integer next to index tensors is a select, so
// it does not separate them.
#include <limits>

#include "nn/autograd.h"
#include "nn/tensor_ops.h"
#include "ops/indexing.h"
#include "runtime/views.h"

namespace tritium::runtime {
namespace {

using indexing::TensorIndex;

// The view operations the basic indices apply: differentiable ones for index, raw ones for index_put_.
struct ViewOps {
  Tensor (*select)(const Tensor&, int, int64_t);
  Tensor (*slice)(const Tensor&, int, int64_t, int64_t, int64_t);
  Tensor (*unsqueeze)(const Tensor&, int);
};
const ViewOps kDifferentiable{
    [](const Tensor& x, int d, int64_t i) { return x.select(d, i); },
    [](const Tensor& x, int d, int64_t a, int64_t b, int64_t s) { return x.slice(d, a, b, s); },
    [](const Tensor& x, int d) { return x.unsqueeze(d); }};
const ViewOps kRaw{[](const Tensor& x, int d, int64_t i) { return select_of(x, d, i); },
                   [](const Tensor& x, int d, int64_t a, int64_t b, int64_t s) { return slice_of(x, d, a, b, s); },
                   [](const Tensor& x, int d) { return unsqueeze_of(x, d); }};

struct Applied {
  Tensor view;
  std::vector<Tensor> advanced;  // per dim of view; undefined where no tensor indexes it
};

// How many of the tensor's dims an index uses (Ellipsis: none of its own).
int64_t dims_used(const TensorIndex& i) {
  if (i.is_integer() || i.is_slice()) return 1;
  if (i.is_tensor()) {
    const Tensor& t = i.tensor();
    return t.dtype() == DType::i1 || t.dtype() == DType::u8 ? t.dim() : 1;
  }
  return 0;
}

Applied apply_basic(const char* op, const Tensor& x, const std::vector<TensorIndex>& indices, const ViewOps& ops) {
  if (!x.defined()) fail("{}: tensor is undefined", op);
  int64_t used = 0, ellipses = 0;
  for (const TensorIndex& i : indices) used += dims_used(i), ellipses += i.is_ellipsis();
  if (ellipses > 1) fail("{}: an index can only have a single ellipsis ('...')", op);
  if (used > x.dim()) fail("{}: too many indices for tensor of dimension {} (the indices use {})", op, x.dim(), used);
  Applied a{x, {}};
  int dim = 0;
  auto advanced_at = [&](int d, const Tensor& t) {
    if (a.advanced.size() < static_cast<size_t>(d + 1)) a.advanced.resize(static_cast<size_t>(d + 1));
    a.advanced[static_cast<size_t>(d)] = t;
  };
  for (const TensorIndex& i : indices) {
    if (i.is_integer()) {
      int64_t size = a.view.shape()[static_cast<size_t>(dim)];
      int64_t k = i.integer();
      if (k < -size || k >= size)
        fail("{}: index {} is out of bounds for dimension {} with size {}", op, k, dim, size);
      a.view = ops.select(a.view, dim, k);
    } else if (i.is_slice()) {
      const indexing::Slice& s = i.slice();
      if (s.step <= 0) fail("{}: slice step must be positive, got {}", op, s.step);
      a.view = ops.slice(a.view, dim, s.start.value_or(0), s.stop.value_or(std::numeric_limits<int64_t>::max()), s.step);
      ++dim;
    } else if (i.is_none()) {
      a.view = ops.unsqueeze(a.view, dim++);
    } else if (i.is_boolean()) {  // x[True] adds a dim of size 1, x[False] one of size 0
      a.view = ops.unsqueeze(a.view, dim);
      if (!i.boolean()) a.view = ops.slice(a.view, dim, 0, 0, 1);
      ++dim;
    } else if (i.is_ellipsis()) {
      dim += static_cast<int>(x.dim() - used);
    } else {
      const Tensor& t = i.tensor();
      if (!t.defined()) fail("{}: an index tensor is undefined", op);
      advanced_at(dim, t);
      dim += static_cast<int>(dims_used(i));
    }
  }
  // A mask spans several dims: only its first dim holds it; the others are left undefined here
  // and consumed by the mask (ops::index expands a mask over the dims that follow).
  std::vector<Tensor> compact;
  for (size_t d = 0; d < a.advanced.size(); ++d) {
    compact.push_back(a.advanced[d]);
    const Tensor& t = a.advanced[d];
    if (t.defined() && (t.dtype() == DType::i1 || t.dtype() == DType::u8)) d += static_cast<size_t>(std::max(t.dim(), 1) - 1);
  }
  a.advanced = std::move(compact);
  return a;
}

bool any_tensor(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts)
    if (t.defined()) return true;
  return false;
}

}  // namespace

Tensor Tensor::index(const std::vector<indexing::TensorIndex>& indices) const {
  Applied a = apply_basic("index", *this, indices, kDifferentiable);
  if (!any_tensor(a.advanced)) return a.view;
  return tritium::index(a.view, a.advanced);
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values) {
  if (!values.defined()) fail("index_put_: the values tensor is undefined");
  if (nn::grad_enabled() && (requires_grad() || values.requires_grad()))
    fail("index_put_: in-place indexing of tensors that require grad is not recorded by autograd yet; use "
         "tritium::index_put (out of place) or run under no_grad");
  Applied a = apply_basic("index_put_", *this, indices, kRaw);
  Tensor v = values.dtype() == dtype_ ? values : ops::to_dtype(values, dtype_);
  if (!any_tensor(a.advanced)) ops::copy_(a.view, v);
  else ops::index_put_(a.view, a.advanced, v, false);
  return *this;
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, double value) {
  if (!defined()) fail("index_put_: tensor is undefined");
  return index_put_(indices, ops::full({}, value, dtype_, device_));
}

}  // namespace tritium::runtime
