// rms_norm and its backward (torch.nn.functional.rms_norm; docs/ops.md).
//
// The input is made contiguous and viewed as [M, N] (N = the normalised dims). Forward: one
// program per row: a pass for rstd = 1 / sqrt(mean(x^2) + eps), one for y = x * rstd * w (rstd
// [M] kept for the backward). Backward: one program per row for dx = rstd (w dy - xhat c),
// c = mean(xhat w dy), xhat = x rstd; dw = sum over rows of dy * xhat is a column reduction
// (ops/norm_channels.h, split over programs when the columns are few). f16/bf16 compute in f32.
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

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {
using P = tl::ptr<tl::any>;
using detail::shape_str;
constexpr int64_t kBlock = 2048;  // row chunk per step
}  // namespace

Kernel& detail::rms_norm_forward_kernel() {
  static Kernel k = tritium::kernel(
      "rms_norm_fwd", [](P x, P w, P y, P rstd_out, tl::i64 N, tl::f64 eps, int ACC, bool AFFINE, int BLOCK) {
        const DType acc = static_cast<DType>(ACC);
        auto row = tl::program_id(0).to(tl::int64);
        auto cols = tl::arange(0, BLOCK);
        auto load = [&](P p, const tl::tensor& c) { return tl::load(p + c, c < N, 0).to(acc); };
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

namespace {

int64_t block_for(int64_t N) { return std::clamp<int64_t>(next_power_of_2(N), 16, kBlock); }

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
  detail::rms_norm_forward_kernel()[{M}](x, w, r.y, r.rstd, N, eps, static_cast<int>(acc), weight.defined(),
                        static_cast<int>(block_for(N)));
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
  detail::rms_norm_backward_dx_kernel()[{M}](g, x, w, s, r.dx, N, static_cast<int>(acc), weight.defined(),
                            static_cast<int>(block_for(N)));
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
