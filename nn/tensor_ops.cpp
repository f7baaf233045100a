// The differentiable shape and indexing ops (nn/tensor_ops.h): one dispatch call each; the
// multi-part splits are lists of differentiable narrows / selects.
#include "nn/tensor_ops.h"

#include <utility>

#include "nn/dispatch.h"
#include "nn/functional.h"
#include "runtime/views.h"

namespace tritium {
namespace {

using ops::Attrs;
using Dims = std::vector<int>;

// The differentiable views of the raw parts: a slice along dim at each part's start, read from
// the part's storage offset (tensor_split's parts may restart before the previous end). Along a
// stride-0 dim every start shows the same elements, so 0 serves.
std::vector<Tensor> narrowed(const Tensor& x, int dim, const std::vector<Tensor>& raw_parts) {
  int d = runtime::wrap_dim(dim, x.dim(), "split");
  const int64_t stride = x.strides()[static_cast<size_t>(d)];
  std::vector<Tensor> out;
  for (const Tensor& p : raw_parts) {
    int64_t n = p.shape()[static_cast<size_t>(d)];
    int64_t start = n == 0 || stride == 0 ? 0 : (p.storage_offset() - x.storage_offset()) / stride;
    out.push_back(x.slice(d, start, start + n));  // a part view: its gradient goes straight into x's
  }
  return out;
}

}  // namespace

Tensor flatten(const Tensor& x, int start_dim, int end_dim) {
  return nn::call("flatten", {x}, Attrs{{"start_dim", start_dim}, {"end_dim", end_dim}});
}
Tensor unflatten(const Tensor& x, int dim, ops::Shape sizes) {
  return nn::call("unflatten", {x}, Attrs{{"dim", dim}, {"sizes", std::move(sizes)}});
}
Tensor ravel(const Tensor& x) { return nn::call("ravel", {x}); }
Tensor broadcast_to(const Tensor& x, ops::Shape shape) { return nn::call("broadcast_to", {x}, Attrs{{"size", std::move(shape)}}); }
Tensor narrow(const Tensor& x, int dim, int64_t start, int64_t length) {
  return nn::call("narrow", {x}, Attrs{{"dim", dim}, {"start", start}, {"length", length}});
}
Tensor unfold(const Tensor& x, int dim, int64_t size, int64_t step) {
  return nn::call("unfold", {x}, Attrs{{"dim", dim}, {"size", size}, {"step", step}});
}
Tensor movedim(const Tensor& x, std::vector<int> source, std::vector<int> destination) {
  return nn::call("movedim", {x}, Attrs{{"source", std::move(source)}, {"destination", std::move(destination)}});
}
Tensor movedim(const Tensor& x, int source, int destination) { return movedim(x, Dims{source}, Dims{destination}); }
Tensor diagonal(const Tensor& x, int64_t offset, int dim1, int dim2) {
  return nn::call("diagonal", {x}, Attrs{{"offset", offset}, {"dim1", dim1}, {"dim2", dim2}});
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int dim) {
  return narrowed(x, dim, ops::split(x, split_size, dim));
}
std::vector<Tensor> split(const Tensor& x, const ops::Shape& split_sizes, int dim) {
  return narrowed(x, dim, ops::split(x, split_sizes, dim));
}
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int dim) { return narrowed(x, dim, ops::chunk(x, chunks, dim)); }
std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int dim) {
  return narrowed(x, dim, ops::tensor_split(x, sections, dim));
}
std::vector<Tensor> tensor_split(const Tensor& x, const ops::Shape& indices, int dim) {
  return narrowed(x, dim, ops::tensor_split(x, indices, dim));
}
std::vector<Tensor> unbind(const Tensor& x, int dim) {
  std::vector<Tensor> raw = ops::unbind(x, dim);  // checks dim
  std::vector<Tensor> out;
  for (size_t i = 0; i < raw.size(); ++i) out.push_back(x.select(dim, static_cast<int64_t>(i)));
  return out;
}

Tensor cat(const std::vector<Tensor>& tensors, int dim) {
  if (tensors.empty()) fail("cat: expected a non-empty list of tensors");
  return nn::call("cat", tensors, Attrs{{"dim", dim}});
}
Tensor stack(const std::vector<Tensor>& tensors, int dim) {
  if (tensors.empty()) fail("stack: expected a non-empty list of tensors");
  return nn::call("stack", tensors, Attrs{{"dim", dim}});
}
Tensor repeat(const Tensor& x, ops::Shape repeats) { return nn::call("repeat", {x}, Attrs{{"repeats", std::move(repeats)}}); }
Tensor flip(const Tensor& x, std::vector<int> dims) { return nn::call("flip", {x}, Attrs{{"dims", std::move(dims)}}); }
Tensor roll(const Tensor& x, ops::Shape shifts, std::vector<int> dims) {
  return nn::call("roll", {x}, Attrs{{"shifts", std::move(shifts)}, {"dims", std::move(dims)}});
}
Tensor tril(const Tensor& x, int64_t diagonal) { return nn::call("tril", {x}, Attrs{{"diagonal", diagonal}}); }
Tensor triu(const Tensor& x, int64_t diagonal) { return nn::call("triu", {x}, Attrs{{"diagonal", diagonal}}); }

// ---- indexing ---------------------------------------------------------------------------------------

Tensor gather(const Tensor& x, int dim, const Tensor& index) { return nn::call("gather", {x, index}, Attrs{{"dim", dim}}); }
Tensor scatter(const Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  return nn::call("scatter", {x, index, src}, Attrs{{"dim", dim}});
}
Tensor scatter(const Tensor& x, int dim, const Tensor& index, ops::Scalar value) {
  return nn::call("scatter.value", {x, index}, Attrs{{"dim", dim}, {"value", value}});
}
Tensor scatter_add(const Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  return nn::call("scatter_add", {x, index, src}, Attrs{{"dim", dim}});
}
Tensor scatter_reduce(const Tensor& x, int dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self) {
  return nn::call("scatter_reduce", {x, index, src},
                  Attrs{{"dim", dim}, {"reduce", reduce}, {"include_self", include_self}});
}
Tensor index_select(const Tensor& x, int dim, const Tensor& index) {
  return nn::call("index_select", {x, index}, Attrs{{"dim", dim}});
}
Tensor index_add(const Tensor& x, int dim, const Tensor& index, const Tensor& source, ops::Scalar alpha) {
  return nn::call("index_add", {x, index, source}, Attrs{{"dim", dim}, {"alpha", alpha}});
}
Tensor masked_fill(const Tensor& x, const Tensor& mask, ops::Scalar value) {
  return nn::call("masked_fill", {x, mask}, Attrs{{"value", value}});
}
Tensor masked_select(const Tensor& x, const Tensor& mask) { return nn::call("masked_select", {x, mask}); }
Tensor index(const Tensor& x, const std::vector<Tensor>& indices) {
  return nn::call("index", {x}, Attrs{{"indices", indices}});
}
Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  return nn::call("index_put", {x, values}, Attrs{{"indices", indices}, {"accumulate", accumulate}});
}

Tensor where(const Tensor& cond, const Tensor& a, ops::Scalar b) {
  if (!a.defined()) fail("where: argument 'input' is an undefined tensor");
  return where(cond, a, ops::full({}, b, ops::result_type(a, b), a.device()));
}
Tensor where(const Tensor& cond, ops::Scalar a, const Tensor& b) {
  if (!b.defined()) fail("where: argument 'other' is an undefined tensor");
  return where(cond, ops::full({}, a, ops::result_type(b, a), b.device()), b);
}
std::vector<Tensor> where(const Tensor& cond) {
  if (!cond.defined()) fail("where: the condition is an undefined tensor");
  Tensor nz = ops::nonzero(cond);
  std::vector<Tensor> out;
  for (int d = 0; d < cond.dim(); ++d) out.push_back(runtime::select_of(nz, 1, d));
  return out;
}

}  // namespace tritium
