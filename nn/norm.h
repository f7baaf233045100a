// Normalisation layers of issue 30 beside LayerNorm: the differentiable functions (as
// torch.nn.functional's batch_norm, group_norm, rms_norm; ops/decl/norm.cpp declares them) and the
// modules BatchNorm1d, BatchNorm2d, GroupNorm, RMSNorm with PyTorch's arguments, parameter and
// buffer names, initialisation and repr. Include "nn/norm.h" (docs/nn.md).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"

namespace tritium {

// torch.nn.functional.batch_norm. training: batch statistics, and running_mean / running_var (if
// defined) updated in place with `momentum` (unbiased variance). Otherwise the running statistics
// (then required) normalise. Gradients reach input, weight and bias.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false, double momentum = 0.1,
                  double eps = 1e-5);
// torch.nn.functional.group_norm over [N, C, *]; weight and bias [C] (each optional).
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
// torch.nn.functional.rms_norm; eps nullopt: the epsilon of the compute type (f32's for f16 / bf16
// / f32, f64's for f64), as PyTorch's kernel.
Tensor rms_norm(const Tensor& input, const std::vector<int64_t>& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);

namespace nn {

// torch.nn.BatchNorm1d / BatchNorm2d. weight (ones) and bias (zeros) with affine (bias only with
// `bias`); running_mean (zeros), running_var (ones) and num_batches_tracked (i64 0) with
// track_running_stats. momentum nullopt: the cumulative average (1 / num_batches_tracked).
class BatchNorm : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string str() const override;

  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;
  Tensor weight, bias;
  // Buffers (in state_dict, moved by to()), with track_running_stats.
  Tensor running_mean, running_var, num_batches_tracked;

  // Zeroes the running statistics (running_var to ones) and the batch count.
  void reset_running_stats();

 protected:
  friend class SyncBatchNorm;
  // Set by SyncBatchNorm::convert_sync_batchnorm on the module it replaced: calling it afterwards
  // (through a stale member handle) would normalise without the group, so it is an error.
  bool replaced_by_sync_ = false;
  BatchNorm(int64_t num_features, double eps, std::optional<double> momentum, bool affine, bool track_running_stats,
            bool bias);
  // The settings, training flag and the very parameter and buffer tensors of `from` (registered
  // here too: SyncBatchNorm::convert_sync_batchnorm shares them, as PyTorch's does).
  struct ShareTensors {};
  BatchNorm(ShareTensors, const BatchNorm& from);
  virtual void check_input_dim(const Tensor& x) const = 0;
  void parameters_moved() override;
};

class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true, bool bias = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats, bias) {}

 protected:
  std::string type_name() const override { return "BatchNorm1d"; }
  void check_input_dim(const Tensor& x) const override;  // [N, C] or [N, C, L]
};

class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true, bool bias = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats, bias) {}

 protected:
  std::string type_name() const override { return "BatchNorm2d"; }
  void check_input_dim(const Tensor& x) const override;  // [N, C, H, W]
};

// torch.nn.GroupNorm: num_channels divisible by num_groups; weight ones, bias zeros with affine.
class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string str() const override;

  int64_t num_groups, num_channels;
  double eps;
  bool affine;
  Tensor weight, bias;

 protected:
  std::string type_name() const override { return "GroupNorm"; }
  void parameters_moved() override;
};

// torch.nn.RMSNorm: over the trailing dims normalized_shape; weight ones with elementwise_affine.
class RMSNorm : public Module {
 public:
  explicit RMSNorm(std::vector<int64_t> normalized_shape, std::optional<double> eps = std::nullopt,
                   bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  std::string str() const override;

  std::vector<int64_t> normalized_shape;
  std::optional<double> eps;
  Tensor weight;

 protected:
  std::string type_name() const override { return "RMSNorm"; }
  void parameters_moved() override;
};

}  // namespace nn
}  // namespace tritium
