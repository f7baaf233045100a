// Text form of the IR: MLIR-like, one op per line, ids in program order. The text is stable
// (it is hashed into the kernel cache key), so every attribute that changes meaning is printed.
#pragma once
#include <string>

#include "ir/ir.h"

namespace tritium::ir {

// Renumbers `f` (ids in program order) and returns its text.
std::string print(Function& f);

// "%12"; "%?" for a value that was never numbered, "<null>" for nullptr.
std::string print_value(const Value* v);

}  // namespace tritium::ir
