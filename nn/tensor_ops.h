// The differentiable tensor ops of issue 29 item 2 (what a PyTorch user writes): shape ops and
// indexing, each one call of the generic dispatch on its declaration (ops/decl/shape.cpp,
// ops/decl/indexing.cpp). Views stay views; split/chunk/tensor_split/unbind return views made by
// the differentiable narrow / select, so each part has its own history. Included by
// nn/functional.h.
#pragma once
#include <vector>

#include "ops/indexing.h"
#include "ops/shape.h"
#include "nn/elementwise_ops.h"  // issue 29 item 3: element-wise math, activations, bitwise

namespace tritium {

using runtime::Tensor;


Tensor flatten(const Tensor& x, int start_dim = 0, int end_dim = -1);
Tensor unflatten(const Tensor& x, int dim, ops::Shape sizes);
Tensor ravel(const Tensor& x);
Tensor broadcast_to(const Tensor& x, ops::Shape shape);
Tensor narrow(const Tensor& x, int dim, int64_t start, int64_t length);
Tensor unfold(const Tensor& x, int dim, int64_t size, int64_t step);
Tensor movedim(const Tensor& x, std::vector<int> source, std::vector<int> destination);
Tensor movedim(const Tensor& x, int source, int destination);
Tensor diagonal(const Tensor& x, int64_t offset = 0, int dim1 = 0, int dim2 = 1);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int dim = 0);
std::vector<Tensor> split(const Tensor& x, const ops::Shape& split_sizes, int dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int dim = 0);
std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int dim = 0);
std::vector<Tensor> tensor_split(const Tensor& x, const ops::Shape& indices, int dim = 0);
std::vector<Tensor> unbind(const Tensor& x, int dim = 0);
Tensor cat(const std::vector<Tensor>& tensors, int dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int dim = 0);
Tensor repeat(const Tensor& x, ops::Shape repeats);
Tensor flip(const Tensor& x, std::vector<int> dims);
Tensor roll(const Tensor& x, ops::Shape shifts, std::vector<int> dims = {});
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);

// Indexing (ops/indexing.h); index tensors and masks are not differentiable. x.index({...}) is
// the C++ x[...] (runtime/tensor_index.h); index and index_put below are aten::index / index_put
// (one index tensor per dim, undefined for a full slice).
Tensor gather(const Tensor& x, int dim, const Tensor& index);
Tensor scatter(const Tensor& x, int dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int dim, const Tensor& index, ops::Scalar value);
Tensor scatter_add(const Tensor& x, int dim, const Tensor& index, const Tensor& src);
Tensor scatter_reduce(const Tensor& x, int dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self = true);
Tensor index_select(const Tensor& x, int dim, const Tensor& index);
Tensor index_add(const Tensor& x, int dim, const Tensor& index, const Tensor& source, ops::Scalar alpha = ops::Scalar(1));
Tensor masked_fill(const Tensor& x, const Tensor& mask, ops::Scalar value);
Tensor masked_select(const Tensor& x, const Tensor& mask);
Tensor index(const Tensor& x, const std::vector<Tensor>& indices);
Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);
using ops::nonzero;  // integer result: not differentiable
// torch.where's other forms: a C++ number for one branch (a wrapped number in the promotion:
// where(c, i32 tensor, 2.5) is f32), and where(cond) = nonzero(cond, as_tuple=True), one i64
// tensor of coordinates per dim.
Tensor where(const Tensor& cond, const Tensor& a, ops::Scalar b);
Tensor where(const Tensor& cond, ops::Scalar a, const Tensor& b);
std::vector<Tensor> where(const Tensor& cond);

}  // namespace tritium
#include "nn/reduction_ops.h"  // reductions, scans, sorting (issue 29, item 4)
