// The differentiable matmul family by PyTorch's names (issue 29, item 5). mm, bmm, mv, dot, vdot
// and the add* forms are declared ops (ops/decl/matmul_family.cpp: one dispatch call each, with
// derivatives.yaml's formulas); inner, outer/ger, tensordot, kron, linalg_multi_dot and einsum
// are compositions of recorded ops (as PyTorch's CompositeImplicitAutograd ones), so their
// gradients flow through their lowering. Every product runs on the one matmul kernel
// (ops/matmul.cpp). Included by nn/functional.h.
#pragma once
#include <string>
#include <vector>

#include "ops/matmul_family.h"

namespace tritium {

using runtime::Tensor;

Tensor mm(const Tensor& self, const Tensor& mat2);
Tensor bmm(const Tensor& self, const Tensor& mat2);
Tensor mv(const Tensor& self, const Tensor& vec);
Tensor dot(const Tensor& self, const Tensor& tensor);
Tensor vdot(const Tensor& self, const Tensor& other);
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, double beta = 1, double alpha = 1);
Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, double beta = 1, double alpha = 1);
Tensor addr(const Tensor& self, const Tensor& vec1, const Tensor& vec2, double beta = 1, double alpha = 1);
Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, double beta = 1, double alpha = 1);
Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, double beta = 1, double alpha = 1);

// torch.inner: the sum over the last dims ([..., k] and [..., k] -> a.shape[:-1] + b.shape[:-1]);
// a 0-dim operand multiplies.
Tensor inner(const Tensor& self, const Tensor& other);
// torch.outer / torch.ger: [n] x [m] -> [n, m] (a broadcast multiply; dtypes promote).
Tensor outer(const Tensor& self, const Tensor& vec2);
Tensor ger(const Tensor& self, const Tensor& vec2);
// torch.tensordot: the last `dims` dims of a against the first `dims` of b, or the listed dims
// (dims_a[i] with dims_b[i]; negatives count from the end).
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims = 2);
Tensor tensordot(const Tensor& a, const Tensor& b, const std::vector<int>& dims_a, const std::vector<int>& dims_b);
// torch.kron: the Kronecker product (ranks padded with leading 1s; dtypes promote).
Tensor kron(const Tensor& self, const Tensor& other);
// torch.linalg.multi_dot: the first tensor may be 1-D (a row), the last 1-D (a column), the rest
// 2-D; the products run in the order of least multiplications (the matrix-chain recurrence).
Tensor linalg_multi_dot(const std::vector<Tensor>& tensors);
// torch.einsum (nn/einsum.cpp): any equation, lowered to diagonals, sums, permutes, reshapes
// (views where the strides allow), broadcast multiplies and batched matmuls; three or more
// operands are contracted greedily, the pair with the smallest intermediate first
// (docs/ops.md).
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

}  // namespace tritium
