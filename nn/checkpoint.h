// Activation checkpointing (torch.utils.checkpoint.checkpoint with use_reentrant=False): the
// forward of `fn` runs without recording, so none of its intermediate tensors are kept; the
// backward runs it again with grad mode on, from the same inputs and with the random generators
// put back where they were, so dropout draws the same mask, and differentiates that recomputation
// with autograd::grad. Gradients equal those of fn(inputs) itself. The inputs are kept (their
// versions checked: modifying one in place before backward is the usual error).
#pragma once
#include <functional>
#include <vector>

#include "nn/autograd.h"
#include "ops/ops.h"

namespace tritium::nn {

Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>& inputs)>& fn, const std::vector<Tensor>& inputs,
                  const std::vector<ops::Generator*>& generators = {&ops::default_generator()});

}  // namespace tritium::nn
