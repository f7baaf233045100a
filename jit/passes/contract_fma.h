// Floating-point contraction decided once, in the IR, for backends that fuse: an f32 / f64
// `x * y + c`, `x * y - c` or `c - x * y` becomes fma(x, y, c), fma(x, y, -c) or fma(-x, y, c)
// (Triton's default, enable_fp_fusion). The CUDA backend runs it and then forbids every other
// contraction (NVRTC's --fmad=false, `.rn` on the PTX generator's mul / add / sub), so a kernel
// rounds the same whichever generator compiles it: before, NVVM and ptxas each fused their own
// pairs, and one optimiser step differed in the last bit between its per-parameter (PTX) and
// multi-tensor (NVRTC) kernels.
#pragma once
#include "ir/ir.h"

namespace tritium::jit {

// Fuses each add / sub whose operand is a product computed in the same block, when every use of
// that product is such an add / sub (so no product is both kept and fused); operand 0 first
// when both are products. Dead products are left for dead-code elimination. Returns whether
// anything changed.
bool contract_multiply_add(ir::Function& f);

}  // namespace tritium::jit
