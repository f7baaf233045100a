// Tensor cores for the CUDA generator (docs/cuda-backend.md, "Tensor cores"): warp and warpgroup
// tilings of a dot's result (the fragment mapping), matmul loops recognised and streamed through
// swizzled shared-memory stages with cp.async, mma.sync + ldmatrix and wgmma emitters, other dots,
// and the store of a fragment-mapped value through shared memory.
#include <iterator>
#include <sstream>
#include <tuple>

#include "jit/cuda/codegen_impl.h"

namespace tritium::jit::cuda::detail {

bool Codegen::store_through_shared(const ir::Op* op) {
  const ir::Value* p = op->operand(0);
  const ir::Value* val = op->operand(1);
  const ir::Value* mask = op->operands.size() > 2 ? op->operand(2) : nullptr;
  const Shape& s = p->type.shape;
  if (s.size() != 2 || !mma_map_.count(s)) return false;
  DType d = p->type.pointee;
  int64_t esz = dtype_bytes(d);
  if (esz != 2 && esz != 4) return false;
  int V = static_cast<int>(16 / esz);
  if (access_width(op) < V || s[1] % V) return false;
  if (mask && !(axis_.contains(mask) && axis_.get(mask).constancy.back() >= V)) return false;
  // The row-chunk loop evaluates the pointer and mask at elements other threads own in the
  // fragment mapping: no register value may feed them (e.g. a mask computed from C itself).
  if (reads_registers(p) || (mask && reads_registers(mask))) return false;
  // The kernel's last memory access (run() says when it may be) leaves through the copy engine
  // where it can; the kernel then persists.
  if (may_persist_ && op == last_memory_op_ && tma_maps_.size() < kMaxTensorMaps)
    if (std::optional<TmaTile> tile = plan_tma_store(op); tile && store_through_tma(op, *tile)) return true;
  int64_t stride = s[1] + V;
  if (smem_ + s[0] * stride * esz > smem_budget_) return false;
  std::string buf = alloc_shared(ctype(d), s[0] * stride, esz);
  auto at = [&](const std::string& row, const std::string& col) { return fmt::format("({}) * {} + {}", row, stride, col); };
  ++shared_writes_;
  sync();  // a loop around: the previous trip's reads are done
  line("// the store goes through shared memory: fragments in, 16-byte row chunks out");
  write_fragments(val, buf, at);
  sync();
  store_row_chunks(op, buf, at);
  return true;
}

void Codegen::write_fragments(const ir::Value* val, const std::string& buf, const BufferIndex& at) {
  thread_loop(
      val->type.shape, 2, [&](const Index& base) { emit_vector_loads({val}, base, 2); },
      [&](const Index& idx) { line(fmt::format("{}[{}] = {};", buf, at(idx[0], idx[1]), eval(val, idx))); }, nullptr);
  vec_loads_.clear();
}

void Codegen::store_row_chunks(const ir::Op* op, const std::string& buf, const BufferIndex& at) {
  const ir::Value* p = op->operand(0);
  const ir::Value* mask = op->operands.size() > 2 ? op->operand(2) : nullptr;
  const Shape& s = p->type.shape;
  const int64_t V = 16 / dtype_bytes(p->type.pointee);
  std::string e = fresh("e");
  open(fmt::format("for (int {0} = tid * {1}; {0} < {2}; {0} += {3})", e, V, numel(s), int64_t(nt_) * V));
  Index idx{tmp("int", fmt::format("{} / {}", e, s[1])), tmp("int", fmt::format("{} % {}", e, s[1]))};
  std::string ptr = tmp(ctype(p->type.pointee) + "*", eval(p, idx));
  std::string src = fmt::format("&{}[{}]", buf, at(idx[0], idx[1]));
  if (mask) line(fmt::format("tt_st_pred<16>({}, {}, {});", ptr, src, eval(mask, idx)));
  else line(fmt::format("tt_vcopy<16>({}, {});", ptr, src));
  close();
  mark_global_write(p);
}

// C through the copy engine (docs/cuda-backend.md, "Persistent programs"): the fragments go into
// boxes of 64 columns with the 128-byte swizzle (a warp's 4-byte writes cover 8 rows' chunks, all
// in distinct banks after the swizzle), and thread 0 copies the boxes out with one bulk copy each
// - not now but once the next program has asked for its first tiles (tt_flush_store, called by its
// TMA loop: if the copy engine serves requests in order, a 64 KB copy issued first would hold
// them back - an assumption; issued at once it measured within noise of this), and the copy
// drains while that program's loop runs. The buffer lies past every other (the
// stages included); the next program's epilogue waits for the copy to have read it before writing
// it again. A program whose guard fails stores it as row chunks.
bool Codegen::store_through_tma(const ir::Op* op, const TmaTile& tile) {
  const ir::Value* p = op->operand(0);
  const Shape& s = p->type.shape;
  const int64_t R = s[0], C = s[1];
  const int64_t offset = (std::max(smem_, smem_peak_) + 1023) / 1024 * 1024;  // the swizzle's period
  if (offset + R * C * 2 > smem_budget_) return false;
  smem_ = offset;
  std::string buf = alloc_shared(ctype(p->type.pointee), R * C, 2);
  smem_peak_ = std::max(smem_peak_, smem_);
  const size_t map = tma_maps_.size();
  tma_maps_.push_back(tile.map);
  persistent_ = true;
  // The copy, as run() defines tt_flush_store: the box origin kept from the program that wrote it.
  store_flush_.clear();
  for (int64_t b = 0; b < C / 64; ++b)
    store_flush_ += fmt::format("      tt_tma_store_2d(&tt_tmap{}, tt_store_col + {}, tt_store_row, tt_smem_u32({}) + {});\n",
                                map, b * 64, buf, b * R * 128);
  auto at = [&](const std::string& row, const std::string& col) {
    return fmt::format("(({1}) >> 6) * {2} + ({0}) * 64 + ((((({1}) >> 3) & 7) ^ (({0}) & 7)) << 3) + (({1}) & 7)", row,
                       col, R * 64);
  };
  ++shared_writes_;
  line("// the store goes through shared memory (swizzled boxes of 64 columns) and the bulk tensor copy engine");
  line("tt_flush_store();  // the previous program's copy, if its loop did not issue it");
  line("if (tid == 0) tt_bulk_wait_read0();  // ... has read the buffer");
  sync();
  write_fragments(op->operand(1), buf, at);
  line("tt_fence_async_shared();  // the writes above, before the copy engine reads them");
  sync();
  open(fmt::format("if ({})", tile.guard));
  line(fmt::format("tt_store_col = {}, tt_store_row = {}, tt_store_pending = true;", tile.start[1], tile.start[0]));
  close();
  open("else");
  store_row_chunks(op, buf, at);
  close();
  return true;
}

std::optional<Codegen::MmaTiling> Codegen::mma_tiling(const ir::Op* dot) const {
  const ir::Type& rt = dot->result()->type;
  const ir::Type& at = dot->operand(0)->type;
  const bool tf32 = is_tf32(dot), byte = is_byte_mma(at.dtype);
  const DType acc_type = is_int(at.dtype) ? DType::i32 : DType::f32;
  if (cc_ < 80 || rt.rank() != 2 || rt.dtype != acc_type || !(is_half(at.dtype) || tf32 || (byte && cc_ == 90)) ||
      dot->operand(1)->type.dtype != at.dtype)
    return std::nullopt;
  int64_t M = rt.shape[0], N = rt.shape[1], K = at.shape[1];
  if (M % 16 || N % 16 || K % (tf32 ? 8 : byte ? 32 : 16) || M * N / nt_ > kMaxMmaWords) return std::nullopt;
  std::optional<MmaTiling> best;
  // Warpgroups: the fewest wgmma per k step (widest N). Not for tf32x3, whose split operands need
  // the fragments in registers (mma.sync).
  if (cc_ == 90 && nwarps_ % 4 == 0 && dot->attrs.str != "tf32x3") {
    int groups = nwarps_ / 4;
    for (int wm = 1; wm <= groups; ++wm) {
      if (groups % wm) continue;
      int wn = groups / wm;
      if (M % (wm * 64) || N % (wn * 64) || N / wn > 256) continue;
      MmaTiling t{wm, wn, M / wm, N / wn, int(M / wm / 64), int(N / wn / 8), 64, true};
      if (!best || t.MT < best->MT) best = t;
    }
  }
  const bool warpgroups = best.has_value();
  if (byte && !warpgroups) return std::nullopt;  // fp8 and int8 only through wgmma (no mma.sync emitter for them)
  for (int wm = 1; wm <= nwarps_ && !warpgroups; ++wm) {
    if (nwarps_ % wm) continue;
    int wn = nwarps_ / wm;
    if (M % (wm * 16) || N % (wn * 16)) continue;
    MmaTiling t{wm, wn, M / wm, N / wn, int(M / wm / 16), int(N / wn / 8)};
    if (!best || t.MT + t.NT / 2 < best->MT + best->NT / 2) best = t;
  }
  if (auto it = mma_map_.find(rt.shape); best && it != mma_map_.end() && !(it->second == *best)) return std::nullopt;
  return best;
}

void Codegen::emit_mma_tiles(const MmaTiling& t, int64_t K, const ir::Op* dot, const TileAddress& a_at,
                             const TileAddress& b_at, const std::string& acc) {
  const bool tf32 = is_tf32(dot), x3 = dot->attrs.str == "tf32x3";
  const int kstep = tf32 ? 8 : 16, epc = tf32 ? 4 : 8;  // k per instruction, elements per 16 bytes
  open("");
  std::string l = tmp("int", "tid & 31");
  std::string wm0 = tmp("int", t.m0()), wn0 = tmp("int", t.n0());
  std::string kk = fresh("kk");
  if (K / kstep <= 8) line("#pragma unroll");
  open(fmt::format("for (int {0} = 0; {0} < {1}; {0} += {2})", kk, K, kstep));
  if (tf32) line(fmt::format("uint32_t tt_a[{}][4], tt_b[{}][2];", t.MT, t.NT));
  else line(fmt::format("uint32_t tt_a[{}][4], tt_b[{}][4];", t.MT, t.NT / 2));
  line("#pragma unroll");
  line(fmt::format("for (int tt_mi = 0; tt_mi < {}; ++tt_mi) tt_ldsm_x4(tt_a[tt_mi], {});", t.MT,
                   a_at(fmt::format("{} + tt_mi * {} + ({} & 15)", wm0, t.row_step, l),
                        fmt::format("{} + ({} >> 4) * {}", kk, l, epc))));
  line("#pragma unroll");
  if (!tf32) {
    line(fmt::format("for (int tt_nj = 0; tt_nj < {}; ++tt_nj) tt_ldsm_x4_trans(tt_b[tt_nj], {});", t.NT / 2,
                     b_at(fmt::format("{} + ({} & 15)", kk, l), fmt::format("{} + tt_nj * 16 + ({} >> 4) * 8", wn0, l))));
    line("#pragma unroll");
    open(fmt::format("for (int tt_mi = 0; tt_mi < {}; ++tt_mi)", t.MT));
    line("#pragma unroll");
    line(fmt::format("for (int tt_ni = 0; tt_ni < {0}; ++tt_ni) tt_mma_{1}(&{2}[(tt_mi * {0} + tt_ni) * 4], tt_a[tt_mi], "
                     "&tt_b[tt_ni >> 1][(tt_ni & 1) * 2]);",
                     t.NT, dot->operand(0)->type.dtype == DType::f16 ? "f16" : "bf16", acc));
    close();
    close();
    close();
    return;
  }
  open(fmt::format("for (int tt_ni = 0; tt_ni < {}; ++tt_ni)", t.NT));
  std::string n = fmt::format("{} + tt_ni * 8 + ({} >> 2)", wn0, l);
  line(fmt::format("tt_b[tt_ni][0] = tt_ld_shared4({});", b_at(fmt::format("{} + ({} & 3)", kk, l), n)));
  line(fmt::format("tt_b[tt_ni][1] = tt_ld_shared4({});", b_at(fmt::format("{} + ({} & 3) + 4", kk, l), n)));
  close();
  // Each fragment register rounded to tf32 in place, or (tf32x3) split into big (in place) and small.
  if (x3) line(fmt::format("uint32_t tt_as[{}][4], tt_bs[{}][2];", t.MT, t.NT));
  for (auto [r, w, n] : {std::tuple{"tt_a", 4, t.MT * 4}, std::tuple{"tt_b", 2, t.NT * 2}}) {
    std::string x = fmt::format("{}[tt_i / {}][tt_i % {}]", r, w, w);
    line("#pragma unroll");
    line(fmt::format("for (int tt_i = 0; tt_i < {}; ++tt_i) {};", n,
                     x3 ? fmt::format("tt_tf32_split({}, {}s[tt_i / {}][tt_i % {}])", x, r, w, w)
                        : fmt::format("{0} = tt_tf32({0})", x)));
  }
  line("#pragma unroll");
  open(fmt::format("for (int tt_mi = 0; tt_mi < {}; ++tt_mi)", t.MT));
  line("#pragma unroll");
  open(fmt::format("for (int tt_ni = 0; tt_ni < {}; ++tt_ni)", t.NT));
  std::string c = fmt::format("&{}[(tt_mi * {} + tt_ni) * 4]", acc, t.NT);
  if (x3) {  // the small products first: they are added before the big one rounds the sum
    line(fmt::format("tt_mma_tf32({}, tt_as[tt_mi], tt_b[tt_ni]);", c));
    line(fmt::format("tt_mma_tf32({}, tt_a[tt_mi], tt_bs[tt_ni]);", c));
  }
  line(fmt::format("tt_mma_tf32({}, tt_a[tt_mi], tt_b[tt_ni]);", c));
  close();
  close();
  close();
  close();
}

std::pair<std::string, std::string> Codegen::wgmma_descriptors(const MmaTiling& t, int64_t BK, DType in, bool b_kmajor,
                                                                const std::string& a0, const std::string& b0) {
  const int64_t esz = dtype_bytes(in), rca = BK * esz / 16;  // 16-byte chunks of a K row
  const int64_t a_row = std::min<int64_t>(rca, 8) * 16;       // bytes of a row within one column block
  const int mode = rca >= 8 ? 1 : rca == 4 ? 2 : 3;           // 128-, 64-, 32-byte swizzle
  std::string wg = tmp("int", "__shfl_sync(0xffffffffu, tid >> 7, 0)");
  std::string m0 = tmp("int", fmt::format("({} / {}) * {}", wg, t.WN, t.WTM));
  std::string n0 = tmp("int", fmt::format("({} % {}) * {}", wg, t.WN, t.WTN));
  std::string da = tmp("uint64_t", fmt::format("tt_wgmma_desc({} + {} * {}, 16, {}, {})", a0, m0, a_row, 8 * a_row, mode));
  // B K-major: rows of N laid out as A's rows of M; N-major (16-bit only): the transposed form.
  std::string db = b_kmajor ? tmp("uint64_t", fmt::format("tt_wgmma_desc({} + {} * {}, 16, {}, {})", b0, n0, a_row, 8 * a_row, mode))
                            : tmp("uint64_t", fmt::format("tt_wgmma_desc({} + ({} >> 6) * {}, {}, 1024, 1)", b0, n0, BK * 128, BK * 128));
  return {da, db};
}

void Codegen::emit_wgmma_tiles(const MmaTiling& t, int64_t BM, int64_t BN, int64_t BK, DType in, bool b_kmajor,
                               const std::string& da, const std::string& db, const std::string& acc, int in_flight) {
  const int64_t esz = dtype_bytes(in), rca = BK * esz / 16;  // 16-byte chunks of a K row
  const int64_t a_row = std::min<int64_t>(rca, 8) * 16;       // bytes of a row within one column block
  const bool fp8 = is_fp8(in), integer = is_int(in);
  open("");
  line("tt_wgmma_fence();");
  int64_t nr = t.WTN / 2;  // accumulators of one instruction
  const char* ty = in == DType::f16    ? "f16"
                   : in == DType::bf16  ? "bf16"
                   : in == DType::f32   ? "tf32"
                   : in == DType::f8e4m3 ? "e4m3"
                   : in == DType::f8e5m2 ? "e5m2"
                   : in == DType::i8    ? "s8"
                                        : "u8";
  // 32 bytes of K per instruction (k8 for tf32, k16 for 16-bit types, k32 for 8-bit ones); tf32 and
  // 8-bit types have no transpose bits, integers no input scales either (s32 accumulators).
  const std::string tail = integer ? "p" : fp8 || in == DType::f32 ? "p, 1, 1" : fmt::format("p, 1, 1, 0, {}", b_kmajor ? 0 : 1);
  auto k_offset = [&](int64_t kb, int64_t rows) { return rca >= 8 ? (kb / 128) * (rows * 128) + kb % 128 : kb; };
  for (int64_t kb = 0; kb < BK * esz; kb += 32) {
    int64_t boff = b_kmajor ? k_offset(kb, BN) : (kb / esz) * 128;
    for (int mi = 0; mi < t.MT; ++mi) {
      int64_t aoff = mi * 64 * a_row + k_offset(kb, BM);
      std::string regs, outs;
      for (int64_t i = 0; i < nr; ++i) {
        regs += fmt::format("{}%{}", i ? ", " : "", i);
        outs += fmt::format("{}\"+{}\"({}[{}])", i ? ", " : "", integer ? "r" : "f", acc, mi * t.NT * 4 + i);
      }
      line(fmt::format("asm volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{0}, 0; wgmma.mma_async.sync.aligned.m64n{1}k{11}.{13}.{2}.{2} "
                       "{{{3}}}, %{4}, %{5}, {12}; }}\" : {6} : \"r\"(1), \"l\"({7} + {8}), \"l\"({9} + {10}));",
                       nr, t.WTN, ty, regs, nr + 1, nr + 2, outs, da, aoff >> 4, db, boff >> 4, 32 / esz, tail,
                       integer ? "s32" : "f32"));
    }
  }
  line("tt_wgmma_commit();");
  line(fmt::format("tt_wgmma_wait<{}>();", in_flight));
  close();
}

bool Codegen::emit_dot_mma_tiles(const ir::Op* op) {
  auto t = mma_tiling(op);
  const ir::Value* a = op->operand(0);
  const ir::Value* b = op->operand(1);
  const std::string &abuf = buffers_.at(a), &bbuf = buffers_.at(b);
  if (!t || scratch_bufs_.count(abuf) || scratch_bufs_.count(bbuf)) return false;  // ldmatrix reads shared memory
  if (is_byte_mma(a->type.dtype)) return false;  // wgmma in matmul loops only: the FMA loop here
  int64_t K = a->type.shape[1], N = b->type.shape[1];
  const ir::Value* res = op->result();
  sync();  // the operand buffers are complete
  std::string acc = declare_registers(res->type);
  fill_registers(acc, op->operand(2));
  auto at = [](const std::string& buf, int64_t cols) {
    return [buf, cols](const std::string& r, const std::string& c) {
      return fmt::format("tt_smem_u32({} + ({}) * {} + ({}))", buf, r, cols, c);
    };
  };
  line(fmt::format("// dot on tensor cores: {} warps of {} x {} (mma.sync.m16n8k{})", nwarps_, t->WTM, t->WTN,
                   is_tf32(op) ? 8 : 16));
  emit_mma_tiles(*t, K, op, at(abuf, K), at(bbuf, N), acc);
  regs_[res] = acc;
  if (!reg_planned_.count(res)) spill_registers(res);
  return true;
}

bool Codegen::all_inputs(const ir::Value* v, const std::function<int(const ir::Value*)>& check) {
  std::unordered_set<const ir::Value*> seen;
  std::function<bool(const ir::Value*)> walk = [&](const ir::Value* x) {
    if (!seen.insert(x).second) return true;  // verified already, or being verified higher up
    int c = check(x);
    if (c >= 0) return c == 1;
    for (const ir::Value* o : x->def->operands)
      if (!walk(o)) return false;
    return true;
  };
  return walk(v);
}

bool Codegen::trip_computable(const ir::Value* v, const ir::Block* body, const std::vector<const ir::Value*>& carried,
                              bool invariant) {
  return all_inputs(v, [&](const ir::Value* x) {
    if (x->is_block_arg()) {
      if (x->owner != body) return x->type.is_scalar() ? 1 : 0;
      return (x == body->args[0] && !invariant) || std::find(carried.begin(), carried.end(), x) != carried.end() ? 1 : 0;
    }
    const ir::Op* d = x->def;
    if (d->parent != body) return outer_inline(x) ? 1 : 0;
    bool pure = d->kind == OpKind::Constant || d->kind == OpKind::Arange || d->kind == OpKind::Splat ||
                d->kind == OpKind::Broadcast || d->kind == OpKind::ExpandDims || d->kind == OpKind::Reshape ||
                d->kind == OpKind::Permute || d->kind == OpKind::MultipleOf || d->kind == OpKind::MaxContiguous ||
                d->kind == OpKind::ProgramId || d->kind == OpKind::NumPrograms || ir::is_elementwise(d->kind);
    return pure ? -1 : 0;
  });
}

bool Codegen::reads_registers(const ir::Value* v) {
  return !all_inputs(v, [&](const ir::Value* x) {
    if (x->type.is_scalar() || buffers_.count(x)) return 1;
    return regs_.count(x) || reg_planned_.count(x) || !x->def ? 0 : -1;
  });
}

bool Codegen::outer_inline(const ir::Value* v) {
  return all_inputs(v, [&](const ir::Value* x) {
    if (x->type.is_scalar()) return 1;
    return x->is_block_arg() || plan_.materialized(x) || x->def->kind == OpKind::Load ? 0 : -1;
  });
}

std::optional<Codegen::MmaLoop> Codegen::match_mma_loop(const ir::Op* loop) {
  const ir::Block* body = loop->regions[0];
  const ir::Op* yield = body->ops.back();
  MmaLoop m;
  bool have_acc = false;
  std::vector<const ir::Value*> carried;
  for (size_t i = 0; i < loop->results.size(); ++i) {
    const ir::Value* arg = body->args[1 + i];
    const ir::Op* d = yield->operands[i]->def;
    if (!d || d->parent != body) return std::nullopt;
    if (!have_acc && d->kind == OpKind::Dot && d->operand(2) == arg && mma_tiling(d)) {
      m.acc = i, m.dot = d, have_acc = true;
      continue;
    }
    if (arg->type.is_block() && arg->type.is_ptr() && d->kind == OpKind::AddPtr && d->operand(0) == arg &&
        trip_computable(d->operand(1), body, {}, /*invariant=*/true) && plan_.users(loop->results[i]).empty() &&
        outer_inline(loop->operands[3 + i])) {
      m.pointers.push_back({i, d->operand(1)});
      carried.push_back(arg);
      continue;
    }
    if (arg->type.is_scalar() && is_int(arg->type.dtype) && d->kind == OpKind::Add &&
        (d->operand(0) == arg || d->operand(1) == arg) && plan_.users(loop->results[i]).empty()) {
      const ir::Value* step = d->operand(d->operand(0) == arg ? 1 : 0);
      if (step != arg && trip_computable(step, body, {}, /*invariant=*/true)) {
        m.counters.push_back({i, step});
        carried.push_back(arg);
        continue;
      }
    }
    return std::nullopt;
  }
  if (!have_acc || plan_.users(body->args[1 + m.acc]).size() != 1 || plan_.users(m.dot->result()).size() != 1)
    return std::nullopt;
  m.load_a = m.dot->operand(0)->def;
  m.load_b = m.dot->operand(1)->def;
  for (const ir::Op* ld : {m.load_a, m.load_b}) {
    if (!ld || ld->kind != OpKind::Load || ld->parent != body || plan_.users(ld->result()).size() != 1 ||
        !trip_computable(ld->operand(0), body, carried))
      return std::nullopt;
    std::vector<const ir::Value*> counters;  // masks and `other` at any lane: no carried pointers
    for (auto& [i, step] : m.counters) counters.push_back(body->args[1 + i]);
    for (size_t o = 1; o < ld->operands.size(); ++o)
      if (!trip_computable(ld->operand(o), body, counters)) return std::nullopt;
  }
  // Nothing else happens in the body: its other ops are pure (they feed the loads or nothing).
  for (const ir::Op* op : body->ops) {
    if (op == yield || op == m.dot || op == m.load_a || op == m.load_b) continue;
    if (!op->regions.empty() || op->kind == OpKind::Load || op->kind == OpKind::Dot || ir::has_side_effects(op->kind))
      return std::nullopt;
  }
  return m;
}

std::unordered_map<const ir::Value*, std::string> Codegen::bind_trip(const ir::Op* loop,
                                                                     const std::vector<const ir::Value*>& roots,
                                                                     const std::string& iv, const MmaLoop* m,
                                                                     const std::string& trip) {
  const ir::Block* body = loop->regions[0];
  auto saved = scalars_;
  scalars_[body->args[0]] = iv;
  std::unordered_set<const ir::Value*> needed;
  std::function<void(const ir::Value*)> need = [&](const ir::Value* v) {
    if (v->is_block_arg() || v->def->parent != body || !needed.insert(v).second) return;
    for (const ir::Value* o : v->def->operands) need(o);
  };
  for (const ir::Value* r : roots) need(r);
  std::unordered_set<const ir::Value*> bound;  // (bindings from before, e.g. the current trip's, are replaced)
  auto bind = [&](bool invariant) {
    for (const ir::Op* op : body->ops)  // in program order
      if (op->results.size() == 1 && op->result()->type.is_scalar() && needed.count(op->result()) &&
          !bound.count(op->result()) && (!invariant || trip_computable(op->result(), body, {}, true))) {
        scalars_[op->result()] = tmp(ctype(op->result()->type), emit_scalar(op));
        bound.insert(op->result());
      }
  };
  if (m && !m->counters.empty()) {
    // The counters' steps (invariant, maybe computed in the body) first, then the counters.
    for (auto& [i, step] : m->counters) need(step);
    bind(true);
    for (auto& [i, step] : m->counters) {
      const ir::Value* arg = body->args[1 + i];
      scalars_[arg] = tmp(ctype(arg->type), fmt::format("({})((int64_t){} + (int64_t)({}) * (int64_t){})", ctype(arg->type),
                                                        scalar(loop->operands[3 + i]), trip, scalar(step)));
    }
  }
  bind(false);
  return saved;
}

std::string Codegen::tile_chunk(const std::string& row, const std::string& ch, int64_t R, int64_t rc) {
  if (rc >= 8) return fmt::format("((({1}) >> 3) * {2} + ({0}) * 8 + ((({1}) & 7) ^ (({0}) & 7)))", row, ch, R * 8);
  if (rc == 1) return fmt::format("({})", row);
  int shift = rc == 4 ? 1 : 2;  // rc = 4: two rows per 128 bytes; rc = 2: four
  return fmt::format("(({0}) * {1} + (({2}) ^ ((({0}) >> {3}) & {4})))", row, rc, ch, shift, rc - 1);
}

void Codegen::for_each_chunk(const TileLoad& tl,
                             const std::function<void(const std::string&, const std::string&, const std::string&)>& fn) {
  int64_t chunks = tl.R * tl.C / tl.epc, rc = tl.C / tl.epc;
  std::string j = fresh("j");
  line("#pragma unroll");
  open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", j, chunks_per_thread(tl)));
  std::string c = tmp("int", fmt::format("tid + {} * {}", j, nt_));
  if (chunks % nt_) open(fmt::format("if ({} < {})", c, chunks));
  if (int64_t step = chunk_row_step(tl))  // one column per thread, rows a constant apart: offsets the compiler folds
    fn(tmp("int", fmt::format("tid / {} + {} * {}", rc, j, step)), tmp("int", fmt::format("tid % {}", rc)), j);
  else
    fn(tmp("int", fmt::format("{} / {}", c, rc)), tmp("int", fmt::format("{} % {}", c, rc)), j);
  if (chunks % nt_) close();
  close();
}

Codegen::TileLoad Codegen::plan_tile_load(const ir::Op* ld, bool transposed) {
  int epc = static_cast<int>(16 / dtype_bytes(ld->result()->type.dtype));
  const Shape& s = ld->result()->type.shape;
  return TileLoad{ld, s[transposed ? 1 : 0], s[transposed ? 0 : 1], epc, access_width(ld, transposed ? 0 : 1) >= epc, transposed, false, false, {}};
}

void Codegen::hoist_carried_pointers(TileLoad& tl, const ir::Op* loop, const MmaLoop& m) {
  if (!tl.vector || tl.round_tf32) return;
  const ir::Op* ld = tl.load;
  const ir::Block* body = loop->regions[0];
  // The carried pointers this load's address uses: their inits at each chunk, hoisted out of the loop.
  std::unordered_set<const ir::Value*> seen;
  std::function<void(const ir::Value*)> walk = [&](const ir::Value* v) {
    if (!seen.insert(v).second) return;
    if (v->is_block_arg()) {
      for (auto& [i, step] : m.pointers)
        if (v == body->args[1 + i]) {
          std::string arr = fresh("p");
          line(fmt::format("{} {}[{}];", ctype(v->type.element()), arr, chunks_per_thread(tl)));
          for_each_chunk(tl, [&](const std::string& row, const std::string& ch, const std::string& j) {
            line(fmt::format("{}[{}] = {};", arr, j, eval(loop->operands[3 + i], tl.at(row, fmt::format("{} * {}", ch, tl.epc)))));
          });
          tl.hoisted.push_back({v, arr});
        }
      return;
    }
    if (v->def->parent == body)
      for (const ir::Value* o : v->def->operands) walk(o);
  };
  walk(ld->operand(0));
}

void Codegen::bind_carried_pointers(const ir::Op* loop, const MmaLoop& m, const Index& idx, const std::string& trip) {
  for (auto& [i, step] : m.pointers)
    affine_[loop->regions[0]->args[1 + i]] = Affine{step, eval(loop->operands[3 + i], idx), trip};
}

std::string Codegen::masked_element(const ir::Op* ld, const Index& idx, const std::string& ptr) {
  const ir::Value* mask = ld->operands.size() > 1 ? ld->operand(1) : nullptr;
  const ir::Value* other = ld->operands.size() > 2 ? ld->operand(2) : nullptr;
  if (!mask) return "*" + ptr;
  return fmt::format("({}) ? *{} : {}", eval(mask, idx), ptr, other ? eval(other, idx) : ctype(ld->result()->type.dtype) + "{}");
}

std::vector<std::string> Codegen::lane_masks(const ir::Value* mask, const Index& at, int dim, int lanes) {
  const bool constant = axis_.contains(mask) && axis_.get(mask).constancy[static_cast<size_t>(dim)] >= lanes;
  std::vector<std::string> masks;
  for (int l = 0; l < (constant ? 1 : lanes); ++l) {
    Index x = at;
    if (l) x[static_cast<size_t>(dim)] = fmt::format("({} + {})", at[static_cast<size_t>(dim)], l);
    masks.push_back(eval(mask, x));
  }
  return masks;
}

void Codegen::emit_tile_load(const TileLoad& tl, const ir::Op* loop, const MmaLoop& m, const std::string& trip,
                             const std::string& base) {
  const ir::Op* ld = tl.load;
  const ir::Value* p = ld->operand(0);
  const bool masked = ld->operands.size() > 1;
  std::string ct = ctype(p->type.pointee);
  const int epc = tl.epc;
  int64_t rc = tl.C / epc;
  if (!tl.vector) {
    // Element by element (no contiguity to move 16 bytes): the carried pointers evaluated in full,
    // consecutive threads at consecutive elements of the load's last dim (coalesced when B is
    // N-major but stored K-major).
    const int64_t last = tl.transposed ? tl.R : tl.C;
    std::string e = fresh("e");
    open(fmt::format("for (int {0} = tid; {0} < {1}; {0} += {2})", e, tl.R * tl.C, nt_));
    std::string d0 = tmp("int", fmt::format("{} / {}", e, last)), d1 = tmp("int", fmt::format("{} % {}", e, last));
    Index idx{d0, d1};
    const std::string& row = tl.transposed ? d1 : d0;
    const std::string& col = tl.transposed ? d0 : d1;
    bind_carried_pointers(loop, m, idx, trip);
    std::string v = tmp(ct, masked_element(ld, idx, eval(p, idx)));
    if (epc == 16)
      line(fmt::format("tt_st_shared1({} + ({} << 4) + ({} & 15), tt_bitcast<uint8_t>({}));", base,
                       tile_chunk(row, col + " >> 4", tl.R, rc), col, v));
    else if (epc == 8)
      line(fmt::format("tt_st_shared2({} + ({} << 4) + (({} & 7) << 1), {}.bits);", base,
                       tile_chunk(row, col + " >> 3", tl.R, rc), col, v));
    else
      line(fmt::format("tt_st_shared4({} + ({} << 4) + (({} & 3) << 2), __float_as_uint({}));", base,
                       tile_chunk(row, col + " >> 2", tl.R, rc), col, v));
    affine_.clear();
    close();
    if (tl.async_reader) line("tt_fence_async_shared();  // the st.shared above, before wgmma reads them");
    return;
  }
  for_each_chunk(tl, [&](const std::string& row, const std::string& ch, const std::string& j) {
    ChunkAccess a = chunk_access(tl, loop, m, trip, base, row, ch, j);
    if (!masked) {
      line(fmt::format("tt_cp_async16({}, {}, 16);", a.dst, a.ptr));
      return;
    }
    open(fmt::format("if ({})", a.whole));
    line(fmt::format("tt_cp_async16({}, {}, {} ? 16 : 0);", a.dst, a.ptr, a.all));
    close();
    open("else");
    emit_edge_chunk(tl, a);
    close();
  });
}

Codegen::ChunkAccess Codegen::chunk_access(const TileLoad& tl, const ir::Op* loop, const MmaLoop& m, const std::string& trip,
                                           const std::string& base, const std::string& row, const std::string& ch,
                                           const std::string& j) {
  const ir::Op* ld = tl.load;
  const ir::Value* p = ld->operand(0);
  const ir::Value* mask = ld->operands.size() > 1 ? ld->operand(1) : nullptr;
  const ir::Value* other = ld->operands.size() > 2 ? ld->operand(2) : nullptr;
  for (auto& [v, arr] : tl.hoisted) {
    for (auto& [i, step] : m.pointers)
      if (v == loop->regions[0]->args[1 + i]) affine_[v] = Affine{step, fmt::format("{}[{}]", arr, j), trip};
  }
  ChunkAccess a;
  a.row = row;
  const int64_t rc = tl.C / tl.epc, step = chunk_row_step(tl);
  if (step && step % 8 == 0) {
    // The thread's chunks are rows a multiple of the swizzle's 8-row period apart (for_each_chunk's
    // row tid / rc + j * step): its first chunk's address plus a constant (an immediate offset,
    // no register per chunk). Past the swizzle, a row adds min(rc, 8) chunks (tile_chunk).
    std::string first = tmp("uint32_t", fmt::format("{} + ({} << 4)", base, tile_chunk(fmt::format("tid / {}", rc), ch, tl.R, rc)));
    a.dst = tmp("uint32_t", fmt::format("{} + {} * {}", first, j, step * std::min<int64_t>(rc, 8) * 16));
  } else {
    a.dst = tmp("uint32_t", fmt::format("{} + ({} << 4)", base, tile_chunk(row, ch, tl.R, rc)));
  }
  a.col = tmp("int", fmt::format("{} * {}", ch, tl.epc));
  a.ptr = tmp("const " + ctype(p->type.pointee) + "*", eval(p, tl.at(row, a.col)));
  if (mask) {
    // Each lane's mask (one when the axis info says the mask is constant over the chunk).
    a.masks = lane_masks(mask, tl.at(row, a.col), tl.transposed ? 0 : 1, tl.epc);
    a.all = tmp("bool", fmt::format("{}", fmt::join(a.masks, " && ")));
    std::string any = tmp("bool", fmt::format("{}", fmt::join(a.masks, " || ")));
    bool zero_other = !other || (other->def && other->def->kind == OpKind::Constant && other->def->attrs.ival == 0 &&
                                 other->def->attrs.fval == 0.0);
    // cp.async moves the chunk whole when every lane loads, or (a zero `other`) none does.
    a.whole = zero_other ? fmt::format("{} || !{}", a.all, any) : a.all;
  }
  affine_.clear();
  return a;
}

void Codegen::emit_edge_chunk(const TileLoad& tl, const ChunkAccess& a) {
  const ir::Value* other = tl.load->operands.size() > 2 ? tl.load->operand(2) : nullptr;
  std::string ct = ctype(tl.load->operand(0)->type.pointee);
  std::string v = fresh("v");
  line(fmt::format("__align__(16) {} {}[{}];", ct, v, tl.epc));
  for (int l = 0; l < tl.epc; ++l) {
    const std::string& ml = a.masks.size() == 1 ? a.masks[0] : a.masks[static_cast<size_t>(l)];
    std::string o = other ? eval(other, tl.at(a.row, l == 0 ? a.col : fmt::format("({} + {})", a.col, l))) : ct + "{}";
    line(fmt::format("{}[{}] = ({}) ? {}[{}] : {};", v, l, ml, a.ptr, l, o));
  }
  line(fmt::format("tt_st_shared16({}, {});", a.dst, v));
  if (tl.async_reader) line("tt_fence_async_shared();  // before wgmma reads this chunk");
}

Codegen::StagedLoad Codegen::stage_tile_load(const TileLoad& tl, const ir::Op* loop, const MmaLoop& m,
                                             const std::string& trip, const std::string& base, const std::string& live) {
  const bool masked = tl.load->operands.size() > 1;
  const int64_t n = chunks_per_thread(tl);
  StagedLoad s{fresh("dst"), fresh("src"), fresh("load"), masked ? fresh("whole") : ""};
  line(fmt::format("uint32_t {}[{}];", s.dst, n));
  line(fmt::format("const {}* {}[{}];", ctype(tl.load->operand(0)->type.pointee), s.src, n));
  line(fmt::format("bool {}[{}];", s.load, n));
  if (masked) line(fmt::format("bool {}[{}];", s.whole, n));
  for_each_chunk(tl, [&](const std::string& row, const std::string& ch, const std::string& j) {
    ChunkAccess a = chunk_access(tl, loop, m, trip, base, row, ch, j);
    line(fmt::format("{}[{}] = {};", s.dst, j, a.dst));
    line(fmt::format("{}[{}] = {};", s.src, j, a.ptr));
    // Past the last trip the chunk is zero-filled (src-size 0 reads nothing) into a retired slot.
    line(fmt::format("{}[{}] = {};", s.load, j, masked ? fmt::format("{} & {}", live, a.all) : live));
    if (masked) line(fmt::format("{}[{}] = !{} | ({});", s.whole, j, live, a.whole));
  });
  return s;
}

void Codegen::issue_staged_load(const TileLoad& tl, const StagedLoad& s, const ir::Op* loop, const MmaLoop& m,
                                const std::string& trip, const std::string& base) {
  for_each_chunk(tl, [&](const std::string& row, const std::string& ch, const std::string& j) {
    std::string copy = fmt::format("tt_cp_async16({}[{}], {}[{}], {}[{}] ? 16 : 0);", s.dst, j, s.src, j, s.load, j);
    if (s.whole.empty()) {
      line(copy);
      return;
    }
    open(fmt::format("if ({}[{}])", s.whole, j));
    line(copy);
    close();
    open("else");  // a chunk across the mask's edge: its masks and addresses again (the rare path)
    emit_edge_chunk(tl, chunk_access(tl, loop, m, trip, base, row, ch, j));
    close();
  });
}

bool Codegen::emit_mma_loop(const ir::Op* loop, const MmaLoop& m) {
  const ir::Block* body = loop->regions[0];
  const ir::Value* res = loop->results[m.acc];
  const ir::Type& at = m.load_a->result()->type;
  const ir::Type& bt = m.load_b->result()->type;
  int64_t BM = at.shape[0], BK = at.shape[1], BN = bt.shape[1];
  const int64_t esz = dtype_bytes(at.dtype), epc = 16 / esz;
  int64_t a_bytes = BM * BK * esz, b_bytes = BK * BN * esz;
  int64_t off = (smem_ + 1023) / 1024 * 1024;  // the swizzle atoms are 1024-byte aligned
  const MmaTiling& t = mma_map_.at(res->type.shape);
  const bool wgmma = t.wgmma, tf32 = wgmma && is_tf32(m.dot);
  // B's tile is stored K-major (as A's) where wgmma reads it so: always for tf32 and 8-bit types
  // (which have no transposed form), and for 16-bit ones when B's memory runs along K (no
  // N-contiguous chunks).
  const bool b_kmajor = wgmma && (tf32 || is_byte_mma(at.dtype) || (access_width(m.load_b, 0) >= epc && access_width(m.load_b, 1) < epc));
  TileLoad ta = plan_tile_load(m.load_a, false), tb = plan_tile_load(m.load_b, b_kmajor);
  ta.async_reader = tb.async_reader = wgmma;
  ta.round_tf32 = tb.round_tf32 = tf32;
  // tf32 tiles with 16-byte chunks go through raw stages (tf32_tiles.cpp): num_stages - 1 raw fp32
  // stages that cp.async fills, and two rounded K-major buffers that wgmma reads. S counts the raw
  // stages then.
  std::optional<TileLoad> raw_a, raw_b;
  if (tf32 && num_stages_ >= 3 && (raw_a = raw_tf32_tile(ta))) raw_b = raw_tf32_tile(tb);
  auto fits = [&](int buffers) { return off + buffers * (a_bytes + b_bytes) <= smem_budget_; };
  int S = num_stages_ - 1;
  while (raw_b && S > 2 && !fits(S + 2)) --S;
  if (raw_b && !fits(S + 2)) raw_a = raw_b = std::nullopt;
  const bool staged = raw_b.has_value();
  if (!staged) {
    S = std::max(1, num_stages_);
    while (S > 1 && !fits(S)) --S;
  }
  const int buffers = staged ? S + 2 : S;
  if (!fits(buffers)) return false;
  smem_ = off + buffers * (a_bytes + b_bytes);
  int in_flight = wgmma && (staged || S >= 3) ? 1 : 0;
  for (const ir::Op* ld : {m.load_a, m.load_b})
    if (may_read_written(ld->operand(0))) sync_after_global_writes();
  // Nested (in a loop): the stages' bytes may still be read as the previous trip's later buffers.
  if (loop->parent != f_.body) sync();
  std::string acc = declare_registers(res->type);
  fill_registers(acc, loop->operands[3 + m.acc]);
  regs_[body->args[1 + m.acc]] = regs_[res] = acc;
  line(fmt::format("// matmul loop on tensor cores{}: {} x {} x {} tiles, {} {}stages, {} warps of {} x {}{}",
                   is_tf32(m.dot) ? fmt::format(" ({})", m.dot->attrs.str) : "", BM, BN, BK, S, staged ? "raw " : "",
                   nwarps_, t.WTM, t.WTN, b_kmajor ? ", B K-major" : ""));
  open("");
  std::string sa = tmp("uint32_t", fmt::format("tt_smem_u32(tt_smem + {})", off));
  std::string sb = tmp("uint32_t", fmt::format("{} + {}", sa, S * a_bytes));
  // (Raw stages: the two rounded buffers after them, A's then B's.)
  std::string ra = staged ? tmp("uint32_t", fmt::format("{} + {}", sa, S * (a_bytes + b_bytes))) : "";
  std::string rb = staged ? tmp("uint32_t", fmt::format("{} + {}", ra, 2 * a_bytes)) : "";
  std::string ivt = ctype(loop->operand(0)->type);
  std::string lb = scalar(loop->operand(0)), ub = scalar(loop->operand(1)), st = scalar(loop->operand(2));
  // (A step <= 0 runs no trip here; the generic loop would not end.)
  std::string trips = tmp("int", fmt::format("{0} < {1} && {2} > 0 ? (int)(((int64_t){1} - (int64_t){0} + (int64_t){2} - 1) / (int64_t){2}) : 0",
                                             lb, ub, st));
  // Inside `if`: without it NVVM merges the no-trip path's accumulators with the loop's exit,
  // and ptxas then serialises the wgmma kept in flight across trips (C7514).
  open(fmt::format("if ({} > 0)", trips));
  std::vector<const ir::Value*> roots;
  for (const ir::Op* ld : {m.load_a, m.load_b}) roots.insert(roots.end(), ld->operands.begin(), ld->operands.end());
  for (auto& [i, step] : m.pointers) roots.push_back(step);
  for (auto& [i, step] : m.counters) roots.push_back(step);
  // The loop variable at a trip, for bind_trip.
  auto iv_at = [&](const std::string& trip) {
    return fmt::format("({})((int64_t){} + (int64_t)({}) * (int64_t){})", ivt, lb, trip, st);
  };
  auto issue = [&](const std::string& trip, const std::string& slot) {
    open("");
    auto saved = bind_trip(loop, roots, iv_at(trip), &m, trip);
    std::string base_a = fmt::format("{} + ({}) * {}", sa, slot, a_bytes), base_b = fmt::format("{} + ({}) * {}", sb, slot, b_bytes);
    if (tf32) {
      auto vals = declare_tf32_registers({&ta, &tb});
      load_tf32_tiles({&ta, &tb}, vals, loop, m, trip);
      store_tf32_tiles({&ta, &tb}, vals, {base_a, base_b});
    } else {
      emit_tile_load(ta, loop, m, trip, base_a);
      emit_tile_load(tb, loop, m, trip, base_b);
    }
    scalars_ = std::move(saved);
    close();
  };
  // wgmma: the descriptors of stage 0, a stage's are these plus its offset (addresses / 16).
  std::pair<std::string, std::string> desc0;
  if (wgmma) desc0 = wgmma_descriptors(t, BK, at.dtype, b_kmajor, staged ? ra : sa, staged ? rb : sb);
  // The stage read and the stage refilled move on by one each trip (both loops below).
  auto next_slots = [&](const std::string& rd, const std::string& wr) {
    for (const std::string& v : {rd, wr}) line(fmt::format("{0} = {0} + 1 == {1} ? 0 : {0} + 1;", v, S));
  };
  auto compute = [&](const std::string& slot) {
    if (wgmma) {
      // (unsigned: a sign extension would cost the uniform datapath an instruction per trip)
      std::string da = tmp("uint64_t", fmt::format("{} + (uint64_t)(uint32_t)(({}) * {})", desc0.first, slot, a_bytes / 16));
      std::string db = tmp("uint64_t", fmt::format("{} + (uint64_t)(uint32_t)(({}) * {})", desc0.second, slot, b_bytes / 16));
      emit_wgmma_tiles(t, BM, BN, BK, at.dtype, b_kmajor, da, db, acc, in_flight);
      return;
    }
    std::string a0 = tmp("uint32_t", fmt::format("{} + ({}) * {}", sa, slot, a_bytes));
    std::string b0 = tmp("uint32_t", fmt::format("{} + ({}) * {}", sb, slot, b_bytes));
    auto tile = [epc](const std::string& base, int64_t R, int64_t rc) {
      return [base, R, rc, epc](const std::string& r, const std::string& c) {
        if (epc == 8) return fmt::format("{} + ({} << 4)", base, tile_chunk(r, "(" + c + ") >> 3", R, rc));
        return fmt::format("{} + ({} << 4) + ((({}) & 3) << 2)", base, tile_chunk(r, "(" + c + ") >> 2", R, rc), c);
      };
    };
    emit_mma_tiles(t, BK, m.dot, tile(a0, BM, BK / epc), tile(b0, BK, BN / epc), acc);
  };
  std::string trip = fresh("trip");
  // The first `count` trips' cp.async into the slots of the same number, a group each.
  auto prefill = [&](int count, const std::function<void(const std::string&, const std::string&)>& fill) {
    std::string s = fresh("s");
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", s, count));
    open(fmt::format("if ({} < {})", s, trips));
    fill(s, s);
    close();
    line("tt_cp_async_commit();  // one group per trip, empty past the end");
    close();
  };
  // The cp.async loop: stages filled by every thread's 16-byte copies.
  auto cp_async_loop = [&] {
    hoist_carried_pointers(ta, loop, m);
    hoist_carried_pointers(tb, loop, m);
    if (S == 1) {
      open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", trip, trips));
      issue(trip, "0");
      line("tt_cp_async_commit();");
      line("tt_cp_async_wait<0>();");
      line("__syncthreads();");
      compute("0");
      line("__syncthreads();  // the next trip overwrites the tiles");
      close();
      return;
    }
    // S - 1 trips of tiles in flight while a trip computes. With wgmma and 3+ stages the trip's
    // wgmma group also stays in flight until the next trip's: the slot refilled after it (the
    // previous trip's) is free once every warpgroup has retired that group (a second barrier).
    const int ahead = S - 1;
    prefill(ahead, issue);
    std::string rd = fresh("rd"), wr = fresh("wr");
    line(fmt::format("int {} = 0, {} = {};", rd, wr, ahead));
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", trip, trips));
    line(fmt::format("tt_cp_async_wait<{}>();  // this trip's tiles have landed", ahead - 1));
    line("__syncthreads();  // ... for every thread, and the slot written next is no longer read");
    const std::string next = fmt::format("{} + {}", trip, ahead);
    if (in_flight && tf32) {
      // The refill's loads into registers before this trip's wgmma (their latency hides behind
      // it and behind the wait for the previous trip's), the stores after the barrier.
      std::string live = tmp("bool", fmt::format("{} < {}", next, trips));
      auto vals = declare_tf32_registers({&ta, &tb});
      open(fmt::format("if ({})", live));
      auto saved = bind_trip(loop, roots, iv_at(next), &m, next);
      load_tf32_tiles({&ta, &tb}, vals, loop, m, next);
      scalars_ = std::move(saved);
      close();
      compute(rd);
      line("__syncthreads();  // every warpgroup retired the previous trip's wgmma");
      open(fmt::format("if ({})", live));
      store_tf32_tiles({&ta, &tb}, vals, {fmt::format("{} + ({}) * {}", sa, wr, a_bytes), fmt::format("{} + ({}) * {}", sb, wr, b_bytes)});
      close();
    } else if (in_flight && ta.vector && tb.vector) {
      compute(rd);
      // The refill's addresses and masks before the barrier (as Triton's loop), branch-free (past
      // the last trip the chunks zero-fill a retired slot): after it only the cp.async are left.
      std::string live = tmp("bool", fmt::format("{} < {}", next, trips));
      std::string base_a = fmt::format("{} + ({}) * {}", sa, wr, a_bytes), base_b = fmt::format("{} + ({}) * {}", sb, wr, b_bytes);
      open("");  // (the trip's scalars bound in a scope of their own, as in issue)
      auto saved = bind_trip(loop, roots, iv_at(next), &m, next);
      StagedLoad la = stage_tile_load(ta, loop, m, next, base_a, live);
      StagedLoad lb_ = stage_tile_load(tb, loop, m, next, base_b, live);
      line("__syncthreads();  // every warpgroup retired the previous trip's wgmma");
      issue_staged_load(ta, la, loop, m, next, base_a);
      issue_staged_load(tb, lb_, loop, m, next, base_b);
      scalars_ = std::move(saved);
      close();
    } else {
      if (in_flight) {
        compute(rd);
        line("__syncthreads();  // every warpgroup retired the previous trip's wgmma");
      }
      open(fmt::format("if ({} < {})", next, trips));
      issue(next, wr);
      close();
    }
    line("tt_cp_async_commit();");
    if (!in_flight) compute(rd);
    next_slots(rd, wr);
    close();
    if (in_flight) line("tt_wgmma_wait<0>();");
    line("tt_cp_async_wait<0>();");
  };
  // tf32 through raw stages: each trip rounds (and, for an N-contiguous B, transposes) its raw
  // stage into one of the two K-major buffers, then issues its wgmma, which stays in flight while
  // the next trip converts into the other buffer; the raw stage is refilled S trips ahead.
  auto staged_tf32_loop = [&] {
    hoist_carried_pointers(*raw_a, loop, m);
    hoist_carried_pointers(*raw_b, loop, m);
    auto fill = [&](const std::string& trip, const std::string& slot) {
      open("");
      auto saved = bind_trip(loop, roots, iv_at(trip), &m, trip);
      emit_tile_load(*raw_a, loop, m, trip, fmt::format("{} + ({}) * {}", sa, slot, a_bytes));
      emit_tile_load(*raw_b, loop, m, trip, fmt::format("{} + ({}) * {}", sb, slot, b_bytes));
      scalars_ = std::move(saved);
      close();
    };
    prefill(S, fill);
    std::string rd = fresh("rd"), buf = fresh("buf");
    line(fmt::format("int {} = 0, {} = 0;", rd, buf));
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", trip, trips));
    line(fmt::format("tt_cp_async_wait<{}>();  // this trip's raw tiles have landed", S - 1));
    line("__syncthreads();  // ... for every thread; the buffer written next was read by a retired wgmma");
    open("");
    auto vals = declare_tf32_registers({&ta, &tb});
    read_tf32_stage({&ta, &tb}, vals, {fmt::format("{} + {} * {}", sa, rd, a_bytes), fmt::format("{} + {} * {}", sb, rd, b_bytes)});
    store_tf32_tiles({&ta, &tb}, vals, {fmt::format("{} + {} * {}", ra, buf, a_bytes), fmt::format("{} + {} * {}", rb, buf, b_bytes)});
    close();
    line("__syncthreads();  // the buffer is whole, the raw stage read");
    open(fmt::format("if ({} + {} < {})", trip, S, trips));
    fill(fmt::format("{} + {}", trip, S), rd);
    close();
    line("tt_cp_async_commit();");
    compute(buf);
    line(fmt::format("{0} = {0} + 1 == {1} ? 0 : {0} + 1;", rd, S));
    line(fmt::format("{0} ^= 1;", buf));
    close();
    line("tt_wgmma_wait<0>();");
    line("tt_cp_async_wait<0>();");
  };
  // Both tiles through TMA where they can (plan_tma; a top-level loop whose wgmma stays in
  // flight): thread 0 fills a stage with bulk tensor copies on the stage's mbarrier, every thread
  // waits on it; no cp.async, and the trip's first barrier goes (the second one still frees the
  // slot refilled next). Under the tiles' guards, tested once by each program; the cp.async loop
  // otherwise (a tile that wraps, a tensor no map describes).
  std::optional<TmaTile> tma_a, tma_b;
  if (!staged && in_flight && loop->parent == f_.body && tma_maps_.size() + 2 <= kMaxTensorMaps &&
      (tma_a = plan_tma(ta, loop, m)))
    tma_b = plan_tma(tb, loop, m);
  if (staged) {
    staged_tf32_loop();
  } else if (!tma_a || !tma_b) {
    cp_async_loop();
  } else {
    // (Pointer blocks: each dim's start, before the branch.)
    for (TmaTile* tile : {&*tma_a, &*tma_b})
      if (!tile->row)
        for (std::string& st : tile->start) st = tmp("int", st);
    std::string use_tma = tmp("bool", fmt::format("{} && {}", tma_a->guard, tma_b->guard));
    open(fmt::format("if ({})", use_tma));
    const int map_a = static_cast<int>(tma_maps_.size());
    tma_maps_.push_back(tma_a->map);
    tma_maps_.push_back(tma_b->map);
    const int64_t bars = smem_;  // one 8-byte mbarrier per stage, after the stages
    smem_ += 8 * S;
    std::string bar = tmp("uint32_t", fmt::format("tt_smem_u32(tt_smem + {})", bars));
    open("if (tid == 0)");
    line(fmt::format("tt_prefetch_tensormap(&tt_tmap{});", map_a));
    line(fmt::format("tt_prefetch_tensormap(&tt_tmap{});", map_a + 1));
    for (int s = 0; s < S; ++s) line(fmt::format("tt_mbarrier_init({} + {}, 1);", bar, 8 * s));
    line("tt_fence_mbarrier_init();");
    close();
    auto issue_tma = [&](const std::string& t, const std::string& slot) {
      open("");
      // The tiles' coordinates (column, row) at trip t.
      auto coords = [&](const TmaTile& tile) {
        if (!tile.row)
          return std::make_pair(tmp("int", fmt::format("{} + ({}) * {}", tile.start[1], t, tile.adv[1])),
                                tmp("int", fmt::format("{} + ({}) * {}", tile.start[0], t, tile.adv[0])));
        auto saved = bind_trip(loop, roots, iv_at(t), &m, t);
        auto c = std::make_pair(tmp("int", eval(tile.col, Index{"0", "0"})), tmp("int", eval(tile.row, Index{"0", "0"})));
        scalars_ = std::move(saved);
        return c;
      };
      auto [ca, ra] = coords(*tma_a);
      auto [cb, rb] = coords(*tma_b);
      open("if (tid == 0)");
      std::string bs = tmp("uint32_t", fmt::format("{} + ({}) * 8", bar, slot));
      line(fmt::format("tt_mbarrier_expect_tx({}, {});", bs, a_bytes + b_bytes));
      // One copy per 64-column block of the tile (R rows of 128 bytes each in the stage).
      auto copies = [&](const TileLoad& tile, const std::string& stage, int64_t bytes, int map, const std::string& col,
                        const std::string& row) {
        for (int64_t c = 0; c < tile.C / 64; ++c)
          line(fmt::format("tt_tma_load_2d({} + ({}) * {} + {}, &tt_tmap{}, {} + {}, {}, {});", stage, slot, bytes,
                           c * tile.R * 128, map, col, c * 64, row, bs));
      };
      copies(ta, sa, a_bytes, map_a, ca, ra);
      copies(tb, sb, b_bytes, map_a + 1, cb, rb);
      close();
      close();
    };
    line(fmt::format("// stages filled by TMA: {} + {} bulk tensor copies each", ta.C / 64, tb.C / 64));
    const int ahead = S - 1;
    for (int s = 0; s < ahead; ++s) {
      open(fmt::format("if ({} < {})", s, trips));
      issue_tma(std::to_string(s), std::to_string(s));
      close();
    }
    // A persistent kernel's previous C copy queues behind these tiles' (store_through_tma).
    if (may_persist_) {
      line("tt_flush_store();");
      flush_calls_ = true;
    }
    // (Thread 0 armed the first stages right after its init; the others wait on them past this.)
    line("__syncthreads();  // the mbarriers are initialised for every thread");
    std::string rd = fresh("rd"), wr = fresh("wr");
    line(fmt::format("int {} = 0, {} = {};", rd, wr, ahead));
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", trip, trips));
    line(fmt::format("tt_mbarrier_wait({} + {} * 8, ({} / {}) & 1);  // this trip's tiles have landed", bar, rd, trip, S));
    compute(rd);
    line("__syncthreads();  // every warpgroup retired the previous trip's wgmma: its slot is free");
    open(fmt::format("if ({} + {} < {})", trip, ahead, trips));
    issue_tma(fmt::format("{} + {}", trip, ahead), wr);
    close();
    next_slots(rd, wr);
    close();
    line("tt_wgmma_wait<0>();");
    line("__syncthreads();  // every thread is past its last wait before the barriers go");
    open("if (tid == 0)");
    for (int s = 0; s < S; ++s) line(fmt::format("tt_mbarrier_inval({} + {});", bar, 8 * s));
    close();
    close();
    open("else");
    cp_async_loop();
    close();
  }
  close();  // if (trips > 0)
  close();
  ++shared_writes_;
  // The stages are dead past the loop: buffers allocated after it (the epilogue's) reuse their
  // bytes once every warp is out of the loop. As Triton's, the CTA then needs no more shared
  // memory than its stages; a larger footprint only shrinks the L1 beside it.
  synced_ = false;
  sync();
  smem_peak_ = std::max(smem_peak_, smem_);
  smem_ = off;
  if (reg_spill_.count(res)) spill_registers(res);
  return true;
}

void Codegen::emit_dot(const ir::Op* op) {
  if (emit_dot_mma_tiles(op)) return;
  // The accumulator is read at other elements than its own below: a register value needs its buffer.
  if (const ir::Value* c = op->operand(2); regs_.count(c) && !buffers_.count(c)) spill_registers(c);
  ++shared_writes_;
  const ir::Value* a = op->operand(0);
  const ir::Value* bm = op->operand(1);
  const ir::Value* c = op->operand(2);
  const ir::Type& rt = op->result()->type;
  if (rt.rank() != 2) fail(op->loc, "the CUDA backend supports dot on 2-D blocks only (got {})", rt.str());
  int64_t K = a->type.shape[1], N = rt.shape[1];
  std::string out = buffers_[op->result()] = alloc_buffer(rt);
  std::string abuf = buffers_.at(a), bbuf = buffers_.at(bm);
  DType acc_t = rt.dtype;
  DType compute = is_float(acc_t) ? (acc_t == DType::f64 ? DType::f64 : DType::f32) : DType::i32;
  if (is_int(acc_t) && dtype_bits(acc_t) == 64) compute = DType::i64;
  sync();
  // Each thread computes its output elements from the operands in shared memory (f32, f64 and
  // integer operands; f16/bf16 shapes the warps cannot tile, operands in the global scratch).
  thread_loop(rt.shape, 1, nullptr, [&](const Index& idx) {
    std::string acc = fresh("acc");
    line(fmt::format("{} {} = {};", ctype(compute), acc, cast(eval(c, idx), acc_t, compute)));
    std::string k = fresh("k");
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", k, K));
    std::string av = cast(fmt::format("{}[({}) * {} + {}]", abuf, idx[0], K, k), a->type.dtype, compute);
    std::string bv = cast(fmt::format("{}[{} * {} + {}]", bbuf, k, N, idx[1]), bm->type.dtype, compute);
    if (compute == DType::f32) line(fmt::format("{0} = fmaf({1}, {2}, {0});", acc, av, bv));
    else if (compute == DType::f64) line(fmt::format("{0} = fma({1}, {2}, {0});", acc, av, bv));
    else line(fmt::format("{0} = ({1})({0} + {2} * {3});", acc, ctype(compute), av, bv));
    close();
    line(fmt::format("{}[{}] = {};", out, flatten(idx, rt.shape), cast(acc, compute, acc_t)));
  }, nullptr);
  sync();
  if (reg_planned_.count(op->result())) {  // the fragment mapping's registers, from the buffer
    std::string array = declare_registers(rt);
    fill_registers(array, op->result());
    regs_[op->result()] = array;
  }
}

}  // namespace tritium::jit::cuda::detail
