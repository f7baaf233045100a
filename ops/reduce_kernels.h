// The kernels behind ops/reduce_stats.h and ops/sort.h, for the tests that compile them for
// CUDA without a GPU (tests/test_cuda_codegen_reductions.cpp) and for tools. Their arguments and
// meta-parameters are documented where they are defined.
#pragma once

namespace tritium {
class Kernel;
}

namespace tritium::ops::detail {

// row_stats(x, out, out2, O, R, S, C, param, scale; KIND, ACC, OUT, MEAN_OUT, BO, BR) and
// var_combine(means, m2s, out, out2, R, S, C, param; STD, MEAN_OUT, ACC, OUT, BS): ops/reduce_stats.cpp.
Kernel& row_stats_kernel();
Kernel& var_combine_kernel();
inline constexpr int kRowStatKinds = 14;
inline constexpr int kRowStatProd = 2, kRowStatSum = 13;  // the kinds a split scan's chunk totals use
// row_scan(x, g, out, idx, init, O, R, S, C; KIND, ACC, OUT, HAS_INIT, BO, BR): ops/scan.cpp.
Kernel& row_scan_kernel();
inline constexpr int kRowScanKinds = 7;
// sort_runs(x, keys, idx, R, nruns; DESC, CMP, L0) and merge_runs(keys, idx, keys_out, idx_out,
// R, L, nchunks, steps; DESC, CMP, BLOCK): ops/sort.cpp.
Kernel& sort_runs_kernel();
Kernel& merge_runs_kernel();
// unique_runs(s, group, values, starts, n, groups; MODE, CMP, BLOCK): ops/unique.cpp.
Kernel& unique_runs_kernel();
// reduce(x, xi, out, out_v, O, R, I, so, sr, si, chunk, scale; KIND, ACC, INNER, T0, T1, IDX_IN,
// VAL_OUT): the sum/mean/amax/amin/argmax/argmin kernel of ops/reduce.cpp (KIND in that order).
Kernel& plain_reduce_kernel();

}  // namespace tritium::ops::detail
