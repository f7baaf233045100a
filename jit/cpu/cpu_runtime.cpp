#include "jit/cpu/cpu_runtime.h"

#include <cstdio>

#include <fmt/format.h>

#include "common/error.h"

namespace tritium::jit::cpu {

void LaunchState::record(CheckFailure failure) {
  if (failed_.exchange(true)) return;
  std::lock_guard lock(mutex_);
  failure_ = std::move(failure);
}

void LaunchState::rethrow(const std::string& kernel) {
  if (!failed_.load()) return;
  std::lock_guard lock(mutex_);
  throw Error(describe(failure_, kernel));
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

extern "C" void tritium_cpu_assert_fail(void* launch, const char* message, int64_t kind, int32_t px, int32_t py,
                                        int32_t pz, int64_t lane, int64_t p0, int64_t p1, int64_t p2) {
  CheckFailure c;
  c.kind = kind;
  c.message = message;
  c.program = {px, py, pz};
  c.lane = lane;
  c.payload = {p0, p1, p2};
  static_cast<LaunchState*>(launch)->record(std::move(c));
}

}  // namespace tritium::jit::cpu
