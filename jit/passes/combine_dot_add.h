// `acc + dot(a, b)` is `dot(a, b, acc)`: the most common Triton idiom (`acc += tl.dot(a, b)`) and
// the explicit accumulator form compile to the same code (Triton's CombineDotAddPattern). An add of
// a dot whose accumulator is a zero constant and whose result has no other use takes the dot's
// place, with the add's other operand as the accumulator.
#pragma once
#include "ir/ir.h"

namespace tritium::jit {

// Returns whether anything changed.
bool combine_dot_add(ir::Function& f);

}  // namespace tritium::jit
