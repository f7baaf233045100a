// Reductions and scans over layouts. A reduction along `axis` combines, for each element of the
// result (the slice of the operand's layout), the thread's own registers along the axis first, then
// the lanes whose bits run along it (shuffles, lower lane first so any combine function gives the
// sequential order's result), then the warps along it (one pass through shared memory); every
// thread then holds the result for its slice elements, with no identity element needed. Scans are in
// scan.cpp.
#include "jit/cuda/lowering/lowering.h"

#include <map>

namespace tritium::jit::cuda::lowering {

std::vector<std::string> Lowering::combine(const ir::Block* region, const std::vector<std::string>& lhs,
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

namespace {

// Whether the combine region is one op whose operands may be swapped with the same bits: the
// lane step then combines its own value with its partner's in either order (Triton's shuffle
// reduction), without the two selects that put the lower lane first. f32 add and mul are exactly
// commutative; float max / min are not taken (the sign of a zero result may depend on the order).
bool swappable(const ir::Block* region) {
  if (region->args.size() != 2 || region->ops.size() != 2) return false;
  const ir::Op* op = region->ops[0];
  const ir::Op* yield = region->ops[1];
  if (yield->kind != OpKind::Yield || yield->operands.size() != 1 || yield->operand(0) != op->result()) return false;
  if (op->operands.size() != 2) return false;
  const bool args = (op->operand(0) == region->args[0] && op->operand(1) == region->args[1]) ||
                    (op->operand(0) == region->args[1] && op->operand(1) == region->args[0]);
  if (!args) return false;
  const DType t = op->result()->type.dtype;
  switch (op->kind) {
    case OpKind::Add: case OpKind::Mul: return true;
    case OpKind::Max: case OpKind::Min: case OpKind::And: case OpKind::Or: case OpKind::Xor: return is_int(t);
    default: return false;
  }
}

}  // namespace

void Lowering::emit_reduce(const ir::Op* op) {
  const int axis = op->attrs.axis;
  const size_t n = op->operands.size();
  const Layout& in = layout(op->operand(0));
  const Layout out = slice_layout(in, axis);
  const ir::Block* region = op->regions[0];
  std::vector<const Val*> xs;
  std::vector<std::string> types;
  for (size_t i = 0; i < n; ++i) {
    xs.push_back(&val(op->operand(i)));
    types.push_back(ctype(op->operand(i)->type.element()));
  }
  // 1. In the thread: the registers of each result element, in order along the axis.
  std::map<std::vector<int64_t>, int> result_reg;
  for (int s = 0; s < out.num_regs(); ++s) result_reg[out.reg_coords(s)] = s;
  std::vector<std::vector<int>> groups(static_cast<size_t>(out.num_regs()));
  for (int r = 0; r < in.num_regs(); ++r) {
    std::vector<int64_t> c = in.reg_coords(r);
    c.erase(c.begin() + axis);
    groups[static_cast<size_t>(result_reg.at(c))].push_back(r);
  }
  for (auto& g : groups)
    std::stable_sort(g.begin(), g.end(), [&](int a, int b) {
      return in.reg_coords(a)[static_cast<size_t>(axis)] < in.reg_coords(b)[static_cast<size_t>(axis)];
    });
  std::vector<std::string> acc(n);
  for (size_t i = 0; i < n; ++i) {
    acc[i] = fresh("acc");
    line(fmt::format("{} {}[{}];", types[i], acc[i], out.num_regs()));
  }
  for (int s = 0; s < out.num_regs(); ++s) {
    const auto& g = groups[static_cast<size_t>(s)];
    std::vector<std::string> a;
    for (size_t i = 0; i < n; ++i) a.push_back(xs[i]->at(g[0]));
    for (size_t k = 1; k < g.size(); ++k) {
      std::vector<std::string> b;
      for (size_t i = 0; i < n; ++i) b.push_back(xs[i]->at(g[k]));
      a = combine(region, a, b);
    }
    for (size_t i = 0; i < n; ++i) line(fmt::format("{}[{}] = {};", acc[i], s, a[i]));
  }
  // 2. Across the lanes along the axis, lower lane first (either order for a swappable combine).
  const bool swap_free = n == 1 && swappable(region);
  for (size_t bit = 0; bit < in.lane.size(); ++bit) {
    if (in.lane[bit].dim != axis) continue;
    const int m = 1 << bit;
    for (int s = 0; s < out.num_regs(); ++s) {
      std::vector<std::string> lo, hi;
      open("");
      for (size_t i = 0; i < n; ++i) {
        std::string mine = fmt::format("{}[{}]", acc[i], s);
        std::string other = tmp(types[i], fmt::format("tt_shfl_xor({}, {})", mine, m));
        if (swap_free) {
          lo.push_back(mine);
          hi.push_back(other);
          continue;
        }
        lo.push_back(tmp(types[i], fmt::format("(tt_lane & {}) ? {} : {}", m, other, mine)));
        hi.push_back(tmp(types[i], fmt::format("(tt_lane & {}) ? {} : {}", m, mine, other)));
      }
      std::vector<std::string> c = combine(region, lo, hi);
      for (size_t i = 0; i < n; ++i) line(fmt::format("{}[{}] = {};", acc[i], s, c[i]));
      close();
    }
  }
  // 3. Across the warps along the axis, through shared memory, in warp order.
  std::vector<int> warp_bits;
  for (size_t bit = 0; bit < in.warp.size(); ++bit)
    if (in.warp[bit].dim == axis) warp_bits.push_back(static_cast<int>(bit));
  if (!warp_bits.empty()) {
    const int K = 1 << warp_bits.size();
    // Slot of a result element: its flat coordinate over the result shape; the warp's index along
    // the axis: its axis bits, in order of the coordinate bits they set.
    std::sort(warp_bits.begin(), warp_bits.end(),
              [&](int a, int b) { return in.warp[static_cast<size_t>(a)].bit < in.warp[static_cast<size_t>(b)].bit; });
    std::string k = "0";
    for (size_t j = 0; j < warp_bits.size(); ++j)
      k = fmt::format("{} | (((tt_warp >> {}) & 1) << {})", k, warp_bits[j], j);
    const ir::Shape& os = out.shape;
    const int64_t elems = numel(os);
    auto flat = [&](int s) {
      std::string e = "0";
      for (size_t d = 0; d < os.size(); ++d) e = fmt::format("({}) * {} + {}", e, os[d], coord(out, s, static_cast<int>(d)));
      return e;
    };
    std::vector<int64_t> offs;
    for (size_t i = 0; i < n; ++i) offs.push_back(alloc_smem(K * elems * std::max(4, dtype_bytes(op->operand(i)->type.dtype)), 16));
    sync();
    std::string kk = tmp("int", k);
    // The lanes (and warps off the axis) holding copies leave the write to the first copy.
    Layout writers = out;
    for (int b : warp_bits) writers.warp[static_cast<size_t>(b)] = LayoutBit{};
    const std::string own = owner(writers);
    std::string own_nonaxis = own;
    {  // warps along the axis all write (their partials differ)
      int lm = out.lane_replication(), wm = 0;
      for (size_t b = 0; b < in.warp.size(); ++b)
        if (in.warp[b].none()) wm |= 1 << b;
      std::vector<std::string> conds;
      if (lm) conds.push_back(fmt::format("(tt_lane & {}) == 0", lm));
      if (wm) conds.push_back(fmt::format("(tt_warp & {}) == 0", wm));
      own_nonaxis = conds.empty() ? "true" : fmt::format("({})", fmt::join(conds, " && "));
    }
    open(fmt::format("if ({})", own_nonaxis));
    for (int s = 0; s < out.num_regs(); ++s)
      for (size_t i = 0; i < n; ++i)
        line(fmt::format("reinterpret_cast<{}*>(tt_smem + {})[{} * {} + {}] = {}[{}];", types[i], offs[i], kk, elems,
                         flat(s), acc[i], s));
    close();
    touched();
    sync();
    for (int s = 0; s < out.num_regs(); ++s) {
      std::vector<std::string> a;
      for (size_t i = 0; i < n; ++i)
        a.push_back(tmp(types[i], fmt::format("reinterpret_cast<{}*>(tt_smem + {})[{}]", types[i], offs[i], flat(s))));
      for (int w = 1; w < K; ++w) {
        std::vector<std::string> b;
        for (size_t i = 0; i < n; ++i)
          b.push_back(tmp(types[i], fmt::format("reinterpret_cast<{}*>(tt_smem + {})[{} * {} + {}]", types[i], offs[i], w,
                                                elems, flat(s))));
        a = combine(region, a, b);
      }
      for (size_t i = 0; i < n; ++i) line(fmt::format("{}[{}] = {};", acc[i], s, a[i]));
    }
    touched();
    for (size_t i = n; i-- > 0;) free_smem(offs[i]);
  }
  // 4. The results.
  for (size_t i = 0; i < n; ++i) {
    const ir::Value* r = op->results[i];
    if (r->type.is_scalar()) {
      scalars_[r] = tmp(types[i], fmt::format("{}[0]", acc[i]));
      continue;
    }
    Val& v = vals_[r];
    v.kind = Val::Kind::Regs;
    v.name = acc[i];
    v.layout = &layout(r);
    if (v.layout->num_regs() != out.num_regs())
      fail("internal error: reduce result layout {} against {}", v.layout->str(), out.str());
  }
}

}  // namespace tritium::jit::cuda::lowering
