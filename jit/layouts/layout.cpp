#include "jit/layouts/layout.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"

namespace tritium::jit {
namespace {

int log2_exact(int64_t v) {
  if (v <= 0 || (v & (v - 1)) != 0) fail("internal error: layout size {} is not a power of two", v);
  int b = 0;
  while ((int64_t{1} << b) < v) ++b;
  return b;
}

std::string list(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ",")); }
std::string list(const std::vector<int>& v) { return fmt::format("[{}]", fmt::join(v, ",")); }

std::string bits(const std::vector<LayoutBit>& bs) {
  std::string s = "[";
  for (size_t i = 0; i < bs.size(); ++i)
    s += (i ? " " : "") + (bs[i].none() ? std::string("-") : fmt::format("{}.{}", bs[i].dim, bs[i].bit));
  return s + "]";
}

// Applies f to every input bit; register bits that no longer set any coordinate are dropped (no
// register replicates).
template <class F> Layout map_bits(const Layout& l, ir::Shape shape, F f) {
  Layout out;
  out.kind = LayoutKind::Linear;
  out.shape = std::move(shape);
  for (LayoutBit b : l.reg)
    if (LayoutBit m = f(b); !m.none()) out.reg.push_back(m);
  for (LayoutBit b : l.lane) out.lane.push_back(f(b));
  for (LayoutBit b : l.warp) out.warp.push_back(f(b));
  out.name = "linear<" + out.bits_str() + ">";
  return out;
}

}  // namespace

std::vector<int64_t> Layout::bit_coords(LayoutBit b) const {
  std::vector<int64_t> c(shape.size(), 0);
  if (!b.none()) c[static_cast<size_t>(b.dim)] = int64_t{1} << b.bit;
  return c;
}

std::vector<int64_t> Layout::reg_coords(int r) const {
  std::vector<int64_t> c(shape.size(), 0);
  for (size_t i = 0; i < reg.size(); ++i)
    if ((r >> i) & 1) c[static_cast<size_t>(reg[i].dim)] += int64_t{1} << reg[i].bit;
  return c;
}

int Layout::lane_replication() const {
  int m = 0;
  for (size_t i = 0; i < lane.size(); ++i)
    if (lane[i].none()) m |= 1 << i;
  return m;
}

int Layout::warp_replication() const {
  int m = 0;
  for (size_t i = 0; i < warp.size(); ++i)
    if (warp[i].none()) m |= 1 << i;
  return m;
}

int Layout::contiguous_regs(int dim) const {
  int v = 1;
  for (size_t i = 0; i < reg.size() && reg[i].dim == dim && reg[i].bit == static_cast<int>(i); ++i) v <<= 1;
  return v;
}

bool Layout::same_placement(const Layout& o) const {
  if (is_shared() || o.is_shared())
    return is_shared() && o.is_shared() && shape == o.shape && order == o.order && swizzle == o.swizzle;
  return shape == o.shape && reg == o.reg && lane == o.lane && warp == o.warp;
}

std::string Layout::str() const { return name.empty() ? "linear<" + bits_str() + ">" : name; }

std::string Layout::bits_str() const {
  if (is_shared()) return fmt::format("order={} swizzle={}", list(order), swizzle);
  return fmt::format("reg={} lane={} warp={}", bits(reg), bits(lane), bits(warp));
}

// ---- distributed layouts ------------------------------------------------------------------------

std::vector<int> default_order(int rank) {
  std::vector<int> o;
  for (int d = rank - 1; d >= 0; --d) o.push_back(d);
  return o;
}

Layout blocked_layout(const ir::Shape& shape, const std::vector<int64_t>& size_per_thread,
                      const std::vector<int64_t>& threads_per_warp, const std::vector<int64_t>& warps_per_cta,
                      const std::vector<int>& order) {
  const size_t rank = shape.size();
  Layout l;
  l.kind = LayoutKind::Blocked;
  l.shape = shape;
  std::vector<int> used(rank, 0), size(rank);
  for (size_t d = 0; d < rank; ++d) size[d] = log2_exact(shape[d]);
  auto take = [&](int d) -> LayoutBit {
    if (used[static_cast<size_t>(d)] < size[static_cast<size_t>(d)]) return {d, used[static_cast<size_t>(d)]++};
    return {};
  };
  for (int d : order)
    for (int i = 0; i < log2_exact(size_per_thread[static_cast<size_t>(d)]); ++i)
      if (LayoutBit b = take(d); !b.none()) l.reg.push_back(b);
  for (int d : order)
    for (int i = 0; i < log2_exact(threads_per_warp[static_cast<size_t>(d)]); ++i) l.lane.push_back(take(d));
  for (int d : order)
    for (int i = 0; i < log2_exact(warps_per_cta[static_cast<size_t>(d)]); ++i) l.warp.push_back(take(d));
  for (int d : order)
    while (used[static_cast<size_t>(d)] < size[static_cast<size_t>(d)]) l.reg.push_back(take(d));
  if (l.lane.size() != 5) fail("internal error: blocked layout with {} lanes", 1 << l.lane.size());
  l.order = order;
  l.name = fmt::format("blocked<spt={},tpw={},wpc={},order={}>", list(size_per_thread), list(threads_per_warp),
                       list(warps_per_cta), list(order));
  return l;
}

Layout default_blocked_layout(const ir::Shape& shape, int num_warps, const std::vector<int>& order, int64_t vec) {
  const size_t rank = shape.size();
  std::vector<int64_t> spt(rank, 1), tpw(rank, 1), wpc(rank, 1);
  spt[static_cast<size_t>(order[0])] = std::max<int64_t>(1, std::min(vec, shape[static_cast<size_t>(order[0])]));
  int64_t lanes = 32, threads = 32 * int64_t{num_warps}, warps = num_warps, prev_lanes = 1, prev_warps = 1;
  for (size_t k = 0; k + 1 < rank; ++k) {
    size_t i = static_cast<size_t>(order[k]);
    int64_t per_cta = std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, shape[i] / spt[i]));
    tpw[i] = std::clamp<int64_t>(per_cta, 1, lanes);
    wpc[i] = std::clamp<int64_t>(per_cta / tpw[i], 1, warps);
    warps /= wpc[i];
    lanes /= tpw[i];
    threads /= per_cta;
    prev_lanes *= tpw[i];
    prev_warps *= wpc[i];
  }
  tpw[static_cast<size_t>(order[rank - 1])] = 32 / prev_lanes;
  wpc[static_cast<size_t>(order[rank - 1])] = num_warps / prev_warps;
  return blocked_layout(shape, spt, tpw, wpc, order);
}

Layout mma_layout(const ir::Shape& shape, const MmaParams& p, int num_warps) {
  if (shape.size() != 2) fail("internal error: mma layout of rank {}", shape.size());
  const bool v3 = p.version == 3;
  const int64_t M = shape[0], N = shape[1], unit_rows = v3 ? 64 : 16;
  const int64_t WTM = M / p.wm, WTN = N / p.wn;
  if (WTM < unit_rows || WTN < 8 || WTM % unit_rows || WTN % 8)
    fail("internal error: mma tiling {}x{} of a [{}, {}] result", p.wm, p.wn, M, N);
  const int mt = log2_exact(WTM / unit_rows), nt = log2_exact(WTN / 8);
  const int row_tile = v3 ? 6 : 4;  // the first row bit past one unit's fragment rows
  Layout l;
  l.kind = LayoutKind::Mma;
  l.shape = shape;
  l.mma = p;
  l.reg = {{1, 0}, {0, 3}};
  for (int i = 0; i < nt; ++i) l.reg.push_back({1, 3 + i});
  for (int i = 0; i < mt; ++i) l.reg.push_back({0, row_tile + i});
  l.lane = {{1, 1}, {1, 2}, {0, 0}, {0, 1}, {0, 2}};
  const int wbits = log2_exact(num_warps);
  if (v3) {
    if (wbits < 2) fail("internal error: wgmma layout on {} warps", num_warps);
    l.warp = {{0, 4}, {0, 5}};
  }
  for (int i = 0; i < log2_exact(p.wn); ++i) l.warp.push_back({1, 3 + nt + i});
  for (int i = 0; i < log2_exact(p.wm); ++i) l.warp.push_back({0, row_tile + mt + i});
  if (static_cast<int>(l.warp.size()) > wbits) fail("internal error: mma tiling {}x{} on {} warps", p.wm, p.wn, num_warps);
  while (static_cast<int>(l.warp.size()) < wbits) l.warp.push_back({});
  l.name = fmt::format("mma<v{},units={}x{},tile={}x{}>", p.version, p.wm, p.wn, WTM, WTN);
  return l;
}

Layout dot_operand_layout(const Layout& parent, int op_idx, int64_t k, int k_width, int num_warps) {
  const MmaParams& p = parent.mma;
  const bool v3 = p.version == 3;
  const int64_t M = parent.shape[0], N = parent.shape[1];
  const int64_t unit_rows = v3 ? 64 : 16;
  const int mt = log2_exact(M / p.wm / unit_rows), nt = log2_exact(N / p.wn / 8);
  const int row_tile = v3 ? 6 : 4;
  Layout l;
  l.kind = LayoutKind::DotOperand;
  l.mma = p;
  l.op_idx = op_idx;
  l.k_width = k_width;
  const int kd = op_idx == 0 ? 1 : 0, od = op_idx == 0 ? 0 : 1;  // K's dim and the other dim
  l.shape = op_idx == 0 ? ir::Shape{M, k} : ir::Shape{k, N};
  // One instruction's K: 16 for 16-bit types (pairs a register), 32 for 8-bit, 8 for tf32.
  const int kbits = k_width == 2 ? 4 : k_width == 4 ? 5 : 3;
  const int ksteps = log2_exact(k / (int64_t{1} << kbits));
  if (op_idx == 0) {
    if (k_width == 2) {
      l.reg = {{kd, 0}, {od, 3}, {kd, 3}};
      l.lane = {{kd, 1}, {kd, 2}, {od, 0}, {od, 1}, {od, 2}};
    } else if (k_width == 4) {
      l.reg = {{kd, 0}, {kd, 1}, {od, 3}, {kd, 4}};
      l.lane = {{kd, 2}, {kd, 3}, {od, 0}, {od, 1}, {od, 2}};
    } else {
      l.reg = {{od, 3}, {kd, 2}};
      l.lane = {{kd, 0}, {kd, 1}, {od, 0}, {od, 1}, {od, 2}};
    }
    for (int i = 0; i < ksteps; ++i) l.reg.push_back({kd, kbits + i});
    for (int i = 0; i < mt; ++i) l.reg.push_back({od, row_tile + i});
    if (v3) l.warp = {{od, 4}, {od, 5}};
    for (int i = 0; i < log2_exact(p.wn); ++i) l.warp.push_back({});
    for (int i = 0; i < log2_exact(p.wm); ++i) l.warp.push_back({od, row_tile + mt + i});
  } else {
    if (v3) fail("internal error: a wgmma B operand in registers");
    if (k_width != 2) fail("internal error: a B operand fragment of {} elements a register", k_width);
    l.reg = {{kd, 0}, {kd, 3}};
    l.lane = {{kd, 1}, {kd, 2}, {od, 0}, {od, 1}, {od, 2}};
    for (int i = 0; i < ksteps; ++i) l.reg.push_back({kd, 4 + i});
    for (int i = 0; i < nt; ++i) l.reg.push_back({od, 3 + i});
    for (int i = 0; i < log2_exact(p.wn); ++i) l.warp.push_back({od, 3 + nt + i});
    for (int i = 0; i < log2_exact(p.wm); ++i) l.warp.push_back({});
  }
  while (static_cast<int>(l.warp.size()) < log2_exact(num_warps)) l.warp.push_back({});
  l.name = fmt::format("dot_op<{},{},k{}>", op_idx, parent.name, k_width);
  return l;
}

// ---- transforms ---------------------------------------------------------------------------------

Layout slice_layout(const Layout& l, int dim) {
  ir::Shape shape = l.shape;
  shape.erase(shape.begin() + dim);
  Layout s = map_bits(l, shape, [&](LayoutBit b) -> LayoutBit {
    if (b.none() || b.dim == dim) return {};
    return {b.dim > dim ? b.dim - 1 : b.dim, b.bit};
  });
  s.kind = LayoutKind::Slice;
  s.name = fmt::format("slice<{},{}>", dim, l.str());
  return s;
}

Layout expand_dims_layout(const Layout& l, int axis) {
  ir::Shape shape = l.shape;
  shape.insert(shape.begin() + axis, 1);
  return map_bits(l, shape, [&](LayoutBit b) -> LayoutBit {
    if (b.none()) return b;
    return {b.dim >= axis ? b.dim + 1 : b.dim, b.bit};
  });
}

Layout squeeze_layout(const Layout& l, int axis) {
  if (l.shape[static_cast<size_t>(axis)] != 1) fail("internal error: squeezing dim {} of size {}", axis, l.shape[static_cast<size_t>(axis)]);
  ir::Shape shape = l.shape;
  shape.erase(shape.begin() + axis);
  Layout s = map_bits(l, shape, [&](LayoutBit b) -> LayoutBit {
    if (b.none()) return b;
    return {b.dim > axis ? b.dim - 1 : b.dim, b.bit};
  });
  // A slice expanded back at its dim and squeezed is the slice again: keep a readable name.
  return s;
}

Layout broadcast_source_layout(const Layout& result, const ir::Shape& src) {
  return map_bits(result, src, [&](LayoutBit b) -> LayoutBit {
    if (b.none() || src[static_cast<size_t>(b.dim)] == 1) return {};
    return b;
  });
}

Layout permute_layout(const Layout& l, const std::vector<int64_t>& perm) {
  std::vector<int> inv(perm.size());
  ir::Shape shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    inv[static_cast<size_t>(perm[i])] = static_cast<int>(i);
    shape[i] = l.shape[static_cast<size_t>(perm[i])];
  }
  return map_bits(l, shape, [&](LayoutBit b) -> LayoutBit {
    if (b.none()) return b;
    return {inv[static_cast<size_t>(b.dim)], b.bit};
  });
}

Layout permute_source_layout(const Layout& result, const std::vector<int64_t>& perm) {
  ir::Shape shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) shape[static_cast<size_t>(perm[i])] = result.shape[i];
  if (result.is_shared()) {  // a transposed view of the tile: the same bytes, dims renamed
    Layout s = shared_layout(shape, {}, result.swizzle);
    for (int d : result.order) s.order.push_back(static_cast<int>(perm[static_cast<size_t>(d)]));
    s.name = fmt::format("shared<order={},swizzle={}>", list(s.order), s.swizzle);
    return s;
  }
  return map_bits(result, shape, [&](LayoutBit b) -> LayoutBit {
    if (b.none()) return b;
    return {static_cast<int>(perm[static_cast<size_t>(b.dim)]), b.bit};
  });
}

Layout reshape_layout(const Layout& l, const ir::Shape& to) {
  // Flat bit position of (dim, bit) in row-major order, and back in the new shape.
  auto flat_base = [](const ir::Shape& s) {
    std::vector<int> base(s.size(), 0);
    int acc = 0;
    for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
      base[static_cast<size_t>(d)] = acc;
      acc += log2_exact(s[static_cast<size_t>(d)]);
    }
    return base;
  };
  std::vector<int> from = flat_base(l.shape), into = flat_base(to);
  return map_bits(l, to, [&](LayoutBit b) -> LayoutBit {
    if (b.none()) return b;
    int flat = from[static_cast<size_t>(b.dim)] + b.bit;
    for (int d = 0; d < static_cast<int>(to.size()); ++d) {
      int lo = into[static_cast<size_t>(d)], hi = lo + log2_exact(to[static_cast<size_t>(d)]);
      if (flat >= lo && flat < hi) return {d, flat - lo};
    }
    fail("internal error: reshape bit {} outside {}", flat, ir::shape_str(to));
  });
}

std::optional<std::vector<int>> register_map(const Layout& from, const Layout& to, const CoordMap& to_from) {
  auto map = [&](const std::vector<int64_t>& c) { return to_from ? to_from(c) : c; };
  if (from.lane.size() != to.lane.size() || from.warp.size() != to.warp.size()) return std::nullopt;
  for (size_t i = 0; i < to.lane.size(); ++i)
    if (map(to.lane_coords(static_cast<int>(i))) != from.lane_coords(static_cast<int>(i))) return std::nullopt;
  for (size_t i = 0; i < to.warp.size(); ++i)
    if (map(to.warp_coords(static_cast<int>(i))) != from.warp_coords(static_cast<int>(i))) return std::nullopt;
  std::map<std::vector<int64_t>, int> index;
  for (int r = 0; r < from.num_regs(); ++r) index[from.reg_coords(r)] = r;
  std::vector<int> out(static_cast<size_t>(to.num_regs()));
  for (int r = 0; r < to.num_regs(); ++r) {
    auto it = index.find(map(to.reg_coords(r)));
    if (it == index.end()) return std::nullopt;
    out[static_cast<size_t>(r)] = it->second;
  }
  return out;
}

// ---- join / split ----------------------------------------------------------------------------------

Layout scalar_layout(int num_warps) {
  Layout l;
  l.lane.assign(5, LayoutBit{});
  l.warp.assign(static_cast<size_t>(log2_exact(num_warps)), LayoutBit{});
  l.name = "scalar";
  return l;
}

Layout join_layout(const Layout& l) {
  ir::Shape shape = l.shape;
  shape.push_back(2);
  Layout j = map_bits(l, shape, [](LayoutBit b) { return b; });
  j.reg.insert(j.reg.begin(), LayoutBit{static_cast<int>(l.shape.size()), 0});
  j.name = "linear<" + j.bits_str() + ">";
  return j;
}

std::optional<Layout> split_layout(const Layout& l) {
  const int last = l.rank() - 1;
  if (last < 0 || l.shape.back() != 2) return std::nullopt;
  bool in_regs = false;
  for (LayoutBit b : l.reg) in_regs = in_regs || b.dim == last;
  if (!in_regs) return std::nullopt;
  ir::Shape shape(l.shape.begin(), l.shape.end() - 1);
  return map_bits(l, shape, [&](LayoutBit b) -> LayoutBit { return b.dim == last ? LayoutBit{} : b; });
}

// ---- shared memory ------------------------------------------------------------------------------

Layout shared_layout(const ir::Shape& shape, const std::vector<int>& order, int swizzle) {
  Layout l;
  l.kind = LayoutKind::Shared;
  l.shape = shape;
  l.order = order;
  l.swizzle = swizzle;
  l.name = fmt::format("shared<order={},swizzle={}>", list(order), swizzle);
  return l;
}

int swizzle_for_row_bytes(int64_t bytes) {
  if (bytes >= 128) return 128;
  if (bytes >= 64) return 64;
  if (bytes >= 32) return 32;
  return 0;
}

}  // namespace tritium::jit
