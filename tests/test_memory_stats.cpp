// Memory statistics (issue 31 item 5): memory_allocated / max_memory_allocated /
// reset_peak_memory_stats / memory_reserved / memory_summary for the host allocator and the
// CUDA caching allocator, with allocations of known sizes (odd byte counts, so the rounding of
// each allocator shows), and the counters' thread safety. Every test runs on every backend.
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ops/ops.h"
#include "runtime/host_block_cache.h"
#include "runtime/memory_stats.h"
#include "test_support.h"

namespace tt = tritium::test;
using namespace tritium;

namespace {

// What an allocation of nbytes counts on device: the host rounds to 64 bytes, the caching
// allocator to its size class.
size_t counted(Device d, size_t nbytes) {
  if (d.is_cuda()) return runtime::cuda::round_size(nbytes);
  return nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_memory_stats)

// The host keeps freed blocks of 128 KiB or more for the next request of the same size (glibc
// would give them back to the system and fault them in again); smaller ones go back to malloc.
// Built with AddressSanitizer nothing is cached (a reused block would hide a use after free).
BOOST_AUTO_TEST_CASE(host_blocks_of_128_kib_or_more_are_reused) {
  const Device d = Device::cpu();
  const size_t big = (size_t(5) << 20) + 3;  // an odd size no other test asks for
  void* first = nullptr;
  {
    auto a = runtime::Buffer::allocate(big, d);
    first = a->data();
    std::memset(a->data(), 1, big);
  }
  if (!runtime::host_cache::enabled()) {
    BOOST_TEST(runtime::host_cache::cached_bytes() == 0u);
    BOOST_TEST(memory_reserved(d) == memory_allocated(d));
    return;
  }
  const size_t cached = memory_reserved(d) - memory_allocated(d);
  BOOST_TEST(cached >= counted(d, big));
  auto b = runtime::Buffer::allocate(big, d);
  BOOST_TEST(b->data() == first);  // the same block again
  BOOST_TEST(memory_reserved(d) - memory_allocated(d) == cached - counted(d, big));
  BOOST_TEST(memory_summary(d).find("served from the cache") != std::string::npos);
  // A different size does not take it.
  auto c = runtime::Buffer::allocate(big + 4096, d);
  BOOST_TEST(c->data() != first);
}

// A full cache frees the blocks it cached longest ago for a newer one, so a program whose sizes
// change keeps its current sizes cached (stop 53's op table: the cache full of sizes no longer
// asked for, every new tensor faulted in again). Blocks of a third of the cap, never touched (so
// no pages), four distinct sizes: caching the fourth frees the first.
BOOST_AUTO_TEST_CASE(a_full_host_cache_frees_its_oldest_blocks) {
  namespace hc = runtime::host_cache;
  if (!hc::enabled()) return;
  hc::empty();
  const size_t third = hc::kMaxCachedBytes / 3 / 64 * 64;
  std::vector<size_t> sizes;
  for (size_t i = 0; i < 4; ++i) sizes.push_back(third - 64 * (i + 1));
  for (size_t n : sizes) {
    void* p = hc::allocate(n, 64);
    BOOST_TEST_REQUIRE(p != nullptr);
    hc::release(p, n);
  }
  BOOST_TEST(hc::evictions() >= 1u);
  BOOST_TEST(hc::cached_bytes() <= hc::kMaxCachedBytes);
  BOOST_TEST(hc::cached_bytes() == sizes[1] + sizes[2] + sizes[3]);
  // The newest sizes are served from the cache; the evicted one is not.
  const uint64_t reused = hc::reuses();
  void* p3 = hc::allocate(sizes[3], 64);
  BOOST_TEST(hc::reuses() == reused + 1);
  void* p0 = hc::allocate(sizes[0], 64);
  BOOST_TEST(hc::reuses() == reused + 1);
  BOOST_TEST(hc::cached_bytes() == sizes[1] + sizes[2]);
  // A block larger than the whole cache is never cached (and evicts nothing).
  const uint64_t evicted = hc::evictions();
  void* huge = hc::allocate(hc::kMaxCachedBytes + 64, 64);
  BOOST_TEST_REQUIRE(huge != nullptr);
  hc::release(huge, hc::kMaxCachedBytes + 64);
  BOOST_TEST(hc::evictions() == evicted);
  BOOST_TEST(hc::cached_bytes() == sizes[1] + sizes[2]);
  hc::release(p3, sizes[3]);
  hc::release(p0, sizes[0]);
  hc::empty();
  BOOST_TEST(hc::cached_bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(allocation_and_free_move_the_counters) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const Device d = be.device;
    const size_t base = memory_allocated(d);
    reset_peak_memory_stats(d);
    BOOST_TEST(max_memory_allocated(d) == base);
    {
      auto a = runtime::Buffer::allocate(1001, d);  // 1001 bytes: not a multiple of either rounding
      BOOST_TEST(memory_allocated(d) == base + counted(d, 1001));
      {
        auto b = runtime::Buffer::allocate(3 << 20, d);  // 3 MiB: the caching allocator's large class
        BOOST_TEST(memory_allocated(d) == base + counted(d, 1001) + counted(d, 3 << 20));
        BOOST_TEST(memory_reserved(d) >= memory_allocated(d));
      }
      BOOST_TEST(memory_allocated(d) == base + counted(d, 1001));
      BOOST_TEST(max_memory_allocated(d) == base + counted(d, 1001) + counted(d, 3 << 20));
      reset_peak_memory_stats(d);
      BOOST_TEST(max_memory_allocated(d) == base + counted(d, 1001));
      // A tensor counts its buffer.
      Tensor t = ops::zeros({37, 3}, DType::f32, d);
      BOOST_TEST(memory_allocated(d) == base + counted(d, 1001) + counted(d, 37 * 3 * 4));
    }
    BOOST_TEST(memory_allocated(d) == base);
    if (!d.is_cpu() || runtime::host_cache::enabled())
      BOOST_TEST(memory_reserved(d) >= base + counted(d, 3 << 20));  // the freed 3 MiB block stays cached
    else
      BOOST_TEST(memory_reserved(d) == memory_allocated(d));  // nothing cached under AddressSanitizer
    std::string s = memory_summary(d);
    for (const char* part : {"memory summary of", "allocated (current)", "allocated (peak)", "reserved", "allocations"})
      BOOST_TEST(s.find(part) != std::string::npos, part << " in " << s);
    BOOST_TEST(s.find(d.str()) != std::string::npos);
  });
}

// Several threads allocating and freeing at once leave the count where it was and the peak at
// least as high as one buffer per thread.
BOOST_AUTO_TEST_CASE(counters_are_thread_safe) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const Device d = be.device;
    const size_t base = memory_allocated(d);
    reset_peak_memory_stats(d);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([d] {
        for (int i = 0; i < 200; ++i) auto b = runtime::Buffer::allocate(4000 + 64 * (i % 5), d);
      });
    for (auto& t : threads) t.join();
    BOOST_TEST(memory_allocated(d) == base);
    BOOST_TEST(max_memory_allocated(d) >= base + counted(d, 4000));
  });
}

BOOST_AUTO_TEST_SUITE_END()
