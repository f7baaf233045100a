// Which block values a backend materialises in a buffer and which it evaluates inline, fused
// into the loop nest of their consumer (docs/cpu-backend.md, "Block values"). Shared by the CPU
// and CUDA code generators.
#pragma once
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace tritium::jit {

class BlockPlan {
 public:
  // Block results that get a buffer: results of reduce/scan/dot/atomics/for/if, dot operands,
  // loads used more than once, after a side effect or in another region, and values used several
  // times or in another region unless cheap to recompute (index arithmetic without loads).
  bool materialized(const ir::Value* v) const;
  // The ops that use v (nested regions included).
  const std::vector<ir::Op*>& users(const ir::Value* v) const;

 private:
  friend BlockPlan plan_blocks(ir::Function& f);
  std::unordered_map<const ir::Value*, bool> materialize_;
  std::unordered_map<const ir::Value*, std::vector<ir::Op*>> users_;
};

BlockPlan plan_blocks(ir::Function& f);

}  // namespace tritium::jit
