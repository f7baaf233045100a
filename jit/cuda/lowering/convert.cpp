// Layout conversions (convert_layout ops) and shared-memory tiles. Between two distributed layouts
// that place each element in the same thread the registers are only renamed; otherwise the
// elements go through shared memory (written by the first copy's thread, rows padded by 16 bytes so
// an mma fragment's writes spread over the banks, read back in 16-byte runs where the target
// layout has them; on sm_90 a 16-bit mma fragment is written by stmatrix, 16-byte rows). A convert to a shared layout writes the value into a tile (swizzled as wgmma,
// ldmatrix and TMA read it) that lives until the end of the enclosing block.
#include <bit>

#include "jit/cuda/lowering/lowering.h"

namespace tritium::jit::cuda::lowering {

std::optional<std::vector<int>> Lowering::same_thread_map(const Layout& from, const Layout& to) const {
  return register_map(from, to);
}

std::optional<int> Lowering::stmatrix_count(const Layout& from, DType d, const Val& in) const {
  // stmatrix's 8 x 8 matrix is an mma fragment: register bit 0 and lane bits 0-1 run along the
  // contiguous (last) dim - one 16-byte row - and lane bits 2-4 pick 8 distinct rows.
  if (cc_ < 90 || dtype_bytes(d) != 2 || in.kind != Val::Kind::Regs || from.reg.empty() || from.lane.size() < 5)
    return std::nullopt;
  const int c = from.rank() - 1;
  if (from.reg[0] != LayoutBit{c, 0} || from.lane[0] != LayoutBit{c, 1} || from.lane[1] != LayoutBit{c, 2})
    return std::nullopt;
  for (int i = 2; i < 5; ++i)
    if (from.lane[static_cast<size_t>(i)].none()) return std::nullopt;
  return std::min(4, from.num_regs() / 2);  // matrices an instruction: register pairs
}

Layout Lowering::stmatrix_rows(const Layout& from, int x) const {
  // Lane 8 i + j gives row j of matrix i: the row's start is the element of register pair i with
  // lane bits 2-4 = j and lane bits 0-1 zero. As a layout: lanes are (lane bits 2-4, register bits
  // 1..log2 x), registers the remaining register bits (one instruction each).
  Layout rows = from;
  rows.kind = LayoutKind::Linear;
  const size_t pair_bits = 1 + static_cast<size_t>(std::countr_zero(static_cast<unsigned>(x)));
  rows.lane = {from.lane[2], from.lane[3], from.lane[4], LayoutBit{}, LayoutBit{}};
  for (size_t i = 1; i < pair_bits; ++i) rows.lane[2 + i] = from.reg[i];
  rows.reg.assign(from.reg.begin() + static_cast<std::ptrdiff_t>(pair_bits), from.reg.end());
  return rows;
}

int64_t Lowering::tile_bytes(const Layout& s, DType d) const { return numel(s.shape) * dtype_bytes(d); }

std::string Lowering::tile_offset(const Layout& s, DType d, const std::vector<std::string>& coords) const {
  const int c = s.order[0], o = s.order[1];
  const int64_t esz = dtype_bytes(d), C = s.shape[static_cast<size_t>(c)], R = s.shape[static_cast<size_t>(o)];
  const std::string& row = coords[static_cast<size_t>(o)];
  const std::string& col = coords[static_cast<size_t>(c)];
  if (s.swizzle == 0) return fmt::format("(({}) * {} + ({}) * {})", row, C * esz, col, esz);
  // Column blocks of `swizzle` bytes (cb 16-byte chunks a row) stored one after the other, R rows
  // each; within a block, chunk ch of row r at ch ^ ((r >> shift) % cb): the 128/64/32-byte XOR
  // patterns of wgmma's descriptors and TMA (address bits [4, 4 + log2 cb) ^= bits [7, ...)).
  const int64_t epc = 16 / esz, cb = s.swizzle / 16;
  const int shift = cb == 8 ? 0 : cb == 4 ? 1 : 2, cbits = cb == 8 ? 3 : cb == 4 ? 2 : 1;
  const std::string ch = fmt::format("(({}) / {})", col, epc), within = fmt::format("(({}) % {})", col, epc);
  if (C / epc < cb) fail("internal error: a {}-byte swizzle on rows of {} bytes ({})", s.swizzle, C * esz, s.str());
  std::string chunk;
  if (C / epc == cb)  // one block
    chunk = fmt::format("(({0}) * {1} + ({2} ^ ((({0}) >> {3}) & {4})))", row, cb, ch, shift, cb - 1);
  else
    chunk = fmt::format("(({1} >> {5}) * {2} + ({0}) * {3} + (({1} & {4}) ^ ((({0}) >> {6}) & {4})))", row, ch, R * cb,
                        cb, cb - 1, cbits, shift);
  return fmt::format("({} * 16 + {} * {})", chunk, within, esz);
}

void Lowering::store_tile(const Val& v, const Layout& from, DType d, const std::string& base, const Layout& tile,
                          bool async_reader, bool round_tf32) {
  const int c = tile.order[0];
  const int64_t esz = dtype_bytes(d), epc = std::max<int64_t>(1, 16 / esz);
  int V = !from.reg.empty() && from.reg[0].dim == c ? from.contiguous_regs(c) : 1;
  V = static_cast<int>(std::min<int64_t>(V, epc));
  if (v.kind != Val::Kind::Regs) V = 1;
  const std::string own = owner(from);
  if (own != "true") open(fmt::format("if ({})", own));
  for (int g = 0; g < from.num_regs(); g += V) {
    std::vector<std::string> coords;
    for (int dim = 0; dim < from.rank(); ++dim) coords.push_back(coord(from, g, dim));
    const std::string at = fmt::format("tt_smem + {} + {}", base, tile_offset(tile, d, coords));
    if (round_tf32 && V > 1) {  // rounded to nearest in registers (cheap here), then one 16-byte store
      open("");
      line(fmt::format("uint32_t tt_q[{}];", V));
      for (int j = 0; j < V; ++j) line(fmt::format("tt_q[{}] = tt_tf32(__float_as_uint({}));", j, v.at(g + j)));
      line(fmt::format("tt_vcopy<{}>({}, tt_q);", V * esz, at));
      close();
    } else if (round_tf32) {
      line(fmt::format("*reinterpret_cast<uint32_t*>({}) = tt_tf32(__float_as_uint({}));", at, v.at(g)));
    } else if (V == 1) {
      line(fmt::format("*reinterpret_cast<{}*>({}) = {};", ctype(d), at, v.at(g)));
    } else {
      line(fmt::format("tt_vcopy<{}>({}, &{}[{}]);", V * esz, at, v.name, g));
    }
  }
  if (async_reader) line("tt_fence_async_shared();  // the tile's writes, before wgmma reads them");
  if (own != "true") close();
  touched();
}

void Lowering::load_tile(const std::string& base, const Layout& tile, DType d, const Val& out, const Layout& to) {
  const int c = tile.order[0];
  const int64_t esz = dtype_bytes(d), epc = std::max<int64_t>(1, 16 / esz);
  int V = !to.reg.empty() && to.reg[0].dim == c ? to.contiguous_regs(c) : 1;
  V = static_cast<int>(std::min<int64_t>(V, epc));
  for (int g = 0; g < to.num_regs(); g += V) {
    std::vector<std::string> coords;
    for (int dim = 0; dim < to.rank(); ++dim) coords.push_back(coord(to, g, dim));
    const std::string at = fmt::format("tt_smem + {} + {}", base, tile_offset(tile, d, coords));
    if (V == 1) line(fmt::format("{}[{}] = *reinterpret_cast<const {}*>({});", out.name, g, ctype(d), at));
    else line(fmt::format("tt_vcopy<{}>(&{}[{}], {});", V * esz, out.name, g, at));
  }
  touched();
}

void Lowering::emit_convert(const ir::Op* op) {
  const ir::Value* x = op->operand(0);
  const ir::Value* r = op->result();
  const Layout& to = layout(r);
  const DType d = r->type.dtype;
  if (auto it = stage_slot_.find(op); it != stage_slot_.end()) {  // a pipelined load's tile (emit_for)
    Val& out = vals_[r];
    out.kind = Val::Kind::Tile;
    out.name = it->second;
    out.layout = &to;
    return;
  }
  const Val& in = val(x);
  if (in.kind == Val::Kind::Tile) {
    if (to.is_shared()) fail("internal error: a tile converted to another tile at {}", op->loc.str());
    Val& out = declare_regs(r);
    load_tile(in.name, *in.layout, d, out, to);
    return;
  }
  const Layout& from = layout(x);
  if (to.is_shared()) {
    if (to.rank() != 2) fail("internal error: a shared tile of rank {} at {}", to.rank(), op->loc.str());
    const int64_t off = alloc_smem(tile_bytes(to, d), 1024);
    sync();  // the bytes may have been read by an earlier use
    // wgmma reads tiles through the async proxy. tf32 operands written from registers are rounded to
    // nearest on the way (a cvt each, cheap here); those the ring's copies fill keep their fp32 bits.
    bool wgmma_reader = false, tf32 = false;
    f_.walk([&](ir::Op* u) {
      if (u->kind != OpKind::Dot) return;
      for (size_t i = 0; i < 2; ++i) {
        const ir::Value* o = u->operand(i);
        while (o->def && (o->def->kind == OpKind::Permute || o->def->kind == OpKind::MultipleOf ||
                          o->def->kind == OpKind::MaxContiguous) && o != r)
          o = o->def->operand(0);
        if (o != r) continue;
        const Layout& acc = layout(u->result());
        wgmma_reader = wgmma_reader || (acc.kind == LayoutKind::Mma && acc.mma.version == 3);
        tf32 = tf32 || (d == DType::f32 && (u->attrs.str == "tf32" || u->attrs.str == "tf32x3") &&
                        acc.kind == LayoutKind::Mma && acc.mma.version == 3);
      }
    });
    std::string base = fmt::format("{}", off);
    if (in.kind == Val::Kind::Uniform) {  // a constant tile: every element written once
      Val regs;
      regs.kind = Val::Kind::Uniform;
      regs.name = in.name;
      store_tile(regs, from, d, base, to, wgmma_reader, tf32);
    } else {
      store_tile(in, from, d, base, to, wgmma_reader, tf32);
    }
    sync();
    Val& out = vals_[r];
    out.kind = Val::Kind::Tile;
    out.name = base;
    out.layout = &to;
    tile_allocs_[off] = base;
    return;
  }
  if (in.kind == Val::Kind::Uniform) return set_uniform(r, in.name);
  if (auto map = same_thread_map(from, to)) {
    define_mapped_regs(r, in, *map);
    return;
  }
  // Through shared memory: row-major, rows padded by 16 bytes.
  const ir::Shape& s = r->type.shape;
  const int64_t esz = std::max<int64_t>(1, mem_bytes(r->type.element())), pad = s.size() >= 2 ? 16 / esz : 0;
  const int64_t pitch = s.back() + pad;
  const int64_t rows = numel(s) / s.back();
  const int64_t off = alloc_smem(rows * pitch * esz, 16);
  auto flat = [&](const Layout& l, int reg) {
    std::string outer = "0";
    for (size_t dd = 0; dd + 1 < s.size(); ++dd)
      outer = fmt::format("({}) * {} + {}", outer, s[dd], coord(l, reg, static_cast<int>(dd)));
    return fmt::format("(({}) * {} + {})", outer, pitch, coord(l, reg, static_cast<int>(s.size()) - 1));
  };
  auto width = [&](const Layout& l) {
    const int last = static_cast<int>(s.size()) - 1;
    int V = !l.reg.empty() && l.reg[0].dim == last ? l.contiguous_regs(last) : 1;
    return static_cast<int>(std::min<int64_t>(V, 16 / esz));
  };
  const std::string ct = ctype(r->type.element());
  const std::string buf = fmt::format("reinterpret_cast<{}*>(tt_smem + {})", ct, off);
  sync();
  if (std::optional<int> x = esz == 2 ? stmatrix_count(from, r->type.dtype, in) : std::nullopt) {
    // Rows of 8 consecutive elements, 16 bytes each, written by stmatrix: the same bytes as the
    // element stores below, a quarter of the instructions (Triton's stmatrix lowering of an mma
    // accumulator). Row j of matrix i is the element of register g + 2i in the thread whose lane
    // bits 2-4 are j and 0-1 zero (`rows`: those lane bits, then register bits 1-2, as lanes).
    const Layout rows = stmatrix_rows(from, *x);
    for (int g = 0; g < from.num_regs(); g += 2 * *x) {
      std::string addr = fmt::format("tt_smem_base + {} + {} * {}", off, flat(rows, g / (2 * *x)), esz);
      std::vector<std::string> regs;
      for (int i = 0; i < *x; ++i) regs.push_back(fmt::format("tt_pack_b16(&{}[{}])", in.name, g + 2 * i));
      line(fmt::format("tt_stmatrix_x{}({}, {});", *x, addr, fmt::join(regs, ", ")));
    }
  } else {
    const std::string own = owner(from);
    if (own != "true") open(fmt::format("if ({})", own));
    const int vw = in.kind == Val::Kind::Regs ? width(from) : 1;
    for (int g = 0; g < from.num_regs(); g += vw) {
      if (vw == 1) line(fmt::format("{}[{}] = {};", buf, flat(from, g), in.at(g)));
      else line(fmt::format("tt_vcopy<{}>(&{}[{}], &{}[{}]);", vw * esz, buf, flat(from, g), in.name, g));
    }
    if (own != "true") close();
  }
  touched();
  sync();
  Val& out = declare_regs(r);
  const int rw = width(to);
  for (int g = 0; g < to.num_regs(); g += rw) {
    if (rw == 1) line(fmt::format("{}[{}] = {}[{}];", out.name, g, buf, flat(to, g)));
    else line(fmt::format("tt_vcopy<{}>(&{}[{}], &{}[{}]);", rw * esz, out.name, g, buf, flat(to, g)));
  }
  touched();
  free_smem(off);
}

}  // namespace tritium::jit::cuda::lowering
