// Normalisation ops of issue 30 beside layer_norm (raw, non-differentiable; ops/decl/norm.cpp
// declares them for autograd): batch_norm, group_norm and rms_norm with fused backward kernels,
// as torch.nn.functional's (docs/ops.md, "Batch, group and RMS norm").
#pragma once
#include <optional>

#include "ops/ops.h"

namespace tritium::ops {

// Per-statistic mean and rstd (f32; f64 for f64 inputs) kept for the backward, beside the output.
struct NormResult {
  Tensor y, mean, rstd;
};
struct NormGrads {
  Tensor dx, dweight, dbias;  // dweight / dbias undefined where weight / bias are
};

// torch.nn.functional.rms_norm: y = x / sqrt(mean(x^2 over normalized_shape) + eps) * weight.
// eps nullopt: as PyTorch, the machine epsilon of the compute type: f32's for f16 / bf16 / f32
// inputs, f64's for f64 (PyTorch's docs say torch.finfo(x.dtype).eps; its kernel uses the opmath type).
// `mean` of the result is undefined (no centring).
NormResult rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                    std::optional<double> eps = std::nullopt);
NormGrads rms_norm_backward(const Tensor& grad, const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                            const Tensor& rstd);

// torch.nn.functional.group_norm on [N, C, *]: statistics per (sample, group of C / num_groups
// channels); weight and bias of shape [C] (each optional). mean / rstd are [N, num_groups].
NormResult group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps);
NormGrads group_norm_backward(const Tensor& grad, const Tensor& x, int64_t num_groups, const Tensor& weight,
                              const Tensor& bias, const Tensor& mean, const Tensor& rstd);

// torch.nn.functional.batch_norm on [N, C] or [N, C, *] (contiguous or channels-last inputs
// are read in place; channels-last gives a channels-last output). training: statistics of the
// batch (over N and the spatial dims), and running_mean / running_var (when defined) updated in
// place: r = (1 - momentum) r + momentum s, with the unbiased variance. Not training: the running
// statistics normalise. mean / rstd ([C]) are what the backward uses (the batch's or the running
// ones').
NormResult batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                      const Tensor& bias, bool training, double momentum, double eps);
// `training` tells whether mean / rstd are the batch's (their own gradient terms) or constants.
NormGrads batch_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& bias,
                              const Tensor& mean, const Tensor& rstd, bool training);

}  // namespace tritium::ops
