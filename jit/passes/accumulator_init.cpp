#include "jit/passes/accumulator_init.h"

#include <vector>

#include "ir/builder.h"
#include "jit/passes/zero_constant.h"

namespace tritium::jit {
using ir::OpKind;

namespace {

void erase_op(ir::Function& f, ir::Op* op) {
  f.release_uses(op);
  std::erase(op->parent->ops, op);
}

}  // namespace

bool use_accumulator_flags(ir::Function& f) {
  std::vector<ir::Op*> dots;
  f.walk([&](ir::Op* op) {
    if (op->kind != OpKind::Dot || op->operands.size() != 3) return;
    const ir::Value* acc = op->operand(2);
    const ir::Op* sel = acc->def;
    if (!sel || sel->kind != OpKind::Select || acc->uses().size() != 1) return;
    const ir::Op* cond = sel->operand(0)->def;  // a scalar condition, splat over the block
    if (!cond || cond->kind != OpKind::Splat || !cond->operand(0)->type.is_scalar()) return;
    if (is_zero_constant(sel->operand(1)) != is_zero_constant(sel->operand(2))) dots.push_back(op);
  });
  for (ir::Op* dot : dots) {
    ir::Op* sel = dot->operand(2)->def;
    ir::Op* splat = sel->operand(0)->def;
    ir::Value* c = splat->operand(0);
    const bool zero_when_true = is_zero_constant(sel->operand(1));
    ir::Builder b(f);
    b.set_insertion_before(dot);
    b.loc = dot->loc;
    ir::Value* use = c;
    if (zero_when_true) {
      ir::Value* no = b.constant_int(0, ir::Type::scalar(DType::i1));
      use = b.create1(OpKind::CmpEq, {c, no}, ir::Type::scalar(DType::i1));
    }
    f.set_operand(dot, 2, sel->operand(zero_when_true ? 2 : 1));
    f.add_operand(dot, use);
    erase_op(f, sel);
    if (!splat->result()->has_uses()) erase_op(f, splat);
  }
  return !dots.empty();
}

}  // namespace tritium::jit
