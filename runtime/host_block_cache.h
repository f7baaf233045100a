// A cache of freed host blocks of 128 KiB or more, keyed by exact (64-byte rounded) size, for
// Buffer::allocate on the CPU. glibc serves such sizes by mmap, or from a heap top that it trims
// back to the system once it holds more than twice that: every new tensor of a training step or a
// forward + backward then page-faults its pages in again, zeroed by the kernel (one thread,
// addcdiv's forward + backward on 2^20 f32: 12.6 ms, two thirds of it in the kernel, against 3.0
// with the pages kept). Freed blocks are kept up to kMaxCachedBytes in all and handed out again
// for the next request of the same size, as the CUDA caching allocator does per size class; when
// a freed block does not fit, the blocks cached longest ago are freed to make room (a program's
// sizes change over its run).
// Built with AddressSanitizer, nothing is cached (a reused block would hide a use after free).
// Thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tritium::runtime::host_cache {

inline constexpr size_t kMinCachedBytes = size_t(128) << 10;
inline constexpr size_t kMaxCachedBytes = size_t(1) << 30;

// A block of `bytes` (a multiple of `alignment`) aligned to `alignment`: a cached one of exactly
// that size, else a new one; nullptr when the system has no memory left (after freeing the cache).
void* allocate(size_t bytes, size_t alignment);
// Gives back a block from allocate(bytes, ...): cached when it is at least kMinCachedBytes and at
// most kMaxCachedBytes (the oldest cached blocks freed until it fits), else freed.
void release(void* p, size_t bytes) noexcept;
// Frees every cached block.
void empty() noexcept;

// Whether blocks are cached at all (not under AddressSanitizer).
bool enabled();

// Bytes of the cached (free) blocks, and how many requests a cached block served.
size_t cached_bytes();
uint64_t reuses();
// How many cached blocks were freed to make room for newer ones.
uint64_t evictions();

}  // namespace tritium::runtime::host_cache
