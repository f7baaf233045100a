// When the element-loop generator emits __syncthreads (docs/cuda-backend.md, "Loop nests"): after
// shared-memory writes, and after global stores or atomics before a read that may see them (by the
// kernel parameter each pointer comes from: different parameters are different memory).
//
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

void Codegen::sync() {
  if (!synced_) line("__syncthreads();");
  synced_ = true;
  clean();
}

void Codegen::clean() {
  global_dirty_ = false;
  dirty_roots_.clear();
  dirty_unknown_ = false;
}

void Codegen::mark_global_write(const ir::Value* ptr) {
  global_dirty_ = true;
  if (const ir::Value* r = pointer_root(ptr)) dirty_roots_.push_back(r);
  else dirty_unknown_ = true;
}

bool Codegen::may_read_written(const ir::Value* ptr) const {
  if (!global_dirty_) return false;
  if (dirty_unknown_) return true;
  const ir::Value* r = pointer_root(ptr);
  return !r || std::find(dirty_roots_.begin(), dirty_roots_.end(), r) != dirty_roots_.end();
}

bool Codegen::reads_global(const std::vector<const ir::Value*>& vs) {
  for (const ir::Value* v : vs) {
    if (v->type.is_scalar() || buffers_.count(v) || regs_.count(v) || !v->def) continue;
    if (v->def->kind == OpKind::Load && may_read_written(v->def->operand(0))) return true;
    std::vector<const ir::Value*> ops(v->def->operands.begin(), v->def->operands.end());
    if (reads_global(ops)) return true;
  }
  return false;
}

void Codegen::sync_if_reading(const std::vector<const ir::Value*>& vs) {
  if (global_dirty_ && reads_global(vs)) sync_after_global_writes();
}

void Codegen::sync_after_global_writes() {
  if (global_dirty_) line("__syncthreads();  // the global writes above are visible below");
  synced_ = true;
  clean();
}

const ir::Value* Codegen::pointer_root(const ir::Value* v) {
  while (v) {
    if (v->is_block_arg()) return v->owner->parent == nullptr ? v : nullptr;
    const ir::Op* d = v->def;
    switch (d->kind) {
      case OpKind::AddPtr: case OpKind::Splat: case OpKind::Broadcast: case OpKind::ExpandDims:
      case OpKind::MultipleOf: case OpKind::MaxContiguous: case OpKind::Reshape: case OpKind::Permute:
        v = d->operand(0);
        break;
      default: return nullptr;
    }
  }
  return nullptr;
}

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
