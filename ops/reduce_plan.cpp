// The cut of a reduction into programs (ops/reduce_plan.h).
#include "ops/reduce_plan.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "common/error.h"
#include "runtime/cuda_device.h"
#include "runtime/streams.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

namespace tritium::ops::detail {

namespace {

// Elements per tile: a program's registers on the GPU, a few vector registers per lane on the CPU.
constexpr int64_t kTile = 4096;
// A chunk holds at least this many elements and 4 tiles along r: shorter ones cost more in the
// second launch and the partials' traffic than they gain in parallelism.
constexpr int64_t kMinChunkElements = 4096;
constexpr int64_t kMinChunkTiles = 4;
std::mutex override_mutex;
std::optional<ReduceDevice> device_override;

int64_t pow4_ceil(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 4;
  return p;
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How many chunks r is cut into when `programs` programs run without a split; 1 = no split.
// `min_chunk` is the shortest worthwhile chunk, `step` the tile extent along r that a chunk
// is a multiple of. Sets `chunk`.
int64_t split_r(int64_t R, int64_t programs, int64_t fill, int64_t min_chunk, int64_t step, int64_t& chunk) {
  chunk = std::max<int64_t>(R, 1);
  if (programs >= fill) return 1;
  int64_t S = std::min(cdiv(fill, programs), R / min_chunk);
  if (S <= 1) return 1;
  chunk = cdiv(cdiv(R, S), step) * step;
  return cdiv(R, chunk);
}

}  // namespace

int64_t max_row_block(int64_t elem_bytes) {
  // A bf16 block of 1024 is 16 bytes a thread a trip: a full reduction of 2^24 bf16 (512 programs,
  // 4 an SM, loads 2 trips ahead) kept about 24 KB in flight an SM, at the edge of what covers the
  // H100's memory latency (sum of all: 0.79 x PyTorch in bf16, 0.91 in f32, same plan).
  return elem_bytes == 2 ? 2048 : 1024;
}

int row_warps(int64_t tile_bytes, int max_warps) {
  const int64_t want = std::clamp<int64_t>(tile_bytes / 1024, 1, std::max(max_warps, 1));
  int w = 1;
  while (w * 2 <= want) w *= 2;  // a power of two
  return w;
}

ReducePlan plan_reduce(int64_t O, int64_t R, int64_t I, const ReduceDevice& device, int64_t elem_bytes) {
  const int64_t fill = device.fill;
  if (O < 1 || R < 0 || I < 1 || fill < 1 || device.max_columns < 16)
    fail("plan_reduce: bad problem O={} R={} I={} fill={} max_columns={}", O, R, I, fill, device.max_columns);
  ReducePlan p;
  p.columns = I > 1;
  if (!p.columns) {
    // Rows: a program reduces block_k rows, walking r in blocks of block_r (vector loads).
    p.block_r = std::clamp<int64_t>(pow4_ceil(R), 16, device.row_block);
    // Rows longer than 1024 on the GPU: the widest block for the dtype (R of 1024 or less keeps its block).
    if (R > 1024 && device.row_block >= 1024) p.block_r = max_row_block(elem_bytes);
    p.block_k = p.block_r >= device.row_block
                    ? 1
                    : std::clamp<int64_t>(device.row_tile / p.block_r, 1, std::max<int64_t>(1, pow4_ceil(O)));
    // Enough long rows to fill the device without a split: one a warp (see kLaneRows). At
    // [5312, 3136] bf16 (adaptive_avg_pool2d to 1x1 of [83, 64, 56, 56]) the [1, 2048] tiles gave
    // 5312 CTAs of 56 registers, each ending in a block reduction; [4, 256] tiles are 1328 CTAs of
    // 40 registers (all resident on 132 SMs), 13 trips of 16 bytes a thread, 2 trips ahead, and
    // 5 shuffles a row.
    if (R > 1024 && device.lane_rows && cdiv(O, kLaneRows) >= fill) {
      p.block_r = std::max<int64_t>(16, 512 / std::max<int64_t>(elem_bytes, 1));
      p.block_k = kLaneRows;
    }
    const int64_t programs = cdiv(O, p.block_k);
    const int64_t min_chunk = std::max(kMinChunkTiles * p.block_r, cdiv(kMinChunkElements, p.block_k));
    p.chunks = split_r(R, programs, fill, min_chunk, p.block_r, p.chunk);
    p.programs = programs * p.chunks;
    if (p.chunks > 1) {
      p.block_r2 = std::clamp<int64_t>(pow4_ceil(p.chunks), 16, 1024);
      p.block_k2 = std::clamp<int64_t>(kTile / p.block_r2, 1, std::max<int64_t>(1, pow4_ceil(O)));
      p.programs2 = cdiv(O, p.block_k2);
    }
    return p;
  }
  // Columns: a program reduces a [block_r, block_k] tile along r, vectorised across i.
  p.block_k = std::clamp<int64_t>(pow4_ceil(I), 16, device.max_columns);
  p.block_r = std::clamp<int64_t>(kTile / p.block_k, 1, std::max<int64_t>(1, pow4_ceil(R)));
  const int64_t programs = O * cdiv(I, p.block_k);
  const int64_t min_chunk = std::max(kMinChunkTiles * p.block_r, cdiv(kMinChunkElements, p.block_k));
  p.chunks = split_r(R, programs, fill, min_chunk, p.block_r, p.chunk);
  p.programs = programs * p.chunks;
  if (p.chunks > 1) {
    p.block_k2 = p.block_k;
    p.block_r2 = std::clamp<int64_t>(kTile / p.block_k2, 1, std::max<int64_t>(1, pow4_ceil(p.chunks)));
    p.programs2 = programs;
  }
  return p;
}

runtime::Tensor reduce_counters(Device device, int64_t n) {
  using Key = std::tuple<int, int, int64_t, std::thread::id>;
  static std::mutex mutex;
  static auto* cache = new std::map<Key, runtime::Tensor>;  // never destroyed: no frees after the driver's teardown
  const Key key{static_cast<int>(device.kind), device.index, runtime::current_stream(device).id(),
                device.is_cpu() ? std::this_thread::get_id() : std::thread::id()};
  std::lock_guard lock(mutex);
  runtime::Tensor& t = (*cache)[key];
  if (!t.defined() || t.numel() < n) t = runtime::Tensor::zeros({std::max<int64_t>(n, 1024)}, DType::i32, device);
  return t;
}

ReduceDevice reduce_device(Device device) {
  {
    std::lock_guard lock(override_mutex);
    if (device_override) return *device_override;
  }
  if (device.is_cuda()) return ReduceDevice::cuda(runtime::cuda::properties(device.index).multiprocessor_count);
  return ReduceDevice::cpu(runtime::ThreadPool::global().size());
}

ScopedReduceDevice::ScopedReduceDevice(ReduceDevice d) {
  std::lock_guard lock(override_mutex);
  if (device_override) fail("ScopedReduceDevice: already overridden (scopes do not nest)");
  device_override = d;
}
ScopedReduceDevice::~ScopedReduceDevice() {
  std::lock_guard lock(override_mutex);
  device_override.reset();
}

}  // namespace tritium::ops::detail
