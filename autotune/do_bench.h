// Timing a callable the way triton.testing.do_bench does: warm up, repeat, take the median.
// CPU launches are synchronous, so a steady clock around each call is exact; the CUDA backend
// will time with device events.
#pragma once
#include <algorithm>
#include <chrono>
#include <vector>

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

}  // namespace tritium
