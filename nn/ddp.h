// torch.nn.parallel.DistributedDataParallel: data-parallel training of one model replica per
// process. At construction the parameters and buffers are broadcast from rank 0 (so every
// replica starts equal) after checking that every rank has the same parameters. During backward,
// each parameter's post-accumulate-grad hook copies its gradient into its bucket
// (nn/ddp_buckets.h); the bucket whose last gradient arrives is all-reduced (averaged) at once,
// asynchronously, while backward goes on with the rest (buckets are launched in order, so that
// every rank issues the same collectives). The last hook of the backward waits for the buckets
// and writes the averaged gradients back to .grad: after loss.backward() every rank holds the
// gradient of the global batch's mean loss, and optimizer.step() keeps the replicas equal.
//
//   dist::init_process_group("gloo");
//   auto model = std::make_shared<nn::Sequential>(...);
//   nn::DistributedDataParallel ddp(model);
//   Tensor loss = cross_entropy(ddp(x), y);   // x: this rank's part of the batch
//   loss.backward();                          // gradients averaged over the ranks
//   optimizer.step();                         // optimiser over model->parameters()
//
// no_sync() (a guard) skips the reduction: gradients accumulate locally, and the first backward
// after the guard ends reduces the sum. find_unused_parameters: parameters that the forward's
// output does not depend on are found by walking its graph and count as ready with a zero
// gradient (without it, such a parameter is an error at the next forward, naming it, as in
// PyTorch). gradient_as_bucket_view: after the reduction .grad is a view of its bucket (no
// second copy of the gradients is kept between steps; the engine still accumulates into a new
// tensor, which the next backward copies into the bucket).
//
// Buckets are rebuilt once, as PyTorch's Reducer does: the first synchronised backward records
// the order in which the gradients became ready, and the next forward re-forms the buckets in
// that order (rank 0's order, broadcast, so that every rank agrees), so that the first bucket
// fills first even when the parameters were registered in another order than the forward uses
// them. Not with find_unused_parameters (PyTorch's rule: the order may change every iteration).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "nn/module.h"
#include "nn/removable_handle.h"

namespace tritium::nn {

struct DistributedDataParallelOptions {
  std::shared_ptr<dist::ProcessGroup> process_group;  // null: dist::default_group()
  double bucket_cap_mb = 25;                          // PyTorch's defaults (MiB)
  double first_bucket_cap_mb = 1;
  bool broadcast_buffers = true;  // every forward, rank 0's buffers (BatchNorm statistics) to all
  bool find_unused_parameters = false;
  bool gradient_as_bucket_view = false;
};

class DistributedDataParallel : public Module {
 public:
  explicit DistributedDataParallel(std::shared_ptr<Module> module, DistributedDataParallelOptions options = {});
  ~DistributedDataParallel() override;
  DistributedDataParallel(DistributedDataParallel&&) = delete;  // the hooks hold `this`
  DistributedDataParallel& operator=(DistributedDataParallel&&) = delete;

  Tensor forward(const Tensor& x) override;
  std::vector<Tensor> forward_many(const std::vector<Tensor>& inputs) override;
  std::string type_name() const override { return "DistributedDataParallel"; }

  Module& module() { return *module_; }
  const std::shared_ptr<Module>& module_ptr() const { return module_; }
  const std::shared_ptr<dist::ProcessGroup>& process_group() const { return group_; }
  // The buckets as indices into module().parameters() (requires_grad ones), in launch order.
  const std::vector<std::vector<int>>& bucket_assignment() const { return assignment_; }
  // Whether the buckets have been rebuilt in the order gradients became ready (after the first
  // synchronised backward, at the next forward).
  bool buckets_rebuilt() const { return rebuilt_; }
  // Bucket all-reduces launched so far (PyTorch's DDP logging counts the same): none under
  // no_sync, one per bucket for each synchronised backward.
  int64_t buckets_reduced() const { return buckets_reduced_; }

  // While alive, forward passes through this model prepare no reduction, so their backward
  // passes reduce nothing (PyTorch's no_sync() context manager: the forward decides).
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& ddp) : ddp_(&ddp), previous_(ddp.sync_) { ddp.sync_ = false; }
    ~NoSyncGuard() { ddp_->sync_ = previous_; }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallel* ddp_;
    bool previous_;
  };
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  struct Bucket;

 private:
  void check_same_parameters_on_every_rank();
  void broadcast_from_rank0(std::vector<Tensor> tensors);
  void prepare_for_backward(const std::vector<Tensor>& outputs);
  void on_gradient(int param);
  void mark_ready(int param);
  void launch_ready_buckets();
  void finalize();
  void build_buckets(const std::vector<int>& order);
  void rebuild_buckets();
  std::string unready_parameter_names() const;

  std::shared_ptr<Module> module_;
  DistributedDataParallelOptions options_;
  std::shared_ptr<dist::ProcessGroup> group_;
  std::vector<Tensor> params_;         // the module's parameters that require grad
  std::vector<std::string> names_;     // and their names
  std::vector<std::vector<int>> assignment_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<std::pair<int, int64_t>> location_;  // per parameter: its bucket and element offset
  std::vector<RemovableHandle> hooks_;
  bool sync_ = true;
  bool expect_hooks_ = false;  // a forward prepared a reduction that backward has not finished
  bool reduction_started_ = false;
  std::vector<char> ready_, used_;  // per parameter, this iteration
  size_t next_bucket_ = 0;
  bool rebuilt_ = false;
  std::vector<int> ready_order_;  // the first synchronised backward's gradient order
  int64_t buckets_reduced_ = 0;
};

}  // namespace tritium::nn
