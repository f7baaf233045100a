// Global memory in layouts: loads and stores move the registers that a layout keeps consecutive
// along the pointer's contiguous dim as one access of up to 16 bytes (the axis info proves the
// addresses contiguous and aligned), predicated when the mask is constant over them; atomics go
// element by element. A thread holding copies of elements (replicating lane or warp bits) leaves
// stores and atomics to the first copy's thread.
#include "jit/cuda/lowering/lowering.h"

#include "jit/cuda/cache_hints.h"

namespace tritium::jit::cuda::lowering {

const ir::Value* Lowering::pointer_root(const ir::Value* v) {
  while (v) {
    if (v->is_block_arg()) {
      const ir::Op* loop = v->owner->parent;
      if (!loop) return v;  // a kernel parameter
      // A pointer carried by a loop: where its init comes from (a carried pointer is advanced
      // from it by pointer arithmetic, which keeps the root).
      if (loop->kind != OpKind::For || v->index == 0) return nullptr;
      v = loop->operand(static_cast<size_t>(2 + v->index));
      continue;
    }
    const ir::Op* d = v->def;
    switch (d->kind) {
      case OpKind::AddPtr: case OpKind::Splat: case OpKind::Broadcast: case OpKind::ExpandDims:
      case OpKind::MultipleOf: case OpKind::MaxContiguous: case OpKind::Reshape: case OpKind::Permute:
      case OpKind::ConvertLayout:
        v = d->operand(0);
        break;
      default: return nullptr;
    }
  }
  return nullptr;
}

void Lowering::mark_global_write(const ir::Value* ptr) {
  global_dirty_ = true;
  synced_ = false;
  if (const ir::Value* r = pointer_root(ptr)) dirty_roots_.push_back(r);
  else dirty_unknown_ = true;
}

bool Lowering::may_read_written(const ir::Value* ptr) const {
  if (!global_dirty_) return false;
  if (dirty_unknown_) return true;
  const ir::Value* r = pointer_root(ptr);
  return !r || std::find(dirty_roots_.begin(), dirty_roots_.end(), r) != dirty_roots_.end();
}

// A program sees its own global writes in program order (as on the CPU): a load through a
// parameter the program stored through since the last barrier waits for one. Different parameters
// are taken to be different memory, as Triton does.
void Lowering::sync_before_read(const ir::Value* ptr) {
  if (!may_read_written(ptr)) return;
  line("__syncthreads();  // the global writes above are visible below");
  synced_ = true;
  global_dirty_ = false;
  dirty_roots_.clear();
  dirty_unknown_ = false;
}

int Lowering::vector_width(const ir::Op* op, const Layout& l) {
  const ir::Value* p = op->operand(0);
  if (l.reg.empty() || p->type.is_scalar() || !axis_.contains(p)) return 1;
  const int d = l.reg[0].dim;
  const AxisInfo& info = axis_.get(p);
  const int64_t elem = std::max<int64_t>(1, dtype_bytes(p->type.pointee));
  int64_t w = pow2_divisor(info.contiguity[static_cast<size_t>(d)]);
  w = std::min(w, std::max<int64_t>(1, info.divisibility[static_cast<size_t>(d)] / elem));
  w = std::min(w, std::max<int64_t>(1, 16 / elem));
  w = std::min<int64_t>(w, l.contiguous_regs(d));
  return static_cast<int>(std::max<int64_t>(1, w));
}

bool Lowering::mask_constant(const ir::Value* mask, int dim, int n) const {
  if (mask->type.is_scalar()) return true;
  return axis_.contains(mask) && axis_.get(mask).constancy[static_cast<size_t>(dim)] >= n;
}

std::string Lowering::scalar_load(const ir::Op* op) {
  sync_before_read(op->operand(0));
  const ir::Value* p = op->operand(0);
  std::string ct = ctype(p->type.pointee);
  if (op->operands.size() < 2) return "*" + scalar(p);
  std::string other = op->operands.size() > 2 ? scalar(op->operand(2)) : ct + "{}";
  return fmt::format("{} ? *{} : {}", scalar(op->operand(1)), scalar(p), other);
}

namespace {
// Operand `i` of `op` at register r: a scalar operand's name, or the block value's element.
std::string operand_at(const ir::Op* op, size_t i, const Val* v, const std::string& scalar_name, int r) {
  (void)op, (void)i;
  return v ? v->at(r) : scalar_name;
}
}  // namespace

namespace {
// One element's global load or store, through the device header's cache-hinted helpers when the op
// has hints (jit/cuda/cache_hints.h).
std::string load_of(const ir::Op* op, const std::string& ptr) {
  std::string s = cache_hint_suffix(*op);
  return s.empty() ? "*" + ptr : fmt::format("tt_ld{}({})", s, ptr);
}
std::string store_of(const ir::Op* op, const std::string& ptr, const std::string& v) {
  std::string s = cache_hint_suffix(*op);
  return s.empty() ? fmt::format("*{} = {};", ptr, v) : fmt::format("tt_st{}({}, {});", s, ptr, v);
}
// A whole vector: tt_vcopy, or the hinted predicated access with a true predicate.
std::string vector_load(const ir::Op* op, int64_t bytes, const std::string& dst, const std::string& src) {
  std::string s = cache_hint_suffix(*op);
  return s.empty() ? fmt::format("tt_vcopy<{}>({}, {});", bytes, dst, src)
                   : fmt::format("tt_ld_pred{}<{}>({}, {}, true);", s, bytes, dst, src);
}
std::string vector_store(const ir::Op* op, int64_t bytes, const std::string& dst, const std::string& src) {
  std::string s = cache_hint_suffix(*op);
  return s.empty() ? fmt::format("tt_vcopy<{}>({}, {});", bytes, dst, src)
                   : fmt::format("tt_st_pred{}<{}>({}, {}, true);", s, bytes, dst, src);
}
}  // namespace

void Lowering::emit_load(const ir::Op* op) {
  const ir::Value* p = op->operand(0);
  const ir::Value* r = op->result();
  const Layout& l = layout(r);
  sync_before_read(p);
  const Val& ptr = val(p);
  const bool has_mask = op->operands.size() > 1, has_other = op->operands.size() > 2;
  const Val* mask = has_mask && op->operand(1)->type.is_block() ? &val(op->operand(1)) : nullptr;
  const Val* other = has_other && op->operand(2)->type.is_block() ? &val(op->operand(2)) : nullptr;
  const std::string mask_s = has_mask && !mask ? scalar(op->operand(1)) : "";
  const std::string other_s = has_other && !other ? scalar(op->operand(2)) : "";
  const DType d = p->type.pointee;
  const std::string ct = ctype(d);
  auto m_at = [&](int i) { return operand_at(op, 1, mask, mask_s, i); };
  auto o_at = [&](int i) { return has_other ? operand_at(op, 2, other, other_s, i) : ct + "{}"; };
  const int V = vector_width(op, l);
  Val& out = declare_regs(r);
  const int n = l.num_regs();
  const int64_t bytes = int64_t{V} * dtype_bytes(d);
  for (int g = 0; g < n; g += V) {
    if (V == 1) {
      line(fmt::format("{}[{}] = {};", out.name, g,
                       has_mask ? fmt::format("{} ? {} : {}", m_at(g), load_of(op, ptr.at(g)), o_at(g)) : load_of(op, ptr.at(g))));
      continue;
    }
    const std::string dst = fmt::format("&{}[{}]", out.name, g);
    if (!has_mask) {
      line(vector_load(op, bytes, dst, ptr.at(g)));
    } else if (mask_constant(op->operand(1), l.reg[0].dim, V)) {
      // `other` first, then one predicated load: no branch, so consecutive loads issue back to back.
      for (int j = 0; j < V; ++j) line(fmt::format("{}[{}] = {};", out.name, g + j, o_at(g + j)));
      line(fmt::format("tt_ld_pred{}<{}>({}, {}, {});", cache_hint_suffix(*op), bytes, dst, ptr.at(g), m_at(g)));
    } else {
      std::string all;
      for (int j = 0; j < V; ++j) all += (j ? " && " : "") + m_at(g + j);
      open(fmt::format("if ({})", all));
      line(vector_load(op, bytes, dst, ptr.at(g)));
      close();
      open("else");
      for (int j = 0; j < V; ++j)
        line(fmt::format("{}[{}] = {} ? {} : {};", out.name, g + j, m_at(g + j),
                         load_of(op, fmt::format("({} + {})", ptr.at(g), j)), o_at(g + j)));
      close();
    }
  }
}

void Lowering::emit_store(const ir::Op* op) {
  const ir::Value* p = op->operand(0);
  const ir::Value* v = op->operand(1);
  const bool has_mask = op->operands.size() > 2;
  if (p->type.is_scalar()) {  // one thread stores
    std::string cond = has_mask ? fmt::format("tid == 0 && {}", scalar(op->operand(2))) : "tid == 0";
    line(fmt::format("if ({}) {}", cond, store_of(op, scalar(p), scalar(v))));
    mark_global_write(p);
    return;
  }
  const Layout& l = layout(v);
  const Val& ptr = val(p);
  const Val* value = &val(v);
  Val staged;
  const DType d = p->type.pointee;
  const int V = vector_width(op, l);
  if (value->kind != Val::Kind::Regs && V > 1) {  // a vector store reads an array
    staged.kind = Val::Kind::Regs;
    staged.name = fresh("st");
    line(fmt::format("__align__(16) {} {}[{}];", ctype(d), staged.name, l.num_regs()));
    for (int r = 0; r < l.num_regs(); ++r) line(fmt::format("{}[{}] = {};", staged.name, r, value->at(r)));
    value = &staged;
  }
  const Val* mask = has_mask && op->operand(2)->type.is_block() ? &val(op->operand(2)) : nullptr;
  const std::string mask_s = has_mask && !mask ? scalar(op->operand(2)) : "";
  auto m_at = [&](int i) { return operand_at(op, 2, mask, mask_s, i); };
  const std::string own = owner(l);
  if (own != "true") open(fmt::format("if ({})", own));
  const int n = l.num_regs();
  const int64_t bytes = int64_t{V} * dtype_bytes(d);
  for (int g = 0; g < n; g += V) {
    if (V == 1) {
      std::string st = store_of(op, ptr.at(g), value->at(g));
      line(has_mask ? fmt::format("if ({}) {}", m_at(g), st) : st);
      continue;
    }
    const std::string src = fmt::format("&{}[{}]", value->name, g);
    if (!has_mask) {
      line(vector_store(op, bytes, ptr.at(g), src));
    } else if (mask_constant(op->operand(2), l.reg[0].dim, V)) {
      line(fmt::format("tt_st_pred{}<{}>({}, {}, {});", cache_hint_suffix(*op), bytes, ptr.at(g), src, m_at(g)));
    } else {
      std::string all;
      for (int j = 0; j < V; ++j) all += (j ? " && " : "") + m_at(g + j);
      open(fmt::format("if ({})", all));
      line(vector_store(op, bytes, ptr.at(g), src));
      close();
      open("else");
      for (int j = 0; j < V; ++j)
        line(fmt::format("if ({}) {}", m_at(g + j), store_of(op, fmt::format("({} + {})", ptr.at(g), j), value->at(g + j))));
      close();
    }
  }
  if (own != "true") close();
  mark_global_write(p);
}

void Lowering::emit_atomic(const ir::Op* op) {
  const OpKind k = op->kind;
  const ir::Value* p = op->operand(0);
  const DType d = p->type.pointee;
  const std::string ct = ctype(d);
  const bool cas = k == OpKind::AtomicCas;
  const bool has_mask = !cas && op->operands.size() > 2;
  // Triton's atomics are acq_rel at GPU scope by default: fences before and after, so a lock taken
  // with atomic_cas and released with atomic_xchg protects plain loads and stores; sem "release" /
  // "acquire" keep one of them, "relaxed" neither.
  if (p->type.is_scalar()) {  // thread 0; the old value reaches the others through shared memory
    const int64_t slot = alloc_smem(8, 8);
    std::string call = atomic_call(k, d, scalar(p), scalar(op->operand(cas ? 2 : 1)), cas ? scalar(op->operand(1)) : "");
    // The barrier orders every thread's earlier writes before thread 0's fence (cumulativity).
    line("__syncthreads();");
    std::string at = fmt::format("*reinterpret_cast<{}*>(tt_smem + {})", ct, slot);
    const std::string before = atomic_fence_before(op) ? "tt_fence_acq_rel(); " : "",
                      after = atomic_fence_after(op) ? " tt_fence_acq_rel();" : "";
    if (has_mask)
      line(fmt::format("if (tid == 0) {{ {}{} = {} ? {} : {}{{}};{} }}", before, at, scalar(op->operand(2)), call, ct, after));
    else
      line(fmt::format("if (tid == 0) {{ {}{} = {};{} }}", before, at, call, after));
    line("__syncthreads();");
    synced_ = true;
    global_dirty_ = false;
    dirty_roots_.clear();
    dirty_unknown_ = false;
    scalars_[op->result()] = tmp(ct, at);
    touched();
    return;
  }
  const Layout& l = layout(op->result());
  const Val& ptr = val(p);
  const Val& value = val(op->operand(cas ? 2 : 1));
  const Val* cmp = cas ? &val(op->operand(1)) : nullptr;
  const Val* mask = has_mask && op->operand(2)->type.is_block() ? &val(op->operand(2)) : nullptr;
  const std::string mask_s = has_mask && !mask ? scalar(op->operand(2)) : "";
  sync_before_read(p);
  const std::string own = owner(l);
  Val& out = declare_regs(op->result());
  if (atomic_fence_before(op)) line("tt_fence_acq_rel();");
  for (int r = 0; r < l.num_regs(); ++r) {
    std::string cond = own;
    if (has_mask) cond = fmt::format("{} && {}", cond, mask ? mask->at(r) : mask_s);
    line(fmt::format("{}[{}] = {}{{}};", out.name, r, ct));
    line(fmt::format("if ({}) {}[{}] = {};", cond, out.name, r,
                     atomic_call(k, d, ptr.at(r), value.at(r), cmp ? cmp->at(r) : "")));
  }
  if (atomic_fence_after(op)) line("tt_fence_acq_rel();");
  mark_global_write(p);
  // Copies of an element (replicated lanes or warps) get the old value from the thread that did it.
  if (own != "true") {
    const int64_t n = int64_t{l.num_regs()} * nt_;
    const int64_t off = alloc_smem(n * std::max(4, dtype_bytes(d)), 16);
    std::string buf = fmt::format("reinterpret_cast<{}*>(tt_smem + {})", ct, off);
    // Indexed by element: the flat coordinate over the shape.
    auto flat = [&](int r) {
      std::string e = "0";
      const ir::Shape& s = op->result()->type.shape;
      for (size_t dd = 0; dd < s.size(); ++dd) e = fmt::format("({}) * {} + {}", e, s[dd], coord(l, r, static_cast<int>(dd)));
      return e;
    };
    sync();
    open(fmt::format("if ({})", own));
    for (int r = 0; r < l.num_regs(); ++r) line(fmt::format("{}[{}] = {}[{}];", buf, flat(r), out.name, r));
    close();
    line("__syncthreads();");
    for (int r = 0; r < l.num_regs(); ++r) line(fmt::format("{}[{}] = {}[{}];", out.name, r, buf, flat(r)));
    touched();
    free_smem(off);
  }
}

}  // namespace tritium::jit::cuda::lowering
