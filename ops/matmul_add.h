// ops::matmul_add: a matmul with addmm's epilogue (ops/matmul.cpp), for the add* ops and linear.
#pragma once
#include "runtime/tensor.h"

namespace tritium {
class Kernel;
}

namespace tritium::ops {

using runtime::Tensor;

// beta * self + alpha * matmul(a, b) (torch.matmul's shapes) in the matmul kernel's epilogue: one
// launch, rounded once; self (same dtype and device) broadcasts to the product's shape, e.g. a
// Linear's bias [N] over [..., M, N]. beta = 0 does not read self (its NaN do not propagate).
Tensor matmul_add(const Tensor& self, const Tensor& a, const Tensor& b, double beta = 1, double alpha = 1);

// The product kernel with the epilogue for `dtype`, for code-generation tests: ops::matmul_kernel's
// arguments, then s_ptr, stride_sm, stride_sn, ss1, ss2, alpha, beta (f32, f64 for f64) after
// sc2, and the meta-parameter HAS_SELF.
Kernel& matmul_epilogue_kernel(DType dtype);

}  // namespace tritium::ops
