// batch_norm, group_norm, rms_norm (ops/norm.h, nn/norm.h) on every backend: outputs, running
// statistics and gradients against float64 host references written here (the gradients by central
// differences of the host forward, independent of the backward formulas), 2-D / 3-D / 4-D and
// channels-last inputs, sizes off every block, reductions split over programs (a GPU's plan on
// the CPU too), the modules' parameters, buffers and repr, and every bad-input error.
#include <cmath>
#include <functional>
#include <optional>

#include <fmt/ranges.h>

#include "nn/autograd.h"
#include "nn/gradcheck.h"
#include "nn/norm.h"
#include "ops/norm.h"
#include "ops/reduce_plan.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;
using Vec = std::vector<double>;

namespace {

// ---- float64 references ---------------------------------------------------------------------------

// [N, C, S] row-major views of the logical tensor.
struct NCS {
  int64_t N, C, S;
  size_t at(int64_t n, int64_t c, int64_t s) const { return static_cast<size_t>((n * C + c) * S + s); }
};

NCS ncs_of(const ou::Shape& shape) {
  int64_t S = 1;
  for (size_t d = 2; d < shape.size(); ++d) S *= shape[d];
  return {shape[0], shape[1], S};
}

struct BnRef {
  Vec y, mean, var;  // var biased
};

// Batch statistics per channel (training) or the given ones (eval).
BnRef batch_norm_ref(const Vec& x, NCS d, const Vec& w, const Vec& b, bool training, const Vec& rm, const Vec& rv,
                     double eps) {
  BnRef r;
  r.y.resize(x.size());
  for (int64_t c = 0; c < d.C; ++c) {
    double mean = 0, var = 0, M = static_cast<double>(d.N * d.S);
    if (training) {
      for (int64_t n = 0; n < d.N; ++n)
        for (int64_t s = 0; s < d.S; ++s) mean += x[d.at(n, c, s)];
      mean /= M;
      for (int64_t n = 0; n < d.N; ++n)
        for (int64_t s = 0; s < d.S; ++s) var += (x[d.at(n, c, s)] - mean) * (x[d.at(n, c, s)] - mean);
      var /= M;
    } else {
      mean = rm[static_cast<size_t>(c)], var = rv[static_cast<size_t>(c)];
    }
    r.mean.push_back(mean);
    r.var.push_back(var);
    double scale = 1 / std::sqrt(var + eps) * (w.empty() ? 1.0 : w[static_cast<size_t>(c)]);
    for (int64_t n = 0; n < d.N; ++n)
      for (int64_t s = 0; s < d.S; ++s)
        r.y[d.at(n, c, s)] = (x[d.at(n, c, s)] - mean) * scale + (b.empty() ? 0.0 : b[static_cast<size_t>(c)]);
  }
  return r;
}

Vec group_norm_ref(const Vec& x, NCS d, int64_t G, const Vec& w, const Vec& b, double eps) {
  Vec y(x.size());
  const int64_t cpg = d.C / G;
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      double mean = 0, var = 0, L = static_cast<double>(cpg * d.S);
      for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c)
        for (int64_t s = 0; s < d.S; ++s) mean += x[d.at(n, c, s)];
      mean /= L;
      for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c)
        for (int64_t s = 0; s < d.S; ++s) var += (x[d.at(n, c, s)] - mean) * (x[d.at(n, c, s)] - mean);
      double rstd = 1 / std::sqrt(var / L + eps);
      for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c)
        for (int64_t s = 0; s < d.S; ++s)
          y[d.at(n, c, s)] = (x[d.at(n, c, s)] - mean) * rstd * (w.empty() ? 1.0 : w[static_cast<size_t>(c)]) +
                             (b.empty() ? 0.0 : b[static_cast<size_t>(c)]);
    }
  return y;
}

Vec rms_norm_ref(const Vec& x, int64_t N, const Vec& w, double eps) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(N); ++r) {
    double ms = 0;
    for (int64_t j = 0; j < N; ++j) ms += x[r * N + j] * x[r * N + j];
    double rstd = 1 / std::sqrt(ms / static_cast<double>(N) + eps);
    for (int64_t j = 0; j < N; ++j) y[r * N + j] = x[r * N + j] * rstd * (w.empty() ? 1.0 : w[static_cast<size_t>(j)]);
  }
  return y;
}

// d/dv sum(dy * f(v)) by central differences of the float64 host forward.
Vec fd_grad(const std::function<Vec(const Vec&)>& f, Vec v, const Vec& dy) {
  Vec g(v.size());
  const double h = 1e-6;
  for (size_t i = 0; i < v.size(); ++i) {
    double keep = v[i];
    v[i] = keep + h;
    Vec hi = f(v);
    v[i] = keep - h;
    Vec lo = f(v);
    v[i] = keep;
    double s = 0;
    for (size_t k = 0; k < dy.size(); ++k) s += dy[k] * (hi[k] - lo[k]);
    g[i] = s / (2 * h);
  }
  return g;
}

// A channels-last tensor of logical shape [N, C, *] holding `t`'s values.
Tensor channels_last(const Tensor& t) {
  std::vector<int> to{0}, back{0, t.dim() - 1};
  for (int d = 2; d < t.dim(); ++d) to.push_back(d);
  to.push_back(1);
  for (int d = 2; d < t.dim(); ++d) back.push_back(d - 1);
  return ops::contiguous(t.permute(to)).permute(back);
}

// ---- batch_norm -----------------------------------------------------------------------------------

template <class T>
void check_batch_norm(const ou::Shape& shape, bool training, bool affine, bool running, bool cl, double tol,
                      uint32_t seed) {
  const std::string what = fmt::format("batch_norm {} {} training={} affine={} running={} channels_last={}",
                                       tritium::dtype_name(tritium::dtype_of<T>()), ou::Shape(shape), training, affine,
                                       running, cl);
  BOOST_TEST_CONTEXT(what) {
    const NCS d = ncs_of(shape);
    Tensor x = ou::random_tensor<T>(shape, seed, -2, 3), dy = ou::random_tensor<T>(shape, seed + 1);
    if (cl) x = channels_last(x), dy = channels_last(dy);
    Tensor w = affine ? ou::random_tensor<T>({d.C}, seed + 2, 0.5, 1.5) : Tensor();
    Tensor b = affine ? ou::random_tensor<T>({d.C}, seed + 3) : Tensor();
    Tensor rm = running ? ou::random_tensor<float>({d.C}, seed + 4) : Tensor();
    Tensor rv = running ? ou::random_tensor<float>({d.C}, seed + 5, 0.5, 2) : Tensor();
    const Vec xv = ou::values(x), dyv = ou::values(dy), wv = affine ? ou::values(w) : Vec{},
              bv = affine ? ou::values(b) : Vec{}, rmv = running ? ou::values(rm) : Vec{},
              rvv = running ? ou::values(rv) : Vec{};
    const double eps = 1e-5, momentum = 0.3;
    BnRef ref = batch_norm_ref(xv, d, wv, bv, training, rmv, rvv, eps);
    auto r = ops::batch_norm(x, rm, rv, w, b, training, momentum, eps);
    BOOST_TEST((r.y.shape() == x.shape()));
    BOOST_TEST((r.y.dtype() == x.dtype()));
    if (cl) BOOST_TEST((r.y.strides() == x.strides()), "a channels-last input gives a channels-last output");
    ou::check_values(r.y, ref.y, tol, what + " y");
    if (running && training) {
      const double M = static_cast<double>(d.N * d.S);
      Vec new_rm, new_rv;
      for (int64_t c = 0; c < d.C; ++c) {
        new_rm.push_back((1 - momentum) * rmv[c] + momentum * ref.mean[c]);
        new_rv.push_back((1 - momentum) * rvv[c] + momentum * ref.var[c] * M / (M - 1));
      }
      ou::check_values(rm, new_rm, std::max(tol, 1e-6), what + " running_mean");
      ou::check_values(rv, new_rv, std::max(tol, 1e-6), what + " running_var");
    }
    auto fwd_x = [&](const Vec& v) { return batch_norm_ref(v, d, wv, bv, training, rmv, rvv, eps).y; };
    auto g = ops::batch_norm_backward(dy, x, w, b, r.mean, r.rstd, training);
    if (cl) BOOST_TEST((g.dx.strides() == x.strides()));
    ou::check_values(g.dx, fd_grad(fwd_x, xv, dyv), 4 * tol + 1e-7, what + " dx");
    if (affine) {
      auto fwd_w = [&](const Vec& v) { return batch_norm_ref(xv, d, v, bv, training, rmv, rvv, eps).y; };
      auto fwd_b = [&](const Vec& v) { return batch_norm_ref(xv, d, wv, v, training, rmv, rvv, eps).y; };
      ou::check_values(g.dweight, fd_grad(fwd_w, wv, dyv), 4 * tol + 1e-7, what + " dweight");
      ou::check_values(g.dbias, fd_grad(fwd_b, bv, dyv), 4 * tol + 1e-7, what + " dbias");
    } else {
      BOOST_TEST(!g.dweight.defined());
    }
  }
}

// ---- group_norm -----------------------------------------------------------------------------------

template <class T>
void check_group_norm(const ou::Shape& shape, int64_t G, bool affine, double tol, uint32_t seed,
                      bool transposed = false) {
  const std::string what = fmt::format("group_norm {} {} G={} affine={} transposed={}",
                                       tritium::dtype_name(tritium::dtype_of<T>()), ou::Shape(shape), G, affine,
                                       transposed);
  BOOST_TEST_CONTEXT(what) {
    const NCS d = ncs_of(shape);
    Tensor x = transposed ? ou::random_tensor<T>({shape[2], shape[1], shape[0]}, seed, -2, 3).permute({2, 1, 0})
                          : ou::random_tensor<T>(shape, seed, -2, 3);
    Tensor dy = ou::random_tensor<T>(shape, seed + 1);
    Tensor w = affine ? ou::random_tensor<T>({d.C}, seed + 2, 0.5, 1.5) : Tensor();
    Tensor b = affine ? ou::random_tensor<T>({d.C}, seed + 3) : Tensor();
    const Vec xv = ou::values(x), dyv = ou::values(dy), wv = affine ? ou::values(w) : Vec{},
              bv = affine ? ou::values(b) : Vec{};
    const double eps = 1e-5;
    auto r = ops::group_norm(x, G, w, b, eps);
    ou::check_values(r.y, group_norm_ref(xv, d, G, wv, bv, eps), tol, what + " y");
    BOOST_TEST((r.mean.shape() == ou::Shape{d.N, G}));
    auto g = ops::group_norm_backward(dy, x, G, w, b, r.mean, r.rstd);
    auto fwd_x = [&](const Vec& v) { return group_norm_ref(v, d, G, wv, bv, eps); };
    ou::check_values(g.dx, fd_grad(fwd_x, xv, dyv), 4 * tol + 1e-7, what + " dx");
    if (affine) {
      auto fwd_w = [&](const Vec& v) { return group_norm_ref(xv, d, G, v, bv, eps); };
      auto fwd_b = [&](const Vec& v) { return group_norm_ref(xv, d, G, wv, v, eps); };
      ou::check_values(g.dweight, fd_grad(fwd_w, wv, dyv), 4 * tol + 1e-7, what + " dweight");
      ou::check_values(g.dbias, fd_grad(fwd_b, bv, dyv), 4 * tol + 1e-7, what + " dbias");
    }
  }
}

// ---- rms_norm -------------------------------------------------------------------------------------

template <class T>
void check_rms_norm(const ou::Shape& shape, const ou::Shape& norm, bool affine, std::optional<double> eps, double tol,
                    uint32_t seed, bool with_grad = true) {
  const std::string what = fmt::format("rms_norm {} {} over {} affine={} eps={}",
                                       tritium::dtype_name(tritium::dtype_of<T>()), ou::Shape(shape), ou::Shape(norm),
                                       affine, eps ? fmt::format("{}", *eps) : "None");
  BOOST_TEST_CONTEXT(what) {
    const int64_t N = ou::numel(norm);
    Tensor x = ou::random_tensor<T>(shape, seed, -2, 3), dy = ou::random_tensor<T>(shape, seed + 1);
    Tensor w = affine ? ou::random_tensor<T>(norm, seed + 2, 0.5, 1.5) : Tensor();
    const Vec xv = ou::values(x), dyv = ou::values(dy), wv = affine ? ou::values(w) : Vec{};
    // eps None: the compute type's epsilon (f32's for f16 / bf16 / f32), as PyTorch's kernel.
    const double finfo_eps = std::is_same_v<T, double> ? 0x1p-52 : 0x1p-23;
    const double e = eps ? *eps : finfo_eps;
    auto r = ops::rms_norm(x, norm, w, eps);
    ou::check_values(r.y, rms_norm_ref(xv, N, wv, e), tol, what + " y");
    if (!with_grad) return;
    auto g = ops::rms_norm_backward(dy, x, norm, w, r.rstd);
    auto fwd_x = [&](const Vec& v) { return rms_norm_ref(v, N, wv, e); };
    ou::check_values(g.dx, fd_grad(fwd_x, xv, dyv), 4 * tol + 1e-7, what + " dx");
    if (affine) {
      auto fwd_w = [&](const Vec& v) { return rms_norm_ref(xv, N, v, e); };
      BOOST_TEST((g.dweight.shape() == norm));
      ou::check_values(g.dweight, fd_grad(fwd_w, wv, dyv), 4 * tol + 1e-7, what + " dweight");
    } else {
      BOOST_TEST(!g.dweight.defined());
    }
  }
}

// rms_norm's gradients in closed form in float64 (rows too long for central differences):
// dx = rstd (w dy - xhat mean(xhat w dy)), dw = sum over rows of dy xhat, xhat = x rstd. Checked
// against the central differences in rms_norm_rows_in_registers.
std::pair<Vec, Vec> rms_norm_grads_ref(const Vec& x, const Vec& dy, int64_t N, const Vec& w, double eps) {
  Vec dx(x.size()), dw(static_cast<size_t>(N), 0.0);
  for (size_t r = 0; r < x.size() / static_cast<size_t>(N); ++r) {
    const size_t o = r * static_cast<size_t>(N);
    double ms = 0, c = 0;
    for (int64_t j = 0; j < N; ++j) ms += x[o + j] * x[o + j];
    const double rstd = 1 / std::sqrt(ms / static_cast<double>(N) + eps);
    auto wj = [&](int64_t j) { return w.empty() ? 1.0 : w[static_cast<size_t>(j)]; };
    for (int64_t j = 0; j < N; ++j) c += x[o + j] * rstd * wj(j) * dy[o + j];
    c /= static_cast<double>(N);
    for (int64_t j = 0; j < N; ++j) {
      dx[o + j] = rstd * (wj(j) * dy[o + j] - x[o + j] * rstd * c);
      dw[static_cast<size_t>(j)] += dy[o + j] * x[o + j] * rstd;
    }
  }
  return {dx, dw};
}

// rms_norm forward and backward against the closed-form float64 gradients.
template <class T>
void check_rms_norm_rows(int64_t M, int64_t N, bool affine, double tol, uint32_t seed) {
  const std::string what = fmt::format("rms_norm {} [{}, {}] affine={}", tritium::dtype_name(tritium::dtype_of<T>()), M, N, affine);
  BOOST_TEST_CONTEXT(what) {
    Tensor x = ou::random_tensor<T>({M, N}, seed, -2, 3), dy = ou::random_tensor<T>({M, N}, seed + 1);
    Tensor w = affine ? ou::random_tensor<T>({N}, seed + 2, 0.5, 1.5) : Tensor();
    const Vec xv = ou::values(x), dyv = ou::values(dy), wv = affine ? ou::values(w) : Vec{};
    auto r = ops::rms_norm(x, {N}, w, 1e-6);
    ou::check_values(r.y, rms_norm_ref(xv, N, wv, 1e-6), tol, what + " y");
    auto g = ops::rms_norm_backward(dy, x, {N}, w, r.rstd);
    auto [dx, dw] = rms_norm_grads_ref(xv, dyv, N, wv, 1e-6);
    ou::check_values(g.dx, dx, 2 * tol, what + " dx");
    if (affine) {
      BOOST_TEST((g.dweight.shape() == ou::Shape{N}));
      BOOST_TEST((g.dweight.dtype() == tritium::dtype_of<T>()));
      ou::check_values(g.dweight, dw, 2 * tol, what + " dweight");
    } else {
      BOOST_TEST(!g.dweight.defined());
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_norm)

BOOST_AUTO_TEST_CASE(batch_norm_values_and_gradients) {
  tt::for_each_backend([&](const tt::Backend&) {
    check_batch_norm<float>({37, 5}, true, true, true, false, 2e-6, 1);         // 2-D
    check_batch_norm<float>({3, 4, 17}, true, false, false, false, 2e-6, 2);    // 3-D, no affine, no running stats
    check_batch_norm<float>({2, 3, 9, 11}, true, true, true, false, 2e-6, 3);   // 4-D
    check_batch_norm<float>({2, 5, 7, 3}, true, true, true, true, 2e-6, 4);     // channels-last
    check_batch_norm<double>({3, 2, 5, 7}, true, true, true, false, 1e-11, 5);
    check_batch_norm<double>({4, 3, 5}, false, true, true, false, 1e-11, 6);    // eval: running statistics
    check_batch_norm<float>({2, 6, 3, 5}, false, false, true, true, 2e-6, 7);   // eval, channels-last
    check_batch_norm<tritium::f16_t>({5, 3, 21}, true, true, true, false, 2e-3, 8);
    check_batch_norm<tritium::bf16_t>({3, 4, 13}, true, true, false, false, 1.5e-2, 9);
  });
}

// Few channels and many positions: the plan splits the reduction across programs (a second
// launch adds the partials), for this device's plan and for an H100's (528 programs to fill).
BOOST_AUTO_TEST_CASE(batch_norm_split_reductions) {
  tt::for_each_backend([&](const tt::Backend&) {
    check_batch_norm<double>({6, 2, 37}, true, true, true, false, 1e-11, 21);
    check_batch_norm<double>({70, 3}, true, true, true, false, 1e-11, 22);
    ops::detail::ScopedReduceDevice gpu(ops::detail::ReduceDevice::cuda(132));
    check_batch_norm<double>({6, 2, 37}, true, true, true, false, 1e-11, 23);
    check_batch_norm<float>({3, 3, 5, 9}, true, true, true, true, 2e-6, 24);
    check_group_norm<double>({3, 4, 29}, 2, true, 1e-11, 25);
    check_rms_norm<double>({40, 3}, {3}, true, 1e-6, 1e-11, 26);
  });
}

BOOST_AUTO_TEST_CASE(group_norm_values_and_gradients) {
  tt::for_each_backend([&](const tt::Backend&) {
    check_group_norm<float>({2, 6, 5}, 3, true, 2e-6, 31);
    check_group_norm<float>({3, 4, 7, 5}, 2, true, 2e-6, 32);
    check_group_norm<float>({2, 6}, 2, true, 2e-6, 33);       // 2-D (no spatial dims)
    check_group_norm<float>({2, 6, 11}, 1, false, 2e-6, 34);  // one group, no affine
    check_group_norm<double>({3, 4, 9}, 4, true, 1e-11, 35);
    check_group_norm<float>({2, 4, 7}, 4, true, 2e-6, 38, /*transposed=*/true);
    check_group_norm<double>({2, 4, 7}, 2, true, 1e-11, 39, /*transposed=*/true);
    check_group_norm<tritium::f16_t>({2, 8, 33}, 4, true, 2e-3, 36);
    check_group_norm<tritium::bf16_t>({2, 4, 19}, 2, true, 1.5e-2, 37);
  });
}

BOOST_AUTO_TEST_CASE(rms_norm_values_and_gradients) {
  tt::for_each_backend([&](const tt::Backend&) {
    check_rms_norm<float>({7, 300}, {300}, true, 1e-6, 2e-6, 41);
    check_rms_norm<float>({3, 5, 7}, {5, 7}, true, std::nullopt, 2e-6, 42);  // eps None: finfo(f32).eps
    check_rms_norm<float>({9, 13}, {13}, false, 1e-5, 2e-6, 43);
    check_rms_norm<double>({5, 21}, {21}, true, 1e-3, 1e-11, 44);
    check_rms_norm<float>({3, 5000}, {5000}, true, 1e-6, 2e-6, 45, /*with_grad=*/false);  // longer than a block
    check_rms_norm<tritium::f16_t>({4, 65}, {65}, true, std::nullopt, 2e-3, 46);
    check_rms_norm<tritium::bf16_t>({4, 65}, {65}, true, std::nullopt, 1.5e-2, 47);
  });
}

// Rows of at most 8192 are held in registers: the forward reads x once, the backward's programs
// take runs of rows and add the weight gradient of each into partials [P, N] summed by a second
// kernel. Row counts off the run length, rows off every block, the one-block limit (8192) and
// past it (the two-pass dx kernel and the column sums), this device's and an H100's program
// counts (132 SMs: 264 programs at most, here 4 rows a program), f32 / f16 / bf16 / f64.
BOOST_AUTO_TEST_CASE(rms_norm_rows_in_registers) {
  tt::for_each_backend([&](const tt::Backend&) {
    {  // the closed form agrees with central differences
      Tensor x = ou::random_tensor<double>({3, 7}, 61, -2, 3), dy = ou::random_tensor<double>({3, 7}, 62);
      Tensor w = ou::random_tensor<double>({7}, 63, 0.5, 1.5);
      const Vec xv = ou::values(x), dyv = ou::values(dy), wv = ou::values(w);
      auto [dx, dw] = rms_norm_grads_ref(xv, dyv, 7, wv, 1e-6);
      tt::check_close<double>(ou::as_host(dx), fd_grad([&](const Vec& v) { return rms_norm_ref(v, 7, wv, 1e-6); }, xv, dyv), 1e-7, "ref dx");
      tt::check_close<double>(ou::as_host(dw), fd_grad([&](const Vec& v) { return rms_norm_ref(xv, 7, v, 1e-6); }, wv, dyv), 1e-7, "ref dw");
    }
    for (bool gpu_plan : {false, true}) {
      std::optional<ops::detail::ScopedReduceDevice> plan;
      if (gpu_plan) plan.emplace(ops::detail::ReduceDevice::cuda(132));
      check_rms_norm_rows<float>(37, 1000, true, 2e-6, 71);
      check_rms_norm_rows<float>(33, 777, false, 2e-6, 72);
      check_rms_norm_rows<double>(9, 129, true, 1e-11, 73);
      check_rms_norm_rows<tritium::bf16_t>(67, 4096, true, 1e-2, 74);
      check_rms_norm_rows<tritium::f16_t>(5, 8192, true, 2e-3, 75);
      check_rms_norm_rows<float>(3, 9000, true, 2e-6, 76);  // past the register block
      check_rms_norm_rows<tritium::bf16_t>(4, 8200, false, 1e-2, 77);
    }
  });
}

// The differentiable functions: the gradients reach input, weight and bias through autograd.
BOOST_AUTO_TEST_CASE(autograd_functions) {
  tt::for_each_backend([&](const tt::Backend&) {
    using tritium::autograd::gradcheck;
    Tensor x = ou::random_tensor<double>({3, 2, 5}, 51, -2, 2).requires_grad_(true);
    Tensor w = ou::random_tensor<double>({2}, 52, 0.5, 1.5).requires_grad_(true);
    Tensor b = ou::random_tensor<double>({2}, 53).requires_grad_(true);
    BOOST_TEST(gradcheck([](const auto& in) { return tritium::batch_norm(in[0], {}, {}, in[1], in[2], true); }, {x, w, b}));
    BOOST_TEST(gradcheck([](const auto& in) { return tritium::group_norm(in[0], 1, in[1], in[2]); }, {x, w, b}));
    Tensor wr = ou::random_tensor<double>({5}, 54, 0.5, 1.5).requires_grad_(true);
    BOOST_TEST(gradcheck([](const auto& in) { return tritium::rms_norm(in[0], {5}, in[1]); }, {x, wr}));
  });
}

BOOST_AUTO_TEST_CASE(modules) {
  tt::for_each_backend([&](const tt::Backend& be) {
    namespace nn = tritium::nn;
    nn::BatchNorm2d bn(3);
    BOOST_TEST(bn.str() == "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)");
    BOOST_TEST(nn::BatchNorm1d(16, 1e-5, std::nullopt, false, false, false).str() ==
               "BatchNorm1d(16, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=False)");
    std::vector<std::string> names;
    for (auto& [name, p] : bn.named_parameters()) names.push_back(name);
    BOOST_TEST((names == std::vector<std::string>{"weight", "bias"}));
    // The running statistics are buffers: PyTorch's state_dict keys, in its order.
    BOOST_TEST((bn.state_dict().keys() ==
                std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
    BOOST_TEST(nn::BatchNorm1d(4, 1e-5, 0.1, true, false).state_dict().keys() == (std::vector<std::string>{"weight", "bias"}));
    BOOST_TEST(ou::values(bn.weight) == Vec(3, 1.0));
    BOOST_TEST(ou::values(bn.bias) == Vec(3, 0.0));
    BOOST_TEST(ou::values(bn.running_mean) == Vec(3, 0.0));
    BOOST_TEST(ou::values(bn.running_var) == Vec(3, 1.0));
    BOOST_TEST((bn.num_batches_tracked.dtype() == DType::i64));
    BOOST_TEST((bn.running_mean.device() == be.device));
    // Training: batch statistics, running statistics updated, one batch counted.
    Tensor x = ou::random_tensor<float>({4, 3, 5, 6}, 61, -1, 3);
    const Vec xv = ou::values(x);
    const NCS d = ncs_of(x.shape());
    BnRef ref = batch_norm_ref(xv, d, {}, {}, true, {}, {}, 1e-5);
    ou::check_values(bn(x), ref.y, 2e-6, "train forward");
    Vec rm, rv;
    for (int64_t c = 0; c < 3; ++c) rm.push_back(0.1 * ref.mean[c]), rv.push_back(0.9 + 0.1 * ref.var[c] * 120 / 119);
    ou::check_values(bn.running_mean, rm, 1e-6, "running_mean");
    ou::check_values(bn.running_var, rv, 1e-6, "running_var");
    BOOST_TEST(bn.num_batches_tracked.to_vector<int64_t>()[0] == 1);
    // Evaluation: the running statistics.
    bn.eval();
    ou::check_values(bn(x), batch_norm_ref(xv, d, {}, {}, false, rm, rv, 1e-5).y, 2e-6, "eval forward");
    BOOST_TEST(bn.num_batches_tracked.to_vector<int64_t>()[0] == 1);
    // momentum None: the cumulative average of the batches' statistics.
    nn::BatchNorm1d cum(3, 1e-5, std::nullopt);
    Tensor x1 = ou::random_tensor<float>({6, 3}, 62), x2 = ou::random_tensor<float>({6, 3}, 63, 1, 4);
    cum(x1);
    cum(x2);
    BnRef r1 = batch_norm_ref(ou::values(x1), ncs_of({6, 3}), {}, {}, true, {}, {}, 0),
          r2 = batch_norm_ref(ou::values(x2), ncs_of({6, 3}), {}, {}, true, {}, {}, 0);
    Vec avg;
    for (int64_t c = 0; c < 3; ++c) avg.push_back((r1.mean[c] + r2.mean[c]) / 2);
    ou::check_values(cum.running_mean, avg, 1e-6, "cumulative running_mean");
    // Without running statistics, evaluation uses the batch's.
    nn::BatchNorm1d nostats(3, 1e-5, 0.1, true, false);
    nostats.eval();
    ou::check_values(nostats(x1), r1.y.empty() ? Vec{} : batch_norm_ref(ou::values(x1), ncs_of({6, 3}), {}, {}, true, {}, {}, 1e-5).y,
                     2e-6, "eval without running stats");
    BOOST_TEST(!nostats.running_mean.defined());

    nn::GroupNorm gn(2, 4);
    BOOST_TEST(gn.str() == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)");
    BOOST_TEST(ou::values(gn.weight) == Vec(4, 1.0));
    Tensor xg = ou::random_tensor<float>({2, 4, 7}, 64);
    ou::check_values(gn(xg), group_norm_ref(ou::values(xg), ncs_of({2, 4, 7}), 2, {}, {}, 1e-5), 2e-6, "GroupNorm");
    BOOST_TEST(nn::GroupNorm(1, 3, 1e-5, false).parameters().empty());

    nn::RMSNorm rms({4});
    BOOST_TEST(rms.str() == "RMSNorm((4,), eps=None, elementwise_affine=True)");
    BOOST_TEST(nn::RMSNorm({3, 4}, 1e-6, false).str() == "RMSNorm((3, 4), eps=1e-06, elementwise_affine=False)");
    names.clear();
    for (auto& [name, p] : rms.named_parameters()) names.push_back(name);
    BOOST_TEST((names == std::vector<std::string>{"weight"}));
    Tensor xr = ou::random_tensor<float>({5, 4}, 65);
    ou::check_values(rms(xr), rms_norm_ref(ou::values(xr), 4, {}, std::numeric_limits<float>::epsilon()), 2e-6, "RMSNorm");
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    namespace nn = tritium::nn;
    Tensor x = ou::random_tensor<float>({4, 3, 5}, 71), c3 = ops::ones({3}), c4 = ops::ones({4});
    tt::check_throws([&] { ops::batch_norm(ou::random_tensor<float>({1, 3}, 72), {}, {}, {}, {}, true, 0.1, 1e-5); },
                     {"batch_norm", "more than 1 value per channel when training", "[1, 3]"}, "one value");
    tt::check_throws([&] { ops::batch_norm(x, {}, {}, {}, {}, false, 0.1, 1e-5); },
                     {"running_mean and running_var must be defined in evaluation mode"}, "eval without stats");
    tt::check_throws([&] { ops::batch_norm(x, c4, c4, {}, {}, false, 0.1, 1e-5); },
                     {"running_mean should contain 3 elements", "[4]"}, "running_mean size");
    tt::check_throws([&] { ops::batch_norm(x, c3, c3, c4, {}, false, 0.1, 1e-5); },
                     {"weight should contain 3 elements", "[4]"}, "weight size");
    tt::check_throws([&] { ops::batch_norm(ou::random_tensor<float>({4}, 73), {}, {}, {}, {}, true, 0.1, 1e-5); },
                     {"at least 2 dims", "[4]"}, "1-D input");
    tt::check_throws([&] { ops::batch_norm(ou::random_tensor<int32_t>({4, 3}, 74, 0, 5), {}, {}, {}, {}, true, 0.1, 1e-5); },
                     {"floating-point input", "i32"}, "dtype");
    tt::check_throws([&] { ops::group_norm(x, 2, {}, {}, 1e-5); },
                     {"group_norm", "divisible by num_groups", "[4, 3, 5]", "num_groups=2"}, "groups");
    tt::check_throws([&] { ops::group_norm(x, 3, c4, {}, 1e-5); },
                     {"weight to be a vector of size 3", "[4]"}, "gn weight");
    tt::check_throws([&] { ops::group_norm(ou::random_tensor<float>({3}, 75), 1, {}, {}, 1e-5); },
                     {"at least 2 dims"}, "gn 1-D");
    tt::check_throws([&] { ops::rms_norm(x, {4}, {}, std::nullopt); },
                     {"rms_norm", "normalized_shape [4]", "[4, 3, 5]"}, "rms shape");
    tt::check_throws([&] { ops::rms_norm(x, {5}, c4, std::nullopt); },
                     {"weight of the normalized shape [5]", "[4]"}, "rms weight");
    tt::check_throws([&] { nn::BatchNorm2d(3)(x); }, {"BatchNorm2d", "expected 4D input (got 3D input)"}, "bn2d dims");
    tt::check_throws([&] { nn::BatchNorm1d(3)(ou::random_tensor<float>({2, 3, 4, 5}, 76)); },
                     {"BatchNorm1d", "expected 2D or 3D input (got 4D input)"}, "bn1d dims");
    tt::check_throws([&] { nn::GroupNorm(2, 3); }, {"num_channels (3) must be divisible by num_groups (2)"}, "GroupNorm");
    tt::check_throws([&] { nn::RMSNorm({}); }, {"normalized_shape is empty"}, "RMSNorm");
  });
}

BOOST_AUTO_TEST_SUITE_END()
