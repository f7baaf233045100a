// The row kernels of rms_norm (ops/norm_rms.cpp), softmax's (ops/softmax.cpp), batch and group norm's coefficients
// (ops/norm_batch.cpp, ops/norm_group.cpp) and the kernels of cross_entropy / nll_loss (ops/losses_class.cpp), exposed so that tests/test_cuda_codegen_norm.cpp can generate and
// NVRTC-compile them without a GPU. Their arguments are documented where they are defined.
#pragma once

namespace tritium {
class Kernel;
}

namespace tritium::ops::detail {

Kernel& batch_norm_coefficients_kernel();
Kernel& group_norm_coefficients_kernel();
Kernel& rms_norm_forward_kernel();
Kernel& rms_norm_backward_dx_kernel();      // rows longer than the register block
Kernel& rms_norm_backward_kernel();         // dx and the weight's partial sums, rows in registers
Kernel& rms_norm_weight_grad_kernel();      // sums those partials over the programs
Kernel& softmax_kernel();                   // softmax / log_softmax and their backwards (ops/softmax.cpp)
Kernel& class_loss_forward_kernel();
Kernel& class_loss_backward_kernel();
Kernel& class_loss_reduce_kernel();

}  // namespace tritium::ops::detail
