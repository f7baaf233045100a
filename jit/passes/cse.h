// Common subexpression elimination.
#pragma once
#include "ir/ir.h"

namespace tritium::jit {

// Merges pure ops (no side effects, no regions, not loads) of the same kind, operands (in either
// order for commutative ops), attributes and result types into the first one. Scoped: an op may be
// replaced by an equal op of its own block or of an enclosing block that comes earlier, never by
// one inside a sibling or nested region. The merged ops are erased. Returns whether anything changed.
bool eliminate_common_subexpressions(ir::Function& f);

}  // namespace tritium::jit
