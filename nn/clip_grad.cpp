#include "nn/clip_grad.h"

#include <cmath>

#include "nn/autograd.h"
#include "ops/ops.h"
#include "ops/shape.h"
#include "ops/unary_math.h"

namespace tritium::nn {

namespace {

// torch.linalg.vector_norm(x, ord) over all elements, with the op library's reduction kernels.
Tensor vector_norm(const Tensor& x, double ord) {
  if (std::isinf(ord)) return ord > 0 ? ops::amax(ops::abs(x)) : ops::amin(ops::abs(x));
  if (ord == 2) return ops::sqrt(ops::sum(ops::mul(x, x)));
  if (ord == 1) return ops::sum(ops::abs(x));
  return ops::pow(ops::sum(ops::pow(ops::abs(x), ord)), 1.0 / ord);
}

std::vector<Tensor> grads_of(const std::vector<Tensor>& params, const char* who) {
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    if (!p.defined()) fail("{}: a parameter is an undefined tensor", who);
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (!grads.empty() && !(g.device() == grads[0].device()))
      fail("{}: gradients on {} and on {}; all must be on one device", who, grads[0].device().str(), g.device().str());
    grads.push_back(g);
  }
  return grads;
}

// Writes value into the gradient g (the tensor .grad refers to) and marks it changed.
void overwrite(Tensor& g, const Tensor& value) {
  ops::copy_(g, value);
  g.storage()->bump_version();
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type, bool error_if_nonfinite) {
  if (!(norm_type > 0) && !std::isinf(norm_type))
    fail("clip_grad_norm_: norm_type {} is not supported (a positive number or +-infinity)", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads = grads_of(params, "clip_grad_norm_");
  if (grads.empty()) return Tensor::from_vector(std::vector<float>{0.0f}, {}, Device::cpu());
  std::vector<Tensor> norms;
  for (const Tensor& g : grads) norms.push_back(ops::reshape(vector_norm(g, norm_type), {1}));
  Tensor total = vector_norm(ops::cat(norms), norm_type);
  if (error_if_nonfinite) {
    float t = total.to(Device::cpu()).to_vector<float>().at(0);
    if (!std::isfinite(t))
      fail("clip_grad_norm_: the total norm of order {} for gradients from `parameters` is non-finite ({}), so it "
           "cannot be clipped; to disable this error and scale the gradients by the non-finite norm anyway, pass "
           "error_if_nonfinite=false", norm_type, t);
  }
  // min(max_norm / (total + 1e-6), 1) stays on the device: no host round trip.
  Tensor max_norm_t = ops::full({}, max_norm, DType::f32, total.device());
  Tensor coef = ops::clamp(ops::div(max_norm_t, ops::add(total, 1e-6)), std::nullopt, 1.0);
  for (Tensor& g : grads) overwrite(g, ops::mul(g, coef));
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  NoGradGuard no_grad;
  for (Tensor& g : grads_of(params, "clip_grad_value_")) overwrite(g, ops::clamp(g, -clip_value, clip_value));
}

}  // namespace tritium::nn
