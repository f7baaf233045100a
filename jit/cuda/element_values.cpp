// Where the element-loop generator keeps block values (codegen_impl.h, "Register values"): buffers
// in shared memory or the global scratch, per-thread register arrays (which values get them:
// plan_registers), and filling, copying and spilling either kind.
#include <functional>

#include "jit/cuda/codegen_impl.h"

namespace tritium::jit::cuda::detail {

std::string Codegen::alloc_buffer(const ir::Type& t) {
  int64_t bytes = (t.numel() * mem_bytes(t) + 15) / 16 * 16;
  std::string name = fresh("buf");
  std::string ct = ctype(t.element());
  if (smem_ + bytes <= smem_budget_) {
    decls_ += fmt::format("  {}* const {} = reinterpret_cast<{}*>(tt_smem + {});  // {} (shared)\n", ct, name, ct,
                          smem_, t.str());
    smem_ += bytes;
  } else {
    decls_ += fmt::format("  {}* const {} = reinterpret_cast<{}*>(tt_scratch_cta + {});  // {} (global scratch)\n",
                          ct, name, ct, scratch_, t.str());
    scratch_ += bytes;
    scratch_bufs_.insert(name);
  }
  return name;
}

std::string Codegen::alloc_shared(const std::string& ct, int64_t count, int64_t elem_bytes) {
  std::string name = fresh("sh");
  decls_ += fmt::format("  {}* const {} = reinterpret_cast<{}*>(tt_smem + {});\n", ct, name, ct, smem_);
  smem_ += (count * elem_bytes + 15) / 16 * 16;
  return name;
}

int64_t Codegen::register_words(const ir::Type& t, int V) {
  int64_t step = int64_t(nt_) * V;
  int64_t per_thread = (t.numel() + step - 1) / step * V;
  return per_thread * std::max<int64_t>(1, mem_bytes(t) / 4);
}

bool Codegen::only_own_elements(const ir::Value* v) {
  if (auto it = reg_ok_.find(v); it != reg_ok_.end()) return it->second;
  reg_ok_[v] = false;  // cycles (none in SSA) stay conservative
  bool ok = true;
  for (const ir::Op* u : plan_.users(v)) {
    if (is_atomic(u->kind)) {  // Liger's attn_res backward: dW accumulators spilled, never read back
      ok = atomic_reads_own(u, v);
      if (!ok) break;
      continue;
    }
    switch (u->kind) {
      case OpKind::Store: ok = u->operand(0)->type.shape == v->type.shape; break;
      case OpKind::Reduce: {
        const Shape& s = u->operand(0)->type.shape;
        ok = s == v->type.shape && (numel(s) == s[static_cast<size_t>(u->attrs.axis)] || lane_group(u) > 0);
        break;
      }
      case OpKind::Scan: ok = u->operand(0)->type.shape == v->type.shape && register_scan(u); break;
      case OpKind::Yield: ok = u->parent->parent && (u->parent->parent->kind == OpKind::For ||
                                                    u->parent->parent->kind == OpKind::If);
        break;
      case OpKind::For: ok = u->operands.size() > 3 && u->operands[0] != v && u->operands[1] != v && u->operands[2] != v;
        break;
      default:
        if (ir::is_elementwise(u->kind) || u->kind == OpKind::Load || u->kind == OpKind::MultipleOf ||
            u->kind == OpKind::MaxContiguous) {
          const ir::Value* r = u->result();
          ok = r->type.is_block() && r->type.shape == v->type.shape &&
               (plan_.materialized(r) || only_own_elements(r));
        } else {
          ok = false;
        }
    }
    if (!ok) break;
  }
  reg_ok_[v] = ok;
  return ok;
}

int Codegen::mapped_width(const Shape& s) {
  if (auto it = mapped_width_.find(s); it != mapped_width_.end()) return it->second;
  auto it = widest_access_.find(s);
  int V = it == widest_access_.end() ? 1 : it->second;
  while (V > 1 && s.back() % V != 0) V /= 2;
  while (V > 1 && numel(s) / V < nt_) V /= 2;
  return V;
}

void Codegen::plan_registers() {
  // A shape's mapping takes its widest access, but never more lanes a thread than a vector store
  // of it moves in 16 bytes: V lanes of a wider store go out as several 16-byte stores whose
  // warp instruction writes half of twice the lines (an int32 cumsum's int64 output: 0.77 of
  // Triton, which converts to a layout of 2 lanes a thread before the store). Narrower loads then
  // take fewer bytes a thread, still consecutive over the warp. Only stores that run as often as
  // the shape's loads cap it: a row loop's loads outweigh a partial-sum row stored once after it
  // (Liger's norm backwards: bf16 rows a trip, an f32 dW row at the end).
  struct Capping {
    Shape shape;
    int depth, lanes;
  };
  std::map<Shape, int> load_depth;
  std::vector<Capping> caps;
  std::function<void(const ir::Block*, int)> visit = [&](const ir::Block* b, int depth) {
    for (const ir::Op* op : b->ops) {
      if ((op->kind == OpKind::Load || op->kind == OpKind::Store) && op->operand(0)->type.is_block()) {
        const Shape& s = op->operand(0)->type.shape;
        const int w = access_width(op);
        widest_access_[s] = std::max(widest_access_[s], w);
        if (op->kind == OpKind::Load) load_depth[s] = std::max(load_depth[s], depth);
        else if (w > 1) caps.push_back({s, depth, std::max(1, 16 / std::max(1, dtype_bytes(op->operand(0)->type.pointee)))});
      }
      const int inner = depth + (op->kind == OpKind::For || op->kind == OpKind::While ? 1 : 0);
      for (const ir::Block* r : op->regions) visit(r, inner);
    }
  };
  visit(f_.body, 0);
  for (const Capping& c : caps)
    if (c.depth >= load_depth[c.shape]) widest_access_[c.shape] = std::min(widest_access_[c.shape], c.lanes);
  auto fits = [&](const ir::Value* v) {
    if (!v->type.is_block() || v->type.rank() == 0) return false;
    return register_words(v->type, mapped_width(v->type.shape)) <= kMaxRegisterWords;
  };
  auto take = [&](const ir::Value* v) {
    reg_planned_.insert(v);
    mapped_width_[v->type.shape] = mapped_width(v->type.shape);
  };
  f_.walk([&](ir::Op* op) {
    switch (op->kind) {
      case OpKind::Reduce: {
        // Rows reduced in lane groups: the loop nests over the operand's shape take the mapping.
        const Shape& s = op->operand(0)->type.shape;
        if (lane_group(op) > 0) mapped_width_[s] = mapped_width(s);
        return;
      }
      case OpKind::Scan:  // in registers where the mapping allows (element_scan.cpp)
        if (register_scan(op))
          for (const ir::Value* r : op->results) take(r);
        return;
      case OpKind::Histogram: case OpKind::Gather: case OpKind::Split: return;  // buffers of their own
      case OpKind::For: {
        const ir::Block* body = op->regions[0];
        for (size_t i = 0; i < op->results.size(); ++i) {
          const ir::Value* arg = body->args[1 + i];
          if (!fits(arg) || !only_own_elements(arg)) continue;
          take(arg);
          take(op->results[i]);
          if (!only_own_elements(op->results[i])) reg_spill_.insert(op->results[i]);
        }
        return;
      }
      case OpKind::If:
        for (const ir::Value* r : op->results)
          if (fits(r)) {
            take(r);
            if (!only_own_elements(r)) reg_spill_.insert(r);
          }
        return;
      default: break;
    }
    if (is_atomic(op->kind) || op->results.size() != 1) return;
    const ir::Value* r = op->result();
    if (!plan_.materialized(r) || !fits(r)) return;
    if (only_own_elements(r)) take(r);
  });
  // A load a loop body uses once is evaluated inline, inside its consumer, so it could not be
  // issued a trip ahead (pipelined_loads takes register values only): Liger's RMSNorm backward
  // prefetched dY (used three times) but waited for X (used once, by its cast to f32) every row.
  // Such a load gets registers of its own when the loop would pipeline it, while the copies a
  // trip ahead stay within kMaxPrefetchWordsPerLoop registers.
  if (num_stages_ < 2) return;
  f_.walk([&](ir::Op* loop) {
    if (loop->kind != OpKind::For || at_most_one_trip(loop)) return;
    const ir::Block* body = loop->regions[0];
    const BodyMemory memory = body_memory(loop);
    auto words = [&](const ir::Op* op) { return register_words(op->result()->type, mapped_width(op->result()->type.shape)); };
    int64_t ahead = 0;
    for (const ir::Op* op : body->ops)
      if (op->kind == OpKind::Load && reg_planned_.count(op->result()) && pipelinable_load(op, body, memory)) ahead += words(op);
    for (const ir::Op* op : body->ops) {
      if (op->kind != OpKind::Load || op->results.size() != 1) continue;
      const ir::Value* r = op->result();
      if (reg_planned_.count(r) || plan_.materialized(r) || !fits(r) || !only_own_elements(r)) continue;
      if (ahead + words(op) > kMaxPrefetchWordsPerLoop || !pipelinable_load(op, body, memory)) continue;
      take(r);
      ahead += words(op);
    }
  });
}

bool Codegen::replicated(const Shape& s) const {
  const int64_t n = numel(s);
  return n <= 32 && n < nt_ && (n & (n - 1)) == 0 && mapped(s, 1);
}

bool Codegen::mapped(const Shape& s, int V) const {
  auto it = mapped_width_.find(s);
  return it != mapped_width_.end() && it->second == V;
}

std::string Codegen::register_at(const std::string& array, const ir::Value* v, const Index& idx) {
  if (!loop_.active || v->type.shape != loop_.shape || idx.size() != loop_.base.size()) return "";
  for (size_t d = 0; d + 1 < idx.size(); ++d)
    if (idx[d] != loop_.base[d]) return "";
  const std::string& b = loop_.base.back();
  std::string lane;
  if (idx.back() == b) lane = "0";
  else if (std::string pre = "(" + b + " + "; idx.back().rfind(pre, 0) == 0 && idx.back().back() == ')')
    lane = idx.back().substr(pre.size(), idx.back().size() - pre.size() - 1);
  else return "";
  return fmt::format("{}[{} * {} + {}]", array, loop_.k, loop_.V, lane);
}

std::string Codegen::declare_registers(const ir::Type& t) {
  int V = mapped_width(t.shape);
  int64_t step = int64_t(nt_) * V;
  std::string name = fresh("r");
  line(fmt::format("{} {}[{}];  // {} in registers", ctype(t.element()), name, (t.numel() + step - 1) / step * V, t.str()));
  return name;
}

void Codegen::fill_registers(const std::string& array, const ir::Value* v, const ir::Op* op) {
  std::vector<const ir::Value*> reads = {v};
  if (op) reads.assign(op->operands.begin(), op->operands.end());
  sync_if_reading(reads);
  const Shape& s = v->type.shape;
  int V = mapped_width(s);
  const bool saved = replicate_ok_;
  replicate_ok_ = true;  // registers only: every copy of a small block computes its element
  thread_loop(
      s, V, [&](const Index& base) { emit_vector_loads({v}, base, V); },
      [&](const Index& idx) {
        std::string x = op ? eval_op(op, idx) : eval(v, idx);
        line(fmt::format("{}[{} * {} + {}] = {};", array, loop_.k, V, lane_, x));
      },
      nullptr);
  replicate_ok_ = saved;
  vec_loads_.clear();
}

void Codegen::copy_registers(const std::string& to, const std::string& from) {
  std::string j = fresh("j");
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < (int)(sizeof({1}) / sizeof({1}[0])); ++{0}) {1}[{0}] = {2}[{0}];", j, to,
                   from));
}

void Codegen::spill_registers(const ir::Value* v) {
  std::string buf = alloc_buffer(v->type);
  materialize_into(v, buf);
  buffers_[v] = buf;
}

void Codegen::materialize_into(const ir::Value* v, const std::string& buf, const ir::Op* op) {
  ++shared_writes_;
  sync();
  int V = choose_width(v->type.shape, {v}, nullptr);
  thread_loop(
      v->type.shape, V, [&](const Index& base) { emit_vector_loads({v}, base, V); },
      [&](const Index& idx) {
        std::string x = op ? eval_op(op, idx) : eval(v, idx);
        line(fmt::format("{}[{}] = {};", buf, flatten(idx, v->type.shape), x));
      },
      nullptr);
  vec_loads_.clear();
  sync();
}

void Codegen::copy_buffer(const std::string& from, const std::string& to, const ir::Type& t) {
  ++shared_writes_;
  sync();
  std::string e = fresh("e");
  line(fmt::format("for (int {0} = tid; {0} < {1}; {0} += {2}) {3}[{0}] = {4}[{0}];", e, t.numel(), nt_, to, from));
  sync();
}

}  // namespace tritium::jit::cuda::detail
