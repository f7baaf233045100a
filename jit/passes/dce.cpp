#include "jit/passes/dce.h"

namespace tritium::jit {
namespace {

using ir::Op;

bool has_effects(const Op& op) {
  if (ir::has_side_effects(op.kind) || op.kind == ir::OpKind::Yield) return true;
  for (const ir::Block* r : op.regions)
    for (const Op* inner : r->ops)
      if (inner->kind != ir::OpKind::Yield && has_effects(*inner)) return true;
  return false;
}

bool unused(const Op& op) {
  for (const ir::Value* r : op.results)
    if (r->has_uses()) return false;
  return true;
}

// One backward sweep per block removes whole chains: an op's uses are released as it goes, so
// the ops feeding only it are unused by the time the sweep reaches them.
bool sweep(ir::Function& f, ir::Block* b) {
  bool changed = false;
  std::vector<Op*> kept;
  for (auto it = b->ops.rbegin(); it != b->ops.rend(); ++it) {
    Op* op = *it;
    for (ir::Block* r : op->regions) changed |= sweep(f, r);
    if (unused(*op) && !has_effects(*op)) {
      f.release_uses(op);
      changed = true;
      continue;
    }
    kept.push_back(op);
  }
  if (changed) b->ops.assign(kept.rbegin(), kept.rend());
  return changed;
}

}  // namespace

bool eliminate_dead_code(ir::Function& f) {
  bool changed = false;
  // Repeat in case a region's sweep freed an op before its region.
  while (sweep(f, f.body)) changed = true;
  return changed;
}

}  // namespace tritium::jit
