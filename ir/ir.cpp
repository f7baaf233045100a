#include "ir/ir.h"

#include <algorithm>

#include "ir/builder.h"

namespace tritium::ir {

const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::Constant: return "constant";
    case OpKind::ProgramId: return "program_id";
    case OpKind::NumPrograms: return "num_programs";
    case OpKind::Arange: return "arange";
    case OpKind::Splat: return "splat";
    case OpKind::Broadcast: return "broadcast";
    case OpKind::ExpandDims: return "expand_dims";
    case OpKind::Reshape: return "reshape";
    case OpKind::Permute: return "permute";
    case OpKind::Add: return "add";
    case OpKind::Sub: return "sub";
    case OpKind::Mul: return "mul";
    case OpKind::Div: return "div";
    case OpKind::Rem: return "rem";
    case OpKind::Neg: return "neg";
    case OpKind::And: return "and";
    case OpKind::Or: return "or";
    case OpKind::Xor: return "xor";
    case OpKind::Not: return "not";
    case OpKind::Shl: return "shl";
    case OpKind::Shr: return "shr";
    case OpKind::Min: return "min";
    case OpKind::Max: return "max";
    case OpKind::Umulhi: return "umulhi";
    case OpKind::Fma: return "fma";
    case OpKind::CmpEq: return "cmp_eq";
    case OpKind::CmpNe: return "cmp_ne";
    case OpKind::CmpLt: return "cmp_lt";
    case OpKind::CmpLe: return "cmp_le";
    case OpKind::CmpGt: return "cmp_gt";
    case OpKind::CmpGe: return "cmp_ge";
    case OpKind::Select: return "select";
    case OpKind::Exp: return "exp";
    case OpKind::Exp2: return "exp2";
    case OpKind::Log: return "log";
    case OpKind::Log2: return "log2";
    case OpKind::Sqrt: return "sqrt";
    case OpKind::Rsqrt: return "rsqrt";
    case OpKind::Rcp: return "rcp";
    case OpKind::Abs: return "abs";
    case OpKind::Floor: return "floor";
    case OpKind::Ceil: return "ceil";
    case OpKind::Sin: return "sin";
    case OpKind::Cos: return "cos";
    case OpKind::Tanh: return "tanh";
    case OpKind::Erf: return "erf";
    case OpKind::Sigmoid: return "sigmoid";
    case OpKind::Cast: return "cast";
    case OpKind::Bitcast: return "bitcast";
    case OpKind::AddPtr: return "addptr";
    case OpKind::Load: return "load";
    case OpKind::Store: return "store";
    case OpKind::AtomicAdd: return "atomic_add";
    case OpKind::AtomicMax: return "atomic_max";
    case OpKind::AtomicMin: return "atomic_min";
    case OpKind::AtomicAnd: return "atomic_and";
    case OpKind::AtomicOr: return "atomic_or";
    case OpKind::AtomicXor: return "atomic_xor";
    case OpKind::AtomicXchg: return "atomic_xchg";
    case OpKind::AtomicCas: return "atomic_cas";
    case OpKind::Reduce: return "reduce";
    case OpKind::Scan: return "scan";
    case OpKind::Dot: return "dot";
    case OpKind::Histogram: return "histogram";
    case OpKind::Gather: return "gather";
    case OpKind::Join: return "join";
    case OpKind::Split: return "split";
    case OpKind::For: return "for";
    case OpKind::While: return "while";
    case OpKind::If: return "if";
    case OpKind::Yield: return "yield";
    case OpKind::Print: return "print";
    case OpKind::Assert: return "assert";
    case OpKind::DebugBarrier: return "debug_barrier";
    case OpKind::MultipleOf: return "multiple_of";
    case OpKind::MaxContiguous: return "max_contiguous";
    case OpKind::ConvertLayout: return "convert_layout";
  }
  return "?";
}

bool is_elementwise(OpKind k) {
  return (k >= OpKind::Add && k <= OpKind::AddPtr);
}

bool has_side_effects(OpKind k) {
  return k == OpKind::Store || (k >= OpKind::AtomicAdd && k <= OpKind::AtomicCas) || k == OpKind::Print ||
         k == OpKind::Assert || k == OpKind::DebugBarrier;
}

Function::Function(std::string n) : name(std::move(n)) { body = new_block(nullptr); }

Block* Function::new_block(Op* parent) {
  blocks_.emplace_back();
  blocks_.back().parent = parent;
  return &blocks_.back();
}

Value* Function::new_value(const Type& t) {
  values_.emplace_back();
  values_.back().type = t;
  return &values_.back();
}

Op* Function::new_op(OpKind kind, SourceLoc loc) {
  ops_.emplace_back();
  ops_.back().kind = kind;
  ops_.back().loc = loc;
  return &ops_.back();
}

Value* Function::add_block_arg(Block* b, const Type& t) {
  Value* v = new_value(t);
  v->owner = b;
  v->index = static_cast<int>(b->args.size());
  b->args.push_back(v);
  return v;
}

void Function::erase_block_arg(Block* b, int index) {
  b->args.erase(b->args.begin() + index);
  for (size_t i = 0; i < b->args.size(); ++i) b->args[i]->index = static_cast<int>(i);
}

Value* Function::add_result(Op* op, const Type& t) {
  Value* v = new_value(t);
  v->def = op;
  v->index = static_cast<int>(op->results.size());
  op->results.push_back(v);
  return v;
}

// Removes slot `i` of `op` from its value's use list in O(1): the last use takes its place.
void Function::unlink_use(Op* op, size_t i) {
  std::vector<Use>& uses = op->operands.values_[i]->uses_;
  uint32_t at = op->operands.use_at_[i];
  Use last = uses.back();
  uses[at] = last;
  last.user->operands.use_at_[last.operand] = at;
  uses.pop_back();
}

void Function::set_operands(Op* op, std::vector<Value*> operands) {
  if (!op->operands.empty()) throw Error("internal: set_operands on an op that has operands");
  op->operands.values_ = std::move(operands);
  op->operands.use_at_.resize(op->operands.values_.size());
  for (size_t i = 0; i < op->operands.values_.size(); ++i) {
    Value* v = op->operands.values_[i];
    if (!v) throw Error(fmt::format("internal: null operand {} of '{}'", i, op_name(op->kind)));
    op->operands.use_at_[i] = static_cast<uint32_t>(v->uses_.size());
    v->uses_.push_back(Use{op, static_cast<uint32_t>(i)});
  }
}

void Function::add_operand(Op* op, Value* v) {
  if (!v) throw Error(fmt::format("internal: null operand added to '{}'", op_name(op->kind)));
  uint32_t i = static_cast<uint32_t>(op->operands.values_.size());
  op->operands.values_.push_back(v);
  op->operands.use_at_.push_back(static_cast<uint32_t>(v->uses_.size()));
  v->uses_.push_back(Use{op, i});
}

void Function::set_operand(Op* op, size_t i, Value* v) {
  if (!v) throw Error(fmt::format("internal: null operand {} set on '{}'", i, op_name(op->kind)));
  if (i >= op->operands.values_.size())
    throw Error(fmt::format("internal: operand {} of '{}' does not exist", i, op_name(op->kind)));
  if (op->operands.values_[i] == v) return;
  unlink_use(op, i);
  op->operands.values_[i] = v;
  op->operands.use_at_[i] = static_cast<uint32_t>(v->uses_.size());
  v->uses_.push_back(Use{op, static_cast<uint32_t>(i)});
}

void Function::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  for (const Use& u : from->uses_) {
    u.user->operands.values_[u.operand] = to;
    u.user->operands.use_at_[u.operand] = static_cast<uint32_t>(to->uses_.size());
    to->uses_.push_back(u);
  }
  from->uses_.clear();
}

void Function::release_uses(Op* op) {
  // Iterative over nested regions: their depth is the user's.
  std::vector<Op*> pending{op};
  while (!pending.empty()) {
    Op* o = pending.back();
    pending.pop_back();
    for (size_t i = o->operands.values_.size(); i-- > 0;)
      unlink_use(o, i);
    o->operands.values_.clear();
    o->operands.use_at_.clear();
    for (Block* r : o->regions) pending.insert(pending.end(), r->ops.begin(), r->ops.end());
  }
}

void Function::renumber() {
  int next = 0;
  auto number_block = [&](auto& self, Block* b) -> void {
    for (Value* a : b->args) a->id = next++;
    for (Op* op : b->ops) {
      for (Value* r : op->results) r->id = next++;
      for (Block* r : op->regions) self(self, r);
    }
  };
  number_block(number_block, body);
}

void Builder::set_insertion_before(Op* op) {
  block_ = op->parent;
  auto it = std::find(block_->ops.begin(), block_->ops.end(), op);
  pos_ = it - block_->ops.begin();
}

Op* Builder::create(OpKind kind, std::vector<Value*> operands, std::vector<Type> result_types, Attrs attrs) {
  Op* op = f_.new_op(kind, loc);
  f_.set_operands(op, std::move(operands));
  op->attrs = std::move(attrs);
  for (size_t i = 0; i < result_types.size(); ++i) {
    Value* v = f_.new_value(result_types[i]);
    v->def = op;
    v->index = static_cast<int>(i);
    op->results.push_back(v);
  }
  op->parent = block_;
  if (pos_ < 0) {
    block_->ops.push_back(op);
  } else {
    block_->ops.insert(block_->ops.begin() + pos_, op);
    ++pos_;
  }
  return op;
}

Value* Builder::constant_int(int64_t v, const Type& t) {
  Attrs a;
  a.ival = v;
  return create1(OpKind::Constant, {}, t, a);
}

Value* Builder::constant_float(double v, const Type& t) {
  Attrs a;
  a.fval = v;
  return create1(OpKind::Constant, {}, t, a);
}

}  // namespace tritium::ir
