#include "profiler/memory_usage.h"

#include <unistd.h>

#include <fstream>

#include "runtime/cuda_allocator.h"

namespace tritium::profiler {

int64_t memory_in_use(runtime::Device device) {
  if (device.is_cuda()) return static_cast<int64_t>(runtime::cuda::stats(device.index).allocated);
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace tritium::profiler
