// torch.nn.SyncBatchNorm: batch normalisation whose statistics are those of the global batch (the
// ranks' batches together) in training, for data-parallel training with small per-rank batches.
// The per-channel sums travel through all-reduces that autograd differentiates (the gradient of an
// all-reduce sum is the all-reduce sum of the gradients), so the input, weight and bias gradients
// are those of BatchNorm on the global batch (weight and bias: this rank's share, which DDP then
// averages). Evaluation, a group of one rank, and no initialised group behave as BatchNorm. Every
// rank must run the same SyncBatchNorm layers in the same order (their collectives pair up).
#pragma once
#include <memory>

#include "dist/process_group.h"
#include "nn/norm.h"

namespace tritium::nn {

class SyncBatchNorm : public BatchNorm {
 public:
  // process_group null: dist::default_group() when initialised.
  explicit SyncBatchNorm(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                         bool affine = true, bool track_running_stats = true,
                         std::shared_ptr<dist::ProcessGroup> process_group = nullptr);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "SyncBatchNorm"; }

  // torch.nn.SyncBatchNorm.convert_sync_batchnorm: every BatchNorm1d / BatchNorm2d (any
  // BatchNorm, a SyncBatchNorm included, which then gets this group) in the tree of `module` is
  // replaced by a SyncBatchNorm with the same settings that shares its parameters and buffers
  // (the same tensors: an optimiser built before keeps working) and its training flag. Returns
  // the new module when `module` itself is one, else `module`, changed in place. A BatchNorm
  // registered twice becomes one SyncBatchNorm registered twice. Call it before wrapping the model
  // in DistributedDataParallel. A replaced BatchNorm that is still called afterwards (its parent
  // calls a member handle instead of its registered child) is an error at that call.
  static std::shared_ptr<Module> convert_sync_batchnorm(std::shared_ptr<Module> module,
                                                        std::shared_ptr<dist::ProcessGroup> process_group = nullptr);

 protected:
  void check_input_dim(const Tensor& x) const override;  // [N, C, *]: at least 2D

 private:
  // like's settings, training flag and tensors (shared), for convert_sync_batchnorm.
  SyncBatchNorm(const BatchNorm& like, std::shared_ptr<dist::ProcessGroup> process_group);
  std::shared_ptr<dist::ProcessGroup> group_;
};

}  // namespace tritium::nn
