// Indexing ops of the tensor API (ops/indexing.h, nn/tensor_ops.h, Tensor::index): values against
// float64 host references on random inputs and random indices (duplicates, negatives where
// allowed, strided inputs, empty index lists, a mask of more than 1024 x 1024 elements so that
// nonzero's scan takes several steps), in-place writes checked on poisoned destinations, gradients
// of x[...] through views and gathers, and a clear tritium::Error for each bad input. The single
// ops' derivatives are gradchecked by test_op_registry. Every test runs on every backend.
#include "test_support.h"
#include "gradcheck_support.h"
#include "ops_test_helpers.h"

#include <algorithm>
#include <cmath>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "jit/passes/axis_info.h"
#include "nn/functional.h"
#include "ops/indexing.h"
#include "ops/indexing_kernels.h"
#include "runtime/views.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace T = tritium;
namespace ops = tritium::ops;
using namespace tritium::indexing;
using tritium::DType;
using tritium::Tensor;
using Shape = std::vector<int64_t>;

namespace {

Tensor randf(const Shape& s, uint32_t seed) { return ou::random_tensor<float>(s, seed); }
Tensor transposed(Shape s, uint32_t seed) {  // shape s, last two dims stored transposed
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  return tritium::runtime::transpose_of(randf(s, seed), -1, -2);
}
Tensor index_tensor(const Shape& s, uint32_t seed, int64_t lo, int64_t hi) {
  return ou::random_tensor<int64_t>(s, seed, static_cast<double>(lo), static_cast<double>(hi));
}
int64_t flat(const Shape& idx, const Shape& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

// Reference of a gather-like op: out[i] = x[src(i)] for each multi-index i of out.
std::vector<double> mapped(const Tensor& x, const Shape& out_shape, const std::function<Shape(const Shape&)>& src) {
  std::vector<double> xv = ou::values(x), ref;
  for (int64_t i = 0; i < ou::numel(out_shape); ++i) ref.push_back(xv[static_cast<size_t>(flat(src(ou::unravel(i, out_shape)), x.shape()))]);
  return ref;
}

void check_values(const Tensor& out, const Shape& shape, const std::vector<double>& ref, const std::string& what,
                  double tol = 0) {
  BOOST_TEST_CONTEXT(what) {
    BOOST_TEST_REQUIRE(out.shape() == shape);
    if (tol == 0) BOOST_TEST(ou::values(out) == ref, boost::test_tools::per_element());
    else tt::check_close<double>(ou::as_host(ou::values(out)), ref, tol, what);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_tensor_indexing)

BOOST_AUTO_TEST_CASE(gather_and_index_select) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = transposed({5, 7}, 1);
    Tensor idx = index_tensor({3, 4}, 2, 0, 6);
    std::vector<int64_t> iv = idx.to_vector<int64_t>();
    check_values(T::gather(x, -1, idx), {3, 4},
                 mapped(x, {3, 4}, [&](const Shape& i) { return Shape{i[0], iv[static_cast<size_t>(i[0] * 4 + i[1])]}; }),
                 "gather dim -1");
    Tensor idx0 = index_tensor({6, 2}, 3, 0, 4);
    std::vector<int64_t> iv0 = idx0.to_vector<int64_t>();
    check_values(T::gather(x, 0, idx0), {6, 2},
                 mapped(x, {6, 2}, [&](const Shape& i) { return Shape{iv0[static_cast<size_t>(i[0] * 2 + i[1])], i[1]}; }),
                 "gather dim 0, index longer than x along dim");
    Tensor sel = ops::to_dtype(index_tensor({9}, 4, 0, 6), DType::i32);
    std::vector<int32_t> sv = sel.to_vector<int32_t>();
    check_values(T::index_select(x, 1, sel), {5, 9},
                 mapped(x, {5, 9}, [&](const Shape& i) { return Shape{i[0], sv[static_cast<size_t>(i[1])]}; }),
                 "index_select i32 index");
    check_values(T::index_select(x, 0, ops::zeros({0}, DType::i64)), {0, 7}, {}, "index_select of nothing");
    BOOST_TEST(ou::values(T::gather(ou::random_tensor<int16_t>({4}, 5, -90, 90), 0, Tensor::from_vector<int64_t>({3, 3, 0})))[0] ==
               ou::values(ou::random_tensor<int16_t>({4}, 5, -90, 90))[3]);
  });
}

BOOST_AUTO_TEST_CASE(scatter_family) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = randf({4, 6}, 6), src = transposed({5, 3}, 7);
    Tensor idx = index_tensor({4, 3}, 8, 0, 5);  // along dim 1: duplicates within rows
    std::vector<int64_t> iv = idx.to_vector<int64_t>();
    std::vector<double> xv = ou::values(x), sv = ou::values(src);
    auto reference = [&](const std::string& reduce, bool include_self) {
      std::vector<double> acc = xv, count(xv.size(), include_self ? 1 : 0);
      std::vector<bool> hit(xv.size(), false);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j) {
          size_t o = static_cast<size_t>(i * 6 + iv[static_cast<size_t>(i * 3 + j)]);
          double v = sv[static_cast<size_t>(i * 3 + j)];
          if (!include_self && !hit[o]) acc[o] = reduce == "amax" ? -INFINITY : reduce == "amin" ? INFINITY : reduce == "prod" ? 1 : 0;
          hit[o] = true;
          count[o] += 1;
          if (reduce == "sum" || reduce == "mean") acc[o] += v;
          if (reduce == "prod") acc[o] *= v;
          if (reduce == "amax") acc[o] = std::max(acc[o], v);
          if (reduce == "amin") acc[o] = std::min(acc[o], v);
        }
      if (reduce == "mean")
        for (size_t o = 0; o < acc.size(); ++o) acc[o] /= std::max(count[o], 1.0);
      return acc;
    };
    check_values(T::scatter_add(x, 1, idx, src), {4, 6}, reference("sum", true), "scatter_add", 1e-6);
    for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"})
      for (bool self : {true, false})
        check_values(T::scatter_reduce(x, -1, idx, src, reduce, self), {4, 6}, reference(reduce, self),
                     std::string("scatter_reduce ") + reduce + (self ? "" : " without self"), 1e-6);
    // scatter with unique indices per row (a permutation's first 3): exact.
    Tensor perm = Tensor::from_vector<int64_t>({5, 0, 2, 1, 4, 3, 0, 1, 2, 3, 5, 4}, {4, 3});
    std::vector<int64_t> pv = perm.to_vector<int64_t>();
    std::vector<double> ref = xv, refv = xv;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j) {
        size_t o = static_cast<size_t>(i * 6 + pv[static_cast<size_t>(i * 3 + j)]);
        ref[o] = sv[static_cast<size_t>(i * 3 + j)];
        refv[o] = -2.5;
      }
    check_values(T::scatter(x, 1, perm, src), {4, 6}, ref, "scatter");
    check_values(T::scatter(x, 1, perm, ops::Scalar(-2.5)), {4, 6}, refv, "scatter value");
    BOOST_TEST(ou::values(x) == xv);  // out of place: x is unchanged
    // index_add with duplicates and alpha, on a strided input.
    Tensor y = transposed({6, 3}, 9), source = randf({4, 3}, 10);
    Tensor rows = Tensor::from_vector<int64_t>({5, 1, 5, 0});
    std::vector<double> yr = ou::values(y), so = ou::values(source);
    for (int k = 0; k < 4; ++k)
      for (int c = 0; c < 3; ++c) yr[static_cast<size_t>(rows.to_vector<int64_t>()[static_cast<size_t>(k)] * 3 + c)] += 0.5 * so[static_cast<size_t>(k * 3 + c)];
    check_values(T::index_add(y, 0, rows, source, 0.5), {6, 3}, yr, "index_add", 1e-6);
    // Integer dtypes accumulate exactly.
    Tensor xi = ou::random_tensor<int32_t>({4, 6}, 11, -100, 100), si = ou::random_tensor<int32_t>({4, 3}, 12, -100, 100);
    std::vector<double> ri = ou::values(xi), siv = ou::values(si);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j) ri[static_cast<size_t>(i * 6 + iv[static_cast<size_t>(i * 3 + j)])] += siv[static_cast<size_t>(i * 3 + j)];
    check_values(T::scatter_add(xi, 1, idx, si), {4, 6}, ri, "scatter_add i32");
    // prod by compare-and-swap: i64 products exact (many values into one position), NaN kept.
    Tensor xl = ou::random_tensor<int64_t>({3}, 30, -3, 3), sl = ou::random_tensor<int64_t>({40}, 31, -2, 2);
    Tensor to = Tensor::from_vector<int64_t>(std::vector<int64_t>(40, 1));
    std::vector<double> rl = ou::values(xl);
    for (double v : ou::values(sl)) rl[1] *= v;
    check_values(T::scatter_reduce(xl, 0, to, sl, "prod"), {3}, rl, "scatter_reduce prod i64, 40 into one");
    Tensor nan_src = Tensor::from_vector<float>({2.0f, std::nanf(""), -0.0f});
    std::vector<double> pn = ou::values(T::scatter_reduce(ops::ones({2}), 0, Tensor::from_vector<int64_t>({0, 0, 1}), nan_src, "prod"));
    BOOST_TEST(std::isnan(pn[0]));
    BOOST_TEST((pn[1] == 0 && std::signbit(pn[1])));
  });
}

// scatter_add_ / index_add_ add into x itself (the backward of gather and index_select on fresh
// zeros): x changes, the result is x, values as the out-of-place ops on a strided x, with
// duplicates, more than one program's tile (1024) and a partial last one; an expanded x is an error.
BOOST_AUTO_TEST_CASE(in_place_scatters) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = transposed({37, 60}, 40), src = randf({37, 50}, 41);
    Tensor idx = index_tensor({37, 50}, 42, 0, 59);  // along dim 1: duplicates within rows
    const std::vector<double> want = ou::values(T::scatter_add(x, 1, idx, src));
    Tensor& same = ops::scatter_add_(x, 1, idx, src);
    BOOST_TEST(&same == &x);
    check_values(x, {37, 60}, want, "scatter_add_ into a transposed x", 1e-6);
    Tensor big = ops::zeros({3, 2000}), bsrc = randf({3, 1500}, 43), bidx = index_tensor({3, 1500}, 44, 0, 1999);
    const std::vector<double> bwant = ou::values(T::scatter_add(big, 1, bidx, bsrc));
    ops::scatter_add_(big, 1, bidx, bsrc);
    check_values(big, {3, 2000}, bwant, "scatter_add_ over several tiles", 1e-6);
    Tensor y = transposed({6, 3}, 45), source = randf({4, 3}, 46);
    Tensor rows = Tensor::from_vector<int64_t>({5, 1, 5, 0});
    const std::vector<double> ywant = ou::values(T::index_add(y, 0, rows, source, 0.5));
    ops::index_add_(y, 0, rows, source, 0.5);
    check_values(y, {6, 3}, ywant, "index_add_ with alpha", 1e-6);
    Tensor wide = ops::zeros({1, 4}).expand({3, 4});
    tt::check_throws([&] { ops::scatter_add_(wide, 0, ops::zeros({1, 4}, DType::i64), ops::ones({1, 4})); },
                     {"scatter_add_", "more than one element of the written-to tensor", "dimension 0"});
    tt::check_throws([&] { ops::index_add_(wide, 1, Tensor::from_vector<int64_t>({0}), ops::ones({3, 1})); },
                     {"index_add_", "more than one element"});
    tt::check_throws([&] { ou::values(ops::scatter_add_(y, 0, ops::full({1, 1}, 6, DType::i64), ops::ones({1, 1}))); },
                     {"scatter_add_", "index 6 is out of bounds for dimension 0 with size 6"});
  });
}

// Add / max / min along a dim that is not the innermost: on the CPU each program owns its
// destination elements and loops over that dim (index_accumulate, no atomics); on the GPU the
// atomics. Many duplicates, a partial last tile (1500 and 1100 columns against 1024), strided
// inputs, a 3-D case with the dim in the middle, f32 / bf16 / i32, NaN in amax / amin's source,
// accumulate through x[idx] += v, and a bad index reported.
BOOST_AUTO_TEST_CASE(accumulation_along_an_outer_dim) {
  tt::for_each_backend([](const tt::Backend&) {
    // index_add along dim 0 of [40, 1500]: 300 source rows into 40, alpha 0.5; f32, bf16, i32.
    Tensor rows = index_tensor({300}, 50, 0, 39);
    const std::vector<int64_t> rv = rows.to_vector<int64_t>();
    for (DType dt : {DType::f32, DType::bf16, DType::i32}) {
      BOOST_TEST_CONTEXT(tritium::dtype_name(dt)) {
        Tensor x = dt == DType::i32 ? ou::random_tensor<int32_t>({40, 1500}, 51, -50, 50) : ops::to_dtype(randf({40, 1500}, 51), dt);
        Tensor src = dt == DType::i32 ? ou::random_tensor<int32_t>({300, 1500}, 52, -50, 50) : ops::to_dtype(randf({300, 1500}, 52), dt);
        const double alpha = dt == DType::i32 ? 2 : 0.5;
        std::vector<double> want = ou::values(x), sv = ou::values(src);
        for (size_t k = 0; k < rv.size(); ++k)
          for (size_t c = 0; c < 1500; ++c) want[static_cast<size_t>(rv[k]) * 1500 + c] += alpha * sv[k * 1500 + c];
        Tensor out = T::index_add(x, 0, rows, src, alpha);
        if (dt == DType::i32) check_values(out, {40, 1500}, want, "index_add i32");
        else tt::check_close<double>(ou::as_host(ou::values(ops::to_dtype(out, DType::f32))), want,
                                     dt == DType::bf16 ? 0.1 : 1e-5, "index_add");
      }
    }
    // index_add along dim 1 (the middle) of a [4, 30, 70] x whose last two dims are transposed.
    Tensor x3 = tritium::runtime::transpose_of(randf({4, 70, 30}, 53), -1, -2), s3 = randf({4, 90, 70}, 54);
    Tensor mid = index_tensor({90}, 55, 0, 29);
    std::vector<double> w3 = ou::values(x3), v3 = ou::values(s3);
    const std::vector<int64_t> mv = mid.to_vector<int64_t>();
    for (int64_t a = 0; a < 4; ++a)
      for (int64_t k = 0; k < 90; ++k)
        for (int64_t c = 0; c < 70; ++c)
          w3[static_cast<size_t>(flat({a, mv[static_cast<size_t>(k)], c}, {4, 30, 70}))] += v3[static_cast<size_t>(flat({a, k, c}, {4, 90, 70}))];
    check_values(T::index_add(x3, 1, mid, s3), {4, 30, 70}, w3, "index_add along the middle dim", 1e-5);
    // scatter_add / scatter_reduce along dim 0 of [50, 1100] from [70, 1100]; NaN in the source.
    Tensor x = randf({50, 1100}, 56), src = randf({70, 1100}, 57), idx = index_tensor({70, 1100}, 58, 0, 49);
    std::vector<float> sf = src.to_vector<float>();
    for (size_t i = 0; i < sf.size(); i += 997) sf[i] = NAN;
    src = Tensor::from_vector(sf, {70, 1100});
    const std::vector<double> xv = ou::values(x), sv = ou::values(src);
    const std::vector<int64_t> iv = idx.to_vector<int64_t>();
    for (const char* reduce : {"sum", "amax", "amin"})
      for (bool self : {true, false}) {
        std::vector<double> acc = xv;
        std::vector<bool> hit(xv.size(), false);
        for (size_t i = 0; i < iv.size(); ++i) {
          size_t o = static_cast<size_t>(iv[i]) * 1100 + i % 1100;
          double v = sv[i];
          if (!self && !hit[o]) acc[o] = std::string(reduce) == "sum" ? 0 : std::string(reduce) == "amax" ? -INFINITY : INFINITY;
          hit[o] = true;
          // amax / amin combine as the atomics do on every backend: a NaN loses to a number
          // (fmax / fmin; PyTorch's CPU kernel propagates it - docs/ops.md).
          if (std::string(reduce) == "sum") acc[o] += v;
          else acc[o] = std::string(reduce) == "amax" ? std::fmax(acc[o], v) : std::fmin(acc[o], v);
        }
        Tensor got = T::scatter_reduce(x, 0, idx, src, reduce, self);
        std::vector<double> gv = ou::values(got);
        size_t bad = 0;
        for (size_t i = 0; i < gv.size(); ++i)
          if (std::isnan(acc[i]) != std::isnan(gv[i]) || (!std::isnan(acc[i]) && std::abs(gv[i] - acc[i]) > 1e-4 * (1 + std::abs(acc[i])))) ++bad;
        BOOST_TEST(bad == 0u, "scatter_reduce " << reduce << (self ? "" : " without self") << " along dim 0: " << bad << " differ");
      }
    // x[idx] += v (index_put_ accumulate) with 500 row indices into 20 rows of 1030.
    Tensor acc = ops::zeros({20, 1030}), vals = randf({500, 1030}, 59), ridx = index_tensor({500}, 60, 0, 19);
    std::vector<double> aw(20 * 1030, 0.0), vv = ou::values(vals);
    const std::vector<int64_t> ri = ridx.to_vector<int64_t>();
    for (size_t k = 0; k < ri.size(); ++k)
      for (size_t c = 0; c < 1030; ++c) aw[static_cast<size_t>(ri[k]) * 1030 + c] += vv[k * 1030 + c];
    ops::index_put_(acc, {ridx}, vals, true);
    check_values(acc, {20, 1030}, aw, "index_put_ accumulate", 1e-4);
    // A bad index among good ones is reported.
    Tensor badrows = Tensor::from_vector<int64_t>({3, 40, 1});
    tt::check_throws([&] { ou::values(T::index_add(ops::zeros({40, 1500}), 0, badrows, ops::ones({3, 1500}))); },
                     {"index_add", "40", "out of"}, "index_add with an index past the dim");
  });
}

BOOST_AUTO_TEST_CASE(masks_and_nonzero) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = transposed({3, 5}, 13);
    Tensor mask = ou::random_tensor<bool>({5}, 14);
    std::vector<double> xv = ou::values(x), mv = ou::values(mask), ref, sel;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        ref.push_back(mv[static_cast<size_t>(j)] ? 7.0 : xv[static_cast<size_t>(i * 5 + j)]);
        if (mv[static_cast<size_t>(j)]) sel.push_back(xv[static_cast<size_t>(i * 5 + j)]);
      }
    check_values(T::masked_fill(x, mask, 7.0), {3, 5}, ref, "masked_fill broadcast mask");
    check_values(T::masked_select(x, mask), {static_cast<int64_t>(sel.size())}, sel, "masked_select");
    // nonzero: floats with zeros and NaN (nonzero), 3-D, sizes off the block.
    Tensor f = ops::mul(ops::to_dtype(ops::gt(randf({3, 7, 61}, 15), ops::Scalar(0.2)), DType::f32), randf({3, 7, 61}, 16));
    std::vector<double> fv = ou::values(f), nz;
    for (int64_t i = 0; i < f.numel(); ++i)
      if (fv[static_cast<size_t>(i)] != 0)
        for (int64_t c : ou::unravel(i, f.shape())) nz.push_back(static_cast<double>(c));
    check_values(T::nonzero(f), {static_cast<int64_t>(nz.size() / 3), 3}, nz, "nonzero 3-D");
    // More than 1024 blocks of 1024: the scan of the block counts loops.
    Tensor big = ou::random_tensor<bool>({1100, 1030}, 17);
    std::vector<bool> bv = big.to_vector<bool>();
    std::vector<double> rows;
    for (int64_t i = 0; i < big.numel(); ++i)
      if (bv[static_cast<size_t>(i)]) rows.push_back(static_cast<double>(i / 1030));
    Tensor nzb = T::nonzero(big);
    BOOST_TEST_REQUIRE(nzb.shape() == Shape({static_cast<int64_t>(rows.size()), 2}));
    BOOST_TEST(ou::values(tritium::runtime::select_of(nzb, 1, 0)) == rows);
    BOOST_TEST(T::nonzero(ops::zeros({4, 0}, DType::f32)).shape() == Shape({0, 2}));
    BOOST_TEST(T::nonzero(ops::zeros({3}, DType::f32)).shape() == Shape({0, 1}));
  });
}

BOOST_AUTO_TEST_CASE(tensor_index_follows_pytorch) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = randf({4, 5, 6}, 18);
    // Basic indices only: a view of the same storage.
    Tensor v = x.index({Slice(1, None), 0, None, Ellipsis, Slice(None, None, 2)});
    BOOST_TEST(v.storage() == x.storage());
    check_values(v, {3, 1, 3}, mapped(x, {3, 1, 3}, [](const Shape& i) { return Shape{i[0] + 1, 0, i[2] * 2}; }), "basic");
    check_values(x.index({-1, -2}), {6}, mapped(x, {6}, [](const Shape& i) { return Shape{3, 3, i[0]}; }), "negative ints");
    BOOST_TEST(x.index({false}).shape() == Shape({0, 4, 5, 6}));
    // One index tensor, negatives wrap.
    Tensor a = Tensor::from_vector<int64_t>({-1, 2, 0, -4, 3, 3}, {2, 3});
    std::vector<int64_t> av = a.to_vector<int64_t>();
    auto w = [](int64_t i, int64_t n) { return i < 0 ? i + n : i; };
    check_values(x.index({a}), {2, 3, 5, 6},
                 mapped(x, {2, 3, 5, 6}, [&](const Shape& i) { return Shape{w(av[static_cast<size_t>(i[0] * 3 + i[1])], 4), i[2], i[3]}; }),
                 "x[a]");
    // Two adjacent index tensors broadcast: their dims stay in place.
    Tensor b = Tensor::from_vector<int64_t>({5, -6, 0}, {3});
    std::vector<int64_t> bv = b.to_vector<int64_t>();
    Tensor c = Tensor::from_vector<int64_t>({4, 0}, {2, 1});
    std::vector<int64_t> cv = c.to_vector<int64_t>();
    check_values(x.index({Slice(), c, b}), {4, 2, 3},
                 mapped(x, {4, 2, 3}, [&](const Shape& i) { return Shape{i[0], cv[static_cast<size_t>(i[1])], w(bv[static_cast<size_t>(i[2])], 6)}; }),
                 "x[:, c, b]");
    // Separated by a slice: the broadcast dims go first.
    Tensor c0 = Tensor::from_vector<int64_t>({3, -4}, {2, 1});
    check_values(x.index({c0, Slice(1, 3), b}), {2, 3, 2},
                 mapped(x, {2, 3, 2}, [&](const Shape& i) { return Shape{i[0] == 0 ? 3 : 0, i[2] + 1, w(bv[static_cast<size_t>(i[1])], 6)}; }),
                 "x[c0, 1:3, b]");
    // An integer next to a tensor is a select (PyTorch, unlike NumPy): dims stay in place.
    check_values(x.index({Slice(), 2, b}), {4, 3},
                 mapped(x, {4, 3}, [&](const Shape& i) { return Shape{i[0], 2, w(bv[static_cast<size_t>(i[1])], 6)}; }),
                 "x[:, 2, b]");
    // A 2-D mask over the first two dims; and Ellipsis before an index.
    Tensor m = ou::random_tensor<bool>({4, 5}, 19);
    std::vector<bool> mv = m.to_vector<bool>();
    std::vector<Shape> hits;
    for (int64_t i = 0; i < 20; ++i)
      if (mv[static_cast<size_t>(i)]) hits.push_back({i / 5, i % 5});
    int64_t k = static_cast<int64_t>(hits.size());
    check_values(x.index({m}), {k, 6},
                 mapped(x, {k, 6}, [&](const Shape& i) { return Shape{hits[static_cast<size_t>(i[0])][0], hits[static_cast<size_t>(i[0])][1], i[1]}; }),
                 "x[mask]");
    check_values(x.index({Ellipsis, b}), {4, 5, 3},
                 mapped(x, {4, 5, 3}, [&](const Shape& i) { return Shape{i[0], i[1], w(bv[static_cast<size_t>(i[2])], 6)}; }),
                 "x[..., b]");
    // Strided input.
    Tensor t = transposed({5, 4}, 20);
    Tensor r = Tensor::from_vector<int64_t>({4, -5, 1});
    check_values(t.index({r.index({Slice(0, 2)}), Slice(None, None, 3)}), {2, 2},
                 mapped(t, {2, 2}, [&](const Shape& i) { return Shape{i[0] == 0 ? 4 : 0, i[1] * 3}; }),
                 "strided t[r[0:2], ::3]");
  });
}

BOOST_AUTO_TEST_CASE(index_put_writes_in_place) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = randf({4, 5}, 21);
    std::vector<double> xv = ou::values(x);
    Tensor m = ops::gt(x, ops::Scalar(0.3));
    x.index_put_({m}, -1.0);
    for (double& v : xv) v = v > 0.3f ? -1.0 : v;
    BOOST_TEST(ou::values(x) == xv, boost::test_tools::per_element());
    // Rows 3 and 1, columns 1..2, from a broadcast value row (f64 converted to f32).
    Tensor rows = Tensor::from_vector<int64_t>({3, -4});
    Tensor vals = Tensor::from_vector<double>({0.5, 0.25});
    x.index_put_({rows, Slice(1, 3)}, vals);
    for (int r : {3, 0})
      for (int cc = 1; cc < 3; ++cc) xv[static_cast<size_t>(r * 5 + cc)] = cc == 1 ? 0.5 : 0.25;
    BOOST_TEST(ou::values(x) == xv, boost::test_tools::per_element());
    // A poisoned destination: every element written exactly once by x[perm] = v.
    Tensor dst = ops::full({6}, ops::Scalar(std::nan("")), DType::f32);
    Tensor perm = Tensor::from_vector<int64_t>({4, 0, 5, 2, 1, 3});
    Tensor v = randf({6}, 22);
    dst.index_put_({perm}, v);
    std::vector<double> dv = ou::values(dst), vv = ou::values(v);
    std::vector<int64_t> pv = perm.to_vector<int64_t>();
    for (size_t i = 0; i < 6; ++i) BOOST_TEST(dv[static_cast<size_t>(pv[i])] == vv[i]);
    // accumulate: duplicates add up.
    Tensor acc = ops::zeros({3, 2}, DType::f64);
    ops::index_put_(acc, {Tensor::from_vector<int64_t>({2, 0, 2, 2})}, ops::ones({2}, DType::f64), true);
    BOOST_TEST(ou::values(acc) == std::vector<double>({1, 1, 0, 0, 3, 3}));
  });
}

// torch.where's forms: a number for one branch (promoted as a wrapped number), and where(cond)
// as nonzero's columns; the tensor branch stays differentiable.
BOOST_AUTO_TEST_CASE(where_forms) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = transposed({3, 4}, 32);
    Tensor c = ops::gt(x, ops::Scalar(0.0));
    std::vector<double> xv = ou::values(x), ref, ref2;
    for (double v : xv) ref.push_back(v > 0 ? v : 0.5), ref2.push_back(v > 0 ? -2 : v);
    check_values(T::where(c, x, 0.5), {3, 4}, ref, "where(c, x, 0.5)");
    check_values(T::where(c, -2, x), {3, 4}, ref2, "where(c, -2, x)");
    Tensor ints = ou::random_tensor<int32_t>({3, 4}, 33, -9, 9);
    BOOST_TEST((T::where(c, ints, 2.5).dtype() == DType::f32));
    BOOST_TEST((T::where(c, ints, 2).dtype() == DType::i32));
    std::vector<Tensor> coords = T::where(c);
    BOOST_TEST_REQUIRE(coords.size() == 2u);
    std::vector<double> rows, cols;
    for (size_t i = 0; i < xv.size(); ++i)
      if (xv[i] > 0) rows.push_back(static_cast<double>(i / 4)), cols.push_back(static_cast<double>(i % 4));
    BOOST_TEST(ou::values(coords[0]) == rows);
    BOOST_TEST(ou::values(coords[1]) == cols);
    tt::gradcheck("where(c, x, 0.5)", [&](const tt::GradInputs& in) {
      return T::where(ops::gt(in[0].detach(), ops::Scalar(0.0)), in[0], 0.5);
    }, {tt::input({3, 4}, 34)});
    tt::check_throws([&] { T::where(ops::zeros({3, 4}), x, 0.5); }, {"where", "bool"});
  });
}

// Empty index lists and masks give empty results (or an unchanged copy) without launching.
BOOST_AUTO_TEST_CASE(empty_indices) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = randf({3, 4}, 29);
    Tensor none = ops::zeros({0}, DType::i64);
    BOOST_TEST(T::gather(x, 1, ops::zeros({3, 0}, DType::i64)).shape() == Shape({3, 0}));
    check_values(T::scatter_add(x, 0, ops::zeros({0, 4}, DType::i64), ops::zeros({0, 4})), {3, 4}, ou::values(x),
                 "scatter_add of nothing");
    check_values(T::index_add(x, 1, none, ops::zeros({3, 0})), {3, 4}, ou::values(x), "index_add of nothing");
    BOOST_TEST(x.index({none}).shape() == Shape({0, 4}));
    BOOST_TEST(x.index({Slice(), none}).shape() == Shape({3, 0}));
    Tensor no = ops::gt(x, ops::Scalar(5.0));
    BOOST_TEST(T::masked_select(x, no).shape() == Shape({0}));
    BOOST_TEST(x.index({no}).shape() == Shape({0}));
    Tensor y = ops::clone(x);
    y.index_put_({no}, 1.0);
    BOOST_TEST(ou::values(y) == ou::values(x));
    BOOST_TEST(T::index_select(ops::zeros({0, 2}), 1, Tensor::from_vector<int64_t>({1, 0})).shape() == Shape({0, 2}));
  });
}

// Gradients of x[...]: basic views and an advanced gather combined, and index_put out of place.
BOOST_AUTO_TEST_CASE(index_gradients) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor rows = Tensor::from_vector<int64_t>({2, -1, 2});
    tt::gradcheck("x[1:, None, rows] with a repeated row", [&](const tt::GradInputs& in) {
      return in[0].index({Slice(1, None), None, rows});
    }, {tt::input({3, 4, 2}, 23)});
    Tensor m = Tensor::from_vector<bool>({true, false, true, true});
    tt::gradcheck("masked rows of a strided tensor", [&](const tt::GradInputs& in) { return in[0].index({m, 1}); },
                  {tt::strided_input({4, 3}, 24)});
    tt::gradcheck("index_put of values", [&](const tt::GradInputs& in) {
      return T::index_put(in[0], {Tensor::from_vector<int64_t>({0, 2})}, in[1]);
    }, {tt::input({3, 2}, 25), tt::input({2}, 26)});
  });
}

BOOST_AUTO_TEST_CASE(bad_inputs) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = randf({3, 4}, 27);
    Tensor i3 = Tensor::from_vector<int64_t>({0, 4, 1});
    tt::check_throws([&] { ou::values(T::index_select(x, 1, i3)); }, {"index_select", "index 4 is out of bounds for dimension 1 with size 4"});
    tt::check_throws([&] { ou::values(T::index_select(x, 0, Tensor::from_vector<int64_t>({-1}))); }, {"index_select", "index -1 is out of bounds"});
    tt::check_throws([&] { T::index_select(x, 2, i3); }, {"index_select", "dimension 2 is out of range"});
    tt::check_throws([&] { T::index_select(x, 0, Tensor::from_vector<float>({0})); }, {"index_select", "i64 or i32", "f32"});
    tt::check_throws([&] { T::index_select(x, 0, ops::zeros({1, 1}, DType::i64)); }, {"index_select", "vector"});
    tt::check_throws([&] { T::gather(x, 1, ops::zeros({3}, DType::i64)); }, {"gather", "same number of dimensions"});
    tt::check_throws([&] { T::gather(x, 1, ops::zeros({4, 1}, DType::i64)); }, {"gather", "size 4 of index [4, 1] exceeds"});
    tt::check_throws([&] { ou::values(T::gather(x, 0, ops::full({1, 1}, 3, DType::i64))); }, {"gather", "index 3 is out of bounds for dimension 0 with size 3"});
    tt::check_throws([&] { T::scatter(x, 0, ops::zeros({1, 1}, DType::i64), ops::zeros({1, 1}, DType::f64)); },
                     {"scatter", "dtype", "f32", "f64"});
    tt::check_throws([&] { T::scatter_add(x, 0, ops::zeros({2, 2}, DType::i64), ops::zeros({1, 2})); },
                     {"scatter_add", "exceeds the source's size"});
    tt::check_throws([&] { T::scatter_reduce(x, 0, ops::zeros({1, 1}, DType::i64), ops::zeros({1, 1}), "max"); },
                     {"scatter_reduce", "sum, prod, mean, amax or amin", "max"});
    tt::check_throws([&] { T::scatter_add(ops::zeros({3}, DType::u8), 0, ops::zeros({1}, DType::i64), ops::zeros({1}, DType::u8)); },
                     {"scatter_add", "u8", "16, 32 or 64-bit"});
    tt::check_throws([&] { T::index_add(x, 0, i3.index({Slice(0, 2)}), ops::zeros({3, 4})); },
                     {"index_add", "number of indices (2) should be equal to source.size(dim) (3)"});
    tt::check_throws([&] { T::index_add(x, 0, Tensor::from_vector<int64_t>({0}), ops::zeros({1, 5})); },
                     {"index_add", "dimension 1: 5 vs 4"});
    tt::check_throws([&] { T::masked_fill(x, ops::zeros({4}), 1.0); }, {"masked_fill", "bool", "f32"});
    tt::check_throws([&] { T::masked_fill(x, ops::gt(ops::zeros({2, 3, 4}), ops::Scalar(0)), 1.0); },
                     {"masked_fill", "[2, 3, 4] cannot be broadcast to the input's shape [3, 4]"});
    tt::check_throws([&] { T::masked_select(x, ops::gt(ops::zeros({5}), ops::Scalar(0))); }, {"masked_select", "cannot be broadcast"});
    tt::check_throws([&] { x.index({0, 1, 2}); }, {"index", "too many indices for tensor of dimension 2"});
    tt::check_throws([&] { x.index({Ellipsis, 0, Ellipsis}); }, {"index", "single ellipsis"});
    tt::check_throws([&] { x.index({5}); }, {"index", "index 5 is out of bounds for dimension 0 with size 3"});
    tt::check_throws([&] { x.index({Slice(None, None, -1)}); }, {"index", "step must be positive"});
    tt::check_throws([&] { ou::values(x.index({i3})); }, {"index", "index 4 is out of bounds for dimension 0 with size 3"});
    tt::check_throws([&] { ou::values(x.index({Slice(), Tensor::from_vector<int64_t>({-5})})); }, {"index", "index -5 is out of bounds"});
    tt::check_throws([&] { x.index({Tensor::from_vector<int64_t>({0, 1}), Tensor::from_vector<int64_t>({0, 1, 2})}); },
                     {"index", "cannot be broadcast", "[2]", "[3]"});
    tt::check_throws([&] { x.index({ops::gt(ops::zeros({4}), ops::Scalar(0))}); },
                     {"index", "shape of the mask [4] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0"});
    tt::check_throws([&] { x.index({Tensor::from_vector<float>({0})}); }, {"index", "long, int, byte or bool"});
    tt::check_throws([&] { x.index_put_({Tensor::from_vector<int64_t>({0, 1})}, ops::zeros({3, 4})); },
                     {"index_put_", "value tensor of shape [3, 4] cannot be broadcast to indexing result of shape [2, 4]"});
    Tensor leaf = tt::input({3}, 28);
    tt::check_throws([&] { leaf.index_put_({0}, 1.0); }, {"index_put_", "require grad", "tritium::index_put"});
    if (T::default_device().is_cuda() && T::runtime::device_available(T::Device::cpu())) {  // both present
      Tensor host_index = Tensor::from_vector<int64_t>({0}, {1}, T::Device::cpu());
      tt::check_throws([&] { T::index_select(x, 0, host_index); }, {"index_select", "different devices"});
      tt::check_throws([&] { x.index({host_index}); }, {"index", "indices are on cpu"});
    }
  });
}

// The CUDA code of the indexing kernels (a gather, atomic scatters, the CAS loop of prod, nonzero's three
// kernels) is generated and compiles with NVRTC for Hopper and Ampere. Compiled only: no GPU here.
BOOST_AUTO_TEST_CASE(cuda_code_compiles) {
  namespace cuda = tritium::jit::cuda;
  if (!cuda::nvrtc_available()) {
    BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << cuda::nvrtc_unavailable_reason());
    return;
  }
  auto compiles = [](tritium::Kernel& k, const auto&... args) {
    auto f = k.optimized_function(args...);
    tritium::jit::CompileOptions opts;
    opts.num_warps = 4;
    cuda::KernelSource ks = cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts, cuda::kSharedMemoryBudget);
    for (const char* arch : {"sm_90a", "sm_80"}) {
      std::vector<char> cubin;
      try {
        cubin = cuda::compile_to_cubin(ks.source, ks.entry, arch);
      } catch (const tritium::Error& e) {
        BOOST_ERROR("kernel " << ks.entry << " does not compile for " << arch << ":\n" << e.what());
      }
      BOOST_TEST(!cubin.empty(), ks.entry << " for " << arch);
    }
    return ks.source;
  };
  float* f = nullptr;
  int64_t* i = nullptr;
  bool* b = nullptr;
  const int64_t n = 1000, s = 7, one = 1, zero = 0;
  namespace d = tritium::ops::detail;
  // cols: index_copy's known column strides (0: none; 11: dst and src unit, one index per row).
  // check: 0 none, 1 in range, 2 negatives wrapped first (x[idx]); -1: 1 where there are indices.
  auto strides = [&](auto&& k, auto* dst, auto* src, int mode, int side, int ddt, int cols = 0, int check = -1) {
    return compiles(k, dst, src, i, i, s, one, n, s, s, one, one, one, one,  // indices, bad, rows, cols, outer sizes
                    s, zero, zero, zero, zero, one,                     // dst strides (outer, column)
                    zero, zero, zero, zero, zero, one,                  // src strides
                    one, zero, zero, zero, zero, zero,                  // index strides
                    2, mode, side, check >= 0 ? check : side != 0 ? 1 : 0, ddt, 16, 64, cols);
  };
  strides(d::index_copy_kernel(), f, f, 0, 1, static_cast<int>(DType::f32));
  strides(d::index_copy_kernel(), f, f, 0, 1, static_cast<int>(DType::f32), 11);
  strides(d::index_copy_kernel(), f, f, 1, 2, static_cast<int>(DType::f32), 11);
  strides(d::index_copy_kernel(), f, f, 0, 1, static_cast<int>(DType::f32), 11, 2);  // x[idx], negatives wrapped
  std::string add = strides(d::index_copy_kernel(), f, f, 1, 2, static_cast<int>(DType::f32));
  BOOST_TEST(add.find("atomicAdd") != std::string::npos);
  compiles(d::index_prod_kernel(), f, f, i, s, n, s, s, one, one, one, one, s, one, zero, zero, zero, zero, zero, one, zero,
           zero, zero, zero, one, zero, zero, zero, zero, zero, 2, static_cast<int>(DType::f32), 4);
  strides(d::index_copy_kernel(), f, i, 3, 2, static_cast<int>(DType::f32));  // converts i64 -> f32
  compiles(d::nonzero_count_kernel(), b, i, n, 1024);
  compiles(d::nonzero_scan_kernel(), i, i, i, n, 1024);
  compiles(d::nonzero_write_kernel(), f, i, i, i, n, 3, 1024);
}

BOOST_AUTO_TEST_SUITE_END()
