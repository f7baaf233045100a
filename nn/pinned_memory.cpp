#include "nn/pinned_memory.h"

#include <cstring>

#include "common/error.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/pinned_host_cache.h"

namespace tritium::nn {

bool pinned_memory_available() {
  static const bool available = runtime::cuda::device_count() > 0;  // never throws
  return available;
}

bool is_pinned(const Tensor& t) {
  return t.defined() && t.device().is_cpu() && pinned_memory_available() && runtime::cuda::is_pinned_block(t.storage()->data());
}

Tensor pin_memory(const Tensor& t) {
  if (!t.defined()) fail("pin_memory: the tensor is undefined");
  if (!t.device().is_cpu()) fail("pin_memory: {} is not a host tensor; only host memory can be pinned", t.str());
  if (is_pinned(t) || !pinned_memory_available()) return t;
  Tensor src = t.is_contiguous() ? t : ops::contiguous(t);
  Tensor out;
  {
    bool& flag = runtime::pinned_host_allocation_flag();
    const bool previous = flag;
    flag = true;
    try {
      out = Tensor::empty(t.shape(), t.dtype(), Device::cpu());
    } catch (...) {
      flag = previous;
      throw;
    }
    flag = previous;
  }
  std::memcpy(out.raw_data(), src.raw_data(), static_cast<size_t>(src.nbytes()));
  return out;
}

Batch pin_memory(const Batch& batch) {
  return Batch{pin_memory(batch.x), batch.y.defined() ? pin_memory(batch.y) : Tensor()};
}

}  // namespace tritium::nn
