// batch_norm and its backward (torch.nn.functional.batch_norm; docs/ops.md).
//
// The input is read in place as (N, C, S) (ops/norm_channels.h; channels-last too). Training: a
// pass of per-channel sums for the mean and one of squared deviations for the variance (the stable
// two-pass form), each split over programs when the channels are few; the running statistics are
// updated in place from them (unbiased variance). The output is one per-channel affine map
// y = (w * rstd) (x - mean) + b. Backward: one pass for sum(dy) and sum(dy * xhat) per
// channel (db and dw), then dx = w * rstd * (dy - sum(dy) / M - xhat * sum(dy * xhat) / M) as
// another affine map of (dy, x - mean); in evaluation mode dx = w * rstd * dy. The [C]-sized algebra
// between the passes (rstd, the running-statistics update, the affine coefficients) is one small
// kernel, batch_norm_coefficients, instead of a dozen op launches.
#include <algorithm>
#include <cmath>

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

enum Coefficients { kTrainForward = 0, kEvalForward = 1, kTrainBackward = 2, kEvalBackward = 3 };

// Per channel c (the forward's s1 = sum of squared deviations; the backward's s1 = sum dy,
// s2 = sum dy xhat):
//   train forward: rstd = 1 / sqrt(s1 / M + eps), a = w rstd, d = b; running stats updated.
//   eval forward:  mean = rm, rstd = 1 / sqrt(rv + eps), a = w rstd, d = b.
//   train backward: a = w rstd, bx = -a rstd s2 / M, d = -a s1 / M.
//   eval backward:  a = w rstd, d = 0.
}  // namespace

Kernel& detail::batch_norm_coefficients_kernel() {
  static Kernel k = tritium::kernel(
      "batch_norm_coefficients",
      [](P s1, P s2, P mean, P rstd, P w, P b, P rm, P rv, P a_out, P b_out, P d_out, tl::i64 C, tl::f64 inv_m,
         tl::f64 unbias, tl::f64 momentum, tl::f64 eps, int MODE, bool HAS_W, bool HAS_B, bool RUNNING, int ACC,
         int BLOCK) {
        const DType acc = static_cast<DType>(ACC);
        auto c = tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK).to(tl::int64);
        auto m = c < C;
        auto ld = [&](P p) { return tl::load(p + c, m, 0).to(acc); };
        auto weight = HAS_W ? ld(w) : tl::full({BLOCK}, 1.0, acc);
        if (MODE == kTrainBackward || MODE == kEvalBackward) {
          auto r = ld(rstd);
          auto a = weight * r;
          tl::store(a_out + c, a, m);
          if (MODE == kTrainBackward) {
            tl::store(b_out + c, -(a * r * ld(s2) * inv_m.to(acc)), m);
            tl::store(d_out + c, -(a * ld(s1) * inv_m.to(acc)), m);
          } else {
            tl::store(d_out + c, tl::zeros({BLOCK}, acc), m);
          }
          return;
        }
        tl::tensor mu, var;
        if (MODE == kTrainForward) {
          mu = ld(mean);
          var = ld(s1) * inv_m.to(acc);
        } else {
          mu = ld(rm);
          var = ld(rv);
          tl::store(mean + c, mu, m);
        }
        auto r = 1 / tl::sqrt(var + eps.to(acc));
        tl::store(rstd + c, r, m);
        tl::store(a_out + c, weight * r, m);
        tl::store(d_out + c, HAS_B ? ld(b) : tl::zeros({BLOCK}, acc), m);
        if (MODE == kTrainForward && RUNNING) {
          auto mom = momentum.to(acc);
          tl::store(rm + c, (1 - mom) * ld(rm) + mom * mu, m);
          tl::store(rv + c, (1 - mom) * ld(rv) + mom * var * unbias.to(acc), m);
        }
      });
  return k;
}

namespace {

struct CoefficientArgs {
  Tensor s1, s2, mean, rstd, w, b, rm, rv;
  int64_t M = 0;
  double momentum = 0, eps = 0;
};

// Launches the coefficients kernel; returns (a, bx, d). Running statistics that are not
// contiguous are updated through a contiguous copy.
std::tuple<Tensor, Tensor, Tensor> coefficients(Coefficients mode, const CoefficientArgs& in, int64_t C, DType acc,
                                                Device dev) {
  Tensor a = Tensor::empty({C}, acc, dev), bx = Tensor::empty({C}, acc, dev), d = Tensor::empty({C}, acc, dev);
  const bool running = in.rm.defined();
  Tensor rm = running ? contiguous(in.rm) : a, rv = running ? contiguous(in.rv) : a;
  auto or_a = [&](const Tensor& t) { return t.defined() ? contiguous(t) : a; };
  const double inv_m = in.M > 0 ? 1.0 / static_cast<double>(in.M) : 0.0;
  const double unbias = in.M > 1 ? static_cast<double>(in.M) / static_cast<double>(in.M - 1) : 0.0;
  const int64_t block = std::clamp<int64_t>(next_power_of_2(C), 16, 1024);
  detail::batch_norm_coefficients_kernel()[{cdiv(C, block)}](or_a(in.s1), or_a(in.s2), or_a(in.mean), or_a(in.rstd), or_a(in.w),
                                          or_a(in.b), rm, rv, a, bx, d, C, inv_m, unbias, in.momentum, in.eps,
                                          static_cast<int>(mode), in.w.defined(), in.b.defined(), running,
                                          static_cast<int>(acc), static_cast<int>(block));
  if (running && mode == kTrainForward) {
    Tensor rm_out = in.rm, rv_out = in.rv;  // handles on the caller's storage
    if (!rm_out.is_contiguous()) copy_(rm_out, rm);
    if (!rv_out.is_contiguous()) copy_(rv_out, rv);
  }
  return {a, bx, d};
}

void check_vector(const char* what, const Tensor& t, int64_t C) {
  if (t.defined() && (t.dim() != 1 || t.size(0) != C))
    fail("batch_norm: {} should contain {} elements, got shape {}", what, C, shape_str(t.shape()));
}

int64_t count_per_channel(const Tensor& x) { return x.size(1) == 0 ? 0 : x.numel() / x.size(1); }

}  // namespace

NormResult batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                      const Tensor& bias, bool training, double momentum, double eps) {
  const char* op = "batch_norm";
  std::vector<const Tensor*> ts{&x};
  for (const Tensor* t : {&running_mean, &running_var, &weight, &bias})
    if (t->defined()) ts.push_back(t);
  detail::check_tensors(op, ts);
  if (!is_float(x.dtype())) fail("{}: expected a floating-point input, got {}", op, dtype_name(x.dtype()));
  if (x.dim() < 2) fail("{}: expected an input of at least 2 dims [N, C, *], got shape {}", op, shape_str(x.shape()));
  const int64_t C = x.size(1);
  check_vector("running_mean", running_mean, C);
  check_vector("running_var", running_var, C);
  check_vector("weight", weight, C);
  check_vector("bias", bias, C);
  if (!training && (!running_mean.defined() || !running_var.defined()))
    fail("{}: running_mean and running_var must be defined in evaluation mode", op);
  if (running_mean.defined() != running_var.defined())
    fail("{}: give both running_mean and running_var, or neither", op);
  if (!(eps >= 0)) fail("{}: eps must be >= 0, got {}", op, eps);
  const int64_t M = count_per_channel(x);
  if (training && M <= 1)
    fail("{}: expected more than 1 value per channel when training, got input of shape {}", op, shape_str(x.shape()));
  const DType acc = detail::math_type(x.dtype());
  detail::ChannelView v = detail::channel_view(x);
  NormResult r;
  r.y = detail::empty_like_layout(v, x, x.dtype());
  if (x.numel() == 0) {
    r.mean = zeros({C}, acc, x.device());
    r.rstd = zeros({C}, acc, x.device());
    return r;
  }
  const Device dev = x.device();
  CoefficientArgs in;
  in.w = weight, in.b = bias, in.M = M, in.momentum = momentum, in.eps = eps;
  Coefficients mode = kEvalForward;
  if (training) {
    auto [s, unused] = detail::channel_sums(v, nullptr, Tensor(), Tensor(), {}, detail::ChannelSum::values, acc);
    r.mean = div(s, Scalar(static_cast<double>(M)));
    auto [sq, unused2] = detail::channel_sums(v, nullptr, r.mean, Tensor(), {}, detail::ChannelSum::squared_dev, acc);
    in.s1 = sq;
    in.rm = running_mean, in.rv = running_var;
    mode = kTrainForward;
  } else {
    r.mean = Tensor::empty({C}, acc, dev);  // the kernel copies running_mean into it
    in.rm = running_mean, in.rv = running_var;
  }
  in.mean = r.mean;
  r.rstd = Tensor::empty({C}, acc, dev);
  in.rstd = r.rstd;
  auto [a, unused_b, d] = coefficients(mode, in, C, acc, dev);
  detail::channel_affine(v, nullptr, r.y, a, Tensor(), d, 0, r.mean, detail::Centre::u);
  return r;
}

NormGrads batch_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& bias,
                              const Tensor& mean, const Tensor& rstd, bool training) {
  const char* op = "batch_norm_backward";
  std::vector<const Tensor*> ts{&grad, &x, &mean, &rstd};
  if (weight.defined()) ts.push_back(&weight);
  detail::check_tensors(op, ts);
  if (grad.shape() != x.shape())
    fail("{}: grad shape {} differs from input shape {}", op, shape_str(grad.shape()), shape_str(x.shape()));
  if (x.dim() < 2) fail("{}: expected an input of at least 2 dims, got shape {}", op, shape_str(x.shape()));
  const int64_t C = x.size(1), M = count_per_channel(x);
  if (mean.numel() != C || rstd.numel() != C)
    fail("{}: mean and rstd must hold {} channels, got {} and {}", op, C, mean.numel(), rstd.numel());
  const DType acc = detail::math_type(x.dtype());
  detail::ChannelView v = detail::channel_view(x);
  detail::ChannelView g = detail::same_view(v, to_dtype(grad, x.dtype()));
  Tensor m = contiguous(to_dtype(mean, acc)), s = contiguous(to_dtype(rstd, acc));
  NormGrads r;
  r.dx = detail::empty_like_layout(v, x, x.dtype());
  if (x.numel() == 0) {
    if (weight.defined()) r.dweight = zeros({C}, weight.dtype(), x.device());
    if (bias.defined()) r.dbias = zeros({C}, bias.dtype(), x.device());
    return r;
  }
  auto [sum_dy, sum_dy_xhat] = detail::channel_sums(v, &g, m, s, {}, detail::ChannelSum::grad, acc);
  if (weight.defined()) r.dweight = to_dtype(sum_dy_xhat, weight.dtype());
  if (bias.defined()) r.dbias = to_dtype(sum_dy, bias.dtype());
  // dx = a dy + bx (x - mean) + d with a = w rstd, bx = -a rstd sum(dy xhat) / M, d = -a sum(dy) / M.
  CoefficientArgs in;
  in.s1 = sum_dy, in.s2 = sum_dy_xhat, in.rstd = s, in.w = weight, in.M = M;
  auto [a, bx, d] = coefficients(training ? kTrainBackward : kEvalBackward, in, C, acc, x.device());
  if (training)
    detail::channel_affine(g, &v, r.dx, a, bx, d, 0, m, detail::Centre::v);
  else
    detail::channel_affine(g, nullptr, r.dx, a, Tensor(), d, 0);
  return r;
}

}  // namespace tritium::ops
