#include "runtime/buffer.h"

#include <cstdlib>
#include <cstring>

#include "common/env.h"
#include "common/error.h"
#include "profiler/hooks.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_streams.h"
#include "runtime/host_block_cache.h"
#include "runtime/pinned_host_cache.h"
#include "runtime/memory_stats.h"

namespace tritium::runtime {

Buffer::Buffer(void* data, size_t nbytes, Device device, Deleter deleter)
    : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)), inference_(inference_mode_flag()) {
  profiler::detail::record_memory(static_cast<int64_t>(nbytes_), device_);  // one flag check when off
}

bool& inference_mode_flag() {
  thread_local bool on = false;
  return on;
}

Buffer::~Buffer() {
  if (deleter_) deleter_(data_);
  profiler::detail::record_memory(-static_cast<int64_t>(nbytes_), device_);
}

std::shared_ptr<Buffer> Buffer::allocate(size_t nbytes, Device device) {
  if (!memory_available(device))
    fail("Buffer::allocate: cannot allocate {} bytes on {}: {}", nbytes, device.str(), memory_unavailable_reason(device));
  if (device.is_cuda()) {
    // The caching allocator: at least 512 bytes (never a null pointer), 256-byte aligned or better
    // (cuMemAlloc), for the thread's current stream (freed back to that stream's cache).
    const cuda::CUstream stream = cuda::current_stream(device.index);
    cuda::CUdeviceptr p = cuda::allocate(nbytes, device.index, stream);
    if (env().poison_buffers) cuda::memset_d8(p, 0xFF, nbytes, device.index, stream);
    return std::shared_ptr<Buffer>(
        new Buffer(cuda::from_deviceptr(p), nbytes, device, [](void* q) { cuda::free(cuda::to_deviceptr(q)); }));
  }
  if (pinned_host_allocation_flag() && cuda::device_count() > 0) {
    // Page-locked (cuMemAllocHost: aligned far beyond kHostAlignment), from a cache of freed
    // blocks since the driver call costs far more than the copies it serves.
    void* data = cuda::pinned_cache_allocate(nbytes);
    if (env().poison_buffers) std::memset(data, 0xFF, nbytes);
    return std::shared_ptr<Buffer>(
        new Buffer(data, nbytes, device, [nbytes](void* p) { cuda::pinned_cache_free(p, nbytes); }));
  }
  // aligned_alloc wants a multiple of the alignment; never zero, so data() is never null.
  size_t rounded = nbytes == 0 ? kHostAlignment : (nbytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  if (rounded < nbytes) fail("Buffer::allocate: {} bytes is too large", nbytes);
  void* data = host_cache::allocate(rounded, kHostAlignment);  // a cached block of that size, or aligned_alloc
  if (!data) fail("Buffer::allocate: out of host memory allocating {} bytes", nbytes);
  if (env().poison_buffers) std::memset(data, 0xFF, rounded);
  host_memory::note_allocated(rounded);  // memory_allocated(cpu) counts the blocks live buffers hold
  return std::shared_ptr<Buffer>(new Buffer(data, nbytes, device, [rounded](void* p) {
    host_cache::release(p, rounded);
    host_memory::note_freed(rounded);
  }));
}

std::shared_ptr<Buffer> Buffer::adopt(void* data, size_t nbytes, Device device, Deleter deleter) {
  return std::shared_ptr<Buffer>(new Buffer(data, nbytes, device, std::move(deleter)));
}

}  // namespace tritium::runtime
