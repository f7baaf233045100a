// batch_norm and its backward (torch.nn.functional.batch_norm; docs/ops.md).
//
// The input is read in place as (N, C, S) (ops/norm_channels.h; channels-last too). Training: a
// pass of per-channel sums for the mean and one of squared deviations for the variance (the stable
// two-pass form), each split over programs when the channels are few; the running statistics are
// updated in place from them (unbiased variance). The output is one per-channel affine map
// y = (w * rstd) (x - mean) + b. Backward: one pass for sum(dy) and sum(dy * xhat) per
// channel (db and dw), then dx = w * rstd * (dy - sum(dy) / M - xhat * sum(dy * xhat) / M) as
// another affine map of (dy, x - mean); in evaluation mode dx = w * rstd * dy. The [C]-sized algebra
// between the passes runs as ops on [C] tensors (a few small launches).
#include <cmath>

#include "ops/elementwise_kernels.h"
#include "ops/norm.h"
#include "ops/norm_channels.h"

namespace tritium::ops {

namespace {

using detail::shape_str;

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
  if (training) {
    auto [s, unused] = detail::channel_sums(v, nullptr, Tensor(), Tensor(), {}, detail::ChannelSum::values, acc);
    r.mean = div(s, Scalar(static_cast<double>(M)));
    auto [sq, unused2] = detail::channel_sums(v, nullptr, r.mean, Tensor(), {}, detail::ChannelSum::squared_dev, acc);
    Tensor var = div(sq, Scalar(static_cast<double>(M)));
    r.rstd = pow(add(var, Scalar(eps)), Scalar(-0.5));
    if (running_mean.defined()) {
      Tensor rm = running_mean, rv = running_var;
      Tensor unbiased = mul(var, Scalar(static_cast<double>(M) / static_cast<double>(M - 1)));
      Tensor new_mean = add(mul(to_dtype(rm, acc), Scalar(1 - momentum)), mul(r.mean, Scalar(momentum)));
      Tensor new_var = add(mul(to_dtype(rv, acc), Scalar(1 - momentum)), mul(unbiased, Scalar(momentum)));
      copy_(rm, new_mean);
      copy_(rv, new_var);
    }
  } else {
    r.mean = clone(to_dtype(running_mean, acc));  // not an alias of the buffer that training updates
    r.rstd = pow(add(to_dtype(running_var, acc), Scalar(eps)), Scalar(-0.5));
  }
  Tensor a = weight.defined() ? mul(r.rstd, to_dtype(weight, acc)) : r.rstd;
  Tensor d = bias.defined() ? contiguous(to_dtype(bias, acc)) : zeros({C}, acc, x.device());
  detail::channel_affine(v, nullptr, r.y, contiguous(a), Tensor(), d, 0, r.mean, detail::Centre::u);
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
  Tensor a = weight.defined() ? mul(s, to_dtype(weight, acc)) : s;  // w * rstd
  if (!training) {
    detail::channel_affine(g, nullptr, r.dx, contiguous(a), Tensor(), zeros({C}, acc, x.device()), 0);
    return r;
  }
  // dx = a dy - a rstd k2 (x - mean) - a k1, with k1 = sum(dy) / M, k2 = sum(dy xhat) / M.
  const double inv = 1.0 / static_cast<double>(M);
  Tensor k1 = mul(sum_dy, Scalar(inv)), k2 = mul(sum_dy_xhat, Scalar(inv));
  Tensor bx = neg(mul(mul(a, s), k2));
  Tensor d = neg(mul(a, k1));
  detail::channel_affine(g, &v, r.dx, contiguous(a), contiguous(bx), contiguous(d), 0, m, detail::Centre::v);
  return r;
}

}  // namespace tritium::ops
