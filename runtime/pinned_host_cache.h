// A cache of page-locked host blocks (cuMemAllocHost), keyed by exact size: a data loader pins
// every batch, and a driver allocation costs far more than the copy it serves. A freed block is
// kept for the next request of its size. An asynchronous copy from or to a block marks it with
// pinned_record_use (as PyTorch's CachingHostAllocator records an event): freed before the copy
// has run, the block is handed out again only once the copy's event has completed.
// Thread-safe. Needs a CUDA driver (callers check cuda::device_count() first).
#pragma once
#include <cstddef>

#include "runtime/cuda_driver.h"

namespace tritium::runtime {
// The thread's pinned-allocation switch (nn::pin_memory sets it around its allocation): while on,
// Buffer::allocate takes host buffers from this cache when a CUDA device is present.
bool& pinned_host_allocation_flag();
}  // namespace tritium::runtime

namespace tritium::runtime::cuda {

// Whether p is the start of a block of this cache (a pinned host buffer's data()).
bool is_pinned_block(const void* p);
void* pinned_cache_allocate(size_t nbytes);
void pinned_cache_free(void* p, size_t nbytes) noexcept;
// Records an event on `stream` of cuda:device for the block that contains p (a pinned tensor's
// data may start inside it): the block is not reused before the work queued there by now is done.
// Memory that is not from this cache is ignored.
void pinned_record_use(const void* p, int device, CUstream stream);
// Returns every cached block to the driver.
void pinned_cache_empty() noexcept;

}  // namespace tritium::runtime::cuda
