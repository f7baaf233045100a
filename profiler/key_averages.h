// Aggregated profiler statistics, as PyTorch's prof.key_averages(): one row per event name (and
// kind; and input shapes when grouped by shape), with counts, CPU total and self time, GPU time
// and memory; table() prints them sorted, in the spirit of PyTorch's table(sort_by, row_limit).
//
// Self CPU time is an event's CPU time less that of the events recorded inside it on the same
// thread (ops, ranges and kernel launches: as in PyTorch, where an op's self time excludes the
// cudaLaunchKernel calls it makes). On the CPU backend a kernel's launch runs the kernel, so
// most of an op's time is its kernels' time.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/event.h"

namespace tritium::profiler {

struct KeyAverage {
  std::string name;
  EventKind kind = EventKind::op;
  std::string input_shapes;  // grouped by shape only
  int64_t count = 0;
  double cpu_total_us = 0, cpu_self_us = 0;
  double gpu_total_us = 0;   // kernels (and NCCL collectives) timed on a GPU, and ops/ranges: theirs
  double comm_total_us = 0;  // collectives: where they ran (the GPU for NCCL, Gloo's worker thread)
  int64_t cpu_memory = 0;       // bytes allocated less freed inside it, children included (CPU)
  int64_t self_cpu_memory = 0;  // ... by itself
  int64_t gpu_memory = 0, self_gpu_memory = 0;  // the same on CUDA devices
  double cpu_avg_us() const { return count ? cpu_total_us / static_cast<double>(count) : 0; }
  double gpu_avg_us() const { return count ? gpu_total_us / static_cast<double>(count) : 0; }
};

class KeyAverages {
 public:
  KeyAverages() = default;
  KeyAverages(const std::vector<Event>& events, bool group_by_input_shape);

  const std::vector<KeyAverage>& rows() const { return rows_; }
  // The row of this name and kind (the first, when grouped by shape); nullptr when absent.
  const KeyAverage* find(std::string_view name, EventKind kind = EventKind::op) const;

  // Rows sorted by `sort_by` (descending): "cpu_time_total", "self_cpu_time_total",
  // "cpu_time" (average), "cuda_time_total" (alias "device_time_total"), "self_cuda_time_total",
  // "count", "cpu_memory_usage", "self_cpu_memory_usage", "cuda_memory_usage",
  // "self_cuda_memory_usage", "comm_time_total". An unknown key is a tritium::Error listing these.
  std::vector<KeyAverage> sorted(std::string_view sort_by) const;

  // A fixed-width table of at most row_limit rows (< 0: all), then the total self CPU time (and
  // GPU time). Columns: Name, Kind (op, range, kernel: an op and its kernel often share a name),
  // Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, # of Calls; GPU total and GPU time
  // avg when a kernel was timed on a GPU; Comm total when collectives were recorded; CPU Mem and Self CPU Mem (and the GPU's) when memory was
  // profiled; Input Shapes when grouped by shape.
  std::string table(std::string_view sort_by = "cpu_time_total", int row_limit = 100) const;

 private:
  std::vector<KeyAverage> rows_;
  bool by_shape_ = false;
  bool has_memory_ = false, has_gpu_memory_ = false;
  bool has_gpu_time_ = false;  // any kernel timed on a GPU
  bool has_comm_ = false;      // any collective
};

}  // namespace tritium::profiler
