// Streams and events, as PyTorch's torch.cuda streams (libtorch: c10::cuda::CUDAStream,
// getCurrentCUDAStream, setCurrentCUDAStream, getStreamFromPool, CUDAStreamGuard, CUDAEvent).
//
// Every device has a *current stream* per thread: kernel launches, copies, fills and the
// allocator's blocks of a tensor on device D go on current_stream(D) of the launching thread.
// Until a thread sets one it is the device's default stream (on CUDA the legacy NULL stream), so
// code that never touches streams runs exactly as before. Work on one stream runs in order; work
// on two streams may overlap unless one waits for the other (wait_stream, Event::wait).
//
//   tritium::Stream side(Device::cuda(0));            // from the device's pool (non-blocking)
//   {
//     tritium::StreamGuard on_side(side);              // current stream of cuda:0 in this scope
//     y = ops::relu(x);                               // runs on `side`
//   }
//   tritium::current_stream(Device::cuda(0)).wait_stream(side);   // later work sees y
//   tritium::record_stream(y, tritium::current_stream(Device::cuda(0)));  // y's block: freed after that work
//
// The CPU device has streams too, with no effect (as PyTorch's torch.cpu.Stream): CPU kernels and
// copies run synchronously on the calling thread, so every ordering these functions ask for
// already holds. CPU streams are still distinct values (guards nest, threads are independent), so
// code written for a GPU runs unchanged on the CPU; CPU events record the host clock.
//
// Streams are never destroyed: Stream(device, priority) hands out one of 32 streams per priority
// of the device, round robin (PyTorch's pool), so creating streams in a loop costs nothing and
// two Stream objects may be the same stream. A Stream is a small value (copy it freely).
#pragma once
#include <cstdint>
#include <memory>
#include <utility>

#include "runtime/device.h"

namespace tritium::runtime {

class Event;
class Tensor;  // runtime/tensor.h

class Stream {
 public:
  // A stream of device from its pool (torch.cuda.Stream(device, priority)). Lower numbers are
  // higher priorities; priority is clamped into stream_priority_range(device) ([0, 0] on the
  // CPU). Errors: device unavailable.
  explicit Stream(Device device, int priority = 0);

  Device device() const { return device_; }
  // 0 for the default stream; pool streams are 1, 2, ... per device.
  int64_t id() const { return id_; }
  int priority() const { return priority_; }
  bool is_default() const { return id_ == 0; }
  // The CUstream (nullptr: the legacy default stream; always nullptr on the CPU).
  void* native_handle() const { return native_; }

  // True when all work queued on the stream has completed (always true on the CPU).
  bool query() const;
  // Waits on the host for all work queued on the stream.
  void synchronize() const;
  // Work queued on this stream from now on waits for `event` (a no-op if it was never recorded).
  // Errors: a CPU event on a CUDA stream or the reverse.
  void wait_event(const Event& event) const;
  // Work queued on this stream from now on waits for everything queued on `other` so far.
  void wait_stream(const Stream& other) const;
  // A new event recorded on this stream (enable_timing as Event's).
  Event record_event(bool enable_timing = false) const;

  bool operator==(const Stream& o) const { return device_ == o.device_ && id_ == o.id_; }
  std::string str() const;  // "stream 3 of cuda:0 (priority -1)", "default stream of cpu"

 private:
  friend Stream default_stream(Device device);
  Stream(Device device, int64_t id, int priority, void* native)
      : device_(device), id_(id), priority_(priority), native_(native) {}
  Device device_;
  int64_t id_ = 0;
  int priority_ = 0;
  void* native_ = nullptr;
};

// The device's default stream (CUDA: the legacy NULL stream, which orders with every blocking
// stream of the context; the pool's streams are non-blocking).
Stream default_stream(Device device = default_device());
// The calling thread's current stream on device (its default stream until set).
Stream current_stream(Device device = default_device());
// Makes stream the calling thread's current stream on stream.device().
void set_current_stream(const Stream& stream);
// [greatest, least] as (least, greatest) = (0, -5) on an H100: Stream(device, p) clamps p into it.
// (0, 0) on the CPU.
std::pair<int, int> stream_priority_range(Device device = default_device());
// Waits on the host for all work on device, every stream (torch.cuda.synchronize).
void synchronize(Device device = default_device());

// Marks tensor's memory as used by `stream` (PyTorch's Tensor.record_stream): when the last tensor
// over it is freed, its block goes back to the allocator's cache only once the work queued on
// `stream` by then has completed (an event, queried by later allocations: no host wait). Needed
// when a tensor allocated on one stream is used on another. A no-op on the CPU and for memory the
// caching allocator did not hand out. Errors: undefined tensor, stream of another device.
void record_stream(const Tensor& tensor, const Stream& stream);

// Makes `stream` current on its device for a scope and restores the previous current stream of
// that device on exit (CUDAStreamGuard / `with torch.cuda.stream(s)`). Guards nest. Unlike
// PyTorch's it does not change default_device(): Tritium names devices explicitly.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream) : previous_(current_stream(stream.device())) { set_current_stream(stream); }
  ~StreamGuard() { set_current_stream(previous_); }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

  const Stream& original_stream() const { return previous_; }

 private:
  Stream previous_;
};

// A marker in a stream's work (torch.cuda.Event). A handle: copies refer to the same event. The
// event belongs to the device of the first stream it is recorded on; recording it again moves the
// marker (later waits and queries see the latest record).
class Event {
 public:
  explicit Event(bool enable_timing = false);

  // Records on `stream` (default: the current stream of the event's device once it has one, else
  // of default_device()). Errors: a stream of another device than the event's.
  void record();
  void record(const Stream& stream);
  // Makes `stream` (default: as record's) wait for the recorded work; a no-op if never recorded.
  void wait() const;
  void wait(const Stream& stream) const;
  // True when the recorded work has completed (true if never recorded).
  bool query() const;
  // Waits on the host for the recorded work (returns at once if never recorded).
  void synchronize() const;
  // Milliseconds from this event to `end` (waits for `end`). Errors: either event not recorded,
  // created without enable_timing, or the two on different devices.
  float elapsed_time(const Event& end) const;

  bool is_recorded() const;
  bool enable_timing() const;
  Device device() const;  // cpu until first recorded
  // The CUevent (nullptr until recorded on a CUDA stream).
  void* native_handle() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace tritium::runtime

namespace tritium {
using runtime::current_stream;
using runtime::default_stream;
using runtime::Event;
using runtime::record_stream;
using runtime::set_current_stream;
using runtime::Stream;
using runtime::stream_priority_range;
using runtime::StreamGuard;
using runtime::synchronize;
}  // namespace tritium
