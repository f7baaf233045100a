// fp32 tiles as tf32 wgmma operands (docs/cuda-backend.md, "tf32"). wgmma reads tf32 operands
// K-major and straight from shared memory, and would truncate their low mantissa bits: so a tf32
// matmul loop's tiles pass through registers, where they are rounded (cvt.rna) and, for a B whose
// memory runs along N, transposed, on their way into the K-major buffers wgmma reads. They come
// into registers either from global memory (load_tf32_tiles) or from raw fp32 stages that cp.async
// filled trips earlier (read_tf32_stage); store_tf32_tiles writes them rounded.
#include <stdexcept>

#include "jit/cuda/codegen_impl.h"

namespace tritium::jit::cuda::detail {

// Thread tid's i-th element of a tile (TF32Load::Elements). B stored K-major but N-contiguous in
// memory: a warp takes 8 rows (N) of 4 columns (K), so its loads read 4 runs of 32 contiguous
// bytes and its stores, 8 rows of one 16-byte chunk each (8 swizzle phases), hit 32 different
// banks; else consecutive threads run along the row (K, contiguous in memory and in the stage).
void Codegen::each_tf32_element(const TileLoad& tl, const std::function<void(const std::string& i, const std::string& row,
                                                                             const std::string& col)>& fn) {
  std::string i = fresh("i");
  line("#pragma unroll");
  open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", i, (tl.R * tl.C + nt_ - 1) / nt_));
  std::string e = tmp("int", fmt::format("tid + {} * {}", i, nt_)), row, col;
  if (!tl.transposed) {
    row = tmp("int", fmt::format("{} / {}", e, tl.C));
    col = tmp("int", fmt::format("{} % {}", e, tl.C));
  } else {
    std::string rest = tmp("int", fmt::format("{} >> 5", e));
    row = tmp("int", fmt::format("({} % {}) * 8 + (({} >> 2) & 7)", rest, tl.R / 8, e));
    col = tmp("int", fmt::format("({} / {}) * 4 + ({} & 3)", rest, tl.R / 8, e));
  }
  const bool partial = (tl.R * tl.C) % nt_ != 0;
  if (partial) open(fmt::format("if ({} < {})", e, tl.R * tl.C));
  fn(i, row, col);
  if (partial) close();
  close();
}

// Thread tid's i-th block of 4 x 4 elements of a tile stored K-major from N-contiguous memory
// (TF32Load::Blocks): n0 = 4 * nb, k0 = 4 * kb. A warp takes 8 blocks along N by 4 along K: each
// of its four 16-byte loads reads 4 runs of 128 contiguous bytes, and each of its four 16-byte
// stores (rows n0 + r, the chunk of k0) meets the minimum of 4 shared-memory wavefronts (8
// distinct chunk positions: kb ^ (row & 7) over 4 kb and 2 row phases).
void Codegen::each_tf32_block(const TileLoad& tl, const std::function<void(const std::string& i, const std::string& nb,
                                                                           const std::string& kb)>& fn) {
  const int64_t NB = tl.R / 4, blocks = NB * (tl.C / 4);
  std::string i = fresh("i");
  line("#pragma unroll");
  open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", i, (blocks + nt_ - 1) / nt_));
  std::string b = tmp("int", fmt::format("tid + {} * {}", i, nt_)), rest = tmp("int", fmt::format("{} >> 5", b));
  std::string nb = tmp("int", fmt::format("({} % {}) * 8 + ({} & 7)", rest, NB / 8, b));
  std::string kb = tmp("int", fmt::format("({} / {}) * 4 + (({} >> 3) & 3)", rest, NB / 8, b));
  if (blocks % nt_) open(fmt::format("if ({} < {})", b, blocks));
  fn(i, nb, kb);
  if (blocks % nt_) close();
  close();
}

Codegen::TF32Load Codegen::tf32_load_mode(const TileLoad& tl) {
  if (tl.vector) return TF32Load::Chunks;
  if (tl.transposed && access_width(tl.load, 1) >= 4 && tl.R % 32 == 0 && tl.C % 16 == 0) return TF32Load::Blocks;
  return TF32Load::Elements;
}

std::vector<std::string> Codegen::declare_tf32_registers(const std::vector<const TileLoad*>& tiles) {
  std::vector<std::string> vals;
  for (const TileLoad* tl : tiles) {
    vals.push_back(fresh("v"));
    switch (tf32_load_mode(*tl)) {
      case TF32Load::Chunks: line(fmt::format("uint4 {}[{}];", vals.back(), chunks_per_thread(*tl))); break;
      case TF32Load::Blocks: line(fmt::format("uint4 {}[{}][4];", vals.back(), (tl->R * tl->C / 16 + nt_ - 1) / nt_)); break;
      case TF32Load::Elements: line(fmt::format("uint32_t {}[{}];", vals.back(), (tl->R * tl->C + nt_ - 1) / nt_)); break;
    }
  }
  return vals;
}

// 16 bytes of fp32 from the load at its index `at` (4 lanes along `dim`) as raw bits, masked lanes
// taking `other` (0 when the load has none).
std::string Codegen::tf32_chunk_value(const ir::Op* ld, const Index& at, int dim) {
  const ir::Value* mask = ld->operands.size() > 1 ? ld->operand(1) : nullptr;
  const ir::Value* other = ld->operands.size() > 2 ? ld->operand(2) : nullptr;
  std::string ptr = tmp("const float*", eval(ld->operand(0), at));
  std::string full = fmt::format("*reinterpret_cast<const uint4*>({})", ptr);
  if (!mask) return full;
  auto lane = [&](int l) {
    Index x = at;
    if (l) x[dim] = fmt::format("({} + {})", at[dim], l);
    return x;
  };
  auto other_bits = [&](int l) { return other ? fmt::format("__float_as_uint({})", eval(other, lane(l))) : std::string("0u"); };
  std::vector<std::string> m = lane_masks(mask, at, dim, 4);
  if (m.size() == 1)
    return fmt::format("({}) ? {} : make_uint4({}, {}, {}, {})", m[0], full, other_bits(0), other_bits(1),
                       other_bits(2), other_bits(3));
  // A chunk across the mask's edge: lane by lane.
  std::vector<std::string> v;
  for (int l = 0; l < 4; ++l) m[l] = tmp("bool", m[l]);
  for (int l = 0; l < 4; ++l) v.push_back(fmt::format("{} ? __float_as_uint({}[{}]) : {}", m[l], ptr, l, other_bits(l)));
  return fmt::format("({} && {} && {} && {}) ? {} : make_uint4({}, {}, {}, {})", m[0], m[1], m[2], m[3], full, v[0], v[1], v[2], v[3]);
}

void Codegen::load_tf32_tiles(const std::vector<const TileLoad*>& tiles, const std::vector<std::string>& vals,
                              const ir::Op* loop, const MmaLoop& m, const std::string& trip) {
  for (size_t t = 0; t < tiles.size(); ++t) {
    const TileLoad& tl = *tiles[t];
    const ir::Op* ld = tl.load;
    auto bind = [&](const Index& idx) { bind_carried_pointers(loop, m, idx, trip); };
    switch (tf32_load_mode(tl)) {
      case TF32Load::Chunks:  // 4 elements along K, contiguous in memory and in the stage
        for_each_chunk(tl, [&](const std::string& row, const std::string& ch, const std::string& j) {
          Index idx = tl.at(row, tmp("int", fmt::format("{} * 4", ch)));
          bind(idx);
          line(fmt::format("{}[{}] = {};", vals[t], j, tf32_chunk_value(ld, idx, tl.transposed ? 0 : 1)));
          affine_.clear();
        });
        break;
      case TF32Load::Blocks:  // 4 rows of K, each 4 elements along N
        each_tf32_block(tl, [&](const std::string& i, const std::string& nb, const std::string& kb) {
          for (int r = 0; r < 4; ++r) {
            Index idx{tmp("int", fmt::format("{} * 4 + {}", kb, r)), tmp("int", fmt::format("{} * 4", nb))};
            bind(idx);
            line(fmt::format("{}[{}][{}] = {};", vals[t], i, r, tf32_chunk_value(ld, idx, 1)));
            affine_.clear();
          }
        });
        break;
      case TF32Load::Elements:
        each_tf32_element(tl, [&](const std::string& i, const std::string& row, const std::string& col) {
          Index idx = tl.at(row, col);
          bind(idx);
          line(fmt::format("{}[{}] = __float_as_uint({});", vals[t], i, masked_element(ld, idx, eval(ld->operand(0), idx))));
          affine_.clear();
        });
        break;
    }
  }
}

void Codegen::store_tf32_tiles(const std::vector<const TileLoad*>& tiles, const std::vector<std::string>& vals,
                               const std::vector<std::string>& bases) {
  for (size_t t = 0; t < tiles.size(); ++t) {
    const TileLoad& tl = *tiles[t];
    const std::string& v = vals[t];
    auto chunk = [&](const std::string& row, const std::string& ch) {
      return fmt::format("{} + ({} << 4)", bases[t], tile_chunk(row, ch, tl.R, tl.C / 4));
    };
    switch (tf32_load_mode(tl)) {
      case TF32Load::Chunks:
        for_each_chunk(tl, [&](const std::string& row, const std::string& ch, const std::string& j) {
          line(fmt::format("tt_st_shared_tf32x4({0}, {1}[{2}].x, {1}[{2}].y, {1}[{2}].z, {1}[{2}].w);", chunk(row, ch), v, j));
        });
        break;
      case TF32Load::Blocks:  // transposed in registers: row n0 + r of the stage takes lane r of each K row
        each_tf32_block(tl, [&](const std::string& i, const std::string& nb, const std::string& kb) {
          for (int r = 0; r < 4; ++r) {
            const char c = "xyzw"[r];
            line(fmt::format("tt_st_shared_tf32x4({0}, {1}[{2}][0].{3}, {1}[{2}][1].{3}, {1}[{2}][2].{3}, {1}[{2}][3].{3});",
                             chunk(fmt::format("{} * 4 + {}", nb, r), kb), v, i, c));
          }
        });
        break;
      case TF32Load::Elements:
        each_tf32_element(tl, [&](const std::string& i, const std::string& row, const std::string& col) {
          line(fmt::format("tt_st_shared4({} + (({} & 3) << 2), tt_tf32({}[{}]));", chunk(row, col + " >> 2"), col, v, i));
        });
        break;
    }
  }
  line("tt_fence_async_shared();  // the st.shared above, before wgmma reads them");
}

std::optional<Codegen::TileLoad> Codegen::raw_tf32_tile(const TileLoad& tl) {
  TileLoad raw = tl;
  switch (tf32_load_mode(tl)) {
    case TF32Load::Chunks: break;
    case TF32Load::Blocks: raw = plan_tile_load(tl.load, false); break;  // K rows of N-contiguous chunks
    case TF32Load::Elements: return std::nullopt;
  }
  if (!raw.vector) return std::nullopt;
  raw.round_tf32 = raw.async_reader = false;  // plain cp.async chunks, read back with ld.shared
  raw.hoisted.clear();
  return raw;
}

void Codegen::read_tf32_stage(const std::vector<const TileLoad*>& tiles, const std::vector<std::string>& vals,
                              const std::vector<std::string>& raw_bases) {
  for (size_t t = 0; t < tiles.size(); ++t) {
    const TileLoad& tl = *tiles[t];
    auto at = [&](const std::string& row, const std::string& ch, int64_t R, int64_t rc) {
      return fmt::format("tt_ld_shared16({} + ({} << 4))", raw_bases[t], tile_chunk(row, ch, R, rc));
    };
    switch (tf32_load_mode(tl)) {
      case TF32Load::Chunks:  // the raw stage has the K-major buffer's layout
        for_each_chunk(tl, [&](const std::string& row, const std::string& ch, const std::string& j) {
          line(fmt::format("{}[{}] = {};", vals[t], j, at(row, ch, tl.R, tl.C / 4)));
        });
        break;
      case TF32Load::Blocks:  // the raw stage holds tl.C rows of K, each tl.R / 4 chunks along N
        each_tf32_block(tl, [&](const std::string& i, const std::string& nb, const std::string& kb) {
          for (int r = 0; r < 4; ++r)
            line(fmt::format("{}[{}][{}] = {};", vals[t], i, r, at(fmt::format("{} * 4 + {}", kb, r), nb, tl.C, tl.R / 4)));
        });
        break;
      case TF32Load::Elements: throw std::logic_error("read_tf32_stage: element tiles are not staged raw");
    }
  }
}

}  // namespace tritium::jit::cuda::detail
