// The block plan: which block values are materialised (computed once, in program order, into a
// buffer) and which are evaluated inline in the loop nest of the op that consumes them. Both
// code generators follow it, so the CPU and GPU backends fuse the same way.
#include "jit/passes/block_plan.h"

#include <algorithm>

namespace tritium::jit {
namespace {

using ir::OpKind;

bool is_atomic(OpKind k) { return k >= OpKind::AtomicAdd && k <= OpKind::AtomicCas; }
bool is_side_effect(const ir::Op* op) { return ir::has_side_effects(op->kind); }

// The longest chain of inline values a consumer evaluates: both code generators recurse once
// per link, and the user's C++ loops decide its length, so a longer chain gets a buffer here.
constexpr int kMaxInlineDepth = 1024;

struct Planner {
  ir::Function& f_;
  std::unordered_map<const ir::Value*, bool>& materialize_;
  std::unordered_map<const ir::Value*, std::vector<ir::Op*>>& users_;
  std::unordered_map<const ir::Op*, const ir::Op*>& group_of_;
  std::unordered_map<const ir::Op*, std::vector<const ir::Op*>>& groups_;
  std::unordered_map<const ir::Value*, int> cheap_size_;  // memo: tree size if cheap, -1 if not
  PlanOptions options_;
  std::unordered_map<const ir::Value*, const ir::Op*> root_;  // single_root of each block value
  std::unordered_map<const ir::Value*, bool> reads_;          // memo of reads_memory
  // Where a value's chain of single inline users ends (nullptr: several users or another block).
  std::unordered_map<const ir::Value*, ir::Op*> chain_end_;
  std::unordered_map<const ir::Op*, size_t> position_;  // index of each op in its block
  // Per block: barriers_[b][i] = side effects and run-time control flow among b->ops[0..i).
  std::unordered_map<const ir::Block*, std::vector<int>> barriers_;
  std::unordered_map<const ir::Value*, int> depth_;  // inline chain length ending at a value

  void plan() {
    f_.walk([&](ir::Op* op) {
      for (ir::Value* o : op->operands) users_[o].push_back(op);
    });
    index_block(f_.body);
    f_.walk([&](ir::Op* op) {
      for (ir::Value* r : op->results)
        if (r->type.is_block()) {
          bool m = decide(op, r);
          if (!m && inline_depth(r) > kMaxInlineDepth) m = true;
          materialize_[r] = m;
          depth_[r] = m ? 0 : inline_depth(r);
        }
      if (op->kind == OpKind::Dot)  // dot reads its operands M*N*K times
        for (int i = 0; i < 2; ++i)
          if (ir::Value* v = op->operands[i]; v->def && v->type.is_block()) materialize_[v] = true;
      if (op->kind == OpKind::Gather)  // read at data-dependent positions: from a buffer
        if (ir::Value* v = op->operands[0]; v->def && v->type.is_block()) materialize_[v] = true;
    });
  }

  // 1 + the longest inline chain among v's operands (decided already: they come first).
  int inline_depth(const ir::Value* v) {
    int d = 0;
    for (const ir::Value* o : v->def->operands)
      if (auto it = depth_.find(o); it != depth_.end()) d = std::max(d, it->second);
    return d + 1;
  }

  // Positions, barrier counts, chain ends and single roots of a block and the blocks nested in
  // it, from its last op to its first: every fact about a value follows from its users' facts,
  // found first, so no walk along a chain repeats and nothing recurses along one.
  void index_block(const ir::Block* b) {
    if (options_.fuse_single_root && options_.fuse_store_groups) find_store_groups(b);
    auto& barriers = barriers_[b];
    barriers.assign(b->ops.size() + 1, 0);
    for (size_t i = 0; i < b->ops.size(); ++i) {
      const ir::Op* op = b->ops[i];
      position_[op] = i;
      bool barrier = is_side_effect(op) || op->kind == OpKind::For || op->kind == OpKind::If || op->kind == OpKind::While;
      barriers[i + 1] = barriers[i] + (barrier ? 1 : 0);
    }
    for (size_t i = b->ops.size(); i-- > 0;) {
      const ir::Op* op = b->ops[i];
      for (const ir::Value* r : op->results) {
        chain_end_[r] = find_chain_end(r);
        if (options_.fuse_single_root) root_[r] = find_single_root(r);
      }
      for (const ir::Block* region : op->regions) index_block(region);
    }
  }

  ir::Op* find_chain_end(const ir::Value* v) {
    auto& us = users_[v];
    if (us.size() != 1 || us[0]->parent != v->def->parent) return nullptr;
    ir::Op* u = us[0];
    if (!is_chain(u) || users_[u->result()].size() != 1) return u;  // (u's result is materialised)
    return chain_end_[u->result()];
  }

  // Runs of block stores of one shape whose in-between ops are pure and read no memory (a load
  // there could read what the group's earlier stores wrote, which the group's loop would read
  // before them).
  void find_store_groups(const ir::Block* b) {
    std::vector<const ir::Op*> run;
    auto close = [&] {
      if (run.size() >= 2) {
        for (const ir::Op* s : run) group_of_[s] = run.front();
        groups_[run.front()] = run;
      }
      run.clear();
    };
    for (const ir::Op* op : b->ops) {
      if (op->kind == OpKind::Store && op->operand(0)->type.is_block()) {
        if (!run.empty() && run.front()->operand(0)->type.shape != op->operand(0)->type.shape) close();
        run.push_back(op);
        continue;
      }
      if (is_side_effect(op) || op->kind == OpKind::Load || !op->regions.empty()) close();
    }
    close();
  }

  // The store group's first store for a store of a group, else the op itself.
  const ir::Op* consumer(const ir::Op* u) const {
    auto it = group_of_.find(u);
    return it == group_of_.end() ? u : it->second;
  }

  // Whether every load v's inline evaluation would issue lies in `group`'s block with no side effect
  // or run-time control flow between it and the group's first store (where the group evaluates it).
  bool loads_reach(const ir::Value* v, const ir::Op* group) {
    if (v->type.is_scalar() || v->is_block_arg()) return true;
    if (auto it = materialize_.find(v); it != materialize_.end() && it->second) return true;
    const ir::Op* op = v->def;
    if (op->kind == OpKind::Load) {
      if (op->parent != group->parent) return false;
      const auto& barriers = barriers_[op->parent];
      if (barriers[position_[group]] - barriers[position_[op] + 1] > 0) return false;
    }
    for (const ir::Value* o : op->operands)
      if (!loads_reach(o, group)) return false;
    return true;
  }

  // The group `v`'s uses all end in, when it has two or more stores and v's loads reach it.
  const ir::Op* fused_store_group(const ir::Value* v) {
    const ir::Op* root = single_root(v);
    if (!root || !groups_.count(root) || used_elsewhere(v, v->def->parent)) return nullptr;
    return loads_reach(v, root) ? root : nullptr;
  }

  const ir::Op* find_single_root(const ir::Value* v) {
    const ir::Op* root = nullptr;
    for (ir::Op* u : users_[v]) {
      if (u->parent != v->def->parent) return nullptr;
      const ir::Op* r = is_chain(u) ? root_[u->result()] : consumer(u);
      if (!r || (root && r != root)) return nullptr;
      root = r;
    }
    return root;
  }

  bool used_elsewhere(const ir::Value* v, const ir::Block* home) {
    for (ir::Op* u : users_[v])
      if (u->parent != home) return true;
    return false;
  }

  bool decide(ir::Op* op, ir::Value* r) {
    switch (op->kind) {
      case OpKind::Reduce: case OpKind::Scan: case OpKind::Dot: case OpKind::For: case OpKind::If: case OpKind::While:
      case OpKind::Histogram: case OpKind::Gather: case OpKind::Split:
        return true;
      default: break;
    }
    if (is_atomic(op->kind)) return true;
    auto& us = users_[r];
    // Used several times, every use ending in one store group: evaluated once per element in the
    // group's loop (loads too: nothing between them and the group writes memory).
    if (us.size() > 1 && fused_store_group(r)) return false;
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
    auto it = root_.find(v);
    return it == root_.end() ? nullptr : it->second;
  }

  // An inline load is evaluated where its single chain of users ends; a side effect between the
  // two (a store to the same memory, maybe) forces the load to happen at its own place.
  bool load_hazard(ir::Op* load) {
    const ir::Op* root = chain_end_[load->result()];
    if (!root || root->kind == OpKind::Dot) return true;
    const auto& barriers = barriers_[load->parent];
    return barriers[position_[root]] - barriers[position_[load] + 1] > 0;
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

const std::vector<const ir::Op*>* BlockPlan::store_group(const ir::Op* store) const {
  auto it = groups_.find(store);
  return it == groups_.end() ? nullptr : &it->second;
}

const std::vector<ir::Op*>& BlockPlan::users(const ir::Value* v) const {
  static const std::vector<ir::Op*> none;
  auto it = users_.find(v);
  return it == users_.end() ? none : it->second;
}

BlockPlan plan_blocks(ir::Function& f, const PlanOptions& options) {
  BlockPlan plan;
  Planner planner{f, plan.materialize_, plan.users_, plan.group_of_, plan.groups_, {}, options, {}, {}, {}, {}, {}, {}};
  planner.plan();
  return plan;
}

}  // namespace tritium::jit
