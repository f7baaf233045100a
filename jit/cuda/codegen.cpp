// The CUDA code generator's core (class and design: jit/cuda/codegen_impl.h): kernel assembly,
// values (scalars, inline, registers, buffers), loop nests and vector accesses, memory, atomics,
// reductions (scans: element_scan.cpp), control flow with software pipelining, prints and asserts.
#include "jit/cuda/codegen_impl.h"

#include <cerrno>
#include <functional>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

#include "common/env.h"
#include "jit/cuda/cache_hints.h"
#include "jit/cuda/device_header.h"
#include "jit/cuda/lowering/lowering.h"

namespace tritium::jit::cuda::detail {

KernelSource Codegen::run() {
  plan_ = plan_blocks(f_, PlanOptions{.fuse_single_root = true});
  plan_registers();
  // Persistent programs need Hopper's asynchronous store, a candidate for it - the kernel's last
  // memory access a masked store of a 2-D block at the top level (nothing later may touch what the
  // copy writes while it drains) - and programs that never wait on each other: no atomics (a lock
  // spun on by a later program of the same CTA would never open).
  may_persist_ = cc_ >= 90;
  f_.walk([&](ir::Op* op) {
    if (op->kind == OpKind::Load || op->kind == OpKind::Store || is_atomic(op->kind)) last_memory_op_ = op;
    if (is_atomic(op->kind)) may_persist_ = false;
  });
  const ir::Op* last = last_memory_op_;
  may_persist_ = may_persist_ && last && last->kind == OpKind::Store && last->parent == f_.body &&
                 last->operands.size() == 3 && last->operand(0)->type.rank() == 2;
  KernelSource ks;
  ks.entry = identifier(f_.name);
  ks.num_threads = nt_;
  std::string params;
  for (size_t i = 0; i < f_.params.size(); ++i) {
    const ir::Param& p = f_.params[i];
    std::string name = fmt::format("a{}_{}", i, identifier(p.name.empty() ? "arg" : p.name));
    params += fmt::format("{}{}{}", p.type.is_ptr() ? "" : "const ", ctype(p.type), p.type.is_ptr() ? " " : " ") + name + ",\n    ";
    scalars_[f_.body->args[i]] = name;
  }
  emit_block(f_.body);
  smem_ = std::max(smem_, smem_peak_);
  ks.smem_bytes = smem_;
  ks.scratch_bytes = scratch_;
  ks.num_asserts = num_asserts_;
  ks.has_print = has_print_;
  std::string src = device_header();
  src += fmt::format("\n// Kernel {}: {} threads ({} warps), {} bytes of shared memory, {} bytes of scratch per program.\n",
                     f_.name, nt_, nwarps_, smem_, scratch_);
  ks.tma_maps = tma_maps_;
  std::string maps;
  if (!tma_maps_.empty()) src += "struct __align__(64) tt_tmap_t { unsigned long long v[16]; };  // a CUtensorMap\n";
  for (size_t i = 0; i < tma_maps_.size(); ++i) maps += fmt::format(", const __grid_constant__ tt_tmap_t tt_tmap{}", i);
  ks.persistent = persistent_;
  ks.matmul_loops = matmul_loops_;
  // A persistent kernel takes the program grid as parameters; its CTAs (as many as are resident,
  // a 1-D grid) walk over the programs, x fastest, as the hardware would hand them out.
  const char* grid = persistent_ ? ", const int32_t tt_grid0, const int32_t tt_grid1, const int32_t tt_grid2" : "";
  src += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(\n    {}uint8_t* tt_scratch, int* tt_assert{}{}) {{\n",
                     nt_, ks.entry, params, grid, maps);
  src += "  extern __shared__ __align__(1024) uint8_t tt_smem[];\n";
  src += "  const int tid = (int)threadIdx.x;\n";
  src += "  (void)tid; (void)tt_smem; (void)tt_scratch; (void)tt_assert;\n";
  if (scratch_ > 0)
    src += fmt::format(
        "  uint8_t* const tt_scratch_cta = tt_scratch + (uint64_t)(blockIdx.x + gridDim.x * (blockIdx.y + "
        "(uint64_t)gridDim.y * blockIdx.z)) * {}ull;\n",
        scratch_);
  src += decls_;
  // C's deferred copy (store_through_tma): issued by thread 0 where the next program's TMA loop
  // has asked for its first tiles, by that program's epilogue otherwise, and after the last.
  if (persistent_ || flush_calls_) {
    src += "  int tt_store_col = 0, tt_store_row = 0;\n  bool tt_store_pending = false;\n";
    src += "  (void)tt_store_col; (void)tt_store_row; (void)tt_store_pending;\n";
    src += "  auto tt_flush_store = [&]() {\n";
    if (persistent_)
      src += "    if (tid == 0 && tt_store_pending) {\n" + store_flush_ +
             "      tt_bulk_commit();\n      tt_store_pending = false;\n    }\n";
    src += "  };\n";
  }
  if (persistent_) {
    src += "  const int64_t tt_programs = (int64_t)tt_grid0 * tt_grid1 * tt_grid2;\n";
    src += "  for (int64_t tt_program = blockIdx.x; tt_program < tt_programs; tt_program += gridDim.x) {\n";
    src += "  const int32_t tt_pid0 = (int32_t)(tt_program % tt_grid0), tt_pid1 = (int32_t)(tt_program / tt_grid0 % tt_grid1),\n";
    src += "                tt_pid2 = (int32_t)(tt_program / ((int64_t)tt_grid0 * tt_grid1));\n";
    src += "  const int32_t tt_npid0 = tt_grid0, tt_npid1 = tt_grid1, tt_npid2 = tt_grid2;\n";
  } else {
    src += "  const int32_t tt_pid0 = (int32_t)blockIdx.x, tt_pid1 = (int32_t)blockIdx.y, tt_pid2 = (int32_t)blockIdx.z;\n";
    src += "  const int32_t tt_npid0 = (int32_t)gridDim.x, tt_npid1 = (int32_t)gridDim.y, tt_npid2 = (int32_t)gridDim.z;\n";
  }
  src += "  (void)tt_pid0; (void)tt_pid1; (void)tt_pid2; (void)tt_npid0; (void)tt_npid1; (void)tt_npid2;\n";
  src += body_;
  if (persistent_) {
    src += "  __syncthreads();  // the next program reuses the shared buffers\n";
    src += "  }\n";
    src += "  tt_flush_store();\n";
    src += "  if (tid == 0) tt_bulk_wait_all();  // the last copies are done before the CTA's shared memory goes\n";
  }
  src += "}\n";
  ks.source = std::move(src);
  return ks;
}

void Codegen::line(const std::string& s) {
  body_ += std::string(static_cast<size_t>(indent_) * 2, ' ') + s + "\n";
  synced_ = false;
}

void Codegen::open(const std::string& s) {
  line(s + " {");
  ++indent_;
  memo_.emplace_back();
}

void Codegen::close() {
  --indent_;
  line("}");
  memo_.pop_back();
}

const std::string* Codegen::memo_find(const std::string& key) const {
  for (auto it = memo_.rbegin(); it != memo_.rend(); ++it)
    if (auto f = it->find(key); f != it->end()) return &f->second;
  return nullptr;
}

std::string Codegen::tmp(const std::string& type, const std::string& expr) {
  std::string n = fresh("t");
  line(fmt::format("{} const {} = {};", type, n, expr));  // east const: pointers stay writable
  return n;
}

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
    switch (u->kind) {
      case OpKind::Store: ok = u->operand(0)->type.shape == v->type.shape; break;
      case OpKind::Reduce: {
        const Shape& s = u->operand(0)->type.shape;
        ok = s == v->type.shape && numel(s) == s[static_cast<size_t>(u->attrs.axis)];
        break;
      }
      case OpKind::Yield: ok = u->parent->parent && (u->parent->parent->kind == OpKind::For ||
                                                    u->parent->parent->kind == OpKind::If);
        break;
      case OpKind::For: ok = u->operands.size() > 3 && u->operands[0] != v && u->operands[1] != v && u->operands[2] != v;
        break;
      case OpKind::Dot:  // the accumulator of a tensor-core dot: read at the fragment's own elements
        ok = u->operand(2) == v && u->operand(0) != v && u->operand(1) != v && mma_tiling(u).has_value();
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
  f_.walk([&](ir::Op* op) {
    if ((op->kind == OpKind::Load || op->kind == OpKind::Store) && op->operand(0)->type.is_block()) {
      int& w = widest_access_[op->operand(0)->type.shape];
      w = std::max(w, access_width(op));
    }
  });
  // Tensor-core dots: their result shapes take the fragment mapping, their matmul loops are found.
  f_.walk([&](ir::Op* op) {
    if (op->kind != OpKind::Dot) return;
    if (auto t = mma_tiling(op)) {
      mma_map_[op->result()->type.shape] = *t;
      mapped_width_[op->result()->type.shape] = 2;
    }
  });
  f_.walk([&](ir::Op* op) {
    if (op->kind == OpKind::For)
      if (auto m = match_mma_loop(op)) mma_loops_[op] = *m;
  });
  auto fits = [&](const ir::Value* v) {
    if (!v->type.is_block() || v->type.rank() == 0) return false;
    int64_t limit = mma_map_.count(v->type.shape) ? kMaxMmaWords : kMaxRegisterWords;
    return register_words(v->type, mapped_width(v->type.shape)) <= limit;
  };
  auto take = [&](const ir::Value* v) {
    reg_planned_.insert(v);
    mapped_width_[v->type.shape] = mapped_width(v->type.shape);
  };
  f_.walk([&](ir::Op* op) {
    switch (op->kind) {
      case OpKind::Reduce: case OpKind::Scan: return;
      case OpKind::Histogram: case OpKind::Gather: case OpKind::Split: return;  // buffers of their own
      case OpKind::Dot:  // tensor-core accumulators are registers in the fragment mapping
        if (mma_tiling(op) && fits(op->result()) && only_own_elements(op->result())) take(op->result());
        return;
      case OpKind::For: {
        const ir::Block* body = op->regions[0];
        if (auto m = mma_loops_.find(op); m != mma_loops_.end()) {  // only the accumulator is carried
          take(body->args[1 + m->second.acc]);
          take(op->results[m->second.acc]);
          if (!only_own_elements(op->results[m->second.acc])) reg_spill_.insert(op->results[m->second.acc]);
          return;
        }
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
    for (const ir::Op* u : plan_.users(r))
      if (u->kind == OpKind::Dot) return;  // dot reads its operands from a buffer
    if (only_own_elements(r)) take(r);
  });
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
  thread_loop(
      s, V, [&](const Index& base) { emit_vector_loads({v}, base, V); },
      [&](const Index& idx) {
        std::string x = op ? eval_op(op, idx) : eval(v, idx);
        line(fmt::format("{}[{} * {} + {}] = {};", array, loop_.k, V, lane_, x));
      },
      nullptr);
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

Index Codegen::index_of(const Shape& s, const std::string& e) {
  auto st = strides_of(s);
  Index idx(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 1) {
      idx[d] = "0";
      continue;
    }
    std::string expr;
    if (d == 0) expr = st[d] == 1 ? e : fmt::format("{} / {}", e, st[d]);
    else expr = st[d] == 1 ? fmt::format("{} % {}", e, s[d]) : fmt::format("{} / {} % {}", e, st[d], s[d]);
    if (d == 0 && st[d] == 1) {
      idx[d] = e;
      continue;
    }
    idx[d] = fresh("i");
    line(fmt::format("const int {} = {};", idx[d], expr));
  }
  return idx;
}

std::string Codegen::flatten(const Index& idx, const Shape& s) {
  auto st = strides_of(s);
  std::string out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 1 || idx[d] == "0") continue;
    std::string term = st[d] == 1 ? idx[d] : fmt::format("({}) * {}", idx[d], st[d]);
    out += (out.empty() ? "" : " + ") + term;
  }
  return out.empty() ? "0" : out;
}

void Codegen::thread_loop(const Shape& shape, int V, const std::function<void(const Index&)>& pre,
                          const std::function<void(const Index&)>& body,
                          const std::function<void(const Index&)>& post) {
  int64_t n = numel(shape);
  int64_t step = int64_t(nt_) * V;
  bool unrolled = mapped(shape, V);
  std::string eb, k;
  bool guard = false;
  Index base;
  auto mma = unrolled ? mma_map_.find(shape) : mma_map_.end();
  if (mma != mma_map_.end()) {
    // The mma.sync accumulator fragments (PTX ISA, "Matrix fragments for mma.m16n8k16"): in
    // tile (mi, ni) of its warp, lane 4 * g + q owns rows g and g + 8, columns 2q and 2q + 1;
    // step k = (mi * NT + ni) * 2 + h is row g + 8h, and array[k * 2 + lane] is c[2h + lane].
    const MmaTiling& t = mma->second;
    open("");
    std::string r0 = tmp("int", fmt::format("{} + ((tid & 31) >> 2)", t.m0()));
    std::string c0 = tmp("int", fmt::format("{} + 2 * (tid & 3)", t.n0()));
    k = fresh("k");
    line("#pragma unroll");
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", k, t.MT * t.NT * 2));
    base = {tmp("int", fmt::format("{} + ({} / {}) * {} + 8 * ({} & 1)", r0, k, t.NT * 2, t.row_step, k)),
            tmp("int", fmt::format("{} + (({} >> 1) % {}) * 8", c0, k, t.NT))};
  } else if (unrolled) {
    k = fresh("k");
    line("#pragma unroll");
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", k, (n + step - 1) / step));
    eb = tmp("int", fmt::format("({} * {} + tid) * {}", k, nt_, V));
    guard = n % step != 0;
    if (guard) open(fmt::format("if ({} < {})", eb, n));
  } else {
    eb = fresh("e");
    open(fmt::format("for (int {0} = tid * {1}; {0} < {2}; {0} += {3})", eb, V, n, step));
  }
  if (mma == mma_map_.end()) base = index_of(shape, eb);
  MappedLoop saved = loop_;
  loop_ = unrolled ? MappedLoop{true, shape, V, k, base} : MappedLoop{};
  if (pre) pre(base);
  if (V == 1) {
    lane_ = "0";
    body(base);
  } else {
    std::string l = fresh("l");
    line("#pragma unroll");
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", l, V));
    lane_ = l;
    lane_width_ = V;
    lane_base_ = base.back();
    lane_index_ = fmt::format("({} + {})", base.back(), l);
    Index idx(base);
    idx.back() = lane_index_;
    body(idx);
    close();
  }
  lane_ = "0";
  lane_width_ = 1;
  lane_index_.clear();
  lane_base_.clear();
  if (post) post(base);
  loop_ = saved;
  if (guard) close();
  close();
  if (mma != mma_map_.end()) close();
}

int Codegen::access_width(const ir::Op* op, int dim) { return detail::access_width(op, axis_, dim); }

void Codegen::collect_loads(const ir::Value* v, const Index& idx, std::vector<std::pair<const ir::Op*, Index>>& out) {
  if (v->type.is_scalar() || buffers_.count(v) || regs_.count(v) || !v->def) return;
  const ir::Op* op = v->def;
  const Shape& t = v->type.shape;
  switch (op->kind) {
    case OpKind::Load:
      if (access_width(op) > 1) out.push_back({op, idx});
      return;
    case OpKind::MultipleOf: case OpKind::MaxContiguous: return collect_loads(op->operand(0), idx, out);
    case OpKind::Broadcast: {
      const Shape& s = op->operand(0)->type.shape;
      if (s.back() != t.back()) return;
      Index in(idx);
      for (size_t d = 0; d < s.size(); ++d)
        if (s[d] == 1 && t[d] != 1) in[d] = "0";
      return collect_loads(op->operand(0), in, out);
    }
    case OpKind::ExpandDims: {
      if (op->attrs.axis == static_cast<int>(t.size()) - 1) return;
      Index in(idx);
      in.erase(in.begin() + op->attrs.axis);
      return collect_loads(op->operand(0), in, out);
    }
    default: break;
  }
  if (ir::is_elementwise(op->kind))
    for (const ir::Value* o : op->operands) collect_loads(o, idx, out);
}

int Codegen::choose_width(const Shape& shape, const std::vector<const ir::Value*>& roots, const ir::Op* store) {
  if (shape.empty()) return 1;
  if (auto it = mapped_width_.find(shape); it != mapped_width_.end()) return it->second;
  std::vector<std::pair<const ir::Op*, Index>> loads;
  Index dummy(shape.size(), "0");
  for (const ir::Value* r : roots) collect_loads(r, dummy, loads);
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

// A global load or store of one element, through the device header's cache-hinted helpers when the
// op has hints (jit/cuda/cache_hints.h); plain C++ otherwise, as before hints existed.
static std::string load_of(const ir::Op* op, const std::string& ptr) {
  std::string s = cache_hint_suffix(*op);
  return s.empty() ? "*" + ptr : fmt::format("tt_ld{}({})", s, ptr);
}
static std::string store_of(const ir::Op* op, const std::string& ptr, const std::string& v) {
  std::string s = cache_hint_suffix(*op);
  return s.empty() ? fmt::format("*{} = {};", ptr, v) : fmt::format("tt_st{}({}, {});", s, ptr, v);
}

void Codegen::emit_vector_loads(const std::vector<const ir::Value*>& roots, const Index& base, int V) {
  if (V == 1) return;
  std::vector<std::pair<const ir::Op*, Index>> loads;
  for (const ir::Value* r : roots) collect_loads(r, base, loads);
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

std::string Codegen::scalar(const ir::Value* v) {
  auto it = scalars_.find(v);
  if (it == scalars_.end()) fail("internal error: scalar %{} of kernel {} was not emitted", v->id, f_.name);
  return it->second;
}

std::string Codegen::eval(const ir::Value* v, const Index& idx) {
  if (v->type.is_scalar()) return scalar(v);
  if (auto it = affine_.find(v); it != affine_.end())  // a carried pointer of an MMA loop
    return fmt::format("({} + (int64_t)({}) * (int64_t)({}))", it->second.at, it->second.trip,
                       eval(it->second.step, idx));
  if (auto it = regs_.find(v); it != regs_.end()) {
    if (std::string r = register_at(it->second, v, idx); !r.empty()) return r;
    if (!buffers_.count(v))
      fail("internal error: register value %{} of kernel {} read at an element of another thread", v->id, f_.name);
  }
  if (auto it = buffers_.find(v); it != buffers_.end()) return fmt::format("{}[{}]", it->second, flatten(idx, v->type.shape));
  return eval_op(v->def, idx);
}

std::string Codegen::eval_op(const ir::Op* op, const Index& idx) {
  const ir::Type& t = op->result()->type;
  switch (op->kind) {
    case OpKind::Constant: return constant_of(op);
    case OpKind::Arange: return fmt::format("((int32_t)({}) + {})", idx[0], op->attrs.ints[0]);
    case OpKind::Splat: return scalar(op->operand(0));
    case OpKind::MultipleOf: case OpKind::MaxContiguous: return eval(op->operand(0), idx);
    case OpKind::Broadcast: {
      const Shape& s = op->operand(0)->type.shape;
      Index in(idx);
      for (size_t d = 0; d < s.size(); ++d)
        if (s[d] == 1 && t.shape[d] != 1) in[d] = "0";
      return eval(op->operand(0), in);
    }
    case OpKind::ExpandDims: {
      Index in(idx);
      in.erase(in.begin() + op->attrs.axis);
      return eval(op->operand(0), in);
    }
    case OpKind::Permute: {
      Index in(idx.size());
      for (size_t i = 0; i < idx.size(); ++i) in[static_cast<size_t>(op->attrs.ints[i])] = idx[i];
      return eval(op->operand(0), in);
    }
    case OpKind::Reshape: {
      const Shape& to = op->operand(0)->type.shape;
      std::string flat = tmp("int", flatten(idx, t.shape));
      auto st = strides_of(to);
      Index in(to.size());
      for (size_t d = 0; d < to.size(); ++d)
        in[d] = to[d] == 1 ? "0" : fmt::format("({} / {} % {})", flat, st[d], to[d]);
      return eval(op->operand(0), in);
    }
    case OpKind::Join: {  // [..., j]: a's element [...] where j == 0, b's where j == 1
      Index in(idx.begin(), idx.end() - 1);
      std::string a = eval(op->operand(0), in), b = eval(op->operand(1), in);
      return tmp(ctype(t.element()), fmt::format("({}) == 0 ? {} : {}", idx.back(), a, b));
    }
    case OpKind::Load: {
      if (auto it = vec_loads_.find(op); it != vec_loads_.end()) return fmt::format("{}[{}]", it->second, lane_);
      const ir::Value* p = op->operand(0);
      std::string ct = ctype(p->type.pointee);
      std::string ptr = eval(p, idx);
      if (op->operands.size() < 2) return tmp(ct, load_of(op, ptr));
      std::string mask = eval(op->operand(1), idx);
      std::string other = op->operands.size() > 2 ? eval(op->operand(2), idx) : ct + "{}";
      return tmp(ct, fmt::format("{} ? {} : {}", mask, load_of(op, ptr), other));
    }
    default: break;
  }
  if (ir::is_elementwise(op->kind)) {
    // A value equal over each aligned run of V elements (a mask `cols < N` with N a multiple of
    // 16) is computed at the chunk's first lane: the same expression in every lane, which the
    // compiler computes once per chunk instead of once per element.
    Index at(idx);
    if (lane_width_ > 1 && idx.back() == lane_index_ && axis_.contains(op->result()) &&
        axis_.get(op->result()).constancy.back() >= lane_width_)
      at.back() = lane_base_;
    std::string key = fmt::format("{}|{}", static_cast<const void*>(op), fmt::join(at, ","));
    if (const std::string* done = memo_find(key)) return *done;
    std::vector<std::string> xs;
    for (ir::Value* o : op->operands) xs.push_back(eval(o, at));
    std::string v = tmp(ctype(t.element()), elementwise(op, xs));
    memo_.back()[key] = v;
    return v;
  }
  fail("internal error: CUDA codegen cannot evaluate {} inline", ir::op_name(op->kind));
}

std::string Codegen::constant_of(const ir::Op* op) {
  const ir::Type& t = op->result()->type;
  if (t.is_ptr()) return fmt::format("({}){}ull", ctype(t.element()), static_cast<uint64_t>(op->attrs.ival));
  return constant(t.dtype, op->attrs.ival, op->attrs.fval, is_float(t.dtype));
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
  const ir::Value* val = op->operand(1);
  DType d = p->type.pointee;
  std::string ct = ctype(d);
  bool has_mask = op->operands.size() > 2;
  if (p->type.is_scalar()) {  // one thread stores
    std::string cond = has_mask ? fmt::format("tid == 0 && {}", scalar(op->operand(2))) : "tid == 0";
    line(fmt::format("if ({}) {}", cond, store_of(op, scalar(p), scalar(val))));
    mark_global_write(p);
    return;
  }
  const Shape& shape = p->type.shape;
  const std::string hint = cache_hint_suffix(*op);
  std::vector<const ir::Value*> roots = {val};
  if (has_mask) roots.push_back(op->operand(2));
  sync_if_reading({p, val, has_mask ? op->operand(2) : p});
  if (store_through_shared(op)) return;
  int V = choose_width(shape, roots, op);
  // A wider type than the one that set the shape's V stores as V / w parts of w lanes (as
  // emit_split_vector_load), when its mask (if any) is constant over each part.
  const int w = access_width(op);
  const ir::Value* mask_value = has_mask ? op->operand(2) : nullptr;
  const bool split_store = V > 1 && w > 1 && w < V && V % w == 0 &&
                           (!mask_value || (axis_.contains(mask_value) && axis_.get(mask_value).constancy.back() >= w));
  bool vector_store = V > 1 && (w >= V || split_store);
  std::string sv, sm;
  thread_loop(
      shape, V,
      [&](const Index& base) {
        emit_vector_loads(roots, base, V);
        if (vector_store) {
          sv = fresh("sv"), sm = fresh("sm");
          line(fmt::format("__align__(16) {} {}[{}];", ct, sv, V));
          if (has_mask) line(fmt::format("bool {}[{}];", sm, V));
        }
      },
      [&](const Index& idx) {
        std::string v = eval(val, idx);
        std::string m = has_mask ? eval(op->operand(2), idx) : "";
        if (vector_store) {
          line(fmt::format("{}[{}] = {};", sv, lane_, v));
          if (has_mask) line(fmt::format("{}[{}] = {};", sm, lane_, m));
        } else {
          std::string ptr = eval(p, idx);
          line(has_mask ? fmt::format("if ({}) {}", m, store_of(op, ptr, v)) : store_of(op, ptr, v));
        }
      },
      [&](const Index& base) {
        if (!vector_store) return;
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
      });
  vec_loads_.clear();
  mark_global_write(p);
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

void Codegen::emit_atomic(const ir::Op* op) {
  ++shared_writes_;  // the old value's slot or buffer
  OpKind k = op->kind;
  const ir::Value* p = op->operand(0);
  DType d = p->type.pointee;
  std::string ct = ctype(d);
  bool cas = k == OpKind::AtomicCas;
  bool has_mask = !cas && op->operands.size() > 2;
  // Triton's atomics are acq_rel at GPU scope: every thread's earlier writes are released (a
  // fence before), and what the atomic observed is acquired (a fence after), so a lock taken
  // with atomic_cas and released with atomic_xchg protects plain loads and stores.
  if (p->type.is_scalar()) {  // one thread; the old value reaches the others through shared memory
    std::string slot = alloc_shared(ct, 1, std::max(8, dtype_bytes(d)));
    std::string call = atomic_call(k, d, scalar(p), scalar(op->operand(cas ? 2 : 1)), cas ? scalar(op->operand(1)) : "");
    // The barrier orders every thread's earlier writes before thread 0's fence (cumulativity),
    // so only the thread doing the atomic fences (as Triton's elected thread does).
    line("__syncthreads();");
    synced_ = true;
    clean();
    if (has_mask)
      line(fmt::format("if (tid == 0) {{ tt_fence_acq_rel(); {}[0] = {} ? {} : {}{{}}; tt_fence_acq_rel(); }}", slot,
                       scalar(op->operand(2)), call, ct));
    else line(fmt::format("if (tid == 0) {{ tt_fence_acq_rel(); {}[0] = {}; tt_fence_acq_rel(); }}", slot, call));
    sync();
    scalars_[op->result()] = tmp(ct, slot + "[0]");
    return;
  }
  std::string out = plan_.users(op->result()).empty() ? "" : alloc_buffer(op->result()->type);
  if (!out.empty()) buffers_[op->result()] = out;
  if (!out.empty()) sync();
  else sync_if_reading({p, op->operand(1), op->operands.back()});
  line("tt_fence_acq_rel();");
  thread_loop(p->type.shape, 1, nullptr, [&](const Index& idx) {
    std::string ptr = eval(p, idx);
    std::string val = eval(op->operand(cas ? 2 : 1), idx);
    std::string cmp = cas ? eval(op->operand(1), idx) : "";
    std::string call = atomic_call(k, d, ptr, val, cmp);
    if (out.empty()) {  // the old value is unused
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
  line("tt_fence_acq_rel();");
  if (!out.empty()) sync();
  else mark_global_write(p);
}

std::vector<std::string> Codegen::combine(const ir::Block* region, const std::vector<std::string>& lhs,
                                          const std::vector<std::string>& rhs) {
  std::unordered_map<const ir::Value*, std::string> local;
  for (size_t i = 0; i < lhs.size(); ++i) local[region->args[i]] = lhs[i];
  for (size_t i = 0; i < rhs.size(); ++i) local[region->args[lhs.size() + i]] = rhs[i];
  auto get = [&](const ir::Value* v) -> std::string {
    if (auto it = local.find(v); it != local.end()) return it->second;
    return scalar(v);
  };
  for (const ir::Op* op : region->ops) {
    if (op->kind == OpKind::Yield) {
      std::vector<std::string> out;
      for (ir::Value* v : op->operands) out.push_back(get(v));
      return out;
    }
    std::string r;
    if (op->kind == OpKind::Constant) r = constant_of(op);
    else if (op->kind == OpKind::MultipleOf || op->kind == OpKind::MaxContiguous) r = get(op->operand(0));
    else if (ir::is_elementwise(op->kind)) {
      std::vector<std::string> xs;
      for (ir::Value* v : op->operands) xs.push_back(get(v));
      r = tmp(ctype(op->result()->type.element()), elementwise(op, xs));
    } else {
      fail(op->loc, "a reduce/scan combine function may only use elementwise operations; {} is not supported",
           ir::op_name(op->kind));
    }
    local[op->result()] = r;
  }
  fail("internal error: combine region without yield");
}

void Codegen::accumulate(const ir::Block* region, const std::string& have, const std::vector<std::string>& acc,
                         const std::vector<std::string>& x) {
  open(fmt::format("if ({})", have));
  std::vector<std::string> r = combine(region, acc, x);
  for (size_t i = 0; i < acc.size(); ++i) line(fmt::format("{} = {};", acc[i], r[i]));
  close();
  open("else");
  for (size_t i = 0; i < acc.size(); ++i) line(fmt::format("{} = {};", acc[i], x[i]));
  line(fmt::format("{} = true;", have));
  close();
}

void Codegen::warp_reduce(const ir::Block* region, const std::string& have, const std::vector<std::string>& acc,
                          const std::vector<std::string>& types, bool all_have) {
  std::string off = fresh("off");
  line("#pragma unroll");
  open(fmt::format("for (int {0} = 16; {0} > 0; {0} >>= 1)", off));
  std::vector<std::string> other;
  for (size_t i = 0; i < acc.size(); ++i) other.push_back(tmp(types[i], fmt::format("tt_shfl_xor({}, {})", acc[i], off)));
  if (all_have) {
    std::vector<std::string> r = combine(region, acc, other);
    for (size_t i = 0; i < acc.size(); ++i) line(fmt::format("{} = {};", acc[i], r[i]));
  } else {
    std::string oh = tmp("bool", fmt::format("tt_shfl_xor({}, {})", have, off));
    open(fmt::format("if ({})", oh));
    accumulate(region, have, acc, other);
    close();
  }
  close();
}

void Codegen::emit_reduce(const ir::Op* op) {
  const Shape& s = op->operand(0)->type.shape;
  int axis = op->attrs.axis;
  int64_t K = s[static_cast<size_t>(axis)];
  size_t n = op->operands.size();
  const ir::Block* region = op->regions[0];
  bool scalar_out = op->result()->type.is_scalar();
  Shape outer = s;
  outer.erase(outer.begin() + axis);
  int64_t OUT = numel(outer);
  std::vector<std::string> outs, types;
  for (ir::Value* x : op->operands) types.push_back(ctype(x->type.element()));
  if (!scalar_out)
    for (ir::Value* res : op->results) outs.push_back(buffers_[res] = alloc_buffer(res->type));
  // Output element o (an index into `outer`; keep_dims outputs have the same row-major order).
  auto in_index = [&](const Index& o, const std::string& k) {
    Index in(o);
    in.insert(in.begin() + axis, k);
    return in;
  };
  auto eval_inputs = [&](const Index& idx) {
    std::vector<std::string> xs;
    for (ir::Value* x : op->operands) xs.push_back(eval(x, idx));
    return xs;
  };
  auto decl_acc = [&](std::vector<std::string>& acc, std::string& have) { declare_accumulators(types, acc, have); };
  if (OUT == 1) return emit_block_reduce(op, types, outs);
  ++shared_writes_;  // partials or the output buffer
  sync();
  std::string o = fresh("o");
  if (axis == static_cast<int>(s.size()) - 1 && K >= 32) {
    // One warp per output element: lanes strided along the row, then shuffles.
    open(fmt::format("for (int {0} = tid >> 5; {0} < {1}; {0} += {2})", o, OUT, nwarps_));
    Index oi = index_of(outer, o);
    std::vector<std::string> acc;
    std::string have;
    decl_acc(acc, have);
    std::string k = fresh("k");
    open(fmt::format("for (int {0} = tid & 31; {0} < {1}; {0} += 32)", k, K));
    accumulate(region, have, acc, eval_inputs(in_index(oi, k)));
    close();
    warp_reduce(region, have, acc, types, false);
    open("if ((tid & 31) == 0)");
    for (size_t i = 0; i < n; ++i) line(fmt::format("{}[{}] = {};", outs[i], o, acc[i]));
    close();
    close();
  } else {
    // One thread per output element, serial along the axis.
    open(fmt::format("for (int {0} = tid; {0} < {1}; {0} += {2})", o, OUT, nt_));
    Index oi = index_of(outer, o);
    std::vector<std::string> x0 = eval_inputs(in_index(oi, "0"));
    std::vector<std::string> acc;
    for (size_t i = 0; i < n; ++i) {
      acc.push_back(fresh("acc"));
      line(fmt::format("{} {} = {};", types[i], acc.back(), x0[i]));
    }
    std::string k = fresh("k");
    open(fmt::format("for (int {0} = 1; {0} < {1}; ++{0})", k, K));
    std::vector<std::string> r = combine(region, acc, eval_inputs(in_index(oi, k)));
    for (size_t i = 0; i < n; ++i) line(fmt::format("{} = {};", acc[i], r[i]));
    close();
    for (size_t i = 0; i < n; ++i) line(fmt::format("{}[{}] = {};", outs[i], o, acc[i]));
    close();
  }
  sync();
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

Codegen::BodyMemory Codegen::body_memory(const ir::Block* body) {
  BodyMemory m;
  auto note = [&](ir::Op* op) {
    bool writes = op->kind == OpKind::Store || is_atomic(op->kind);
    if (!writes && op->kind != OpKind::Load) return;
    const ir::Value* r = pointer_root(op->operand(0));
    if (r) (writes ? m.written : m.read).push_back(r);
    else (writes ? m.unknown_written : m.unknown_read) = true;
  };
  ir::Function::walk_block(const_cast<ir::Block*>(body), note);
  return m;
}

std::vector<const ir::Op*> Codegen::pipelined_loads(const ir::Block* body, const BodyMemory& memory) {
  std::vector<const ir::Op*> out;
  if (num_stages_ < 2) return out;
  for (const ir::Op* op : body->ops) {
    if (op->kind != OpKind::Load || !reg_planned_.count(op->result())) continue;
    // A second copy of a long row costs occupancy more than the overlap gains (softmax over
    // 16384 columns: 222 registers, one CTA per SM); such loads stay in place.
    if (register_words(op->result()->type, mapped_width(op->result()->type.shape)) > kMaxPrefetchWords) continue;
    if (memory.may_write(pointer_root(op->operand(0)))) continue;
    bool ok = true;
    for (const ir::Value* o : op->operands) ok = ok && iteration_invariant_but_iv(o, body);
    if (ok) out.push_back(op);
  }
  return out;
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
  if (auto m = mma_loops_.find(op); m != mma_loops_.end() && emit_mma_loop(op, m->second)) {
    ++matmul_loops_;
    return;
  }
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
  const BodyMemory memory = body_memory(body);
  std::vector<const ir::Op*> ahead = pipelined_loads(body, memory);
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
  const int64_t shared_writes_before = shared_writes_;
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
  }
  close();
  // A barrier only for what other threads read next: shared memory or block results written in a
  // branch. Global writes stay pending (either side's, branch_barriers.cpp) for sync_if_reading.
  bool block_results = false;
  for (const std::string& b : bufs) block_results = block_results || !b.empty();
  if (shared_writes_ != shared_writes_before || block_results) sync();
  else merge_dirty_state(after_then);
  for (size_t i = 0; i < n; ++i)
    if (!vars[i].empty()) scalars_[op->results[i]] = vars[i];
  for (const ir::Value* r : op->results)
    if (reg_spill_.count(r)) spill_registers(r);
}

std::pair<std::string, std::string> Codegen::print_value(const std::string& x, const ir::Type& t) {
  DType d = t.dtype;
  if (is_float(d)) return {"%.9g", fmt::format("(double)({})", to_f32(x, d))};
  if (d == DType::ptr) return {"%p", fmt::format("(const void*)({})", x)};
  if (d == DType::i1) return {"%s", fmt::format("({}) ? \"true\" : \"false\"", x)};
  if (is_unsigned_int(d)) return {"%llu", fmt::format("(unsigned long long)({})", x)};
  return {"%lld", fmt::format("(long long)({})", x)};
}

void Codegen::emit_print(const ir::Op* op) {
  has_print_ = true;
  std::string prefix = quote(op->attrs.str);
  if (op->operands.empty()) {
    line(fmt::format("if (tid == 0) printf(\"pid (%d, %d, %d) %s\\n\", tt_pid0, tt_pid1, tt_pid2, {});", prefix));
    return;
  }
  for (size_t oi = 0; oi < op->operands.size(); ++oi) {
    const ir::Value* v = op->operands[oi];
    std::string operand = oi > 0 ? fmt::format(" (operand {})", oi) : "";
    if (v->type.is_scalar()) {
      auto [f, a] = print_value(scalar(v), v->type);
      line(fmt::format("if (tid == 0) printf(\"pid (%d, %d, %d) %s{} {}\\n\", tt_pid0, tt_pid1, tt_pid2, {}, {});",
                       operand, f, prefix, a));
      continue;
    }
    sync_if_reading({v});
    thread_loop(v->type.shape, 1, nullptr, [&](const Index& idx) {
      auto [f, a] = print_value(eval(v, idx), v->type);
      line(fmt::format("printf(\"pid (%d, %d, %d) idx (%d) %s{} {}\\n\", tt_pid0, tt_pid1, tt_pid2, {}, {}, {});",
                       operand, f, flatten(idx, v->type.shape), prefix, a));
    }, nullptr);
  }
}

// A failing element reports its row-major index and the payload there (TRITIUM_DEBUG's address
// and bounds, jit/passes/debug_checks.h).
void Codegen::emit_assert(const ir::Op* op) {
  const ir::Value* c = op->operand(0);
  int id = num_asserts_++;
  line(fmt::format("// device_assert {}: {}", id, op->attrs.str.substr(0, op->attrs.str.find('\n'))));
  auto fail_call = [&](const std::string& lane, const std::function<std::string(const ir::Value*)>& at) {
    std::string call = fmt::format("tt_assert_fail(tt_assert, {}, tt_pid0, tt_pid1, tt_pid2, (long long)({})", id, lane);
    for (size_t i = 1; i < 4; ++i) call += i < op->operands.size() ? fmt::format(", (long long)({})", at(op->operand(i))) : ", 0";
    return call + ")";
  };
  if (c->type.is_scalar()) {
    line(fmt::format("if (!({})) {};", scalar(c), fail_call("-1", [&](const ir::Value* p) { return scalar(p); })));
    return;
  }
  std::vector<const ir::Value*> read{c};
  for (size_t i = 1; i < op->operands.size(); ++i) read.push_back(op->operand(i));
  sync_if_reading(read);
  thread_loop(c->type.shape, 1, nullptr, [&](const Index& idx) {
    line(fmt::format("if (!({})) {};", eval(c, idx), fail_call(flatten(idx, c->type.shape), [&](const ir::Value* p) {
                       return p->type.is_scalar() ? scalar(p) : eval(p, idx);
                     })));
  }, nullptr);
}

void Codegen::emit_block(const ir::Block* block) {
  for (const ir::Op* op : block->ops) emit_op(op);
}

void Codegen::emit_op(const ir::Op* op) {
  switch (op->kind) {
    case OpKind::Yield: return;
    case OpKind::For: return emit_for(op);
    case OpKind::If: return emit_if(op);
    case OpKind::While: return emit_while(op);
    case OpKind::Store: return emit_store(op);
    case OpKind::Reduce: return emit_reduce(op);
    case OpKind::Scan: return emit_scan(op);
    case OpKind::Dot: return emit_dot(op);
    case OpKind::Print: return emit_print(op);
    case OpKind::Assert: return emit_assert(op);
    case OpKind::DebugBarrier: return line("__syncthreads();");
    case OpKind::Histogram: return emit_histogram(op);
    case OpKind::Gather: return emit_gather(op);
    case OpKind::Split: return emit_split(op);
    default: break;
  }
  if (is_atomic(op->kind)) return emit_atomic(op);
  const ir::Value* r = op->result();
  if (r->type.is_block()) {
    if (prefetched_.count(op)) {
      regs_[r] = prefetched_.at(op);  // loaded one iteration ahead (emit_for)
    } else if (reg_planned_.count(r)) {
      std::string array = declare_registers(r->type);
      fill_registers(array, r, op);
      regs_[r] = array;
    } else if (plan_.materialized(r)) {
      std::string buf = alloc_buffer(r->type);
      materialize_into(r, buf, op);
      buffers_[r] = buf;
    }
    return;
  }
  scalars_[r] = tmp(ctype(r->type), emit_scalar(op));
}

std::string Codegen::emit_scalar(const ir::Op* op) {
  switch (op->kind) {
    case OpKind::Constant: return constant_of(op);
    case OpKind::ProgramId: return fmt::format("tt_pid{}", op->attrs.axis);
    case OpKind::NumPrograms: return fmt::format("tt_npid{}", op->attrs.axis);
    case OpKind::MultipleOf: case OpKind::MaxContiguous: return scalar(op->operand(0));
    case OpKind::Load: return scalar_load(op);
    default: break;
  }
  if (!ir::is_elementwise(op->kind)) fail("internal error: CUDA codegen has no scalar form of {}", ir::op_name(op->kind));
  std::vector<std::string> xs;
  for (ir::Value* o : op->operands) xs.push_back(scalar(o));
  return elementwise(op, xs);
}

}  // namespace tritium::jit::cuda::detail

namespace tritium::jit::cuda {
KernelSource generate_cuda(ir::Function& f, const AxisInfoMap& axis, const CompileOptions& opts,
                           int64_t smem_budget, int compute_capability) {
  f.renumber();
  const std::string& mode = env().cuda_codegen;
  if (mode == "layouts") return generate_cuda_layouts(f, opts, smem_budget, compute_capability, env().dump_dir);
  int dots = 0;
  f.walk([&](ir::Op* op) { dots += op->kind == OpKind::Dot; });
  if (mode == "legacy" || dots == 0) return detail::Codegen(f, axis, opts, smem_budget, compute_capability).run();
  // A kernel whose every dot the matmul-loop matcher takes (tutorial 03's loop, with TMA and
  // persistent programs, still faster there) keeps the element-loop generator's code; any other dot
  // kernel goes through layouts, where every dot gets tensor cores.
  try {
    KernelSource legacy = detail::Codegen(f, axis, opts, smem_budget, compute_capability).run();
    if (legacy.matmul_loops == dots) return legacy;
  } catch (const Error&) {  // what the element-loop generator cannot do, the layouts may
  }
  return generate_cuda_layouts(f, opts, smem_budget, compute_capability, env().dump_dir);
}

}  // namespace tritium::jit::cuda
