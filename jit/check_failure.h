// The message of a failed device-side check (tl::device_assert, or a TRITIUM_DEBUG access or
// overflow check, jit/passes/debug_checks.h), written the same way by both backends' launchers.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace tritium::jit {

struct CheckFailure {
  int64_t kind = 0;             // CheckKind
  std::string message;          // the Assert's attrs.str
  std::array<int32_t, 3> program{};
  int64_t lane = -1;            // row-major element index in the checked block; -1 for a scalar
  std::array<int64_t, 3> payload{};
};

// "kernel K: device assertion failed: MSG (program (x, y, z), lane L)", or for debug checks
// "kernel K: out-of-bounds load ... at file:line: program (x, y, z), lane L, address 0x...,
// allocation [0x..., 0x...) of N bytes (the access starts at byte O of it)".
std::string describe(const CheckFailure& c, const std::string& kernel);

}  // namespace tritium::jit
