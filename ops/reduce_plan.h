// How a reduction out[o*I + i] = reduce_r x[o*so + r*sr + i*si] is cut into programs
// (ops/reduce.cpp launches it; docs/ops.md "Reductions"). Separate so that tests can check the
// decision for a device they do not have (an H100's 132 SMs on a CPU-only machine).
#pragma once
#include <cstdint>

#include "runtime/device.h"

namespace tritium::runtime {
class Tensor;
}

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

// What the plan needs to know of the device.
struct ReduceDevice {
  int64_t fill = 1;           // programs that keep it busy
  int64_t max_columns = 256;  // widest column tile
  bool lane_rows = false;     // many rows longer than 1024: kLaneRows rows a program, one a warp
  int64_t row_block = 1024;   // rows: the widest tile along r (a row at a time from there)
  int64_t row_tile = 4096;    // rows: elements of a tile of several short rows
  // CUDA: 4 programs per SM (a few waves); column tiles of at most 256 so that wide rows give
  // several programs, in the second launch too; lane rows. CPU: one program per pool thread (a
  // split beyond them only costs the second launch); column tiles up to 1024 (long contiguous
  // vector rows); a row a program. Rows on the CPU: tiles of at most 64 along r and 256 in all. The
  // accumulator is a loop-carried block the CPU generator keeps in a stack buffer, loaded and
  // stored every trip; at 64 (four 512-bit vectors of f32) LLVM keeps it in registers. One
  // thread, [1024, 1024] f32: sum / amax / argmax along the rows 0.120 / 0.251 / 0.479 ms with
  // [1, 1024] tiles, 0.056 / 0.107 / 0.099 with [1, 64]; [4, 64] tiles were slower (0.064 /
  // 0.155 / 0.111).
  static ReduceDevice cuda(int multiprocessors) { return {4 * int64_t(multiprocessors), 256, true}; }
  static ReduceDevice cpu(int threads) { return {threads, 1024, false, 64, 256}; }
};

// Lane rows: a rows reduction of R > 1024 over at least this many rows per program x fill takes
// [kLaneRows, 512 / elem_bytes] tiles - each row in one warp's 32 lanes of 16 bytes, reduced by
// shuffles alone (the CUDA generator's lane groups) - instead of a [1, max_row_block] tile a
// program whose row ends in a block reduction (shared memory, two barriers) and a new CTA.
inline constexpr int64_t kLaneRows = 4;

// The longest row block (tile extent along r of a rows reduction) for elements of `elem_bytes`:
// 1024, 2048 for 2-byte elements so that a trip still loads 4 KB (32 bytes a thread of 4 warps).
int64_t max_row_block(int64_t elem_bytes);

// The warps of a CUDA program over a one-row tile of `tile_bytes` (its elements times the input's
// element size): one warp a KB - a thread loads 32 bytes a trip whatever the dtype - a power of
// two from 1 to `max_warps`. The reductions' max / min / argmax / argmin take it with 4 (a
// [1, 1024] tile: 4 warps of f32, 2 of bf16/f16: a thread's fixed work - the trees, index math,
// argmax's keys - is then spread over as many bytes as f32's; with 8 bf16 a thread it bounded the
// issue rate, not memory); softmax's one-row programs with 16.
int row_warps(int64_t tile_bytes, int max_warps = 4);

// The plan for an (O, R, I) problem on `device`; `elem_bytes`: the input's element size.
ReducePlan plan_reduce(int64_t O, int64_t R, int64_t I, const ReduceDevice& device, int64_t elem_bytes = 4);

// At least n zeroed i32 counters for the one-launch split reductions (ops/reduce.cpp,
// ops/reduce_stats.cpp): the last program of each tile zeroes its counter again, so they are zero
// between launches. One buffer per device and current stream (CPU: per calling thread, since CPU
// kernels run on the thread that launches them), grown (zeroed on that stream) when too short.
runtime::Tensor reduce_counters(Device device, int64_t n);

// The description of `device` (its SM count, its pool's threads).
ReduceDevice reduce_device(Device device);

// Makes reduce_device return `d` for a scope (tests: run a GPU's plan on the CPU).
class ScopedReduceDevice {
 public:
  explicit ScopedReduceDevice(ReduceDevice d);
  ~ScopedReduceDevice();
  ScopedReduceDevice(const ScopedReduceDevice&) = delete;
  ScopedReduceDevice& operator=(const ScopedReduceDevice&) = delete;
};

}  // namespace tritium::ops::detail
