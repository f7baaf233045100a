#include "jit/passes/debug_checks.h"

#include <algorithm>
#include <optional>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/builder.h"

namespace tritium::jit {

using ir::OpKind;
using ir::Type;
using ir::Value;

CheckKind check_kind(const ir::Op& op) {
  return op.attrs.ints.empty() ? CheckKind::user : static_cast<CheckKind>(op.attrs.ints[0]);
}

namespace {

bool is_access(OpKind k) {
  return k == OpKind::Load || k == OpKind::Store || k == OpKind::AtomicCas ||
         (k >= OpKind::AtomicAdd && k <= OpKind::AtomicXchg);
}

const char* access_name(OpKind k) {
  switch (k) {
    case OpKind::Load: return "load";
    case OpKind::Store: return "store";
    default: return ir::op_name(k);
  }
}

// Which pointer parameter each pointer value comes from: a forward data-flow over the function
// (views, add_ptr, selects and loop-carried values keep it; two parameters meeting, pointers read
// from memory or made from integers lose it). Lattice: absent (not seen yet), a parameter index,
// kMixed.
class Provenance {
 public:
  static constexpr int kMixed = -1;

  explicit Provenance(ir::Function& f) {
    for (size_t i = 0; i < f.params.size(); ++i)
      if (f.params[i].type.is_ptr()) of_[f.body->args[i]] = static_cast<int>(i);
    // Loop-carried pointers see their yields on the next sweep; the lattice is finite.
    for (int sweep = 0; sweep < 8; ++sweep) {
      changed_ = false;
      f.walk([&](ir::Op* op) { visit(op); });
      if (!changed_) break;
    }
  }

  // The parameter `v` points into, or kMixed.
  int of(const Value* v) const {
    auto it = of_.find(v);
    return it == of_.end() ? kMixed : it->second;
  }

 private:
  std::unordered_map<const Value*, int> of_;
  bool changed_ = false;

  std::optional<int> get(const Value* v) const {
    auto it = of_.find(v);
    if (it == of_.end()) return std::nullopt;
    return it->second;
  }
  void set(const Value* v, std::optional<int> x) {
    if (!v->type.is_ptr() || !x) return;
    auto it = of_.find(v);
    if (it == of_.end()) {
      of_[v] = *x;
      changed_ = true;
    } else if (it->second != *x && it->second != kMixed) {
      it->second = kMixed;
      changed_ = true;
    }
  }
  static const ir::Op* yield_of(const ir::Block* b) {
    return !b->ops.empty() && b->ops.back()->kind == OpKind::Yield ? b->ops.back() : nullptr;
  }

  void visit(ir::Op* op) {
    switch (op->kind) {
      case OpKind::AddPtr:
      case OpKind::Splat:
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
      case OpKind::Reshape:
      case OpKind::Permute:
      case OpKind::MultipleOf:
      case OpKind::MaxContiguous:
      case OpKind::ConvertLayout:
        set(op->result(), get(op->operand(0)));
        return;
      case OpKind::Cast:  // a pointer of another element type keeps it; an integer made a pointer has none
        set(op->result(), op->operand(0)->type.is_ptr() ? get(op->operand(0)) : std::optional<int>(kMixed));
        return;
      case OpKind::Select:
        set(op->result(), get(op->operand(1)));
        set(op->result(), get(op->operand(2)));
        return;
      case OpKind::For: {
        ir::Block* body = op->regions[0];
        const ir::Op* y = yield_of(body);
        for (size_t k = 0; k + 3 < op->operands.size(); ++k) {
          set(body->args[k + 1], get(op->operand(k + 3)));
          if (y) set(body->args[k + 1], get(y->operand(k)));
          set(op->results[k], get(body->args[k + 1]));
        }
        return;
      }
      case OpKind::If:
        for (ir::Block* r : op->regions)
          if (const ir::Op* y = yield_of(r))
            for (size_t k = 0; k < op->results.size() && k < y->operands.size(); ++k) set(op->results[k], get(y->operand(k)));
        return;
      case OpKind::While: {
        ir::Block* before = op->regions[0];
        ir::Block* body = op->regions[1];
        const ir::Op* y = yield_of(body);
        for (size_t k = 0; k < op->operands.size(); ++k) {
          set(before->args[k], get(op->operand(k)));
          if (y && k < y->operands.size()) set(before->args[k], get(y->operand(k)));
          if (k < body->args.size()) set(body->args[k], get(before->args[k]));
          if (k < op->results.size()) set(op->results[k], get(before->args[k]));
        }
        return;
      }
      default:
        for (Value* r : op->results) set(r, kMixed);  // loads of pointers, atomics, ...
        return;
    }
  }
};

Type i64_like(const Value* v) {
  return v->type.is_block() ? Type::block(DType::i64, v->type.shape) : Type::scalar(DType::i64);
}
Type i1_like(const Value* v) {
  return v->type.is_block() ? Type::block(DType::i1, v->type.shape) : Type::scalar(DType::i1);
}

// A scalar as a value of v's shape.
Value* shaped(ir::Builder& b, Value* scalar, const Value* v) {
  if (!v->type.is_block()) return scalar;
  return b.create1(OpKind::Splat, {scalar}, Type::block(scalar->type.dtype, v->type.shape));
}

void set_insertion_after(ir::Builder& b, ir::Op* op) {
  ir::Block* blk = op->parent;
  auto it = std::find(blk->ops.begin(), blk->ops.end(), op);
  if (it + 1 == blk->ops.end()) b.set_insertion_end(blk);
  else b.set_insertion_before(*(it + 1));
}

// The pointer operand's mask slot: Load (ptr, mask, other), Store (ptr, value, mask), atomics
// (ptr, value, mask); none for atomic_cas.
std::optional<size_t> mask_slot(const ir::Op* op) {
  switch (op->kind) {
    case OpKind::Load: return 1;
    case OpKind::Store: return 2;
    case OpKind::AtomicCas: return std::nullopt;
    default: return 2;
  }
}
bool has_mask(const ir::Op* op) {
  if (op->kind == OpKind::Load) return !op->attrs.ints.empty() && op->attrs.ints[0] != 0;
  return mask_slot(op) && op->operands.size() > *mask_slot(op);
}

void check_access(ir::Function& f, ir::Op* op, const std::string& param, Value* lo, Value* hi) {
  Value* p = op->operand(0);
  const int64_t bytes = dtype_bytes(p->type.pointee);
  ir::Builder b(f);
  b.loc = op->loc;
  b.set_insertion_before(op);
  Value* addr = b.create1(OpKind::Cast, {p}, i64_like(p));
  Value* last = b.create1(OpKind::Sub, {hi, b.constant_int(bytes, Type::scalar(DType::i64))}, Type::scalar(DType::i64));
  Value* inside = b.create1(OpKind::And,
                            {b.create1(OpKind::CmpGe, {addr, shaped(b, lo, p)}, i1_like(p)),
                             b.create1(OpKind::CmpLe, {addr, shaped(b, last, p)}, i1_like(p))},
                            i1_like(p));
  Value* mask = has_mask(op) ? op->operand(*mask_slot(op)) : nullptr;
  // Masked-off lanes are not accessed, so they are not checked.
  Value* ok = mask ? b.create1(OpKind::Or, {b.create1(OpKind::Not, {mask}, i1_like(p)), inside}, i1_like(p)) : inside;
  ir::Attrs a;
  a.ints = {static_cast<int64_t>(CheckKind::access), bytes};
  a.str = fmt::format("out-of-bounds {} of {} byte{} through argument '{}' at {}", access_name(op->kind), bytes,
                      bytes == 1 ? "" : "s", param, op->loc.str());
  b.create(OpKind::Assert, {ok, addr, lo, hi}, {}, a);
  // The failing lanes are masked off, so the launch survives to report them.
  if (!mask_slot(op)) return;  // atomic_cas has no mask: checked, not guarded
  if (mask) {
    f.set_operand(op, *mask_slot(op), b.create1(OpKind::And, {mask, inside}, i1_like(p)));
  } else {
    f.add_operand(op, inside);
    if (op->kind == OpKind::Load) {
      if (op->attrs.ints.size() < 2) op->attrs.ints = {1, 0};
      else op->attrs.ints[0] = 1;  // (cache hints after it stay)
      op->attrs.str.clear();  // a tensor-descriptor load's mask is its bounds; this one is not
    }
  }
}

bool is_int32(const Value* v) { return v->type.dtype == DType::i32 || v->type.dtype == DType::u32; }

// The 32-bit add, sub and mul ops whose results reach a pointer offset, through views, selects,
// casts, min/max, div/rem and loop-carried values.
std::vector<ir::Op*> index_arithmetic(ir::Function& f) {
  std::vector<Value*> work;
  f.walk([&](ir::Op* op) {
    if (op->kind == OpKind::AddPtr) work.push_back(op->operand(1));
  });
  std::unordered_set<const Value*> seen;
  std::vector<ir::Op*> out;
  while (!work.empty()) {
    Value* v = work.back();
    work.pop_back();
    if (!seen.insert(v).second) continue;
    if (v->is_block_arg()) {
      ir::Block* blk = v->owner;
      ir::Op* loop = blk ? blk->parent : nullptr;
      if (loop && loop->kind == OpKind::For && v->index >= 1) {
        work.push_back(loop->operand(static_cast<size_t>(v->index) + 2));
        if (!blk->ops.empty() && blk->ops.back()->kind == OpKind::Yield)
          work.push_back(blk->ops.back()->operand(static_cast<size_t>(v->index) - 1));
      }
      continue;
    }
    ir::Op* d = v->def;
    switch (d->kind) {
      case OpKind::Add:
      case OpKind::Sub:
      case OpKind::Mul:
        if (is_int32(v)) out.push_back(d);
        [[fallthrough]];
      case OpKind::Splat:
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
      case OpKind::Reshape:
      case OpKind::Permute:
      case OpKind::MultipleOf:
      case OpKind::MaxContiguous:
      case OpKind::Min:
      case OpKind::Max:
      case OpKind::Div:
      case OpKind::Rem:
      case OpKind::Cast:
        for (Value* o : d->operands)
          if (is_int(o->type.dtype)) work.push_back(o);
        break;
      case OpKind::Select:
        work.push_back(d->operand(1));
        work.push_back(d->operand(2));
        break;
      case OpKind::For:
      case OpKind::If:
        for (ir::Block* r : d->regions)
          if (!r->ops.empty() && r->ops.back()->kind == OpKind::Yield && static_cast<size_t>(v->index) < r->ops.back()->operands.size())
            work.push_back(r->ops.back()->operand(static_cast<size_t>(v->index)));
        break;
      default: break;
    }
  }
  return out;
}

void check_overflow(ir::Function& f, ir::Op* op) {
  Value* r = op->result();
  ir::Builder b(f);
  b.loc = op->loc;
  set_insertion_after(b, op);
  Type wide = i64_like(r);
  Value* exact = b.create1(op->kind, {b.create1(OpKind::Cast, {op->operand(0)}, wide), b.create1(OpKind::Cast, {op->operand(1)}, wide)}, wide);
  Value* ok = b.create1(OpKind::CmpEq, {b.create1(OpKind::Cast, {r}, wide), exact}, i1_like(r));
  ir::Attrs a;
  a.ints = {static_cast<int64_t>(CheckKind::overflow)};
  a.str = fmt::format("{} overflow in index arithmetic ({} of {}) at {}", r->type.dtype == DType::i32 ? "32-bit integer" : "unsigned 32-bit integer",
                      ir::op_name(op->kind), dtype_name(r->type.dtype), op->loc.str());
  b.create(OpKind::Assert, {ok, exact}, {}, a);
}

}  // namespace

void add_debug_checks(ir::Function& f) {
  // Hidden parameters: [begin, end) of each pointer argument's allocation.
  std::unordered_map<int, std::pair<Value*, Value*>> bounds;
  const size_t n = f.params.size();
  for (size_t i = 0; i < n; ++i) {
    if (!f.params[i].type.is_ptr()) continue;
    Type t = Type::scalar(DType::i64);
    Value* lo = f.add_block_arg(f.body, t);
    f.params.push_back({f.params[i].name + ".begin", t, 1});
    Value* hi = f.add_block_arg(f.body, t);
    f.params.push_back({f.params[i].name + ".end", t, 1});
    bounds[static_cast<int>(i)] = {lo, hi};
  }
  std::vector<ir::Op*> overflow = index_arithmetic(f);
  Provenance prov(f);
  std::vector<ir::Op*> accesses;
  f.walk([&](ir::Op* op) {
    if (is_access(op->kind)) accesses.push_back(op);
  });
  for (ir::Op* op : overflow) check_overflow(f, op);
  for (ir::Op* op : accesses) {
    int p = prov.of(op->operand(0));
    if (p == Provenance::kMixed) continue;
    auto [lo, hi] = bounds.at(p);
    check_access(f, op, f.params[static_cast<size_t>(p)].name, lo, hi);
  }
}

bool remove_device_asserts(ir::Function& f) {
  std::vector<ir::Op*> asserts;
  f.walk([&](ir::Op* op) {
    if (op->kind == OpKind::Assert && check_kind(*op) == CheckKind::user) asserts.push_back(op);
  });
  for (ir::Op* op : asserts) {
    f.release_uses(op);
    auto& ops = op->parent->ops;
    ops.erase(std::find(ops.begin(), ops.end(), op));
  }
  return !asserts.empty();
}

}  // namespace tritium::jit
