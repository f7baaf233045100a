// Activation checkpointing by recomputation in backward (see nn/checkpoint.h).
#include "nn/checkpoint.h"

#include <memory>

#include <fmt/format.h>

namespace tritium::nn {

Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>& inputs)>& fn, const std::vector<Tensor>& inputs,
                  const std::vector<ops::Generator*>& generators) {
  bool any = false;
  for (const Tensor& x : inputs) any = any || (x.defined() && x.requires_grad());
  if (!grad_enabled() || !any) return fn(inputs);  // nothing to recompute for

  // The generators' states as the forward found them (a copy is the seed and the offset).
  auto states = std::make_shared<std::vector<ops::Generator>>();
  for (ops::Generator* g : generators) {
    if (!g) fail("checkpoint: a generator pointer is null");
    states->push_back(*g);
  }
  Tensor out;
  {
    NoGradGuard no_grad;
    out = fn(inputs);
  }
  if (!out.defined()) fail("checkpoint: the function returned an undefined tensor");
  std::vector<uint64_t> versions;
  for (const Tensor& x : inputs) {
    check_savable(x, "checkpoint");
    versions.push_back(x.defined() ? x._version() : 0);
  }
  return record(std::move(out), inputs, "CheckpointFunctionBackward",
                [fn, inputs, versions, states, generators](const Tensor& grad) {
                  std::vector<Tensor> leaves(inputs.size()), wanted;
                  for (size_t i = 0; i < inputs.size(); ++i) {
                    const Tensor& x = inputs[i];
                    if (!x.defined()) continue;
                    if (x._version() != versions[i])
                      fail("CheckpointFunctionBackward: one of the variables needed for gradient computation has been "
                           "modified by an inplace operation: input {} of checkpoint, is at version {}; expected "
                           "version {} instead",
                           i, x._version(), versions[i]);
                    leaves[i] = x.detach();
                    if (x.requires_grad()) {
                      leaves[i].requires_grad_();
                      wanted.push_back(leaves[i]);
                    }
                  }
                  // Recompute with the forward's random streams, then give the generators back
                  // the state they had before this backward.
                  std::vector<ops::Generator> now;
                  for (size_t i = 0; i < generators.size(); ++i) {
                    now.push_back(*generators[i]);
                    *generators[i] = (*states)[i];
                  }
                  Tensor y;
                  try {
                    EnableGradGuard grad_mode;
                    y = fn(leaves);
                  } catch (...) {
                    for (size_t i = 0; i < generators.size(); ++i) *generators[i] = now[i];
                    throw;
                  }
                  for (size_t i = 0; i < generators.size(); ++i) *generators[i] = now[i];
                  if (!y.requires_grad()) fail("checkpoint: the recomputed output does not require grad");
                  std::vector<Tensor> g = autograd::grad({y}, wanted, {grad}, false, grad_enabled(), true);
                  std::vector<Tensor> out(inputs.size());
                  size_t k = 0;
                  for (size_t i = 0; i < inputs.size(); ++i)
                    if (inputs[i].defined() && inputs[i].requires_grad()) out[i] = g[k++];
                  return out;
                });
}

}  // namespace tritium::nn
