// The float64 host reference of ops::matmul's tests (test_matmul.cpp, test_matmul_split_k.cpp):
// torch.matmul's shape rules, each element's sum of |a||b| (the scale of its rounding error), and
// a check of a product's shape, dtype, device and values against it.
#pragma once
#include "test_support.h"

#include "ops/ops.h"
#include "runtime/views.h"

namespace tritium::test::matmul_reference {

using runtime::Tensor;
using Shape = std::vector<int64_t>;
using namespace tritium::runtime;
namespace tt = tritium::test;
namespace ops = tritium::ops;

template <class T> Tensor random_tensor(const Shape& shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  auto v = tt::random_vector<T>(static_cast<size_t>(n), seed);
  return Tensor::from_vector<T>(std::vector<T>(v.begin(), v.end()), shape);
}

template <class T> inline std::vector<double> logical(const Tensor& t) {
  std::vector<double> out;
  for (auto x : t.to_vector<T>()) out.push_back(tt::to_double(x));
  return out;
}

// torch.matmul in float64 on the host: 1-D promotion, batch broadcasting (through expand). Also
// sum |a||b| per element, the scale of a dot's rounding errors (tt::check_dot).
struct Reference {
  Shape shape;
  std::vector<double> values, magnitudes;
};
template <class T> inline Reference reference(const Tensor& a_in, const Tensor& b_in) {
  Tensor a = a_in.dim() == 1 ? unsqueeze_of(a_in, 0) : a_in;
  Tensor b = b_in.dim() == 1 ? unsqueeze_of(b_in, 1) : b_in;
  int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  size_t nb = std::max(ba.size(), bb.size());
  Shape batch(nb, 1);
  for (size_t i = 0; i < nb; ++i) {
    if (i + ba.size() >= nb) batch[i] = std::max(batch[i], ba[i + ba.size() - nb]);
    if (i + bb.size() >= nb) batch[i] = std::max(batch[i], bb[i + bb.size() - nb]);
  }
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {M, K});
  sb.insert(sb.end(), {K, N});
  auto av = logical<T>(expand_of(a, sa)), bv = logical<T>(expand_of(b, sb));
  int64_t nbatch = 1;
  for (int64_t d : batch) nbatch *= d;
  std::vector<double> c(static_cast<size_t>(nbatch * M * N)), mag(c.size());
  for (int64_t p = 0; p < nbatch; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0, m = 0;
        for (int64_t k = 0; k < K; ++k) {
          double prod = av[(p * M + i) * K + k] * bv[(p * K + k) * N + j];
          s += prod;
          m += std::abs(prod);
        }
        c[(p * M + i) * N + j] = s;
        mag[(p * M + i) * N + j] = m;
      }
  Shape out = batch;
  if (a_in.dim() > 1) out.push_back(M);
  if (b_in.dim() > 1) out.push_back(N);
  return {out, c, mag};
}

template <class T> inline double tol() {
  if constexpr (std::is_same_v<T, double>) return 1e-12;
  else if constexpr (std::is_same_v<T, float>) return 1e-5;
  else if constexpr (std::is_same_v<T, f16_t>) return 1e-3;
  else return 1e-2;
}

template <class T> inline void check(const Tensor& a, const Tensor& b, const std::string& what) {
  BOOST_TEST_CONTEXT(what << " " << a.str() << " @ " << b.str()) {
    auto [shape, ref, mag] = reference<T>(a, b);
    Tensor c = ops::matmul(a, b);
    // Called inside tt::for_each_backend: operands and result live on the backend's device.
    BOOST_TEST((a.device() == tritium::default_device()));
    BOOST_TEST((c.device() == a.device()));
    BOOST_TEST(c.shape() == shape);
    BOOST_TEST((c.dtype() == a.dtype()));
    BOOST_TEST(c.is_contiguous());
    auto out = c.to_vector<T>();
    tt::check_dot<T>(tt::host_vector<T>(out.begin(), out.end()), ref, mag, tol<T>(), what);
  }
}

}  // namespace tritium::test::matmul_reference
