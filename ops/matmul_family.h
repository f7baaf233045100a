// The matmul family by PyTorch's names (torch.mm, bmm, mv, dot, vdot, addmm, addmv, addr,
// baddbmm, addbmm): PyTorch's strict shape checks and messages in front of the one matmul kernel
// (ops/matmul.cpp), which reads any strides (a transposed operand is a stride, not a copy) and
// runs a batch in one launch. Raw, non-differentiable ops; the recorded ones are in
// nn/matmul_family.h.
#pragma once
#include "ops/ops.h"

namespace tritium::ops {

Tensor mm(const Tensor& self, const Tensor& mat2);       // [n, k] @ [k, m]
Tensor bmm(const Tensor& self, const Tensor& mat2);      // [b, n, k] @ [b, k, m], no broadcasting
Tensor mv(const Tensor& self, const Tensor& vec);        // [n, k] @ [k]
Tensor dot(const Tensor& self, const Tensor& tensor);    // [k] . [k] -> 0-dim
Tensor vdot(const Tensor& self, const Tensor& other);    // dot (real dtypes: no conjugate)

// beta * self + alpha * (product); self broadcasts to the product's shape. beta = 0 ignores self's
// values (NaN and Inf in it do not propagate), as PyTorch.
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, double beta = 1, double alpha = 1);
Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, double beta = 1, double alpha = 1);
Tensor addr(const Tensor& self, const Tensor& vec1, const Tensor& vec2, double beta = 1, double alpha = 1);
Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, double beta = 1, double alpha = 1);
// beta * self + alpha * sum_b batch1[b] @ batch2[b]: one matmul whose K runs over (b, k).
Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, double beta = 1, double alpha = 1);

// The shape and dtype checks of the ops above, shared with their declarations (ops/decl/) so that
// a recorded call fails with the same message before anything runs.
void check_matmul_family_dtypes(const char* op, const std::vector<Tensor>& inputs,
                                const std::vector<const char*>& names);

}  // namespace tritium::ops
