// layer_norm and its backward over the trailing dims (torch.nn.functional.layer_norm), after
// Triton's tutorial 05 (docs/ops.md).
//
// The input is made contiguous and viewed as [M, N] (N = the normalised dims). Forward: one
// program per row, in BLOCK chunks: a pass for the mean, one for the variance (of x - mean, the
// stable two-pass form), one for y = (x - mean) * rstd * w + b; mean and rstd ([M], f32 or f64)
// are kept for the backward. A variance that overflows the accumulator makes the row NaN. Backward: one program per row for dx (one pass for the two row sums
// c1 = mean(xhat * w * dy), c2 = mean(w * dy), one for dx = (w * dy - xhat * c1 - c2) * rstd),
// and dw = sum(dy * xhat), db = sum(dy) over the rows as a column reduction cut by the reduction
// plan (ops/reduce_plan.h: column blocks, and chunks of rows when the blocks alone leave the device
// idle, their partials summed in chunk order by one finishing launch): deterministic, unlike the tutorial's locked
// accumulation. f16/bf16 compute in f32.
#include <algorithm>
#include <cmath>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/ops.h"
#include "ops/reduce_plan.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;
using detail::shape_str;

constexpr int64_t kBlock = 1024;  // row chunk per step
// On the CPU: the sums are [BLOCK] blocks carried through the row's loop, which the CPU generator
// keeps in a stack buffer (loaded and stored every step) unless they fit a few vector registers,
// as the reductions' CPU tiles (ops/reduce_plan.h).
constexpr int64_t kCpuBlock = 64;

Kernel& forward_kernel() {
  static Kernel k = tritium::kernel(
      "layer_norm_fwd",
      [](P x, P w, P b, P y, P mean_out, P rstd_out, tl::i64 N, tl::f64 eps, int ACC, bool AFFINE, int BLOCK) {
        const DType acc = static_cast<DType>(ACC);
        auto row = tl::program_id(0).to(tl::int64);
        auto xr = x + row * N;
        auto yr = y + row * N;
        auto cols = tl::arange(0, BLOCK);
        auto load = [&](P p, const tl::tensor& c) { return tl::load(p + c, c < N, 0).to(acc); };
        auto sum = tl::zeros({BLOCK}, acc);
        for (auto c0 : tl::range(0, N, BLOCK)) sum = sum + load(xr, c0 + cols);
        auto mean = tl::sum(sum, 0) / N.to(acc);
        auto sq = tl::zeros({BLOCK}, acc);
        for (auto c0 : tl::range(0, N, BLOCK)) {
          auto c = c0 + cols;
          auto d = tl::where(c < N, load(xr, c) - mean, 0);
          sq = sq + d * d;
        }
        // A variance past the accumulator's range (an f32 row of values near 1e20) would give rstd
        // 0 and a row of zeros that looks like data; it gives NaN, as PyTorch's layer_norm.
        auto var = tl::sum(sq, 0) / N.to(acc);
        auto rstd = tl::where(var < INFINITY, 1 / tl::sqrt(var + eps.to(acc)), NAN);
        tl::store(mean_out + row, mean);
        tl::store(rstd_out + row, rstd);
        for (auto c0 : tl::range(0, N, BLOCK)) {
          auto c = c0 + cols;
          auto v = (load(xr, c) - mean) * rstd;
          if (AFFINE) v = v * load(w, c) + load(b, c);
          tl::store(yr + c, v, c < N);
        }
      },
      {"x", "w", "b", "y", "mean", "rstd", "N", "eps", "ACC", "AFFINE", "BLOCK"});
  return k;
}

Kernel& backward_dx_kernel() {
  static Kernel k = tritium::kernel(
      "layer_norm_bwd_dx",
      [](P dy, P x, P w, P mean, P rstd, P dx, tl::i64 N, int ACC, bool AFFINE, int BLOCK) {
        const DType acc = static_cast<DType>(ACC);
        auto row = tl::program_id(0).to(tl::int64);
        auto cols = tl::arange(0, BLOCK);
        auto load = [&](P p, const tl::tensor& c) { return tl::load(p + c, c < N, 0).to(acc); };
        auto m = tl::load(mean + row).to(acc), r = tl::load(rstd + row).to(acc);
        auto wdy_at = [&](const tl::tensor& c) {
          auto g = load(dy + row * N, c);
          return AFFINE ? g * load(w, c) : g;
        };
        auto s1 = tl::zeros({BLOCK}, acc), s2 = tl::zeros({BLOCK}, acc);
        for (auto c0 : tl::range(0, N, BLOCK)) {
          auto c = c0 + cols;
          auto xhat = tl::where(c < N, (load(x + row * N, c) - m) * r, 0);
          auto wdy = wdy_at(c);
          s1 = s1 + xhat * wdy;
          s2 = s2 + wdy;
        }
        auto c1 = tl::sum(s1, 0) / N.to(acc), c2 = tl::sum(s2, 0) / N.to(acc);
        for (auto c0 : tl::range(0, N, BLOCK)) {
          auto c = c0 + cols;
          auto xhat = (load(x + row * N, c) - m) * r;
          tl::store(dx + row * N + c, (wdy_at(c) - (xhat * c1 + c2)) * r, c < N);
        }
      },
      {"dy", "x", "w", "mean", "rstd", "dx", "N", "ACC", "AFFINE", "BLOCK"});
  return k;
}

// dw and db partial sums: program (i, s) sums rows [s * CHUNK, min(M, (s + 1) * CHUNK)) of the
// column block i into row s of the [S, N] partials (S = 1: the sums themselves).
Kernel& backward_dwdb_kernel() {
  static Kernel k = tritium::kernel(
      "layer_norm_bwd_dwdb",
      [](P dy, P x, P mean, P rstd, P dw, P db, tl::i64 M, tl::i64 N, tl::i64 CHUNK, int ACC, int BM, int BN) {
        const DType acc = static_cast<DType>(ACC);
        auto cols = tl::program_id(0).to(tl::int64) * BN + tl::arange(0, BN);
        auto part = tl::program_id(1).to(tl::int64);
        auto first = part * CHUNK;
        auto last = tl::minimum(first + CHUNK, M);
        auto rows0 = tl::arange(0, BM).to(tl::int64);
        auto sw = tl::zeros({BM, BN}, acc), sb = tl::zeros({BM, BN}, acc);
        for (auto r0 : tl::range(first, last, BM)) {
          auto rows = r0 + rows0;
          auto rm = rows < last;
          auto mask = rm(tl::_, tl::None) & (cols < N)(tl::None, tl::_);
          auto off = rows(tl::_, tl::None) * N + cols(tl::None, tl::_);
          auto g = tl::load(dy + off, mask, 0).to(acc);
          auto mu = tl::load(mean + rows, rm, 0).to(acc)(tl::_, tl::None);
          auto rs = tl::load(rstd + rows, rm, 0).to(acc)(tl::_, tl::None);
          auto xhat = (tl::load(x + off, mask, 0).to(acc) - mu) * rs;
          sw = sw + g * xhat;
          sb = sb + g;
        }
        tl::store(dw + part * N + cols, tl::sum(sw, 0), cols < N);
        tl::store(db + part * N + cols, tl::sum(sb, 0), cols < N);
      },
      {"dy", "x", "mean", "rstd", "dw", "db", "M", "N", "CHUNK", "ACC", "BM", "BN"});
  return k;
}

// The [S, N] partials of dw and db summed over S in one launch (two sums of the reduction plan
// were four: each cut S into chunks again), written in the parameters' dtype. Program i sums the
// columns [i * BN, (i + 1) * BN) in chunk order.
Kernel& dwdb_finish_kernel() {
  static Kernel k = tritium::kernel(
      "layer_norm_bwd_dwdb_finish",
      [](P dw_part, P db_part, P dw, P db, tl::i64 S, tl::i64 N, int ACC, int ODT, int BS, int BN) {
        const DType acc = static_cast<DType>(ACC);
        auto cols = tl::program_id(0).to(tl::int64) * BN + tl::arange(0, BN);
        auto cm = (cols < N)(tl::None, tl::_);
        auto sw = tl::zeros({BS, BN}, acc), sb = tl::zeros({BS, BN}, acc);
        for (auto s0 : tl::range(0, S, BS)) {
          auto rows = s0 + tl::arange(0, BS).to(tl::int64);
          auto mask = (rows < S)(tl::_, tl::None) & cm;
          auto off = rows(tl::_, tl::None) * N + cols(tl::None, tl::_);
          sw = sw + tl::load(dw_part + off, mask, 0).to(acc);
          sb = sb + tl::load(db_part + off, mask, 0).to(acc);
        }
        const DType out = static_cast<DType>(ODT);
        tl::store(dw + cols, tl::sum(sw, 0).to(out), cols < N);
        tl::store(db + cols, tl::sum(sb, 0).to(out), cols < N);
      },
      {"dw_part", "db_part", "dw", "db", "S", "N", "ACC", "ODT", "BS", "BN"});
  return k;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * shape[d];
  return st;
}

int64_t block_for(int64_t N, const Device& device) {
  return std::clamp<int64_t>(next_power_of_2(N), 16, device.is_cpu() ? kCpuBlock : kBlock);
}

// [M, N] around the normalised trailing dims; checks shapes.
std::pair<int64_t, int64_t> rows_cols(const char* op, const Tensor& x, const Shape& normalized) {
  if (normalized.empty()) fail("{}: normalized_shape is empty", op);
  if (normalized.size() > static_cast<size_t>(x.dim()) ||
      !std::equal(normalized.begin(), normalized.end(), x.shape().end() - static_cast<std::ptrdiff_t>(normalized.size())))
    fail("{}: normalized_shape {} does not match the trailing dims of input {}", op, shape_str(normalized),
         shape_str(x.shape()));
  int64_t N = 1;
  for (int64_t d : normalized) N *= d;
  return {N == 0 ? 0 : x.numel() / N, N};
}

}  // namespace

LayerNormResult layer_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                           double eps) {
  const char* op = "layer_norm";
  std::vector<const Tensor*> ts{&x_in};
  if (weight.defined()) ts.push_back(&weight);
  if (bias.defined()) ts.push_back(&bias);
  detail::check_tensors(op, ts);
  if (!is_float(x_in.dtype())) fail("{}: expected a floating-point input, got {}", op, dtype_name(x_in.dtype()));
  auto [M, N] = rows_cols(op, x_in, normalized_shape);
  if (bias.defined() && !weight.defined()) fail("{}: a bias without a weight is not supported", op);
  for (const Tensor* t : {&weight, &bias})
    if (t->defined() && t->shape() != normalized_shape)
      fail("{}: weight and bias must have the normalized shape {}, got {}", op, shape_str(normalized_shape),
           shape_str(t->shape()));
  if (!(eps >= 0)) fail("{}: eps must be >= 0, got {}", op, eps);
  const DType acc = detail::math_type(x_in.dtype());
  Tensor x = contiguous(x_in);
  LayerNormResult r;
  r.y = Tensor::empty(x.shape(), x.dtype(), x.device());
  r.mean = Tensor::empty({M}, acc, x.device());
  r.rstd = Tensor::empty({M}, acc, x.device());
  if (M == 0 || N == 0) return r;
  // A weight without a bias (LayerNorm(bias=False)) runs the affine kernel with a zero bias.
  Tensor w = weight.defined() ? contiguous(to_dtype(weight, x.dtype())) : x;
  Tensor b = bias.defined() ? contiguous(to_dtype(bias, x.dtype())) : weight.defined() ? zeros(normalized_shape, x.dtype(), x.device()) : x;
  forward_kernel()[{M}](x, w, b, r.y, r.mean, r.rstd, N, eps, static_cast<int>(acc), weight.defined(),
                        static_cast<int>(block_for(N, x.device())));
  return r;
}

LayerNormGrads layer_norm_backward(const Tensor& grad, const Tensor& x_in, const Shape& normalized_shape,
                                   const Tensor& weight, const Tensor& mean, const Tensor& rstd) {
  const char* op = "layer_norm_backward";
  std::vector<const Tensor*> ts{&grad, &x_in, &mean, &rstd};
  if (weight.defined()) ts.push_back(&weight);
  detail::check_tensors(op, ts);
  if (grad.shape() != x_in.shape())
    fail("{}: grad shape {} differs from input shape {}", op, shape_str(grad.shape()), shape_str(x_in.shape()));
  auto [M, N] = rows_cols(op, x_in, normalized_shape);
  if (mean.numel() != M || rstd.numel() != M)
    fail("{}: mean and rstd must hold {} rows, got {} and {}", op, M, mean.numel(), rstd.numel());
  const DType acc = detail::math_type(x_in.dtype());
  Tensor x = contiguous(x_in), g = contiguous(to_dtype(grad, x_in.dtype()));
  LayerNormGrads r;
  r.dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (weight.defined()) {
    r.dweight = Tensor::empty(normalized_shape, weight.dtype(), x.device());
    r.dbias = Tensor::empty(normalized_shape, weight.dtype(), x.device());
  }
  if (M == 0 || N == 0) {
    if (weight.defined()) fill_(r.dweight, Scalar(int64_t{0})), fill_(r.dbias, Scalar(int64_t{0}));
    return r;
  }
  Tensor w = weight.defined() ? contiguous(to_dtype(weight, x.dtype())) : x;
  Tensor m = contiguous(to_dtype(mean, acc)), s = contiguous(to_dtype(rstd, acc));
  backward_dx_kernel()[{M}](g, x, w, m, s, r.dx, N, static_cast<int>(acc), weight.defined(),
                            static_cast<int>(block_for(N, x.device())));
  if (weight.defined()) {
    // A column reduction of [M, N] over the rows: the reduction plan's column tiles, and the rows
    // cut into chunks when there are fewer column blocks than the device has room for (N = 1024
    // gives 4 column blocks for 132 SMs), summed in chunk order by a second reduction.
    const detail::ReducePlan plan = detail::plan_reduce(1, M, N, detail::reduce_device(x.device()));
    const int64_t BN = plan.block_k, BM = std::max<int64_t>(1, plan.block_r / 2);  // two accumulators
    Tensor dw = Tensor::empty({plan.chunks, N}, acc, x.device()), db = Tensor::empty({plan.chunks, N}, acc, x.device());
    backward_dwdb_kernel()[{cdiv(N, BN), plan.chunks}](g, x, m, s, dw, db, M, N, plan.chunk, static_cast<int>(acc),
                                                       static_cast<int>(BM), static_cast<int>(BN));
    if (plan.chunks > 1) {
      constexpr int64_t kFinishBS = 64, kFinishBN = 32;
      dwdb_finish_kernel()[{cdiv(N, kFinishBN)}](dw, db, r.dweight, r.dbias, plan.chunks, N, static_cast<int>(acc),
                                                  static_cast<int>(weight.dtype()), static_cast<int>(kFinishBS),
                                                  static_cast<int>(kFinishBN));
    } else {
      r.dweight = to_dtype(dw, weight.dtype()).as_strided(normalized_shape, contiguous_strides(normalized_shape), 0);
      r.dbias = to_dtype(db, weight.dtype()).as_strided(normalized_shape, contiguous_strides(normalized_shape), 0);
    }
  }
  return r;
}

}  // namespace tritium::ops
