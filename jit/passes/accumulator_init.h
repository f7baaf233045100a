// `dot(a, b, where(c, 0, acc))` reads no accumulator where `c` holds: the dot takes `acc` with a
// use_acc operand (`!c`) instead, as Triton's OptimizeAccumulatorInit gives warp_group_dot its
// useD flag. wgmma then zeroes its accumulator by its scale-d predicate, and the accumulator stays
// the loop-carried value updated in place, so its wgmma group may stay in flight into the next
// trip - where the select would have read (and waited for) all of its registers every trip. The
// selects come from reset accumulators: a fused loop nest's (jit/passes/fuse_nested_loops.h), or a
// user's `acc = tl::where(k == 0, 0, acc)`. The CUDA backend's pipeline only (ir.h: Dot).
#pragma once
#include "ir/ir.h"

namespace tritium::jit {

// Returns whether anything changed.
bool use_accumulator_flags(ir::Function& f);

}  // namespace tritium::jit
