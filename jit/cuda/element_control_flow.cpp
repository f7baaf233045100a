// Control flow in the element-loop generator: tl::range loops (carried scalars, registers and
// buffers; loads issued trips ahead, software pipelining),
// while loops and if (barriers after them: element_barriers.cpp).
#include "jit/cuda/codegen_impl.h"

namespace tritium::jit::cuda::detail {

bool Codegen::iteration_invariant_but_iv(const ir::Value* v, const ir::Block* body) {
  if (v->is_block_arg()) return v->owner != body || v == body->args[0];
  if (v->def->parent != body) return true;  // defined before the loop, in an enclosing scope
  const ir::Op* d = v->def;
  if (v->type.is_block() && (plan_.materialized(v) || reg_planned_.count(v))) return false;
  bool pure = d->kind == OpKind::Constant || d->kind == OpKind::Arange || d->kind == OpKind::Splat ||
              d->kind == OpKind::Broadcast || d->kind == OpKind::ExpandDims || d->kind == OpKind::MultipleOf ||
              d->kind == OpKind::MaxContiguous || (ir::is_elementwise(d->kind) && d->kind != OpKind::Load);
  if (!pure) return false;
  for (const ir::Value* o : d->operands)
    if (!iteration_invariant_but_iv(o, body)) return false;
  return true;
}

Codegen::BodyMemory Codegen::body_memory(const ir::Op* loop) {
  const ir::Block* body = loop->regions[0];
  BodyMemory m;
  auto note = [&](ir::Op* op) {
    bool writes = op->kind == OpKind::Store || is_atomic(op->kind);
    if (!writes && op->kind != OpKind::Load) return;
    const ir::Value* r = pointer_root(op->operand(0));
    if (r) (writes ? m.written : m.read).push_back(r);
    else (writes ? m.unknown_written : m.unknown_read) = true;
  };
  ir::Function::walk_block(const_cast<ir::Block*>(body), note);
  if (!m.unknown_written && !m.unknown_read)
    for (const ir::Value* w : m.written)
      if (!m.disjoint(w) && trips_touch_disjoint_memory(loop, w)) m.disjoint_trips.push_back(w);
  return m;
}

std::vector<const ir::Op*> Codegen::pipelined_loads(const ir::Block* body, const BodyMemory& memory) {
  std::vector<const ir::Op*> out;
  if (num_stages_ < 2) return out;
  for (const ir::Op* op : body->ops)
    if (op->kind == OpKind::Load && reg_planned_.count(op->result()) && pipelinable_load(op, body, memory)) out.push_back(op);
  return out;
}

bool Codegen::at_most_one_trip(const ir::Op* loop) {
  auto constant = [](const ir::Value* v, int64_t& c) {
    if (!v->def || v->def->kind != OpKind::Constant || !v->type.is_scalar() || !is_int(v->type.dtype)) return false;
    c = v->def->attrs.ival;
    return true;
  };
  const ir::Value* lb = loop->operand(0);
  int64_t step = 0;
  if (!constant(loop->operand(2), step) || step <= 0) return false;
  // min(a, b) <= a: one term of lb + c bounds the trips by ceil(c / step).
  std::function<bool(const ir::Value*)> bounded = [&](const ir::Value* v) {
    const ir::Op* d = v->def;
    if (!d) return false;
    if (d->kind == OpKind::Min) return bounded(d->operand(0)) || bounded(d->operand(1));
    if (d->kind != OpKind::Add) return false;
    int64_t c = 0;
    for (size_t i = 0; i < 2; ++i)
      if (d->operand(i) == lb && constant(d->operand(1 - i), c) && c <= step) return true;
    return false;
  };
  return bounded(loop->operand(1));
}

bool Codegen::pipelinable_load(const ir::Op* op, const ir::Block* body, const BodyMemory& memory) {
  // A second copy of a long row costs occupancy more than the overlap gains (softmax over
  // 16384 columns: 222 registers, one CTA per SM); such loads stay in place.
  if (register_words(op->result()->type, mapped_width(op->result()->type.shape)) > kMaxPrefetchWords) return false;
  if (memory.may_write(pointer_root(op->operand(0)))) return false;
  for (const ir::Value* o : op->operands)
    if (!iteration_invariant_but_iv(o, body)) return false;
  return true;
}

std::unordered_map<const ir::Value*, std::string> Codegen::bind_trip(const ir::Op* loop,
                                                                     const std::vector<const ir::Value*>& roots,
                                                                     const std::string& iv) {
  const ir::Block* body = loop->regions[0];
  auto saved = scalars_;
  scalars_[body->args[0]] = iv;
  std::unordered_set<const ir::Value*> needed;
  std::function<void(const ir::Value*)> need = [&](const ir::Value* v) {
    if (v->is_block_arg() || v->def->parent != body || !needed.insert(v).second) return;
    for (const ir::Value* o : v->def->operands) need(o);
  };
  for (const ir::Value* r : roots) need(r);
  for (const ir::Op* op : body->ops)  // in program order (the current trip's bindings are replaced)
    if (op->results.size() == 1 && op->result()->type.is_scalar() && needed.count(op->result()))
      scalars_[op->result()] = tmp(ctype(op->result()->type), emit_scalar(op));
  return saved;
}

void Codegen::prefetch(const ir::Op* loop, const std::vector<const ir::Op*>& loads,
                       const std::vector<std::string>& arrays, const std::string& iv) {
  std::vector<const ir::Value*> roots;
  for (const ir::Op* ld : loads) roots.insert(roots.end(), ld->operands.begin(), ld->operands.end());
  auto saved = bind_trip(loop, roots, iv);
  for (size_t i = 0; i < loads.size(); ++i) fill_registers(arrays[i], loads[i]->result(), loads[i]);
  scalars_ = std::move(saved);
}

void Codegen::emit_for(const ir::Op* op) {
  const ir::Block* body = op->regions[0];
  size_t n = op->results.size();
  // Each carried value is a scalar variable, a per-thread register array or a buffer.
  std::vector<std::string> vars(n), carried_regs(n), carried_bufs(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::Value* init = op->operands[3 + i];
    const ir::Value* arg = body->args[1 + i];
    if (arg->type.is_scalar()) {
      vars[i] = fresh("c");
      line(fmt::format("{} {} = {};", ctype(arg->type), vars[i], scalar(init)));
    } else if (reg_planned_.count(arg)) {
      carried_regs[i] = declare_registers(arg->type);
      fill_registers(carried_regs[i], init);
      regs_[arg] = regs_[op->results[i]] = carried_regs[i];
    } else {
      std::string buf = alloc_buffer(arg->type);
      if (auto it = buffers_.find(init); it != buffers_.end()) copy_buffer(it->second, buf, arg->type);
      else materialize_into(init, buf);
      carried_bufs[i] = buffers_[arg] = buffers_[op->results[i]] = buf;
    }
  }
  // Software pipelining: the loads of iteration i + 1 are issued at the top of iteration i, into
  // registers the body does not read until the next iteration.
  const BodyMemory memory = body_memory(op);
  // (A loop of at most one trip has nothing to overlap: FlagGems' cumsum block kernels, one tile a
  // program, held a second copy of the tile for a trip that never runs - 88 registers, not 56.)
  std::vector<const ir::Op*> ahead;
  if (!at_most_one_trip(op)) ahead = pipelined_loads(body, memory);
  // Small loads go num_stages - 1 trips ahead (softmax over 1024 columns: 4 registers a row)
  // within kMaxDeepPrefetchWords registers; the others one trip (more copies cost occupancy: softmax over 4096
  // columns went from 59 to 80 registers with two).
  int64_t words = 0;
  for (const ir::Op* ld : ahead) words += register_words(ld->result()->type, mapped_width(ld->result()->type.shape));
  const int depth = ahead.empty() ? 0
                                  : static_cast<int>(std::max<int64_t>(
                                        1, std::min<int64_t>(num_stages_ - 1, kMaxDeepPrefetchWords / words)));
  std::vector<std::vector<std::string>> ahead_regs(static_cast<size_t>(depth));  // [trips ahead - 1][load]
  std::string ivt = ctype(op->operand(0)->type);
  std::string lb = scalar(op->operand(0)), ub = scalar(op->operand(1)), st = scalar(op->operand(2));
  auto trip_iv = [&](const std::string& from, int d) {  // int64: no overflow past ub
    return tmp("int64_t", fmt::format("(int64_t){} + {} * (int64_t){}", from, d, st));
  };
  if (!ahead.empty()) {
    line(fmt::format("// loads issued ahead: {}, {} trip(s)", ahead.size(), depth));
    for (int d = 0; d < depth; ++d) {
      for (const ir::Op* ld : ahead) ahead_regs[size_t(d)].push_back(declare_registers(ld->result()->type));
      std::string at = trip_iv(lb, d);
      open(fmt::format("if ({} < (int64_t){})", at, ub));
      prefetch(op, ahead, ahead_regs[size_t(d)], fmt::format("(({}){})", ivt, at));
      close();
    }
  }
  const bool dirty_before = global_dirty_, unknown_before = dirty_unknown_;
  const std::vector<const ir::Value*> roots_before = dirty_roots_;
  const int64_t shared_writes_before = shared_writes_;
  std::string iv = fresh("iv");
  // A loop of at most one trip is not unrolled: NVRTC unrolled FlagGems' block-sum loop (one tile
  // a program) into three copies of its body, 99 registers and 392 instructions where one copy
  // takes 62 and 232 (Triton, which never unrolls an scf.for unasked: 57 and 216).
  if (at_most_one_trip(op)) line("#pragma unroll 1");
  open(fmt::format("for ({0} {1} = {2}; {1} < {3}; {1} += {4})", ivt, iv, lb, ub, st));
  scalars_[body->args[0]] = iv;
  if (!ahead.empty()) {
    for (size_t i = 0; i < ahead.size(); ++i) {
      std::string cur = declare_registers(ahead[i]->result()->type);
      copy_registers(cur, ahead_regs[0][i]);
      prefetched_[ahead[i]] = cur;
    }
    for (size_t d = 0; d + 1 < ahead_regs.size(); ++d)
      for (size_t i = 0; i < ahead.size(); ++i) copy_registers(ahead_regs[d][i], ahead_regs[d + 1][i]);
    std::string next = trip_iv(iv, depth);
    open(fmt::format("if ({} < (int64_t){})", next, ub));
    prefetch(op, ahead, ahead_regs.back(), fmt::format("(({}){})", ivt, next));
    close();
  }
  for (size_t i = 0; i < n; ++i)
    if (!vars[i].empty()) scalars_[body->args[1 + i]] = vars[i];
  emit_block(body);
  const ir::Op* yield = body->ops.back();
  // The next values are all computed from this iteration's before any is overwritten: register
  // values into fresh arrays first (the copies back cost nothing once unrolled).
  std::vector<std::string> next_regs(n);
  for (size_t i = 0; i < n; ++i)
    if (!carried_regs[i].empty()) {
      next_regs[i] = declare_registers(op->results[i]->type);
      fill_registers(next_regs[i], yield->operands[i]);
    }
  std::vector<std::string> temps(n);
  std::vector<bool> in_place(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (carried_bufs[i].empty()) continue;
    const ir::Value* y = yield->operands[i];
    auto it = buffers_.find(y);
    if (it == buffers_.end() && updatable_in_place(y, body, 1 + i, true)) {
      in_place[i] = true;
      continue;
    }
    bool is_carried = it != buffers_.end() &&
                      std::find(carried_bufs.begin(), carried_bufs.end(), it->second) != carried_bufs.end();
    if (it != buffers_.end() && !is_carried) {
      temps[i] = it->second;
    } else {
      temps[i] = alloc_buffer(y->type);
      materialize_into(y, temps[i]);
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (in_place[i]) materialize_into(yield->operands[i], carried_bufs[i]);
  for (size_t i = 0; i < n; ++i)
    if (!carried_bufs[i].empty() && !in_place[i] && temps[i] != carried_bufs[i])
      copy_buffer(temps[i], carried_bufs[i], op->results[i]->type);
  for (size_t i = 0; i < n; ++i)
    if (!next_regs[i].empty()) copy_registers(carried_regs[i], next_regs[i]);
  std::vector<std::string> next(n);
  for (size_t i = 0; i < n; ++i)
    if (!vars[i].empty()) next[i] = tmp(ctype(op->results[i]->type), scalar(yield->operands[i]));
  for (size_t i = 0; i < n; ++i)
    if (!vars[i].empty()) line(fmt::format("{} = {};", vars[i], next[i]));
  // A barrier between trips when one may overwrite shared memory the previous read, or load
  // what it stored; trips that only touch registers and disjoint global memory run freely.
  if (shared_writes_ != shared_writes_before || memory.trips_reread_writes()) sync();
  close();
  // The loop may run no trip: what was unsynchronised before it still is.
  global_dirty_ = global_dirty_ || dirty_before;
  dirty_unknown_ = dirty_unknown_ || unknown_before;
  dirty_roots_.insert(dirty_roots_.end(), roots_before.begin(), roots_before.end());
  synced_ = false;
  for (size_t i = 0; i < n; ++i)
    if (!vars[i].empty()) scalars_[op->results[i]] = vars[i];
  for (const ir::Value* r : op->results)
    if (reg_spill_.count(r)) spill_registers(r);
}

void Codegen::emit_while(const ir::Op* op) {
  const ir::Block* before = op->regions[0];
  const ir::Block* body = op->regions[1];
  size_t n = op->results.size();
  std::vector<std::string> vars(n);
  for (size_t i = 0; i < n; ++i) {
    if (!op->results[i]->type.is_scalar())
      fail(op->loc, "the CUDA backend carries only scalars through a while loop (got {})", op->results[i]->type.str());
    vars[i] = fresh("w");
    line(fmt::format("{} {} = {};", ctype(op->results[i]->type), vars[i], scalar(op->operands[i])));
  }
  open("while (true)");
  for (size_t i = 0; i < n; ++i) scalars_[before->args[i]] = scalars_[body->args[i]] = vars[i];
  emit_block(before);
  line(fmt::format("if (!({})) break;", scalar(before->ops.back()->operand(0))));
  emit_block(body);
  const ir::Op* yield = body->ops.back();
  std::vector<std::string> next(n);
  for (size_t i = 0; i < n; ++i) next[i] = tmp(ctype(op->results[i]->type), scalar(yield->operands[i]));
  for (size_t i = 0; i < n; ++i) line(fmt::format("{} = {};", vars[i], next[i]));
  sync();  // the next trip may overwrite what this one read
  close();
  sync();  // the exit skips the barrier at the end of the last trip
  for (size_t i = 0; i < n; ++i) scalars_[op->results[i]] = vars[i];
}

bool Codegen::updatable_in_place(const ir::Value* v, const ir::Block* body, size_t self, bool same_index) {
  if (v->type.is_scalar()) return true;
  for (size_t j = 1; j < body->args.size(); ++j)
    if (v == body->args[j]) return j == self ? same_index : !v->type.is_block();
  if (buffers_.count(v) || regs_.count(v) || !v->def) return true;
  const ir::Op* op = v->def;
  bool keeps_index = ir::is_elementwise(op->kind) || op->kind == OpKind::Load || op->kind == OpKind::MultipleOf ||
                     op->kind == OpKind::MaxContiguous;
  for (const ir::Value* o : op->operands)
    if (!updatable_in_place(o, body, self, same_index && keeps_index)) return false;
  return true;
}

void Codegen::emit_if(const ir::Op* op) {
  size_t n = op->results.size();
  std::vector<std::string> bufs(n), vars(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::Value* r = op->results[i];
    if (reg_planned_.count(r)) {
      regs_[r] = declare_registers(r->type);
    } else if (r->type.is_block()) {
      bufs[i] = buffers_[r] = alloc_buffer(r->type);
    } else {
      vars[i] = fresh("r");
      line(fmt::format("{} {}{{}};", ctype(r->type), vars[i]));
    }
  }
  bool unsynced_shared = false;
  const DirtyState before = dirty_state();
  DirtyState after_then;
  open(fmt::format("if ({})", scalar(op->operand(0))));
  for (int side = 0; side < 2; ++side) {
    if (side == 1) {
      close();
      open("else");
      after_then = dirty_state(), set_dirty_state(before);  // each side starts from the state before
    }
    const ir::Block* region = op->regions[static_cast<size_t>(side)];
    const int64_t writes_at_start = shared_writes_;
    emit_block(region);
    const ir::Op* yield = region->ops.back();
    for (size_t i = 0; i < n; ++i) {
      const ir::Value* y = yield->operands[i];
      if (reg_planned_.count(op->results[i])) {
        fill_registers(regs_.at(op->results[i]), y);
      } else if (!bufs[i].empty()) {
        if (auto it = buffers_.find(y); it != buffers_.end()) copy_buffer(it->second, bufs[i], y->type);
        else materialize_into(y, bufs[i]);
      } else {
        line(fmt::format("{} = {};", vars[i], scalar(y)));
      }
    }
    unsynced_shared = unsynced_shared || (shared_writes_ != writes_at_start && shared_writes_ != shared_writes_synced_);
  }
  close();
  // A barrier only for what other threads read next: shared memory written in a branch and not yet
  // behind a barrier there, or block results. Every writer of shared memory ends in a barrier of
  // its own (a block reduction's partials are read behind one), and buffers are never reused but
  // by the same op on a later loop trip, which a loop's end barrier orders: a side whose writes
  // are all behind barriers needs none after the if (Liger's attn_res: 8 of its 24 barriers a
  // program, one after each block's `if`). Global writes stay pending (either side's,
  // element_barriers.cpp) for sync_if_reading.
  bool block_results = false;
  for (const std::string& b : bufs) block_results = block_results || !b.empty();
  if (unsynced_shared || block_results) sync();
  else merge_dirty_state(after_then);
  for (size_t i = 0; i < n; ++i)
    if (!vars[i].empty()) scalars_[op->results[i]] = vars[i];
  for (const ir::Value* r : op->results)
    if (reg_spill_.count(r)) spill_registers(r);
}

}  // namespace tritium::jit::cuda::detail
