// Pending global writes across an if (Codegen::emit_if). An if used to end in a barrier always;
// tl::return_() inside tl::if_ (traced into a flag and an if around the rest) then cost two
// barriers a program where Triton exits (grpo_loss's backward: 3 barriers a program against
// Triton's 1; silu_mul_quant_fp8: 2 of its 6). Now a barrier follows an if only when a side wrote
// shared memory or a block result; its global writes stay pending, so a later read through the
// same parameter still gets its barrier (Codegen::sync_if_reading). The two sides run on
// different paths: each starts from the state before the if, and afterwards the writes of both
// are pending (a barrier on one side covers that side only).
#include "jit/cuda/codegen_impl.h"

#include <algorithm>

namespace tritium::jit::cuda::detail {

Codegen::DirtyState Codegen::dirty_state() const { return {global_dirty_, dirty_unknown_, dirty_roots_}; }

void Codegen::set_dirty_state(const DirtyState& s) {
  global_dirty_ = s.dirty;
  dirty_unknown_ = s.unknown;
  dirty_roots_ = s.roots;
}

void Codegen::merge_dirty_state(const DirtyState& s) {
  global_dirty_ = global_dirty_ || s.dirty;
  dirty_unknown_ = dirty_unknown_ || s.unknown;
  for (const ir::Value* r : s.roots)
    if (std::find(dirty_roots_.begin(), dirty_roots_.end(), r) == dirty_roots_.end()) dirty_roots_.push_back(r);
}

}  // namespace tritium::jit::cuda::detail
