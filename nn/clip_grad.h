// Gradient clipping, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_: the parameters'
// .grad tensors are changed in place (outside autograd); parameters without a gradient are
// skipped.
#pragma once
#include <vector>

#include "runtime/tensor.h"

namespace tritium {
class Kernel;
}

namespace tritium::nn {

using runtime::Tensor;

// The norm of order norm_type of all gradients together (the norm of the per-gradient norms;
// norm_type > 0 or +-infinity) is returned as a 0-dim f32 tensor on the gradients' device; every
// gradient is multiplied by min(max_norm / (total + 1e-6), 1), as PyTorch (also when that is 1).
// With error_if_nonfinite a NaN or infinite total is an error and no gradient changes. No
// gradients at all: returns 0. Gradients on different devices are an error.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient to [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

namespace detail {
// The 2-norm's multi-tensor kernels (PyTorch's foreach norm and mul; for the CUDA code-generation
// check in tests/test_amp_codegen.cpp): clip_grad_foreach_partial_norm(table, partial, DT, BLOCK)
// and clip_grad_foreach_scale(table, total, max_norm, DT, BLOCK); a table row per chunk of a
// gradient (address, first, end offsets).
Kernel& foreach_partial_norm_kernel();
Kernel& foreach_clip_kernel();
}  // namespace detail

}  // namespace tritium::nn
