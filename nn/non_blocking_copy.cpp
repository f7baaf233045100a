#include "nn/non_blocking_copy.h"

#include "common/error.h"
#include "nn/autograd.h"
#include "nn/pinned_memory.h"
#include "ops/ops.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_streams.h"
#include "runtime/pinned_host_cache.h"

namespace tritium::nn {
namespace {

namespace cuda = runtime::cuda;

// A host tensor in pinned memory (the cache of runtime/pinned_host_cache.h).
Tensor empty_pinned(const Tensor::Shape& shape, DType dtype) {
  bool& flag = runtime::pinned_host_allocation_flag();
  const bool previous = flag;
  flag = true;
  try {
    Tensor out = Tensor::empty(shape, dtype, Device::cpu());
    flag = previous;
    return out;
  } catch (...) {
    flag = previous;
    throw;
  }
}

}  // namespace

Tensor to(const Tensor& t, Device device, bool non_blocking) {
  if (!t.defined()) fail("to: tensor is undefined");
  const Device from = t.device();
  const bool h2d = from.is_cpu() && device.is_cuda() && t.is_contiguous() && is_pinned(t);
  const bool d2h = from.is_cuda() && device.is_cpu();
  if (!non_blocking || !(h2d || d2h)) return t.to(device);
  if (!runtime::memory_available(device))
    fail("to: cannot copy {} to {}: {}", t.str(), device.str(), runtime::memory_unavailable_reason(device));
  Tensor out;
  if (h2d) {
    const int dev = device.index;
    out = Tensor::empty(t.shape(), t.dtype(), device);
    const cuda::CUstream stream = cuda::current_stream(dev);
    cuda::copy_h2d(cuda::to_deviceptr(out.raw_data()), t.raw_data(), static_cast<size_t>(t.nbytes()), dev, stream);
    cuda::pinned_record_use(t.raw_data(), dev, stream);
  } else {
    const int dev = from.index;
    Tensor src = t.is_contiguous() ? t : ops::contiguous(t);  // a kernel on the current stream
    out = empty_pinned(t.shape(), t.dtype());
    const cuda::CUstream stream = cuda::current_stream(dev);
    cuda::copy_d2h(out.raw_data(), cuda::to_deviceptr(src.raw_data()), static_cast<size_t>(src.nbytes()), dev, stream,
                   /*async=*/true);
    cuda::pinned_record_use(out.raw_data(), dev, stream);
  }
  return record(std::move(out), {t}, "ToCopyBackward", [from](const Tensor& g) { return std::vector<Tensor>{g.to(from)}; });
}

}  // namespace tritium::nn
