// Sorting and selection along a dim (raw, non-differentiable; nn/reductions.h wraps them with
// autograd): sort / argsort, topk, kthvalue, median, unique, unique_consecutive. As PyTorch:
// NaN sorts as the largest value (first when descending), indices are i64, and sort is always
// stable (equal values keep their order), so ties report the first occurrence.
#pragma once
#include "ops/reduce_stats.h"

namespace tritium::ops {

ValuesIndices sort(const Tensor& x, int dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int dim = -1, bool descending = false);
// The k largest (or smallest) along dim, in order (sorted=false gives them sorted as well).
ValuesIndices topk(const Tensor& x, int64_t k, int dim = -1, bool largest = true, bool sorted = true);
// The k-th smallest (1-based) along dim.
ValuesIndices kthvalue(const Tensor& x, int64_t k, int dim = -1, bool keepdim = false);
// The lower median ((n-1)/2-th smallest); a row holding NaN gives NaN and its first NaN's index.
ValuesIndices median(const Tensor& x, int dim, bool keepdim = false);
Tensor median(const Tensor& x);  // of all elements (NaN for an empty tensor)

// torch.unique (flattened, dim=None): the distinct values in ascending order (sorted=false sorts
// too), the index of each element's value among them (x's shape), the count of each value;
// inverse and counts are undefined unless asked for.
struct UniqueResult {
  Tensor values, inverse, counts;
};
UniqueResult unique(const Tensor& x, bool sorted = true, bool return_inverse = false, bool return_counts = false);
// Runs of equal consecutive elements collapsed (flattened), with the same extra outputs.
UniqueResult unique_consecutive(const Tensor& x, bool return_inverse = false, bool return_counts = false);

}  // namespace tritium::ops
