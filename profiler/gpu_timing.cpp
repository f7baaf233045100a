// GPU time of kernels: a pair of CUDA events recorded around each launch on its stream, read only
// when the profile stops (so recording never waits for the GPU). Events come from a pool and go
// back to it once read. The GPU timeline is placed on the profile's clock through an anchor event
// per device, recorded at the first timed launch with the CPU time of that moment: a kernel starts
// at anchor_cpu + elapsed(anchor, start) (exact when the GPU was idle at the anchor, else a little
// early).
#include <map>
#include <mutex>
#include <vector>

#include "common/error.h"
#include "profiler/hooks.h"
#include "profiler/recorder.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_driver.h"

namespace tritium::profiler::detail {
namespace {

namespace cu = runtime::cuda;

struct Pending {
  int64_t event_id;
  int device;
  cu::CUevent start, end;
};

struct Anchor {
  cu::CUevent event = nullptr;
  double cpu_us = 0;
};

struct Timing {
  std::mutex mutex;
  std::vector<Pending> pending;
  std::map<int, Anchor> anchors;                  // per device, this profile
  std::map<int, std::vector<cu::CUevent>> pool;   // per device, free events
  std::map<std::pair<int, void*>, int> streams;   // (device, stream) -> index on that device
};
Timing& timing() {
  static Timing t;
  return t;
}

// With the mutex held.
cu::CUevent take_event(Timing& t, int device) {
  std::vector<cu::CUevent>& free = t.pool[device];
  if (!free.empty()) {
    cu::CUevent e = free.back();
    free.pop_back();
    return e;
  }
  cu::CUevent e = nullptr;
  cu::check(cu::driver().cuEventCreate(&e, cu::CU_EVENT_DEFAULT), "cuEventCreate", "profiler");
  return e;
}

int stream_index(Timing& t, int device, void* stream) {
  auto [it, inserted] = t.streams.emplace(std::make_pair(device, stream), 0);
  if (inserted) {
    int n = 0;
    for (auto& [key, index] : t.streams)
      if (key.first == device && key.second != stream) n = std::max(n, index + 1);
    it->second = stream ? std::max(n, 1) : 0;  // the default stream is 0
  }
  return it->second;
}

}  // namespace

GpuTiming gpu_timing_begin_slow(int device, void* stream) {
  if (!cuda_timing_enabled()) return {};
  std::string name;
  int64_t id = open_kernel_id(&name, device);
  if (id < 0) return {};
  Timing& t = timing();
  const cu::Driver& d = cu::driver();
  auto s = static_cast<cu::CUstream>(stream);
  std::lock_guard<std::mutex> lock(t.mutex);
  set_open_kernel_stream(id, stream_index(t, device, stream));
  Anchor& a = t.anchors[device];
  if (!a.event) {
    a.event = take_event(t, device);
    cu::check(d.cuEventRecord(a.event, s), "cuEventRecord", "profiler anchor");
    a.cpu_us = now_us();
  }
  cu::CUevent start = take_event(t, device);
  cu::check(d.cuEventRecord(start, s), "cuEventRecord", "profiler");
  return {start, id};
}

void gpu_timing_end_slow(const GpuTiming& g, int device, void* stream) {
  Timing& t = timing();
  std::lock_guard<std::mutex> lock(t.mutex);
  cu::CUevent end = take_event(t, device);
  cu::check(cu::driver().cuEventRecord(end, static_cast<cu::CUstream>(stream)), "cuEventRecord", "profiler");
  t.pending.push_back({g.event_id, device, static_cast<cu::CUevent>(g.start), end});
}

void reset_gpu_timing() {
  Timing& t = timing();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (Pending& p : t.pending) t.pool[p.device].push_back(p.start), t.pool[p.device].push_back(p.end);
  for (auto& [device, a] : t.anchors)
    if (a.event) t.pool[device].push_back(a.event);
  t.pending.clear();
  t.anchors.clear();
}

void resolve_gpu_times(std::vector<Event>& events) {
  Timing& t = timing();
  std::vector<Pending> pending;
  std::map<int, Anchor> anchors;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    pending = std::move(t.pending);
    t.pending.clear();
    anchors = t.anchors;
  }
  if (pending.empty()) return;
  std::map<int64_t, size_t> index;
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i].kind == EventKind::kernel || events[i].kind == EventKind::collective) index[events[i].id] = i;
  const cu::Driver& d = cu::driver();
  for (const Pending& p : pending) {
    cu::ensure_context(p.device);
    cu::check(d.cuEventSynchronize(p.end), "cuEventSynchronize", "profiler");
    auto it = index.find(p.event_id);
    if (it == index.end()) continue;  // its scope was still open when the profile stopped
    float ms = 0, since_anchor = 0;
    cu::check(d.cuEventElapsedTime(&ms, p.start, p.end), "cuEventElapsedTime", "profiler");
    Event& e = events[it->second];
    e.gpu_dur_us = static_cast<double>(ms) * 1000.0;
    const Anchor& a = anchors[p.device];
    if (a.event && d.cuEventElapsedTime(&since_anchor, a.event, p.start) == cu::CUDA_SUCCESS)
      e.gpu_start_us = a.cpu_us + static_cast<double>(since_anchor) * 1000.0;
    else
      e.gpu_start_us = e.start_us;
  }
  std::lock_guard<std::mutex> lock(t.mutex);
  for (const Pending& p : pending) t.pool[p.device].push_back(p.start), t.pool[p.device].push_back(p.end);
}

}  // namespace tritium::profiler::detail
