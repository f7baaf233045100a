// Text form of the IR: MLIR-like, one op per line, ids in program order. The text is stable
// (it is hashed into the kernel cache key), so every attribute that changes meaning is printed.
#pragma once
#include <functional>
#include <string>

#include "ir/ir.h"

namespace tritium::ir {

// Renumbers `f` (ids in program order) and returns its text. `annotate`, when given, adds its text
// after the type of each value it returns text for (the GPU layouts in TRITIUM_DUMP).
std::string print(Function& f, const std::function<std::string(const Value*)>& annotate = {});

// "%12"; "%?" for a value that was never numbered, "<null>" for nullptr.
std::string print_value(const Value* v);

}  // namespace tritium::ir
