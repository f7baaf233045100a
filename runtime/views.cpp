#include "runtime/views.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tritium::runtime {
namespace {

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

void check_defined(const Tensor& x, const char* op) {
  if (!x.defined()) fail("{}: tensor is undefined", op);
}

}  // namespace

int wrap_dim(int dim, int rank, const char* op) {
  int r = std::max(rank, 1);  // a 0-dim tensor accepts -1 and 0, as in PyTorch
  if (dim < -r || dim >= r)
    fail("{}: dimension {} is out of range (expected to be in range of [{}, {}])", op, dim, -r, r - 1);
  return dim < 0 ? dim + r : dim;
}

Shape infer_shape(Shape shape, int64_t numel) {
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer) fail("shape '{}': only one dimension can be inferred", shape_str(shape));
      infer = i;
    } else if (shape[i] < 0) {
      fail("shape '{}': invalid shape dimension {}", shape_str(shape), shape[i]);
    } else {
      if (shape[i] != 0 && known > std::numeric_limits<int64_t>::max() / shape[i])
        fail("shape '{}' is invalid for input of size {}", shape_str(shape), numel);
      known *= shape[i];
    }
  }
  if (infer) {
    if (known == 0)
      fail("cannot reshape tensor of {} elements into shape {} because the unspecified dimension size -1 can be "
           "any value and is ambiguous",
           numel, shape_str(shape));
    if (numel % known != 0) fail("shape '{}' is invalid for input of size {}", shape_str(shape), numel);
    shape[*infer] = numel / known;
  } else if (known != numel) {
    fail("shape '{}' is invalid for input of size {}", shape_str(shape), numel);
  }
  return shape;
}

// A port of PyTorch's at::detail::computeStride (ATen/TensorUtils.cpp). Walks the old dims from
// the last, grouping them into chunks that are contiguous with each other (old stride of d-1 =
// numel of the chunk * the chunk's base stride); each chunk must be covered exactly by a run of
// new dims, which then get strides inside that chunk.
std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& new_shape) {
  if (sizes.empty()) return Shape(new_shape.size(), 1);
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0 && sizes == new_shape) return strides;
  Shape out(new_shape.size());
  if (numel == 0) return contiguous_strides(new_shape);
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    // The end of a chunk: the first dim, or a dim before which the strides break contiguity.
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

bool can_view(const Tensor& x, const Shape& shape) {
  check_defined(x, "can_view");
  Shape s = infer_shape(shape, x.numel());
  return view_strides(x.shape(), x.strides(), s).has_value();
}

Tensor view_of(const Tensor& x, Shape shape) {
  check_defined(x, "view");
  Shape s = infer_shape(std::move(shape), x.numel());
  auto strides = view_strides(x.shape(), x.strides(), s);
  if (!strides)
    fail("view: view size is not compatible with input tensor's size and stride (at least one dimension spans "
         "across two contiguous subspaces). Use .reshape(...) instead. (tensor shape {}, strides {}, requested "
         "shape {})",
         shape_str(x.shape()), shape_str(x.strides()), shape_str(s));
  return x.as_strided(std::move(s), std::move(*strides), x.storage_offset());
}

Tensor permute_of(const Tensor& x, const std::vector<int>& dims) {
  check_defined(x, "permute");
  int rank = x.dim();
  if (static_cast<int>(dims.size()) != rank)
    fail("permute: number of dims don't match in permute: the tensor has {} dimensions ({}) but {} dims were "
         "given ([{}])",
         rank, shape_str(x.shape()), dims.size(), fmt::join(dims, ", "));
  Shape shape(rank), strides(rank);
  std::vector<bool> seen(rank, false);
  for (int i = 0; i < rank; ++i) {
    int d = wrap_dim(dims[i], rank, "permute");
    if (seen[d]) fail("permute: duplicate dims are not allowed ([{}])", fmt::join(dims, ", "));
    seen[d] = true;
    shape[i] = x.shape()[d];
    strides[i] = x.strides()[d];
  }
  return x.as_strided(std::move(shape), std::move(strides), x.storage_offset());
}

Tensor transpose_of(const Tensor& x, int dim0, int dim1) {
  check_defined(x, "transpose");
  int a = wrap_dim(dim0, x.dim(), "transpose");
  int b = wrap_dim(dim1, x.dim(), "transpose");
  if (x.dim() == 0) return x.as_strided({}, {}, x.storage_offset());
  Shape shape = x.shape(), strides = x.strides();
  std::swap(shape[a], shape[b]);
  std::swap(strides[a], strides[b]);
  return x.as_strided(std::move(shape), std::move(strides), x.storage_offset());
}

Tensor t_of(const Tensor& x) {
  check_defined(x, "t");
  if (x.dim() > 2) fail("t: t() expects a tensor with <= 2 dimensions, but the tensor has shape {}", shape_str(x.shape()));
  if (x.dim() < 2) return x.as_strided(x.shape(), x.strides(), x.storage_offset());
  return transpose_of(x, 0, 1);
}

Tensor squeeze_of(const Tensor& x, std::optional<int> dim) {
  check_defined(x, "squeeze");
  Shape shape, strides;
  std::optional<int> only;
  if (dim) only = wrap_dim(*dim, x.dim(), "squeeze");
  for (int d = 0; d < x.dim(); ++d) {
    bool drop = x.shape()[d] == 1 && (!only || *only == d);
    if (drop) continue;
    shape.push_back(x.shape()[d]);
    strides.push_back(x.strides()[d]);
  }
  return x.as_strided(std::move(shape), std::move(strides), x.storage_offset());
}

Tensor unsqueeze_of(const Tensor& x, int dim) {
  check_defined(x, "unsqueeze");
  int d = wrap_dim(dim, x.dim() + 1, "unsqueeze");
  Shape shape = x.shape(), strides = x.strides();
  // The new dim's stride: what a contiguous tensor would have there (PyTorch's choice), so a
  // contiguous tensor stays contiguous.
  int64_t st = d < x.dim() ? shape[d] * strides[d] : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, st);
  return x.as_strided(std::move(shape), std::move(strides), x.storage_offset());
}

Tensor expand_of(const Tensor& x, const Shape& sizes) {
  check_defined(x, "expand");
  int rank = x.dim();
  int n = static_cast<int>(sizes.size());
  if (n < rank)
    fail("expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the "
         "tensor ({}) (tensor shape {}, sizes {})",
         n, rank, shape_str(x.shape()), shape_str(sizes));
  Shape shape(n), strides(n);
  for (int i = n - 1; i >= 0; --i) {
    int offset = n - 1 - i;
    int d = rank - 1 - offset;
    int64_t size = d >= 0 ? x.shape()[d] : 1;
    int64_t stride = d >= 0 ? x.strides()[d] : (i + 1 < n ? shape[i + 1] * strides[i + 1] : 1);
    int64_t target = sizes[i];
    if (target == -1) {
      if (d < 0)
        fail("expand: the expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {} "
             "(sizes {})",
             i, shape_str(sizes));
      target = size;
    } else if (target < 0) {
      fail("expand: invalid size {} at dimension {} (sizes {})", target, i, shape_str(sizes));
    }
    if (size != target) {
      if (size != 1)
        fail("expand: the expanded size of the tensor ({}) must match the existing size ({}) at non-singleton "
             "dimension {}.  Target sizes: {}.  Tensor sizes: {}",
             target, size, i, shape_str(sizes), shape_str(x.shape()));
      stride = 0;
    }
    shape[i] = target;
    strides[i] = stride;
  }
  return x.as_strided(std::move(shape), std::move(strides), x.storage_offset());
}

std::pair<int64_t, int64_t> slice_bounds(int64_t size, int64_t start, int64_t end) {
  auto clamp = [size](int64_t v) {
    if (v < 0) v += size;
    return std::clamp<int64_t>(v, 0, size);
  };
  // Python semantics: INT64_MAX ("to the end") and large negatives clamp too.
  int64_t lo = start == std::numeric_limits<int64_t>::min() ? 0 : clamp(start);
  int64_t hi = end == std::numeric_limits<int64_t>::min() ? 0 : clamp(end);
  return {lo, std::max(lo, hi)};
}

Tensor slice_of(const Tensor& x, int dim, int64_t start, int64_t end, int64_t step) {
  check_defined(x, "slice");
  if (x.dim() == 0) fail("slice: slice() cannot be applied to a 0-dim tensor");
  int d = wrap_dim(dim, x.dim(), "slice");
  if (step <= 0) fail("slice: slice step must be positive (got {})", step);
  const auto [lo, hi] = slice_bounds(x.shape()[d], start, end);
  int64_t len = (hi - lo + step - 1) / step;
  Shape shape = x.shape(), strides = x.strides();
  shape[d] = len;
  strides[d] = x.strides()[d] * step;
  int64_t offset = x.storage_offset() + lo * x.strides()[d];
  return x.as_strided(std::move(shape), std::move(strides), offset);
}

Tensor select_of(const Tensor& x, int dim, int64_t index) {
  check_defined(x, "select");
  if (x.dim() == 0) fail("select: select() cannot be applied to a 0-dim tensor");
  int d = wrap_dim(dim, x.dim(), "select");
  int64_t size = x.shape()[d];
  if (index < -size || index >= size)
    fail("select: index {} out of range for tensor of size {} at dimension {}", index, shape_str(x.shape()), dim);
  if (index < 0) index += size;
  Shape shape = x.shape(), strides = x.strides();
  int64_t offset = x.storage_offset() + index * strides[d];
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return x.as_strided(std::move(shape), std::move(strides), offset);
}

void collapse_dims(const Tensor& x, Shape& sizes, Shape& strides) {
  sizes.clear(), strides.clear();
  for (int d = 0; d < x.dim(); ++d) {
    int64_t s = x.shape()[d], t = x.strides()[d];
    if (s == 1) continue;
    if (!sizes.empty() && strides.back() == s * t) {
      sizes.back() *= s;
      strides.back() = t;
    } else {
      sizes.push_back(s);
      strides.push_back(t);
    }
  }
}

}  // namespace tritium::runtime
