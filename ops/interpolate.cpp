// interpolate (nearest, bilinear) and its backward (ops/interpolate.h).
//
// One kernel does both directions: one program per output row of one image and a [columns,
// channels] tile of lanes (wide along the contiguous dim), each lane computing its source index
// (nearest) or two source indices and weights per dim (bilinear) with PyTorch's formulas; input
// and output are read and written through their strides. Forward: the lanes read their sources
// and store. Backward: the lanes read the output gradient and add it, weighted, into a zeroed
// contiguous gradient of the input in the math type with atomic adds, since several outputs read
// one input element (PyTorch's CUDA kernels do the same); the sum's order, and so its last bits,
// may vary between runs on the GPU.
#include "ops/interpolate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;
using detail::shape_str;

constexpr int kBlock = 256;

Kernel& interpolate_kernel() {
  static Kernel k = tritium::kernel(
      "interpolate2d",
      [](P x, P y, tl::i64 C, tl::i64 H, tl::i64 W, tl::i64 OH, tl::i64 OW,  //
         tl::i64 xs0, tl::i64 xs1, tl::i64 xs2, tl::i64 xs3, tl::i64 ys0, tl::i64 ys1, tl::i64 ys2, tl::i64 ys3,
         tl::f64 sh, tl::f64 sw, bool BILINEAR, bool ALIGN, bool BACKWARD, int ACC, int BW, int BC) {
        const DType acc = static_cast<DType>(ACC);
        // One output row of one image per program, a [BW columns, BC channels] tile of lanes.
        auto r = tl::program_id(0).to(tl::int64);
        auto n = r / OH, oh = r % OH;
        auto ow = (tl::program_id(1).to(tl::int64) * BW + tl::arange(0, BW).to(tl::int64))(tl::_, tl::None);
        auto c = (tl::program_id(2).to(tl::int64) * BC + tl::arange(0, BC).to(tl::int64))(tl::None, tl::_);
        auto m = (ow < OW) && (c < C);
        auto i = n * ys0 + c * ys1 + oh * ys2 + ow * ys3;  // the output (gradient) element
        auto base = n * xs0 + c * xs1;
        if (!BILINEAR) {
          // floor in f32, as PyTorch's nearest_neighbor_compute_source_index (floorf(dst * scale)).
          auto src = [&](const tl::tensor& o, const tl::tensor& s, const tl::tensor& I) {
            return tl::minimum(tl::floor(o.to(tl::float32) * s.to(tl::float32)).to(tl::int64), I - 1);
          };
          auto off = base + src(oh, sh, H) * xs2 + src(ow, sw, W) * xs3;
          if (BACKWARD) tl::atomic_add(x + off, tl::load(y + i, m, 0).to(acc), m, "relaxed");
          else tl::store(y + i, tl::load(x + off, m, 0), m);
          return;
        }
        // PyTorch's area_pixel_compute_source_index and guard_index_and_lambda, in the math type.
        auto src = [&](const tl::tensor& o, const tl::tensor& s, const tl::tensor& I) {
          auto sc = s.to(acc);
          auto real = ALIGN ? sc * o.to(acc) : tl::maximum(sc * (o.to(acc) + 0.5) - 0.5, 0);
          auto i0 = tl::minimum(tl::floor(real).to(tl::int64), I - 1);
          auto l1 = tl::minimum(tl::maximum(real - i0.to(acc), 0), 1);
          auto i1 = i0 + tl::where(i0 < I - 1, 1, 0).to(tl::int64);
          return std::tuple<tl::tensor, tl::tensor, tl::tensor, tl::tensor>(i0, i1, 1 - l1, l1);
        };
        auto [h0, h1, hl0, hl1] = src(oh, sh, H);
        auto [w0, w1, wl0, wl1] = src(ow, sw, W);
        auto at = [&](const tl::tensor& h, const tl::tensor& w) { return base + h * xs2 + w * xs3; };
        if (BACKWARD) {
          auto g = tl::load(y + i, m, 0).to(acc);
          tl::atomic_add(x + at(h0, w0), g * hl0 * wl0, m, "relaxed");
          tl::atomic_add(x + at(h0, w1), g * hl0 * wl1, m, "relaxed");
          tl::atomic_add(x + at(h1, w0), g * hl1 * wl0, m, "relaxed");
          tl::atomic_add(x + at(h1, w1), g * hl1 * wl1, m, "relaxed");
          return;
        }
        auto ld = [&](const tl::tensor& h, const tl::tensor& w) { return tl::load(x + at(h, w), m, 0).to(acc); };
        auto v = hl0 * (wl0 * ld(h0, w0) + wl1 * ld(h0, w1)) + hl1 * (wl0 * ld(h1, w0) + wl1 * ld(h1, w1));
        tl::store(y + i, v, m);
      },
      {"x",   "y",   "C",   "H",   "W",   "OH",  "OW",  "xs0",      "xs1",   "xs2", "xs3", "ys0",
       "ys1", "ys2", "ys3", "sh",  "sw",  "BILINEAR", "ALIGN", "BACKWARD", "ACC", "BW",  "BC"});
  return k;
}

// The scale the kernels multiply a destination index by, computed in the type PyTorch uses (f32
// for nearest; the math type for bilinear) and passed as an exact double.
double kernel_scale(InterpolateMode mode, int64_t in, int64_t out, std::optional<double> scale, bool align,
                    DType acc) {
  if (mode == InterpolateMode::nearest) {
    if (out == in) return 1.0;
    if (out == 2 * in) return 0.5;  // PyTorch's exact shift for a factor of 2
    return scale && *scale > 0 ? static_cast<float>(1.0 / *scale)
                               : static_cast<float>(in) / static_cast<float>(out);
  }
  auto compute = [&](auto zero) -> double {
    using T = decltype(zero);
    if (align) return out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
    return scale && *scale > 0 ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / static_cast<T>(out);
  };
  return acc == DType::f64 ? compute(0.0) : compute(0.0f);
}

struct Layout4d {
  Tensor x;  // [N, C, H, W] view (a 3-D input gets H = 1)
  bool channels_last;
};

Layout4d as_4d(const Tensor& x) {
  Tensor v = x.dim() == 3 ? x.unsqueeze(2) : x;
  int64_t C = v.size(1), H = v.size(2), W = v.size(3);
  bool cl = x.dim() == 4 && !v.is_contiguous() && v.stride(1) == 1 && v.stride(3) == C && v.stride(2) == W * C &&
            v.stride(0) == H * W * C;
  return {v, cl};
}

void launch(const Tensor& x4, const Tensor& y4, InterpolateMode mode, const InterpolatePlan& plan, bool align,
            bool channels_last, bool backward, DType acc) {
  if (y4.numel() == 0) return;
  const size_t sd = plan.output_size.size();
  int64_t C = x4.size(1), H = x4.size(2), W = x4.size(3), OH = y4.size(2), OW = y4.size(3);
  double sh = sd == 2 ? kernel_scale(mode, H, OH, plan.scales[0], align, acc) : 1.0;
  double sw = kernel_scale(mode, W, OW, plan.scales[sd - 1], align, acc);
  // The lane tile: wide in channels for channels-last data, in columns otherwise.
  int64_t bw, bc;
  if (channels_last) {
    bc = std::clamp<int64_t>(next_power_of_2(C), 2, 64);
    bw = std::clamp<int64_t>(256 / bc, 2, std::max<int64_t>(2, next_power_of_2(OW)));
  } else {
    bw = std::clamp<int64_t>(next_power_of_2(OW), 2, 128);
    bc = std::clamp<int64_t>(256 / bw, 2, std::max<int64_t>(2, next_power_of_2(C)));
  }
  interpolate_kernel()[{y4.size(0) * OH, cdiv(OW, bw), cdiv(C, bc)}](
      x4, y4, C, H, W, OH, OW, x4.stride(0), x4.stride(1), x4.stride(2), x4.stride(3), y4.stride(0), y4.stride(1),
      y4.stride(2), y4.stride(3), sh, sw, mode == InterpolateMode::bilinear, align, backward, static_cast<int>(acc),
      static_cast<int>(bw), static_cast<int>(bc));
}

Shape out_shape_4d(const Tensor& x4, const InterpolatePlan& plan) {
  return {x4.size(0), x4.size(1), plan.output_size.size() == 2 ? plan.output_size[0] : 1, plan.output_size.back()};
}

}  // namespace

InterpolateMode interpolate_mode(const std::string& name) {
  if (name == "nearest") return InterpolateMode::nearest;
  if (name == "bilinear") return InterpolateMode::bilinear;
  fail("interpolate: mode '{}' is not supported (supported: 'nearest', 'bilinear')", name);
}

InterpolatePlan interpolate_plan(const Tensor& x, InterpolateMode mode, const std::vector<int>& size,
                                 const std::vector<double>& scale_factor, std::optional<bool> align_corners) {
  const char* op = "interpolate";
  detail::check_tensors(op, {&x});
  if (x.dim() != 3 && x.dim() != 4)
    fail("{}: expected a 3-D [N, C, W] or 4-D [N, C, H, W] input, got shape {}", op, shape_str(x.shape()));
  if (mode == InterpolateMode::bilinear && x.dim() != 4)
    fail("{}: Got {}D input, but bilinear mode needs 4D input", op, x.dim());
  if (!is_float(x.dtype())) fail("{}: expected a floating-point input, got {}", op, dtype_name(x.dtype()));
  if (align_corners && mode == InterpolateMode::nearest)
    fail("{}: align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
         "trilinear",
         op);
  if (size.empty() == scale_factor.empty())
    fail("{}: {}", op, size.empty() ? "either size or scale_factor should be defined"
                                    : "only one of size or scale_factor should be defined");
  const size_t dims = static_cast<size_t>(x.dim() - 2);
  Shape spatial(x.shape().begin() + 2, x.shape().end());
  InterpolatePlan p;
  p.scales.assign(dims, std::nullopt);
  if (!size.empty()) {
    if (size.size() != 1 && size.size() != dims)
      fail("{}: Input and output must have the same number of spatial dimensions, but got input with spatial "
           "dimensions of {} and output size of {} values",
           op, shape_str(spatial), size.size());
    for (size_t d = 0; d < dims; ++d) p.output_size.push_back(size.size() == 1 ? size[0] : size[d]);
  } else {
    if (scale_factor.size() != 1 && scale_factor.size() != dims)
      fail("{}: Input and scale_factor must have the same number of spatial dimensions, but got input with spatial "
           "dimensions of {} and scale_factor of {} values",
           op, shape_str(spatial), scale_factor.size());
    for (size_t d = 0; d < dims; ++d) {
      double s = scale_factor.size() == 1 ? scale_factor[0] : scale_factor[d];
      p.scales[d] = s;
      p.output_size.push_back(static_cast<int64_t>(std::floor(static_cast<double>(spatial[d]) * s)));
    }
  }
  bool positive = true;
  for (size_t d = 0; d < dims; ++d) positive = positive && spatial[d] > 0 && p.output_size[d] > 0;
  if (!positive)
    fail("{}: Input and output sizes should be greater than 0, but got input {} output {}", op, shape_str(spatial),
         shape_str(p.output_size));
  return p;
}

Tensor interpolate(const Tensor& x, InterpolateMode mode, const InterpolatePlan& plan, bool align_corners) {
  detail::check_tensors("interpolate", {&x});
  if (plan.output_size.size() + 2 != static_cast<size_t>(x.dim()))
    fail("interpolate: the plan has {} spatial sizes for an input of shape {}", plan.output_size.size(),
         shape_str(x.shape()));
  Layout4d in = as_4d(x);
  Shape out4 = out_shape_4d(in.x, plan);
  Tensor y = in.channels_last ? Tensor::empty({out4[0], out4[2], out4[3], out4[1]}, x.dtype(), x.device()).permute({0, 3, 1, 2})
                              : Tensor::empty(out4, x.dtype(), x.device());
  launch(in.x, y, mode, plan, align_corners, in.channels_last, false, detail::math_type(x.dtype()));
  return x.dim() == 3 ? y.squeeze(2) : y;
}

Tensor interpolate_backward(const Tensor& grad, const Tensor& x, InterpolateMode mode, const InterpolatePlan& plan,
                            bool align_corners) {
  const char* op = "interpolate_backward";
  detail::check_tensors(op, {&grad, &x});
  Layout4d in = as_4d(x);
  Shape out4 = out_shape_4d(in.x, plan);
  Shape want{out4[0], out4[1]};
  if (x.dim() == 4) want.push_back(out4[2]);
  want.push_back(out4[3]);
  if (grad.shape() != want)
    fail("{}: grad_output has shape {}, expected the forward's output shape {}", op, shape_str(grad.shape()),
         shape_str(want));
  const DType acc = detail::math_type(x.dtype());
  Tensor dx = zeros(in.x.shape(), acc, x.device());
  Tensor g = x.dim() == 3 ? grad.unsqueeze(2) : grad;  // read through its strides
  launch(dx, g, mode, plan, align_corners, false, true, acc);
  dx = to_dtype(dx, x.dtype());
  return x.dim() == 3 ? dx.squeeze(2) : dx;
}

}  // namespace tritium::ops
