// Pooling ops (ops/pool.h): max, average and adaptive average pooling over [N, C, H, W] and their
// backwards. One forward kernel and one backward kernel serve the three modes.
//
// Forward: one program per output row of one image and a tile of lanes over (columns, channels):
// wide in channels and channels last for a channels-last tensor, wide in columns and columns last
// otherwise, so consecutive threads run along the contiguous dim; the input is read through its
// four strides, so any layout (contiguous, channels-last, a strided view) takes the same path.
// Each lane walks its window, unrolled at trace time for windows of up to 16 elements, with
// run-time loops beyond. Index arithmetic is i32 where it fits. No lane divides to find its
// coordinates (a per-element i64 division was most of the time on the CPU).
//
// Backward: the same tiling over input rows; each lane gathers the output gradients of the windows
// that contain it (for max pool, those whose saved index names it). Windows that overlap (stride <
// kernel) need no atomics this way and the result is deterministic on every backend; the number
// of windows visited per element is the overlap factor ceil(extent / stride) per dim, so
// non-overlapping windows cost one visit.
#include "ops/pool.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/cat_pool_kernels.h"
#include "ops/elementwise_kernels.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;
using detail::shape_str;

enum class Mode : int { max, avg, adaptive_avg };

// The adaptive window [start, end) of output o of O over an input of I: PyTorch's
// start_index = floor(o I / O), end_index = ceil((o + 1) I / O).
std::pair<tl::tensor, tl::tensor> adaptive_window(const tl::tensor& o, const tl::tensor& I, const tl::tensor& O) {
  return {(o * I) / O, tl::cdiv((o + 1) * I, O)};
}

// The kernels' index type: i32 where every offset, and every product of an output index and an
// input size, fits in it (the host decides: PyTorch's pooling kernels index with int the same way),
// i64 otherwise. i32 halves the integer work of each lane's address and window arithmetic.
struct Idx {
  bool wide;
  DType type() const { return wide ? tl::int64 : tl::int32; }
  tl::tensor operator()(const tl::tensor& v) const { return v.to(type()); }
  void narrow(std::initializer_list<tl::tensor*> args) const {
    if (!wide)
      for (tl::tensor* a : args) *a = a->to(tl::int32);
  }
};

// A program's lanes: columns col (program_id(1)) and channels chan (program_id(2)) of the tile.
// The tile's last dim (the one consecutive threads walk) is the contiguous one: columns for an
// NCHW tensor ([BC, BW]), channels for a channels-last one ([BW, BC]). With channels last in an
// NCHW tile, a warp's loads and stores hit one line per channel instead of running along W.
struct Lanes {
  tl::tensor col, chan;
  ir::Shape shape;
};
Lanes lanes(const Idx& I, bool channels_last, int bw, int bc) {
  auto col = I(tl::program_id(1)) * bw + I(tl::arange(0, bw));
  auto chan = I(tl::program_id(2)) * bc + I(tl::arange(0, bc));
  if (channels_last) return {col(tl::_, tl::None), chan(tl::None, tl::_), {bw, bc}};
  return {col(tl::None, tl::_), chan(tl::_, tl::None), {bc, bw}};
}

// A window loop of `count` trips: unrolled at trace time when the host passes the count as a
// meta-parameter (`unrolled` > 0: small windows, so every load of a window can be in flight at
// once, as Triton's tl.static_range over a constexpr kernel size), a run-time tl::range otherwise
// (large adaptive windows). `body` takes the trip's index (a C++ int or a traced scalar).
template <class Body> void window_loop(int unrolled, const tl::tensor& count, Body&& body) {
  if (unrolled > 0) {
    for (int k = 0; k < unrolled; ++k) body(k);
  } else {
    for (auto k : tl::range(0, count)) body(k);
  }
}

// The window strides as constants when the host passes them as meta-parameters (USH / USW > 0:
// strides of at most 4, the pools people use): the backward's per-lane (iw + PW) / SW is then a
// shift, not a vector division (x86 has none: 16 scalar divides a chunk), and the forward's
// ow * SW a constant multiple.
void constant_strides(const Idx& I, int ush, int usw, tl::i64& SH, tl::i64& SW) {
  if (ush > 0) SH = tl::full({}, ush, I.type());
  if (usw > 0) SW = tl::full({}, usw, I.type());
}

// Both kernels work on one row of their lanes' plane per program: program (r, wb, cb) takes row
// r % ROWS of image r / ROWS (scalar divisions, once per program) and a [BW columns, BC channels]
// tile, so no lane divides to find its coordinates. Element (n, c, h, w) of a tensor is at
// n s0 + c s1 + h s2 + w s3: any layout, the strides decide which tile dim is contiguous (the
// host makes BC wide for channels-last tensors and BW wide otherwise, and `lanes` puts that dim
// last).
}  // namespace

Kernel& detail::pool2d_forward_kernel() {
  static Kernel k = tritium::kernel(
      "pool2d_fwd",
      [](P x, P y, P ind, tl::i64 C, tl::i64 H, tl::i64 W, tl::i64 OH, tl::i64 OW,  //
         tl::i64 xs0, tl::i64 xs1, tl::i64 xs2, tl::i64 xs3, tl::i64 ys0, tl::i64 ys1, tl::i64 ys2, tl::i64 ys3,
         tl::i64 KH, tl::i64 KW, tl::i64 SH, tl::i64 SW, tl::i64 PH, tl::i64 PW, tl::i64 DH, tl::i64 DW,
         tl::i64 divisor, int MODE, bool COUNT_PAD, int ACC, bool CL, bool I64, int UKH, int UKW, int USH, int USW,
         int BW, int BC) {
        const DType acc = static_cast<DType>(ACC);
        const Mode mode = static_cast<Mode>(MODE);
        const Idx I{I64};
        I.narrow({&C, &H, &W, &OH, &OW, &xs0, &xs1, &xs2, &xs3, &ys0, &ys1, &ys2, &ys3, &KH, &KW, &SH, &SW, &PH, &PW,
                  &DH, &DW, &divisor});
        constant_strides(I, USH, USW, SH, SW);
        auto r = I(tl::program_id(0));
        auto n = r / OH, oh = r % OH;
        auto [ow, c, shape] = lanes(I, CL, BW, BC);
        auto m = (ow < OW) && (c < C);
        // Offsets are summed as integers and added to the pointer once (one wide multiply-add an
        // access, not a 64-bit pointer add per term).
        auto xoff = n * xs0 + c * xs1;
        auto out = n * ys0 + c * ys1 + oh * ys2 + ow * ys3;
        if (mode == Mode::max) {
          auto best = tl::full(shape, -INFINITY, acc);
          auto idx = tl::full(shape, -1, I.type());
          auto h0 = oh * SH - PH;
          auto w0 = ow * SW - PW;
          window_loop(UKH, KH, [&](const auto& kh) {
            auto ih = h0 + kh * DH;
            auto hok = (ih >= 0) && (ih < H);
            window_loop(UKW, KW, [&](const auto& kw) {
              auto iw = w0 + kw * DW;
              auto ok = m && hok && (iw >= 0) && (iw < W);
              auto v = tl::load(x + (xoff + ih * xs2 + iw * xs3), ok, 0).to(acc);
              // PyTorch's rule: a strictly greater value or a NaN replaces the maximum; the first
              // element inside the input starts it (so a window of -inf names its first element).
              auto take = ok && ((v > best) || (v != v) || (idx < 0));
              best = tl::where(take, v, best);
              idx = tl::where(take, ih * W + iw, idx);
            });
          });
          tl::store(y + out, best, m);
          tl::store(ind + out, idx.to(tl::int64), m);
          return;
        }
        tl::tensor hs, he, ws, we, div;
        if (mode == Mode::avg) {
          hs = oh * SH - PH, ws = ow * SW - PW;
          he = tl::minimum(hs + KH, H + PH), we = tl::minimum(ws + KW, W + PW);
          auto pool_size = (he - hs) * (we - ws);
          hs = tl::maximum(hs, 0), ws = tl::maximum(ws, 0);
          he = tl::minimum(he, H), we = tl::minimum(we, W);
          div = tl::where(divisor > 0, divisor, COUNT_PAD ? pool_size : (he - hs) * (we - ws));
        } else {
          std::tie(hs, he) = adaptive_window(oh, H, OH);
          std::tie(ws, we) = adaptive_window(ow, W, OW);
          div = (he - hs) * (we - ws);
        }
        auto sum = tl::zeros(shape, acc);
        window_loop(UKH, KH, [&](const auto& kh) {
          auto ih = hs + kh;
          auto hok = ih < he;
          window_loop(UKW, KW, [&](const auto& kw) {
            auto iw = ws + kw;
            auto ok = m && hok && (iw < we);
            sum = sum + tl::load(x + (xoff + ih * xs2 + iw * xs3), ok, 0).to(acc);
          });
        });
        // A window wholly in the padding (possible with ceil_mode) gives 0, as PyTorch.
        auto empty = (hs >= he) || (ws >= we);
        tl::store(y + out, tl::where(empty, 0, sum / tl::maximum(div, 1).to(acc)).to(acc), m);
      },
      {"x",   "y",   "ind", "C",   "H",   "W",   "OH",  "OW",  "xs0", "xs1", "xs2",     "xs3",  "ys0",       "ys1",
       "ys2", "ys3", "KH",  "KW",  "SH",  "SW",  "PH",  "PW",  "DH",  "DW",  "divisor", "MODE", "COUNT_PAD", "ACC",
       "CL",  "I64", "UKH", "UKW", "USH", "USW", "BW",  "BC"});
  return k;
}

// grad_input[n, c, ih, iw] = the sum of the output gradients whose window holds (ih, iw) (max: those
// whose saved index names it, which alone proves the window holds it; avg: each divided by its
// window's divisor). The candidate windows along a dim are the LH (LW) ending at the last one
// starting at or before the element: oh_last = (ih + PH) / SH, one division per row (per lane for
// columns). gs*: grad strides, is*: the indices', ds*: grad_input's.
Kernel& detail::pool2d_backward_kernel() {
  static Kernel k = tritium::kernel(
      "pool2d_bwd",
      [](P g, P ind, P dx, tl::i64 C, tl::i64 H, tl::i64 W, tl::i64 OH, tl::i64 OW,  //
         tl::i64 gs0, tl::i64 gs1, tl::i64 gs2, tl::i64 gs3, tl::i64 is0, tl::i64 is1, tl::i64 is2, tl::i64 is3,
         tl::i64 ds0, tl::i64 ds1, tl::i64 ds2, tl::i64 ds3, tl::i64 LH, tl::i64 LW, tl::i64 KH, tl::i64 KW,
         tl::i64 SH, tl::i64 SW, tl::i64 PH, tl::i64 PW, tl::i64 divisor, int MODE, bool COUNT_PAD, int ACC, int ODT,
         bool CL, bool I64, int ULH, int ULW, int USH, int USW, int BW, int BC) {
        const DType acc = static_cast<DType>(ACC);
        const Mode mode = static_cast<Mode>(MODE);
        const Idx I{I64};
        I.narrow({&C, &H, &W, &OH, &OW, &gs0, &gs1, &gs2, &gs3, &is0, &is1, &is2, &is3, &ds0, &ds1, &ds2, &ds3, &LH,
                  &LW, &KH, &KW, &SH, &SW, &PH, &PW, &divisor});
        constant_strides(I, USH, USW, SH, SW);
        auto r = I(tl::program_id(0));
        auto n = r / H, ih = r % H;
        auto [iw, c, shape] = lanes(I, CL, BW, BC);
        auto m = (iw < W) && (c < C);
        auto goff = n * gs0 + c * gs1;  // integer offsets, added to the pointers once (as the forward)
        auto sum = tl::zeros(shape, acc);
        if (mode == Mode::max) {
          auto ioff = n * is0 + c * is1;
          auto me = (ih * W + iw).to(tl::int64);  // the saved indices are i64
          auto oh_last = (ih + PH) / SH, ow_last = (iw + PW) / SW;  // non-negative: floor
          window_loop(ULH, LH, [&](const auto& a) {
            auto oh = oh_last - a;
            auto hok = (oh >= 0) && (oh < OH);
            window_loop(ULW, LW, [&](const auto& b) {
              auto ow = ow_last - b;
              auto ok = m && hok && (ow >= 0) && (ow < OW);
              auto named = tl::load(ind + (ioff + oh * is2 + ow * is3), ok, -1) == me;
              sum = sum + tl::load(g + (goff + oh * gs2 + ow * gs3), ok && named, 0).to(acc);
            });
          });
        } else if (mode == Mode::avg) {
          auto oh_last = (ih + PH) / SH, ow_last = (iw + PW) / SW;
          window_loop(ULH, LH, [&](const auto& a) {
            auto oh = oh_last - a;
            auto hs0 = oh * SH - PH;
            auto hok = (oh >= 0) && (oh < OH) && (ih < hs0 + KH);
            auto he0 = tl::minimum(hs0 + KH, H + PH);
            auto hs = tl::maximum(hs0, 0), he = tl::minimum(he0, H);
            window_loop(ULW, LW, [&](const auto& b) {
              auto ow = ow_last - b;
              auto ws0 = ow * SW - PW;
              auto ok = m && hok && (ow >= 0) && (ow < OW) && (iw < ws0 + KW);
              auto we0 = tl::minimum(ws0 + KW, W + PW);
              auto ws = tl::maximum(ws0, 0), we = tl::minimum(we0, W);
              auto div = tl::where(divisor > 0, divisor, COUNT_PAD ? (he0 - hs0) * (we0 - ws0) : (he - hs) * (we - ws));
              auto v = tl::load(g + (goff + oh * gs2 + ow * gs3), ok, 0).to(acc);
              sum = sum + tl::where(ok, v / tl::maximum(div, 1).to(acc), 0);
            });
          });
        } else {
          // Outputs whose adaptive window holds ih: [floor(ih OH / H), ceil((ih + 1) OH / H)).
          auto oh0 = (ih * OH) / H, oh1 = tl::cdiv((ih + 1) * OH, H);
          auto ow0 = (iw * OW) / W, ow1 = tl::cdiv((iw + 1) * OW, W);
          window_loop(ULH, LH, [&](const auto& a) {
            auto oh = oh0 + a;
            auto hok = oh < oh1;
            auto [hs, he] = adaptive_window(oh, H, OH);
            window_loop(ULW, LW, [&](const auto& b) {
              auto ow = ow0 + b;
              auto ok = m && hok && (ow < ow1);
              auto [ws, we] = adaptive_window(ow, W, OW);
              auto v = tl::load(g + (goff + oh * gs2 + ow * gs3), ok, 0).to(acc);
              sum = sum + tl::where(ok, v / tl::maximum((he - hs) * (we - ws), 1).to(acc), 0);
            });
          });
        }
        tl::store(dx + n * ds0 + c * ds1 + ih * ds2 + iw * ds3, sum.to(static_cast<DType>(ODT)), m);
      },
      {"g",   "ind", "dx",  "C",   "H",   "W",   "OH",  "OW",  "gs0", "gs1", "gs2", "gs3",     "is0",  "is1",
       "is2", "is3", "ds0", "ds1", "ds2", "ds3", "LH",  "LW",  "KH",  "KW",  "SH",  "SW",      "PH",   "PW",
       "divisor", "MODE", "COUNT_PAD", "ACC", "ODT", "CL", "I64", "ULH", "ULW", "USH", "USW", "BW", "BC"});
  return k;
}

namespace {

// The [BW, BC] tile over (columns, channels) of `width` columns: wide in channels for a
// channels-last tensor (contiguous channels), wide in columns otherwise; 256 lanes at most.
std::pair<int, int> tile(int64_t width, int64_t C, bool channels_last) {
  int64_t bw, bc;
  if (channels_last) {
    bc = std::clamp<int64_t>(next_power_of_2(C), 2, 64);
    bw = std::clamp<int64_t>(256 / bc, 2, std::max<int64_t>(2, next_power_of_2(width)));
  } else {
    bw = std::clamp<int64_t>(next_power_of_2(width), 2, 128);
    bc = std::clamp<int64_t>(256 / bw, 2, std::max<int64_t>(2, next_power_of_2(C)));
  }
  return {static_cast<int>(bw), static_cast<int>(bc)};
}

// ---- shapes and layouts ------------------------------------------------------------------------------

// The input as [N, C, H, W] (an unbatched [C, H, W] gets N = 1, a view), checked as PyTorch's
// pool2d_shape_check checks it.
struct Input4d {
  Tensor x;        // 4-D view
  bool batched;    // the caller's input had a batch dim
  bool channels_last;
};

bool has_channels_last_strides(const Tensor& x) {
  int64_t C = x.size(1), H = x.size(2), W = x.size(3);
  return !x.is_contiguous() && x.stride(1) == 1 && x.stride(3) == C && x.stride(2) == W * C && x.stride(0) == H * W * C;
}

Input4d as_4d(const char* op, const Tensor& x, bool one_d) {
  detail::check_tensors(op, {&x});
  const int64_t rank = one_d ? 2 : 3;
  bool ok = x.dim() == rank || x.dim() == rank + 1;
  for (int d = x.dim() == rank + 1 ? 1 : 0; ok && d < x.dim(); ++d) ok = x.size(d) > 0;
  if (!ok)
    fail("{}: Expected {}D or {}D (batch mode) tensor with optional 0 dim batch size for input, but got: {}", op, rank,
         rank + 1, shape_str(x.shape()));
  if (!is_float(x.dtype())) fail("{}: expected a floating-point input, got {}", op, dtype_name(x.dtype()));
  Tensor v = x.dim() == rank ? x.unsqueeze(0) : x;
  if (one_d) v = v.unsqueeze(2);
  return {v, x.dim() == rank + 1, has_channels_last_strides(v)};
}

// An uninitialised [N, C, H, W] tensor in the given memory format.
Tensor empty_nchw(const Shape& s, DType dtype, Device device, bool channels_last) {
  if (!channels_last) return Tensor::empty(s, dtype, device);
  return Tensor::empty({s[0], s[2], s[3], s[1]}, dtype, device).permute({0, 3, 1, 2});
}

// The caller's shape back from the 4-D one.
Tensor from_4d(const Tensor& t, const Input4d& in, bool one_d) {
  Tensor r = one_d ? t.squeeze(2) : t;
  return in.batched ? r : r.squeeze(0);
}

std::vector<int64_t> two(const char* op, const char* what, const std::vector<int>& v, bool may_be_empty,
                         const std::vector<int64_t>& fallback, int dims) {
  if (v.empty() && may_be_empty) return fallback;
  if (v.size() == 1) return std::vector<int64_t>(static_cast<size_t>(dims), v[0]);
  if (static_cast<int>(v.size()) == dims) return {v.begin(), v.end()};
  fail("{}: {} must {}be a single int or a tuple of {} ints, got {} values", op, what, may_be_empty ? "be omitted, " : "",
       dims, v.size());
}

Pool2dParams params(const char* op, const std::vector<int>& kernel_size, const std::vector<int>& stride,
                    const std::vector<int>& padding, const std::vector<int>& dilation, bool ceil_mode, int dims) {
  auto k = two(op, "kernel_size", kernel_size, false, {}, dims);
  auto s = two(op, "stride", stride, true, k, dims);
  auto p = two(op, "padding", padding, false, {}, dims);
  auto d = two(op, "dilation", dilation, false, {}, dims);
  Pool2dParams r;
  r.ceil_mode = ceil_mode;
  const int off = 2 - dims;  // 1-D: h is the unit dim
  for (int i = 0; i < dims; ++i) {
    r.kernel[i + off] = k[i], r.stride[i + off] = s[i], r.padding[i + off] = p[i], r.dilation[i + off] = d[i];
  }
  return r;
}

struct Plan {
  Input4d in;
  int64_t N, C, H, W, OH, OW;
};

// PyTorch's pool2d_shape_check and the output size; `dilated` false for average pools.
Plan plan(const char* op, const Tensor& x, const Pool2dParams& p, bool one_d) {
  Input4d in = as_4d(op, x, one_d);
  const auto& k = p.kernel;
  if (k[0] <= 0 || k[1] <= 0)
    fail("{}: kernel size should be greater than zero, but got kH: {} kW: {}", op, k[0], k[1]);
  if (p.stride[0] <= 0 || p.stride[1] <= 0)
    fail("{}: stride should be greater than zero, but got dH: {} dW: {}", op, p.stride[0], p.stride[1]);
  if (p.dilation[0] <= 0 || p.dilation[1] <= 0)
    fail("{}: dilation should be greater than zero, but got dilationH: {} dilationW: {}", op, p.dilation[0],
         p.dilation[1]);
  if (p.padding[0] < 0 || p.padding[1] < 0)
    fail("{}: pad must be non-negative, but got padH: {} padW: {}", op, p.padding[0], p.padding[1]);
  for (int d = 0; d < 2; ++d)
    if (p.padding[d] > k[d] / 2)
      fail("{}: pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}",
           op, p.padding[d], k[d], p.dilation[d]);
  Plan r{in, in.x.size(0), in.x.size(1), in.x.size(2), in.x.size(3), 0, 0};
  r.OH = pooling_output_size(r.H, k[0], p.padding[0], p.stride[0], p.dilation[0], p.ceil_mode);
  r.OW = pooling_output_size(r.W, k[1], p.padding[1], p.stride[1], p.dilation[1], p.ceil_mode);
  if (r.OH < 1 || r.OW < 1)
    fail("{}: Given input size: ({}x{}x{}). Calculated output size: ({}x{}x{}). Output size is too small", op, r.C,
         r.H, r.W, r.C, r.OH, r.OW);
  return r;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A window dim's trip count as a meta-parameter when the whole window (count x other) is small
// enough to unroll (window_loop), else 0 (a run-time loop). Pools use a handful of window sizes,
// so the extra specialisations are few.
int unrolled(int64_t count, int64_t other) { return count * other <= 16 ? static_cast<int>(count) : 0; }

// A window stride as a meta-parameter (constant_strides) when it is at most 4, else 0 (run time).
int constant_stride(int64_t s) { return s <= 4 ? static_cast<int>(s) : 0; }

// Whether the kernels need i64 indices: an element offset of a tensor (its furthest element, or
// a window corner up to a kernel's extent past the border), a flat index oh * W + ow, or the
// adaptive windows' products o * I reach 2^31.
bool needs_i64(const Plan& pl, std::initializer_list<const Tensor*> ts) {
  const int64_t limit = (int64_t(1) << 31) - 1;
  int64_t far = std::max({pl.N, pl.C, pl.H, pl.W, pl.OH, pl.OW, pl.H * pl.W, pl.OH * pl.H, pl.OW * pl.W});
  for (const Tensor* t : ts) {
    int64_t span = 0;
    for (int d = 0; d < t->dim(); ++d) span += (t->size(d) + 64) * std::abs(t->stride(d));
    far = std::max(far, span);
  }
  return far >= limit / 4;  // a margin for window arithmetic past the borders
}

Tensor run_forward(const char* op, const Plan& pl, const Pool2dParams& p, Mode mode, bool count_include_pad,
                   int64_t divisor, Tensor* indices) {
  const Tensor& x = pl.in.x;
  const bool cl = pl.in.channels_last;
  Shape out_shape{pl.N, pl.C, pl.OH, pl.OW};
  Tensor y = empty_nchw(out_shape, x.dtype(), x.device(), cl);
  Tensor ind = mode == Mode::max ? empty_nchw(out_shape, DType::i64, x.device(), cl) : y;
  if (indices) *indices = ind;
  if (y.numel() == 0) return y;
  int64_t KH = p.kernel[0], KW = p.kernel[1];
  if (mode == Mode::adaptive_avg) {  // the widest adaptive window
    KH = KW = 0;
    for (int64_t o = 0; o < pl.OH; ++o) KH = std::max(KH, ceil_div((o + 1) * pl.H, pl.OH) - o * pl.H / pl.OH);
    for (int64_t o = 0; o < pl.OW; ++o) KW = std::max(KW, ceil_div((o + 1) * pl.W, pl.OW) - o * pl.W / pl.OW);
  }
  (void)op;
  auto [bw, bc] = tile(pl.OW, pl.C, cl);
  const bool i64 = needs_i64(pl, {&x, &y});
  detail::pool2d_forward_kernel()[{pl.N * pl.OH, cdiv(pl.OW, bw), cdiv(pl.C, bc)}](
      x, y, ind, pl.C, pl.H, pl.W, pl.OH, pl.OW, x.stride(0), x.stride(1), x.stride(2), x.stride(3), y.stride(0),
      y.stride(1), y.stride(2), y.stride(3), KH, KW, p.stride[0], p.stride[1], p.padding[0], p.padding[1],
      p.dilation[0], p.dilation[1], divisor, static_cast<int>(mode), count_include_pad,
      static_cast<int>(detail::math_type(x.dtype())), cl, i64, unrolled(KH, KW), unrolled(KW, KH),
      constant_stride(p.stride[0]), constant_stride(p.stride[1]), bw, bc);
  return y;
}

// The gradient (or the indices) as a 4-D view, checked against the forward's output shape in the
// caller's rank.
Tensor grad_4d(const char* op, const Tensor& grad, const Plan& pl, bool one_d, const char* what = "grad_output") {
  Shape want{pl.N, pl.C};
  if (!one_d) want.push_back(pl.OH);
  want.push_back(pl.OW);
  if (!pl.in.batched) want.erase(want.begin());
  if (grad.shape() != want)
    fail("{}: {} has shape {}, expected the forward's output shape {}", op, what, shape_str(grad.shape()),
         shape_str(want));
  Tensor g = pl.in.batched ? grad : grad.unsqueeze(0);
  return one_d ? g.unsqueeze(2) : g;
}

Tensor run_backward(const char* op, const Tensor& grad, const Tensor& indices, const Plan& pl, const Pool2dParams& p,
                    Mode mode, bool count_include_pad, int64_t divisor, bool one_d) {
  const Tensor& x = pl.in.x;
  detail::check_tensors(op, {&grad, &x});
  if (grad.dtype() != x.dtype())
    fail("{}: grad_output dtype {} differs from the input's {}", op, dtype_name(grad.dtype()), dtype_name(x.dtype()));
  Tensor g = grad_4d(op, grad, pl, one_d);
  Tensor ind = g;
  if (mode == Mode::max) {
    detail::check_tensors(op, {&grad, &indices});
    if (indices.dtype() != DType::i64) fail("{}: indices must be i64, got {}", op, dtype_name(indices.dtype()));
    ind = grad_4d(op, indices, pl, one_d, "indices");
  }
  const bool cl = pl.in.channels_last;
  const DType acc = detail::math_type(x.dtype());
  // Summed in `acc`, stored in the input's dtype by the kernel (no f32 copy converted after it).
  Tensor dx = empty_nchw({pl.N, pl.C, pl.H, pl.W}, x.dtype(), x.device(), cl);
  if (dx.numel() > 0) {
    int64_t LH = 0, LW = 0, KH = p.kernel[0], KW = p.kernel[1];
    if (mode == Mode::max) {  // windows whose dilated extent can hold one element
      LH = ceil_div((KH - 1) * p.dilation[0] + 1, p.stride[0]), LW = ceil_div((KW - 1) * p.dilation[1] + 1, p.stride[1]);
    } else if (mode == Mode::avg) {
      LH = ceil_div(KH, p.stride[0]), LW = ceil_div(KW, p.stride[1]);
    } else {  // the most adaptive windows holding one element
      for (int64_t i = 0; i < pl.H; ++i) LH = std::max(LH, ceil_div((i + 1) * pl.OH, pl.H) - i * pl.OH / pl.H);
      for (int64_t i = 0; i < pl.W; ++i) LW = std::max(LW, ceil_div((i + 1) * pl.OW, pl.W) - i * pl.OW / pl.W);
    }
    auto [bw, bc] = tile(pl.W, pl.C, cl);
    const bool i64 = needs_i64(pl, {&g, &ind, &dx});
    detail::pool2d_backward_kernel()[{pl.N * pl.H, cdiv(pl.W, bw), cdiv(pl.C, bc)}](
        g, ind, dx, pl.C, pl.H, pl.W, pl.OH, pl.OW, g.stride(0), g.stride(1), g.stride(2), g.stride(3),
        ind.stride(0), ind.stride(1), ind.stride(2), ind.stride(3), dx.stride(0), dx.stride(1), dx.stride(2),
        dx.stride(3), LH, LW, KH, KW, p.stride[0], p.stride[1], p.padding[0], p.padding[1], divisor,
        static_cast<int>(mode), count_include_pad, static_cast<int>(acc), static_cast<int>(x.dtype()), cl, i64,
        unrolled(LH, LW), unrolled(LW, LH), constant_stride(p.stride[0]), constant_stride(p.stride[1]), bw, bc);
  }
  return from_4d(dx, pl.in, one_d);
}

void check_avg(const char* op, const Pool2dParams& p, std::optional<int64_t> divisor_override) {
  if (p.dilation[0] != 1 || p.dilation[1] != 1) fail("{}: average pooling has no dilation", op);
  if (divisor_override && *divisor_override == 0) fail("{}: divisor must be not zero", op);
}

}  // namespace

int64_t pooling_output_size(int64_t size, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                            bool ceil_mode) {
  int64_t num = size + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;  // floor division
  // The last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= size + pad) --out;
  return out;
}

Pool2dParams pool2d_params(const char* op, const std::vector<int>& kernel_size, const std::vector<int>& stride,
                           const std::vector<int>& padding, const std::vector<int>& dilation, bool ceil_mode) {
  return params(op, kernel_size, stride, padding, dilation, ceil_mode, 2);
}

Pool2dParams pool1d_params(const char* op, const std::vector<int>& kernel_size, const std::vector<int>& stride,
                           const std::vector<int>& padding, const std::vector<int>& dilation, bool ceil_mode) {
  return params(op, kernel_size, stride, padding, dilation, ceil_mode, 1);
}

MaxPoolResult max_pool2d(const Tensor& x, const Pool2dParams& p) {
  Plan pl = plan("max_pool2d", x, p, false);
  MaxPoolResult r;
  r.values = from_4d(run_forward("max_pool2d", pl, p, Mode::max, false, 0, &r.indices), pl.in, false);
  r.indices = from_4d(r.indices, pl.in, false);
  return r;
}

MaxPoolResult max_pool1d(const Tensor& x, const Pool2dParams& p) {
  Plan pl = plan("max_pool1d", x, p, true);
  MaxPoolResult r;
  r.values = from_4d(run_forward("max_pool1d", pl, p, Mode::max, false, 0, &r.indices), pl.in, true);
  r.indices = from_4d(r.indices, pl.in, true);
  return r;
}

Tensor max_pool2d_backward(const Tensor& grad, const Tensor& x, const Tensor& indices, const Pool2dParams& p) {
  Plan pl = plan("max_pool2d_backward", x, p, false);
  return run_backward("max_pool2d_backward", grad, indices, pl, p, Mode::max, false, 0, false);
}

Tensor max_pool1d_backward(const Tensor& grad, const Tensor& x, const Tensor& indices, const Pool2dParams& p) {
  Plan pl = plan("max_pool1d_backward", x, p, true);
  return run_backward("max_pool1d_backward", grad, indices, pl, p, Mode::max, false, 0, true);
}

Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  check_avg("avg_pool2d", p, divisor_override);
  Plan pl = plan("avg_pool2d", x, p, false);
  return from_4d(run_forward("avg_pool2d", pl, p, Mode::avg, count_include_pad, divisor_override.value_or(0), nullptr),
                 pl.in, false);
}

Tensor avg_pool1d(const Tensor& x, const Pool2dParams& p, bool count_include_pad) {
  check_avg("avg_pool1d", p, std::nullopt);
  Plan pl = plan("avg_pool1d", x, p, true);
  return from_4d(run_forward("avg_pool1d", pl, p, Mode::avg, count_include_pad, 0, nullptr), pl.in, true);
}

Tensor avg_pool2d_backward(const Tensor& grad, const Tensor& x, const Pool2dParams& p, bool count_include_pad,
                           std::optional<int64_t> divisor_override) {
  check_avg("avg_pool2d_backward", p, divisor_override);
  Plan pl = plan("avg_pool2d_backward", x, p, false);
  return run_backward("avg_pool2d_backward", grad, Tensor(), pl, p, Mode::avg, count_include_pad,
                      divisor_override.value_or(0), false);
}

Tensor avg_pool1d_backward(const Tensor& grad, const Tensor& x, const Pool2dParams& p, bool count_include_pad) {
  check_avg("avg_pool1d_backward", p, std::nullopt);
  Plan pl = plan("avg_pool1d_backward", x, p, true);
  return run_backward("avg_pool1d_backward", grad, Tensor(), pl, p, Mode::avg, count_include_pad, 0, true);
}

namespace {
Plan adaptive_plan(const char* op, const Tensor& x, const std::vector<int>& output_size) {
  Input4d in = as_4d(op, x, false);
  if (output_size.size() != 2 && output_size.size() != 1)
    fail("{}: output_size must be 2 (or 1) values, got {}", op, output_size.size());
  Plan r{in, in.x.size(0), in.x.size(1), in.x.size(2), in.x.size(3), 0, 0};
  int oh = output_size[0], ow = output_size.size() == 2 ? output_size[1] : output_size[0];
  r.OH = oh == -1 ? r.H : oh;
  r.OW = ow == -1 ? r.W : ow;
  if (r.OH < 0 || r.OW < 0)
    fail("{}: elements of output_size must be greater than or equal to 0 but received ({}, {})", op, oh, ow);
  return r;
}
}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int>& output_size) {
  Plan pl = adaptive_plan("adaptive_avg_pool2d", x, output_size);
  // One window per (n, c) is a mean over H x W: the reduction kernels read it at memory speed
  // (rows of H W, or columns across C when channels-last), where the pooling kernel gives one
  // program a whole plane. PyTorch takes the same route (AdaptiveAveragePooling.cpp).
  if (pl.OH == 1 && pl.OW == 1) return from_4d(mean(pl.in.x, {2, 3}, true), pl.in, false);
  return from_4d(run_forward("adaptive_avg_pool2d", pl, Pool2dParams{}, Mode::adaptive_avg, false, 0, nullptr),
                 pl.in, false);
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad, const Tensor& x) {
  const char* op = "adaptive_avg_pool2d_backward";
  detail::check_tensors(op, {&grad});
  int64_t gd = grad.dim();
  if (gd != 3 && gd != 4) fail("{}: grad_output must be 3-D or 4-D, got {}", op, shape_str(grad.shape()));
  Plan pl = adaptive_plan(op, x, {static_cast<int>(grad.size(gd - 2)), static_cast<int>(grad.size(gd - 1))});
  if (pl.OH == 1 && pl.OW == 1) {  // the mean's gradient: grad / (H W) broadcast over the plane
    detail::check_tensors(op, {&grad, &pl.in.x});
    if (grad.dtype() != x.dtype())
      fail("{}: grad_output dtype {} differs from the input's {}", op, dtype_name(grad.dtype()), dtype_name(x.dtype()));
    Tensor g = grad_4d(op, grad, pl, false);
    const Scalar count(static_cast<double>(pl.H * pl.W));
    // Written in the input's memory format: channels-last as a contiguous [N, H, W, C].
    Tensor dx = pl.in.channels_last
                    ? div(g.permute({0, 2, 3, 1}).expand({pl.N, pl.H, pl.W, pl.C}), count).permute({0, 3, 1, 2})
                    : div(g.expand({pl.N, pl.C, pl.H, pl.W}), count);
    return from_4d(dx, pl.in, false);
  }
  return run_backward(op, grad, Tensor(), pl, Pool2dParams{}, Mode::adaptive_avg, false, 0, false);
}

}  // namespace tritium::ops
