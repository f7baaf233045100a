// Dead code elimination.
#pragma once
#include "ir/ir.h"

namespace tritium::jit {

// Removes ops whose results are all unused and that have no side effects, nested regions
// included (a `for`/`if`/`reduce` whose regions hold no store, atomic, print or assert goes with
// its results). Yields are kept. Runs to a fixed point; returns whether anything changed.
bool eliminate_dead_code(ir::Function& f);

}  // namespace tritium::jit
