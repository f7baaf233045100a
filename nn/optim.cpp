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

// Optimizer::skip_if: with SKIPPABLE the program ends before touching anything when the device
// flag found_inf is nonzero (GradScaler found an inf/NaN gradient).
void return_if_found_inf(tl::ptr<float> found_inf_ptr, bool SKIPPABLE) {
  if (SKIPPABLE) tl::if_(tl::load(found_inf_ptr) != 0.0f, [] { tl::return_(); });
}

// One program updates BLOCK consecutive elements. The arithmetic is PyTorch's, in f32; the
// scalars that depend only on the step (bias corrections, 1 - beta, ...) come from the host.

// SGD without momentum: g = grad + wd * p; p -= lr * g.
auto sgd_kernel = tritium::kernel(
    "sgd_step",
    [](tl::ptr<float> p_ptr, tl::ptr<float> g_ptr, tl::i32 n, tl::f32 lr, tl::f32 weight_decay, tl::ptr<float> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      return_if_found_inf(found_inf_ptr, SKIPPABLE);
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      auto p = tl::load(p_ptr + offs, mask);
      auto g = tl::load(g_ptr + offs, mask) + weight_decay * p;
      tl::store(p_ptr + offs, p - lr * g, mask);
    },
    {"p_ptr", "g_ptr", "n", "lr", "weight_decay", "found_inf_ptr", "SKIPPABLE", "BLOCK"});

// SGD with momentum: g = grad + wd * p; buf = keep * buf + scale * g (keep = momentum and
// scale = 1 - dampening, or 0 and 1 on the first step, when buf holds zeros: buf = g);
// p -= lr * (nesterov ? g + momentum * buf : buf).
auto sgd_momentum_kernel = tritium::kernel(
    "sgd_momentum_step",
    [](tl::ptr<float> p_ptr, tl::ptr<float> g_ptr, tl::ptr<float> buf_ptr, tl::i32 n, tl::f32 lr,
       tl::f32 weight_decay, tl::f32 momentum, tl::f32 keep, tl::f32 scale, bool NESTEROV, tl::ptr<float> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      return_if_found_inf(found_inf_ptr, SKIPPABLE);
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      auto p = tl::load(p_ptr + offs, mask);
      auto g = tl::load(g_ptr + offs, mask) + weight_decay * p;
      auto buf = keep * tl::load(buf_ptr + offs, mask) + scale * g;
      tl::store(buf_ptr + offs, buf, mask);
      auto d = NESTEROV ? g + momentum * buf : buf;
      tl::store(p_ptr + offs, p - lr * d, mask);
    },
    {"p_ptr", "g_ptr", "buf_ptr", "n", "lr", "weight_decay", "momentum", "keep", "scale", "NESTEROV", "found_inf_ptr", "SKIPPABLE", "BLOCK"});

// Adam and AdamW: p *= decay (AdamW's decoupled decay, 1 - lr * wd; 1 for Adam);
// g = grad + l2 * p (Adam's weight decay; 0 for AdamW); m = beta1 * m + (1 - beta1) * g;
// v = beta2 * v + (1 - beta2) * g^2; with AMSGRAD vmax = max(vmax, v) stands in for v below;
// p -= step_size * m / (sqrt(v) / bc2_sqrt + eps), step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t).
// Without AMSGRAD vmax_ptr is never touched.
auto adam_kernel = tritium::kernel(
    "adam_step",
    [](tl::ptr<float> p_ptr, tl::ptr<float> g_ptr, tl::ptr<float> m_ptr, tl::ptr<float> v_ptr,
       tl::ptr<float> vmax_ptr, tl::i32 n, tl::f32 decay, tl::f32 l2, tl::f32 beta1, tl::f32 one_minus_beta1,
       tl::f32 beta2, tl::f32 one_minus_beta2, tl::f32 step_size, tl::f32 bc2_sqrt, tl::f32 eps, bool AMSGRAD,
       tl::ptr<float> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      return_if_found_inf(found_inf_ptr, SKIPPABLE);
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      auto p = tl::load(p_ptr + offs, mask);
      auto g = tl::load(g_ptr + offs, mask) + l2 * p;
      p = p * decay;
      auto m = beta1 * tl::load(m_ptr + offs, mask) + one_minus_beta1 * g;
      auto v = beta2 * tl::load(v_ptr + offs, mask) + one_minus_beta2 * (g * g);
      tl::store(m_ptr + offs, m, mask);
      tl::store(v_ptr + offs, v, mask);
      if (AMSGRAD) {
        v = tl::maximum(tl::load(vmax_ptr + offs, mask), v);
        tl::store(vmax_ptr + offs, v, mask);
      }
      auto denom = tl::sqrt(v) / bc2_sqrt + eps;
      tl::store(p_ptr + offs, p - step_size * (m / denom), mask);
    },
    {"p_ptr", "g_ptr", "m_ptr", "v_ptr", "vmax_ptr", "n", "decay", "l2", "beta1", "one_minus_beta1", "beta2",
     "one_minus_beta2", "step_size", "bc2_sqrt", "eps", "AMSGRAD", "found_inf_ptr", "SKIPPABLE", "BLOCK"});

// RMSprop: g = grad + wd * p; sq = alpha * sq + (1 - alpha) * g^2; CENTERED: ga = alpha * ga +
// (1 - alpha) * g, avg = sqrt(sq - ga^2) + eps, else avg = sqrt(sq) + eps; MOMENTUM: buf = momentum *
// buf + g / avg, p -= lr * buf, else p -= lr * g / avg. ga_ptr / buf_ptr are untouched when unused.
auto rmsprop_kernel = tritium::kernel(
    "rmsprop_step",
    [](tl::ptr<float> p_ptr, tl::ptr<float> g_ptr, tl::ptr<float> sq_ptr, tl::ptr<float> ga_ptr,
       tl::ptr<float> buf_ptr, tl::i32 n, tl::f32 lr, tl::f32 weight_decay, tl::f32 alpha, tl::f32 one_minus_alpha,
       tl::f32 eps, tl::f32 momentum, bool CENTERED, bool MOMENTUM, tl::ptr<float> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      return_if_found_inf(found_inf_ptr, SKIPPABLE);
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      auto p = tl::load(p_ptr + offs, mask);
      auto g = tl::load(g_ptr + offs, mask) + weight_decay * p;
      auto sq = alpha * tl::load(sq_ptr + offs, mask) + one_minus_alpha * (g * g);
      tl::store(sq_ptr + offs, sq, mask);
      auto var = sq;
      if (CENTERED) {
        auto ga = alpha * tl::load(ga_ptr + offs, mask) + one_minus_alpha * g;
        tl::store(ga_ptr + offs, ga, mask);
        var = sq - ga * ga;
      }
      auto d = g / (tl::sqrt(var) + eps);
      if (MOMENTUM) {
        d = momentum * tl::load(buf_ptr + offs, mask) + d;
        tl::store(buf_ptr + offs, d, mask);
      }
      tl::store(p_ptr + offs, p - lr * d, mask);
    },
    {"p_ptr", "g_ptr", "sq_ptr", "ga_ptr", "buf_ptr", "n", "lr", "weight_decay", "alpha", "one_minus_alpha", "eps",
     "momentum", "CENTERED", "MOMENTUM", "found_inf_ptr", "SKIPPABLE", "BLOCK"});

// Adagrad: g = grad + wd * p; sum += g^2; p -= clr * g / (sqrt(sum) + eps), clr from the host.
auto adagrad_kernel = tritium::kernel(
    "adagrad_step",
    [](tl::ptr<float> p_ptr, tl::ptr<float> g_ptr, tl::ptr<float> sum_ptr, tl::i32 n, tl::f32 clr,
       tl::f32 weight_decay, tl::f32 eps, tl::ptr<float> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      return_if_found_inf(found_inf_ptr, SKIPPABLE);
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      auto p = tl::load(p_ptr + offs, mask);
      auto g = tl::load(g_ptr + offs, mask) + weight_decay * p;
      auto sum = tl::load(sum_ptr + offs, mask) + g * g;
      tl::store(sum_ptr + offs, sum, mask);
      tl::store(p_ptr + offs, p - clr * (g / (tl::sqrt(sum) + eps)), mask);
    },
    {"p_ptr", "g_ptr", "sum_ptr", "n", "clr", "weight_decay", "eps", "found_inf_ptr", "SKIPPABLE", "BLOCK"});

// Adam's and AdamW's launch: the scalars of step t, then the kernel.
void launch_adam(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, Tensor& vmax, int32_t n, int64_t t, double lr,
                 std::pair<double, double> betas, double eps, double decay, double l2, const Tensor& skip_flag, bool skippable,
                 const tritium::Options& opts);

int32_t kernel_size(const Tensor& p, const char* optimizer) {
  if (p.numel() > std::numeric_limits<int32_t>::max())
    fail("{}: parameter {} has more than 2^31 - 1 elements", optimizer, p.str());
  return static_cast<int32_t>(p.numel());
}

tritium::Grid grid_for(int32_t n) { return tritium::Grid(std::max<int64_t>(1, tritium::cdiv(n, kBlock))); }

void launch_adam(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, Tensor& vmax, int32_t n, int64_t t, double lr,
                 std::pair<double, double> betas, double eps, double decay, double l2, const Tensor& skip_flag, bool skippable,
                 const tritium::Options& opts) {
  auto [beta1, beta2] = betas;
  double bias_correction1 = 1 - std::pow(beta1, double(t));
  double bias_correction2 = 1 - std::pow(beta2, double(t));
  bool amsgrad = vmax.defined();
  adam_kernel[grid_for(n)](p, g, m, v, amsgrad ? vmax : v, n, float(decay), float(l2), float(beta1), float(1 - beta1),
                           float(beta2), float(1 - beta2), float(lr / bias_correction1),
                           float(std::sqrt(bias_correction2)), float(eps), amsgrad, skip_flag, skippable, kBlock, opts);
}

Tensor zeros_like_param(const Tensor& p) { return ops::zeros(p.shape(), DType::f32, p.device()); }

// PyTorch's constructor checks, with its wording.
void check_at_least(const char* optimizer, const char* what, double value, double low) {
  if (!(value >= low)) fail("{}: invalid {} {}", optimizer, what, value);
}

}  // namespace

template <class Update>
void Optimizer::update_each(const char* optimizer, Update&& update) {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor g = grad_for_step(i, optimizer);
    if (!g.defined()) continue;
    Tensor& p = params_[i];
    if (found_inf_.defined() && !(found_inf_.device() == p.device()))
      fail("{}: found_inf is on {} but parameter {} on {}", optimizer, found_inf_.device().str(), i, p.device().str());
    update(i, p, g, kernel_size(p, optimizer), tritium::Options{.device = p.device()});
    p.storage()->bump_version();  // an in-place update, as PyTorch's: a graph that saved p refuses backward
  }
}

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
  update_each("SGD", [&](size_t i, Tensor& p, const Tensor& g, int32_t n, const tritium::Options& opts) {
    if (momentum == 0) {
      sgd_kernel[grid_for(n)](p, g, n, float(lr), float(weight_decay), skip_flag(p), found_inf_.defined(), kBlock, opts);
      return;
    }
    bool first = !buffers_[i].defined();
    if (first) buffers_[i] = zeros_like_param(p);
    float keep = first ? 0.0f : float(momentum);
    float scale = first ? 1.0f : float(1 - dampening);
    sgd_momentum_kernel[grid_for(n)](p, g, buffers_[i], n, float(lr), float(weight_decay), float(momentum), keep,
                                      scale, nesterov, skip_flag(p), found_inf_.defined(), kBlock, opts);
  });
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
  update_each("AdamW", [&](size_t i, Tensor& p, const Tensor& g, int32_t n, const tritium::Options& opts) {
    if (!exp_avg_[i].defined()) exp_avg_[i] = zeros_like_param(p), exp_avg_sq_[i] = zeros_like_param(p);
    Tensor no_max;
    launch_adam(p, g, exp_avg_[i], exp_avg_sq_[i], no_max, n, ++steps_[i], lr, betas, eps, 1 - lr * weight_decay, 0,
                skip_flag(p), found_inf_.defined(), opts);
  });
}

// ---- Adam ----------------------------------------------------------------------------------------

Adam::Adam(std::vector<Tensor> params, double lr_, std::pair<double, double> betas_, double eps_, double weight_decay_,
           bool amsgrad_)
    : Optimizer(std::move(params)), lr(lr_), betas(betas_), eps(eps_), weight_decay(weight_decay_), amsgrad(amsgrad_),
      exp_avg_(params_.size()), exp_avg_sq_(params_.size()), max_exp_avg_sq_(params_.size()),
      steps_(params_.size(), 0) {
  check_at_least("Adam", "learning rate", lr, 0);
  check_at_least("Adam", "epsilon", eps, 0);
  if (!(betas.first >= 0 && betas.first < 1)) fail("Adam: invalid beta parameter at index 0: {}", betas.first);
  if (!(betas.second >= 0 && betas.second < 1)) fail("Adam: invalid beta parameter at index 1: {}", betas.second);
  check_at_least("Adam", "weight_decay", weight_decay, 0);
}

void Adam::step() {
  update_each("Adam", [&](size_t i, Tensor& p, const Tensor& g, int32_t n, const tritium::Options& opts) {
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] = zeros_like_param(p), exp_avg_sq_[i] = zeros_like_param(p);
      if (amsgrad) max_exp_avg_sq_[i] = zeros_like_param(p);
    }
    Tensor no_max;
    launch_adam(p, g, exp_avg_[i], exp_avg_sq_[i], amsgrad ? max_exp_avg_sq_[i] : no_max, n, ++steps_[i], lr, betas,
                eps, 1, weight_decay, skip_flag(p), found_inf_.defined(), opts);
  });
}

// ---- RMSprop -------------------------------------------------------------------------------------

RMSprop::RMSprop(std::vector<Tensor> params, double lr_, double alpha_, double eps_, double weight_decay_,
                 double momentum_, bool centered_)
    : Optimizer(std::move(params)), lr(lr_), alpha(alpha_), eps(eps_), weight_decay(weight_decay_),
      momentum(momentum_), centered(centered_), square_avg_(params_.size()), grad_avg_(params_.size()),
      momentum_buffer_(params_.size()), steps_(params_.size(), 0) {
  check_at_least("RMSprop", "learning rate", lr, 0);
  check_at_least("RMSprop", "epsilon", eps, 0);
  check_at_least("RMSprop", "momentum", momentum, 0);
  check_at_least("RMSprop", "weight_decay", weight_decay, 0);
  check_at_least("RMSprop", "alpha", alpha, 0);
}

void RMSprop::step() {
  update_each("RMSprop", [&](size_t i, Tensor& p, const Tensor& g, int32_t n, const tritium::Options& opts) {
    if (!square_avg_[i].defined()) {
      square_avg_[i] = zeros_like_param(p);
      if (momentum > 0) momentum_buffer_[i] = zeros_like_param(p);
      if (centered) grad_avg_[i] = zeros_like_param(p);
    }
    ++steps_[i];
    Tensor& sq = square_avg_[i];
    rmsprop_kernel[grid_for(n)](p, g, sq, centered ? grad_avg_[i] : sq, momentum > 0 ? momentum_buffer_[i] : sq, n,
                                float(lr), float(weight_decay), float(alpha), float(1 - alpha), float(eps),
                                float(momentum), centered, momentum > 0, skip_flag(p), found_inf_.defined(), kBlock, opts);
  });
}

// ---- Adagrad -------------------------------------------------------------------------------------

Adagrad::Adagrad(std::vector<Tensor> params, double lr_, double lr_decay_, double weight_decay_,
                 double initial_accumulator_value_, double eps_)
    : Optimizer(std::move(params)), lr(lr_), lr_decay(lr_decay_), weight_decay(weight_decay_),
      initial_accumulator_value(initial_accumulator_value_), eps(eps_), sum_(params_.size()),
      steps_(params_.size(), 0) {
  check_at_least("Adagrad", "learning rate", lr, 0);
  check_at_least("Adagrad", "lr_decay", lr_decay, 0);
  check_at_least("Adagrad", "weight_decay", weight_decay, 0);
  check_at_least("Adagrad", "initial_accumulator_value", initial_accumulator_value, 0);
  check_at_least("Adagrad", "epsilon", eps, 0);
}

void Adagrad::step() {
  update_each("Adagrad", [&](size_t i, Tensor& p, const Tensor& g, int32_t n, const tritium::Options& opts) {
    if (!sum_[i].defined()) sum_[i] = ops::full(p.shape(), initial_accumulator_value, DType::f32, p.device());
    double t = static_cast<double>(++steps_[i]);
    double clr = lr / (1 + (t - 1) * lr_decay);
    adagrad_kernel[grid_for(n)](p, g, sum_[i], n, float(clr), float(weight_decay), float(eps), skip_flag(p), found_inf_.defined(), kBlock, opts);
  });
}

}  // namespace tritium::nn
