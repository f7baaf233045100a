// Rows: the common shape of the reductions, scans and sorts of ops/reduce_stats.cpp,
// ops/scan.cpp and ops/sort.cpp. Any tensor and any set of dims becomes a contiguous [O, R]
// matrix whose rows are the reduced (or scanned, or sorted) elements: the kept dims first, the
// others last, copied with ops::contiguous only when the strides do not already give that order.
// Kernels then see one simple layout (unit stride along a row), whatever the input's strides.
#pragma once
#include <vector>

#include "ops/ops.h"

namespace tritium::ops::detail {

struct Rows {
  Tensor data;          // contiguous [O, R] (a view of the input when it already was)
  int64_t O = 1, R = 1;
};

// Normalised, sorted, duplicate-free dims (empty `dims` means all); an error names `op`.
std::vector<int> reduction_dims(const char* op, const Tensor& x, const std::vector<int>& dims);

// x's elements as [O, R] rows: R runs over `dims` (normalised and sorted), O over the rest.
Rows rows_of(const Tensor& x, const std::vector<int>& dims);

// The shape of a reduction's result: x's shape without `dims` (or with size 1 there, keepdim).
Shape reduced_shape_of(const Tensor& x, const std::vector<int>& dims, bool keepdim);

// The inverse of rows_of(x, {dim}) for a result of x's shape along `dim` but of `size` elements
// there (a scan or sort keeps `size`, topk shortens it): [O, size] rows back to x's dim order,
// as a contiguous tensor.
Tensor rows_back(const Tensor& rows, const Tensor& x, int dim, int64_t size);

}  // namespace tritium::ops::detail
