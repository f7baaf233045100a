// Timing a callable the way triton.testing.do_bench does: estimate, warm up for `warmup_ms`,
// repeat for `rep_ms`, report the median. On the CPU, launches are synchronous and a steady
// clock around each call is exact. On a CUDA device each repetition is timed by two events on
// the caller's current stream (runtime/streams.h), and the L2 cache is flushed before it (a 256 MB buffer is overwritten,
// untimed), so that a kernel does not find its inputs in L2 from the previous repetition.
#pragma once
#include <functional>
#include <limits>

#include "runtime/device.h"

namespace tritium {

struct BenchOptions {
  double warmup_ms = 25;  // time spent warming up after the estimate
  double rep_ms = 100;    // time spent measuring
  int min_reps = 5;       // at least this many measured repetitions...
  int max_reps = 10000;   // ...and at most this many
  bool flush_l2 = true;   // CUDA only
  // Untimed work before every call (an autotuner's reset_to_zero / restore_value and hooks).
  std::function<void()> before_each = {};
  // Give up after the estimate when even the fastest call took longer than this: a candidate
  // that is clearly slower than the best so far is not measured further.
  double give_up_above_ms = std::numeric_limits<double>::infinity();
};

struct BenchResult {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int reps = 0;
  bool stopped_early = false;  // gave up after the estimate (median of the estimate calls)
};

// Runs fn on `device` (cpu by default). fn's first call happens before any timing, so a kernel
// that compiles on its first launch is not timed compiling.
BenchResult do_bench(const std::function<void()>& fn, const runtime::Device& device = runtime::Device::cpu(),
                     const BenchOptions& options = {});

}  // namespace tritium
