// The kernels behind ops/sampling.h, for the CUDA code-generation tests and tools that compile
// them ahead of a launch. Each is launched with 1-D grids over elements (program_id(0)) and, for
// the row-wise ones, rows in program_id(1). Counter layouts (docs/ops.md, "Random sampling"):
#pragma once
#include "dsl/kernel.h"

namespace tritium::ops::detail {

// (out, A, B, n, seed, base, a, b, low, range, DIST, OUT, COMPUTE, WIDE, BLOCK): element i =
// distribution DIST of the words of counter base + i, parameters from A/B (None: scalars a/b).
Kernel& sampler_kernel();
// (x, flag, n, lo, hi, BLOCK): flag = 1 if any element is outside [lo, hi] or NaN.
Kernel& outside_kernel();
// (rates, out, n, seed, base, BLOCK): element i by inversion with the uniform of counter
// (base + i, subsequence 0) for rates below 10, else PTRS try t with counter (base + i,
// subsequence t + 1), U from words 0-1 and V from words 2-3.
Kernel& poisson_kernel();
// (probs, cdf, total, bad, positive, C, WRITE_CDF, BLOCK), program r: the row's running sums in
// f64 (into cdf when WRITE_CDF), its total, whether it has a negative / NaN / infinite weight,
// and its number of positive weights.
Kernel& multinomial_rows_kernel();
// (cdf, total, out, C, S, steps, seed, base, BLOCK): sample s of row r uses counter
// base + r * S + s; u = U[0, 1) * total, the category is the first with cdf > u (never a zero
// weight: its cdf equals its predecessor's), capped at the first reaching the total.
Kernel& multinomial_draw_kernel();
// (probs, keys, C, N, IB, seed, base, BLOCK): the exponential race (categories in increasing
// E_j / p_j, E_j exponential, are a draw without replacement): key (r, j) = the f64 bits of
// E_j / p_j (counter base + r * C + j) with the low IB bits replaced by j, so one u64 sort orders
// by key, ties by index; a zero weight gives +inf, after every positive one; padding all ones.
Kernel& race_keys_kernel();
// (keys, out, N, S, IB, BLOCK): out[r, s] = the low IB bits of keys[r, s] for s < S.
Kernel& key_index_kernel();
// (keys, n, N, IB, seed, base, BLOCK): key i = 64 random bits of counter base + i (words 0, 1)
// with the low IB bits replaced by i (IB = bit width of n: no real key is all ones); padding
// up to N is all ones.
Kernel& randperm_keys_kernel();
// The sort's two kernels (ops/random_key_sort.cpp): (keys, n, K, BLOCK) and (keys, n, K, J, BLOCK).
Kernel& block_sort_kernel();
Kernel& merge_pass_kernel();

}  // namespace tritium::ops::detail
