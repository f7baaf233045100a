#include "runtime/cuda_allocator.h"

#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"
#include "runtime/cuda_device.h"

namespace tritium::runtime::cuda {
namespace {

struct Block {
  size_t size = 0;
  int device = 0;
  CUstream stream = nullptr;
};

using FreeList = std::multimap<size_t, CUdeviceptr>;  // size -> block, best fit by lower_bound

class CachingAllocator {
 public:
  CUdeviceptr allocate(size_t nbytes, int device, CUstream stream) {
    const size_t size = round_size(nbytes);
    std::lock_guard lock(mu_);
    AllocatorStats& st = stats_[device];
    ++st.num_allocs;
    FreeList& fl = free_[key(device, stream)];
    auto it = fl.lower_bound(size);
    if (it != fl.end() && it->first <= 2 * size) {
      CUdeviceptr p = it->second;
      size_t got = it->first;
      fl.erase(it);
      active_[p] = Block{got, device, stream};
      ++st.num_reuses;
      st.cached -= got;
      add_allocated(st, got);
      return p;
    }
    ensure_context(device);
    const Driver& d = driver();
    CUdeviceptr p = 0;
    CUresult r = d.cuMemAlloc(&p, size);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      release_cached(device);
      r = d.cuMemAlloc(&p, size);
    }
    if (r != CUDA_SUCCESS) {
      size_t free_bytes = 0, total_bytes = 0;
      d.cuMemGetInfo(&free_bytes, &total_bytes);
      check(r, "cuMemAlloc",
            fmt::format("{} bytes (size class {}) on cuda:{}; allocator: {} allocated, {} reserved, {} cached; "
                        "device: {} free of {}",
                        nbytes, size, device, st.allocated, st.reserved, st.cached, free_bytes, total_bytes));
    }
    ++st.num_driver_allocs;
    st.reserved += size;
    active_[p] = Block{size, device, stream};
    add_allocated(st, size);
    return p;
  }

  void free(CUdeviceptr p) noexcept {
    std::lock_guard lock(mu_);
    auto it = active_.find(p);
    if (it == active_.end()) {
      std::fprintf(stderr, "tritium: cuda::free of 0x%llx, which the caching allocator did not hand out: ignored\n", p);
      return;
    }
    Block b = it->second;
    active_.erase(it);
    try {
      free_[key(b.device, b.stream)].emplace(b.size, p);
    } catch (...) {
      return;  // out of host memory: leak the block rather than throw from a deleter
    }
    AllocatorStats& st = stats_[b.device];
    st.allocated -= b.size;
    st.cached += b.size;
  }

  void empty_cache() {
    std::lock_guard lock(mu_);
    std::vector<int> devices;
    for (auto& [key, fl] : free_)
      if (!fl.empty() && (devices.empty() || devices.back() != key.first)) devices.push_back(key.first);
    for (int dev : devices) release_cached(dev);
  }

  AllocatorStats stats(int device) {
    std::lock_guard lock(mu_);
    auto it = stats_.find(device);
    return it == stats_.end() ? AllocatorStats{} : it->second;
  }

  void reset_peak(int device) {
    std::lock_guard lock(mu_);
    AllocatorStats& st = stats_[device];
    st.peak_allocated = st.allocated;
  }

 private:
  static void add_allocated(AllocatorStats& st, size_t size) {
    st.allocated += size;
    if (st.allocated > st.peak_allocated) st.peak_allocated = st.allocated;
  }

  // Returns device's cached blocks (every stream) to the driver. Called with mu_ held. The
  // streams may still have queued work reading blocks freed in stream order: synchronise first.
  void release_cached(int device) {
    ensure_context(device);
    const Driver& d = driver();
    check(d.cuCtxSynchronize(), "cuCtxSynchronize", fmt::format("releasing cached blocks of cuda:{}", device));
    AllocatorStats& st = stats_[device];
    for (auto it = free_.lower_bound(key(device, nullptr)); it != free_.end() && it->first.first == device; ++it) {
      for (auto& [size, p] : it->second) {
        check(d.cuMemFree(p), "cuMemFree", fmt::format("a cached block of {} bytes on cuda:{}", size, device));
        st.reserved -= size;
        st.cached -= size;
        ++st.num_driver_frees;
      }
      it->second.clear();
    }
  }

  std::mutex mu_;
  std::unordered_map<CUdeviceptr, Block> active_;
  using Key = std::pair<int, uintptr_t>;  // (device, stream); the default stream (0) sorts first
  static Key key(int device, CUstream stream) { return {device, reinterpret_cast<uintptr_t>(stream)}; }
  std::map<Key, FreeList> free_;
  std::map<int, AllocatorStats> stats_;
};

// Never destroyed: buffers freed during static destruction still find it (their blocks then just
// go to a free list; the driver reclaims everything at process exit).
CachingAllocator& the_allocator() {
  static auto* a = new CachingAllocator();
  return *a;
}

std::string where(int device, CUstream stream) {
  return stream ? fmt::format("cuda:{} stream {}", device, static_cast<const void*>(stream))
                : fmt::format("cuda:{} default stream", device);
}

}  // namespace

size_t round_size(size_t nbytes) {
  if (nbytes == 0) return kSmallRounding;
  if (nbytes <= kSmallBlockLimit) return (nbytes + kSmallRounding - 1) / kSmallRounding * kSmallRounding;
  if (nbytes > std::numeric_limits<size_t>::max() - kLargeRounding)
    fail("cuda::allocate: {} bytes is too large", nbytes);
  return (nbytes + kLargeRounding - 1) / kLargeRounding * kLargeRounding;
}

CUdeviceptr allocate(size_t nbytes, int device, CUstream stream) {
  return the_allocator().allocate(nbytes, device, stream);
}
void free(CUdeviceptr ptr) noexcept { the_allocator().free(ptr); }
void empty_cache() {
  if (available()) the_allocator().empty_cache();
}
AllocatorStats stats(int device) { return the_allocator().stats(device); }
void reset_peak(int device) { the_allocator().reset_peak(device); }

void* allocate_pinned(size_t nbytes) {
  const Driver& d = driver();
  CUcontext current = nullptr;
  d.cuCtxGetCurrent(&current);
  if (!current) ensure_context(0);  // cuMemAllocHost needs a context; pinned memory is for device 0's
  void* p = nullptr;
  check(d.cuMemAllocHost(&p, nbytes == 0 ? 1 : nbytes), "cuMemAllocHost", fmt::format("{} bytes", nbytes));
  return p;
}

void free_pinned(void* p) noexcept {
  if (p && available()) driver().cuMemFreeHost(p);
}

void copy_h2d(CUdeviceptr dst, const void* src, size_t nbytes, int device, CUstream stream) {
  if (nbytes == 0) return;
  ensure_context(device);
  check(driver().cuMemcpyHtoDAsync(dst, src, nbytes, stream), "cuMemcpyHtoDAsync",
        fmt::format("{} bytes host -> {}", nbytes, where(device, stream)));
}

void copy_d2h(void* dst, CUdeviceptr src, size_t nbytes, int device, CUstream stream, bool async) {
  if (nbytes == 0) return;
  ensure_context(device);
  const Driver& d = driver();
  check(d.cuMemcpyDtoHAsync(dst, src, nbytes, stream), "cuMemcpyDtoHAsync",
        fmt::format("{} bytes {} -> host", nbytes, where(device, stream)));
  if (!async)
    check(d.cuStreamSynchronize(stream), "cuStreamSynchronize",
          fmt::format("after copying {} bytes {} -> host", nbytes, where(device, stream)));
}

void copy_d2d(CUdeviceptr dst, CUdeviceptr src, size_t nbytes, int device, CUstream stream) {
  if (nbytes == 0) return;
  ensure_context(device);
  check(driver().cuMemcpyDtoDAsync(dst, src, nbytes, stream), "cuMemcpyDtoDAsync",
        fmt::format("{} bytes on {}", nbytes, where(device, stream)));
}

void memset_d8(CUdeviceptr dst, unsigned char value, size_t nbytes, int device, CUstream stream) {
  if (nbytes == 0) return;
  ensure_context(device);
  check(driver().cuMemsetD8Async(dst, value, nbytes, stream), "cuMemsetD8Async",
        fmt::format("{} bytes on {}", nbytes, where(device, stream)));
}

}  // namespace tritium::runtime::cuda
