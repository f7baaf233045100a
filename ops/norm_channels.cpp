// Per-channel sums and per-channel affine maps over an (N, C, S) strided view (ops/norm_channels.h).
//
// channel_sums: program (channel block, split) walks its share of the N * ceil(S / BS) tiles of
// [BC channels, BS positions] and accumulates in the compute type; a split writes a row of a
// [splits, C] partial buffer that ops::sum adds up (a second launch, only when split). The tile
// follows the contiguous dim: long BS rows for NCHW, wide BC rows for channels-last.
// channel_affine: one program per tile, out = a * u + b * v + d with per-(sample, channel)
// coefficients.
#include "ops/norm_channels.h"

#include <algorithm>
#include <numeric>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/reduce_plan.h"

namespace tritium::ops::detail {

namespace tl = tritium::tl;

namespace {
using P = tl::ptr<tl::any>;
constexpr int64_t kTile = 2048;  // elements per [BC, BS] tile
}  // namespace

Kernel& channel_sums_kernel() {
  static Kernel k = tritium::kernel(
      "channel_norm_sums",
      [](P x, P dy, P mean, P rstd, P out_a, P out_b, tl::i64 N, tl::i64 C, tl::i64 S, tl::i64 sN, tl::i64 sC,
         tl::i64 sS, tl::i64 stN, tl::i64 stS, tl::i64 cpg, tl::i64 tiles_per_program, int MODE, bool CENTER,
         bool STAT_ALONG_S, int ACC, int BC, int BS) {
        const DType acc = static_cast<DType>(ACC);
        auto c = tl::program_id(0).to(tl::int64) * BC + tl::arange(0, BC).to(tl::int64);
        auto split = tl::program_id(1).to(tl::int64);
        auto cm = c < C;
        auto s_blocks = (S + (BS - 1)) / BS;
        auto t0 = split * tiles_per_program;
        auto t1 = tl::minimum(N * s_blocks, t0 + tiles_per_program);
        auto A = tl::zeros({BC, BS}, acc), B = tl::zeros({BC, BS}, acc);
        for (auto t : tl::range(t0, t1)) {
          auto n = t / s_blocks;
          auto s = (t % s_blocks) * BS + tl::arange(0, BS).to(tl::int64);
          auto m = cm(tl::_, tl::None) & (s < S)(tl::None, tl::_);
          auto off = n * sN + c(tl::_, tl::None) * sC + s(tl::None, tl::_) * sS;
          auto xv = tl::load(x + off, m, 0).to(acc);
          if (MODE == 0) {
            A = A + xv;
          } else {
            // Statistics per channel row (batch and group norm) or per position (rms_norm's columns).
            auto stat = [&](P p) {
              if (STAT_ALONG_S) return tl::load(p + n * stN + s * stS, s < S, 0).to(acc)(tl::None, tl::_);
              return tl::load(p + n * stN + c / cpg, cm, 0).to(acc)(tl::_, tl::None);
            };
            auto centred = CENTER ? xv - stat(mean) : xv;
            if (MODE == 1) {
              auto d = tl::where(m, centred, 0);
              A = A + d * d;
            } else {
              auto g = tl::load(dy + off, m, 0).to(acc);
              A = A + g;
              B = B + g * centred * stat(rstd);
            }
          }
        }
        tl::store(out_a + split * C + c, tl::sum(A, 1), cm);
        if (MODE == 2) tl::store(out_b + split * C + c, tl::sum(B, 1), cm);
      });
  return k;
}

Kernel& channel_affine_kernel() {
  static Kernel k = tritium::kernel(
      "channel_norm_affine",
      [](P u, P v, P out, P a, P b, P d, P m, tl::i64 C, tl::i64 S, tl::i64 sN, tl::i64 sC, tl::i64 sS, tl::i64 cN,
         tl::i64 c_blocks, tl::i64 s_blocks, bool HAS_V, int CENTER, int ACC, int BC, int BS) {
        const DType acc = static_cast<DType>(ACC);
        auto pid = tl::program_id(0).to(tl::int64);
        auto cb = pid % c_blocks;
        auto t = pid / c_blocks;
        auto n = t / s_blocks;
        auto c = cb * BC + tl::arange(0, BC).to(tl::int64);
        auto s = (t % s_blocks) * BS + tl::arange(0, BS).to(tl::int64);
        auto cm = c < C;
        auto mask = cm(tl::_, tl::None) & (s < S)(tl::None, tl::_);
        auto off = n * sN + c(tl::_, tl::None) * sC + s(tl::None, tl::_) * sS;
        auto k_ = n * cN + c;
        auto coef = [&](P p) { return tl::load(p + k_, cm, 0).to(acc)(tl::_, tl::None); };
        // The centring subtracts before scaling: (x - mean) * a, not a * x - a * mean, which
        // cancels when rstd is large.
        auto input = [&](P p, int which) {
          auto x = tl::load(p + off, mask, 0).to(acc);
          return CENTER == which ? x - coef(m) : x;
        };
        auto val = coef(a) * input(u, 1) + coef(d);
        if (HAS_V) val = val + coef(b) * input(v, 2);
        tl::store(out + off, val, mask);
      });
  return k;
}

namespace {

// The tile [BC, BS]: along S when positions are contiguous, along C when channels are.
std::pair<int64_t, int64_t> tile_for(const ChannelView& v) {
  if (v.sC == 1 && v.sS != 1) {
    int64_t bc = std::clamp<int64_t>(next_power_of_2(v.C), 16, 256);
    return {bc, std::clamp<int64_t>(kTile / bc, 1, next_power_of_2(v.S))};
  }
  int64_t bs = std::clamp<int64_t>(next_power_of_2(v.S), 16, 1024);
  return {std::clamp<int64_t>(kTile / bs, 1, next_power_of_2(v.C)), bs};
}

bool is_channels_last(const Tensor& x) {
  if (x.dim() < 3 || x.stride(1) != 1) return false;
  int64_t expect = x.size(1);
  for (int d = x.dim() - 1; d >= 2; --d) {
    if (x.size(d) != 1 && x.stride(d) != expect) return false;
    expect *= x.size(d);
  }
  return x.size(0) == 1 || x.stride(0) == expect;
}

int64_t spatial(const Tensor& x) {
  int64_t s = 1;
  for (int d = 2; d < x.dim(); ++d) s *= x.size(d);
  return s;
}

}  // namespace

ChannelView channel_view(const Tensor& x_in) {
  ChannelView v;
  if (x_in.dim() >= 3 && !x_in.is_contiguous() && is_channels_last(x_in)) {
    v.base = x_in;
    v.N = 1, v.C = x_in.size(1), v.S = x_in.size(0) * spatial(x_in);
    v.sN = 0, v.sC = 1, v.sS = x_in.size(1);
    return v;
  }
  v.base = contiguous(x_in);
  if (x_in.dim() == 2) {
    v.N = 1, v.C = x_in.size(1), v.S = x_in.size(0);
    v.sN = 0, v.sC = 1, v.sS = v.C;
  } else {
    v.N = x_in.size(0), v.C = x_in.size(1), v.S = spatial(x_in);
    v.sN = v.C * v.S, v.sC = v.S, v.sS = 1;
  }
  return v;
}

Tensor empty_like_layout(const ChannelView& v, const Tensor& x, DType dtype) {
  if (x.dim() >= 3 && v.sC == 1) {  // channels-last: allocate [N, *, C] and view it as [N, C, *]
    Shape shape{x.size(0)};
    std::vector<int> back{0, x.dim() - 1};
    for (int d = 2; d < x.dim(); ++d) shape.push_back(x.size(d)), back.push_back(d - 1);
    shape.push_back(x.size(1));
    std::sort(back.begin() + 2, back.end());
    return Tensor::empty(shape, dtype, x.device()).permute(back);
  }
  return Tensor::empty(x.shape(), dtype, x.device());
}

ChannelView same_view(const ChannelView& like, const Tensor& t) {
  ChannelView v = like;
  if (t.strides() == like.base.strides()) {
    v.base = t;
    return v;
  }
  Tensor copy = empty_like_layout(like, t, t.dtype());
  copy_(copy, t);
  v.base = copy;
  return v;
}

std::pair<Tensor, Tensor> channel_sums(const ChannelView& x, const ChannelView* dy, const Tensor& mean,
                                       const Tensor& rstd, const StatIndex& at, ChannelSum what, DType acc) {
  auto [bc, bs] = tile_for(x);
  const int64_t c_blocks = cdiv(x.C, bc), tiles = x.N * cdiv(x.S, bs);
  // Split the tiles when the channel blocks alone leave the device idle.
  const int64_t fill = reduce_device(x.base.device()).fill;
  int64_t splits = c_blocks >= fill ? 1 : std::clamp<int64_t>(cdiv(fill, c_blocks), 1, std::max<int64_t>(tiles, 1));
  const int64_t per = std::max<int64_t>(cdiv(tiles, splits), 1);
  splits = std::max<int64_t>(cdiv(tiles, per), 1);
  Tensor a = Tensor::empty({splits, x.C}, acc, x.base.device());
  Tensor b = what == ChannelSum::grad ? Tensor::empty({splits, x.C}, acc, x.base.device()) : a;
  const Tensor& xs = x.base;
  const Tensor& g = dy ? dy->base : xs;
  const Tensor& m = mean.defined() ? mean : a;
  const Tensor& r = rstd.defined() ? rstd : a;
  channel_sums_kernel()[{c_blocks, splits}](xs, g, m, r, a, b, x.N, x.C, x.S, x.sN, x.sC, x.sS, at.stN, at.stS, at.cpg, per,
                                    static_cast<int>(what), mean.defined(), at.stS != 0, static_cast<int>(acc),
                                    static_cast<int>(bc), static_cast<int>(bs));
  if (splits == 1) return {a.reshape({x.C}), what == ChannelSum::grad ? b.reshape({x.C}) : Tensor()};
  return {sum(a, {0}), what == ChannelSum::grad ? sum(b, {0}) : Tensor()};
}

void channel_affine(const ChannelView& u, const ChannelView* v, Tensor& out, const Tensor& a, const Tensor& b,
                    const Tensor& d, int64_t cN, const Tensor& center, Centre which) {
  auto [bc, bs] = tile_for(u);
  const int64_t c_blocks = cdiv(u.C, bc), s_blocks = cdiv(u.S, bs);
  const int64_t programs = c_blocks * u.N * s_blocks;
  if (programs == 0) return;
  channel_affine_kernel()[{programs}](u.base, v ? v->base : u.base, out, a, b.defined() ? b : a, d,
                              center.defined() ? center : a, u.C, u.S, u.sN, u.sC, u.sS, cN, c_blocks, s_blocks,
                              v != nullptr, static_cast<int>(center.defined() ? which : Centre::none),
                              static_cast<int>(a.dtype()),
                              static_cast<int>(bc), static_cast<int>(bs));
}

}  // namespace tritium::ops::detail
