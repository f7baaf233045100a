#include "jit/cpu/cpu_runtime.h"

#include <cstdio>

#include <fmt/format.h>

#include "common/error.h"

namespace tritium::jit::cpu {

void LaunchState::record_assert(const char* message, int32_t px, int32_t py, int32_t pz) {
  if (failed_.exchange(true)) return;
  std::lock_guard lock(mutex_);
  message_ = fmt::format("{} (program ({}, {}, {}))", message, px, py, pz);
}

void LaunchState::rethrow(const std::string& kernel) {
  if (!failed_.load()) return;
  std::lock_guard lock(mutex_);
  throw Error(fmt::format("kernel {}: device assertion failed: {}", kernel, message_));
}

extern "C" void tritium_cpu_print(void*, const char* prefix, int32_t px, int32_t py, int32_t pz, int32_t operand,
                                  int64_t index, int32_t kind, int64_t ivalue, double fvalue) {
  std::string value;
  switch (kind) {
    case 0: value = fmt::format("{}", ivalue); break;
    case 1: value = fmt::format("{}", static_cast<uint64_t>(ivalue)); break;
    case 2: value = fmt::format("{}", fvalue); break;
    case 3: value = fmt::format("0x{:x}", static_cast<uint64_t>(ivalue)); break;
    case 4: value = ivalue ? "true" : "false"; break;
    default: break;
  }
  std::string line = fmt::format("pid ({}, {}, {})", px, py, pz);
  if (index >= 0) line += fmt::format(" idx ({})", index);
  line += fmt::format(" {}", prefix);
  if (operand > 0) line += fmt::format(" (operand {})", operand);
  if (kind >= 0) line += fmt::format(" {}", value);
  line += "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);  // one call per line: lines never interleave
}

extern "C" void tritium_cpu_assert_fail(void* launch, const char* message, int32_t px, int32_t py, int32_t pz) {
  static_cast<LaunchState*>(launch)->record_assert(message, px, py, pz);
}

}  // namespace tritium::jit::cpu
