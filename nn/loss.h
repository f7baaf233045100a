// Losses of issue 30 item 2: the differentiable functions (torch.nn.functional's names,
// arguments and defaults; reduction "none" | "mean" | "sum") and the loss modules (torch.nn's
// names: forward(input, target), repr "MSELoss()"). cross_entropy and nll_loss run fused kernels
// (ops/losses.h); the element-wise losses are compositions of differentiable ops (docs/ops.md
// says which). Include "nn/loss.h" (docs/nn.md).
#pragma once
#include <string>

#include "nn/module.h"

namespace tritium {

// torch.nn.functional.cross_entropy: target class indices (i64 or u8, input's shape without the
// class dim 1) or class probabilities (floating, input's shape); input [C], [N, C] or
// [N, C, d1, ...]. weight [C] (undefined: ones); mean divides by the summed weights of the
// non-ignored targets (class indices) or by the number of rows (probabilities). The two-argument
// cross_entropy(logits, targets) of nn/functional.h stays (mean, i32 labels accepted).
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index = -100,
                     const std::string& reduction = "mean", double label_smoothing = 0.0);
// torch.nn.functional.nll_loss: input holds log-probabilities.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {}, int64_t ignore_index = -100,
                const std::string& reduction = "mean");
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta 0: l1_loss); beta >= 0.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                      double beta = 1.0);
// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); delta > 0.
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                  double delta = 1.0);
// -w (t log x + (1 - t) log(1 - x)), each log clamped at -100 as PyTorch; input and target of one
// shape with values in [0, 1] (checked: an error otherwise).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            const std::string& reduction = "mean");
// -w (p t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))) in the stable form
// (1 - t) x + (1 + (p - 1) t) softplus(-x); pos_weight p broadcasts over the last dim (classes).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                        const std::string& reduction = "mean", const Tensor& pos_weight = {});
// target (log(target) - input), or exp(target) (target - input) with log_target; reduction also
// "batchmean" (the sum over the batch size).
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
              bool log_target = false);
// 1 - cos(x1, x2) where target is 1, max(0, cos - margin) where it is -1; x1, x2 [N, D] or [D].
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                             const std::string& reduction = "mean");

namespace nn {

// A loss module: options fixed at construction, forward(input, target).
class Loss : public Module {
 public:
  using Module::forward;  // the one-input forward stays the base's error
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string str() const override { return type_name() + "()"; }

  std::string reduction;

 protected:
  explicit Loss(std::string reduction);
  // PyTorch's _WeightedLoss: a class-weight tensor is a buffer (in state_dict, moved by to());
  // an undefined one (PyTorch's None) is not registered.
  Tensor weight_buffer(const std::string& name, Tensor t) { return t.defined() ? register_buffer(name, t) : t; }
  Tensor moved_buffer(const std::string& name, const Tensor& t) const { return t.defined() ? buffer(name) : t; }
};

#define TRITIUM_LOSS_TYPE(Name) \
 protected:                     \
  std::string type_name() const override { return #Name; }

class NLLLoss : public Loss {
 public:
  explicit NLLLoss(Tensor weight = {}, int64_t ignore_index = -100, std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor weight;  // a buffer when defined
  int64_t ignore_index;
  TRITIUM_LOSS_TYPE(NLLLoss)
  void parameters_moved() override;
};

class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(Tensor weight = {}, int64_t ignore_index = -100, std::string reduction = "mean",
                            double label_smoothing = 0.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor weight;  // a buffer when defined
  int64_t ignore_index;
  double label_smoothing;
  TRITIUM_LOSS_TYPE(CrossEntropyLoss)
  void parameters_moved() override;
};

class MSELoss : public Loss {
 public:
  explicit MSELoss(std::string reduction = "mean") : Loss(std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  TRITIUM_LOSS_TYPE(MSELoss)
};

class L1Loss : public Loss {
 public:
  explicit L1Loss(std::string reduction = "mean") : Loss(std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  TRITIUM_LOSS_TYPE(L1Loss)
};

class SmoothL1Loss : public Loss {
 public:
  explicit SmoothL1Loss(std::string reduction = "mean", double beta = 1.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  double beta;
  TRITIUM_LOSS_TYPE(SmoothL1Loss)
};

class HuberLoss : public Loss {
 public:
  explicit HuberLoss(std::string reduction = "mean", double delta = 1.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  double delta;
  TRITIUM_LOSS_TYPE(HuberLoss)
};

class BCELoss : public Loss {
 public:
  explicit BCELoss(Tensor weight = {}, std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor weight;  // a buffer when defined
  TRITIUM_LOSS_TYPE(BCELoss)
  void parameters_moved() override;
};

class BCEWithLogitsLoss : public Loss {
 public:
  explicit BCEWithLogitsLoss(Tensor weight = {}, std::string reduction = "mean", Tensor pos_weight = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor weight, pos_weight;  // buffers when defined
  TRITIUM_LOSS_TYPE(BCEWithLogitsLoss)
  void parameters_moved() override;
};

class KLDivLoss : public Loss {
 public:
  explicit KLDivLoss(std::string reduction = "mean", bool log_target = false);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  bool log_target;
  TRITIUM_LOSS_TYPE(KLDivLoss)
};

// forward(input1, input2, target); the two-argument forward is an error naming the module.
class CosineEmbeddingLoss : public Loss {
 public:
  explicit CosineEmbeddingLoss(double margin = 0.0, std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target);
  Tensor operator()(const Tensor& input1, const Tensor& input2, const Tensor& target) {
    return forward(input1, input2, target);
  }
  using Loss::operator();
  double margin;
  TRITIUM_LOSS_TYPE(CosineEmbeddingLoss)
};

#undef TRITIUM_LOSS_TYPE

}  // namespace nn
}  // namespace tritium
