// tl:: elementwise, shape, memory, atomic, dot and debugging operations.
#include "dsl/ops.h"

#include <algorithm>
#include <numeric>

#include "common/env.h"
#include "dsl/semantic.h"
#include "ir/cache_hints.h"

namespace tritium::tl {

using dsl::builder;
using ir::OpKind;
using ir::Shape;
using ir::Type;
using ir::Value;

namespace {

SourceLoc L(const loc_t& l) { return SourceLoc::from(l); }

Value* require_tensor(const char* op, const operand& o) { return dsl::operand_value(op, o); }

Value* require_float(const char* op, const operand& o) {
  Value* v = require_tensor(op, o);
  if (!is_float(v->type.dtype))
    fail(o.loc, "tl::{} expects a floating-point value, got {}; cast it first with .to(tl::float32)", op,
         dsl::describe(v));
  return v;
}

tensor unary_math(const char* op, OpKind kind, const operand& x) {
  Value* v = require_float(op, x);
  return tensor(builder(op, x.loc).create1(kind, {v}, v->type));
}

// +, -, *: pointer arithmetic when one side is a pointer, else promoted arithmetic.
// Compound assignments (a += b) only know b's location.
SourceLoc where(const operand& a, const operand& b) { return a.loc.known() ? a.loc : b.loc; }

tensor arith(const char* op, OpKind kind, const operand& a, const operand& b) {
  SourceLoc loc = where(a, b);
  bool a_ptr = !a.is_literal() && a.value->type.is_ptr();
  bool b_ptr = !b.is_literal() && b.value->type.is_ptr();
  if (a_ptr || b_ptr) {
    if (kind == OpKind::Mul || (a_ptr && b_ptr) || (kind == OpKind::Sub && b_ptr))
      fail(loc, "tl::{}: unsupported pointer arithmetic between {} and {}", op,
           a.is_literal() ? dtype_name(a.literal_dtype) : dsl::describe(a.value),
           b.is_literal() ? dtype_name(b.literal_dtype) : dsl::describe(b.value));
    const operand& p = a_ptr ? a : b;
    const operand& o = a_ptr ? b : a;
    Value* off = dsl::operand_value(op, o);
    if (!is_int(off->type.dtype) || off->type.dtype == DType::i1)
      fail(loc, "tl::{}: a pointer offset must be an integer, got {}", op, dsl::describe(off));
    if (kind == OpKind::Sub) {
      ir::Builder& bb = builder(op, loc);
      off = bb.create1(OpKind::Neg, {off}, off->type);
    }
    auto [pv, ov] = dsl::broadcast_pair(op, loc, p.value, off);
    return tensor(builder(op, loc).create1(OpKind::AddPtr, {pv, ov}, pv->type));
  }
  auto pr = dsl::promote(op, a, b, false, loc);
  return tensor(dsl::elementwise(op, loc, kind, {pr.a, pr.b}, pr.dtype));
}

tensor div_mod(const char* op, OpKind kind, const operand& a, const operand& b) {
  auto pr = dsl::promote(op, a, b, true, where(a, b));
  return tensor(dsl::elementwise(op, where(a, b), kind, {pr.a, pr.b}, pr.dtype));
}

tensor bitwise(const char* op, OpKind kind, const operand& a, const operand& b) {
  DType da = a.is_literal() ? a.literal_dtype : a.value->type.dtype;
  DType db = b.is_literal() ? b.literal_dtype : b.value->type.dtype;
  if (!is_int(da) || !is_int(db))
    fail(where(a, b), "tl::{}: bitwise operations need integer operands, got {} and {}", op, dtype_name(da),
         dtype_name(db));
  auto pr = dsl::promote(op, a, b, false, where(a, b));
  return tensor(dsl::elementwise(op, where(a, b), kind, {pr.a, pr.b}, pr.dtype));
}

tensor compare(const char* op, OpKind kind, const operand& a, const operand& b) {
  auto pr = dsl::promote(op, a, b, false, a.loc);
  return tensor(dsl::elementwise(op, a.loc, kind, {pr.a, pr.b}, DType::i1));
}

tensor logical(const char* op, OpKind kind, const operand& a, const operand& b) {
  Value* x = dsl::to_bool(op, a.loc, dsl::operand_value(op, a));
  Value* y = dsl::to_bool(op, a.loc, dsl::operand_value(op, b));
  auto [p, q] = dsl::broadcast_pair(op, a.loc, x, y);
  return tensor(dsl::elementwise(op, a.loc, kind, {p, q}, DType::i1));
}

Value* require_pointer(const char* op, const tensor& p, const SourceLoc& loc) {
  Value* v = p.value();
  if (!v->type.is_ptr())
    fail(loc, "tl::{}: expected a pointer or a block of pointers, got {}", op, dsl::describe(v));
  return v;
}

// Mask: boolean, broadcastable to the pointer's shape (never the other way round, as in Triton).
Value* prepare_mask(const char* op, const std::optional<operand>& mask, Value* ptr, const SourceLoc& loc) {
  if (!mask) return nullptr;
  Value* m = dsl::operand_value(op, *mask);
  if (m->type.dtype != DType::i1)
    fail(loc, "tl::{}: the mask must be boolean (i1), got {}", op, dsl::describe(m));
  if (ptr->type.is_scalar() && m->type.is_block())
    fail(loc, "tl::{}: mask {} is a block but the pointer {} is a scalar", op, dsl::describe(m),
         dsl::describe(ptr));
  if (m->type.shape != ptr->type.shape) {
    if (!dsl::broadcastable_to(m->type.shape, ptr->type.shape))
      fail(loc, "tl::{}: mask shape {} does not match pointer shape {} (the mask must broadcast to the pointer's shape)",
           op, ir::shape_str(m->type.shape), ir::shape_str(ptr->type.shape));
    m = dsl::broadcast_to(op, loc, m, ptr->type.shape);
  }
  return m;
}

// A value stored or combined through a pointer: cast to the pointee, broadcast to the pointer.
// As in Triton, a float literal through an integer pointer is an f32 constant cast to the pointee
// (tl.load(int8_ptrs, mask, other=0.0) is valid Triton). Literals report the op's line: one
// passed as load's std::optional `other` was made inside <optional>.
Value* prepare_value(const char* op, const operand& val, Value* ptr, const SourceLoc& loc) {
  DType elem = ptr->type.pointee;
  operand lit = val;
  lit.loc = loc;
  Value* v = !val.is_literal() ? val.value
             : val.kind == operand::Kind::float_literal && !is_float(elem) ? dsl::literal_value(op, lit, val.literal_dtype)
                                                                             : dsl::literal_value(op, lit, elem);
  if (v->type.is_ptr()) fail(loc, "tl::{}: cannot store a pointer {} through {}", op, dsl::describe(v), dsl::describe(ptr));
  if (ptr->type.is_scalar() && v->type.is_block())
    fail(loc, "tl::{}: value {} is a block but the pointer {} is a scalar", op, dsl::describe(v),
         dsl::describe(ptr));
  v = dsl::cast(op, loc, v, elem);
  if (v->type.shape != ptr->type.shape) {
    if (!dsl::broadcastable_to(v->type.shape, ptr->type.shape))
      fail(loc, "tl::{}: value shape {} does not match pointer shape {} (the value must broadcast to the pointer's shape)",
           op, ir::shape_str(v->type.shape), ir::shape_str(ptr->type.shape));
    v = dsl::broadcast_to(op, loc, v, ptr->type.shape);
  }
  return v;
}

// An atomic's memory order as its attribute (ir/ir.h: str, empty for acq_rel).
std::string atomic_sem(const char* op, const std::string& sem, const SourceLoc& loc) {
  if (sem == "acq_rel") return "";
  if (sem == "relaxed" || sem == "acquire" || sem == "release") return sem;
  fail(loc, "tl::{}: sem must be \"acq_rel\", \"acquire\", \"release\" or \"relaxed\", got \"{}\"", op, sem);
}

tensor atomic(const char* op, OpKind kind, const tensor& pointer, const operand& val,
              const std::optional<operand>& mask, const std::string& sem, const SourceLoc& loc) {
  Value* p = require_pointer(op, pointer, loc);
  DType elem = p->type.pointee;
  bool int_only = kind == OpKind::AtomicAnd || kind == OpKind::AtomicOr || kind == OpKind::AtomicXor;
  if (int_only && (!is_int(elem) || elem == DType::i1))
    fail(loc, "tl::{}: needs an integer pointee, got {}", op, dsl::describe(p));
  if (dtype_bits(elem) < 16 || elem == DType::i1)
    fail(loc, "tl::{}: atomics on {} are not supported; use 16, 32 or 64-bit types", op, dtype_name(elem));
  Value* v = prepare_value(op, val, p, loc);
  Value* m = prepare_mask(op, mask, p, loc);
  std::vector<Value*> operands{p, v};
  if (m) operands.push_back(m);
  ir::Attrs attrs;
  attrs.str = atomic_sem(op, sem, loc);
  return tensor(builder(op, loc).create1(kind, operands, p->type.with_dtype(elem), attrs));
}

}  // namespace

// ---- program and index ----------------------------------------------------------------------

tensor program_id(int axis, loc_t loc) {
  if (axis < 0 || axis > 2) fail(L(loc), "tl::program_id: axis must be 0, 1 or 2, got {}", axis);
  ir::Attrs a;
  a.axis = axis;
  return tensor(builder("program_id", L(loc)).create1(OpKind::ProgramId, {}, Type::scalar(DType::i32), a));
}

tensor num_programs(int axis, loc_t loc) {
  if (axis < 0 || axis > 2) fail(L(loc), "tl::num_programs: axis must be 0, 1 or 2, got {}", axis);
  ir::Attrs a;
  a.axis = axis;
  return tensor(builder("num_programs", L(loc)).create1(OpKind::NumPrograms, {}, Type::scalar(DType::i32), a));
}

tensor arange(int64_t start, int64_t end, loc_t loc) {
  int64_t n = end - start;
  if (n <= 0) fail(L(loc), "tl::arange({}, {}): end must be greater than start", start, end);
  if ((n & (n - 1)) != 0)
    fail(L(loc), "tl::arange({}, {}): the range length {} must be a power of two", start, end, n);
  if (start < INT32_MIN || end > INT32_MAX) fail(L(loc), "tl::arange({}, {}): bounds must fit in int32", start, end);
  dsl::check_block_shape("arange", L(loc), {n});
  ir::Attrs a;
  a.ints = {start, end};
  return tensor(builder("arange", L(loc)).create1(OpKind::Arange, {}, Type::block(DType::i32, {n}), a));
}

tensor full(const Shape& shape, operand value, DType dtype, loc_t loc) {
  if (dtype == DType::ptr || dtype == DType::invalid) fail(L(loc), "tl::full: invalid dtype {}", dtype_name(dtype));
  if (!shape.empty()) dsl::check_block_shape("full", L(loc), shape);
  Value* v = value.is_literal() ? dsl::literal_value("full", value, dtype) : value.value;
  if (v->type.is_block()) fail(L(loc), "tl::full: the fill value must be a scalar, got {}", dsl::describe(v));
  v = dsl::cast("full", L(loc), v, dtype);
  return tensor(dsl::broadcast_to("full", L(loc), v, shape));
}

tensor zeros(const Shape& shape, DType dtype, loc_t loc) { return full(shape, operand(0, loc), dtype, loc); }

tensor zeros_like(const tensor& x, loc_t loc) { return zeros(x.shape(), x.dtype(), loc); }

tensor cdiv(operand a, operand b, loc_t loc) {
  auto pr = dsl::promote("cdiv", a, b, true, L(loc));
  if (!is_int(pr.dtype)) fail(L(loc), "tl::cdiv expects integers, got {}", dtype_name(pr.dtype));
  ir::Builder& bb = builder("cdiv", L(loc));
  Value* one = bb.constant_int(1, pr.b->type);
  Value* t = bb.create1(OpKind::Add, {pr.a, pr.b}, pr.a->type);
  t = bb.create1(OpKind::Sub, {t, one}, t->type);
  return tensor(bb.create1(OpKind::Div, {t, pr.b}, t->type));
}

// ---- casts ----------------------------------------------------------------------------------

tensor cast(operand x, DType dtype, bool bitcast, loc_t loc) {
  Value* v = dsl::operand_value("cast", x);
  if (dtype == DType::invalid) fail(L(loc), "tl::cast: invalid target dtype");
  return tensor(bitcast ? dsl::bitcast("cast", L(loc), v, dtype) : dsl::cast("cast", L(loc), v, dtype));
}

tensor tensor::to(DType dtype, bool bitcast, std::source_location loc) const {
  return tl::cast(operand(*this, loc), dtype, bitcast, loc);
}

tensor cast(operand x, pointer_type type, loc_t loc) {
  SourceLoc l = L(loc);
  Value* v = dsl::operand_value("cast", x);
  const DType elem = type.element_ty;
  if (elem == DType::invalid || elem == DType::ptr)
    fail(l, "tl::cast: tl::pointer_type needs a number element type, got {}", dtype_name(elem));
  const Type& t = v->type;
  if (t.is_ptr() && t.pointee == elem) return tensor(v);
  // An address is 64 bits: a narrower integer would have to be extended, and whether with or
  // without its sign is a guess, so it is refused rather than guessed (Triton leaves it to LLVM).
  if (!t.is_ptr() && t.dtype != DType::i64 && t.dtype != DType::u64)
    fail(l, "tl::cast: cannot cast {} to ptr<{}>; a pointer is made from a 64-bit integer address (tl::int64 or "
         "tl::uint64) or from another pointer",
         dsl::describe(v), dtype_name(elem));
  Type out = Type::pointer(elem);
  out.shape = t.shape;
  return tensor(builder("cast", l).create1(OpKind::Cast, {v}, out));
}

tensor tensor::to(pointer_type type, std::source_location loc) const {
  return tl::cast(operand(*this, loc), type, loc);
}

// ---- arithmetic -----------------------------------------------------------------------------

tensor where(operand cond, operand a, operand b, loc_t loc) {
  Value* c = dsl::to_bool("where", L(loc), dsl::operand_value("where", cond));
  auto pr = dsl::promote("where", a, b, false, L(loc));
  Shape s = dsl::broadcast_shapes("where", L(loc), c->type.shape, pr.a->type.shape);
  Value* cc = dsl::broadcast_to("where", L(loc), c, s);
  Value* x = dsl::broadcast_to("where", L(loc), pr.a, s);
  Value* y = dsl::broadcast_to("where", L(loc), pr.b, s);
  return tensor(builder("where", L(loc)).create1(OpKind::Select, {cc, x, y}, x->type));
}

tensor minimum(operand a, operand b, loc_t loc) {
  auto pr = dsl::promote("minimum", a, b, false, L(loc));
  return tensor(dsl::elementwise("minimum", L(loc), OpKind::Min, {pr.a, pr.b}, pr.dtype));
}

tensor maximum(operand a, operand b, loc_t loc) {
  auto pr = dsl::promote("maximum", a, b, false, L(loc));
  return tensor(dsl::elementwise("maximum", L(loc), OpKind::Max, {pr.a, pr.b}, pr.dtype));
}

tensor clamp(operand x, operand lo, operand hi, loc_t loc) {
  return minimum(operand(maximum(x, lo, loc), loc), hi, loc);
}

tensor fma(operand a, operand b, operand c, loc_t loc) {
  auto ab = dsl::promote("fma", a, b, false, L(loc));
  auto abc = dsl::promote("fma", operand(tensor(ab.a), loc), c, false, L(loc));
  if (!is_float(abc.dtype)) fail(L(loc), "tl::fma expects floating-point operands, got {}", dtype_name(abc.dtype));
  Value* x = dsl::cast("fma", L(loc), ab.a, abc.dtype);
  Value* y = dsl::cast("fma", L(loc), ab.b, abc.dtype);
  Shape s = dsl::broadcast_shapes("fma", L(loc), x->type.shape, abc.b->type.shape);
  x = dsl::broadcast_to("fma", L(loc), x, s);
  y = dsl::broadcast_to("fma", L(loc), y, s);
  Value* z = dsl::broadcast_to("fma", L(loc), abc.b, s);
  return tensor(builder("fma", L(loc)).create1(OpKind::Fma, {x, y, z}, x->type));
}

tensor umulhi(operand a, operand b, loc_t loc) {
  auto pr = dsl::promote("umulhi", a, b, false, L(loc));
  if (!is_int(pr.dtype) || pr.dtype == DType::i1 || dtype_bits(pr.dtype) < 32)
    fail(L(loc), "tl::umulhi expects 32 or 64-bit integers, got {}", dtype_name(pr.dtype));
  return tensor(dsl::elementwise("umulhi", L(loc), OpKind::Umulhi, {pr.a, pr.b}, pr.dtype));
}

tensor fdiv(operand a, operand b, loc_t loc) {
  auto pr = dsl::promote("fdiv", a, b, true, L(loc));
  Value* x = pr.a;
  Value* y = pr.b;
  if (!is_float(pr.dtype)) {
    x = dsl::cast("fdiv", L(loc), x, DType::f32);
    y = dsl::cast("fdiv", L(loc), y, DType::f32);
  }
  return tensor(dsl::elementwise("fdiv", L(loc), OpKind::Div, {x, y}, x->type.dtype));
}

tensor fast_dividef(operand a, operand b, loc_t loc) {
  auto pr = dsl::promote("fast_dividef", a, b, true, L(loc));
  Value* x = pr.a;
  Value* y = pr.b;
  if (!is_float(pr.dtype)) {
    x = dsl::cast("fast_dividef", L(loc), x, DType::f32);
    y = dsl::cast("fast_dividef", L(loc), y, DType::f32);
  }
  Value* r = builder("fast_dividef", L(loc)).create1(OpKind::Rcp, {y}, y->type);
  return tensor(dsl::elementwise("fast_dividef", L(loc), OpKind::Mul, {x, r}, x->type.dtype));
}

tensor exp(operand x, loc_t) { return unary_math("exp", OpKind::Exp, x); }
tensor exp2(operand x, loc_t) { return unary_math("exp2", OpKind::Exp2, x); }
tensor log(operand x, loc_t) { return unary_math("log", OpKind::Log, x); }
tensor log2(operand x, loc_t) { return unary_math("log2", OpKind::Log2, x); }
tensor sqrt(operand x, loc_t) { return unary_math("sqrt", OpKind::Sqrt, x); }
tensor rsqrt(operand x, loc_t) { return unary_math("rsqrt", OpKind::Rsqrt, x); }
tensor floor(operand x, loc_t) { return unary_math("floor", OpKind::Floor, x); }
tensor ceil(operand x, loc_t) { return unary_math("ceil", OpKind::Ceil, x); }
tensor sin(operand x, loc_t) { return unary_math("sin", OpKind::Sin, x); }
tensor cos(operand x, loc_t) { return unary_math("cos", OpKind::Cos, x); }
tensor tanh(operand x, loc_t) { return unary_math("tanh", OpKind::Tanh, x); }
tensor erf(operand x, loc_t) { return unary_math("erf", OpKind::Erf, x); }
tensor sigmoid(operand x, loc_t) { return unary_math("sigmoid", OpKind::Sigmoid, x); }

tensor abs(operand x, loc_t loc) {
  Value* v = require_tensor("abs", x);
  if (v->type.is_ptr()) fail(L(loc), "tl::abs: expected a number, got {}", dsl::describe(v));
  if (is_unsigned_int(v->type.dtype) || v->type.dtype == DType::i1) return tensor(v);
  return tensor(builder("abs", L(loc)).create1(OpKind::Abs, {v}, v->type));
}

// ---- shapes ---------------------------------------------------------------------------------

tensor expand_dims(const tensor& x, int axis, loc_t loc) {
  Value* v = x.value();
  int r = v->type.rank();
  if (axis < 0) axis += r + 1;
  if (axis < 0 || axis > r)
    fail(L(loc), "tl::expand_dims: axis {} is out of range for {} (rank {})", axis, dsl::describe(v), r);
  Shape s = v->type.shape;
  s.insert(s.begin() + axis, 1);
  ir::Attrs a;
  a.axis = axis;
  if (v->type.is_scalar()) return tensor(builder("expand_dims", L(loc)).create1(OpKind::Splat, {v}, v->type.with_shape(s)));
  return tensor(builder("expand_dims", L(loc)).create1(OpKind::ExpandDims, {v}, v->type.with_shape(s), a));
}

tensor tensor::operator()(index_item a, std::source_location loc) const {
  return a.new_axis ? expand_dims(*this, 0, loc) : *this;
}

tensor tensor::operator()(index_item a, index_item b, std::source_location loc) const {
  tensor t = *this;
  int pos = 0;
  for (index_item it : {a, b}) {
    if (it.new_axis) t = expand_dims(t, pos, loc);
    ++pos;
  }
  if (t.rank() != 2)
    fail(SourceLoc::from(loc), "indexing with 2 items needs a result of rank 2; {} has rank {}", dsl::describe(value()), rank());
  return t;
}

tensor tensor::operator()(index_item a, index_item b, index_item c, std::source_location loc) const {
  tensor t = *this;
  int pos = 0;
  for (index_item it : {a, b, c}) {
    if (it.new_axis) t = expand_dims(t, pos, loc);
    ++pos;
  }
  if (t.rank() != 3)
    fail(SourceLoc::from(loc), "indexing with 3 items needs a result of rank 3; {} has rank {}", dsl::describe(value()), rank());
  return t;
}

tensor tensor::T(std::source_location loc) const { return trans(*this, loc); }

tensor broadcast_to(operand x, const Shape& shape, loc_t loc) {
  dsl::check_block_shape("broadcast_to", L(loc), shape);
  Value* v = dsl::operand_value("broadcast_to", x);
  return tensor(dsl::broadcast_to("broadcast_to", L(loc), v, shape));
}

std::pair<tensor, tensor> broadcast(operand a, operand b, loc_t loc) {
  auto [x, y] = dsl::broadcast_pair("broadcast", L(loc), dsl::operand_value("broadcast", a),
                                    dsl::operand_value("broadcast", b));
  return {tensor(x), tensor(y)};
}

tensor reshape(const tensor& x, const Shape& shape, loc_t loc) {
  Value* v = x.value();
  int64_t n = 1;
  for (auto d : shape) n *= d;
  if (n != v->type.numel())
    fail(L(loc), "tl::reshape: cannot reshape {} ({} elements) to {} ({} elements)", dsl::describe(v),
         v->type.numel(), ir::shape_str(shape), n);
  if (shape.empty()) fail(L(loc), "tl::reshape: the target shape must not be empty");
  dsl::check_block_shape("reshape", L(loc), shape);
  if (v->type.is_scalar()) return tensor(builder("reshape", L(loc)).create1(OpKind::Splat, {v}, v->type.with_shape(shape)));
  if (v->type.shape == shape) return x;
  ir::Attrs a;
  a.ints = shape;
  return tensor(builder("reshape", L(loc)).create1(OpKind::Reshape, {v}, v->type.with_shape(shape), a));
}

tensor view(const tensor& x, const Shape& shape, loc_t loc) { return reshape(x, shape, loc); }

tensor permute(const tensor& x, const std::vector<int>& dims, loc_t loc) {
  Value* v = x.value();
  int r = v->type.rank();
  std::vector<int> sorted(dims);
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> iota(r);
  std::iota(iota.begin(), iota.end(), 0);
  if (static_cast<int>(dims.size()) != r || sorted != iota)
    fail(L(loc), "tl::permute: ({}) is not a permutation of the {} dims of {}", fmt::join(dims, ", "), r,
         dsl::describe(v));
  Shape s(r);
  ir::Attrs a;
  for (int i = 0; i < r; ++i) {
    s[i] = v->type.shape[dims[i]];
    a.ints.push_back(dims[i]);
  }
  if (a.ints == std::vector<int64_t>(iota.begin(), iota.end())) return x;
  return tensor(builder("permute", L(loc)).create1(OpKind::Permute, {v}, v->type.with_shape(s), a));
}

tensor trans(const tensor& x, loc_t loc) {
  int r = x.rank();
  std::vector<int> dims(r);
  for (int i = 0; i < r; ++i) dims[i] = r - 1 - i;
  return permute(x, dims, loc);
}

tensor trans(const tensor& x, const std::vector<int>& dims, loc_t loc) { return permute(x, dims, loc); }

// ---- memory ---------------------------------------------------------------------------------

// Triton's cache_modifier / eviction_policy strings, checked at the user's line (ir/cache_hints.h).
static ir::CacheHints cache_hints(const char* op, bool is_load, const std::string& cache_modifier,
                                  const std::string& eviction_policy, const SourceLoc& l) {
  auto c = is_load ? ir::parse_load_cache_modifier(cache_modifier) : ir::parse_store_cache_modifier(cache_modifier);
  if (!c)
    fail(l, "tl::{}: cache_modifier must be {}, got \"{}\"", op,
         is_load ? "\"\", \".ca\", \".cg\" or \".cv\"" : "\"\", \".wb\", \".cg\", \".cs\" or \".wt\"", cache_modifier);
  auto e = ir::parse_eviction_policy(eviction_policy);
  if (!e) fail(l, "tl::{}: eviction_policy must be \"\", \"evict_first\" or \"evict_last\", got \"{}\"", op, eviction_policy);
  return {*c, *e};
}

tensor load(const tensor& pointer, std::optional<operand> mask, std::optional<operand> other,
            const std::string& cache_modifier, const std::string& eviction_policy, loc_t loc) {
  SourceLoc l = L(loc);
  ir::CacheHints hints = cache_hints("load", true, cache_modifier, eviction_policy, l);
  Value* p = require_pointer("load", pointer, l);
  if (other && !mask) fail(l, "tl::load: `other` was given without a `mask`; it is only used where the mask is false");
  Value* m = prepare_mask("load", mask, p, l);
  std::vector<Value*> operands{p};
  ir::Attrs a;
  a.ints = {m != nullptr, other.has_value()};
  if (m) operands.push_back(m);
  if (other) operands.push_back(prepare_value("load", *other, p, l));
  Value* r = builder("load", l).create1(OpKind::Load, operands, p->type.with_dtype(p->type.pointee), a);
  ir::set_cache_hints(*r->def, hints);
  return tensor(r);
}

void store(const tensor& pointer, operand value, std::optional<operand> mask, const std::string& cache_modifier,
           const std::string& eviction_policy, loc_t loc) {
  SourceLoc l = L(loc);
  ir::CacheHints hints = cache_hints("store", false, cache_modifier, eviction_policy, l);
  Value* p = pointer.value();
  if (!p->type.is_ptr())
    fail(l, "tl::store: the destination must be a pointer or a block of pointers, got {}", dsl::describe(p));
  Value* v = prepare_value("store", value, p, l);
  Value* m = prepare_mask("store", mask, p, l);
  std::vector<Value*> operands{p, v};
  if (m) operands.push_back(m);
  ir::Op* op = builder("store", l).create(OpKind::Store, operands, {});
  ir::set_cache_hints(*op, hints);
}

tensor atomic_add(const tensor& p, operand v, std::optional<operand> m, const std::string& sem, loc_t loc) {
  return atomic("atomic_add", OpKind::AtomicAdd, p, v, m, sem, L(loc));
}
tensor atomic_max(const tensor& p, operand v, std::optional<operand> m, const std::string& sem, loc_t loc) {
  return atomic("atomic_max", OpKind::AtomicMax, p, v, m, sem, L(loc));
}
tensor atomic_min(const tensor& p, operand v, std::optional<operand> m, const std::string& sem, loc_t loc) {
  return atomic("atomic_min", OpKind::AtomicMin, p, v, m, sem, L(loc));
}
tensor atomic_and(const tensor& p, operand v, std::optional<operand> m, const std::string& sem, loc_t loc) {
  return atomic("atomic_and", OpKind::AtomicAnd, p, v, m, sem, L(loc));
}
tensor atomic_or(const tensor& p, operand v, std::optional<operand> m, const std::string& sem, loc_t loc) {
  return atomic("atomic_or", OpKind::AtomicOr, p, v, m, sem, L(loc));
}
tensor atomic_xor(const tensor& p, operand v, std::optional<operand> m, const std::string& sem, loc_t loc) {
  return atomic("atomic_xor", OpKind::AtomicXor, p, v, m, sem, L(loc));
}
tensor atomic_xchg(const tensor& p, operand v, std::optional<operand> m, const std::string& sem, loc_t loc) {
  return atomic("atomic_xchg", OpKind::AtomicXchg, p, v, m, sem, L(loc));
}

tensor atomic_cas(const tensor& pointer, operand cmp, operand val, const std::string& sem, loc_t loc) {
  SourceLoc l = L(loc);
  Value* p = require_pointer("atomic_cas", pointer, l);
  DType elem = p->type.pointee;
  if (dtype_bits(elem) < 16 || elem == DType::i1)
    fail(l, "tl::atomic_cas: atomics on {} are not supported; use 16, 32 or 64-bit types", dtype_name(elem));
  Value* c = prepare_value("atomic_cas", cmp, p, l);
  Value* v = prepare_value("atomic_cas", val, p, l);
  ir::Attrs attrs;
  attrs.str = atomic_sem("atomic_cas", sem, l);
  return tensor(builder("atomic_cas", l).create1(OpKind::AtomicCas, {p, c, v}, p->type.with_dtype(elem), attrs));
}

// ---- dot ------------------------------------------------------------------------------------

tensor dot(const tensor& a, const tensor& b, std::optional<tensor> acc, std::optional<DType> out_dtype,
           const std::string& input_precision, loc_t loc) {
  SourceLoc l = L(loc);
  if (!input_precision.empty() && !ir::is_input_precision(input_precision))
    fail(l, "tl::dot: input_precision must be \"tf32\", \"tf32x3\" or \"ieee\", got \"{}\"", input_precision);

  Value* x = a.value();
  Value* y = b.value();
  if (x->type.rank() != 2 || y->type.rank() != 2)
    fail(l, "tl::dot: both operands must be 2-D blocks, got {} and {}", dsl::describe(x), dsl::describe(y));
  if (x->type.is_ptr() || y->type.is_ptr()) fail(l, "tl::dot: operands must be numbers, got {} and {}", dsl::describe(x), dsl::describe(y));
  int64_t M = x->type.shape[0], K = x->type.shape[1], K2 = y->type.shape[0], N = y->type.shape[1];
  if (K != K2)
    fail(l, "tl::dot: inner dimensions differ: {} @ {} ({} vs {})", dsl::describe(x), dsl::describe(y), K, K2);
  if (M < 16 || N < 16 || K < 16)
    fail(l, "tl::dot: every dimension must be at least 16 (as in Triton), got M={} N={} K={}", M, N, K);
  DType dx = x->type.dtype, dy = y->type.dtype;
  if (dx != dy) {
    // Triton requires equal operand types; promote the narrower float as it would fail otherwise.
    fail(l, "tl::dot: operand dtypes differ ({} and {}); cast one of them", dtype_name(dx), dtype_name(dy));
  }
  DType out = is_float(dx) ? (dx == DType::f64 ? DType::f64 : DType::f32) : DType::i32;
  if (dx == DType::i1 || (is_int(dx) && dtype_bits(dx) != 8))
    fail(l, "tl::dot: integer operands must be 8-bit, got {}", dtype_name(dx));
  if (out_dtype) out = *out_dtype;
  Value* c;
  Type rt = Type::block(out, {M, N});
  if (acc) {
    c = acc->value();
    if (c->type.shape != Shape{M, N})
      fail(l, "tl::dot: accumulator {} does not match the result shape [{}, {}]", dsl::describe(c), M, N);
    if (c->type.dtype != out) c = dsl::cast("dot", l, c, out);
  } else {
    c = is_float(out) ? builder("dot", l).constant_float(0.0, rt) : builder("dot", l).constant_int(0, rt);
  }
  // Only fp32 operands have a choice (as in Triton, others ignore it): the IR carries it for them.
  ir::Attrs attrs;
  if (dx == DType::f32) {
    attrs.str = input_precision;
    if (attrs.str.empty()) {
      attrs.str = env().f32_default.empty() ? "tf32" : env().f32_default;
      if (!ir::is_input_precision(attrs.str))
        fail(l, "tl::dot: TRITIUM_F32_DEFAULT must be \"tf32\", \"tf32x3\" or \"ieee\", got \"{}\"", attrs.str);
    }
  }
  return tensor(builder("dot", l).create1(OpKind::Dot, {x, y, c}, rt, attrs));
}

// ---- hints and debugging ----------------------------------------------------------------------

static tensor hint(const char* op, OpKind kind, const tensor& x, std::vector<int64_t> values, const SourceLoc& l) {
  Value* v = x.value();
  size_t r = std::max(1, v->type.rank());
  if (values.size() != r)
    fail(l, "tl::{}: needs one value per dimension of {} ({}), got {}", op, dsl::describe(v), r, values.size());
  for (auto d : values)
    if (d <= 0) fail(l, "tl::{}: values must be positive, got {}", op, d);
  if (!is_int(v->type.dtype) && !v->type.is_ptr()) fail(l, "tl::{}: expects integers or pointers, got {}", op, dsl::describe(v));
  ir::Attrs a;
  a.ints = std::move(values);
  return tensor(builder(op, l).create1(kind, {v}, v->type, a));
}

tensor multiple_of(const tensor& x, std::vector<int64_t> values, loc_t loc) {
  return hint("multiple_of", OpKind::MultipleOf, x, std::move(values), L(loc));
}
tensor max_contiguous(const tensor& x, std::vector<int64_t> values, loc_t loc) {
  return hint("max_contiguous", OpKind::MaxContiguous, x, std::move(values), L(loc));
}

void static_assert_(bool condition, const std::string& message, loc_t loc) {
  if (!condition) fail(L(loc), "tl::static_assert failed{}{}", message.empty() ? "" : ": ", message);
}

void device_print(const std::string& prefix, std::vector<tensor> values, loc_t loc) {
  std::vector<Value*> ops;
  for (auto& t : values) ops.push_back(t.value());
  ir::Attrs a;
  a.str = prefix;
  builder("device_print", L(loc)).create(OpKind::Print, ops, {}, a);
}

void device_print(const std::string& prefix, const tensor& value, loc_t loc) {
  device_print(prefix, std::vector<tensor>{value}, loc);
}

void device_assert(operand condition, const std::string& message, loc_t loc) {
  Value* c = dsl::to_bool("device_assert", L(loc), dsl::operand_value("device_assert", condition));
  ir::Attrs a;
  a.str = message.empty() ? fmt::format("assertion failed at {}", L(loc).str()) : message;
  builder("device_assert", L(loc)).create(OpKind::Assert, {c}, {}, a);
}

void debug_barrier(loc_t loc) { builder("debug_barrier", L(loc)).create(OpKind::DebugBarrier, {}, {}); }

// ---- operators -------------------------------------------------------------------------------

tensor operator+(const operand& a, const operand& b) { return arith("add", OpKind::Add, a, b); }
tensor operator-(const operand& a, const operand& b) { return arith("sub", OpKind::Sub, a, b); }
tensor operator*(const operand& a, const operand& b) { return arith("mul", OpKind::Mul, a, b); }
tensor operator/(const operand& a, const operand& b) { return div_mod("div", OpKind::Div, a, b); }
tensor operator%(const operand& a, const operand& b) { return div_mod("rem", OpKind::Rem, a, b); }
tensor operator&(const operand& a, const operand& b) { return bitwise("and", OpKind::And, a, b); }
tensor operator|(const operand& a, const operand& b) { return bitwise("or", OpKind::Or, a, b); }
tensor operator^(const operand& a, const operand& b) { return bitwise("xor", OpKind::Xor, a, b); }
tensor operator<<(const operand& a, const operand& b) { return bitwise("shl", OpKind::Shl, a, b); }
tensor operator>>(const operand& a, const operand& b) { return bitwise("shr", OpKind::Shr, a, b); }
tensor operator==(const operand& a, const operand& b) { return compare("eq", OpKind::CmpEq, a, b); }
tensor operator!=(const operand& a, const operand& b) { return compare("ne", OpKind::CmpNe, a, b); }
tensor operator<(const operand& a, const operand& b) { return compare("lt", OpKind::CmpLt, a, b); }
tensor operator<=(const operand& a, const operand& b) { return compare("le", OpKind::CmpLe, a, b); }
tensor operator>(const operand& a, const operand& b) { return compare("gt", OpKind::CmpGt, a, b); }
tensor operator>=(const operand& a, const operand& b) { return compare("ge", OpKind::CmpGe, a, b); }
tensor operator&&(const operand& a, const operand& b) { return logical("logical_and", OpKind::And, a, b); }
tensor operator||(const operand& a, const operand& b) { return logical("logical_or", OpKind::Or, a, b); }

tensor operator-(const operand& a) {
  Value* v = dsl::operand_value("neg", a);
  if (v->type.is_ptr()) fail(a.loc, "tl::neg: cannot negate pointer {}", dsl::describe(v));
  return tensor(builder("neg", a.loc).create1(OpKind::Neg, {v}, v->type));
}

tensor operator~(const operand& a) {
  Value* v = dsl::operand_value("not", a);
  if (!is_int(v->type.dtype)) fail(a.loc, "tl::invert (~) needs an integer, got {}", dsl::describe(v));
  return tensor(builder("not", a.loc).create1(OpKind::Not, {v}, v->type));
}

tensor operator!(const operand& a) {
  Value* v = dsl::to_bool("logical_not", a.loc, dsl::operand_value("logical_not", a));
  return tensor(builder("logical_not", a.loc).create1(OpKind::Not, {v}, v->type));
}

tensor& operator+=(tensor& a, const operand& b) { return a = arith("add", OpKind::Add, operand(a, {}), b); }
tensor& operator-=(tensor& a, const operand& b) { return a = arith("sub", OpKind::Sub, operand(a, {}), b); }
tensor& operator*=(tensor& a, const operand& b) { return a = arith("mul", OpKind::Mul, operand(a, {}), b); }
tensor& operator/=(tensor& a, const operand& b) { return a = div_mod("div", OpKind::Div, operand(a, {}), b); }
tensor& operator%=(tensor& a, const operand& b) { return a = div_mod("rem", OpKind::Rem, operand(a, {}), b); }
tensor& operator&=(tensor& a, const operand& b) { return a = bitwise("and", OpKind::And, operand(a, {}), b); }
tensor& operator|=(tensor& a, const operand& b) { return a = bitwise("or", OpKind::Or, operand(a, {}), b); }
tensor& operator^=(tensor& a, const operand& b) { return a = bitwise("xor", OpKind::Xor, operand(a, {}), b); }
tensor& operator<<=(tensor& a, const operand& b) { return a = bitwise("shl", OpKind::Shl, operand(a, {}), b); }
tensor& operator>>=(tensor& a, const operand& b) { return a = bitwise("shr", OpKind::Shr, operand(a, {}), b); }

}  // namespace tritium::tl
