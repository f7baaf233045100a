// Shape ops of the tensor API (issue 29, item 2): views (flatten, narrow, unfold, movedim,
// diagonal, split and friends: metadata over the same storage, no kernel) and the copies that
// assemble or rearrange tensors (repeat, flip, roll, tril/triu: the generic strided copy kernel of
// ops/copy.cpp, or the elementwise `where`; cat / stack: ops/cat.cpp's batched copy, up to 8 inputs
// a launch). Raw and non-differentiable, like the
// rest of ops/; the differentiable spellings are in nn/tensor_ops.h. Rules and error messages
// follow PyTorch (docs/ops.md, "Shape ops"). Dims may be negative (counted from the end).
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/tensor.h"

namespace tritium::ops {

using runtime::Tensor;
using Shape = std::vector<int64_t>;

// x.reshape(shape): a view when the strides allow one (runtime::can_view), else a contiguous copy.
Tensor reshape(const Tensor& x, Shape shape);
// Dims start_dim..end_dim merged into one (a view when possible, as reshape). A 0-dim tensor gives [1].
Tensor flatten(const Tensor& x, int start_dim = 0, int end_dim = -1);
// Dim `dim` split into `sizes` (one -1 inferred); always a view.
Tensor unflatten(const Tensor& x, int dim, Shape sizes);
Tensor ravel(const Tensor& x);  // flatten(x): 1-D, a view when contiguous
// torch.broadcast_to: expand with numpy's rules (a view with stride-0 dims).
Tensor broadcast_to(const Tensor& x, const Shape& shape);
// x[start:start+length] along dim (a view); start may be negative; start + length <= size.
Tensor narrow(const Tensor& x, int dim, int64_t start, int64_t length);
// Windows of `size` elements every `step` along dim, as a new last dim (a view; windows may overlap).
Tensor unfold(const Tensor& x, int dim, int64_t size, int64_t step);
// Dims `source` moved to positions `destination`; the other dims keep their order (a view).
Tensor movedim(const Tensor& x, std::vector<int> source, std::vector<int> destination);
// The diagonal of the (dim1, dim2) planes, `offset` above (> 0) or below (< 0) the main one, as a
// new last dim (a view).
Tensor diagonal(const Tensor& x, int64_t offset = 0, int dim1 = 0, int dim2 = 1);

// Views of consecutive parts along dim.
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int dim = 0);     // parts of split_size (the last smaller)
std::vector<Tensor> split(const Tensor& x, const Shape& split_sizes, int dim = 0);  // sizes summing to the dim's size
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int dim = 0);       // ceil(size / chunks) each; may give fewer
std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int dim = 0);  // sizes differ by at most one
std::vector<Tensor> tensor_split(const Tensor& x, const Shape& indices, int dim = 0);  // cut before each index
std::vector<Tensor> unbind(const Tensor& x, int dim = 0);  // select(dim, i) for each i

// Copies.
Tensor cat(const std::vector<Tensor>& tensors, int dim = 0);    // promoted dtype; [0] tensors are skipped
Tensor stack(const std::vector<Tensor>& tensors, int dim = 0);  // a new dim; equal shapes
Tensor repeat(const Tensor& x, const Shape& repeats);           // tiles; len(repeats) >= x.dim()
Tensor flip(const Tensor& x, const std::vector<int>& dims);
// Elements shifted by shifts[i] along dims[i] (wrapping around); no dims: over the flattened tensor.
Tensor roll(const Tensor& x, const Shape& shifts, const std::vector<int>& dims = {});
Tensor tril(const Tensor& x, int64_t diagonal = 0);  // zero above the diagonal of the last two dims
Tensor triu(const Tensor& x, int64_t diagonal = 0);  // zero below it

}  // namespace tritium::ops
