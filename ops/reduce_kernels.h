// The kernels behind ops/reduce_stats.h and ops/sort.h, for the tests that compile them for
// CUDA without a GPU (tests/test_cuda_codegen_reductions.cpp) and for tools. Their arguments and
// meta-parameters are documented where they are defined.
#pragma once

namespace tritium {
class Kernel;
}

namespace tritium::ops::detail {

// row_stats(x, out, out2, part, cnt, O, R, S, C, param, scale; KIND, ACC, OUT, MEAN_OUT, BO, BR, KIND2, ACC2,
// PART, TS: TS > 0 combines a split row's partials in its last program, ops/reduce_stats.cpp) and
// var_combine(means, m2s, out, out2, R, S, C, param; STD, MEAN_OUT, ACC, OUT, BS): ops/reduce_stats.cpp.
Kernel& row_stats_kernel();
Kernel& var_combine_kernel();
inline constexpr int kRowStatKinds = 14;
inline constexpr int kRowStatProd = 2, kRowStatSum = 13;  // the kinds a split scan's chunk totals use
// row_scan(x, g, out, idx, init, O, R, S, C; KIND, ACC, OUT, HAS_INIT, BO, BR): ops/scan.cpp.
Kernel& row_scan_kernel();
inline constexpr int kRowScanKinds = 8;
// sort_runs(x, keys, idx, R, nruns; DESC, CMP, L0) and merge_runs(keys, idx, keys_out, idx_out,
// R, L, nchunks, steps; DESC, CMP, BLOCK): ops/sort.cpp.
Kernel& sort_runs_kernel();
Kernel& merge_runs_kernel();
// sort_block(x, keys, idx, O, R, W; DESC, BR, N, K): rows of <= 4096 sorted in one launch, the
// first W of each kept (K: the keys tl::topk keeps, N: the whole row sorted); ops/sort.cpp.
Kernel& sort_block_kernel();
// topk_extract(x, values, idx, R, W; DESC, BLOCK): the W first keys of each contiguous row of R
// (sort_block's order), one pass over the row each; topk on the CPU for small W (ops/sort.cpp).
Kernel& topk_extract_kernel();
// unique_runs(s, group, values, starts, n, groups; MODE, CMP, BLOCK): ops/unique.cpp.
Kernel& unique_runs_kernel();
// reduce(x, xi, y, z, out, out_v, part, cnt, O, R, I, so, sr, si, yso, ysr, ysi, zso, zsi, chunk, S, scale, beta;
// KIND, ACC, INNER, T0, T1, IDX_IN, VAL_OUT, MUL, EPI, POS64, TS): the sum/mean/amax/amin/argmax/argmin
// kernel of ops/reduce.cpp (KIND in that order; MUL: sums of x * y, EPI: the epilogue).
Kernel& plain_reduce_kernel();

}  // namespace tritium::ops::detail

#include <utility>

#include "runtime/tensor.h"

namespace tritium::ops::detail {

// A matrix-vector product as the memory-bound reduction it is (ops/reduce.cpp): for `a` [M, K]
// and `v` [K], alpha * (a @ v) + beta * self ([M]; self broadcasts to [M] and is not read when
// undefined or beta = 0); for a vector `a` [K], the dot product (0-D). One pass over `a` at its
// own strides (rows, or columns when a is transposed), products and sum in f32 (f64 for f64),
// rounded once to a's dtype. a, v, self: same dtype and device (the caller checks).
// max.dim / min.dim: the values and the first index of the extreme along `dim` in one pass of
// the argmax/argmin reduction (not bool: its caller converts). Returns {values, indices}.
std::pair<runtime::Tensor, runtime::Tensor> extreme_with_index(const runtime::Tensor& x, int dim, bool keepdim,
                                                               bool is_max);

runtime::Tensor matrix_vector(const runtime::Tensor& a, const runtime::Tensor& v, const runtime::Tensor& self,
                              double beta, double alpha);

}  // namespace tritium::ops::detail
