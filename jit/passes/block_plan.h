// Which block values a backend materialises in a buffer and which it evaluates inline, fused
// into the loop nest of their consumer (docs/cpu-backend.md, "Block values"). Shared by the CPU
// and CUDA code generators.
#pragma once
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace tritium::jit {

struct PlanOptions {
  // A value used several times whose uses all end in one consumer (e.g. the Philox rounds that
  // feed one store) stays inline: for a generator that evaluates each inline value once per
  // element and loop nest (the CUDA one memoises), it is then computed once, in registers,
  // instead of going through a buffer.
  bool fuse_single_root = false;
  // With fuse_single_root: a run of stores of one block shape in one block, with only pure,
  // memory-free ops between them, is one consumer (a *store group*) that the generator evaluates
  // in one loop nest, every element's values before any of its stores. Values, loads included,
  // whose uses all end in the group are then computed once per element, in registers, instead of
  // as whole blocks (Liger's swiglu backward: dc, a * gate and sigmoid shared by da and db).
  bool fuse_store_groups = false;
};

class BlockPlan {
 public:
  // Block results that get a buffer: results of reduce/scan/dot/atomics/for/if, dot operands,
  // loads used more than once, after a side effect or in another region, and values used several
  // times or in another region unless cheap to recompute (index arithmetic without loads) or,
  // with fuse_single_root, all their uses end in one consumer.
  bool materialized(const ir::Value* v) const;
  // The ops that use v (nested regions included).
  const std::vector<ir::Op*>& users(const ir::Value* v) const;
  // The store group `store` starts, in program order (nullptr: not the first store of a group of
  // two or more). Only with fuse_store_groups.
  const std::vector<const ir::Op*>* store_group(const ir::Op* store) const;
  // Whether `store` belongs to a group of two or more (emitted with the group's first store).
  bool in_store_group(const ir::Op* store) const { return group_of_.count(store) > 0; }

 private:
  friend BlockPlan plan_blocks(ir::Function& f, const PlanOptions& options);
  std::unordered_map<const ir::Value*, bool> materialize_;
  std::unordered_map<const ir::Value*, std::vector<ir::Op*>> users_;
  std::unordered_map<const ir::Op*, const ir::Op*> group_of_;  // store -> its group's first store
  std::unordered_map<const ir::Op*, std::vector<const ir::Op*>> groups_;  // first store -> group
};

BlockPlan plan_blocks(ir::Function& f, const PlanOptions& options = {});

}  // namespace tritium::jit
