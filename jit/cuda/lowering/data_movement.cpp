// Data movement within a block over layouts (Triton's tt.join, tt.split, tt.gather, tt.histogram).
// Join and split move registers only: the layout pass puts the size-2 minor dim in a register bit
// (jit/layouts/layout.h, join_layout), so a join interleaves its operands' registers and a split
// takes every other one. A gather reads its source through index shuffles when every element an
// index may name lies in the index's own warp (Triton's warp-local gather), else through a
// row-major copy of the source in shared memory. A histogram counts with shared-memory atomics
// (one counter per bin, zeroed first), then every thread reads its bins back.
#include "jit/cuda/lowering/lowering.h"

#include <map>

namespace tritium::jit::cuda::lowering {

namespace {

// Register index of each register-part coordinate of `l`.
std::map<std::vector<int64_t>, int> registers_by_coords(const Layout& l) {
  std::map<std::vector<int64_t>, int> m;
  for (int r = 0; r < l.num_regs(); ++r) m[l.reg_coords(r)] = r;
  return m;
}

// A layout bit with the gather axis projected away.
LayoutBit off_axis(LayoutBit b, int axis) { return b.dim == axis ? LayoutBit{} : b; }

}  // namespace

void Lowering::emit_join(const ir::Op* op) {
  const ir::Value* r = op->result();
  const Layout& l = layout(r);
  const int last = l.rank() - 1;
  if (op->operand(0)->type.is_scalar()) {  // two scalars: a [2] every thread holds whole
    define_regs(r, [&](int i) { return scalar(op->operand(static_cast<size_t>(l.reg_coords(i)[0]))); });
    return;
  }
  const Val* in[2] = {&val(op->operand(0)), &val(op->operand(1))};
  const auto regs = registers_by_coords(layout(op->operand(0)));
  define_regs(r, [&](int i) {
    std::vector<int64_t> c = l.reg_coords(i);
    const int64_t j = c[static_cast<size_t>(last)];
    c.pop_back();
    return in[j]->at(regs.at(c));
  });
}

void Lowering::emit_split(const ir::Op* op) {
  const ir::Value* x = op->operand(0);
  const Layout& l = layout(x);
  const Val& in = val(x);
  const auto regs = registers_by_coords(l);
  for (size_t j = 0; j < 2; ++j) {
    const ir::Value* r = op->results[j];
    if (r->type.is_scalar()) {  // a [2] split into scalars: every thread holds both elements
      scalars_[r] = tmp(ctype(r->type), in.at(regs.at({static_cast<int64_t>(j)})));
      continue;
    }
    if (in.kind == Val::Kind::Uniform) {
      set_uniform(r, in.name);
      continue;
    }
    const Layout& h = layout(r);
    define_regs(r, [&](int i) {
      std::vector<int64_t> c = h.reg_coords(i);
      c.push_back(static_cast<int64_t>(j));
      return in.at(regs.at(c));
    });
  }
}

bool Lowering::warp_local_gather(const Layout& src, const Layout& index, int axis) const {
  if (src.lane.size() != index.lane.size() || src.warp.size() != index.warp.size()) return false;
  for (size_t i = 0; i < src.warp.size(); ++i)
    if (src.warp[i].dim == axis || off_axis(src.warp[i], axis) != off_axis(index.warp[i], axis)) return false;
  for (size_t i = 0; i < src.lane.size(); ++i)
    if (off_axis(src.lane[i], axis) != off_axis(index.lane[i], axis)) return false;
  return true;
}

void Lowering::emit_gather(const ir::Op* op) {
  const ir::Value* src = op->operand(0);
  const ir::Value* index = op->operand(1);
  const ir::Value* r = op->result();
  const int axis = op->attrs.axis;
  const ir::Shape& ss = src->type.shape;
  const int64_t n = ss[static_cast<size_t>(axis)];
  const Val& sv = val(src);
  if (sv.kind == Val::Kind::Uniform) return set_uniform(r, sv.name);  // every element the same
  if (sv.kind == Val::Kind::Tile) fail("internal error: gather from a shared-memory tile at {}", op->loc.str());
  const Val& iv = val(index);
  const Layout& sl = layout(src);
  const Layout& rl = layout(r);
  const std::string ct = ctype(r->type.element());
  // An index outside [0, n) wraps modulo n (a power of two), as on the CPU and in the element-loop
  // generator: a bad index never reads outside the source.
  auto wrapped = [&](int g) { return tmp("int", fmt::format("(int)({}) & {}", iv.at(g), n - 1)); };

  if (warp_local_gather(sl, rl, axis)) {
    // The element (column, k) is in the lane whose axis bits are k's and whose other bits are this
    // thread's, in the source register of that column whose axis bits are k's: one shuffle from
    // that lane per source register of the column, the right one selected.
    int axis_lanes = 0;
    for (size_t i = 0; i < sl.lane.size(); ++i)
      if (sl.lane[i].dim == axis) axis_lanes |= 1 << i;
    int64_t reg_axis_mask = 0;
    for (const LayoutBit& b : sl.reg)
      if (b.dim == axis) reg_axis_mask |= int64_t{1} << b.bit;
    line(fmt::format("// gather along dim {}: index shuffles within the warp", axis));
    Val& out = declare_regs(r);
    for (int g = 0; g < rl.num_regs(); ++g) {
      const std::string k = wrapped(g);
      std::string lane = fmt::format("(tt_lane & {})", ~axis_lanes & 31);
      for (size_t i = 0; i < sl.lane.size(); ++i)
        if (sl.lane[i].dim == axis) lane += fmt::format(" | ((({} >> {}) & 1) << {})", k, sl.lane[i].bit, i);
      const std::string delta = tmp("int", fmt::format("tt_lane ^ ({})", lane));
      std::vector<int64_t> col = rl.reg_coords(g);
      col[static_cast<size_t>(axis)] = 0;
      std::string result;
      for (int s = 0; s < sl.num_regs(); ++s) {
        std::vector<int64_t> c = sl.reg_coords(s);
        const int64_t at_axis = c[static_cast<size_t>(axis)];
        c[static_cast<size_t>(axis)] = 0;
        if (c != col) continue;
        const std::string v = tmp(ct, fmt::format("tt_shfl_xor({}, {})", sv.at(s), delta));
        result = result.empty() ? v : tmp(ct, fmt::format("({} & {}) == {} ? {} : {}", k, reg_axis_mask, at_axis, v, result));
      }
      if (result.empty()) fail("internal error: gather at {} found no source register", op->loc.str());
      line(fmt::format("{}[{}] = {};", out.name, g, result));
    }
    return;
  }

  // Through shared memory: the source in row-major order (written by the first copy of each
  // element), a barrier, then each thread reads its index's elements.
  const int64_t esz = std::max<int64_t>(1, mem_bytes(r->type.element()));
  const int64_t off = alloc_smem(numel(ss) * esz, 16);
  const std::string buf = fmt::format("reinterpret_cast<{}*>(tt_smem + {})", ct, off);
  auto flat = [&](const std::vector<std::string>& c) {
    std::string e = "0";
    for (size_t d = 0; d < ss.size(); ++d) e = fmt::format("({}) * {} + {}", e, ss[d], c[d]);
    return e;
  };
  line(fmt::format("// gather along dim {}: through shared memory", axis));
  sync();  // the bytes may still be read by an earlier use
  const std::string own = owner(sl);
  if (own != "true") open(fmt::format("if ({})", own));
  for (int g = 0; g < sl.num_regs(); ++g) {
    std::vector<std::string> c;
    for (int d = 0; d < sl.rank(); ++d) c.push_back(coord(sl, g, d));
    line(fmt::format("{}[{}] = {};", buf, flat(c), sv.at(g)));
  }
  if (own != "true") close();
  touched();
  sync();
  Val& out = declare_regs(r);
  for (int g = 0; g < rl.num_regs(); ++g) {
    std::vector<std::string> c;
    for (int d = 0; d < rl.rank(); ++d) c.push_back(d == axis ? wrapped(g) : coord(rl, g, d));
    line(fmt::format("{}[{}] = {}[{}];", out.name, g, buf, flat(c)));
  }
  touched();
  free_smem(off);
}

void Lowering::emit_histogram(const ir::Op* op) {
  const ir::Value* x = op->operand(0);
  const ir::Value* mask = op->operands.size() > 1 ? op->operand(1) : nullptr;
  const ir::Value* r = op->result();
  const int64_t bins = r->type.shape[0];
  const Layout& xl = layout(x);
  const Layout& rl = layout(r);
  const int64_t off = alloc_smem(bins * 4, 16);
  const std::string counts = fmt::format("reinterpret_cast<int*>(tt_smem + {})", off);
  line(fmt::format("// histogram of {} bins: shared-memory counters", bins));
  sync();
  line(fmt::format("for (int tt_b = tid; tt_b < {}; tt_b += {}) {}[tt_b] = 0;", bins, nt_, counts));
  touched();
  sync();
  const Val& xv = val(x);
  const Val* mv = mask ? &val(mask) : nullptr;
  // Each element counted once: by its first copy's thread. Signed values widen with their sign,
  // unsigned ones without, so negatives (and values past num_bins) fall outside the bins.
  const std::string own = owner(xl);
  if (own != "true") open(fmt::format("if ({})", own));
  for (int g = 0; g < xl.num_regs(); ++g) {
    const std::string v = tmp("long long", fmt::format("(long long)({})", xv.at(g)));
    std::string cond = fmt::format("(unsigned long long){} < {}ull", v, bins);
    if (mv) cond += fmt::format(" && ({})", mv->at(g));
    line(fmt::format("if ({}) atomicAdd(&{}[(int){}], 1);", cond, counts, v));
  }
  if (own != "true") close();
  touched();
  sync();
  Val& out = declare_regs(r);
  for (int g = 0; g < rl.num_regs(); ++g) line(fmt::format("{}[{}] = {}[{}];", out.name, g, counts, coord(rl, g, 0)));
  touched();
  free_smem(off);
}

}  // namespace tritium::jit::cuda::lowering
