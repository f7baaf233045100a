// Private to ops/ and its tests: the kernels of ops/indexing.cpp, for the CUDA code-generation
// test (tests/test_tensor_indexing.cpp compiles them with NVRTC without a GPU).
#pragma once
#include "dsl/kernel.h"

namespace tritium::ops::detail {

// dst, src, off (indices), bad (one i64), isize, istride, rows, cols, outer sizes d0..d4, then per
// side (dst, src, indices) five outer strides and the column stride; meta RANK, MODE (0 store, 1
// atomic add, 2 max, 3 min), SIDE (0 no indices, 1 on src, 2 on dst), CHECK (indices outside
// [0, isize) skipped and reported in bad), DDT (dst dtype), BR, BC (the tile).
Kernel& index_copy_kernel();
// index_copy's arguments with loop_n, b_loop, c_loop after the index strides: each program's tile
// again at loop_n steps (source and indices moving b_loop / c_loop a step, the destination not),
// combined by a load, the op and a store - add / max / min on the CPU without atomics.
Kernel& index_accumulate_kernel();
// The elements an index_copy program takes, whatever the index space:
// 1024 elements a program (8 a thread on 4 warps), not the elementwise kernels' 4096: the 64-bit
// indices and offsets live in registers (sm_90a, [16384, 1024] gather: 40 registers a thread at
// 1024, 139 at 4096 - 3 programs an SM where 12 fit), and a scatter's atomics need no more per
// thread to keep the memory busy.
inline constexpr int64_t kIndexCopyTile = 1024;
// dst, src, off, istride, n, sizes d0..d5, dst strides a0..a5, src strides b0..b5, index strides c0..c5;
// meta RANK, DDT, LANES: dst[...] *= src by a compare-and-swap loop per element, offsets on dst
// (scatter_reduce's prod).
Kernel& index_prod_kernel();
Kernel& nonzero_count_kernel();  // x, counts, n; BLOCK
Kernel& nonzero_scan_kernel();   // counts, starts, total, nb; BLOCK
Kernel& nonzero_write_kernel();  // x, starts, out, dims, n; RANK, BLOCK

}  // namespace tritium::ops::detail
