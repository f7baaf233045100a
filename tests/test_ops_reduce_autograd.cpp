// The differentiable API of issue 29 item 4 (nn/reduction_ops.h) on top of the registry's
// gradchecks (test_op_registry gradchecks every declaration's samples, test_autograd_grad
// gradgradchecks them): the ops are declared, record PyTorch's node names, send gradients to
// the selected indices only, handle zeros in prod/cumprod, and refuse bad inputs through the
// dispatch with errors naming the op.
#include "test_support.h"
#include "gradcheck_support.h"

#include <cmath>
#include <random>
#include <set>
#include <tuple>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "ops/decl/op_decl.h"

namespace tt = tritium::test;
namespace T = tritium;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

BOOST_AUTO_TEST_SUITE(test_ops_reduce_autograd)

namespace {
Tensor leaf(std::vector<double> v, std::vector<int64_t> shape) {
  Tensor t = Tensor::from_vector(v, shape);
  t.requires_grad_();
  return t;
}
std::vector<double> grad_of(const Tensor& t) { return t.grad().to_vector<double>(); }
}  // namespace

BOOST_AUTO_TEST_CASE(declared_with_torch_names) {
  std::set<std::string> names;
  for (const auto& op : ops::op_registry().all()) names.insert(op->name);
  for (const char* n : {"var", "std", "prod", "prod.dim_int", "logsumexp", "linalg_vector_norm", "max.dim", "min.dim",
                        "median", "median.dim", "kthvalue", "cumsum", "cumprod", "cummax", "cummin", "sort", "topk"})
    BOOST_TEST(names.count(n) == 1, n << " is not declared");
  BOOST_TEST(ops::op_decl("linalg_vector_norm").torch_name == "torch.linalg.vector_norm");
  BOOST_TEST(ops::op_decl("sort").outputs.size() == 2u);
  BOOST_TEST(!ops::op_decl("cumprod").twice_differentiable);
}

BOOST_AUTO_TEST_CASE(gradients_go_to_the_selected_elements) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({3, 1, 4, 1, 5, 9}, {2, 3});
    auto m = T::max(x, 1);
    BOOST_TEST(m.values.requires_grad());
    BOOST_TEST(!m.indices.requires_grad());
    BOOST_TEST(m.values.autograd()->grad_fn->name() == "MaxBackward");
    T::sum(m.values).backward();
    BOOST_TEST(grad_of(x) == std::vector<double>({0, 0, 1, 0, 0, 1}));

    Tensor y = leaf({2, 7, 1, 8}, {4});
    auto s = T::sort(y, 0, true);
    T::sum(T::mul(s.values, Tensor::from_vector<double>({1, 2, 3, 4}))).backward();
    BOOST_TEST(grad_of(y) == std::vector<double>({3, 2, 4, 1}), "sort's gradient is the permuted weights");

    Tensor z = leaf({2, 7, 1, 8}, {4});
    T::sum(T::topk(z, 2).values).backward();
    BOOST_TEST(grad_of(z) == std::vector<double>({0, 1, 0, 1}));

    Tensor c = leaf({1, 3, 2, 5}, {4});
    T::sum(T::cummax(c, 0).values).backward();
    BOOST_TEST(grad_of(c) == std::vector<double>({1, 2, 0, 1}), "cummax: each prefix's max gets its gradient");
  });
}

BOOST_AUTO_TEST_CASE(prod_and_cumprod_with_zeros) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({2, 0, 3, 0, 4, 5}, {2, 3});
    T::sum(T::prod(x, 1)).backward();
    BOOST_TEST(grad_of(x) == std::vector<double>({0, 6, 0, 20, 0, 0}), "one zero: only it gets a gradient");
    Tensor y = leaf({2, 0, 3}, {3});
    T::prod(y).backward();
    BOOST_TEST(grad_of(y) == std::vector<double>({0, 6, 0}));
    Tensor c = leaf({2, 0, 3}, {3});
    T::sum(T::cumprod(c, 0)).backward();
    // d/dx0 (x0 + x0 x1 + x0 x1 x2) = 1 + x1 + x1 x2 = 1; d/dx1 = x0 + x0 x2 = 8; d/dx2 = x0 x1 = 0.
    BOOST_TEST(grad_of(c) == std::vector<double>({1, 8, 0}));
  });
}

BOOST_AUTO_TEST_CASE(var_mean_and_norm) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = tt::input({3, 5}, 401);
    x.requires_grad_();
    auto [v, m] = T::var_mean(x, {1});
    BOOST_TEST(v.requires_grad());
    BOOST_TEST(m.requires_grad());
    BOOST_TEST(v.autograd()->grad_fn->name() == "VarBackward");
    tt::gradcheck("var_mean's mean + var", [](const std::vector<Tensor>& in) {
      auto [vv, mm] = T::var_mean(in[0], {0}, 0);
      return T::add(vv, mm);
    }, {x});
    tt::gradcheck("norm p=3", [](const std::vector<Tensor>& in) { return T::norm(in[0], 3, {1}); }, {x});
    // Zero rows: the 2-norm's gradient is 0 there, not NaN.
    Tensor z = leaf({0, 0, 3, 4}, {2, 2});
    T::sum(T::vector_norm(z, 2, {1})).backward();
    // x * (grad / norm), as PyTorch: 3 * (1 / 5) is 0.6 within an ulp, not exactly.
    std::vector<double> gz = grad_of(z), want{0, 0, 0.6, 0.8};
    for (size_t i = 0; i < want.size(); ++i) BOOST_TEST(std::abs(gz[i] - want[i]) <= 1e-15, "element " << i << ": " << gz[i]);
  });
}

namespace {
std::vector<double> as_doubles(const Tensor& t) { return T::ops::to_dtype(t, DType::f64).to_vector<double>(); }
// Uniform doubles in [lo, hi), rounded to `dt` (so the float64 reference sees the values the op does).
std::vector<double> values_in(DType dt, size_t n, uint32_t seed, double lo, double hi, bool integers = false) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (auto& e : v) e = integers ? std::floor(u(gen)) : u(gen);
  return as_doubles(T::ops::to_dtype(Tensor::from_vector(v, {static_cast<int64_t>(n)}), dt));
}
Tensor leaf_as(const std::vector<double>& v, std::vector<int64_t> shape, DType dt) {
  Tensor t = T::ops::to_dtype(Tensor::from_vector(v, shape), dt);
  t.requires_grad_();
  return t;
}
}  // namespace

// ord 2's backward, x * (grad / norm) with 0 on zero-norm rows, against float64: rows shorter and
// longer than a block (1024), zero rows, f32 and bf16, reduced over the last dim and over dim 0.
BOOST_AUTO_TEST_CASE(norm_backward_values) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (DType dt : {DType::f32, DType::bf16}) {
      const double tol = dt == DType::f32 ? 1e-5 : 2e-2;
      for (auto [rows, cols, dim] : {std::tuple{5, 1030, 1}, std::tuple{7, 37, 1}, std::tuple{33, 6, 0}}) {
        BOOST_TEST_CONTEXT(tritium::dtype_name(dt) << " [" << rows << ", " << cols << "] dim " << dim) {
          std::vector<double> xv = values_in(dt, size_t(rows) * cols, 451 + rows, -2, 2);
          const int kept = dim == 1 ? rows : cols, along = dim == 1 ? cols : rows;
          auto at = [&](int k, int r) { return dim == 1 ? size_t(k) * cols + r : size_t(r) * cols + k; };
          for (int r = 0; r < along; ++r) xv[at(1, r)] = 0;  // a zero-norm row (its gradient is 0, not NaN)
          std::vector<double> gv = values_in(dt, size_t(kept), 452 + rows, -1, 1);
          Tensor x = leaf_as(xv, {rows, cols}, dt);
          Tensor n = T::vector_norm(x, 2, {dim});
          n.backward(T::ops::to_dtype(Tensor::from_vector(gv, {kept}), dt));
          std::vector<double> got = as_doubles(x.grad());
          BOOST_TEST_REQUIRE(got.size() == xv.size());
          double worst = 0;
          for (int k = 0; k < kept; ++k) {
            double ss = 0;
            for (int r = 0; r < along; ++r) ss += xv[at(k, r)] * xv[at(k, r)];
            const double norm = std::sqrt(ss);
            for (int r = 0; r < along; ++r) {
              const double ref = norm == 0 ? 0 : xv[at(k, r)] * gv[size_t(k)] / norm;
              const double e = got[at(k, r)];
              if (norm == 0) BOOST_TEST(e == 0.0, "zero-norm row " << k << " position " << r);
              worst = std::max(worst, std::isfinite(e) ? std::abs(e - ref) / (std::abs(gv[size_t(k)]) + 1e-30) : 1e30);
            }
          }
          BOOST_TEST(worst <= tol, "largest error relative to the row's grad " << worst);
        }
      }
    }
  });
}

// var's and std's backward, 2 (x - mean) / (N - correction) * grad (std: over 2 std, 0 on constant
// rows), against float64: rows longer than a block, a constant row, f32 and bf16.
BOOST_AUTO_TEST_CASE(var_std_backward_values) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (DType dt : {DType::f32, DType::bf16}) {
      const double tol = dt == DType::f32 ? 1e-5 : 3e-2;
      for (bool is_std : {false, true}) {
        const int rows = 4, cols = 1030;
        BOOST_TEST_CONTEXT(tritium::dtype_name(dt) << (is_std ? " std" : " var")) {
          std::vector<double> xv = values_in(dt, size_t(rows) * cols, 471, -2, 2);
          for (int r = 0; r < cols; ++r) xv[size_t(2) * cols + r] = 0.5;  // a constant row: std 0
          std::vector<double> gv = values_in(dt, size_t(rows), 472, 0.5, 1.5);
          Tensor x = leaf_as(xv, {rows, cols}, dt);
          Tensor y = is_std ? T::std(x, {1}) : T::var(x, {1});
          y.backward(T::ops::to_dtype(Tensor::from_vector(gv, {rows}), dt));
          std::vector<double> got = as_doubles(x.grad());
          BOOST_TEST_REQUIRE(got.size() == xv.size());
          double worst = 0;
          for (int k = 0; k < rows; ++k) {
            double mean = 0, m2 = 0;
            for (int r = 0; r < cols; ++r) mean += xv[size_t(k) * cols + r] / cols;
            for (int r = 0; r < cols; ++r) m2 += std::pow(xv[size_t(k) * cols + r] - mean, 2);
            const double var = m2 / (cols - 1), sd = std::sqrt(var);
            const double scale = is_std ? (sd == 0 ? 0 : gv[size_t(k)] / (2 * sd)) : gv[size_t(k)];
            for (int r = 0; r < cols; ++r) {
              const double ref = scale * 2 * (xv[size_t(k) * cols + r] - mean) / (cols - 1);
              const double e = got[size_t(k) * cols + r];
              const double mag = std::abs(scale) * 2 * 2.5 / (cols - 1) + 1e-30;  // the row's largest |ref|, about
              worst = std::max(worst, std::isfinite(e) ? std::abs(e - ref) / mag : 1e30);
              if (sd == 0) BOOST_TEST(e == 0.0, "constant row, position " << r);
            }
          }
          BOOST_TEST(worst <= tol, "largest error relative to the row's scale " << worst);
        }
      }
    }
  });
}

// max.dim / min.dim send each row's gradient to the first index of its extreme only (rows full of
// ties), whatever the row length; the rest of the input's gradient is exactly 0.
BOOST_AUTO_TEST_CASE(max_dim_backward_ties) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (DType dt : {DType::f32, DType::bf16}) {
      for (auto [rows, cols, dim, keepdim] : {std::tuple{6, 1030, 1, false}, std::tuple{9, 37, 1, true}, std::tuple{37, 9, 0, false}}) {
        for (bool is_max : {true, false}) {
          BOOST_TEST_CONTEXT(tritium::dtype_name(dt) << " [" << rows << ", " << cols << "] dim " << dim << (is_max ? " max" : " min")) {
            std::vector<double> xv = values_in(dt, size_t(rows) * cols, 461 + cols, 0, 4, true);  // 4 values: ties everywhere
            const int kept = dim == 1 ? rows : cols, along = dim == 1 ? cols : rows;
            auto at = [&](int k, int r) { return dim == 1 ? size_t(k) * cols + r : size_t(r) * cols + k; };
            std::vector<double> gv = values_in(dt, size_t(kept), 462 + cols, 0.5, 1.5);
            Tensor x = leaf_as(xv, {rows, cols}, dt);
            auto m = is_max ? T::max(x, dim, keepdim) : T::min(x, dim, keepdim);
            std::vector<int64_t> gshape = keepdim ? std::vector<int64_t>{dim == 1 ? kept : 1, dim == 1 ? 1 : kept}
                                                  : std::vector<int64_t>{kept};
            m.values.backward(T::ops::to_dtype(Tensor::from_vector(gv, gshape), dt));
            std::vector<double> got = as_doubles(x.grad());
            BOOST_TEST_REQUIRE(got.size() == xv.size());
            int bad = 0;
            for (int k = 0; k < kept; ++k) {
              int best = 0;
              for (int r = 1; r < along; ++r)
                if (is_max ? xv[at(k, r)] > xv[at(k, best)] : xv[at(k, r)] < xv[at(k, best)]) best = r;
              for (int r = 0; r < along; ++r) bad += got[at(k, r)] != (r == best ? gv[size_t(k)] : 0.0);
            }
            BOOST_TEST(bad == 0, bad << " elements differ from the first extreme's gradient");
          }
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(bad_inputs_through_the_dispatch) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor i = T::ops::arange(0, 6, 1, DType::i32).reshape({2, 3});
    tt::check_throws([&] { T::var(i, {1}, 0); }, {"var", "floating-point", "i32"}, "correction on an integer tensor");
    tt::check_throws([&] { T::vector_norm(i); }, {"linalg_vector_norm", "floating-point", "i32"}, "norm of integers");
    tt::check_throws([&] { T::topk(i, 4, 1); }, {"topk", "k = 4", "out of range"}, "k > size");
    tt::check_throws([&] { T::kthvalue(i, 0, 1); }, {"kthvalue", "out of range"}, "k = 0");
    tt::check_throws([&] { T::sort(i, 2); }, {"sort", "2"}, "dim out of range");
    tt::check_throws([&] { T::cumsum(i, -3); }, {"cumsum", "-3"}, "negative dim out of range");
    tt::check_throws([&] { T::max(Tensor::empty({0}, DType::f32)); }, {"max", "numel() == 0"}, "max of nothing");
    BOOST_TEST((T::cumsum(i, 1).dtype() == DType::i64));
    BOOST_TEST((T::prod(i).dtype() == DType::i64));
    BOOST_TEST((T::logsumexp(i, {1}).dtype() == DType::f32));
  });
}

BOOST_AUTO_TEST_SUITE_END()
