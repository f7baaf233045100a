// CUDA devices: discovery and properties, one primary context per device, streams and events.
//
// Contexts: each device's primary context is retained once (never released: it lives for the
// process) and made current on the calling thread by ensure_context(device). Every function here
// and in cuda_allocator.h calls ensure_context itself; code that calls the driver directly (the
// CUDA backend's launch path) calls ensure_context(device) first. The current context is cached
// per thread, so a repeated ensure_context(d) is a thread-local compare; code that switches
// contexts through the driver behind our back must call ensure_context again.
//
// Default stream: default_stream(device) is the legacy NULL stream (nullptr). It synchronises with
// every other blocking stream of the context, which keeps the semantics of "the stream" simple:
// tensors, copies and kernel launches that take no stream are ordered on it. Stream objects
// created here use CU_STREAM_DEFAULT (blocking: they also order with the NULL stream).
#pragma once
#include <string>

#include "runtime/cuda_driver.h"

namespace tritium::runtime::cuda {

struct DeviceProperties {
  int index = 0;
  std::string name;                       // "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;         // compute capability
  int multiprocessor_count = 0;
  int warp_size = 32;
  int max_threads_per_block = 0;
  int max_shared_memory_per_block = 0;        // without opting in (48 KiB)
  int max_shared_memory_per_block_optin = 0;  // with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)
  int max_shared_memory_per_multiprocessor = 0;
  int max_blocks_per_multiprocessor = 0;      // resident CTAs (32 on Hopper)
  int max_registers_per_block = 0;
  int l2_cache_size = 0;                  // bytes
  size_t total_memory = 0;                // bytes
  int clock_rate_khz = 0;
  int memory_clock_rate_khz = 0;
  int memory_bus_width_bits = 0;

  int compute_capability() const { return cc_major * 10 + cc_minor; }  // 90
  std::string arch() const;  // "sm_90"
};

// Number of devices (0 when the driver is unavailable; never throws).
int device_count();
// Properties of device index (cached after the first call; throws tritium::Error when the
// driver is unavailable or the index is out of range).
const DeviceProperties& properties(int device);
// The CUdevice handle and the retained primary context of device index.
CUdevice device_handle(int device);
CUcontext primary_context(int device);
// Makes device's primary context current on the calling thread (retaining it the first time).
void ensure_context(int device);
// The stream used when none is given: the legacy NULL stream (see above).
inline CUstream default_stream(int /*device*/) { return nullptr; }
// Waits for all work on device (cuCtxSynchronize in its primary context).
void synchronize(int device);

class Stream {
 public:
  explicit Stream(int device, unsigned flags = CU_STREAM_DEFAULT);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  CUstream get() const { return stream_; }
  int device() const { return device_; }
  void synchronize() const;
  bool query() const;  // true when all work is done

 private:
  int device_ = 0;
  CUstream stream_ = nullptr;
};

class Event {
 public:
  explicit Event(int device, unsigned flags = CU_EVENT_DEFAULT);  // timing enabled by default
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  CUevent get() const { return event_; }
  int device() const { return device_; }
  void record(CUstream stream = nullptr);
  void record(const Stream& stream) { record(stream.get()); }
  void synchronize() const;
  bool query() const;  // true when the recorded work is done
  // Milliseconds between start and end (both recorded; end is waited for).
  static float elapsed_ms(const Event& start, const Event& end);

 private:
  int device_ = 0;
  CUevent event_ = nullptr;
};

}  // namespace tritium::runtime::cuda
