// Reductions in the element-loop generator: combine regions on scalars (also used by scans),
// accumulation with a "has a value" flag, warp shuffles, and emit_reduce's row and column paths
// (whole-block reductions: block_reduce.cpp; scans: element_scan.cpp). Rows owned by aligned lane
// groups of the register mapping reduce in registers and shuffles (emit_lane_group_reduce): vLLM's
// silu_mul_quant_fp8 took its [8, 128] tile's row absmax one warp a row over a shared-memory copy
// of the tile (5 barriers, the tile read back for the quantisation); Triton shuffles within the
// 16 lanes that own a row and keeps the tile in registers.
#include "jit/cuda/codegen_impl.h"

namespace tritium::jit::cuda::detail {

std::vector<std::string> Codegen::combine(const ir::Block* region, const std::vector<std::string>& lhs,
                                          const std::vector<std::string>& rhs) {
  std::unordered_map<const ir::Value*, std::string> local;
  for (size_t i = 0; i < lhs.size(); ++i) local[region->args[i]] = lhs[i];
  for (size_t i = 0; i < rhs.size(); ++i) local[region->args[lhs.size() + i]] = rhs[i];
  auto get = [&](const ir::Value* v) -> std::string {
    if (auto it = local.find(v); it != local.end()) return it->second;
    return scalar(v);
  };
  // A sum whose result's NaN bits no one sees rounds its partial sums without the fix-up too
  // (they reach nothing but more sums and the result).
  const ir::Op* owner = region->parent;
  bool unseen = owner && owner->kind == OpKind::Reduce;
  if (unseen)
    for (const ir::Value* r : owner->results) unseen = unseen && (!is_float(r->type.dtype) || nan_unseen(r));
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
      r = tmp(ctype(op->result()->type.element()), elementwise(op, xs, unseen));
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
  if (const int G = lane_group(op)) return emit_lane_group_reduce(op, types, outs, G);
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

int Codegen::lane_group(const ir::Op* op) {
  const Shape& s = op->operand(0)->type.shape;
  const int axis = op->attrs.axis;
  if (s.size() < 2 || axis != static_cast<int>(s.size()) - 1) return 0;
  const int V = mapped_width(s);
  const int64_t K = s.back(), step = int64_t(nt_) * V;
  if (K % V != 0) return 0;
  const int64_t G = K / V;
  // G | 32 keeps a row inside one warp and puts it at an aligned group; full steps keep every lane
  // active for the shuffles.
  if (G > 32 || (G & (G - 1)) != 0 || numel(s) % step != 0 || numel(s) / step > kMaxRowSteps) return 0;
  return static_cast<int>(G);
}

void Codegen::emit_lane_group_reduce(const ir::Op* op, const std::vector<std::string>& types, const std::vector<std::string>& outs,
                                     int G) {
  const Shape& s = op->operand(0)->type.shape;
  const int axis = op->attrs.axis;
  Shape outer = s;
  outer.erase(outer.begin() + axis);
  const ir::Block* region = op->regions[0];
  const size_t n = op->operands.size();
  const int V = mapped_width(s);
  const int64_t steps = numel(s) / (int64_t(nt_) * V);
  std::vector<const ir::Value*> roots(op->operands.begin(), op->operands.end());
  sync_if_reading(roots);
  // The output buffer, for readers outside this mapping. No barrier before it: the buffer is this
  // op's own, and a loop or if around it ends in a barrier when its body writes shared memory.
  ++shared_writes_;
  std::vector<std::string> rows;
  for (size_t i = 0; i < n; ++i) {
    rows.push_back(fresh("row"));
    line(fmt::format("{} {}[{}];  // the results of this thread's rows, one a step", types[i], rows.back(), steps));
  }
  mapped_width_[s] = V;  // lane_group's mapping: the loop nests over s are unrolled steps
  std::vector<std::string> acc;
  std::string have;
  const bool saved = replicate_ok_;
  replicate_ok_ = false;
  thread_loop(
      s, V,
      [&](const Index& base) {
        acc.clear();
        declare_accumulators(types, acc, have);
        emit_vector_loads(roots, base, V);
      },
      [&](const Index& idx) {
        std::vector<std::string> xs;
        for (ir::Value* x : op->operands) xs.push_back(eval(x, idx));
        accumulate(region, have, acc, xs);
      },
      [&](const Index& base) {
        for (int off = G / 2; off > 0; off /= 2) {
          std::vector<std::string> other;
          for (size_t i = 0; i < n; ++i) other.push_back(tmp(types[i], fmt::format("tt_shfl_xor({}, {})", acc[i], off)));
          std::vector<std::string> r = combine(region, acc, other);
          for (size_t i = 0; i < n; ++i) line(fmt::format("{} = {};", acc[i], r[i]));
        }
        for (size_t i = 0; i < n; ++i) line(fmt::format("{}[{}] = {};", rows[i], loop_.k, acc[i]));
        Index o(base);
        o.erase(o.begin() + axis);
        if (G > 1) open(fmt::format("if ((tid & {}) == 0)", G - 1));
        for (size_t i = 0; i < n; ++i) line(fmt::format("{}[{}] = {};", outs[i], flatten(o, outer), acc[i]));
        if (G > 1) close();
      });
  replicate_ok_ = saved;
  vec_loads_.clear();
  for (size_t i = 0; i < n; ++i)
    row_regs_[op->results[i]] = RowRegisters{rows[i], s, op->results[i]->type.rank() == static_cast<int>(s.size())};
  sync();
}

bool Codegen::from_row_results(const ir::Value* v) {
  std::function<bool(const ir::Value*, bool&)> walk = [&](const ir::Value* x, bool& any) {
    if (x->type.is_scalar()) return true;
    if (row_regs_.count(x)) return any = true;
    const ir::Op* d = x->def;
    // Views that keep each row's elements where they are evaluate inline as well.
    const bool view = d && (d->kind == OpKind::Broadcast || d->kind == OpKind::ExpandDims ||
                            (d->kind == OpKind::Reshape && !reshape_moves_elements(*d)));
    if (!d || (!view && !ir::is_elementwise(d->kind) && d->kind != OpKind::Splat && d->kind != OpKind::Constant)) return false;
    if (d->kind == OpKind::Load || is_atomic(d->kind)) return false;
    for (const ir::Value* o : d->operands)
      if (!walk(o, any)) return false;
    return true;
  };
  bool any = false;
  return !row_regs_.empty() && walk(v, any) && any;
}

std::string Codegen::row_register_at(const ir::Value* v, const Index& idx) {
  auto it = row_regs_.find(v);
  if (it == row_regs_.end() || !loop_.active || loop_.shape != it->second.shape) return "";
  const RowRegisters& rr = it->second;
  const size_t last = rr.shape.size() - 1;
  if (idx.size() != (rr.keep_dims ? rr.shape.size() : last)) return "";
  for (size_t d = 0; d < last; ++d)
    if (idx[d] != loop_.base[d]) return "";
  if (rr.keep_dims && idx[last] != "0") return "";
  return fmt::format("{}[{}]", rr.array, loop_.k);
}

}  // namespace tritium::jit::cuda::detail
