// How ops::matmul's kernel (ops::matmul_kernel) reads its operands on a GPU: its BLOCK_POINTERS
// meta-parameter, and the form the op launches for given operand strides (docs/tensors.md, "How
// the operands are read").
#pragma once

#include <cstdint>

#include "ir/types.h"

namespace tritium::ops {

// The kernel's BLOCK_POINTERS: pointer blocks (none),
// or block pointers, each describing its operand as stored - A as [M, K] rows (K-major) or
// [K, M] rows (M-major, a weight gradient's g^T), B as [K, N] rows (N-major) or [N, K] rows
// (K-major, a Linear's W^T) - whose tiles the CUDA backend copies with TMA on Hopper.
namespace BlockPointers {
inline constexpr int none = 0, a_k_b_mn = 1, a_k_b_k = 2, a_mn_b_mn = 3, a_mn_b_k = 4;
}
// The form ops::matmul launches for operands of `dtype` with strides (sam, sak) and (sbk, sbn) on a
// device of compute capability `cc` (major * 10 + minor), `nbatch` batch matrices: block pointers
// on Hopper for one matrix each whose stored rows are contiguous and 16-byte aligned - 16-bit
// operands of either majorness (wgmma transposes MN-major 16-bit tiles), tf32 ones K-major only
// (wgmma has no tf32 transpose: MN-major tf32 tiles are transposed by 4-byte cp.async copies, which
// the pointer form makes); else none.
int matmul_block_pointers(DType dtype, bool tf32, int64_t sam, int64_t sak, int64_t sbk, int64_t sbn, int cc,
                          int64_t nbatch);

}  // namespace tritium::ops
