// Functions generated CPU code calls back into, and the per-launch state they report to.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "jit/check_failure.h"

namespace tritium::jit::cpu {

// Lives for one launch; the first failed device assertion or debug check is recorded and raised
// after the grid.
class LaunchState {
 public:
  void record(CheckFailure failure);
  void rethrow(const std::string& kernel);  // throws tritium::Error if a check failed

 private:
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  CheckFailure failure_;
};

extern "C" {
// device_print: one line per element; operand < 0 for a print without values, index < 0 for scalars.
void tritium_cpu_print(void* launch, const char* prefix, int32_t px, int32_t py, int32_t pz, int32_t operand,
                       int64_t index, int32_t kind, int64_t ivalue, double fvalue);
// kind: jit::CheckKind; lane: the failing element's row-major index (-1 for a scalar); p0..p2: the
// check's payload at that lane.
void tritium_cpu_assert_fail(void* launch, const char* message, int64_t kind, int32_t px, int32_t py, int32_t pz,
                             int64_t lane, int64_t p0, int64_t p1, int64_t p2);
}

}  // namespace tritium::jit::cpu
