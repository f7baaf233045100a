// The op library's reductions (ops/reduce.cpp): sum mean amax amin argmax argmin sum_to over
// dims lists, keepdim, strided inputs, long rows, dtypes and errors, against float64 host references.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <array>
#include <limits>
#include <optional>

#include "ops/pool.h"
#include "profiler/profile.h"
#include "ops/matmul_family.h"
#include "ops/reduce_plan.h"
#include "ops/reduce_stats.h"
#include "runtime/streams.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

BOOST_AUTO_TEST_SUITE(test_ops_reduce)

namespace {

enum class K { sum, mean, max, min, argmax, argmin };

// Host reference of a reduction over `dims` (sorted, normalised) of row-major values.
std::vector<double> reduce_ref(const std::vector<double>& v, const ou::Shape& shape, const std::vector<int>& dims, K k) {
  ou::Shape out;
  std::vector<bool> red(shape.size(), false);
  for (int d : dims) red[d] = true;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!red[d]) out.push_back(shape[d]);
  int64_t no = ou::numel(out);
  std::vector<double> acc(no), cnt(no, 0), arg(no, -1);
  for (int64_t o = 0; o < no; ++o)
    acc[o] = k == K::sum || k == K::mean ? 0 : k == K::max || k == K::argmax ? -INFINITY : INFINITY;
  for (int64_t i = 0; i < ou::numel(shape); ++i) {
    auto idx = ou::unravel(i, shape);
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!red[d]) o = o * shape[d] + idx[d];
    int64_t r = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (red[d]) r = r * shape[d] + idx[d];
    double x = v[i];
    switch (k) {
      case K::sum: case K::mean: acc[o] += x; cnt[o] += 1; break;
      case K::max: acc[o] = std::max(acc[o], x); break;
      case K::min: acc[o] = std::min(acc[o], x); break;
      case K::argmax: if (x > acc[o] || arg[o] < 0) acc[o] = x, arg[o] = static_cast<double>(r); break;
      case K::argmin: if (x < acc[o] || arg[o] < 0) acc[o] = x, arg[o] = static_cast<double>(r); break;
    }
  }
  if (k == K::mean)
    for (int64_t o = 0; o < no; ++o) acc[o] /= cnt[o];
  if (k == K::argmax || k == K::argmin) return arg;
  return acc;
}

void check_exact(const Tensor& out, const std::vector<double>& ref, const std::string& what) {
  auto v = ou::values(out);
  BOOST_TEST_REQUIRE(v.size() == ref.size(), what);
  size_t bad = 0;
  for (size_t i = 0; i < v.size(); ++i) bad += v[i] != ref[i];
  BOOST_TEST(bad == 0u, what << ": " << bad << " elements differ");
}

// A reduction's result lives on the backend's device (the input's device).
void check_on(const Tensor& t, const tt::Backend& be, const std::string& what) {
  BOOST_TEST((t.device() == be.device), what << ": result on " << t.device().str() << ", expected " << be.device.str());
}

}  // namespace

BOOST_AUTO_TEST_CASE(dims_and_keepdim) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const ou::Shape shape{7, 33, 130};
    Tensor x = ou::random_tensor<float>(shape, 1);
    auto v = ou::values(x);
    for (std::vector<int> dims : std::vector<std::vector<int>>{{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}, {}, {0, 1, 2}}) {
      std::vector<int> nd = dims;
      if (nd.empty()) nd = {0, 1, 2};
      std::string what = "dims [" + [&] { std::string s; for (int d : dims) s += std::to_string(d) + " "; return s; }() + "]";
      ou::Shape kshape = shape;
      for (int d : nd) kshape[d] = 1;
      Tensor s = ops::sum(x, dims, true);
      BOOST_TEST(s.shape() == kshape, what);
      check_on(s, be, "sum " + what);
      // The sum of all 30030 (|sum| ~ 9, the sum of |x| ~ 15000) rounds ~1e-6 of its value in f32
      // in any order of additions (the CPU's 64 lanes of ~470 terms each: 1.6e-6).
      const double tol = nd.size() == 3 ? 1e-5 : 1e-6;
      ou::check_values(s, reduce_ref(v, shape, nd, K::sum), tol, "sum " + what);
      ou::check_values(ops::mean(x, dims), reduce_ref(v, shape, nd, K::mean), tol, "mean " + what);
      ou::check_values(ops::amax(x, dims), reduce_ref(v, shape, nd, K::max), 0, "amax " + what);
      ou::check_values(ops::amin(x, dims), reduce_ref(v, shape, nd, K::min), 0, "amin " + what);
    }
    // Negative dims, a 0-dim result.
    ou::check_values(ops::sum(x, {-1, -3}), reduce_ref(v, shape, {0, 2}, K::sum), 1e-6, "sum dims -1 -3");
    BOOST_TEST(ops::sum(x).dim() == 0);
    for (int d = 0; d < 3; ++d) {
      Tensor am = ops::argmax(x, d), an = ops::argmin(x, d - 3, true);
      BOOST_TEST((am.dtype() == DType::i64));
      check_exact(am, reduce_ref(v, shape, {d}, K::argmax), "argmax dim " + std::to_string(d));
      check_exact(an, reduce_ref(v, shape, {d}, K::argmin), "argmin dim " + std::to_string(d));
      BOOST_TEST(an.dim() == 3);
      check_on(am, be, "argmax");
    }
  });
}

BOOST_AUTO_TEST_CASE(strided_inputs) {
  tt::for_each_backend([&](const tt::Backend& be) {
    // Transposed [N, M] -> [M, N]; a stepped slice; an expanded tensor.
    Tensor base = ou::random_tensor<float>({150, 90}, 2);
    auto vb = ou::values(base);
    Tensor t = base.as_strided({90, 150}, {1, 90}, 0);
    std::vector<double> vt(90 * 150);
    for (int i = 0; i < 90; ++i)
      for (int j = 0; j < 150; ++j) vt[i * 150 + j] = vb[j * 90 + i];
    for (int d : {0, 1}) {
      ou::check_values(ops::sum(t, {d}), reduce_ref(vt, {90, 150}, {d}, K::sum), 1e-6, "sum transposed");
      ou::check_values(ops::amax(t, {d}), reduce_ref(vt, {90, 150}, {d}, K::max), 0, "amax transposed");
      check_exact(ops::argmax(t, d), reduce_ref(vt, {90, 150}, {d}, K::argmax), "argmax transposed");
    }
    ou::check_values(ops::sum(t), reduce_ref(vt, {90, 150}, {0, 1}, K::sum), 1e-6, "sum all transposed");
    check_on(ops::sum(t), be, "sum all transposed");
    check_on(ops::sum(t, {0}), be, "sum transposed");
    Tensor s = base.as_strided({40, 30}, {180, 3}, 7);
    std::vector<double> vs(40 * 30);
    for (int i = 0; i < 40; ++i)
      for (int j = 0; j < 30; ++j) vs[i * 30 + j] = vb[7 + i * 180 + j * 3];
    ou::check_values(ops::sum(s, {1}), reduce_ref(vs, {40, 30}, {1}, K::sum), 1e-6, "sum slice dim 1");
    ou::check_values(ops::mean(s, {0}), reduce_ref(vs, {40, 30}, {0}, K::mean), 1e-6, "mean slice dim 0");
    Tensor row = ou::random_tensor<float>({50}, 3);
    Tensor e = row.as_strided({20, 50}, {0, 1}, 0);
    auto vr = ou::values(row);
    std::vector<double> ve(20 * 50);
    for (int i = 0; i < 20; ++i)
      for (int j = 0; j < 50; ++j) ve[i * 50 + j] = vr[j];
    ou::check_values(ops::sum(e, {0}), reduce_ref(ve, {20, 50}, {0}, K::sum), 1e-6, "sum expanded dim 0");
    // A 4-d permuted view reduced over non-adjacent dims (the permute-and-copy path).
    Tensor b4 = ou::random_tensor<float>({4, 5, 6, 7}, 4);
    auto v4 = ou::values(b4);
    Tensor p4 = b4.as_strided({7, 5, 6, 4}, {1, 42, 7, 210}, 0);
    std::vector<double> vp(v4.size());
    for (int64_t i = 0; i < 840; ++i) {
      auto idx = ou::unravel(i, {7, 5, 6, 4});
      vp[i] = v4[idx[0] * 1 + idx[1] * 42 + idx[2] * 7 + idx[3] * 210];
    }
    ou::check_values(ops::sum(p4, {0, 2}), reduce_ref(vp, {7, 5, 6, 4}, {0, 2}, K::sum), 1e-6, "sum permuted 0,2");
    ou::check_values(ops::amin(p4, {1, 3}, true), reduce_ref(vp, {7, 5, 6, 4}, {1, 3}, K::min), 0, "amin permuted 1,3");
  });
}

// Reduced dims on both sides of a kept one (a convolution's bias gradient: sum over N, H, W of
// NCHW) are reduced in two launches, the inner dims first, with no permuted copy; a channels-last
// tensor's N, H, W merge by their strides into one launch. Values against float64, every kind.
BOOST_AUTO_TEST_CASE(interleaved_dims_without_a_copy) {
  tt::for_each_backend([&](const tt::Backend& be) {
    auto kernels_of = [](auto&& f) {
      tritium::profiler::Profile prof;
      f();
      std::vector<std::string> names;
      for (const tritium::profiler::Event& e : prof.events())
        if (e.kind == tritium::profiler::EventKind::kernel) names.push_back(e.name);
      return names;
    };
    const ou::Shape shape{5, 6, 7, 9};
    Tensor x = ou::random_tensor<float>(shape, 21);
    auto v = ou::values(x);
    const std::vector<int> nhw{0, 2, 3};
    Tensor s;
    auto names = kernels_of([&] { s = ops::sum(x, nhw); });
    check_on(s, be, "sum nhw");
    BOOST_TEST(s.shape() == (ou::Shape{6}));
    ou::check_values(s, reduce_ref(v, shape, nhw, K::sum), 1e-6, "sum over N, H, W");
    BOOST_TEST(names.size() == 2u);
    for (const std::string& n : names) BOOST_TEST(n.rfind("ew_", 0) != 0, "a copy kernel ran: " << n);
    ou::check_values(ops::mean(x, nhw, true), reduce_ref(v, shape, nhw, K::mean), 1e-6, "mean over N, H, W");
    BOOST_TEST(ops::mean(x, nhw, true).shape() == (ou::Shape{1, 6, 1, 1}));
    check_exact(ops::amax(x, nhw), reduce_ref(v, shape, nhw, K::max), "amax over N, H, W");
    check_exact(ops::amin(x, nhw), reduce_ref(v, shape, nhw, K::min), "amin over N, H, W");
    // bf16: the partial sums stay in f32; the result is bf16, as PyTorch's.
    Tensor xb = ops::to_dtype(x, DType::bf16);
    Tensor sb = ops::sum(xb, nhw);
    BOOST_TEST((sb.dtype() == DType::bf16));
    ou::check_values(sb, reduce_ref(ou::values(xb), shape, nhw, K::sum), 1e-2, "bf16 sum over N, H, W");
    // Integers sum into i64.
    Tensor xi = ou::random_tensor<int32_t>(shape, 22, -50, 50);
    Tensor si = ops::sum(xi, nhw);
    BOOST_TEST((si.dtype() == DType::i64));
    check_exact(si, reduce_ref(ou::values(xi), shape, nhw, K::sum), "i32 sum over N, H, W");
    // Channels-last strides: N, H, W merge (strides H W C, W C, C) into one reduced dim: one launch.
    Tensor cl = ops::contiguous(x.permute({0, 2, 3, 1})).permute({0, 3, 1, 2});
    names = kernels_of([&] { s = ops::sum(cl, nhw); });
    ou::check_values(s, reduce_ref(v, shape, nhw, K::sum), 1e-6, "sum over N, H, W of channels-last");
    BOOST_TEST(names.size() == 1u);
    // Two kept dims between three reduced groups: reduced from the inside out.
    const ou::Shape s5{3, 4, 5, 2, 11};
    Tensor x5 = ou::random_tensor<float>(s5, 23);
    auto v5 = ou::values(x5);
    ou::check_values(ops::sum(x5, {0, 2, 4}), reduce_ref(v5, s5, {0, 2, 4}, K::sum), 1e-6, "sum over 0, 2, 4");
    check_exact(ops::amax(x5, {0, 2, 4}, true), reduce_ref(v5, s5, {0, 2, 4}, K::max), "amax over 0, 2, 4");
    // argmax / argmin take one dim; sum_to (autograd's broadcast reduction) takes the same path.
    ou::check_values(ops::sum_to(x, {6, 1, 1}), reduce_ref(v, shape, nhw, K::sum), 1e-6, "sum_to [6, 1, 1]");
  });
}

BOOST_AUTO_TEST_CASE(long_rows_are_accurate) {
  tt::for_each_backend([&](const tt::Backend& be) {
    // Positive values so that there is no cancellation: the error is the summation's.
    for (int64_t n : {int64_t(16384), int64_t(100003), int64_t(1) << 22}) {
      Tensor x = ou::random_tensor<float>({n}, 5, 0, 1);
      auto v = ou::values(x);
      ou::check_values(ops::sum(x), reduce_ref(v, {n}, {0}, K::sum), 1e-6, "sum of " + std::to_string(n));
      ou::check_values(ops::mean(x), reduce_ref(v, {n}, {0}, K::mean), 1e-6, "mean of " + std::to_string(n));
      ou::check_values(ops::amax(x), reduce_ref(v, {n}, {0}, K::max), 0, "amax of " + std::to_string(n));
      check_on(ops::sum(x), be, "sum of " + std::to_string(n));
    }
    Tensor x = ou::random_tensor<float>({3, 40000}, 6, 0, 1);
    auto v = ou::values(x);
    ou::check_values(ops::sum(x, {1}), reduce_ref(v, {3, 40000}, {1}, K::sum), 1e-6, "3 long rows");
    check_exact(ops::argmax(x, 1), reduce_ref(v, {3, 40000}, {1}, K::argmax), "argmax of long rows");
    Tensor y = ou::random_tensor<float>({30000, 3}, 7, 0, 1);
    auto vy = ou::values(y);
    ou::check_values(ops::sum(y, {0}), reduce_ref(vy, {30000, 3}, {0}, K::sum), 1e-6, "long columns");
  });
}

// Rows of 1024 and more of 2-byte and 1-byte elements: odd row counts, rows longer than a block,
// every kind, bf16, f16 and u8, against float64 on the values the op sees.
BOOST_AUTO_TEST_CASE(narrow_dtype_rows) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (auto [rows, cols] : {std::array<int64_t, 2>{7, 1030}, {1, 1024}, {5, 2500}}) {
      for (DType dt : {DType::bf16, DType::f16, DType::u8}) {
        const std::string what = std::string(tritium::dtype_name(dt)) + " [" + std::to_string(rows) + ", " +
                                 std::to_string(cols) + "]";
        Tensor x = dt == DType::u8 ? ou::random_tensor<uint8_t>({rows, cols}, 13, 0, 255)
                                   : ops::to_dtype(ou::random_tensor<float>({rows, cols}, 13, 0, 2), dt);  // no cancellation
        auto v = ou::values(x);
        const double tol = dt == DType::u8 ? 0 : dt == DType::bf16 ? 1e-2 : 1e-3;
        ou::check_values(ops::sum(x, {1}), reduce_ref(v, {rows, cols}, {1}, K::sum), tol, "sum " + what);
        if (dt != DType::u8) ou::check_values(ops::mean(x, {1}), reduce_ref(v, {rows, cols}, {1}, K::mean), tol, "mean " + what);
        check_exact(ops::amax(x, {1}), reduce_ref(v, {rows, cols}, {1}, K::max), "amax " + what);
        check_exact(ops::amin(x, {1}), reduce_ref(v, {rows, cols}, {1}, K::min), "amin " + what);
        check_exact(ops::argmax(x, 1), reduce_ref(v, {rows, cols}, {1}, K::argmax), "argmax " + what);
        check_exact(ops::argmin(x, 1), reduce_ref(v, {rows, cols}, {1}, K::argmin), "argmin " + what);
        ou::check_values(ops::sum(x), reduce_ref(v, {rows * cols}, {0}, K::sum), tol, "sum of all " + what);
        if (dt == DType::u8) continue;
        // row_stats' rows (ops/reduce_stats.cpp): var (two passes a row) and prod, in float64.
        std::vector<double> var_ref(static_cast<size_t>(rows));
        for (int64_t o = 0; o < rows; ++o) {
          double mean = 0, m2 = 0;
          for (int64_t r = 0; r < cols; ++r) mean += v[size_t(o * cols + r)] / double(cols);
          for (int64_t r = 0; r < cols; ++r) m2 += std::pow(v[size_t(o * cols + r)] - mean, 2);
          var_ref[size_t(o)] = m2 / double(cols - 1);
        }
        ou::check_values(ops::var(x, {1}), var_ref, tol, "var " + what);
        Tensor xp = ops::add(ops::mul(x, ops::Scalar(0.004)), ops::Scalar(0.996));  // near 1: no underflow
        std::vector<double> vp = ou::values(xp), prod_ref(static_cast<size_t>(rows), 1);
        for (int64_t o = 0; o < rows; ++o)
          for (int64_t r = 0; r < cols; ++r) prod_ref[size_t(o)] *= vp[size_t(o * cols + r)];
        ou::check_values(ops::prod(xp, 1), prod_ref, dt == DType::bf16 ? 2e-2 : 2e-3, "prod " + what);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(dtypes) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor i = ou::random_tensor<int32_t>({1000, 3}, 8, -1000000, 1000000);
    auto vi = ou::values(i);
    Tensor si = ops::sum(i, {0});
    BOOST_TEST((si.dtype() == DType::i64));
    check_on(si, be, "sum of i32");
    check_exact(si, reduce_ref(vi, {1000, 3}, {0}, K::sum), "sum of i32 in i64");
    Tensor am = ops::amax(i, {1});
    BOOST_TEST((am.dtype() == DType::i32));
    check_exact(am, reduce_ref(vi, {1000, 3}, {1}, K::max), "amax i32");
    Tensor u = ou::random_tensor<uint8_t>({300}, 9, 0, 255);
    check_exact(ops::sum(u), reduce_ref(ou::values(u), {300}, {0}, K::sum), "sum of u8 in i64");
    check_exact(ops::amin(u), reduce_ref(ou::values(u), {300}, {0}, K::min), "amin u8");
    Tensor b = ou::random_tensor<bool>({77}, 10);
    Tensor sb = ops::sum(b);
    BOOST_TEST((sb.dtype() == DType::i64));
    check_exact(sb, reduce_ref(ou::values(b), {77}, {0}, K::sum), "sum of bool");
    Tensor d = ou::random_tensor<double>({500, 7}, 11);
    Tensor sd = ops::sum(d, {0});
    BOOST_TEST((sd.dtype() == DType::f64));
    ou::check_values(sd, reduce_ref(ou::values(d), {500, 7}, {0}, K::sum), 1e-14, "sum f64");
    Tensor h = ops::to_dtype(ou::random_tensor<float>({1000}, 12, 0, 1), DType::f16);
    Tensor sh = ops::sum(h);
    BOOST_TEST((sh.dtype() == DType::f16));
    check_on(sh, be, "sum f16");
    ou::check_values(sh, reduce_ref(ou::values(h), {1000}, {0}, K::sum), 1e-3, "sum f16 (accumulated in f32)");
    tt::check_throws([&] { ops::mean(i); }, {"mean", "i32", "floating"}, "mean of integers");
  });
}

BOOST_AUTO_TEST_CASE(nan_ties_and_empty) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = Tensor::from_vector<float>({1, 3, 3, NAN, 2, -1, 5, 5}, {2, 4});
    auto am = ou::values(ops::amax(x, {1}));
    BOOST_TEST(std::isnan(am[0]));
    BOOST_TEST(am[1] == 5.0);
    check_exact(ops::argmax(x, 1), {3, 2}, "argmax with NaN, ties -> first");
    Tensor y = Tensor::from_vector<float>({2, 1, 1, 4, 0, 0}, {2, 3});
    check_exact(ops::argmin(y, 1), {1, 1}, "argmin ties -> first");
    Tensor ninf = Tensor::from_vector<float>({-INFINITY, -INFINITY, -INFINITY});
    check_exact(ops::argmax(ninf, 0), {0}, "argmax of all -inf");
    Tensor e = Tensor::empty({3, 0}, DType::f32);
    check_exact(ops::sum(e, {1}), {0, 0, 0}, "sum over an empty dim");
    BOOST_TEST(std::isnan(ou::values(ops::mean(e, {1}))[0]));
    BOOST_TEST(ops::sum(e, {0}).shape() == (ou::Shape{0}));
    check_on(ops::sum(e, {1}), be, "sum over an empty dim");
    check_on(ops::sum(e, {0}), be, "sum of an empty tensor");
    // No identity (PyTorch's rule): an empty reduced dim is an error, even when the result would
    // be empty; reducing a non-empty dim beside an empty one gives an empty result.
    tt::check_throws([&] { ops::amax(e, {1}); }, {"amax", "Expected reduction dim 1 to have non-zero size", "[3, 0]"},
                     "amax over an empty dim");
    for (auto* f : {&ops::argmax, &ops::argmin}) {
      const char* name = f == &ops::argmax ? "argmax" : "argmin";
      BOOST_TEST_CONTEXT(name) {
        tt::check_throws([&] { f(e, 1, false); }, {name, "Expected reduction dim 1 to have non-zero size", "[3, 0]"},
                         "over the empty dim");
        tt::check_throws([&] { f(e, -1, true); }, {name, "dim 1 to have non-zero size"}, "over the empty dim, negative");
        Tensor e0 = Tensor::empty({0, 3}, DType::f32);
        Tensor r = f(e0, 1, false);  // reduces the non-empty dim: an empty [0] i64 result
        BOOST_TEST(r.shape() == (ou::Shape{0}));
        BOOST_TEST((r.dtype() == DType::i64));
        check_on(r, be, "over the non-empty dim of an empty tensor");
        BOOST_TEST(f(e0, 1, true).shape() == (ou::Shape{0, 1}));
        BOOST_TEST(f(Tensor::empty({2, 0, 4}, DType::f32), 2, false).shape() == (ou::Shape{2, 0}));
        tt::check_throws([&] { f(e0, 0, false); }, {name, "Expected reduction dim 0 to have non-zero size"}, "dim 0");
        tt::check_throws([&] { f(Tensor::empty({0, 0}, DType::f32), 1, false); }, {name, "dim 1 to have non-zero size"},
                         "an empty reduced dim with an empty result");
      }
    }
    tt::check_throws([&] { ops::amin(Tensor::empty({0, 0}, DType::f32), {0}); }, {"amin", "dim 0 to have non-zero size"},
                     "amin: an empty reduced dim with an empty result");
    BOOST_TEST(ops::amax(Tensor::empty({0, 3}, DType::f32), {1}).shape() == (ou::Shape{0}));
    Tensor s = Tensor::from_vector<float>({4.5f}, {});
    check_exact(ops::sum(s), {4.5}, "sum of a 0-dim tensor");
    check_exact(ops::sum(s, {0}), {4.5}, "sum of a 0-dim tensor over dim 0");
  });
}

BOOST_AUTO_TEST_CASE(sum_to_op) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor g = ou::random_tensor<float>({4, 3, 5}, 13);
    auto v = ou::values(g);
    Tensor r = ops::sum_to(g, {3, 1});
    BOOST_TEST(r.shape() == (ou::Shape{3, 1}));
    check_on(r, be, "sum_to [3, 1]");
    ou::check_values(r, reduce_ref(v, {4, 3, 5}, {0, 2}, K::sum), 1e-6, "sum_to [3, 1]");
    ou::check_values(ops::sum_to(g, {5}), reduce_ref(v, {4, 3, 5}, {0, 1}, K::sum), 1e-6, "sum_to [5]");
    ou::check_values(ops::sum_to(g, {1, 1, 1}), reduce_ref(v, {4, 3, 5}, {0, 1, 2}, K::sum), 1e-6, "sum_to [1,1,1]");
    ou::check_values(ops::sum_to(g, {}), reduce_ref(v, {4, 3, 5}, {0, 1, 2}, K::sum), 1e-6, "sum_to []");
    BOOST_TEST(ops::sum_to(g, {4, 3, 5}).storage() == g.storage());
    Tensor bias = ou::random_tensor<float>({128, 512}, 14);
    ou::check_values(ops::sum_to(bias, {512}), reduce_ref(ou::values(bias), {128, 512}, {0}, K::sum), 1e-6,
                     "bias gradient");
    tt::check_throws([&] { ops::sum_to(g, {2, 5}); }, {"sum_to", "[2, 5]", "[4, 3, 5]"}, "sum_to incompatible");
    tt::check_throws([&] { ops::sum_to(g, {1, 4, 3, 5}); }, {"sum_to"}, "sum_to higher rank");
  });
}

// The cut into programs (ops/reduce_plan.h) for an H100-like device: 132 SMs, 4 programs each.
BOOST_AUTO_TEST_CASE(plan_fills_the_device) {
  namespace od = tritium::ops::detail;
  const auto h100 = od::ReduceDevice::cuda(132);
  const auto cpu2 = od::ReduceDevice::cpu(2);
  BOOST_TEST(h100.fill == 528);
  // [16384, 1024] over dim 0 (a bias gradient): 4 column tiles of 256 would leave 128 SMs idle;
  // r is cut in 128 chunks of 128 rows: 512 programs, then 4 over the partials.
  auto c = od::plan_reduce(1, 16384, 1024, h100);
  BOOST_TEST(c.columns);
  BOOST_TEST(c.chunks == 128);
  BOOST_TEST(c.chunk == 128);
  BOOST_TEST(c.programs == 512);
  BOOST_TEST(c.launches() == 2);
  BOOST_TEST(c.programs2 == 4);
  BOOST_TEST(c.chunk % c.block_r == 0);
  // The full reduction of 2^24: 512 chunks of 32768, then one program over them.
  auto f = od::plan_reduce(1, int64_t(1) << 24, 1, h100);
  BOOST_TEST(!f.columns);
  BOOST_TEST(f.chunks == 512);
  BOOST_TEST(f.programs == 512);
  BOOST_TEST(f.programs2 == 1);
  // 64 long rows: 9 chunks each (the old rule split only below 8 programs).
  auto r = od::plan_reduce(64, 262144, 1, h100);
  BOOST_TEST(r.chunks == 9);
  BOOST_TEST(r.programs == 576);
  BOOST_TEST(r.programs2 == 1);
  // Rows longer than 1024 of 2-byte elements: blocks of 2048 (4 KB a trip, as 1024 f32); a full
  // reduction of 2^24 bf16 keeps its 512 chunks, 16 trips each.
  BOOST_TEST(od::plan_reduce(1, int64_t(1) << 24, 1, h100, 2).block_r == 2048);
  BOOST_TEST(od::plan_reduce(1, int64_t(1) << 24, 1, h100, 2).chunks == 512);
  BOOST_TEST(od::plan_reduce(1, int64_t(1) << 24, 1, h100, 4).block_r == 1024);
  BOOST_TEST(od::plan_reduce(1, int64_t(1) << 24, 1, h100, 8).block_r == 1024);
  BOOST_TEST(od::plan_reduce(16384, 1024, 1, h100, 2).block_r == 1024);  // rows of 1024 keep theirs
  BOOST_TEST(od::plan_reduce(16384, 1024, 1, h100, 2).block_k == 1);
  // Lane rows: at least 4 x 528 rows longer than 1024 go 4 a program, a row in one warp's 32
  // lanes of 16 bytes: [4, 256] bf16, [4, 128] f32, [4, 64] f64 (adaptive_avg_pool2d to 1x1 of
  // [83, 64, 56, 56]: 1328 programs, no split); fewer rows, or the CPU, keep a row a program.
  for (auto [eb, br] : {std::pair{2, 256}, std::pair{4, 128}, std::pair{8, 64}}) {
    auto l = od::plan_reduce(5312, 3136, 1, h100, eb);
    BOOST_TEST(l.block_r == br);
    BOOST_TEST(l.block_k == od::kLaneRows);
    BOOST_TEST(l.programs == 1328);
    BOOST_TEST(l.chunks == 1);
  }
  BOOST_TEST(od::plan_reduce(2108, 3136, 1, h100, 2).block_k == 1);
  BOOST_TEST(od::plan_reduce(2108, 3136, 1, h100, 2).block_r == 2048);
  BOOST_TEST(od::plan_reduce(5312, 3136, 1, cpu2, 2).block_k == 1);
  // CPU rows: a row a program along blocks of 64 (an accumulator LLVM keeps in registers), short
  // rows several a program up to 256 elements.
  BOOST_TEST(od::plan_reduce(1024, 1024, 1, cpu2).block_r == 64);
  BOOST_TEST(od::plan_reduce(1024, 1024, 1, cpu2).block_k == 1);
  BOOST_TEST(od::plan_reduce(5312, 3136, 1, cpu2, 2).block_r == 64);
  BOOST_TEST(od::plan_reduce(1000, 16, 1, cpu2).block_r == 16);
  BOOST_TEST(od::plan_reduce(1000, 16, 1, cpu2).block_k == 16);
  BOOST_TEST(od::plan_reduce(1000, 40, 1, cpu2).block_r == 64);
  BOOST_TEST(od::plan_reduce(1000, 40, 1, cpu2).block_k == 1);
  // Warps of a rows program (CUDA): 32 bytes a thread a trip. [1, 1024] of f32: 4; of bf16: 2
  // (it was 4, 8 bf16 a thread); the first launch of a full bf16 sum ([1, 2048]): 4; short rows
  // alone ([1, 16] f32): 1.
  BOOST_TEST(od::row_warps(1024 * 4) == 4);
  BOOST_TEST(od::row_warps(1024 * 2) == 2);
  BOOST_TEST(od::row_warps(2048 * 2) == 4);
  BOOST_TEST(od::row_warps(4096 * 4) == 4);
  BOOST_TEST(od::row_warps(16 * 4) == 1);
  BOOST_TEST(od::row_warps(3 * 1024) == 2);  // a power of two
  // softmax's one-row programs allow 16: [1, 4096] f32 takes 16, [1, 4096] bf16 8, 12 KB 8.
  BOOST_TEST(od::row_warps(4096 * 4, 16) == 16);
  BOOST_TEST(od::row_warps(4096 * 2, 16) == 8);
  BOOST_TEST(od::row_warps(12 * 1024, 16) == 8);
  BOOST_TEST(od::row_warps(64 * 1024, 16) == 16);
  // Enough programs already: no split; the CPU's 2 threads: a split in 2.
  BOOST_TEST(od::plan_reduce(16384, 1024, 1, h100).chunks == 1);
  BOOST_TEST(od::plan_reduce(600, 5000, 7, h100).chunks == 1);
  // The CPU: column tiles up to 1024 wide, r cut for its threads.
  auto cc = od::plan_reduce(1, 16384, 1024, cpu2);
  BOOST_TEST(cc.block_k == 1024);
  BOOST_TEST(cc.chunks == 2);
  BOOST_TEST(cc.programs == 2);
  BOOST_TEST(od::plan_reduce(1, 5000, 7, cpu2).chunks == 2);
  BOOST_TEST(od::plan_reduce(1, int64_t(1) << 20, 1, cpu2).chunks == 2);
  BOOST_TEST(od::plan_reduce(4, int64_t(1) << 20, 1, cpu2).chunks == 1);  // 4 rows >= 2 threads
  BOOST_TEST(od::plan_reduce(1, int64_t(1) << 20, 1, od::ReduceDevice::cpu(1)).chunks == 1);
  // Short r is never cut below the minimum chunk, and R = 0 never splits.
  BOOST_TEST(od::plan_reduce(1, 4000, 1, h100).chunks == 1);
  BOOST_TEST(od::plan_reduce(5, 0, 1, h100).chunks == 1);
  auto m = od::plan_reduce(3, 4000, 5, h100);
  BOOST_TEST(m.chunks == 3);
  BOOST_TEST(m.programs == 9);
  // Every chunk is non-empty and together they cover r.
  for (auto [O, R, I] : std::vector<std::array<int64_t, 3>>{{1, 16384, 1024}, {1, 20000, 1}, {3, 4000, 5}, {2, 70000, 1}}) {
    auto p = od::plan_reduce(O, R, I, h100);
    BOOST_TEST(p.chunk * (p.chunks - 1) < R);
    BOOST_TEST(p.chunk * p.chunks >= R);
  }
  tt::check_throws([&] { od::plan_reduce(0, 5, 1, h100); }, {"plan_reduce", "O=0"}, "empty problem");
  tt::check_throws([&] { od::plan_reduce(1, 5, 1, od::ReduceDevice{0, 256}); }, {"plan_reduce", "fill=0"}, "no fill");
  od::ScopedReduceDevice force(h100);
  tt::check_throws([&] { od::ScopedReduceDevice again(cpu2); }, {"ScopedReduceDevice", "nest"}, "nested override");
}

// The split paths' values, with the CPU's plan and with an H100's (forced), on every backend.
BOOST_AUTO_TEST_CASE(split_reductions) {
  namespace od = tritium::ops::detail;
  tt::for_each_backend([&](const tt::Backend& be) {
    for (bool h100 : {false, true}) {
      std::optional<od::ScopedReduceDevice> force;
      if (h100) force.emplace(od::ReduceDevice::cuda(132));
      const std::string tag = h100 ? " (H100 plan)" : " (device plan)";
      struct Case { ou::Shape shape; std::vector<int> dims; };
      for (const Case& c : std::vector<Case>{{{5000, 7}, {0}}, {{3, 4000, 5}, {1}}, {{20000}, {}}, {{2, 70000}, {1}},
                                              {{9000, 300}, {0}}}) {
        Tensor x = ou::random_tensor<float>(c.shape, 21);
        auto v = ou::values(x);
        std::vector<int> nd = c.dims.empty() ? std::vector<int>{0} : c.dims;
        std::string what = "[";
        for (int64_t e : c.shape) what += std::to_string(e) + " ";
        what += "]" + tag;
        Tensor s = ops::sum(x, c.dims);
        check_on(s, be, "sum " + what);
        ou::check_values(s, reduce_ref(v, c.shape, nd, K::sum), 1e-5, "sum " + what);
        ou::check_values(ops::mean(x, c.dims), reduce_ref(v, c.shape, nd, K::mean), 1e-5, "mean " + what);
        ou::check_values(ops::amax(x, c.dims), reduce_ref(v, c.shape, nd, K::max), 0, "amax " + what);
        ou::check_values(ops::amin(x, c.dims), reduce_ref(v, c.shape, nd, K::min), 0, "amin " + what);
        if (!c.dims.empty()) {
          check_exact(ops::argmax(x, c.dims[0]), reduce_ref(v, c.shape, nd, K::argmax), "argmax " + what);
          check_exact(ops::argmin(x, c.dims[0]), reduce_ref(v, c.shape, nd, K::argmin), "argmin " + what);
          // max.dim / min.dim: the values come from the argmax / argmin pass (its last launch).
          auto mx = ops::max(x, c.dims[0]), mn = ops::min(x, c.dims[0], true);
          check_exact(mx.indices, reduce_ref(v, c.shape, nd, K::argmax), "max.dim indices " + what);
          ou::check_values(mx.values, reduce_ref(v, c.shape, nd, K::max), 0, "max.dim values " + what);
          ou::check_values(mn.values, reduce_ref(v, c.shape, nd, K::min), 0, "min.dim values " + what);
          BOOST_TEST(mn.values.dim() == x.dim(), "min.dim keepdim " + what);
        }
      }
      // f64 and f16 partials; integer sums in i64; sum_to (bias gradients) through the same path.
      Tensor d = ou::random_tensor<double>({6000, 3}, 22);
      ou::check_values(ops::sum(d, {0}), reduce_ref(ou::values(d), {6000, 3}, {0}, K::sum), 1e-13, "sum f64" + tag);
      Tensor h = ops::to_dtype(ou::random_tensor<float>({6000, 3}, 23, 0, 1), DType::f16);
      Tensor sh = ops::sum(h, {0});
      BOOST_TEST((sh.dtype() == DType::f16));
      ou::check_values(sh, reduce_ref(ou::values(h), {6000, 3}, {0}, K::sum), 1e-3, "sum f16" + tag);
      ou::check_values(ops::amax(h, {0}), reduce_ref(ou::values(h), {6000, 3}, {0}, K::max), 0, "amax f16" + tag);
      auto mh = ops::max(h, 0);  // f32 partial values, stored back as f16
      BOOST_TEST((mh.values.dtype() == DType::f16));
      ou::check_values(mh.values, reduce_ref(ou::values(h), {6000, 3}, {0}, K::max), 0, "max.dim f16" + tag);
      check_exact(mh.indices, reduce_ref(ou::values(h), {6000, 3}, {0}, K::argmax), "max.dim f16 indices" + tag);
      Tensor i = ou::random_tensor<int32_t>({7000, 2}, 24, -1000000, 1000000);
      check_exact(ops::sum(i, {0}), reduce_ref(ou::values(i), {7000, 2}, {0}, K::sum), "sum i32" + tag);
      check_exact(ops::argmin(i, 0), reduce_ref(ou::values(i), {7000, 2}, {0}, K::argmin), "argmin i32" + tag);
      auto mi = ops::min(i, 0);  // i32 values through the i32 partials
      BOOST_TEST((mi.values.dtype() == DType::i32));
      check_exact(mi.values, reduce_ref(ou::values(i), {7000, 2}, {0}, K::min), "min.dim i32" + tag);
      Tensor g = ou::random_tensor<float>({4, 3000, 6}, 25);
      ou::check_values(ops::sum_to(g, {6}), reduce_ref(ou::values(g), {4, 3000, 6}, {0, 1}, K::sum), 1e-5,
                       "sum_to [6]" + tag);
      ou::check_values(ops::sum_to(g, {3000, 1}), reduce_ref(ou::values(g), {4, 3000, 6}, {0, 2}, K::sum), 1e-5,
                       "sum_to [3000, 1]" + tag);
      // Ties and NaN across chunks: the first index of the extreme; NaN is the extreme.
      for (bool cols : {true, false}) {
        const int64_t n = 70000;
        ou::Shape shape = cols ? ou::Shape{n, 2} : ou::Shape{2, n};
        std::vector<float> t(2 * n, 1.0f);
        auto at = [&](int64_t r, int64_t k) -> float& { return cols ? t[r * 2 + k] : t[k * n + r]; };
        for (int64_t r : {int64_t(40000), int64_t(50000), int64_t(69999)}) at(r, 0) = 7.0f, at(r, 1) = -7.0f;
        at(60000, 1) = NAN, at(65000, 1) = NAN;
        Tensor x = Tensor::from_vector<float>(t, shape);
        const int dim = cols ? 0 : 1;
        const std::string w = (cols ? "columns" : "rows") + tag;
        check_exact(ops::argmax(x, dim), {40000, 60000}, "argmax ties and NaN, " + w);
        check_exact(ops::argmin(x, dim), {0, 60000}, "argmin ties and NaN, " + w);
        auto mx = ou::values(ops::amax(x, {dim}));
        BOOST_TEST(mx[0] == 7.0, w);
        BOOST_TEST(std::isnan(mx[1]), w);
        BOOST_TEST(std::isnan(ou::values(ops::sum(x, {dim}))[1]), w);
      }
    }
  });
}

// Split reductions run in one launch: the last program of each tile combines the partials and
// zeroes its counter (ops/reduce_plan.h's reduce_counters). Full sums, means, amax/amin, products
// and norms of bf16/f16/f32 sizes that are not multiples of the block (an H100's plan: hundreds of
// chunks), NaN propagation through the partials, results stable across repeated launches, on a
// second stream too, and the counters zero again after every launch.
BOOST_AUTO_TEST_CASE(one_launch_splits) {
  namespace od = tritium::ops::detail;
  tt::for_each_backend([&](const tt::Backend& be) {
    od::ScopedReduceDevice force(od::ReduceDevice::cuda(132));
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      for (ou::Shape shape : {ou::Shape{1000003}, ou::Shape{3, 70001}, ou::Shape{40001, 5}}) {
        Tensor x = ops::to_dtype(ou::random_tensor<float>(shape, 41, -1, 1), dt);
        auto v = ou::values(x);
        const std::string what = std::string(tritium::dtype_name(dt)) + " " + tritium::ir::shape_str(shape);
        const double tol = dt == DType::f32 ? 1e-5 : 1e-2;
        std::vector<int> every(shape.size());
        std::iota(every.begin(), every.end(), 0);
        Tensor s = ops::sum(x);
        check_on(s, be, "sum all " + what);
        BOOST_TEST((s.dtype() == dt));
        // Rounded once to the dtype: compare in the dtype's precision against the f64 sum.
        ou::check_values(s, reduce_ref(v, shape, every, K::sum), tol, "sum all " + what);
        ou::check_values(ops::mean(x), reduce_ref(v, shape, every, K::mean), tol, "mean all " + what);
        ou::check_values(ops::amax(x, {}), reduce_ref(v, shape, every, K::max), 0, "amax all " + what);
        ou::check_values(ops::amin(x, {}), reduce_ref(v, shape, every, K::min), 0, "amin all " + what);
        const int last = static_cast<int>(shape.size()) - 1;
        ou::check_values(ops::sum(x, {last}), reduce_ref(v, shape, {last}, K::sum), tol, "sum dim -1 " + what);
        ou::check_values(ops::amax(x, {0}), reduce_ref(v, shape, {0}, K::max), 0, "amax dim 0 " + what);
        ou::check_values(ops::vector_norm(x, 2.0, {}), {std::sqrt(std::inner_product(v.begin(), v.end(), v.begin(), 0.0))},
                         tol, "norm 2 all " + what);
        // Products: ones with some 2s and halves (exact in every dtype, so a lost or repeated
        // chunk shows); near-1 f64 values (f32's own rounding drifts ~1e-2 over 1e6 factors).
        std::vector<float> f(static_cast<size_t>(x.numel()), 1.0f);
        for (size_t k = 0; k < 105; ++k) f[(k * 7919 + 13) % f.size()] = k % 2 || k >= 100 ? 2.0f : 0.5f;  // 32
        Tensor p = ops::to_dtype(Tensor::from_vector<float>(f, shape), dt);
        double pr = 1;
        for (double e : ou::values(p)) pr *= e;
        ou::check_values(ops::prod(p), {pr}, 0, "prod all " + what);
        Tensor pd = ou::random_tensor<double>(shape, 42, 0.99999, 1.00001);
        double prd = 1;
        for (double e : ou::values(pd)) prd *= e;
        ou::check_values(ops::prod(pd), {prd}, 1e-12, "prod all f64 " + what);
        // The same launch again (the counters were zeroed by the last programs): the same bits.
        BOOST_TEST(ou::values(ops::sum(x)) == ou::values(s), "sum all again " + what);
      }
    }
    // A NaN in one chunk reaches the result through the partials; all/any through bool partials.
    std::vector<float> t(1000003, 1.0f);
    t[777777] = NAN;
    Tensor n = Tensor::from_vector<float>(t, {1000003});
    BOOST_TEST(std::isnan(ou::values(ops::sum(n))[0]));
    BOOST_TEST(std::isnan(ou::values(ops::amax(n, {}))[0]));
    BOOST_TEST(std::isnan(ou::values(ops::prod(n))[0]));
    t[777777] = 0.0f;
    Tensor z = Tensor::from_vector<float>(t, {1000003});
    check_exact(ops::all(z), {0}, "all with one zero");
    check_exact(ops::any(z), {1}, "any");
    check_exact(ops::count_nonzero(z, {}), {1000002}, "count_nonzero");
    // A dot product split in chunks, alpha and beta (addmv of a [1, K] matrix is a dot).
    Tensor a = ou::random_tensor<float>({1, 300001}, 43), w = ou::random_tensor<float>({300001}, 44);
    Tensor self = ou::random_tensor<float>({1}, 45);
    auto va = ou::values(a), vw = ou::values(w);
    double dot = std::inner_product(va.begin(), va.end(), vw.begin(), 0.0);
    ou::check_values(ops::addmv(self, a, w, 0.5, 2.0), {2.0 * dot + 0.5 * ou::values(self)[0]}, 1e-5, "addmv split");
    // On another stream: its own counters.
    tritium::runtime::Stream side(be.device);
    {
      tritium::runtime::StreamGuard on_side(side);
      Tensor x = ou::random_tensor<float>({500001}, 46);
      ou::check_values(ops::sum(x), reduce_ref(ou::values(x), {500001}, {0}, K::sum), 1e-5, "sum on a side stream");
    }
    tritium::runtime::current_stream(be.device).wait_stream(side);
    tritium::runtime::synchronize(be.device);
    for (bool on_side : {false, true}) {
      std::optional<tritium::runtime::StreamGuard> g;
      if (on_side) g.emplace(side);
      auto c = ou::values(od::reduce_counters(be.device, 1));
      BOOST_TEST(std::all_of(c.begin(), c.end(), [](double e) { return e == 0; }), "counters zero after the launches");
    }
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = Tensor::zeros({3, 4}, DType::f32);
    tt::check_throws([&] { ops::sum(x, {2}); }, {"sum", "dimension 2", "rank 2"}, "dim out of range");
    tt::check_throws([&] { ops::amax(x, {-3}); }, {"amax", "-3"}, "negative dim out of range");
    tt::check_throws([&] { ops::sum(x, {1, -1}); }, {"sum", "more than once"}, "duplicate dims");
    tt::check_throws([&] { ops::argmax(x, 5); }, {"argmax", "5"}, "argmax bad dim");
    tt::check_throws([&] { ops::sum(Tensor()); }, {"sum", "undefined"}, "undefined");
    tt::check_throws([&] { ops::argmax(Tensor::zeros({3}, DType::i1), 0); }, {"argmax", "bool"}, "argmax bool");
  });
}

// Lane rows ([4, 512 / element size] tiles, ops/reduce_plan.h) with values: rows of R > 1024, not a
// multiple of the tile, a row count not a multiple of 4, every kind, f32 / bf16 / f64 / i32, and
// the mean of adaptive_avg_pool2d to 1x1, under a 2-SM device's plan (fill 8: 32 rows suffice)
// on every backend.
BOOST_AUTO_TEST_CASE(lane_rows) {
  namespace od = tritium::ops::detail;
  tt::for_each_backend([&](const tt::Backend&) {
    od::ScopedReduceDevice force(od::ReduceDevice::cuda(2));
    const ou::Shape shape{38, 3001};
    BOOST_TEST(od::plan_reduce(38, 3001, 1, od::reduce_device(tritium::Device::cpu()), 4).block_k == od::kLaneRows);
    auto check_all = [&](const Tensor& x, double tol, const std::string& what) {
      const auto v = ou::values(x);
      ou::check_values(ops::sum(x, {1}), reduce_ref(v, shape, {1}, K::sum), tol, "sum " + what);
      ou::check_values(ops::amax(x, {1}), reduce_ref(v, shape, {1}, K::max), 0, "amax " + what);
      ou::check_values(ops::amin(x, {1}), reduce_ref(v, shape, {1}, K::min), 0, "amin " + what);
      check_exact(ops::argmax(x, 1), reduce_ref(v, shape, {1}, K::argmax), "argmax " + what);
      check_exact(ops::argmin(x, 1), reduce_ref(v, shape, {1}, K::argmin), "argmin " + what);
      auto mx = ops::max(x, 1);
      ou::check_values(mx.values, reduce_ref(v, shape, {1}, K::max), 0, "max.dim " + what);
      if (tritium::is_float(x.dtype()))
        ou::check_values(ops::mean(x, {1}), reduce_ref(v, shape, {1}, K::mean), tol, "mean " + what);
    };
    check_all(ou::random_tensor<float>(shape, 31), 1e-5, "f32");
    check_all(ou::random_tensor<tritium::bf16_t>(shape, 32), 1e-2, "bf16");
    check_all(ou::random_tensor<double>(shape, 33), 1e-12, "f64");
    check_all(ou::random_tensor<int32_t>(shape, 34, -1000, 1000), 0, "i32");
    // The global average pool of [2, 19, 56, 56] bf16 (38 planes of 3136).
    Tensor p = ou::random_tensor<tritium::bf16_t>({2, 19, 56, 56}, 35);
    Tensor y = ops::adaptive_avg_pool2d(p, {1, 1});
    BOOST_TEST((y.shape() == ou::Shape{2, 19, 1, 1}));
    ou::check_values(y, reduce_ref(ou::values(p), {38, 3136}, {1}, K::mean), 1e-2, "adaptive_avg_pool2d");
  });
}

BOOST_AUTO_TEST_SUITE_END()
