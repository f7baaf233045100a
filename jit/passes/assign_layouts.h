// The GPU layout pass (docs/cuda-backend.md, "Layouts"), after Triton's TritonGPU conversion,
// Coalesce, AccelerateMatmul and RemoveLayoutConversions passes: every block value of a kernel gets
// one layout (jit/layouts/layout.h) that says which thread holds which of its elements.
//
// Anchors decide: loads and stores get a blocked layout whose threads read 16-byte runs along the
// pointer's most contiguous dim (axis info); a dot's result gets a tensor-core accumulator layout
// (wgmma on Hopper, mma.sync on sm_80+) and its operands a shared-memory tile (loaded values) or a
// register fragment (values computed in registers, such as attention's P); reductions give the
// slice of their operand's layout. Layouts flow forward from the anchors through elementwise ops,
// views (broadcast, expand_dims, permute, reshape), loop-carried values and `if` results. Then each
// use states the layout it needs, walking backwards: cheap values (constants, aranges, index
// arithmetic, views) are recomputed in each layout their uses need (the op is cloned), so a
// conversion only ever moves a loaded or computed value, at its definition (hoisted out of the
// loops it is used in), through an explicit `convert_layout` op.
#pragma once
#include <optional>
#include <string>
#include <unordered_map>

#include "ir/ir.h"
#include "jit/layouts/layout.h"
#include "jit/passes/axis_info.h"

namespace tritium::jit {

struct LayoutOptions {
  int num_warps = 4;
  int compute_capability = 90;  // 90: wgmma; 80+: mma.sync; below: no tensor cores
};

class LayoutMap {
 public:
  // The layout of a block value (a tritium::Error for a value the pass never saw).
  const Layout& of(const ir::Value* v) const;
  bool has(const ir::Value* v) const { return layouts_.count(v) > 0; }
  void set(const ir::Value* v, Layout l) { layouts_[v] = std::move(l); }
  // The IR with each block value's layout after its type (TRITIUM_DUMP's "layouts" file).
  std::string annotated(ir::Function& f) const;

 private:
  std::unordered_map<const ir::Value*, Layout> layouts_;
};

// Assigns layouts to every block value of `f` (which it changes: convert_layout ops and clones of
// cheap values). `axis` must describe `f` as it is given; the caller analyses the result again for
// the new values.
LayoutMap assign_layouts(ir::Function& f, const AxisInfoMap& axis, const LayoutOptions& opts);

// Checks that every op sees its operands in the layouts it lowers from (elementwise ops: all alike;
// views: the transformed layout; dots: the accumulator and operand layouts; loops: the carried
// layout at init, yield and result); a tritium::Error naming the op otherwise.
void verify_layouts(ir::Function& f, const LayoutMap& layouts);

// The tensor-core tiling the pass gives a dot (nothing for the FMA loop), for the lowering.
std::optional<MmaParams> dot_mma_params(const ir::Op* dot, int num_warps, int compute_capability, bool chained);

}  // namespace tritium::jit
