// The in-place indexing ops (Tensor.scatter_add_, Tensor.index_add_): x itself is added into, with
// no copy of it first (the out-of-place ops of ops/indexing.h clone x, then do the same). What
// the backward of gather and index_select uses on fresh zeros, as PyTorch's
// `grad.new_zeros(...).scatter_add_(...)`. x must not be an expanded view (elements sharing
// memory): an error, as in PyTorch. Raw, not differentiable.
#pragma once
#include "ops/ops.h"

namespace tritium::ops {

Tensor& scatter_add_(Tensor& x, int dim, const Tensor& index, const Tensor& src);
Tensor& index_add_(Tensor& x, int dim, const Tensor& index, const Tensor& source, Scalar alpha = Scalar(1));

}  // namespace tritium::ops
