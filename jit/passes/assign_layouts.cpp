#include "jit/passes/assign_layouts.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include <fmt/format.h>

#include "common/error.h"
#include "ir/printer.h"
#include "jit/passes/dce.h"

namespace tritium::jit {
using ir::OpKind;

namespace {

bool is_atomic(OpKind k) { return k >= OpKind::AtomicAdd && k <= OpKind::AtomicCas; }
bool is_view(OpKind k) {
  return k == OpKind::Broadcast || k == OpKind::ExpandDims || k == OpKind::Permute || k == OpKind::Reshape ||
         k == OpKind::MultipleOf || k == OpKind::MaxContiguous;
}
// Views that may be views of a shared-memory tile too (a transposed operand).
bool is_shared_view(OpKind k) { return k == OpKind::Permute || k == OpKind::MultipleOf || k == OpKind::MaxContiguous; }
bool is_source(OpKind k) { return k == OpKind::Constant || k == OpKind::Splat || k == OpKind::Arange; }
bool is_byte(DType d) { return is_fp8(d) || d == DType::i8 || d == DType::u8; }
bool is_half(DType d) { return d == DType::f16 || d == DType::bf16; }
bool is_tf32(const ir::Op* dot) {
  return dot->operand(0)->type.dtype == DType::f32 && (dot->attrs.str == "tf32" || dot->attrs.str == "tf32x3");
}

int priority(const Layout& l) {
  switch (l.kind) {
    case LayoutKind::Mma: return 5;
    case LayoutKind::DotOperand: return 4;
    case LayoutKind::Blocked: return 3;
    case LayoutKind::Slice: return 2;
    default: return 1;
  }
}

int64_t pow2_divisor(int64_t v) {
  if (v <= 0) return int64_t(1) << 30;
  int64_t p = 1;
  while (p < (int64_t(1) << 30) && v % (p * 2) == 0) p *= 2;
  return p;
}

int64_t numel(const ir::Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

struct Use {
  ir::Op* op;
  size_t idx;
};

class Assigner {
 public:
  Assigner(ir::Function& f, const AxisInfoMap& axis, const LayoutOptions& o)
      : f_(f), axis_(axis), nw_(o.num_warps), cc_(o.compute_capability) {}

  LayoutMap run() {
    f_.walk([&](ir::Op* op) {
      for (size_t i = 0; i < op->operands.size(); ++i) uses_[op->operands[i]].push_back({op, i});
    });
    forward(f_.body);
    backward(f_.body);
    LayoutMap map;
    for (auto& [v, l] : home_) map.set(v, l);
    eliminate_dead_code(f_);
    return map;
  }

 private:
  ir::Function& f_;
  const AxisInfoMap& axis_;
  int nw_, cc_;
  std::unordered_map<const ir::Value*, std::vector<Use>> uses_;  // before the pass changes anything
  std::unordered_map<const ir::Value*, Layout> home_;
  std::unordered_map<const ir::Op*, Layout> access_;  // stores and atomics: the layout they access in
  std::unordered_map<const ir::Op*, Layout> operand_in_;  // reduce / scan: their operands' layout
  // Phase 2: what each use needs of a value, grouped by layout.
  std::unordered_map<const ir::Value*, std::vector<std::pair<Layout, std::vector<Use>>>> reqs_;

  bool has(const ir::Value* v) const { return home_.count(v) > 0; }
  int threads() const { return 32 * nw_; }

  // ---- anchors ------------------------------------------------------------------------------

  // Triton's Coalesce: a thread moves up to 16 bytes along the pointer's most contiguous dim.
  // Between dims of equal contiguity (a gather, contiguous in none as far as can be proved) the
  // lanes go along the one whose neighbours' addresses are likely closest (AxisInfo::stride):
  // the smallest known step first (0: a warp reads one address), then unknown steps; the last
  // dim among equals. Triton 3.9 takes the last dim there, which for an
  // im2col tile ([pixels, channels] of NCHW) puts 32 lanes on 32 channels H*W apart.
  Layout coalesced(const ir::Op* op, bool vector) {
    const ir::Value* p = op->operand(0);
    const ir::Shape& shape = p->type.shape;
    const int rank = static_cast<int>(shape.size());
    AxisInfo info = axis_.contains(p) ? axis_.get(p) : AxisInfo::unknown(static_cast<size_t>(rank));
    std::vector<int> order = default_order(rank);
    // Blocks with a size-1 dim keep Triton's order (nothing there for lanes to choose between).
    const bool by_step = std::none_of(shape.begin(), shape.end(), [](int64_t n) { return n == 1; });
    auto step_rank = [&](int d) -> uint64_t {
      const int64_t s = info.stride[static_cast<size_t>(d)];
      if (!by_step) return 0;
      if (s == AxisInfo::kNoStride) return UINT64_MAX;
      return static_cast<uint64_t>(s < 0 ? -s : s);
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const int64_t ca = info.contiguity[static_cast<size_t>(a)], cb = info.contiguity[static_cast<size_t>(b)];
      if (ca != cb) return ca > cb;
      return step_rank(a) < step_rank(b);
    });
    int64_t vec = 1;
    if (vector) {
      const size_t d = static_cast<size_t>(order[0]);
      int64_t elem = std::max<int64_t>(1, dtype_bytes(p->type.pointee));
      vec = pow2_divisor(info.contiguity[d]);
      vec = std::min(vec, std::max<int64_t>(1, info.divisibility[d] / elem));
      vec = std::min(vec, std::max<int64_t>(1, 16 / elem));
      vec = std::min(vec, shape[d]);
      vec = std::min(vec, std::max<int64_t>(1, numel(shape) / threads()));
    }
    return default_blocked_layout(shape, nw_, order, vec);
  }

  Layout default_for(const ir::Value* v) const {
    return default_blocked_layout(v->type.shape, nw_, default_order(v->type.rank()));
  }

  // Whether another dot of the same region depends on this one or this one on it (Triton's
  // warpsPerTile rule): chained dots (attention's S = Q K^T and O += P V) tile their warps along M
  // alike, so the row statistics and P pass from one to the other in place.
  bool chained(const ir::Op* dot) const {
    std::vector<const ir::Op*> work{dot};
    std::unordered_map<const ir::Op*, bool> seen;
    for (int steps = 0; !work.empty() && steps < 4096; ++steps) {
      const ir::Op* op = work.back();
      work.pop_back();
      if (!op || seen[op] || op->parent != dot->parent) continue;
      seen[op] = true;
      if (op != dot && op->kind == OpKind::Dot) return true;
      for (const ir::Value* o : op->operands)
        if (o->def) work.push_back(o->def);
      for (const ir::Value* r : op->results)
        if (auto it = uses_.find(r); it != uses_.end())
          for (const Use& u : it->second) work.push_back(u.op);
    }
    return false;
  }

  // A 32-bit load whose only use is a wgmma operand tile that cannot lie as its memory does (tf32
  // has no transpose bit: an M-major A or N-major B is a K-major tile) is copied 4 bytes an
  // element (cp.async in the ring). Its layout puts 8 lanes along the memory's contiguous dim (one
  // 32-byte sector a row of them) and 4 along the tile's (4 words of one 16-byte chunk of a tile
  // row, each of the 8 rows in another swizzle phase): a warp's 32 copies read 4 whole sectors and
  // write 32 distinct banks. The coalesced layout's 16-byte runs would write 2 chunk columns of
  // the swizzle, 16 lanes to a bank.
  std::optional<Layout> transposing_tile_load(const ir::Op* load) {
    const ir::Value* v = load->result();
    const ir::Shape& shape = v->type.shape;
    if (cc_ < 90 || shape.size() != 2 || dtype_bytes(v->type.dtype) != 4 || numel(shape) < threads()) return std::nullopt;
    // Through single-use views to the dot; `dim[i]` is the load's dim that the value's dim i is.
    std::vector<int> dim = {0, 1};
    const ir::Value* x = v;
    for (int depth = 0; depth < 8; ++depth) {
      auto it = uses_.find(x);
      if (it == uses_.end() || it->second.size() != 1) return std::nullopt;
      const Use& u = it->second[0];
      if (u.op->kind == OpKind::Dot && u.idx < 2) {
        const Layout acc = dot_layout(u.op);
        if (acc.kind != LayoutKind::Mma || acc.mma.version != 3) return std::nullopt;
        const Layout tile = dot_operand(u.op, static_cast<int>(u.idx), acc);
        const int c = home_[v].order[0], t = dim[static_cast<size_t>(tile.order[0])];
        if (!tile.is_shared() || t == c || shape[static_cast<size_t>(c)] < 8 || shape[static_cast<size_t>(t)] < 4)
          return std::nullopt;
        std::vector<int64_t> spt = {1, 1}, tpw(2), wpc(2);
        tpw[static_cast<size_t>(c)] = 8;
        tpw[static_cast<size_t>(t)] = 4;
        const int64_t wt = std::min<int64_t>(nw_, shape[static_cast<size_t>(t)] / 4);
        wpc[static_cast<size_t>(t)] = wt;
        wpc[static_cast<size_t>(c)] = nw_ / wt;
        if (shape[static_cast<size_t>(c)] < 8 * wpc[static_cast<size_t>(c)]) return std::nullopt;
        return blocked_layout(shape, spt, tpw, wpc, {c, t});
      }
      if (!is_shared_view(u.op->kind)) return std::nullopt;
      if (u.op->kind == OpKind::Permute) {
        std::vector<int> d(2);
        for (size_t i = 0; i < 2; ++i) d[i] = dim[static_cast<size_t>(u.op->attrs.ints[i])];
        dim = d;
      }
      x = u.op->result();
    }
    return std::nullopt;
  }

  Layout dot_layout(const ir::Op* dot) {
    if (auto p = dot_mma_params(dot, nw_, cc_, chained(dot))) return mma_layout(dot->result()->type.shape, *p, nw_);
    if (dot->result()->type.rank() == 2) return fma_dot_layout(dot);
    return default_for(dot->result());
  }

  // The FMA dot's accumulator (the ieee fp32 dot, f64, ...): each thread a register-blocked
  // micro-tile of C - the classic SGEMM structure, as Triton's FMA dot over its blocked layout - so
  // a k step reads TM + TN operand elements for TM * TN fmas. Along a dim whose operand tile is
  // contiguous (A M-major, B N-major) a thread's elements run 16 bytes (one vector read of the
  // tile a k step); along a dim whose tile is K-major they are one element apart across lanes (each
  // thread reads 16 bytes of K a row; the lanes' rows are consecutive, so distinct chunks under the
  // tile's XOR swizzle: no bank conflict). Lanes 4 x 8 (M x N); warps tile M and N so that a thread
  // does the fewest fmas (no replication), then reads the fewest elements (the squarest micro-tile).
  Layout fma_dot_layout(const ir::Op* dot) {
    const ir::Shape& s = dot->result()->type.shape;
    const int64_t M = s[0], N = s[1];
    // The emitter reads vectors of f32 and f64 operands taken as they are (no conversion).
    const DType in = dot->operand(0)->type.dtype;
    const int64_t vec = (in == DType::f32 || in == DType::f64) && dot->result()->type.dtype == in ? 16 / dtype_bytes(in) : 1;
    const int64_t sm = contiguous_dim(dot->operand(0)) == 0 ? std::min(vec, M) : 1;
    const int64_t sn = contiguous_dim(dot->operand(1)) == 1 ? std::min(vec, N) : 1;
    const int64_t tn = std::clamp<int64_t>(N / sn, 1, 8), tm = 32 / tn;
    int64_t best_wm = 1, best_fmas = 0, best_reads = 0;
    for (int64_t wm = 1; wm <= nw_; wm *= 2) {
      const int64_t wn = nw_ / wm;
      // Elements of a thread along M and N (threads past the shape hold copies).
      const int64_t TM = std::max(sm, M / std::min(M, tm * wm)), TN = std::max(sn, N / std::min(N, tn * wn));
      const int64_t fmas = TM * TN * std::max<int64_t>(1, tm * wm * sm / M) * std::max<int64_t>(1, tn * wn * sn / N);
      if (wm == 1 || fmas < best_fmas || (fmas == best_fmas && TM + TN < best_reads))
        best_wm = wm, best_fmas = fmas, best_reads = TM + TN;
    }
    return blocked_layout(s, {sm, sn}, {tm, tn}, {best_wm, nw_ / best_wm}, {1, 0});
  }

  // ---- phase 1: forward ----------------------------------------------------------------------

  void forward(ir::Block* b) {
    for (ir::Op* op : b->ops) forward_op(op);
  }

  void forward_op(ir::Op* op) {
    const bool block = !op->results.empty() && op->result()->type.is_block();
    switch (op->kind) {
      case OpKind::Load:
        if (block) {
          home_[op->result()] = coalesced(op, true);
          if (auto t = transposing_tile_load(op)) home_[op->result()] = *t;
        }
        return;
      case OpKind::Store:
        if (op->operand(0)->type.is_block()) {
          const ir::Value* val = op->operand(1);
          // A value already in a blocked layout is stored from it (no conversion); others (mma
          // accumulators, slices) through a coalesced layout.
          if (has(val) && home_[val].kind == LayoutKind::Blocked) access_[op] = home_[val];
          else access_[op] = coalesced(op, true);
        }
        return;
      case OpKind::Dot: home_[op->result()] = dot_layout(op); return;
      case OpKind::Reduce:
      case OpKind::Scan: {
        const ir::Value* x = op->operand(0);
        Layout in = has(x) ? home_[x] : default_for(x);
        if (in.is_shared()) in = default_for(x);
        operand_in_[op] = in;
        for (ir::Value* r : op->results) {
          if (!r->type.is_block()) continue;
          if (op->kind == OpKind::Scan) {
            home_[r] = in;
            continue;
          }
          Layout out = slice_layout(in, op->attrs.axis);
          if (op->attrs.flag) out = expand_dims_layout(out, op->attrs.axis);
          home_[r] = out;
        }
        for (ir::Block* region : op->regions) forward(region);
        return;
      }
      case OpKind::For: forward_for(op); return;
      case OpKind::If: {
        for (ir::Block* region : op->regions) forward(region);
        for (size_t i = 0; i < op->results.size(); ++i) {
          if (!op->results[i]->type.is_block()) continue;
          for (ir::Block* region : op->regions) {
            const ir::Value* y = region->ops.back()->operand(i);
            if (has(y)) {
              home_[op->results[i]] = home_[y];
              break;
            }
          }
        }
        return;
      }
      case OpKind::While:
        for (ir::Block* region : op->regions) forward(region);
        return;
      case OpKind::Join: {
        // Triton's join: the operands' layout with the new minor dim as the fastest register bit
        // (a register interleave, no data moved). Two scalars join into a [2] every thread holds.
        Layout in = scalar_layout(nw_);
        const Layout* best = nullptr;
        for (const ir::Value* o : op->operands)
          if (has(o) && !home_[o].is_shared() && (!best || priority(home_[o]) > priority(*best))) best = &home_[o];
        if (best) in = *best;
        else if (op->operand(0)->type.is_block()) in = default_for(op->operand(0));
        home_[op->result()] = join_layout(in);
        return;
      }
      case OpKind::Split: {
        // Triton's split: register-level when the operand holds its minor dim in a register bit;
        // otherwise the halves take their default layout and the operand is converted to its join.
        const ir::Value* x = op->operand(0);
        Layout in = has(x) && !home_[x].is_shared() ? home_[x] : default_for(x);
        std::optional<Layout> half = split_layout(in);
        Layout h = half ? *half : x->type.rank() == 1 ? scalar_layout(nw_) : default_for(op->results[0]);
        operand_in_[op] = half ? in : join_layout(h);
        for (ir::Value* r : op->results)
          if (r->type.is_block()) home_[r] = h;
        return;
      }
      case OpKind::Gather: {
        // The result is read at the index's elements: it takes the index's layout (Triton's rule);
        // the source stays in its own (lowering/data_movement.cpp reads it through a warp's
        // shuffles or through shared memory).
        const ir::Value* idx = op->operand(1);
        home_[op->result()] = has(idx) && !home_[idx].is_shared() ? home_[idx] : default_for(idx);
        return;
      }
      case OpKind::Histogram: {
        // Counted where the input lies (its mask beside it); the counts in the default layout.
        const ir::Value* x = op->operand(0);
        operand_in_[op] = has(x) && !home_[x].is_shared() ? home_[x] : default_for(x);
        home_[op->result()] = default_for(op->result());
        return;
      }
      default: break;
    }
    if (is_atomic(op->kind)) {
      if (op->operand(0)->type.is_block()) {
        // Element by element: any blocked layout an operand already has is as good as another.
        access_[op] = coalesced(op, false);
        for (const ir::Value* o : op->operands)
          if (has(o) && home_[o].kind == LayoutKind::Blocked) {
            access_[op] = home_[o];
            break;
          }
        home_[op->result()] = access_[op];
      }
      return;
    }
    if (!block) return;
    if (ir::is_elementwise(op->kind)) {
      const Layout* best = nullptr;
      for (const ir::Value* o : op->operands)
        if (has(o) && !home_[o].is_shared() && (!best || priority(home_[o]) > priority(*best))) best = &home_[o];
      if (best) home_[op->result()] = *best;
      else home_.erase(op->result());
      return;
    }
    if (is_view(op->kind)) {
      const ir::Value* x = op->operand(0);
      if (!has(x) || home_[x].is_shared()) {
        home_.erase(op->result());
        return;
      }
      home_[op->result()] = view_layout(op, home_[x]);
    }
  }

  // The layout of a view op's result given its operand's.
  static Layout view_layout(const ir::Op* op, const Layout& in) {
    const ir::Type& t = op->result()->type;
    switch (op->kind) {
      case OpKind::Broadcast: {
        // The operand's bits, and the stretched dims' bits on the registers past them.
        Layout l = in;
        l.shape = t.shape;
        l.kind = LayoutKind::Linear;
        for (size_t d = 0; d < t.shape.size(); ++d) {
          if (in.shape[d] != 1 || t.shape[d] == 1) continue;
          int64_t n = t.shape[d];
          for (int b = 0; (int64_t{1} << b) < n; ++b) l.reg.push_back({static_cast<int>(d), b});
        }
        l.name = "linear<" + l.bits_str() + ">";
        return l;
      }
      case OpKind::ExpandDims: return expand_dims_layout(in, op->attrs.axis);
      case OpKind::Permute: return permute_layout(in, op->attrs.ints);
      case OpKind::Reshape: return reshape_layout(in, t.shape);
      default: return in;
    }
  }

  void forward_for(ir::Op* op) {
    ir::Block* body = op->regions[0];
    const size_t n = op->operands.size() - 3;
    std::vector<bool> from_yield(n, false);
    for (size_t i = 0; i < n; ++i) {
      const ir::Value* init = op->operand(3 + i);
      ir::Value* arg = body->args[i + 1];
      if (has(init) && !home_[init].is_shared()) home_[arg] = home_[init];
      else home_.erase(arg);
    }
    for (int round = 0; round < 4; ++round) {
      forward(body);
      const ir::Op* yield = body->ops.back();
      bool changed = false;
      for (size_t i = 0; i < n; ++i) {
        const ir::Value* y = yield->operand(i);
        ir::Value* arg = body->args[i + 1];
        if (!y->type.is_block() || !has(y) || home_[y].is_shared()) continue;
        if (!has(arg) || (!(home_[arg] == home_[y]) && !from_yield[i])) {
          home_[arg] = home_[y];
          from_yield[i] = true;
          changed = true;
        }
      }
      if (!changed) break;
    }
    // Carried blocks no anchor reaches (pointers advanced each trip, index blocks): the layout
    // their first use in the body needs. Carried pointer blocks take it even when their initial
    // value has a layout (fused_moe's A rows, from the gathered token ids): the init is then
    // converted once before the loop instead of the pointers at every trip (Triton's
    // RemoveLayoutConversions moves such a conversion out of the loop too), and a load whose
    // pointer is not a conversion can be issued ahead (lowering/control_flow.cpp).
    bool any = false;
    for (size_t i = 0; i < n; ++i) {
      ir::Value* arg = body->args[i + 1];
      if (!arg->type.is_block()) continue;
      if (has(arg)) {
        if (!arg->type.is_ptr()) continue;
        std::optional<Layout> l = memory_use_layout(arg, 0);
        if (!l || *l == home_[arg]) continue;
        home_[arg] = *l;
        any = true;
        continue;
      }
      home_[arg] = layout_from_uses(arg, 0);
      any = true;
    }
    if (any) forward(body);
    for (size_t i = 0; i < n; ++i)
      if (op->results[i]->type.is_block()) home_[op->results[i]] = home_[body->args[i + 1]];
  }

  // The layout of the first load or store that `v` (a pointer block) addresses, through hints and
  // pointer arithmetic of its shape; nothing when none is found.
  std::optional<Layout> memory_use_layout(const ir::Value* v, int depth) {
    auto it = uses_.find(v);
    if (it == uses_.end() || depth >= 8) return std::nullopt;
    for (const Use& u : it->second) {
      if ((u.op->kind == OpKind::Load || u.op->kind == OpKind::Store || is_atomic(u.op->kind)) && u.idx == 0) {
        if (u.op->kind == OpKind::Load && has(u.op->result())) return home_[u.op->result()];
        if (access_.count(u.op)) return access_[u.op];
      }
      const bool hint = u.op->kind == OpKind::MultipleOf || u.op->kind == OpKind::MaxContiguous;
      if ((hint || u.op->kind == OpKind::AddPtr) && !u.op->results.empty() && u.op->result()->type.shape == v->type.shape)
        if (auto l = memory_use_layout(u.op->result(), depth + 1)) return l;
    }
    return std::nullopt;
  }

  Layout layout_from_uses(const ir::Value* v, int depth) {
    auto it = uses_.find(v);
    if (it != uses_.end() && depth < 8) {
      for (const Use& u : it->second) {
        if ((u.op->kind == OpKind::Load || u.op->kind == OpKind::Store || is_atomic(u.op->kind)) && u.idx == 0) {
          if (u.op->kind == OpKind::Load && has(u.op->result())) return home_[u.op->result()];
          if (access_.count(u.op)) return access_[u.op];
        }
        // Hints are the value itself (tutorial 08's `a_ptrs = tl::multiple_of(a_ptrs, ...)` before
        // its load): the layout their uses need, or a pointer block would be converted every trip.
        const bool hint = u.op->kind == OpKind::MultipleOf || u.op->kind == OpKind::MaxContiguous;
        if ((ir::is_elementwise(u.op->kind) || hint) && !u.op->results.empty()) {
          if (has(u.op->result()) && !home_[u.op->result()].is_shared()) return home_[u.op->result()];
          if (u.op->result()->type.shape == v->type.shape) {
            Layout l = layout_from_uses(u.op->result(), depth + 1);
            return l;
          }
        }
      }
    }
    return default_for(v);
  }

  // ---- phase 2: requirements, backwards -----------------------------------------------------

  void require(ir::Op* op, size_t idx, const Layout& l) {
    ir::Value* v = op->operands[idx];
    if (!v->type.is_block()) return;
    auto& list = reqs_[v];
    for (auto& [lay, uses] : list)
      if (lay == l) {
        uses.push_back({op, idx});
        return;
      }
    list.push_back({l, {{op, idx}}});
  }

  void backward(ir::Block* b) {
    for (size_t i = b->ops.size(); i-- > 0;) {
      ir::Op* op = b->ops[i];
      for (ir::Value* r : op->results) resolve(r);
      for (size_t r = op->regions.size(); r-- > 0;) {
        backward(op->regions[r]);
        for (ir::Value* a : op->regions[r]->args) resolve(a);
      }
      requirements(op);
    }
  }

  // A value that is cheap to compute again in another layout: constants, splats, aranges, index
  // arithmetic over them, views (whose conversion is better done on the viewed value), and
  // elementwise ops over such values - the forward pass gives `-broadcast(m)` the broadcast's
  // register-replicated layout, and converting the [M, N] result through shared memory costs far
  // more than negating it again in the layout its use needs, where the conversion (if any) lands
  // on the [M] vector (Triton's backward rematerialisation in RemoveLayoutConversions). An
  // elementwise op over a load, a dot or a carried value keeps one layout and is converted.
  bool remat(const ir::Value* v, int depth = 0) const {
    if (!v->def || v->type.is_scalar()) return false;
    OpKind k = v->def->kind;
    if (is_source(k) || is_view(k)) return true;
    if (!ir::is_elementwise(k)) return false;
    if (!has(v) || loop_index_math(v, 0)) return true;
    if (depth >= 8) return false;
    for (const ir::Value* o : v->def->operands)
      if (o->type.is_block() && !remat(o, depth + 1)) return false;
    return true;
  }

  // An elementwise value of a loop body made only from values recomputed anyway (sources, views,
  // index arithmetic), scalars and blocks from before the loop - fused_moe's A mask, its token
  // rows' mask (from before the loop) and the K bound of the trip: recomputing it in each layout
  // its uses need puts the conversions on the values from before the loop, outside the loop, where
  // converting it would cost a trip through shared memory every trip (and a pipelined load whose
  // mask is a conversion cannot be issued ahead).
  bool loop_index_math(const ir::Value* v, int depth) const {
    const ir::Op* d = v->def;
    if (!d || depth > 6 || !d->parent || !d->parent->parent || d->parent->parent->kind != OpKind::For) return false;
    if (!ir::is_elementwise(d->kind)) return false;
    for (const ir::Value* o : d->operands) {
      if (o->type.is_scalar()) continue;
      if (o->is_block_arg()) {
        if (o->owner == d->parent) return false;  // carried: changes every trip
        continue;
      }
      if (o->def->parent != d->parent) continue;  // from before the loop: converted there
      OpKind k = o->def->kind;
      if (is_source(k) || is_view(k)) continue;
      if (!ir::is_elementwise(k) || !loop_index_math(o, depth + 1)) return false;
    }
    return true;
  }

  void resolve(ir::Value* v) {
    if (!v->type.is_block()) return;
    std::vector<std::pair<Layout, std::vector<Use>>> list;
    if (auto it = reqs_.find(v); it != reqs_.end()) list = std::move(it->second), reqs_.erase(it);
    if (!remat(v)) {
      if (!has(v)) home_[v] = default_for(v);
      const Layout& h = home_[v];
      // A load with fewer elements than threads is cheap to load in the layout its uses need
      // (Triton's isExpensiveLoadOrStore).
      if (v->def && v->def->kind == OpKind::Load && list.size() == 1 && !list[0].first.is_shared() &&
          numel(v->type.shape) < threads()) {
        home_[v] = list[0].first;
        return;
      }
      for (auto& [l, uses] : list) {
        if (l == h) continue;
        ir::Value* c = insert_convert(v, l, uses);
        for (const Use& u : uses) f_.set_operand(u.op, u.idx, c);
      }
      return;
    }
    // Recomputed per layout: the first distributed layout keeps the op, the others get clones;
    // shared-memory tiles are converted from the first (except views of a tile).
    const bool shared_view = is_shared_view(v->def->kind);
    std::vector<std::pair<Layout, std::vector<Use>>> own, shared;
    for (auto& entry : list) (entry.first.is_shared() && !shared_view ? shared : own).push_back(std::move(entry));
    if (own.empty()) own.push_back({has(v) && !home_[v].is_shared() ? home_[v] : default_for(v), {}});
    // Loop index math with a layout of its own keeps it (any use that states no requirement reads
    // it there); the uses that need others get clones.
    if (has(v) && !home_[v].is_shared() && ir::is_elementwise(v->def->kind) && !(own[0].first == home_[v])) {
      auto it = std::find_if(own.begin(), own.end(), [&](const auto& e) { return e.first == home_[v]; });
      if (it != own.end()) std::rotate(own.begin(), it, it + 1);
      else own.insert(own.begin(), {home_[v], {}});
    }
    for (size_t j = 0; j < own.size(); ++j) {
      ir::Value* x = j == 0 ? v : clone(v);
      home_[x] = own[j].first;
      for (const Use& u : own[j].second) f_.set_operand(u.op, u.idx, x);
      requirements(x->def);
    }
    for (auto& [l, uses] : shared) {
      ir::Value* c = insert_convert(v, l, uses);
      for (const Use& u : uses) f_.set_operand(u.op, u.idx, c);
    }
  }

  // Inserts `op` after `anchor` in `block` (at its start when anchor is null).
  static void insert_after(ir::Block* block, const ir::Op* anchor, ir::Op* op) {
    op->parent = block;
    auto pos = block->ops.begin();
    if (anchor) pos = std::find(block->ops.begin(), block->ops.end(), anchor) + 1;
    block->ops.insert(pos, op);
  }

  // Where a conversion of `v` for `uses` goes: into the branch that holds every one of them, if
  // there is one (a fused loop nest's epilogue converts its tile there, not every trip), else
  // right after `v`. Never into a loop body, where it would run every trip.
  static ir::Block* convert_block(const ir::Value* v, const std::vector<Use>& uses) {
    ir::Block* home = v->def ? v->def->parent : v->owner;
    auto chain = [](ir::Block* b) {
      std::vector<ir::Block*> c;
      for (; b; b = b->parent ? b->parent->parent : nullptr) c.push_back(b);
      std::reverse(c.begin(), c.end());
      return c;
    };
    if (uses.empty()) return home;
    std::vector<ir::Block*> common = chain(uses[0].op->parent);
    for (const Use& u : uses) {
      std::vector<ir::Block*> c = chain(u.op->parent);
      size_t n = 0;
      while (n < common.size() && n < c.size() && common[n] == c[n]) ++n;
      common.resize(n);
    }
    if (common.empty()) return home;
    for (ir::Block* b = common.back(); b != home; b = b->parent->parent)
      if (!b->parent || b->parent->kind != OpKind::If || !b->parent->parent) return home;
    return common.back();
  }

  ir::Value* insert_convert(ir::Value* v, const Layout& l, const std::vector<Use>& uses = {}) {
    ir::Op* op = f_.new_op(OpKind::ConvertLayout, v->def ? v->def->loc : SourceLoc{});
    f_.set_operands(op, {v});
    ir::Value* r = f_.add_result(op, v->type);
    ir::Block* home = v->def ? v->def->parent : v->owner;
    ir::Block* into = convert_block(v, uses);
    if (into != home) insert_after(into, nullptr, op);
    else if (v->def) insert_after(v->def->parent, v->def, op);
    else insert_after(v->owner, nullptr, op);
    home_[r] = l;
    return r;
  }

  ir::Value* clone(const ir::Value* v) {
    const ir::Op* src = v->def;
    ir::Op* op = f_.new_op(src->kind, src->loc);
    f_.set_operands(op, src->operands.vec());
    op->attrs = src->attrs;
    ir::Value* r = f_.add_result(op, v->type);
    insert_after(src->parent, src, op);
    for (size_t i = 0; i < op->operands.size(); ++i) uses_[op->operands[i]].push_back({op, i});
    return r;
  }

  // What `op` needs of its block operands, given its result's layout.
  void requirements(ir::Op* op) {
    switch (op->kind) {
      case OpKind::Load:
        if (op->result()->type.is_block())
          for (size_t i = 0; i < op->operands.size(); ++i) require(op, i, home_[op->result()]);
        return;
      case OpKind::Store:
        if (access_.count(op))
          for (size_t i = 0; i < op->operands.size(); ++i) require(op, i, access_[op]);
        return;
      case OpKind::Dot: {
        const Layout& acc = home_[op->result()];
        require(op, 2, acc);
        require(op, 0, dot_operand(op, 0, acc));
        require(op, 1, dot_operand(op, 1, acc));
        return;
      }
      case OpKind::Reduce:
      case OpKind::Scan:
      case OpKind::Split:
      case OpKind::Histogram:
        for (size_t i = 0; i < op->operands.size(); ++i) require(op, i, operand_in_[op]);
        return;
      case OpKind::Join:  // both operands in the result's layout less its minor register bit
        for (size_t i = 0; i < 2; ++i) require(op, i, *split_layout(home_[op->result()]));
        return;
      case OpKind::Gather:  // the index in the result's layout; the source anywhere
        require(op, 1, home_[op->result()]);
        return;
      case OpKind::For: {
        ir::Block* body = op->regions[0];
        for (size_t i = 3; i < op->operands.size(); ++i)
          if (op->operands[i]->type.is_block()) require(op, i, home_[body->args[i - 2]]);
        return;
      }
      case OpKind::Assert:  // payloads are read at the condition's registers (lowering/debug.cpp)
        if (op->operand(0)->type.is_block() && has(op->operand(0)))
          for (size_t i = 1; i < op->operands.size(); ++i)
            if (op->operands[i]->type.is_block()) require(op, i, home_[op->operand(0)]);
        return;
      case OpKind::Yield: {
        const ir::Op* parent = op->parent->parent;
        if (!parent) return;
        for (size_t i = 0; i < op->operands.size(); ++i) {
          if (!op->operands[i]->type.is_block()) continue;
          if (parent->kind == OpKind::For) require(op, i, home_[parent->regions[0]->args[i + 1]]);
          else if (parent->kind == OpKind::If) require(op, i, home_[parent->results[i]]);
        }
        return;
      }
      default: break;
    }
    if (is_atomic(op->kind)) {
      if (access_.count(op))
        for (size_t i = 0; i < op->operands.size(); ++i) require(op, i, access_[op]);
      return;
    }
    if (op->results.empty() || !op->result()->type.is_block()) return;
    const Layout& l = home_[op->result()];
    if (ir::is_elementwise(op->kind)) {
      for (size_t i = 0; i < op->operands.size(); ++i) require(op, i, l);
      return;
    }
    if (!is_view(op->kind)) return;
    const ir::Shape& in = op->operand(0)->type.shape;
    switch (op->kind) {
      case OpKind::Broadcast:
        if (op->operand(0)->type.is_block()) require(op, 0, broadcast_source_layout(l, in));
        return;
      case OpKind::ExpandDims:
        if (op->operand(0)->type.is_block()) require(op, 0, squeeze_layout(l, op->attrs.axis));
        return;
      case OpKind::Permute: require(op, 0, permute_source_layout(l, op->attrs.ints)); return;
      case OpKind::Reshape: require(op, 0, reshape_layout(l, in)); return;
      case OpKind::MultipleOf:
      case OpKind::MaxContiguous: require(op, 0, l); return;
      default: return;
    }
  }

  // The dim along which a value's elements are contiguous in memory (for its shared tile).
  int contiguous_dim(const ir::Value* v, int depth = 0) {
    const int rank = v->type.rank();
    if (v->def && depth < 16) {
      const ir::Op* d = v->def;
      if (d->kind == OpKind::Permute) {
        int c = contiguous_dim(d->operand(0), depth + 1);
        for (int i = 0; i < rank; ++i)
          if (d->attrs.ints[static_cast<size_t>(i)] == c) return i;
      }
      if (d->kind == OpKind::MultipleOf || d->kind == OpKind::MaxContiguous || d->kind == OpKind::ConvertLayout ||
          (ir::is_elementwise(d->kind) && d->operand(0)->type.shape == v->type.shape))
        if (d->kind != OpKind::Load) return contiguous_dim(d->operand(0), depth + 1);
    }
    if (has(v) && home_[v].kind == LayoutKind::Blocked) return home_[v].order[0];
    return rank - 1;
  }

  // Whether a dot operand is computed in registers (attention's P) rather than loaded.
  bool register_computed(const ir::Value* v) const {
    for (int depth = 0; depth < 16; ++depth) {
      if (!v->def) return false;  // a loop-carried tile: like a loaded one
      OpKind k = v->def->kind;
      if (k == OpKind::Load) return false;
      if (!is_view(k) && k != OpKind::ConvertLayout) return true;
      v = v->def->operand(0);
    }
    return true;
  }

  Layout dot_operand(const ir::Op* dot, int idx, const Layout& acc) {
    const ir::Value* x = dot->operand(static_cast<size_t>(idx));
    const DType in = x->type.dtype;
    const int64_t K = dot->operand(0)->type.shape[1];
    if (acc.kind != LayoutKind::Mma) {
      // The FMA dot reads its tiles by 16-byte vectors along their contiguous dim (as the memory
      // lies: copied straight in), rows XOR-swizzled so that the lanes' reads of consecutive rows
      // hit distinct banks (fma_dot_layout).
      const int cd = contiguous_dim(x);
      return shared_layout(x->type.shape, {cd, 1 - cd},
                           swizzle_for_row_bytes(x->type.shape[static_cast<size_t>(cd)] * dtype_bytes(in)));
    }
    const bool tf32 = in == DType::f32, byte = is_byte(in);
    if (idx == 0 && register_computed(x) && !(tf32 && acc.mma.version == 3))
      return dot_operand_layout(acc, 0, K, tf32 ? 1 : byte ? 4 : 2, nw_);
    // Tiles lie as their memory does (so loads copy them straight in, 16 bytes a thread), except
    // where wgmma cannot read them that way: it reads MN-major tiles (the transpose bits) of
    // 16-bit types only, in swizzle atoms of 32 to 128 bytes along M or N that start each unit's
    // part of the tile (64 rows of A; WTN columns of B) - so tf32 and 8-bit tiles, and MN-major B
    // narrower than 32 bytes a unit, are K-major (written through registers, transposed).
    int cd = contiguous_dim(x);
    int64_t row_bytes = x->type.shape[static_cast<size_t>(cd)] * dtype_bytes(in);
    if (acc.mma.version == 3) {
      const int kd = idx == 0 ? 1 : 0, mnd = 1 - kd;
      const int64_t unit = idx == 0 ? acc.shape[0] / acc.mma.wm : acc.shape[1] / acc.mma.wn;
      const int64_t unit_bytes = unit * dtype_bytes(in);
      if (cd == mnd && is_half(in) && unit_bytes >= 32) {
        row_bytes = std::min(row_bytes, unit_bytes);
      } else {
        cd = kd;
        row_bytes = K * dtype_bytes(in);
      }
    }
    std::vector<int> order = {cd, 1 - cd};
    return shared_layout(x->type.shape, order, swizzle_for_row_bytes(row_bytes));
  }
};

}  // namespace

const Layout& LayoutMap::of(const ir::Value* v) const {
  auto it = layouts_.find(v);
  if (it == layouts_.end()) fail("internal error: block value %{} has no layout", v->id);
  return it->second;
}

std::string LayoutMap::annotated(ir::Function& f) const {
  return ir::print(f, [&](const ir::Value* v) -> std::string {
    auto it = layouts_.find(v);
    return it == layouts_.end() || !v->type.is_block() ? "" : "#" + it->second.str();
  });
}

std::optional<MmaParams> dot_mma_params(const ir::Op* dot, int num_warps, int cc, bool chained) {
  const ir::Type& rt = dot->result()->type;
  const DType in = dot->operand(0)->type.dtype;
  const bool tf32 = is_tf32(dot), byte = is_byte(in);
  const DType acc = is_int(in) ? DType::i32 : DType::f32;
  if (cc < 80 || rt.rank() != 2 || rt.dtype != acc || !(is_half(in) || tf32 || byte)) return std::nullopt;
  const int64_t M = rt.shape[0], N = rt.shape[1], K = dot->operand(0)->type.shape[1];
  const int64_t kstep = tf32 ? 8 : byte ? 32 : 16;
  if (M % 16 || N % 16 || K % kstep) return std::nullopt;
  // wgmma: warpgroups along M first (each 64 rows), then N (at most 256 columns an instruction).
  if (cc == 90 && num_warps % 4 == 0 && dot->attrs.str != "tf32x3" && M % 64 == 0) {
    const int groups = num_warps / 4;
    for (int wm = static_cast<int>(std::min<int64_t>(groups, M / 64)); wm >= 1; --wm) {
      if (groups % wm) continue;
      const int wn = groups / wm;
      if (N % (wn * 8) || N / wn > 256 || N / wn < 8) continue;
      return MmaParams{3, wm, wn};
    }
  }
  if (byte) return std::nullopt;  // 8-bit operands on wgmma only (no mma.sync emitter for them)
  // mma.sync: warps along M for a chained dot (its result is the next dot's A fragment), else the
  // tiling that loads the fewest fragments per k step; warps past the shape replicate.
  std::optional<MmaParams> best;
  int64_t best_cost = 0;
  for (int units = num_warps; units >= 1 && !best; units /= 2) {
    for (int wm = 1; wm <= units; wm *= 2) {
      const int wn = units / wm;
      if (M % (wm * 16) || N % (wn * 16)) continue;
      const int64_t mt = M / wm / 16, nt = N / wn / 8;
      const int64_t cost = chained ? (wn == 1 ? 0 : 1000) + mt : mt + nt / 2;
      if (!best || cost < best_cost) best = MmaParams{2, wm, wn}, best_cost = cost;
    }
  }
  return best;
}

LayoutMap assign_layouts(ir::Function& f, const AxisInfoMap& axis, const LayoutOptions& opts) {
  LayoutMap map = Assigner(f, axis, opts).run();
  f.walk([&](ir::Op* op) {
    // A tensor-core accumulator lives in registers (the instructions read and write it there); an
    // FMA dot's result is an ordinary register array, which the compiler may spill.
    if (op->kind != OpKind::Dot || !map.has(op->result()) || map.of(op->result()).kind != LayoutKind::Mma) return;
    const ir::Type& t = op->result()->type;
    const int64_t words = int64_t{map.of(op->result()).num_regs()} * std::max(1, dtype_bytes(t.dtype) / 4);
    if (words > 255)
      fail("{}: tl::dot's [{}, {}] result needs {} registers a thread on {} warps, more than a GPU thread has "
           "(255); use smaller blocks or more warps",
           op->loc.str(), t.shape[0], t.shape[1], words, opts.num_warps);
  });
  return map;
}

void verify_layouts(ir::Function& f, const LayoutMap& layouts) {
  auto check = [&](const ir::Op* op, bool ok, const std::string& what) {
    if (!ok) fail("internal error: layouts of {} at {}: {}\n{}", ir::op_name(op->kind), op->loc.str(), what,
                  layouts.annotated(f));
  };
  f.walk([&](ir::Op* op) {
    for (const ir::Value* r : op->results)
      if (r->type.is_block()) check(op, layouts.has(r), "a result without a layout");
    for (const ir::Value* o : op->operands)
      if (o->type.is_block()) check(op, layouts.has(o), "an operand without a layout");
    if (op->results.empty() || !op->result()->type.is_block()) return;
    const Layout& l = layouts.of(op->result());
    if (ir::is_elementwise(op->kind)) {
      for (const ir::Value* o : op->operands)
        if (o->type.is_block()) check(op, layouts.of(o) == l, "operands and result in different layouts");
    } else if (op->kind == OpKind::Dot) {
      check(op, layouts.of(op->operand(2)) == l, "the accumulator is not in the result's layout");
    } else if (op->kind == OpKind::Broadcast && op->operand(0)->type.is_block()) {
      check(op, layouts.of(op->operand(0)) == broadcast_source_layout(l, op->operand(0)->type.shape),
            "the operand is not the result's broadcast source");
    } else if (op->kind == OpKind::ExpandDims && op->operand(0)->type.is_block()) {
      check(op, layouts.of(op->operand(0)) == squeeze_layout(l, op->attrs.axis), "operand layout");
    } else if (op->kind == OpKind::Permute) {
      check(op, layouts.of(op->operand(0)) == permute_source_layout(l, op->attrs.ints), "operand layout");
    } else if (op->kind == OpKind::Join) {
      for (const ir::Value* o : op->operands)
        if (o->type.is_block()) check(op, split_layout(l) && layouts.of(o) == *split_layout(l), "operand layout");
    } else if (op->kind == OpKind::Gather) {
      check(op, layouts.of(op->operand(1)) == l, "the index is not in the result's layout");
    } else if (op->kind == OpKind::Histogram && op->operands.size() > 1) {
      check(op, layouts.of(op->operand(1)) == layouts.of(op->operand(0)), "the mask is not in the input's layout");
    }
    if (op->kind == OpKind::Split && op->operand(0)->type.is_block()) {
      auto half = split_layout(layouts.of(op->operand(0)));
      for (const ir::Value* r : op->results)
        if (r->type.is_block()) check(op, half && layouts.of(r) == *half, "the halves are not the operand's split");
    }
  });
}

}  // namespace tritium::jit
