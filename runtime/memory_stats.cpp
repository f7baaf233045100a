#include "runtime/memory_stats.h"

#include <atomic>

#include <fmt/format.h>

#include "runtime/cuda_allocator.h"
#include "runtime/cuda_streams.h"
#include "runtime/host_block_cache.h"

namespace tritium::runtime {
namespace {

struct HostCounters {
  std::atomic<size_t> allocated{0}, peak{0};
  std::atomic<uint64_t> num_allocs{0}, num_frees{0};
};

HostCounters& host() {
  static HostCounters* counters = new HostCounters;  // never destroyed: buffers freed at exit still count
  return *counters;
}

// The statistics of either allocator in one shape.
cuda::AllocatorStats stats_of(Device device) {
  if (device.is_cuda()) return cuda::stats(device.index);
  HostCounters& h = host();
  cuda::AllocatorStats s;
  s.allocated = h.allocated.load(std::memory_order_relaxed);
  s.cached = host_cache::cached_bytes();
  s.reserved = s.allocated + s.cached;
  s.peak_allocated = h.peak.load(std::memory_order_relaxed);
  s.num_allocs = h.num_allocs.load(std::memory_order_relaxed);
  s.num_reuses = host_cache::reuses();
  s.num_driver_allocs = s.num_allocs - s.num_reuses;
  s.num_driver_frees = h.num_frees.load(std::memory_order_relaxed);
  return s;
}

std::string human(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, units[u]);
}

}  // namespace

namespace host_memory {
void note_allocated(size_t nbytes) {
  HostCounters& h = host();
  h.num_allocs.fetch_add(1, std::memory_order_relaxed);
  size_t now = h.allocated.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  size_t peak = h.peak.load(std::memory_order_relaxed);
  while (now > peak && !h.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
void note_freed(size_t nbytes) {
  HostCounters& h = host();
  h.num_frees.fetch_add(1, std::memory_order_relaxed);
  h.allocated.fetch_sub(nbytes, std::memory_order_relaxed);
}
}  // namespace host_memory

size_t memory_allocated(Device device) { return stats_of(device).allocated; }
size_t max_memory_allocated(Device device) { return stats_of(device).peak_allocated; }
size_t memory_reserved(Device device) { return stats_of(device).reserved; }

void reset_peak_memory_stats(Device device) {
  if (device.is_cuda()) return cuda::reset_peak(device.index);
  // The peak restarts at the current allocation (a racing allocation may raise it again at once).
  HostCounters& h = host();
  h.peak.store(h.allocated.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

std::string memory_summary(Device device) {
  const cuda::AllocatorStats s = stats_of(device);
  std::string out = fmt::format("memory summary of {} ({})\n", device.str(),
                                device.is_cuda() ? "caching allocator" : "host allocator, caching blocks of 128 KiB or more");
  auto row = [&out](const char* what, const std::string& value) { out += fmt::format("  {:<28}{:>16}\n", what, value); };
  row("allocated (current)", human(s.allocated));
  row("allocated (peak)", human(s.peak_allocated));
  row("reserved", human(s.reserved));
  row("cached (reserved - allocated)", human(s.cached));
  row("allocations", fmt::format("{}", s.num_allocs));
  if (device.is_cuda()) {
    row("  served from the cache", fmt::format("{}", s.num_reuses));
    row("cached, waiting for streams", human(cuda::pending_free_bytes(device.index)));  // record_stream
    row("driver allocations (cuMemAlloc)", fmt::format("{}", s.num_driver_allocs));
    row("driver frees (cuMemFree)", fmt::format("{}", s.num_driver_frees));
  } else {
    row("  served from the cache", fmt::format("{}", s.num_reuses));
    row("frees", fmt::format("{}", s.num_driver_frees));
  }
  return out;
}

}  // namespace tritium::runtime
