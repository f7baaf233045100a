// SyncBatchNorm's training forward from differentiable ops and a differentiable all-reduce: two
// passes (the global mean, then the global variance of the centred input) for accuracy.
#include "nn/sync_batch_norm.h"

#include <functional>
#include <unordered_map>

#include "common/error.h"
#include "dist/distributed.h"
#include "nn/autograd.h"
#include "nn/elementwise_ops.h"
#include "nn/functional.h"

namespace tritium::nn {

namespace {

// The sum of t over the group; its gradient is the sum of the gradients over the group.
Tensor all_reduce_sum(const Tensor& t, const std::shared_ptr<dist::ProcessGroup>& group) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = t.detach().contiguous().clone();
  }
  group->all_reduce(out, dist::ReduceOp::sum)->wait();
  return record(out, {t}, "SyncBatchNorm all_reduce", [group](const Tensor& grad) -> std::vector<Tensor> {
    NoGradGuard no_grad;
    Tensor g = grad.contiguous().clone();
    group->all_reduce(g, dist::ReduceOp::sum)->wait();
    return {g};
  });
}

}  // namespace

SyncBatchNorm::SyncBatchNorm(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                             bool track_running_stats, std::shared_ptr<dist::ProcessGroup> process_group)
    : BatchNorm(num_features, eps, momentum, affine, track_running_stats, /*bias=*/true),
      group_(std::move(process_group)) {}

SyncBatchNorm::SyncBatchNorm(const BatchNorm& like, std::shared_ptr<dist::ProcessGroup> process_group)
    : BatchNorm(ShareTensors{}, like), group_(std::move(process_group)) {}

void SyncBatchNorm::check_input_dim(const Tensor& x) const {
  if (x.dim() < 2) fail("SyncBatchNorm: expected at least 2D input (got {}D input)", x.dim());
  if (x.size(1) != num_features)
    fail("SyncBatchNorm: expected {} channels in dim 1, got input of shape {}", num_features, ir::shape_str(x.shape()));
}

std::shared_ptr<Module> SyncBatchNorm::convert_sync_batchnorm(std::shared_ptr<Module> module,
                                                             std::shared_ptr<dist::ProcessGroup> process_group) {
  if (!module) fail("SyncBatchNorm::convert_sync_batchnorm: the module is null");
  std::unordered_map<Module*, std::shared_ptr<Module>> converted;  // a shared child is converted once
  std::function<std::shared_ptr<Module>(const std::shared_ptr<Module>&)> convert =
      [&](const std::shared_ptr<Module>& m) -> std::shared_ptr<Module> {
    if (auto it = converted.find(m.get()); it != converted.end()) return it->second;
    std::shared_ptr<Module> out = m;
    if (auto* bn = dynamic_cast<BatchNorm*>(m.get())) {
      out = std::shared_ptr<SyncBatchNorm>(new SyncBatchNorm(*bn, process_group));
      bn->replaced_by_sync_ = true;
    } else {
      for (auto [name, child] : std::vector(m->named_children())) {
        std::shared_ptr<Module> now = convert(child);
        if (now != child) m->replace_module(name, now);
      }
    }
    converted[m.get()] = out;
    return out;
  };
  return convert(module);
}

Tensor SyncBatchNorm::forward(const Tensor& x) {
  if (!x.defined()) fail("SyncBatchNorm::forward: the input is undefined");
  check_input_dim(x);
  auto group = group_ ? group_ : dist::is_initialized() ? dist::default_group() : nullptr;
  if (!is_training() || !group || group->size() == 1) return BatchNorm::forward(x);

  std::vector<int> dims;
  for (int d = 0; d < x.dim(); ++d)
    if (d != 1) dims.push_back(d);
  std::vector<int64_t> channel_shape(x.dim(), 1);
  channel_shape[1] = num_features;
  // The global count (ranks may hold batches of different sizes).
  Tensor count = Tensor::from_vector<double>({static_cast<double>(x.numel() / num_features)}, {1}, x.device());
  group->all_reduce(count, dist::ReduceOp::sum)->wait();
  const double n = count.to_vector<double>()[0];
  if (n <= 1) fail("SyncBatchNorm: expected more than 1 value per channel when training (got {} over the group)", n);

  Tensor mean = all_reduce_sum(sum(x, dims), group) * (1.0 / n);
  Tensor centred = x - mean.reshape(channel_shape);
  Tensor var = all_reduce_sum(sum(centred * centred, dims), group) * (1.0 / n);  // biased, as the normalisation
  Tensor y = centred * rsqrt(var + eps).reshape(channel_shape);
  if (weight.defined()) y = y * weight.reshape(channel_shape);
  if (bias.defined()) y = y + bias.reshape(channel_shape);

  if (track_running_stats) {  // as BatchNorm's: unbiased variance, momentum or the cumulative average
    NoGradGuard no_grad;
    Tensor batches = ops::add(num_batches_tracked, Scalar(int64_t{1}));
    ops::copy_(num_batches_tracked, batches);
    double f = momentum ? *momentum : 1.0 / static_cast<double>(batches.to_vector<int64_t>()[0]);
    running_mean.copy_(running_mean * (1.0 - f) + mean.detach() * f);
    running_var.copy_(running_var * (1.0 - f) + var.detach() * (f * n / (n - 1)));
  }
  return y;
}

}  // namespace tritium::nn
