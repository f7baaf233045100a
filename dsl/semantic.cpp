#include "dsl/semantic.h"

#include <cmath>

namespace tritium::dsl {

using ir::OpKind;
using ir::Shape;
using ir::Type;

int dtype_kind(DType d) {
  if (d == DType::i1) return 0;
  if (is_int(d)) return 1;
  if (is_float(d)) return 2;
  return 3;  // pointers
}

std::string describe(const Value* v) { return v->type.str(); }

void check_block_shape(const char* op, const SourceLoc& loc, const Shape& shape) {
  int64_t numel = 1;
  for (auto d : shape) {
    if (d <= 0 || (d & (d - 1)) != 0)
      fail(loc, "tl::{}: block shape {} has a dimension that is not a power of two", op, ir::shape_str(shape));
    numel *= d;
  }
  constexpr int64_t kMaxNumel = 1 << 20;  // Triton's TRITON_MAX_TENSOR_NUMEL
  if (numel > kMaxNumel)
    fail(loc, "tl::{}: block shape {} has {} elements, more than the limit of {}", op, ir::shape_str(shape), numel,
         kMaxNumel);
}

static DType integer_promote(DType a, DType b) {
  int ra = dtype_bits(a), rb = dtype_bits(b);
  bool ua = is_unsigned_int(a), ub = is_unsigned_int(b);
  if (ua == ub) return ra > rb ? a : b;
  if (ua) return ra >= rb ? a : b;
  return rb >= ra ? b : a;
}

DType computation_type(const char* op, const SourceLoc& loc, DType a, bool a_literal, DType b, bool b_literal,
                       bool div_or_mod) {
  if (a_literal != b_literal) {
    DType lit = a_literal ? a : b, ten = a_literal ? b : a;
    if (dtype_kind(lit) <= dtype_kind(ten)) {
      if (div_or_mod && is_narrow_float(ten)) return DType::f32;
      return ten;
    }
  }
  if (a == DType::f64 || b == DType::f64) return DType::f64;
  if (a == DType::f32 || b == DType::f32) return DType::f32;
  if (a == DType::f16 || b == DType::f16) return div_or_mod ? DType::f32 : DType::f16;
  if (a == DType::bf16 || b == DType::bf16) {
    if (div_or_mod) return DType::f32;
    return (a == DType::bf16 && b == DType::bf16) ? DType::bf16 : DType::f32;
  }
  if (is_fp8(a) || is_fp8(b)) return a == b && !div_or_mod ? a : DType::f32;  // (one fp8 kind with itself)
  if (!is_int(a) || !is_int(b))
    fail(loc, "tl::{}: unsupported operand types {} and {}", op, dtype_name(a), dtype_name(b));
  if (div_or_mod && is_unsigned_int(a) != is_unsigned_int(b) && a != DType::i1 && b != DType::i1)
    fail(loc, "tl::{}: cannot use / or % with {} and {} because they have different signedness; cast one of them",
         op, dtype_name(a), dtype_name(b));
  return integer_promote(a, b);
}

Value* literal_value(const char* op, const tl::operand& o, DType dtype) {
  ir::Builder& b = builder(op, o.loc);
  Type t = Type::scalar(dtype);
  if (o.kind == tl::operand::Kind::float_literal) {
    if (!is_float(dtype))
      fail(o.loc, "tl::{}: the floating-point constant {} cannot be used as {}", op, o.fval, dtype_name(dtype));
    return b.constant_float(o.fval, t);
  }
  if (is_float(dtype)) return b.constant_float(o.literal_dtype == DType::u64 ? static_cast<double>(static_cast<uint64_t>(o.ival)) : static_cast<double>(o.ival), t);
  // Integer constants must be representable (negative values may wrap into unsigned types, as in C).
  int bits = dtype_bits(dtype);
  if (bits < 64 && dtype != DType::i1) {
    int64_t lo = -(int64_t(1) << (bits - 1));
    int64_t hi = is_unsigned_int(dtype) ? (int64_t(1) << bits) - 1 : (int64_t(1) << (bits - 1)) - 1;
    if (o.ival < lo || o.ival > hi)
      fail(o.loc, "tl::{}: the constant {} does not fit in {}", op, o.ival, dtype_name(dtype));
  }
  if (dtype == DType::i1) return b.constant_int(o.ival != 0, t);
  return b.constant_int(o.ival, t);
}

Value* operand_value(const char* op, const tl::operand& o) {
  if (!o.is_literal()) return o.value;
  return literal_value(op, o, o.literal_dtype);
}

Value* cast(const char* op, const SourceLoc& loc, Value* v, DType to) {
  const Type& t = v->type;
  if (t.dtype == to) return v;
  if (t.is_ptr() && !is_int(to))
    fail(loc, "tl::{}: cannot cast pointer {} to {}", op, describe(v), dtype_name(to));
  if (to == DType::ptr) fail(loc, "tl::{}: cannot cast {} to a pointer", op, describe(v));
  if (to == DType::i1 && !t.is_ptr()) return to_bool(op, loc, v);
  ir::Builder& b = builder(op, loc);
  return b.create1(OpKind::Cast, {v}, t.with_dtype(to));
}

Value* bitcast(const char* op, const SourceLoc& loc, Value* v, DType to) {
  const Type& t = v->type;
  if (t.is_ptr() || to == DType::ptr) fail(loc, "tl::{}: bitcast between pointers and numbers is not supported ({} to {})", op, describe(v), dtype_name(to));
  if (dtype_bits(t.dtype) != dtype_bits(to))
    fail(loc, "tl::{}: cannot bitcast {} ({} bits) to {} ({} bits); bitcast needs equal widths", op, describe(v),
         dtype_bits(t.dtype), dtype_name(to), dtype_bits(to));
  if (t.dtype == to) return v;
  return builder(op, loc).create1(OpKind::Bitcast, {v}, t.with_dtype(to));
}

Value* to_bool(const char* op, const SourceLoc& loc, Value* v) {
  if (v->type.dtype == DType::i1) return v;
  if (v->type.is_ptr()) fail(loc, "tl::{}: expected a boolean, got pointer {}", op, describe(v));
  ir::Builder& b = builder(op, loc);
  Value* zero = is_float(v->type.dtype) ? b.constant_float(0.0, v->type) : b.constant_int(0, v->type);
  return b.create1(OpKind::CmpNe, {v, zero}, v->type.with_dtype(DType::i1));
}

Shape broadcast_shapes(const char* op, const SourceLoc& loc, const Shape& a, const Shape& b) {
  int bad = 0;
  if (auto s = ir::broadcast_shape(a, b, &bad)) return *s;
  size_t r = std::max(a.size(), b.size());
  auto dim = [&](const Shape& s) { return size_t(bad) < r - s.size() ? int64_t(1) : s[bad - (r - s.size())]; };
  fail(loc, "tl::{}: shapes {} and {} are not compatible for broadcasting (dimension {}: {} vs {})", op,
       ir::shape_str(a), ir::shape_str(b), bad, dim(a), dim(b));
}

Value* broadcast_to(const char* op, const SourceLoc& loc, Value* v, const Shape& shape) {
  const Type& t = v->type;
  if (t.shape == shape) return v;
  ir::Builder& b = builder(op, loc);
  if (t.is_scalar()) return b.create1(OpKind::Splat, {v}, t.with_shape(shape));
  if (t.rank() > static_cast<int>(shape.size()))
    fail(loc, "tl::{}: cannot broadcast {} to the smaller rank shape {}", op, describe(v), ir::shape_str(shape));
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t off = shape.size() - t.shape.size();
    if (i >= off && t.shape[i - off] != shape[i] && t.shape[i - off] != 1)
      fail(loc, "tl::{}: cannot broadcast {} to shape {} (dimension {}: {} vs {})", op, describe(v),
           ir::shape_str(shape), i, t.shape[i - off], shape[i]);
  }
  while (v->type.rank() < static_cast<int>(shape.size())) {
    ir::Attrs a;
    a.axis = 0;
    Shape s = v->type.shape;
    s.insert(s.begin(), 1);
    v = b.create1(OpKind::ExpandDims, {v}, v->type.with_shape(s), a);
  }
  if (v->type.shape == shape) return v;
  return b.create1(OpKind::Broadcast, {v}, v->type.with_shape(shape));
}

std::pair<Value*, Value*> broadcast_pair(const char* op, const SourceLoc& loc, Value* a, Value* b) {
  if (a->type.shape == b->type.shape) return {a, b};
  Shape s = broadcast_shapes(op, loc, a->type.shape, b->type.shape);
  return {broadcast_to(op, loc, a, s), broadcast_to(op, loc, b, s)};
}

Promoted promote(const char* op, const tl::operand& a, const tl::operand& b, bool div_or_mod, const SourceLoc& loc) {
  DType da = a.is_literal() ? a.literal_dtype : a.value->type.dtype;
  DType db = b.is_literal() ? b.literal_dtype : b.value->type.dtype;
  if (da == DType::ptr || db == DType::ptr)
    fail(loc, "tl::{}: unsupported operand types {} and {}", op,
         a.is_literal() ? dtype_name(da) : describe(a.value), b.is_literal() ? dtype_name(db) : describe(b.value));
  DType ct = computation_type(op, loc, da, a.is_literal(), db, b.is_literal(), div_or_mod);
  Value* va = a.is_literal() ? literal_value(op, a, ct) : cast(op, loc, a.value, ct);
  Value* vb = b.is_literal() ? literal_value(op, b, ct) : cast(op, loc, b.value, ct);
  auto [x, y] = broadcast_pair(op, loc, va, vb);
  return {x, y, ct};
}

Value* elementwise(const char* op, const SourceLoc& loc, OpKind kind, std::vector<Value*> operands,
                   DType result_dtype) {
  Type t = operands.back()->type.with_dtype(result_dtype);
  if (kind == OpKind::Select) t = operands[1]->type;
  return builder(op, loc).create1(kind, std::move(operands), t);
}

bool broadcastable_to(const ir::Shape& from, const ir::Shape& to) {
  if (from.size() > to.size()) return false;
  size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != to[off + i] && from[i] != 1) return false;
  return true;
}

}  // namespace tritium::dsl
