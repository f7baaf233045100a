// `tl::range(..., {.flatten = true})`: a loop whose body runs one inner `tl::range` becomes one
// loop over every inner trip of every outer trip (Triton's FuseNestedLoops, the `flatten` hint of
// tutorial 09's persistent matmul). The point is software pipelining across the outer loop: a
// pipeliner that sees one loop issues the next outer trip's first loads during this one's last
// inner trips and its epilogue, where the nest drained and refilled its ring every outer trip.
//
//   for i in range(lbi, ubi, si):            if LI > 0 and LJ > 0 (and LI * LJ fits the counter):
//     prologue(i)                              for t in range(LI * LJ):
//     for j in range(lbj, ubj, sj):               i = lbi + (t / LJ) * si; prologue(i)
//       body(i, j)                 ->             j = lbj + (t % LJ) * sj
//     epilogue(i)                                 inner carried = t % LJ == 0 ? their inits : carried
//                                                 body(i, j)
//                                                 if t % LJ == LJ - 1: epilogue(i)
//                                             else: the nest as written
//
// The prologue is recomputed every trip, so it must be pure (arithmetic, views, hints: no loads,
// stores, loops or branches), and the inner loop's bounds must not depend on the outer trip. A
// nest that does not qualify is left as it is (the hint is a hint, as in Triton). The outer
// loop's carried values go through the fused loop and the epilogue's branch; the inner loop's are
// reset at each outer trip's first inner trip - a select the CUDA backend turns into wgmma's
// scale-d operand for a dot's accumulator (jit/passes/accumulator_init.h).
#pragma once
#include "ir/ir.h"

namespace tritium::jit {

// Fuses every flattenable nest whose outer loop carries the hint. Returns whether anything changed.
bool fuse_nested_loops(ir::Function& f);

}  // namespace tritium::jit
