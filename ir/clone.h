// Copies of ops (with their nested regions) at a builder's insertion point, their operands read
// through a value map: a pass that rewrites a region (loop fusion) re-creates its ops with some
// values replaced, the rest read as they are.
#pragma once
#include <unordered_map>
#include <vector>

#include "ir/builder.h"

namespace tritium::ir {

using ValueMap = std::unordered_map<const Value*, Value*>;

// `v` as `map` says, or `v` itself where the map does not name it.
Value* mapped(const ValueMap& map, Value* v);

// Copies `op` at `b`'s insertion point; the copy reads mapped operands, its results (and its
// regions' arguments and values) are added to `map`. Returns the copy.
Op* clone_op(Builder& b, const Op* op, ValueMap& map);

}  // namespace tritium::ir
