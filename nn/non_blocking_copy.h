// Copies between the host and a GPU that do not wait for the GPU, as PyTorch's
// t.to(device, non_blocking=True); Tensor::to(device) is the waiting spelling.
//  - host -> cuda from a pinned tensor (nn::pin_memory): the copy is queued on the current stream of
//    the destination device and the call returns at once; the pinned block is not reused before the
//    copy has run, even when the source tensor is freed right away. From pageable memory the
//    driver stages the data before returning (as Tensor::to).
//  - cuda -> host: the result lands in a new pinned tensor, filled once the current stream reaches
//    the copy: synchronise (the stream, an Event recorded after the call, or the device) before
//    reading it on the host.
//  - otherwise (same device, cuda -> cuda, CPU only, non_blocking false): Tensor::to(device).
// Differentiable like Tensor::to (the gradient goes back to the source device).
#pragma once
#include "runtime/tensor.h"

namespace tritium::nn {

Tensor to(const Tensor& t, Device device, bool non_blocking);

}  // namespace tritium::nn
