// The fast gradient paths of issue 29's slow ops, against float64 host references on every
// backend: cummax / cummin's backward as a reverse segmented scan (no atomics), prod's backward
// as grad * result / x when the input has no zero (the scans otherwise), addr as one broadcast
// addcmul. Odd sizes, rows longer than a scan block, ties, NaN / inf, f64 / f32 / bf16.
#include "test_support.h"

#include <cmath>
#include <random>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/matmul_family.h"
#include "nn/reduction_ops.h"
#include "ops/matmul_family.h"
#include "ops/reduce_stats.h"
#include "runtime/views.h"

namespace tt = tritium::test;
namespace T = tritium;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;
using Shape = tritium::Tensor::Shape;

BOOST_AUTO_TEST_SUITE(test_ops_grad_fast_paths)

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> uniform(size_t n, uint32_t seed, double lo, double hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = d(gen);
  return v;
}

// A tensor of dtype `dt` on the default device with the values `v` (rounded to dt).
Tensor make(const std::vector<double>& v, const Shape& s, DType dt) {
  return ops::to_dtype(Tensor::from_vector(v, s), dt);
}

std::vector<double> vals(const Tensor& t) { return ops::to_dtype(t, DType::f64).to_vector<double>(); }

double tolerance(DType dt) { return dt == DType::f64 ? 1e-12 : dt == DType::f32 ? 2e-6 : 1.6e-2; }

// |got - want| <= tol * scale, NaN where NaN is expected, infinities exact.
void check_values(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& scale,
                  double tol, const std::string& what) {
  BOOST_TEST_REQUIRE(got.size() == want.size(), what);
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = std::isnan(want[i]) ? std::isnan(got[i])
              : std::isinf(want[i]) ? got[i] == want[i]
                                    : std::abs(got[i] - want[i]) <= tol * scale[i] + 1e-300;
    if (!ok && bad++ < 5) BOOST_ERROR(what << ": element " << i << " is " << got[i] << ", expected " << want[i]);
  }
  BOOST_TEST(bad == 0u, what << ": " << bad << " elements off");
}

// (outer, row length, inner) of `shape` around `dim`.
std::array<int64_t, 3> split(const Shape& shape, int dim) {
  int64_t o = 1, in = 1;
  for (int d = 0; d < dim; ++d) o *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); ++d) in *= shape[d];
  return {o, shape[static_cast<size_t>(dim)], in};
}

}  // namespace

BOOST_AUTO_TEST_CASE(cummax_cummin_backward_is_the_sum_over_each_index) {
  struct Case {
    Shape shape;
    int dim;
    int values;  // 0: uniform, 1: few distinct values (ties), 2: rising, 3: falling, 4: with NaNs
    bool transposed;
  };
  const std::vector<Case> cases = {
      {{3, 2500}, 1, 0, false}, {{37, 5}, 0, 1, false}, {{4, 3, 7}, 1, 1, false}, {{2, 1500}, 1, 2, false},
      {{2, 1500}, 1, 3, false}, {{5, 33}, 1, 4, false}, {{9, 6}, 0, 0, true},     {{1}, 0, 0, false},
  };
  tt::for_each_backend([&](const tt::Backend& be) {
    for (DType dt : {DType::f64, DType::f32, DType::bf16})
      for (bool is_max : {true, false})
        for (size_t ci = 0; ci < cases.size(); ++ci) {
          const Case& c = cases[ci];
          int64_t n = 1;
          for (int64_t s : c.shape) n *= s;
          auto [O, R, In] = split(c.shape, c.dim);
          std::vector<double> xv = uniform(static_cast<size_t>(n), 900 + static_cast<uint32_t>(ci), -1, 1);
          for (int64_t e = 0; e < n; ++e) {
            const int64_t i = (e / In) % R;
            double& x = xv[static_cast<size_t>(e)];
            if (c.values == 1) x = std::round(x * 2);
            if (c.values == 2) x = static_cast<double>(i);
            if (c.values == 3) x = -static_cast<double>(i);
            if (c.values == 4 && e % 7 == 3) x = kNaN;
          }
          Tensor x;
          if (c.transposed) {  // a transposed view: the scanned dim is not the last in memory
            Shape ts = {c.shape[1], c.shape[0]};
            std::vector<double> tv(static_cast<size_t>(n));
            for (int64_t a = 0; a < c.shape[0]; ++a)
              for (int64_t b = 0; b < c.shape[1]; ++b)
                tv[static_cast<size_t>(b * c.shape[0] + a)] = xv[static_cast<size_t>(a * c.shape[1] + b)];
            x = T::runtime::t_of(make(tv, ts, dt));
          } else {
            x = make(xv, c.shape, dt);
          }
          ops::ValuesIndices r = is_max ? ops::cummax(x, c.dim) : ops::cummin(x, c.dim);
          std::vector<int64_t> idx = r.indices.to_vector<int64_t>();
          Tensor g = make(uniform(static_cast<size_t>(n), 950 + static_cast<uint32_t>(ci), -2, 2), c.shape, dt);
          std::vector<double> gv = vals(g);
          std::vector<double> want(static_cast<size_t>(n), 0.0), scale(static_cast<size_t>(n), 0.0);
          for (int64_t e = 0; e < n; ++e) {
            const int64_t o = e / (R * In), in = e % In;
            const size_t to = static_cast<size_t>(o * R * In + idx[static_cast<size_t>(e)] * In + in);
            want[to] += gv[static_cast<size_t>(e)];
            scale[to] += std::abs(gv[static_cast<size_t>(e)]);
          }
          const std::string what = be.name + " " + T::dtype_name(dt) + (is_max ? " cummax" : " cummin") + " case " +
                                   std::to_string(ci);
          Tensor got = ops::cummaxmin_backward(g, r.indices, c.dim);
          BOOST_TEST((got.dtype() == dt), what);
          BOOST_TEST((got.shape() == c.shape), what);
          check_values(vals(got), want, scale, tolerance(dt), what);

          Tensor leaf = x.detach();  // through autograd: the registry's formula is this kernel
          leaf.requires_grad_();
          Tensor v = is_max ? T::cummax(leaf, c.dim).values : T::cummin(leaf, c.dim).values;
          v.backward(g);
          check_values(vals(leaf.grad()), want, scale, tolerance(dt), what + " via backward");
        }
  });
}

BOOST_AUTO_TEST_CASE(cummaxmin_backward_bad_inputs) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor g = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor i = ops::cummax(g, 1).indices;
    tt::check_throws([&] { ops::cummaxmin_backward(g, i.reshape({3, 2}), 1); }, {"cummaxmin_backward", "shape"},
                     "shapes differ");
    tt::check_throws([&] { ops::cummaxmin_backward(g, ops::to_dtype(i, DType::i32), 1); },
                     {"cummaxmin_backward", "i64", "i32"}, "i32 indices");
    tt::check_throws([&] { ops::cummaxmin_backward(i, i, 1); }, {"cummaxmin_backward", "gradient", "i64"},
                     "integer gradient");
    tt::check_throws([&] { ops::cummaxmin_backward(g, i, 2); }, {"cummaxmin_backward", "2"}, "dim out of range");
  });
}

namespace {

// PyTorch's prod_backward in float64: no zero in the whole input: grad * (result / x);
// otherwise grad times the product of the other elements (its two-scan path).
std::vector<double> prod_grad_ref(const std::vector<double>& x, const std::vector<double>& g, int64_t O, int64_t R,
                                  int64_t In) {
  bool zero = false;
  for (double v : x) zero = zero || v == 0;
  std::vector<double> out(x.size());
  for (int64_t o = 0; o < O; ++o)
    for (int64_t in = 0; in < In; ++in) {
      auto at = [&](int64_t i) { return static_cast<size_t>(o * R * In + i * In + in); };
      double result = 1;
      for (int64_t i = 0; i < R; ++i) result *= x[at(i)];
      for (int64_t i = 0; i < R; ++i) {
        const double gi = g[static_cast<size_t>(o * In + in)];
        if (!zero) {
          out[at(i)] = gi * (result / x[at(i)]);
        } else {
          double others = 1;
          for (int64_t j = 0; j < R; ++j)
            if (j != i) others *= x[at(j)];
          out[at(i)] = gi * others;
        }
      }
    }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(prod_backward_with_and_without_zeros) {
  struct Case {
    Shape shape;
    int dim;  // -1: all elements
    std::vector<size_t> zeros, infs, nans;
  };
  const std::vector<Case> cases = {
      {{7, 13}, 1, {}, {}, {}},           {{7, 13}, 1, {20}, {}, {}},         {{7, 13}, 1, {20, 25, 40}, {}, {}},
      {{5, 3, 9}, 1, {}, {}, {}},         {{5, 3, 9}, 0, {4, 31}, {}, {}},     {{6, 11}, -1, {}, {}, {}},
      {{6, 11}, -1, {17}, {}, {}},        {{6, 11}, -1, {3, 60}, {}, {}},      {{4, 9}, 1, {}, {5}, {}},
      {{4, 9}, 1, {}, {}, {12}},          {{4, 9}, 1, {30}, {5}, {}},          {{4, 9}, 1, {3}, {5}, {}},
      {{3, 301}, 1, {}, {}, {}},
  };
  tt::for_each_backend([&](const tt::Backend& be) {
    for (DType dt : {DType::f64, DType::f32, DType::bf16})
      for (size_t ci = 0; ci < cases.size(); ++ci) {
        const Case& c = cases[ci];
        int64_t n = 1;
        for (int64_t s : c.shape) n *= s;
        const bool long_row = c.shape.back() > 100;
        std::vector<double> xv = uniform(static_cast<size_t>(n), 700 + static_cast<uint32_t>(ci), long_row ? 0.95 : 0.5,
                                         long_row ? 1.05 : 1.5);
        for (size_t k = 0; k < xv.size(); k += 3) xv[k] = -xv[k];
        for (size_t z : c.zeros) xv[z] = 0;
        for (size_t z : c.infs) xv[z] = -kInf;
        for (size_t z : c.nans) xv[z] = kNaN;
        Tensor x = make(xv, c.shape, dt);
        xv = vals(x);  // the rounded inputs
        auto [O, R, In] = c.dim < 0 ? std::array<int64_t, 3>{1, n, 1} : split(c.shape, c.dim);
        Shape gs = c.shape;
        if (c.dim >= 0) gs.erase(gs.begin() + c.dim);
        else gs.clear();
        Tensor g = make(uniform(static_cast<size_t>(O * In), 750 + static_cast<uint32_t>(ci), -2, 2), gs, dt);
        std::vector<double> want = prod_grad_ref(xv, vals(g), O, R, In);
        std::vector<double> scale(want.size());
        for (size_t k = 0; k < want.size(); ++k) scale[k] = std::abs(want[k]) * (dt == DType::bf16 ? 2 : 1) * R;

        Tensor leaf = x.detach();
        leaf.requires_grad_();
        Tensor p = c.dim < 0 ? T::prod(leaf) : T::prod(leaf, c.dim);
        p.backward(g);
        const std::string what = be.name + " " + T::dtype_name(dt) + " prod case " + std::to_string(ci);
        BOOST_TEST((leaf.grad().dtype() == dt), what);
        check_values(vals(leaf.grad()), want, scale, tolerance(dt), what);
      }
  });
}

BOOST_AUTO_TEST_CASE(addr_is_beta_self_plus_alpha_outer) {
  struct Case {
    int64_t n, m;
    Shape self;
    double beta, alpha;
  };
  const std::vector<Case> cases = {
      {37, 129, {37, 129}, 1, 1}, {37, 129, {129}, 0.5, 3}, {5, 1, {1, 1}, -2, 0.25},
      {17, 33, {17, 1}, 1, -1.5}, {17, 33, {17, 33}, 0, 2}, {1, 1025, {1025}, 0, 1},
  };
  tt::for_each_backend([&](const tt::Backend& be) {
    for (DType dt : {DType::f64, DType::f32, DType::bf16})
      for (size_t ci = 0; ci < cases.size(); ++ci) {
        const Case& c = cases[ci];
        int64_t ns = 1;
        for (int64_t s : c.self) ns *= s;
        std::vector<double> sv = uniform(static_cast<size_t>(ns), 600 + static_cast<uint32_t>(ci), -1, 1);
        if (c.beta == 0) sv[0] = kNaN;  // beta = 0: self is not read
        Tensor self = make(sv, c.self, dt);
        Tensor v1 = make(uniform(static_cast<size_t>(c.n), 610 + static_cast<uint32_t>(ci), -1, 1), {c.n}, dt);
        Tensor v2 = make(uniform(static_cast<size_t>(c.m), 620 + static_cast<uint32_t>(ci), -1, 1), {c.m}, dt);
        sv = vals(self);
        std::vector<double> a = vals(v1), b = vals(v2);
        std::vector<double> want(static_cast<size_t>(c.n * c.m)), scale(want.size());
        const int64_t sr = c.self.size() == 2 ? c.self[0] : 1, sc = c.self.back();
        for (int64_t i = 0; i < c.n; ++i)
          for (int64_t j = 0; j < c.m; ++j) {
            double s = sv[static_cast<size_t>((sr == 1 ? 0 : i) * sc + (sc == 1 ? 0 : j))];
            double prod = c.alpha * a[static_cast<size_t>(i)] * b[static_cast<size_t>(j)];
            double bs = c.beta == 0 ? 0 : c.beta * s;
            want[static_cast<size_t>(i * c.m + j)] = bs + prod;
            scale[static_cast<size_t>(i * c.m + j)] = std::abs(bs) + std::abs(prod);
          }
        const std::string what = be.name + " " + T::dtype_name(dt) + " addr case " + std::to_string(ci);
        Tensor out = ops::addr(self, v1, v2, c.beta, c.alpha);
        BOOST_TEST((out.dtype() == dt), what);
        BOOST_TEST((out.shape() == Shape{c.n, c.m}), what);
        check_values(vals(out), want, scale, tolerance(dt), what);

        // The backward: alpha * grad @ vec2, alpha * grad^T @ vec1 (GEMVs), beta * grad summed to self.
        Tensor l1 = v1.detach(), l2 = v2.detach();
        l1.requires_grad_();
        l2.requires_grad_();
        Tensor g = make(uniform(static_cast<size_t>(c.n * c.m), 630 + static_cast<uint32_t>(ci), -1, 1), {c.n, c.m}, dt);
        std::vector<double> gv = vals(g);
        T::addr(self, l1, l2, c.beta, c.alpha).backward(g);
        std::vector<double> w1(static_cast<size_t>(c.n), 0.0), s1(w1.size(), 0.0), w2(static_cast<size_t>(c.m), 0.0),
            s2(w2.size(), 0.0);
        for (int64_t i = 0; i < c.n; ++i)
          for (int64_t j = 0; j < c.m; ++j) {
            const double gij = gv[static_cast<size_t>(i * c.m + j)];
            w1[static_cast<size_t>(i)] += c.alpha * gij * b[static_cast<size_t>(j)];
            s1[static_cast<size_t>(i)] += std::abs(c.alpha * gij * b[static_cast<size_t>(j)]);
            w2[static_cast<size_t>(j)] += c.alpha * gij * a[static_cast<size_t>(i)];
            s2[static_cast<size_t>(j)] += std::abs(c.alpha * gij * a[static_cast<size_t>(i)]);
          }
        check_values(vals(l1.grad()), w1, s1, tolerance(dt), what + " d vec1");
        check_values(vals(l2.grad()), w2, s2, tolerance(dt), what + " d vec2");
      }
  });
}

BOOST_AUTO_TEST_SUITE_END()
