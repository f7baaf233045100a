// How a reduction out[o*I + i] = reduce_r x[o*so + r*sr + i*si] is cut into programs
// (ops/reduce.cpp launches it; docs/ops.md "Reductions"). Separate so that tests can check the
// decision for a device they do not have (an H100's 132 SMs on a CPU-only machine).
#pragma once
#include <cstdint>

#include "runtime/device.h"

namespace tritium::ops::detail {

struct ReducePlan {
  bool columns = false;  // I > 1: tiles [block_r, block_k] reduced along axis 0; else [block_k, block_r] along 1
  int64_t block_r = 1;   // tile extent along r
  int64_t block_k = 1;   // tile extent along the kept index (o for rows, i for columns)
  int64_t chunks = 1;    // S: r is cut into S chunks of `chunk`; S > 1 needs a second launch over S
  int64_t chunk = 1;
  int64_t programs = 1;  // of the first launch
  // The second launch (chunks > 1): reduces the [O, S] or [O, S, I] partials over S.
  int64_t block_r2 = 1, block_k2 = 1, programs2 = 0;
  int launches() const { return chunks > 1 ? 2 : 1; }
};

// The plan for an (O, R, I) problem on a device that `fill` programs keep busy.
ReducePlan plan_reduce(int64_t O, int64_t R, int64_t I, int64_t fill);

// Programs that keep `device` busy: a few waves of its SMs (CUDA), its pool's threads (CPU).
int64_t reduce_fill_programs(Device device);

// Makes reduce_fill_programs return `fill` for a scope (tests: run a GPU's plan on the CPU).
class ScopedReduceFill {
 public:
  explicit ScopedReduceFill(int64_t fill);
  ~ScopedReduceFill();
  ScopedReduceFill(const ScopedReduceFill&) = delete;
  ScopedReduceFill& operator=(const ScopedReduceFill&) = delete;

 private:
  int64_t previous_;
};

}  // namespace tritium::ops::detail
