// Pooling ops (torch.nn.functional.max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool2d) and their
// backwards, as Tritium kernels (ops/pool.cpp). Inputs are [N, C, H, W] or unbatched [C, H, W]
// (1-D: [N, C, L] or [C, L]) with any strides; a channels-last input gives a channels-last output,
// as PyTorch's suggested memory format. Argument checks and messages follow PyTorch's
// (pool2d_shape_check, pooling_output_shape).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/ops.h"

namespace tritium::ops {

// The window parameters of a 2-D pool, each (h, w); the 1-D ops use h = 1.
struct Pool2dParams {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  bool ceil_mode = false;
};

// PyTorch's argument spelling: one value for both dims or one per dim; an empty stride means
// stride = kernel_size. `op` names the op in the errors (a wrong count, a non-positive value).
Pool2dParams pool2d_params(const char* op, const std::vector<int>& kernel_size, const std::vector<int>& stride,
                           const std::vector<int>& padding, const std::vector<int>& dilation, bool ceil_mode);
Pool2dParams pool1d_params(const char* op, const std::vector<int>& kernel_size, const std::vector<int>& stride,
                           const std::vector<int>& padding, const std::vector<int>& dilation, bool ceil_mode);

// PyTorch's pooling_output_shape: floor (or ceil with ceil_mode, the last window starting inside
// the input or left padding) of (size + 2 pad - dilation (kernel - 1) - 1) / stride, plus 1.
int64_t pooling_output_size(int64_t size, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                            bool ceil_mode);

struct MaxPoolResult {
  Tensor values;
  Tensor indices;  // i64, the flat position h * W + w of each maximum in its input plane
};

// Max over each window; ties keep the first maximum in window order, NaN wins (the last NaN of
// the window), as PyTorch's kernels.
MaxPoolResult max_pool2d(const Tensor& x, const Pool2dParams& p);
MaxPoolResult max_pool1d(const Tensor& x, const Pool2dParams& p);
// The gradient at the input: each input element gathers the output gradients whose index names
// it (deterministic, no atomics, whatever the windows' overlap).
Tensor max_pool2d_backward(const Tensor& grad, const Tensor& x, const Tensor& indices, const Pool2dParams& p);
Tensor max_pool1d_backward(const Tensor& grad, const Tensor& x, const Tensor& indices, const Pool2dParams& p);

// Mean over each window (no dilation: p.dilation must be 1); divisor_override (> 0) replaces the
// divisor, else the window's size counting the padding (count_include_pad) or not.
Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p, bool count_include_pad,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor avg_pool1d(const Tensor& x, const Pool2dParams& p, bool count_include_pad);
Tensor avg_pool2d_backward(const Tensor& grad, const Tensor& x, const Pool2dParams& p, bool count_include_pad,
                           std::optional<int64_t> divisor_override = std::nullopt);
Tensor avg_pool1d_backward(const Tensor& grad, const Tensor& x, const Pool2dParams& p, bool count_include_pad);

// Mean over PyTorch's adaptive windows [floor(o I / O), ceil((o + 1) I / O)) for an output of
// output_size (h, w); a size of -1 keeps the input's (PyTorch's None).
Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int>& output_size);
Tensor adaptive_avg_pool2d_backward(const Tensor& grad, const Tensor& x);

}  // namespace tritium::ops
