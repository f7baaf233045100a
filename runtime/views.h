// View computations on runtime::Tensor: pure metadata (shape, strides, storage offset) over the
// same storage, through Tensor::as_strided. They record no autograd; the differentiable
// Tensor::view/permute/... methods in nn/ wrap them. Rules and error messages follow PyTorch
// (docs/tensors.md). Dimensions may be negative (counted from the end).
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/tensor.h"

namespace tritium::runtime {

using Shape = Tensor::Shape;

// Replaces one -1 in `shape` by the size that makes the element count `numel`. Errors: more
// than one -1, a size below -1, a shape whose element count is not numel ("shape '[2, -1]' is
// invalid for input of size 7"), a -1 next to a 0 (ambiguous).
Shape infer_shape(Shape shape, int64_t numel);

// PyTorch's computeStride: the strides of a view of a tensor (sizes, strides) with shape
// new_shape (no -1; same element count), or nullopt when no view is possible: the new shape
// must be formed from runs of old dims that are contiguous with each other.
std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& new_shape);
bool can_view(const Tensor& x, const Shape& shape);  // shape may hold one -1

// x.view(shape): same storage; errors when the strides do not allow it ("view size is not
// compatible with input tensor's size and stride ... Use .reshape(...) instead.").
Tensor view_of(const Tensor& x, Shape shape);
Tensor permute_of(const Tensor& x, const std::vector<int>& dims);
Tensor transpose_of(const Tensor& x, int dim0, int dim1);
Tensor t_of(const Tensor& x);  // 2-D transpose; 0-D and 1-D tensors are returned as they are
// Without dim: removes every size-1 dim. With dim: removes it if its size is 1, else no-op.
Tensor squeeze_of(const Tensor& x, std::optional<int> dim = std::nullopt);
Tensor unsqueeze_of(const Tensor& x, int dim);  // dim in [-rank-1, rank]
// Size-1 dims (and new leading dims) stretch to the requested size with stride 0; -1 keeps a
// dim's size.
Tensor expand_of(const Tensor& x, const Shape& shape);
// x[start:end:step] along dim: negative start/end count from the end, then both are clamped to
// [0, size] as in Python; step must be positive.
// Python's slice bounds on a dim of `size`: negatives count from the end, both clamped, end >= start.
std::pair<int64_t, int64_t> slice_bounds(int64_t size, int64_t start, int64_t end);
Tensor slice_of(const Tensor& x, int dim, int64_t start, int64_t end, int64_t step = 1);
Tensor select_of(const Tensor& x, int dim, int64_t index);  // removes dim; index may be negative

// A dim index in [-rank, rank) made non-negative; a 0-dim tensor accepts -1 and 0 as PyTorch
// does. Error: "op: dimension 3 is out of range (expected to be in range of [-2, 1])".
int wrap_dim(int dim, int rank, const char* op);

// The same elements as x, described with fewer dims: size-1 dims dropped and dims that are
// contiguous with each other merged (outermost first). Kernels over one strided tensor use it.
void collapse_dims(const Tensor& x, Shape& sizes, Shape& strides);

}  // namespace tritium::runtime
