// Split-K for ops::matmul (ops/matmul.cpp): when a product has fewer output tiles than the device
// has workers (SMs, or CPU threads) and a long K, the matmul kernel runs S programs per tile, each
// over one chunk of K, writing its partial tile (f32, f64 for f64) to a workspace; a second kernel
// adds the S partials in a fixed order (deterministic: no atomics), casts, and writes C.
#pragma once

#include <cstdint>

#include "runtime/tensor.h"

namespace tritium {
class Kernel;
}

namespace tritium::ops::split_k {

// How K is cut: `splits` chunks of `chunk` elements (the last one shorter); splits == 1 is the
// plain kernel over all of K.
struct Plan {
  int64_t splits = 1;
  int64_t chunk = 0;
};

// TRITIUM_MATMUL_SPLIT_K: unset, empty or 0 = the heuristic, 1 = never split, S > 1 = split in S
// chunks (fewer where K has fewer than S granules). Anything else is a tritium::Error naming the
// variable and the value.
int64_t requested_splits();

// The split for `programs` output tiles (batch included) over K on a device with `workers`
// parallel units. `granule` divides every chunk: every candidate BLOCK_K of the kernel divides it,
// so a chunk's K steps are whole blocks and only the last chunk meets the K edge. `split_cost`: what
// one more split costs (its partial tiles written and read back by the sum), in K elements of a
// program's time; the split taken is the one of least modelled time (matmul_split_k.cpp).
Plan plan(int64_t programs, int64_t K, int64_t granule, int64_t workers, int64_t split_cost = 0);

// The split ops::matmul uses for one product of M x K by K x N over `nbatch` batch matrices
// (ops/matmul.cpp: the tiles and granule of the kernel on that device, the device's SMs or threads).
Plan plan_for_product(int64_t M, int64_t N, int64_t K, int64_t nbatch, DType dtype, const Device& device);

// addmm's epilogue on the sum: beta * self + alpha * sum (self undefined: alpha * sum). self has
// c's shape (expanded: stride 0 along broadcast dims), its batch strides collapsed as c's.
struct Addend {
  runtime::Tensor self;
  int64_t ss1 = 0, ss2 = 0;
  double beta = 1, alpha = 1;
};

// c (shape [..., M, N], any strides, batch dims collapsed to (NB1, NB2) as the matmul launch
// does) = the sum over s of part[s] (contiguous [S, NB1 * NB2, M, N]) in order, through the
// addend's epilogue, cast to c's dtype.
void reduce_partials(const runtime::Tensor& part, const runtime::Tensor& c, int64_t M, int64_t N, int64_t NB2,
                     int64_t sc1, int64_t sc2, const Addend& addend = {});

// The two kernels for `dtype` (the operands'), for code-generation tests: the product's over
// one chunk of K (ops/matmul.cpp; its arguments are the unsplit kernel's, ops::matmul_kernel,
// with K_CHUNK and stride_cs after sc2, and its C a pointer to the workspace's dtype), and the sum.
Kernel& product_kernel(DType dtype);
Kernel& sum_kernel(DType dtype);

}  // namespace tritium::ops::split_k
