#include "jit/passes/fold_constants.h"

#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/builder.h"

namespace tritium::jit {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

// A folded scalar: integers hold their canonical int64 form (see wrap), floats a double.
struct Scalar {
  int64_t i = 0;
  double f = 0.0;
};

const Op* constant_def(const Value* v) {
  return v && v->def && v->def->kind == OpKind::Constant ? v->def : nullptr;
}

std::optional<Scalar> constant_of(const Value* v) {
  const Op* c = constant_def(v);
  if (!c) return std::nullopt;
  return Scalar{c->attrs.ival, c->attrs.fval};
}

bool is_int_constant(const Value* v, int64_t value) {
  const Op* c = constant_def(v);
  return c && is_int(v->type.dtype) && c->attrs.ival == value;
}

// Integers are kept sign-extended (signed) or zero-extended (unsigned, bool) from their width;
// u64 keeps its bits.
int64_t wrap(uint64_t bits, DType d) {
  int w = dtype_bits(d);
  if (w >= 64) return static_cast<int64_t>(bits);
  uint64_t mask = (uint64_t{1} << w) - 1;
  bits &= mask;
  if (is_signed_int(d) && (bits >> (w - 1)) & 1) bits |= ~mask;
  return static_cast<int64_t>(bits);
}

// Floats we fold: f32 and f64, where double arithmetic rounded to the type is exact IEEE.
bool foldable_float(DType d) { return d == DType::f32 || d == DType::f64; }

double round_to(double v, DType d) { return d == DType::f32 ? static_cast<double>(static_cast<float>(v)) : v; }

bool foldable(DType d) { return is_int(d) || foldable_float(d); }

std::optional<Scalar> fold_binary(OpKind k, DType d, Scalar a, Scalar b) {
  if (is_int(d)) {
    bool is_unsigned = !is_signed_int(d);  // bool compares and divides as unsigned
    uint64_t ua = static_cast<uint64_t>(a.i), ub = static_cast<uint64_t>(b.i);
    int64_t sa = a.i, sb = b.i;
    int bits = dtype_bits(d);
    auto done = [&](uint64_t r) { return Scalar{wrap(r, d), 0.0}; };
    switch (k) {
      case OpKind::Add: return done(ua + ub);
      case OpKind::Sub: return done(ua - ub);
      case OpKind::Mul: return done(ua * ub);
      case OpKind::Div:
      case OpKind::Rem:
        if (b.i == 0) return std::nullopt;
        if (is_unsigned) return done(k == OpKind::Div ? ua / ub : ua % ub);
        if (sa == std::numeric_limits<int64_t>::min() && sb == -1) return std::nullopt;  // overflow in C++
        return done(static_cast<uint64_t>(k == OpKind::Div ? sa / sb : sa % sb));
      case OpKind::And: return done(ua & ub);
      case OpKind::Or: return done(ua | ub);
      case OpKind::Xor: return done(ua ^ ub);
      case OpKind::Shl:
      case OpKind::Shr: {
        if (ub >= static_cast<uint64_t>(bits)) return std::nullopt;  // poison in LLVM
        if (k == OpKind::Shl) return done(ua << ub);
        return done(is_unsigned ? ua >> ub : static_cast<uint64_t>(sa >> ub));
      }
      case OpKind::Min: return done(is_unsigned ? std::min(ua, ub) : static_cast<uint64_t>(std::min(sa, sb)));
      case OpKind::Max: return done(is_unsigned ? std::max(ua, ub) : static_cast<uint64_t>(std::max(sa, sb)));
      default: return std::nullopt;
    }
  }
  if (!foldable_float(d)) return std::nullopt;
  double x = round_to(a.f, d), y = round_to(b.f, d);  // an f32 constant means its f32 value
  auto done = [&](double r) { return Scalar{0, round_to(r, d)}; };
  switch (k) {
    case OpKind::Add: return done(x + y);
    case OpKind::Sub: return done(x - y);
    case OpKind::Mul: return done(x * y);
    case OpKind::Div: return y == 0.0 ? std::nullopt : std::optional(done(x / y));
    case OpKind::Rem: return y == 0.0 ? std::nullopt : std::optional(done(std::fmod(x, y)));
    case OpKind::Min:
    case OpKind::Max:  // NaN-propagating, like Triton's minimum/maximum
      if (std::isnan(x) || std::isnan(y)) return done(std::numeric_limits<double>::quiet_NaN());
      if (x == y) return done(k == OpKind::Min ? (std::signbit(x) ? x : y) : (std::signbit(x) ? y : x));
      return done(k == OpKind::Min ? std::min(x, y) : std::max(x, y));
    default: return std::nullopt;
  }
}

std::optional<bool> fold_compare(OpKind k, DType d, Scalar a, Scalar b) {
  auto pick = [&](auto x, auto y) -> bool {
    switch (k) {
      case OpKind::CmpEq: return x == y;
      case OpKind::CmpNe: return x != y;
      case OpKind::CmpLt: return x < y;
      case OpKind::CmpLe: return x <= y;
      case OpKind::CmpGt: return x > y;
      default: return x >= y;
    }
  };
  if (is_signed_int(d)) return pick(a.i, b.i);
  if (is_int(d)) return pick(static_cast<uint64_t>(a.i), static_cast<uint64_t>(b.i));
  if (foldable_float(d)) return pick(round_to(a.f, d), round_to(b.f, d));  // IEEE: comparisons with NaN are false, != true
  return std::nullopt;
}

std::optional<Scalar> fold_cast(DType from, DType to, Scalar v) {
  if (!foldable(from) || !foldable(to)) return std::nullopt;
  if (is_float(from)) v.f = round_to(v.f, from);
  if (to == DType::i1) {  // Triton casts to bool as "!= 0"
    bool nonzero = is_int(from) ? v.i != 0 : v.f != 0.0;
    return Scalar{nonzero ? 1 : 0, 0.0};
  }
  if (is_int(from) && is_int(to)) return Scalar{wrap(static_cast<uint64_t>(v.i), to), 0.0};
  if (is_int(from)) {
    double x = is_signed_int(from) ? static_cast<double>(v.i) : static_cast<double>(static_cast<uint64_t>(v.i));
    if (to == DType::f32)  // round once, straight from the integer
      x = is_signed_int(from) ? static_cast<float>(v.i) : static_cast<float>(static_cast<uint64_t>(v.i));
    return Scalar{0, x};
  }
  if (is_float(to)) return Scalar{0, round_to(v.f, to)};
  // float -> int: only when the truncated value fits (otherwise the result is poison).
  double t = std::trunc(v.f);
  if (std::isnan(t)) return std::nullopt;
  int bits = dtype_bits(to);
  if (is_signed_int(to)) {
    double lo = -std::ldexp(1.0, bits - 1), hi = std::ldexp(1.0, bits - 1);
    if (t < lo || t >= hi) return std::nullopt;
    return Scalar{static_cast<int64_t>(t), 0.0};
  }
  if (t < 0 || t >= std::ldexp(1.0, bits)) return std::nullopt;
  return Scalar{static_cast<int64_t>(static_cast<uint64_t>(t)), 0.0};
}

std::optional<Scalar> fold_unary(OpKind k, DType d, Scalar a) {
  if (k == OpKind::Neg) {
    if (is_int(d)) return Scalar{wrap(0 - static_cast<uint64_t>(a.i), d), 0.0};
    if (foldable_float(d)) return Scalar{0, -round_to(a.f, d)};
  }
  if (k == OpKind::Not && is_int(d)) return Scalar{wrap(~static_cast<uint64_t>(a.i), d), 0.0};
  return std::nullopt;
}

bool is_binary_arith(OpKind k) {
  return (k >= OpKind::Add && k <= OpKind::Rem) || k == OpKind::And || k == OpKind::Or || k == OpKind::Xor ||
         k == OpKind::Shl || k == OpKind::Shr || k == OpKind::Min || k == OpKind::Max;
}

bool is_cmp(OpKind k) { return k >= OpKind::CmpEq && k <= OpKind::CmpGe; }

class Folder {
 public:
  explicit Folder(ir::Function& f) : f_(f), builder_(f), scratch_(f.new_block(nullptr)) {}

  bool run() {
    std::vector<Op*> ops;
    f_.walk([&](Op* op) { ops.push_back(op); });
    for (Op* op : ops) {
      if (op->results.size() != 1 || !op->regions.empty()) continue;
      if (Value* replacement = simplify(op)) {
        f_.replace_all_uses(op->result(), replacement);
        f_.release_uses(op);
        erased_.insert(op);
      }
      take_created(op);
    }
    if (erased_.empty() && inserted_.empty()) return false;
    rebuild(f_.body);
    return true;
  }

 private:
  // New ops are built at the end of a scratch block, then placed before the op they were made
  // for when each block is rebuilt once: inserting into the middle of a block as they come would
  // cost the block's length per op.
  void take_created(Op* at) {
    if (scratch_->ops.empty()) return;
    auto& list = inserted_[at];
    list.insert(list.end(), scratch_->ops.begin(), scratch_->ops.end());
    scratch_->ops.clear();
  }

  void rebuild(ir::Block* b) {
    std::vector<Op*> ops;
    ops.reserve(b->ops.size());
    for (Op* op : b->ops) {
      if (auto it = inserted_.find(op); it != inserted_.end())
        for (Op* created : it->second) {
          created->parent = b;
          ops.push_back(created);
        }
      if (!erased_.count(op)) ops.push_back(op);
    }
    b->ops = std::move(ops);
    for (Op* op : b->ops)
      for (ir::Block* r : op->regions) rebuild(r);
  }

  Value* make_constant(Op* at, const Type& t, Scalar v) {
    position(at);
    return is_float(t.dtype) ? builder_.constant_float(v.f, t) : builder_.constant_int(v.i, t);
  }

  Value* make_splat(Op* at, Value* scalar, const Type& t) {
    position(at);
    return builder_.create1(OpKind::Splat, {scalar}, t);
  }

  void position(Op* at) {
    builder_.set_insertion_end(scratch_);
    builder_.loc = at->loc;
  }

  // The value replacing op's result, or nullptr.
  Value* simplify(Op* op) {
    const Type& t = op->result()->type;
    OpKind k = op->kind;
    auto operand_constant = [&](size_t i) { return constant_of(op->operand(i)); };

    if (is_binary_arith(k) && op->operands.size() == 2) {
      Value *x = op->operand(0), *y = op->operand(1);
      auto cx = operand_constant(0), cy = operand_constant(1);
      if (cx && cy) {
        if (auto r = fold_binary(k, t.dtype, *cx, *cy)) return make_constant(op, t, *r);
        return nullptr;
      }
      return simplify_identity(op, x, y);
    }
    if (is_cmp(k) && op->operands.size() == 2) {
      auto cx = operand_constant(0), cy = operand_constant(1);
      if (cx && cy)
        if (auto r = fold_compare(k, op->operand(0)->type.dtype, *cx, *cy)) return make_constant(op, t, Scalar{*r, 0.0});
      return nullptr;
    }
    switch (k) {
      case OpKind::Neg:
      case OpKind::Not: {
        Value* x = op->operand(0);
        if (x->def && x->def->kind == k) return x->def->operand(0);  // -(-x), ~(~x)
        if (auto c = operand_constant(0))
          if (auto r = fold_unary(k, t.dtype, *c)) return make_constant(op, t, *r);
        return nullptr;
      }
      case OpKind::Cast: {
        Value* x = op->operand(0);
        if (x->type == t) return x;
        if (auto c = operand_constant(0))
          if (auto r = fold_cast(x->type.dtype, t.dtype, *c)) return make_constant(op, t, *r);
        return nullptr;
      }
      case OpKind::Bitcast:
        return op->operand(0)->type == t ? op->operand(0) : nullptr;
      case OpKind::Select: {
        Value *a = op->operand(1), *b = op->operand(2);
        if (a == b) return a;
        if (auto c = operand_constant(0)) return c->i ? a : b;
        return nullptr;
      }
      case OpKind::AddPtr:
        return is_int_constant(op->operand(1), 0) ? op->operand(0) : hoist_uniform_offset(op);
      case OpKind::Splat:
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
      case OpKind::Reshape:
      case OpKind::Permute:
        return simplify_shape(op);
      case OpKind::MultipleOf:
      case OpKind::MaxContiguous:
        return nullptr;  // hints must reach the axis analysis
      default:
        return nullptr;
    }
  }

  // addptr(splat(p), splat(s) + b) -> addptr(splat(addptr(p, s)), b): the uniform part of a block
  // of offsets moves into the scalar pointer, as Triton's pointer canonicalisation does, so that
  // the per-element offsets are small (an arange) and the code generators fold each chunk's
  // address into an immediate offset of one base. It differs from adding s + b in i32 first only
  // where that sum overflows, where the address was wrong anyway.
  Value* hoist_uniform_offset(Op* op) {
    Value *p = op->operand(0), *o = op->operand(1);
    if (!p->type.is_block() || !p->def || p->def->kind != OpKind::Splat) return nullptr;
    if (!o->def || o->def->kind != OpKind::Add) return nullptr;
    for (size_t side = 0; side < 2; ++side) {
      Value *s = o->def->operand(side), *b = o->def->operand(1 - side);
      if (!s->def || s->def->kind != OpKind::Splat) continue;
      position(op);
      Value* scalar_p = p->def->operand(0);
      Value* base = builder_.create1(OpKind::AddPtr, {scalar_p, s->def->operand(0)}, scalar_p->type);
      Value* bases = builder_.create1(OpKind::Splat, {base}, p->type);
      return builder_.create1(OpKind::AddPtr, {bases, b}, op->result()->type);
    }
    return nullptr;
  }

  Value* simplify_shape(Op* op) {
    const Type& t = op->result()->type;
    Value* x = op->operand(0);
    if (const Op* c = constant_def(x)) {  // a constant keeps its value under any reshaping
      if (t.is_ptr()) return nullptr;
      return make_constant(op, t, Scalar{c->attrs.ival, c->attrs.fval});
    }
    // broadcast/reshape to itself, or the identity permutation (a square transpose keeps the type)
    if (x->type == t && op->kind != OpKind::Splat) {
      bool identity = true;
      if (op->kind == OpKind::Permute)
        for (size_t i = 0; i < op->attrs.ints.size(); ++i) identity &= op->attrs.ints[i] == static_cast<int64_t>(i);
      if (identity) return x;
    }
    if (op->kind == OpKind::Broadcast && x->def && x->def->kind == OpKind::Splat)
      return make_splat(op, x->def->operand(0), t);
    return nullptr;
  }

  // x+0, 0+x, x-0, x*1, 1*x, x/1, x%1 (ints: 0), x*0 (ints), x|0, x^0, x<<0, x>>0; the float identities that hold
  // bit for bit: x*1, x-(+0), x+(-0).
  Value* simplify_identity(Op* op, Value* x, Value* y) {
    OpKind k = op->kind;
    const Type& t = op->result()->type;
    if (is_int(t.dtype)) {
      bool y0 = is_int_constant(y, 0), x0 = is_int_constant(x, 0);
      bool y1 = is_int_constant(y, 1), x1 = is_int_constant(x, 1);
      switch (k) {
        case OpKind::Add: case OpKind::Or: case OpKind::Xor:
          if (y0) return x;
          if (x0) return y;
          break;
        case OpKind::Sub: case OpKind::Shl: case OpKind::Shr:
          if (y0) return x;
          break;
        case OpKind::Mul:
          if (y1 && !is_bool(t.dtype)) return x;
          if (x1 && !is_bool(t.dtype)) return y;
          if (y0) return y;
          if (x0) return x;
          break;
        case OpKind::Div:
          if (y1 && !is_bool(t.dtype)) return x;
          break;
        case OpKind::Rem:  // x % 1: a split index over one chunk (an argument specialised to 1)
          if (y1 && !is_bool(t.dtype)) return make_constant(op, t, Scalar{0, 0.0});
          break;
        default: break;
      }
      return nullptr;
    }
    if (!is_float(t.dtype)) return nullptr;
    auto float_constant = [](Value* v) -> std::optional<double> {
      const Op* c = constant_def(v);
      return c ? std::optional(c->attrs.fval) : std::nullopt;
    };
    auto fx = float_constant(x), fy = float_constant(y);
    auto is_pos_zero = [](std::optional<double> v) { return v && *v == 0.0 && !std::signbit(*v); };
    auto is_neg_zero = [](std::optional<double> v) { return v && *v == 0.0 && std::signbit(*v); };
    switch (k) {
      case OpKind::Mul:
        if (fy && *fy == 1.0) return x;
        if (fx && *fx == 1.0) return y;
        break;
      case OpKind::Sub:
        if (is_pos_zero(fy)) return x;
        break;
      case OpKind::Add:
        if (is_neg_zero(fy)) return x;
        if (is_neg_zero(fx)) return y;
        break;
      default: break;
    }
    return nullptr;
  }

  ir::Function& f_;
  ir::Builder builder_;
  ir::Block* scratch_;
  std::unordered_set<Op*> erased_;
  std::unordered_map<Op*, std::vector<Op*>> inserted_;  // new ops, by the op they go before
};

}  // namespace

bool fold_constants(ir::Function& f) { return Folder(f).run(); }

}  // namespace tritium::jit
