// Unsloth's launch helpers (unslothai/unsloth unsloth/kernels/utils.py), shared by the suite's
// Unsloth ports: one block spans the row, more warps for wider rows. Same rule as Liger's
// (kernels/liger_utils.h); kept apart because each port names its own source's helper and message.
#pragma once
#include <cstdint>
#include <utility>

#include <tritium/tritium.h>

namespace unsloth {

inline constexpr int64_t MAX_FUSED_SIZE = 65536;

// triton.next_power_of_2
inline int64_t next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

inline std::pair<int, int> calculate_settings(int64_t n) {
  const int64_t BLOCK_SIZE = next_power_of_2(n);
  if (BLOCK_SIZE > MAX_FUSED_SIZE)
    tritium::fail("Cannot launch Triton kernel since n = {} exceeds the maximum CUDA blocksize = {}.", n, MAX_FUSED_SIZE);
  int num_warps = 4;
  if (BLOCK_SIZE >= 32768)
    num_warps = 32;
  else if (BLOCK_SIZE >= 8192)
    num_warps = 16;
  else if (BLOCK_SIZE >= 2048)
    num_warps = 8;
  return {static_cast<int>(BLOCK_SIZE), num_warps};
}

}  // namespace unsloth
