// Page-locked ("pinned") host memory for tensors, as torch.Tensor.pin_memory: a copy from pinned
// memory to a GPU runs asynchronously on a stream (from pageable memory the driver stages it
// synchronously). Without a CUDA device there is nothing to pin for: pin_memory returns the
// tensor itself and is_pinned is false (PyTorch's DataLoader likewise ignores pin_memory there).
#pragma once
#include "nn/dataset.h"

namespace tritium::nn {

// Whether pinning has an effect here (a CUDA device is present).
bool pinned_memory_available();
// A contiguous copy of host tensor t in pinned memory (t itself when already pinned or when
// pinned memory is unavailable). Errors: t undefined or not on the host.
Tensor pin_memory(const Tensor& t);
Batch pin_memory(const Batch& batch);  // both tensors (an undefined y stays undefined)
bool is_pinned(const Tensor& t);

}  // namespace tritium::nn
