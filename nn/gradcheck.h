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

// The same check of the gradient itself: the function (inputs, v) -> sum(u * grad(fn(inputs),
// inputs, v, create_graph)) is gradchecked with respect to the inputs and the output weights v
// (u, v random), so every second derivative that backward-of-backward computes is compared.
bool gradgradcheck(const GradcheckFunction& fn, const tensor_list& inputs, const GradcheckOptions& options = {});

}  // namespace tritium::autograd
