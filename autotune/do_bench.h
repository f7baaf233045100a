// Timing a callable the way triton.testing.do_bench does: warm up, repeat, take the median.
// CPU launches are synchronous, so a steady clock around each call is exact; on a CUDA device
// the time between two events recorded around the call on the default stream is used.
#pragma once
#include <algorithm>
#include <chrono>
#include <vector>

#include "runtime/cuda_device.h"
#include "runtime/device.h"

namespace tritium {

struct BenchResult {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int reps = 0;
};

// Runs fn at least `min_reps` times and for at least `min_ms` milliseconds after `warmup` calls.
template <class F>
BenchResult do_bench(F&& fn, int warmup = 3, int min_reps = 10, double min_ms = 100.0) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> times;
  auto start = clock::now();
  while (static_cast<int>(times.size()) < min_reps ||
         std::chrono::duration<double, std::milli>(clock::now() - start).count() < min_ms) {
    auto t0 = clock::now();
    fn();
    times.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    if (times.size() >= 100000) break;
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front(), times.back(), static_cast<int>(times.size())};
}

// The same on `device`: CUDA work is timed with events (launches are asynchronous).
template <class F>
BenchResult do_bench(F&& fn, const runtime::Device& device, int warmup = 3, int min_reps = 10, double min_ms = 100.0) {
  if (!device.is_cuda()) return do_bench(fn, warmup, min_reps, min_ms);
  namespace cu = runtime::cuda;
  cu::ensure_context(device.index);
  for (int i = 0; i < warmup; ++i) fn();
  cu::synchronize(device.index);
  std::vector<double> times;
  double total = 0;
  while (static_cast<int>(times.size()) < min_reps || total < min_ms) {
    cu::Event start(device.index), end(device.index);
    start.record();
    fn();
    end.record();
    double ms = cu::Event::elapsed_ms(start, end);
    times.push_back(ms);
    total += ms;
    if (times.size() >= 100000) break;
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front(), times.back(), static_cast<int>(times.size())};
}

}  // namespace tritium
