#include "runtime/host_block_cache.h"

#include <cstdlib>
#include <map>
#include <mutex>

namespace tritium::runtime::host_cache {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCaching = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kCaching = false;
#else
constexpr bool kCaching = true;
#endif
#else
constexpr bool kCaching = true;
#endif

struct Cache {
  std::mutex mutex;
  std::multimap<size_t, void*> free_blocks;
  size_t bytes = 0;
  uint64_t reuses = 0;
};

Cache& cache() {
  static Cache* c = new Cache;  // leaked: buffers freed during static destruction still find it
  return *c;
}

}  // namespace

bool enabled() { return kCaching; }

void* allocate(size_t bytes, size_t alignment) {
  if (kCaching && bytes >= kMinCachedBytes) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (auto it = c.free_blocks.find(bytes); it != c.free_blocks.end()) {
      void* p = it->second;
      c.free_blocks.erase(it);
      c.bytes -= bytes;
      ++c.reuses;
      return p;
    }
  }
  void* p = std::aligned_alloc(alignment, bytes);
  if (!p && kCaching) {  // the cache's blocks may be what the system is missing
    empty();
    p = std::aligned_alloc(alignment, bytes);
  }
  return p;
}

void release(void* p, size_t bytes) noexcept {
  if (kCaching && bytes >= kMinCachedBytes) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.bytes + bytes <= kMaxCachedBytes) {
      c.free_blocks.emplace(bytes, p);
      c.bytes += bytes;
      return;
    }
  }
  std::free(p);
}

void empty() noexcept {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto& [size, p] : c.free_blocks) std::free(p);
  c.free_blocks.clear();
  c.bytes = 0;
}

size_t cached_bytes() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.bytes;
}

uint64_t reuses() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.reuses;
}

}  // namespace tritium::runtime::host_cache
