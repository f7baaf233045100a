#include "autotune/do_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <vector>

#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_streams.h"

namespace tritium {
namespace {

namespace cu = runtime::cuda;
using Clock = std::chrono::steady_clock;

constexpr size_t kFlushBytes = size_t{256} << 20;  // larger than any L2 (H100: 50 MB)

// One flush buffer per device, kept for the life of the process.
cu::CUdeviceptr flush_buffer(int device) {
  static std::mutex mutex;
  static std::vector<cu::CUdeviceptr> buffers;
  std::lock_guard lock(mutex);
  if (buffers.size() <= static_cast<size_t>(device)) buffers.resize(static_cast<size_t>(device) + 1, 0);
  auto& b = buffers[static_cast<size_t>(device)];
  if (!b) b = cu::allocate(kFlushBytes, device);
  return b;
}

BenchResult summarize(std::vector<double> times, bool stopped_early) {
  std::sort(times.begin(), times.end());
  BenchResult r;
  r.median_ms = times[times.size() / 2];
  r.min_ms = times.front();
  r.max_ms = times.back();
  r.reps = static_cast<int>(times.size());
  r.stopped_early = stopped_early;
  return r;
}

// Milliseconds of each of `n` calls (each preceded by the untimed preparation), and of one
// repetition as a whole - preparation and L2 flush included - which is what decides how many
// repetitions fit in a time budget (Triton's estimate includes the flush too: for a 5 us kernel
// the 256 MB flush is ~20 times the kernel, and counting only the kernel ran ~20 times rep_ms).
struct Timings {
  std::vector<double> times;
  double per_rep_ms = 0;
};

Timings time_calls(const std::function<void()>& fn, const runtime::Device& device, const BenchOptions& o, int n) {
  Timings r;
  std::vector<double>& times = r.times;
  times.reserve(static_cast<size_t>(n));
  if (!device.is_cuda()) {
    auto all = Clock::now();
    for (int i = 0; i < n; ++i) {
      if (o.before_each) o.before_each();
      auto t0 = Clock::now();
      fn();
      times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    r.per_rep_ms = std::chrono::duration<double, std::milli>(Clock::now() - all).count() / n;
    return r;
  }
  int dev = device.index;
  // The calls launch on the caller's current stream (runtime/streams.h): flush and time there too.
  const cu::CUstream stream = cu::current_stream(dev);
  cu::CUdeviceptr flush = o.flush_l2 ? flush_buffer(dev) : 0;
  std::vector<cu::Event> starts, ends;
  starts.reserve(static_cast<size_t>(n));
  ends.reserve(static_cast<size_t>(n));
  cu::Event all(dev);
  all.record(stream);
  for (int i = 0; i < n; ++i) {
    if (o.before_each) o.before_each();
    if (flush) cu::memset_d8(flush, static_cast<unsigned char>(i), kFlushBytes, dev, stream);
    starts.emplace_back(dev);
    ends.emplace_back(dev);
    starts.back().record(stream);
    fn();
    ends.back().record(stream);
  }
  for (int i = 0; i < n; ++i) times.push_back(cu::Event::elapsed_ms(starts[static_cast<size_t>(i)], ends[static_cast<size_t>(i)]));
  if (n > 0) r.per_rep_ms = cu::Event::elapsed_ms(all, ends.back()) / n;
  return r;
}

}  // namespace

BenchResult do_bench(const std::function<void()>& fn, const runtime::Device& device, const BenchOptions& o) {
  if (device.is_cuda()) cu::ensure_context(device.index);
  auto sync = [&] {
    if (device.is_cuda()) cu::synchronize(device.index);
  };
  // First call: compiles on a cold cache, never timed.
  if (o.before_each) o.before_each();
  fn();
  sync();
  // Estimate from five calls (Triton does the same), then decide how many to run.
  Timings estimate = time_calls(fn, device, o, 5);
  sync();
  double est = std::max(1e-6, *std::min_element(estimate.times.begin(), estimate.times.end()));
  if (est > o.give_up_above_ms) return summarize(estimate.times, true);
  // The budgets count whole repetitions (preparation and flush included), as Triton's do_bench.
  const double mean = std::max(estimate.per_rep_ms, est);
  int n_warmup = std::max(1, static_cast<int>(o.warmup_ms / std::max(mean, 1e-6)));
  int n_rep = std::clamp(static_cast<int>(o.rep_ms / std::max(mean, 1e-6)), std::max(1, o.min_reps), o.max_reps);
  for (int i = 0; i < std::min(n_warmup, o.max_reps); ++i) {
    if (o.before_each) o.before_each();
    fn();
  }
  sync();
  std::vector<double> times = time_calls(fn, device, o, n_rep).times;
  sync();
  return summarize(std::move(times), false);
}

}  // namespace tritium
