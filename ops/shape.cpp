// Shape ops (ops/shape.h): views are runtime::as_strided over the same storage; copies go through
// the generic strided copy (ops::copy_ into a view of the output), so a strided input, a dtype
// conversion and any rank take one path and no op here has a kernel of its own (tril / triu have
// one: ops/triangle.cpp; cat / stack copy several inputs a launch: ops/cat.cpp).
#include "ops/shape.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/elementwise_kernels.h"
#include "runtime/views.h"

namespace tritium::ops {

using detail::normalize_dim;
using detail::shape_str;

namespace {

int64_t size_at(const Tensor& x, int d) { return x.shape()[static_cast<size_t>(d)]; }
int64_t stride_at(const Tensor& x, int d) { return x.strides()[static_cast<size_t>(d)]; }

void check_defined(const char* op, const Tensor& x) {
  if (!x.defined()) fail("{}: the tensor is undefined", op);
}

// Normalises dims and refuses repeats ("flip: dim 1 appears multiple times in the list of dims").
std::vector<int> unique_dims(const char* op, const std::vector<int>& dims, int rank) {
  std::vector<int> out;
  std::vector<bool> seen(static_cast<size_t>(std::max(rank, 1)), false);
  for (int d : dims) {
    int w = normalize_dim(op, d, rank);
    if (seen[static_cast<size_t>(w)]) fail("{}: dim {} appears multiple times in the list of dims", op, w);
    seen[static_cast<size_t>(w)] = true;
    out.push_back(w);
  }
  return out;
}

}  // namespace

// ---- views ---------------------------------------------------------------------------------------

Tensor reshape(const Tensor& x, Shape shape) {
  check_defined("reshape", x);
  Shape s = runtime::infer_shape(std::move(shape), x.numel());
  if (runtime::view_strides(x.shape(), x.strides(), s)) return runtime::view_of(x, std::move(s));
  return runtime::view_of(contiguous(x), std::move(s));
}

Tensor flatten(const Tensor& x, int start_dim, int end_dim) {
  check_defined("flatten", x);
  if (x.dim() == 0) return reshape(x, {1});
  int s = normalize_dim("flatten", start_dim, x.dim()), e = normalize_dim("flatten", end_dim, x.dim());
  if (s > e) fail("flatten: start_dim {} comes after end_dim {} (a tensor of rank {})", start_dim, end_dim, x.dim());
  if (s == e) return x;
  Shape out(x.shape().begin(), x.shape().begin() + s);
  int64_t merged = 1;
  for (int d = s; d <= e; ++d) merged *= size_at(x, d);
  out.push_back(merged);
  out.insert(out.end(), x.shape().begin() + e + 1, x.shape().end());
  return reshape(x, std::move(out));
}

Tensor unflatten(const Tensor& x, int dim, Shape sizes) {
  check_defined("unflatten", x);
  int d = normalize_dim("unflatten", dim, x.dim());
  if (x.dim() == 0) fail("unflatten: cannot unflatten a 0-dim tensor");
  if (sizes.empty()) fail("unflatten: sizes must be non-empty");
  int64_t n = size_at(x, d);
  Shape inferred;
  try {
    inferred = runtime::infer_shape(sizes, n);
  } catch (const Error&) {
    fail("unflatten: provided sizes {} don't multiply up to the size of dim {} ({}) in the input tensor",
         shape_str(sizes), dim, n);
  }
  Shape out(x.shape().begin(), x.shape().begin() + d);
  out.insert(out.end(), inferred.begin(), inferred.end());
  out.insert(out.end(), x.shape().begin() + d + 1, x.shape().end());
  return runtime::view_of(x, std::move(out));  // splitting one dim is always a view
}

Tensor ravel(const Tensor& x) { return reshape(x, {-1}); }

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  check_defined("broadcast_to", x);
  return runtime::expand_of(x, shape);
}

Tensor narrow(const Tensor& x, int dim, int64_t start, int64_t length) {
  check_defined("narrow", x);
  if (x.dim() == 0) fail("narrow: cannot be applied to a 0-dim tensor");
  int d = normalize_dim("narrow", dim, x.dim());
  int64_t n = size_at(x, d);
  if (length < 0) fail("narrow: length must be non-negative, got {}", length);
  if (start < -n || start > n)
    fail("narrow: start {} is out of range for dimension {} of size {} (expected {} to {})", start, dim, n, -n, n);
  if (start < 0) start += n;
  if (start + length > n) fail("narrow: start ({}) + length ({}) exceeds dimension size ({})", start, length, n);
  return runtime::slice_of(x, d, start, start + length, 1);
}

Tensor unfold(const Tensor& x, int dim, int64_t size, int64_t step) {
  check_defined("unfold", x);
  int d = normalize_dim("unfold", dim, x.dim());
  int64_t n = x.dim() == 0 ? 1 : size_at(x, d);
  if (size < 0) fail("unfold: size is {} but must be >= 0", size);
  if (size > n) fail("unfold: maximum size for tensor at dimension {} is {} but size is {}", d, n, size);
  if (step <= 0) fail("unfold: step is {} but must be > 0", step);
  Shape shape = x.shape(), strides = x.strides();
  int64_t inner = x.dim() == 0 ? 1 : stride_at(x, d);
  if (x.dim() > 0) {
    shape[static_cast<size_t>(d)] = (n - size) / step + 1;
    strides[static_cast<size_t>(d)] = inner * step;
  }
  shape.push_back(size);
  strides.push_back(inner);
  return x.as_strided(std::move(shape), std::move(strides), x.storage_offset());
}

Tensor movedim(const Tensor& x, std::vector<int> source, std::vector<int> destination) {
  check_defined("movedim", x);
  if (source.size() != destination.size())
    fail("movedim: invalid source or destination dims: source ([{}] dims) and destination ([{}] dims) must have the "
         "same number of dims",
         fmt::join(source, ", "), fmt::join(destination, ", "));
  const int rank = x.dim();
  std::vector<int> src = unique_dims("movedim", source, rank), dst = unique_dims("movedim", destination, rank);
  if (rank == 0) return x;
  // perm[destination] = source; the other dims fill the free positions in their order.
  std::vector<int> perm(static_cast<size_t>(rank), -1);
  std::vector<bool> used(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < src.size(); ++i) perm[static_cast<size_t>(dst[i])] = src[i], used[static_cast<size_t>(src[i])] = true;
  int next = 0;
  for (int& p : perm) {
    if (p >= 0) continue;
    while (used[static_cast<size_t>(next)]) ++next;
    p = next++;
  }
  return runtime::permute_of(x, perm);
}

Tensor diagonal(const Tensor& x, int64_t offset, int dim1, int dim2) {
  check_defined("diagonal", x);
  if (x.dim() < 2) fail("diagonal: expected a tensor of at least 2 dims, got {}", x.str());
  int a = normalize_dim("diagonal", dim1, x.dim()), b = normalize_dim("diagonal", dim2, x.dim());
  if (a == b) fail("diagonal: diagonal dimensions cannot be identical {}, {}", dim1, dim2);
  int64_t na = size_at(x, a), nb = size_at(x, b);
  int64_t len = offset >= 0 ? std::min(na, nb - offset) : std::min(na + offset, nb);
  len = std::max<int64_t>(len, 0);
  int64_t start = x.storage_offset();
  if (len > 0) start += offset >= 0 ? offset * stride_at(x, b) : -offset * stride_at(x, a);
  Shape shape, strides;
  for (int d = 0; d < x.dim(); ++d)
    if (d != a && d != b) shape.push_back(size_at(x, d)), strides.push_back(stride_at(x, d));
  shape.push_back(len);
  strides.push_back(stride_at(x, a) + stride_at(x, b));
  return x.as_strided(std::move(shape), std::move(strides), start);
}

// ---- splitting -----------------------------------------------------------------------------------

namespace {

std::vector<Tensor> parts_of(const char* op, const Tensor& x, int dim, const Shape& sizes) {
  int d = normalize_dim(op, dim, x.dim());
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(runtime::slice_of(x, d, start, start + s, 1));
    start += s;
  }
  return out;
}

int split_dim(const char* op, const Tensor& x, int dim) {
  check_defined(op, x);
  if (x.dim() == 0) fail("{}: expected at least a 1-dimensional tensor", op);
  return normalize_dim(op, dim, x.dim());
}

}  // namespace

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int dim) {
  int d = split_dim("split", x, dim);
  if (split_size < 0) fail("split: split_size must be non-negative, got {}", split_size);
  int64_t n = size_at(x, d);
  if (split_size == 0 && n != 0) fail("split: split_size can only be 0 if dimension size is 0, but got size {}", n);
  Shape sizes;
  if (split_size == 0) sizes.push_back(0);
  for (int64_t s = 0; s < n; s += split_size) sizes.push_back(std::min(split_size, n - s));
  return parts_of("split", x, d, sizes);
}

std::vector<Tensor> split(const Tensor& x, const Shape& split_sizes, int dim) {
  int d = split_dim("split", x, dim);
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    if (s < 0) fail("split: split_sizes {} has a negative entry", shape_str(split_sizes));
    total += s;
  }
  if (total != size_at(x, d))
    fail("split: split_sizes {} sum to {}, but the dimension {} has size {}", shape_str(split_sizes), total, dim,
         size_at(x, d));
  return parts_of("split", x, d, split_sizes);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int dim) {
  int d = split_dim("chunk", x, dim);
  if (chunks <= 0) fail("chunk: chunks must be greater than 0, got {}", chunks);
  int64_t n = size_at(x, d);
  int64_t each = (n + chunks - 1) / chunks;
  if (each == 0) {  // an empty dim: `chunks` empty parts, as PyTorch
    return parts_of("chunk", x, d, Shape(static_cast<size_t>(chunks), 0));
  }
  return split(x, each, d);
}

std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int dim) {
  int d = split_dim("tensor_split", x, dim);
  if (sections <= 0) fail("tensor_split: number of sections must be larger than 0, got {}", sections);
  int64_t n = size_at(x, d);
  Shape sizes;
  for (int64_t i = 0; i < sections; ++i) sizes.push_back(n / sections + (i < n % sections ? 1 : 0));
  return parts_of("tensor_split", x, d, sizes);
}

std::vector<Tensor> tensor_split(const Tensor& x, const Shape& indices, int dim) {
  int d = split_dim("tensor_split", x, dim);
  int64_t n = size_at(x, d);
  std::vector<Tensor> out;
  int64_t start = 0;
  auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  for (int64_t i : indices) {
    int64_t end = clamp(i);  // a decreasing index gives an empty part; the next starts there
    out.push_back(runtime::slice_of(x, d, start, std::max(end, start), 1));
    start = end;
  }
  out.push_back(runtime::slice_of(x, d, start, n, 1));
  return out;
}

std::vector<Tensor> unbind(const Tensor& x, int dim) {
  int d = split_dim("unbind", x, dim);
  std::vector<Tensor> out;
  for (int64_t i = 0; i < size_at(x, d); ++i) out.push_back(runtime::select_of(x, d, i));
  return out;
}

// ---- copies --------------------------------------------------------------------------------------

// cat and stack: ops/cat.cpp (one launch for several inputs).

Tensor repeat(const Tensor& x, const Shape& repeats) {
  check_defined("repeat", x);
  if (static_cast<int>(repeats.size()) < x.dim())
    fail("repeat: number of dimensions of repeat dims ({}) can not be smaller than number of dimensions of tensor ({})",
         repeats.size(), x.dim());
  for (int64_t r : repeats)
    if (r < 0) fail("repeat: repeats {} has a negative entry", shape_str(repeats));
  // x padded with leading 1s, seen as [1, s0, 1, s1, ...], expanded to [r0, s0, r1, s1, ...] and
  // copied (one strided copy, stride 0 along the repeats), then viewed as [r0 s0, r1 s1, ...].
  const size_t R = repeats.size();
  Shape padded(R - static_cast<size_t>(x.dim()), 1);
  padded.insert(padded.end(), x.shape().begin(), x.shape().end());
  Shape pstrides(R - static_cast<size_t>(x.dim()), 0);
  pstrides.insert(pstrides.end(), x.strides().begin(), x.strides().end());
  Shape wide, wide_strides, result;
  for (size_t i = 0; i < R; ++i) {
    wide.insert(wide.end(), {repeats[i], padded[i]});
    wide_strides.insert(wide_strides.end(), {0, pstrides[i]});
    result.push_back(repeats[i] * padded[i]);
  }
  Tensor out = Tensor::empty(wide, x.dtype(), x.device());
  if (out.numel() > 0) copy_(out, x.as_strided(wide, wide_strides, x.storage_offset()));
  return runtime::view_of(out, result);
}

Tensor flip(const Tensor& x, const std::vector<int>& dims) {
  check_defined("flip", x);
  std::vector<int> ds = unique_dims("flip", dims, x.dim());
  if (x.numel() == 0 || x.dim() == 0) return clone(x);
  // A view with the flipped dims' strides negated (internal only: such views are never handed
  // out), copied by the strided kernel.
  Shape strides = x.strides();
  int64_t offset = x.storage_offset();
  for (int d : ds) {
    offset += (size_at(x, d) - 1) * stride_at(x, d);
    strides[static_cast<size_t>(d)] = -stride_at(x, d);
  }
  return clone(x.as_strided(x.shape(), strides, offset));
}

Tensor roll(const Tensor& x, const Shape& shifts, const std::vector<int>& dims) {
  check_defined("roll", x);
  if (shifts.empty()) fail("roll: shifts must be non-empty");
  if (dims.empty()) {
    if (shifts.size() != 1) fail("roll: shifts ({} of them) and dims (none) must align", shifts.size());
    return runtime::view_of(roll(flatten(x), shifts, {0}), x.shape());
  }
  if (shifts.size() != dims.size())
    fail("roll: shifts and dims must align: shifts has {} entries, dims {}", shifts.size(), dims.size());
  Tensor out = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    int d = normalize_dim("roll", dims[i], x.dim());
    int64_t n = x.dim() == 0 ? 1 : size_at(x, d);
    if (n == 0) continue;
    int64_t s = ((shifts[i] % n) + n) % n;
    // The last s elements come first: two strided copies into the two ranges of the result, each
    // with its rows contiguous where the input's are (cat of the two views went through the
    // concatenation kernel, which indexes every element's source: 0.30 ms against PyTorch's 0.18
    // at [1024, 1024] f32 on one CPU thread).
    if (s == 0) {
      out = clone(out);
      continue;
    }
    Tensor rolled = Tensor::empty(out.shape(), out.dtype(), out.device());
    Tensor head = narrow(rolled, d, 0, s), tail = narrow(rolled, d, s, n - s);
    copy_(head, narrow(out, d, n - s, s));
    copy_(tail, narrow(out, d, 0, n - s));
    out = rolled;
  }
  return out;
}

}  // namespace tritium::ops
