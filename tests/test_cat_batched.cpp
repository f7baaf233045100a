// cat / stack through the batched copy (ops/cat.cpp: up to 8 inputs a launch): more inputs than a
// launch takes, mixed sizes along dim, empty inputs, inputs that are strided but still [outer,
// inner] matrices (a slice, an expanded dim) and ones that are not (a transpose: the fallback
// copy), dims other than 0, promotion, and widths that are not multiples of the tile. Values are
// checked element by element against a host reference built from index arithmetic in float64.
// Every test runs on every backend.
#include "test_support.h"
#include "ops_test_helpers.h"

#include "ops/shape.h"
#include "runtime/views.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;
using Shape = std::vector<int64_t>;

namespace {

Tensor randf(const Shape& s, uint32_t seed) { return ou::random_tensor<float>(s, seed, -4, 4); }

// The output's block recycled from a NaN tensor of the same size where the allocator caches
// blocks, so an element the copy leaves unwritten shows as a NaN.
void poison_next(const Shape& s, DType dtype) {
  if (dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f64)
    (void)ops::full(s, std::nan(""), dtype);
}

// out == cat(parts, d), element by element, in float64 on the host.
void check_cat(const Tensor& out, const std::vector<Tensor>& parts, int d, const std::string& what) {
  BOOST_TEST_CONTEXT(what) {
    Shape want = parts[0].shape();
    want[static_cast<size_t>(d)] = 0;
    std::vector<std::vector<double>> pv;
    std::vector<int64_t> starts;
    for (const Tensor& p : parts) {
      starts.push_back(want[static_cast<size_t>(d)]);
      want[static_cast<size_t>(d)] += p.size(d);
      pv.push_back(ou::values(p));
    }
    BOOST_TEST_REQUIRE(out.shape() == want);
    std::vector<double> ov = ou::values(out), ref(ov.size());
    for (int64_t i = 0; i < static_cast<int64_t>(ov.size()); ++i) {
      Shape idx = ou::unravel(i, want);
      size_t k = parts.size() - 1;
      while (idx[static_cast<size_t>(d)] < starts[k]) --k;
      while (k + 1 < parts.size() && starts[k + 1] == starts[k] && idx[static_cast<size_t>(d)] >= starts[k + 1]) ++k;
      idx[static_cast<size_t>(d)] -= starts[k];
      int64_t flat = 0;
      for (size_t j = 0; j < idx.size(); ++j) flat = flat * parts[k].shape()[j] + idx[j];
      ref[static_cast<size_t>(i)] = pv[k][static_cast<size_t>(flat)];
    }
    BOOST_TEST(ov == ref, boost::test_tools::per_element());
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_cat_batched)

// 19 inputs (three launches: 8 + 8 + 3) of mixed widths along dim 0, two of them empty.
BOOST_AUTO_TEST_CASE(many_inputs_mixed_sizes) {
  tt::for_each_backend([](const tt::Backend&) {
    std::vector<Tensor> parts;
    int64_t rows = 0;
    for (int i = 0; i < 19; ++i) {
      int64_t len = i == 4 || i == 11 ? 0 : 1 + (i * 7) % 13;
      parts.push_back(randf({len, 37}, 100 + i));
      rows += len;
    }
    poison_next({rows, 37}, DType::f32);
    check_cat(ops::cat(parts, 0), parts, 0, "19 inputs along dim 0");
  });
}

// dim != 0: rows of the output interleave the inputs; widths above one tile (5000 columns) and
// below one (3), a middle dim.
BOOST_AUTO_TEST_CASE(inner_dims) {
  tt::for_each_backend([](const tt::Backend&) {
    std::vector<Tensor> wide{randf({3, 2500}, 1), randf({3, 5000}, 2), randf({3, 3}, 3)};
    poison_next({3, 7503}, DType::f32);
    check_cat(ops::cat(wide, 1), wide, 1, "dim 1, wide and narrow");
    std::vector<Tensor> mid{randf({5, 1, 3}, 4), randf({5, 4, 3}, 5), randf({5, 0, 3}, 6), randf({5, 2, 3}, 7)};
    check_cat(ops::cat(mid, -2), mid, 1, "dim -2 of 3-D");
    // More rows than a tile holds at a width of 3 (4096 / 4 = 1024 rows a program).
    std::vector<Tensor> tall{randf({2100, 3}, 8), randf({2100, 1}, 9)};
    check_cat(ops::cat(tall, 1), tall, 1, "2100 rows of 3 + 1 columns");
  });
}

// Strided inputs: a slice along dim 0 (rows of stride 10 for a cat along dim 1), an expanded
// (stride-0) outer dim, and a transpose (not an [outer, inner] matrix: the fallback copy), in one
// list with contiguous ones.
BOOST_AUTO_TEST_CASE(strided_inputs) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor base = randf({6, 10}, 11);
    Tensor sliced = tritium::runtime::slice_of(base, 1, 2, 7, 1);               // [6, 5], row stride 10
    Tensor expanded = tritium::runtime::expand_of(randf({1, 4}, 12), {6, 4});   // [6, 4], row stride 0
    Tensor trans = tritium::runtime::transpose_of(randf({3, 6}, 13), 0, 1);     // [6, 3], not dense
    std::vector<Tensor> parts{randf({6, 2}, 14), sliced, expanded, trans, randf({6, 9}, 15)};
    check_cat(ops::cat(parts, 1), parts, 1, "strided inputs along dim 1");
    std::vector<Tensor> rows{trans, randf({2, 3}, 16), tritium::runtime::slice_of(randf({9, 3}, 17), 0, 1, 9, 2)};
    check_cat(ops::cat(rows, 0), rows, 0, "strided inputs along dim 0");
  });
}

// Promotion: bf16 and f32 parts give f32; integers give the widest integer type; bool alone stays bool.
BOOST_AUTO_TEST_CASE(dtypes) {
  tt::for_each_backend([](const tt::Backend&) {
    std::vector<Tensor> mixed{ops::to_dtype(randf({4, 33}, 21), DType::bf16), randf({2, 33}, 22)};
    Tensor m = ops::cat(mixed, 0);
    BOOST_TEST((m.dtype() == DType::f32));
    check_cat(m, mixed, 0, "bf16 + f32");
    std::vector<Tensor> bf{ops::to_dtype(randf({7, 5}, 23), DType::bf16), ops::to_dtype(randf({7, 6}, 24), DType::bf16)};
    Tensor b = ops::cat(bf, 1);
    BOOST_TEST((b.dtype() == DType::bf16));
    check_cat(b, bf, 1, "bf16 along dim 1");
    std::vector<Tensor> ints{ou::random_tensor<int32_t>({3, 4}, 25, -100, 100),
                             ou::random_tensor<int64_t>({3, 2}, 26, -100, 100)};
    Tensor i = ops::cat(ints, 1);
    BOOST_TEST((i.dtype() == DType::i64));
    check_cat(i, ints, 1, "i32 + i64");
    std::vector<Tensor> bools{ou::random_tensor<bool>({5}, 27), ou::random_tensor<bool>({9}, 28)};
    Tensor bl = ops::cat(bools, 0);
    BOOST_TEST((bl.dtype() == DType::i1));
    check_cat(bl, bools, 0, "bool");
  });
}

// stack of 11 inputs (two launches) along the first, a middle and the new last dim.
BOOST_AUTO_TEST_CASE(stack_many) {
  tt::for_each_backend([](const tt::Backend&) {
    std::vector<Tensor> parts, unsq0, unsq1, unsq2;
    for (int i = 0; i < 11; ++i) {
      parts.push_back(randf({3, 5}, 40 + i));
      unsq0.push_back(tritium::runtime::unsqueeze_of(parts.back(), 0));
      unsq1.push_back(tritium::runtime::unsqueeze_of(parts.back(), 1));
      unsq2.push_back(tritium::runtime::unsqueeze_of(parts.back(), 2));
    }
    check_cat(ops::stack(parts, 0), unsq0, 0, "stack dim 0");
    check_cat(ops::stack(parts, 1), unsq1, 1, "stack dim 1");
    check_cat(ops::stack(parts, -1), unsq2, 2, "stack dim -1");
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([](const tt::Backend&) {
    tt::check_throws([] { ops::cat({randf({2, 3}, 1), randf({2, 4}, 2)}, 0); }, {"sizes of tensors must match"});
    tt::check_throws([] { ops::cat({randf({2, 3}, 1), randf({3}, 2)}, 0); }, {"same number of dimensions"});
    tt::check_throws([] { ops::cat({randf({2, 3}, 1)}, 2); }, {"cat"});
    tt::check_throws([] { ops::stack({randf({2, 3}, 1), randf({3, 2}, 2)}, 0); }, {"equal size"});
    tt::check_throws([] { ops::cat(std::vector<Tensor>{}, 0); }, {"non-empty"});
  });
}

BOOST_AUTO_TEST_SUITE_END()
