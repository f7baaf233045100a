// ops::layer_norm / layer_norm_backward, nn layer_norm (autograd) and nn::LayerNorm on every
// backend: y, mean, rstd, dx, dw, db against float64 host formulas, for f32/f16/f64, rows longer
// than one block, several normalised dims, no affine parameters, and the errors.
#include <cmath>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/module.h"
#include "ops/reduce_plan.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

namespace {

struct Ref {
  std::vector<double> y, mean, rstd, dx, dw, db;
};

// The float64 formulas, rows of N elements.
Ref reference(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
              const std::vector<double>& dy, int64_t N, double eps) {
  int64_t M = static_cast<int64_t>(x.size()) / N;
  bool affine = !w.empty();
  Ref r;
  r.y.resize(x.size());
  r.dx.resize(x.size());
  r.dw.assign(static_cast<size_t>(N), 0.0);
  r.db.assign(static_cast<size_t>(N), 0.0);
  for (int64_t i = 0; i < M; ++i) {
    const double* xr = &x[static_cast<size_t>(i * N)];
    double mean = 0, var = 0;
    for (int64_t j = 0; j < N; ++j) mean += xr[j];
    mean /= N;
    for (int64_t j = 0; j < N; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= N;
    double rstd = 1 / std::sqrt(var + eps);
    r.mean.push_back(mean);
    r.rstd.push_back(rstd);
    double c1 = 0, c2 = 0;
    for (int64_t j = 0; j < N; ++j) {
      size_t k = static_cast<size_t>(i * N + j);
      double xhat = (xr[j] - mean) * rstd;
      double wj = affine ? w[static_cast<size_t>(j)] : 1.0;
      r.y[k] = xhat * wj + (affine ? b[static_cast<size_t>(j)] : 0.0);
      c1 += xhat * wj * dy[k];
      c2 += wj * dy[k];
      r.dw[static_cast<size_t>(j)] += dy[k] * xhat;
      r.db[static_cast<size_t>(j)] += dy[k];
    }
    c1 /= N;
    c2 /= N;
    for (int64_t j = 0; j < N; ++j) {
      size_t k = static_cast<size_t>(i * N + j);
      double xhat = (xr[j] - mean) * rstd;
      double wj = affine ? w[static_cast<size_t>(j)] : 1.0;
      r.dx[k] = (wj * dy[k] - (xhat * c1 + c2)) * rstd;
    }
  }
  return r;
}

template <class T> void check_case(const ou::Shape& shape, const ou::Shape& norm, bool affine, double tol, uint32_t seed) {
  std::string what = fmt::format("{} x={} normalized={} affine={}", tritium::dtype_name(tritium::dtype_of<T>()),
                                 ou::numel(shape), ou::numel(norm), affine);
  Tensor x = ou::random_tensor<T>(shape, seed, -3, 2), dy = ou::random_tensor<T>(shape, seed + 1);
  Tensor w = affine ? ou::random_tensor<T>(norm, seed + 2, 0.5, 1.5) : Tensor();
  Tensor b = affine ? ou::random_tensor<T>(norm, seed + 3) : Tensor();
  const double eps = 1e-5;
  Ref ref = reference(ou::values(x), affine ? ou::values(w) : std::vector<double>{},
                      affine ? ou::values(b) : std::vector<double>{}, ou::values(dy), ou::numel(norm), eps);
  auto r = ops::layer_norm(x, norm, w, b, eps);
  BOOST_TEST((r.y.shape() == x.shape()));
  BOOST_TEST((r.y.dtype() == x.dtype()));
  BOOST_TEST((r.y.device() == tritium::default_device()));
  ou::check_values(r.y, ref.y, tol, what + " y");
  ou::check_values(r.mean, ref.mean, tol, what + " mean");
  ou::check_values(r.rstd, ref.rstd, tol, what + " rstd");
  auto g = ops::layer_norm_backward(dy, x, norm, w, r.mean, r.rstd);
  ou::check_values(g.dx, ref.dx, 4 * tol, what + " dx");
  if (affine) {
    BOOST_TEST((g.dweight.shape() == norm));
    ou::check_values(g.dweight, ref.dw, 4 * tol, what + " dw");
    ou::check_values(g.dbias, ref.db, 4 * tol, what + " db");
  } else {
    BOOST_TEST(!g.dweight.defined());
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layer_norm)

BOOST_AUTO_TEST_CASE(values_and_gradients) {
  tt::for_each_backend([&](const tt::Backend&) {
    check_case<float>({37, 1000}, {1000}, true, 2e-6, 1);
    check_case<float>({5, 3001}, {3001}, true, 2e-6, 2);       // rows longer than one block
    check_case<float>({3, 5, 37}, {5, 37}, true, 2e-6, 3);     // two normalised dims
    check_case<float>({64, 77}, {77}, false, 2e-6, 4);         // no weight and bias
    check_case<double>({19, 1029}, {1029}, true, 1e-12, 5);
    check_case<tritium::f16_t>({33, 513}, {513}, true, 2e-3, 6);
    check_case<tritium::bf16_t>({9, 300}, {300}, true, 1.5e-2, 7);
  });
}

// dw and db as a column reduction cut by the reduction plan: an H100's plan (forced on any backend)
// splits the rows into chunks whose partials one finishing launch sums; chunks that do not divide
// the rows, and a column block wider than the row.
BOOST_AUTO_TEST_CASE(weight_and_bias_gradients_with_the_rows_split) {
  namespace od = tritium::ops::detail;
  od::ScopedReduceDevice force(od::ReduceDevice::cuda(132));
  for (auto [M, N] : std::vector<std::pair<int64_t, int64_t>>{{1000, 77}, {2500, 300}})
    BOOST_TEST(od::plan_reduce(1, M, N, od::ReduceDevice::cuda(132)).chunks > 1, "M=" << M << " N=" << N);
  tt::for_each_backend([&](const tt::Backend&) {
    check_case<float>({1000, 77}, {77}, true, 2e-6, 11);
    check_case<double>({10, 250, 300}, {300}, true, 1e-12, 12);
    check_case<tritium::bf16_t>({1000, 77}, {77}, true, 1.5e-2, 13);
  });
}

// The autograd op and the module: the gradients reach x, weight and bias.
BOOST_AUTO_TEST_CASE(autograd_and_module) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const ou::Shape shape{6, 50};
    Tensor x = ou::random_tensor<double>(shape, 11).requires_grad_(true);
    tritium::nn::LayerNorm ln({50});
    BOOST_TEST(ln.str() == "LayerNorm((50,), eps=1e-05, elementwise_affine=True, bias=True)");
    BOOST_TEST((ln.weight.device() == be.device));
    BOOST_TEST(ou::values(ln.weight) == std::vector<double>(50, 1.0));
    BOOST_TEST(ou::values(ln.bias) == std::vector<double>(50, 0.0));
    // A double model: move the parameters to f64 through a fresh pair.
    Tensor w = ou::random_tensor<double>({50}, 12, 0.5, 1.5).requires_grad_(true);
    Tensor b = ou::random_tensor<double>({50}, 13).requires_grad_(true);
    Tensor dy = ou::random_tensor<double>(shape, 14);
    Tensor y = tritium::layer_norm(x, {50}, w, b);
    y.backward(dy);
    Ref ref = reference(ou::values(x), ou::values(w), ou::values(b), ou::values(dy), 50, 1e-5);
    ou::check_values(y, ref.y, 1e-12, "y");
    ou::check_values(x.grad(), ref.dx, 1e-11, "x.grad");
    ou::check_values(w.grad(), ref.dw, 1e-11, "w.grad");
    ou::check_values(b.grad(), ref.db, 1e-11, "b.grad");
    // The module on f32 input gives the functional result with its own parameters.
    Tensor xf = ou::random_tensor<float>(shape, 15);
    ou::check_values(ln.forward(xf), ou::values(tritium::layer_norm(xf, {50}, ln.weight, ln.bias)), 0, "module");
    tritium::nn::LayerNorm plain({50}, 1e-3, false);
    BOOST_TEST(plain.parameters().empty());
    BOOST_TEST(!plain.weight.defined());
  });
}

// A row whose variance overflows f32 (values near 1e20: squares past 3.4e38) is NaN, as PyTorch;
// rstd = 1/sqrt(inf) = 0 used to turn it into a row of zeros. The other rows are unaffected.
BOOST_AUTO_TEST_CASE(variance_overflow_gives_nan) {
  tt::for_each_backend([&](const tt::Backend&) {
    const int64_t N = 40;
    std::vector<float> v(static_cast<size_t>(2 * N));
    for (int64_t j = 0; j < N; ++j) {
      v[static_cast<size_t>(j)] = (j % 2 ? 1e20f : -1e20f) * (1 + 0.01f * j);  // mean ~0, variance ~1e40
      v[static_cast<size_t>(N + j)] = 0.5f * j;                                // an ordinary row
    }
    Tensor x = Tensor::from_vector(v, {2, N});
    for (bool affine : {true, false}) {
      BOOST_TEST_CONTEXT("affine " << affine) {
        Tensor w = affine ? tritium::ops::ones({N}) : Tensor(), b = affine ? tritium::ops::zeros({N}) : Tensor();
        auto r = ops::layer_norm(x, {N}, w, b, 1e-5);
        auto y = ou::values(r.y), rstd = ou::values(r.rstd);
        size_t nan = 0;
        for (int64_t j = 0; j < N; ++j) nan += std::isnan(y[static_cast<size_t>(j)]);
        BOOST_TEST(nan == static_cast<size_t>(N), nan << " of " << N << " elements of the overflowing row are NaN");
        BOOST_TEST(std::isnan(rstd[0]));
        std::vector<double> second(y.begin() + N, y.end());
        std::vector<double> x2(v.begin() + N, v.end());
        Ref ref = reference(x2, {}, {}, std::vector<double>(static_cast<size_t>(N), 0.0), N, 1e-5);
        tt::check_close<double>(second, ref.y, 2e-6, "the other row");
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = ou::random_tensor<float>({4, 10}, 21), w = tritium::ops::ones({10}), b = tritium::ops::zeros({10});
    tt::check_throws([&] { ops::layer_norm(x, {12}, w, b, 1e-5); },
                     {"layer_norm", "normalized_shape [12]", "trailing dims", "[4, 10]"}, "shape");
    tt::check_throws([&] { ops::layer_norm(x, {10}, tritium::ops::ones({9}), b, 1e-5); },
                     {"weight and bias must have the normalized shape [10]", "[9]"}, "weight shape");
    tt::check_throws([&] { ops::layer_norm(x, {10}, Tensor(), b, 1e-5); }, {"a bias without a weight"}, "weight missing");
    // A weight without a bias (LayerNorm(bias=False)) is the affine form with a zero bias.
    Tensor rw = ou::random_tensor<float>({10}, 23);
    auto weight_only = ops::layer_norm(x, {10}, rw, Tensor(), 1e-5).y.to(DType::f64).to(tritium::Device::cpu()).to_vector<double>();
    auto zero_bias = ops::layer_norm(x, {10}, rw, tritium::ops::zeros({10}, x.dtype(), x.device()), 1e-5)
                         .y.to(DType::f64).to(tritium::Device::cpu()).to_vector<double>();
    BOOST_TEST(weight_only == zero_bias, boost::test_tools::per_element());
    tt::check_throws([&] { ops::layer_norm(x, {10}, w, b, -1); }, {"eps must be >= 0"}, "eps");
    tt::check_throws([&] { ops::layer_norm(ou::random_tensor<int32_t>({4, 10}, 22, -5, 5), {10}, w, b, 1e-5); },
                     {"floating-point input", "i32"}, "dtype");
    tt::check_throws([&] { tritium::nn::LayerNorm({}); }, {"normalized_shape is empty"}, "module shape");
  });
}

BOOST_AUTO_TEST_SUITE_END()
