// The semantic layer under tl::: Triton's type promotion, broadcasting and implicit casts, and the
// checks that turn user mistakes into tritium::Error with the op, the types and the user's line.
// docs/language.md writes these rules down.
#pragma once
#include <utility>

#include "dsl/tensor.h"
#include "dsl/trace.h"

namespace tritium::dsl {

using ir::Value;

// Kinds ordered as Triton's: bool < int < float.
int dtype_kind(DType d);

// The dtype two operands compute in (Triton's computation_type_impl). A literal ("weak" Python
// number) does not take part when its kind is at most the other operand's kind.
DType computation_type(const char* op, const SourceLoc& loc, DType a, bool a_literal, DType b, bool b_literal,
                       bool div_or_mod);

// A constant for a literal operand, in the given dtype; errors if the value does not fit.
Value* literal_value(const char* op, const tl::operand& o, DType dtype);
// The operand as a value: a literal takes its own Triton type (i32/i64/f32/i1).
Value* operand_value(const char* op, const tl::operand& o);

Value* cast(const char* op, const SourceLoc& loc, Value* v, DType to);  // value conversion (no-op if equal)
Value* bitcast(const char* op, const SourceLoc& loc, Value* v, DType to);
Value* to_bool(const char* op, const SourceLoc& loc, Value* v);          // x != 0 unless already i1

// Broadcasting: numpy rules (leading dims added, size-1 dims stretched).
ir::Shape broadcast_shapes(const char* op, const SourceLoc& loc, const ir::Shape& a, const ir::Shape& b);
Value* broadcast_to(const char* op, const SourceLoc& loc, Value* v, const ir::Shape& shape);
// Whether `from` broadcasts to exactly `to` (numpy rules, one direction only).
bool broadcastable_to(const ir::Shape& from, const ir::Shape& to);
std::pair<Value*, Value*> broadcast_pair(const char* op, const SourceLoc& loc, Value* a, Value* b);

// Two operands promoted to their computation type and broadcast together.
struct Promoted {
  Value* a;
  Value* b;
  DType dtype;
};
Promoted promote(const char* op, const tl::operand& a, const tl::operand& b, bool div_or_mod,
                 const SourceLoc& loc);

Value* elementwise(const char* op, const SourceLoc& loc, ir::OpKind kind, std::vector<Value*> operands,
                   DType result_dtype);

void check_block_shape(const char* op, const SourceLoc& loc, const ir::Shape& shape);
std::string describe(const Value* v);  // "[128]f32" / "i32"

}  // namespace tritium::dsl
