#include "runtime/host_block_cache.h"

#include <cstdlib>
#include <iterator>
#include <list>
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

// Free blocks in the order they were cached (front: the oldest) and by size. When a released block
// does not fit, the oldest are freed to make room: a program whose shapes change (a table of ops,
// a training run's evaluation) keeps its current sizes cached instead of a gigabyte of sizes
// nobody asks for any more (stop 53's op table: 261K page faults, the element-wise rows there at
// half their speed alone).
struct Cache {
  struct Block;
  using Ages = std::list<Block>;
  using Sizes = std::multimap<size_t, Ages::iterator>;
  struct Block {
    void* p;
    Sizes::iterator by_size;  // its entry in `sizes`
  };
  std::mutex mutex;
  Ages age;  // front: cached first
  Sizes sizes;
  size_t bytes = 0;
  uint64_t reuses = 0;
  uint64_t evictions = 0;

  void push(void* p, size_t n) {
    age.push_back({p, {}});
    age.back().by_size = sizes.emplace(n, std::prev(age.end()));
    bytes += n;
  }
  // Removes a block from both orders; returns its pointer.
  void* take(Ages::iterator b) {
    void* p = b->p;
    bytes -= b->by_size->first;
    sizes.erase(b->by_size);
    age.erase(b);
    return p;
  }
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
    // The block of that size cached last (equal keys keep their insertion order): it is the
    // likeliest to be in the CPU's caches still. The first one (a FIFO) cycled a forward's
    // output through every cached block of its size, each written from DRAM: element-wise
    // rows after a forward + backward at 0.7 of their speed alone.
    if (auto it = c.sizes.upper_bound(bytes); it != c.sizes.begin() && std::prev(it)->first == bytes) {
      ++c.reuses;
      return c.take(std::prev(it)->second);
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
  if (kCaching && bytes >= kMinCachedBytes && bytes <= kMaxCachedBytes) {
    void* evicted = nullptr;  // freed outside the lock, one at a time
    try {
      Cache& c = cache();
      for (;;) {
        {
          std::lock_guard<std::mutex> lock(c.mutex);
          if (c.bytes + bytes <= kMaxCachedBytes || c.age.empty()) {
            c.push(p, bytes);
            return;
          }
          evicted = c.take(c.age.begin());
          ++c.evictions;
        }
        std::free(evicted);
      }
    } catch (...) {  // no memory for the bookkeeping: give the block back instead
    }
  }
  std::free(p);
}

void empty() noexcept {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (const Cache::Block& b : c.age) std::free(b.p);
  c.age.clear();
  c.sizes.clear();
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

uint64_t evictions() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.evictions;
}

}  // namespace tritium::runtime::host_cache
