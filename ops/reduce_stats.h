// Statistics reductions and scans of issue 29 item 4 (raw, non-differentiable; nn/reductions.h
// wraps them with autograd): var/std with a correction, prod, logsumexp, vector norms, all/any,
// count_nonzero, max/min along a dim with indices, cumsum/cumprod/cummax/cummin along any dim.
// Rules, dtypes and errors as PyTorch's (docs/ops.md, "Reductions" and "Scans").
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "ops/ops.h"

namespace tritium::ops {

struct ValuesIndices {
  Tensor values, indices;  // indices i64
};

// Floating-point inputs only; dims empty = all; the divisor is max(0, N - correction).
Tensor var(const Tensor& x, std::vector<int> dims = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, std::vector<int> dims = {}, double correction = 1, bool keepdim = false);
// (var or std, mean) from one two-pass kernel.
std::pair<Tensor, Tensor> var_mean(const Tensor& x, std::vector<int> dims = {}, double correction = 1,
                                   bool keepdim = false);
std::pair<Tensor, Tensor> std_mean(const Tensor& x, std::vector<int> dims = {}, double correction = 1,
                                   bool keepdim = false);
// Integers and bool give i64, floats their own dtype.
Tensor prod(const Tensor& x);
Tensor prod(const Tensor& x, int dim, bool keepdim = false);
// log(sum(exp(x))) without overflow; integers give f32; rows of -inf give -inf.
Tensor logsumexp(const Tensor& x, std::vector<int> dims, bool keepdim = false);
// torch.linalg.vector_norm: (sum |x|^ord)^(1/ord); ord 0 counts non-zeros, +-inf is max/min |x|.
Tensor vector_norm(const Tensor& x, double ord = 2, std::vector<int> dims = {}, bool keepdim = false);
// bool results (uint8 for uint8 inputs, as PyTorch).
Tensor all(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
Tensor any(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
Tensor count_nonzero(const Tensor& x, std::vector<int> dims = {});  // i64
// torch.max(x, dim) / torch.min(x, dim): the extreme and the index of its first occurrence.
ValuesIndices max(const Tensor& x, int dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int dim, bool keepdim = false);
Tensor max(const Tensor& x);  // of all elements (an error on an empty tensor)
Tensor min(const Tensor& x);

// Scans along `dim` (any dim, any strides). cumsum/cumprod of integers and bool give i64.
Tensor cumsum(const Tensor& x, int dim);
Tensor cumprod(const Tensor& x, int dim);
ValuesIndices cummax(const Tensor& x, int dim);
ValuesIndices cummin(const Tensor& x, int dim);
// The gradient of cumprod along `dim` for any x, zeros included (no division):
// dx_k = prod_{j<k} x_j * S_k with S_k = g_k + x_{k+1} S_{k+1}, a reverse affine scan.
Tensor cumprod_backward(const Tensor& grad, const Tensor& x, int dim);
// The gradient of cummax / cummin's values along `dim` from their indices: out_j = the sum of
// grad_i over the i whose index is j (PyTorch's scatter_add, as a reverse segmented scan).
Tensor cummaxmin_backward(const Tensor& grad, const Tensor& indices, int dim);

}  // namespace tritium::ops
