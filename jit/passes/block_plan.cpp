// The block plan: which block values are materialised (computed once, in program order, into a
// buffer) and which are evaluated inline in the loop nest of the op that consumes them. Both
// code generators follow it, so the CPU and GPU backends fuse the same way.
#include "jit/passes/block_plan.h"

namespace tritium::jit {
namespace {

using ir::OpKind;

bool is_atomic(OpKind k) { return k >= OpKind::AtomicAdd && k <= OpKind::AtomicCas; }
bool is_side_effect(const ir::Op* op) { return ir::has_side_effects(op->kind); }

struct Planner {
  ir::Function& f_;
  std::unordered_map<const ir::Value*, bool>& materialize_;
  std::unordered_map<const ir::Value*, std::vector<ir::Op*>>& users_;
  std::unordered_map<const ir::Value*, int> cheap_size_;  // memo: tree size if cheap, -1 if not
  PlanOptions options_;
  std::unordered_map<const ir::Value*, const ir::Op*> root_;  // memo of single_root
  std::unordered_map<const ir::Value*, bool> reads_;          // memo of reads_memory

  void plan() {
    f_.walk([&](ir::Op* op) {
      for (ir::Value* o : op->operands) users_[o].push_back(op);
    });
    f_.walk([&](ir::Op* op) {
      for (ir::Value* r : op->results)
        if (r->type.is_block()) materialize_[r] = decide(op, r);
      if (op->kind == OpKind::Dot)  // dot reads its operands M*N*K times
        for (int i = 0; i < 2; ++i)
          if (ir::Value* v = op->operands[i]; v->def && v->type.is_block()) materialize_[v] = true;
    });
  }

  bool used_elsewhere(const ir::Value* v, const ir::Block* home) {
    for (ir::Op* u : users_[v])
      if (u->parent != home) return true;
    return false;
  }

  bool decide(ir::Op* op, ir::Value* r) {
    switch (op->kind) {
      case OpKind::Reduce: case OpKind::Scan: case OpKind::Dot: case OpKind::For: case OpKind::If: case OpKind::While:
        return true;
      default: break;
    }
    if (is_atomic(op->kind)) return true;
    auto& us = users_[r];
    if (op->kind == OpKind::Load) {
      if (us.size() != 1 || used_elsewhere(r, op->parent)) return true;
      return load_hazard(op);
    }
    if (us.size() > 1 || used_elsewhere(r, op->parent)) {
      // Only pure computation (no load inside: a buffer's own pass moves 16 bytes per access,
      // which a consumer's loop may not), and not when the consumer is a reduction, scan or dot.
      if (options_.fuse_single_root && !used_elsewhere(r, op->parent) && !reads_memory(r))
        if (const ir::Op* root = single_root(r);
            root && root->kind != OpKind::Reduce && root->kind != OpKind::Scan && root->kind != OpKind::Dot)
          return false;
      return cheap(r) < 0;
    }
    return false;
  }

  // Whether evaluating v inline loads from memory (a load not materialised in its tree).
  bool reads_memory(const ir::Value* v) {
    if (v->type.is_scalar() || v->is_block_arg()) return false;
    if (auto it = materialize_.find(v); it != materialize_.end() && it->second) return false;
    if (auto it = reads_.find(v); it != reads_.end()) return it->second;
    bool r = v->def->kind == OpKind::Load;
    if (!r)
      for (const ir::Value* o : v->def->operands)
        if (reads_memory(o)) {
          r = true;
          break;
        }
    reads_[v] = r;
    return r;
  }

  static bool is_chain(const ir::Op* u) {
    return (ir::is_elementwise(u->kind) || u->kind == OpKind::Broadcast || u->kind == OpKind::ExpandDims ||
            u->kind == OpKind::Permute || u->kind == OpKind::Reshape || u->kind == OpKind::MultipleOf ||
            u->kind == OpKind::MaxContiguous) &&
           u->results.size() == 1 && u->result()->type.is_block();
  }

  // The one op, in v's block, where every chain of inline users of v ends (nullptr: several, or
  // a use in another block).
  const ir::Op* single_root(const ir::Value* v) {
    if (auto it = root_.find(v); it != root_.end()) return it->second;
    const ir::Op* root = nullptr;
    bool ok = true;
    for (ir::Op* u : users_[v]) {
      if (u->parent != v->def->parent) {
        ok = false;
        break;
      }
      const ir::Op* r = is_chain(u) ? single_root(u->result()) : u;
      if (!r || (root && r != root)) {
        ok = false;
        break;
      }
      root = r;
    }
    const ir::Op* out = ok ? root : nullptr;
    root_[v] = out;
    return out;
  }

  // An inline load is evaluated where its single chain of users ends; a side effect between the
  // two (a store to the same memory, maybe) forces the load to happen at its own place.
  bool load_hazard(ir::Op* load) {
    const ir::Block* block = load->parent;
    ir::Value* v = load->result();
    ir::Op* root = nullptr;
    while (true) {
      auto& us = users_[v];
      if (us.size() != 1) return true;
      ir::Op* u = us[0];
      if (u->parent != block) return true;
      bool chains = (ir::is_elementwise(u->kind) || u->kind == OpKind::Broadcast || u->kind == OpKind::ExpandDims ||
                     u->kind == OpKind::Permute || u->kind == OpKind::Reshape || u->kind == OpKind::MultipleOf ||
                     u->kind == OpKind::MaxContiguous) &&
                    u->results.size() == 1 && u->result()->type.is_block();
      if (!chains) {
        root = u;
        break;
      }
      v = u->result();
      if (users_[v].size() != 1) {  // materialised here (it holds a load, so it is not cheap)
        root = u;
        break;
      }
    }
    if (root->kind == OpKind::Dot) return true;
    bool between = false;
    for (ir::Op* op : block->ops) {
      if (op == load) between = true;
      else if (op == root) return false;
      else if (between && (is_side_effect(op) || op->kind == OpKind::For || op->kind == OpKind::If ||
                           op->kind == OpKind::While))
        return true;
    }
    return true;
  }

  // Tree size of a value cheap enough to recompute at every use, or -1.
  int cheap(const ir::Value* v) {
    if (v->type.is_scalar() || v->is_block_arg()) return 0;
    if (auto it = materialize_.find(v); it != materialize_.end() && it->second) return 0;
    if (auto it = cheap_size_.find(v); it != cheap_size_.end()) return it->second;
    const ir::Op* op = v->def;
    int size = -1;
    switch (op->kind) {
      case OpKind::Constant: case OpKind::Arange: case OpKind::Splat: size = 1; break;
      case OpKind::Broadcast: case OpKind::ExpandDims: case OpKind::Permute: case OpKind::Reshape:
      case OpKind::MultipleOf: case OpKind::MaxContiguous: case OpKind::Add: case OpKind::Sub: case OpKind::Mul:
      case OpKind::And: case OpKind::Or: case OpKind::Xor: case OpKind::Shl: case OpKind::Shr:
      case OpKind::CmpEq: case OpKind::CmpNe: case OpKind::CmpLt: case OpKind::CmpLe: case OpKind::CmpGt:
      case OpKind::CmpGe: case OpKind::Select: case OpKind::AddPtr: case OpKind::Cast: case OpKind::Bitcast:
      case OpKind::Min: case OpKind::Max: case OpKind::Neg: case OpKind::Not: {
        size = 1;
        for (ir::Value* o : op->operands) {
          int s = cheap(o);
          if (s < 0) {
            size = -1;
            break;
          }
          size += s;
        }
        if (size > 24) size = -1;
        break;
      }
      default: size = -1;
    }
    cheap_size_[v] = size;
    return size;
  }

};

}  // namespace

bool BlockPlan::materialized(const ir::Value* v) const {
  auto it = materialize_.find(v);
  return it != materialize_.end() && it->second;
}

const std::vector<ir::Op*>& BlockPlan::users(const ir::Value* v) const {
  static const std::vector<ir::Op*> none;
  auto it = users_.find(v);
  return it == users_.end() ? none : it->second;
}

BlockPlan plan_blocks(ir::Function& f, const PlanOptions& options) {
  BlockPlan plan;
  Planner{f, plan.materialize_, plan.users_, {}, options, {}, {}}.plan();
  return plan;
}

}  // namespace tritium::jit
