// Losses of issue 30 item 2 that have fused kernels (raw, non-differentiable; ops/decl/losses.cpp
// declares them for autograd, nn/loss.h has every loss): cross_entropy with weight,
// ignore_index, label_smoothing, reduction and probability targets, and nll_loss, on [N, C] or
// [N, C, d1, ...] inputs, as torch.nn.functional's (docs/ops.md, "Losses").
#pragma once
#include <string_view>

#include "ops/ops.h"

namespace tritium::ops {

// PyTorch's reduction argument: "none", "mean" or "sum" (an error names any other).
enum class Reduction { none, mean, sum };
Reduction parse_reduction(const char* op, std::string_view reduction);
const char* reduction_name(Reduction r);

// What the backward reads beside the inputs: per-row log-sum-exp (cross_entropy), per-row aux
// (the picked class weight, 0 for ignored rows; for probability targets sum_c w_c p_c) and the
// total weight the mean divides by ([1], compute dtype).
struct ClassLossResult {
  Tensor loss, lse, aux, total_weight;
};

// target: class indices (i64 or u8) of input's shape without the class dim, or class
// probabilities (floating, input's shape). A class index outside [0, C) that is not ignore_index
// is an error naming it. mean divides by the sum of the picked weights (the count of
// non-ignored targets without weight); with probability targets by the number of rows.
ClassLossResult cross_entropy_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                   int64_t ignore_index, Reduction reduction, double label_smoothing);
Tensor cross_entropy_loss_backward(const Tensor& grad, const Tensor& input, const Tensor& target, const Tensor& weight,
                                   int64_t ignore_index, Reduction reduction, double label_smoothing,
                                   const Tensor& lse, const Tensor& aux, const Tensor& total_weight);

// input: log-probabilities; loss_i = -weight[t_i] * input[i, t_i].
ClassLossResult nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                         Reduction reduction);
Tensor nll_loss_backward(const Tensor& grad, const Tensor& input, const Tensor& target, const Tensor& weight,
                         int64_t ignore_index, Reduction reduction, const Tensor& aux, const Tensor& total_weight);

}  // namespace tritium::ops
