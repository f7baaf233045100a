// torch.nn.functional.linear as a recorded op (its own header so that nn/functional.h, which
// most of the tree includes, stays as it was).
#pragma once
#include "runtime/tensor.h"

namespace tritium {

using runtime::Tensor;

// input @ weight^T (+ bias): the declared op "linear" (ops/decl/linear.cpp), which nn::Linear
// runs; one op, so autocast casts the weight (cached per scope) and the output is in its dtype.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace tritium
