// The profiler's hooks: what the dispatch (nn/dispatch.cpp), the kernel launch (dsl/kernel.cpp),
// the CUDA launch (jit/cuda/cuda_backend.cpp) and buffer allocation (runtime/buffer.cpp) call.
// With no profile recording each hook is one relaxed atomic load and a branch (the slow paths
// are out of line), so a build with the profiler compiled in costs nothing measurable when it is
// off. This header includes nothing of the tensor layer: runtime/ code includes it too.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "profiler/event.h"
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
// A collective issued on this thread (named "<backend>:<collective>"); DDP's bucket index comes
// from the bucket range open on the thread, if any.
OpenScope begin_collective(CommInfo info);
// DDP launching bucket `bucket` of `bytes` (a range named "ddp:bucket").
OpenScope begin_bucket_range(int bucket, int64_t bytes);
// Gloo: the group's worker ran the collective `issued` from `start` until now (this thread).
void record_collective_execution(const OpenScope& issued, std::chrono::steady_clock::time_point start);

// A buffer of `bytes` was allocated (> 0) or freed (< 0) on `device`.
void record_memory_slow(int64_t bytes, runtime::Device device);
inline void record_memory(int64_t bytes, runtime::Device device) {
  if (recording()) record_memory_slow(bytes, device);
}

// CUDA timing of the kernel launch (or NCCL collective) open on this thread: the CUDA backend calls gpu_timing_begin
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

// A collective on a process group (dist/): the host range of its issue. The NCCL backend times
// its span on the communication stream with gpu_timing_begin/end inside this scope; the Gloo
// backend passes handle() to its worker, which reports the execution.
class CollectiveScope {
 public:
  CollectiveScope(std::string_view backend, std::string_view collective, std::string_view dtype, int64_t elements,
                  int64_t bytes, int group_size) {
    if (recording())
      scope_ = begin_collective({std::string(collective), std::string(backend), std::string(dtype), elements, bytes,
                                 group_size, -1});
  }
  ~CollectiveScope() {
    if (scope_.id >= 0) end_scope(scope_);
  }
  const OpenScope& handle() const { return scope_; }
  CollectiveScope(const CollectiveScope&) = delete;
  CollectiveScope& operator=(const CollectiveScope&) = delete;

 private:
  OpenScope scope_;
};

// DDP's launch of one bucket (nn/ddp.cpp): the all-reduce issued inside carries the index.
class BucketScope {
 public:
  BucketScope(int bucket, int64_t bytes) {
    if (recording()) scope_ = begin_bucket_range(bucket, bytes);
  }
  ~BucketScope() {
    if (scope_.id >= 0) end_scope(scope_);
  }
  BucketScope(const BucketScope&) = delete;
  BucketScope& operator=(const BucketScope&) = delete;

 private:
  OpenScope scope_;
};

}  // namespace tritium::profiler::detail
