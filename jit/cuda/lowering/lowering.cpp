// The layout generator's core (design: lowering.h): the kernel's text, scalars, values, shared
// memory, op dispatch; and the entry point that runs the layout pass and the generator.
#include "jit/cuda/lowering/lowering.h"

#include <filesystem>
#include <fstream>

#include "common/env.h"
#include "jit/cuda/device_header.h"
#include "jit/passes/accumulator_init.h"

namespace tritium::jit::cuda::lowering {

KernelSource Lowering::run() {
  KernelSource ks;
  ks.entry = identifier(f_.name);
  ks.num_threads = nt_;
  std::string params;
  for (size_t i = 0; i < f_.params.size(); ++i) {
    const ir::Param& p = f_.params[i];
    std::string name = fmt::format("a{}_{}", i, identifier(p.name.empty() ? "arg" : p.name));
    params += fmt::format("{}{} ", p.type.is_ptr() ? "" : "const ", ctype(p.type)) + name + ",\n    ";
    scalars_[f_.body->args[i]] = name;
  }
  f_.walk([&](ir::Op* op) {
    for (const ir::Value* o : op->operands) ++uses_[o];
  });
  emit_block(f_.body);
  wait_mma();
  if (smem_peak_ > smem_budget_)
    fail("kernel {} needs {} bytes of shared memory on the GPU, more than the {} available: use smaller blocks or "
         "fewer stages (num_stages={})",
         f_.name, smem_peak_, smem_budget_, num_stages_);
  ks.smem_bytes = smem_peak_;
  ks.num_asserts = num_asserts_;
  ks.has_print = has_print_;
  std::string src = device_header();
  src += fmt::format("\n// Kernel {}: {} threads ({} warps), {} bytes of shared memory; lowered through layouts.\n",
                     f_.name, nt_, nwarps_, smem_peak_);
  // Tensor maps (tma_ring.cpp) follow tt_assert, as the element-loop generator's do: the launcher
  // encodes them from KernelSource::tma_maps.
  ks.tma_maps = tma_maps_;
  std::string maps;
  if (!tma_maps_.empty()) src += "struct __align__(64) tt_tmap_t { unsigned long long v[16]; };  // a CUtensorMap\n";
  for (size_t i = 0; i < tma_maps_.size(); ++i) maps += fmt::format(", const __grid_constant__ tt_tmap_t tt_tmap{}", i);
  src += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(\n    {}uint8_t* tt_scratch, int* tt_assert{}) {{\n",
                     nt_, ks.entry, params, maps);
  src += "  extern __shared__ __align__(1024) uint8_t tt_smem[];\n";
  src += "  const int tid = (int)threadIdx.x;\n";
  src += "  const int tt_lane = tid & 31;\n";
  // Read through a shuffle from lane 0: the compiler then knows it is the same in the whole warp.
  src += "  const int tt_warp = __shfl_sync(0xffffffffu, tid >> 5, 0);\n";
  src += "  const uint32_t tt_smem_base = tt_smem_u32(tt_smem);\n";
  src += "  (void)tid; (void)tt_lane; (void)tt_warp; (void)tt_smem; (void)tt_smem_base; (void)tt_scratch; (void)tt_assert;\n";
  src += "  const int32_t tt_pid0 = (int32_t)blockIdx.x, tt_pid1 = (int32_t)blockIdx.y, tt_pid2 = (int32_t)blockIdx.z;\n";
  src += "  const int32_t tt_npid0 = (int32_t)gridDim.x, tt_npid1 = (int32_t)gridDim.y, tt_npid2 = (int32_t)gridDim.z;\n";
  src += "  (void)tt_pid0; (void)tt_pid1; (void)tt_pid2; (void)tt_npid0; (void)tt_npid1; (void)tt_npid2;\n";
  src += decls_;
  src += body_;
  src += "}\n";
  ks.source = std::move(src);
  return ks;
}

std::optional<std::string> bit_linear_expr(const std::function<int64_t(int)>& f, int n, const std::string& var) {
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  if ((1 << bits) != n) return std::nullopt;
  const int64_t c0 = f(0);
  std::vector<int64_t> c(static_cast<size_t>(bits));
  for (int i = 0; i < bits; ++i) c[static_cast<size_t>(i)] = f(1 << i) - c0;
  for (int r = 0; r < n; ++r) {
    int64_t sum = c0;
    for (int i = 0; i < bits; ++i)
      if ((r >> i) & 1) sum += c[static_cast<size_t>(i)];
    if (sum != f(r)) return std::nullopt;
  }
  std::vector<std::string> terms;
  for (int i = 0; i < bits;) {
    const int64_t ci = c[static_cast<size_t>(i)];
    if (ci == 0) {
      ++i;
      continue;
    }
    if (ci < 0 || (ci & (ci - 1)) != 0) {  // not a power of two: this bit alone, times its weight
      terms.push_back(fmt::format("(({} >> {}) & 1) * {}", var, i, ci));
      ++i;
      continue;
    }
    int j = 0;
    while ((int64_t{1} << j) != ci) ++j;
    int k = 1;  // bits i .. i+k-1 of var land on bits j .. j+k-1 of the value
    while (i + k < bits && c[static_cast<size_t>(i + k)] == ci << k) ++k;
    std::string x = var;
    if (i > 0) x = fmt::format("({} >> {})", x, i);
    if (i + k < bits) x = fmt::format("({} & {})", x, (1 << k) - 1);
    if (j > 0) x = fmt::format("({} << {})", x, j);
    terms.push_back(x);
    i += k;
  }
  if (c0 != 0 || terms.empty()) terms.push_back(fmt::format("{}", c0));
  if (terms.size() == 1) return terms[0];
  return fmt::format("({})", fmt::join(terms, " + "));
}

// ---- output -------------------------------------------------------------------------------------

void Lowering::line(const std::string& s) {
  body_.append(static_cast<size_t>(2 * indent_), ' ');
  body_ += s;
  body_ += '\n';
}

void Lowering::open(const std::string& s) {
  line(s.empty() ? "{" : s + " {");
  ++indent_;
}

void Lowering::close() {
  --indent_;
  line("}");
}

std::string Lowering::tmp(const std::string& type, const std::string& expr) {
  std::string n = fresh("t");
  if (predecl_) {  // declared in the enclosing scope, assigned here (emit_deferred_defs)
    predecl_->append(static_cast<size_t>(2 * predecl_indent_), ' ');
    *predecl_ += fmt::format("{} {};\n", type, n);
    line(fmt::format("{} = {};", n, expr));
    return n;
  }
  line(fmt::format("{} const {} = {};", type, n, expr));  // east const: pointers stay writable
  return n;
}

// ---- values -------------------------------------------------------------------------------------

std::string Lowering::scalar(const ir::Value* v) {
  auto it = scalars_.find(v);
  if (it == scalars_.end()) fail("internal error: scalar %{} of kernel {} was not emitted", v->id, f_.name);
  return it->second;
}

const Val& Lowering::val(const ir::Value* v) {
  auto it = vals_.find(v);
  if (it == vals_.end()) fail("internal error: block value %{} of kernel {} was not emitted", v->id, f_.name);
  // Registers a wgmma group still writes are read only after it retires (dots take their operands
  // from vals_ directly: a wgmma may accumulate into registers in flight).
  if (!pending_mma_.empty() && it->second.kind == Val::Kind::Regs) wait_mma_for(it->second.name);
  return it->second;
}

bool Lowering::reusable(const ir::Value* v, const ir::Op* op) {
  auto it = vals_.find(v);
  if (it == vals_.end() || it->second.kind != Val::Kind::Regs || uses_[v] != 1 || inductions_.count(v)) return false;
  const bool same_block = v->def ? v->def->parent == op->parent : v->owner == op->parent;
  return same_block && sharing(it->second.name) == 1;
}

int Lowering::sharing(const std::string& array) const {
  int n = 0;
  for (const auto& [v, x] : vals_) n += x.kind == Val::Kind::Regs && x.name == array;
  return n;
}

Val& Lowering::declare_regs(const ir::Value* v) {
  const Layout& l = layout(v);
  Val& out = vals_[v];
  out.kind = Val::Kind::Regs;
  out.layout = &l;
  out.name = fresh("v");
  const std::string decl = fmt::format("__align__(16) {} {}[{}];", ctype(v->type.element()), out.name, l.num_regs());
  if (predecl_) {
    predecl_->append(static_cast<size_t>(2 * predecl_indent_), ' ');
    *predecl_ += decl + "\n";
  } else {
    line(decl);
  }
  return out;
}

Val& Lowering::define_regs(const ir::Value* v, const std::function<std::string(int)>& fn) {
  Val& out = declare_regs(v);
  const int n = layout(v).num_regs();
  for (int r = 0; r < n; ++r) line(fmt::format("{}[{}] = {};", out.name, r, fn(r)));
  return out;
}

Val& Lowering::define_regs(const ir::Value* v, const std::function<std::string(int)>& fn,
                           const std::function<std::optional<std::string>(const std::string&)>& loop_fn) {
  const int n = layout(v).num_regs();
  std::optional<std::string> e = n > 1 ? loop_fn("tt_r") : std::nullopt;
  if (!e) return define_regs(v, fn);
  Val& out = declare_regs(v);
  line("#pragma unroll");
  line(fmt::format("for (int tt_r = 0; tt_r < {}; ++tt_r) {}[tt_r] = {};", n, out.name, *e));
  return out;
}

Val& Lowering::define_mapped_regs(const ir::Value* v, const Val& in, const std::vector<int>& map) {
  return define_regs(
      v, [&](int i) { return in.at(map[static_cast<size_t>(i)]); },
      [&](const std::string& var) -> std::optional<std::string> {
        auto idx = bit_linear_expr([&](int i) { return map[static_cast<size_t>(i)]; }, static_cast<int>(map.size()), var);
        if (!idx) return std::nullopt;
        return in.at(*idx);
      });
}

void Lowering::set_uniform(const ir::Value* v, const std::string& expr) {
  Val& out = vals_[v];
  out.kind = Val::Kind::Uniform;
  out.layout = layouts_.has(v) ? &layout(v) : nullptr;
  out.name = expr;
}

std::string Lowering::thread_coord(const Layout& l, int dim) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < l.lane.size(); ++i)
    if (l.lane[i].dim == dim) parts.push_back(fmt::format("((tt_lane >> {}) & 1) << {}", i, l.lane[i].bit));
  for (size_t i = 0; i < l.warp.size(); ++i)
    if (l.warp[i].dim == dim) parts.push_back(fmt::format("((tt_warp >> {}) & 1) << {}", i, l.warp[i].bit));
  if (parts.empty()) return "0";
  std::string expr;
  for (const auto& p : parts) expr += (expr.empty() ? "(" : " | (") + p + ")";
  std::string key = fmt::format("{}|{}", expr, dim);
  auto it = thread_coords_.find(key);
  if (it != thread_coords_.end()) return it->second;
  std::string name = fmt::format("tt_tc{}", thread_coords_.size());
  decls_ += fmt::format("  const int {} = {};\n", name, expr);
  return thread_coords_[key] = name;
}

std::string Lowering::coord(const Layout& l, int r, int dim) {
  std::string t = thread_coord(l, dim);
  int64_t c = l.reg_coords(r)[static_cast<size_t>(dim)];
  if (t == "0") return fmt::format("{}", c);
  return c ? fmt::format("({} + {})", t, c) : t;
}

std::optional<std::string> Lowering::coord_expr(const Layout& l, const std::string& var, int dim) {
  auto e = bit_linear_expr([&](int r) { return l.reg_coords(r)[static_cast<size_t>(dim)]; }, l.num_regs(), var);
  if (!e) return std::nullopt;
  const std::string t = thread_coord(l, dim);
  if (t == "0") return e;
  return *e == "0" ? t : fmt::format("({} + {})", t, *e);
}

std::string Lowering::owner(const Layout& l) {
  int lm = l.lane_replication(), wm = l.warp_replication();
  std::vector<std::string> conds;
  if (lm) conds.push_back(fmt::format("(tt_lane & {}) == 0", lm));
  if (wm) conds.push_back(fmt::format("(tt_warp & {}) == 0", wm));
  if (conds.empty()) return "true";
  return fmt::format("({})", fmt::join(conds, " && "));
}

// ---- shared memory -------------------------------------------------------------------------------

int64_t Lowering::alloc_smem(int64_t bytes, int64_t align) {
  int64_t off = (smem_top_ + align - 1) / align * align;
  for (auto [o, b] : dead_smem_)
    if (off < o + b && o < off + bytes) {
      fence_dead_smem();
      break;
    }
  smem_top_ = off + bytes;
  smem_peak_ = std::max(smem_peak_, smem_top_);
  smem_live_.push_back({off, bytes});
  return off;
}

void Lowering::free_smem(int64_t offset) {
  for (size_t i = smem_live_.size(); i-- > 0;)
    if (smem_live_[i].first == offset) {
      smem_live_.erase(smem_live_.begin() + static_cast<long>(i));
      break;
    }
  tile_allocs_.erase(offset);
  smem_top_ = smem_live_.empty() ? 0 : smem_live_.back().first + smem_live_.back().second;
}

void Lowering::fence_dead_smem() {
  if (dead_smem_.empty()) return;
  wait_mma();
  synced_ = false;  // another warpgroup's wgmma may have read the bytes after the last barrier
  sync();
  dead_smem_.clear();
}

// Frees the tiles this block allocated (smem_live_ from `live` on) that no op after op i reads,
// through any value naming the same bytes (a view of the tile, a transposed operand).
void Lowering::release_dead_tiles(size_t live, const std::unordered_map<const ir::Value*, size_t>& last_use, size_t i) {
  for (size_t k = smem_live_.size(); k-- > live;) {
    const int64_t off = smem_live_[k].first;
    auto t = tile_allocs_.find(off);
    if (t == tile_allocs_.end()) continue;
    bool used_later = false;
    for (const auto& [v, val] : vals_) {
      if (val.kind != Val::Kind::Tile || val.name != t->second) continue;
      auto u = last_use.find(v);
      if (u != last_use.end() && u->second > i) {
        used_later = true;
        break;
      }
    }
    if (used_later) continue;
    dead_smem_.push_back(smem_live_[k]);
    free_smem(off);
  }
}

void Lowering::sync() {
  if (synced_) return;
  line("__syncthreads();");
  synced_ = true;
  global_dirty_ = false;  // the barrier orders the global writes before it, too
  dirty_roots_.clear();
  dirty_unknown_ = false;
}

// ---- dispatch -----------------------------------------------------------------------------------

void Lowering::emit_block(const ir::Block* block) {
  const size_t live = smem_live_.size();
  defer_address_defs(block);
  // The last op of the block reading each value, itself or in its regions (an op a loop emits,
  // deferred_defs_, counts to the block's end).
  std::unordered_map<const ir::Value*, size_t> last_use;
  std::function<void(const ir::Op*, size_t)> note = [&](const ir::Op* o, size_t i) {
    for (const ir::Value* v : o->operands) last_use[v] = deferred_defs_.count(o) ? block->ops.size() : i;
    for (const ir::Block* r : o->regions)
      for (const ir::Op* inner : r->ops) note(inner, i);
  };
  for (size_t i = 0; i < block->ops.size(); ++i) note(block->ops[i], i);
  for (size_t i = 0; i < block->ops.size(); ++i) {
    const ir::Op* op = block->ops[i];
    // A region (a loop above all) starts with no freed bytes to fence: a wait for wgmma groups
    // inside a loop would serialise what it keeps in flight.
    if (!op->regions.empty()) fence_dead_smem();
    emit_op(op);
    if (smem_live_.size() > live) release_dead_tiles(live, last_use, i);
  }
  // Tiles made in this block die with it: a barrier before later code reuses their bytes.
  if (smem_live_.size() > live) {
    wait_mma();
    sync();
    while (smem_live_.size() > live) free_smem(smem_live_.back().first);
  }
}

void Lowering::emit_op(const ir::Op* op) {
  if (deferred_defs_.count(op)) return;  // emitted by its loop (emit_deferred_defs)
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
    case OpKind::ConvertLayout: return emit_convert(op);
    case OpKind::Join: return emit_join(op);
    case OpKind::Split: return emit_split(op);
    case OpKind::Gather: return emit_gather(op);
    case OpKind::Histogram: return emit_histogram(op);
    default: break;
  }
  if (is_atomic(op->kind)) return emit_atomic(op);
  const ir::Value* r = op->result();
  if (r->type.is_scalar()) {
    scalars_[r] = tmp(ctype(r->type), emit_scalar(op));
    return;
  }
  switch (op->kind) {
    case OpKind::Constant: case OpKind::Splat: case OpKind::Arange: return emit_source(op);
    case OpKind::Broadcast: case OpKind::ExpandDims: case OpKind::Permute: case OpKind::Reshape:
    case OpKind::MultipleOf: case OpKind::MaxContiguous:
      return emit_view(op);
    case OpKind::Load:
      if (register_ahead_.count(op)) return emit_register_ahead_load(op);
      if (auto it = stage_slot_.find(op); it != stage_slot_.end()) return emit_ring_register_load(op, it->second);
      return emit_load(op);
    default: break;
  }
  if (ir::is_elementwise(op->kind)) return emit_elementwise(op);
  fail("internal error: the layout generator cannot lower {} at {}", ir::op_name(op->kind), op->loc.str());
}

}  // namespace tritium::jit::cuda::lowering

namespace tritium::jit::cuda {

KernelSource generate_cuda_layouts(ir::Function& f, const CompileOptions& opts, int64_t smem_budget, int cc,
                                   const std::string& dump_dir) {
  contract_for_cuda(f);
  use_accumulator_flags(f);
  AxisInfoMap axis = analyze_axis_info(f);
  LayoutMap layouts = assign_layouts(f, axis, LayoutOptions{opts.num_warps, cc});
  verify_layouts(f, layouts);
  if (!dump_dir.empty()) {
    std::filesystem::create_directories(dump_dir);
    std::ofstream(std::filesystem::path(dump_dir) / (f.name + ".layouts.ir")) << layouts.annotated(f);
  }
  AxisInfoMap after = analyze_axis_info(f);  // the pass added converts and clones
  // Shared memory counted exactly: the rings' stages first take every byte their bodies' tiles leave
  // (tutorial 06's 128 x 128 x 128 forward fits 3 stages in an H100's 227 KB, as Triton's); only a
  // kernel that then needs more than the budget is lowered again with a margin for the bodies'
  // reduction partials (fewer stages).
  {
    lowering::Lowering exact(f, layouts, after, opts, smem_budget, cc);
    exact.count_body_exactly();
    try {
      return exact.run();
    } catch (const Error&) {
      if (!exact.over_budget()) throw;
    }
  }
  return lowering::Lowering(f, layouts, after, opts, smem_budget, cc).run();
}

}  // namespace tritium::jit::cuda
