// Activation checkpointing by recomputation in backward (see nn/checkpoint.h).
#include "nn/checkpoint.h"

#include <memory>
#include <optional>

#include <fmt/format.h>

#include "nn/autocast.h"
#include "nn/module.h"

namespace tritium::nn {

namespace {

// The autocast state of each device type, as the forward saw it, put back around the
// recomputation (the backward runs outside the forward's autocast scope).
struct AutocastState {
  Device::Kind kind;
  bool enabled;
  DType dtype;
};

std::vector<AutocastState> autocast_now() {
  std::vector<AutocastState> out;
  for (Device::Kind kind : {Device::Kind::cpu, Device::Kind::cuda})
    out.push_back({kind, is_autocast_enabled(kind), get_autocast_dtype(kind)});
  return out;
}

}  // namespace

Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>& inputs)>& fn, const std::vector<Tensor>& inputs,
                  const std::vector<ops::Generator*>& generators, const std::vector<Tensor>& captured) {
  // The node's inputs: fn's, then the captured tensors.
  std::vector<Tensor> all = inputs;
  all.insert(all.end(), captured.begin(), captured.end());
  bool any = false;
  for (const Tensor& x : all) any = any || (x.defined() && x.requires_grad());
  if (!grad_enabled() || !any) return fn(inputs);  // nothing to recompute for

  // The generators' states as the forward found them (a copy is the seed and the offset).
  auto states = std::make_shared<std::vector<ops::Generator>>();
  for (ops::Generator* g : generators) {
    if (!g) fail("checkpoint: a generator pointer is null");
    states->push_back(*g);
  }
  std::vector<AutocastState> amp = autocast_now();
  Tensor out;
  {
    NoGradGuard no_grad;
    out = fn(inputs);
  }
  if (!out.defined()) fail("checkpoint: the function returned an undefined tensor");
  std::vector<uint64_t> versions;
  for (const Tensor& x : all) {
    check_savable(x, "checkpoint");
    versions.push_back(x.defined() ? x._version() : 0);
  }
  const size_t n_inputs = inputs.size();
  return record(std::move(out), all, "CheckpointFunctionBackward",
                [fn, all, n_inputs, versions, states, generators, amp](const Tensor& grad) {
                  std::vector<Tensor> leaves(n_inputs), wanted;
                  for (size_t i = 0; i < all.size(); ++i) {
                    const Tensor& x = all[i];
                    if (!x.defined()) continue;
                    if (x._version() != versions[i])
                      fail("CheckpointFunctionBackward: one of the variables needed for gradient computation has been "
                           "modified by an inplace operation: {} {} of checkpoint, is at version {}; expected "
                           "version {} instead",
                           i < n_inputs ? "input" : "captured tensor", i < n_inputs ? i : i - n_inputs, x._version(),
                           versions[i]);
                    if (i >= n_inputs) {
                      // fn reads the captured tensor itself: the recomputation records through it.
                      if (x.requires_grad()) wanted.push_back(x);
                      continue;
                    }
                    leaves[i] = x.detach();
                    if (x.requires_grad()) {
                      leaves[i].requires_grad_();
                      wanted.push_back(leaves[i]);
                    }
                  }
                  // Recompute with the forward's random streams and autocast state, then give the
                  // generators back the state they had before this backward.
                  std::vector<ops::Generator> now;
                  for (size_t i = 0; i < generators.size(); ++i) {
                    now.push_back(*generators[i]);
                    *generators[i] = (*states)[i];
                  }
                  Tensor y;
                  try {
                    EnableGradGuard grad_mode;
                    std::optional<autocast> amp0, amp1;
                    amp0.emplace(amp[0].kind, amp[0].dtype, amp[0].enabled);
                    amp1.emplace(amp[1].kind, amp[1].dtype, amp[1].enabled);
                    y = fn(leaves);
                  } catch (...) {
                    for (size_t i = 0; i < generators.size(); ++i) *generators[i] = now[i];
                    throw;
                  }
                  for (size_t i = 0; i < generators.size(); ++i) *generators[i] = now[i];
                  if (!y.requires_grad()) fail("checkpoint: the recomputed output does not require grad");
                  // allow_unused: a captured tensor the function did not read gets no gradient.
                  std::vector<Tensor> g = autograd::grad({y}, wanted, {grad}, false, grad_enabled(), true);
                  std::vector<Tensor> out(all.size());
                  size_t k = 0;
                  for (size_t i = 0; i < all.size(); ++i)
                    if (all[i].defined() && all[i].requires_grad()) out[i] = g[k++];
                  return out;
                });
}

Tensor checkpoint(Module& module, const Tensor& x, const std::vector<ops::Generator*>& generators) {
  return checkpoint([&module](const std::vector<Tensor>& in) { return module(in[0]); }, {x}, generators,
                    module.parameters());
}

}  // namespace tritium::nn
