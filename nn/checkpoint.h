// Activation checkpointing (torch.utils.checkpoint.checkpoint with use_reentrant=False): the
// forward of `fn` runs without recording, so none of its intermediate tensors are kept; the
// backward runs it again with grad mode on, from the same inputs, with the random generators put
// back where they were (so dropout draws the same mask) and with the autocast state the forward
// ran under (so the recomputation casts as the forward did), and differentiates that
// recomputation with autograd::grad. Gradients equal those of fn(inputs) itself. The inputs are
// kept (their versions checked: modifying one in place before backward is the usual error).
//
// `captured`: tensors fn reads without taking them as inputs, such as a module's parameters
// (PyTorch finds them through autograd; a C++ closure hides them). Their gradients flow as the
// inputs' do. checkpoint(module, x) passes module.parameters().
#pragma once
#include <functional>
#include <vector>

#include "nn/autograd.h"
#include "ops/ops.h"

namespace tritium::nn {

class Module;

Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>& inputs)>& fn, const std::vector<Tensor>& inputs,
                  const std::vector<ops::Generator*>& generators = {&ops::default_generator()},
                  const std::vector<Tensor>& captured = {});

// module(x) checkpointed, the module's parameters captured.
Tensor checkpoint(Module& module, const Tensor& x,
                  const std::vector<ops::Generator*>& generators = {&ops::default_generator()});

}  // namespace tritium::nn
