// Indexing ops of the tensor API (issue 29, item 2): gather / scatter along a dim, index_select /
// index_add, masks (masked_fill, masked_select, nonzero) and PyTorch's advanced indexing
// (aten::index / index_put_: one index tensor per dim, undefined for a full slice, bool masks
// expanded by nonzero). Raw and non-differentiable; nn/tensor_ops.h has the differentiable
// spellings and Tensor::index the C++ x[...] API. Every op is one launch of the strided
// index-copy kernel (ops/indexing.cpp) on a layout the host works out, except nonzero's count /
// scan / write kernels. Indices are validated before any launch (a reduction of the index tensor,
// one element read back): out of range is an error naming the index, the dim and its size.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/ops.h"

namespace tritium::ops {

// out[i][j] = x[index[i][j]][j] (dim 0): index of x's rank, index.size(d) <= x.size(d) for d != dim.
Tensor gather(const Tensor& x, int dim, const Tensor& index);
// x with x[index[i][j]][j] = src[i][j] (a copy of x); with duplicates one of the values wins.
Tensor scatter(const Tensor& x, int dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int dim, const Tensor& index, Scalar value);
Tensor scatter_add(const Tensor& x, int dim, const Tensor& index, const Tensor& src);
// reduce: "sum", "prod", "mean", "amax", "amin". include_self false: the scattered positions
// start from src alone. prod multiplies by a compare-and-swap loop per element (no atomic multiply).
Tensor scatter_reduce(const Tensor& x, int dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self = true);
// The elements of x at `index` (1-D) along dim.
Tensor index_select(const Tensor& x, int dim, const Tensor& index);
// x with alpha * source[..., i, ...] added at x[..., index[i], ...] (a copy of x).
Tensor index_add(const Tensor& x, int dim, const Tensor& index, const Tensor& source, Scalar alpha = Scalar(1));
// x where mask (bool, broadcast to x's shape) is false, value where it is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
// The elements of x (broadcast with mask) where mask is true, in row-major order, 1-D.
Tensor masked_select(const Tensor& x, const Tensor& mask);
// The row-major coordinates of x's nonzero elements: i64 [count, x.dim()]. Reads the count back.
Tensor nonzero(const Tensor& x);

// Advanced indexing, aten::index: indices[k] (i64 / i32 / bool; undefined = all of dim k) for
// x's first indices.size() dims. Integer indices broadcast together and may be negative; the
// result's indexed dims go where the first index was if the indexed dims are adjacent, else first.
Tensor index(const Tensor& x, const std::vector<Tensor>& indices);
// x[indices] = values (broadcast to the indexed shape), in place; accumulate adds (duplicates sum).
void index_put_(Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);
// In place (Tensor.scatter_add_, Tensor.index_add_): x itself is added into, with no copy of it
// first (scatter_add / index_add clone x, then do the same) - what the backward of gather and
// index_select uses on fresh zeros, as PyTorch's `grad.new_zeros(...).scatter_add_(...)`. x must
// not be an expanded view (elements sharing memory): an error, as in PyTorch. Not differentiable.
Tensor& scatter_add_(Tensor& x, int dim, const Tensor& index, const Tensor& src);
Tensor& index_add_(Tensor& x, int dim, const Tensor& index, const Tensor& source, Scalar alpha = Scalar(1));

}  // namespace tritium::ops
