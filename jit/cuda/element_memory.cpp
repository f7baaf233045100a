// Global memory in the element-loop generator: vector widths from the axis info, the 16-byte
// (or split, or predicated) loads issued before a loop step's lanes, scalar loads, stores and
// atomics. Inline element loads are evaluated in element_eval.cpp.
#include "jit/cuda/codegen_impl.h"

#include <functional>
#include <set>

namespace tritium::jit::cuda::detail {

int Codegen::access_width(const ir::Op* op, int dim) { return detail::access_width(op, axis_, dim); }

void Codegen::collect_loads(const std::vector<const ir::Value*>& roots, const Index& idx,
                            std::vector<std::pair<const ir::Op*, Index>>& out) {
  // Each (value, index) once: inline values used several times (a store group's shared values,
  // fuse_single_root's) are one DAG, whose paths could be exponentially many, and each load is
  // issued once a chunk.
  std::set<std::pair<const ir::Value*, Index>> seen;
  std::function<void(const ir::Value*, const Index&)> visit = [&](const ir::Value* v, const Index& at) {
    if (v->type.is_scalar() || buffers_.count(v) || regs_.count(v) || !v->def) return;
    if (!seen.insert({v, at}).second) return;
    const ir::Op* op = v->def;
    const Shape& t = v->type.shape;
    switch (op->kind) {
      case OpKind::Load:
        if (access_width(op) > 1) out.push_back({op, at});
        return;
      case OpKind::MultipleOf: case OpKind::MaxContiguous: return visit(op->operand(0), at);
      case OpKind::Broadcast: {
        const Shape& s = op->operand(0)->type.shape;
        if (s.back() != t.back()) return;
        Index in(at);
        for (size_t d = 0; d < s.size(); ++d)
          if (s[d] == 1 && t[d] != 1) in[d] = "0";
        return visit(op->operand(0), in);
      }
      case OpKind::ExpandDims: {
        if (op->attrs.axis == static_cast<int>(t.size()) - 1) return;
        Index in(at);
        in.erase(in.begin() + op->attrs.axis);
        return visit(op->operand(0), in);
      }
      default: break;
    }
    if (ir::is_elementwise(op->kind))
      for (const ir::Value* o : op->operands) visit(o, at);
  };
  for (const ir::Value* r : roots) visit(r, idx);
}

int Codegen::choose_width(const Shape& shape, const std::vector<const ir::Value*>& roots, const ir::Op* store) {
  if (shape.empty()) return 1;
  if (auto it = mapped_width_.find(shape); it != mapped_width_.end()) return it->second;
  std::vector<std::pair<const ir::Op*, Index>> loads;
  Index dummy(shape.size(), "0");
  collect_loads(roots, dummy, loads);
  int V = 0;
  for (auto& [op, _] : loads) V = V == 0 ? access_width(op) : std::min(V, access_width(op));
  if (store) {
    int w = access_width(store);
    if (w > 1) V = V == 0 ? w : std::min(V, w);
  }
  if (V <= 1) return 1;
  while (V > 1 && shape.back() % V != 0) V /= 2;
  // Small blocks: keep every thread busy rather than move 16 bytes with a quarter of them.
  while (V > 1 && numel(shape) / V < nt_) V /= 2;
  return V;
}

const char* Codegen::vector_type(int64_t bytes) {
  switch (bytes) {
    case 16: return "uint4";
    case 8: return "uint2";
    case 4: return "uint32_t";
    case 2: return "uint16_t";
    default: return "uint8_t";
  }
}

void Codegen::emit_vector_loads(const std::vector<const ir::Value*>& roots, const Index& base, int V) {
  if (V == 1) return;
  std::vector<std::pair<const ir::Op*, Index>> loads;
  collect_loads(roots, base, loads);
  for (auto& [op, idx] : loads) {
    // V lanes of a type wider than the one that set V (a f32 weight beside a bf16 row: 8 lanes,
    // 32 bytes) move as several accesses of at most 16 bytes, not lane by lane.
    if (const int w = access_width(op); w < V) {
      if (w > 1 && V % w == 0) emit_split_vector_load(op, idx, V, w);
      continue;
    }
    DType d = op->operand(0)->type.pointee;
    std::string ct = ctype(d);
    std::string arr = fresh("ld");
    int64_t bytes = int64_t(V) * dtype_bytes(d);
    line(fmt::format("__align__(16) {} {}[{}];", ct, arr, V));
    open("");
    std::string p = tmp("const " + ct + "*", eval(op->operand(0), idx));
    const std::string hint = cache_hint_suffix(*op);
    std::string vec = hint.empty() ? fmt::format("*reinterpret_cast<{0}*>({1}) = *reinterpret_cast<const {0}*>({2});",
                                                 vector_type(bytes), arr, p)
                                   : fmt::format("tt_ld_pred{}<{}>({}, {}, true);", hint, bytes, arr, p);
    const ir::Value* mask = op->operands.size() < 2 ? nullptr : op->operand(1);
    if (!mask) {
      line(vec);
    } else if (axis_.contains(mask) && axis_.get(mask).constancy.back() >= V) {
      // One mask for the V lanes: `other` in the array, then one predicated load (no branch,
      // so the loads of consecutive steps issue back to back).
      std::string l = fresh("l");
      Index li(idx);
      li.back() = fmt::format("({} + {})", idx.back(), l);
      line("#pragma unroll");
      open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", l, V));
      line(fmt::format("{}[{}] = {};", arr, l, op->operands.size() > 2 ? eval(op->operand(2), li) : ct + "{}"));
      close();
      line(fmt::format("tt_ld_pred{}<{}>({}, {}, {});", hint, bytes, arr, p, eval(mask, idx)));
    } else {
      std::string m = fresh("m"), all = fresh("all"), l = fresh("l");
      line(fmt::format("bool {}[{}];", m, V));
      line(fmt::format("bool {} = true;", all));
      auto lane_index = [&] {
        Index li(idx);
        li.back() = fmt::format("({} + {})", idx.back(), l);
        return li;
      };
      line("#pragma unroll");
      open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", l, V));
      line(fmt::format("{}[{}] = {};", m, l, eval(op->operand(1), lane_index())));
      line(fmt::format("{} = {} && {}[{}];", all, all, m, l));
      close();
      open(fmt::format("if ({})", all));
      line(vec);
      close();
      open("else");
      line("#pragma unroll");
      open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", l, V));
      std::string other = op->operands.size() > 2 ? eval(op->operand(2), lane_index()) : ct + "{}";
      line(fmt::format("{}[{}] = {}[{}] ? {} : {};", arr, l, m, l, load_of(op, fmt::format("({} + {})", p, l)), other));
      close();
      close();
    }
    close();
    vec_loads_[op] = arr;
  }
}

void Codegen::emit_split_vector_load(const ir::Op* op, const Index& idx, int V, int w) {
  const ir::Value* mask = op->operands.size() < 2 ? nullptr : op->operand(1);
  // Each w-lane part needs one mask for its lanes; other masks stay lane by lane.
  if (mask && !(axis_.contains(mask) && axis_.get(mask).constancy.back() >= w)) return;
  const DType d = op->operand(0)->type.pointee;
  const std::string ct = ctype(d), arr = fresh("ld"), hint = cache_hint_suffix(*op);
  const int64_t bytes = int64_t(w) * dtype_bytes(d);
  line(fmt::format("__align__(16) {} {}[{}];", ct, arr, V));
  open("");
  if (mask) {  // `other` first, then predicated parts
    std::string l = fresh("l");
    Index li(idx);
    li.back() = fmt::format("({} + {})", idx.back(), l);
    line("#pragma unroll");
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", l, V));
    line(fmt::format("{}[{}] = {};", arr, l, op->operands.size() > 2 ? eval(op->operand(2), li) : ct + "{}"));
    close();
  }
  for (int part = 0; part < V / w; ++part) {
    Index pi(idx);
    pi.back() = fmt::format("({} + {})", idx.back(), part * w);
    std::string p = tmp("const " + ct + "*", eval(op->operand(0), pi));
    std::string dst = fmt::format("({} + {})", arr, part * w);
    if (mask) line(fmt::format("tt_ld_pred{}<{}>({}, {}, {});", hint, bytes, dst, p, eval(mask, pi)));
    else if (!hint.empty()) line(fmt::format("tt_ld_pred{}<{}>({}, {}, true);", hint, bytes, dst, p));
    else line(fmt::format("*reinterpret_cast<{0}*>({1}) = *reinterpret_cast<const {0}*>({2});", vector_type(bytes), dst, p));
  }
  close();
  vec_loads_[op] = arr;
}

std::string Codegen::scalar_load(const ir::Op* op) {
  if (may_read_written(op->operand(0))) sync_after_global_writes();
  const ir::Value* p = op->operand(0);
  std::string ct = ctype(p->type.pointee);
  if (op->operands.size() < 2) return load_of(op, scalar(p));
  std::string other = op->operands.size() > 2 ? scalar(op->operand(2)) : ct + "{}";
  return fmt::format("{} ? {} : {}", scalar(op->operand(1)), load_of(op, scalar(p)), other);
}

void Codegen::emit_store(const ir::Op* op) {
  const ir::Value* p = op->operand(0);
  if (p->type.is_scalar()) {  // one thread stores
    const ir::Value* val = op->operand(1);
    std::string cond = op->operands.size() > 2 ? fmt::format("tid == 0 && {}", scalar(op->operand(2))) : "tid == 0";
    line(fmt::format("if ({}) {}", cond, store_of(op, scalar(p), scalar(val))));
    mark_global_write(p);
    return;
  }
  if (plan_.in_store_group(op)) fail("internal error: a store of a store group reached emit_store alone");
  emit_stores({op});
}

// Block stores of one shape in one loop nest (one store, or a store group of the block plan). Each
// element's values, masks and pointers of every store are evaluated before any of its stores
// writes: a store group's later values may load what its earlier stores overwrite (Liger's swiglu
// backward writes da over a and db over b, both computed from a).
void Codegen::emit_stores(const std::vector<const ir::Op*>& ops) {
  struct Store {
    const ir::Op* op;
    DType d;
    std::string ct, hint;
    bool has_mask, split_store, vector_store;
    int w;
    std::string sv, sm, v, m, ptr;  // the chunk's arrays; the element's value, mask, pointer
  };
  const Shape& shape = ops.front()->operand(0)->type.shape;
  std::vector<const ir::Value*> roots, reads;
  for (const ir::Op* op : ops) {
    roots.push_back(op->operand(1));
    if (op->operands.size() > 2) roots.push_back(op->operand(2));
    reads.push_back(op->operand(0));
  }
  reads.insert(reads.end(), roots.begin(), roots.end());
  sync_if_reading(reads);
  // The widest of the stores' own widths: a narrower store (a f32 one beside bf16: 8 lanes) moves
  // as parts of its width where its mask allows, else lane by lane - legal at any width.
  int V = 1;
  for (const ir::Op* op : ops) {
    std::vector<const ir::Value*> own = {op->operand(1)};
    if (op->operands.size() > 2) own.push_back(op->operand(2));
    V = std::max(V, choose_width(shape, own, op));
  }
  std::vector<Store> stores;
  for (const ir::Op* op : ops) {
    Store s{op, op->operand(0)->type.pointee, "", cache_hint_suffix(*op), op->operands.size() > 2, false, false,
            access_width(op), "", "", "", "", ""};
    s.ct = ctype(s.d);
    // A wider type than the one that set the shape's V stores as V / w parts of w lanes (as
    // emit_split_vector_load), when its mask (if any) is constant over each part.
    const ir::Value* mask_value = s.has_mask ? op->operand(2) : nullptr;
    s.split_store = V > 1 && s.w > 1 && s.w < V && V % s.w == 0 &&
                    (!mask_value || (axis_.contains(mask_value) && axis_.get(mask_value).constancy.back() >= s.w));
    s.vector_store = V > 1 && (s.w >= V || s.split_store);
    stores.push_back(s);
  }
  thread_loop(
      shape, V,
      [&](const Index& base) {
        emit_vector_loads(roots, base, V);
        for (Store& s : stores) {
          if (!s.vector_store) continue;
          s.sv = fresh("sv"), s.sm = fresh("sm");
          line(fmt::format("__align__(16) {} {}[{}];", s.ct, s.sv, V));
          if (s.has_mask) line(fmt::format("bool {}[{}];", s.sm, V));
        }
      },
      [&](const Index& idx) {
        for (Store& s : stores) {
          s.v = eval(s.op->operand(1), idx);
          s.m = s.has_mask ? eval(s.op->operand(2), idx) : "";
          if (!s.vector_store) s.ptr = eval(s.op->operand(0), idx);
        }
        for (Store& s : stores) {
          if (s.vector_store) {
            line(fmt::format("{}[{}] = {};", s.sv, lane_, s.v));
            if (s.has_mask) line(fmt::format("{}[{}] = {};", s.sm, lane_, s.m));
          } else {
            line(s.has_mask ? fmt::format("if ({}) {}", s.m, store_of(s.op, s.ptr, s.v)) : store_of(s.op, s.ptr, s.v));
          }
        }
      },
      [&](const Index& base) {
        for (const Store& s : stores)
          if (s.vector_store) emit_vector_store(s.op, base, V, s.split_store, s.w, s.sv, s.sm);
      });
  vec_loads_.clear();
  for (const ir::Op* op : ops) mark_global_write(op->operand(0));
}

// A chunk's V lanes of store `op`, gathered in `sv` (and its mask in `sm`), as one 16-byte store,
// V / w stores of w lanes (split), or lane by lane where the mask is off for some lanes.
void Codegen::emit_vector_store(const ir::Op* op, const Index& base, int V, bool split_store, int w,
                                const std::string& sv, const std::string& sm) {
  const ir::Value* p = op->operand(0);
  const DType d = p->type.pointee;
  const std::string ct = ctype(d);
  const std::string hint = cache_hint_suffix(*op);
  const bool has_mask = op->operands.size() > 2;
  if (split_store) {
    const int64_t bytes = int64_t(w) * dtype_bytes(d);
    for (int part = 0; part < V / w; ++part) {
      Index pi(base);
      pi.back() = fmt::format("({} + {})", base.back(), part * w);
      std::string ptr = tmp(ct + "*", eval(p, pi));
      std::string src = fmt::format("({} + {})", sv, part * w);
      if (has_mask) line(fmt::format("tt_st_pred{}<{}>({}, {}, {}[{}]);", hint, bytes, ptr, src, sm, part * w));
      else if (!hint.empty()) line(fmt::format("tt_st_pred{}<{}>({}, {}, true);", hint, bytes, ptr, src));
      else line(fmt::format("*reinterpret_cast<{0}*>({1}) = *reinterpret_cast<const {0}*>({2});", vector_type(bytes), ptr, src));
    }
    return;
  }
  std::string ptr = tmp(ct + "*", eval(p, base));
  std::string vec = hint.empty() ? fmt::format("*reinterpret_cast<{0}*>({1}) = *reinterpret_cast<const {0}*>({2});",
                                               vector_type(int64_t(V) * dtype_bytes(d)), ptr, sv)
                                 : fmt::format("tt_st_pred{}<{}>({}, {}, true);", hint, int64_t(V) * dtype_bytes(d), ptr, sv);
  if (!has_mask) {
    line(vec);
    return;
  }
  const ir::Value* mask = op->operand(2);
  if (axis_.contains(mask) && axis_.get(mask).constancy.back() >= V) {  // one predicated store
    line(fmt::format("tt_st_pred{}<{}>({}, {}, {}[0]);", hint, int64_t(V) * dtype_bytes(d), ptr, sv, sm));
    return;
  }
  std::string all = fresh("all"), l = fresh("l");
  line(fmt::format("bool {} = true;", all));
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {2} = {2} && {3}[{0}];", l, V, all, sm));
  open(fmt::format("if ({})", all));
  line(vec);
  close();
  open("else");
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) if ({2}[{0}]) {3}", l, V, sm,
                   store_of(op, fmt::format("({} + {})", ptr, l), fmt::format("{}[{}]", sv, l))));
  close();
}

void Codegen::emit_atomic(const ir::Op* op) {
  ++shared_writes_;  // the old value's slot or buffer
  OpKind k = op->kind;
  const ir::Value* p = op->operand(0);
  DType d = p->type.pointee;
  std::string ct = ctype(d);
  bool cas = k == OpKind::AtomicCas;
  bool has_mask = !cas && op->operands.size() > 2;
  // Triton's atomics are acq_rel at GPU scope by default: every thread's earlier writes are
  // released (a fence before), and what the atomic observed is acquired (a fence after), so a
  // lock taken with atomic_cas and released with atomic_xchg protects plain loads and stores.
  // sem "release" / "acquire" keep one of the fences, "relaxed" neither.
  if (p->type.is_scalar()) {  // one thread; the old value reaches the others through shared memory
    std::string slot = alloc_shared(ct, 1, std::max(8, dtype_bytes(d)));
    std::string call = atomic_call(k, d, scalar(p), scalar(op->operand(cas ? 2 : 1)), cas ? scalar(op->operand(1)) : "");
    // The barrier orders every thread's earlier writes before thread 0's fence (cumulativity),
    // so only the thread doing the atomic fences (as Triton's elected thread does).
    line("__syncthreads();");
    synced_ = true;
    clean();
    const std::string before = atomic_fence_before(op) ? "tt_fence_acq_rel(); " : "",
                      after = atomic_fence_after(op) ? " tt_fence_acq_rel();" : "";
    if (has_mask)
      line(fmt::format("if (tid == 0) {{ {}{}[0] = {} ? {} : {}{{}};{} }}", before, slot, scalar(op->operand(2)), call, ct,
                       after));
    else line(fmt::format("if (tid == 0) {{ {}{}[0] = {};{} }}", before, slot, call, after));
    sync();
    scalars_[op->result()] = tmp(ct, slot + "[0]");
    return;
  }
  std::string out = plan_.users(op->result()).empty() ? "" : alloc_buffer(op->result()->type);
  if (!out.empty()) buffers_[op->result()] = out;
  if (!out.empty()) sync();
  else sync_if_reading({p, op->operand(1), op->operands.back()});
  if (atomic_fence_before(op)) line("tt_fence_acq_rel();");
  if (out.empty() && emit_vector_red(op)) {
    if (atomic_fence_after(op)) line("tt_fence_acq_rel();");
    mark_global_write(p);
    return;
  }
  // Lane by lane: over the shape's register mapping at its width where the shape has one (values
  // kept in registers - an index loaded once for a bounds check's atomics, a mask and an address -
  // are read by the thread that holds them), else one lane a step.
  const Shape& shape = p->type.shape;
  const int V = mapped(shape, mapped_width(shape)) ? mapped_width(shape) : 1;
  std::vector<const ir::Value*> roots = {op->operand(1)};
  for (size_t i = 2; i < op->operands.size(); ++i) roots.push_back(op->operand(i));
  // The values' contiguous loads as whole vectors (as a store's): a scatter's source.
  auto vector_loads = [&](const Index& base) { emit_vector_loads(roots, base, V); };
  thread_loop(shape, V, V > 1 ? std::function<void(const Index&)>(vector_loads) : nullptr, [&](const Index& idx) {
    std::string ptr = eval(p, idx);
    std::string val = eval(op->operand(cas ? 2 : 1), idx);
    std::string cmp = cas ? eval(op->operand(1), idx) : "";
    std::string call = atomic_call(k, d, ptr, val, cmp);
    if (out.empty()) {  // the old value is unused
      // A 16-bit float add: a red (one REDG .x2 on sm_90, device header), not an atom.
      if (k == OpKind::AtomicAdd && is_half(d)) call = fmt::format("tt_red_add_16({}, {})", ptr, val);
      std::string m = has_mask ? eval(op->operand(2), idx) : "true";
      line(fmt::format("if ({}) (void){};", m, call));
      return;
    }
    std::string old;
    if (has_mask) {
      old = fresh("old");
      line(fmt::format("{} {}{{}};", ct, old));
      line(fmt::format("if ({}) {} = {};", eval(op->operand(2), idx), old, call));
    } else {
      old = tmp(ct, call);
    }
    line(fmt::format("{}[{}] = {};", out, flatten(idx, p->type.shape), old));
  }, nullptr);
  vec_loads_.clear();
  if (atomic_fence_after(op)) line("tt_fence_acq_rel();");
  if (!out.empty()) sync();
  else mark_global_write(p);
}

int Codegen::vector_red_width(const ir::Op* op, int V) {
  const DType d = op->operand(0)->type.pointee;
  if (op->kind != OpKind::AtomicAdd || !(d == DType::f16 || d == DType::bf16 || d == DType::f32)) return 0;
  const ir::Value* mask = op->operands.size() > 2 ? op->operand(2) : nullptr;
  const int w = std::min(V, access_width(op));
  if (w < 2 || V % w != 0) return 0;
  if (mask && mask->type.is_block() && !(axis_.contains(mask) && axis_.get(mask).constancy.back() >= w)) return 0;
  return w;
}

bool Codegen::atomic_reads_own(const ir::Op* op, const ir::Value* v) {
  const ir::Value* p = op->operand(0);
  if (op->kind == OpKind::AtomicCas || !p->type.is_block() || p->type.shape != v->type.shape) return false;
  // The lane-by-lane loop and the vector reds (old values nobody reads) both walk the mapping at
  // its width (emit_atomic). It was one lane a step whatever the width, so a value an atomic read
  // went to shared memory where the mapping was wider: the index tensor of every indexing op
  // (read by the bounds check's two atomics, the mask and the address), 32 KB a program.
  return true;
}

// A float atomic_add whose old values are unused, over lanes the axis info proves contiguous and
// aligned, with a mask constant over them: each thread takes V consecutive lanes (its values'
// loads 16 bytes wide) and adds them w at a time with one vector red (tt_red_add_v), as Triton's
// vectorised atomics do; one 2-byte atomic a lane moved an f16 gradient scatter at half Triton's
// speed. False (nothing emitted) where that does not hold.
bool Codegen::emit_vector_red(const ir::Op* op) {
  const ir::Value* p = op->operand(0);
  const DType d = p->type.pointee;
  if (op->kind != OpKind::AtomicAdd || !(d == DType::f16 || d == DType::bf16 || d == DType::f32)) return false;
  const ir::Value* val = op->operand(1);
  const ir::Value* mask = op->operands.size() > 2 ? op->operand(2) : nullptr;
  const Shape& shape = p->type.shape;
  std::vector<const ir::Value*> roots = {val};
  if (mask) roots.push_back(mask);
  const int V = choose_width(shape, roots, op);
  const int w = vector_red_width(op, V);
  if (w == 0) return false;
  const std::string ct = ctype(d);
  std::string sv, sm;
  thread_loop(
      shape, V,
      [&](const Index& base) {
        emit_vector_loads(roots, base, V);
        sv = fresh("av");
        line(fmt::format("__align__(16) {} {}[{}];", ct, sv, V));
        if (mask) line(fmt::format("bool {}[{}];", sm = fresh("am"), V));
      },
      [&](const Index& idx) {
        line(fmt::format("{}[{}] = {};", sv, lane_, eval(val, idx)));
        if (mask) line(fmt::format("{}[{}] = {};", sm, lane_, eval(mask, idx)));
      },
      [&](const Index& base) {
        for (int part = 0; part < V / w; ++part) {
          Index pi(base);
          pi.back() = fmt::format("({} + {})", base.back(), part * w);
          std::string call = fmt::format("tt_red_add_v<{}>({}, {} + {});", w, eval(p, pi), sv, part * w);
          line(mask ? fmt::format("if ({}[{}]) {}", sm, part * w, call) : call);
        }
      });
  vec_loads_.clear();
  return true;
}

}  // namespace tritium::jit::cuda::detail
