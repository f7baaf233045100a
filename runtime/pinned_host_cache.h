// A cache of page-locked host blocks (cuMemAllocHost), keyed by exact size: a data loader pins
// every batch, and a driver allocation costs far more than the copy it serves. A freed block is
// kept for the next request of its size; the caller keeps a block alive until the asynchronous
// copies that read it are done (nn::DevicePrefetcher holds each batch until its copy's event).
// Thread-safe. Needs a CUDA driver (callers check cuda::device_count() first).
#pragma once
#include <cstddef>

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
// Returns every cached block to the driver.
void pinned_cache_empty() noexcept;

}  // namespace tritium::runtime::cuda
