// The statistics reductions and scans of ops/reduce_stats.h (var std var_mean std_mean prod
// logsumexp vector_norm all any count_nonzero max/min with indices, cumsum cumprod cummax cummin
// and cumprod's gradient) against float64 host references: random inputs, rows of 1, 3, 1000 and
// 5000 elements, strided inputs, negative dims, keepdim, empty tensors, NaN / Inf, integer and bool
// dtypes, and PyTorch's errors. (Outputs are poisoned: tests/main.cpp sets TRITIUM_POISON_BUFFERS.)
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "ops/reduce_plan.h"
#include "ops/reduce_stats.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

BOOST_AUTO_TEST_SUITE(test_ops_reduce_stats)

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// For each output element (row-major over the kept dims), the flat indices of the input elements
// it reduces, in row-major order of the reduced dims. `dims` sorted and normalised; empty = all.
std::vector<std::vector<int64_t>> groups(const ou::Shape& shape, std::vector<int> dims) {
  if (dims.empty())
    for (int d = 0; d < static_cast<int>(shape.size()); ++d) dims.push_back(d);
  std::vector<bool> red(shape.size(), false);
  for (int d : dims) red[static_cast<size_t>(d)] = true;
  ou::Shape kept;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!red[d]) kept.push_back(shape[d]);
  std::vector<std::vector<int64_t>> g(static_cast<size_t>(ou::numel(kept)));
  for (int64_t i = 0; i < ou::numel(shape); ++i) {
    auto idx = ou::unravel(i, shape);
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!red[d]) o = o * shape[d] + idx[d];
    g[static_cast<size_t>(o)].push_back(i);
  }
  return g;
}

using RowFn = std::function<double(const std::vector<double>&)>;

std::vector<double> reduce_ref(const std::vector<double>& v, const ou::Shape& shape, const std::vector<int>& dims, RowFn f) {
  std::vector<double> out;
  for (const auto& g : groups(shape, dims)) {
    std::vector<double> row;
    for (int64_t i : g) row.push_back(v[static_cast<size_t>(i)]);
    out.push_back(f(row));
  }
  return out;
}

RowFn var_fn(double correction, bool take_sqrt) {
  return [=](const std::vector<double>& r) {
    double mean = 0, m2 = 0;
    for (double x : r) mean += x;
    mean /= static_cast<double>(r.size());
    for (double x : r) m2 += (x - mean) * (x - mean);
    double v = m2 / std::max(0.0, static_cast<double>(r.size()) - correction);
    return take_sqrt ? std::sqrt(v) : v;
  };
}
double mean_fn(const std::vector<double>& r) {
  double s = 0;
  for (double x : r) s += x;
  return s / static_cast<double>(r.size());
}
double prod_fn(const std::vector<double>& r) {
  double p = 1;
  for (double x : r) p *= x;
  return p;
}
double lse_fn(const std::vector<double>& r) {
  double m = -kInf;
  for (double x : r) m = std::isnan(x) || x > m ? x : m;
  if (std::isnan(m)) return m;
  if (std::isinf(m)) return m;
  double s = 0;
  for (double x : r) s += std::exp(x - m);
  return std::log(s) + m;
}
RowFn norm_fn(double p) {
  return [=](const std::vector<double>& r) {
    if (p == kInf || p == -kInf) {
      double m = p > 0 ? -kInf : kInf;
      for (double x : r) m = std::isnan(x) ? x : std::isnan(m) ? m : p > 0 ? std::max(m, std::abs(x)) : std::min(m, std::abs(x));
      return m;
    }
    double s = 0;
    for (double x : r) s += p == 0 ? (x != 0) : std::pow(std::abs(x), p);
    return p == 0 ? s : std::pow(s, 1 / p);
  };
}

std::string shape_str(const ou::Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::string dims_str(const std::vector<int>& dims) {
  std::string s = "[";
  for (int d : dims) s += std::to_string(d) + " ";
  return s + "]";
}

void check_on(const Tensor& t, const tt::Backend& be, const std::string& what) {
  BOOST_TEST((t.device() == be.device), what << ": result on " << t.device().str());
}

void check_exact(const Tensor& out, const std::vector<double>& ref, const std::string& what) {
  auto v = ou::values(out);
  BOOST_TEST_REQUIRE(v.size() == ref.size(), what << ": " << v.size() << " elements, expected " << ref.size());
  size_t bad = 0;
  for (size_t i = 0; i < v.size(); ++i) bad += !(v[i] == ref[i] || (std::isnan(v[i]) && std::isnan(ref[i])));
  BOOST_TEST(bad == 0u, what << ": " << bad << " elements differ");
}

// The transpose of a random [a, b] tensor, as a strided view, and its row-major values.
std::pair<Tensor, std::vector<double>> transposed(int64_t a, int64_t b, uint32_t seed, double lo = -1, double hi = 1) {
  Tensor base = ou::random_tensor<float>({a, b}, seed, lo, hi);
  auto vb = ou::values(base);
  std::vector<double> vt(static_cast<size_t>(a * b));
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < a; ++j) vt[static_cast<size_t>(i * a + j)] = vb[static_cast<size_t>(j * b + i)];
  return {base.as_strided({b, a}, {1, b}, 0), vt};
}

}  // namespace

BOOST_AUTO_TEST_CASE(var_and_std) {
  tt::for_each_backend([&](const tt::Backend& be) {
    struct Case { ou::Shape shape; std::vector<int> dims; };
    for (const Case& c : {Case{{3, 1000}, {1}}, Case{{3, 1000}, {0}}, Case{{5000}, {}}, Case{{7, 5, 130}, {0, 2}},
                          Case{{7, 5, 130}, {-1}}, Case{{4, 3}, {}}, Case{{9, 1}, {0}}}) {
      Tensor x = ou::random_tensor<float>(c.shape, 21);
      auto v = ou::values(x);
      std::vector<int> nd;
      for (int d : c.dims) nd.push_back(d < 0 ? d + static_cast<int>(c.shape.size()) : d);
      std::sort(nd.begin(), nd.end());
      for (double corr : {0.0, 1.0, 2.5}) {
        std::string what = "shape " + shape_str(c.shape) + " dims " + dims_str(c.dims) +
                           " correction " + std::to_string(corr);
        Tensor r = ops::var(x, c.dims, corr);
        check_on(r, be, what);
        ou::check_values(r, reduce_ref(v, c.shape, nd, var_fn(corr, false)), 1e-5, "var " + what);
        ou::check_values(ops::std(x, c.dims, corr, true), reduce_ref(v, c.shape, nd, var_fn(corr, true)), 1e-5,
                         "std " + what);
        BOOST_TEST(ops::std(x, c.dims, corr, true).dim() == static_cast<int>(c.shape.size()));
        auto [vv, mm] = ops::var_mean(x, c.dims, corr);
        ou::check_values(vv, reduce_ref(v, c.shape, nd, var_fn(corr, false)), 1e-5, "var_mean.var " + what);
        // The mean of all 5000 values in [-1, 1] is ~0.005, ~1e-2 of their scale: the f32 rounding
        // of their sum (~6e-8 absolute, in any order of additions) is ~1e-5 of it.
        const double mean_tol = c.shape == ou::Shape{5000} ? 3e-5 : 1e-5;
        ou::check_values(mm, reduce_ref(v, c.shape, nd, mean_fn), mean_tol, "var_mean.mean " + what);
        auto [ss, sm] = ops::std_mean(x, c.dims, corr, true);
        ou::check_values(ss, reduce_ref(v, c.shape, nd, var_fn(corr, true)), 1e-5, "std_mean.std " + what);
        ou::check_values(sm, reduce_ref(v, c.shape, nd, mean_fn), mean_tol, "std_mean.mean " + what);
      }
    }
    // A large mean against a small spread: two passes (and the shift) keep f32 accurate.
    Tensor big = ou::random_tensor<float>({2, 5000}, 22, 1e4 - 1, 1e4 + 1);
    ou::check_values(ops::var(big, {1}), reduce_ref(ou::values(big), {2, 5000}, {1}, var_fn(1, false)), 1e-4,
                     "var with a mean of 1e4");
    Tensor d = ou::random_tensor<double>({3, 1000}, 23, 1e6, 1e6 + 1);
    ou::check_values(ops::var(d, {1}), reduce_ref(ou::values(d), {3, 1000}, {1}, var_fn(1, false)), 1e-9, "var f64");
    Tensor h = ops::to_dtype(ou::random_tensor<float>({3, 1000}, 24), DType::f16);
    Tensor vh = ops::var(h, {1});
    BOOST_TEST((vh.dtype() == DType::f16));
    ou::check_values(vh, reduce_ref(ou::values(h), {3, 1000}, {1}, var_fn(1, false)), 2e-3, "var f16");
    // Strided: the transpose of [1000, 3], over either dim.
    auto [t, vt] = transposed(1000, 3, 25);
    for (int dim : {0, 1})
      ou::check_values(ops::var(t, {dim}), reduce_ref(vt, {3, 1000}, {dim}, var_fn(1, false)), 1e-5, "var transposed");
    // Degrees of freedom <= 0: inf, or NaN for a constant row (0/0); an empty dim gives NaN.
    auto one = ou::values(ops::var(Tensor::from_vector<float>({1.f, 2.f}), {}, 3));
    BOOST_TEST(std::isinf(one[0]));
    BOOST_TEST(std::isnan(ou::values(ops::var(Tensor::from_vector<float>({5.f}), {}))[0]));
    auto e = ops::var_mean(Tensor::empty({3, 0}, DType::f32), {1});
    for (double x : ou::values(e.first)) BOOST_TEST(std::isnan(x));
    for (double x : ou::values(e.second)) BOOST_TEST(std::isnan(x));
    BOOST_TEST(ops::var(Tensor::empty({0, 3}, DType::f32), {1}).shape() == (ou::Shape{0}));
    Tensor nanrow = Tensor::from_vector<float>({1, NAN, 3, 1, 2, 3}, {2, 3});
    auto vn = ou::values(ops::std(nanrow, {1}));
    BOOST_TEST(std::isnan(vn[0]));
    BOOST_TEST(vn[1] == 1.0, "std of 1 2 3");
    tt::check_throws([&] { ops::var(ou::random_tensor<int32_t>({4}, 26, 0, 9)); }, {"var", "floating point", "i32"},
                     "var of integers");
    tt::check_throws([&] { ops::std_mean(Tensor::zeros({4}, DType::i1)); }, {"std", "floating point"}, "std of bool");
    tt::check_throws([&] { ops::var(Tensor::zeros({3, 4}, DType::f32), {2}); }, {"var", "2"}, "var dim out of range");
    tt::check_throws([&] { ops::var(Tensor::zeros({3, 4}, DType::f32), {1, -1}); }, {"var", "more than once"},
                     "var duplicate dims");
  });
}

BOOST_AUTO_TEST_CASE(prod_op) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (ou::Shape shape : {ou::Shape{1}, ou::Shape{3}, ou::Shape{4, 1000}, ou::Shape{5000}}) {
      Tensor x = ou::random_tensor<float>(shape, 31, 0.97, 1.03);
      auto v = ou::values(x);
      std::string what = "prod of " + shape_str(shape);
      Tensor all = ops::prod(x);
      check_on(all, be, what);
      BOOST_TEST(all.dim() == 0);
      ou::check_values(all, reduce_ref(v, shape, {}, prod_fn), 1e-5, what);
      int last = static_cast<int>(shape.size()) - 1;
      ou::check_values(ops::prod(x, -1, true), reduce_ref(v, shape, {last}, prod_fn), 1e-5, what + " dim -1");
    }
    auto [t, vt] = transposed(7, 30, 32, 0.5, 1.5);  // [30, 7] strided
    ou::check_values(ops::prod(t, 0), reduce_ref(vt, {30, 7}, {0}, prod_fn), 1e-5, "prod transposed dim 0");
    ou::check_values(ops::prod(t, 1), reduce_ref(vt, {30, 7}, {1}, prod_fn), 1e-5, "prod transposed dim 1");
    // Integers multiply exactly in i64; bool gives i64.
    Tensor i = ou::random_tensor<int32_t>({6, 25}, 33, -3, 3);
    Tensor pi = ops::prod(i, 1);
    BOOST_TEST((pi.dtype() == DType::i64));
    check_exact(pi, reduce_ref(ou::values(i), {6, 25}, {1}, prod_fn), "prod of i32");
    Tensor b = Tensor::from_vector<bool>({true, true, false, true, true, true}, {2, 3});
    Tensor pb = ops::prod(b, 1);
    BOOST_TEST((pb.dtype() == DType::i64));
    check_exact(pb, {0, 1}, "prod of bool");
    Tensor z = Tensor::from_vector<float>({2, 0, 3, NAN, 1, INFINITY, 0, 5}, {2, 4});
    auto vz = ou::values(ops::prod(z, 1));
    BOOST_TEST(std::isnan(vz[0]));
    BOOST_TEST(std::isnan(vz[1]), "inf * 0 is NaN");
    check_exact(ops::prod(Tensor::empty({3, 0}, DType::f32), 1), {1, 1, 1}, "prod over an empty dim");
    tt::check_throws([&] { ops::prod(z, 2); }, {"prod", "2"}, "prod dim out of range");
  });
}

BOOST_AUTO_TEST_CASE(logsumexp_op) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (ou::Shape shape : {ou::Shape{1, 1}, ou::Shape{4, 3}, ou::Shape{3, 1000}, ou::Shape{2, 5000}}) {
      Tensor x = ou::random_tensor<float>(shape, 41, -60, 60);
      auto v = ou::values(x);
      std::string what = "logsumexp of " + shape_str(shape);
      Tensor r = ops::logsumexp(x, {1});
      check_on(r, be, what);
      ou::check_values(r, reduce_ref(v, shape, {1}, lse_fn), 1e-6, what);
      ou::check_values(ops::logsumexp(x, {0, 1}), reduce_ref(v, shape, {0, 1}, lse_fn), 1e-6, what + " all");
      ou::check_values(ops::logsumexp(x, {-2}, true), reduce_ref(v, shape, {0}, lse_fn), 1e-6, what + " dim -2");
    }
    // Large values do not overflow; rows of -inf give -inf, a +inf gives +inf, NaN propagates.
    Tensor s = Tensor::from_vector<float>({1000, 1000, -INFINITY, -INFINITY, INFINITY, 1, NAN, 1}, {4, 2});
    auto vs = ou::values(ops::logsumexp(s, {1}));
    BOOST_TEST(std::abs(vs[0] - (1000 + std::log(2.0))) < 1e-3);
    BOOST_TEST(vs[1] == -kInf);
    BOOST_TEST(vs[2] == kInf);
    BOOST_TEST(std::isnan(vs[3]));
    check_exact(ops::logsumexp(Tensor::empty({3, 0}, DType::f32), {1}), {-kInf, -kInf, -kInf}, "over an empty dim");
    Tensor i = Tensor::from_vector<int32_t>({1, 2});
    Tensor li = ops::logsumexp(i, {0});
    BOOST_TEST((li.dtype() == DType::f32));
    ou::check_values(li, {lse_fn({1, 2})}, 1e-6, "logsumexp of integers");
    auto [t, vt] = transposed(1000, 3, 42, -5, 5);
    ou::check_values(ops::logsumexp(t, {1}), reduce_ref(vt, {3, 1000}, {1}, lse_fn), 1e-6, "logsumexp transposed");
    tt::check_throws([&] { ops::logsumexp(s, {3}); }, {"logsumexp", "3"}, "dim out of range");
  });
}

BOOST_AUTO_TEST_CASE(vector_norms) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = ou::random_tensor<float>({6, 1000}, 51, -2, 2);
    auto v = ou::values(x);
    for (double p : {0.0, 1.0, 2.0, kInf, -kInf, 3.0, 0.5, -1.0, 1.5}) {
      std::string what = "vector_norm ord " + std::to_string(p);
      Tensor r = ops::vector_norm(x, p, {1});
      check_on(r, be, what);
      ou::check_values(r, reduce_ref(v, {6, 1000}, {1}, norm_fn(p)), 2e-5, what);
      ou::check_values(ops::vector_norm(x, p), reduce_ref(v, {6, 1000}, {}, norm_fn(p)), 2e-5, what + " all");
      ou::check_values(ops::vector_norm(x, p, {0}, true), reduce_ref(v, {6, 1000}, {0}, norm_fn(p)), 2e-5,
                       what + " dim 0 keepdim");
    }
    auto [t, vt] = transposed(5000, 2, 52);
    ou::check_values(ops::vector_norm(t, 2, {-1}), reduce_ref(vt, {2, 5000}, {1}, norm_fn(2)), 1e-5, "2-norm transposed");
    Tensor z = Tensor::from_vector<float>({0, 3, 0, 0, 1, NAN}, {3, 2});
    auto neg = ou::values(ops::vector_norm(z, -1, {1}));
    BOOST_TEST((neg[0] == 0 && neg[1] == 0 && std::isnan(neg[2])), "(-1)-norm of rows with a zero, and NaN");
    BOOST_TEST(std::isnan(ou::values(ops::vector_norm(z, kInf, {1}))[2]));
    check_exact(ops::vector_norm(z, 0, {1}), {1, 0, 2}, "0-norm counts NaN as non-zero");
    check_exact(ops::vector_norm(Tensor::empty({0}, DType::f32), 1), {0}, "1-norm of nothing");
    tt::check_throws([&] { ops::vector_norm(Tensor::empty({0}, DType::f32), kInf); },
                     {"linalg.vector_norm", "inf norm on an empty tensor", "identity"}, "inf-norm of nothing");
    tt::check_throws([&] { ops::vector_norm(Tensor::empty({2, 0}, DType::f32), -1, {1}); },
                     {"linalg.vector_norm", "-1 norm"}, "negative norm of an empty dim");
    tt::check_throws([&] { ops::vector_norm(Tensor::from_vector<int64_t>({1, 2})); },
                     {"linalg.vector_norm", "floating point", "i64"}, "norm of integers");
  });
}

BOOST_AUTO_TEST_CASE(all_any_count_nonzero) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor f = Tensor::from_vector<float>({1, 2, 0, NAN, 0, 0, 3, 4, 5}, {3, 3});
    Tensor a = ops::all(f, {1});
    BOOST_TEST((a.dtype() == DType::i1));
    check_on(a, be, "all");
    check_exact(a, {0, 0, 1}, "all rows (NaN is non-zero)");
    check_exact(ops::any(f, {1}), {1, 1, 1}, "any rows");
    check_exact(ops::any(f, {0}, true), {1, 1, 1}, "any columns");
    check_exact(ops::count_nonzero(f, {1}), {2, 1, 3}, "count_nonzero rows");
    check_exact(ops::count_nonzero(f), {6}, "count_nonzero all");
    Tensor i = ou::random_tensor<int32_t>({4, 1000}, 61, -2, 2);
    auto vi = ou::values(i);
    auto nz_all = [](const std::vector<double>& r) { return double(std::all_of(r.begin(), r.end(), [](double x) { return x != 0; })); };
    auto nz_any = [](const std::vector<double>& r) { return double(std::any_of(r.begin(), r.end(), [](double x) { return x != 0; })); };
    auto nz_count = [](const std::vector<double>& r) { return double(std::count_if(r.begin(), r.end(), [](double x) { return x != 0; })); };
    check_exact(ops::all(i, {1}), reduce_ref(vi, {4, 1000}, {1}, nz_all), "all of i32");
    check_exact(ops::any(i, {0}), reduce_ref(vi, {4, 1000}, {0}, nz_any), "any of i32");
    check_exact(ops::count_nonzero(i, {0}), reduce_ref(vi, {4, 1000}, {0}, nz_count), "count_nonzero i32 dim 0");
    Tensor b = ou::random_tensor<bool>({3, 5000}, 62);
    auto vb = ou::values(b);
    check_exact(ops::count_nonzero(b, {-1}), reduce_ref(vb, {3, 5000}, {1}, nz_count), "count_nonzero bool");
    check_exact(ops::any(b, {1}), reduce_ref(vb, {3, 5000}, {1}, nz_any), "any bool");
    Tensor u = Tensor::from_vector<uint8_t>({1, 2, 0});
    Tensor au = ops::all(u);
    BOOST_TEST((au.dtype() == DType::u8), "all of uint8 is uint8, as PyTorch");
    check_exact(au, {0}, "all u8");
    check_exact(ops::all(Tensor::empty({0}, DType::f32)), {1}, "all of nothing");
    check_exact(ops::any(Tensor::empty({3, 0}, DType::f32), {1}), {0, 0, 0}, "any over an empty dim");
    tt::check_throws([&] { ops::all(f, {2}); }, {"all", "2"}, "dim out of range");
  });
}

BOOST_AUTO_TEST_CASE(max_min_with_indices) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = ou::random_tensor<float>({3, 1000}, 71);
    auto v = ou::values(x);
    for (int dim : {0, 1, -1}) {
      auto r = ops::max(x, dim);
      int nd = dim < 0 ? dim + 2 : dim;
      check_on(r.values, be, "max values");
      BOOST_TEST((r.indices.dtype() == DType::i64));
      auto g = groups({3, 1000}, {nd});
      auto vals = ou::values(r.values), idx = ou::values(r.indices);
      auto mvals = ou::values(ops::min(x, dim, true).values), midx = ou::values(ops::min(x, dim, true).indices);
      for (size_t o = 0; o < g.size(); ++o) {
        double best = -kInf, worst = kInf;
        int64_t bi = 0, wi = 0;
        for (size_t k = 0; k < g[o].size(); ++k) {
          double e = v[static_cast<size_t>(g[o][k])];
          if (e > best) best = e, bi = static_cast<int64_t>(k);
          if (e < worst) worst = e, wi = static_cast<int64_t>(k);
        }
        BOOST_TEST(vals[o] == best);
        BOOST_TEST(idx[o] == static_cast<double>(bi));
        BOOST_TEST(mvals[o] == worst);
        BOOST_TEST(midx[o] == static_cast<double>(wi));
      }
    }
    Tensor t = Tensor::from_vector<float>({1, 3, 3, NAN, NAN, 2, 2, 0}, {2, 4});
    auto r = ops::max(t, 1);
    check_exact(r.indices, {3, 0}, "NaN wins, ties go to the first index");
    BOOST_TEST(std::isnan(ou::values(r.values)[0]));
    Tensor b = Tensor::from_vector<bool>({false, true, true});
    auto rb = ops::max(b, 0);
    BOOST_TEST((rb.values.dtype() == DType::i1));
    check_exact(rb.indices, {1}, "max of bool");
    check_exact(ops::max(x), {*std::max_element(v.begin(), v.end())}, "max of all");
    check_exact(ops::min(x), {*std::min_element(v.begin(), v.end())}, "min of all");
    BOOST_TEST(ops::max(Tensor::empty({0, 3}, DType::f32), 1).values.shape() == (ou::Shape{0}));
    tt::check_throws([&] { ops::max(Tensor::empty({0, 3}, DType::f32), 0); }, {"max", "dim 0 to have non-zero size"},
                     "max over an empty dim");
    tt::check_throws([&] { ops::min(Tensor::empty({0}, DType::f32)); }, {"min", "numel() == 0"}, "min of nothing");
    tt::check_throws([&] { ops::max(x, 2); }, {"max", "2"}, "dim out of range");
  });
}

// A few long rows are split in chunks reduced in a first launch and combined in a second (the
// same kind again, a sum of counts, Chan's formula for var/std): as many as fill this device, and
// an H100 (forced: 528 programs, so [100003] is cut in 25 chunks and [3, 40000] in 10).
BOOST_AUTO_TEST_CASE(long_rows_split_in_chunks) {
  namespace od = tritium::ops::detail;
  tt::for_each_backend([&](const tt::Backend&) {
    for (bool h100 : {false, true}) {
      std::optional<od::ScopedReduceDevice> force;
      if (h100) force.emplace(od::ReduceDevice::cuda(132));
      for (ou::Shape shape : {ou::Shape{100003}, ou::Shape{3, 40000}}) {
        const std::string what = " of " + shape_str(shape) + (h100 ? " (H100 plan)" : "");
        const int last = static_cast<int>(shape.size()) - 1;
        Tensor big = ou::random_tensor<float>(shape, 131, 1e3 - 1, 1e3 + 1);
        auto vb = ou::values(big);
        ou::check_values(ops::var(big, {last}), reduce_ref(vb, shape, {last}, var_fn(1, false)), 1e-4, "var" + what);
        auto [s, m] = ops::std_mean(big, {last}, 0);
        ou::check_values(s, reduce_ref(vb, shape, {last}, var_fn(0, true)), 1e-4, "std_mean.std" + what);
        ou::check_values(m, reduce_ref(vb, shape, {last}, mean_fn), 1e-6, "std_mean.mean" + what);
        Tensor x = ou::random_tensor<float>(shape, 132, -3, 3);
        auto v = ou::values(x);
        ou::check_values(ops::logsumexp(x, {last}), reduce_ref(v, shape, {last}, lse_fn), 1e-5, "logsumexp" + what);
        for (double p : {0.0, 1.0, 2.0, 3.0, kInf, -kInf})
          ou::check_values(ops::vector_norm(x, p, {last}), reduce_ref(v, shape, {last}, norm_fn(p)), 1e-5,
                           "norm " + std::to_string(p) + what);
        // (A product of 1e5 f32 values near 1 is itself only good to ~1e-3, as PyTorch's: f64 shows the method.)
        Tensor near1 = ou::random_tensor<double>(shape, 133, 0.9999, 1.0001);
        ou::check_values(ops::prod(near1, last), reduce_ref(ou::values(near1), shape, {last}, prod_fn), 1e-12, "prod" + what);
        Tensor b = ou::random_tensor<bool>(shape, 134);
        auto vbool = ou::values(b);
        auto nz_count = [](const std::vector<double>& r) { return double(std::count_if(r.begin(), r.end(), [](double e) { return e != 0; })); };
        auto nz_all = [](const std::vector<double>& r) { return double(std::all_of(r.begin(), r.end(), [](double e) { return e != 0; })); };
        check_exact(ops::count_nonzero(b, {last}), reduce_ref(vbool, shape, {last}, nz_count), "count_nonzero" + what);
        auto nz_any = [](const std::vector<double>& r) { return double(std::any_of(r.begin(), r.end(), [](double e) { return e != 0; })); };
        check_exact(ops::any(b, {last}), reduce_ref(vbool, shape, {last}, nz_any), "any" + what);
        check_exact(ops::any(ops::zeros(shape, DType::i1), {last}), reduce_ref(std::vector<double>(v.size(), 0), shape, {last}, nz_any),
                    "any of zeros" + what);
        check_exact(ops::all(ops::ones(shape, DType::i1), {last}), reduce_ref(std::vector<double>(v.size(), 1), shape, {last}, nz_all),
                    "all" + what);
      }
    }
  });
}

namespace {

// Reference scan along `dim` of row-major values; f(acc, x) -> acc, first element starts it.
std::vector<double> scan_ref(const std::vector<double>& v, const ou::Shape& shape, int dim,
                             const std::function<double(double, double)>& f) {
  std::vector<double> out(v.size());
  for (const auto& g : groups(shape, {dim})) {
    double acc = 0;
    for (size_t k = 0; k < g.size(); ++k) {
      double x = v[static_cast<size_t>(g[k])];
      acc = k == 0 ? x : f(acc, x);
      out[static_cast<size_t>(g[k])] = acc;
    }
  }
  return out;
}

// cummax / cummin: values and indices (PyTorch: ties and NaN take the latest index).
std::pair<std::vector<double>, std::vector<double>> cumext_ref(const std::vector<double>& v, const ou::Shape& shape,
                                                               int dim, bool max) {
  std::vector<double> vals(v.size()), idx(v.size());
  for (const auto& g : groups(shape, {dim})) {
    double best = 0;
    int64_t bi = 0;
    for (size_t k = 0; k < g.size(); ++k) {
      double x = v[static_cast<size_t>(g[k])];
      if (k == 0 || std::isnan(x) || (!std::isnan(best) && (max ? x >= best : x <= best))) best = x, bi = static_cast<int64_t>(k);
      vals[static_cast<size_t>(g[k])] = best;
      idx[static_cast<size_t>(g[k])] = static_cast<double>(bi);
    }
  }
  return {vals, idx};
}

}  // namespace

BOOST_AUTO_TEST_CASE(scans) {
  tt::for_each_backend([&](const tt::Backend& be) {
    auto add = [](double a, double b) { return a + b; };
    auto mul = [](double a, double b) { return a * b; };
    for (ou::Shape shape : {ou::Shape{1}, ou::Shape{3}, ou::Shape{4, 1000}, ou::Shape{5000}, ou::Shape{3, 5, 7}}) {
      for (int dim = 0; dim < static_cast<int>(shape.size()); ++dim) {
        std::string what = shape_str(shape) + " dim " + std::to_string(dim);
        Tensor x = ou::random_tensor<float>(shape, 81, 0.99, 1.01);
        auto v = ou::values(x);
        Tensor cs = ops::cumsum(x, dim - static_cast<int>(shape.size()));
        check_on(cs, be, "cumsum " + what);
        BOOST_TEST(cs.shape() == shape);
        ou::check_values(cs, scan_ref(v, shape, dim, add), 1e-6, "cumsum " + what);
        ou::check_values(ops::cumprod(x, dim), scan_ref(v, shape, dim, mul), 1e-5, "cumprod " + what);
        Tensor y = ou::random_tensor<float>(shape, 82);
        auto vy = ou::values(y);
        for (bool mx : {true, false}) {
          auto r = mx ? ops::cummax(y, dim) : ops::cummin(y, dim);
          auto [rv, ri] = cumext_ref(vy, shape, dim, mx);
          check_exact(r.values, rv, std::string(mx ? "cummax " : "cummin ") + what);
          check_exact(r.indices, ri, std::string(mx ? "cummax indices " : "cummin indices ") + what);
        }
      }
    }
    // Strided input, both dims.
    auto [t, vt] = transposed(1000, 3, 83);
    for (int dim : {0, 1}) {
      ou::check_values(ops::cumsum(t, dim), scan_ref(vt, {3, 1000}, dim, add), 1e-5, "cumsum transposed");
      auto r = ops::cummax(t, dim);
      check_exact(r.indices, cumext_ref(vt, {3, 1000}, dim, true).second, "cummax transposed");
    }
    // Integers and bool accumulate in i64; ties and NaN take the latest index.
    Tensor i = ou::random_tensor<int32_t>({2, 1000}, 84, -100000, 100000);
    Tensor ci = ops::cumsum(i, 1);
    BOOST_TEST((ci.dtype() == DType::i64));
    check_exact(ci, scan_ref(ou::values(i), {2, 1000}, 1, add), "cumsum of i32 in i64");
    Tensor b = Tensor::from_vector<bool>({true, false, true, true});
    check_exact(ops::cumsum(b, 0), {1, 1, 2, 3}, "cumsum of bool");
    Tensor small = ou::random_tensor<int32_t>({3, 1000}, 85, -3, 3);
    auto cm = ops::cummin(small, 1);
    BOOST_TEST((cm.values.dtype() == DType::i32));
    check_exact(cm.indices, cumext_ref(ou::values(small), {3, 1000}, 1, false).second, "cummin ties of i32");
    Tensor n = Tensor::from_vector<float>({1, NAN, 2, NAN, 3});
    check_exact(ops::cummax(n, 0).indices, {0, 1, 1, 3, 3}, "cummax with NaN");
    check_exact(ops::cummin(n, 0).indices, {0, 1, 1, 3, 3}, "cummin with NaN");
    check_exact(ops::cumsum(Tensor::from_vector<float>({2.5f}, {}), 0), {2.5}, "cumsum of a 0-dim tensor");
    BOOST_TEST(ops::cumprod(Tensor::empty({0, 3}, DType::f32), 1).shape() == (ou::Shape{0, 3}));
    tt::check_throws([&] { ops::cumsum(Tensor::from_vector<float>({1.f}), 1); }, {"cumsum", "1"}, "dim out of range");
    tt::check_throws([&] { ops::cummax(t, -3); }, {"cummax", "-3"}, "negative dim out of range");
  });
}

// A few long rows are scanned in chunks (totals, their exclusive scan, then every chunk from
// its offset).
BOOST_AUTO_TEST_CASE(long_scans_split_in_chunks) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto add = [](double a, double b) { return a + b; };
    auto mul = [](double a, double b) { return a * b; };
    for (ou::Shape shape : {ou::Shape{100003}, ou::Shape{3, 40000}}) {
      const int last = static_cast<int>(shape.size()) - 1;
      const std::string what = " of " + shape_str(shape);
      Tensor x = ou::random_tensor<float>(shape, 141, 0, 1);
      ou::check_values(ops::cumsum(x, last), scan_ref(ou::values(x), shape, last, add), 1e-6, "cumsum" + what);
      Tensor d = ou::random_tensor<double>(shape, 142, 0.9999, 1.0001);
      auto vd = ou::values(d);
      ou::check_values(ops::cumprod(d, last), scan_ref(vd, shape, last, mul), 1e-12, "cumprod" + what);
      vd[static_cast<size_t>(shape.back() / 2 + 7)] = 0;  // a zero in a middle chunk
      Tensor dz = Tensor::from_vector(vd, shape);
      ou::check_values(ops::cumprod(dz, last), scan_ref(vd, shape, last, mul), 1e-12, "cumprod with a zero" + what);
      Tensor i = ou::random_tensor<int32_t>(shape, 143, -1000000, 1000000);
      check_exact(ops::cumsum(i, last), scan_ref(ou::values(i), shape, last, add), "cumsum of i32" + what);
    }
  });
}

// cumprod's gradient with zeros (one, several, at the ends) against the O(n^2) definition.
BOOST_AUTO_TEST_CASE(cumprod_gradient_with_zeros) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (int64_t n : {int64_t(1), int64_t(3), int64_t(40), int64_t(1500)}) {
      auto xv = tt::random_vector<double>(static_cast<size_t>(2 * n), 91, 0.9, 1.1);
      auto gv = tt::random_vector<double>(static_cast<size_t>(2 * n), 92);
      std::vector<double> xs(xv.begin(), xv.end()), gs(gv.begin(), gv.end());
      xs[0] = 0;  // row 0: a zero first; row 1: two zeros inside
      if (n > 2) xs[static_cast<size_t>(n + 1)] = 0, xs[static_cast<size_t>(2 * n - 1)] = 0;
      Tensor x = Tensor::from_vector(xs, {2, n}), g = Tensor::from_vector(gs, {2, n});
      std::vector<double> ref(xs.size(), 0);
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t k = 0; k < n; ++k)
          for (int64_t i = k; i < n; ++i) {
            double p = gs[static_cast<size_t>(r * n + i)];
            for (int64_t j = 0; j <= i; ++j)
              if (j != k) p *= xs[static_cast<size_t>(r * n + j)];
            ref[static_cast<size_t>(r * n + k)] += p;
          }
      ou::check_values(ops::cumprod_backward(g, x, 1), ref, 1e-12, "cumprod_backward n=" + std::to_string(n));
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
