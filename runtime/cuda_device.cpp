#include "runtime/cuda_device.h"

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"

namespace tritium::runtime::cuda {
namespace {

struct DeviceState {
  std::once_flag once;
  CUdevice handle = 0;
  CUcontext context = nullptr;
  DeviceProperties props;
};

// One entry per device, created when the driver loads; never destroyed (contexts stay retained
// for the process, and objects destroyed at exit may still need them).
std::vector<std::unique_ptr<DeviceState>>& states() {
  static auto* s = [] {
    auto* v = new std::vector<std::unique_ptr<DeviceState>>();
    if (available())
      for (int i = 0; i < driver().device_count; ++i) v->push_back(std::make_unique<DeviceState>());
    return v;
  }();
  return *s;
}

DeviceState& state(int device) {
  const Driver& d = driver();  // throws the reason when unavailable
  auto& all = states();
  if (device < 0 || device >= static_cast<int>(all.size()))
    fail("no CUDA device cuda:{}: this machine has {} CUDA device{}", device, d.device_count,
         d.device_count == 1 ? "" : "s");
  DeviceState& s = *all[static_cast<size_t>(device)];
  std::call_once(s.once, [&] {
    std::string ctx = fmt::format("cuda:{}", device);
    check(d.cuDeviceGet(&s.handle, device), "cuDeviceGet", ctx);
    check(d.cuDevicePrimaryCtxRetain(&s.context, s.handle), "cuDevicePrimaryCtxRetain", ctx);
    DeviceProperties& p = s.props;
    p.index = device;
    char name[256] = {};
    check(d.cuDeviceGetName(name, sizeof name - 1, s.handle), "cuDeviceGetName", ctx);
    p.name = name;
    auto attr = [&](CUdevice_attribute a, const char* what) {
      int v = 0;
      check(d.cuDeviceGetAttribute(&v, a, s.handle), "cuDeviceGetAttribute", fmt::format("{} ({})", ctx, what));
      return v;
    };
    p.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability major");
    p.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability minor");
    p.multiprocessor_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
    p.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size");
    p.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
    p.max_shared_memory_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared memory per block");
    p.max_shared_memory_per_block_optin =
        attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared memory per block");
    p.max_shared_memory_per_multiprocessor =
        attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "shared memory per multiprocessor");
    p.max_blocks_per_multiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "blocks per multiprocessor");
    p.max_registers_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "registers per block");
    p.l2_cache_size = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 cache size");
    p.clock_rate_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "clock rate");
    p.memory_clock_rate_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "memory clock rate");
    p.memory_bus_width_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "memory bus width");
    check(d.cuDeviceTotalMem(&p.total_memory, s.handle), "cuDeviceTotalMem", ctx);
  });
  return s;
}

thread_local CUcontext t_current = nullptr;

}  // namespace

std::string DeviceProperties::arch() const { return fmt::format("sm_{}{}", cc_major, cc_minor); }

int device_count() { return available() ? driver().device_count : 0; }

const DeviceProperties& properties(int device) { return state(device).props; }
CUdevice device_handle(int device) { return state(device).handle; }
CUcontext primary_context(int device) { return state(device).context; }

void ensure_context(int device) {
  CUcontext ctx = state(device).context;
  if (t_current == ctx) return;
  check(driver().cuCtxSetCurrent(ctx), "cuCtxSetCurrent", fmt::format("cuda:{}", device));
  t_current = ctx;
}

void synchronize(int device) {
  ensure_context(device);
  check(driver().cuCtxSynchronize(), "cuCtxSynchronize", fmt::format("cuda:{}", device));
}

// ---- Stream ----------------------------------------------------------------------------------------

Stream::Stream(int device, unsigned flags) : device_(device) {
  ensure_context(device);
  check(driver().cuStreamCreate(&stream_, flags), "cuStreamCreate", fmt::format("cuda:{}", device));
}

Stream::~Stream() {
  if (stream_) driver().cuStreamDestroy(stream_);  // errors at destruction are not reportable
}

Stream::Stream(Stream&& other) noexcept
    : device_(other.device_), stream_(std::exchange(other.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_) driver().cuStreamDestroy(stream_);
    device_ = other.device_;
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const {
  check(driver().cuStreamSynchronize(stream_), "cuStreamSynchronize", fmt::format("a stream of cuda:{}", device_));
}

bool Stream::query() const {
  CUresult r = driver().cuStreamQuery(stream_);
  if (r == CUDA_ERROR_NOT_READY) return false;
  check(r, "cuStreamQuery", fmt::format("a stream of cuda:{}", device_));
  return true;
}

// ---- Event -----------------------------------------------------------------------------------------

Event::Event(int device, unsigned flags) : device_(device) {
  ensure_context(device);
  check(driver().cuEventCreate(&event_, flags), "cuEventCreate", fmt::format("cuda:{}", device));
}

Event::~Event() {
  if (event_) driver().cuEventDestroy(event_);
}

Event::Event(Event&& other) noexcept : device_(other.device_), event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_) driver().cuEventDestroy(event_);
    device_ = other.device_;
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::record(CUstream stream) {
  ensure_context(device_);
  check(driver().cuEventRecord(event_, stream), "cuEventRecord", fmt::format("an event of cuda:{}", device_));
}

void Event::synchronize() const {
  check(driver().cuEventSynchronize(event_), "cuEventSynchronize", fmt::format("an event of cuda:{}", device_));
}

bool Event::query() const {
  CUresult r = driver().cuEventQuery(event_);
  if (r == CUDA_ERROR_NOT_READY) return false;
  check(r, "cuEventQuery", fmt::format("an event of cuda:{}", device_));
  return true;
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  end.synchronize();
  float ms = 0;
  check(driver().cuEventElapsedTime(&ms, start.event_, end.event_), "cuEventElapsedTime",
        fmt::format("events of cuda:{}", end.device_));
  return ms;
}

}  // namespace tritium::runtime::cuda
