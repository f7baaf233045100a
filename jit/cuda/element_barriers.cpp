// When the element-loop generator emits __syncthreads (docs/cuda-backend.md, "Loop nests"): after
// shared-memory writes, and after global stores or atomics before a read that may see them (by the
// kernel parameter each pointer comes from: different parameters are different memory).
//
// Pending global writes across an if (Codegen::emit_if). An if used to end in a barrier always;
// tl::return_() inside tl::if_ (traced into a flag and an if around the rest) then cost two
// barriers a program where Triton exits (grpo_loss's backward: 3 barriers a program against
// Triton's 1; silu_mul_quant_fp8: 2 of its 6). Now a barrier follows an if only when a side wrote
// shared memory not yet behind a barrier of its own (s46: every writer ends in one, so this is
// rare) or a block result; its global writes stay pending, so a later read through the
// same parameter still gets its barrier (Codegen::sync_if_reading). The two sides run on
// different paths: each starts from the state before the if, and afterwards the writes of both
// are pending (a barrier on one side covers that side only).
#include "jit/cuda/codegen_impl.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace tritium::jit::cuda::detail {

void Codegen::sync() {
  if (!synced_) line("__syncthreads();");
  synced_ = true;
  shared_writes_synced_ = shared_writes_;
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
  shared_writes_synced_ = shared_writes_;
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

namespace {

// An integer offset or pointer of a loop trip as iv * coef + sum(factor * scalar) + [lo, hi]:
// the scalars are the same in every trip (kernel parameters, program ids, values computed from
// them), [lo, hi] what constants and aranges add.
struct Affine {
  const ir::Value* root = nullptr;  // a pointer's kernel parameter
  int64_t coef = 0, lo = 0, hi = 0;
  std::map<const ir::Value*, int64_t> terms;
};

constexpr int64_t kAffineLimit = int64_t{1} << 40;  // factors and bounds beyond: give up

bool inside(const ir::Op* d, const ir::Block* body) {
  for (const ir::Block* b = d->parent; b; b = b->parent ? b->parent->parent : nullptr)
    if (b == body) return true;
  return false;
}

// Whether `v` has one value in every trip: defined before the loop, or pure arithmetic on such.
bool trip_invariant(const ir::Value* v, const ir::Block* body, int depth) {
  if (depth > 32) return false;
  if (v->is_block_arg()) return v->owner->parent == nullptr;
  if (!inside(v->def, body)) return true;
  const ir::Op* d = v->def;
  if (!(d->kind == OpKind::Constant || d->kind == OpKind::ProgramId || ir::is_elementwise(d->kind)) ||
      d->kind == OpKind::Load)
    return false;
  for (const ir::Value* o : d->operands)
    if (!trip_invariant(o, body, depth + 1)) return false;
  return true;
}

bool affine(const ir::Value* v, const ir::Block* body, int64_t scale, Affine& a, int depth) {
  if (depth > 32 || scale == 0 || scale > kAffineLimit || scale < -kAffineLimit) return false;
  auto add_range = [&](int64_t from, int64_t to) {
    if (std::max(std::abs(from), std::abs(to)) > kAffineLimit) return false;
    a.lo += std::min(scale * from, scale * to);
    a.hi += std::max(scale * from, scale * to);
    return true;
  };
  if (v->is_block_arg()) {
    if (v == body->args[0]) return a.coef += scale, true;
    if (v->owner->parent != nullptr) return false;  // another loop's variable, a carried value
    if (v->type.is_ptr()) {
      if (a.root || scale != 1) return false;
      a.root = v;
      return true;
    }
    return a.terms[v] += scale, true;
  }
  const ir::Op* d = v->def;
  switch (d->kind) {
    case OpKind::Constant:
      return !is_float(v->type.dtype) && add_range(d->attrs.ival, d->attrs.ival);
    case OpKind::Arange:
      return d->attrs.ints.size() == 2 && add_range(d->attrs.ints[0], d->attrs.ints[1] - 1);
    case OpKind::Splat: case OpKind::Broadcast: case OpKind::ExpandDims: case OpKind::MultipleOf:
    case OpKind::MaxContiguous:
      return affine(d->operand(0), body, scale, a, depth + 1);
    case OpKind::AddPtr:
      return affine(d->operand(0), body, scale, a, depth + 1) && affine(d->operand(1), body, scale, a, depth + 1);
    case OpKind::Add:
      if (is_float(v->type.dtype)) return false;
      return affine(d->operand(0), body, scale, a, depth + 1) && affine(d->operand(1), body, scale, a, depth + 1);
    case OpKind::Sub:
      if (is_float(v->type.dtype)) return false;
      return affine(d->operand(0), body, scale, a, depth + 1) && affine(d->operand(1), body, -scale, a, depth + 1);
    case OpKind::Mul:
      if (is_float(v->type.dtype)) return false;
      for (int i = 0; i < 2; ++i)
        if (const ir::Op* c = d->operand(i)->def; c && c->kind == OpKind::Constant)
          return affine(d->operand(1 - i), body, scale * c->attrs.ival, a, depth + 1);
      break;
    case OpKind::Cast:  // an integer widened (i32 offsets to i64)
      if (is_int(v->type.dtype) && is_int(d->operand(0)->type.dtype) &&
          dtype_bytes(v->type.dtype) >= dtype_bytes(d->operand(0)->type.dtype))
        return affine(d->operand(0), body, scale, a, depth + 1);
      return false;
    default: break;
  }
  if (!v->type.is_scalar() || v->type.is_ptr() || is_float(v->type.dtype) || !trip_invariant(v, body, depth)) return false;
  return a.terms[v] += scale, true;
}

}  // namespace

bool Codegen::trips_touch_disjoint_memory(const ir::Op* loop, const ir::Value* root) {
  const ir::Block* body = loop->regions[0];
  const ir::Op* step = loop->operand(2)->def;
  if (!step || step->kind != OpKind::Constant || step->attrs.ival == 0) return false;
  bool ok = true, first = true;
  Affine all;
  auto check = [&](ir::Op* op) {
    if (!ok || !(op->kind == OpKind::Load || op->kind == OpKind::Store || is_atomic(op->kind))) return;
    if (pointer_root(op->operand(0)) != root) return;
    Affine a;
    if (!affine(op->operand(0), body, 1, a, 0) || a.root != root || a.coef == 0) return void(ok = false);
    std::erase_if(a.terms, [](const auto& t) { return t.second == 0; });
    if (first) {
      all = a;
      first = false;
      return;
    }
    if (a.coef != all.coef || a.terms != all.terms) return void(ok = false);
    all.lo = std::min(all.lo, a.lo);
    all.hi = std::max(all.hi, a.hi);
  };
  ir::Function::walk_block(const_cast<ir::Block*>(body), check);
  if (!ok || first) return false;
  // One trip's window is [lo, hi] past iv * coef; the next one's starts coef * step further.
  const int64_t distance = std::abs(all.coef) * std::abs(step->attrs.ival);
  return distance <= kAffineLimit && all.hi - all.lo < distance;
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
