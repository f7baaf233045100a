// Constant folding and algebraic canonicalisation.
#pragma once
#include "ir/ir.h"

namespace tritium::jit {

// Folds arithmetic, comparisons and casts of constant (scalar or splat) operands with the
// dtype's width and signedness (ints wrap, division truncates, division by zero and shifts out of
// range are left alone; f16/bf16 are not folded), and simplifies x+0, x-0, x*1, x/1, x*0 (ints),
// double neg/not, splat/broadcast/expand_dims/reshape of constants, broadcast of splat, identity
// shape ops, select with a constant condition or equal branches and addptr of 0. It also moves
// the uniform part of a block of offsets into the scalar pointer, addptr(splat(p), splat(s) + b)
// -> addptr(splat(addptr(p, s)), b), as Triton does: per-element offsets stay small, so chunk
// addresses fold into immediate offsets (the result differs only where s + b overflows i32).
// Replaced ops are erased. Returns whether anything changed.
bool fold_constants(ir::Function& f);

}  // namespace tritium::jit
