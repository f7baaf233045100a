// Structural and type checks of a Function. Passes and the backends may assume verified IR.
#pragma once
#include "ir/ir.h"

namespace tritium::ir {

// Throws tritium::Error (at the offending op's loc, naming the op and the types involved)
// when `f` is malformed. Regions of `for`/`if` that yield nothing may omit their `yield`.
void verify(Function& f);

}  // namespace tritium::ir
