// The finite-difference gradient check shared by test_gradcheck.cpp (hand-written cases) and
// test_op_registry.cpp (every declared op): the library's finite differences (nn/gradcheck.h),
// reported through Boost.Test with those files' relative-error bound. Each input element is
// perturbed by ±eps, the scalar L = sum(w * f(x)) (fixed random weights w, so that no gradient is trivially symmetric) is
// evaluated without autograd, and (L+ - L-) / 2 eps is compared with the gradient that
// backward(w) accumulated into the input's .grad. Inputs live on the backend's device and are
// perturbed there by a fill kernel, never through a host pointer. Float64 inputs are the rule;
// f32 inputs (ops without f64 kernels) are read back through a conversion to f64.
#pragma once
#include "test_support.h"

#include <functional>
#include <string>
#include <vector>

#include "nn/autograd.h"
#include "nn/gradcheck.h"
#include "ops/ops.h"

namespace tritium::test {

using GradInputs = std::vector<Tensor>;
using GradFn = std::function<Tensor(const GradInputs&)>;

inline int64_t shape_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// A random f64 leaf that requires grad; |values| >= min_abs (away from relu's kink, log's pole).
inline Tensor input(std::vector<int64_t> shape, uint32_t seed, double lo = -1, double hi = 1, double min_abs = 0) {
  auto n = static_cast<size_t>(shape_numel(shape));
  auto v = min_abs > 0 ? random_nonzero<double>(n, seed, lo, hi, min_abs) : random_vector<double>(n, seed, lo, hi);
  Tensor t = Tensor::from_vector(v, shape);
  t.requires_grad_();
  return t;
}

// A leaf with transposed strides: shape `shape` (2-D), stored column-major.
inline Tensor strided_input(std::vector<int64_t> shape, uint32_t seed, double lo = -1, double hi = 1) {
  Tensor base = Tensor::from_vector(random_vector<double>(static_cast<size_t>(shape_numel(shape)), seed, lo, hi),
                                    {shape[1], shape[0]});
  Tensor t = base.t().detach();
  BOOST_TEST_REQUIRE(!t.is_contiguous());
  t.requires_grad_();
  return t;
}

// The values of a float tensor in row-major order, as f64 on the host.
inline std::vector<double> host_f64(const Tensor& t) {
  return t.dtype() == DType::f64 ? t.to_vector<double>() : ops::to_dtype(t, DType::f64).to_vector<double>();
}

// Perturbs one element in place on the tensor's device (the library's, nn/gradcheck.h).
using autograd::set_element;

// The weights of L for an output of n elements.
inline std::vector<double> gradcheck_weights(int64_t n) {
  return random_vector<double>(static_cast<size_t>(n), 4242, 0.5, 1.5);
}

// dL/d inputs[k] by central differences (the library's autograd::numerical_gradient), checking
// that the input is restored exactly afterwards.
inline std::vector<double> numeric_gradient(const GradFn& f, const GradInputs& inputs, size_t k,
                                            const std::vector<double>& w, double eps) {
  const std::vector<double> original = host_f64(inputs[k]);
  std::vector<double> numeric = autograd::numerical_gradient(f, inputs, k, w, eps);
  BOOST_TEST_REQUIRE(host_f64(inputs[k]) == original, "input " << k << " not restored");
  return numeric;
}

// Checks the gradient of every input that requires grad against central differences.
inline void gradcheck(const std::string& what, const GradFn& f, GradInputs inputs, double tol = 1e-6,
                      double eps = 1e-6) {
  BOOST_TEST_CONTEXT(what) {
    for (Tensor& x : inputs) x.zero_grad();
    Tensor out = f(inputs);
    BOOST_TEST_REQUIRE(out.requires_grad());
    DType dtype = DType::invalid;
    for (const Tensor& x : inputs)
      if (x.requires_grad()) dtype = x.dtype();
    BOOST_TEST_REQUIRE((out.dtype() == dtype), "output dtype " << dtype_name(out.dtype()));
    BOOST_TEST_REQUIRE((out.device() == inputs.at(0).device()), "output on " << out.device().str());
    auto w = gradcheck_weights(out.numel());
    Tensor wt = Tensor::from_vector(w, out.shape());  // on the default device (the backend's)
    out.backward(out.dtype() == DType::f64 ? wt : ops::to_dtype(wt, out.dtype()));
    out = Tensor();
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Tensor& x = inputs[k];
      if (!x.requires_grad()) continue;
      Tensor g = x.grad();
      BOOST_TEST_REQUIRE(g.defined(), "input " << k << " got no gradient");
      BOOST_TEST_REQUIRE(g.shape() == x.shape(), "input " << k << " gradient shape");
      BOOST_TEST_REQUIRE((g.dtype() == x.dtype()));
      BOOST_TEST_REQUIRE((g.device() == x.device()), "input " << k << " gradient on " << g.device().str());
      std::vector<double> numeric = numeric_gradient(f, inputs, k, w, eps);
      check_close<double>(host_f64(g), numeric, tol, what + ": gradient of input " + std::to_string(k));
    }
  }
}

}  // namespace tritium::test
