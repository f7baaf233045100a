// Rows of a reduction, scan or sort (ops/reduce_rows.h).
#include "ops/reduce_rows.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/elementwise_kernels.h"
#include "runtime/views.h"

namespace tritium::ops::detail {

std::vector<int> reduction_dims(const char* op, const Tensor& x, const std::vector<int>& dims) {
  std::vector<int> out;
  if (dims.empty()) {
    for (int d = 0; d < x.dim(); ++d) out.push_back(d);
    return out;
  }
  std::vector<bool> seen(static_cast<size_t>(std::max(x.dim(), 1)), false);
  for (int d : dims) {
    int n = normalize_dim(op, d, x.dim());
    if (seen[static_cast<size_t>(n)])
      fail("{}: dimension {} appears more than once in the list of dims [{}]", op, d, fmt::join(dims, ", "));
    seen[static_cast<size_t>(n)] = true;
    if (x.dim() > 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Rows rows_of(const Tensor& x, const std::vector<int>& dims) {
  std::vector<bool> red(static_cast<size_t>(x.dim()), false);
  for (int d : dims) red[static_cast<size_t>(d)] = true;
  Shape shape, strides;
  Rows r;
  r.O = 1, r.R = 1;
  for (int d = 0; d < x.dim(); ++d)
    if (!red[static_cast<size_t>(d)]) shape.push_back(x.size(d)), strides.push_back(x.stride(d)), r.O *= x.size(d);
  for (int d = 0; d < x.dim(); ++d)
    if (red[static_cast<size_t>(d)]) shape.push_back(x.size(d)), strides.push_back(x.stride(d)), r.R *= x.size(d);
  Tensor permuted = x.as_strided(shape, strides, x.storage_offset());
  Tensor c = contiguous(permuted);
  r.data = c.as_strided({r.O, r.R}, {r.R, 1}, c.storage_offset());
  return r;
}

Shape reduced_shape_of(const Tensor& x, const std::vector<int>& dims, bool keepdim) {
  Shape s;
  for (int d = 0; d < x.dim(); ++d) {
    bool r = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!r) s.push_back(x.size(d));
    else if (keepdim) s.push_back(1);
  }
  return s;
}

Tensor rows_back(const Tensor& rows, const Tensor& x, int dim, int64_t size) {
  if (x.dim() == 0) return contiguous(rows.as_strided({}, {}, rows.storage_offset()));
  // rows is [O, size] (row stride rows.stride(0), element stride rows.stride(1)) whose O runs
  // over x's other dims in order: give each dim its stride, then copy contiguous.
  Shape shape(static_cast<size_t>(x.dim())), strides(static_cast<size_t>(x.dim()));
  int64_t st = rows.stride(0);
  for (int d = x.dim(); d-- > 0;) {
    if (d == dim) continue;
    shape[static_cast<size_t>(d)] = x.size(d), strides[static_cast<size_t>(d)] = st;
    st *= std::max<int64_t>(x.size(d), 1);
  }
  shape[static_cast<size_t>(dim)] = size, strides[static_cast<size_t>(dim)] = rows.stride(1);
  return contiguous(rows.as_strided(shape, strides, rows.storage_offset()));
}

}  // namespace tritium::ops::detail
