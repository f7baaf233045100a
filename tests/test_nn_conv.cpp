// conv1d / conv2d / conv_transpose2d (ops/conv.h, nn/conv.h) on every backend: forward, input,
// weight and bias gradients against float64 direct (loop) convolutions written here, over
// stride / padding (numbers, "same" with odd and even kernels, "valid") / dilation / groups
// (1, 2, depthwise) / output_padding, contiguous and channels-last inputs (the output in the
// input's memory format), f32 / f64 / f16 / bf16, both K walks of the kernel (few channels per
// group, and >= 16); every output element written (poisoned outputs); autograd and gradcheck
// through the differentiable functions; the modules' shapes, initialisation and repr; PyTorch's
// argument errors.
#include <cmath>
#include <optional>

#include "nn/autograd.h"
#include "nn/conv.h"
#include "nn/gradcheck.h"
#include "ops/conv_gemm.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
namespace nn = tritium::nn;
using tritium::DType;
using tritium::Tensor;

namespace {

using Shape = std::vector<int64_t>;
const DType f32 = DType::f32;

struct Case {
  std::string what;
  int64_t n, c, h, w, o, kh, kw;
  Shape stride, padding;  // padding one value per spatial dim (ignored with a mode)
  std::string mode;       // "", "same", "valid"
  Shape dilation;
  int64_t groups;
  bool bias, channels_last;
  DType dtype;
  bool transposed = false;
  Shape output_padding = {0, 0};
  bool one_d = false;  // conv1d: h == 1, kh == 1 and 1-D arguments
  // Memory formats apart from the input's: a channels-last weight (the output is then
  // channels-last, as PyTorch's), an output gradient in the other format than the input's.
  bool weight_channels_last = false, grad_other_format = false;
  // fp32 products in tf32 on a GPU (set_conv_allow_tf32; the CPU computes fp32 either way).
  bool tf32 = false;
};

// Sets set_conv_allow_tf32 for a scope (the default is on, as PyTorch's cudnn.allow_tf32).
struct AllowTf32 {
  bool saved = ops::get_conv_allow_tf32();
  explicit AllowTf32(bool allow) { ops::set_conv_allow_tf32(allow); }
  ~AllowTf32() { ops::set_conv_allow_tf32(saved); }
};

struct Ref {
  std::vector<double> y, gx, gw, gb;
  Shape y_shape;
};

// The float64 direct convolution and its three gradients for the output gradient gy (by the
// chain rule on the same loops: every product x * w that feeds y[...] sends gy[...] * w to gx
// and gy[...] * x to gw). Direct: y[n, o, p, q] += x[n, c, p*s - pad + kh*d, ...] * w[o, c, kh, kw];
// transposed: y[n, o, i*s - pad + kh*d, ...] += x[n, c, i, j] * w[c, o, kh, kw].
Ref reference(const Case& k, const std::vector<double>& x, const std::vector<double>& w,
              const std::vector<double>& b, const std::vector<double>* gy, int64_t oh, int64_t ow,
              int64_t pad_h, int64_t pad_w) {
  Ref r;
  const int64_t out_c = k.o;
  const int64_t cg = k.c / k.groups, ocg = out_c / k.groups;
  r.y_shape = {k.n, out_c, oh, ow};
  r.y.assign(size_t(k.n * out_c * oh * ow), 0.0);
  r.gx.assign(x.size(), 0.0);
  r.gw.assign(w.size(), 0.0);
  r.gb.assign(size_t(out_c), 0.0);
  const int64_t sh = k.stride[0], sw = k.stride[1], dh = k.dilation[0], dw = k.dilation[1];
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t g = 0; g < k.groups; ++g)
      for (int64_t oc = 0; oc < ocg; ++oc)
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t a = 0; a < k.kh; ++a)
            for (int64_t bb = 0; bb < k.kw; ++bb) {
              const int64_t co = g * ocg + oc, ci = g * cg + c;
              const size_t wi = k.transposed ? size_t(((ci * ocg + oc) * k.kh + a) * k.kw + bb)
                                             : size_t(((co * cg + c) * k.kh + a) * k.kw + bb);
              // Walk the side whose index maps to the other: outputs for conv, inputs transposed.
              const int64_t rows = k.transposed ? k.h : oh, cols = k.transposed ? k.w : ow;
              for (int64_t p = 0; p < rows; ++p)
                for (int64_t q = 0; q < cols; ++q) {
                  int64_t ih, iw, yh, yw;
                  if (!k.transposed) {
                    yh = p, yw = q, ih = p * sh - pad_h + a * dh, iw = q * sw - pad_w + bb * dw;
                  } else {
                    ih = p, iw = q, yh = p * sh - pad_h + a * dh, yw = q * sw - pad_w + bb * dw;
                  }
                  if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w || yh < 0 || yh >= oh || yw < 0 || yw >= ow) continue;
                  const size_t xi = size_t(((n * k.c + ci) * k.h + ih) * k.w + iw);
                  const size_t yi = size_t(((n * out_c + co) * oh + yh) * ow + yw);
                  r.y[yi] += x[xi] * w[wi];
                  if (gy) {
                    r.gx[xi] += (*gy)[yi] * w[wi];
                    r.gw[wi] += (*gy)[yi] * x[xi];
                  }
                }
            }
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t co = 0; co < out_c; ++co)
      for (int64_t i = 0; i < oh * ow; ++i) {
        const size_t yi = size_t((n * out_c + co) * oh * ow + i);
        if (k.bias) r.y[yi] += b[size_t(co)];
        if (gy) r.gb[size_t(co)] += (*gy)[yi];
      }
  return r;
}

int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

// Random values of `dtype` (read back rounded), laid out contiguous or channels-last.
Tensor make(const Shape& shape, DType dtype, bool channels_last, uint32_t seed, std::vector<double>& host) {
  Tensor t = ou::random_tensor<double>(shape, seed, -1, 1).to(dtype);
  if (channels_last && shape.size() == 4) {
    Tensor nhwc = ops::contiguous(t.permute({0, 2, 3, 1}));
    t = nhwc.permute({0, 3, 1, 2});
  }
  host = ou::values(t);
  return t;
}

double tolerance(DType d) {
  switch (d) {
    case DType::f64: return 1e-12;
    case DType::f32: return 1e-5;
    case DType::f16: return 2e-3;
    default: return 1e-2;
  }
}

ops::ConvPadding padding_of(const Case& k) {
  if (!k.mode.empty()) return ops::ConvPadding(k.mode);
  return ops::ConvPadding(k.one_d ? Shape{k.padding[1]} : k.padding);
}
Shape arg(const Case& k, const Shape& v) { return k.one_d ? Shape{v[1]} : v; }

bool is_channels_last(const Tensor& t) { return t.dim() == 4 && t.size(1) > 1 && t.stride(1) == 1 && t.stride(3) == t.size(1); }

// Forward and the three gradients of one case through the ops, against the reference.
void check_case(const Case& k, uint32_t seed) {
  AllowTf32 precision(k.tf32);
  const std::string what = k.what + " (" + tritium::dtype_name(k.dtype) + (k.channels_last ? ", channels-last)" : ")");
  std::vector<double> hx, hw, hb, hgy;
  const Shape xs = k.one_d ? Shape{k.n, k.c, k.w} : Shape{k.n, k.c, k.h, k.w};
  const Shape ws = k.transposed ? Shape{k.c, k.o / k.groups, k.kh, k.kw}
                                : (k.one_d ? Shape{k.o, k.c / k.groups, k.kw} : Shape{k.o, k.c / k.groups, k.kh, k.kw});
  Tensor x = make(xs, k.dtype, k.channels_last, seed, hx);
  Tensor w = make(ws, k.dtype, k.weight_channels_last, seed + 1, hw);
  const bool cl_out = k.channels_last || k.weight_channels_last;
  Tensor b = k.bias ? make({k.o}, k.dtype, false, seed + 2, hb) : Tensor();
  int64_t pad_h = k.padding[0], pad_w = k.padding[1], oh, ow;
  if (k.transposed) {
    oh = (k.h - 1) * k.stride[0] - 2 * pad_h + k.dilation[0] * (k.kh - 1) + k.output_padding[0] + 1;
    ow = (k.w - 1) * k.stride[1] - 2 * pad_w + k.dilation[1] * (k.kw - 1) + k.output_padding[1] + 1;
  } else if (k.mode == "same") {
    pad_h = k.dilation[0] * (k.kh - 1) / 2, pad_w = k.dilation[1] * (k.kw - 1) / 2, oh = k.h, ow = k.w;
  } else {
    if (k.mode == "valid") pad_h = pad_w = 0;
    oh = conv_out(k.h, k.kh, k.stride[0], pad_h, k.dilation[0]);
    ow = conv_out(k.w, k.kw, k.stride[1], pad_w, k.dilation[1]);
  }
  Tensor y = k.transposed ? ops::conv_transpose2d(x, w, b, k.stride, k.padding, k.output_padding, k.groups, k.dilation)
             : k.one_d    ? ops::conv1d(x, w, b, arg(k, k.stride), padding_of(k), arg(k, k.dilation), k.groups)
                          : ops::conv2d(x, w, b, k.stride, padding_of(k), k.dilation, k.groups);
  const Shape ys = k.one_d ? Shape{k.n, k.o, ow} : Shape{k.n, k.o, oh, ow};
  BOOST_TEST_REQUIRE(y.shape() == ys, what << ": output shape");
  BOOST_TEST((y.dtype() == k.dtype), what << ": output dtype");
  if (!k.one_d && k.o > 1) BOOST_TEST(is_channels_last(y) == cl_out, what << ": output memory format");
  Tensor gy = make(ys, k.dtype, cl_out != k.grad_other_format, seed + 3, hgy);
  Ref r = reference(k, hx, hw, hb, &hgy, oh, ow, pad_h, pad_w);
  // tf32 rounds each operand to 10 mantissa bits: ~5e-4 relative a product.
  const double tol = k.tf32 && k.dtype == f32 && !x.device().is_cpu() ? 3e-3 : tolerance(k.dtype);
  ou::check_values(y, r.y, tol, what + ": forward");
  ops::ConvGrads g = k.transposed ? ops::conv_transpose2d_backward(gy, x, w, k.stride, k.padding, k.output_padding,
                                                                   k.groups, k.dilation)
                     : k.one_d    ? ops::conv1d_backward(gy, x, w, arg(k, k.stride), padding_of(k), arg(k, k.dilation),
                                                         k.groups)
                                  : ops::conv2d_backward(gy, x, w, k.stride, padding_of(k), k.dilation, k.groups);
  BOOST_TEST_REQUIRE(g.input.shape() == x.shape(), what << ": grad_input shape");
  BOOST_TEST_REQUIRE(g.weight.shape() == w.shape(), what << ": grad_weight shape");
  BOOST_TEST((g.weight.dtype() == k.dtype), what << ": grad_weight dtype");
  if (!k.one_d && k.c > 1) BOOST_TEST(is_channels_last(g.input) == cl_out, what << ": grad_input format");
  // Gradients sum over more terms than the forward (N*OH*OW for the weight): f16/bf16 looser.
  const double gtol = k.dtype == DType::f16 ? 5e-3 : k.dtype == DType::bf16 ? 2e-2 : tol;
  ou::check_values(g.input, r.gx, gtol, what + ": grad_input");
  ou::check_values(g.weight, r.gw, gtol, what + ": grad_weight");
  ou::check_values(g.bias, r.gb, gtol, what + ": grad_bias");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_conv)

// Few channels per group: the kernel's flat K walk (Cg * kh * kw decoded per element).
BOOST_AUTO_TEST_CASE(conv2d_few_channels_per_group) {
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 10;
    for (bool cl : {false, true}) {
      check_case({"3->5 k3 s1 p0 bias", 2, 3, 7, 6, 5, 3, 3, {1, 1}, {0, 0}, "", {1, 1}, 1, true, cl, f32}, seed += 10);
      check_case({"4->6 k3x2 s2 p1 groups 2", 2, 4, 9, 8, 6, 3, 2, {2, 2}, {1, 1}, "", {1, 1}, 2, false, cl, f32},
                 seed += 10);
      check_case({"depthwise 6 k3 same d2", 1, 6, 8, 7, 6, 3, 3, {1, 1}, {0, 0}, "same", {2, 2}, 6, true, cl, f32},
                 seed += 10);
    }
    check_case({"1->17 k5 s(2,1) p(2,1) d(1,2)", 3, 1, 11, 9, 17, 5, 5, {2, 1}, {2, 1}, "", {1, 2}, 1, true, false, f32},
               seed += 10);
    check_case({"3->4 k3 s2 p1 d2", 2, 3, 8, 9, 4, 3, 3, {2, 2}, {1, 1}, "", {2, 2}, 1, true, false, DType::f64}, seed += 10);
  });
}

// Cg >= 16: the tap-by-tap K walk with channel blocks (contiguous in channels-last inputs).
BOOST_AUTO_TEST_CASE(conv2d_channel_blocks) {
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 100;
    for (bool cl : {false, true}) {
      check_case({"20->18 k3 s(2,1) p(1,0)", 2, 20, 6, 5, 18, 3, 3, {2, 1}, {1, 0}, "", {1, 1}, 1, true, cl, f32},
                 seed += 10);
      check_case({"34->17 k1 valid", 1, 34, 5, 5, 17, 1, 1, {1, 1}, {0, 0}, "valid", {1, 1}, 1, false, cl, f32},
                 seed += 10);
      check_case({"32->8 groups 2 k2 same (even)", 2, 32, 6, 7, 8, 2, 2, {1, 1}, {0, 0}, "same", {1, 1}, 2, true, cl, f32},
                 seed += 10);
    }
    // 16+ channels a group on both sides, as the CNN of train-mnist (the CPU reads the input,
    // the output gradient and the weight in the layouts of cpu_gemm_layout in ops/conv.cpp).
    check_case({"32->40 groups 2 k3 p1", 3, 32, 9, 7, 40, 3, 3, {1, 1}, {1, 1}, "", {1, 1}, 2, true, false, f32},
               seed += 10);
    check_case({"16->33 k3 p1 f64", 2, 16, 5, 7, 33, 3, 3, {1, 1}, {1, 1}, "", {1, 1}, 1, false, false, DType::f64},
               seed += 10);
    check_case({"16->20 k3 p1 f16", 2, 16, 6, 6, 20, 3, 3, {1, 1}, {1, 1}, "", {1, 1}, 1, true, true, DType::f16}, seed += 10);
    check_case({"16->20 k3 s2 p1 bf16", 2, 16, 7, 6, 20, 3, 3, {2, 2}, {1, 1}, "", {1, 1}, 1, true, true, DType::bf16},
               seed += 10);
  });
}

// 1x1 convolutions at stride 1, unpadded, one group: the weight gradient is a matmul over the
// pixels (ops/conv_gemm.cpp) when their dims merge (channels-last; a contiguous batch of one),
// else the weight-gradient kernel; sizes off the tiles, with and without bias, the gradient in
// the other format, the transposed form, and neighbours that must not take the matmul (stride 2,
// two groups).
BOOST_AUTO_TEST_CASE(pointwise_convolutions) {
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 700;
    for (bool cl : {false, true}) {
      check_case({"1x1 37->21 bias", 3, 37, 5, 7, 21, 1, 1, {1, 1}, {0, 0}, "", {1, 1}, 1, true, cl, f32}, seed += 10);
      check_case({"1x1 48->40 bf16", 2, 48, 9, 6, 40, 1, 1, {1, 1}, {0, 0}, "", {1, 1}, 1, false, cl, DType::bf16},
                 seed += 10);
      check_case({"1x1 batch 1 20->33", 1, 20, 6, 5, 33, 1, 1, {1, 1}, {0, 0}, "", {1, 1}, 1, true, cl, f32}, seed += 10);
      Case g{"1x1 24->18 grad in the other format", 2, 24, 4, 6, 18, 1, 1, {1, 1}, {0, 0}, "", {1, 1}, 1, true, cl, f32};
      g.grad_other_format = true;
      check_case(g, seed += 10);
      Case t{"transposed 1x1 24->18", 2, 24, 5, 3, 18, 1, 1, {1, 1}, {0, 0}, "", {1, 1}, 1, true, cl, f32};
      t.transposed = true;
      check_case(t, seed += 10);
    }
    check_case({"1x1 s2 32->24", 2, 32, 7, 8, 24, 1, 1, {2, 2}, {0, 0}, "", {1, 1}, 1, true, true, f32}, seed += 10);
    check_case({"1x1 groups 2 32->24", 2, 32, 5, 5, 24, 1, 1, {1, 1}, {0, 0}, "", {1, 1}, 2, true, true, f32}, seed += 10);
    check_case({"1x1 16->20 f64", 2, 16, 3, 5, 20, 1, 1, {1, 1}, {0, 0}, "", {1, 1}, 1, true, true, DType::f64},
               seed += 10);
    // fp32 with tf32 (the default) and with matmul's own tf32 switch on while the conv's is off:
    // the 1x1 weight gradient must not take matmul's precision.
    Case a{"1x1 40->24 tf32", 2, 40, 6, 7, 24, 1, 1, {1, 1}, {0, 0}, "", {1, 1}, 1, true, true, f32};
    a.tf32 = true;
    check_case(a, seed += 10);
    struct Restore {
      ~Restore() { ops::set_float32_matmul_precision("highest"); }
    } restore;
    ops::set_float32_matmul_precision("high");
    check_case({"1x1 40->24 fp32 beside matmul's tf32", 2, 40, 6, 7, 24, 1, 1, {1, 1}, {0, 0}, "", {1, 1}, 1, true, true,
                f32},
               seed += 10);
  });
}

// set_conv_allow_tf32: on by default (PyTorch's cudnn.allow_tf32); fp32 3x3 convolutions with it
// on, forward and both gradients (a GPU multiplies in tf32, the CPU in fp32).
BOOST_AUTO_TEST_CASE(conv_tf32) {
  BOOST_TEST(ops::get_conv_allow_tf32());
  {
    AllowTf32 off(false);
    BOOST_TEST(!ops::get_conv_allow_tf32());
  }
  BOOST_TEST(ops::get_conv_allow_tf32());
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 800;
    for (bool cl : {false, true}) {
      Case a{"20->18 k3 s1 p1 tf32", 2, 20, 7, 6, 18, 3, 3, {1, 1}, {1, 1}, "", {1, 1}, 1, true, cl, f32};
      a.tf32 = true;
      check_case(a, seed += 10);
      Case b{"17->33 k3 s2 p1 tf32", 2, 17, 9, 8, 33, 3, 3, {2, 2}, {1, 1}, "", {1, 1}, 1, true, cl, f32};
      b.tf32 = true;
      check_case(b, seed += 10);
    }
  });
}

BOOST_AUTO_TEST_CASE(conv1d_cases) {
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 200;
    Case a{"conv1d 3->4 k3 s2 p1", 2, 3, 1, 11, 4, 1, 3, {1, 2}, {0, 1}, "", {1, 1}, 1, true, false, f32};
    a.one_d = true;
    check_case(a, seed += 10);
    Case b{"conv1d 4->6 k4 same d2 groups 2", 2, 4, 1, 9, 6, 1, 4, {1, 1}, {0, 0}, "same", {1, 2}, 2, false, false, f32};
    b.one_d = true;
    check_case(b, seed += 10);
    Case c{"conv1d 32->5 k3 valid", 1, 32, 1, 10, 5, 1, 3, {1, 1}, {0, 0}, "valid", {1, 1}, 1, true, false, DType::f64};
    c.one_d = true;
    check_case(c, seed += 10);
  });
}

BOOST_AUTO_TEST_CASE(conv_transpose2d_cases) {
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 300;
    for (bool cl : {false, true}) {
      Case a{"transposed 4->6 k3 s2 p1 op1 groups 2", 2, 4, 4, 5, 6, 3, 3, {2, 2}, {1, 1}, "", {1, 1}, 2, true, cl, f32};
      a.transposed = true, a.output_padding = {1, 1};
      check_case(a, seed += 10);
    }
    Case b{"transposed 20->5 k2x3 s(1,2) d(2,1) op(0,1)", 1, 20, 3, 3, 5, 2, 3, {1, 2}, {0, 1}, "", {2, 1}, 1, false, true, f32};
    b.transposed = true, b.output_padding = {0, 1};
    check_case(b, seed += 10);
    Case c{"transposed 3->2 k3 s3 p2 f64", 2, 3, 4, 3, 2, 3, 3, {3, 3}, {2, 2}, "", {1, 1}, 1, true, false, DType::f64};
    c.transposed = true;
    check_case(c, seed += 10);
  });
}

// Operands in different memory formats: a contiguous output gradient for a channels-last output
// (what a loss's gradient often is; converted once before the kernels), a channels-last
// gradient for a contiguous one, a channels-last weight with a contiguous input (a channels-last
// output; the input converted), for conv2d's direct and phased (stride 2) gradients and
// conv_transpose2d.
BOOST_AUTO_TEST_CASE(mixed_memory_formats) {
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 400;
    for (bool cl : {false, true}) {
      Case a{"20->18 k3 p1 grad in the other format", 2, 20, 7, 5, 18, 3, 3, {1, 1}, {1, 1}, "", {1, 1}, 1, true, cl, f32};
      a.grad_other_format = true;
      check_case(a, seed += 10);
      Case b{"17->16 k3 s2 p1 grad in the other format bf16", 2, 17, 9, 6, 16, 3, 3, {2, 2}, {1, 1}, "", {1, 1}, 1,
             true, cl, DType::bf16};
      b.grad_other_format = true;
      check_case(b, seed += 10);
      Case t{"transposed 16->6 k3 s2 p1 grad in the other format", 2, 16, 4, 5, 6, 3, 3, {2, 2}, {1, 1}, "", {1, 1}, 2,
             true, cl, f32};
      t.transposed = true, t.grad_other_format = true;
      check_case(t, seed += 10);
    }
    Case w{"18->20 k3 s(1,2) p1 channels-last weight", 2, 18, 6, 7, 20, 3, 3, {1, 2}, {1, 1}, "", {1, 1}, 2, true, false,
           f32};
    w.weight_channels_last = true;
    check_case(w, seed += 10);
    Case wt{"transposed 16->12 k2 s2 channels-last weight", 1, 16, 5, 4, 12, 2, 2, {2, 2}, {0, 0}, "", {1, 1}, 1, true,
            false, f32};
    wt.transposed = true, wt.weight_channels_last = true;
    check_case(wt, seed += 10);
  });
}

// The weight-gradient kernel with several taps a program (TAPS 2 and 4: the GPU's wide tiles for
// few-channel layers), launched directly against the float64 reference: 9 taps (the last tap
// group part padding), stride (2, 1), padding 1, dilation (2, 1), channels-last operands, the K
// split in chunks. Every backend: 20 channels in blocks of 16 (the second part padding), f32.
// On a GPU also the tuner's wgmma tiles (64 x 128 of 2 taps, 64 x 256 of 4 taps in 8 warps, and
// 4 taps of 32 channels) in bf16 and tf32, 70 channels (a partial channel block).
BOOST_AUTO_TEST_CASE(weight_gradient_tap_groups) {
  struct Launch {
    DType dtype;
    int64_t c, o;
    int bm, bn, bk, warps, taps;
    bool gpu_only;
    int tf32 = 0;  // the kernel's TF32 argument
    // grad_output's pixels read as one dim (it is channels-last), the pixel index divided by
    // magic numbers; off: (n, r, q) by division and through its four strides.
    bool gy_pixels = true, fast_divmod = true;
  };
  const Launch launches[] = {{f32, 20, 18, 32, 32, 16, 4, 2, false},          {f32, 20, 18, 32, 64, 16, 4, 4, false, 0, false, false},
                             {DType::bf16, 70, 66, 64, 128, 32, 4, 2, true},  {DType::bf16, 70, 66, 64, 256, 32, 8, 4, true},
                             {DType::bf16, 40, 64, 64, 128, 32, 4, 4, true},  {f32, 70, 66, 64, 128, 32, 4, 2, true, 1}};
  tt::for_each_backend([&](const tt::Backend& be) {
    uint32_t seed = 900;
    for (const Launch& l : launches) {
      if (l.gpu_only && !be.device.is_cuda()) continue;
      const Case k{"wgrad tap groups", 2, l.c, 7, 6, l.o, 3, 3, {2, 1}, {1, 1}, "", {2, 1}, 1, false, true, l.dtype};
      std::vector<double> hx, hw, hgy, hb;
      Tensor x = make({k.n, k.c, k.h, k.w}, l.dtype, true, seed += 10, hx);
      make({k.o, k.c, k.kh, k.kw}, l.dtype, false, seed += 10, hw);
      const int64_t oh = conv_out(k.h, k.kh, 2, 1, 2), ow = conv_out(k.w, k.kw, 1, 1, 1);
      Tensor gy = make({k.n, k.o, oh, ow}, l.dtype, true, seed += 10, hgy);
      const Ref r = reference(k, hx, hw, hb, &hgy, oh, ow, 1, 1);
      const int32_t p_total = static_cast<int32_t>(k.n * oh * ow), chunk = 2 * l.bk;
      const int32_t splits = (p_total + chunk - 1) / chunk;
      const int64_t block_c = l.bn / l.taps, col_programs = (9 + l.taps - 1) / l.taps * ((k.c + block_c - 1) / block_c);
      Tensor part = ops::full({splits, k.o, k.c, k.kh, k.kw}, NAN, f32, be.device);
      const auto dw = ops::conv_detail::divisor(ow), dh = ops::conv_detail::divisor(oh);
      ops::conv_detail::weight_grad_kernel()[{(k.o + l.bm - 1) / l.bm, col_programs, splits}](
          gy, x, part, p_total, chunk, splits, int32_t(k.h), int32_t(k.w), int32_t(oh), int32_t(ow), int32_t(k.c),
          int32_t(k.o), 3, 3, 2, 1, 1, 1, 2, 1, int32_t(gy.stride(0)), int32_t(gy.stride(1)), int32_t(gy.stride(2)),
          int32_t(gy.stride(3)), int32_t(x.stride(0)), int32_t(x.stride(1)), int32_t(x.stride(2)), int32_t(x.stride(3)),
          int32_t(k.o * k.c * 9), int32_t(gy.stride(3)), dw.magic, dw.shift, dh.magic, dh.shift, l.bm, l.bn, l.bk,
          true, l.taps, l.gy_pixels, l.fast_divmod, static_cast<int>(f32), l.tf32,
          tritium::Options{.num_warps = l.warps, .num_stages = 3, .device = be.device});
      // Exact products of the rounded inputs summed in f32; tf32 rounds them to 10 mantissa bits.
      ou::check_values(ops::sum(part, {0}), r.gw, l.tf32 ? 3e-3 : 1e-5,
                       "weight gradient, " + std::string(tritium::dtype_name(l.dtype)) + ", " + std::to_string(l.c) +
                           " channels, " + std::to_string(l.taps) + " taps of a " + std::to_string(l.bm) + " x " +
                           std::to_string(l.bn) + " tile");
    }
  });
}

// The weight-gradient kernel's division by magic numbers: (umulhi(n, magic) + n) >> shift == n / d
// for n in [0, 2^30), at every divisor up to 1100 (powers of two, 1, odd and even), large ones, and
// n near multiples of d and the top of the range.
BOOST_AUTO_TEST_CASE(divisor_magic_numbers) {
  std::vector<int64_t> ds;
  for (int64_t d = 1; d <= 1100; ++d) ds.push_back(d);
  for (int64_t d : {3136, 12544, 50176, 200704, 1048583, 1 << 29, (1 << 30) - 1}) ds.push_back(d);
  size_t bad = 0;
  for (int64_t d : ds) {
    const ops::conv_detail::Divisor v = ops::conv_detail::divisor(d);
    auto quotient = [&](int64_t n) {
      const uint64_t hi = (static_cast<uint64_t>(n) * static_cast<uint32_t>(v.magic)) >> 32;
      return static_cast<int64_t>((hi + static_cast<uint64_t>(n)) >> v.shift);
    };
    std::vector<int64_t> ns = {0, 1, d - 1, d, d + 1, (1 << 30) - 1, (1 << 30) - 2, (1 << 30) - d};
    for (int64_t k = 1; k < 2000; ++k) ns.push_back((k * 7919 * d + k) % (int64_t{1} << 30));
    for (int64_t n : ns)
      if (n >= 0 && n < (int64_t{1} << 30) && quotient(n) != n / d && bad++ < 5)
        BOOST_ERROR("divisor " << d << ": " << n << " / d gave " << quotient(n) << ", not " << n / d);
  }
  BOOST_TEST(bad == 0u);
  tt::check_throws([] { ops::conv_detail::divisor(0); }, {"divisor 0"}, "zero divisor");
}

// Outputs filled with NaN before the kernel runs: every element written, in both memory formats,
// for the direct and the transposed index rule.
BOOST_AUTO_TEST_CASE(every_output_element_written) {
  tt::for_each_backend([&](const tt::Backend& be) {
    std::vector<double> hx, hw;
    for (bool cl : {false, true})
      for (bool transposed : {false, true}) {
        Tensor x = make({2, 6, 5, 7}, f32, cl, 401, hx);
        Tensor w = make({6, 3, 3, 3}, f32, false, 402, hw);  // conv: 6 out of 3 per group; transposed: 6 in, 6 out
        ops::Conv2dGeometry geo{{2, 2}, {1, 1}, {1, 1}, 2};
        const int64_t oh = transposed ? 9 : 3, ow = transposed ? 13 : 4;
        Tensor out = ops::full({2, 6, oh, ow}, NAN, f32, be.device);
        if (cl) out = ops::contiguous(out.permute({0, 2, 3, 1})).permute({0, 3, 1, 2});
        auto ws = transposed ? ops::conv_detail::transposed_weight_strides(w, 3) : ops::conv_detail::conv_weight_strides(w, 3);
        ops::conv_detail::implicit_gemm(x, w, ws, 3, 3, Tensor(), out, geo, transposed);
        std::vector<double> got = ou::values(out);
        size_t nan = 0;
        for (double v : got) nan += std::isnan(v);
        BOOST_TEST(nan == 0u, (cl ? "channels-last " : "contiguous ") << (transposed ? "transposed" : "direct")
                                  << ": " << nan << " elements left unwritten");
      }
  });
}

// Through autograd (nn::call records one node with the fused backward) and gradcheck in f64.
BOOST_AUTO_TEST_CASE(autograd_and_gradcheck) {
  tt::for_each_backend([&](const tt::Backend&) {
    std::vector<double> hx, hw, hb;
    Tensor x = make({2, 3, 6, 5}, DType::f64, false, 501, hx).requires_grad_(true);
    Tensor w = make({4, 3, 3, 3}, DType::f64, false, 502, hw).requires_grad_(true);
    Tensor b = make({4}, DType::f64, false, 503, hb).requires_grad_(true);
    Tensor y = tritium::conv2d(x, w, b, {2, 1}, 1);
    tritium::sum(y).backward();
    Case k{"autograd", 2, 3, 6, 5, 4, 3, 3, {2, 1}, {1, 1}, "", {1, 1}, 1, true, false, DType::f64};
    std::vector<double> ones(size_t(y.numel()), 1.0);
    Ref r = reference(k, hx, hw, hb, &ones, y.size(2), y.size(3), 1, 1);
    ou::check_values(x.grad(), r.gx, 1e-12, "autograd grad_input");
    ou::check_values(w.grad(), r.gw, 1e-12, "autograd grad_weight");
    ou::check_values(b.grad(), r.gb, 1e-12, "autograd grad_bias");

    Tensor xt = make({1, 4, 3, 3}, DType::f64, false, 504, hx).requires_grad_(true);
    Tensor wt = make({4, 2, 2, 3}, DType::f64, false, 505, hw).requires_grad_(true);
    BOOST_TEST(tritium::autograd::gradcheck(
        [](const tritium::autograd::tensor_list& in) { return tritium::conv_transpose2d(in[0], in[1], {}, {2, 1}, {0, 1}, {1, 0}, 2); },
        {xt, wt}));
    Tensor x1 = make({2, 2, 6}, DType::f64, false, 506, hx).requires_grad_(true);
    Tensor w1 = make({2, 1, 2}, DType::f64, false, 507, hw).requires_grad_(true);
    BOOST_TEST(tritium::autograd::gradcheck(
        [](const tritium::autograd::tensor_list& in) { return tritium::conv1d(in[0], in[1], {}, {1}, "same", {2}, 2); },
        {x1, w1}));
  });
}

BOOST_AUTO_TEST_CASE(modules) {
  tt::for_each_backend([&](const tt::Backend& be) {
    tritium::ops::Generator gen(7);
    nn::Conv2d conv(3, 16, 3, 1, 1, 1, 1, true, "zeros", gen);
    BOOST_TEST(conv.str() == "Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))");
    auto params = conv.named_parameters();
    BOOST_TEST_REQUIRE(params.size() == 2u);
    BOOST_TEST(params[0].first == "weight");
    BOOST_TEST(params[1].first == "bias");
    BOOST_TEST((conv.weight.shape() == Shape{16, 3, 3, 3}));
    // kaiming_uniform_(a = sqrt(5)): uniform in +-1/sqrt(fan_in), fan_in = 3 * 3 * 3; the bias too.
    const double bound = 1 / std::sqrt(27.0);
    for (const Tensor& p : {conv.weight, conv.bias}) {
      double lo = 1, hi = -1;
      for (double v : ou::values(p)) lo = std::min(lo, v), hi = std::max(hi, v);
      BOOST_TEST((lo >= -bound && hi <= bound), "initial values within +-1/sqrt(fan_in)");
      if (p.numel() > 100) BOOST_TEST((lo < -0.8 * bound && hi > 0.8 * bound), "initial values fill the range");
    }
    conv.to(be.device);
    std::vector<double> hx;
    Tensor x = make({2, 3, 7, 6}, f32, true, 601, hx);
    Tensor y = conv(x);
    BOOST_TEST((y.shape() == Shape{2, 16, 7, 6}));
    Tensor ref = ops::conv2d(x, conv.weight.detach(), conv.bias.detach(), {1}, 1, {1}, 1);
    ou::check_values(y, ou::values(ref), 1e-6, "Conv2d forward = conv2d");
    tritium::sum(y).backward();
    BOOST_TEST(conv.weight.grad().defined());
    BOOST_TEST(conv.bias.grad().defined());

    nn::Conv2d c2(4, 16, {3, 5}, 2, "valid", {2, 1}, 2, false, "zeros", gen);
    BOOST_TEST(c2.str() == "Conv2d(4, 16, kernel_size=(3, 5), stride=(2, 2), padding=valid, dilation=(2, 1), groups=2, bias=False)");
    BOOST_TEST(c2.named_parameters().size() == 1u);
    nn::Conv1d c1(3, 16, 3, 1, 0, 1, 1, true, "zeros", gen);
    BOOST_TEST(c1.str() == "Conv1d(3, 16, kernel_size=(3,), stride=(1,))");
    BOOST_TEST((c1.weight.shape() == Shape{16, 3, 3}));
    nn::ConvTranspose2d ct(4, 6, 3, 2, 0, 1, 2, true, 1, "zeros", gen);
    BOOST_TEST(ct.str() == "ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1), groups=2)");
    BOOST_TEST((ct.weight.shape() == Shape{4, 3, 3, 3}));
    BOOST_TEST((ct.bias.shape() == Shape{6}));
    ct.to(be.device);
    Tensor yt = ct(make({1, 4, 3, 4}, f32, false, 602, hx));
    BOOST_TEST((yt.shape() == Shape{1, 6, 8, 10}));

    tt::check_throws([&] { nn::Conv2d(4, 6, 3, 1, 0, 1, 4); }, {"Conv2d", "out_channels must be divisible by groups"});
    tt::check_throws([&] { nn::Conv2d(4, 6, 3, 1, 0, 1, 3); }, {"Conv2d", "in_channels must be divisible by groups"});
    tt::check_throws([&] { nn::Conv2d(4, 6, 3, 1, 0, 1, 1, true, "foo"); }, {"padding_mode must be one of", "'foo'"});
    tt::check_throws([&] { nn::Conv2d(4, 6, 3, 1, 0, 1, 1, true, "reflect"); }, {"padding_mode='reflect'", "not supported"});
    tt::check_throws([&] { nn::Conv2d(4, 6, 3, 2, "same"); }, {"padding='same' is not supported for strided convolutions"});
    tt::check_throws([&] { nn::Conv2d(4, 6, 3, 1, "full"); }, {"Invalid padding string 'full'"});
    tt::check_throws([&] { nn::Conv2d(4, 6, {3, 3, 3}); }, {"expected a list of 2 values"});
  });
}

// PyTorch's conditions and words for bad arguments.
BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    std::vector<double> h;
    Tensor x = make({2, 4, 5, 5}, f32, false, 701, h);
    Tensor w = make({6, 2, 3, 3}, f32, false, 702, h);
    Tensor w4 = make({6, 4, 3, 3}, f32, false, 703, h);
    tt::check_throws([&] { ops::conv2d(x, w, {}, {1}, 0, {1}, 1); },
                     {"conv2d", "Given groups=1, weight of size [6, 2, 3, 3], expected input[2, 4, 5, 5] to have 2 channels, but got 4 channels instead"});
    tt::check_throws([&] { ops::conv2d(x, w4, {}, {1}, 0, {1}, 3); }, {"Given groups=3", "to have 12 channels"});
    tt::check_throws([&] { ops::conv2d(x, make({7, 2, 3, 3}, f32, false, 704, h), {}, {1}, 0, {1}, 2); },
                     {"expected weight to be divisible by 2 at dimension 0"});
    tt::check_throws([&] { ops::conv2d(x, make({6, 4, 7, 7}, f32, false, 705, h), {}, {1}, 0, {1}, 1); },
                     {"Calculated padded input size per channel: (5 x 5). Kernel size: (7 x 7). Kernel size can't be greater than actual input size"});
    tt::check_throws([&] { ops::conv2d(x, w4, {}, {1}, 0, {3}, 1); }, {"Kernel size: (7 x 7)"});
    tt::check_throws([&] { ops::conv2d(x, make({6, 4, 3}, f32, false, 706, h), {}, {1}, 0, {1}, 1); },
                     {"conv2d", "expected weight to be 4-dimensional", "[6, 4, 3]"});
    tt::check_throws([&] { ops::conv2d(x, w4, {}, {2}, "same", {1}, 1); },
                     {"padding='same' is not supported for strided convolutions"});
    tt::check_throws([&] { ops::conv2d(x, w4, {}, {1}, "foo", {1}, 1); }, {"Invalid padding string: 'foo'"});
    tt::check_throws([&] { ops::conv2d(x, w4, make({5}, f32, false, 707, h), {1}, 0, {1}, 1); },
                     {"expected bias to be 1-dimensional with 6 elements, but got bias of size [5]"});
    tt::check_throws([&] { ops::conv2d(x, w4.to(DType::f64), {}, {1}, 0, {1}, 1); },
                     {"Input type (f32) and weight type (f64) should be the same"});
    tt::check_throws([&] { ops::conv2d(x, w4, {}, {0}, 0, {1}, 1); }, {"non-positive stride is not supported"});
    tt::check_throws([&] { ops::conv2d(x, w4, {}, {1}, -1, {1}, 1); }, {"negative padding is not supported"});
    tt::check_throws([&] { ops::conv2d(x, w4, {}, {1}, 0, {0}, 1); }, {"non-positive dilation is not supported"});
    tt::check_throws([&] { ops::conv2d(x, w4, {}, {1}, 0, {1}, 0); }, {"non-positive groups is not supported"});
    tt::check_throws([&] { ops::conv2d(x, w4, {}, {1, 1, 1}, 0, {1}, 1); },
                     {"expected stride to be a single integer value or a list of 2 values"});
    tt::check_throws([&] { ops::conv2d(make({4, 5}, f32, false, 708, h), w4, {}, {1}, 0, {1}, 1); },
                     {"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [4, 5]"});
    tt::check_throws([&] { ops::conv1d(make({2, 4, 5}, f32, false, 709, h), make({6, 4, 7}, f32, false, 710, h), {}, {1}, 0, {1}, 1); },
                     {"conv1d", "Calculated padded input size per channel: (5). Kernel size: (7)"});
    tt::check_throws([&] { ops::conv1d(make({2, 4, 5}, f32, false, 711, h), w4, {}, {1}, 0, {1}, 1); },
                     {"conv1d", "expected weight to be 3-dimensional"});
    Tensor wt = make({4, 3, 3, 3}, f32, false, 712, h);
    tt::check_throws([&] { ops::conv_transpose2d(x, wt, {}, {1}, {0}, {1}, 1, {1}); },
                     {"output padding must be smaller than either stride or dilation"});
    tt::check_throws([&] { ops::conv_transpose2d(x, make({5, 3, 3, 3}, f32, false, 713, h), {}, {1}, {0}, {0}, 1, {1}); },
                     {"Given transposed=1, weight of size [5, 3, 3, 3], expected input[2, 4, 5, 5] to have 5 channels, but got 4 channels instead"});
    tt::check_throws([&] { ops::conv_transpose2d(x, wt, {}, {1}, {4}, {0}, 1, {1}); }, {"conv_transpose2d", "too small"});
    // An empty batch is no error (PyTorch's neither): empty output, zero weight and bias gradients.
    Tensor e = make({0, 4, 5, 5}, f32, false, 715, h);
    Tensor ye = ops::conv2d(e, w4, make({6}, f32, false, 716, h), {1}, 1, {1}, 1);
    BOOST_TEST((ye.shape() == Shape{0, 6, 5, 5}));
    ops::ConvGrads ge = ops::conv2d_backward(ye, e, w4, {1}, 1, {1}, 1);
    BOOST_TEST((ge.weight.shape() == Shape{6, 4, 3, 3}));
    BOOST_TEST((ou::values(ge.weight) == std::vector<double>(6 * 4 * 9, 0.0)), "empty batch: grad_weight is zero");
    BOOST_TEST((ou::values(ge.bias) == std::vector<double>(6, 0.0)), "empty batch: grad_bias is zero");
    // Unbatched input: a 3-D [C, H, W] gives a 3-D output.
    Tensor y = ops::conv2d(make({4, 5, 5}, f32, false, 714, h), w4, {}, {1}, 1, {1}, 1);
    BOOST_TEST((y.shape() == Shape{6, 5, 5}));
  });
}

BOOST_AUTO_TEST_SUITE_END()
