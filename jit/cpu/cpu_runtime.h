// Functions generated CPU code calls back into, and the per-launch state they report to.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace tritium::jit::cpu {

// Lives for one launch; the first failed device assertion is recorded and raised after the grid.
class LaunchState {
 public:
  void record_assert(const char* message, int32_t px, int32_t py, int32_t pz);
  void rethrow(const std::string& kernel);  // throws tritium::Error if an assertion failed

 private:
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::string message_;
};

extern "C" {
// device_print: one line per element; operand < 0 for a print without values, index < 0 for scalars.
void tritium_cpu_print(void* launch, const char* prefix, int32_t px, int32_t py, int32_t pz, int32_t operand,
                       int64_t index, int32_t kind, int64_t ivalue, double fvalue);
void tritium_cpu_assert_fail(void* launch, const char* message, int32_t px, int32_t py, int32_t pz);
}

}  // namespace tritium::jit::cpu
