#include "runtime/streams.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_streams.h"
#include "runtime/device_checks.h"
#include "runtime/tensor.h"

namespace tritium::runtime {
namespace {

constexpr int kStreamsPerPool = 32;  // per device and priority, as PyTorch's pool

// The two stream-priority entry points of the driver, resolved the way runtime/cuda_driver.cpp
// resolves its table (cuGetProcAddress_v2, the CUDA 12.0 ABI), on first use. (They are kept out
// of cuda::Driver only because every test includes that header; they can join it.)
struct PriorityEntryPoints {
  cuda::CUresult (*cuStreamCreateWithPriority)(cuda::CUstream* stream, unsigned flags, int priority) = nullptr;
  cuda::CUresult (*cuCtxGetStreamPriorityRange)(int* least, int* greatest) = nullptr;
};

const PriorityEntryPoints& priority_entry_points() {
  static const PriorityEntryPoints entry = [] {
    const cuda::Driver& d = cuda::driver();
    using GetProc = cuda::CUresult (*)(const char*, void**, int, cuda::cuuint64_t, cuda::CUdriverProcAddressQueryResult*);
    auto get_proc = reinterpret_cast<GetProc>(dlsym(d.handle, "cuGetProcAddress_v2"));
    PriorityEntryPoints e;
    auto resolve = [&](auto& fn, const char* name) {
      void* p = nullptr;
      cuda::CUdriverProcAddressQueryResult status = cuda::CU_GET_PROC_ADDRESS_SUCCESS;
      if (!get_proc || get_proc(name, &p, cuda::kRequestedCudaVersion, cuda::CU_GET_PROC_ADDRESS_DEFAULT, &status) !=
                           cuda::CUDA_SUCCESS ||
          status != cuda::CU_GET_PROC_ADDRESS_SUCCESS || !p)
        fail("the CUDA driver {} lacks {} (status {})", d.library_path, name, status);
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    resolve(e.cuStreamCreateWithPriority, "cuStreamCreateWithPriority");
    resolve(e.cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange");
    return e;
  }();
  return entry;
}

void check_memory_device(Device device, const char* what) {
  if (!memory_available(device)) fail("{}: no streams on {}: {}", what, device.str(), memory_unavailable_reason(device));
}

// The pool streams of every CUDA device: created on first use, never destroyed (a Stream is a
// plain value that may outlive any owner, and the allocator keys its free lists by stream).
class StreamPool {
 public:
  struct Entry {
    cuda::CUstream handle;
    int64_t id;
  };

  Entry take(int device, int priority) {
    std::lock_guard lock(mu_);
    PerDevice& d = devices_[device];
    std::vector<Entry>& level = d.levels[priority];
    if (level.size() < kStreamsPerPool) {
      cuda::ensure_context(device);
      cuda::CUstream s = nullptr;
      cuda::check(priority_entry_points().cuStreamCreateWithPriority(&s, cuda::CU_STREAM_NON_BLOCKING, priority),
                  "cuStreamCreateWithPriority", fmt::format("cuda:{} (priority {})", device, priority));
      level.push_back({s, ++d.last_id});
      return level.back();
    }
    return level[d.next[priority]++ % kStreamsPerPool];
  }

  std::pair<int, int> priority_range(int device) {
    std::lock_guard lock(mu_);
    PerDevice& d = devices_[device];
    if (!d.range) {
      cuda::ensure_context(device);
      int least = 0, greatest = 0;
      cuda::check(priority_entry_points().cuCtxGetStreamPriorityRange(&least, &greatest), "cuCtxGetStreamPriorityRange",
                  fmt::format("cuda:{}", device));
      d.range = std::make_pair(least, greatest);
    }
    return *d.range;
  }

 private:
  struct PerDevice {
    std::map<int, std::vector<Entry>> levels;  // priority -> its streams
    std::map<int, size_t> next;                // priority -> round-robin position once full
    int64_t last_id = 0;                       // 0 is the default stream
    std::optional<std::pair<int, int>> range;
  };
  std::mutex mu_;
  std::map<int, PerDevice> devices_;
};

StreamPool& pool() {
  static auto* p = new StreamPool();  // never destroyed: streams outlive static destruction
  return *p;
}

std::atomic<int64_t> g_cpu_stream_ids{0};

// The calling thread's current streams: CUDA handles indexed by device for the launch paths (a
// null entry is the default stream), the full values beside them, and the CPU's.
thread_local std::vector<cuda::CUstream> t_cuda_handles;
thread_local std::vector<std::optional<Stream>> t_cuda_streams;
thread_local std::optional<Stream> t_cpu_stream;

bool same_kind(Device a, Device b) { return a.kind == b.kind; }

}  // namespace

// ---- Stream ---------------------------------------------------------------------------------------

Stream::Stream(Device device, int priority) : device_(device) {
  check_memory_device(device, "Stream");
  if (device.is_cpu()) {
    id_ = ++g_cpu_stream_ids;
    return;
  }
  auto [least, greatest] = pool().priority_range(device.index);
  priority_ = std::clamp(priority, greatest, least);
  StreamPool::Entry e = pool().take(device.index, priority_);
  id_ = e.id;
  native_ = e.handle;
}

bool Stream::query() const {
  if (device_.is_cpu()) return true;
  cuda::ensure_context(device_.index);
  cuda::CUresult r = cuda::driver().cuStreamQuery(static_cast<cuda::CUstream>(native_));
  if (r == cuda::CUDA_ERROR_NOT_READY) return false;
  cuda::check(r, "cuStreamQuery", str());
  return true;
}

void Stream::synchronize() const {
  if (device_.is_cpu()) return;
  cuda::ensure_context(device_.index);
  cuda::check(cuda::driver().cuStreamSynchronize(static_cast<cuda::CUstream>(native_)), "cuStreamSynchronize", str());
  report_device_checks(device_);
}

void Stream::wait_event(const Event& event) const { event.wait(*this); }

void Stream::wait_stream(const Stream& other) const {
  if (other == *this) return;
  if (!same_kind(device_, other.device_))
    fail("Stream::wait_stream: {} cannot wait for {}: CPU work runs synchronously, so only streams of CUDA devices "
         "wait for each other",
         str(), other.str());
  if (device_.is_cpu()) return;
  Event e(false);
  e.record(other);
  e.wait(*this);
}

Event Stream::record_event(bool enable_timing) const {
  Event e(enable_timing);
  e.record(*this);
  return e;
}

std::string Stream::str() const {
  if (is_default()) return fmt::format("the default stream of {}", device_.str());
  return priority_ == 0 ? fmt::format("stream {} of {}", id_, device_.str())
                        : fmt::format("stream {} of {} (priority {})", id_, device_.str(), priority_);
}

Stream default_stream(Device device) {
  check_memory_device(device, "default_stream");
  return Stream(device, 0, 0, device.is_cuda() ? cuda::default_stream(device.index) : nullptr);
}

Stream current_stream(Device device) {
  if (device.is_cpu()) {
    if (t_cpu_stream && device.index == 0) return *t_cpu_stream;
    return default_stream(device);
  }
  const auto i = static_cast<size_t>(device.index);
  if (device.index >= 0 && i < t_cuda_streams.size() && t_cuda_streams[i]) return *t_cuda_streams[i];
  return default_stream(device);
}

void set_current_stream(const Stream& stream) {
  const Device d = stream.device();
  if (d.is_cpu()) {
    t_cpu_stream = stream;
    return;
  }
  const auto i = static_cast<size_t>(d.index);
  if (t_cuda_streams.size() <= i) {
    t_cuda_streams.resize(i + 1);
    t_cuda_handles.resize(i + 1, nullptr);
  }
  t_cuda_streams[i] = stream;
  t_cuda_handles[i] = static_cast<cuda::CUstream>(stream.native_handle());
}

std::pair<int, int> stream_priority_range(Device device) {
  check_memory_device(device, "stream_priority_range");
  return device.is_cpu() ? std::make_pair(0, 0) : pool().priority_range(device.index);
}

void synchronize(Device device) {
  check_memory_device(device, "synchronize");
  if (device.is_cuda()) cuda::synchronize(device.index);
  report_device_checks(device);
}

namespace cuda {
CUstream current_stream(int device) {
  const auto i = static_cast<size_t>(device);
  return i < t_cuda_handles.size() ? t_cuda_handles[i] : default_stream(device);
}
}  // namespace cuda

// ---- Event ----------------------------------------------------------------------------------------

struct Event::State {
  bool timing = false;
  bool recorded = false;
  Device device = Device::cpu();
  std::unique_ptr<cuda::Event> native;                   // CUDA: created at the first record
  std::chrono::steady_clock::time_point host_time;       // CPU: when recorded
};

Event::Event(bool enable_timing) : state_(std::make_shared<State>()) { state_->timing = enable_timing; }

void Event::record() { record(current_stream(state_->recorded ? state_->device : default_device())); }

void Event::record(const Stream& stream) {
  State& s = *state_;
  if (s.recorded && s.device != stream.device())
    fail("Event::record: the event belongs to {} (where it was first recorded), {} is of {}", s.device.str(),
         stream.str(), stream.device().str());
  if (stream.device().is_cpu()) {
    s.host_time = std::chrono::steady_clock::now();  // CPU work before this point has completed
  } else {
    if (!s.native)
      s.native = std::make_unique<cuda::Event>(stream.device().index,
                                               s.timing ? cuda::CU_EVENT_DEFAULT : cuda::CU_EVENT_DISABLE_TIMING);
    s.native->record(static_cast<cuda::CUstream>(stream.native_handle()));
  }
  s.device = stream.device();
  s.recorded = true;
}

void Event::wait() const { wait(current_stream(state_->recorded ? state_->device : default_device())); }

void Event::wait(const Stream& stream) const {
  const State& s = *state_;
  if (!s.recorded) return;
  if (!same_kind(s.device, stream.device()))
    fail("Event::wait: {} cannot wait for an event of {}: only streams of CUDA devices wait for CUDA events, and CPU "
         "events are complete when recorded",
         stream.str(), s.device.str());
  if (s.device.is_cpu()) return;
  cuda::ensure_context(stream.device().index);  // a stream of another device may wait (the driver allows it)
  cuda::check(cuda::driver().cuStreamWaitEvent(static_cast<cuda::CUstream>(stream.native_handle()), s.native->get(), 0),
              "cuStreamWaitEvent", fmt::format("{} waiting for an event of {}", stream.str(), s.device.str()));
}

bool Event::query() const {
  const State& s = *state_;
  return !s.recorded || s.device.is_cpu() || s.native->query();
}

void Event::synchronize() const {
  const State& s = *state_;
  if (s.recorded && s.device.is_cuda()) s.native->synchronize();
}

float Event::elapsed_time(const Event& end) const {
  const State& a = *state_;
  const State& b = *end.state_;
  if (!a.recorded || !b.recorded)
    fail("Event::elapsed_time: both events must be recorded first (the {} event was not)", !a.recorded ? "start" : "end");
  if (!a.timing || !b.timing)
    fail("Event::elapsed_time: both events must be created with enable_timing = true (the {} event was not)",
         !a.timing ? "start" : "end");
  if (a.device != b.device)
    fail("Event::elapsed_time: the events belong to different devices ({} and {})", a.device.str(), b.device.str());
  if (a.device.is_cpu())
    return std::chrono::duration<float, std::milli>(b.host_time - a.host_time).count();
  return cuda::Event::elapsed_ms(*a.native, *b.native);
}

bool Event::is_recorded() const { return state_->recorded; }
bool Event::enable_timing() const { return state_->timing; }
Device Event::device() const { return state_->device; }
void* Event::native_handle() const { return state_->native ? state_->native->get() : nullptr; }

// ---- record_stream --------------------------------------------------------------------------------

void record_stream(const Tensor& tensor, const Stream& stream) {
  if (!tensor.defined()) fail("record_stream: the tensor is undefined");
  // A CUDA tensor may be used on another CUDA device's stream (a peer copy reads it there), as in
  // PyTorch; a CPU tensor and a CUDA stream (or the reverse) is a mistake.
  if (stream.device().kind != tensor.device().kind)
    fail("record_stream: {} is on {}, but {} is of {}", tensor.str(), tensor.device().str(), stream.str(),
         stream.device().str());
  if (tensor.device().is_cuda())
    cuda::record_stream(cuda::to_deviceptr(tensor.storage()->data()), static_cast<cuda::CUstream>(stream.native_handle()),
                        stream.device().index);
}

}  // namespace tritium::runtime
