#include "jit/passes/combine_dot_add.h"

#include <utility>
#include <vector>

#include "jit/passes/zero_constant.h"

namespace tritium::jit {
using ir::OpKind;

bool combine_dot_add(ir::Function& f) {
  std::vector<std::pair<ir::Op*, int>> found;  // (add, the side its dot is on)
  f.walk([&](ir::Op* op) {
    if (op->kind != OpKind::Add) return;
    for (int side = 0; side < 2; ++side) {
      ir::Value* d = op->operands[static_cast<size_t>(side)];
      const ir::Value* acc = op->operands[static_cast<size_t>(1 - side)];
      const ir::Op* dot = d->def;
      if (dot && dot->kind == OpKind::Dot && d->uses().size() == 1 && is_zero_constant(dot->operand(2)) &&
          dot->parent == op->parent && acc->type == d->type) {
        found.push_back({op, side});
        return;
      }
    }
  });
  for (auto [op, side] : found) {
    ir::Value* d = op->operands[static_cast<size_t>(side)];
    ir::Op* dot = d->def;
    // The dot moves to the add's place (the accumulator may be defined between them) and takes
    // over the add's uses.
    ir::Block* b = op->parent;
    std::erase(b->ops, dot);
    f.set_operand(dot, 2, op->operands[static_cast<size_t>(1 - side)]);
    for (auto& o : b->ops)
      if (o == op) o = dot;
    f.release_uses(op);
    f.replace_all_uses(op->result(), d);
  }
  const bool changed = !found.empty();
  return changed;
}

}  // namespace tritium::jit
