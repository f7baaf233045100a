#include "runtime/pinned_host_cache.h"

#include <iterator>
#include <map>
#include <mutex>
#include <vector>

#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"

namespace tritium::runtime {
bool& pinned_host_allocation_flag() {
  thread_local bool on = false;
  return on;
}
}  // namespace tritium::runtime

namespace tritium::runtime::cuda {

namespace {

struct BlockUses {
  size_t size = 0;
  std::vector<CUevent> events;  // asynchronous copies that may still read or write the block
};

struct PinnedCache {
  std::mutex mutex;
  std::multimap<size_t, void*> free_blocks;
  std::map<const void*, BlockUses> all_blocks;  // every block from the driver still held (free or in use)
  std::vector<std::pair<void*, size_t>> pending;  // freed, waiting for their events
  ~PinnedCache() { empty(); }  // at exit: the driver may still be loaded (it is never unloaded)

  // With the mutex held: true when every event of the block has completed (those are destroyed).
  bool uses_done(BlockUses& b) noexcept {
    while (!b.events.empty()) {
      CUresult r = driver().cuEventQuery(b.events.back());
      if (r == CUDA_ERROR_NOT_READY) return false;
      driver().cuEventDestroy(b.events.back());  // done, or failed: the copy will not touch it again
      b.events.pop_back();
    }
    return true;
  }
  // With the mutex held: pending blocks whose copies are done join the free lists.
  void collect() noexcept {
    for (size_t i = 0; i < pending.size();) {
      auto [p, nbytes] = pending[i];
      if (!uses_done(all_blocks[p])) {
        ++i;
        continue;
      }
      free_blocks.emplace(nbytes, p);
      pending[i] = pending.back();
      pending.pop_back();
    }
  }
  void empty() noexcept {
    std::lock_guard<std::mutex> lock(mutex);
    collect();
    for (auto& [size, p] : free_blocks) {
      all_blocks.erase(p);
      free_pinned(p);
    }
    free_blocks.clear();
  }
};

PinnedCache& cache() {
  static PinnedCache* c = new PinnedCache;  // leaked: buffers freed during static destruction still find it
  return *c;
}

}  // namespace

void* pinned_cache_allocate(size_t nbytes) {
  {
    std::lock_guard<std::mutex> lock(cache().mutex);
    cache().collect();
    auto it = cache().free_blocks.find(nbytes);
    if (it != cache().free_blocks.end()) {
      void* p = it->second;
      cache().free_blocks.erase(it);
      return p;
    }
  }
  void* p = allocate_pinned(nbytes);
  std::lock_guard<std::mutex> lock(cache().mutex);
  cache().all_blocks[p].size = nbytes == 0 ? 1 : nbytes;  // (cuMemAllocHost got at least one byte)
  return p;
}

bool is_pinned_block(const void* p) {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().all_blocks.count(p) != 0;
}

void pinned_cache_free(void* p, size_t nbytes) noexcept {
  if (!p) return;
  try {
    std::lock_guard<std::mutex> lock(cache().mutex);
    auto it = cache().all_blocks.find(p);
    if (it != cache().all_blocks.end() && !cache().uses_done(it->second)) cache().pending.emplace_back(p, nbytes);
    else cache().free_blocks.emplace(nbytes, p);
  } catch (...) {
    // Out of host memory: leak the block (an asynchronous copy may still use it).
  }
}

void pinned_record_use(const void* p, int device, CUstream stream) {
  std::lock_guard<std::mutex> lock(cache().mutex);
  auto& blocks = cache().all_blocks;
  auto it = blocks.upper_bound(p);
  if (it == blocks.begin()) return;
  --it;
  if (static_cast<const char*>(p) >= static_cast<const char*>(it->first) + it->second.size) return;  // not ours
  ensure_context(device);
  CUevent e = nullptr;
  check(driver().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate", "a pinned host block");
  CUresult r = driver().cuEventRecord(e, stream);
  if (r != CUDA_SUCCESS) driver().cuEventDestroy(e);
  check(r, "cuEventRecord", "a pinned host block");
  it->second.events.push_back(e);
}

void pinned_cache_empty() noexcept { cache().empty(); }

}  // namespace tritium::runtime::cuda
