// Constant folding and algebraic canonicalisation.
#pragma once
#include "ir/ir.h"

namespace tritium::jit {

// Folds arithmetic, comparisons and casts of constant (scalar or splat) operands with the
// dtype's width and signedness (ints wrap, division truncates, division by zero and shifts out of
// range are left alone; f16/bf16 are not folded), and simplifies x+0, x-0, x*1, x/1, x*0 (ints),
// double neg/not, splat/broadcast/expand_dims/reshape of constants, broadcast of splat, identity
// shape ops, select with a constant condition or equal branches and addptr of 0.
// Replaced ops are erased. Returns whether anything changed.
bool fold_constants(ir::Function& f);

}  // namespace tritium::jit
