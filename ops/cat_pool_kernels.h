// Private to ops/ and its code-generation tests: the kernels of cat / stack (ops/cat.cpp) and of
// pooling (ops/pool.cpp), so tests/test_cat_pool_codegen.cpp generates the very kernels the ops run.
#pragma once
#include "dsl/kernel.h"

namespace tritium::ops::detail {

inline constexpr int kCatSlots = 8;  // inputs a cat_copy launch

// cat_copy(out, x0..x7, rs0..rs7, w0..w7, o0..o7, outer, out_row, col_blocks, NUM, ODT, R, BLOCK)
Kernel& cat_kernel();
// pool2d_fwd / pool2d_bwd: see ops/pool.cpp for the arguments.
Kernel& pool2d_forward_kernel();
Kernel& pool2d_backward_kernel();

}  // namespace tritium::ops::detail
