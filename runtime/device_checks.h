// Input checks that kernels make on the device and the host reports later (docs/ops.md, "Checks on
// the device"). An op whose kernel validates data it reads (gather's indices, nll_loss's labels,
// embedding's token ids) takes a DeviceCheck: a few i64 slots, zero until the kernel writes a
// nonzero code of a bad input into one (an atomic max of a positive code, or min of a negative). Reading the slots right after the launch would
// cost a stream sync per call (15-20 us on an H100, more than such an op's kernel), so on CUDA the
// check is deferred, as PyTorch's device-side asserts are: the slots are read when the host next
// reads a tensor of that device or synchronises it, and the first failed check raises its op's
// error there. Unlike a device-side assert, the kernel skips the bad element (no fault, no sticky
// context) and the process goes on after the error.
//
// Immediate (read after the launch) on the CPU, where it costs nothing, and with TRITIUM_DEBUG;
// set_device_checks_mode overrides both (tests use it to run the deferred path on the CPU).
// Slots come from a per-device ring (kDeviceCheckSlots, zeroed once); a ring that would reuse a
// pending slot is flushed first (a sync once per that many unchecked calls).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "runtime/tensor.h"

namespace tritium::runtime {

inline constexpr int64_t kDeviceCheckSlots = 4096;

enum class DeviceCheckMode { immediate, deferred };

// The mode on device: the override if set, else immediate on the CPU or with TRITIUM_DEBUG,
// deferred on CUDA.
DeviceCheckMode device_checks_mode(Device device);
// nullopt restores the default. Not meant to change while checks are pending.
void set_device_checks_mode(std::optional<DeviceCheckMode> mode);

class DeviceCheck {
 public:
  // Builds the error message from the slots' codes (at least one nonzero); may read tensors.
  using Explain = std::function<std::string(const int64_t* codes)>;

  // `slots` zeroed i64 slots on device (1..16).
  DeviceCheck(Device device, int slots, Explain explain);
  DeviceCheck(const DeviceCheck&) = delete;
  DeviceCheck& operator=(const DeviceCheck&) = delete;
  ~DeviceCheck();

  // The slots as an i64 tensor [slots] for the kernel (a view of the device's ring).
  const Tensor& slots() const { return slots_; }
  // Call once the kernel that writes the slots is launched: immediate mode reads them now and
  // throws the op's error; deferred mode leaves them pending until the next report.
  void launched();

 private:
  Device device_;
  Tensor slots_;
  int64_t first_ = 0;
  int count_ = 0;
  Explain explain_;
  bool registered_ = false;
};

// Reads the pending checks of device (syncing the streams that launched them) and throws the
// first failure's error, in launch order; every pending check is cleared. Called by the host reads
// of runtime/tensor.cpp and by synchronize(); cheap when nothing is pending.
void report_device_checks(Device device);
// Pending checks on device (tests).
int64_t pending_device_checks(Device device);

}  // namespace tritium::runtime
