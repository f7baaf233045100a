// The element-loop generator's scans (tl::cumsum, tl::cumprod, tl::associative_scan): the parallel
// scan of scan.h. Each result is a buffer (shared memory while the budget lasts, else the program's
// global scratch). Where shared memory allows, the operands are first copied (coalesced) into a
// padded shared copy, one spare slot after every 32 elements, so that the threads of a warp
// walking their chunks (stride = chunk) hit distinct banks; the operands' loads there are vector
// loads (V consecutive elements a thread); the scan runs in place there, and the copy out to the
// result buffers folds in each chunk's prefix (scan.h's last step: one pass over the row fewer).
// Else it runs in place in the result buffers.
// A forward scan along the last dim whose results are register values runs in the register
// mapping instead (emit_register_scan, Triton's way): no copy of the row through shared memory.
#include "jit/cuda/codegen_impl.h"
#include "jit/cuda/scan.h"

namespace tritium::jit::cuda::detail {

bool Codegen::register_scan(const ir::Op* op) {
  if (auto it = reg_scan_.find(op); it != reg_scan_.end()) return it->second;
  reg_scan_[op] = false;
  const Shape& s = op->operand(0)->type.shape;
  if (s.empty() || op->attrs.axis != static_cast<int>(s.size()) - 1 || op->attrs.flag) return false;
  const int V = mapped_width(s);
  const int64_t segments = s.back() / V;  // of a row
  if (numel(s) % (int64_t(nt_) * V) != 0 || (segments % 32 != 0 && 32 % segments != 0)) return false;
  for (const ir::Value* r : op->results)
    if (r->type.shape != s || register_words(r->type, V) > kMaxRegisterWords || !only_own_elements(r)) return false;
  return reg_scan_[op] = true;
}

// The register mapping gives thread tid, at step k, the V consecutive elements of segment
// g = k * threads + tid (g * V .. g * V + V - 1), so a row is a run of S = len / V consecutive
// segments, and the 32 segments of a warp at one step (a "unit") are consecutive too. Each thread
// scans its segment serially in registers; the segment totals are scanned across the warp's
// lanes with shuffles (lanes of the same row only: S a divisor or multiple of 32); rows longer
// than a warp's segments (S > 32) put each unit's total in shared memory, one warp scans them
// (scan.h, rows of S / 32 units) and each thread takes the total of the units before its own.
// Every thread then combines its exclusive prefix into its segment's registers. Earlier elements
// stay on the left of every combine, as in scan.h.
ScanHooks Codegen::scan_hooks(const ir::Block* region) {
  ScanHooks h;
  h.line = [this](const std::string& l) { line(l); };
  h.open = [this](const std::string& l) { open(l); };
  h.close = [this] { close(); };
  h.fresh = [this](const char* p) { return fresh(p); };
  h.tmp = [this](const std::string& t, const std::string& e) { return tmp(t, e); };
  h.combine = [this, region](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    return combine(region, a, b);
  };
  return h;
}

void Codegen::emit_register_scan(const ir::Op* op) {
  const Shape& s = op->operand(0)->type.shape;
  const ir::Block* region = op->regions[0];
  const size_t n = op->operands.size();
  const int V = mapped_width(s);
  const int64_t elems = numel(s), K = elems / (int64_t(nt_) * V), S = s.back() / V, W = nwarps_;
  const int64_t span = std::min<int64_t>(S, 32);  // lanes of one row within a warp
  const bool cross = S > 32;                       // rows span units
  const int64_t U = cross ? S / 32 : 1;            // units a row
  std::vector<std::string> types;
  for (const ir::Value* x : op->operands) types.push_back(ctype(x->type.element()));
  const std::vector<const ir::Value*> reads(op->operands.begin(), op->operands.end());
  sync_if_reading(reads);
  line(fmt::format("// register scan: {} rows of {}, {} elements a segment, {} segments a thread", elems / s.back(),
                   s.back(), V, K));
  std::vector<std::string> rr(n), ex(n), units(n);
  for (size_t i = 0; i < n; ++i) rr[i] = declare_registers(op->results[i]->type);
  for (size_t i = 0; i < n; ++i) {
    ex[i] = fresh("ex");  // per step: the scan of the segments before this one in its warp
    if (S > 1) line(fmt::format("{} {}[{}];", types[i], ex[i], K));
  }
  const std::string lane = S > 1 ? tmp("int", "tid & 31") : "";
  const std::string q = span == 32 || S == 1 ? lane : tmp("int", fmt::format("{} & {}", lane, span - 1));
  if (cross) {
    ++shared_writes_;
    for (size_t i = 0; i < n; ++i)
      units[i] = alloc_shared(types[i], K * W, std::max(4, dtype_bytes(op->operands[i]->type.dtype)));
  }
  auto at = [&](size_t i, const std::string& k, const std::string& l) { return fmt::format("{}[{} * {} + {}]", rr[i], k, V, l); };
  // 0. Every step's operands into registers first: the steps' loads issue back to back (in one
  // loop with the shuffles ptxas left a step's loads behind the previous step's shuffles - a
  // memory latency a step, where Triton issues a tile's loads at once).
  thread_loop(
      s, V, [&](const Index& base) { emit_vector_loads(reads, base, V); },
      [&](const Index& idx) {
        for (size_t i = 0; i < n; ++i) line(fmt::format("{} = {};", at(i, loop_.k, lane_), eval(op->operands[i], idx)));
      },
      nullptr);
  vec_loads_.clear();
  {
    const std::string k = fresh("k");
    line("#pragma unroll");
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", k, K));
    if (V > 1) {  // 1. the segment, serially
      const std::string l = fresh("l");
      line("#pragma unroll");
      open(fmt::format("for (int {0} = 1; {0} < {1}; ++{0})", l, V));
      std::vector<std::string> prev, cur;
      for (size_t i = 0; i < n; ++i) {
        prev.push_back(at(i, k, l + " - 1"));
        cur.push_back(at(i, k, l));
      }
      std::vector<std::string> c = combine(region, prev, cur);
      for (size_t i = 0; i < n; ++i) line(fmt::format("{} = {};", at(i, k, l), c[i]));
      close();
    }
    if (S > 1) {  // (S == 1: a segment is a row)
      // 2. The segment totals over the row's lanes (Hillis-Steele, the lower lane on the left).
      std::vector<std::string> acc(n);
      for (size_t i = 0; i < n; ++i) {
        acc[i] = fresh("acc");
        line(fmt::format("{} {} = {};", types[i], acc[i], at(i, k, std::to_string(V - 1))));
      }
      for (int64_t d = 1; d < span; d *= 2) {
        open("");
        std::vector<std::string> below;
        for (size_t i = 0; i < n; ++i) below.push_back(tmp(types[i], fmt::format("tt_shfl_up({}, {})", acc[i], d)));
        open(fmt::format("if ({} >= {})", q, d));
        std::vector<std::string> c = combine(region, below, acc);
        for (size_t i = 0; i < n; ++i) line(fmt::format("{} = {};", acc[i], c[i]));
        close();
        close();
      }
      for (size_t i = 0; i < n; ++i) line(fmt::format("{}[{}] = tt_shfl_up({}, 1);", ex[i], k, acc[i]));
      if (cross) {
        open(fmt::format("if ({} == 31)", lane));
        for (size_t i = 0; i < n; ++i) line(fmt::format("{}[{} * {} + (tid >> 5)] = {};", units[i], k, W, acc[i]));
        close();
      }
    }
    close();
  }
  if (S > 1) {
    if (cross) {
      // 3. One warp scans the unit totals in place: rows of U units.
      sync();
      open("if (tid < 32)");
      ScanShape us;
      us.rows = K * W / U;
      us.len = U;
      us.num_threads = 32;
      us.types = types;
      ScanHooks h = scan_hooks(region);
      auto unit = [&](size_t i, const std::string& row, const std::string& pos) {
        return fmt::format("{}[({}) * {} + {}]", units[i], row, U, pos);
      };
      h.input = unit;
      h.result = unit;
      h.write = [&](size_t i, const std::string& row, const std::string& pos, const std::string& v) {
        line(fmt::format("{} = {};", unit(i, row, pos), v));
      };
      h.shared_array = [&](const std::string&, int64_t) -> std::string {
        fail("internal error: the unit scan of kernel {} spans warps", f_.name);
      };
      h.barrier = [&] { fail("internal error: the unit scan of kernel {} needs a barrier", f_.name); };
      emit_parallel_scan(us, h);
      close();
      sync();
    }
    // 4. Each segment but a row's first takes the segments before it: those of its warp (lanes
    // q > 0), then the units before its own in the row.
    const std::string k = fresh("k");
    line("#pragma unroll");
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", k, K));
    std::vector<std::string> e(n);
    for (size_t i = 0; i < n; ++i) {
      e[i] = fresh("pre");
      line(fmt::format("{} {} = {}[{}];", types[i], e[i], ex[i], k));
    }
    std::string have = fmt::format("{} > 0", q);
    if (cross) {
      const std::string j = tmp("int", fmt::format("{} * {} + (tid >> 5)", k, W));
      const std::string before = tmp("bool", fmt::format("{} % {} != 0", j, U));
      open(fmt::format("if ({})", before));
      std::vector<std::string> w;
      for (size_t i = 0; i < n; ++i) w.push_back(tmp(types[i], fmt::format("{}[{} - 1]", units[i], j)));
      open(fmt::format("if ({} > 0)", q));
      std::vector<std::string> c = combine(region, w, e);
      for (size_t i = 0; i < n; ++i) line(fmt::format("{} = {};", e[i], c[i]));
      close();
      open("else");
      for (size_t i = 0; i < n; ++i) line(fmt::format("{} = {};", e[i], w[i]));
      close();
      close();
      have = fmt::format("{} || {}", have, before);
    }
    open(fmt::format("if ({})", have));
    const std::string l = fresh("l");
    line("#pragma unroll");
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", l, V));
    std::vector<std::string> cur;
    for (size_t i = 0; i < n; ++i) cur.push_back(at(i, k, l));
    std::vector<std::string> c = combine(region, e, cur);
    for (size_t i = 0; i < n; ++i) line(fmt::format("{} = {};", at(i, k, l), c[i]));
    close();
    close();
    close();
  }
  for (size_t i = 0; i < n; ++i) regs_[op->results[i]] = rr[i];
}

void Codegen::emit_scan(const ir::Op* op) {
  if (reg_planned_.count(op->results[0])) return emit_register_scan(op);
  ++shared_writes_;
  const Shape& s = op->operand(0)->type.shape;
  const int axis = op->attrs.axis;
  const ir::Block* region = op->regions[0];
  std::vector<std::string> outs;
  ScanShape shape;
  for (ir::Value* res : op->results) outs.push_back(buffers_[res] = alloc_buffer(res->type));
  for (ir::Value* x : op->operands) shape.types.push_back(ctype(x->type.element()));
  Shape outer = s;
  outer.erase(outer.begin() + axis);
  shape.rows = numel(outer);
  shape.len = s[static_cast<size_t>(axis)];
  shape.reverse = op->attrs.flag;
  shape.num_threads = nt_;
  // Element `pos` along the axis of row `row` (an index into `outer`).
  auto at = [&](const std::string& row, const std::string& pos) {
    Index idx = index_of(outer, row);
    idx.insert(idx.begin() + axis, pos);
    return idx;
  };
  const int64_t elems = numel(s);
  const int64_t padded_elems = elems + elems / 32 + 1;
  int64_t staging_bytes = 0;
  for (ir::Value* x : op->operands) staging_bytes += (padded_elems * std::max(4, dtype_bytes(x->type.dtype)) + 15) / 16 * 16;
  const bool staged = smem_ + staging_bytes <= smem_budget_;
  std::vector<std::string> stage;
  auto padded = [](const std::string& e) { return fmt::format("({0}) + ({0}) / 32", e); };
  auto slot = [&](size_t i, const std::string& row, const std::string& pos) {
    std::string e = flatten(at(row, pos), s);
    return staged ? fmt::format("{}[{}]", stage[i], padded(e)) : fmt::format("{}[{}]", outs[i], e);
  };
  sync();
  if (staged) {
    for (size_t i = 0; i < op->operands.size(); ++i)
      stage.push_back(alloc_shared(shape.types[i], padded_elems, std::max(4, dtype_bytes(op->operands[i]->type.dtype))));
    // V consecutive elements a thread, so that the operands' loads are 16 bytes wide (the padded
    // slots of a warp's writes still fall in distinct banks).
    const std::vector<const ir::Value*> roots(op->operands.begin(), op->operands.end());
    const int V = choose_width(s, roots, nullptr);
    thread_loop(
        s, V, [&](const Index& base) { emit_vector_loads(roots, base, V); },
        [&](const Index& idx) {
          const std::string e = tmp("int", flatten(idx, s));
          for (size_t i = 0; i < stage.size(); ++i)
            line(fmt::format("{}[{}] = {};", stage[i], padded(e), eval(op->operands[i], idx)));
        },
        nullptr);
    vec_loads_.clear();
    sync();
  }
  ScanHooks h = scan_hooks(region);
  h.input = [&](size_t i, const std::string& row, const std::string& pos) {
    return staged ? slot(i, row, pos) : eval(op->operands[i], at(row, pos));
  };
  h.result = slot;
  h.write = [&](size_t i, const std::string& row, const std::string& pos, const std::string& v) {
    line(fmt::format("{} = {};", slot(i, row, pos), v));
  };
  h.shared_array = [&](const std::string& t, int64_t count) { return alloc_shared(t, count, 8); };
  h.barrier = [&] { line("__syncthreads();"); };
  h.defer_fold = staged;  // folded while copying out
  const ScanFold fold = emit_parallel_scan(shape, h);
  sync();
  if (staged) {
    std::string e = fresh("e");
    open(fmt::format("for (int {0} = tid; {0} < {1}; {0} += {2})", e, elems, nt_));
    std::vector<std::string> x;
    for (size_t i = 0; i < stage.size(); ++i) x.push_back(tmp(shape.types[i], fmt::format("{}[{}]", stage[i], padded(e))));
    if (!fold.prefix.empty()) {
      // The chunk holding the element, and the thread that scanned it (step 4 of scan.h).
      Index idx = index_of(s, e);
      const std::string pos = idx[static_cast<size_t>(axis)];
      idx.erase(idx.begin() + axis);
      const std::string along = shape.reverse ? fmt::format("{} - ({})", shape.len - 1, pos) : pos;
      const std::string k = tmp("int", fmt::format("({}) / {}", along, fold.chunk));
      const std::string owner = tmp("int", fmt::format("({}) * {} + {}", flatten(idx, outer), fold.threads_per_row, k));
      std::vector<std::string> pre;
      for (size_t i = 0; i < stage.size(); ++i) pre.push_back(tmp(shape.types[i], fmt::format("{}[{}]", fold.prefix[i], owner)));
      std::vector<std::string> c = combine(region, pre, x);
      for (size_t i = 0; i < stage.size(); ++i) x[i] = tmp(shape.types[i], fmt::format("{} > 0 ? {} : {}", k, c[i], x[i]));
    }
    for (size_t i = 0; i < stage.size(); ++i) line(fmt::format("{}[{}] = {};", outs[i], e, x[i]));
    close();
    sync();
  }
}

}  // namespace tritium::jit::cuda::detail
