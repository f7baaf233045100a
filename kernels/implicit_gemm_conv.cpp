// implicit_gemm_conv: FlagGems' 2-D convolution forward, an implicit GEMM in Triton, ported from
// flagos-ai/FlagGems src/flag_gems/ops/conv2d.py (commit 24bf03cd7f4893928e9b032d3bc2be2fd056f209):
// conv2d_forward_kernel, the Conv2d.forward wrapper (shape checks, the channel padding to 16 for
// tl.dot, the output size, the grid) and conv2d's padding modes ("same", "valid", numbers), with
// the autotune configs of src/flag_gems/runtime/backend/_nvidia/tune_configs.yaml (commit
// 01bfbda46015af7741f3146f268fe83efc28d72b: conv2d_forward, 20 configs; the Hopper file has no
// conv2d entry) and the original's key.
//
// Each program computes a BLOCK_NI_HO_WO x BLOCK_CO tile of the output viewed as the GEMM
// [N * H_out * W_out, C_out / groups] (one group per program_id(2)): its K loop walks the
// kernel's (h, w) taps times BLOCK_CI channel blocks, gathering the input tile of each tap with
// padding masks (im2col on the fly) and multiplying it by the weight tile with tl.dot
// (allow_tf32=False: exact fp32 products), then adds the bias and stores with the output's strides.
//
// Deviations:
//  - ACCUM_DTYPE (a tl.dtype constexpr: fp64 for fp64 inputs, else fp32) is an int meta-parameter
//    holding the DType: Tritium's meta-parameters are numbers.
//  - `allow_tf32=False` is spelt input_precision = "ieee" (Triton 3.6's meaning of it).
//  - On the CPU the config list is one 32 x 32 x 32 tile (one core runs a program; num_warps /
//    num_stages mean nothing there); on CUDA it is FlagGems' list. FlagGems' @libentry() wrapper
//    and the "auto-adjusted block size" the wrapper's comments mention (BLOCK_CI shrunk to the
//    channels) belong to FlagGems' runtime, not to the kernel, and are not ported.
//  - Only the forward is ported: Conv2d.backward (the input gradient through this kernel, the
//    weight gradient through conv2d_backward_kernel_weight) is not.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "autotune/autotuner.h"
#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "implicit_gemm_conv_kernel.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::Config;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using tl::_;
using tl::None;
using P = tl::ptr<tl::any>;

// Determines the output size of a 2D convolution operation.
int64_t conv2d_output_size(int64_t in_size, int64_t kernel_size, int64_t stride, int64_t padding, int64_t dilation) {
  return (in_size + 2 * padding - dilation * (kernel_size - 1) - 1) / stride + 1;
}

// runtime.get_tuned_config("conv2d_forward") on NVIDIA GPUs.
std::vector<Config> get_cuda_configs() {
  auto c = [](int m, int co, int ci, int warps, int stages) {
    return Config(Meta{{"BLOCK_NI_HO_WO", m}, {"BLOCK_CO", co}, {"BLOCK_CI", ci}}, warps, stages);
  };
  return {c(32, 32, 32, 4, 2),   c(64, 32, 32, 4, 2),   c(64, 64, 32, 4, 2),   c(128, 32, 32, 4, 2),
          c(128, 64, 32, 4, 2),  c(128, 128, 32, 4, 2), c(32, 32, 32, 4, 3),   c(64, 32, 32, 4, 3),
          c(64, 64, 32, 4, 3),   c(128, 32, 32, 4, 3),  c(128, 64, 32, 4, 3),  c(128, 128, 32, 4, 3),
          c(128, 256, 32, 8, 3), c(256, 128, 32, 8, 3), c(256, 64, 32, 4, 4),  c(64, 256, 32, 4, 4),
          c(128, 128, 32, 4, 4), c(64, 128, 32, 4, 4),  c(128, 32, 32, 4, 4),  c(64, 32, 32, 2, 5)};
}

// The CPU backend: a program is one core's work.
std::vector<Config> get_cpu_configs() {
  return {Config(Meta{{"BLOCK_NI_HO_WO", 32}, {"BLOCK_CO", 32}, {"BLOCK_CI", 32}}, 4, 1)};
}

using tritium_ports::implicit_gemm_conv::conv2d_forward_kernel;

// @triton.autotune(configs=runtime.get_tuned_config("conv2d_forward"), key=[...]).
tritium::Autotuner& tuner(const tritium::Device& device) {
  auto make = [](const tritium::Device& d) {
    tritium::AutotuneOptions options;
    options.key = {"in_n",          "weight_c",      "input_height",   "input_width",   "out_c",
                   "out_height",    "out_width",     "weight_height",  "weight_width",  "stride_height",
                   "stride_width",  "padding_height", "padding_width", "groups"};
    return tritium::autotune(conv2d_forward_kernel, d.is_cuda() ? get_cuda_configs() : get_cpu_configs(), options);
  };
  if (device.is_cpu()) {
    static tritium::Autotuner cpu = make(tritium::Device::cpu());
    return cpu;
  }
  static tritium::Autotuner cuda = make(tritium::Device::cuda());
  return cuda;
}

bool g_poison = false;  // the check fills the output with NaN before the launch

// Zero-pads dim 1 of a 4-D tensor from c to c + pad (torch.nn.functional.pad(x, (0, 0, 0, 0, 0, pad))).
Tensor pad_channels(const Tensor& x, int64_t pad) {
  Tensor out = tritium::ops::zeros({x.size(0), x.size(1) + pad, x.size(2), x.size(3)}, x.dtype(), x.device());
  Tensor head = out.slice(1, 0, x.size(1));
  tritium::ops::copy_(head, x);
  return out;
}

// Conv2d.forward(input, weight, bias, stride, padding, dilation, groups).
Tensor conv2d_forward(Tensor input, Tensor weight, const Tensor& bias, std::pair<int64_t, int64_t> stride,
                      std::pair<int64_t, int64_t> padding, std::pair<int64_t, int64_t> dilation, int64_t groups) {
  if (weight.dim() != 4) tritium::fail("conv2d: Weights must be 4D, received shape {}", weight.str());
  if (bias.defined() && bias.dim() != 1) tritium::fail("conv2d: Bias must be 1D, received shape {}", bias.str());
  if (input.dim() != 4 || input.size(1) != groups * weight.size(1))
    tritium::fail("conv2d: Incompatible input ({}) and weights ({}) shape with {} groups", input.str(), weight.str(), groups);
  if (bias.defined() && weight.size(0) != bias.size(0))
    tritium::fail("conv2d: Incompatible weights ({}) and bias ({}) shape", weight.str(), bias.str());
  if (input.dtype() != weight.dtype() || (bias.defined() && bias.dtype() != input.dtype()))
    tritium::fail("conv2d: input {}, weight {} and bias must have one dtype", input.str(), weight.str());
  const auto [stride_height, stride_width] = stride;
  const auto [padding_height, padding_width] = padding;
  const auto [dilation_height, dilation_width] = dilation;

  const int64_t in_n = input.size(0), input_height = input.size(2), input_width = input.size(3);
  const int64_t out_c = weight.size(0), weight_height = weight.size(2), weight_width = weight.size(3);
  int64_t weight_c = weight.size(1);

  // Triton tl.dot requires K >= 16. The K dimension in conv2d im2col matmul is BLOCK_CI which
  // tiles over weight_c. Pad input/weight channels to 16 when weight_c < 16.
  const int64_t _MIN_DOT_K = 16;
  if (weight_c < _MIN_DOT_K) {
    const int64_t pad_c = _MIN_DOT_K - weight_c;
    if (groups == 1) {
      input = pad_channels(input, pad_c);  // pad channel dim at the end
    } else {
      // For grouped conv, must pad each group's channels independently: (N, groups, weight_c, H, W).
      Tensor padded = tritium::ops::zeros({in_n, groups * (weight_c + pad_c), input_height, input_width}, input.dtype(), input.device());
      for (int64_t g = 0; g < groups; ++g) {
        Tensor dst = padded.slice(1, g * (weight_c + pad_c), g * (weight_c + pad_c) + weight_c);
        tritium::ops::copy_(dst, input.slice(1, g * weight_c, (g + 1) * weight_c));
      }
      input = padded;
    }
    // Pad weight: (out_c, weight_c, kH, kW) -> (out_c, weight_c+pad_c, kH, kW)
    weight = pad_channels(weight, pad_c);
    weight_c = weight_c + pad_c;
  }

  const int64_t out_height = conv2d_output_size(input_height, weight_height, stride_height, padding_height, dilation_height);
  const int64_t out_width = conv2d_output_size(input_width, weight_width, stride_width, padding_width, dilation_width);

  const DType output_dtype = input.dtype();
  Tensor output = g_poison ? tritium::ops::full({in_n, out_c, out_height, out_width}, NAN, output_dtype, input.device())
                           : Tensor::empty({in_n, out_c, out_height, out_width}, output_dtype, input.device());
  if (output.numel() == 0) return output;

  // tl.dot accumulates in fp32 for fp16/bf16/fp32 inputs but must use fp64 for fp64 inputs.
  const DType accum_dtype = output_dtype == DType::f64 ? DType::f64 : DType::f32;

  // BLOCK_NI_HO_WO along the in_n, out_height, and out_width dimensions, BLOCK_CO along the
  // out_c, one group per cat
  auto grid = [=](const Meta& META) {
    return tritium::Grid(tritium::cdiv(in_n * out_height * out_width, META["BLOCK_NI_HO_WO"]),
                         tritium::cdiv(out_c / groups, META["BLOCK_CO"]), groups);
  };
  Tensor bias_pointer = bias.defined() ? bias : tritium::ops::zeros({out_c}, output_dtype, input.device());
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  auto I = [](int64_t v) { return static_cast<int>(v); };
  tuner(input.device())[grid](
      input, weight, output, bias_pointer, i32(in_n), i32(input_height), i32(input_width), i32(out_c), i32(out_height),
      i32(out_width), i32(input.stride(0)), i32(input.stride(1)), i32(input.stride(2)), i32(input.stride(3)),
      i32(weight.stride(0)), i32(weight.stride(1)), i32(weight.stride(2)), i32(weight.stride(3)), i32(output.stride(0)),
      i32(output.stride(1)), i32(output.stride(2)), i32(output.stride(3)), I(weight_c), I(weight_height),
      I(weight_width), I(stride_height), I(stride_width), I(padding_height), I(padding_width), I(dilation_height),
      I(dilation_width), Meta{{"groups", I(groups)}, {"ACCUM_DTYPE", static_cast<int>(accum_dtype)}});
  return output;
}

// conv2d(input, weight, bias, stride, padding, dilation, groups): padding a number or "same" /
// "valid".
using Padding = std::variant<int64_t, std::string>;
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
              const Padding& padding = int64_t{0}, int64_t dilation = 1, int64_t groups = 1) {
  if (const std::string* mode = std::get_if<std::string>(&padding)) {
    if (*mode == "same") {
      if (stride != 1)
        tritium::fail("conv2d: Doesn't support any stride values other than 1 in padding = 'same' mode, received stride value {}", stride);
      const int64_t ih = input.size(-2), iw = input.size(-1);
      const int64_t kernel_size_h = weight.size(-2), kernel_size_w = weight.size(-1);
      const int64_t padding_h =
          static_cast<int64_t>(std::ceil(double(stride * (ih - 1) + 1 + dilation * (kernel_size_h - 1) - ih) / 2));
      const int64_t padding_w =
          static_cast<int64_t>(std::ceil(double(stride * (iw - 1) + 1 + dilation * (kernel_size_w - 1) - iw) / 2));
      const int64_t oh = static_cast<int64_t>(double(ih + 2 * padding_h - dilation * (kernel_size_h - 1) - 1) / double(stride) + 1);
      const int64_t ow = static_cast<int64_t>(double(iw + 2 * padding_w - dilation * (kernel_size_w - 1) - 1) / double(stride) + 1);
      // Per-dimension padding, so asymmetric kernels pad each axis independently; the trailing
      // slice trims the extra pad that ceil() introduces on the bottom/right, matching torch's "same".
      Tensor out = conv2d_forward(input, weight, bias, {stride, stride}, {padding_h, padding_w}, {dilation, dilation}, groups);
      return out.slice(2, oh - ih, out.size(2)).slice(3, ow - iw, out.size(3));
    }
    if (*mode == "valid") return conv2d_forward(input, weight, bias, {stride, stride}, {0, 0}, {dilation, dilation}, groups);
    tritium::fail("conv2d: Unsupported padding string: {}, only'valild'/'same' are allowed.", *mode);
  }
  const int64_t p = std::get<int64_t>(padding);
  return conv2d_forward(input, weight, bias, {stride, stride}, {p, p}, {dilation, dilation}, groups);
}

// ---- the check --------------------------------------------------------------------------------

std::vector<float> host(const Tensor& t) { return t.to(DType::f32).contiguous().to_vector<float>(); }

struct Case {
  int64_t batch, input_c, input_h, input_w, out_c, kernel_h, kernel_w, stride;
  Padding padding;
  int64_t dilation, groups;
  DType dtype;
  bool bias;
};

// torch.nn.functional.conv2d in float64 from the values the kernel reads (with the padding the
// wrapper resolved: "same" is (k - 1) * d / 2 on each side for stride 1, the extra row trimmed).
double check_case(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  const int64_t wc = c.input_c / c.groups;
  std::vector<float> hx(static_cast<size_t>(c.batch * c.input_c * c.input_h * c.input_w)), hw(static_cast<size_t>(c.out_c * wc * c.kernel_h * c.kernel_w)),
      hb(static_cast<size_t>(c.out_c));
  for (auto& v : hx) v = normal(rng);
  for (auto& v : hw) v = normal(rng);
  for (auto& v : hb) v = normal(rng);
  Tensor x = Tensor::from_vector(hx, {c.batch, c.input_c, c.input_h, c.input_w}, device).to(c.dtype);
  Tensor w = Tensor::from_vector(hw, {c.out_c, wc, c.kernel_h, c.kernel_w}, device).to(c.dtype);
  Tensor b = c.bias ? Tensor::from_vector(hb, {c.out_c}, device).to(c.dtype) : Tensor();
  hx = host(x), hw = host(w);
  if (c.bias) hb = host(b);

  g_poison = true;
  Tensor out = conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
  g_poison = false;
  std::vector<float> got = host(out);

  // PyTorch's padding for the reference: "valid" 0, "same" the total (k - 1) * d split with the
  // smaller half first.
  int64_t pad_top = 0, pad_left = 0, oh, ow;
  if (const std::string* mode = std::get_if<std::string>(&c.padding)) {
    if (*mode == "same") {
      pad_top = c.dilation * (c.kernel_h - 1) / 2, pad_left = c.dilation * (c.kernel_w - 1) / 2;
      oh = c.input_h, ow = c.input_w;
    } else {
      oh = conv2d_output_size(c.input_h, c.kernel_h, c.stride, 0, c.dilation);
      ow = conv2d_output_size(c.input_w, c.kernel_w, c.stride, 0, c.dilation);
    }
  } else {
    pad_top = pad_left = std::get<int64_t>(c.padding);
    oh = conv2d_output_size(c.input_h, c.kernel_h, c.stride, pad_top, c.dilation);
    ow = conv2d_output_size(c.input_w, c.kernel_w, c.stride, pad_left, c.dilation);
  }
  if (out.size(2) != oh || out.size(3) != ow) return INFINITY;
  const int64_t ocg = c.out_c / c.groups;
  std::vector<double> ref(static_cast<size_t>(c.batch * c.out_c * oh * ow));
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t o = 0; o < c.out_c; ++o) {
      const int64_t g = o / ocg;
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          double acc = c.bias ? hb[size_t(o)] : 0.0;
          for (int64_t ci = 0; ci < wc; ++ci)
            for (int64_t kh = 0; kh < c.kernel_h; ++kh)
              for (int64_t kw = 0; kw < c.kernel_w; ++kw) {
                const int64_t iy = y * c.stride - pad_top + kh * c.dilation, ix = xo * c.stride - pad_left + kw * c.dilation;
                if (iy < 0 || iy >= c.input_h || ix < 0 || ix >= c.input_w) continue;
                acc += double(hx[size_t(((n * c.input_c + g * wc + ci) * c.input_h + iy) * c.input_w + ix)]) *
                       hw[size_t(((o * wc + ci) * c.kernel_h + kh) * c.kernel_w + kw)];
              }
          ref[size_t(((n * c.out_c + o) * oh + y) * ow + xo)] = acc;
        }
    }
  return suite::rel_error(got, ref);
}

bool check(const tritium::Device& device) {
  // Shapes from FlagGems' conv2d tests and benchmark, shrunk for the CPU: sizes off the tiles, a
  // number padding with stride 2 and dilation 2, "same" with groups and an even kernel width (the
  // wrapper trims the extra column), "valid", fewer than 16 channels (the wrapper's padding to
  // 16), fp32 (exact products: allow_tf32=False) and f16 inputs.
  std::vector<Case> cases = {
      {2, 20, 11, 9, 24, 3, 3, 2, int64_t{1}, 2, 1, DType::f32, true},
      {2, 32, 9, 9, 24, 3, 2, 1, std::string("same"), 1, 2, DType::f16, false},
      {1, 3, 13, 10, 18, 5, 3, 1, std::string("valid"), 1, 1, DType::f32, true},
  };
  if (device.is_cuda())
    cases = {{16, 32, 24, 24, 24, 3, 3, 2, int64_t{1}, 1, 1, DType::f32, true},
             {16, 32, 24, 24, 24, 3, 3, 1, std::string("same"), 2, 2, DType::f16, false},
             {4, 3, 33, 30, 40, 5, 3, 1, std::string("valid"), 1, 1, DType::bf16, true},
             {2, 64, 40, 40, 32, 3, 3, 1, int64_t{2}, 1, 1, DType::f16, true}};
  bool ok = true;
  uint32_t seed = 300;
  for (const Case& c : cases) {
    const double rel = check_case(device, c, ++seed);
    const double bound = c.dtype == DType::f32 ? 1e-5 : c.dtype == DType::f16 ? 1e-3 : 1e-2;
    const std::string pad = std::holds_alternative<int64_t>(c.padding) ? std::to_string(std::get<int64_t>(c.padding))
                                                                       : std::get<std::string>(c.padding);
    ok = suite::report("implicit_gemm_conv", device, rel, bound,
                       fmt::format("({}x{}x{}x{} k{}x{} co{} s{} p={} d{} g{} {})", c.batch, c.input_c, c.input_h,
                                   c.input_w, c.kernel_h, c.kernel_w, c.out_c, c.stride, pad, c.dilation, c.groups,
                                   tritium::dtype_name(c.dtype))) &&
         ok;
  }
  return ok;
}

// ---- the benchmark ----------------------------------------------------------------------------

// FlagGems' benchmark/test_convolution_perf.py Conv2DBenchmark shapes (batch, input_c, input_h,
// input_w, out_c, kernel_h, kernel_w, stride, padding, groups), bias None, f16; small ones on the
// CPU.
std::vector<suite::Row> bench(const tritium::Device& device) {
  struct Shape {
    int64_t batch, input_c, input_h, input_w, out_c, kernel_h, kernel_w, stride, padding, groups;
  };
  std::vector<Shape> shapes = {{32, 64, 128, 128, 32, 3, 3, 1, 2, 1}, {32, 64, 210, 210, 16, 5, 5, 2, 1, 1},
                               {16, 32, 24, 24, 24, 3, 3, 2, 2, 2}};
  if (device.is_cpu()) shapes = {{4, 32, 32, 32, 32, 3, 3, 1, 1, 1}};
  std::vector<suite::Row> rows;
  auto& gen = tritium::ops::default_generator();
  for (const Shape& s : shapes) {
    Tensor x = tritium::ops::randn({s.batch, s.input_c, s.input_h, s.input_w}, gen, DType::f32, device).to(DType::f16);
    Tensor w = tritium::ops::randn({s.out_c, s.input_c / s.groups, s.kernel_h, s.kernel_w}, gen, DType::f32, device).to(DType::f16);
    Tensor out;
    double ms = tritium::do_bench([&] { out = conv2d(x, w, Tensor(), s.stride, s.padding, 1, s.groups); }, device).median_ms;
    const double flops = 2.0 * double(out.numel()) * double(s.input_c / s.groups) * double(s.kernel_h * s.kernel_w);
    rows.push_back({fmt::format("N={} C={} H={} W={} K={} R={} S={} stride={} pad={} groups={} f16", s.batch, s.input_c,
                                s.input_h, s.input_w, s.out_c, s.kernel_h, s.kernel_w, s.stride, s.padding, s.groups),
                    ms, flops * 1e-12 / (ms * 1e-3), "TFLOP/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "implicit_gemm_conv",
                                    .source = "flagos-ai/FlagGems src/flag_gems/ops/conv2d.py",
                                    .category = "dot",
                                    .check = check,
                                    .bench = bench});

}  // namespace
