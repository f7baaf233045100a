// Where memory lives and kernels run.
#pragma once
#include <string>
#include <string_view>

namespace tritium::runtime {

struct Device {
  enum class Kind { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;

  static Device cpu() { return {Kind::cpu, 0}; }
  static Device cuda(int index = 0) { return {Kind::cuda, index}; }

  bool is_cpu() const { return kind == Kind::cpu; }
  bool is_cuda() const { return kind == Kind::cuda; }
  bool operator==(const Device&) const = default;

  std::string str() const;  // "cpu", "cuda:0"
  // Accepts "cpu", "cpu:0", "cuda" (= "cuda:0") and "cuda:N"; anything else is a tritium::Error.
  static Device parse(std::string_view text);
};

// The device that tensor factories (empty, zeros, from_vector, rand, ...) use when the caller
// names none, like PyTorch's torch.set_default_device. Per thread (a data-loading thread keeps
// cpu), cpu until set. set_default_device does not check availability: creating a tensor does.
Device default_device();
void set_default_device(Device device);

// Makes `device` the default for a scope, restoring the previous default on exit.
class DefaultDeviceGuard {
 public:
  explicit DefaultDeviceGuard(Device device) : previous_(default_device()) { set_default_device(device); }
  ~DefaultDeviceGuard() { set_default_device(previous_); }
  DefaultDeviceGuard(const DefaultDeviceGuard&) = delete;
  DefaultDeviceGuard& operator=(const DefaultDeviceGuard&) = delete;

 private:
  Device previous_;
};

// Whether kernels can run on device (cpu: the LLVM backend was built; cuda:N: driver and device).
bool device_available(Device device);
// Whether memory (tensors, buffers) can live on device. Host memory always can, even in a build
// without the CPU kernel backend (the GPU machine's), since copies to and from GPUs go through it.
bool memory_available(Device device);
std::string memory_unavailable_reason(Device device);
// Why device_available(device) is false; empty when it is available.
std::string device_unavailable_reason(Device device);

}  // namespace tritium::runtime

namespace tritium {
using runtime::default_device;
using runtime::DefaultDeviceGuard;
using runtime::Device;
using runtime::set_default_device;
}  // namespace tritium
