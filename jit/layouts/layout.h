// Layouts of block values on the GPU (docs/cuda-backend.md, "Layouts"): which thread of a CTA holds
// which elements, after Triton's TritonGPU encodings and its linear layouts.
//
// A *distributed* layout maps the bits of (register index, lane, warp) to bits of the element's
// coordinates: each input bit adds 2^bit to one dim's coordinate, or to none (the bit replicates:
// threads that differ only in it hold the same elements). Every element bit of the shape is set by
// exactly one input bit, and no register bit replicates, so a thread's registers hold distinct
// elements and the element of register r in thread (lane, warp) is
//   coord[d] = sum of 2^bit over the set input bits that map to dim d.
// Blocked (Triton's #blocked), mma accumulators (mma.sync m16n8 and wgmma m64nN), dot operands in
// registers and slices (a reduction's result) are all of this form; broadcasts, expand_dims,
// permutes and reshapes of a layout are too, so those ops move no data: they only relabel bits.
// Two layouts with the same bits place every element alike, whatever their names: converting
// between them is free (attention's P, an mma accumulator cast to f16, *is* the next dot's A
// operand fragment).
//
// A *shared* layout describes a 2-D tile in shared memory: its contiguous dim and the XOR swizzle of
// its 16-byte chunks (the layouts wgmma's matrix descriptors and TMA's boxes use).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/types.h"

namespace tritium::jit {

struct LayoutBit {
  int dim = -1;  // the coordinate this input bit adds 2^bit to; -1: none (replication)
  int bit = 0;
  bool none() const { return dim < 0; }
  bool operator==(const LayoutBit&) const = default;
};

enum class LayoutKind : uint8_t {
  Blocked,     // sizePerThread x threadsPerWarp x warpsPerCTA, dims in `order`
  Mma,         // a tensor-core accumulator
  DotOperand,  // an mma operand fragment in registers
  Slice,       // a parent layout with one dim removed (a reduction's result)
  Linear,      // any other bit map (a broadcast, permute or reshape of one of the above)
  Shared,      // a tile in shared memory
};

// Tensor-core tiling of a dot's result: version 2 is mma.sync m16n8k* with warps as units (each a
// 16 x 8 fragment grid), version 3 is wgmma m64nNk* with warpgroups as units.
struct MmaParams {
  int version = 2;
  int wm = 1, wn = 1;  // units along M and N
  bool operator==(const MmaParams&) const = default;
};

class Layout {
 public:
  LayoutKind kind = LayoutKind::Linear;
  ir::Shape shape;
  std::vector<LayoutBit> reg, lane, warp;  // lane: 5 bits; warp: log2(num_warps) bits
  std::string name;                        // how the printer shows it ("blocked<...>", "mma<...>", ...)

  // Mma and DotOperand: the tiling; DotOperand: which operand (0 = A, 1 = B) and its K elements per
  // 32-bit register (2 for 16-bit types, 4 for 8-bit ones, 1 for tf32).
  MmaParams mma;
  int op_idx = -1;
  int k_width = 0;
  // Shared: order[0] is the contiguous dim; swizzle: bytes of the XOR pattern (0, 32, 64, 128).
  std::vector<int> order;
  int swizzle = 0;

  bool is_shared() const { return kind == LayoutKind::Shared; }
  int rank() const { return static_cast<int>(shape.size()); }
  int num_regs() const { return 1 << reg.size(); }
  int num_warps() const { return 1 << warp.size(); }
  // Element coordinates of register r in the thread with lane = warp = 0 (the thread's own part
  // adds to it; the two never set the same bit).
  std::vector<int64_t> reg_coords(int r) const;
  // The coordinate bits set by lane bit i / warp bit i (the thread's part).
  std::vector<int64_t> lane_coords(int i) const { return bit_coords(lane[i]); }
  std::vector<int64_t> warp_coords(int i) const { return bit_coords(warp[i]); }
  // Masks of the lane and warp bits that replicate: a thread whose lane & lane_replication() or
  // warp & warp_replication() is not zero holds copies (side effects are done by the others).
  int lane_replication() const;
  int warp_replication() const;
  // Registers whose elements run consecutively along `dim` from each multiple of the result: the
  // largest power of two v such that register bits 0..log2(v)-1 map to bits 0.. of `dim`.
  int contiguous_regs(int dim) const;
  // Same placement of every element (shape and bits; names and parameters aside).
  bool same_placement(const Layout& o) const;
  bool operator==(const Layout& o) const { return same_placement(o); }
  std::string str() const;        // the name
  std::string bits_str() const;   // "reg=[1.0 0.3] lane=[...] warp=[...]" (dim.bit, '-' for none)

 private:
  std::vector<int64_t> bit_coords(LayoutBit b) const;
};

// ---- distributed layouts ----------------------------------------------------------------------

// Triton's blocked layout: size_per_thread elements of each dim in a thread's registers, then
// threads_per_warp lanes and warps_per_cta warps, dims taken in `order` (fastest first); the
// shape's remaining bits repeat in more registers, lanes and warps past the shape replicate.
Layout blocked_layout(const ir::Shape& shape, const std::vector<int64_t>& size_per_thread,
                      const std::vector<int64_t>& threads_per_warp, const std::vector<int64_t>& warps_per_cta,
                      const std::vector<int>& order);
// Triton's default blocked layout for `num_warps` warps with `vec` elements per thread along
// order[0] (clamped to the shape): lanes fill order[0] first, then the next dims; warps likewise.
Layout default_blocked_layout(const ir::Shape& shape, int num_warps, const std::vector<int>& order, int64_t vec = 1);
// The default order: the last dim fastest.
std::vector<int> default_order(int rank);

// The accumulator of a tensor-core dot with an [M, N] result (see MmaParams); units past the tiling
// (wm * wn below the warps, or warpgroups) replicate.
Layout mma_layout(const ir::Shape& shape, const MmaParams& p, int num_warps);
// An operand fragment in registers for the dot whose accumulator is `parent`: A ([M, K], op_idx 0)
// or B ([K, N], op_idx 1), with k_width K elements per 32-bit register. A of a 16-bit dot has the
// same bits as an accumulator of the same shape: the register order is (k0, m3, k3, k-steps, m-tiles).
Layout dot_operand_layout(const Layout& parent, int op_idx, int64_t k, int k_width, int num_warps);

// ---- transforms (the data stays where it is) -------------------------------------------------

// The reduction's result of `l` along `dim`: the dim removed, its register bits dropped and its
// lane and warp bits replicating.
Layout slice_layout(const Layout& l, int dim);
// expand_dims: a size-1 dim inserted at `axis`; and back.
Layout expand_dims_layout(const Layout& l, int axis);
Layout squeeze_layout(const Layout& l, int axis);  // `axis` must have size 1
// The operand of a broadcast to `result` whose shape is `src` (the stretched dims' bits replicate,
// their register bits go).
Layout broadcast_source_layout(const Layout& result, const ir::Shape& src);
// The result of Permute(perm) (result dim i is operand dim perm[i]) and the operand of one.
Layout permute_layout(const Layout& l, const std::vector<int64_t>& perm);
Layout permute_source_layout(const Layout& result, const std::vector<int64_t>& perm);
// Reshape keeps the row-major order: the flat index's bits are relabelled.
Layout reshape_layout(const Layout& l, const ir::Shape& to);

// For each register of `to`, the register of `from` that holds the element `to`'s register holds
// after `to_from` maps `to`'s coordinates to `from`'s, in the same thread - or nothing when the two
// place their thread parts differently (a conversion moves data then). to_from = identity when empty.
using CoordMap = std::function<std::vector<int64_t>(const std::vector<int64_t>&)>;
std::optional<std::vector<int>> register_map(const Layout& from, const Layout& to, const CoordMap& to_from = {});

// tl::join / tl::split (Triton's JoinOp, SplitOp): the joined dim, a new minor dim of size 2, is
// the fastest register bit, so a join interleaves two register arrays and a split takes every
// other register, with no data moved between threads. `scalar_layout` is the rank-0 layout (every
// thread holds the value) whose join is a [2] block held whole by every thread.
Layout scalar_layout(int num_warps);
Layout join_layout(const Layout& l);
// The operand layout of a split whose halves are in `half` (join_layout(half)); and the halves'
// layout of a split of `l` when l holds the minor size-2 dim in a register bit (else nothing: the
// operand must be converted first).
std::optional<Layout> split_layout(const Layout& l);

// ---- shared memory --------------------------------------------------------------------------

// A 2-D tile in shared memory with order[0] contiguous and 16-byte chunks XOR-swizzled within rows
// of `swizzle` bytes (128, 64 or 32; 0 for none, plain rows): rows longer than that are split into
// column blocks of `swizzle` bytes, each holding every row, stored one after the other (wgmma's and
// TMA's layouts; a row is never narrower than the swizzle).
Layout shared_layout(const ir::Shape& shape, const std::vector<int>& order, int swizzle);
// The swizzle wgmma and ldmatrix want for a tile whose contiguous dim holds `bytes` bytes a row.
int swizzle_for_row_bytes(int64_t bytes);

}  // namespace tritium::jit
