// torch.einsum (nn/einsum.cpp, ops/einsum_equation.cpp) against a host float64 einsum written
// independently (tests/einsum_reference.h): explicit and implicit outputs, diagonals and traces,
// sums over subscripts that appear once, ellipsis broadcasting, size-1 broadcasting, outer
// products, one to five operands (the greedy contraction order), strided operands, zero-size
// dims, each float dtype; gradients through the lowering; and an error naming the problem (with
// the position of a bad character) for each bad equation.
#include "test_support.h"
#include "einsum_reference.h"
#include "gradcheck_support.h"
#include "ops_test_helpers.h"

#include <cmath>

#include "nn/functional.h"
#include "ops/einsum_equation.h"
#include "runtime/views.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace T = tritium;
using tritium::bf16_t;
using tritium::DType;
using tritium::f16_t;
using tritium::Tensor;
using Shape = std::vector<int64_t>;

namespace {

struct Case {
  std::string equation;
  std::vector<Shape> shapes;
};

// Equations over odd sizes (1, 3, 17, 33 and small ones around them).
const std::vector<Case>& cases() {
  static const std::vector<Case> list = {
      {"ij,jk->ik", {{3, 17}, {17, 5}}},                   // matmul
      {"ij,jk", {{17, 3}, {3, 33}}},                       // implicit output
      {"ij->ji", {{3, 17}}},                               // transpose
      {"ii->i", {{17, 17}}},                               // diagonal
      {"ii", {{5, 5}}},                                    // trace
      {"ij->i", {{3, 17}}},                                // row sums
      {"ij->", {{3, 5}}},                                  // total
      {"i,i->", {{33}, {33}}},                             // dot
      {"i,j->ij", {{3}, {5}}},                             // outer
      {"i,j", {{3}, {1}}},                                 // outer, implicit
      {"bij,bjk->bik", {{3, 2, 17}, {3, 17, 4}}},          // batched matmul
      {"bij,bjk->bik", {{1, 2, 3}, {4, 3, 5}}},            // size-1 batch broadcasts
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}},   // ellipsis broadcasting
      {"...ij,...jk", {{3, 4}, {2, 4, 5}}},                // ellipsis, implicit
      {"...ii->...i", {{2, 3, 3}}},                        // batched diagonal
      {"i...->...", {{3, 2, 4}}},                          // sum of the leading dim
      {"...ij->ij", {{2, 3, 4}}},                          // the ellipsis summed away
      {"a...b,...", {{2, 3, 4}, {3}}},                     // implicit with an ellipsis
      {"iij->j", {{3, 3, 4}}},                             // diagonal then sum
      {"iji->ij", {{3, 4, 3}}},                            // diagonal in the middle
      {"ij,ij->ij", {{3, 5}, {3, 5}}},                     // elementwise
      {"ij,ij->", {{3, 5}, {1, 5}}},                       // size-1 broadcast in a summed subscript
      {"ij,jk->ik", {{3, 1}, {4, 5}}},                     // size-1 contracted dim
      {"bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},      // bilinear, three operands
      {"ij,jk,kl->il", {{33, 2}, {2, 17}, {17, 3}}},       // chain: the greedy order avoids 33x17
      {"ab,cd,bc->ad", {{3, 4}, {5, 2}, {4, 5}}},          // the outer pair is contracted last
      {"i,i,i->", {{17}, {17}, {17}}},                     // three-way dot
      {"ijk,jl,lm,km->i", {{2, 3, 4}, {3, 2}, {2, 5}, {4, 5}}},  // four operands with a cycle
      {"a,b,c,d,e->abcde", {{2}, {1}, {3}, {2}, {2}}},     // five operands, outer products
      {"Ba,ab", {{2, 3}, {3, 4}}},                         // upper case first in an implicit output
      {"ij,kj->ik", {{3, 0}, {4, 0}}},                     // contracted dim of 0: zeros
      {"ij,jk->ik", {{0, 3}, {3, 2}}},                     // empty output
      {" i j , j k -> k i ", {{2, 3}, {3, 4}}},            // spaces
      {"->", {{}}},                                        // a 0-dim operand
      {",ij->ij", {{}, {2, 3}}},                           // a 0-dim operand scales
      {"ijkl->ljki", {{2, 1, 3, 2}}},                      // a permute (a view)
      {"bhqd,bhkd->bhqk", {{2, 3, 5, 4}, {2, 3, 7, 4}}},   // attention scores
  };
  return list;
}

tt::HostTensor host(const Tensor& t) { return {t.shape(), ou::values(t)}; }

void check(const Tensor& out, const tt::EinsumReference& ref, double tol, const std::string& what) {
  BOOST_TEST_CONTEXT(what) {
    BOOST_TEST_REQUIRE((out.shape() == ref.shape), "rank " << out.dim() << ", expected rank " << ref.shape.size());
    auto v = ou::values(out);
    size_t bad = 0;
    for (size_t i = 0; i < v.size(); ++i)
      if (!(std::abs(v[i] - ref.values[i]) <= tol * ref.magnitudes[i] + 1e-300))
        if (bad++ < 3) BOOST_ERROR("element " << i << ": " << v[i] << " vs " << ref.values[i]);
    BOOST_TEST(bad == 0u);
  }
}

// An operand of `shape`, contiguous or (variant 1) a transposed copy seen through a permute.
template <class E> Tensor operand(const Shape& shape, uint32_t seed, bool strided) {
  if (!strided || shape.size() < 2) return ou::random_tensor<E>(shape, seed);
  Shape rev(shape.rbegin(), shape.rend());
  std::vector<int> perm;
  for (int d = static_cast<int>(shape.size()); d-- > 0;) perm.push_back(d);
  return tritium::runtime::permute_of(ou::random_tensor<E>(rev, seed), perm);
}

template <class E> void all_cases(double tol, bool strided) {
  uint32_t seed = strided ? 500 : 100;
  for (const Case& c : cases()) {
    std::vector<Tensor> ops;
    std::vector<tt::HostTensor> hosts;
    for (const Shape& s : c.shapes) {
      ops.push_back(operand<E>(s, seed++, strided));
      hosts.push_back(host(ops.back()));
    }
    check(T::einsum(c.equation, ops), tt::host_einsum(c.equation, hosts), tol,
          "'" + c.equation + "' " + tritium::dtype_name(tritium::dtype_of<E>()) + (strided ? " strided" : ""));
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_einsum)

BOOST_AUTO_TEST_CASE(equations_against_a_float64_einsum) {
  BOOST_TEST(cases().size() >= 25u);
  tt::for_each_backend([](const tt::Backend&) {
    all_cases<double>(1e-12, false);
    all_cases<double>(1e-12, true);
    all_cases<float>(2e-6, false);
  });
}

BOOST_AUTO_TEST_CASE(half_precision) {
  tt::for_each_backend([](const tt::Backend&) {
    all_cases<f16_t>(2e-3, false);
    all_cases<bf16_t>(1.6e-2, true);
  });
}

// Views where no data moves: a permute of one operand shares its storage (as PyTorch's).
BOOST_AUTO_TEST_CASE(a_permute_is_a_view) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = ou::random_tensor<float>({3, 4}, 7);
    Tensor y = T::einsum("ij->ji", {x});
    BOOST_TEST((y.storage() == x.storage()));
    BOOST_TEST((y.shape() == Shape{4, 3}));
  });
}

// The greedy order: the pair with the smallest intermediate first, ties to the leftmost pair.
BOOST_AUTO_TEST_CASE(contraction_order_is_greedy_on_intermediate_sizes) {
  using Steps = std::vector<std::pair<size_t, size_t>>;
  auto path = [](const std::string& eq, const std::vector<Shape>& shapes) {
    Steps out;
    for (const auto& s : tritium::ops::einsum_contraction_path(tritium::ops::parse_einsum(eq, shapes)))
      out.emplace_back(s.first, s.second);
    return out;
  };
  // [33, 2] [2, 17] [17, 3]: (1, 2) gives [2, 3], (0, 1) [33, 17]; left to right would make the big one.
  BOOST_TEST((path("ij,jk,kl->il", {{33, 2}, {2, 17}, {17, 3}}) == Steps{{1, 2}, {0, 1}}));
  BOOST_TEST((path("ij,jk,kl->il", {{3, 17}, {17, 2}, {2, 33}}) == Steps{{0, 1}, {0, 1}}));
  // The outer product of operands 0 and 1 (no shared subscript) is avoided.
  BOOST_TEST((path("ab,cd,bc->ad", {{3, 4}, {5, 2}, {4, 5}}) == Steps{{1, 2}, {0, 1}}));
  BOOST_TEST((path("i,i,i->", {{17}, {17}, {17}}) == Steps{{0, 1}, {0, 1}}));  // a tie: leftmost
  BOOST_TEST(path("ij->j", {{3, 4}}).empty());
  // A step sums what nothing later needs: j after the first step of the chain.
  auto steps = tritium::ops::einsum_contraction_path(tritium::ops::parse_einsum("ij,jk,kl->il", {{33, 2}, {2, 17}, {17, 3}}));
  const int j = 26 + ('j' - 'a'), k = 26 + ('k' - 'a');
  BOOST_TEST(!steps[0].summed[j]);
  BOOST_TEST(steps[0].summed[k]);
  BOOST_TEST(steps[1].summed[j]);
}

BOOST_AUTO_TEST_CASE(gradients_through_the_lowering) {
  tt::for_each_backend([](const tt::Backend&) {
    auto grad = [](const std::string& eq, std::vector<Tensor> in) {
      tt::gradcheck("einsum '" + eq + "'", [eq](const tt::GradInputs& x) { return T::einsum(eq, x); }, std::move(in));
    };
    grad("ij,jk->ik", {tt::input({3, 4}, 11), tt::strided_input({4, 2}, 12)});
    grad("ii->i", {tt::input({3, 3}, 13)});
    grad("iij->j", {tt::input({3, 3, 2}, 14)});
    grad("...ij,...jk", {tt::input({2, 1, 3, 2}, 15), tt::input({3, 2, 2}, 16)});
    grad("ij,ij->", {tt::input({3, 2}, 17), tt::input({1, 2}, 18)});
    grad("bn,anm,bm->ba", {tt::input({2, 3}, 19), tt::input({2, 3, 2}, 20), tt::input({2, 2}, 21)});
    grad("i,j->ij", {tt::input({3}, 22), tt::input({2}, 23)});
    grad("ijk,jl,lm,km->i", {tt::input({2, 3, 2}, 24), tt::input({3, 2}, 25), tt::input({2, 2}, 26), tt::input({2, 2}, 27)});
  });
}

BOOST_AUTO_TEST_CASE(bad_equations_are_clear_errors) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor a = ou::random_tensor<float>({2, 3}, 31), b = ou::random_tensor<float>({4, 5}, 32);
    auto bad = [](const std::string& eq, std::vector<Tensor> ops, std::initializer_list<std::string_view> msg) {
      tt::check_throws([&] { T::einsum(eq, ops); }, msg, "'" + eq + "'");
    };
    bad("ij,jk", {a, b}, {"einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen "
                          "size 3", "equation 'ij,jk'"});
    bad("ii->i", {a}, {"subscript i is repeated for operand 0 but the sizes don't match, 2 != 3"});
    bad("ij->iij", {a}, {"output subscript i appears more than once in the output"});
    bad("ij->k", {a}, {"output subscript k does not appear in the equation for any input operand"});
    bad("ij", {a, b}, {"more operands were provided than specified in the equation"});
    bad("ij,jk", {a}, {"fewer operands were provided than specified in the equation"});
    bad("ijk", {a}, {"the number of subscripts in the equation (3) does not match the number of dimensions (2) for "
                     "operand 0 and no ellipsis was given"});
    bad("ijk...", {a}, {"the number of subscripts in the equation (3) is more than the number of dimensions (2)"});
    bad("i.j", {a}, {"found '.' for operand 0 that is not part of any ellipsis"});
    bad("...i...", {a}, {"found '.' for operand 0 for which an ellipsis was already found"});
    bad("i1", {a}, {"invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]"});
    bad("ij->i->j", {a}, {"invalid subscript given at index 5"});
    bad("ij-", {a}, {"invalid subscript given at index 2"});
    bad("ij->i,j", {a}, {"invalid subscript given at index 5"});
    bad("ij,jk", {a, ou::random_tensor<double>({3, 4}, 33)},
        {"einsum(): expected all operands to have the same dtype, but operand 0 is f32 and operand 1 is f64"});
    bad("ij", {}, {"must provide at least one operand"});
    bad("ij", {Tensor()}, {"operand 0 is undefined"});
  });
}

BOOST_AUTO_TEST_CASE(operands_on_two_devices) {
  if (!tritium::runtime::device_available(tritium::Device::cuda()) ||
      !tritium::runtime::device_available(tritium::Device::cpu())) {
    BOOST_TEST_MESSAGE("skipped: needs both the cpu and the cuda backend");
    return;
  }
  Tensor a = ou::random_tensor<float>({2, 3}, 41), b = ou::random_tensor<float>({3, 2}, 42).to(tritium::Device::cuda());
  tt::check_throws([&] { T::einsum("ij,jk", {a, b}); }, {"einsum(): expected all operands to be on the same device"},
                   "einsum devices");
}

BOOST_AUTO_TEST_SUITE_END()
