// group_norm and its backward (torch.nn.functional.group_norm; docs/ops.md).
//
// The input is made contiguous; sample n's group g is then one row of L = C/G * S elements, so
// the statistics are the channel sums of ops/norm_channels.h over the (1, N*G, L) view (two
// passes: mean, then squared deviations). The output is a per-(sample, channel) affine map
// y = (w[c] rstd[n,g]) (x - mean[n,g]) + b[c]. Backward: per-(sample, channel) sums
// of dy and dy * xhat over the (1, N*C, S) view give db and dw (summed over samples) and the
// group terms c1 = sum(w dy xhat) / L, c2 = sum(w dy) / L; dx = rstd (w dy - xhat c1 - c2) is
// again an affine map of (dy, x). The [N, C]-sized algebra between the passes (rstd, the group
// terms, the affine coefficients) is one small kernel, group_norm_coefficients.
#include <algorithm>

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
}  // namespace

// One program per (sample, group) row, over its cpg channels k = row * cpg + j:
//   forward:  rstd = 1 / sqrt(sq / L + eps); a = w rstd, centre = mean, d = b.
//   backward: c1 = sum_j w B / L, c2 = sum_j w A / L (A = sum dy, B = sum dy xhat per channel);
//             a = w rstd, bx = -c1 rstd^2, centre = mean, d = -c2 rstd.
Kernel& detail::group_norm_coefficients_kernel() {
  static Kernel k = tritium::kernel(
      "group_norm_coefficients",
      [](P A, P B, P sq, P mean, P rstd, P w, P b, P a_out, P bx_out, P d_out, P centre_out, tl::i64 G, tl::i64 cpg,
         tl::f64 inv_l, tl::f64 eps, bool BACKWARD, bool HAS_W, bool HAS_B, int ACC, int BLOCK) {
        const DType acc = static_cast<DType>(ACC);
        auto row = tl::program_id(0).to(tl::int64);
        auto base = row * cpg, wbase = (row % G) * cpg;
        auto cols = tl::arange(0, BLOCK).to(tl::int64);
        auto mu = tl::load(mean + row).to(acc);
        auto weight = [&](const tl::tensor& j, const tl::tensor& m) {
          return HAS_W ? tl::load(w + wbase + j, m, 0).to(acc) : tl::where(m, 1.0, 0.0).to(acc);
        };
        tl::tensor r, c1, c2;
        if (BACKWARD) {
          r = tl::load(rstd + row).to(acc);
          auto s1 = tl::zeros({BLOCK}, acc), s2 = tl::zeros({BLOCK}, acc);
          for (auto j0 : tl::range(0, cpg, BLOCK)) {
            auto j = j0 + cols;
            auto m = j < cpg;
            auto wj = weight(j, m);
            s1 = s1 + wj * tl::load(B + base + j, m, 0).to(acc);
            s2 = s2 + wj * tl::load(A + base + j, m, 0).to(acc);
          }
          c1 = tl::sum(s1, 0) * inv_l.to(acc);
          c2 = tl::sum(s2, 0) * inv_l.to(acc);
        } else {
          r = 1 / tl::sqrt(tl::load(sq + row).to(acc) * inv_l.to(acc) + eps.to(acc));
          tl::store(rstd + row, r);
        }
        for (auto j0 : tl::range(0, cpg, BLOCK)) {
          auto j = j0 + cols;
          auto m = j < cpg;
          tl::store(a_out + base + j, weight(j, m) * r, m);
          tl::store(centre_out + base + j, mu + tl::zeros({BLOCK}, acc), m);
          if (BACKWARD) {
            tl::store(bx_out + base + j, -(c1 * r * r) + tl::zeros({BLOCK}, acc), m);
            tl::store(d_out + base + j, -(c2 * r) + tl::zeros({BLOCK}, acc), m);
          } else {
            tl::store(d_out + base + j, HAS_B ? tl::load(b + wbase + j, m, 0).to(acc) : tl::zeros({BLOCK}, acc), m);
          }
        }
      });
  return k;
}

namespace {

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

struct GroupCoefficients {
  Tensor a, bx, d, centre;  // [N * C] each
};

GroupCoefficients launch_coefficients(const Dims& d, const Tensor& A, const Tensor& B, const Tensor& sq,
                                      const Tensor& mean, const Tensor& rstd, const Tensor& weight, const Tensor& bias,
                                      double eps, bool backward, DType acc, Device dev) {
  GroupCoefficients out;
  const int64_t k = d.N * d.C, cpg = d.C / d.G;
  out.a = Tensor::empty({k}, acc, dev), out.d = Tensor::empty({k}, acc, dev), out.centre = Tensor::empty({k}, acc, dev);
  out.bx = backward ? Tensor::empty({k}, acc, dev) : out.a;
  auto or_a = [&](const Tensor& t) { return t.defined() ? contiguous(t) : out.a; };
  const int64_t block = std::clamp<int64_t>(next_power_of_2(cpg), 16, 1024);
  detail::group_norm_coefficients_kernel()[{d.N * d.G}](
      or_a(A), or_a(B), or_a(sq), mean, rstd, or_a(weight), or_a(bias), out.a, out.bx, out.d, out.centre, d.G, cpg,
      1.0 / static_cast<double>(cpg * d.S), eps, backward, weight.defined(), bias.defined(), static_cast<int>(acc),
      static_cast<int>(block));
  return out;
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
  r.rstd = Tensor::empty({d.N, d.G}, acc, x.device());
  GroupCoefficients k = launch_coefficients(d, Tensor(), Tensor(), sq, r.mean, r.rstd, weight, bias, eps, false, acc,
                                            x.device());
  detail::ChannelView cv = rows(x, d.N * d.C, d.S);
  detail::channel_affine(cv, nullptr, r.y, k.a, Tensor(), k.d, 0, k.centre, detail::Centre::u);
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
  GroupCoefficients k = launch_coefficients(d, A, B, Tensor(), m, s, weight, Tensor(), 0.0, true, acc, x.device());
  // dx = rstd w dy - c1 rstd^2 (x - mean) - c2 rstd.
  detail::channel_affine(gv, &xv, r.dx, k.a, k.bx, k.d, 0, k.centre, detail::Centre::v);
  return r;
}

}  // namespace tritium::ops
