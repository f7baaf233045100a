// The shape ops of the tensor API (ops/shape.h, nn/tensor_ops.h): values against host references
// computed from index maps on random inputs (strided inputs, negative dims, empty tensors), views
// that share the input's storage (a write through the input is seen by the view), gradients of the
// multi-part splits (the single ops are gradchecked by test_op_registry), and a clear error for
// each bad argument. Every test runs on every backend.
#include "test_support.h"
#include "gradcheck_support.h"
#include "ops_test_helpers.h"

#include <functional>

#include "nn/functional.h"
#include "ops/shape.h"
#include "runtime/views.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace T = tritium;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;
using Shape = std::vector<int64_t>;

namespace {

// out[i] = x[map(i)] for every multi-index i of out (map returns x's multi-index, or an empty
// vector for a zero).
using IndexMap = std::function<Shape(const Shape&)>;
void check_mapped(const Tensor& out, const Tensor& x, const Shape& out_shape, const IndexMap& map,
                  const std::string& what) {
  BOOST_TEST_CONTEXT(what) {
    BOOST_TEST_REQUIRE(out.shape() == out_shape);
    std::vector<double> xv = ou::values(x), ov = ou::values(out);
    std::vector<double> ref(ov.size());
    for (int64_t i = 0; i < ou::numel(out_shape); ++i) {
      Shape src = map(ou::unravel(i, out_shape));
      if (src.empty() && x.dim() > 0) {
        ref[static_cast<size_t>(i)] = 0;
        continue;
      }
      int64_t flat = 0;
      for (size_t d = 0; d < src.size(); ++d) flat = flat * x.shape()[d] + src[d];
      ref[static_cast<size_t>(i)] = xv[static_cast<size_t>(flat)];
    }
    BOOST_TEST(ov == ref, boost::test_tools::per_element());
  }
}

Tensor randf(const Shape& s, uint32_t seed) { return ou::random_tensor<float>(s, seed); }
// A non-contiguous tensor of shape s: the last two dims stored transposed.
Tensor transposed(Shape s, uint32_t seed) {
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  return tritium::runtime::transpose_of(randf(s, seed), -1, -2);
}
bool shares(const Tensor& a, const Tensor& b) { return a.storage() == b.storage(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_tensor_shape)

BOOST_AUTO_TEST_CASE(flatten_unflatten_ravel) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = randf({2, 3, 5}, 1);
    Tensor f = T::flatten(x, 1, -1);
    BOOST_TEST(shares(f, x));  // contiguous: a view
    check_mapped(f, x, {2, 15}, [](const Shape& i) { return Shape{i[0], i[1] / 5, i[1] % 5}; }, "flatten 1..-1");
    Tensor xt = transposed({3, 4}, 2);
    Tensor r = T::ravel(xt);  // strided: a copy in row-major order
    BOOST_TEST(!shares(r, xt));
    check_mapped(r, xt, {12}, [](const Shape& i) { return Shape{i[0] / 4, i[0] % 4}; }, "ravel of a transpose");
    Tensor u = T::unflatten(xt, -1, {2, -1});
    BOOST_TEST(shares(u, xt));  // splitting a dim is always a view
    check_mapped(u, xt, {3, 2, 2}, [](const Shape& i) { return Shape{i[0], i[1] * 2 + i[2]}; }, "unflatten");
    BOOST_TEST(T::flatten(ops::zeros({}, DType::f32)).shape() == Shape{1});
    BOOST_TEST(T::flatten(ops::zeros({2, 0, 3}, DType::f32)).shape() == Shape{0});
  });
}

BOOST_AUTO_TEST_CASE(narrow_unfold_movedim_diagonal_are_views) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = transposed({4, 7}, 3);
    Tensor n = T::narrow(x, -1, -5, 3);
    BOOST_TEST(shares(n, x));
    check_mapped(n, x, {4, 3}, [](const Shape& i) { return Shape{i[0], i[1] + 2}; }, "narrow");
    BOOST_TEST(T::narrow(x, 0, 4, 0).shape() == Shape({0, 7}));

    Tensor w = T::unfold(x, 1, 3, 2);  // windows 0-2, 2-4, 4-6 (overlapping)
    BOOST_TEST(shares(w, x));
    check_mapped(w, x, {4, 3, 3}, [](const Shape& i) { return Shape{i[0], i[1] * 2 + i[2]}; }, "unfold");
    check_mapped(T::unfold(x, 0, 1, 3), x, {2, 7, 1}, [](const Shape& i) { return Shape{i[0] * 3, i[1]}; },
                 "unfold with gaps");

    Tensor y = randf({2, 3, 4, 5}, 4);
    Tensor m = T::movedim(y, {0, -1}, {-1, 1});  // dims: 1 -> 0, 3 -> 1, 2 -> 2, 0 -> 3
    BOOST_TEST(shares(m, y));
    check_mapped(m, y, {3, 5, 4, 2}, [](const Shape& i) { return Shape{i[3], i[0], i[2], i[1]}; }, "movedim");

    Tensor d = T::diagonal(y, 1, -1, 1);  // planes (dim 3, dim 1), offset 1 along dim 1
    BOOST_TEST(shares(d, y));
    check_mapped(d, y, {2, 4, 2}, [](const Shape& i) { return Shape{i[0], i[2] + 1, i[1], i[2]}; }, "diagonal +1");
    Tensor sq = transposed({4, 3}, 5);
    check_mapped(T::diagonal(sq, -2), sq, {2}, [](const Shape& i) { return Shape{i[0] + 2, i[0]}; }, "diagonal -2");
    BOOST_TEST(T::diagonal(sq, 5).shape() == Shape{0});

    // Writes through the input show in the views (they are the same memory).
    Tensor base = ou::random_tensor<float>({3, 3}, 6);
    Tensor diag = T::diagonal(base);
    ops::fill_(base, 2.5);
    BOOST_TEST(ou::values(diag) == std::vector<double>({2.5, 2.5, 2.5}));
  });
}

BOOST_AUTO_TEST_CASE(split_chunk_tensor_split_unbind) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = transposed({3, 7}, 7);
    auto sizes = [](const std::vector<Tensor>& parts, int d) {
      Shape s;
      for (const Tensor& p : parts) s.push_back(p.shape()[static_cast<size_t>(d)]);
      return s;
    };
    BOOST_TEST(sizes(T::split(x, 3, -1), 1) == Shape({3, 3, 1}));
    BOOST_TEST(sizes(T::split(x, Shape{2, 0, 5}, 1), 1) == Shape({2, 0, 5}));
    BOOST_TEST(sizes(T::chunk(x, 3, 1), 1) == Shape({3, 3, 1}));
    BOOST_TEST(sizes(T::chunk(x, 4, 1), 1) == Shape({2, 2, 2, 1}));
    BOOST_TEST(sizes(T::chunk(ops::zeros({0, 2}), 3, 0), 0) == Shape({0, 0, 0}));
    BOOST_TEST(sizes(T::tensor_split(x, 3, 1), 1) == Shape({3, 2, 2}));
    BOOST_TEST(sizes(T::tensor_split(x, Shape{1, -2, 3}, 1), 1) == Shape({1, 4, 0, 4}));
    std::vector<Tensor> parts = T::split(x, 3, -1);
    for (size_t k = 0; k < parts.size(); ++k) {
      BOOST_TEST(shares(parts[k], x));
      int64_t start = static_cast<int64_t>(k) * 3;
      check_mapped(parts[k], x, parts[k].shape(), [start](const Shape& i) { return Shape{i[0], i[1] + start}; },
                   "split part " + std::to_string(k));
    }
    std::vector<Tensor> rows = T::unbind(x, -1);
    BOOST_TEST(rows.size() == 7u);
    check_mapped(rows[4], x, {3}, [](const Shape& i) { return Shape{i[0], 4}; }, "unbind");
  });
}

BOOST_AUTO_TEST_CASE(cat_and_stack) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor a = randf({3, 2}, 8), b = transposed({3, 4}, 9), c = randf({3, 1}, 10);
    Tensor out = T::cat({a, b, c}, -1);
    BOOST_TEST_REQUIRE(out.shape() == Shape({3, 7}));
    std::vector<double> av = ou::values(a), bv = ou::values(b), cv = ou::values(c), ov = ou::values(out);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 7; ++j) {
        double ref = j < 2 ? av[i * 2 + j] : j < 6 ? bv[i * 4 + j - 2] : cv[i];
        BOOST_TEST(ov[i * 7 + j] == ref);
      }
    // Promotion (i32 with f32 gives f32), legacy [0] tensors skipped, empty parts.
    Tensor ints = ou::random_tensor<int32_t>({1, 2}, 11, -50, 50);
    Tensor mixed = T::cat({ints, ops::zeros({0}, DType::f64), randf({2, 2}, 12), ops::zeros({0, 2})}, 0);
    BOOST_TEST((mixed.dtype() == DType::f64));
    BOOST_TEST(mixed.shape() == Shape({3, 2}));
    BOOST_TEST(ou::values(mixed)[1] == ou::values(ints)[1]);

    Tensor s = T::stack({a, transposed({3, 2}, 13)}, -2);
    BOOST_TEST_REQUIRE(s.shape() == Shape({3, 2, 2}));
    check_mapped(T::narrow(s, 1, 0, 1), a, {3, 1, 2}, [](const Shape& i) { return Shape{i[0], i[2]}; }, "stack");
  });
}

BOOST_AUTO_TEST_CASE(repeat_flip_roll) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = transposed({2, 3}, 14);
    check_mapped(T::repeat(x, {2, 3, 2}), x, {2, 6, 6}, [](const Shape& i) { return Shape{i[1] % 2, i[2] % 3}; },
                 "repeat");
    BOOST_TEST(T::repeat(x, {0, 2}).shape() == Shape({0, 6}));
    check_mapped(T::flip(x, {0, -1}), x, {2, 3}, [](const Shape& i) { return Shape{1 - i[0], 2 - i[1]}; }, "flip");
    Tensor y = randf({3, 5}, 15);
    check_mapped(T::roll(y, {1, -7}, {0, 1}), y, {3, 5},
                 [](const Shape& i) { return Shape{(i[0] + 2) % 3, (i[1] + 7) % 5}; }, "roll two dims");
    check_mapped(T::roll(y, {4}), y, {3, 5},
                 [](const Shape& i) {
                   int64_t f = ((i[0] * 5 + i[1]) - 4 + 15) % 15;
                   return Shape{f / 5, f % 5};
                 },
                 "roll flattened");
    BOOST_TEST(T::flip(ops::zeros({0, 3}), {1}).shape() == Shape({0, 3}));
    // A transposed input, a shift past the size, a shift of a whole size (no move), a negative one.
    check_mapped(T::roll(x, {5, 3}, {1, 0}), x, {2, 3}, [](const Shape& i) { return Shape{(i[0] + 1) % 2, (i[1] + 1) % 3}; },
                 "roll a transposed view");
    Tensor wide = randf({4, 37}, 19);
    check_mapped(T::roll(wide, {-40}, {1}), wide, {4, 37}, [](const Shape& i) { return Shape{i[0], (i[1] + 3) % 37}; },
                 "roll by a negative shift past the size");
  });
}

BOOST_AUTO_TEST_CASE(tril_triu) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = transposed({2, 4, 5}, 16);
    for (int64_t k : {-1, 0, 2}) {
      check_mapped(T::tril(x, k), x, {2, 4, 5},
                   [k](const Shape& i) { return i[2] - i[1] <= k ? i : Shape{}; }, "tril " + std::to_string(k));
      check_mapped(T::triu(x, k), x, {2, 4, 5},
                   [k](const Shape& i) { return i[2] - i[1] >= k ? i : Shape{}; }, "triu " + std::to_string(k));
    }
    Tensor ints = ou::random_tensor<int64_t>({3, 3}, 17, 1, 9);
    BOOST_TEST((T::tril(ints).dtype() == DType::i64));
    BOOST_TEST(ou::values(T::tril(ints))[1] == 0);
    // Rows wider than one column block (1500 columns), diagonals past either corner, and bool.
    Tensor wide = randf({2, 3, 1500}, 18);
    for (int64_t k : {int64_t{-2000}, int64_t{-1}, int64_t{700}, int64_t{1498}, int64_t{5000}}) {
      check_mapped(T::tril(wide, k), wide, {2, 3, 1500},
                   [k](const Shape& i) { return i[2] - i[1] <= k ? i : Shape{}; }, "wide tril " + std::to_string(k));
      check_mapped(T::triu(wide, k), wide, {2, 3, 1500},
                   [k](const Shape& i) { return i[2] - i[1] >= k ? i : Shape{}; }, "wide triu " + std::to_string(k));
    }
    Tensor flags = ops::ge(randf({4, 6}, 19), ops::zeros({}));
    Tensor upper = T::triu(flags, 1);
    BOOST_TEST((upper.dtype() == DType::i1));
    auto fv = ou::values(flags), uv = ou::values(upper);
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 6; ++c) BOOST_TEST(uv[size_t(r * 6 + c)] == (c - r >= 1 ? fv[size_t(r * 6 + c)] : 0.0));
    BOOST_TEST(T::tril(ops::zeros({2, 0, 3})).shape() == Shape({2, 0, 3}));
  });
}

// The parts of split / chunk / unbind each carry their own history; gradients of all parts add up.
BOOST_AUTO_TEST_CASE(gradients_through_the_parts) {
  tt::for_each_backend([](const tt::Backend&) {
    tt::gradcheck("split then cat in another order", [](const tt::GradInputs& in) {
      std::vector<Tensor> p = T::split(in[0], 2, -1);
      return T::cat({T::mul(p[2], p[0]), p[1]}, 0);
    }, {tt::input({3, 6}, 18)});
    tt::gradcheck("chunk and unbind", [](const tt::GradInputs& in) {
      std::vector<Tensor> c = T::chunk(in[0], 2, 0);
      std::vector<Tensor> u = T::unbind(c[1], 1);
      return T::cat({T::add(u[0], u[2]), T::flatten(c[0])}, 0);
    }, {tt::input({4, 3}, 19)});
  });
}

BOOST_AUTO_TEST_CASE(bad_arguments) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = randf({3, 4}, 20);
    tt::check_throws([&] { T::flatten(x, 1, 0); }, {"flatten", "start_dim 1 comes after end_dim 0"});
    tt::check_throws([&] { T::flatten(x, 2); }, {"flatten", "dimension 2 is out of range"});
    tt::check_throws([&] { T::unflatten(x, 1, {3, -1}); }, {"unflatten", "don't multiply up", "(4)"});
    tt::check_throws([&] { T::narrow(x, 1, 2, 3); }, {"narrow", "start (2) + length (3) exceeds dimension size (4)"});
    tt::check_throws([&] { T::narrow(x, -3, 0, 1); }, {"narrow", "dimension -3 is out of range"});
    tt::check_throws([&] { T::unfold(x, 1, 5, 1); }, {"unfold", "maximum size for tensor at dimension 1 is 4 but size is 5"});
    tt::check_throws([&] { T::unfold(x, 1, 2, 0); }, {"unfold", "step is 0"});
    tt::check_throws([&] { T::movedim(x, {0, 1}, {1}); }, {"movedim", "same number of dims"});
    tt::check_throws([&] { T::movedim(x, {0, -2}, {0, 1}); }, {"movedim", "dim 0 appears multiple times"});
    tt::check_throws([&] { T::diagonal(x, 0, 1, -1); }, {"diagonal", "cannot be identical 1, -1"});
    tt::check_throws([&] { T::diagonal(ops::zeros({3})); }, {"diagonal", "at least 2 dims"});
    tt::check_throws([&] { T::split(x, -1, 0); }, {"split", "non-negative"});
    tt::check_throws([&] { T::split(x, Shape{1, 1}, 0); }, {"split", "sum to 2", "size 3"});
    tt::check_throws([&] { T::chunk(x, 0, 0); }, {"chunk", "greater than 0"});
    tt::check_throws([&] { T::unbind(x, 2); }, {"unbind", "out of range"});
    tt::check_throws([&] { T::cat({}, 0); }, {"cat", "non-empty list"});
    tt::check_throws([&] { T::cat({x, randf({3, 5}, 21)}, 0); },
                     {"cat", "Expected size 4 but got size 5 for tensor number 1"});
    tt::check_throws([&] { T::cat({x, randf({3}, 22)}, 0); }, {"cat", "same number of dimensions: got 2 and 1"});
    tt::check_throws([&] { T::cat({x, x}, 2); }, {"cat", "dimension 2 is out of range"});
    tt::check_throws([&] { T::cat({ops::zeros({})}, 0); }, {"cat", "zero-dimensional"});
    tt::check_throws([&] { T::stack({x, randf({4, 3}, 23)}, 0); }, {"stack", "equal size", "[3, 4] at entry 0", "[4, 3] at entry 1"});
    tt::check_throws([&] { T::stack({x}, 3); }, {"stack", "out of range"});
    tt::check_throws([&] { T::repeat(x, {2}); }, {"repeat", "can not be smaller"});
    tt::check_throws([&] { T::repeat(x, {2, -1}); }, {"repeat", "negative"});
    tt::check_throws([&] { T::flip(x, {1, -1}); }, {"flip", "dim 1 appears multiple times"});
    tt::check_throws([&] { T::roll(x, {1, 2}, {0}); }, {"roll", "must align"});
    tt::check_throws([&] { T::tril(ops::zeros({3})); }, {"tril", "at least 2 dimensions"});
    tt::check_throws([&] { T::broadcast_to(x, {2, 4}); }, {"expand"});
    // Mismatched devices are refused by cat (when a second device exists).
    if (T::default_device().is_cuda() && T::runtime::device_available(T::Device::cpu())) {  // both present
      Tensor host = ops::zeros({3, 4}, DType::f32, T::Device::cpu());
      tt::check_throws([&] { T::cat({x, host}, 0); }, {"cat", "different devices"});
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
