// Reassociation of addptr chains: loop-invariant and low-rank terms first.
#pragma once
#include "ir/ir.h"

namespace tritium::jit {

// A chain of block pointer additions p + o1 + o2 + ... (addptr ops, through single-use broadcasts and
// splats of the intermediate pointers) is rebuilt in the order that costs the fewest element
// additions a loop trip: each term is added at the smallest shape that holds the terms so far
// (a row term of a [M, 1] pointer before the [1, K] column term broadcasts it to [M, K]; a
// scalar term to the scalar pointer before it is splat), and each partial sum is placed in the
// outermost block its operands allow (terms defined before a loop are added before it, once).
// Only the order of the 64-bit pointer additions changes, never an integer offset, so the
// addresses are exactly the original ones (no i32 sum that could wrap). This is what Triton gets
// from folding addptr chains into one offset and LICM, and what lets the code generators add each
// element's address once, from a hoisted row base (FlagGems' conv: three 64-bit adds an element
// to one). A chain is rewritten only when the new order is strictly cheaper; returns whether any was.
bool reassociate_pointer_chains(ir::Function& f);

}  // namespace tritium::jit
