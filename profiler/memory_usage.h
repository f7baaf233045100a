// The memory a training log reports: on a CUDA device the bytes the caching allocator has handed
// out (runtime/cuda_allocator.h), on the CPU the process's resident set (from /proc/self/statm;
// 0 where that file is missing).
#pragma once
#include <cstdint>

#include "runtime/device.h"

namespace tritium::profiler {

int64_t memory_in_use(runtime::Device device);

}  // namespace tritium::profiler
