#include "jit/passes/dce.h"

#include <unordered_map>

namespace tritium::jit {
namespace {

using ir::Op;
using ir::Value;

bool has_effects(const Op& op) {
  if (ir::has_side_effects(op.kind) || op.kind == ir::OpKind::Yield) return true;
  for (const ir::Block* r : op.regions)
    for (const Op* inner : r->ops)
      if (inner->kind != ir::OpKind::Yield && has_effects(*inner)) return true;
  return false;
}

class Eliminator {
 public:
  explicit Eliminator(ir::Function& f) : f_(f) {}

  bool run() {
    f_.walk([&](Op* op) { count_uses(*op, +1); });
    bool changed = false;
    // One backward sweep removes whole chains; repeat in case a region's sweep freed an earlier op.
    while (sweep(f_.body)) changed = true;
    return changed;
  }

 private:
  void count_uses(const Op& op, int delta) {
    for (const Value* v : op.operands) uses_[v] += delta;
  }

  // Forgets the uses made by `op` and everything nested in it.
  void drop_uses(const Op& op) {
    count_uses(op, -1);
    for (const ir::Block* r : op.regions)
      for (const Op* inner : r->ops) drop_uses(*inner);
  }

  bool unused(const Op& op) const {
    for (const Value* r : op.results) {
      auto it = uses_.find(r);
      if (it != uses_.end() && it->second > 0) return false;
    }
    return true;
  }

  bool sweep(ir::Block* b) {
    bool changed = false;
    std::vector<Op*> kept;
    for (auto it = b->ops.rbegin(); it != b->ops.rend(); ++it) {
      Op* op = *it;
      for (ir::Block* r : op->regions) changed |= sweep(r);
      if (unused(*op) && !has_effects(*op)) {
        drop_uses(*op);
        changed = true;
        continue;
      }
      kept.push_back(op);
    }
    if (changed) b->ops.assign(kept.rbegin(), kept.rend());
    return changed;
  }

  ir::Function& f_;
  std::unordered_map<const Value*, int> uses_;
};

}  // namespace

bool eliminate_dead_code(ir::Function& f) { return Eliminator(f).run(); }

}  // namespace tritium::jit
