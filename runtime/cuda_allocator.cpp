#include "runtime/cuda_allocator.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"
#include "runtime/cuda_device.h"
#include "runtime/launch_queue.h"
#include "runtime/cuda_streams.h"

namespace tritium::runtime::cuda {
namespace {

// A stream that used a block, and the device the stream belongs to: another device's stream
// (a peer copy reads the block there) gets its event from that device's pool and context.
struct StreamUse {
  CUstream stream = nullptr;
  int device = 0;
  bool operator==(const StreamUse&) const = default;
};

struct Block {
  size_t size = 0;
  int device = 0;
  CUstream stream = nullptr;              // the stream it was allocated for
  std::vector<StreamUse> stream_uses;     // other streams that used it (record_stream)
};

// An event recorded on a stream of `device` (and returned to that device's pool).
struct PendingEvent {
  CUevent event = nullptr;
  int device = 0;
};

// A freed block that other streams used: it joins its stream's free list once every event (one
// recorded on each of those streams at free time) has completed.
struct PendingBlock {
  CUdeviceptr ptr = 0;
  Block block;
  std::vector<PendingEvent> events;
};

using FreeList = std::multimap<size_t, CUdeviceptr>;  // size -> block, best fit by lower_bound

class CachingAllocator {
 public:
  CUdeviceptr allocate(size_t nbytes, int device, CUstream stream) {
    const size_t size = round_size(nbytes);
    std::unique_lock lock(mu_);
    std::optional<launch_queue::NoDrainScope> no_drain(std::in_place);  // (issuing the queue allocates)
    AllocatorStats& st = stats_[device];
    ++st.num_allocs;
    collect_pending(device);
    FreeList& fl = free_[key(device, stream)];
    auto it = fl.lower_bound(size);
    if (it != fl.end() && it->first <= 2 * size) {
      CUdeviceptr p = it->second;
      size_t got = it->first;
      fl.erase(it);
      active_[p] = Block{got, device, stream, {}};
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
      // The cached blocks go back to the driver: the launches queued while kernels compile, which
      // may use them, are issued first, without the lock (issuing allocates).
      if (launch_queue::pending()) {
        lock.unlock();
        no_drain.reset();
        launch_queue::drain_before_ordered_call();
        no_drain.emplace();
        lock.lock();
      }
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
    active_[p] = Block{size, device, stream, {}};
    add_allocated(st, size);
    return p;
  }

  void free(CUdeviceptr p) noexcept {
    // A block other streams used gets an event recorded on each (defer): after the launches
    // queued while kernels compile, which are issued first, without the lock (issuing allocates).
    if (launch_queue::pending()) {
      bool other_streams = false;
      {
        std::lock_guard lock(mu_);
        auto it = active_.find(p);
        other_streams = it != active_.end() && !it->second.stream_uses.empty();
      }
      if (other_streams) launch_queue::drain_before_ordered_call();
    }
    std::lock_guard lock(mu_);
    launch_queue::NoDrainScope no_drain;
    auto it = active_.find(p);
    if (it == active_.end()) {
      std::fprintf(stderr, "tritium: cuda::free of 0x%llx, which the caching allocator did not hand out: ignored\n", p);
      return;
    }
    Block b = std::move(it->second);
    active_.erase(it);
    AllocatorStats& st = stats_[b.device];
    try {
      if (b.stream_uses.empty()) {
        free_[key(b.device, b.stream)].emplace(b.size, p);
      } else {
        defer(p, b);
        pending_bytes_[b.device] += b.size;
      }
    } catch (const std::exception& e) {
      // Out of host memory, or an event could not be recorded: leak the block rather than throw
      // from a deleter (or hand it out while another stream may still use it).
      std::fprintf(stderr, "tritium: cuda::free of a %zu-byte block on cuda:%d: %s; the block is leaked\n", b.size,
                   b.device, e.what());
      st.allocated -= b.size;
      return;
    } catch (...) {
      st.allocated -= b.size;
      return;
    }
    st.allocated -= b.size;
    st.cached += b.size;
  }

  void record_stream(CUdeviceptr p, CUstream stream, int stream_device) {
    std::lock_guard lock(mu_);
    auto it = active_.find(p);
    if (it == active_.end()) return;  // not ours (adopted memory): nothing to defer
    Block& b = it->second;
    const StreamUse use{stream, stream_device};
    if ((stream == b.stream && stream_device == b.device) ||
        std::find(b.stream_uses.begin(), b.stream_uses.end(), use) != b.stream_uses.end())
      return;
    b.stream_uses.push_back(use);
  }

  void empty_cache() {
    launch_queue::drain_before_ordered_call();  // the blocks may be used by queued launches
    std::lock_guard lock(mu_);
    launch_queue::NoDrainScope no_drain;
    std::vector<int> devices;
    for (auto& [key, fl] : free_)
      if (!fl.empty() && (devices.empty() || devices.back() != key.first)) devices.push_back(key.first);
    for (auto& [dev, list] : pending_)
      if (!list.empty() && std::find(devices.begin(), devices.end(), dev) == devices.end()) devices.push_back(dev);
    for (int dev : devices) release_cached(dev);
  }

  size_t pending_free_bytes(int device) {
    std::lock_guard lock(mu_);
    auto it = pending_bytes_.find(device);
    return it == pending_bytes_.end() ? 0 : it->second;
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

  // Records an event on each stream that used block p besides its own, and parks the block on
  // the pending list. Called with mu_ held.
  void defer(CUdeviceptr p, const Block& b) {
    PendingBlock pending{p, b, {}};
    try {
      for (const StreamUse& use : b.stream_uses) {
        ensure_context(use.device);  // an event and the stream it is recorded on share a context
        CUevent e = take_event(use.device);
        pending.events.push_back({e, use.device});
        check(driver().cuEventRecord(e, use.stream), "cuEventRecord",
              fmt::format("a block of {} bytes freed on cuda:{} and used on cuda:{} stream {}", b.size, b.device,
                          use.device, static_cast<const void*>(use.stream)));
      }
      pending_[b.device].push_back(std::move(pending));
    } catch (...) {
      for (const PendingEvent& e : pending.events) events_[e.device].push_back(e.event);
      throw;
    }
    ensure_context(b.device);
  }

  // Moves device's pending blocks whose events have all completed to their free lists (a query
  // each: the host never waits here). Called with mu_ held.
  void collect_pending(int device) {
    auto found = pending_.find(device);
    if (found == pending_.end() || found->second.empty()) return;
    std::vector<PendingBlock>& list = found->second;
    const Driver& d = driver();
    ensure_context(device);
    for (size_t i = 0; i < list.size();) {
      PendingBlock& pb = list[i];
      while (!pb.events.empty()) {
        CUresult r = d.cuEventQuery(pb.events.back().event);
        if (r == CUDA_ERROR_NOT_READY) break;
        check(r, "cuEventQuery", fmt::format("a block of {} bytes freed on cuda:{}", pb.block.size, device));
        events_[pb.events.back().device].push_back(pb.events.back().event);
        pb.events.pop_back();
      }
      if (!pb.events.empty()) {
        ++i;
        continue;
      }
      free_[key(device, pb.block.stream)].emplace(pb.block.size, pb.ptr);
      pending_bytes_[device] -= pb.block.size;
      list[i] = std::move(list.back());
      list.pop_back();
    }
  }

  // An event of device's pool (timing disabled: the cheapest kind). Called with mu_ held.
  CUevent take_event(int device) {
    std::vector<CUevent>& pool = events_[device];
    if (!pool.empty()) {
      CUevent e = pool.back();
      pool.pop_back();
      return e;
    }
    CUevent e = nullptr;
    check(driver().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate", fmt::format("the allocator of cuda:{}", device));
    return e;
  }

  // Returns device's cached blocks (every stream) to the driver. Called with mu_ held. The
  // streams may still have queued work reading blocks freed in stream order: synchronise first
  // (which also completes every pending block's events).
  void release_cached(int device) {
    ensure_context(device);
    const Driver& d = driver();
    check(d.cuCtxSynchronize(), "cuCtxSynchronize", fmt::format("releasing cached blocks of cuda:{}", device));
    collect_pending(device);
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
  std::map<int, std::vector<PendingBlock>> pending_;  // per device
  std::map<int, std::vector<CUevent>> events_;        // per device, free events for pending blocks
  std::map<int, AllocatorStats> stats_;
  std::map<int, size_t> pending_bytes_;               // per device, in pending_ (part of cached)
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
void record_stream(CUdeviceptr ptr, CUstream stream, int stream_device) {
  the_allocator().record_stream(ptr, stream, stream_device);
}
size_t pending_free_bytes(int device) { return the_allocator().pending_free_bytes(device); }
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
