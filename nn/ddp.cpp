// DistributedDataParallel's reducer: buckets, the hooks that fill them, in-order launches, and the
// write-back of the averaged gradients at the end of backward.
#include "nn/ddp.h"

#include <unordered_set>

#include "common/error.h"
#include "dist/distributed.h"
#include "nn/autograd.h"
#include "nn/ddp_buckets.h"
#include "profiler/hooks.h"

namespace tritium::nn {

struct DistributedDataParallel::Bucket {
  std::vector<int> params;  // indices into params_, in launch order
  Tensor flat;              // the bucket's gradients, one after another
  int pending = 0;          // gradients still to come this iteration
  dist::WorkPtr work;       // its all-reduce, once launched
};

namespace {

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

// Leaves reachable from the outputs' graphs (the parameters the outputs depend on).
std::unordered_set<const AutogradMeta*> reachable_leaves(const std::vector<Tensor>& outputs) {
  std::unordered_set<const AutogradMeta*> leaves;
  std::unordered_set<const Node*> seen;
  std::vector<std::shared_ptr<Node>> stack;
  for (const Tensor& t : outputs) {
    if (!t.defined() || !t.autograd()) continue;
    if (t.autograd()->grad_fn) stack.push_back(t.autograd()->grad_fn);
    else if (t.autograd()->requires_grad) leaves.insert(t.autograd().get());
  }
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(n.get()).second) continue;
    for (const Edge& e : n->next) {
      if (e.leaf) leaves.insert(e.leaf.get());
      if (e.node) stack.push_back(e.node);
    }
  }
  return leaves;
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module, DistributedDataParallelOptions options)
    : module_(std::move(module)), options_(std::move(options)) {
  if (!module_) fail("DistributedDataParallel: the module is null");
  group_ = options_.process_group ? options_.process_group : dist::default_group();
  register_module("module", module_);
  for (auto& [name, p] : module_->named_parameters())
    if (p.requires_grad()) params_.push_back(p), names_.push_back(name);
  if (params_.empty())
    fail("DistributedDataParallel: the module has no parameter that requires grad (nothing to synchronise)");

  check_same_parameters_on_every_rank();
  // Every replica starts from rank 0's parameters and buffers.
  std::vector<Tensor> state = module_->parameters();
  for (const Tensor& b : module_->buffers()) state.push_back(b);
  broadcast_from_rank0(state);

  std::vector<int> reverse;
  for (int i = static_cast<int>(params_.size()) - 1; i >= 0; --i) reverse.push_back(i);
  build_buckets(reverse);
  ready_.assign(params_.size(), 0);
  used_.assign(params_.size(), 0);
  for (size_t i = 0; i < params_.size(); ++i)
    hooks_.push_back(params_[i].register_post_accumulate_grad_hook(
        [this, i](const Tensor&) { on_gradient(static_cast<int>(i)); }));
}

DistributedDataParallel::~DistributedDataParallel() {
  for (auto& h : hooks_) h.remove();
  for (auto& b : buckets_)  // a collective in flight must not outlive its bucket unwaited
    if (b->work) try {
        b->work->wait();
      } catch (const std::exception&) {
      }
}

// The buckets, filled in `order` (parameter indices), each closed at its cap.
void DistributedDataParallel::build_buckets(const std::vector<int>& order) {
  std::vector<BucketedTensor> sizes;
  for (const Tensor& p : params_)
    sizes.push_back({p.nbytes(), std::string(dtype_name(p.dtype())) + "@" + p.device().str()});
  assignment_ = compute_bucket_assignment(sizes, static_cast<int64_t>(options_.first_bucket_cap_mb * 1024 * 1024),
                                          static_cast<int64_t>(options_.bucket_cap_mb * 1024 * 1024), order);
  buckets_.clear();
  location_.assign(params_.size(), {0, 0});
  for (size_t b = 0; b < assignment_.size(); ++b) {
    auto bucket = std::make_unique<Bucket>();
    bucket->params = assignment_[b];
    int64_t total = 0;
    for (int i : bucket->params) location_[i] = {static_cast<int>(b), total}, total += params_[i].numel();
    const Tensor& first = params_[bucket->params[0]];
    bucket->flat = Tensor::zeros({total}, first.dtype(), first.device());
    buckets_.push_back(std::move(bucket));
  }
}

// PyTorch's Reducer::rebuild_buckets: once, after the first synchronised backward, the buckets are
// re-formed in the order its gradients became ready. Ranks may have seen different orders (the
// engine's order is deterministic, but threads of a CPU backend are not the point): rank 0's wins.
void DistributedDataParallel::rebuild_buckets() {
  rebuilt_ = true;
  std::vector<int> order = std::move(ready_order_);
  ready_order_.clear();
  if (order.size() != params_.size()) return;  // not every gradient arrived (cannot happen without unused ones)
  if (group_->size() > 1) {
    std::vector<int64_t> wide(order.begin(), order.end());
    Tensor t = Tensor::from_vector<int64_t>(wide, {static_cast<int64_t>(wide.size())}, params_[0].device());
    group_->broadcast(t, 0)->wait();
    wide = t.to_vector<int64_t>();
    order.assign(wide.begin(), wide.end());
  }
  build_buckets(order);
}

void DistributedDataParallel::check_same_parameters_on_every_rank() {
  // [count, elements, a hash of the shapes]: equal everywhere, or the replicas differ.
  uint64_t hash = 1469598103934665603ull;
  int64_t elements = 0;
  for (const Tensor& p : params_) {
    elements += p.numel();
    for (int64_t d : p.shape()) hash = (hash ^ static_cast<uint64_t>(d)) * 1099511628211ull;
    hash = (hash ^ static_cast<uint64_t>(p.dtype())) * 1099511628211ull;
  }
  Device device = params_[0].device();
  Tensor mine = Tensor::from_vector<int64_t>(
      {static_cast<int64_t>(params_.size()), elements, static_cast<int64_t>(hash >> 1)}, {3}, device);
  std::vector<Tensor> all;
  for (int r = 0; r < group_->size(); ++r) all.push_back(Tensor::zeros({3}, DType::i64, device));
  group_->all_gather(all, mine)->wait();
  auto reference = all[0].to_vector<int64_t>();
  for (int r = 1; r < group_->size(); ++r) {
    auto other = all[r].to_vector<int64_t>();
    if (other != reference)
      fail("DistributedDataParallel: the replicas differ: rank 0 has {} parameters of {} elements, rank {} has {} of "
           "{}{} (every rank must build the same model)",
           reference[0], reference[1], r, other[0], other[1],
           other[0] == reference[0] && other[1] == reference[1] ? " with other shapes or dtypes" : "");
  }
}

void DistributedDataParallel::broadcast_from_rank0(std::vector<Tensor> tensors) {
  if (group_->size() == 1) return;
  std::vector<dist::WorkPtr> works;
  for (Tensor& t : tensors) works.push_back(group_->broadcast(t, 0));
  for (auto& w : works) w->wait();
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  std::vector<Tensor> out = forward_many({x});
  if (out.size() != 1)
    fail("DistributedDataParallel: the module returned {} outputs; call forward_many for several", out.size());
  return out[0];
}

std::vector<Tensor> DistributedDataParallel::forward_many(const std::vector<Tensor>& inputs) {
  if (expect_hooks_ && reduction_started_)
    fail("DistributedDataParallel: expected to have finished the gradient reduction of the previous iteration "
         "before starting a new one: parameters that received no gradient on rank {}: {}. The module has "
         "parameters that were not used in producing the loss: pass find_unused_parameters = true, or make every "
         "output take part in the loss",
         group_->rank(), unready_parameter_names());
  if (options_.broadcast_buffers) {
    std::vector<Tensor> buffers = module_->buffers();
    if (!buffers.empty()) {
      NoGradGuard no_grad;
      broadcast_from_rank0(buffers);
    }
  }
  // The first synchronised backward recorded its gradient order: re-form the buckets once.
  if (grad_enabled() && sync_ && !rebuilt_ && !ready_order_.empty()) rebuild_buckets();
  std::vector<Tensor> outputs = module_->forward_many(inputs);
  if (grad_enabled() && sync_) prepare_for_backward(outputs);
  return outputs;
}

void DistributedDataParallel::prepare_for_backward(const std::vector<Tensor>& outputs) {
  expect_hooks_ = true;
  reduction_started_ = false;
  next_bucket_ = 0;
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(used_.begin(), used_.end(), 0);
  for (auto& b : buckets_) b->pending = static_cast<int>(b->params.size()), b->work.reset();
  if (!options_.find_unused_parameters) return;
  auto reachable = reachable_leaves(outputs);
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (reachable.count(params_[i].autograd().get())) continue;
    auto [b, offset] = location_[i];
    Tensor flat = buckets_[b]->flat;
    flat.as_strided({params_[i].numel()}, {1}, flat.storage_offset() + offset).zero_();
    mark_ready(static_cast<int>(i));
  }
}

void DistributedDataParallel::on_gradient(int param) {
  // The forward decided (PyTorch's rule): prepared outside no_sync, the reduction happens.
  if (!expect_hooks_) return;
  if (ready_[param])
    fail("DistributedDataParallel: parameter '{}' received its gradient twice in one backward (a parameter used "
         "by two reentrant backward passes is not supported)",
         names_[param]);
  reduction_started_ = true;
  used_[param] = 1;
  if (!rebuilt_ && !options_.find_unused_parameters) ready_order_.push_back(param);
  auto [b, offset] = location_[param];
  Tensor flat = buckets_[b]->flat;
  NoGradGuard no_grad;
  flat.as_strided({params_[param].numel()}, {1}, flat.storage_offset() + offset)
      .copy_(params_[param].grad().reshape({params_[param].numel()}));
  mark_ready(param);
}

void DistributedDataParallel::mark_ready(int param) {
  ready_[param] = 1;
  --buckets_[location_[param].first]->pending;
  launch_ready_buckets();
}

void DistributedDataParallel::launch_ready_buckets() {
  // In bucket order, so that every rank issues the same collectives in the same order.
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_]->pending == 0) {
    Bucket& b = *buckets_[next_bucket_];
    // A "ddp:bucket" range in a profile; the all-reduce issued inside carries the bucket's index.
    profiler::detail::BucketScope profiled(static_cast<int>(next_bucket_), b.flat.nbytes());
    b.work = group_->all_reduce(b.flat, dist::ReduceOp::avg);
    ++next_bucket_, ++buckets_reduced_;
  }
  if (next_bucket_ == buckets_.size()) finalize();
}

void DistributedDataParallel::finalize() {
  expect_hooks_ = false;
  reduction_started_ = false;
  for (auto& b : buckets_) b->work->wait();
  std::vector<int32_t> used_anywhere(params_.size(), 1);
  if (options_.find_unused_parameters) {
    // A parameter no rank used keeps its .grad (PyTorch's rule); the others get the average.
    std::vector<int32_t> local(used_.begin(), used_.end());
    Tensor used = Tensor::from_vector<int32_t>(local, {static_cast<int64_t>(local.size())}, params_[0].device());
    group_->all_reduce(used, dist::ReduceOp::sum)->wait();
    used_anywhere = used.to_vector<int32_t>();
  }
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!used_anywhere[i]) continue;
    auto [b, offset] = location_[i];
    Tensor flat = buckets_[b]->flat;
    Tensor view = flat.as_strided(params_[i].shape(), contiguous_strides(params_[i].shape()),
                                  flat.storage_offset() + offset);
    Tensor& grad = params_[i].autograd()->grad;
    if (options_.gradient_as_bucket_view) grad = view;
    else if (grad.defined()) grad.copy_(view);
    else grad = view.clone();
  }
}

std::string DistributedDataParallel::unready_parameter_names() const {
  std::string out;
  for (size_t i = 0; i < params_.size(); ++i)
    if (!ready_[i]) out += (out.empty() ? "" : ", ") + names_[i];
  return out;
}

}  // namespace tritium::nn
