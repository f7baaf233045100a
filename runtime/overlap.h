// The check every in-place write makes first: no two elements of the destination may share memory
// (an expanded view: a dim of size > 1 with stride 0), as PyTorch's in-place ops refuse. Shared by
// the autograd in-place ops (nn/inplace_ops.cpp) and the raw in-place scatters (ops/indexing.cpp).
#pragma once
#include "runtime/tensor.h"

namespace tritium::runtime {

// Fails with PyTorch's message, naming `op` and the tensor, when `x` has internal overlap.
void check_no_internal_overlap(const char* op, const Tensor& x);

}  // namespace tritium::runtime
