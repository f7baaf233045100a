#include "runtime/pinned_host_cache.h"

#include <map>
#include <set>
#include <mutex>

#include "runtime/cuda_allocator.h"

namespace tritium::runtime {
bool& pinned_host_allocation_flag() {
  thread_local bool on = false;
  return on;
}
}  // namespace tritium::runtime

namespace tritium::runtime::cuda {

namespace {

struct PinnedCache {
  std::mutex mutex;
  std::multimap<size_t, void*> free_blocks;
  std::set<const void*> all_blocks;  // every block from the driver still held (free or in use)
  ~PinnedCache() { empty(); }  // at exit: the driver may still be loaded (it is never unloaded)
  void empty() noexcept {
    std::lock_guard<std::mutex> lock(mutex);
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
    auto it = cache().free_blocks.find(nbytes);
    if (it != cache().free_blocks.end()) {
      void* p = it->second;
      cache().free_blocks.erase(it);
      return p;
    }
  }
  void* p = allocate_pinned(nbytes);
  std::lock_guard<std::mutex> lock(cache().mutex);
  cache().all_blocks.insert(p);
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
    cache().free_blocks.emplace(nbytes, p);
  } catch (...) {
    free_pinned(p);
  }
}

void pinned_cache_empty() noexcept { cache().empty(); }

}  // namespace tritium::runtime::cuda
