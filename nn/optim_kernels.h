// The optimisers' update kernels (nn/optim.h), each in two launch shapes with the same
// arithmetic (one body function per optimiser, so the two agree bit for bit):
//  - per parameter: one launch per tensor, BLOCK elements per program;
//  - multi-tensor (PyTorch's foreach / fused): one launch for a list of tensors of one dtype and
//    device. The host builds a table with one row per CHUNK elements of a tensor (the tensors'
//    addresses as int64, the chunk's first and end offsets); a program reads its row, makes
//    pointers from the addresses (x.to(tl::pointer_type(DT))) and loops over its chunk.
// Loads are converted to f32 and stores rounded to the parameter's dtype (f32, f16, bf16).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace tritium {
class Kernel;
}

namespace tritium::nn::optim_kernels {

using runtime::Tensor;

// One tensor's operands: the parameter, its gradient, up to three state tensors of the same
// dtype (undefined when the update does not use them) and two f32 scalars that depend on the
// tensor's own step (bias corrections, SGD's first-step factors, Adagrad's decayed lr).
struct Slot {
  Tensor p, g;
  std::array<Tensor, 3> state;
  std::array<float, 2> scalars{0, 0};
};

// Each returns the number of launches made: slots.size() per parameter, 1 multi-tensor.
// found_inf (Optimizer::skip_if; undefined: off): a 0-dim f32 on the parameters' device (another
// device is an error); every kernel reads it and returns before touching anything when it is
// nonzero, with no host synchronisation.
// SGD: state[0] the momentum buffer (with momentum); scalars: keep, scale (buf = keep * buf + scale * g).
int64_t sgd(const std::vector<Slot>& slots, bool multi, float lr, float weight_decay, float momentum, bool has_momentum,
            bool nesterov, const Tensor& found_inf = Tensor());
// Adam / AdamW: state exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad); scalars: step_size, bc2_sqrt.
int64_t adam(const std::vector<Slot>& slots, bool multi, float decay, float l2, double beta1, double beta2, float eps,
             bool amsgrad, const Tensor& found_inf = Tensor());
// RMSprop: state square_avg, grad_avg (centered), momentum_buffer (momentum > 0); no scalars.
int64_t rmsprop(const std::vector<Slot>& slots, bool multi, float lr, float weight_decay, double alpha, float eps,
                float momentum, bool centered, bool has_momentum, const Tensor& found_inf = Tensor());
// Adagrad: state sum; scalars: clr.
int64_t adagrad(const std::vector<Slot>& slots, bool multi, float weight_decay, float eps,
                const Tensor& found_inf = Tensor());

// The multi-tensor kernel of "sgd", "adam", "rmsprop" or "adagrad", for the CUDA code-generation
// check (tests/test_nn_optim_groups.cpp compiles them with NVRTC where no GPU is present).
// Arguments: table (int64*), scalars (float*), the optimiser's f32 scalars, DT, its flags,
// found_inf_ptr (float*), SKIPPABLE, BLOCK.
Kernel& multi_tensor_kernel(const std::string& optimizer);

}  // namespace tritium::nn::optim_kernels
