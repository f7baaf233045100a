// Convolutions (torch.nn.functional.conv1d / conv2d / conv_transpose2d) and their backward, as
// implicit GEMMs on tl::dot (ops/conv_gemm.cpp holds the kernels, ops/conv.cpp the argument
// checks, shapes and memory formats; docs/ops.md, "Convolutions").
//
// Inputs may be contiguous ([N, C, H, W]) or channels-last (NHWC strides, PyTorch's
// memory_format=torch.channels_last) or any other strides. The output is channels-last when the
// input or the weight is, as PyTorch's. The kernels read the operands channels-last when that
// rule says so and always on a GPU (converting an operand once where it is not); on the CPU
// otherwise through their strides as they are. Dtypes f16, bf16, f32
// (accumulating in f32) and f64; one dtype for input, weight and bias.
#pragma once
#include <array>
#include <concepts>
#include <initializer_list>
#include <string>
#include <vector>

#include "ops/ops.h"

namespace tritium::ops {

// torch.backends.cudnn.allow_tf32: whether fp32 convolutions (forward and both gradients) may
// multiply in tf32 on a GPU's tensor cores (relative error ~1e-3, f32 accumulation). On by
// default, as PyTorch's; a switch apart from set_float32_matmul_precision (matmul's), as there.
// Off: exact fp32 products (FMA, ~20x slower). The CPU always computes in fp32. Process-wide.
void set_conv_allow_tf32(bool allow);
bool get_conv_allow_tf32();

// The resolved geometry of a 2-D convolution: `padding` is the padding before each spatial dim
// (padding="same" with an even kernel pads one more after, which only the output size shows).
struct Conv2dGeometry {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};

// PyTorch's padding argument: a number, one per spatial dim, or "same" / "valid".
struct ConvPadding {
  std::vector<int64_t> values;  // one per spatial dim, or one for all
  std::string mode;             // "", "same" or "valid"

  template <std::integral T> ConvPadding(T p) : values{static_cast<int64_t>(p)} {}
  ConvPadding(std::initializer_list<int64_t> v) : values(v) {}
  ConvPadding(std::vector<int64_t> v) : values(std::move(v)) {}
  ConvPadding(const char* m) : mode(m) {}
  ConvPadding(std::string m) : mode(std::move(m)) {}
  ConvPadding() : values{0} {}
};

// conv2d(input [N, C, H, W] or [C, H, W], weight [O, C / groups, kh, kw], bias [O] or undefined).
// stride, dilation: one value or one per spatial dim.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
              const ConvPadding& padding, const std::vector<int64_t>& dilation, int64_t groups);
// conv1d(input [N, C, L] or [C, L], weight [O, C / groups, k]): conv2d with H = 1.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
              const ConvPadding& padding, const std::vector<int64_t>& dilation, int64_t groups);
// conv_transpose2d(input [N, Cin, H, W], weight [Cin, Cout / groups, kh, kw], bias [Cout]); the
// output is (H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1 high.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& output_padding, int64_t groups,
                        const std::vector<int64_t>& dilation);

// The gradients of one convolution (undefined where not asked for).
struct ConvGrads {
  Tensor input, weight, bias;
};
struct ConvGradMask {
  bool input = true, weight = true, bias = true;
};

// Backward of conv2d / conv1d / conv_transpose2d, given the forward's arguments (checked by the
// forward) and the gradient of its output.
ConvGrads conv2d_backward(const Tensor& grad, const Tensor& input, const Tensor& weight,
                          const std::vector<int64_t>& stride, const ConvPadding& padding,
                          const std::vector<int64_t>& dilation, int64_t groups, ConvGradMask mask = {});
ConvGrads conv1d_backward(const Tensor& grad, const Tensor& input, const Tensor& weight,
                          const std::vector<int64_t>& stride, const ConvPadding& padding,
                          const std::vector<int64_t>& dilation, int64_t groups, ConvGradMask mask = {});
ConvGrads conv_transpose2d_backward(const Tensor& grad, const Tensor& input, const Tensor& weight,
                                    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                                    const std::vector<int64_t>& output_padding, int64_t groups,
                                    const std::vector<int64_t>& dilation, ConvGradMask mask = {});

}  // namespace tritium::ops
