// Run-time control flow in layouts: loops and branches carry register arrays in their layouts
// (the pass gives init, carried value, yield and result one layout), scalars as variables every
// thread computes alike, so conditions and trip counts are uniform and barriers may sit anywhere.
//
// Software pipelining: in a `tl::range` loop, a load whose only use turns it into a shared-memory
// tile (a dot operand) and whose address and mask the generator can compute for a later trip - from
// the induction variable, carried values advanced by a loop-invariant step (pointers, block-pointer
// offsets: `value + k * step` k trips later) and values from before the loop - is issued
// num_stages - 1 trips ahead with cp.async into a ring of num_stages tiles. Each trip waits for its
// own tiles, a barrier makes them visible (and frees the slot the previous trip read), and the trip
// num_stages - 1 ahead is issued into that slot before the body runs. On Hopper, where the TMA
// analysis takes every load of the ring (tma_ring.cpp), the plans' run-time guard (tested once, a
// value uniform in the CTA) picks how the ring is filled: by bulk tensor copies from thread 0 (the
// consumers wait on a stage's mbarrier), or by the threads' cp.async. The loop and its body are
// emitted once; only the waits and the refills branch on the guard (emitting the whole loop twice
// doubled NVRTC's time on large tiles: docs/cuda-backend.md, "Register loops"). Addresses only the
// ring's loads read are not carried (init + trip * step), and their initial values are made in the
// cp.async branch of the prefill, so a TMA-filled program spends nothing on them.
#include "jit/cuda/lowering/lowering.h"

#include <functional>

#include "jit/cuda/cache_hints.h"

namespace tritium::jit::cuda::lowering {
namespace {

// One element's global load, through the cache-hinted helper when the op has hints (as memory.cpp).
std::string load_of(const ir::Op* op, const std::string& ptr) {
  std::string s = cache_hint_suffix(*op);
  return s.empty() ? "*" + ptr : fmt::format("tt_ld{}({})", s, ptr);
}
// A whole vector of `bytes` (as memory.cpp's vector_load).
std::string vector_load_of(const ir::Op* op, int64_t bytes, const std::string& dst, const std::string& src) {
  std::string s = cache_hint_suffix(*op);
  return s.empty() ? fmt::format("tt_vcopy<{}>({}, {});", bytes, dst, src)
                   : fmt::format("tt_ld_pred{}<{}>({}, {}, true);", s, bytes, dst, src);
}

bool pure_kind(OpKind k) {
  return ir::is_elementwise(k) || k == OpKind::Constant || k == OpKind::Splat || k == OpKind::Arange ||
         k == OpKind::Broadcast || k == OpKind::ExpandDims || k == OpKind::Permute || k == OpKind::Reshape ||
         k == OpKind::MultipleOf || k == OpKind::MaxContiguous || k == OpKind::ProgramId ||
         k == OpKind::NumPrograms;
}

bool inside(const ir::Op* op, const ir::Op* loop) {
  for (const ir::Block* b = op->parent; b; b = b->parent ? b->parent->parent : nullptr)
    if (b->parent == loop) return true;
  return false;
}

// Whether v is the same at every trip of `loop`: defined outside it, or computed inside from such
// values by pure ops.
bool invariant(const ir::Value* v, const ir::Op* loop, int depth = 0) {
  if (v->is_block_arg()) return v->owner->parent != loop && !(v->owner->parent && inside(v->owner->parent, loop));
  if (!inside(v->def, loop)) return true;
  if (depth > 32 || !pure_kind(v->def->kind)) return false;
  for (const ir::Value* o : v->def->operands)
    if (!invariant(o, loop, depth + 1)) return false;
  return true;
}

}  // namespace

// The memory a loop body writes: the parameters its stores and atomics go through, and whether
// one goes through a pointer no parameter roots. A load is not moved ahead of such a store.
Lowering::LoopWrites Lowering::loop_writes(const ir::Block* body) {
  LoopWrites w;
  auto writes = [&](ir::Op* op) {
    if (op->kind == OpKind::Store || is_atomic(op->kind)) {
      if (const ir::Value* r = pointer_root(op->operand(0))) w.roots.push_back(r);
      else w.unknown = true;
    }
  };
  ir::Function::walk_block(const_cast<ir::Block*>(body), writes);
  return w;
}

bool Lowering::ahead_computable(const ir::Value* v, const ir::Op* loop, int depth) const {
  if (depth > 48) return false;
  const ir::Block* body = loop->regions[0];
  if (v->is_block_arg()) {
    if (v->owner != body) return invariant(v, loop);
    return v == body->args[0] || inductions_.count(v) > 0;
  }
  if (!inside(v->def, loop)) return true;
  if (v->def->parent != body || !pure_kind(v->def->kind)) return false;
  for (const ir::Value* o : v->def->operands)
    if (!ahead_computable(o, loop, depth + 1)) return false;
  return true;
}

std::string Lowering::ahead_value(const ir::Value* v, int r, const std::string& ahead, const ir::Op* loop) {
  const ir::Block* body = loop->regions[0];
  const std::string key = fmt::format("{}|{}|{}", static_cast<const void*>(v), r, ahead);
  if (auto it = ahead_memo_.find(key); it != ahead_memo_.end()) return it->second;
  if (qcache_ && v->def && qcache_->values.count(v) && ir::is_elementwise(v->def->kind) && !v->type.is_ptr() &&
      dtype_bits(v->type.dtype) <= 32) {
    const std::pair<const ir::Value*, int> at{v, v->type.is_scalar() ? 0 : r};
    auto it = qcache_->names.find(at);
    if (it != qcache_->names.end()) return it->second;
    const std::string name = fresh("qc");
    qcache_->names[at] = name;
    qcache_->entries.push_back({v, at.second, name, ctype(v->type.element())});
    return name;
  }
  auto at = [&](const ir::Value* x, int reg) -> std::string {
    if (x->type.is_scalar()) return scalar(x);
    return val(x).at(reg);
  };
  std::string out;
  if (v->is_block_arg() && v->owner == body) {
    const std::string step = scalar(loop->operand(2));
    if (v == body->args[0]) {
      out = tmp(ctype(v->type), fmt::format("{} + ({}) * {}", scalar(v), ahead, step));
    } else if (auto u = uncarried_.find(v); u != uncarried_.end()) {  // init + (trip + ahead) * step
      const Induction& ind = inductions_.at(v);
      std::string s = ahead_value(ind.step, r, ahead, loop);
      std::string k = fmt::format("({} + {})", u->second.trip, ahead);
      out = ind.ptr ? tmp(ctype(v->type.element()), fmt::format("{} + (int64_t)({}) * (int64_t)({})", at(u->second.init, r), k, s))
                    : tmp(ctype(v->type.element()), fmt::format("({})({} + ({}) * {})", ctype(v->type.element()), at(u->second.init, r), k, s));
    } else {
      const Induction& ind = inductions_.at(v);
      std::string s = ahead_value(ind.step, v->type.is_scalar() ? 0 : r, ahead, loop);
      out = ind.ptr ? tmp(ctype(v->type.element()), fmt::format("{} + (int64_t)({}) * (int64_t)({})", at(v, r), ahead, s))
                    : tmp(ctype(v->type.element()), fmt::format("({})({} + ({}) * {})", ctype(v->type.element()), at(v, r), ahead, s));
    }
  } else if (!(v->def && inside(v->def, loop))) {
    out = at(v, r);  // from before the loop
  } else {
    const ir::Op* op = v->def;
    switch (op->kind) {
      case OpKind::Constant: out = constant_of(op); break;
      case OpKind::Arange: {  // the same at every trip (and not yet emitted where tiles are issued)
        const int64_t start = op->attrs.ints[0];
        out = tmp("int32_t", fmt::format("(int32_t)({}) + {}", coord(layout(v), r, 0), start));
        break;
      }
      case OpKind::Splat: out = ahead_value(op->operand(0), 0, ahead, loop); break;
      case OpKind::ProgramId: case OpKind::NumPrograms: out = emit_scalar(op); break;
      case OpKind::MultipleOf: case OpKind::MaxContiguous: out = ahead_value(op->operand(0), r, ahead, loop); break;
      case OpKind::Broadcast: case OpKind::ExpandDims: case OpKind::Permute: case OpKind::Reshape: {
        if (op->operand(0)->type.is_scalar()) {
          out = ahead_value(op->operand(0), 0, ahead, loop);
          break;
        }
        out = ahead_value(op->operand(0), view_regs(op)[static_cast<size_t>(r)], ahead, loop);
        break;
      }
      default: {
        std::vector<std::string> xs;
        for (const ir::Value* o : op->operands) xs.push_back(ahead_value(o, o->type.is_scalar() ? 0 : r, ahead, loop));
        out = tmp(ctype(v->type.element()), op->kind == OpKind::AddPtr && wide_address(op)
                                                  ? wide_addptr(xs[0], xs[1], op->operand(1)->type.dtype)
                                                  : element_op(op, xs));
      }
    }
  }
  ahead_memo_[key] = out;
  return out;
}

std::optional<Lowering::QuotientCache> Lowering::quotient_cache(const ir::Op* loop) {
  const ir::Block* body = loop->regions[0];
  const ir::Value* iv = body->args[0];
  QuotientCache qc;
  for (const ir::Op* o : body->ops) {
    // A run-time divisor: by a constant, nvcc divides with a multiply itself and the quotient of a
    // small one changes every few trips (an im2col's k / KW), not worth the registers.
    if (o->kind != OpKind::Div || !o->result()->type.is_scalar() || o->operand(0) != iv) continue;
    const ir::Value* d = o->operand(1);
    if (!invariant(d, loop) || (d->def && d->def->kind == OpKind::Constant)) continue;
    if (qc.root) return std::nullopt;  // one quotient only (a fused nest has one)
    qc.root = o->result();
  }
  if (!qc.root) return std::nullopt;
  // 0: the same every trip, 1: depends on the trip through the quotient only, 2: otherwise.
  std::unordered_map<const ir::Value*, int> state;
  std::function<int(const ir::Value*, int)> cls = [&](const ir::Value* v, int depth) -> int {
    if (v == qc.root) return 1;
    if (v->is_block_arg()) return v->owner == body || (v->owner->parent && inside(v->owner->parent, loop)) ? 2 : 0;
    if (!inside(v->def, loop)) return 0;
    if (auto it = state.find(v); it != state.end()) return it->second;
    int s = 0;
    if (depth > 48 || v->def->parent != body || !pure_kind(v->def->kind)) s = 2;
    for (const ir::Value* o : v->def->operands) {
      if (s == 2) break;
      s = std::max(s, cls(o, depth + 1));
    }
    state[v] = s;
    if (s == 1) qc.values.insert(v);
    return s;
  };
  for (const ir::Op* o : body->ops)
    for (const ir::Value* r : o->results) cls(r, 0);
  qc.valid = fresh("qvalid");
  qc.q = fresh("qq");
  return qc;
}

// cp.async fills masked chunks with zeros: a load's `other`, where it has one, must be zero.
static bool zero_other(const ir::Op* load) {
  if (load->operands.size() <= 2) return true;
  const ir::Value* other = load->operand(2);
  while (other->def && other->def->kind == OpKind::Splat) other = other->def->operand(0);
  return other->def && other->def->kind == OpKind::Constant && other->def->attrs.ival == 0 &&
         other->def->attrs.fval == 0.0 && !std::signbit(other->def->attrs.fval);
}

std::vector<Lowering::Pipelined> Lowering::pipelinable(const ir::Op* loop) {
  std::vector<Pipelined> out;
  const ir::Block* body = loop->regions[0];
  if (num_stages_ < 2 || cc_ < 80) return out;
  // Memory the loop writes: a load is not moved ahead of a store through the same parameter.
  const auto [written, unknown] = loop_writes(body);
  std::unordered_map<const ir::Value*, int> uses;
  f_.walk([&](ir::Op* op) {
    for (const ir::Value* o : op->operands) ++uses[o];
  });
  for (const ir::Op* op : body->ops) {
    if (op->kind != OpKind::Load || !op->result()->type.is_block() || uses[op->result()] != 1) continue;
    const ir::Op* conv = nullptr;
    for (const ir::Op* c : body->ops)
      if (c->kind == OpKind::ConvertLayout && c->operand(0) == op->result()) conv = c;
    if (!conv || !layout(conv->result()).is_shared()) continue;
    const DType d = op->result()->type.dtype;
    // tf32 tiles take the fp32 bits as they are (the tensor core reads the top 19), as Triton's do:
    // rounding them would need a trip through registers (docs/cuda-backend.md, "tf32 operands").
    // A pointer no parameter roots (tutorial 08's matrices, addresses read from a device array)
    // may be issued ahead only in a loop that stores nothing.
    const ir::Value* root = pointer_root(op->operand(0));
    if (unknown || (!root && !written.empty()) || std::find(written.begin(), written.end(), root) != written.end())
      continue;
    bool ok = true;
    for (const ir::Value* o : op->operands) ok = ok && ahead_computable(o, loop);
    if (!ok || !zero_other(op)) continue;
    Pipelined p;
    p.load = op;
    p.convert = conv;
    p.stage_bytes = (tile_bytes(layout(conv->result()), d) + 1023) / 1024 * 1024;
    out.push_back(p);
  }
  return out;
}

std::vector<Lowering::Pipelined> Lowering::ring_register_loads(const ir::Op* loop, const std::vector<Pipelined>& tiles) {
  std::vector<Pipelined> out;
  for (const ir::Op* op : register_prefetchable(loop, tiles)) {
    if (!zero_other(op)) continue;
    Pipelined p;
    p.load = op;
    p.convert = nullptr;
    p.stage_bytes = (numel(op->result()->type.shape) * dtype_bytes(op->result()->type.dtype) + 15) / 16 * 16;
    if (stage_plan(p).async) out.push_back(p);  // element copies stay a register prefetch
  }
  return out;
}

std::string Lowering::stage_offset(const Pipelined& p, const std::vector<std::string>& coords) {
  const ir::Type& ty = p.load->result()->type;
  if (p.convert) return tile_offset(layout(p.convert->result()), ty.dtype, coords);
  std::vector<std::string> terms;
  int64_t stride = dtype_bytes(ty.dtype);
  for (int dim = ty.rank() - 1; dim >= 0; --dim) {
    terms.push_back(fmt::format("({}) * {}", coords[static_cast<size_t>(dim)], stride));
    stride *= ty.shape[static_cast<size_t>(dim)];
  }
  return fmt::format("({})", fmt::join(terms, " + "));
}

// A register load the ring stages: its trip's slot read into the load's layout (16-byte reads where
// its registers run along the row), after the trip's wait and barrier, as a tile's reader.
void Lowering::emit_ring_register_load(const ir::Op* op, const std::string& slot) {
  const Layout& l = layout(op->result());
  const DType d = op->result()->type.dtype;
  const int64_t esz = dtype_bytes(d);
  const int last = l.rank() - 1;
  int V = !l.reg.empty() && l.reg[0].dim == last ? l.contiguous_regs(last) : 1;
  V = static_cast<int>(std::min<int64_t>(V, std::max<int64_t>(1, 16 / esz)));
  Pipelined p;
  p.load = op;
  p.convert = nullptr;
  Val& out = declare_regs(op->result());
  for (int g = 0; g < l.num_regs(); g += V) {
    std::vector<std::string> coords;
    for (int dim = 0; dim < l.rank(); ++dim) coords.push_back(coord(l, g, dim));
    const std::string at = fmt::format("tt_smem + {} + {}", slot, stage_offset(p, coords));
    if (V == 1) line(fmt::format("{}[{}] = *reinterpret_cast<const {}*>({});", out.name, g, ctype(d), at));
    else line(fmt::format("tt_vcopy<{}>(&{}[{}], {});", V * esz, out.name, g, at));
  }
  touched();
}

Lowering::StagePlan Lowering::stage_plan(const Pipelined& p) {
  const ir::Op* ld = p.load;
  const Layout& ll = layout(ld->result());
  const int contiguous = p.convert ? layout(p.convert->result()).order[0] : ll.rank() - 1;
  const int64_t esz = dtype_bytes(ld->result()->type.dtype);
  const bool masked = ld->operands.size() > 1;
  StagePlan plan;
  plan.vector = vector_width(ld, ll);
  if (ll.reg.empty() || ll.reg[0].dim != contiguous) plan.vector = 1;
  plan.vector = static_cast<int>(std::min<int64_t>(plan.vector, 16 / esz));
  // A one-element chunk takes any mask (its copy size is 0 or all); a wider one needs the mask
  // constant along the chunk. A layout with no registers (one element per thread: a per-row LSE
  // load of attention's backward in f32) has no register dim to look along - indexing it crashed.
  plan.async = plan.vector * esz >= 4 &&
               (!masked || plan.vector == 1 || mask_constant(ld->operand(1), contiguous, plan.vector));
  plan.owner = owner(ll);
  return plan;
}

void Lowering::issue_async_stage(const ir::Op* loop, const Pipelined& p, const StagePlan& plan, const std::string& ahead,
                                 const std::string& slot, const std::string& live) {
  const ir::Op* ld = p.load;
  const Layout& ll = layout(ld->result());
  const DType d = ld->result()->type.dtype;
  const bool masked = ld->operands.size() > 1;
  const std::string base = fmt::format("({} + ({}) * {})", p.offset, slot, p.stage_bytes);
  // Stages every thread issues share one guarded block (issue_stages): the address arithmetic of
  // the later trip (the tile of a fused loop nest's trip: divisions) is computed once for all.
  const bool own_block = !live.empty();
  if (own_block) {
    open(fmt::format("if ({}{})", live, plan.owner == "true" ? "" : " && " + plan.owner));
    ahead_memo_.clear();
  }
  for (int g = 0; g < ll.num_regs(); g += plan.vector) {
    std::vector<std::string> coords;
    for (int dim = 0; dim < ll.rank(); ++dim) coords.push_back(coord(ll, g, dim));
    std::string dst = fmt::format("tt_smem_base + {} + {}", base, stage_offset(p, coords));
    std::string src = ahead_value(ld->operand(0), g, ahead, loop);
    const int64_t bytes = plan.vector * dtype_bytes(d);
    std::string size = masked ? fmt::format("({} ? {} : 0)", ahead_value(ld->operand(1), g, ahead, loop), bytes)
                              : fmt::format("{}", bytes);
    line(fmt::format("tt_cp_async<{}>({}, {}, {});", bytes, dst, src, size));
  }
  if (own_block) {
    ahead_memo_.clear();
    close();
  }
}

// Loads every element of the stage into registers (each under its own mask) and leaves the stores
// to the caller, which issues them after the loads of every element stage of the refill.
void Lowering::load_element_stage(const ir::Op* loop, const Pipelined& p, const std::string& ahead, const std::string& slot,
                                  std::vector<std::string>& stores) {
  const ir::Op* ld = p.load;
  const Layout& ll = layout(ld->result());
  const DType d = ld->result()->type.dtype;
  const bool masked = ld->operands.size() > 1;
  const std::string base = fmt::format("({} + ({}) * {})", p.offset, slot, p.stage_bytes);
  for (int g = 0; g < ll.num_regs(); ++g) {
    std::vector<std::string> coords;
    for (int dim = 0; dim < ll.rank(); ++dim) coords.push_back(coord(ll, g, dim));
    std::string src = ahead_value(ld->operand(0), g, ahead, loop);
    std::string m = masked ? ahead_value(ld->operand(1), g, ahead, loop) : "";
    std::string x = masked ? fmt::format("({} ? *{} : {}{{}})", m, src, ctype(d)) : "*" + src;
    stores.push_back(fmt::format("*reinterpret_cast<{}*>(tt_smem + {} + {}) = {};", ctype(d), base,
                                 stage_offset(p, coords), tmp(ctype(d), x)));
  }
}

void Lowering::issue_stages(const ir::Op* loop, const std::vector<Pipelined>& pipes, const std::string& ahead,
                            const std::string& slot, const std::string& live) {
  // Element copies (no cp.async: under 4 bytes, or a mask that varies within a chunk - an im2col
  // gather) load every element of every such stage into registers first and store them after: a
  // warp issues in order, so with load-store pairs each st.shared waited for its load before the
  // next load was issued - one global latency per element (40 a trip in implicit_gemm_conv's
  // 128 x 32 x 32 tiles) - and a stage's stores and fence before the next stage's loads left the
  // overlap of the two stages' latencies to ptxas. Stages whose elements some threads share
  // (replicated layouts: `owner`) keep their own guarded block.
  std::vector<const Pipelined*> together, async_all;
  for (const Pipelined& p : pipes) {
    const StagePlan plan = stage_plan(p);
    if (plan.async && plan.owner == "true") async_all.push_back(&p);
    else if (plan.async) issue_async_stage(loop, p, plan, ahead, slot, live);
    else if (plan.owner == "true") together.push_back(&p);
    else {
      open(fmt::format("if ({} && {})", live, plan.owner));
      ahead_memo_.clear();
      std::vector<std::string> stores;
      load_element_stage(loop, p, ahead, slot, stores);
      for (const std::string& st : stores) line(st);
      // wgmma reads its operands through the async proxy: see below.
      if (cc_ >= 90 && wgmma_in_kernel()) line("tt_fence_async_shared();  // the stage's st.shared, before wgmma reads it");
      ahead_memo_.clear();
      close();
    }
  }
  if (!async_all.empty()) {
    open(fmt::format("if ({})", live));
    ahead_memo_.clear();
    for (const Pipelined* p : async_all) issue_async_stage(loop, *p, stage_plan(*p), ahead, slot, "");
    ahead_memo_.clear();
    close();
  }
  if (together.empty()) return;
  open(fmt::format("if ({})", live));
  ahead_memo_.clear();
  std::vector<std::string> stores;
  for (const Pipelined* p : together) load_element_stage(loop, *p, ahead, slot, stores);
  for (const std::string& st : stores) line(st);
  // wgmma reads its operands through the async proxy: a stage written by st.shared (the generic
  // proxy) must be fenced by each writer before the barrier that hands it over, or wgmma may read
  // stale bytes (seen on an H200: 61 wrong elements of a 256 x 256 product whose B rows were
  // gathered element by element). One fence covers every store before it.
  if (cc_ >= 90 && wgmma_in_kernel())
    line(fmt::format("tt_fence_async_shared();  // the stages' st.shared ({}), before wgmma reads them", together.size()));
  ahead_memo_.clear();
  close();
}

// Whether some dot of the kernel runs on wgmma, which reads shared memory through the async proxy
// (mma.sync's ldmatrix reads it through the generic one, like the stores: no proxy fence).
bool Lowering::wgmma_in_kernel() {
  bool wgmma = false;
  f_.walk([&](ir::Op* u) {
    wgmma = wgmma || (u->kind == OpKind::Dot && layout(u->result()).kind == LayoutKind::Mma && layout(u->result()).mma.version == 3);
  });
  return wgmma;
}

// cp.async writes shared memory in the generic proxy and wgmma reads it through the async proxy:
// each thread fences its landed copies into the async proxy before the barrier that hands the stage
// to the warpgroups (PTX's proxy rules; Triton fences its cp.async stages before wgmma too).
void Lowering::fence_cp_async_for_wgmma(const std::vector<Pipelined>& pipes) {
  if (cc_ < 90) return;
  bool any_async = false;
  for (const Pipelined& p : pipes) any_async = any_async || stage_plan(p).async;
  if (!any_async) return;
  const bool wgmma = wgmma_in_kernel();
  if (wgmma) line("tt_fence_async_shared();  // cp.async's writes (generic proxy), before wgmma reads them");
}

// Hints (tl::multiple_of, tl::max_contiguous) of the body name the value they hint: tutorial 08's
// `a_ptrs = tl::multiple_of(a_ptrs, {16, 16})` at the top of its K loop, then `a_ptrs += BK`, is
// still a pointer advanced by BK a trip.
static const ir::Value* through_hints(const ir::Value* v, const ir::Block* body) {
  while (v->def && v->def->parent == body && (v->def->kind == OpKind::MultipleOf || v->def->kind == OpKind::MaxContiguous))
    v = v->def->operand(0);
  return v;
}

void Lowering::find_inductions(const ir::Op* loop) {
  const ir::Block* body = loop->regions[0];
  const ir::Op* yield = body->ops.back();
  for (size_t i = 0; i + 3 < loop->operands.size(); ++i) {
    const ir::Value* arg = body->args[i + 1];
    const ir::Value* y = through_hints(yield->operand(i), body);
    if (!y->def || (y->def->kind != OpKind::AddPtr && y->def->kind != OpKind::Add) || y->def->parent != body) continue;
    const ir::Value* a = through_hints(y->def->operand(0), body);
    const ir::Value* s = y->def->operand(1);
    if (through_hints(s, body) == arg && y->def->kind == OpKind::Add) std::swap(a, s), a = through_hints(a, body);
    if (a == arg && invariant(s, loop)) inductions_[arg] = {s, y->def->kind == OpKind::AddPtr};
  }
}

// The pipelined loads and the pure ops of the body only they read (their masks and addresses: the
// stages compute their own from the definitions, ahead_value).
std::unordered_set<const ir::Op*> Lowering::skipped_ops(const ir::Op* loop, const std::vector<Pipelined>& pipes) {
  const ir::Block* body = loop->regions[0];
  std::unordered_set<const ir::Op*> skip;
  if (pipes.empty()) return skip;
  // A register load's op stays (it reads its slot); what only its address needs goes, as a tile's.
  std::unordered_map<const ir::Value*, int> skipped_uses;
  for (const Pipelined& p : pipes) {
    if (p.convert) skip.insert(p.load);
    for (const ir::Value* o : p.load->operands) ++skipped_uses[o];
  }
  for (auto it = body->ops.rbegin(); it != body->ops.rend(); ++it) {
    const ir::Op* o = *it;
    if (skip.count(o) || o->results.size() != 1 || !pure_kind(o->kind)) continue;
    const ir::Value* r = o->result();
    if (uses_[r] == 0 || skipped_uses[r] != uses_[r]) continue;
    skip.insert(o);
    for (const ir::Value* x : o->operands) ++skipped_uses[x];
  }
  return skip;
}

// A carried induction (a pointer block or offsets advanced by a loop-invariant step) that only the
// skipped ops read, whose advance only the yield reads and whose final value nothing reads, need
// not be carried: a TMA-filled trip, which reads no address, then spends nothing on it (and no
// registers hold it).
std::vector<size_t> Lowering::address_only_inductions(const ir::Op* loop, const std::unordered_set<const ir::Op*>& skip) {
  std::vector<size_t> out;
  if (skip.empty()) return out;
  const ir::Block* body = loop->regions[0];
  const ir::Op* yield = body->ops.back();
  for (size_t i = 0; i + 3 < loop->operands.size(); ++i) {
    const ir::Value* arg = body->args[i + 1];
    if (!inductions_.count(arg) || arg->type.is_scalar() || uses_[loop->results[i]] != 0) continue;
    const ir::Value* y = yield->operand(i);
    if (uses_[y] != 1) continue;
    // The advance reads the carried value itself (not through a hint, which the body still emits).
    if (!y->def || (y->def->operand(0) != arg && y->def->operand(1) != arg)) continue;
    int inside_uses = 0;
    for (const ir::Op* o : body->ops)
      if (skip.count(o))
        for (const ir::Value* x : o->operands) inside_uses += x == arg;
    if (inside_uses + 1 == uses_[arg]) out.push_back(i);  // + the advance
  }
  return out;
}

void Lowering::defer_address_defs(const ir::Block* block) {
  if (cc_ < 90) return;  // no TMA: nothing to skip
  for (size_t at = 0; at < block->ops.size(); ++at) {
    const ir::Op* loop = block->ops[at];
    if (loop->kind != OpKind::For) continue;
    find_inductions(loop);
    const std::vector<Pipelined> pipes = pipelinable(loop);
    const std::unordered_set<const ir::Op*> skip = skipped_ops(loop, pipes);
    const std::vector<size_t> unc = address_only_inductions(loop, skip);
    if (unc.empty()) continue;
    // Which use of a value the deferred code may serve: an uncarried init of this loop, a skipped
    // op of its body, or another deferred op.
    std::unordered_set<const ir::Op*> deferred;
    auto served = [&](const ir::Op* user, size_t operand) {
      if (user == loop) return operand >= 3 && std::find(unc.begin(), unc.end(), operand - 3) != unc.end();
      return deferred.count(user) > 0 || (user->parent == loop->regions[0] && skip.count(user) > 0);
    };
    std::unordered_map<const ir::Value*, std::vector<std::pair<const ir::Op*, size_t>>> users;
    f_.walk([&](ir::Op* u) {
      for (size_t k = 0; k < u->operands.size(); ++k) users[u->operand(k)].push_back({u, k});
    });
    for (size_t j = at; j-- > 0;) {
      const ir::Op* o = block->ops[j];
      if (deferred_defs_.count(o) || o->results.size() != 1 || !pure_kind(o->kind) || !o->result()->type.is_block())
        continue;
      const auto& us = users[o->result()];
      bool all = !us.empty();
      for (const auto& [u, k] : us) all = all && served(u, k);
      if (all) deferred.insert(o);
    }
    for (const ir::Op* o : deferred) deferred_defs_[o] = loop;
  }
}

void Lowering::emit_deferred_defs(const ir::Op* loop) {
  std::vector<const ir::Op*> ops;
  for (const ir::Op* o : loop->parent->ops)
    if (auto it = deferred_defs_.find(o); it != deferred_defs_.end() && it->second == loop) ops.push_back(o);
  for (const ir::Op* o : ops) deferred_defs_.erase(o);
  for (const ir::Op* o : ops) emit_op(o);  // in program order
}

// Register loads of a ring's loop (not tiles: a dot's scales, a bias) whose addresses the stages can
// compute for a later trip, through a parameter the loop does not store through, at most 32
// 32-bit registers a thread: issued a trip ahead, as Triton's pipeliner issues every such load of
// the loop early, so a trip does not wait for them after its tiles have landed.
std::vector<const ir::Op*> Lowering::register_prefetchable(const ir::Op* loop, const std::vector<Pipelined>& pipes) {
  std::vector<const ir::Op*> out;
  if (pipes.empty()) return out;
  const ir::Block* body = loop->regions[0];
  const auto [written, unknown] = loop_writes(body);
  for (const ir::Op* op : body->ops) {
    if (op->kind != OpKind::Load || !op->result()->type.is_block() || layout(op->result()).is_shared()) continue;
    bool tile = false;
    for (const Pipelined& p : pipes) tile = tile || p.load == op;
    if (tile) continue;
    const Layout& l = layout(op->result());
    if (l.num_regs() * std::max<int64_t>(1, dtype_bytes(op->result()->type.dtype) / 4) > 32) continue;
    const ir::Value* root = pointer_root(op->operand(0));
    if (unknown || (!root && !written.empty()) || std::find(written.begin(), written.end(), root) != written.end())
      continue;
    bool ok = true;
    for (const ir::Value* o : op->operands) ok = ok && ahead_computable(o, loop);
    if (ok) out.push_back(op);
  }
  return out;
}

void Lowering::issue_register_load(const ir::Op* loop, const ir::Op* load, const std::string& ahead,
                                   const std::string& array, const std::string& live) {
  const DType d = load->result()->type.dtype;
  const bool masked = load->operands.size() > 1, other = load->operands.size() > 2;
  auto at = [&](const ir::Value* x, int r) { return ahead_value(x, x->type.is_scalar() ? 0 : r, ahead, loop); };
  ahead_memo_.clear();
  open(fmt::format("if ({})", live));
  // Registers the layout keeps consecutive along the pointer's contiguous dim, one access of up to
  // 16 bytes as emit_load's (attention's m and delta: 2 columns a register pair, half the loads).
  const Layout& l = layout(load->result());
  if (const int V = masked ? 1 : vector_width(load, l); V > 1) {
    for (int g = 0; g < l.num_regs(); g += V)
      line(vector_load_of(load, int64_t{V} * dtype_bytes(d), fmt::format("&{}[{}]", array, g), at(load->operand(0), g)));
    close();
    ahead_memo_.clear();
    return;
  }
  for (int r = 0; r < l.num_regs(); ++r) {
    const std::string ptr = at(load->operand(0), r);
    const std::string access = load_of(load, ptr);
    if (!masked) {
      line(fmt::format("{}[{}] = {};", array, r, access));
      continue;
    }
    const std::string m = at(load->operand(1), r);
    line(fmt::format("{}[{}] = {} ? {} : {};", array, r, m, access, other ? at(load->operand(2), r) : ctype(d) + "{}"));
  }
  close();
  ahead_memo_.clear();
}

void Lowering::emit_register_ahead_load(const ir::Op* op) {
  const RegisterAhead& ra = register_ahead_.at(op);
  Val& out = declare_regs(op->result());
  line("#pragma unroll");
  line(fmt::format("for (int tt_r = 0; tt_r < {}; ++tt_r) {}[tt_r] = {}[tt_r];  // loaded a trip ago",
                   layout(op->result()).num_regs(), out.name, ra.array));
  issue_register_load(ra.loop, op, "1", ra.array, fmt::format("{} + 1 < {}", ra.trip, ra.trips));
}

void Lowering::emit_for(const ir::Op* op) {
  const ir::Block* body = op->regions[0];
  const size_t n = op->operands.size() - 3;
  const std::string lb = scalar(op->operand(0)), ub = scalar(op->operand(1)), step = scalar(op->operand(2));
  wait_mma();
  const ir::Op* yield = body->ops.back();
  // Divisions by divisors the loop does not change: magic numbers made here, once.
  const auto fast_divisors = plan_fast_division(op);
  find_inductions(op);
  std::vector<Pipelined> pipes = pipelinable(op);
  // Register loads join a cp.async ring (a TMA ring keeps them a trip ahead in registers: its
  // consumers wait on the copy engine's mbarriers, not on their own cp.async groups).
  if (!pipes.empty() && !plan_tma_ring(op, pipes))
    for (const Pipelined& p : ring_register_loads(op, pipes)) pipes.push_back(p);
  // As many stages as fit beside what is live and the body's own tiles (num_stages at most; fewer
  // rather than none, as the bytes allow; below two there is nothing to overlap).
  int S = num_stages_;
  if (!pipes.empty()) {
    int64_t ring = 0, body_tiles = body_margin_;  // and a margin for reductions' partials in the body
    for (const Pipelined& p : pipes) ring += p.stage_bytes;
    auto count = [&](ir::Op* o) {  // the body's tiles, in its branches too (a fused nest's epilogue)
      if (o->kind != OpKind::ConvertLayout) return;
      if (layout(o->result()).is_shared()) {
        bool staged = false;
        for (const Pipelined& p : pipes) staged = staged || p.convert == o;
        if (!staged) body_tiles += tile_bytes(layout(o->result()), o->result()->type.dtype) + 1024;
      } else if (o->parent != body && !same_thread_map(layout(o->operand(0)), layout(o->result()))) {
        // A conversion in a branch goes through shared memory while the ring is live (a fused nest's
        // epilogue storing C): rows padded by 16 bytes, as convert.cpp lays them out.
        const ir::Shape& sh = o->result()->type.shape;
        const int64_t esz = std::max<int64_t>(1, mem_bytes(o->result()->type.element()));
        body_tiles += numel(sh) / sh.back() * (sh.back() + (sh.size() >= 2 ? 16 / esz : 0)) * esz + 16;
      }
    };
    ir::Function::walk_block(const_cast<ir::Block*>(body), count);
    while (S >= 2 && smem_top_ + 1024 + ring * S + body_tiles > smem_budget_) --S;
    if (S < 2) pipes.clear();
  }
  // What only the pipelined loads read is not emitted in the body; inductions only that reads are
  // not carried (a stage computes them as init + trip * step: ahead_value).
  std::unordered_set<const ir::Op*> skip = skipped_ops(op, pipes);
  for (size_t i : address_only_inductions(op, skip)) {
    skip.insert(yield->operand(i)->def);
    uncarried_[body->args[i + 1]] = {op->operand(3 + i), "0"};
  }
  // Without a ring the deferred initial values are carried as usual: made before the loop.
  if (pipes.empty()) emit_deferred_defs(op);
  // Carried values: a variable (scalars) or an array in the carried layout.
  std::vector<std::string> carry(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::Value* arg = body->args[i + 1];
    const ir::Value* init = op->operand(3 + i);
    if (uncarried_.count(arg)) continue;
    if (arg->type.is_scalar()) {
      carry[i] = fresh("c");
      line(fmt::format("{} {} = {};", ctype(arg->type), carry[i], scalar(init)));
      scalars_[arg] = carry[i];
      continue;
    }
    const Val& in = val(init);
    Val& a = declare_regs(arg);
    carry[i] = a.name;
    line("#pragma unroll");
    line(fmt::format("for (int tt_r = 0; tt_r < {}; ++tt_r) {}[tt_r] = {};", layout(arg).num_regs(), a.name,
                     in.kind == Val::Kind::Regs ? in.name + "[tt_r]" : in.name));
  }
  // Dots whose wgmma group runs on into the next trip: the result is carried (yielded; read
  // otherwise only inside a branch of the body - a fused loop nest's epilogue, which waits for the
  // group where it reads it) and its accumulator comes from the carried value through ops that
  // update it in place (acc = dot(a, b, acc); attention's acc = dot(p, v, acc * alpha)), and the
  // tiles it reads are this loop's stages or from before the loop. The next trip's first wait
  // retires the group; the stages the previous trip read are refilled after it (and a barrier)
  // instead of at the trip's top.
  std::vector<std::pair<const ir::Op*, size_t>> deferred;  // dot, carried index
  auto read_only_in_branches = [&](const ir::Value* r) {
    for (const ir::Use& u : r->uses())
      if (u.user != yield && u.user->parent == body) return false;
    return true;
  };
  if (cc_ >= 90) {
    for (const ir::Op* o : body->ops) {
      if (o->kind != OpKind::Dot || layout(o->result()).kind != LayoutKind::Mma || layout(o->result()).mma.version != 3 ||
          !read_only_in_branches(o->result()))
        continue;
      size_t i = 0;
      while (i < yield->operands.size() && yield->operand(i) != o->result()) ++i;
      if (i == yield->operands.size()) continue;
      // The accumulator back to the carried value, each step its only use.
      const ir::Value* x = o->operand(2);
      const ir::Value* arg = body->args[i + 1];
      for (int depth = 0; depth < 8 && x != arg; ++depth) {
        if (!x->def || x->def->parent != body || !ir::is_elementwise(x->def->kind) || uses_[x] != 1) break;
        const ir::Value* next = nullptr;
        for (const ir::Value* in : x->def->operands)
          if (in->type == x->type && (in == arg || (in->def && ir::is_elementwise(in->def->kind)))) next = in;
        if (!next) break;
        x = next;
      }
      if (x != arg || uses_[arg] != 1) continue;
      bool tiles_ok = true;
      for (size_t k = 0; k < 2; ++k) {
        const ir::Value* t = o->operand(k);
        while (t->def && (t->def->kind == OpKind::Permute || t->def->kind == OpKind::MultipleOf) && t->def->parent == body)
          t = t->def->operand(0);
        if (!layout(t).is_shared()) continue;  // registers (P)
        bool staged = false;
        for (const Pipelined& p : pipes) staged = staged || (p.convert && p.convert->result() == t);
        tiles_ok = tiles_ok && (staged || (t->def && !inside(t->def, op)));
      }
      if (tiles_ok) deferred.push_back({o, i});
    }
  }
  std::optional<QuotientCache> qc;
  if (!pipes.empty()) qc = quotient_cache(op);
  std::string trips;
  std::optional<TmaRing> tma;
  if (!pipes.empty()) {
    for (Pipelined& p : pipes) p.offset = alloc_smem(p.stage_bytes * S, p.convert ? 1024 : 16);
    trips = tmp("int64_t", fmt::format("({2} > 0) ? ((int64_t){1} > (int64_t){0} ? ((int64_t){1} - {0} + {2} - 1) / {2} : 0) "
                                       ": ((int64_t){0} > (int64_t){1} ? ((int64_t){0} - {1} - {2} - 1) / -(int64_t){2} : 0)",
                                       lb, ub, step));
    line(fmt::format("// pipelined: {} load(s) into {} stages, {} trips ahead", pipes.size(), S, S - 1));
    tma = plan_tma_ring(op, pipes);
    if (tma) {
      tma->bar = fmt::format("(tt_smem_base + {})", alloc_smem(8 * S, 8));
      // The copy engine writes the ring through the async proxy: the threads' earlier writes to
      // these bytes (an earlier tile's) are ordered before it by a proxy fence and the barrier.
      line("tt_fence_async_shared();");
      synced_ = false;
    }
    sync();  // the ring's bytes may have been read before
    // The prefill's trip k is `k` trips after the first: the first trip's values are the inits.
    scalars_[body->args[0]] = lb;
    for (size_t i = 0; i < n; ++i) {
      const ir::Value* arg = body->args[i + 1];
      if (arg->type.is_scalar()) scalars_[arg] = carry[i];
    }
  }
  // Non-tile loads a trip ahead: their arrays, filled for the first trip before the loop.
  std::vector<const ir::Op*> reg_loads = register_prefetchable(op, pipes);
  auto register_prefill = [&]() {
    scalars_[body->args[0]] = lb;
    for (const ir::Op* ld : reg_loads) {
      RegisterAhead& ra = register_ahead_[ld];
      ra.loop = op;
      ra.array = fresh("ahead");
      ra.trips = trips;
      line(fmt::format("__align__(16) {} {}[{}];", ctype(ld->result()->type.dtype), ra.array, layout(ld->result()).num_regs()));
      sync_before_read(ld->operand(0));  // the program's own earlier stores through its parameter
      issue_register_load(op, ld, "0", ra.array, fmt::format("0 < {}", trips));
    }
  };
  auto cp_async_prefill = [&]() {
    for (const Pipelined& p : pipes)
      if (!p.convert) sync_before_read(p.load->operand(0));  // the program's own earlier stores (as register_prefill)
    scalars_[body->args[0]] = lb;
    for (int k = 0; k + 1 < S; ++k) {
      issue_stages(op, pipes, fmt::format("{}", k), fmt::format("{}", k), fmt::format("{} < {}", k, trips));
      line("tt_cp_async_commit();");
    }
  };
  // The loop itself: its stages filled by the threads' cp.async (`ring` null), or by TMA where the
  // bool `use_tma` holds and by cp.async where it does not.
  auto emit_loop = [&](const TmaRing* ring, const std::string& use_tma) {
    // Values the body's ops may have left from an earlier emission are not this one's: their arrays
    // must not count as sharing this emission's (reusable()). (Since stop 39 a loop is emitted once;
    // this stays as a guard.)
    auto forget = [&](ir::Op* o) {
      for (const ir::Value* r : o->results) vals_.erase(r), scalars_.erase(r);
    };
    ir::Function::walk_block(const_cast<ir::Block*>(body), forget);
    const std::string iv = fresh("iv"), trip = fresh("trip");
    const std::string ivt = ctype(body->args[0]->type);
    const size_t qdecl_at = body_.size();  // the quotient cache's registers go here, once known
    const int qdecl_indent = indent_;
    // Positive steps count up, negative ones down (Triton's range); the step is uniform.
    open(fmt::format("for ({0} {1} = {2}, {3} = 0; ({4} > 0) ? ({1} < {5}) : ({1} > {5}); {1} += {4}, ++{3})", ivt, iv,
                     lb, trip, step, ub));
    line(fmt::format("(void){};", trip));
    for (auto& [arg, u] : uncarried_)
      if (arg->owner == body) u.trip = trip;
    for (const ir::Op* ld : reg_loads) register_ahead_[ld].trip = trip;
    scalars_[body->args[0]] = iv;
    synced_ = false;  // the previous trip's accesses
    // A trip may read what the previous one stored (through a parameter it also stores through).
    auto stores = [&](ir::Op* o) {
      if (o->kind == OpKind::Store || is_atomic(o->kind)) mark_global_write(o->operand(0));
    };
    ir::Function::walk_block(const_cast<ir::Block*>(body), stores);
    if (!pipes.empty()) {
      line(fmt::format("const int tt_slot{} = (int)({} % {});", trip, trip, S));
      if (ring) {
        open(fmt::format("if ({})", use_tma));
        line(fmt::format("tt_mbarrier_wait({} + tt_slot{} * 8, (uint32_t)({} / {}) & 1u);  // this trip's tiles have landed",
                         ring->bar, trip, trip, S));
        close();
        open("else");
        line(fmt::format("tt_cp_async_wait<{}>();  // this trip's tiles", S - 2));
        fence_cp_async_for_wgmma(pipes);
        if (!deferred.empty()) line("__syncthreads();  // ... are everyone's");
        close();
        if (deferred.empty()) {
          line("__syncthreads();  // the slot the previous trip read is free (and cp.async's tiles are everyone's)");
          synced_ = true;
        }
      } else {
        line(fmt::format("tt_cp_async_wait<{}>();  // this trip's tiles", S - 2));
        fence_cp_async_for_wgmma(pipes);
        line(!deferred.empty() ? "__syncthreads();  // ... are everyone's"
                               : "__syncthreads();  // ... are everyone's; the slot the previous trip read is free");
        synced_ = true;
      }
      auto refill = [this, op, &pipes, S, trip, trips, ring, use_tma, &qc]() {
        const std::string ahead = fmt::format("{}", S - 1), slot = fmt::format("(({} + {}) % {})", trip, S - 1, S),
                          live = fmt::format("{} + {} < {}", trip, S - 1, trips);
        if (ring) {
          open(fmt::format("if ({})", use_tma));
          issue_tma_stage(op, pipes, *ring, ahead, fmt::format("({} + {})", trip, S - 1), slot, live);
          close();
          open("else");
        }
        const size_t at = body_.size();
        qcache_ = qc ? &*qc : nullptr;
        issue_stages(op, pipes, ahead, slot, live);
        qcache_ = nullptr;
        if (qc && !qc->entries.empty()) {
          // The cached values, made again when the refilled trip's quotient is not theirs.
          const std::string stages = body_.substr(at);
          body_.resize(at);
          ahead_memo_.clear();
          const std::string q = ahead_value(qc->root, 0, ahead, op);
          line("// the refilled trip's quotient changed: its cached values made again");
          open(fmt::format("if ({} && (!{} || {} != {}))", live, qc->valid, q, qc->q));
          for (const QuotientCache::Entry& e : qc->entries) line(fmt::format("{} = {};", e.name, ahead_value(e.v, e.r, ahead, op)));
          line(fmt::format("{} = {};", qc->q, q));
          line(fmt::format("{} = true;", qc->valid));
          close();
          ahead_memo_.clear();
          body_ += stages;
        }
        line("tt_cp_async_commit();");
        if (ring) close();
      };
      if (!deferred.empty()) retire_hook_ = refill;
      else refill();
      for (const Pipelined& p : pipes)
        stage_slot_[p.convert ? p.convert : p.load] = fmt::format("({} + tt_slot{} * {})", p.offset, trip, p.stage_bytes);
    }
    // The previous trip's deferred groups, as the body sees them at its top (none at the first trip:
    // waiting for them then is waiting for nothing).
    for (auto [d, i] : deferred) {
      deferred_dots_.insert(d);
      deferred_accs_.insert(carry[i]);
      const ir::Value* r = d->result();
      pending_mma_.push_back({carry[i], 1, true, layout(r).num_regs(), is_int(r->type.dtype)});
    }
    {
      const size_t live = smem_live_.size();
      for (const ir::Op* o : body->ops)
        if (!skip.count(o)) emit_op(o);
      if (smem_live_.size() > live) {
        wait_mma();
        sync();
        while (smem_live_.size() > live) free_smem(smem_live_.back().first);
      }
    }
    if (deferred.empty()) wait_mma();
    // The yield: carried values take the yielded ones (through copies when one reads another's array).
    std::vector<std::string> next(n);
    for (size_t i = 0; i < n; ++i) {
      const ir::Value* y = yield->operand(i);
      if (uncarried_.count(body->args[i + 1])) continue;
      if (y->type.is_scalar()) {
        next[i] = tmp(ctype(y->type), scalar(y));
        continue;
      }
      const Val& v = vals_.at(y);  // not val(): an array updated in place is not read (its wgmma may run on)
      bool reads_other = false;
      for (size_t j = 0; j < n; ++j) reads_other = reads_other || (j != i && v.kind == Val::Kind::Regs && v.name == carry[j]);
      if (reads_other) {
        wait_mma_for(v.name);
        std::string t = fresh("y");
        line(fmt::format("{} {}[{}];", ctype(y->type.element()), t, layout(y).num_regs()));
        line(fmt::format("for (int tt_r = 0; tt_r < {}; ++tt_r) {}[tt_r] = {}[tt_r];", layout(y).num_regs(), t, v.name));
        next[i] = t;
      } else {
        next[i] = v.kind == Val::Kind::Regs ? v.name : "=" + v.name;
      }
    }
    for (size_t i = 0; i < n; ++i) {
      const ir::Value* arg = body->args[i + 1];
      if (uncarried_.count(arg)) continue;
      if (arg->type.is_scalar()) {
        line(fmt::format("{} = {};", carry[i], next[i]));
        continue;
      }
      if (next[i] == carry[i]) continue;  // updated in place
      if (next[i][0] != '=') wait_mma_for(next[i]);  // a copy reads the registers: their wgmma must be done
      line("#pragma unroll");
      if (next[i][0] == '=')
        line(fmt::format("for (int tt_r = 0; tt_r < {}; ++tt_r) {}[tt_r] = {};", layout(arg).num_regs(), carry[i],
                         next[i].substr(1)));
      else
        line(fmt::format("for (int tt_r = 0; tt_r < {}; ++tt_r) {}[tt_r] = {}[tt_r];", layout(arg).num_regs(), carry[i],
                         next[i]));
    }
    close();
    if (qc && !qc->entries.empty()) {
      std::string decls;
      const std::string pad(static_cast<size_t>(2 * qdecl_indent), ' ');
      for (const QuotientCache::Entry& e : qc->entries) decls += fmt::format("{}{} {} = {}{{}};\n", pad, e.type, e.name, e.type);
      decls += fmt::format("{}bool {} = false;\n{}{} {} = 0;\n", pad, qc->valid, pad, ctype(qc->root->type), qc->q);
      body_.insert(qdecl_at, decls);
    }
    for (auto [d, i] : deferred) deferred_dots_.erase(d), deferred_accs_.erase(carry[i]);
    if (retire_hook_) fail("internal error: a loop's stages were never refilled (no wgmma wait in its body)");
    wait_mma();
    synced_ = false;
  };
  if (tma) {
    // Stages through TMA where every tile's plan holds (tested once, before the loop), through
    // cp.async otherwise (an index that wraps, a tensor no map describes): a wrong guess costs
    // speed only. One loop; its waits and refills branch on the guard.
    const std::string use_tma = tmp("bool", tma->guard);
    line(fmt::format("// stages filled by TMA under its guard ({} bulk tensor copies a stage), by cp.async otherwise",
                     [&] {
                       int64_t copies = 0;
                       for (const Pipelined& p : pipes) copies += p.load->result()->type.shape[1] / 64;
                       return copies;
                     }()));
    const size_t decl_at = body_.size();
    begin_tma_ring(op, pipes, *tma, S, trips, use_tma);
    open("else");
    std::string decls;
    predecl_ = &decls;
    predecl_indent_ = indent_ - 1;
    emit_deferred_defs(op);  // the fallback's initial addresses: not computed where TMA fills the ring
    predecl_ = nullptr;
    cp_async_prefill();
    close();
    body_.insert(decl_at, decls);
    line("__syncthreads();  // the mbarriers are initialised for every thread");
    register_prefill();
    emit_loop(&*tma, use_tma);
    open(fmt::format("if ({})", use_tma));
    end_tma_ring(*tma, S);
    close();
    open("else");
    line("tt_cp_async_wait<0>();  // no copy lands after the loop");
    close();
    synced_ = false;
  } else {
    emit_deferred_defs(op);
    if (!pipes.empty()) cp_async_prefill();
    register_prefill();
    emit_loop(nullptr, "");
    if (!pipes.empty()) line("tt_cp_async_wait<0>();  // no copy lands after the loop");
  }
  for (const ir::Op* ld : reg_loads) register_ahead_.erase(ld);
  if (!pipes.empty()) {
    sync();
    if (tma) free_smem(smem_live_.back().first);  // the mbarriers
    for (auto it = pipes.rbegin(); it != pipes.rend(); ++it) free_smem(it->offset);
    for (const Pipelined& p : pipes) stage_slot_.erase(p.convert ? p.convert : p.load);
  }
  for (const auto& key : fast_divisors) fastdiv_.erase(key);  // their variables' scope may end
  for (size_t i = 0; i < n; ++i) {
    const ir::Value* r = op->results[i];
    if (uncarried_.erase(body->args[i + 1])) continue;  // nothing reads it after the loop
    if (r->type.is_scalar()) {
      scalars_[r] = carry[i];
      continue;
    }
    Val& v = vals_[r];
    v.kind = Val::Kind::Regs;
    v.name = carry[i];
    v.layout = &layout(r);
  }
}

void Lowering::emit_if(const ir::Op* op) {
  // A loop's wgmma groups in flight (deferred dots) stay in flight past a branch: a read in the
  // branch waits for them there (val()). After the branch they count as still in flight (waiting
  // again is free), and the loop's refill, which needs every thread, is not run inside a branch.
  // Other groups are waited for first, as everywhere before a region.
  bool only_deferred = !pending_mma_.empty();
  for (const PendingMma& p : pending_mma_) only_deferred = only_deferred && deferred_acc(p.acc);
  if (!only_deferred) wait_mma();
  const std::vector<PendingMma> pending = pending_mma_;
  auto hook = std::move(retire_hook_);
  retire_hook_ = nullptr;
  std::vector<std::string> outs;
  for (const ir::Value* r : op->results) {
    if (r->type.is_scalar()) {
      std::string n = fresh("if");
      line(fmt::format("{} {};", ctype(r->type), n));
      outs.push_back(n);
      scalars_[r] = n;
    } else {
      outs.push_back(declare_regs(r).name);
    }
  }
  const bool was_synced = synced_;
  for (size_t b = 0; b < op->regions.size(); ++b) {
    open(b == 0 ? fmt::format("if ({})", scalar(op->operand(0))) : "else");
    synced_ = was_synced;
    pending_mma_ = pending;
    emit_block(op->regions[b]);
    // Groups the branch issued end in it (the in-flight ones above may end too: wait_group waits
    // for every older group).
    if (pending_mma_.size() > pending.size() ||
        !std::equal(pending_mma_.begin(), pending_mma_.end(), pending.begin(),
                    [](const PendingMma& x, const PendingMma& y) { return x.acc == y.acc; }))
      wait_mma();
    const ir::Op* y = op->regions[b]->ops.empty() ? nullptr : op->regions[b]->ops.back();
    for (size_t i = 0; i < op->results.size(); ++i) {
      const ir::Value* v = y->operand(i);
      if (v->type.is_scalar()) {
        line(fmt::format("{} = {};", outs[i], scalar(v)));
        continue;
      }
      const Val& x = val(v);
      line("#pragma unroll");
      line(fmt::format("for (int tt_r = 0; tt_r < {}; ++tt_r) {}[tt_r] = {};", layout(op->results[i]).num_regs(), outs[i],
                       x.kind == Val::Kind::Regs ? x.name + "[tt_r]" : x.name));
    }
    close();
  }
  pending_mma_ = pending;
  retire_hook_ = std::move(hook);
  synced_ = false;
}

void Lowering::emit_while(const ir::Op* op) {
  wait_mma();
  const ir::Block* before = op->regions[0];
  const ir::Block* body = op->regions[1];
  std::vector<std::string> carry;
  for (size_t i = 0; i < op->operands.size(); ++i) {
    if (op->operand(i)->type.is_block()) fail(op->loc, "a tl::while_ loop carries blocks; use tl::range");
    std::string c = fresh("w");
    line(fmt::format("{} {} = {};", ctype(op->operand(i)->type), c, scalar(op->operand(i))));
    carry.push_back(c);
    scalars_[before->args[i]] = c;
    scalars_[body->args[i]] = c;
  }
  open("while (true)");
  synced_ = false;
  emit_block(before);
  const ir::Op* cy = before->ops.back();
  line(fmt::format("if (!({})) break;", scalar(cy->operand(0))));
  emit_block(body);
  const ir::Op* by = body->ops.back();
  std::vector<std::string> next;
  for (size_t i = 0; i < carry.size(); ++i) next.push_back(tmp(ctype(op->operand(i)->type), scalar(by->operand(i))));
  for (size_t i = 0; i < carry.size(); ++i) line(fmt::format("{} = {};", carry[i], next[i]));
  line("__syncthreads();");
  close();
  synced_ = true;
  for (size_t i = 0; i < op->results.size(); ++i) scalars_[op->results[i]] = carry[i];
}

}  // namespace tritium::jit::cuda::lowering
