#include "jit/check_failure.h"

#include <fmt/format.h>

#include "jit/passes/debug_checks.h"

namespace tritium::jit {

std::string describe(const CheckFailure& c, const std::string& kernel) {
  std::string where = fmt::format("program ({}, {}, {})", c.program[0], c.program[1], c.program[2]);
  if (c.lane >= 0) where += fmt::format(", lane {}", c.lane);
  switch (static_cast<CheckKind>(c.kind)) {
    case CheckKind::access: {
      const int64_t addr = c.payload[0], lo = c.payload[1], hi = c.payload[2];
      return fmt::format("kernel {}: {}: {}, address {:#x}, allocation [{:#x}, {:#x}) of {} bytes (the access starts at byte "
                         "{} of it)",
                         kernel, c.message, where, static_cast<uint64_t>(addr), static_cast<uint64_t>(lo),
                         static_cast<uint64_t>(hi), hi - lo, addr - lo);
    }
    case CheckKind::overflow:
      return fmt::format("kernel {}: {}: {}, exact value {}", kernel, c.message, where, c.payload[0]);
    default:
      return fmt::format("kernel {}: device assertion failed: {} ({})", kernel, c.message, where);
  }
}

}  // namespace tritium::jit
