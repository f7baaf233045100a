// Memory statistics of a device, as PyTorch's torch.cuda.memory_allocated & co: how many bytes
// tensors hold now and at most, and how many the allocator keeps from the system. On cuda:N the
// caching allocator's counters (runtime/cuda_allocator.h: block sizes, so a request is counted at
// its size class); on the CPU the host allocator's (runtime/buffer.cpp: every live host buffer at
// its 64-byte rounded size; reserved adds the freed blocks of 128 KiB or more that
// runtime/host_block_cache.h keeps for reuse). Thread-safe.
//
//   tritium::reset_peak_memory_stats(Device::cuda());
//   train_step();
//   std::printf("%s", tritium::memory_summary(Device::cuda()).c_str());
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/device.h"

namespace tritium::runtime {

// Bytes held by live tensors (buffers) on device.
size_t memory_allocated(Device device = default_device());
// The high-water mark of memory_allocated since the program started or the last reset.
size_t max_memory_allocated(Device device = default_device());
// Bytes the allocator holds from the system: allocated plus cached free blocks (cuda).
size_t memory_reserved(Device device = default_device());
// Restarts the high-water mark at the current allocation.
void reset_peak_memory_stats(Device device = default_device());
// A readable table of the statistics (current and peak allocation, reserved and cached bytes,
// allocation counts), as torch.cuda.memory_summary.
std::string memory_summary(Device device = default_device());

// The host allocator's counters, updated by Buffer::allocate and its deleter (relaxed atomics:
// exact totals, no ordering with other memory).
namespace host_memory {
void note_allocated(size_t nbytes);
void note_freed(size_t nbytes);
}  // namespace host_memory

}  // namespace tritium::runtime

namespace tritium {
using runtime::max_memory_allocated;
using runtime::memory_allocated;
using runtime::memory_reserved;
using runtime::memory_summary;
using runtime::reset_peak_memory_stats;
}  // namespace tritium
