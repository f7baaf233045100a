// The two implicit-GEMM kernels every convolution op runs on (ops/conv.cpp calls them): the
// forward kernel (conv2d's forward and input gradient, conv_transpose2d's forward and input
// gradient) and the weight-gradient kernel. Internal to ops/conv*.
#pragma once
#include "ops/conv.h"

namespace tritium::ops::conv_detail {

// Where weight element (group g, output channel oc of the group, input channel c of the group,
// kh, kw) lives: g * group + oc * out_channel + c * in_channel + kh * row + kw * col. conv2d's
// weight [O, C/g, kh, kw] and conv_transpose2d's [Cin, Cout/g, kh, kw] are both read this way.
struct WeightStrides {
  int64_t group, out_channel, in_channel, row, col;
};
WeightStrides conv_weight_strides(const Tensor& w, int64_t out_per_group);       // [O, C/g, kh, kw]
WeightStrides transposed_weight_strides(const Tensor& w, int64_t in_per_group);   // [Cin, Cout/g, kh, kw]

// out[n, g*OCg + oc, p, q] = bias[g*OCg + oc] + sum over c < Cg, kh, kw of
// in[n, g*Cg + c, i, j] * w(g, oc, c, kh, kw), where
//   direct:     i = p * stride - padding + kh * dilation   (conv2d)
//   transposed: p = i * stride - padding + kh * dilation   (conv_transpose2d, conv2d's dgrad)
// and likewise j, q. Cg = in.size(1) / groups, OCg = out.size(1) / groups; out is written through
// its strides (every element), in, weight and bias are read through theirs. kh x kw is the
// kernel size.
void implicit_gemm(const Tensor& in, const Tensor& weight, const WeightStrides& ws, int64_t kh, int64_t kw,
                   const Tensor& bias, Tensor& out, const Conv2dGeometry& geo, bool transposed);

// grad_weight[g*OCg + o, c, kh, kw] = sum over n, p, q of
// grad_out[n, g*OCg + o, p, q] * in[n, g*Cg + c, p * stride - padding + kh * dilation, ...]:
// conv2d's weight gradient (and conv_transpose2d's, with the roles of its input and output
// swapped). Returns a contiguous [O, Cg, kh, kw] tensor of `dtype`.
Tensor weight_gradient(const Tensor& grad_out, const Tensor& in, int64_t kh, int64_t kw, const Conv2dGeometry& geo,
                       DType dtype);

// Division of an index n in [0, 2^30) by d >= 1 without a divide: n / d = (umulhi(n, magic) + n)
// >> shift, magic an unsigned 32-bit number in an int32 (the weight-gradient kernel's DIV_* and
// SHR_* arguments).
struct Divisor {
  int32_t magic;
  int32_t shift;
};
Divisor divisor(int64_t d);

// The kernels themselves (for tests of their generated code): arguments as their definitions
// in ops/conv_gemm.cpp name them.
Kernel& forward_kernel();
Kernel& weight_grad_kernel();

}  // namespace tritium::ops::conv_detail
