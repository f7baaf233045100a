#include "nn/optim.h"

#include <cmath>
#include <limits>

#include <tritium/tritium.h>

#include "nn/autograd.h"
#include "ops/ops.h"

namespace tritium::nn {
namespace tl = tritium::tl;

namespace {

constexpr int kBlock = 1024;

// One program updates BLOCK consecutive elements. The arithmetic is PyTorch's, in f32; the
// scalars that depend only on the step (bias corrections, 1 - beta, ...) come from the host.

// SGD without momentum: g = grad + wd * p; p -= lr * g.
auto sgd_kernel = tritium::kernel(
    "sgd_step",
    [](tl::ptr<float> p_ptr, tl::ptr<float> g_ptr, tl::i32 n, tl::f32 lr, tl::f32 weight_decay, int BLOCK) {
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      auto p = tl::load(p_ptr + offs, mask);
      auto g = tl::load(g_ptr + offs, mask) + weight_decay * p;
      tl::store(p_ptr + offs, p - lr * g, mask);
    },
    {"p_ptr", "g_ptr", "n", "lr", "weight_decay", "BLOCK"});

// SGD with momentum: g = grad + wd * p; buf = keep * buf + scale * g (keep = momentum and
// scale = 1 - dampening, or 0 and 1 on the first step, when buf holds zeros: buf = g);
// p -= lr * (nesterov ? g + momentum * buf : buf).
auto sgd_momentum_kernel = tritium::kernel(
    "sgd_momentum_step",
    [](tl::ptr<float> p_ptr, tl::ptr<float> g_ptr, tl::ptr<float> buf_ptr, tl::i32 n, tl::f32 lr,
       tl::f32 weight_decay, tl::f32 momentum, tl::f32 keep, tl::f32 scale, bool NESTEROV, int BLOCK) {
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      auto p = tl::load(p_ptr + offs, mask);
      auto g = tl::load(g_ptr + offs, mask) + weight_decay * p;
      auto buf = keep * tl::load(buf_ptr + offs, mask) + scale * g;
      tl::store(buf_ptr + offs, buf, mask);
      auto d = NESTEROV ? g + momentum * buf : buf;
      tl::store(p_ptr + offs, p - lr * d, mask);
    },
    {"p_ptr", "g_ptr", "buf_ptr", "n", "lr", "weight_decay", "momentum", "keep", "scale", "NESTEROV", "BLOCK"});

// AdamW: p *= decay (= 1 - lr * wd); m = beta1 * m + (1 - beta1) * g; v = beta2 * v + (1 - beta2) * g^2;
// p -= step_size * m / (sqrt(v) / bc2_sqrt + eps), step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t).
auto adamw_kernel = tritium::kernel(
    "adamw_step",
    [](tl::ptr<float> p_ptr, tl::ptr<float> g_ptr, tl::ptr<float> m_ptr, tl::ptr<float> v_ptr, tl::i32 n,
       tl::f32 decay, tl::f32 beta1, tl::f32 one_minus_beta1, tl::f32 beta2, tl::f32 one_minus_beta2,
       tl::f32 step_size, tl::f32 bc2_sqrt, tl::f32 eps, int BLOCK) {
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      auto p = tl::load(p_ptr + offs, mask) * decay;
      auto g = tl::load(g_ptr + offs, mask);
      auto m = beta1 * tl::load(m_ptr + offs, mask) + one_minus_beta1 * g;
      auto v = beta2 * tl::load(v_ptr + offs, mask) + one_minus_beta2 * (g * g);
      tl::store(m_ptr + offs, m, mask);
      tl::store(v_ptr + offs, v, mask);
      auto denom = tl::sqrt(v) / bc2_sqrt + eps;
      tl::store(p_ptr + offs, p - step_size * (m / denom), mask);
    },
    {"p_ptr", "g_ptr", "m_ptr", "v_ptr", "n", "decay", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2",
     "step_size", "bc2_sqrt", "eps", "BLOCK"});

int32_t kernel_size(const Tensor& p, const char* optimizer) {
  if (p.numel() > std::numeric_limits<int32_t>::max())
    fail("{}: parameter {} has more than 2^31 - 1 elements", optimizer, p.str());
  return static_cast<int32_t>(p.numel());
}

tritium::Grid grid_for(int32_t n) { return tritium::Grid(std::max<int64_t>(1, tritium::cdiv(n, kBlock))); }

}  // namespace

// ---- Optimizer -----------------------------------------------------------------------------------

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.defined()) fail("Optimizer: parameter {} is an undefined tensor", i);
    if (!p.is_leaf()) fail("Optimizer: parameter {} ({}) is not a leaf tensor", i, p.str());
  }
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

Tensor Optimizer::grad_for_step(size_t i, const char* optimizer) const {
  const Tensor& p = params_[i];
  Tensor g = p.grad();
  if (!g.defined()) return g;
  if (p.dtype() != DType::f32 || g.dtype() != DType::f32)
    fail("{}: parameter {} is {} with a {} gradient; only f32 parameters are supported", optimizer, i,
         dtype_name(p.dtype()), dtype_name(g.dtype()));
  if (g.shape() != p.shape()) fail("{}: parameter {} is {} but its gradient is {}", optimizer, i, p.str(), g.str());
  if (!(g.device() == p.device()))
    fail("{}: parameter {} is on {} but its gradient on {}", optimizer, i, p.device().str(), g.device().str());
  if (!p.is_contiguous()) fail("{}: parameter {} ({}) is not contiguous", optimizer, i, p.str());
  return g.is_contiguous() ? g : ops::contiguous(g);
}

// ---- SGD -------------------------------------------------------------------------------------------

SGD::SGD(std::vector<Tensor> params, double lr_, double momentum_, double weight_decay_, double dampening_,
         bool nesterov_)
    : Optimizer(std::move(params)), lr(lr_), momentum(momentum_), weight_decay(weight_decay_),
      dampening(dampening_), nesterov(nesterov_), buffers_(params_.size()) {
  if (!(lr >= 0)) fail("SGD: invalid learning rate {}", lr);
  if (!(momentum >= 0)) fail("SGD: invalid momentum {}", momentum);
  if (!(weight_decay >= 0)) fail("SGD: invalid weight_decay {}", weight_decay);
  if (nesterov && (momentum <= 0 || dampening != 0))
    fail("SGD: nesterov momentum requires a momentum > 0 and zero dampening (momentum {}, dampening {})", momentum,
         dampening);
}

void SGD::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor g = grad_for_step(i, "SGD");
    if (!g.defined()) continue;
    Tensor& p = params_[i];
    int32_t n = kernel_size(p, "SGD");
    tritium::Options opts{.device = p.device()};
    if (momentum == 0) {
      sgd_kernel[grid_for(n)](p, g, n, float(lr), float(weight_decay), kBlock, opts);
      p.storage()->bump_version();  // an in-place update, as PyTorch's: a graph that saved p refuses backward
      continue;
    }
    bool first = !buffers_[i].defined();
    if (first) buffers_[i] = ops::zeros(p.shape(), DType::f32, p.device());
    float keep = first ? 0.0f : float(momentum);
    float scale = first ? 1.0f : float(1 - dampening);
    sgd_momentum_kernel[grid_for(n)](p, g, buffers_[i], n, float(lr), float(weight_decay), float(momentum), keep,
                                      scale, nesterov, kBlock, opts);
    p.storage()->bump_version();
  }
}

// ---- AdamW ---------------------------------------------------------------------------------------

AdamW::AdamW(std::vector<Tensor> params, double lr_, std::pair<double, double> betas_, double eps_,
             double weight_decay_)
    : Optimizer(std::move(params)), lr(lr_), betas(betas_), eps(eps_), weight_decay(weight_decay_),
      exp_avg_(params_.size()), exp_avg_sq_(params_.size()), steps_(params_.size(), 0) {
  if (!(lr >= 0)) fail("AdamW: invalid learning rate {}", lr);
  if (!(eps >= 0)) fail("AdamW: invalid epsilon {}", eps);
  if (!(betas.first >= 0 && betas.first < 1)) fail("AdamW: invalid beta parameter at index 0: {}", betas.first);
  if (!(betas.second >= 0 && betas.second < 1)) fail("AdamW: invalid beta parameter at index 1: {}", betas.second);
  if (!(weight_decay >= 0)) fail("AdamW: invalid weight_decay {}", weight_decay);
}

void AdamW::step() {
  NoGradGuard no_grad;
  auto [beta1, beta2] = betas;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor g = grad_for_step(i, "AdamW");
    if (!g.defined()) continue;
    Tensor& p = params_[i];
    int32_t n = kernel_size(p, "AdamW");
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] = ops::zeros(p.shape(), DType::f32, p.device());
      exp_avg_sq_[i] = ops::zeros(p.shape(), DType::f32, p.device());
    }
    double t = static_cast<double>(++steps_[i]);
    double bias_correction1 = 1 - std::pow(beta1, t);
    double bias_correction2 = 1 - std::pow(beta2, t);
    adamw_kernel[grid_for(n)](p, g, exp_avg_[i], exp_avg_sq_[i], n, float(1 - lr * weight_decay), float(beta1),
                              float(1 - beta1), float(beta2), float(1 - beta2), float(lr / bias_correction1),
                              float(std::sqrt(bias_correction2)), float(eps), kBlock,
                              tritium::Options{.device = p.device()});
    p.storage()->bump_version();
  }
}

}  // namespace tritium::nn
