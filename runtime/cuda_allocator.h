// The caching device allocator, pinned host memory and asynchronous copies.
//
// Caching: a request is rounded to a size class (small requests, <= 1 MiB, to a multiple of
// 512 B; larger ones to a multiple of 2 MiB) and served from the free list of its
// (device, stream) when a cached block of that class, or one at most twice as large, is there;
// otherwise cuMemAlloc allocates a fresh block. free() puts the block back on the free list of
// the stream it was allocated for: work later queued on that stream is ordered after the work
// that used the block, so reuse needs no synchronisation. A block also used on other streams is
// marked by record_stream (runtime/cuda_streams.h): freed, it waits for events recorded there.
// When cuMemAlloc runs out of memory, the device's pending and cached blocks are released (after
// a synchronisation) and the allocation is retried once; then the error names request and stats.
// All functions are thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/cuda_driver.h"

namespace tritium::runtime::cuda {

inline constexpr size_t kSmallBlockLimit = size_t{1} << 20;  // <= 1 MiB: small
inline constexpr size_t kSmallRounding = 512;
inline constexpr size_t kLargeRounding = size_t{2} << 20;    // 2 MiB
// The size class of a request of nbytes (0 -> 512).
size_t round_size(size_t nbytes);

struct AllocatorStats {
  size_t allocated = 0;       // bytes in blocks handed out and not yet freed (block sizes)
  size_t reserved = 0;        // bytes held from the driver: allocated + cached
  size_t peak_allocated = 0;  // high-water mark of allocated since the start (or reset_peak)
  size_t cached = 0;          // bytes in free blocks waiting for reuse (reserved - allocated)
  uint64_t num_allocs = 0;    // allocate() calls
  uint64_t num_reuses = 0;    // allocate() calls served from a free list
  uint64_t num_driver_allocs = 0;  // cuMemAlloc calls
  uint64_t num_driver_frees = 0;   // cuMemFree calls
};

// Device memory of at least nbytes on device, usable in stream order on `stream`.
// Throws tritium::Error when the driver is unavailable or memory runs out.
CUdeviceptr allocate(size_t nbytes, int device, CUstream stream = nullptr);
// Returns a block from allocate() to its free list (never throws; unknown pointers are ignored
// with a message on stderr).
void free(CUdeviceptr ptr) noexcept;
// Returns every cached (free) block of every device to the driver, after synchronising the
// devices that have some. Blocks in use are not touched.
void empty_cache();
// Statistics of one device (all zero for a device never used).
AllocatorStats stats(int device);
void reset_peak(int device);

// Page-locked host memory (cuMemAllocHost): for staging copies that really run asynchronously.
void* allocate_pinned(size_t nbytes);
void free_pinned(void* p) noexcept;

// Asynchronous copies on `stream`, in device's context (nbytes == 0 is a no-op).
//  - copy_h2d: from pageable host memory the driver stages the source before returning, so src
//    may be reused at once; from pinned memory the copy runs asynchronously (keep src alive and
//    unchanged until the stream reaches it).
//  - copy_d2h: synchronises the stream before returning unless `async` is true; pass async=true
//    only with a pinned destination and synchronise the stream before reading it. D2H into
//    pageable memory must not return before the data is there, hence the default.
//  - copy_d2d: both on device (or, with unified addressing, any two devices).
//  - memset_d8: every byte of [dst, dst+nbytes) set to value.
void copy_h2d(CUdeviceptr dst, const void* src, size_t nbytes, int device, CUstream stream = nullptr);
void copy_d2h(void* dst, CUdeviceptr src, size_t nbytes, int device, CUstream stream = nullptr, bool async = false);
void copy_d2d(CUdeviceptr dst, CUdeviceptr src, size_t nbytes, int device, CUstream stream = nullptr);
void memset_d8(CUdeviceptr dst, unsigned char value, size_t nbytes, int device, CUstream stream = nullptr);

// Device pointers travel through Buffer::data() / Tensor::raw_data() as void*.
inline CUdeviceptr to_deviceptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }
inline void* from_deviceptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

}  // namespace tritium::runtime::cuda
