// rms_norm and its backward (torch.nn.functional.rms_norm; docs/ops.md).
//
// The input is made contiguous and viewed as [M, N] (N = the normalised dims). f16/bf16 compute
// in f32.
// Forward: one program per row. A row of at most kOneBlock elements is loaded once and kept in
// registers (rstd = 1 / sqrt(mean(x^2) + eps), then y = x * rstd * w from the registers); longer
// rows loop in kBlock chunks (a pass for rstd, one for y). rstd [M] is kept for the backward.
// Backward, rows of at most kOneBlock (Liger-Kernel's scheme): P programs each take a run of
// rows, load each row's dy and x once, store dx = rstd (w dy - x rstd^2 mean(x w dy)) and add
// dy * x * rstd into a [N] accumulator in registers, stored as row p of a [P, N] partial buffer
// that a second small kernel sums over P (deterministic: no atomics). Before (s48) dx was a row
// kernel reading each row twice and dw a column reduction reading dy and x a third time.
// Longer rows keep that path: a row kernel for dx (two passes) and dw as a column reduction
// (ops/norm_channels.h, split over programs when the columns are few).
#include <algorithm>
#include <cmath>
#include <limits>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/norm.h"
#include "ops/norm_channels.h"
#include "ops/norm_loss_kernels.h"
#include "ops/reduce_plan.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {
using P = tl::ptr<tl::any>;
using detail::shape_str;
constexpr int64_t kBlock = 2048;     // row chunk per step of rows longer than kOneBlock
constexpr int64_t kOneBlock = 8192;  // rows up to this long are held in registers
// Warps for a row block of `block` elements: 8 to 16 elements (16-32 bytes of bf16) a thread
// (Liger's calculate_settings: 4 warps below 2048, 8 to 4096, 16 from 8192).
int warps_for(int64_t block) { return block >= 8192 ? 16 : block >= 2048 ? 8 : 4; }
// The backward's warps: 8 elements a thread (4 to 16 warps). A thread keeps dy, x, the weight, the
// weight gradient's accumulator and the next row's loads for each of its elements: at 4096 columns
// 8 warps took 119 registers in bf16 (2 CTAs an SM, 16 warps) and 150 in f32 (1 CTA, 8 warps),
// 16 warps take 63 (2 CTAs, 32 warps) and 80 (1 CTA, 16 warps), with half the instructions a
// thread on each row's path (584 -> 368 SASS in bf16).
int backward_warps(int64_t block) { return static_cast<int>(std::clamp<int64_t>(block / 256, 4, 16)); }
}  // namespace

Kernel& detail::rms_norm_forward_kernel() {
  static Kernel k = tritium::kernel(
      "rms_norm_fwd", [](P x, P w, P y, P rstd_out, tl::i64 N, tl::f64 eps, int ACC, bool AFFINE, bool ONE, int BLOCK) {
        const DType acc = static_cast<DType>(ACC);
        auto row = tl::program_id(0).to(tl::int64);
        auto cols = tl::arange(0, BLOCK);
        auto load = [&](P p, const tl::tensor& c) { return tl::load(p + c, c < N, 0).to(acc); };
        if (ONE) {  // the row in registers: x read once
          auto v = load(x + row * N, cols);
          auto rstd = 1 / tl::sqrt(tl::sum(v * v, 0) / N.to(acc) + eps.to(acc));
          tl::store(rstd_out + row, rstd);
          auto out = v * rstd;
          if (AFFINE) out = out * load(w, cols);
          tl::store(y + row * N + cols, out, cols < N);
          return;
        }
        auto sq = tl::zeros({BLOCK}, acc);
        for (auto c0 : tl::range(0, N, BLOCK)) {
          auto v = load(x + row * N, c0 + cols);
          sq = sq + v * v;
        }
        auto rstd = 1 / tl::sqrt(tl::sum(sq, 0) / N.to(acc) + eps.to(acc));
        tl::store(rstd_out + row, rstd);
        for (auto c0 : tl::range(0, N, BLOCK)) {
          auto c = c0 + cols;
          auto v = load(x + row * N, c) * rstd;
          if (AFFINE) v = v * load(w, c);
          tl::store(y + row * N + c, v, c < N);
        }
      });
  return k;
}

Kernel& detail::rms_norm_backward_dx_kernel() {
  static Kernel k = tritium::kernel(
      "rms_norm_bwd_dx", [](P dy, P x, P w, P rstd, P dx, tl::i64 N, int ACC, bool AFFINE, int BLOCK) {
        const DType acc = static_cast<DType>(ACC);
        auto row = tl::program_id(0).to(tl::int64);
        auto cols = tl::arange(0, BLOCK);
        auto load = [&](P p, const tl::tensor& c) { return tl::load(p + c, c < N, 0).to(acc); };
        auto r = tl::load(rstd + row).to(acc);
        auto wdy_at = [&](const tl::tensor& c) {
          auto g = load(dy + row * N, c);
          return AFFINE ? g * load(w, c) : g;
        };
        auto s = tl::zeros({BLOCK}, acc);
        for (auto c0 : tl::range(0, N, BLOCK)) {
          auto c = c0 + cols;
          s = s + load(x + row * N, c) * wdy_at(c);
        }
        auto coef = tl::sum(s, 0) * r * r / N.to(acc);  // mean(xhat w dy) * rstd, so that x * coef = xhat * c
        for (auto c0 : tl::range(0, N, BLOCK)) {
          auto c = c0 + cols;
          tl::store(dx + row * N + c, (wdy_at(c) - load(x + row * N, c) * coef) * r, c < N);
        }
      });
  return k;
}

Kernel& detail::rms_norm_backward_kernel() {
  static Kernel k = tritium::kernel(
      "rms_norm_bwd",
      [](P dy, P x, P w, P rstd, P dx, P dw_part, tl::i64 M, tl::i64 N, tl::i64 rows_per_program, int ACC, bool AFFINE,
         int BLOCK) {
        const DType acc = static_cast<DType>(ACC);
        auto p = tl::program_id(0).to(tl::int64);
        auto r0 = p * rows_per_program;
        auto r1 = tl::minimum(r0 + rows_per_program, M);
        auto cols = tl::arange(0, BLOCK);
        auto cm = cols < N;
        auto load = [&](P q) { return tl::load(q + cols, cm, 0).to(acc); };
        tl::tensor wv, dw;
        if (AFFINE) wv = load(w), dw = tl::zeros({BLOCK}, acc);
        for (auto row : tl::range(r0, r1)) {
          auto g = load(dy + row * N);
          auto xv = load(x + row * N);
          auto r = tl::load(rstd + row).to(acc);
          auto wdy = AFFINE ? g * wv : g;
          auto coef = tl::sum(xv * wdy, 0) * r * r / N.to(acc);  // mean(xhat w dy) * rstd
          tl::store(dx + row * N + cols, (wdy - xv * coef) * r, cm);
          if (AFFINE) dw = dw + g * (xv * r);
        }
        if (AFFINE) tl::store(dw_part + p * N + cols, dw, cm);
      });
  return k;
}

Kernel& detail::rms_norm_weight_grad_kernel() {
  static Kernel k = tritium::kernel(
      "rms_norm_bwd_dw", [](P part, P out, tl::i64 programs, tl::i64 N, int ACC, int BP, int BN) {
        const DType acc = static_cast<DType>(ACC);
        auto c = tl::program_id(0).to(tl::int64) * BN + tl::arange(0, BN);
        auto cm = (c < N)(tl::None, tl::_);
        auto s = tl::zeros({BP, BN}, acc);
        for (auto p0 : tl::range(0, programs, BP)) {
          auto pr = (p0 + tl::arange(0, BP))(tl::_, tl::None);
          s = s + tl::load(part + pr * N + c(tl::None, tl::_), (pr < programs) && cm, 0).to(acc);
        }
        tl::store(out + c, tl::sum(s, 0), c < N);  // rounded to the weight's dtype by the store
      });
  return k;
}

namespace {

// The weight gradient's partials [P, N] are summed in [kPartialTile / BN, BN] tiles, BN at most
// kPartialColumns (several programs along N for a short sum over P).
constexpr int64_t kPartialColumns = 32, kPartialTile = 2048;
// Each backward program takes at least kMinRows rows: its [N] partial costs a write and a read.
constexpr int64_t kMinRows = 4;

Options launch_options(const Tensor& x, int warps) {
  return Options{.num_warps = x.device().is_cuda() ? warps : 4, .num_stages = 3, .device = x.device()};
}

// Programs of the fused backward: 2 per SM on CUDA (2 CTAs of 16 warps fit an SM at bf16's 63
// registers; f32's 80 run as two waves of equal work), one per pool thread on the CPU.
int64_t backward_programs(int64_t M, Device device) {
  const int64_t fill = detail::reduce_device(device).fill;  // 4 an SM on CUDA
  const int64_t want = device.is_cuda() ? std::max<int64_t>(1, fill / 2) : fill;
  return std::clamp<int64_t>(cdiv(M, kMinRows), 1, want);
}

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

// eps None: the epsilon of the type PyTorch computes in (its opmath type): f32's for f16, bf16
// and f32 (torch.finfo(torch.float32).eps), f64's for f64 (checked against torch 2.15).
double default_eps(DType d) {
  return d == DType::f64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
}

}  // namespace

NormResult rms_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps_in) {
  const char* op = "rms_norm";
  std::vector<const Tensor*> ts{&x_in};
  if (weight.defined()) ts.push_back(&weight);
  detail::check_tensors(op, ts);
  if (!is_float(x_in.dtype())) fail("{}: expected a floating-point input, got {}", op, dtype_name(x_in.dtype()));
  auto [M, N] = rows_cols(op, x_in, normalized_shape);
  if (weight.defined() && weight.shape() != normalized_shape)
    fail("{}: expected weight of the normalized shape {}, got {}", op, shape_str(normalized_shape),
         shape_str(weight.shape()));
  const double eps = eps_in.value_or(default_eps(x_in.dtype()));
  if (!(eps >= 0)) fail("{}: eps must be >= 0, got {}", op, eps);
  const DType acc = detail::math_type(x_in.dtype());
  Tensor x = contiguous(x_in);
  NormResult r;
  r.y = Tensor::empty(x.shape(), x.dtype(), x.device());
  r.rstd = Tensor::empty({M}, acc, x.device());
  if (M == 0 || N == 0) return r;
  Tensor w = weight.defined() ? contiguous(to_dtype(weight, x.dtype())) : x;
  const bool one = N <= kOneBlock;
  const int64_t block = one ? std::max<int64_t>(16, next_power_of_2(N)) : kBlock;
  detail::rms_norm_forward_kernel()[{M}](x, w, r.y, r.rstd, N, eps, static_cast<int>(acc), weight.defined(), one,
                                         static_cast<int>(block), launch_options(x, warps_for(block)));
  return r;
}

NormGrads rms_norm_backward(const Tensor& grad, const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight,
                            const Tensor& rstd) {
  const char* op = "rms_norm_backward";
  std::vector<const Tensor*> ts{&grad, &x_in, &rstd};
  if (weight.defined()) ts.push_back(&weight);
  detail::check_tensors(op, ts);
  if (grad.shape() != x_in.shape())
    fail("{}: grad shape {} differs from input shape {}", op, shape_str(grad.shape()), shape_str(x_in.shape()));
  auto [M, N] = rows_cols(op, x_in, normalized_shape);
  if (rstd.numel() != M) fail("{}: rstd must hold {} rows, got {}", op, M, rstd.numel());
  const DType acc = detail::math_type(x_in.dtype());
  Tensor x = contiguous(x_in), g = contiguous(to_dtype(grad, x_in.dtype()));
  Tensor s = contiguous(to_dtype(rstd, acc));
  NormGrads r;
  r.dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (M == 0 || N == 0) {
    if (weight.defined()) r.dweight = zeros(normalized_shape, weight.dtype(), x.device());
    return r;
  }
  Tensor w = weight.defined() ? contiguous(to_dtype(weight, x.dtype())) : x;
  if (N <= kOneBlock) {
    // dx and the weight's partial sums in one pass over dy and x; the partials summed over P.
    const int64_t block = std::max<int64_t>(16, next_power_of_2(N));
    const int64_t P = backward_programs(M, x.device()), per = cdiv(M, P);
    const int64_t programs = cdiv(M, per);
    Tensor part = weight.defined() ? Tensor::empty({programs, N}, acc, x.device()) : x;
    detail::rms_norm_backward_kernel()[{programs}](g, x, w, s, r.dx, part, M, N, per, static_cast<int>(acc),
                                                   weight.defined(), static_cast<int>(block),
                                                   launch_options(x, backward_warps(block)));
    if (weight.defined()) {
      r.dweight = Tensor::empty(normalized_shape, weight.dtype(), x.device());
      const int64_t bn = std::clamp<int64_t>(next_power_of_2(N), 16, kPartialColumns);
      const int64_t bp = std::clamp<int64_t>(kPartialTile / bn, 1, next_power_of_2(programs));
      detail::rms_norm_weight_grad_kernel()[{cdiv(N, bn)}](part, r.dweight, programs, N, static_cast<int>(acc),
                                                           static_cast<int>(bp), static_cast<int>(bn));
    }
    return r;
  }
  detail::rms_norm_backward_dx_kernel()[{M}](g, x, w, s, r.dx, N, static_cast<int>(acc), weight.defined(),
                                             static_cast<int>(kBlock), launch_options(x, warps_for(kBlock)));
  if (weight.defined()) {
    // Columns as channels: (1, N, M) with column j at stride 1 and row i at stride N; rstd per row.
    detail::ChannelView xv{x, 1, N, M, 0, 1, N}, gv{g, 1, N, M, 0, 1, N};
    auto [unused, dw] = detail::channel_sums(xv, &gv, Tensor(), s, {.stN = 0, .stS = 1, .cpg = 1},
                                             detail::ChannelSum::grad, acc);
    r.dweight = to_dtype(dw, weight.dtype()).reshape(normalized_shape);
  }
  return r;
}

}  // namespace tritium::ops
