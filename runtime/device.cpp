#include "runtime/device.h"

#include <charconv>

#include <fmt/format.h>

#include "common/error.h"
#include "runtime/cuda_driver.h"

namespace tritium::runtime {

std::string Device::str() const {
  if (kind == Kind::cpu) return index == 0 ? "cpu" : fmt::format("cpu:{}", index);
  return fmt::format("cuda:{}", index);
}

Device Device::parse(std::string_view text) {
  auto bad = [&](std::string_view why) -> Device {
    fail("Device::parse: invalid device '{}': {} (expected \"cpu\", \"cuda\" or \"cuda:N\")", text, why);
  };
  std::string_view name = text.substr(0, text.find(':'));
  Kind kind;
  if (name == "cpu") kind = Kind::cpu;
  else if (name == "cuda") kind = Kind::cuda;
  else return bad("unknown device type");

  int index = 0;
  if (name.size() < text.size()) {
    std::string_view digits = text.substr(name.size() + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (digits.empty() || digits[0] == '-' || digits[0] == '+' || ec != std::errc() ||
        end != digits.data() + digits.size())
      return bad("the index must be a non-negative integer");
  }
  if (kind == Kind::cpu && index != 0) return bad("there is only one CPU device, cpu:0");
  return {kind, index};
}

namespace {
thread_local Device t_default_device = Device::cpu();
}  // namespace

Device default_device() { return t_default_device; }
void set_default_device(Device device) { t_default_device = device; }

bool device_available(Device device) { return device_unavailable_reason(device).empty(); }

std::string memory_unavailable_reason(Device device) {
  if (device.is_cpu()) return device.index == 0 ? "" : fmt::format("no device {}: the only CPU device is cpu", device.str());
  return device_unavailable_reason(device);
}

bool memory_available(Device device) { return memory_unavailable_reason(device).empty(); }

std::string device_unavailable_reason(Device device) {
  if (device.is_cpu()) {
    if (device.index != 0) return fmt::format("no device {}: the only CPU device is cpu", device.str());
#if TRITIUM_HAS_CPU_BACKEND
    return "";
#else
    return "Tritium was built without its CPU backend (LLVM 19 was not found at configure time; apt-get install "
           "llvm-19-dev and reconfigure)";
#endif
  }
#if !TRITIUM_HAS_CUDA_BACKEND
  return "Tritium was built without its CUDA backend (configured with -DTRITIUM_CUDA_BACKEND=OFF)";
#else
  if (!cuda::available()) return cuda::unavailable_reason();
  int count = cuda::driver().device_count;
  if (device.index < 0 || device.index >= count)
    return fmt::format("no device {}: this machine has {} CUDA device{} (cuda:0 to cuda:{})", device.str(), count,
                       count == 1 ? "" : "s", count - 1);
  return "";
#endif
}

}  // namespace tritium::runtime
