// Gradient checks as library functions (torch.autograd.gradcheck / gradgradcheck): the gradients
// autograd computes for `fn` against central finite differences. As PyTorch's fast mode, both
// sides are taken of one random projection L = sum(w * fn(inputs)) (fixed random weights w, so
// that no gradient is trivially symmetric): one backward gives dL/dx, and 2 evaluations per input
// element give the differences. Inputs should be float64 (the defaults are PyTorch's f64 bounds);
// they are perturbed in place on their device and restored exactly.
#pragma once
#include <cstdint>
#include <functional>

#include "nn/autograd.h"

namespace tritium::autograd {

struct GradcheckOptions {
  double eps = 1e-6;   // the finite-difference step
  double atol = 1e-5;  // |analytical - numerical| <= atol + rtol * |numerical|, element by element
  double rtol = 1e-3;
  uint64_t seed = 0;   // of the projection weights
};

using GradcheckFunction = std::function<Tensor(const tensor_list& inputs)>;

// True when every input that requires grad gets the gradient the differences give; otherwise a
// tritium::Error naming the input, the element and both values (PyTorch's GradcheckError:
// "Jacobian mismatch for output 0 with respect to input k").
bool gradcheck(const GradcheckFunction& fn, const tensor_list& inputs, const GradcheckOptions& options = {});

// The finite-difference side: dL/d inputs[k] of L = sum(weights * fn(inputs)) by central
// differences (weights in the output's row-major order; each element of inputs[k] is set to
// x ± eps in place on its device, by a fill kernel on a 0-d view, and restored exactly), for
// callers that compare with gradients of their own (tests/gradcheck_support.h).
std::vector<double> numerical_gradient(const GradcheckFunction& fn, const tensor_list& inputs, size_t k,
                                       const std::vector<double>& weights, double eps);
// Sets the element at row-major position i of a (possibly strided) tensor to `value` in place on
// its device, without a version bump or history (what the perturbation above uses).
void set_element(const Tensor& t, int64_t i, double value);

// The same check of the gradient itself: the function (inputs, v) -> sum(u * grad(fn(inputs),
// inputs, v, create_graph)) is gradchecked with respect to the inputs and the output weights v
// (u, v random), so every second derivative that backward-of-backward computes is compared.
bool gradgradcheck(const GradcheckFunction& fn, const tensor_list& inputs, const GradcheckOptions& options = {});

}  // namespace tritium::autograd
