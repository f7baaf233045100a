// What ops::matmul's GPU autotuners (ops/matmul.cpp) decide from a product's shape, named so that
// tools and tests can ask without a GPU: the candidate tiles, the heuristic's choice among them and
// the estimated time of a launch that decides, under TRITIUM_AUTOTUNE=auto, when a shape is worth
// tuning (docs/autotune.md, "When tuning pays").
#pragma once
#include <cstdint>
#include <vector>

#include "autotune/autotuner.h"
#include "ir/types.h"

namespace tritium::ops {

// What the estimate needs of a GPU: its SMs, compute capability, clocks and memory bus
// (runtime::cuda::DeviceProperties' fields of the same meaning).
struct GpuSpeed {
  int sms = 132, cc = 90;
  double clock_khz = 1'980'000, memory_clock_khz = 2'619'000;
  int memory_bus_bits = 5120;
};

// The candidates ops::matmul's tuner considers for a product (after its early prune: tiles past
// the problem's size dropped; fp32 without tf32 takes the FMA dot's tiles), in its order.
std::vector<Config> matmul_gpu_candidates(int64_t M, int64_t N, int64_t K, DType dtype, bool tf32);
// What the heuristic counts: the product's M, N and K, the batch items on the grid (NB2) and, for a
// split-K launch, the chunk of K each program reduces (0: no split).
struct ProductGrid {
  int64_t m = 0, n = 0, k = 0, batch = 1, k_chunk = 0;
};
// TRITIUM_AUTOTUNE=heuristic's (and auto's first) choice among them: an index.
size_t matmul_gpu_heuristic(const std::vector<Config>& candidates, const ProductGrid& grid, int64_t sms);
// A roofline of one launch in ms: 2 M N K flops at the SMs' peak for the dtype (fp32 FMA, tf32 or
// 16-bit tensor cores), A, B and C once through DRAM, plus a launch's fixed cost; the larger of the
// two, at 70 % of peak.
double matmul_estimate_ms(int64_t M, int64_t N, int64_t K, int64_t batch, DType dtype, bool tf32, const GpuSpeed& gpu);

}  // namespace tritium::ops
