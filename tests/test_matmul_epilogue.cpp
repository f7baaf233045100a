// ops::matmul_add (beta * self + alpha * A @ B in the matmul kernel's epilogue, the add* ops' and
// linear's bias) against a float64 host reference: self of the full shape, a bias row [N], a
// column [M, 1], transposed and batch-broadcast selves, alpha and beta, beta = 0 with NaN in self
// (not read), with and without split-K, every dtype, 1-D operands, an empty K, and the errors.
// The test binary poisons every new buffer (tests/main.cpp): C and the workspace start as NaN.
#include "test_support.h"
#include "matmul_reference.h"

#include <cmath>
#include <limits>

#include "ops/matmul_add.h"
#include "ops/matmul_family.h"
#include "ops/ops.h"
#include "runtime/views.h"

namespace tt = tritium::test;
namespace ops = tritium::ops;
using tritium::bf16_t;
using tritium::DType;
using tritium::f16_t;
using tritium::Tensor;
using namespace tritium::runtime;
using namespace tritium::test::matmul_reference;

namespace {

// beta * self + alpha * (a @ b) on the host in float64, self broadcast (right-aligned) to the
// product's shape; checked with the product's rounding bound plus self's.
template <class T>
void check_add(const Tensor& self, const Tensor& a, const Tensor& b, double beta, double alpha, const std::string& what) {
  BOOST_TEST_CONTEXT(what << ": " << beta << " * " << self.str() << " + " << alpha << " * " << a.str() << " @ "
                          << b.str()) {
    auto [shape, ref, mag] = reference<T>(a, b);
    Tensor s = expand_of(self, shape);
    auto sv = logical<T>(s);
    for (size_t i = 0; i < ref.size(); ++i) {
      ref[i] = alpha * ref[i] + (beta == 0 ? 0.0 : beta * sv[i]);
      mag[i] = std::abs(alpha) * mag[i] + std::abs(beta * sv[i]);
    }
    Tensor c = ops::matmul_add(self, a, b, beta, alpha);
    BOOST_TEST(c.shape() == shape);
    BOOST_TEST((c.dtype() == a.dtype()));
    BOOST_TEST((c.device() == a.device()));
    auto out = c.to_vector<T>();
    tt::check_dot<T>(tt::host_vector<T>(out.begin(), out.end()), ref, mag, tol<T>(), what);
  }
}

template <class T> void shapes_in(uint32_t seed) {
  const int64_t M = 37, K = 333, N = 45;
  Tensor a = random_tensor<T>({M, K}, seed), b = random_tensor<T>({K, N}, seed + 1);
  check_add<T>(random_tensor<T>({M, N}, seed + 2), a, b, 1, 1, "full self");
  check_add<T>(random_tensor<T>({N}, seed + 3), a, b, 1, 1, "bias row");
  check_add<T>(random_tensor<T>({M, 1}, seed + 4), a, b, 0.5, -2, "column, scaled");
  check_add<T>(t_of(random_tensor<T>({N, M}, seed + 5)), t_of(random_tensor<T>({K, M}, seed + 6)), b, 2, 1,
               "transposed self and A");
  check_add<T>(random_tensor<T>({1, 1}, seed + 7), a, t_of(random_tensor<T>({N, K}, seed + 8)), -1, 0.25, "scalar-like");
}

constexpr const char* kSplitVar = "TRITIUM_MATMUL_SPLIT_K";

}  // namespace

BOOST_AUTO_TEST_SUITE(test_matmul_epilogue)

// Every dtype, unsplit (the epilogue in the product kernel) and split in 3 (in the sum kernel).
BOOST_AUTO_TEST_CASE(self_shapes_and_scales) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (const char* split : {"1", "3"}) {
      tt::ScopedEnv forced(kSplitVar, split);
      BOOST_TEST_CONTEXT("TRITIUM_MATMUL_SPLIT_K=" << split) {
        shapes_in<float>(1);
        shapes_in<double>(11);
        shapes_in<f16_t>(21);
        shapes_in<bf16_t>(31);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(batches_and_vectors) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (const char* split : {"1", "3"}) {
      tt::ScopedEnv forced(kSplitVar, split);
      BOOST_TEST_CONTEXT("TRITIUM_MATMUL_SPLIT_K=" << split) {
        Tensor a = random_tensor<float>({2, 3, 20, 333}, 41), b = random_tensor<float>({333, 19}, 42);
        check_add<float>(random_tensor<float>({19}, 43), a, b, 1, 1, "bias over a batch");
        check_add<float>(random_tensor<float>({3, 1, 19}, 44), a, b, 1, 1, "self broadcast over a batch dim");
        check_add<float>(random_tensor<float>({2, 3, 20, 19}, 45), a, b, 0.5, 1, "full batched self");
        Tensor p = permute_of(random_tensor<float>({3, 2, 4, 16, 333}, 46), {2, 0, 1, 3, 4});  // [4,3,2,16,K]
        check_add<float>(random_tensor<float>({4, 1, 2, 1, 7}, 47), p, random_tensor<float>({2, 333, 7}, 48), 1, 1,
                         "three batch dims (a host loop)");
        check_add<float>(random_tensor<float>({20}, 49), random_tensor<float>({20, 333}, 50),
                         random_tensor<float>({333}, 51), 1, 2, "matrix @ vector (addmv)");
        check_add<float>(random_tensor<float>({19}, 52), random_tensor<float>({333}, 53), b, 1, 1, "vector @ matrix");
      }
    }
  });
}

// beta = 0: self is not read, so its NaN and Inf do not reach the result (PyTorch's rule).
BOOST_AUTO_TEST_CASE(beta_zero_ignores_self) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (const char* split : {"1", "3"}) {
      tt::ScopedEnv forced(kSplitVar, split);
      Tensor a = random_tensor<float>({30, 333}, 61), b = random_tensor<float>({333, 25}, 62);
      std::vector<float> bad(25, std::numeric_limits<float>::quiet_NaN());
      bad[3] = std::numeric_limits<float>::infinity();
      Tensor self = Tensor::from_vector(bad, {25});
      auto [shape, ref, mag] = reference<float>(a, b);
      for (double& r : ref) r *= 3;
      for (double& m : mag) m *= 3;
      auto out = ops::matmul_add(self, a, b, 0, 3).to_vector<float>();
      tt::check_dot<float>(tt::host_vector<float>(out.begin(), out.end()), ref, mag, 1e-5, split);
      auto via_addmm = ops::addmm(self, a, b, 0, 3).to_vector<float>();
      BOOST_TEST(via_addmm == out);
    }
  });
}

BOOST_AUTO_TEST_CASE(empty_k) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor self = random_tensor<float>({5}, 71);
    Tensor c = ops::matmul_add(self, random_tensor<float>({4, 0}, 72), random_tensor<float>({0, 5}, 73), 2, 1);
    BOOST_TEST(c.shape() == (Shape{4, 5}));
    auto sv = self.to_vector<float>(), cv = c.to_vector<float>();
    for (int i = 0; i < 20; ++i) BOOST_TEST(cv[i] == 2 * sv[i % 5]);
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor a = random_tensor<float>({6, 7}, 81), b = random_tensor<float>({7, 5}, 82);
    tt::check_throws([&] { ops::matmul_add(random_tensor<float>({4}, 83), a, b); },
                     {"matmul", "added tensor of shape [4]", "cannot be broadcast", "[6, 5]"}, "bad self shape");
    tt::check_throws([&] { ops::matmul_add(random_tensor<double>({5}, 84), a, b); },
                     {"matmul", "added tensor", "f64", "f32"}, "self dtype");
    tt::check_throws([&] { ops::matmul_add(random_tensor<float>({2, 6, 5}, 85), a, b); },
                     {"cannot be broadcast", "[2, 6, 5]", "[6, 5]"}, "self with more dims than the product");
  });
}

BOOST_AUTO_TEST_SUITE_END()
