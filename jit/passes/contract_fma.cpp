#include "jit/passes/contract_fma.h"

#include <algorithm>
#include <vector>

namespace tritium::jit {
using ir::OpKind;

namespace {

bool is_contractible_float(const ir::Value* v) { return v->type.dtype == DType::f32 || v->type.dtype == DType::f64; }

// The product `v` if it may be fused into `user`: a mul of the same type in the same block, all
// of whose uses are adds or subs there.
ir::Op* fusable_product(const ir::Value* v, const ir::Op* user) {
  ir::Op* mul = v->def;
  if (!mul || mul->kind != OpKind::Mul || mul->parent != user->parent || v->type != user->result()->type) return nullptr;
  for (const ir::Use& u : v->uses())
    if ((u.user->kind != OpKind::Add && u.user->kind != OpKind::Sub) || u.user->parent != user->parent) return nullptr;
  return mul;
}

ir::Value* insert_before(ir::Function& f, ir::Op* at, OpKind kind, std::vector<ir::Value*> operands) {
  ir::Op* op = f.new_op(kind, at->loc);
  ir::Value* r = f.add_result(op, at->result()->type);
  f.set_operands(op, std::move(operands));
  ir::Block* b = at->parent;
  op->parent = b;
  b->ops.insert(std::find(b->ops.begin(), b->ops.end(), at), op);
  return r;
}

}  // namespace

bool contract_multiply_add(ir::Function& f) {
  std::vector<ir::Op*> adds;
  f.walk([&](ir::Op* op) {
    if ((op->kind == OpKind::Add || op->kind == OpKind::Sub) && is_contractible_float(op->result())) adds.push_back(op);
  });
  bool changed = false;
  for (ir::Op* op : adds) {
    int side = -1;
    ir::Op* mul = nullptr;
    for (int s = 0; s < 2 && !mul; ++s)
      if ((mul = fusable_product(op->operand(static_cast<size_t>(s)), op))) side = s;
    if (!mul) continue;
    ir::Value* x = mul->operand(0);
    ir::Value* y = mul->operand(1);
    ir::Value* c = op->operand(static_cast<size_t>(1 - side));
    if (op->kind == OpKind::Sub && side == 0) c = insert_before(f, op, OpKind::Neg, {c});  // x*y - c
    if (op->kind == OpKind::Sub && side == 1) x = insert_before(f, op, OpKind::Neg, {x});  // c - x*y
    ir::Value* fma = insert_before(f, op, OpKind::Fma, {x, y, c});
    f.replace_all_uses(op->result(), fma);
    f.release_uses(op);
    std::erase(op->parent->ops, op);
    changed = true;
  }
  return changed;
}

}  // namespace tritium::jit
