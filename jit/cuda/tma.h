// Which tiles the bulk tensor copy engine (TMA) can move on Hopper, decided from the IR alone: the
// loads of the layout generator's pipelined ring (lowering/tma_ring.cpp), and stores of a 2-D tile
// (plan_tma_store: the matmul-loop matcher's store of C, removed with it at stop 41; kept for the
// layout generator's dot stores). A plan names the tensor a tile belongs to (base, shape and row
// stride as kernel parameters or constants, so that the launcher can encode a tensor map), the
// tile's coordinates, and a guard - a C++ bool over values from before the loop
// or store - under which the copy moves exactly what the load or store moves (zeros exactly where
// the copy's box leaves the tensor). Callers emit the TMA code under the guard and their ordinary
// code otherwise, so a wrong guess here costs speed, never a value. docs/cuda-backend.md, "TMA".
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "ir/ir.h"
#include "jit/passes/axis_info.h"

namespace tritium::jit::cuda {

// What the analysis needs from the generator calling it: the kernel, its axis info (the
// divisibility of parameters), the target, and the C++ name of a scalar the generator has
// already emitted (nothing when it has not: a guard may read only those).
struct TmaContext {
  const ir::Function& f;
  const AxisInfoMap& axis;
  int cc;
  std::function<std::optional<std::string>(const ir::Value*)> known;
};

// A tile the copy engine fills or drains: 16-bit elements (or f32 ones, loads only), rows of
// 128-byte column blocks with the 128-byte swizzle (a box of 128 bytes x rows a copy: 64 16-bit
// or 32 f32 elements), a 16-byte aligned base and row stride.
// Coordinates: a load through a block pointer or tensor descriptor gives `row` / `col` (the tile's
// indices along dims 0 / 1, from its bounds mask) to evaluate at element (0, 0) of a trip; a
// pointer block gives start[d] + trip * adv[d] (trip 0 the loop's first), or start[d] for a store.
struct TmaTile {
  std::string map;  // the KernelSource::tma_maps entry
  const ir::Value* row = nullptr;
  const ir::Value* col = nullptr;
  std::string start[2];
  int64_t adv[2] = {0, 0};
  std::string guard;  // a C++ bool over values from before the loop / store; the map usable at least
};

// A load of an rows x cols tile (row-major in memory: the last dim contiguous) in a `tl::range`
// loop, every trip. Two forms: a bounds-checked, zero-padded load through a block pointer or tensor
// descriptor (the load's `tensor` recipe); or a carried pointer block (the load reads the loop's
// carried argument whose value before the loop is `init` and which advances by `step` a trip; both
// null when the pointer is not carried) base + rows[:, None] * stride + cols[None, :] advanced along
// one dim, masked by (index < bound) per dim where the bound is the tensor's edge at every trip.
// round_tf32: an f32 tile that only tf32 dots read; the copy engine rounds it to tf32 on the way.
std::optional<TmaTile> plan_tma_load(const TmaContext& ctx, const ir::Op* load, int64_t rows, int64_t cols,
                                     const ir::Op* loop, const ir::Value* init, const ir::Value* step,
                                     bool round_tf32 = false);

// A masked store of a 2-D tile through base + rows[:, None] * stride + cols[None, :] (no `% D`)
// under (rows' index < M) & (cols' index < N), M and N kernel parameters or constants: the copy of
// the box at (column start, row start) writes what lies inside the M x N tensor, as the store does.
std::optional<TmaTile> plan_tma_store(const TmaContext& ctx, const ir::Op* store);

}  // namespace tritium::jit::cuda
