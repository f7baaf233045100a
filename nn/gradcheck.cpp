// Finite-difference gradient checks (see nn/gradcheck.h).
#include "nn/gradcheck.h"

#include <cmath>

#include <fmt/format.h>

#include "nn/functional.h"
#include "ops/ops.h"

namespace tritium::autograd {
namespace {

std::vector<double> host_f64(const Tensor& t) {
  return t.dtype() == DType::f64 ? t.to_vector<double>() : ops::to_dtype(t, DType::f64).to_vector<double>();
}

// Random weights in [0.5, 1.5) of the output's shape, dtype and device.
Tensor projection_weights(const Tensor& like, uint64_t seed) {
  ops::Generator gen(seed);
  Tensor w = ops::rand(like.shape(), gen, DType::f64, like.device());
  w = ops::add(w, ops::Scalar(0.5));
  return w.dtype() == like.dtype() ? w : ops::to_dtype(w, like.dtype());
}

double weighted_sum(const Tensor& out, const std::vector<double>& w) {
  std::vector<double> v = host_f64(out);
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}

}  // namespace

// A 0-d raw view of the element written by a fill kernel.
void set_element(const Tensor& t, int64_t i, double value) {
  int64_t offset = t.storage_offset();
  for (int d = t.dim() - 1; d >= 0; --d) {
    int64_t size = t.shape()[static_cast<size_t>(d)];
    offset += (i % size) * t.strides()[static_cast<size_t>(d)];
    i /= size;
  }
  Tensor e = t.detach().as_strided({}, {}, offset);
  ops::fill_(e, value);
}

std::vector<double> numerical_gradient(const GradcheckFunction& fn, const tensor_list& inputs, size_t k,
                                       const std::vector<double>& weights, double eps) {
  if (k >= inputs.size() || !inputs[k].defined()) fail("numerical_gradient: input {} is not a defined input", k);
  const Tensor& x = inputs[k];
  nn::NoGradGuard no_grad;
  const std::vector<double> original = host_f64(x);
  std::vector<double> numeric(original.size());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double old = original[static_cast<size_t>(i)];
    set_element(x, i, old + eps);
    double plus = weighted_sum(fn(inputs), weights);
    set_element(x, i, old - eps);
    double minus = weighted_sum(fn(inputs), weights);
    set_element(x, i, old);
    numeric[static_cast<size_t>(i)] = (plus - minus) / (2 * eps);
  }
  return numeric;
}

bool gradcheck(const GradcheckFunction& fn, const tensor_list& inputs, const GradcheckOptions& options) {
  tensor_list differentiable;
  std::vector<size_t> which;
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].defined() && inputs[k].requires_grad()) {
      differentiable.push_back(inputs[k]);
      which.push_back(k);
    }
  if (differentiable.empty()) fail("gradcheck: gradcheck expects at least one input tensor to require gradient");

  Tensor out;
  {
    nn::EnableGradGuard grad_mode;
    out = fn(inputs);
  }
  if (!out.defined()) fail("gradcheck: the function returned an undefined tensor");
  if (!is_float(out.dtype())) fail("gradcheck: the function's output has dtype {}; it must be floating point", dtype_name(out.dtype()));
  Tensor w = projection_weights(out, options.seed);
  const std::vector<double> w_host = host_f64(w);
  tensor_list analytical;
  if (out.requires_grad()) analytical = grad({out}, differentiable, {w}, false, false, /*allow_unused=*/true);
  else analytical.resize(differentiable.size());
  out = Tensor();

  for (size_t j = 0; j < differentiable.size(); ++j) {
    const Tensor& x = differentiable[j];
    if (analytical[j].defined() && analytical[j].shape() != x.shape())
      fail("gradcheck: the gradient of input {} has another shape than the input", which[j]);
    const std::vector<double> numerical = numerical_gradient(fn, inputs, which[j], w_host, options.eps);
    const std::vector<double> a =
        analytical[j].defined() ? host_f64(analytical[j]) : std::vector<double>(numerical.size(), 0.0);
    for (size_t i = 0; i < numerical.size(); ++i)
      if (!(std::abs(a[i] - numerical[i]) <= options.atol + options.rtol * std::abs(numerical[i])))
        fail("gradcheck: Jacobian mismatch for output 0 with respect to input {}: element {} has analytical gradient "
             "{} but numerical gradient {} (eps {}, atol {}, rtol {}; of sum(w * output), w random)",
             which[j], i, a[i], numerical[i], options.eps, options.atol, options.rtol);
  }
  return true;
}

bool gradgradcheck(const GradcheckFunction& fn, const tensor_list& inputs, const GradcheckOptions& options) {
  tensor_list differentiable;
  for (const Tensor& x : inputs)
    if (x.defined() && x.requires_grad()) differentiable.push_back(x);
  if (differentiable.empty()) fail("gradgradcheck: gradgradcheck expects at least one input tensor to require gradient");
  Tensor out;
  {
    nn::NoGradGuard no_grad;
    out = fn(inputs);
  }
  // v: the output's weights, a leaf of its own (the gradient is linear in it); u: the weights of
  // the gradients' projection, constants.
  Tensor v = projection_weights(out, options.seed + 1);
  v.requires_grad_();
  tensor_list us;
  for (size_t j = 0; j < differentiable.size(); ++j)
    us.push_back(projection_weights(differentiable[j], options.seed + 2 + j));
  tensor_list all = inputs;
  all.push_back(v);
  auto first_derivative = [&](const tensor_list& args) {
    tensor_list xs(args.begin(), args.end() - 1);
    tensor_list diff;
    for (const Tensor& x : xs)
      if (x.defined() && x.requires_grad()) diff.push_back(x);
    nn::EnableGradGuard grad_mode;
    Tensor y = fn(xs);
    tensor_list g = grad({y}, diff, {args.back()}, true, /*create_graph=*/true, /*allow_unused=*/true);
    Tensor total;
    for (size_t j = 0; j < g.size(); ++j) {
      if (!g[j].defined()) continue;
      Tensor term = tritium::sum(tritium::mul(g[j], us[j]));
      total = total.defined() ? tritium::add(total, term) : term;
    }
    if (!total.defined()) fail("gradgradcheck: no input got a gradient");
    return total;
  };
  return gradcheck(first_derivative, all, options);
}

}  // namespace tritium::autograd
