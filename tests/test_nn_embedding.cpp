// embedding on every backend: rows against a float64 host gather, the weight gradient against a
// host scatter (repeated indices, padding_idx's row left zero), i32 and i64 indices of several
// shapes, a strided weight, f32/f64/f16; autograd; nn::Embedding (initialisation as PyTorch's,
// padding row zeroed, from_pretrained, repr); the errors (an index out of range found on the device).
#include <cmath>

#include "nn/autograd.h"
#include "nn/embedding.h"
#include "nn/functional.h"
#include "ops/embedding.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

namespace {

using Vec = std::vector<double>;

Tensor random_indices(const ou::Shape& shape, int64_t num, uint32_t seed, DType dtype) {
  Tensor i = ou::random_tensor<int64_t>(shape, seed, 0, static_cast<double>(num - 1));
  return dtype == DType::i64 ? i : ops::to_dtype(i, dtype);
}

Vec gather_ref(const Vec& w, int64_t D, const Vec& idx) {
  Vec out;
  for (double i : idx)
    for (int64_t d = 0; d < D; ++d) out.push_back(w[static_cast<size_t>(static_cast<int64_t>(i) * D + d)]);
  return out;
}

Vec scatter_ref(const Vec& g, int64_t num, int64_t D, const Vec& idx, int64_t padding_idx) {
  Vec dw(static_cast<size_t>(num * D), 0.0);
  for (size_t t = 0; t < idx.size(); ++t) {
    int64_t row = static_cast<int64_t>(idx[t]);
    if (row == padding_idx) continue;
    for (int64_t d = 0; d < D; ++d) dw[static_cast<size_t>(row * D + d)] += g[t * static_cast<size_t>(D) + static_cast<size_t>(d)];
  }
  return dw;
}

template <class T> void check_case(int64_t num, int64_t D, const ou::Shape& ishape, DType idtype, int64_t padding_idx,
                                   bool strided_weight, double tol, uint32_t seed) {
  std::string what = fmt::format("{} [{}, {}] indices {} {} padding {} strided {}", tritium::dtype_name(tritium::dtype_of<T>()),
                                 num, D, ou::numel(ishape), tritium::dtype_name(idtype), padding_idx, strided_weight);
  Tensor w = strided_weight ? ou::random_tensor<T>({D, num}, seed).t() : ou::random_tensor<T>({num, D}, seed);
  Tensor idx = random_indices(ishape, num, seed + 1, idtype);
  Vec iv = ou::values(idx);
  Tensor y = ops::embedding(w, idx);
  ou::Shape want = ishape;
  want.push_back(D);
  BOOST_TEST((y.shape() == want), what);
  BOOST_TEST((y.dtype() == w.dtype()), what);
  ou::check_values(y, gather_ref(ou::values(w), D, iv), 0, what + " rows");
  Tensor g = ou::random_tensor<T>(want, seed + 2);
  Tensor dw = ops::embedding_backward(g, idx, num, padding_idx);
  BOOST_TEST((dw.shape() == ou::Shape{num, D}), what);
  BOOST_TEST((dw.dtype() == w.dtype()), what);
  ou::check_values(dw, scatter_ref(ou::values(g), num, D, iv, padding_idx), tol, what + " dweight");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_embedding)

BOOST_AUTO_TEST_CASE(rows_and_gradients) {
  tt::for_each_backend([&](const tt::Backend&) {
    check_case<float>(37, 19, {3, 5, 7}, DType::i64, -1, false, 1e-6, 1);
    check_case<float>(37, 19, {3, 5, 7}, DType::i64, 4, false, 1e-6, 2);     // padding row
    check_case<float>(11, 300, {45}, DType::i32, 0, true, 1e-6, 3);          // strided weight, wide rows, i32
    check_case<float>(5, 3, {200}, DType::i64, -1, false, 1e-6, 4);          // many repeats per row
    check_case<double>(23, 9, {2, 13}, DType::i32, 22, false, 1e-14, 5);
    check_case<tritium::f16_t>(17, 33, {4, 9}, DType::i64, 3, false, 2e-3, 6);
    check_case<float>(7, 5, {0}, DType::i64, -1, false, 0, 7);               // no tokens: a zero gradient
    // A 0-dim index gives one row of shape [D].
    Tensor w = ou::random_tensor<float>({6, 4}, 8);
    Tensor y = ops::embedding(w, Tensor::from_vector(std::vector<int64_t>{5}, {}));
    BOOST_TEST((y.shape() == ou::Shape{4}));
    ou::check_values(y, gather_ref(ou::values(w), 4, {5}), 0, "0-dim index");
  });
}

BOOST_AUTO_TEST_CASE(autograd_and_padding_idx) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor w = ou::random_tensor<double>({9, 6}, 20).requires_grad_(true);
    Tensor idx = Tensor::from_vector(std::vector<int64_t>{1, 8, 2, 2, 0, 8, 7, 2}, {2, 4});
    Tensor y = tritium::embedding(idx, w, -1);  // padding_idx -1 is row 8
    Tensor dy = ou::random_tensor<double>({2, 4, 6}, 21);
    y.backward(dy);
    ou::check_values(y, gather_ref(ou::values(w), 6, ou::values(idx)), 0, "rows");
    Vec dw = scatter_ref(ou::values(dy), 9, 6, ou::values(idx), 8);
    ou::check_values(w.grad(), dw, 1e-14, "w.grad");
    Vec g = ou::values(w.grad());
    for (int d = 0; d < 6; ++d) BOOST_TEST(g[static_cast<size_t>(8 * 6 + d)] == 0.0);
    BOOST_TEST(!idx.requires_grad());
  });
}

BOOST_AUTO_TEST_CASE(module) {
  tt::for_each_backend([&](const tt::Backend& be) {
    namespace nn = tritium::nn;
    tritium::ops::Generator gen(123);
    nn::Embedding e(1000, 16, 2, gen);
    BOOST_TEST(e.str() == "Embedding(1000, 16, padding_idx=2)");
    BOOST_TEST(nn::Embedding(10, 3).str() == "Embedding(10, 3)");
    BOOST_TEST(nn::Embedding(10, 3, -1).str() == "Embedding(10, 3, padding_idx=9)");
    auto named = e.named_parameters();
    BOOST_TEST_REQUIRE(named.size() == 1u);
    BOOST_TEST(named[0].first == "weight");
    BOOST_TEST((e.weight.shape() == ou::Shape{1000, 16}));
    BOOST_TEST((e.weight.device() == be.device));
    BOOST_TEST(e.weight.requires_grad());
    // N(0, 1) (PyTorch's init.normal_), the padding row zero.
    Vec v = ou::values(e.weight);
    double mean = 0, sq = 0;
    for (double x : v) mean += x, sq += x * x;
    mean /= static_cast<double>(v.size());
    double var = sq / static_cast<double>(v.size()) - mean * mean;
    BOOST_TEST(std::abs(mean) < 0.05, "mean " << mean);
    BOOST_TEST(std::abs(var - 1) < 0.05, "variance " << var);
    for (int d = 0; d < 16; ++d) BOOST_TEST(v[static_cast<size_t>(2 * 16 + d)] == 0.0);
    // forward is the function with the module's weight and padding_idx.
    Tensor idx = Tensor::from_vector(std::vector<int32_t>{2, 999, 0}, {3});
    Tensor y = e(idx);
    ou::check_values(y, gather_ref(v, 16, {2, 999, 0}), 0, "forward");
    tritium::sum(y).backward();
    Vec g = ou::values(e.weight.grad());
    BOOST_TEST(g[2 * 16] == 0.0);      // the padding row gets no gradient
    BOOST_TEST(g[999 * 16] == 1.0);
    // from_pretrained: the given rows; frozen by default.
    Tensor pre = ou::random_tensor<float>({4, 3}, 30);
    auto frozen = nn::Embedding::from_pretrained(pre);
    BOOST_TEST(!frozen->weight.requires_grad());
    BOOST_TEST(frozen->str() == "Embedding(4, 3)");
    ou::check_values(frozen->weight, ou::values(pre), 0, "pretrained weight");
    auto trained = nn::Embedding::from_pretrained(pre, false, 1);
    BOOST_TEST(trained->weight.requires_grad());
    BOOST_TEST(*trained->padding_idx == 1);
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor w = ou::random_tensor<float>({10, 3}, 40);
    tt::check_throws([&] { ou::values(ops::embedding(w, Tensor::from_vector(std::vector<int64_t>{0, 3, 10, 2}, {2, 2}))); },
                     {"embedding", "index out of range in self", "indices[2] = 10", "[0, 10)"}, "index too large");
    tt::check_throws([&] { ou::values(ops::embedding(w, Tensor::from_vector(std::vector<int32_t>{0, -1}, {2}))); },
                     {"index out of range in self", "indices[1] = -1"}, "negative index");
    // The first bad position is named, however many programs see bad indices.
    std::vector<int64_t> many(5000, 1);
    many[3001] = 12, many[4999] = -3;
    tt::check_throws([&] { ou::values(ops::embedding(w, Tensor::from_vector(many, {5000}))); }, {"indices[3001] = 12"}, "first bad");
    tt::check_throws([&] { ops::embedding(ou::random_tensor<float>({10}, 41), Tensor::from_vector(std::vector<int64_t>{0}, {1})); },
                     {"embedding", "2-D", "[10]"}, "weight rank");
    tt::check_throws([&] { ops::embedding(w, ou::random_tensor<float>({2}, 42)); },
                     {"embedding", "Long, Int", "f32"}, "float indices");
    tt::check_throws([&] { tritium::embedding(Tensor::from_vector(std::vector<int64_t>{0}, {1}), w, 10); },
                     {"Padding_idx must be within num_embeddings"}, "padding_idx");
    tt::check_throws([&] { tritium::embedding(Tensor::from_vector(std::vector<int64_t>{0}, {1}), w, std::nullopt, 1.0); },
                     {"max_norm is not supported"}, "max_norm");
    tt::check_throws([&] { tritium::nn::Embedding(5, 2, -6); }, {"Padding_idx must be within num_embeddings"}, "module padding");
    tt::check_throws([&] { tritium::nn::Embedding::from_pretrained(ou::random_tensor<float>({3}, 43)); },
                     {"Embeddings parameter is expected to be 2-dimensional"}, "pretrained rank");
    tt::check_throws([&] { ops::embedding_backward(ou::random_tensor<float>({3, 4}, 44),
                                                   Tensor::from_vector(std::vector<int64_t>{0, 1}, {2}), 5, -1); },
                     {"embedding_backward", "[3, 4]", "[2]"}, "grad shape");
  });
}

BOOST_AUTO_TEST_SUITE_END()
