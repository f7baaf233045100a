// Sorting and selection (ops/sort.h: sort argsort topk kthvalue median unique unique_consecutive)
// against a stable host sort in float64: rows of 1, 3, 1000 and 5000 elements (longer than one
// sorted run, so the merge passes run), ties (the sort is stable: indices must match exactly),
// NaN / Inf (NaN sorts as the largest), integer and bool dtypes, strided inputs along any dim,
// empty tensors, and PyTorch's errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "ops/reduce_plan.h"
#include "ops/sort.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

BOOST_AUTO_TEST_SUITE(test_ops_sort)

namespace {

// Host reference: along `dim` of row-major values, the stable order (NaN largest; descending puts
// NaN first), as values and indices in x's shape.
struct Ref {
  std::vector<double> values, indices;
};

// The flat indices of each line along `dim` (all other indices fixed), in order.
std::vector<std::vector<int64_t>> lines(const ou::Shape& shape, int dim) {
  std::vector<std::vector<int64_t>> out;
  std::map<int64_t, size_t> key_to_line;
  for (int64_t i = 0; i < ou::numel(shape); ++i) {
    auto idx = ou::unravel(i, shape);
    int64_t key = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (static_cast<int>(d) != dim) key = key * shape[d] + idx[d];
    auto [it, fresh] = key_to_line.emplace(key, out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(i);
  }
  return out;
}

bool before(double a, double b, bool desc) {
  if (desc) return (a > b) || (std::isnan(a) && !std::isnan(b));
  return (a < b) || (!std::isnan(a) && std::isnan(b));
}

Ref sort_ref(const std::vector<double>& v, const ou::Shape& shape, int dim, bool desc) {
  Ref r{std::vector<double>(v.size()), std::vector<double>(v.size())};
  for (const auto& line : lines(shape, dim)) {
    std::vector<int64_t> order(line.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return before(v[static_cast<size_t>(line[static_cast<size_t>(a)])], v[static_cast<size_t>(line[static_cast<size_t>(b)])], desc);
    });
    for (size_t k = 0; k < line.size(); ++k) {
      r.values[static_cast<size_t>(line[k])] = v[static_cast<size_t>(line[static_cast<size_t>(order[k])])];
      r.indices[static_cast<size_t>(line[k])] = static_cast<double>(order[k]);
    }
  }
  return r;
}

void check_exact(const Tensor& out, const std::vector<double>& ref, const std::string& what) {
  auto v = ou::values(out);
  BOOST_TEST_REQUIRE(v.size() == ref.size(), what << ": " << v.size() << " elements, expected " << ref.size());
  size_t bad = 0, first = v.size();
  for (size_t i = 0; i < v.size(); ++i)
    if (!(v[i] == ref[i] || (std::isnan(v[i]) && std::isnan(ref[i])))) bad++, first = std::min(first, i);
  BOOST_TEST(bad == 0u, what << ": " << bad << " elements differ, first at " << first << ": "
                             << (first < v.size() ? v[first] : 0) << " vs " << (first < v.size() ? ref[first] : 0));
}

std::string shape_str(const ou::Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace

BOOST_AUTO_TEST_CASE(sort_rows_of_any_length) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (ou::Shape shape : {ou::Shape{1}, ou::Shape{3}, ou::Shape{4, 1000}, ou::Shape{5000}, ou::Shape{2, 3, 70}}) {
      for (int dim = 0; dim < static_cast<int>(shape.size()); ++dim) {
        // Floats with ties (a coarse grid) and some NaN and infinities.
        Tensor x = ou::random_tensor<float>(shape, 101, -20, 20);
        auto v = ou::values(x);
        for (size_t i = 0; i < v.size(); ++i) {
          v[i] = std::round(v[i]);
          if (i % 97 == 5) v[i] = NAN;
          if (i % 89 == 7) v[i] = i % 2 ? INFINITY : -INFINITY;
        }
        x = Tensor::from_vector(std::vector<float>(v.begin(), v.end()), shape);
        for (bool desc : {false, true}) {
          std::string what = shape_str(shape) + " dim " + std::to_string(dim) + (desc ? " descending" : "");
          auto r = ops::sort(x, dim - static_cast<int>(shape.size()), desc);
          BOOST_TEST((r.values.device() == be.device), what);
          BOOST_TEST((r.indices.dtype() == DType::i64), what);
          BOOST_TEST(r.values.shape() == shape, what);
          Ref ref = sort_ref(v, shape, dim, desc);
          check_exact(r.values, ref.values, "sort values " + what);
          check_exact(r.indices, ref.indices, "sort indices (stable) " + what);
          check_exact(ops::argsort(x, dim, desc), ref.indices, "argsort " + what);
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(sort_dtypes_and_strides) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor i = ou::random_tensor<int32_t>({3, 1500}, 102, -50, 50);  // many ties
    auto vi = ou::values(i);
    for (bool desc : {false, true}) {
      auto r = ops::sort(i, 1, desc);
      BOOST_TEST((r.values.dtype() == DType::i32));
      Ref ref = sort_ref(vi, {3, 1500}, 1, desc);
      check_exact(r.values, ref.values, "sort i32");
      check_exact(r.indices, ref.indices, "sort i32 indices");
    }
    Tensor l = ou::random_tensor<int64_t>({2000}, 103, -1e12, 1e12);
    check_exact(ops::sort(l).values, sort_ref(ou::values(l), {2000}, 0, false).values, "sort i64");
    Tensor d = ou::random_tensor<double>({700}, 104);
    check_exact(ops::sort(d, 0, true).indices, sort_ref(ou::values(d), {700}, 0, true).indices, "sort f64");
    Tensor h = ops::to_dtype(ou::random_tensor<float>({300}, 105, -4, 4), DType::f16);
    check_exact(ops::sort(h).indices, sort_ref(ou::values(h), {300}, 0, false).indices, "sort f16");
    Tensor b = Tensor::from_vector<bool>({true, false, true, false, false});
    auto rb = ops::sort(b);
    check_exact(rb.values, {0, 0, 0, 1, 1}, "sort bool");
    check_exact(rb.indices, {1, 3, 4, 0, 2}, "sort bool indices");
    Tensor u = ou::random_tensor<uint8_t>({2, 100}, 106, 0, 255);
    check_exact(ops::sort(u, 1, true).indices, sort_ref(ou::values(u), {2, 100}, 1, true).indices, "sort u8");
    // A transposed (strided) input along both dims.
    Tensor base = ou::random_tensor<float>({1200, 3}, 107);
    auto vb = ou::values(base);
    Tensor t = base.as_strided({3, 1200}, {1, 3}, 0);
    std::vector<double> vt(3600);
    for (int a = 0; a < 3; ++a)
      for (int c = 0; c < 1200; ++c) vt[static_cast<size_t>(a * 1200 + c)] = vb[static_cast<size_t>(c * 3 + a)];
    for (int dim : {0, 1}) check_exact(ops::sort(t, dim).indices, sort_ref(vt, {3, 1200}, dim, false).indices, "sort transposed");
    // Empty and 0-dim.
    BOOST_TEST(ops::sort(Tensor::empty({0, 3}, DType::f32), 1).values.shape() == (ou::Shape{0, 3}));
    BOOST_TEST(ops::sort(Tensor::empty({3, 0}, DType::f32), 1).indices.shape() == (ou::Shape{3, 0}));
    auto s0 = ops::sort(Tensor::from_vector<float>({4.f}, {}));
    BOOST_TEST(s0.values.dim() == 0);
    check_exact(s0.indices, {0}, "sort of a 0-dim tensor");
    tt::check_throws([&] { ops::sort(t, 2); }, {"sort", "2"}, "dim out of range");
    tt::check_throws([&] { ops::argsort(Tensor(), 0); }, {"sort", "undefined"}, "undefined");
  });
}

BOOST_AUTO_TEST_CASE(topk_kthvalue_median) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = ou::random_tensor<float>({3, 5000}, 111);
    auto v = ou::values(x);
    Ref desc = sort_ref(v, {3, 5000}, 1, true), asc = sort_ref(v, {3, 5000}, 1, false);
    for (int64_t k : {int64_t(1), int64_t(7), int64_t(1000), int64_t(5000)}) {
      auto r = ops::topk(x, k, 1);
      BOOST_TEST(r.values.shape() == (ou::Shape{3, k}));
      auto small = ops::topk(x, k, -1, false);
      std::vector<double> rv, ri, sv, si;
      for (int64_t row = 0; row < 3; ++row)
        for (int64_t c = 0; c < k; ++c) {
          size_t at = static_cast<size_t>(row * 5000 + c);
          rv.push_back(desc.values[at]), ri.push_back(desc.indices[at]);
          sv.push_back(asc.values[at]), si.push_back(asc.indices[at]);
        }
      check_exact(r.values, rv, "topk values k=" + std::to_string(k));
      check_exact(r.indices, ri, "topk indices k=" + std::to_string(k));
      check_exact(small.values, sv, "topk smallest k=" + std::to_string(k));
      check_exact(small.indices, si, "topk smallest indices k=" + std::to_string(k));
    }
    // topk along dim 0 of a [5, 4] tensor.
    Tensor y = ou::random_tensor<float>({5, 4}, 112);
    auto vy = ou::values(y);
    Ref dy = sort_ref(vy, {5, 4}, 0, true);
    check_exact(ops::topk(y, 2, 0).values, std::vector<double>(dy.values.begin(), dy.values.begin() + 8), "topk dim 0");
    for (int64_t k : {int64_t(1), int64_t(2500), int64_t(5000)}) {
      auto r = ops::kthvalue(x, k, 1);
      BOOST_TEST(r.values.shape() == (ou::Shape{3}));
      std::vector<double> kv, ki;
      for (int64_t row = 0; row < 3; ++row)
        kv.push_back(asc.values[static_cast<size_t>(row * 5000 + k - 1)]), ki.push_back(asc.indices[static_cast<size_t>(row * 5000 + k - 1)]);
      check_exact(r.values, kv, "kthvalue k=" + std::to_string(k));
      check_exact(r.indices, ki, "kthvalue indices k=" + std::to_string(k));
      BOOST_TEST(ops::kthvalue(x, k, 1, true).values.shape() == (ou::Shape{3, 1}));
    }
    // Lower median of even and odd rows; NaN rows give NaN at the first NaN.
    for (int64_t n : {int64_t(1), int64_t(4), int64_t(1001)}) {
      Tensor m = ou::random_tensor<float>({2, n}, 113);
      Ref am = sort_ref(ou::values(m), {2, n}, 1, false);
      auto r = ops::median(m, 1);
      std::vector<double> mv, mi;
      for (int64_t row = 0; row < 2; ++row)
        mv.push_back(am.values[static_cast<size_t>(row * n + (n - 1) / 2)]), mi.push_back(am.indices[static_cast<size_t>(row * n + (n - 1) / 2)]);
      check_exact(r.values, mv, "median n=" + std::to_string(n));
      check_exact(r.indices, mi, "median indices n=" + std::to_string(n));
      check_exact(ops::median(m.as_strided({n, 2}, {1, n}, 0), 0, true).values, mv, "median of a transposed input");
    }
    Tensor nan = Tensor::from_vector<float>({3, NAN, 1, NAN, 2, 5, 1, 4}, {2, 4});
    auto rn = ops::median(nan, 1);
    BOOST_TEST(std::isnan(ou::values(rn.values)[0]));
    check_exact(rn.indices, {1, 0}, "median with NaN: the first NaN; else the lower median");
    BOOST_TEST(ou::values(rn.values)[1] == 2.0);
    BOOST_TEST(std::isnan(ou::values(ops::median(nan))[0]));
    check_exact(ops::median(Tensor::from_vector<int32_t>({5, 1, 4, 2})), {2}, "median of all, i32");
    BOOST_TEST(std::isnan(ou::values(ops::median(Tensor::empty({0}, DType::f32)))[0]));
    check_exact(ops::kthvalue(nan, 4, 1).indices, {3, 1}, "kthvalue: NaN is the largest");
    // Errors as PyTorch's.
    tt::check_throws([&] { ops::topk(x, 5001, 1); }, {"topk", "k = 5001", "out of range"}, "k > size");
    tt::check_throws([&] { ops::topk(x, -1, 1); }, {"topk", "out of range"}, "k < 0");
    tt::check_throws([&] { ops::kthvalue(x, 0, 1); }, {"kthvalue", "out of range"}, "k = 0");
    tt::check_throws([&] { ops::kthvalue(x, 5001, 1); }, {"kthvalue", "k = 5001"}, "k > size");
    tt::check_throws([&] { ops::kthvalue(Tensor::empty({3, 0}, DType::f32), 1, 1); },
                     {"kthvalue", "dim 1 to have non-zero size"}, "kthvalue over an empty dim");
    tt::check_throws([&] { ops::median(Tensor::empty({2, 0}, DType::f32), 1); }, {"median", "non-zero size"},
                     "median over an empty dim");
    tt::check_throws([&] { ops::median(x, 2); }, {"median", "2"}, "median dim out of range");
    BOOST_TEST(ops::topk(Tensor::empty({3, 0}, DType::f32), 0, 1).values.shape() == (ou::Shape{3, 0}));
  });
}

// Rows of up to 4096 (256 on the CPU) of a 32-bit or narrower dtype sort in one launch
// (sort_block: tl::sort over keys packing the value's order above the position); these cases
// take that path (the rows of 1000 on the GPU only): several rows a program, rows that are not
// powers of two, -0.0 beside 0.0 (equal: position order), NaN of either sign (both largest),
// bf16 / i8, topk and kthvalue through tl::topk, and on the GPU the boundary 4096 / 4097 (the
// merge sort).
BOOST_AUTO_TEST_CASE(sort_in_one_program) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const float neg_nan = -std::numeric_limits<float>::quiet_NaN();
    for (ou::Shape shape : {ou::Shape{37, 20}, ou::Shape{5, 129}, ou::Shape{2, 1000}, ou::Shape{3, 2}}) {
      std::vector<double> v = ou::values(ou::random_tensor<float>(shape, 131, -6, 6));
      std::vector<float> f(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        f[i] = std::round(static_cast<float>(v[i]));  // ties, -0.0 and 0.0 among them
        if (i % 31 == 3) f[i] = NAN;
        if (i % 37 == 4) f[i] = neg_nan;
        if (i % 11 == 1) f[i] = -0.0f;
      }
      Tensor x = Tensor::from_vector(f, shape);
      std::vector<double> vx(f.begin(), f.end());
      const int64_t R = shape.back(), O = ou::numel(shape) / R;
      for (bool desc : {false, true}) {
        std::string what = shape_str(shape) + (desc ? " descending" : "");
        auto r = ops::sort(x, 1, desc);
        Ref ref = sort_ref(vx, shape, 1, desc);
        check_exact(r.values, ref.values, "sort values " + what);
        check_exact(r.indices, ref.indices, "sort indices (stable) " + what);
        // -0.0 keeps its sign bit: the values are read back, not rebuilt from the keys.
        auto back = r.values.to_vector<float>();
        for (size_t i = 0; i < back.size(); ++i)
          if (back[i] == 0 && std::signbit(back[i]) != std::signbit(f[static_cast<size_t>(i / R * R) + static_cast<size_t>(ref.indices[i])])) {
            BOOST_ERROR("sort " << what << ": the sign of zero at " << i << " changed");
            break;
          }
        for (int64_t k : {int64_t(1), int64_t(2), std::min<int64_t>(R, 3), std::min<int64_t>(R, 9), R}) {
          auto t = ops::topk(x, k, 1, desc);
          std::vector<double> tv, ti;
          for (int64_t row = 0; row < O; ++row)
            for (int64_t c = 0; c < k; ++c)
              tv.push_back(ref.values[static_cast<size_t>(row * R + c)]), ti.push_back(ref.indices[static_cast<size_t>(row * R + c)]);
          check_exact(t.values, tv, "topk values k=" + std::to_string(k) + " " + what);
          check_exact(t.indices, ti, "topk indices k=" + std::to_string(k) + " " + what);
        }
        if (desc) continue;
        for (int64_t k : {int64_t(1), (R + 1) / 2, R}) {
          auto kv = ops::kthvalue(x, k, 1);
          std::vector<double> ev, ei;
          for (int64_t row = 0; row < O; ++row)
            ev.push_back(ref.values[static_cast<size_t>(row * R + k - 1)]), ei.push_back(ref.indices[static_cast<size_t>(row * R + k - 1)]);
          check_exact(kv.values, ev, "kthvalue k=" + std::to_string(k) + " " + what);
          check_exact(kv.indices, ei, "kthvalue indices k=" + std::to_string(k) + " " + what);
        }
      }
    }
    // bf16 and i8 rows with ties.
    Tensor b = ops::to_dtype(ou::random_tensor<float>({6, 200}, 132, -3, 3), DType::bf16);
    check_exact(ops::sort(b, 1, true).indices, sort_ref(ou::values(b), {6, 200}, 1, true).indices, "sort bf16");
    Tensor c = ou::random_tensor<int8_t>({4, 77}, 133, -100, 100);
    auto rc = ops::sort(c, 1);
    Ref refc = sort_ref(ou::values(c), {4, 77}, 1, false);
    check_exact(rc.values, refc.values, "sort i8");
    check_exact(rc.indices, refc.indices, "sort i8 indices");
    // The longest row one program takes on the GPU, and one more (the merge sort).
    if (be.device.is_cuda()) {
      for (int64_t n : {int64_t(4096), int64_t(4097)}) {
        Tensor w = ou::random_tensor<float>({3, n}, 134, -50, 50);
        Ref rw = sort_ref(ou::values(w), {3, n}, 1, true);
        auto r = ops::sort(w, 1, true);
        check_exact(r.values, rw.values, "sort of rows of " + std::to_string(n));
        check_exact(r.indices, rw.indices, "sort indices of rows of " + std::to_string(n));
      }
    }
  });
}

// topk of a small k over rows too long for one program's sort: on the CPU the k passes of
// topk_extract (rows of up to 4096 held in one block, longer ones streamed, a block boundary
// inside the row), elsewhere the sort - the same answers: the stable order's first k, ties by
// position, NaN largest, both directions, i8 / i32 / bf16 / f32, along a non-last dim, the
// largest k extraction takes (128) and one more (the merge sort), poisoned outputs all written.
BOOST_AUTO_TEST_CASE(topk_of_small_k_over_long_rows) {
  tt::for_each_backend([&](const tt::Backend&) {
    struct Case { Tensor x; int64_t k; };
    Tensor f = ou::random_tensor<float>({3, 4100}, 141, -40, 40);
    std::vector<float> fv = f.to_vector<float>();
    for (size_t i = 0; i < fv.size(); ++i) {
      fv[i] = std::round(fv[i]);  // ties
      if (i % 97 == 5) fv[i] = NAN;
    }
    Tensor fr = Tensor::from_vector(fv, {3, 4100});
    std::vector<Case> cases = {
        {ou::random_tensor<int8_t>({4, 300}, 142, -20, 20), 5},
        {ou::random_tensor<int32_t>({2, 700}, 143, -1000, 1000), 128},
        {ou::random_tensor<int32_t>({2, 700}, 143, -1000, 1000), 129},
        {ops::to_dtype(ou::random_tensor<float>({5, 333}, 144, -3, 3), DType::bf16), 17},
        {fr, 33},
        {fr, 1},
    };
    for (const Case& c : cases) {
      const ou::Shape shape = c.x.shape();
      for (bool largest : {true, false}) {
        std::string what = std::string(dtype_name(c.x.dtype())) + " " + shape_str(shape) + " k=" +
                           std::to_string(c.k) + (largest ? " largest" : " smallest");
        Ref ref = sort_ref(ou::values(c.x), shape, 1, largest);
        auto r = ops::topk(c.x, c.k, 1, largest);
        BOOST_TEST(r.values.shape() == (ou::Shape{shape[0], c.k}));
        std::vector<double> tv, ti;
        for (int64_t row = 0; row < shape[0]; ++row)
          for (int64_t col = 0; col < c.k; ++col) {
            size_t at = static_cast<size_t>(row * shape[1] + col);
            tv.push_back(ref.values[at]), ti.push_back(ref.indices[at]);
          }
        check_exact(r.values, tv, "topk values " + what);
        check_exact(r.indices, ti, "topk indices " + what);
      }
    }
    // Along dim 0 of a transposed view: the rows are gathered first.
    Tensor t = ou::random_tensor<float>({600, 3}, 145);
    Ref rt = sort_ref(ou::values(t), {600, 3}, 0, true);
    auto r = ops::topk(t, 6, 0);
    BOOST_TEST(r.values.shape() == (ou::Shape{6, 3}));
    check_exact(r.values, std::vector<double>(rt.values.begin(), rt.values.begin() + 18), "topk along dim 0");
    check_exact(r.indices, std::vector<double>(rt.indices.begin(), rt.indices.begin() + 18), "topk indices along dim 0");
  });
}

// Radix selection (ops/select.cpp): kthvalue and median along every dim of rows of up to 4096
// (one program's registers) against the stable host order's k-th (ties by position, -0.0 equal
// to 0.0, NaN largest; a median row with NaN: its first NaN), for f32, bf16, f16 and integer
// dtypes with many ties; the median of all elements with the digit passes spread over many
// programs (an H100's plan forced on every backend), -0.0 below 0.0 there as PyTorch's CUDA.
namespace {

// Rounded values in [-6, 6] (ties, -0.0 beside 0.0), NaN of either sign every so often.
std::vector<float> tied_values(size_t n, uint32_t seed, bool nan) {
  std::vector<double> v = ou::values(ou::random_tensor<float>({static_cast<int64_t>(n)}, seed, -6, 6));
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) {
    f[i] = std::round(static_cast<float>(v[i]));
    if (i % 13 == 5) f[i] = -0.0f;
    if (nan && i % 41 == 7) f[i] = (i % 2 ? -1.0f : 1.0f) * std::numeric_limits<float>::quiet_NaN();
  }
  return f;
}

// The k-th (1-based; 0: the median rule) of each line along dim, in the result's order.
Ref kth_ref(const std::vector<double>& v, const ou::Shape& shape, int dim, int64_t k) {
  Ref sorted = sort_ref(v, shape, dim, false), r;
  for (const auto& line : lines(shape, dim)) {
    int64_t kk = k;
    if (kk == 0) {
      int64_t nans = 0;
      for (int64_t i : line) nans += std::isnan(v[static_cast<size_t>(i)]);
      const int64_t R = static_cast<int64_t>(line.size());
      kk = nans > 0 ? R - nans + 1 : (R - 1) / 2 + 1;
    }
    size_t at = static_cast<size_t>(line[static_cast<size_t>(kk - 1)]);
    r.values.push_back(sorted.values[at]);
    r.indices.push_back(sorted.indices[at]);
  }
  return r;
}

// x from f as dtype dt; f64 with low mantissa bits set on every 4th element (all 64 key bits
// used), i64 with values past 2^32 there.
Tensor as_dtype(const std::vector<float>& f, const ou::Shape& shape, DType dt) {
  if (dt != DType::f64 && dt != DType::i64) return ops::to_dtype(Tensor::from_vector(f, shape), dt);
  std::vector<double> w(f.begin(), f.end());
  for (size_t i = 0; i < w.size(); i += 4)
    if (w[i] == w[i]) w[i] = dt == DType::f64 ? w[i] * (1 + 1e-13 * static_cast<double>(i % 97)) : w[i] * 1e10;
  return ops::to_dtype(Tensor::from_vector(w, shape), dt);
}

}  // namespace

BOOST_AUTO_TEST_CASE(radix_select_rows) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (ou::Shape shape : {ou::Shape{3, 7, 5}, ou::Shape{2, 1000}, ou::Shape{2, 4096}, ou::Shape{4, 1}}) {
      const bool big = shape.back() >= 1000;
      std::vector<float> f = tied_values(static_cast<size_t>(ou::numel(shape)), 141, true);
      std::vector<DType> dtypes = {DType::f32, DType::bf16, DType::i32};
      if (!big)
        dtypes = {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i64, DType::i32, DType::i16, DType::i8, DType::u8, DType::u32};
      for (DType dt : dtypes) {
        // Integers: the rounded values (NaN as 3), unsigned ones shifted to be non-negative.
        std::vector<float> g(f);
        if (!tritium::is_float(dt)) {
          for (float& e : g) e = std::isnan(e) ? 3.0f : e + (tritium::is_unsigned_int(dt) ? 6.0f : 0.0f);
          if (dt == DType::u32)  // values past 2^31 too (their keys' top bit set)
            for (size_t i = 0; i < g.size(); i += 3) g[i] = g[i] * 3e8f;
        }
        Tensor x = as_dtype(g, shape, dt);
        auto v = ou::values(x);
        for (int dim = 0; dim < static_cast<int>(shape.size()); ++dim) {
          if (big && dim == 0) continue;
          const int64_t R = shape[static_cast<size_t>(dim)];
          std::string what = shape_str(shape) + " " + tritium::dtype_name(dt) + " dim " + std::to_string(dim);
          auto m = ops::median(x, dim);
          Ref mr = kth_ref(v, shape, dim, 0);
          check_exact(m.values, mr.values, "median " + what);
          check_exact(m.indices, mr.indices, "median indices " + what);
          for (int64_t k : {int64_t(1), (R + 1) / 2, R - 1, R}) {
            if (k < 1) continue;
            auto r = ops::kthvalue(x, k, dim, true);
            Ref kr = kth_ref(v, shape, dim, k);
            check_exact(r.values, kr.values, "kthvalue k=" + std::to_string(k) + " " + what);
            check_exact(r.indices, kr.indices, "kthvalue indices k=" + std::to_string(k) + " " + what);
          }
        }
      }
    }
    // Rows over 4096: the digit passes per row over chunks (an H100's plan: many chunks a row),
    // then the chunk counts of the selected key and the k-th of them; along dim 0 too.
    {
      ops::detail::ScopedReduceDevice gpu(ops::detail::ReduceDevice::cuda(132));
      for (DType dt : {DType::f32, DType::bf16, DType::i16, DType::f64, DType::i64}) {
        const ou::Shape shape{3, 10007};
        std::vector<float> f = tied_values(static_cast<size_t>(ou::numel(shape)), 142, tritium::is_float(dt));
        if (!tritium::is_float(dt))
          for (float& e : f) e = e * 100;
        // Row 1 without NaN (the plain lower median), the others with.
        for (size_t i = 10007; i < 20014; ++i)
          if (f[i] != f[i]) f[i] = 1.0f;
        Tensor x = as_dtype(f, shape, dt);
        auto v = ou::values(x);
        std::string what = std::string("rows of 10007 ") + tritium::dtype_name(dt);
        auto m = ops::median(x, 1);
        Ref mr = kth_ref(v, shape, 1, 0);
        check_exact(m.values, mr.values, "median " + what);
        check_exact(m.indices, mr.indices, "median indices " + what);
        for (int64_t k : {int64_t(1), int64_t(777), int64_t(5004), int64_t(10007)}) {
          auto r = ops::kthvalue(x, k, 1);
          Ref kr = kth_ref(v, shape, 1, k);
          check_exact(r.values, kr.values, "kthvalue k=" + std::to_string(k) + " " + what);
          check_exact(r.indices, kr.indices, "kthvalue indices k=" + std::to_string(k) + " " + what);
        }
        Tensor t = x.as_strided({10007, 3}, {1, 10007}, 0);
        auto mt = ops::median(t, 0);
        check_exact(mt.values, mr.values, "median along dim 0 of " + what);
        check_exact(mt.indices, mr.indices, "median indices along dim 0 of " + what);
      }
    }
    // The benchmark's shape (bench/ops_bench_table.cpp): 1024 rows of 1024, each a program.
    for (DType dt : {DType::f32, DType::bf16}) {
      const ou::Shape shape{1024, 1024};
      Tensor x = ops::to_dtype(ou::random_tensor<float>(shape, 143), dt);
      auto v = ou::values(x);
      std::string what = std::string("[1024, 1024] ") + tritium::dtype_name(dt);
      auto m = ops::median(x, -1);
      Ref mr = kth_ref(v, shape, 1, 0);
      check_exact(m.values, mr.values, "median " + what);
      check_exact(m.indices, mr.indices, "median indices " + what);
      auto r = ops::kthvalue(x, 100, -1);
      Ref kr = kth_ref(v, shape, 1, 100);
      check_exact(r.values, kr.values, "kthvalue k=100 " + what);
      check_exact(r.indices, kr.indices, "kthvalue indices k=100 " + what);
    }
    // No rows: empty results of the reduced shape (short rows and long ones).
    for (int64_t R : {int64_t(5), int64_t(5000)}) {
      auto e = ops::kthvalue(Tensor::empty({0, R}, DType::f32), 2, 1, true);
      BOOST_TEST(e.values.shape() == (ou::Shape{0, 1}));
      BOOST_TEST(ops::median(Tensor::empty({0, R}, DType::bf16), 1).indices.shape() == (ou::Shape{0}));
    }
    // Bit-exact values: -0.0 stays -0.0 (read back at the index).
    Tensor z = Tensor::from_vector<float>({0.0f, -0.0f, 1.0f, -0.0f, -1.0f}, {1, 5});
    auto rz = ops::kthvalue(z, 3, 1);  // -1, then 0.0, -0.0, -0.0 in position order
    check_exact(rz.indices, {1}, "kthvalue among zeros: position order");
    BOOST_TEST(std::signbit(rz.values.to_vector<float>()[0]));
  });
}

BOOST_AUTO_TEST_CASE(radix_select_median_all) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::detail::ScopedReduceDevice gpu(ops::detail::ReduceDevice::cuda(132));
    for (int64_t n : {int64_t(1), int64_t(2), int64_t(1000), int64_t(4097), int64_t(100003), int64_t(1) << 20}) {
      for (DType dt : {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i64, DType::i32, DType::i8, DType::u8, DType::u32}) {
        if (n == int64_t(1) << 20 && dt != DType::f32 && dt != DType::bf16) continue;  // the benchmark's size
        for (bool nan : {false, true}) {
          if (nan && !tritium::is_float(dt)) continue;
          std::vector<float> f = tied_values(static_cast<size_t>(n), 151 + static_cast<uint32_t>(n), nan);
          // Finer values than tied_values' for the wider types (fewer ties, all digits exercised).
          if (dt == DType::f32 || dt == DType::i32 || dt == DType::f64 || dt == DType::i64) {
            auto w = ou::values(ou::random_tensor<float>({n}, 152, -1e6, 1e6));
            for (size_t i = 0; i < f.size(); ++i)
              if (i % 3 == 0 && f[i] == f[i]) f[i] = static_cast<float>(tritium::is_float(dt) ? w[i] : std::round(w[i]));
          }
          if (!tritium::is_float(dt))
            for (float& e : f) e = e + (tritium::is_unsigned_int(dt) ? 6.0f : 0.0f);
          if (dt == DType::u32)
            for (size_t i = 0; i < f.size(); i += 3) f[i] = f[i] * 3e8f;
          Tensor x = as_dtype(f, {n}, dt);
          auto v = ou::values(x);
          // The host's lower median, -0.0 below 0.0; NaN if any.
          std::vector<double> s(v);
          bool has_nan = std::any_of(s.begin(), s.end(), [](double e) { return std::isnan(e); });
          std::sort(s.begin(), s.end(), [](double a, double b) {
            return a < b || (a == b && std::signbit(a) && !std::signbit(b));
          });
          double want = has_nan ? NAN : s[static_cast<size_t>((n - 1) / 2)];
          std::string what = "median of " + std::to_string(n) + " " + tritium::dtype_name(dt) + (nan ? " with NaN" : "");
          Tensor got = ops::median(x);
          BOOST_TEST(got.dim() == 0);
          check_exact(got, {want}, what);
          double g = ou::values(got)[0];
          if (want == 0 && g == 0) BOOST_TEST(std::signbit(g) == std::signbit(want), what << ": the sign of zero");
          // A strided (transposed) input of the same elements.
          if (n == 1000) check_exact(ops::median(x.as_strided({40, 25}, {1, 40}, 0)), {want}, what + " transposed");
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(unique_ops) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (int64_t n : {int64_t(1), int64_t(3), int64_t(1000), int64_t(5000)}) {
      Tensor x = ou::random_tensor<int32_t>({n}, 121, -40, 40);
      auto v = ou::values(x);
      std::map<double, int64_t> counts;
      for (double e : v) counts[e]++;
      std::vector<double> uv, uc;
      for (auto [val, c] : counts) uv.push_back(val), uc.push_back(static_cast<double>(c));
      std::vector<double> inv;
      for (double e : v) inv.push_back(static_cast<double>(std::distance(counts.begin(), counts.find(e))));
      auto r = ops::unique(x, true, true, true);
      std::string what = "unique of " + std::to_string(n);
      BOOST_TEST((r.values.dtype() == DType::i32));
      check_exact(r.values, uv, what);
      check_exact(r.inverse, inv, what + " inverse");
      check_exact(r.counts, uc, what + " counts");
      BOOST_TEST(!ops::unique(x).inverse.defined());
    }
    // A 2-D float input: flattened, inverse in the input's shape.
    Tensor f = Tensor::from_vector<float>({2.5f, -1, 2.5f, 7, -1, 0}, {2, 3});
    auto rf = ops::unique(f, true, true, true);
    check_exact(rf.values, {-1, 0, 2.5, 7}, "unique f32");
    BOOST_TEST(rf.inverse.shape() == (ou::Shape{2, 3}));
    check_exact(rf.inverse, {2, 0, 2, 3, 0, 1}, "unique f32 inverse");
    check_exact(rf.counts, {2, 1, 2, 1}, "unique f32 counts");
    auto rc = ops::unique_consecutive(Tensor::from_vector<int64_t>({1, 1, 2, 2, 1, 3, 3, 3}), true, true);
    check_exact(rc.values, {1, 2, 1, 3}, "unique_consecutive");
    check_exact(rc.inverse, {0, 0, 1, 1, 2, 3, 3, 3}, "unique_consecutive inverse");
    check_exact(rc.counts, {2, 2, 1, 3}, "unique_consecutive counts");
    Tensor b = Tensor::from_vector<bool>({true, true, false});
    check_exact(ops::unique(b).values, {0, 1}, "unique bool");
    auto re = ops::unique(Tensor::empty({0}, DType::f32), true, true, true);
    BOOST_TEST(re.values.numel() == 0);
    BOOST_TEST(re.inverse.numel() == 0);
    BOOST_TEST(re.counts.numel() == 0);
    tt::check_throws([&] { ops::unique(Tensor()); }, {"unique", "undefined"}, "undefined");
  });
}

BOOST_AUTO_TEST_SUITE_END()
