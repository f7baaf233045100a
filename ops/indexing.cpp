// Indexing ops (ops/indexing.h). One kernel moves the data of all of them: `index_copy` walks an
// index space of up to 6 (collapsed) dims in [rows, columns] tiles, element i at multi-index p:
//     dst[sum p_k a_k (+ off[sum p_k c_k])]  (op)=  src[sum p_k b_k (+ off[sum p_k c_k])]
// where `off` is an i64 tensor of element offsets added on the source side (gather, index_select,
// x[idx]) or on the destination side (scatter, index_add, x[idx] = v), and (op) is a store or an
// atomic add / max / min (scatter_add, index_add, scatter_reduce, accumulate). Each op only works
// out the index space and the three stride sets (0 where a side does not move along a dim), so
// every stride, broadcast and rank takes the same path. Indices along one dim (gather,
// index_select, x[idx] with one index tensor) are checked by the kernel as it goes (negatives
// wrapped first for x[idx]): one launch, a bad index reported through a runtime::DeviceCheck, no
// bounds reductions or offset tensors before it. nonzero has its own three small kernels
// (count per block, scan the counts, write the coordinates).
#include "ops/indexing.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/indexing_kernels.h"
#include "runtime/overlap.h"
#include "ops/shape.h"
#include "runtime/device_checks.h"
#include "runtime/views.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;
using detail::shape_str;

constexpr int kMaxRank = 6;
enum class Mode : int { store, add, max, min, prod };
enum class OffsetSide : int { none, src, dst };
// index_copy's COLS bits: column strides known at compile time.
enum ColumnStrides : int { kDstUnit = 1, kSrcUnit = 2, kIndexUnit = 4, kIndexPerRow = 8, kDstZero = 16, kSrcZero = 32 };
// index_copy's CHECK: indices used as they are, checked against [0, isize), or negatives wrapped
// first (advanced indexing's x[-1]) and then checked.
enum IndexCheck : int { kNoCheck = 0, kInRange = 1, kWrapNegative = 2 };

}  // namespace

namespace {

// index_copy's arguments, shared with index_accumulate.
struct IndexTile {
  P dst, src, off, bad;
  tl::tensor isize, istride, rows, cols;
  std::array<tl::tensor, 5> d, a, b, c;
  tl::tensor a_col, b_col, c_col;
  int RANK, MODE, SIDE, CHECK, DDT, BR, BC, COLS;
};

// The loop of index_accumulate: `n` steps along an index-space dim on which the destination does
// not move (its position comes from the indices), the source and the indices moving b / c a step.
struct OwnedLoop {
  tl::tensor n, b, c;
};

// One program's [BR, BC] tile of the index space (see the top of the file); with `loop`, the
// tile again at each step of the loop, combined into the destination by a load, the op and a
// store (no atomics: the program owns those destination elements).
void index_tile(const IndexTile& t, const std::optional<OwnedLoop>& loop) {
  const int RANK = t.RANK, MODE = t.MODE, SIDE = t.SIDE, CHECK = t.CHECK, DDT = t.DDT, BR = t.BR, BC = t.BC,
            COLS = t.COLS;
  const auto &d = t.d, &a = t.a, &b = t.b, &c = t.c;
  const P &dst = t.dst, &src = t.src, &off = t.off, &bad = t.bad;
  const tl::tensor &isize = t.isize, &istride = t.istride, &rows = t.rows, &cols = t.cols, &a_col = t.a_col,
                   &b_col = t.b_col, &c_col = t.c_col;
  // A [BR, BC] tile: BC elements of the last dim times BR rows (the other dims flattened);
  // a row index is split into the outer dims' indices once per row, not per element.
  // The tile's coordinates divided in 32 bits (fewer than 2^31 programs, so fewer column
  // tiles): a 64-bit division is a ~60-instruction subroutine. Indices are 64-bit after.
  auto pid = tl::program_id(0);
  auto ncb = tl::cdiv(cols, BC).to(tl::int32);
  auto col = (pid % ncb).to(tl::int64) * BC + tl::arange(0, BC);
  auto row = (pid / ncb).to(tl::int64) * BR + tl::arange(0, BR);
  const auto in_tile = (row < rows)(tl::_, tl::None) && (col < cols)(tl::None, tl::_);
  tl::tensor ra = row * 0, rb = row * 0, rc0 = row * 0, rem = row;
  for (int k = RANK - 2; k >= 0; --k) {
    tl::tensor idx = k == 0 ? rem : rem % d[k];
    if (k > 0) rem = rem / d[k];
    ra = ra + idx * a[k];
    rb = rb + idx * b[k];
    rc0 = rc0 + idx * c[k];
  }
  // COLS tells which column strides are known (ColumnStrides): a side with column stride 1
  // is read or written as whole vectors (not a gather / scatter of computed addresses), and
  // indices with column stride 0 (one index per row: index_select, x[idx] along rows) are
  // loaded and checked once per row instead of once per element.
  // The side the indices address has column stride 0 (gather's source, a scatter's
  // destination: the index supplies the column), so no 64-bit multiply per element.
  const bool a_unit = COLS & kDstUnit, b_unit = COLS & kSrcUnit, c_unit = COLS & kIndexUnit,
             c_per_row = COLS & kIndexPerRow, a_zero = COLS & kDstZero, b_zero = COLS & kSrcZero;
  auto tile = [&](const tl::tensor& r, const tl::tensor& stride, bool unit, bool zero = false) {
    if (zero) return tl::broadcast_to(r(tl::_, tl::None), {BR, BC});
    return r(tl::_, tl::None) + (unit ? col : col * stride)(tl::None, tl::_);
  };
  tl::tensor da = tile(ra, a_col, a_unit, a_zero), sb0 = tile(rb, b_col, b_unit, b_zero);
  // An index outside the range is reported through the two slots of `bad` (a DeviceCheck:
  // zero until a kernel writes): bad[0] = the largest index >= isize (> 0: the host checks
  // isize >= 1), bad[1] = the smallest below the range (< 0), each as given. A compare and
  // two predicated atomics: nothing is computed for the good indices.
  // Relaxed atomics (PyTorch's atomicAdd): nothing else of the program is ordered by them,
  // so no fences hold its loads and stores back (acq_rel fenced each of them on the GPU).
  auto report = [&](const tl::tensor& given, const tl::tensor& outside) {
    auto high = given >= isize;
    tl::atomic_max(bad + given * 0, given, outside && high, "relaxed");
    tl::atomic_min(bad + (given * 0 + 1), given, outside && !high, "relaxed");
  };
  // One step: the source offsets sb and index offsets rc at the step's shifts (none without a
  // loop); `mask` starts as the tile's and loses the lanes of bad indices.
  auto step = [&](tl::tensor sb, tl::tensor rc, tl::tensor mask) {
    tl::tensor dd = da;
    if (SIDE != static_cast<int>(OffsetSide::none)) {
      // `off` holds indices along one dim (times istride); with CHECK, an index outside
      // [0, isize) (after wrapping negatives, kWrapNegative) is skipped and reported.
      tl::tensor o;
      if (c_per_row) {
        auto row_mask = row < rows;
        o = tl::load(off + rc, row_mask, 0).to(tl::int64);
        if (CHECK) {
          auto given = o;
          if (CHECK == kWrapNegative) o = o + (o < 0).to(tl::int64) * isize;
          auto outside = row_mask && ((o < 0) || (o >= isize));
          report(given, outside);
          mask = mask && !outside(tl::_, tl::None);
        }
        o = (o * istride)(tl::_, tl::None);
      } else {
        o = tl::load(off + tile(rc, c_col, c_unit), mask, 0).to(tl::int64);
        if (CHECK) {
          auto given = o;
          if (CHECK == kWrapNegative) o = o + (o < 0).to(tl::int64) * isize;
          auto outside = mask && ((o < 0) || (o >= isize));
          report(given, outside);
          mask = mask && !outside;
        }
        o = o * istride;
      }
      if (SIDE == static_cast<int>(OffsetSide::src)) sb = sb + o;
      else dd = dd + o;
    }
    // The side the indices do not address is read or written under the tile's mask alone
    // (constant over a thread's lanes: whole vectors, where a lane-varying mask made them
    // lane-by-lane accesses): a scatter's source is read whatever its index; a gather stores
    // 0 for a bad index, whose op fails anyway.
    const bool on_src = SIDE == static_cast<int>(OffsetSide::src);
    tl::tensor v = tl::load(src + sb, on_src ? mask : in_tile, 0);
    const DType ddt = static_cast<DType>(DDT);
    if (v.dtype() != ddt) v = v.to(ddt);
    if (loop) {  // the program's own elements: load, combine, store
      auto cur = tl::load(dst + dd, mask, 0);
      switch (static_cast<Mode>(MODE)) {
        case Mode::add: v = cur + v; break;
        // maximum / minimum as the atomics combine (a NaN loses to a number, as LLVM's maxnum
        // and CUDA's fmaxf), so the answer does not depend on which path ran.
        case Mode::max: v = tl::maximum(cur, v); break;
        case Mode::min: v = tl::minimum(cur, v); break;
        default: fail("index_accumulate: only add, max and min combine in a loop");
      }
      tl::store(dst + dd, v, mask);
      return;
    }
    switch (static_cast<Mode>(MODE)) {
      case Mode::store: tl::store(dst + dd, v, on_src ? in_tile : mask); break;
      case Mode::add: tl::atomic_add(dst + dd, v, mask, "relaxed"); break;
      case Mode::max: tl::atomic_max(dst + dd, v, mask, "relaxed"); break;
      case Mode::min: tl::atomic_min(dst + dd, v, mask, "relaxed"); break;
      case Mode::prod: fail("index_copy: the product mode has its own kernel (index_prod)");
    }
  };
  if (!loop) {
    step(sb0, rc0, in_tile);
    return;
  }
  for (auto it : tl::range(0, loop->n)) step(sb0 + it * loop->b, rc0 + it * loop->c, in_tile);
}

}  // namespace

Kernel& detail::index_copy_kernel() {
  static Kernel k = tritium::kernel(
      "index_copy",
      [](P dst, P src, P off, P bad, tl::i64 isize, tl::i64 istride, tl::i64 rows, tl::i64 cols,  //
         tl::i64 d0, tl::i64 d1, tl::i64 d2, tl::i64 d3, tl::i64 d4,
         tl::i64 a0, tl::i64 a1, tl::i64 a2, tl::i64 a3, tl::i64 a4, tl::i64 a_col,
         tl::i64 b0, tl::i64 b1, tl::i64 b2, tl::i64 b3, tl::i64 b4, tl::i64 b_col,
         tl::i64 c0, tl::i64 c1, tl::i64 c2, tl::i64 c3, tl::i64 c4, tl::i64 c_col,  //
         int RANK, int MODE, int SIDE, int CHECK, int DDT, int BR, int BC, int COLS) {
        index_tile({dst, src, off, bad, isize, istride, rows, cols, {d0, d1, d2, d3, d4}, {a0, a1, a2, a3, a4},
                    {b0, b1, b2, b3, b4}, {c0, c1, c2, c3, c4}, a_col, b_col, c_col, RANK, MODE, SIDE, CHECK, DDT, BR,
                    BC, COLS},
                   std::nullopt);
      });
  return k;
}

Kernel& detail::index_accumulate_kernel() {
  static Kernel k = tritium::kernel(
      "index_accumulate",
      [](P dst, P src, P off, P bad, tl::i64 isize, tl::i64 istride, tl::i64 rows, tl::i64 cols,  //
         tl::i64 d0, tl::i64 d1, tl::i64 d2, tl::i64 d3, tl::i64 d4,
         tl::i64 a0, tl::i64 a1, tl::i64 a2, tl::i64 a3, tl::i64 a4, tl::i64 a_col,
         tl::i64 b0, tl::i64 b1, tl::i64 b2, tl::i64 b3, tl::i64 b4, tl::i64 b_col,
         tl::i64 c0, tl::i64 c1, tl::i64 c2, tl::i64 c3, tl::i64 c4, tl::i64 c_col,  //
         tl::i64 loop_n, tl::i64 b_loop, tl::i64 c_loop,                                //
         int RANK, int MODE, int SIDE, int CHECK, int DDT, int BR, int BC, int COLS) {
        index_tile({dst, src, off, bad, isize, istride, rows, cols, {d0, d1, d2, d3, d4}, {a0, a1, a2, a3, a4},
                    {b0, b1, b2, b3, b4}, {c0, c1, c2, c3, c4}, a_col, b_col, c_col, RANK, MODE, SIDE, CHECK, DDT, BR,
                    BC, COLS},
                   OwnedLoop{loop_n, b_loop, c_loop});
      });
  return k;
}

// The product mode: no atomic multiply exists, so each element is a compare-and-swap loop
// (Triton's way: `while atomic_cas(p, cur, cur * v) != cur`), comparing bit patterns so that NaN
// and -0.0 behave. Loops are per element, so a program takes LANES scalar elements, each in its
// own run-time loop; the current value is re-read by a CAS that writes nothing new.
Kernel& detail::index_prod_kernel() {
  static Kernel k = tritium::kernel(
      "index_prod",
      [](P dst, P src, P off, tl::i64 istride, tl::i64 n,  //
         tl::i64 d0, tl::i64 d1, tl::i64 d2, tl::i64 d3, tl::i64 d4, tl::i64 d5,
         tl::i64 a0, tl::i64 a1, tl::i64 a2, tl::i64 a3, tl::i64 a4, tl::i64 a5,
         tl::i64 b0, tl::i64 b1, tl::i64 b2, tl::i64 b3, tl::i64 b4, tl::i64 b5,
         tl::i64 c0, tl::i64 c1, tl::i64 c2, tl::i64 c3, tl::i64 c4, tl::i64 c5,  //
         int RANK, int DDT, int LANES) {
        const std::array<tl::tensor, 6> d{d0, d1, d2, d3, d4, d5}, a{a0, a1, a2, a3, a4, a5},
            b{b0, b1, b2, b3, b4, b5}, c{c0, c1, c2, c3, c4, c5};
        const DType ddt = static_cast<DType>(DDT);
        const DType bits = dtype_bits(ddt) == 64 ? DType::i64 : dtype_bits(ddt) == 32 ? DType::i32 : DType::i16;
        auto same = [&](const tl::tensor& x, const tl::tensor& y) {
          return is_float(ddt) ? x.to(bits, true) == y.to(bits, true) : x == y;
        };
        for (int lane = 0; lane < LANES; ++lane) {
          auto i = tl::program_id(0).to(tl::int64) * LANES + lane;
          tl::if_(i < n, [&] {
            tl::tensor da = i * 0, sb = i * 0, oc = i * 0, rem = i;
            for (int k = RANK - 1; k >= 0; --k) {
              tl::tensor idx = k == 0 ? rem : rem % d[k];
              if (k > 0) rem = rem / d[k];
              da = da + idx * a[k];
              sb = sb + idx * b[k];
              oc = oc + idx * c[k];
            }
            tl::tensor p = dst + (da + tl::load(off + oc).to(tl::int64) * istride);
            tl::tensor v = tl::load(src + sb);
            if (v.dtype() != ddt) v = v.to(ddt);
            tl::tensor cur = tl::load(p);
            tl::while_([&] { return !same(tl::atomic_cas(p, cur, cur * v, "relaxed"), cur); },
                       [&] { cur = tl::atomic_cas(p, cur, cur, "relaxed"); });
          });
        }
      });
  return k;
}

namespace {

using detail::index_accumulate_kernel;
using detail::index_copy_kernel;
using detail::index_prod_kernel;

// The index space and, per dim, the strides of dst, src and the offset tensor.
struct Layout {
  Shape sizes;
  std::array<Shape, 3> strides;  // dst, src, off
};

// Size-1 dims dropped; a dim merged into the next inner one where all three sides allow it.
Layout collapse(const Layout& in) {
  Layout out;
  for (size_t k = in.sizes.size(); k-- > 0;) {
    if (in.sizes[k] == 1) continue;
    if (!out.sizes.empty()) {
      bool merge = true;
      for (int j = 0; j < 3; ++j)
        if (in.strides[j][k] != out.strides[j].back() * out.sizes.back()) merge = false;
      if (merge) {
        out.sizes.back() *= in.sizes[k];
        continue;
      }
    }
    out.sizes.push_back(in.sizes[k]);
    for (int j = 0; j < 3; ++j) out.strides[j].push_back(in.strides[j][k]);
  }
  std::reverse(out.sizes.begin(), out.sizes.end());
  for (auto& s : out.strides) std::reverse(s.begin(), s.end());
  return out;
}

// A 0-dim view `delta` elements further into t's storage (a base address for a host-loop step).
Tensor shifted(const Tensor& t, int64_t delta) { return t.as_strided({}, {}, t.storage_offset() + delta); }

// What the kernel checks and scales: `off` as indices along a dim of `size` elements and `stride`
// (checked: out-of-range indices reported through `bad`), or as ready element offsets.
struct IndexScale {
  int64_t size = 0, stride = 1;
  bool check = false;
  bool wrap = false;  // negatives count from the end (checked after wrapping)
  Tensor bad;  // the two slots of a runtime::DeviceCheck (index_copy's `report`)
};

// Where add / max / min into the destination runs without atomics: on the CPU (x86 has no float
// atomic add - a compare-and-swap loop an element - and PyTorch's CPU kernels split the work
// so that no two threads write one element), when exactly one dim of the index space leaves the
// destination where it is (its position along the indexed dim comes from the indices: index_add's
// and scatter_add's dim, accumulate's index dims). That dim becomes a loop inside each program
// (index_accumulate) and the others are tiled as usual: points of different tiles differ in a dim
// the destination moves along, so no element is written by two programs, and one program's
// steps run in order. On the GPU the atomics stay: a tile of the other dims is often too few
// programs to fill it (index_add along the rows of [1024, 1024]: one program).
struct Owned {
  Layout rest;  // the index space without the loop dim
  int64_t n = 0, src_step = 0, index_step = 0;
};
std::optional<Owned> owned_loop(const Tensor& dst, const Layout& l, Mode mode, OffsetSide side) {
  if (!dst.device().is_cpu() || side != OffsetSide::dst) return std::nullopt;
  if (mode != Mode::add && mode != Mode::max && mode != Mode::min) return std::nullopt;
  std::optional<size_t> at;
  for (size_t k = 0; k < l.sizes.size(); ++k)
    if (l.strides[0][k] == 0) {
      if (at) return std::nullopt;  // two such dims (a broadcast on the destination side): atomics
      at = k;
    }
  // Not the innermost dim (scatter_add along the last dim): each step would then touch one
  // element of every row, a column at a time across rows (14 ms against 3.7 with the atomics
  // for [1024, 1024] f32 on one core); within a row the scatter's targets may repeat, so a row's
  // steps cannot be combined in one tile either.
  if (!at || *at + 1 == l.sizes.size() || static_cast<int>(l.sizes.size()) - 1 > kMaxRank) return std::nullopt;
  Owned o{l, l.sizes[*at], l.strides[1][*at], l.strides[2][*at]};
  o.rest.sizes.erase(o.rest.sizes.begin() + static_cast<std::ptrdiff_t>(*at));
  for (auto& st : o.rest.strides) st.erase(st.begin() + static_cast<std::ptrdiff_t>(*at));
  return o;
}

void launch(const Tensor& dst, const Tensor& src, const Tensor& off, const Layout& l0, Mode mode, OffsetSide side,
            const IndexScale& scale) {
  const std::optional<Owned> owned = owned_loop(dst, l0, mode, side);
  const Layout& l = owned ? owned->rest : l0;
  if (owned && owned->n == 0) return;
  if (!owned && static_cast<int>(l.sizes.size()) > kMaxRank) {  // more dims than the kernel takes: loop the outermost
    Layout sub = l;
    sub.sizes.erase(sub.sizes.begin());
    for (auto& s : sub.strides) s.erase(s.begin());
    for (int64_t i = 0; i < l.sizes[0]; ++i)
      launch(shifted(dst, i * l.strides[0][0]), shifted(src, i * l.strides[1][0]),
             side == OffsetSide::none ? off : shifted(off, i * l.strides[2][0]), sub, mode, side, scale);
    return;
  }
  int64_t n = 1;
  for (int64_t s : l.sizes) n *= s;
  if (n == 0) return;
  std::array<int64_t, 6> d{1, 1, 1, 1, 1, 1};
  std::array<std::array<int64_t, 6>, 3> s{};
  for (size_t k = 0; k < l.sizes.size(); ++k) {
    d[k] = l.sizes[k];
    for (int j = 0; j < 3; ++j) s[j][k] = l.strides[j][k];
  }
  const Tensor& o = side == OffsetSide::none ? src : off;
  if (mode == Mode::prod) {
    const int64_t lanes = 16;
    index_prod_kernel()[{cdiv(n, lanes)}](
        dst, src, o, scale.stride, n, d[0], d[1], d[2], d[3], d[4], d[5],  //
        s[0][0], s[0][1], s[0][2], s[0][3], s[0][4], s[0][5], s[1][0], s[1][1], s[1][2], s[1][3], s[1][4], s[1][5],
        s[2][0], s[2][1], s[2][2], s[2][3], s[2][4], s[2][5], static_cast<int>(l.sizes.size()),
        static_cast<int>(dst.dtype()), static_cast<int>(lanes));
    return;
  }
  // Tiles of [br, bc]: the last dim is the columns, the others the rows (as ew_strided).
  const int rank = std::max<int>(1, static_cast<int>(l.sizes.size()));
  const int64_t cols = l.sizes.empty() ? 1 : l.sizes.back(), rows = n / cols;
  std::array<std::array<int64_t, 6>, 3> t{};  // outer strides 0..4, the column stride at 5
  for (int j = 0; j < 3; ++j) {
    for (int k = 0; k + 1 < rank; ++k) t[j][static_cast<size_t>(k)] = s[j][static_cast<size_t>(k)];
    t[j][5] = l.sizes.empty() ? 0 : s[j][static_cast<size_t>(rank - 1)];
  }
  std::array<int64_t, 5> outer{1, 1, 1, 1, 1};
  for (int k = 0; k + 1 < rank; ++k) outer[static_cast<size_t>(k)] = d[static_cast<size_t>(k)];
  auto pow4_ceil = [](int64_t x) {
    int64_t p = 1;
    while (p < x) p *= 4;
    return p;
  };
  int cols_known = (t[0][5] == 1 ? kDstUnit : t[0][5] == 0 ? kDstZero : 0) | (t[1][5] == 1 ? kSrcUnit : t[1][5] == 0 ? kSrcZero : 0);
  if (side != OffsetSide::none) cols_known |= t[2][5] == 1 ? kIndexUnit : t[2][5] == 0 ? kIndexPerRow : 0;
  const int64_t tile = detail::kIndexCopyTile;
  const int64_t bc = cols >= tile ? tile : std::max<int64_t>(16, pow4_ceil(cols));
  const int64_t br = std::max<int64_t>(1, std::min(tile / bc, pow4_ceil(rows)));
  const int check = !scale.check ? kNoCheck : scale.wrap ? kWrapNegative : kInRange;
  const Tensor& bad = scale.check ? scale.bad : o;
  if (owned) {
    index_accumulate_kernel()[{cdiv(rows, br) * cdiv(cols, bc)}](
        dst, src, o, bad, scale.size, scale.stride, rows, cols, outer[0], outer[1], outer[2], outer[3], outer[4],  //
        t[0][0], t[0][1], t[0][2], t[0][3], t[0][4], t[0][5],                                                 //
        t[1][0], t[1][1], t[1][2], t[1][3], t[1][4], t[1][5],                                                 //
        t[2][0], t[2][1], t[2][2], t[2][3], t[2][4], t[2][5],                                                 //
        owned->n, owned->src_step, owned->index_step, rank, static_cast<int>(mode), static_cast<int>(side), check,
        static_cast<int>(dst.dtype()), static_cast<int>(br), static_cast<int>(bc), cols_known);
    return;
  }
  index_copy_kernel()[{cdiv(rows, br) * cdiv(cols, bc)}](
      dst, src, o, bad, scale.size, scale.stride, rows, cols,  //
      outer[0], outer[1], outer[2], outer[3], outer[4],       //
      t[0][0], t[0][1], t[0][2], t[0][3], t[0][4], t[0][5],   //
      t[1][0], t[1][1], t[1][2], t[1][3], t[1][4], t[1][5],   //
      t[2][0], t[2][1], t[2][2], t[2][3], t[2][4], t[2][5],   //
      rank, static_cast<int>(mode), static_cast<int>(side), check, static_cast<int>(dst.dtype()), static_cast<int>(br),
      static_cast<int>(bc), cols_known);
}

void check_combinable(const char* op, const Tensor& dst, Mode mode) {
  if (mode != Mode::store && dtype_bits(dst.dtype()) < 16)
    fail("{}: dtype {} is not supported when values combine (atomics need 16, 32 or 64-bit elements)", op,
         dtype_name(dst.dtype()));
}

// `off` holds element offsets (advanced indexing, checked before).
void run(const char* op, const Tensor& dst, const Tensor& src, const Tensor& off, const Layout& l, Mode mode,
         OffsetSide side) {
  check_combinable(op, dst, mode);
  launch(dst, src, off, collapse(l), mode, side, IndexScale{});
}

void check_bounds(const char* op, const Tensor& index, int64_t size, int dim, bool allow_negative);
int64_t read_i64(const Tensor& t);

// `index` holds indices along dim `dim` (size, stride of the indexed side): the index_copy kernel
// checks them as it goes and reports a bad one through a runtime::DeviceCheck (no read back per
// call on CUDA); the product's kernel has them checked before (it cannot skip a lane's loop cheaply).
void run_indexed(const char* op, const Tensor& dst, const Tensor& src, const Tensor& index, const Layout& l, Mode mode,
                 OffsetSide side, int dim, int64_t size, int64_t stride, bool wrap = false) {
  check_combinable(op, dst, mode);
  if (wrap && mode == Mode::prod) fail("{}: internal: negative indices are not wrapped in the product mode", op);
  IndexScale scale{size, stride, mode != Mode::prod, wrap, Tensor()};
  if (mode == Mode::prod) {
    check_bounds(op, index, size, dim, false);
    launch(dst, src, index, collapse(l), mode, side, scale);
    return;
  }
  // Reported at the launch on the CPU, at the next host read or sync on CUDA (runtime/device_checks.h).
  // An empty dim makes every index bad, and the kernel's codes need size >= 1: say so now.
  if (size == 0 && index.numel() > 0)
    fail("{}: index {} is out of bounds for dimension {} with size 0", op,
         read_i64(index.as_strided({1}, {1}, index.storage_offset())), dim);
  runtime::DeviceCheck check(dst.device(), 2, [op = std::string(op), dim, size](const int64_t* code) {
    return fmt::format("{}: index {} is out of bounds for dimension {} with size {}", op,
                       code[0] != 0 ? code[0] : code[1], dim, size);
  });
  scale.bad = check.slots();
  launch(dst, src, index, collapse(l), mode, side, scale);
  check.launched();
}

// ---- argument checks -------------------------------------------------------------------------

bool is_index_dtype(DType d) { return d == DType::i64 || d == DType::i32; }

void check_index_dtype(const char* op, const Tensor& index) {
  if (!is_index_dtype(index.dtype()))
    fail("{}: expected an index tensor of dtype i64 or i32, got {} (dtype {})", op, index.str(), dtype_name(index.dtype()));
}

int64_t read_i64(const Tensor& t) { return to_dtype(t, DType::i64).to_vector<int64_t>().at(0); }

// Every index in [0, size) (or [-size, size) where negatives wrap): one reduction each way and
// one element read back, before anything is launched.
void check_bounds(const char* op, const Tensor& index, int64_t size, int dim, bool allow_negative) {
  if (index.numel() == 0) return;
  int64_t lo = read_i64(amin(index)), hi = read_i64(amax(index));
  int64_t bad = lo < (allow_negative ? -size : 0) ? lo : hi >= size ? hi : 0;
  if (lo < (allow_negative ? -size : 0) || hi >= size)
    fail("{}: index {} is out of bounds for dimension {} with size {}", op, bad, dim, size);
}

// Element offsets of the indices along a dim of stride `stride` (negatives wrapped by `size`), i64.
Tensor offsets_of(const Tensor& index, int64_t stride, int64_t size, bool wrap) {
  Tensor idx = to_dtype(index, DType::i64);
  if (wrap) idx = where(lt(idx, Scalar(0)), add(idx, Scalar(size)), idx);
  return mul(idx, Scalar(stride));
}

// A 0-dim tensor seen as [1] (the along-a-dim ops treat a scalar as one element).
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.as_strided({1}, {1}, t.storage_offset()) : t; }

Shape with(Shape s, int d, int64_t v) {
  s[static_cast<size_t>(d)] = v;
  return s;
}

// ---- gather / scatter ------------------------------------------------------------------------------

// Shared checks of gather and the scatters: index of the input's rank, within its sizes.
int along_dim_checks(const char* op, const Tensor& x, int dim, const Tensor& index, const Tensor* src) {
  std::vector<const Tensor*> ts{&x, &index};
  if (src) ts.push_back(src);
  detail::check_tensors(op, ts);
  check_index_dtype(op, index);
  int d = detail::normalize_dim(op, dim, x.dim());
  Tensor xv = as_1d(x), iv = as_1d(index);
  if (iv.dim() != xv.dim())
    fail("{}: index tensor must have the same number of dimensions as input tensor (index {}, input {})", op,
         shape_str(index.shape()), shape_str(x.shape()));
  for (int k = 0; k < xv.dim(); ++k) {
    if (k != d && iv.size(k) > xv.size(k))
      fail("{}: size {} of index {} exceeds the input's size {} in dimension {} (expected index.size(d) <= "
           "input.size(d) for all d != {})",
           op, iv.size(k), shape_str(index.shape()), xv.size(k), k, d);
    if (src && iv.size(k) > as_1d(*src).size(k))
      fail("{}: size {} of index {} exceeds the source's size {} in dimension {} (expected index.size(d) <= "
           "src.size(d) for all d)",
           op, iv.size(k), shape_str(index.shape()), as_1d(*src).size(k), k);
  }
  return d;
}

// Scatters src (or a 0-dim value) into `out` itself.
void scatter_in_place(const char* op, const Tensor& out, int dim, const Tensor& index, const Tensor& src,
                      bool src_is_value, Mode mode) {
  int d = along_dim_checks(op, out, dim, index, src_is_value ? nullptr : &src);
  if (!src_is_value && src.dtype() != out.dtype())
    fail("{}: expected self.dtype to be equal to src.dtype (self {}, src {})", op, dtype_name(out.dtype()),
         dtype_name(src.dtype()));
  Tensor ov = as_1d(out), iv = as_1d(index), sv = src_is_value ? src : as_1d(src);
  Layout l{iv.shape(), {with(ov.strides(), d, 0), src_is_value ? Shape(iv.shape().size(), 0) : sv.strides(),
                        iv.strides()}};
  run_indexed(op, ov, sv, iv, l, mode, OffsetSide::dst, d, ov.size(d), ov.stride(d));
}

// The out-of-place scatters: a copy of x, then scattered into.
Tensor scatter_into(const char* op, const Tensor& x, int dim, const Tensor& index, const Tensor& src, bool src_is_value,
                    Mode mode) {
  detail::check_tensors(op, {&x});
  Tensor out = clone(x);
  scatter_in_place(op, out, dim, index, src, src_is_value, mode);
  return out;
}

Scalar extreme(DType t, bool lowest) {
  if (is_float(t)) return Scalar(lowest ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
  switch (t) {
    case DType::i16: return Scalar(lowest ? int64_t(INT16_MIN) : int64_t(INT16_MAX));
    case DType::i32: return Scalar(lowest ? int64_t(INT32_MIN) : int64_t(INT32_MAX));
    case DType::i64: return Scalar(lowest ? INT64_MIN : INT64_MAX);
    case DType::u16: return Scalar(lowest ? int64_t(0) : int64_t(UINT16_MAX));
    case DType::u32: return Scalar(lowest ? int64_t(0) : int64_t(UINT32_MAX));
    default: break;
  }
  fail("scatter_reduce: no extreme value for dtype {}", dtype_name(t));
}

}  // namespace

Tensor gather(const Tensor& x, int dim, const Tensor& index) {
  int d = along_dim_checks("gather", x, dim, index, nullptr);
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device());
  Tensor xv = as_1d(x), iv = as_1d(index), ov = as_1d(out);
  run_indexed("gather", ov, xv, iv, {iv.shape(), {ov.strides(), with(xv.strides(), d, 0), iv.strides()}}, Mode::store,
              OffsetSide::src, d, xv.size(d), xv.stride(d));
  return out;
}

Tensor scatter(const Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  return scatter_into("scatter", x, dim, index, src, false, Mode::store);
}

Tensor scatter(const Tensor& x, int dim, const Tensor& index, Scalar value) {
  detail::check_tensors("scatter", {&x});
  return scatter_into("scatter", x, dim, index, full({}, value, x.dtype(), x.device()), true, Mode::store);
}

Tensor scatter_add(const Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  return scatter_into("scatter_add", x, dim, index, src, false, Mode::add);
}

Tensor& scatter_add_(Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  detail::check_tensors("scatter_add_", {&x});
  runtime::check_no_internal_overlap("scatter_add_", x);
  scatter_in_place("scatter_add_", x, dim, index, src, false, Mode::add);
  return x;
}

Tensor scatter_reduce(const Tensor& x, int dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self) {
  const char* op = "scatter_reduce";
  if (reduce != "sum" && reduce != "prod" && reduce != "mean" && reduce != "amax" && reduce != "amin")
    fail("scatter_reduce: reduce argument must be either sum, prod, mean, amax or amin, got {}", reduce);
  detail::check_tensors(op, {&x, &index, &src});
  if (reduce == "mean" && !is_float(x.dtype()))
    fail("scatter_reduce: reduce='mean' needs a floating-point tensor, got {} (PyTorch floor-divides integers)",
         dtype_name(x.dtype()));
  // Without self, the scattered positions first get the reduction's identity.
  Tensor base = x;
  if (!include_self) {
    Scalar identity = reduce == "amax"   ? extreme(x.dtype(), true)
                      : reduce == "amin" ? extreme(x.dtype(), false)
                      : reduce == "prod" ? Scalar(1)
                                         : Scalar(0);
    base = scatter(x, dim, index, identity);
  }
  if (reduce == "sum") return scatter_into(op, base, dim, index, src, false, Mode::add);
  if (reduce == "amax") return scatter_into(op, base, dim, index, src, false, Mode::max);
  if (reduce == "amin") return scatter_into(op, base, dim, index, src, false, Mode::min);
  if (reduce == "prod") return scatter_into(op, base, dim, index, src, false, Mode::prod);
  // mean: the sum over the count of values reduced into each position (self counting once).
  Tensor total = scatter_into(op, base, dim, index, src, false, Mode::add);
  Tensor count = include_self ? ones_like(x) : zeros_like(x);
  count = scatter_into(op, count, dim, index, ones(index.shape(), x.dtype(), x.device()), false, Mode::add);
  count = where(eq(count, Scalar(0)), ones({}, x.dtype(), x.device()), count);
  return div(total, count);
}

Tensor index_select(const Tensor& x, int dim, const Tensor& index) {
  detail::check_tensors("index_select", {&x, &index});
  check_index_dtype("index_select", index);
  if (index.dim() > 1) fail("index_select: index must be a vector (1-D) or a scalar, got {}", shape_str(index.shape()));
  int d = detail::normalize_dim("index_select", dim, x.dim());
  Tensor xv = as_1d(x), iv = as_1d(index);
  Shape shape = with(xv.shape(), d, iv.numel());
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  run_indexed("index_select", out, xv, iv,
              {shape, {out.strides(), with(xv.strides(), d, 0), with(Shape(shape.size(), 0), d, iv.stride(0))}},
              Mode::store, OffsetSide::src, d, xv.size(d), xv.stride(d));
  return x.dim() == 0 ? runtime::view_of(out, index.shape()) : out;
}

namespace {

// Adds alpha * source along dim at index into `out` itself.
void index_add_in_place(const char* op, const Tensor& out, int dim, const Tensor& index, const Tensor& source,
                        Scalar alpha) {
  const Tensor& x = out;
  detail::check_tensors(op, {&x, &index, &source});
  check_index_dtype(op, index);
  if (index.dim() > 1) fail("index_add: index must be a vector (1-D) or a scalar, got {}", shape_str(index.shape()));
  int d = detail::normalize_dim(op, dim, x.dim());
  Tensor xv = as_1d(x), iv = as_1d(index), sv = as_1d(source);
  if (sv.dim() != xv.dim())
    fail("index_add: source {} and self {} must have the same number of dimensions", shape_str(source.shape()),
         shape_str(x.shape()));
  for (int k = 0; k < xv.dim(); ++k)
    if (k != d && sv.size(k) != xv.size(k))
      fail("index_add: source {} and self {} must match in every dimension but {} (dimension {}: {} vs {})",
           shape_str(source.shape()), shape_str(x.shape()), d, k, sv.size(k), xv.size(k));
  if (sv.size(d) != iv.numel())
    fail("index_add: number of indices ({}) should be equal to source.size(dim) ({})", iv.numel(), sv.size(d));
  if (source.dtype() != x.dtype())
    fail("index_add: self ({}) and source ({}) must have the same dtype", dtype_name(x.dtype()), dtype_name(source.dtype()));
  Tensor ov = as_1d(out);
  Tensor src = alpha.to_double() == 1.0 ? sv : to_dtype(mul(sv, alpha), x.dtype());
  run_indexed(op, ov, src, iv,
              {sv.shape(), {with(ov.strides(), d, 0), src.strides(), with(Shape(sv.shape().size(), 0), d, iv.stride(0))}},
              Mode::add, OffsetSide::dst, d, ov.size(d), ov.stride(d));
}

}  // namespace

Tensor index_add(const Tensor& x, int dim, const Tensor& index, const Tensor& source, Scalar alpha) {
  detail::check_tensors("index_add", {&x});
  Tensor out = clone(x);
  index_add_in_place("index_add", out, dim, index, source, alpha);
  return out;
}

Tensor& index_add_(Tensor& x, int dim, const Tensor& index, const Tensor& source, Scalar alpha) {
  detail::check_tensors("index_add_", {&x});
  runtime::check_no_internal_overlap("index_add_", x);
  index_add_in_place("index_add_", x, dim, index, source, alpha);
  return x;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  detail::check_tensors("masked_fill", {&x, &mask});
  if (mask.dtype() != DType::i1)
    fail("masked_fill: expected a bool mask, got {} (dtype {})", mask.str(), dtype_name(mask.dtype()));
  if (detail::broadcast_shapes("masked_fill", x.shape(), mask.shape()) != x.shape())
    fail("masked_fill: the mask of shape {} cannot be broadcast to the input's shape {}", shape_str(mask.shape()),
         shape_str(x.shape()));
  return where(mask, full({}, value, x.dtype(), x.device()), x);
}

// ---- nonzero -------------------------------------------------------------------------------------

namespace {
constexpr int kScanBlock = 1024;
}  // namespace

// counts[p] = the nonzeros of block p.
Kernel& detail::nonzero_count_kernel() {
  static Kernel k = tritium::kernel("nonzero_count", [](P x, P counts, tl::i64 n, int BLOCK) {
    auto pid = tl::program_id(0).to(tl::int64);
    auto i = pid * BLOCK + tl::arange(0, BLOCK);
    auto m = i < n;
    auto nz = (tl::load(x + i, m, 0) != 0) && m;
    tl::store(counts + pid, tl::sum(nz.to(tl::int64)));
  });
  return k;
}

// One program: starts[p] = counts[0] + ... + counts[p-1]; total[0] = the sum of all.
Kernel& detail::nonzero_scan_kernel() {
  static Kernel k = tritium::kernel("nonzero_scan", [](P counts, P starts, P total, tl::i64 nb, int BLOCK) {
    auto carry = tl::zeros({}, tl::int64);
    for (auto j : tl::range(0, nb, BLOCK)) {
      auto idx = j + tl::arange(0, BLOCK);
      auto m = idx < nb;
      auto c = tl::load(counts + idx, m, 0);
      tl::store(starts + idx, tl::cumsum(c, 0) - c + carry, m);
      carry = carry + tl::sum(c);
    }
    tl::store(total, carry);
  });
  return k;
}

// Each nonzero writes its RANK coordinates at row starts[block] + (its rank within the block).
// dims holds (size, product of the inner sizes) per dim.
Kernel& detail::nonzero_write_kernel() {
  static Kernel k = tritium::kernel("nonzero_write", [](P x, P starts, P out, P dims, tl::i64 n, int RANK, int BLOCK) {
    auto pid = tl::program_id(0).to(tl::int64);
    auto i = pid * BLOCK + tl::arange(0, BLOCK);
    auto m = i < n;
    auto nz = (tl::load(x + i, m, 0) != 0) && m;
    auto row = tl::load(starts + pid) + tl::cumsum(nz.to(tl::int64), 0) - 1;
    // The last dim's inner product is 1 and nothing lies outside the first: a 1-D input needs no
    // division, a 2-D one two per element.
    for (int k = 0; k < RANK; ++k) {
      tl::tensor c = k + 1 < RANK ? i / tl::load(dims + (2 * k + 1)) : i;
      if (k > 0) c = c % tl::load(dims + 2 * k);
      tl::store(out + (row * RANK + k), c, nz);
    }
  });
  return k;
}

Tensor nonzero(const Tensor& x) {
  using detail::nonzero_count_kernel, detail::nonzero_scan_kernel, detail::nonzero_write_kernel;
  detail::check_tensors("nonzero", {&x});
  const int64_t rank = x.dim(), n = x.numel();
  if (n == 0) return Tensor::empty({0, rank}, DType::i64, x.device());
  Tensor xc = contiguous(x);
  const int64_t nb = cdiv(n, int64_t(kScanBlock));
  Tensor counts = Tensor::empty({nb}, DType::i64, x.device()), starts = Tensor::empty({nb}, DType::i64, x.device());
  Tensor total = Tensor::empty({1}, DType::i64, x.device());
  nonzero_count_kernel()[{nb}](xc, counts, n, kScanBlock);
  nonzero_scan_kernel()[{1}](counts, starts, total, nb, kScanBlock);
  const int64_t count = total.to_vector<int64_t>()[0];  // the output's size: one element read back
  Tensor out = Tensor::empty({count, rank}, DType::i64, x.device());
  if (count == 0 || rank == 0) return out;
  std::vector<int64_t> dims;
  int64_t inner = n;
  for (int64_t s : x.shape()) {
    inner = s == 0 ? 0 : inner / s;
    dims.insert(dims.end(), {s, inner});
  }
  Tensor dims_t = Tensor::from_vector(dims, {2 * rank}, x.device());
  nonzero_write_kernel()[{nb}](xc, starts, out, dims_t, n, static_cast<int>(rank), kScanBlock);
  return out;
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  detail::check_tensors("masked_select", {&x, &mask});
  if (mask.dtype() != DType::i1)
    fail("masked_select: expected a bool mask, got {} (dtype {})", mask.str(), dtype_name(mask.dtype()));
  Shape b = detail::broadcast_shapes("masked_select", x.shape(), mask.shape());
  int64_t n = 1;
  for (int64_t s : b) n *= s;
  Tensor flat_x = reshape(runtime::expand_of(x, b), {n});
  Tensor positions = runtime::view_of(nonzero(reshape(runtime::expand_of(mask, b), {n})), {-1});
  return index_select(flat_x, 0, positions);
}

// ---- advanced indexing -------------------------------------------------------------------------

namespace {

// One index tensor per dim (undefined: all of it): bool masks become their nonzero coordinates.
std::vector<Tensor> expand_masks(const char* op, const Tensor& x, const std::vector<Tensor>& indices) {
  std::vector<Tensor> out;
  for (const Tensor& t : indices) {
    if (!t.defined()) {
      out.push_back(t);
      continue;
    }
    if (t.device() != x.device())
      fail("{}: indices are on {} but the indexed tensor is on {}", op, t.device().str(), x.device().str());
    if (t.dtype() == DType::i1 || t.dtype() == DType::u8) {
      const size_t first = out.size();
      if (first + static_cast<size_t>(t.dim()) > static_cast<size_t>(x.dim()))
        fail("{}: too many indices for tensor of dimension {}", op, x.dim());
      for (int j = 0; j < t.dim(); ++j)
        if (t.size(j) != x.shape()[first + static_cast<size_t>(j)])
          fail("{}: the shape of the mask {} at index {} does not match the shape of the indexed tensor {} at index {}",
               op, shape_str(t.shape()), j, shape_str(x.shape()), first + static_cast<size_t>(j));
      Tensor mask = t.dtype() == DType::i1 ? t : gt(t, Scalar(0));  // u8: nonzero bytes
      Tensor nz = nonzero(mask);
      for (int j = 0; j < t.dim(); ++j) out.push_back(runtime::select_of(nz, 1, j));
      continue;
    }
    if (!is_int(t.dtype()))
      fail("{}: tensors used as indices must be long, int, byte or bool tensors, got {}", op, dtype_name(t.dtype()));
    if (!is_index_dtype(t.dtype())) fail("{}: integer indices must be i64 or i32, got {}", op, dtype_name(t.dtype()));
    out.push_back(t);
  }
  if (out.size() > static_cast<size_t>(x.dim()))
    fail("{}: too many indices for tensor of dimension {} (got {})", op, x.dim(), out.size());
  return out;
}

// Where the indexed elements are: the result's shape, and per result dim the stride in x and in
// the combined offset tensor (one i64 offset per broadcast index position).
struct Plan {
  Shape result;
  Shape x_strides, off_strides;
  Tensor off;
  // One index tensor (x[idx], x[:, idx], a mask's nonzero): `off` is that tensor as given, indices
  // along dim `dim`, checked and wrapped by the kernel as it goes (one launch, no bounds reductions
  // and offset tensors before it).
  int dim = -1;
};

Plan plan(const char* op, const Tensor& x, const std::vector<Tensor>& idx) {
  std::vector<int> indexed;
  Shape b;
  for (size_t k = 0; k < idx.size(); ++k)
    if (idx[k].defined()) {
      b = indexed.empty() ? idx[k].shape() : detail::broadcast_shapes(op, b, idx[k].shape());
      indexed.push_back(static_cast<int>(k));
    }
  Plan p;
  if (indexed.size() == 1) {
    p.dim = indexed[0];
    p.off = idx[static_cast<size_t>(p.dim)];
  } else {
    for (int k : indexed) {
      const int64_t size = x.shape()[static_cast<size_t>(k)];
      check_bounds(op, idx[static_cast<size_t>(k)], size, k, true);
      Tensor o = offsets_of(idx[static_cast<size_t>(k)], x.strides()[static_cast<size_t>(k)], size, true);
      p.off = p.off.defined() ? add(p.off, o) : o;
    }
    if (p.off.shape() != b) p.off = contiguous(runtime::expand_of(p.off, b));
  }
  bool adjacent = indexed.back() - indexed.front() + 1 == static_cast<int>(indexed.size());
  auto push_x = [&](int k) {
    p.result.push_back(x.shape()[static_cast<size_t>(k)]);
    p.x_strides.push_back(x.strides()[static_cast<size_t>(k)]);
    p.off_strides.push_back(0);
  };
  auto push_b = [&] {
    for (int j = 0; j < static_cast<int>(b.size()); ++j) {
      p.result.push_back(b[static_cast<size_t>(j)]);
      p.x_strides.push_back(0);
      p.off_strides.push_back(p.off.strides()[static_cast<size_t>(j)]);
    }
  };
  auto is_indexed = [&](int k) { return k < static_cast<int>(idx.size()) && idx[static_cast<size_t>(k)].defined(); };
  if (!adjacent) push_b();
  for (int k = 0; k < x.dim(); ++k) {
    if (!is_indexed(k)) push_x(k);
    else if (adjacent && k == indexed.front()) push_b();
  }
  return p;
}

bool any_defined(const std::vector<Tensor>& idx) {
  return std::any_of(idx.begin(), idx.end(), [](const Tensor& t) { return t.defined(); });
}

}  // namespace

Tensor index(const Tensor& x, const std::vector<Tensor>& indices) {
  detail::check_tensors("index", {&x});
  std::vector<Tensor> idx = expand_masks("index", x, indices);
  if (!any_defined(idx)) return x;
  Plan p = plan("index", x, idx);
  Tensor out = Tensor::empty(p.result, x.dtype(), x.device());
  const Layout l{p.result, {out.strides(), p.x_strides, p.off_strides}};
  if (p.dim >= 0)
    run_indexed("index", out, x, p.off, l, Mode::store, OffsetSide::src, p.dim, x.size(p.dim), x.stride(p.dim), true);
  else
    run("index", out, x, p.off, l, Mode::store, OffsetSide::src);
  return out;
}

void index_put_(Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  detail::check_tensors("index_put_", {&x, &values});
  if (values.dtype() != x.dtype())
    fail("index_put_: index put requires the source and destination dtypes match, got {} for the destination and {} "
         "for the source",
         dtype_name(x.dtype()), dtype_name(values.dtype()));
  std::vector<Tensor> idx = expand_masks("index_put_", x, indices);
  if (!any_defined(idx)) {  // x[...] = values: a broadcasting copy
    if (accumulate) copy_(x, add(x, values));
    else copy_(x, values);
    return;
  }
  Plan p = plan("index_put_", x, idx);
  int bad = 0;
  auto b = ir::broadcast_shape(p.result, values.shape(), &bad);
  if (!b || *b != p.result)
    fail("index_put_: shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
         shape_str(values.shape()), shape_str(p.result));
  Tensor v = runtime::expand_of(values, p.result);
  const Layout l{p.result, {p.x_strides, v.strides(), p.off_strides}};
  const Mode mode = accumulate ? Mode::add : Mode::store;
  if (p.dim >= 0)
    run_indexed("index_put_", x, v, p.off, l, mode, OffsetSide::dst, p.dim, x.size(p.dim), x.stride(p.dim), true);
  else
    run("index_put_", x, v, p.off, l, mode, OffsetSide::dst);
}

}  // namespace tritium::ops
