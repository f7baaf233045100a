// conv1d / conv2d / conv_transpose2d and their backward (ops/conv.h): PyTorch's argument checks
// and messages, the output shapes, the memory format, and the kernel calls (ops/conv_gemm.h).
// conv2d's input gradient is a transposed convolution and conv_transpose2d's a convolution, both
// on the one forward kernel; both ops' weight gradients use the one weight-gradient kernel.
#include "ops/conv.h"

#include <atomic>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/conv_gemm.h"

namespace tritium::ops {

namespace {
std::atomic<bool> g_conv_allow_tf32{true};
}  // namespace

void set_conv_allow_tf32(bool allow) { g_conv_allow_tf32 = allow; }
bool get_conv_allow_tf32() { return g_conv_allow_tf32; }

namespace {

using conv_detail::conv_weight_strides;
using conv_detail::implicit_gemm;
using conv_detail::transposed_weight_strides;
using conv_detail::weight_gradient;

std::string shape_of(const Tensor& t) { return fmt::format("[{}]", fmt::join(t.shape(), ", ")); }

// One value per spatial dim from PyTorch's "an int or a list of `dims`".
std::array<int64_t, 2> per_dim(const std::vector<int64_t>& v, int dims, const char* what) {
  if (v.size() == 1) return {v[0], v[0]};
  if (static_cast<int>(v.size()) != dims)
    fail("expected {} to be a single integer value or a list of {} values to match the convolution dimensions, but "
         "got {}=[{}]",
         what, dims, what, fmt::join(v, ", "));
  return dims == 1 ? std::array<int64_t, 2>{1, v[0]} : std::array<int64_t, 2>{v[0], v[1]};
}

// PyTorch's is_channels_last_strides_2d: NHWC strides (dims walked C, W, H, N with growing
// strides); ambiguous tensors (a single channel with equal strides) count as contiguous.
bool channels_last_strides(const Tensor& t) {
  if (t.dim() != 4 || t.stride(1) == 0) return false;
  int64_t min = 0;
  for (int d : {1, 3, 2, 0}) {
    if (t.size(d) == 0 || t.stride(d) < min) return false;
    if (d == 0 && min == t.stride(1)) return false;
    min = t.stride(d) * (t.size(d) > 1 ? t.size(d) : 1);
  }
  return true;
}

// `t` (4-D) with NHWC strides: itself when it has them (or one channel, nothing to reorder),
// else one copy. The kernels read the operands channels-last on every backend, whatever the
// tensors' format: on a GPU the implicit GEMM's K tiles are then contiguous channels (16-byte
// cp.async into tensor-core tiles) instead of one-element gathers at a stride of H*W (stop 38:
// bf16 NCHW 1.43 ms, NHWC 0.095 ms on an H100); on the CPU (since stop 52) its dot packs
// channels-last K tiles with vector loads where NCHW ones are gathered a pixel at a time, and the
// copies cost less than that (one core, f32, fwd+bwd: ResNet-50 layer1 3x3 69.7 -> 44.8 ms, the
// small CNN's 32->64 83.3 -> 52.0, conv1d 44.8 -> 26.5; the CNN's training 1.94k -> 2.17k
// samples/s on 2 threads; at stop 41 the copies ate the gain). The output keeps PyTorch's format
// (written through its strides).
Tensor channels_last_operand(const Tensor& t) {
  if (t.size(1) == 1 || channels_last_strides(t)) return t;
  return contiguous(t.permute({0, 2, 3, 1})).permute({0, 3, 1, 2});
}

// A new [N, C, H, W] tensor, NHWC in memory when `channels_last`.
Tensor new_output(int64_t n, int64_t c, int64_t h, int64_t w, DType dtype, Device device, bool channels_last) {
  if (!channels_last) return Tensor::empty({n, c, h, w}, dtype, device);
  return Tensor::empty({n, h, w, c}, dtype, device).permute({0, 3, 1, 2});
}

// The checks every convolution makes (PyTorch's check_shape_forward and its callers), with the
// op's name first. `input` is 4-D here; `spatial` is 1 for conv1d (shown in messages).
void check_common(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t groups,
                  const std::array<int64_t, 2>& stride, const std::array<int64_t, 2>& padding,
                  const std::array<int64_t, 2>& dilation) {
  if (!input.defined() || !weight.defined()) fail("{}: input and weight must be defined", op);
  if (input.device() != weight.device() || (bias.defined() && bias.device() != input.device()))
    fail("{}: input, weight and bias must be on one device (input on {}, weight on {})", op, input.device().str(),
         weight.device().str());
  if (input.dtype() != weight.dtype())
    fail("{}: Input type ({}) and weight type ({}) should be the same", op, dtype_name(input.dtype()),
         dtype_name(weight.dtype()));
  if (bias.defined() && bias.dtype() != input.dtype())
    fail("{}: Input type ({}) and bias type ({}) should be the same", op, dtype_name(input.dtype()),
         dtype_name(bias.dtype()));
  if (input.dtype() != DType::f16 && input.dtype() != DType::bf16 && input.dtype() != DType::f32 &&
      input.dtype() != DType::f64)
    fail("{}: expected a floating-point input (f16, bf16, f32, f64), got {}", op, dtype_name(input.dtype()));
  if (stride[0] <= 0 || stride[1] <= 0) fail("{}: non-positive stride is not supported", op);
  if (padding[0] < 0 || padding[1] < 0) fail("{}: negative padding is not supported", op);
  if (dilation[0] <= 0 || dilation[1] <= 0) fail("{}: non-positive dilation is not supported", op);
  if (groups <= 0) fail("{}: non-positive groups is not supported", op);
}

struct Resolved {
  Tensor input, weight;  // 4-D, batched
  Conv2dGeometry geo;
  int64_t oh = 0, ow = 0;
  bool unbatched = false;
};

// conv2d / conv1d's checks and output size; `spatial` = 2 or 1 (then H = 1 was inserted by the
// caller into both tensors).
Resolved resolve_conv(const char* op, const Tensor& input_in, const Tensor& weight, const Tensor& bias,
                      const std::vector<int64_t>& stride_v, const ConvPadding& pad, const std::vector<int64_t>& dil_v,
                      int64_t groups, int spatial) {
  Resolved r;
  const int want = spatial + 2;
  if (!input_in.defined() || !weight.defined()) fail("{}: input and weight must be defined", op);
  if (weight.dim() != want)
    fail("{}: expected weight to be {}-dimensional ([out_channels, in_channels / groups{}]), but got weight of size {}",
         op, want, spatial == 2 ? ", kH, kW" : ", kW", shape_of(weight));
  if (input_in.dim() != want && input_in.dim() != want - 1)
    fail("{}: Expected {}D (unbatched) or {}D (batched) input to {}, but got input of size: {}", op, want - 1, want, op,
         shape_of(input_in));
  r.unbatched = input_in.dim() == want - 1;
  Tensor input = r.unbatched ? input_in.unsqueeze(0) : input_in;
  Tensor w = weight;
  if (spatial == 1) input = input.unsqueeze(2), w = w.unsqueeze(2);
  const auto stride = per_dim(stride_v, spatial, "stride");
  const auto dilation = per_dim(dil_v, spatial, "dilation");
  std::array<int64_t, 2> padding{0, 0};
  if (pad.mode.empty()) {
    padding = per_dim(pad.values, spatial, "padding");
    if (spatial == 1) padding[0] = 0;
  } else if (pad.mode != "same" && pad.mode != "valid") {
    fail("{}: Invalid padding string: '{}'", op, pad.mode);
  }
  check_common(op, input, w, bias, groups, stride, padding, dilation);
  const int64_t C = input.size(1), O = w.size(0);
  if (O % groups != 0)
    fail("{}: Given groups={}, expected weight to be divisible by {} at dimension 0, but got weight of size {} instead",
         op, groups, groups, shape_of(weight));
  if (C != w.size(1) * groups)
    fail("{}: Given groups={}, weight of size {}, expected input{} to have {} channels, but got {} channels instead", op,
         groups, shape_of(weight), shape_of(r.unbatched ? input_in.unsqueeze(0) : input_in), w.size(1) * groups, C);
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != O))
    fail("{}: Given weight of size {}, expected bias to be 1-dimensional with {} elements, but got bias of size {} "
         "instead",
         op, shape_of(weight), O, shape_of(bias));
  const int64_t kh = w.size(2), kw = w.size(3), ih = input.size(2), iw = input.size(3);
  if (pad.mode == "same") {
    if (stride[0] != 1 || stride[1] != 1) fail("{}: padding='same' is not supported for strided convolutions", op);
    // The total padding d*(k-1), the smaller half before (PyTorch's _convolution_same).
    padding = {dilation[0] * (kh - 1) / 2, dilation[1] * (kw - 1) / 2};
    r.oh = ih, r.ow = iw;
  }
  // Kernel larger than the padded input (PyTorch's message, sizes shown per spatial dim).
  const int64_t ph = ih + 2 * padding[0], pw = iw + 2 * padding[1];
  const int64_t eh = dilation[0] * (kh - 1) + 1, ew = dilation[1] * (kw - 1) + 1;
  if (pad.mode != "same" && (ph < eh || pw < ew)) {
    if (spatial == 1)
      fail("{}: Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than "
           "actual input size",
           op, pw, ew);
    fail("{}: Calculated padded input size per channel: ({} x {}). Kernel size: ({} x {}). Kernel size can't be "
         "greater than actual input size",
         op, ph, pw, eh, ew);
  }
  if (pad.mode != "same") r.oh = (ph - eh) / stride[0] + 1, r.ow = (pw - ew) / stride[1] + 1;
  r.input = input, r.weight = w;
  r.geo = {stride, padding, dilation, groups};
  return r;
}

Tensor conv_forward(const char* op, const Tensor& input_in, const Tensor& weight, const Tensor& bias,
                    const std::vector<int64_t>& stride, const ConvPadding& padding, const std::vector<int64_t>& dilation,
                    int64_t groups, int spatial) {
  Resolved r = resolve_conv(op, input_in, weight, bias, stride, padding, dilation, groups, spatial);
  const bool cl = spatial == 2 && (channels_last_strides(r.input) || channels_last_strides(r.weight));
  Tensor out = new_output(r.input.size(0), r.weight.size(0), r.oh, r.ow, r.input.dtype(), r.input.device(), cl);
  Tensor x = channels_last_operand(r.input), w = channels_last_operand(r.weight);
  implicit_gemm(x, w, conv_weight_strides(w, w.size(0) / groups), w.size(2), w.size(3), bias, out, r.geo,
                /*transposed=*/false);
  if (spatial == 1) out = out.squeeze(2);
  return r.unbatched ? out.squeeze(0) : out;
}

ConvGrads conv_backward(const char* op, const Tensor& grad_in, const Tensor& input_in, const Tensor& weight,
                        const std::vector<int64_t>& stride, const ConvPadding& padding,
                        const std::vector<int64_t>& dilation, int64_t groups, ConvGradMask mask, int spatial) {
  Resolved r = resolve_conv(op, input_in, weight, Tensor(), stride, padding, dilation, groups, spatial);
  Tensor grad = r.unbatched ? grad_in.unsqueeze(0) : grad_in;
  if (spatial == 1) grad = grad.unsqueeze(2);
  const Shape want{r.input.size(0), r.weight.size(0), r.oh, r.ow};
  if (grad.shape() != want)
    fail("{}_backward: grad_output of size {} where the output is {}", op, shape_of(grad), fmt::join(want, ", "));
  if (grad.dtype() != r.input.dtype()) grad = to_dtype(grad, r.input.dtype());
  // The operands channels-last (channels_last_operand); an output
  // gradient in another format than the input's (a contiguous one for a channels-last output, as
  // PyTorch's autograd often passes) is converted once, as PyTorch does before cuDNN.
  const bool cl = spatial == 2 && (channels_last_strides(r.input) || channels_last_strides(r.weight));
  grad = channels_last_operand(grad);
  Tensor x = channels_last_operand(r.input), w = channels_last_operand(r.weight);
  ConvGrads g;
  if (mask.input) {
    // dgrad: a transposed convolution of the output gradient with the same weight.
    Tensor gx = new_output(r.input.size(0), r.input.size(1), r.input.size(2), r.input.size(3), r.input.dtype(),
                           r.input.device(), cl);
    implicit_gemm(grad, w, transposed_weight_strides(w, w.size(0) / groups), w.size(2), w.size(3), Tensor(), gx,
                  r.geo, /*transposed=*/true);
    if (spatial == 1) gx = gx.squeeze(2);
    g.input = r.unbatched ? gx.squeeze(0) : gx;
  }
  if (mask.weight) {
    Tensor gw = weight_gradient(grad, x, w.size(2), w.size(3), r.geo, weight.dtype());
    g.weight = spatial == 1 ? gw.squeeze(2) : gw;
  }
  if (mask.bias) g.bias = sum(grad, {0, 2, 3});
  return g;
}

struct ResolvedTransposed {
  Tensor input;
  Conv2dGeometry geo;
  int64_t oh = 0, ow = 0;
  bool unbatched = false;
};

ResolvedTransposed resolve_transposed(const Tensor& input_in, const Tensor& weight, const Tensor& bias,
                                      const std::vector<int64_t>& stride_v, const std::vector<int64_t>& pad_v,
                                      const std::vector<int64_t>& out_pad_v, int64_t groups,
                                      const std::vector<int64_t>& dil_v) {
  const char* op = "conv_transpose2d";
  ResolvedTransposed r;
  if (!input_in.defined() || !weight.defined()) fail("{}: input and weight must be defined", op);
  if (weight.dim() != 4)
    fail("{}: expected weight to be 4-dimensional ([in_channels, out_channels / groups, kH, kW]), but got weight of "
         "size {}",
         op, shape_of(weight));
  if (input_in.dim() != 4 && input_in.dim() != 3)
    fail("{}: Expected 3D (unbatched) or 4D (batched) input to {}, but got input of size: {}", op, op,
         shape_of(input_in));
  r.unbatched = input_in.dim() == 3;
  r.input = r.unbatched ? input_in.unsqueeze(0) : input_in;
  const auto stride = per_dim(stride_v, 2, "stride");
  const auto padding = per_dim(pad_v, 2, "padding");
  const auto out_pad = per_dim(out_pad_v, 2, "output_padding");
  const auto dilation = per_dim(dil_v, 2, "dilation");
  check_common(op, r.input, weight, bias, groups, stride, padding, dilation);
  if (out_pad[0] < 0 || out_pad[1] < 0) fail("{}: negative output_padding is not supported", op);
  if ((out_pad[0] >= stride[0] && out_pad[0] >= dilation[0]) || (out_pad[1] >= stride[1] && out_pad[1] >= dilation[1]))
    fail("{}: output padding must be smaller than either stride or dilation, but got output_padding_height: {} "
         "output_padding_width: {} stride_height: {} stride_width: {} dilation_height: {} dilation_width: {}",
         op, out_pad[0], out_pad[1], stride[0], stride[1], dilation[0], dilation[1]);
  const int64_t cin = weight.size(0);
  if (cin % groups != 0)
    fail("{}: Given groups={}, expected weight to be divisible by {} at dimension 0, but got weight of size {} instead",
         op, groups, groups, shape_of(weight));
  if (r.input.size(1) != cin)
    fail("{}: Given transposed=1, weight of size {}, expected input{} to have {} channels, but got {} channels instead",
         op, shape_of(weight), shape_of(r.input), cin, r.input.size(1));
  const int64_t cout = weight.size(1) * groups;
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != cout))
    fail("{}: Given transposed=1, weight of size {}, expected bias to be 1-dimensional with {} elements, but got bias "
         "of size {} instead",
         op, shape_of(weight), cout, shape_of(bias));
  r.oh = (r.input.size(2) - 1) * stride[0] - 2 * padding[0] + dilation[0] * (weight.size(2) - 1) + out_pad[0] + 1;
  r.ow = (r.input.size(3) - 1) * stride[1] - 2 * padding[1] + dilation[1] * (weight.size(3) - 1) + out_pad[1] + 1;
  if (r.oh <= 0 || r.ow <= 0)
    fail("{}: the output size ({} x {}) is too small for input {} with stride {}, padding {}, dilation {}", op, r.oh,
         r.ow, shape_of(r.input), fmt::join(stride, "x"), fmt::join(padding, "x"), fmt::join(dilation, "x"));
  r.geo = {stride, padding, dilation, groups};
  return r;
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
              const ConvPadding& padding, const std::vector<int64_t>& dilation, int64_t groups) {
  return conv_forward("conv2d", input, weight, bias, stride, padding, dilation, groups, 2);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
              const ConvPadding& padding, const std::vector<int64_t>& dilation, int64_t groups) {
  return conv_forward("conv1d", input, weight, bias, stride, padding, dilation, groups, 1);
}

ConvGrads conv2d_backward(const Tensor& grad, const Tensor& input, const Tensor& weight,
                          const std::vector<int64_t>& stride, const ConvPadding& padding,
                          const std::vector<int64_t>& dilation, int64_t groups, ConvGradMask mask) {
  return conv_backward("conv2d", grad, input, weight, stride, padding, dilation, groups, mask, 2);
}

ConvGrads conv1d_backward(const Tensor& grad, const Tensor& input, const Tensor& weight,
                          const std::vector<int64_t>& stride, const ConvPadding& padding,
                          const std::vector<int64_t>& dilation, int64_t groups, ConvGradMask mask) {
  return conv_backward("conv1d", grad, input, weight, stride, padding, dilation, groups, mask, 1);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& output_padding, int64_t groups,
                        const std::vector<int64_t>& dilation) {
  ResolvedTransposed r = resolve_transposed(input, weight, bias, stride, padding, output_padding, groups, dilation);
  const bool cl = channels_last_strides(r.input) || channels_last_strides(weight);
  Tensor out = new_output(r.input.size(0), weight.size(1) * groups, r.oh, r.ow, r.input.dtype(), r.input.device(), cl);
  Tensor x = channels_last_operand(r.input), w = channels_last_operand(weight);
  implicit_gemm(x, w, transposed_weight_strides(w, w.size(0) / groups), w.size(2), w.size(3), bias, out, r.geo,
                /*transposed=*/true);
  return r.unbatched ? out.squeeze(0) : out;
}

ConvGrads conv_transpose2d_backward(const Tensor& grad_in, const Tensor& input, const Tensor& weight,
                                    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                                    const std::vector<int64_t>& output_padding, int64_t groups,
                                    const std::vector<int64_t>& dilation, ConvGradMask mask) {
  ResolvedTransposed r = resolve_transposed(input, weight, Tensor(), stride, padding, output_padding, groups, dilation);
  Tensor grad = r.unbatched ? grad_in.unsqueeze(0) : grad_in;
  const Shape want{r.input.size(0), weight.size(1) * groups, r.oh, r.ow};
  if (grad.shape() != want)
    fail("conv_transpose2d_backward: grad_output of size {} where the output is [{}]", shape_of(grad),
         fmt::join(want, ", "));
  if (grad.dtype() != r.input.dtype()) grad = to_dtype(grad, r.input.dtype());
  const bool cl = channels_last_strides(r.input) || channels_last_strides(weight);
  grad = channels_last_operand(grad);
  Tensor x = channels_last_operand(r.input), w = channels_last_operand(weight);
  ConvGrads g;
  if (mask.input) {
    // A convolution of the output gradient with the same weight (read as conv2d's [O, C/g, kh, kw]).
    Tensor gx = new_output(r.input.size(0), r.input.size(1), r.input.size(2), r.input.size(3), r.input.dtype(),
                           r.input.device(), cl);
    implicit_gemm(grad, w, conv_weight_strides(w, w.size(0) / groups), w.size(2), w.size(3), Tensor(), gx, r.geo,
                  /*transposed=*/false);
    g.input = r.unbatched ? gx.squeeze(0) : gx;
  }
  // The weight gradient of the convolution that maps the output back to the input.
  if (mask.weight) g.weight = weight_gradient(x, grad, w.size(2), w.size(3), r.geo, weight.dtype());
  if (mask.bias) g.bias = sum(grad, {0, 2, 3});
  return g;
}

}  // namespace tritium::ops
