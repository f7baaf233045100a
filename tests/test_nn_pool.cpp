// Pooling (max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool2d) and interpolate (nearest, bilinear)
// on every backend: values, indices and input gradients against float64 host references written
// here (windows walked output by output, gradients scattered back: the kernels gather instead),
// over every parameter combination, channels-last and strided inputs, f32/f64/f16, 1-D and
// unbatched inputs, PyTorch's tie and NaN rules, the modules and their repr, and the errors.
#include <cmath>
#include <limits>

#include "nn/autograd.h"
#include "nn/pooling.h"
#include "ops/interpolate.h"
#include "ops/pool.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

namespace {

using Vec = std::vector<double>;

struct Dims4 {
  int64_t N, C, H, W;
  int64_t at(int64_t n, int64_t c, int64_t h, int64_t w) const { return ((n * C + c) * H + h) * W + w; }
};

struct Win {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
  bool ceil = false;
};

// PyTorch's documented output size (torch.nn.MaxPool2d's formula, with ceil_mode's rule that the
// last window starts inside the input or the left padding).
int64_t out_len(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  double span = static_cast<double>(in + 2 * p - d * (k - 1) - 1) / static_cast<double>(s);
  int64_t o = static_cast<int64_t>(ceil ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil && (o - 1) * s >= in + p) --o;
  return o;
}

struct MaxRef {
  Vec y, idx, dx;
};

MaxRef max_ref(const Vec& x, const Dims4& d, const Win& w, const Vec& dy) {
  int64_t OH = out_len(d.H, w.kh, w.sh, w.ph, w.dh, w.ceil), OW = out_len(d.W, w.kw, w.sw, w.pw, w.dw, w.ceil);
  Dims4 o{d.N, d.C, OH, OW};
  MaxRef r{Vec(static_cast<size_t>(d.N * d.C * OH * OW)), Vec(static_cast<size_t>(d.N * d.C * OH * OW)),
           Vec(x.size(), 0.0)};
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t c = 0; c < d.C; ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double best = -INFINITY;
          int64_t arg = -1;
          for (int64_t i = 0; i < w.kh; ++i)
            for (int64_t j = 0; j < w.kw; ++j) {
              int64_t h = oh * w.sh - w.ph + i * w.dh, ww = ow * w.sw - w.pw + j * w.dw;
              if (h < 0 || h >= d.H || ww < 0 || ww >= d.W) continue;
              double v = x[static_cast<size_t>(d.at(n, c, h, ww))];
              if (arg < 0 || v > best || std::isnan(v)) best = v, arg = h * d.W + ww;
            }
          size_t k = static_cast<size_t>(o.at(n, c, oh, ow));
          r.y[k] = best;
          r.idx[k] = static_cast<double>(arg);
          if (!dy.empty()) r.dx[static_cast<size_t>(d.at(n, c, 0, 0) + arg)] += dy[k];
        }
  return r;
}

struct AvgRef {
  Vec y, dx;
};

AvgRef avg_ref(const Vec& x, const Dims4& d, const Win& w, bool count_pad, int64_t divisor, const Vec& dy) {
  int64_t OH = out_len(d.H, w.kh, w.sh, w.ph, 1, w.ceil), OW = out_len(d.W, w.kw, w.sw, w.pw, 1, w.ceil);
  Dims4 o{d.N, d.C, OH, OW};
  AvgRef r{Vec(static_cast<size_t>(d.N * d.C * OH * OW)), Vec(x.size(), 0.0)};
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t c = 0; c < d.C; ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          // The window with its padding (clipped at the padded edge) and inside the input.
          int64_t h0 = oh * w.sh - w.ph, w0 = ow * w.sw - w.pw;
          int64_t h1 = std::min(h0 + w.kh, d.H + w.ph), w1 = std::min(w0 + w.kw, d.W + w.pw);
          int64_t padded = (h1 - h0) * (w1 - w0);
          int64_t a0 = std::max<int64_t>(h0, 0), b0 = std::max<int64_t>(w0, 0);
          int64_t a1 = std::min(h1, d.H), b1 = std::min(w1, d.W);
          int64_t inside = std::max<int64_t>(0, a1 - a0) * std::max<int64_t>(0, b1 - b0);
          double div = divisor ? divisor : count_pad ? padded : inside;
          double s = 0;
          for (int64_t h = a0; h < a1; ++h)
            for (int64_t ww = b0; ww < b1; ++ww) s += x[static_cast<size_t>(d.at(n, c, h, ww))];
          size_t k = static_cast<size_t>(o.at(n, c, oh, ow));
          r.y[k] = inside ? s / div : 0.0;
          if (!dy.empty() && inside)
            for (int64_t h = a0; h < a1; ++h)
              for (int64_t ww = b0; ww < b1; ++ww) r.dx[static_cast<size_t>(d.at(n, c, h, ww))] += dy[k] / div;
        }
  return r;
}

AvgRef adaptive_ref(const Vec& x, const Dims4& d, int64_t OH, int64_t OW, const Vec& dy) {
  Dims4 o{d.N, d.C, OH, OW};
  AvgRef r{Vec(static_cast<size_t>(d.N * d.C * OH * OW)), Vec(x.size(), 0.0)};
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t c = 0; c < d.C; ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          auto lo = [](int64_t i, int64_t in, int64_t out) { return static_cast<int64_t>(std::floor(double(i * in) / out)); };
          auto hi = [](int64_t i, int64_t in, int64_t out) { return static_cast<int64_t>(std::ceil(double((i + 1) * in) / out)); };
          int64_t a0 = lo(oh, d.H, OH), a1 = hi(oh, d.H, OH), b0 = lo(ow, d.W, OW), b1 = hi(ow, d.W, OW);
          double cnt = static_cast<double>((a1 - a0) * (b1 - b0)), s = 0;
          for (int64_t h = a0; h < a1; ++h)
            for (int64_t w = b0; w < b1; ++w) s += x[static_cast<size_t>(d.at(n, c, h, w))];
          size_t k = static_cast<size_t>(o.at(n, c, oh, ow));
          r.y[k] = s / cnt;
          if (!dy.empty())
            for (int64_t h = a0; h < a1; ++h)
              for (int64_t w = b0; w < b1; ++w) r.dx[static_cast<size_t>(d.at(n, c, h, w))] += dy[k] / cnt;
        }
  return r;
}

// Interpolation: the source taps of output index o along one dim, with weights.
struct Taps {
  int64_t i0, i1;
  double l0, l1;
};

Taps nearest_tap(int64_t o, int64_t in, int64_t out, std::optional<double> sf) {
  int64_t i;
  if (out == in) i = o;
  else if (out == 2 * in) i = o / 2;
  else {
    float scale = sf ? static_cast<float>(1.0 / *sf) : static_cast<float>(in) / static_cast<float>(out);
    i = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * scale)), in - 1);
  }
  return {i, i, 1.0, 0.0};
}

Taps linear_tap(int64_t o, int64_t in, int64_t out, std::optional<double> sf, bool align) {
  double scale = align ? (out > 1 ? double(in - 1) / double(out - 1) : 0.0) : (sf ? 1.0 / *sf : double(in) / double(out));
  double real = align ? scale * double(o) : std::max(scale * (double(o) + 0.5) - 0.5, 0.0);
  int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
  double l1 = std::clamp(real - double(i0), 0.0, 1.0);
  return {i0, i0 < in - 1 ? i0 + 1 : i0, 1.0 - l1, l1};
}

AvgRef interp_ref(const Vec& x, const Dims4& d, int64_t OH, int64_t OW, bool bilinear, std::optional<double> sh,
                  std::optional<double> sw, bool align, const Vec& dy) {
  Dims4 o{d.N, d.C, OH, OW};
  AvgRef r{Vec(static_cast<size_t>(d.N * d.C * OH * OW)), Vec(x.size(), 0.0)};
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t c = 0; c < d.C; ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          Taps th = bilinear ? linear_tap(oh, d.H, OH, sh, align) : nearest_tap(oh, d.H, OH, sh);
          Taps tw = bilinear ? linear_tap(ow, d.W, OW, sw, align) : nearest_tap(ow, d.W, OW, sw);
          size_t k = static_cast<size_t>(o.at(n, c, oh, ow));
          double v = 0;
          for (auto [h, wh] : {std::pair{th.i0, th.l0}, std::pair{th.i1, th.l1}})
            for (auto [w, ww] : {std::pair{tw.i0, tw.l0}, std::pair{tw.i1, tw.l1}}) {
              size_t src = static_cast<size_t>(d.at(n, c, h, w));
              v += wh * ww * x[src];
              if (!dy.empty()) r.dx[src] += wh * ww * dy[k];
            }
          r.y[k] = v;
        }
  return r;
}

// A random [N, C, H, W] tensor in one of three layouts: contiguous, channels-last, or transposed
// in (H, W) (a generic strided view).
enum class Layout { contiguous, channels_last, strided };

template <class T> Tensor make_input(const Dims4& d, Layout layout, uint32_t seed) {
  switch (layout) {
    case Layout::contiguous: return ou::random_tensor<T>({d.N, d.C, d.H, d.W}, seed, -2, 2);
    case Layout::channels_last: return ou::random_tensor<T>({d.N, d.H, d.W, d.C}, seed, -2, 2).permute({0, 3, 1, 2});
    case Layout::strided: return ou::random_tensor<T>({d.N, d.C, d.W, d.H}, seed, -2, 2).permute({0, 1, 3, 2});
  }
  return {};
}

const char* layout_name(Layout l) {
  return l == Layout::contiguous ? "contiguous" : l == Layout::channels_last ? "channels_last" : "strided";
}

// Channels-last strides, where they differ from contiguous ones (one channel or a 1 x 1 plane
// has both).
bool is_channels_last(const Tensor& t) {
  return t.dim() == 4 && t.stride(1) == 1 && t.size(1) > 1 && t.size(2) * t.size(3) > 1;
}
bool format_unambiguous(const Tensor& t) { return t.size(1) > 1 && t.size(2) * t.size(3) > 1; }

ops::Pool2dParams params_of(const Win& w) {
  ops::Pool2dParams p;
  p.kernel[0] = w.kh, p.kernel[1] = w.kw, p.stride[0] = w.sh, p.stride[1] = w.sw;
  p.padding[0] = w.ph, p.padding[1] = w.pw, p.dilation[0] = w.dh, p.dilation[1] = w.dw, p.ceil_mode = w.ceil;
  return p;
}

std::string win_str(const Win& w) {
  return fmt::format("k({},{}) s({},{}) p({},{}) d({},{}) ceil {}", w.kh, w.kw, w.sh, w.sw, w.ph, w.pw, w.dh, w.dw,
                     w.ceil);
}

// Every combination of kernel, stride, padding, dilation and ceil_mode that PyTorch accepts on
// a 9 x 11 plane.
std::vector<Win> windows(bool dilation) {
  std::vector<Win> out;
  for (auto [kh, kw] : {std::pair{3, 3}, std::pair{2, 3}, std::pair{4, 1}})
    for (auto [sh, sw] : {std::pair{1, 1}, std::pair{2, 3}, std::pair{3, 2}})
      for (int p : {0, 1})
        for (int d : dilation ? std::vector<int>{1, 2} : std::vector<int>{1})
          for (bool ceil : {false, true}) {
            Win w{kh, kw, sh, sw, std::min(p, kh / 2), std::min(p, kw / 2), d, d, ceil};
            out.push_back(w);
          }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_pool)

BOOST_AUTO_TEST_CASE(max_pool2d_every_combination) {
  tt::for_each_backend([&](const tt::Backend&) {
    const Dims4 d{2, 3, 9, 11};
    uint32_t seed = 1;
    for (Layout layout : {Layout::contiguous, Layout::channels_last, Layout::strided})
      for (const Win& w : windows(true)) {
        std::string what = fmt::format("{} {}", layout_name(layout), win_str(w));
        Tensor x = make_input<float>(d, layout, seed++);
        Vec xv = ou::values(x);
        auto p = params_of(w);
        auto r = ops::max_pool2d(x, p);
        Tensor dy = ou::random_tensor<float>(r.values.shape(), seed++);
        MaxRef ref = max_ref(xv, d, w, ou::values(dy));
        ou::check_values(r.values, ref.y, 0, what + " values");
        BOOST_TEST((r.indices.dtype() == DType::i64));
        BOOST_TEST(ou::values(r.indices) == ref.idx, what << " indices");
        BOOST_TEST(is_channels_last(r.values) == (layout == Layout::channels_last), what << " memory format");
        ou::check_values(ops::max_pool2d_backward(dy, x, r.indices, p), ref.dx, 1e-6, what + " dx");
      }
  });
}

BOOST_AUTO_TEST_CASE(avg_pool2d_every_combination) {
  tt::for_each_backend([&](const tt::Backend&) {
    const Dims4 d{2, 3, 9, 11};
    uint32_t seed = 100;
    for (Layout layout : {Layout::contiguous, Layout::channels_last, Layout::strided})
      for (const Win& w : windows(false))
        for (bool count_pad : {true, false})
          for (int64_t divisor : {0, 5}) {
            std::string what = fmt::format("{} {} count_include_pad {} divisor {}", layout_name(layout), win_str(w),
                                           count_pad, divisor);
            Tensor x = make_input<float>(d, layout, seed++);
            auto p = params_of(w);
            std::optional<int64_t> div = divisor ? std::optional<int64_t>(divisor) : std::nullopt;
            Tensor y = ops::avg_pool2d(x, p, count_pad, div);
            Tensor dy = ou::random_tensor<float>(y.shape(), seed++);
            AvgRef ref = avg_ref(ou::values(x), d, w, count_pad, divisor, ou::values(dy));
            ou::check_values(y, ref.y, 1e-6, what + " values");
            BOOST_TEST(is_channels_last(y) == (layout == Layout::channels_last), what << " memory format");
            ou::check_values(ops::avg_pool2d_backward(dy, x, p, count_pad, div), ref.dx, 1e-6, what + " dx");
          }
  });
}

// Strides past 4 stay run-time values in the kernels (every combination above has strides of at
// most 3, which are compile-time constants: ops/pool.cpp constant_strides); a stride of 5 or 6 on
// one axis with a constant one on the other, max and average, forward and backward.
BOOST_AUTO_TEST_CASE(strides_past_the_constant_ones) {
  tt::for_each_backend([&](const tt::Backend&) {
    const Dims4 d{2, 3, 13, 17};
    uint32_t seed = 200;
    for (Layout layout : {Layout::contiguous, Layout::channels_last})
      for (const Win& w : {Win{3, 3, 5, 6, 1, 0, 1, 1, false}, Win{2, 4, 2, 5, 0, 2, 1, 1, true},
                           Win{5, 2, 6, 1, 2, 1, 1, 1, true}}) {
        std::string what = fmt::format("{} {}", layout_name(layout), win_str(w));
        Tensor x = make_input<float>(d, layout, seed++);
        auto p = params_of(w);
        auto r = ops::max_pool2d(x, p);
        Tensor dy = ou::random_tensor<float>(r.values.shape(), seed++);
        MaxRef ref = max_ref(ou::values(x), d, w, ou::values(dy));
        ou::check_values(r.values, ref.y, 0, what + " max values");
        BOOST_TEST(ou::values(r.indices) == ref.idx, what << " max indices");
        ou::check_values(ops::max_pool2d_backward(dy, x, r.indices, p), ref.dx, 1e-6, what + " max dx");
        Tensor y = ops::avg_pool2d(x, p, true, std::nullopt);
        Tensor ady = ou::random_tensor<float>(y.shape(), seed++);
        AvgRef aref = avg_ref(ou::values(x), d, w, true, 0, ou::values(ady));
        ou::check_values(y, aref.y, 1e-6, what + " avg values");
        ou::check_values(ops::avg_pool2d_backward(ady, x, p, true, std::nullopt), aref.dx, 1e-6, what + " avg dx");
      }
  });
}

BOOST_AUTO_TEST_CASE(adaptive_avg_pool2d_sizes) {
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 300;
    for (Layout layout : {Layout::contiguous, Layout::channels_last})
      for (auto [d, oh, ow] : {std::tuple{Dims4{2, 3, 9, 11}, 4, 5}, std::tuple{Dims4{1, 5, 7, 7}, 1, 1},
                               std::tuple{Dims4{2, 2, 5, 3}, 7, 6}, std::tuple{Dims4{1, 3, 10, 13}, 3, 13}}) {
        std::string what = fmt::format("{} [{},{},{},{}] -> ({}, {})", layout_name(layout), d.N, d.C, d.H, d.W, oh, ow);
        Tensor x = make_input<float>(d, layout, seed++);
        Tensor y = ops::adaptive_avg_pool2d(x, {oh, ow});
        BOOST_TEST((y.shape() == ou::Shape{d.N, d.C, oh, ow}), what);
        Tensor dy = ou::random_tensor<float>(y.shape(), seed++);
        AvgRef ref = adaptive_ref(ou::values(x), d, oh, ow, ou::values(dy));
        ou::check_values(y, ref.y, 1e-6, what + " values");
        Tensor dx = ops::adaptive_avg_pool2d_backward(dy, x);
        ou::check_values(dx, ref.dx, 1e-6, what + " dx");
        BOOST_TEST(is_channels_last(dx) == (layout == Layout::channels_last), what << " dx memory format");
      }
    // To 1 x 1 it is a mean over the plane (and its gradient a broadcast): bf16, a plane longer
    // than a reduction tile, odd sizes, both layouts.
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
      Dims4 d{3, 5, 37, 41};
      std::string what = fmt::format("{} bf16 [3,5,37,41] -> (1, 1)", layout_name(layout));
      Tensor x = make_input<tritium::bf16_t>(d, layout, seed++);
      Tensor y = ops::adaptive_avg_pool2d(x, {1, 1});
      BOOST_TEST((y.dtype() == DType::bf16 && y.shape() == ou::Shape{3, 5, 1, 1}), what);
      Tensor dy = ops::to_dtype(ou::random_tensor<float>(y.shape(), seed++), DType::bf16);
      AvgRef ref = adaptive_ref(ou::values(x), d, 1, 1, ou::values(dy));
      ou::check_values(y, ref.y, 8e-3, what + " values");
      Tensor dx = ops::adaptive_avg_pool2d_backward(dy, x);
      BOOST_TEST((dx.dtype() == DType::bf16), what);
      ou::check_values(dx, ref.dx, 8e-3, what + " dx");
      BOOST_TEST(is_channels_last(dx) == (layout == Layout::channels_last), what << " dx memory format");
    }
    // -1 keeps the input's size (PyTorch's None); one value is both.
    Tensor x = ou::random_tensor<float>({2, 3, 6, 5}, 350);
    BOOST_TEST((ops::adaptive_avg_pool2d(x, {-1, 2}).shape() == ou::Shape{2, 3, 6, 2}));
    BOOST_TEST((ops::adaptive_avg_pool2d(x, {3}).shape() == ou::Shape{2, 3, 3, 3}));
  });
}

BOOST_AUTO_TEST_CASE(dtypes_one_d_and_unbatched) {
  tt::for_each_backend([&](const tt::Backend&) {
    const Win w{3, 3, 2, 2, 1, 1, 1, 1, true};
    const Dims4 d{2, 3, 9, 11};
    // f64 and f16 (f16 computes in f32; the result is rounded once).
    Tensor x64 = make_input<double>(d, Layout::contiguous, 400);
    ou::check_values(ops::max_pool2d(x64, params_of(w)).values, max_ref(ou::values(x64), d, w, {}).y, 0, "f64 max");
    ou::check_values(ops::avg_pool2d(x64, params_of(w), false), avg_ref(ou::values(x64), d, w, false, 0, {}).y, 1e-14,
                     "f64 avg");
    Tensor x16 = make_input<tritium::f16_t>(d, Layout::channels_last, 401);
    ou::check_values(ops::avg_pool2d(x16, params_of(w), true), avg_ref(ou::values(x16), d, w, true, 0, {}).y, 1e-3,
                     "f16 avg");
    Tensor dy16 = ou::random_tensor<tritium::f16_t>({2, 3, 5, 6}, 402);
    auto r16 = ops::max_pool2d(x16, params_of(w));
    ou::check_values(ops::max_pool2d_backward(dy16, x16, r16.indices, params_of(w)),
                     max_ref(ou::values(x16), d, w, ou::values(dy16)).dx, 1e-3, "f16 max dx");

    // 1-D: [N, C, L] and unbatched [C, L] are the 2-D op over a unit H.
    const Win w1{1, 4, 1, 3, 0, 2, 1, 2, false};
    Tensor x1 = ou::random_tensor<float>({2, 3, 17}, 403, -2, 2);
    auto ops1 = ops::pool1d_params("max_pool1d", {4}, {3}, {2}, {2}, false);
    auto r1 = ops::max_pool1d(x1, ops1);
    MaxRef m1 = max_ref(ou::values(x1), {2, 3, 1, 17}, w1, {});
    BOOST_TEST((r1.values.shape() == ou::Shape{2, 3, static_cast<int64_t>(m1.y.size() / 6)}));
    ou::check_values(r1.values, m1.y, 0, "max_pool1d");
    BOOST_TEST(ou::values(r1.indices) == m1.idx);
    Tensor x1u = ou::random_tensor<float>({3, 17}, 404, -2, 2);
    auto a1 = ops::pool1d_params("avg_pool1d", {4}, {3}, {2}, {1}, true);
    Tensor y1u = ops::avg_pool1d(x1u, a1, false);
    AvgRef ar = avg_ref(ou::values(x1u), {1, 3, 1, 17}, {1, 4, 1, 3, 0, 2, 1, 1, true}, false, 0, {});
    BOOST_TEST((y1u.dim() == 2));
    ou::check_values(y1u, ar.y, 1e-6, "avg_pool1d unbatched");
    Tensor x3 = ou::random_tensor<float>({3, 9, 11}, 405, -2, 2);
    auto r3 = ops::max_pool2d(x3, params_of(w));
    BOOST_TEST((r3.values.shape() == ou::Shape{3, 5, 6}));
    ou::check_values(r3.values, max_ref(ou::values(x3), {1, 3, 9, 11}, w, {}).y, 0, "max_pool2d unbatched");
  });
}

// Planes wider than one program's tile (OW = 150 and W = 300 over 128 columns), channel counts
// that are no multiple of the tile (37), both memory formats (the tile's fast dim follows the
// contiguous one), and bf16 gradients stored by the kernel in bf16 (summed in f32).
BOOST_AUTO_TEST_CASE(tiles_wider_than_a_program) {
  tt::for_each_backend([&](const tt::Backend&) {
    const Dims4 d{2, 37, 5, 300};
    uint32_t seed = 500;
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
      const Win mw{3, 3, 2, 2, 1, 1, 1, 1, false}, aw{2, 2, 2, 2, 0, 0, 1, 1, true};
      std::string what = layout_name(layout);
      Tensor x = make_input<float>(d, layout, seed++);
      Vec xv = ou::values(x);
      auto r = ops::max_pool2d(x, params_of(mw));
      Tensor dy = ou::random_tensor<float>(r.values.shape(), seed++);
      MaxRef mref = max_ref(xv, d, mw, ou::values(dy));
      ou::check_values(r.values, mref.y, 0, what + " max values");
      BOOST_TEST(ou::values(r.indices) == mref.idx, what << " max indices");
      ou::check_values(ops::max_pool2d_backward(dy, x, r.indices, params_of(mw)), mref.dx, 1e-6, what + " max dx");
      Tensor ya = ops::avg_pool2d(x, params_of(aw), true);
      Tensor dya = ou::random_tensor<float>(ya.shape(), seed++);
      AvgRef aref = avg_ref(xv, d, aw, true, 0, ou::values(dya));
      ou::check_values(ya, aref.y, 1e-6, what + " avg values");
      ou::check_values(ops::avg_pool2d_backward(dya, x, params_of(aw), true), aref.dx, 1e-6, what + " avg dx");

      Tensor xb = make_input<tritium::bf16_t>(d, layout, seed++);
      Vec xbv = ou::values(xb);
      auto rb = ops::max_pool2d(xb, params_of(mw));
      Tensor dyb = ou::random_tensor<tritium::bf16_t>(rb.values.shape(), seed++);
      Tensor dxb = ops::max_pool2d_backward(dyb, xb, rb.indices, params_of(mw));
      BOOST_TEST((dxb.dtype() == DType::bf16));
      BOOST_TEST(is_channels_last(dxb) == (layout == Layout::channels_last), what << " bf16 dx memory format");
      ou::check_values(dxb, max_ref(xbv, d, mw, ou::values(dyb)).dx, 1e-2, what + " bf16 max dx");
      Tensor dyab = ou::random_tensor<tritium::bf16_t>(ops::avg_pool2d(xb, params_of(aw), true).shape(), seed++);
      ou::check_values(ops::avg_pool2d_backward(dyab, xb, params_of(aw), true),
                       avg_ref(xbv, d, aw, true, 0, ou::values(dyab)).dx, 1e-2, what + " bf16 avg dx");
    }
    // 1-D at the benchmark's proportions: 3136 columns, 2 s2 average and 3 s2 p1 max.
    Tensor x1 = ou::random_tensor<float>({2, 5, 3136}, seed++, -2, 2);
    Vec x1v = ou::values(x1);
    const Dims4 d1{2, 5, 1, 3136};
    ou::check_values(ops::avg_pool1d(x1, ops::pool1d_params("avg_pool1d", {2}, {2}, {0}, {1}, false), true),
                     avg_ref(x1v, d1, {1, 2, 1, 2, 0, 0, 1, 1, false}, true, 0, {}).y, 1e-6, "avg_pool1d 3136");
    auto m1 = ops::max_pool1d(x1, ops::pool1d_params("max_pool1d", {3}, {2}, {1}, {1}, false));
    MaxRef m1ref = max_ref(x1v, d1, {1, 3, 1, 2, 0, 1, 1, 1, false}, {});
    ou::check_values(m1.values, m1ref.y, 0, "max_pool1d 3136");
    BOOST_TEST(ou::values(m1.indices) == m1ref.idx, "max_pool1d 3136 indices");
  });
}

// Windows of more than 16 elements run their loops at run time (small ones are unrolled at trace
// time): 5x5 max and average windows with padding 2, an adaptive pool with 10x7 windows, and 3x3
// windows with dilation 3 whose backward visits 1x1 candidates.
BOOST_AUTO_TEST_CASE(large_windows_take_run_time_loops) {
  tt::for_each_backend([&](const tt::Backend&) {
    const Dims4 d{2, 5, 20, 21};
    uint32_t seed = 600;
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
      std::string what = layout_name(layout);
      Tensor x = make_input<float>(d, layout, seed++);
      Vec xv = ou::values(x);
      for (const Win& w : {Win{5, 5, 2, 3, 2, 2, 1, 1, true}, Win{3, 3, 1, 1, 1, 1, 3, 3, false}}) {
        auto r = ops::max_pool2d(x, params_of(w));
        Tensor dy = ou::random_tensor<float>(r.values.shape(), seed++);
        MaxRef ref = max_ref(xv, d, w, ou::values(dy));
        ou::check_values(r.values, ref.y, 0, what + " max " + win_str(w));
        BOOST_TEST(ou::values(r.indices) == ref.idx, what << " max indices " << win_str(w));
        ou::check_values(ops::max_pool2d_backward(dy, x, r.indices, params_of(w)), ref.dx, 1e-6,
                         what + " max dx " + win_str(w));
      }
      const Win aw{5, 5, 2, 3, 2, 2, 1, 1, false};
      Tensor ya = ops::avg_pool2d(x, params_of(aw), false);
      Tensor dya = ou::random_tensor<float>(ya.shape(), seed++);
      AvgRef aref = avg_ref(xv, d, aw, false, 0, ou::values(dya));
      ou::check_values(ya, aref.y, 1e-6, what + " avg 5x5");
      ou::check_values(ops::avg_pool2d_backward(dya, x, params_of(aw), false), aref.dx, 1e-6, what + " avg 5x5 dx");
      Tensor yd = ops::adaptive_avg_pool2d(x, {2, 3});
      Tensor dyd = ou::random_tensor<float>(yd.shape(), seed++);
      AvgRef dref = adaptive_ref(xv, d, 2, 3, ou::values(dyd));
      ou::check_values(yd, dref.y, 1e-6, what + " adaptive 2x3");
      ou::check_values(ops::adaptive_avg_pool2d_backward(dyd, x), dref.dx, 1e-6, what + " adaptive 2x3 dx");
    }
  });
}

// PyTorch's rules: the first maximum wins a tie, a NaN wins over numbers (the last NaN of the
// window), a window of -inf names its first element; checked against PyTorch 2.x by hand.
BOOST_AUTO_TEST_CASE(ties_nan_and_infinity) {
  tt::for_each_backend([&](const tt::Backend&) {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
    Tensor x = Tensor::from_vector(std::vector<float>{1, (float)nan, 3, (float)nan, 2, 2, 1, 2, -(float)inf,
                                                      -(float)inf, -(float)inf, -(float)inf},
                                   {1, 1, 12});
    auto r = ops::max_pool1d(x, ops::pool1d_params("max_pool1d", {4}, {}, {0}, {1}, false));
    Vec v = ou::values(r.values);
    BOOST_TEST(std::isnan(v[0]));
    BOOST_TEST(v[1] == 2.0);
    BOOST_TEST(v[2] == -inf);
    BOOST_TEST((ou::values(r.indices) == Vec{3, 4, 8}));
    auto rp = ops::max_pool1d(x, ops::pool1d_params("max_pool1d", {4}, {}, {2}, {1}, false));
    BOOST_TEST((ou::values(rp.indices) == Vec{1, 3, 7, 10}));
  });
}

BOOST_AUTO_TEST_CASE(interpolate_modes) {
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 500;
    struct Case {
      Dims4 d;
      std::vector<int> size;
      std::vector<double> scale;
    };
    const std::vector<Case> cases = {{{2, 3, 5, 7}, {9, 4}, {}},    {{2, 3, 5, 7}, {10, 14}, {}},
                                     {{1, 2, 4, 6}, {}, {2.5}},     {{2, 2, 6, 5}, {}, {0.6, 1.7}},
                                     {{1, 3, 3, 4}, {1, 1}, {}},    {{1, 2, 7, 3}, {7, 3}, {}},
                                     {{2, 1, 5, 4}, {}, {2.1, 3.0}}};
    for (const Case& c : cases)
      for (bool bilinear : {false, true})
        for (bool align : bilinear ? std::vector<bool>{false, true} : std::vector<bool>{false})
          for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
            std::string what = fmt::format("{} {} align {} [{},{},{},{}] size {} scale {}", bilinear ? "bilinear" : "nearest",
                                           layout_name(layout), align, c.d.N, c.d.C, c.d.H, c.d.W, c.size.size(),
                                           c.scale.size());
            Tensor x = make_input<float>(c.d, layout, seed++);
            auto mode = bilinear ? ops::InterpolateMode::bilinear : ops::InterpolateMode::nearest;
            auto plan = ops::interpolate_plan(x, mode, c.size, c.scale, align ? std::optional<bool>(true) : std::nullopt);
            Tensor y = ops::interpolate(x, mode, plan, align);
            int64_t OH = plan.output_size[0], OW = plan.output_size[1];
            BOOST_TEST((y.shape() == ou::Shape{c.d.N, c.d.C, OH, OW}), what);
            if (format_unambiguous(y))
              BOOST_TEST(is_channels_last(y) == (layout == Layout::channels_last), what << " memory format");
            Tensor dy = ou::random_tensor<float>(y.shape(), seed++);
            AvgRef ref = interp_ref(ou::values(x), c.d, OH, OW, bilinear, plan.scales[0], plan.scales[1], align,
                                    ou::values(dy));
            ou::check_values(y, ref.y, 2e-6, what + " values");
            ou::check_values(ops::interpolate_backward(dy, x, mode, plan, align), ref.dx, 2e-6, what + " dx");
          }
    // 3-D input, nearest: [N, C, W].
    Tensor x3 = ou::random_tensor<double>({2, 3, 7}, 590);
    auto plan = ops::interpolate_plan(x3, ops::InterpolateMode::nearest, {}, {1.6}, std::nullopt);
    Tensor y3 = ops::interpolate(x3, ops::InterpolateMode::nearest, plan, false);
    BOOST_TEST((y3.shape() == ou::Shape{2, 3, 11}));
    ou::check_values(y3, interp_ref(ou::values(x3), {2, 3, 1, 7}, 1, 11, false, 1.0, 1.6, false, {}).y, 0, "nearest 1-d");
  });
}

// The differentiable functions: autograd reaches the input with the kernels' gradients.
BOOST_AUTO_TEST_CASE(autograd_functions) {
  tt::for_each_backend([&](const tt::Backend&) {
    const Dims4 d{2, 2, 7, 8};
    Tensor x = ou::random_tensor<double>({d.N, d.C, d.H, d.W}, 600).requires_grad_(true);
    auto [y, idx] = tritium::max_pool2d_with_indices(x, {3, 2}, {2}, {1}, {1}, true);
    Tensor dy = ou::random_tensor<double>(y.shape(), 601);
    y.backward(dy);
    MaxRef ref = max_ref(ou::values(x), d, {3, 2, 2, 2, 1, 1, 1, 1, true}, ou::values(dy));
    ou::check_values(y, ref.y, 0, "max_pool2d");
    BOOST_TEST(!idx.requires_grad());
    ou::check_values(x.grad(), ref.dx, 1e-12, "max_pool2d x.grad");

    Tensor x2 = ou::random_tensor<double>({d.N, d.C, d.H, d.W}, 602).requires_grad_(true);
    Tensor y2 = tritium::interpolate(x2, {}, {1.5}, "bilinear", true);
    Tensor dy2 = ou::random_tensor<double>(y2.shape(), 603);
    y2.backward(dy2);
    AvgRef r2 = interp_ref(ou::values(x2), d, 10, 12, true, 1.5, 1.5, true, ou::values(dy2));
    ou::check_values(y2, r2.y, 1e-12, "interpolate");
    ou::check_values(x2.grad(), r2.dx, 1e-12, "interpolate x.grad");

    Tensor x3 = ou::random_tensor<double>({d.N, d.C, d.H, d.W}, 604).requires_grad_(true);
    Tensor y3 = tritium::avg_pool2d(x3, {3}, {2}, {1}, true, false, std::nullopt);
    Tensor dy3 = ou::random_tensor<double>(y3.shape(), 605);
    y3.backward(dy3);
    AvgRef r3 = avg_ref(ou::values(x3), d, {3, 3, 2, 2, 1, 1, 1, 1, true}, false, 0, ou::values(dy3));
    ou::check_values(x3.grad(), r3.dx, 1e-12, "avg_pool2d x.grad");

    Tensor x4 = ou::random_tensor<double>({d.N, d.C, d.H, d.W}, 606).requires_grad_(true);
    Tensor y4 = tritium::adaptive_avg_pool2d(x4, {3, 5});
    Tensor dy4 = ou::random_tensor<double>(y4.shape(), 607);
    y4.backward(dy4);
    ou::check_values(x4.grad(), adaptive_ref(ou::values(x4), d, 3, 5, ou::values(dy4)).dx, 1e-12,
                     "adaptive_avg_pool2d x.grad");
  });
}

BOOST_AUTO_TEST_CASE(modules_and_repr) {
  tt::for_each_backend([&](const tt::Backend&) {
    namespace nn = tritium::nn;
    BOOST_TEST(nn::MaxPool2d({3}).str() == "MaxPool2d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)");
    BOOST_TEST(nn::MaxPool2d({3, 2}, {1}, {1}, {2}, true).str() ==
               "MaxPool2d(kernel_size=(3, 2), stride=1, padding=1, dilation=2, ceil_mode=True)");
    BOOST_TEST(nn::MaxPool1d({3}).str() == "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)");
    BOOST_TEST(nn::AvgPool1d({3}).str() == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))");
    BOOST_TEST(nn::AvgPool2d({3}).str() == "AvgPool2d(kernel_size=3, stride=3, padding=0)");
    BOOST_TEST(nn::AvgPool2d({3, 2}, {1}, {1}, true, false, 2).str() == "AvgPool2d(kernel_size=(3, 2), stride=1, padding=1)");
    BOOST_TEST(nn::AdaptiveAvgPool2d({5, 7}).str() == "AdaptiveAvgPool2d(output_size=(5, 7))");
    BOOST_TEST(nn::AdaptiveAvgPool2d({5}).str() == "AdaptiveAvgPool2d(output_size=5)");
    BOOST_TEST(nn::AdaptiveAvgPool2d({-1, 3}).str() == "AdaptiveAvgPool2d(output_size=(None, 3))");
    BOOST_TEST(nn::Upsample({}, {2}).str() == "Upsample(scale_factor=2.0, mode='nearest')");
    BOOST_TEST(nn::Upsample({3, 4}, {}, "bilinear", true).str() == "Upsample(size=(3, 4), mode='bilinear')");
    BOOST_TEST(nn::Upsample({}, {2.5}, "bilinear").str() == "Upsample(scale_factor=2.5, mode='bilinear')");

    Tensor x = ou::random_tensor<float>({2, 3, 9, 8}, 700);
    auto same = [&](nn::Module& m, const Tensor& want, const char* what) { ou::check_values(m(x), ou::values(want), 0, what); };
    nn::MaxPool2d mp({3}, {2}, {1});
    same(mp, tritium::max_pool2d(x, {3}, {2}, {1}), "MaxPool2d");
    BOOST_TEST(ou::values(mp.forward_with_indices(x).second) ==
               ou::values(tritium::max_pool2d_with_indices(x, {3}, {2}, {1}).second));
    nn::AvgPool2d ap({2, 3}, {}, {1}, true, false);
    same(ap, tritium::avg_pool2d(x, {2, 3}, {}, {1}, true, false), "AvgPool2d");
    nn::AdaptiveAvgPool2d aap({1});
    same(aap, tritium::adaptive_avg_pool2d(x, {1, 1}), "AdaptiveAvgPool2d");
    nn::Upsample up({}, {2}, "bilinear", false);
    same(up, tritium::interpolate(x, {}, {2}, "bilinear", false), "Upsample");
    BOOST_TEST(mp.parameters().empty());
  });
}

// Bad arguments: PyTorch's conditions, its words where it has them, the op named.
BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = ou::random_tensor<float>({1, 2, 5, 5}, 800);
    auto p2 = [](std::vector<int> k, std::vector<int> s, std::vector<int> p, std::vector<int> d = {1}) {
      return ops::pool2d_params("max_pool2d", k, s, p, d, false);
    };
    tt::check_throws([&] { ops::max_pool2d(x, p2({3}, {}, {2})); },
                     {"max_pool2d", "pad should be at most half of effective kernel size", "pad=2", "kernel_size=3"},
                     "padding > kernel / 2");
    tt::check_throws([&] { ops::max_pool2d(x, p2({7}, {}, {0})); },
                     {"Given input size: (2x5x5)", "Calculated output size: (2x0x0)", "Output size is too small"},
                     "kernel larger than the padded input");
    tt::check_throws([&] { ops::avg_pool2d(x, p2({7}, {}, {0}), true); }, {"avg_pool2d", "Output size is too small"},
                     "avg kernel too large");
    tt::check_throws([&] { ops::max_pool2d(x, p2({0}, {1}, {0})); }, {"kernel size should be greater than zero"}, "kernel 0");
    tt::check_throws([&] { ops::max_pool2d(x, p2({2}, {0}, {0})); }, {"stride should be greater than zero"}, "stride 0");
    tt::check_throws([&] { ops::max_pool2d(x, p2({2}, {}, {0}, {0})); }, {"dilation should be greater than zero"},
                     "dilation 0");
    tt::check_throws([&] { ops::max_pool2d(x, p2({2}, {}, {-1})); }, {"pad must be non-negative"}, "negative pad");
    tt::check_throws([&] { ops::pool2d_params("max_pool2d", {2, 2, 2}, {}, {0}, {1}, false); },
                     {"max_pool2d", "kernel_size must be a single int or a tuple of 2 ints"}, "kernel count");
    tt::check_throws([&] { ops::max_pool2d(ou::random_tensor<float>({2, 5}, 801), p2({2}, {}, {0})); },
                     {"Expected 3D or 4D (batch mode) tensor", "[2, 5]"}, "rank");
    tt::check_throws([&] { ops::max_pool2d(ou::random_tensor<float>({1, 2, 0, 5}, 802), p2({2}, {}, {0})); },
                     {"Expected 3D or 4D", "[1, 2, 0, 5]"}, "empty plane");
    tt::check_throws([&] { ops::max_pool2d(ou::random_tensor<int32_t>({1, 2, 5, 5}, 803, -5, 5), p2({2}, {}, {0})); },
                     {"max_pool2d", "floating-point", "i32"}, "dtype");
    tt::check_throws([&] { ops::max_pool1d(ou::random_tensor<float>({2, 3, 4}, 804),
                                           ops::pool1d_params("max_pool1d", {5}, {}, {0}, {1}, false)); },
                     {"max_pool1d", "Output size is too small"}, "1-d too small");
    tt::check_throws([&] { tritium::avg_pool2d(x, {2}, {}, {0}, false, true, 0); }, {"divisor must be not zero"},
                     "divisor 0");
    tt::check_throws([&] { ops::adaptive_avg_pool2d(x, {-2, 3}); }, {"adaptive_avg_pool2d", "output_size"}, "adaptive size");
    auto r = ops::max_pool2d(x, p2({2}, {}, {0}));
    tt::check_throws([&] { ops::max_pool2d_backward(ou::random_tensor<float>({1, 2, 3, 3}, 805), x, r.indices, p2({2}, {}, {0})); },
                     {"max_pool2d_backward", "grad_output has shape [1, 2, 3, 3]", "[1, 2, 2, 2]"}, "grad shape");
    // interpolate's front end.
    tt::check_throws([&] { tritium::interpolate(ou::random_tensor<float>({2, 3, 4}, 806), {}, {2}, "bilinear"); },
                     {"Got 3D input, but bilinear mode needs 4D input"}, "bilinear rank");
    tt::check_throws([&] { tritium::interpolate(x, {3, 3}, {2}); }, {"only one of size or scale_factor should be defined"},
                     "both");
    tt::check_throws([&] { tritium::interpolate(x, {}); }, {"either size or scale_factor should be defined"}, "neither");
    tt::check_throws([&] { tritium::interpolate(x, {4, 4, 4}); }, {"same number of spatial dimensions"}, "size count");
    tt::check_throws([&] { tritium::interpolate(x, {4}, {}, "nearest", true); },
                     {"align_corners option can only be set with the interpolating modes"}, "align with nearest");
    tt::check_throws([&] { tritium::interpolate(x, {}, {0.1}); },
                     {"Input and output sizes should be greater than 0", "[5, 5]", "[0, 0]"}, "empty output");
    tt::check_throws([&] { tritium::interpolate(x, {4}, {}, "bicubic"); }, {"mode 'bicubic' is not supported"}, "mode");
  });
}

BOOST_AUTO_TEST_SUITE_END()
