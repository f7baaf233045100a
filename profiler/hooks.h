// The profiler's hooks: what the dispatch (nn/dispatch.cpp), the kernel launch (dsl/kernel.cpp),
// the CUDA launch (jit/cuda/cuda_backend.cpp) and buffer allocation (runtime/buffer.cpp) call.
// With no profile recording each hook is one relaxed atomic load and a branch (the slow paths
// are out of line), so a build with the profiler compiled in costs nothing measurable when it is
// off. This header includes nothing of the tensor layer: runtime/ code includes it too.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/device.h"

namespace tritium::profiler::detail {

extern std::atomic<bool> g_recording;  // a Profile is recording (profiler/profile.cpp)
inline bool recording() { return g_recording.load(std::memory_order_relaxed); }

// What the recorder keeps of an open scope (an op, a kernel launch or a named range).
struct OpenScope {
  int64_t id = -1;          // -1: not recorded (the profiler was off when it began)
  uint64_t generation = 0;  // the profile it belongs to (a scope outliving its profile is dropped)
};

// Op scopes: the caller fills the shapes and dtypes text only when recording_shapes() is true.
bool recording_shapes();
OpenScope begin_op(std::string_view name, std::string shapes, std::string dtypes);
OpenScope begin_range(std::string_view name);
OpenScope begin_kernel(std::string_view name, int64_t gx, int64_t gy, int64_t gz);
void end_scope(const OpenScope& s);

// A buffer of `bytes` was allocated (> 0) or freed (< 0) on `device`.
void record_memory_slow(int64_t bytes, runtime::Device device);
inline void record_memory(int64_t bytes, runtime::Device device) {
  if (recording()) record_memory_slow(bytes, device);
}

// CUDA timing of the kernel launch open on this thread: the CUDA backend calls gpu_timing_begin
// just before cuLaunchKernel and gpu_timing_end just after, on the launch's stream. Both only
// record events; the times are read when the profile stops. `stream` is a CUstream.
struct GpuTiming {
  void* start = nullptr;  // CUevent, nullptr: not timed (profiler off, or CUDA timing not asked)
  int64_t event_id = -1;
};
GpuTiming gpu_timing_begin_slow(int device, void* stream);
void gpu_timing_end_slow(const GpuTiming& t, int device, void* stream);
inline GpuTiming gpu_timing_begin(int device, void* stream) {
  return recording() ? gpu_timing_begin_slow(device, stream) : GpuTiming{};
}
inline void gpu_timing_end(const GpuTiming& t, int device, void* stream) {
  if (t.start) gpu_timing_end_slow(t, device, stream);
}

// A kernel launch (dsl/kernel.cpp): an RAII scope, empty when the profiler is off.
class KernelScope {
 public:
  KernelScope(std::string_view name, int64_t gx, int64_t gy, int64_t gz) {
    if (recording()) scope_ = begin_kernel(name, gx, gy, gz);
  }
  ~KernelScope() {
    if (scope_.id >= 0) end_scope(scope_);
  }
  KernelScope(const KernelScope&) = delete;
  KernelScope& operator=(const KernelScope&) = delete;

 private:
  OpenScope scope_;
};

}  // namespace tritium::profiler::detail
