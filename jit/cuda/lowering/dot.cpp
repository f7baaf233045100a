// tl::dot from layouts. The accumulator is the result's register array in its mma layout; A is a
// register fragment (a dot-operand layout: attention's P, no copy) or a shared-memory tile; B a
// tile, each in the majorness of its memory. wgmma (Hopper) reads tiles through matrix descriptors
// of the tiles' swizzle (K-major, or MN-major with the transpose bit for 16-bit types); mma.sync
// (sm_80+) reads fragments from them with ldmatrix. Other dtypes and shapes: an FMA loop over K
// from the tiles (the `ieee` fp32 dot, f64, integers, shapes the warps cannot tile), each thread a
// register-blocked micro-tile of C.
#include "jit/cuda/lowering/lowering.h"

namespace tritium::jit::cuda::lowering {
namespace {

int log2i(int64_t v) {
  int b = 0;
  while ((int64_t{1} << b) < v) ++b;
  return b;
}

const char* mma_type(DType in) {
  switch (in) {
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "tf32";
    case DType::f8e4m3: return "e4m3";
    case DType::f8e5m2: return "e5m2";
    case DType::i8: return "s8";
    case DType::u8: return "u8";
    default: fail("internal error: no tensor-core type for {}", dtype_name(in));
  }
}

}  // namespace

void Lowering::wait_mma(int keep) {
  if (pending_mma_.empty()) return;
  int total = 0;
  for (const auto& p : pending_mma_) total += p.groups;
  if (total <= keep) return;
  line(fmt::format("tt_wgmma_wait<{}>();", keep));
  // The oldest groups completed; with keep = 0 all of them.
  bool previous = false;
  std::vector<PendingMma> retired;
  while (!pending_mma_.empty() && total > keep) {
    total -= pending_mma_.front().groups;
    previous = previous || pending_mma_.front().previous_trip;
    retired.push_back(pending_mma_.front());
    pending_mma_.erase(pending_mma_.begin());
  }
  // The wait writes nothing the compiler can see, so it may move a read of the accumulators (a
  // copy at a loop's exit, the bit casts of an f32 store) above it, between the wgmma and its wait:
  // ptxas then serializes every wgmma of the kernel (C7514: "non wgmma instructions reading
  // accumulator registers ... between start and end of the pipeline stage"), which it did for each
  // kernel storing an f32 accumulator as it is (tf32 products, split-K partials). As Triton's
  // wait_group op takes the accumulators as operands, the finished ones are tied to the wait here:
  // an empty asm after it that reads and writes them (no instruction; volatile asm keeps its order).
  // Not with groups left in flight: their registers are still the wgmma's.
  if (keep == 0)
    for (const PendingMma& p : retired)
      for (int64_t from = 0; from < p.regs; from += 32) {
        std::string ties;
        for (int64_t r = from; r < std::min(p.regs, from + 32); ++r)
          ties += fmt::format("{}\"+{}\"({}[{}])", r > from ? ", " : "", p.integer ? "r" : "f", p.acc, r);
        line(fmt::format("asm volatile(\"\" : {});  // {}'s registers, after the wait", ties, p.acc));
      }
  // The previous trip's deferred groups retired in this warpgroup; once every warpgroup is past this
  // point the stages they read may be refilled.
  if (previous && retire_hook_) {
    line("__syncthreads();  // every warpgroup retired the previous trip's wgmma: its stages are free");
    auto hook = std::move(retire_hook_);
    retire_hook_ = nullptr;
    hook();
  }
}

void Lowering::wait_mma_for(const std::string& acc) {
  for (const auto& p : pending_mma_)
    if (p.acc == acc) return wait_mma(0);
}

void Lowering::emit_dot(const ir::Op* op) {
  const ir::Value* res = op->result();
  const Layout& rl = layout(res);
  const Val& a = vals_.at(op->operand(0));
  const Val& b = vals_.at(op->operand(1));
  const Val& c = vals_.at(op->operand(2));
  // The accumulator's registers are updated in place when this dot is their last reader (acc =
  // dot(a, b, acc) in a loop), else copied first.
  std::string acc;
  // A zero accumulator (tl::dot(a, b) in a loop: attention's S and dP every trip) is not written
  // before a wgmma: its first k-step's instructions set it (one register move each fewer).
  const ir::Op* cdef = op->operand(2)->def;
  const bool zero_acc = rl.kind == LayoutKind::Mma && rl.mma.version == 3 && c.kind == Val::Kind::Uniform && cdef &&
                        cdef->kind == OpKind::Constant && cdef->attrs.fval == 0.0 && cdef->attrs.ival == 0;
  // use_acc (jit/passes/accumulator_init.h): false reads the accumulator as zero.
  const std::string use_acc = op->operands.size() > 3 ? scalar(op->operand(3)) : "";
  if (reusable(op->operand(2), op)) {
    acc = c.name;
  } else {
    if (c.kind == Val::Kind::Regs) wait_mma_for(c.name);
    acc = declare_regs(res).name;
    if (!zero_acc)
      for (int r = 0; r < rl.num_regs(); ++r) line(fmt::format("{}[{}] = {};", acc, r, c.at(r)));
  }
  Val& out = vals_[res];
  out.kind = Val::Kind::Regs;
  out.name = acc;
  out.layout = &rl;
  if (rl.kind == LayoutKind::Mma && rl.mma.version == 3) return emit_wgmma(op, a, b, acc, zero_acc && acc != c.name, use_acc);
  if (!use_acc.empty()) {
    line(fmt::format("if (!({}))", use_acc));
    line(fmt::format("  for (int tt_r = 0; tt_r < {}; ++tt_r) {}[tt_r] = 0;", rl.num_regs(), acc));
  }
  if (rl.kind != LayoutKind::Mma) return emit_fma_dot(op, a, b, acc);
  return emit_mma_sync(op, a, b, acc);
}

void Lowering::emit_wgmma(const ir::Op* op, const Val& a, const Val& b, const std::string& acc, bool zero_acc,
                          const std::string& use_acc) {
  const Layout& rl = layout(op->result());
  const DType in = op->operand(0)->type.dtype;
  const int64_t esz = dtype_bytes(in), M = rl.shape[0], N = rl.shape[1], K = op->operand(0)->type.shape[1];
  const int wm = rl.mma.wm, wn = rl.mma.wn;
  const int64_t WTM = M / wm, WTN = N / wn, MT = WTM / 64, nr = WTN / 2;
  const bool integer = is_int(in), fp8 = is_fp8(in), tf32 = in == DType::f32;
  const std::string ty = mma_type(in);
  const int64_t kinstr = 32 / esz;  // K of one instruction: 32 bytes
  open("");
  line(fmt::format("// dot on wgmma: {} x {} warpgroups of m64n{}k{} ({} A)", wm, wn, WTN, kinstr,
                   a.kind == Val::Kind::Tile ? "shared" : "register"));
  std::string wg = tmp("int", "tt_warp >> 2");
  std::string m0 = tmp("int", fmt::format("({} / {}) * {}", wg, wn, WTM));
  std::string n0 = tmp("int", fmt::format("({} % {}) * {}", wg, wn, WTN));
  // A tile's matrix descriptor for this warpgroup's part (tt_wgmma_desc: start, leading and stride
  // byte offsets, swizzle mode) and the byte offset of one instruction's operand from it. Tiles are
  // column blocks of `swizzle` bytes, R rows each (tile_offset). K-major: rows are M (N), 8-row
  // groups `8 * swizzle` bytes apart, K advances inside a row and then by whole blocks. MN-major
  // (the transpose bit; 16-bit types): rows are K, a block holds swizzle / esz elements of M (N),
  // blocks `R * swizzle` bytes apart (the leading offset), 8-row groups `8 * swizzle` apart.
  struct Desc {
    std::string desc;
    bool mn_major = false;
    int64_t S = 0, rows = 0;
    // Bytes from the descriptor's start to K byte kb of the sub-tile `sub` elements along M (N).
    int64_t offset(int64_t kb, int64_t sub, int64_t esz_) const {
      if (mn_major) return (sub * esz_ / S) * rows * S + (kb / esz_) * S;
      return (kb / S) * (rows * S) + kb % S + sub * S;
    }
  };
  auto describe = [&](const Val& t, int mn_dim, const std::string& mn0, int64_t unit) {
    const Layout& l = *t.layout;
    Desc d;
    d.S = l.swizzle;
    d.mn_major = l.order[0] == mn_dim;
    d.rows = l.shape[static_cast<size_t>(l.order[1])];
    if (d.S < 32 || l.shape[static_cast<size_t>(l.order[0])] * esz < d.S)
      fail("internal error: a wgmma operand tile {} of {}", l.str(), dtype_name(in));
    const int mode = d.S == 128 ? 1 : d.S == 64 ? 2 : 3;
    if (d.mn_major) {
      if (esz != 2 || unit * esz % d.S != 0)
        fail("internal error: an MN-major wgmma tile {} of {} for {}-element units", l.str(), dtype_name(in), unit);
      d.desc = tmp("uint64_t", fmt::format("tt_wgmma_desc(tt_smem_base + {} + ({} / {}) * {}, {}, {}, {})", t.name, mn0,
                                           d.S / esz, d.rows * d.S, d.rows * d.S, 8 * d.S, mode));
    } else {
      d.desc = tmp("uint64_t", fmt::format("tt_wgmma_desc(tt_smem_base + {} + {} * {}, 16, {}, {})", t.name, mn0, d.S,
                                           8 * d.S, mode));
    }
    return d;
  };
  Desc da, db = describe(b, 1, n0, WTN);
  if (a.kind == Val::Kind::Tile) da = describe(a, 0, m0, 64);
  if ((fp8 || tf32 || integer) && (da.mn_major || db.mn_major))
    fail("internal error: wgmma reads {} tiles K-major only", dtype_name(in));
  // Register A: the fragment of k-step ks and row tile mi, packed into four 32-bit registers.
  const int kbits = log2i(K / kinstr);
  auto a_regs = [&](int64_t ks, int64_t mi) {
    const int per = esz == 1 ? 16 : esz == 2 ? 8 : 4;  // elements of one fragment
    const int64_t base = (ks << log2i(per)) | (mi << (log2i(per) + kbits));
    std::vector<std::string> r;
    for (int j = 0; j < 4; ++j)
      r.push_back(fmt::format("*reinterpret_cast<const uint32_t*>(&{}[{}])", a.name, base + j * (per / 4)));
    return r;
  };
  line("tt_wgmma_fence();");
  const std::string dtype = integer ? "s32" : "f32";
  for (int64_t kb = 0; kb < K * esz; kb += 32) {
    const int64_t ks = kb / 32;
    const int64_t boff = db.offset(kb, 0, esz);
    // The first k-step of a zero accumulator: scale-d 0 (the predicate `p` false), outputs only.
    const bool set = zero_acc && kb == 0;
    const std::string use_d = set ? "\"r\"(0)"
                              : kb == 0 && !use_acc.empty() ? fmt::format("\"r\"((int)({}))", use_acc)
                                                            : "\"r\"(1)";
    for (int64_t mi = 0; mi < MT; ++mi) {
      std::string regs, outs;
      for (int64_t i = 0; i < nr; ++i) {
        regs += fmt::format("{}%{}", i ? ", " : "", i);
        outs += fmt::format("{}\"{}{}\"({}[{}])", i ? ", " : "", set ? "=" : "+", integer ? "r" : "f", acc, mi * nr + i);
      }
      std::string tail = integer ? "p"
                         : fp8 || tf32 ? "p, 1, 1"
                                       : fmt::format("p, 1, 1{}, {}", a.kind == Val::Kind::Tile ? da.mn_major ? ", 1" : ", 0" : "",
                                                     db.mn_major ? 1 : 0);
      if (a.kind == Val::Kind::Tile) {
        const int64_t aoff = da.offset(kb, mi * 64, esz);
        line(fmt::format("asm volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{0}, 0; wgmma.mma_async.sync.aligned.m64n{1}k{2}.{3}.{4}.{4} "
                         "{{{5}}}, %{6}, %{7}, {8}; }}\" : {9} : {14}, \"l\"({10} + {11}), \"l\"({12} + {13}));",
                         nr, WTN, kinstr, dtype, ty, regs, nr + 1, nr + 2, tail, outs, da.desc, aoff >> 4, db.desc, boff >> 4,
                         use_d));
      } else {
        std::vector<std::string> ar = a_regs(ks, mi);
        line(fmt::format("asm volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{0}, 0; wgmma.mma_async.sync.aligned.m64n{1}k{2}.{3}.{4}.{4} "
                         "{{{5}}}, {{%{6}, %{7}, %{8}, %{9}}}, %{10}, {11}; }}\" : {12} : {19}, \"r\"({13}), \"r\"({14}), "
                         "\"r\"({15}), \"r\"({16}), \"l\"({17} + {18}));",
                         nr, WTN, kinstr, dtype, ty, regs, nr + 1, nr + 2, nr + 3, nr + 4, nr + 5, tail, outs, ar[0],
                         ar[1], ar[2], ar[3], db.desc, boff >> 4, use_d));
      }
    }
  }
  line("tt_wgmma_commit();");
  pending_mma_.push_back({acc, 1, false, rl.num_regs(), integer});
  if (deferred_dots_.count(op)) {
    // Runs on into the next trip. If the previous trip's group was not retired by an earlier wait of
    // this trip, it is now (its stages are refilled after it).
    bool previous = false;
    for (const auto& p : pending_mma_) previous = previous || p.previous_trip;
    if (previous) wait_mma(1);
  } else {
    wait_mma(0);
  }
  close();
}

void Lowering::emit_mma_sync(const ir::Op* op, const Val& a, const Val& b, const std::string& acc) {
  const Layout& rl = layout(op->result());
  const DType in = op->operand(0)->type.dtype;
  const bool tf32 = in == DType::f32, x3 = op->attrs.str == "tf32x3";
  const int64_t M = rl.shape[0], N = rl.shape[1], K = op->operand(0)->type.shape[1];
  const int wm = rl.mma.wm, wn = rl.mma.wn;
  const int64_t WTM = M / wm, WTN = N / wn, MT = WTM / 16, NT = WTN / 8;
  const int kstep = tf32 ? 8 : 16;
  const int kbits = log2i(K / kstep), ntb = log2i(NT);
  open("");
  line(fmt::format("// dot on mma.sync: {} x {} warps of m16n8k{} ({} A)", wm, wn, kstep,
                   a.kind == Val::Kind::Tile ? "shared" : "register"));
  std::string w = tmp("int", fmt::format("tt_warp % {}", wm * wn));
  std::string m0 = tmp("int", fmt::format("({} / {}) * {}", w, wn, WTM));
  std::string n0 = tmp("int", fmt::format("({} % {}) * {}", w, wn, WTN));
  auto addr = [&](const Val& t, const std::string& r0, const std::string& r1) {
    return fmt::format("tt_smem_base + {} + {}", t.name, tile_offset(*t.layout, in, {r0, r1}));
  };
  const std::string mma = in == DType::f16 ? "tt_mma_f16" : in == DType::bf16 ? "tt_mma_bf16" : "tt_mma_tf32";
  for (int64_t ks = 0; ks < K / kstep; ++ks) {
    const int64_t kk = ks * kstep;
    open("");
    // A fragments.
    line(fmt::format("uint32_t tt_a[{}][4];", MT));
    for (int64_t mi = 0; mi < MT; ++mi) {
      if (a.kind != Val::Kind::Tile) {
        const int per = tf32 ? 4 : 8;
        const int64_t base = (ks << log2i(per)) | (mi << (log2i(per) + kbits));
        for (int j = 0; j < 4; ++j)
          line(fmt::format("tt_a[{}][{}] = {};", mi, j,
                           tf32 ? fmt::format("__float_as_uint({}[{}])", a.name, base + j)
                                : fmt::format("*reinterpret_cast<const uint32_t*>(&{}[{}])", a.name, base + 2 * j)));
      } else if (tf32) {  // m16n8k8: (g, q), (g + 8, q), (g, q + 4), (g + 8, q + 4)
        for (int j = 0; j < 4; ++j)
          line(fmt::format("tt_a[{}][{}] = tt_ld_shared4({});", mi, j,
                           addr(a, fmt::format("{} + {} + (tt_lane >> 2) + {}", m0, mi * 16, (j & 1) * 8),
                                fmt::format("{} + (tt_lane & 3) + {}", kk, (j >> 1) * 4))));
      } else if (a.layout->order[0] == 1) {  // K-major: ldmatrix
        line(fmt::format("tt_ldsm_x4(tt_a[{}], {});", mi,
                         addr(a, fmt::format("{} + {} + (tt_lane & 15)", m0, mi * 16), fmt::format("{} + (tt_lane >> 4) * 8", kk))));
      } else {  // M-major: ldmatrix.trans of k rows
        line(fmt::format("tt_ldsm_x4_trans(tt_a[{}], {});", mi,
                         addr(a, fmt::format("{} + {} + ((tt_lane >> 3) & 1) * 8", m0, mi * 16),
                              fmt::format("{} + (tt_lane & 7) + (tt_lane >> 4) * 8", kk))));
      }
    }
    // B fragments: pairs of n8 tiles.
    if (tf32) {
      line(fmt::format("uint32_t tt_b[{}][2];", NT));
      for (int64_t ni = 0; ni < NT; ++ni)
        for (int j = 0; j < 2; ++j)
          line(fmt::format("tt_b[{}][{}] = tt_ld_shared4({});", ni, j,
                           addr(b, fmt::format("{} + (tt_lane & 3) + {}", kk, j * 4), fmt::format("{} + {} + (tt_lane >> 2)", n0, ni * 8))));
    } else {
      line(fmt::format("uint32_t tt_b[{}][4];", (NT + 1) / 2));
      for (int64_t nj = 0; nj < (NT + 1) / 2; ++nj) {
        if (b.layout->order[0] == 1)  // N-major: ldmatrix.trans of k rows
          line(fmt::format("tt_ldsm_x4_trans(tt_b[{}], {});", nj,
                           addr(b, fmt::format("{} + (tt_lane & 15)", kk), fmt::format("{} + {} + (tt_lane >> 4) * 8", n0, nj * 16))));
        else  // K-major: ldmatrix of n rows
          line(fmt::format("tt_ldsm_x4(tt_b[{}], {});", nj,
                           addr(b, fmt::format("{} + (tt_lane >> 3 & 1) * 8", kk),
                                fmt::format("{} + {} + (tt_lane >> 4) * 8 + (tt_lane & 7)", n0, nj * 16))));
      }
    }
    if (tf32) {  // round to tf32 (or split, tf32x3) in place
      if (x3) line(fmt::format("uint32_t tt_as[{}][4], tt_bs[{}][2];", MT, NT));
      for (auto [r, wdt, cnt] : {std::tuple{"tt_a", 4, MT * 4}, std::tuple{"tt_b", 2, NT * 2}}) {
        std::string x = fmt::format("{}[tt_i / {}][tt_i % {}]", r, wdt, wdt);
        line("#pragma unroll");
        line(fmt::format("for (int tt_i = 0; tt_i < {}; ++tt_i) {};", cnt,
                         x3 ? fmt::format("tt_tf32_split({}, {}s[tt_i / {}][tt_i % {}])", x, r, wdt, wdt)
                            : fmt::format("{0} = tt_tf32({0})", x)));
      }
    }
    for (int64_t mi = 0; mi < MT; ++mi)
      for (int64_t ni = 0; ni < NT; ++ni) {
        const int64_t c0 = (ni << 2) | (mi << (2 + ntb));
        const std::string bfrag = tf32 ? fmt::format("tt_b[{}]", ni) : fmt::format("&tt_b[{}][{}]", ni >> 1, (ni & 1) * 2);
        if (x3) {
          line(fmt::format("tt_mma_tf32(&{}[{}], tt_as[{}], {});", acc, c0, mi, bfrag));
          line(fmt::format("tt_mma_tf32(&{}[{}], tt_a[{}], tt_bs[{}]);", acc, c0, mi, ni));
        }
        line(fmt::format("{}(&{}[{}], tt_a[{}], {});", mma, acc, c0, mi, bfrag));
      }
    close();
  }
  close();
  touched();
}

// The FMA dot as a register-blocked outer product (the classic SGEMM loop; Triton's FMA dot over
// its blocked layout): the accumulator's layout gives each thread TM rows x TN columns of C
// (assign_layouts' fma_dot_layout); a step of KV k reads the thread's TM x KV elements of A and
// KV x TN of B into registers - 16-byte vectors along each tile's contiguous dim (A's rows of K
// for a K-major tile, a run of the thread's rows for an M-major one; B likewise) - and does TM x TN
// x KV fmas from them. Each element's sum still runs over k in order, so values are those of the
// plain loop before it bit for bit.
void Lowering::emit_fma_dot(const ir::Op* op, const Val& a, const Val& b, const std::string& acc) {
  const Layout& rl = layout(op->result());
  const DType in = op->operand(0)->type.dtype, out = op->result()->type.dtype;
  const int64_t K = op->operand(0)->type.shape[1];
  if (a.kind != Val::Kind::Tile || b.kind != Val::Kind::Tile) fail("internal error: the FMA dot reads tiles");
  const Layout &ta = *a.layout, &tb = *b.layout;
  // The accumulator's register bits along M (rows) and N (columns): register reg_of(i, j) holds the
  // thread's row i and column j.
  std::vector<int> rbits, cbits;
  for (size_t i = 0; i < rl.reg.size(); ++i) {
    if (rl.reg[i].dim == 0) rbits.push_back(static_cast<int>(i));
    else if (rl.reg[i].dim == 1) cbits.push_back(static_cast<int>(i));
    else fail("internal error: an FMA dot's accumulator {} replicates in registers", rl.str());
  }
  const int TM = 1 << rbits.size(), TN = 1 << cbits.size();
  auto reg_of = [&](int i, int j) {
    int r = 0;
    for (size_t t = 0; t < rbits.size(); ++t)
      if (i >> t & 1) r |= 1 << rbits[t];
    for (size_t t = 0; t < cbits.size(); ++t)
      if (j >> t & 1) r |= 1 << cbits[t];
    return r;
  };
  // Consecutive fragments along a dim: the first register bits of that dim are its lowest bits.
  auto run = [&](const std::vector<int>& bits, int dim) {
    int v = 1;
    for (size_t t = 0; t < bits.size() && rl.reg[static_cast<size_t>(bits[t])].dim == dim &&
                       rl.reg[static_cast<size_t>(bits[t])].bit == static_cast<int>(t);
         ++t)
      v *= 2;
    return v;
  };
  // Vector reads need the elements as they are (no conversion) in 4 or 8 bytes.
  const int64_t esz = dtype_bytes(in);
  const bool vec_ok = in == out && (in == DType::f32 || in == DType::f64);
  const int64_t vmax = vec_ok ? 16 / esz : 1;
  const bool a_k = ta.order[0] == 1, b_k = tb.order[0] == 0;  // K-major tiles
  const int KV = static_cast<int>(a_k || b_k ? std::min<int64_t>(vmax, K) : 1);
  const int va = a_k ? KV : static_cast<int>(std::min<int64_t>(vmax, run(rbits, 0)));
  const int vb = b_k ? KV : static_cast<int>(std::min<int64_t>(vmax, run(cbits, 1)));
  const std::string ft = ctype(out);
  auto element = [&](const std::string& x) -> std::string {
    if (out == DType::f64 && in != DType::f64) return fmt::format("(double){}", to_f32(x, in));
    if (is_float(out)) return to_f32(x, in);
    return fmt::format("({})({})", ctype(out), x);
  };
  // The byte offset in tile t of the element at thread part `th` + constant part `cs` (per dim;
  // the two never set the same bit: lanes and warps against registers and k). In a swizzled tile
  // the chunk's XOR splits the same way - (thread chunk ^ thread row phase) ^ (constant chunk ^
  // constant row phase) - so the thread's part is computed once, at the kernel's top (its base and
  // its cb chunk offsets, `Xt ^ j` for each constant j), and each read adds constants to it: no
  // per-read swizzle arithmetic in the loop.
  auto offset = [&](const Val& t, const std::vector<std::string>& th, const std::vector<std::string>& cs) {
    const Layout& s = *t.layout;
    if (s.swizzle == 0) return tile_offset(s, in, {fmt::format("({} + {})", th[0], cs[0]), fmt::format("({} + {})", th[1], cs[1])});
    const size_t c = static_cast<size_t>(s.order[0]), o = static_cast<size_t>(s.order[1]);
    const int64_t epc = 16 / esz, cb = s.swizzle / 16, R = s.shape[o];
    const int shift = cb == 8 ? 0 : cb == 4 ? 1 : 2, cbits = cb == 8 ? 3 : cb == 4 ? 2 : 1;
    const std::string key = fmt::format("fma|{}|{}|{}|{}|{}", s.str(), dtype_name(in), R, th[0], th[1]);
    auto it = thread_coords_.find(key);
    std::string xs;
    if (it != thread_coords_.end()) {
      xs = it->second;
    } else {
      xs = fmt::format("tt_fx{}", thread_coords_.size());
      const std::string base = fmt::format("({}) * {} + ((({}) / {}) >> {}) * {} + (({}) % {}) * {}", th[o], cb * 16, th[c], epc,
                                           cbits, R * cb * 16, th[c], epc, esz);
      std::string init, ties;
      for (int64_t j = 0; j < cb; ++j) {
        const std::string x = fmt::format("(({}) / {})", th[c], epc), y = fmt::format("(({}) >> {})", th[o], shift);
        init += fmt::format("{}{} + ((({} ^ {}) & {}) ^ {}) * 16", j ? ", " : "", base, x, y, cb - 1, j);
        ties += fmt::format("{}\"+r\"({}[{}])", j ? ", " : "", xs, j);
      }
      // Hidden from NVVM: knowing their low bits zero, it turns `+ constant` into `| constant`,
      // which ptxas does not fold into ld.shared's immediate offset (an extra LOP3 a read).
      decls_ += fmt::format("  int {}[{}] = {{{}}};\n  asm(\"\" : {});\n", xs, cb, init, ties);
      thread_coords_[key] = xs;
    }
    return fmt::format("({0}[((({1}) / {2}) ^ (({3}) >> {4})) & {5}] + ({3}) * {6} + ((({1}) / {2}) >> {7}) * {8} + (({1}) % {2}) * {9})",
                       xs, cs[c], epc, cs[o], shift, cb - 1, cb * 16, cbits, R * cb * 16, esz);
  };
  // Reads n elements of tile t from (thread part th + constant part cs) on along its contiguous dim
  // into dst[0..n).
  auto read = [&](const Val& t, const std::vector<std::string>& th, const std::vector<std::string>& cs, int n,
                  const std::vector<std::string>& dst) {
    const std::string addr = fmt::format("tt_smem + {} + {}", t.name, offset(t, th, cs));
    if (n == 1) return line(fmt::format("{} = {};", dst[0], element(fmt::format("*reinterpret_cast<const {}*>({})", ctype(in), addr))));
    const std::string vt = fmt::format("{}{}", in == DType::f64 ? "double" : "float", n);
    std::string v = tmp(vt, fmt::format("*reinterpret_cast<const {}*>({})", vt, addr));
    static const char* comp[] = {"x", "y", "z", "w"};
    for (int e = 0; e < n; ++e) line(fmt::format("{} = {}.{};", dst[static_cast<size_t>(e)], v, comp[e]));
  };
  line(fmt::format("// dot as an FMA loop over K: {} x {} fragments a thread, {} k a step, reads of {} (A) and {} (B) elements",
                   TM, TN, KV, va, vb));
  line("#pragma unroll");
  open(fmt::format("for (int tt_k = 0; tt_k < {}; tt_k += {})", K, KV));
  line(fmt::format("{} tt_fa[{}][{}], tt_fb[{}][{}];", ft, TM, KV, KV, TN));
  // A: row i of the thread, k = tt_k + kk.
  for (int i = 0; i < TM; i += a_k ? 1 : va)
    for (int kk = 0; kk < KV; kk += a_k ? va : 1) {
      std::vector<std::string> dst;
      for (int e = 0; e < va; ++e)
        dst.push_back(a_k ? fmt::format("tt_fa[{}][{}]", i, kk + e) : fmt::format("tt_fa[{}][{}]", i + e, kk));
      read(a, {thread_coord(rl, 0), "0"}, {fmt::format("{}", rl.reg_coords(reg_of(i, 0))[0]), fmt::format("tt_k + {}", kk)},
           va, dst);
    }
  for (int j = 0; j < TN; j += b_k ? 1 : vb)
    for (int kk = 0; kk < KV; kk += b_k ? vb : 1) {
      std::vector<std::string> dst;
      for (int e = 0; e < vb; ++e)
        dst.push_back(b_k ? fmt::format("tt_fb[{}][{}]", kk + e, j) : fmt::format("tt_fb[{}][{}]", kk, j + e));
      read(b, {"0", thread_coord(rl, 1)}, {fmt::format("tt_k + {}", kk), fmt::format("{}", rl.reg_coords(reg_of(0, j))[1])},
           vb, dst);
    }
  for (int kk = 0; kk < KV; ++kk)
    for (int i = 0; i < TM; ++i)
      for (int j = 0; j < TN; ++j) {
        const int r = reg_of(i, j);
        const std::string x = fmt::format("tt_fa[{}][{}]", i, kk), y = fmt::format("tt_fb[{}][{}]", kk, j);
        if (out == DType::f32) line(fmt::format("{0}[{1}] = fmaf({2}, {3}, {0}[{1}]);", acc, r, x, y));
        else if (out == DType::f64) line(fmt::format("{0}[{1}] = fma({2}, {3}, {0}[{1}]);", acc, r, x, y));
        else line(fmt::format("{0}[{1}] = ({4})((uint64_t){0}[{1}] + (uint64_t)({2}) * (uint64_t)({3}));", acc, r, x, y, ft));
      }
  close();
  touched();
}

}  // namespace tritium::jit::cuda::lowering
