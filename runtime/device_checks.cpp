#include "runtime/device_checks.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "common/env.h"
#include "common/error.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_streams.h"

namespace tritium::runtime {

namespace {

enum class SlotState : unsigned char { free, reserved, pending };

struct Pending {
  int64_t first = 0;
  int count = 0;
  DeviceCheck::Explain explain;
  cuda::CUstream stream = nullptr;  // where the kernel ran (CUDA)
};

// One device's slots: an i64 [kDeviceCheckSlots] tensor, zero except where a kernel reported.
struct Ring {
  Tensor slots;
  std::vector<SlotState> state;
  int64_t next = 0;
  std::vector<Pending> pending;  // in launch order
};

std::mutex g_mutex;
std::map<std::pair<int, int>, Ring>& rings() {
  static auto* r = new std::map<std::pair<int, int>, Ring>();  // never destroyed: outlives static tensors
  return *r;
}
std::optional<DeviceCheckMode> g_mode;

std::pair<int, int> key(Device d) { return {static_cast<int>(d.kind), d.index}; }

cuda::CUstream stream_of(Device d) { return d.is_cuda() ? cuda::current_stream(d.index) : nullptr; }

void zero(const Tensor& t, int64_t first, int64_t count, bool wait) {
  const size_t bytes = static_cast<size_t>(count) * sizeof(int64_t);
  auto* p = static_cast<int64_t*>(t.raw_data()) + first;
  if (t.device().is_cpu()) {
    std::memset(p, 0, bytes);
    return;
  }
  const int dev = t.device().index;
  cuda::CUstream s = cuda::current_stream(dev);
  cuda::memset_d8(cuda::to_deviceptr(p), 0, bytes, dev, s);
  if (wait) {
    cuda::ensure_context(dev);
    cuda::check(cuda::driver().cuStreamSynchronize(s), "cuStreamSynchronize", "device checks");
  }
}

// Caller holds g_mutex.
Ring& ring_of(Device d) {
  Ring& r = rings()[key(d)];
  if (!r.slots.defined()) {
    r.slots = Tensor::empty({kDeviceCheckSlots}, DType::i64, d);
    r.state.assign(static_cast<size_t>(kDeviceCheckSlots), SlotState::free);
    zero(r.slots, 0, kDeviceCheckSlots, /*wait=*/true);  // before any stream's kernel uses them
  }
  return r;
}

void read_slots(const Tensor& slots, int64_t lo, int64_t hi, int64_t* out) {
  const auto* p = static_cast<const int64_t*>(slots.raw_data()) + lo;
  const size_t bytes = static_cast<size_t>(hi - lo) * sizeof(int64_t);
  if (slots.device().is_cpu()) {
    std::memcpy(out, p, bytes);
    return;
  }
  const int dev = slots.device().index;
  cuda::copy_d2h(out, cuda::to_deviceptr(p), bytes, dev, cuda::current_stream(dev));
}

}  // namespace

DeviceCheckMode device_checks_mode(Device device) {
  if (g_mode) return *g_mode;
  return device.is_cpu() || env().debug ? DeviceCheckMode::immediate : DeviceCheckMode::deferred;
}

void set_device_checks_mode(std::optional<DeviceCheckMode> mode) { g_mode = mode; }

DeviceCheck::DeviceCheck(Device device, int slots, Explain explain)
    : device_(device), count_(slots), explain_(std::move(explain)) {
  if (slots < 1 || slots > 16) fail("DeviceCheck: {} slots (expected 1 to 16)", slots);
  for (;;) {
    std::unique_lock lock(g_mutex);
    Ring& r = ring_of(device);
    if (r.next + slots > kDeviceCheckSlots) r.next = 0;
    bool busy = false;
    for (int64_t i = r.next; i < r.next + slots; ++i) {
      if (r.state[static_cast<size_t>(i)] == SlotState::reserved)
        fail("DeviceCheck: more than {} checks of {} are being launched at once", kDeviceCheckSlots, device.str());
      busy = busy || r.state[static_cast<size_t>(i)] == SlotState::pending;
    }
    if (busy) {  // the ring went round without a report: report now (a sync), then take the slots
      lock.unlock();
      report_device_checks(device);
      continue;
    }
    first_ = r.next;
    r.next += slots;
    for (int64_t i = first_; i < first_ + slots; ++i) r.state[static_cast<size_t>(i)] = SlotState::reserved;
    slots_ = r.slots.as_strided({slots}, {1}, first_);
    return;
  }
}

DeviceCheck::~DeviceCheck() {
  // Never launched() (an error in between): pending all the same, in case a kernel wrote a slot.
  if (registered_) return;
  std::lock_guard lock(g_mutex);
  Ring& r = ring_of(device_);
  for (int64_t i = first_; i < first_ + count_; ++i) r.state[static_cast<size_t>(i)] = SlotState::pending;
  r.pending.push_back(Pending{first_, count_, std::move(explain_), stream_of(device_)});
}

void DeviceCheck::launched() {
  if (registered_) fail("DeviceCheck::launched: called twice");
  {
    std::lock_guard lock(g_mutex);
    Ring& r = ring_of(device_);
    for (int64_t i = first_; i < first_ + count_; ++i) r.state[static_cast<size_t>(i)] = SlotState::pending;
    r.pending.push_back(Pending{first_, count_, std::move(explain_), stream_of(device_)});
    registered_ = true;
  }
  if (device_checks_mode(device_) == DeviceCheckMode::immediate) report_device_checks(device_);
}

int64_t pending_device_checks(Device device) {
  std::lock_guard lock(g_mutex);
  auto it = rings().find(key(device));
  return it == rings().end() ? 0 : static_cast<int64_t>(it->second.pending.size());
}

void report_device_checks(Device device) {
  std::vector<Pending> pending;
  Tensor slots;
  {
    std::lock_guard lock(g_mutex);
    auto it = rings().find(key(device));
    if (it == rings().end() || it->second.pending.empty()) return;
    pending.swap(it->second.pending);
    slots = it->second.slots;
  }
  // The slots stay `pending` (not reusable) until read, so other threads may take new ones meanwhile.
  if (device.is_cuda()) {
    cuda::ensure_context(device.index);
    std::vector<cuda::CUstream> synced;
    for (const Pending& p : pending) {
      if (std::find(synced.begin(), synced.end(), p.stream) != synced.end()) continue;
      cuda::check(cuda::driver().cuStreamSynchronize(p.stream), "cuStreamSynchronize", "device checks");
      synced.push_back(p.stream);
    }
  }
  int64_t lo = kDeviceCheckSlots, hi = 0;
  for (const Pending& p : pending) lo = std::min(lo, p.first), hi = std::max(hi, p.first + p.count);
  std::vector<int64_t> codes(static_cast<size_t>(hi - lo));
  read_slots(slots, lo, hi, codes.data());
  const Pending* first_failure = nullptr;
  int failures = 0;
  for (const Pending& p : pending) {
    const int64_t* c = codes.data() + (p.first - lo);
    if (std::any_of(c, c + p.count, [](int64_t v) { return v != 0; })) {
      zero(slots, p.first, p.count, /*wait=*/true);  // failures only: the error path may sync
      if (!first_failure) first_failure = &p;
      ++failures;
    }
  }
  {
    std::lock_guard lock(g_mutex);
    Ring& r = rings()[key(device)];
    for (const Pending& p : pending)
      for (int64_t i = p.first; i < p.first + p.count; ++i) r.state[static_cast<size_t>(i)] = SlotState::free;
  }
  if (!first_failure) return;
  std::string msg = first_failure->explain(codes.data() + (first_failure->first - lo));
  if (device_checks_mode(device) == DeviceCheckMode::deferred)
    msg += fmt::format(" (checked on {} by the kernel; reported at the next host read or synchronize{})", device.str(),
                       failures > 1 ? fmt::format("; {} more failed checks were dropped", failures - 1) : "");
  throw Error(msg);
}

}  // namespace tritium::runtime
