// The losses of nn/loss.h: cross_entropy and nll_loss are one dispatch call each on their fused
// ops (ops/decl/losses.cpp); the element-wise losses are compositions of differentiable ops (a
// few launches each; autograd differentiates them), with PyTorch's argument checks.
#include "nn/loss.h"

#include <cmath>

#include "nn/dispatch.h"
#include "nn/elementwise_ops.h"
#include "nn/reduction_ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/losses.h"

namespace tritium {

namespace {

using ops::detail::shape_str;

Tensor reduce(const char* op, const Tensor& loss, const std::string& reduction) {
  switch (ops::parse_reduction(op, reduction)) {
    case ops::Reduction::none: return loss;
    case ops::Reduction::sum: return tritium::sum(loss);
    case ops::Reduction::mean: return tritium::mean(loss);
  }
  return loss;
}

void check_defined(const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (!t->defined()) fail("{}: an input is undefined", op);
}

void check_float(const char* op, const char* what, const Tensor& t) {
  if (!is_float(t.dtype())) fail("{}: expected a floating-point {}, got {}", op, what, dtype_name(t.dtype()));
}

void check_same_shape(const char* op, const Tensor& input, const Tensor& target) {
  if (input.shape() != target.shape())
    fail("{}: target size {} must be the same as input size {}", op, shape_str(target.shape()),
         shape_str(input.shape()));
}

// Every element in [0, 1]: max((t - 0.5)^2) <= 0.25 (kernels; one value read back).
void check_unit_range(const char* op, const char* what, const Tensor& t) {
  if (t.numel() == 0) return;
  Tensor d = ops::sub(ops::to_dtype(t, DType::f64), Scalar(0.5));
  double worst = ops::amax(ops::mul(d, d)).to_vector<double>()[0];
  if (!(worst <= 0.25)) fail("{}: all elements of {} should be between 0 and 1", op, what);
}

}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     const std::string& reduction, double label_smoothing) {
  return nn::call("cross_entropy_loss", {input, target, weight},
                  ops::Attrs{{"ignore_index", ignore_index}, {"reduction", reduction}, {"label_smoothing", label_smoothing}});
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                const std::string& reduction) {
  return nn::call("nll_loss", {input, target, weight}, ops::Attrs{{"ignore_index", ignore_index}, {"reduction", reduction}});
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  check_defined("mse_loss", {&input, &target});
  ops::parse_reduction("mse_loss", reduction);
  return reduce("mse_loss", square(input - target), reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  check_defined("l1_loss", {&input, &target});
  ops::parse_reduction("l1_loss", reduction);
  return reduce("l1_loss", abs(input - target), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double beta) {
  const char* op = "smooth_l1_loss";
  check_defined(op, {&input, &target});
  ops::parse_reduction(op, reduction);
  if (!(beta >= 0)) fail("{}: smooth_l1_loss does not support negative values for beta (got {})", op, beta);
  if (beta == 0) return l1_loss(input, target, reduction);
  Tensor d = abs(input - target);
  return reduce(op, where(ops::lt(d, Scalar(beta)), square(d) * (0.5 / beta), d - 0.5 * beta), reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double delta) {
  const char* op = "huber_loss";
  check_defined(op, {&input, &target});
  ops::parse_reduction(op, reduction);
  if (!(delta > 0)) fail("{}: huber_loss does not support non-positive values for delta (got {})", op, delta);
  Tensor d = abs(input - target);
  return reduce(op, where(ops::lt(d, Scalar(delta)), square(d) * 0.5, (d - 0.5 * delta) * delta), reduction);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const std::string& reduction) {
  const char* op = "binary_cross_entropy";
  check_defined(op, {&input, &target});
  ops::parse_reduction(op, reduction);
  check_float(op, "input", input);
  check_float(op, "target", target);
  check_same_shape(op, input, target);
  check_unit_range(op, "input", input);
  check_unit_range(op, "target", target);
  // PyTorch clamps each log at -100, so that a 0 or 1 probability gives a finite loss.
  Tensor loss = -(target * tritium::clamp_min(log(input), Scalar(-100.0)) +
                  (1.0 - target) * tritium::clamp_min(log(1.0 - input), Scalar(-100.0)));
  if (weight.defined()) loss = loss * weight;
  return reduce(op, loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const std::string& reduction, const Tensor& pos_weight) {
  const char* op = "binary_cross_entropy_with_logits";
  check_defined(op, {&input, &target});
  ops::parse_reduction(op, reduction);
  check_float(op, "input", input);
  check_float(op, "target", target);
  check_same_shape(op, input, target);
  // softplus(-x) = log(1 + exp(-x)), stable for large |x| (its threshold form is exact there).
  Tensor sp = softplus(-input);
  Tensor loss = pos_weight.defined() ? (1.0 - target) * input + (1.0 + (pos_weight - 1.0) * target) * sp
                                     : (1.0 - target) * input + sp;
  if (weight.defined()) loss = loss * weight;
  return reduce(op, loss, reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction, bool log_target) {
  const char* op = "kl_div";
  check_defined(op, {&input, &target});
  check_float(op, "input", input);
  check_float(op, "target", target);
  Tensor loss;
  if (log_target) {
    loss = exp(target) * (target - input);
  } else {
    // xlogy(t, t) - t * x: 0 where t = 0 (log of 1 there, so no 0 * inf in value or gradient).
    Tensor positive = ops::gt(target, Scalar(0.0));
    loss = target * log(where(positive, target, Scalar(1.0))) - target * input;
  }
  if (reduction == "batchmean") {
    if (input.dim() == 0) return tritium::sum(loss);
    return tritium::sum(loss) / Scalar(static_cast<double>(input.size(0)));
  }
  return reduce(op, loss, reduction);
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             const std::string& reduction) {
  const char* op = "cosine_embedding_loss";
  check_defined(op, {&input1, &input2, &target});
  ops::parse_reduction(op, reduction);
  if (input1.shape() != input2.shape())
    fail("{}: input1 and input2 must have one shape, got {} and {}", op, shape_str(input1.shape()),
         shape_str(input2.shape()));
  if (input1.dim() != 1 && input1.dim() != 2)
    fail("{}: expected 1-D or 2-D inputs (got {}-D: {})", op, input1.dim(), shape_str(input1.shape()));
  const bool batched = input1.dim() == 2;
  if (target.dim() != (batched ? 1 : 0) || (batched && target.size(0) != input1.size(0)))
    fail("{}: expected a target of shape {}, got {}", op, batched ? shape_str({input1.size(0)}) : "[]",
         shape_str(target.shape()));
  const double kEps = 1e-12;  // PyTorch's EPSILON in the norms' product
  const int d = input1.dim() - 1;
  Tensor prod = tritium::sum(input1 * input2, {d});
  Tensor m1 = tritium::sum(input1 * input1, {d}) + kEps, m2 = tritium::sum(input2 * input2, {d}) + kEps;
  Tensor cos = prod / sqrt(m1 * m2);
  Tensor t = ops::to_dtype(target, cos.dtype());
  Tensor pos = where(ops::eq(t, Scalar(1.0)), 1.0 - cos, Scalar(0.0));
  Tensor neg = where(ops::eq(t, Scalar(-1.0)), tritium::clamp_min(cos - margin, Scalar(0.0)), Scalar(0.0));
  return reduce(op, pos + neg, reduction);
}

namespace nn {

Loss::Loss(std::string reduction_) : reduction(std::move(reduction_)) {
  ops::parse_reduction("loss module", reduction);
}

NLLLoss::NLLLoss(Tensor w, int64_t ignore, std::string red) : Loss(std::move(red)), weight(weight_buffer("weight", std::move(w))), ignore_index(ignore) {}
void NLLLoss::parameters_moved() { weight = moved_buffer("weight", weight); }
Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  return tritium::nll_loss(input, target, weight, ignore_index, reduction);
}

CrossEntropyLoss::CrossEntropyLoss(Tensor w, int64_t ignore, std::string red, double ls)
    : Loss(std::move(red)), weight(weight_buffer("weight", std::move(w))), ignore_index(ignore), label_smoothing(ls) {}
void CrossEntropyLoss::parameters_moved() { weight = moved_buffer("weight", weight); }
Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return tritium::cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing);
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) { return tritium::mse_loss(input, target, reduction); }
Tensor L1Loss::forward(const Tensor& input, const Tensor& target) { return tritium::l1_loss(input, target, reduction); }

SmoothL1Loss::SmoothL1Loss(std::string red, double b) : Loss(std::move(red)), beta(b) {}
Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) {
  return tritium::smooth_l1_loss(input, target, reduction, beta);
}

HuberLoss::HuberLoss(std::string red, double d) : Loss(std::move(red)), delta(d) {}
Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) {
  return tritium::huber_loss(input, target, reduction, delta);
}

BCELoss::BCELoss(Tensor w, std::string red) : Loss(std::move(red)), weight(weight_buffer("weight", std::move(w))) {}
void BCELoss::parameters_moved() { weight = moved_buffer("weight", weight); }
Tensor BCELoss::forward(const Tensor& input, const Tensor& target) {
  return tritium::binary_cross_entropy(input, target, weight, reduction);
}

BCEWithLogitsLoss::BCEWithLogitsLoss(Tensor w, std::string red, Tensor pw)
    : Loss(std::move(red)), weight(weight_buffer("weight", std::move(w))), pos_weight(weight_buffer("pos_weight", std::move(pw))) {}
void BCEWithLogitsLoss::parameters_moved() {
  weight = moved_buffer("weight", weight);
  pos_weight = moved_buffer("pos_weight", pos_weight);
}
Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  return tritium::binary_cross_entropy_with_logits(input, target, weight, reduction, pos_weight);
}

KLDivLoss::KLDivLoss(std::string red, bool lt) : Loss("mean"), log_target(lt) {
  if (red != "batchmean") ops::parse_reduction("KLDivLoss", red);
  reduction = std::move(red);
}
Tensor KLDivLoss::forward(const Tensor& input, const Tensor& target) {
  return tritium::kl_div(input, target, reduction, log_target);
}

CosineEmbeddingLoss::CosineEmbeddingLoss(double m, std::string red) : Loss(std::move(red)), margin(m) {}
Tensor CosineEmbeddingLoss::forward(const Tensor&, const Tensor&) {
  fail("CosineEmbeddingLoss::forward takes (input1, input2, target)");
}
Tensor CosineEmbeddingLoss::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return tritium::cosine_embedding_loss(input1, input2, target, margin, reduction);
}

}  // namespace nn
}  // namespace tritium
