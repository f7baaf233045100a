// group_norm and its backward (torch.nn.functional.group_norm; docs/ops.md).
//
// The input is made contiguous; sample n's group g is then one row of L = C/G * S elements, so
// the statistics are the channel sums of ops/norm_channels.h over the (1, N*G, L) view (two
// passes: mean, then squared deviations). The output is a per-(sample, channel) affine map
// y = (w[c] rstd[n,g]) (x - mean[n,g]) + b[c]. Backward: per-(sample, channel) sums
// of dy and dy * xhat over the (1, N*C, S) view give db and dw (summed over samples) and the
// group terms c1 = sum(w dy xhat) / L, c2 = sum(w dy) / L; dx = rstd (w dy - xhat c1 - c2) is
// again an affine map of (dy, x). The [N, C]-sized algebra runs as ops on small tensors.
#include "ops/elementwise_kernels.h"
#include "ops/norm.h"
#include "ops/norm_channels.h"

namespace tritium::ops {

namespace {

using detail::shape_str;

struct Dims {
  int64_t N, C, G, S;
};

Dims check_shapes(const char* op, const Tensor& x, int64_t G) {
  if (x.dim() < 2) fail("{}: expected an input of at least 2 dims [N, C, *], got shape {}", op, shape_str(x.shape()));
  const int64_t C = x.size(1);
  if (G <= 0 || C % G != 0)
    fail("{}: expected the number of channels of input {} to be divisible by num_groups, got num_groups={}", op,
         shape_str(x.shape()), G);
  int64_t S = 1;
  for (int d = 2; d < x.dim(); ++d) S *= x.size(d);
  return {x.size(0), C, G, S};
}

detail::ChannelView rows(const Tensor& xc, int64_t n_rows, int64_t len) {
  detail::ChannelView v;
  v.base = xc;
  v.N = 1, v.C = n_rows, v.S = len;
  v.sN = 0, v.sC = len, v.sS = 1;
  return v;
}

// [N, G] -> [N, C] by repeating each group's value over its channels.
Tensor per_channel(const Tensor& t, const Dims& d) {
  return contiguous(mul(t.reshape({d.N, d.G, 1}), ones({1, 1, d.C / d.G}, t.dtype(), t.device())).reshape({d.N, d.C}));
}

Tensor weight_row(const Tensor& w, const Dims& d, DType acc, Device dev) {
  return w.defined() ? to_dtype(w, acc).reshape({1, d.C}) : ones({1, d.C}, acc, dev);
}

}  // namespace

NormResult group_norm(const Tensor& x_in, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  const char* op = "group_norm";
  std::vector<const Tensor*> ts{&x_in};
  if (weight.defined()) ts.push_back(&weight);
  if (bias.defined()) ts.push_back(&bias);
  detail::check_tensors(op, ts);
  if (!is_float(x_in.dtype())) fail("{}: expected a floating-point input, got {}", op, dtype_name(x_in.dtype()));
  Dims d = check_shapes(op, x_in, num_groups);
  for (auto [name, t] : {std::pair{"weight", &weight}, std::pair{"bias", &bias}})
    if (t->defined() && (t->dim() != 1 || t->size(0) != d.C))
      fail("{}: expected {} to be a vector of size {} (the channels of input {}), got shape {}", op, name, d.C,
           shape_str(x_in.shape()), shape_str(t->shape()));
  if (!(eps >= 0)) fail("{}: eps must be >= 0, got {}", op, eps);
  const DType acc = detail::math_type(x_in.dtype());
  Tensor x = contiguous(x_in);
  NormResult r;
  r.y = Tensor::empty(x.shape(), x.dtype(), x.device());
  const int64_t L = d.C / d.G * d.S;
  if (x.numel() == 0) {
    r.mean = zeros({d.N, d.G}, acc, x.device());
    r.rstd = zeros({d.N, d.G}, acc, x.device());
    return r;
  }
  detail::ChannelView gv = rows(x, d.N * d.G, L);
  auto [s, u1] = detail::channel_sums(gv, nullptr, Tensor(), Tensor(), {}, detail::ChannelSum::values, acc);
  r.mean = div(s, Scalar(static_cast<double>(L))).reshape({d.N, d.G});
  auto [sq, u2] = detail::channel_sums(gv, nullptr, r.mean, Tensor(), {}, detail::ChannelSum::squared_dev, acc);
  r.rstd = pow(add(div(sq, Scalar(static_cast<double>(L))), Scalar(eps)), Scalar(-0.5)).reshape({d.N, d.G});
  Tensor a = mul(per_channel(r.rstd, d), weight_row(weight, d, acc, x.device()));
  Tensor c = bias.defined() ? mul(to_dtype(bias, acc).reshape({1, d.C}), ones({d.N, 1}, acc, x.device()))
                            : zeros({d.N, d.C}, acc, x.device());
  detail::ChannelView cv = rows(x, d.N * d.C, d.S);
  detail::channel_affine(cv, nullptr, r.y, contiguous(a), Tensor(), contiguous(c), 0, per_channel(r.mean, d),
                         detail::Centre::u);
  return r;
}

NormGrads group_norm_backward(const Tensor& grad, const Tensor& x_in, int64_t num_groups, const Tensor& weight,
                              const Tensor& bias, const Tensor& mean, const Tensor& rstd) {
  const char* op = "group_norm_backward";
  std::vector<const Tensor*> ts{&grad, &x_in, &mean, &rstd};
  if (weight.defined()) ts.push_back(&weight);
  detail::check_tensors(op, ts);
  if (grad.shape() != x_in.shape())
    fail("{}: grad shape {} differs from input shape {}", op, shape_str(grad.shape()), shape_str(x_in.shape()));
  Dims d = check_shapes(op, x_in, num_groups);
  if (mean.numel() != d.N * d.G || rstd.numel() != d.N * d.G)
    fail("{}: mean and rstd must hold {} values, got {} and {}", op, d.N * d.G, mean.numel(), rstd.numel());
  const DType acc = detail::math_type(x_in.dtype());
  Tensor x = contiguous(x_in), g = contiguous(to_dtype(grad, x_in.dtype()));
  NormGrads r;
  r.dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.numel() == 0) {
    if (weight.defined()) r.dweight = zeros({d.C}, weight.dtype(), x.device());
    if (bias.defined()) r.dbias = zeros({d.C}, bias.dtype(), x.device());
    return r;
  }
  Tensor m = contiguous(to_dtype(mean, acc)).reshape({d.N * d.G}), s = contiguous(to_dtype(rstd, acc)).reshape({d.N * d.G});
  detail::ChannelView xv = rows(x, d.N * d.C, d.S), gv = rows(g, d.N * d.C, d.S);
  // Per (sample, channel): A = sum dy, B = sum dy * xhat (statistics of row n*C + c at (n*C + c) / (C/G)).
  auto [A, B] = detail::channel_sums(xv, &gv, m, s, {.stN = 0, .stS = 0, .cpg = d.C / d.G}, detail::ChannelSum::grad,
                                     acc);
  A = A.reshape({d.N, d.C});
  B = B.reshape({d.N, d.C});
  if (weight.defined()) r.dweight = to_dtype(sum(B, {0}), weight.dtype());
  if (bias.defined()) r.dbias = to_dtype(sum(A, {0}), bias.dtype());
  Tensor w = weight_row(weight, d, acc, x.device());
  const double inv = 1.0 / static_cast<double>(d.C / d.G * d.S);
  auto group_mean = [&](const Tensor& t) {  // [N, C] -> [N, G]: the group's sum / L
    return mul(sum(mul(t, w).reshape({d.N, d.G, d.C / d.G}), {2}), Scalar(inv));
  };
  Tensor c1 = group_mean(B), c2 = group_mean(A);
  Tensor rs = rstd.reshape({d.N, d.G});
  Tensor rs_c = per_channel(to_dtype(rs, acc), d), mean_c = per_channel(to_dtype(mean, acc).reshape({d.N, d.G}), d);
  Tensor c1_c = per_channel(c1, d), c2_c = per_channel(c2, d);
  // dx = rstd w dy - c1 rstd^2 (x - mean) - c2 rstd.
  Tensor a = mul(rs_c, w);
  Tensor bx = neg(mul(c1_c, mul(rs_c, rs_c)));
  Tensor c = neg(mul(c2_c, rs_c));
  detail::channel_affine(gv, &xv, r.dx, contiguous(a), contiguous(bx), contiguous(c), 0, mean_c, detail::Centre::v);
  return r;
}

}  // namespace tritium::ops
