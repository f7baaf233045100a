// Reductions: sum mean amax amin argmax argmin sum_to (docs/ops.md).
//
// Every reduction is brought to one 3-D problem on the input's own strides:
//     out[o * I + i] = reduce over r of x[o * so + r * sr + i * si]
// The reduced dims (size-1 dims dropped, sorted by stride) must merge into one dim r; the kept
// dims before them into o, those after into i. Reduced dims on both sides of a kept one are
// reduced in two launches, the innermost ones first (a bias gradient's sum over N, H, W of NCHW).
// Otherwise, when that is impossible (dims that do not merge, argmax / argmin), the input is first
// permuted (kept dims first, reduced last) and copied contiguous (ops::contiguous, a kernel),
// which always merges.
// Two variants of one kernel:
//  - I == 1 ("rows"): a program reduces BO rows, looping over r in blocks of BR, accumulating a
//    [BO, BR] block that is reduced along axis 1 at the end (vector loads when sr == 1).
//  - I > 1 ("columns"): a program reduces a [BR, BI] block along axis 0, vectorised across i.
// When those programs cannot fill the device (ops/reduce_plan.h decides), r is cut into S
// chunks: a first launch writes partials [O, S] (rows) or [O, S, I] (columns) in the
// accumulation type - for argmax/argmin the value and its index - and a second reduces them
// over S (for argmax/argmin taking the indices from the partials). The other kinds do it in one
// launch: the last program of each tile to finish (an atomic counter) combines the partials.
// Accumulation: sum/mean of f16/bf16/f32 in f32, f64 in f64, integers and bool in i64 (the
// output of sum of integers is i64, as PyTorch). amax/amin propagate NaN; argmax/argmin return
// the first index of the extreme value (NaN counts as the extreme, as PyTorch).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/reduce_kernels.h"
#include "ops/reduce_plan.h"
#include "ops/reduce_rows.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;
using detail::shape_str;
using detail::plan_reduce;
using detail::reduce_device;
using detail::ReducePlan;

enum class Red : int { sum, mean, max, min, argmax, argmin };

const char* red_name(Red r) {
  switch (r) {
    case Red::sum: return "sum";
    case Red::mean: return "mean";
    case Red::max: return "amax";
    case Red::min: return "amin";
    case Red::argmax: return "argmax";
    case Red::argmin: return "argmin";
  }
  return "?";
}

bool is_arg(Red r) { return r == Red::argmax || r == Red::argmin; }
bool is_max(Red r) { return r == Red::max || r == Red::argmax; }

// The identity of max (lowest value) or min (highest value) in dtype d.
tl::tensor extreme(const ir::Shape& shape, DType d, bool lowest) {
  double inf = std::numeric_limits<double>::infinity();
  if (is_float(d)) return tl::full(shape, lowest ? -inf : inf, d);
  switch (d) {
    case DType::i8: return tl::full(shape, lowest ? INT8_MIN : INT8_MAX, d);
    case DType::i16: return tl::full(shape, lowest ? INT16_MIN : INT16_MAX, d);
    case DType::i32: return tl::full(shape, lowest ? INT32_MIN : INT32_MAX, d);
    case DType::i64: return tl::full(shape, lowest ? INT64_MIN : INT64_MAX, d);
    case DType::u8: return tl::full(shape, lowest ? 0 : UINT8_MAX, d);
    case DType::u16: return tl::full(shape, lowest ? 0 : UINT16_MAX, d);
    case DType::u32: return tl::full(shape, lowest ? 0u : UINT32_MAX, d);
    case DType::u64: return tl::full(shape, lowest ? uint64_t(0) : UINT64_MAX, d);
    default: fail("reduce: no extreme value for {}", dtype_name(d));
  }
}

// Whether (a, ai) wins over (b, bi) for a max (or min) reduction: the larger value; NaN beats
// everything; ties go to the lower index.
tl::tensor prefer(bool max, bool flt, const tl::tensor& a, const tl::tensor& ai, const tl::tensor& b,
                  const tl::tensor& bi) {
  tl::tensor better = max ? a > b : a < b;
  tl::tensor same = a == b;
  if (flt) {
    tl::tensor an = a != a, bn = b != b;
    better = better || (an && !bn);
    same = same || (an && bn);
  }
  if (!ai.defined()) return better;
  return better || (same && ai < bi);
}

// argmax / argmin keys: accumulation types of at most 32 bits have an order-preserving i32 image.
bool packable_arg(DType acc) {
  switch (acc) {
    case DType::f32: case DType::i8: case DType::i16: case DType::i32: case DType::u8: case DType::u16:
    case DType::u32: return true;
    default: return false;
  }
}

// The i64 key of a lane's (value, i32 position >= 0): high word the value as an i32 whose signed
// order is the value's (floats: the sign-magnitude bits folded, -0 as +0 so the two tie as
// IEEE says, every NaN above +inf for argmax and below -inf for argmin - NaN is the extreme);
// low word the position, inverted for argmax, so the larger (smaller) key is the better value,
// then the lower position.
tl::tensor arg_key(const tl::tensor& v, const tl::tensor& pos, bool max) {
  tl::tensor hi;
  if (v.dtype() == DType::f32) {
    tl::tensor b = v.to(tl::int32, /*bitcast=*/true);
    b = tl::where(b == INT32_MIN, 0, b);  // -0.0
    hi = b ^ ((b >> 31) & INT32_MAX);
    hi = tl::where(v != v, max ? INT32_MAX : INT32_MIN, hi);
  } else if (v.dtype() == DType::u32) {
    hi = v.to(tl::int32, /*bitcast=*/true) ^ INT32_MIN;
  } else {
    hi = v.to(tl::int32);
  }
  tl::tensor lo = max ? INT32_MAX - pos : pos;  // >= 0: zero-extended through u32 (no sign word)
  return (hi.to(tl::int64) << 32) | lo.to(tl::uint32).to(tl::int64);
}

// The value in a reduced key, in the accumulation type (floats: every NaN comes back as a NaN,
// -0 as +0).
tl::tensor key_value(const tl::tensor& key, DType acc) {
  tl::tensor hi = (key >> 32).to(tl::int32);
  if (acc == DType::f32) return (hi ^ ((hi >> 31) & INT32_MAX)).to(DType::f32, /*bitcast=*/true);
  if (acc == DType::u32) return (hi ^ INT32_MIN).to(DType::u32, /*bitcast=*/true);
  return hi.to(acc);
}

// The position in a reduced key.
tl::tensor unpack_position(const tl::tensor& key, bool max) {
  tl::tensor lo = (key & int64_t{0xffffffff}).to(tl::int64);
  return max ? int64_t{INT32_MAX} - lo : lo;
}

// The reduction of a [T0, T1] block along AXIS into `out` (see the file comment). r is cut in
// chunks of `chunk`: program pid takes chunk pid % S and writes out[(o * S + s) * I + i].
// argmax/argmin carry each lane's winner as a position in the chunk (i32 unless POS64: a chunk
// near 2^31) and a lane meets its positions in increasing order, so a later element wins only by
// a strictly better value (or the first NaN): no index compare per element; the index ties
// matter only across lanes, in the final reduction. Each lane starts at its first position, so
// a row of nothing but the extreme (-inf for argmax) still answers its first index. IDX_IN (the
// second launch, over partials) reduces positions among the partials the same way, then loads
// the winner's index from xi (at x's offsets); VAL_OUT also stores the winning values to out_v.
Kernel& reduce_kernel() {
  static Kernel k = tritium::kernel(
      "reduce",
      [](P x, P xi, P y, P z, P out, P out_v, P part, P cnt, tl::i64 O, tl::i64 R, tl::i64 I, tl::i64 so, tl::i64 sr,
         tl::i64 si, tl::i64 yso, tl::i64 ysr, tl::i64 ysi, tl::i64 zso, tl::i64 zsi, tl::i64 chunk, tl::i64 S,
         tl::f64 scale, tl::f64 beta,
         int KIND, int ACC, bool INNER, int T0, int T1, bool IDX_IN, bool VAL_OUT, bool MUL, int EPI, bool POS64,
         int TS) {
        const Red kind = static_cast<Red>(KIND);
        const DType acc_t = static_cast<DType>(ACC);
        const bool flt = is_float(acc_t);
        const int axis = INNER ? 0 : 1;
        const ir::Shape tile{T0, T1};
        // The program's coordinates in 32 bits (a grid has fewer than 2^31 programs, so S and the
        // column tiles do too): a 64-bit division is a ~60-instruction subroutine, a 32-bit one a
        // few. Offsets are 64-bit from there on.
        auto pid = tl::program_id(0);

        // Offsets of the block's elements besides r (broadcastable to the tile), the mask of the
        // kept index (likewise), the output offsets and their mask.
        tl::tensor xoff, xoff1, yoff, zoff, kmask, outoff, omask, rbeg, rend;  // xoff1: xoff per output
        tl::tensor ko, ki;  // the kept indices o (rows: [T0]; columns: a scalar) and i (columns: [T1])
        // S = cdiv(max(R, 1), chunk) chunks, from the host: an unsplit launch passes 1, which the
        // launch specialises, so the chunk index math folds away.
        auto S32 = S.to(tl::int32);
        auto s = (pid % S32).to(tl::int64);
        auto rest = pid / S32;
        if (!INNER) {
          auto o = rest.to(tl::int64) * T0 + tl::arange(0, T0);
          ko = o;
          omask = o < O;
          kmask = omask(tl::_, tl::None);
          xoff1 = o * so;
          xoff = xoff1(tl::_, tl::None);
          if (MUL) yoff = (o * yso)(tl::_, tl::None);
          outoff = o * S + s;
          zoff = o * zso;
          rbeg = s * chunk;
          rend = tl::minimum(rbeg + chunk, R);
        } else {
          auto nib = tl::cdiv(I, T1).to(tl::int32);
          auto o = (rest / nib).to(tl::int64);
          auto i = (rest % nib).to(tl::int64) * T1 + tl::arange(0, T1);
          ko = o, ki = i;
          omask = i < I;
          kmask = omask(tl::None, tl::_);
          xoff1 = o * so + i * si;
          xoff = xoff1(tl::None, tl::_);
          if (MUL) yoff = o * yso + (i * ysi)(tl::None, tl::_);
          outoff = (o * S + s) * I + i;
          zoff = o * zso + i * zsi;
          rbeg = s * chunk;
          rend = tl::minimum(rbeg + chunk, R);
        }
        const int RB = INNER ? T0 : T1;  // block along r

        tl::tensor acc, acc_i;
        if (kind == Red::sum || kind == Red::mean) acc = tl::zeros(tile, acc_t);
        else acc = extreme(tile, acc_t, is_max(kind));
        const DType pos_t = POS64 ? tl::int64 : tl::int32;
        tl::tensor lane2;  // argmax/argmin: a lane's position in the block along r
        if (is_arg(kind)) {
          auto lane = tl::arange(0, RB).to(pos_t);
          lane2 = INNER ? lane(tl::_, tl::None) : lane(tl::None, tl::_);
          acc_i = tl::broadcast_to(lane2, tile);
        }

        for (auto r0 : tl::range(rbeg, rend, RB)) {
          auto r = r0 + tl::arange(0, RB);
          auto r2 = INNER ? r(tl::_, tl::None) : r(tl::None, tl::_);
          auto m = kmask && (r2 < rend);
          auto off = xoff + r2 * sr;
          auto v = tl::load(x + off, m, 0);
          if (v.dtype() != acc_t) v = v.to(acc_t);
          if (MUL) {  // a dot product: the products in the accumulation type
            auto w = tl::load(y + (yoff + r2 * ysr), m, 0);
            v = v * (w.dtype() != acc_t ? w.to(acc_t) : w);
          }
          if (kind == Red::sum || kind == Red::mean) {
            acc = acc + v;
          } else {
            v = tl::where(m, v, acc);  // masked lanes keep the accumulator
            if (is_arg(kind)) {
              // Strictly better, or a NaN where the lane holds none: !(v <= acc) is v > acc or v
              // NaN; a NaN accumulator keeps its place. A masked lane (v = acc) never takes.
              const bool mx = is_max(kind);
              auto take = flt ? !(mx ? v <= acc : v >= acc) && (acc == acc) : (mx ? v > acc : v < acc);
              auto vi = tl::broadcast_to((r0 - rbeg).to(pos_t) + lane2, tile);
              acc = tl::where(take, v, acc);
              acc_i = tl::where(take, vi, acc_i);
            } else {
              acc = tl::where(prefer(is_max(kind), flt, v, tl::tensor(), acc, tl::tensor()), v, acc);
            }
          }
        }

        tl::tensor result;
        // mean's 1/R and a dot product's alpha * sum + beta * z, rounded once at the store.
        auto epilogue = [&](tl::tensor sum) {
          if (kind == Red::mean || EPI > 0) sum = sum * scale.to(acc_t);
          if (EPI == 2) {
            auto zv = tl::load(z + zoff, omask, 0);
            sum = sum + beta.to(acc_t) * (zv.dtype() != acc_t ? zv.to(acc_t) : zv);
          }
          return sum;
        };
        // The reduction of an accumulator block along `axis` (not argmax/argmin).
        auto reduce_block = [&](const tl::tensor& a) -> tl::tensor {
          if (kind == Red::sum || kind == Red::mean) return tl::sum(a, axis);
          if (!flt) return is_max(kind) ? tl::max(a, axis) : tl::min(a, axis);
          const bool mx = is_max(kind);
          return tl::reduce(a, axis, [mx](tl::tensor u, tl::tensor w) {
            return tl::where(prefer(mx, true, u, tl::tensor(), w, tl::tensor()), u, w);
          });
        };
        if (kind == Red::sum || kind == Red::mean) {
          result = tl::sum(acc, axis);
          if (!TS) result = epilogue(result);
        } else if (is_arg(kind) && packable_arg(acc_t) && !POS64) {
          // One i64 max (min) over keys: the value's order in the high word, the position in the
          // low word arranged so the lower position wins ties. A tree step is 2 shuffles and a
          // 64-bit compare where the (value, position) pairs took 2 shuffles and 7 dependent
          // compares and selects (NaN and tie rules) - at every step of the in-thread, warp and
          // cross-warp trees, on the latency path of every row.
          const bool mx = is_max(kind);
          auto key = arg_key(acc, acc_i, mx);
          auto best = mx ? tl::max(key, axis) : tl::min(key, axis);
          auto pos = rbeg + unpack_position(best, mx);
          result = IDX_IN ? tl::load(xi + (xoff1 + pos * sr), omask, 0).to(tl::int64) : pos;
          if (VAL_OUT) {
            // The value from the key; a zero's sign was folded (-0 keys as +0), so a zero winner
            // is read back from x (a load only those rows issue).
            auto val = key_value(best, acc_t);
            if (flt) {
              auto zero = val == 0.0;
              auto back = tl::load(x + (xoff1 + pos * sr), omask && zero, 0);
              val = tl::where(zero, back.dtype() == acc_t ? back : back.to(acc_t), val);
            }
            tl::store(out_v + outoff, val, omask);
          }
        } else if (is_arg(kind)) {
          const bool mx = is_max(kind);
          auto rs = tl::reduce({acc, acc_i}, axis, [mx, flt](std::span<const tl::tensor> a, std::span<const tl::tensor> b) {
            auto take = prefer(mx, flt, a[0], a[1], b[0], b[1]);
            return std::vector<tl::tensor>{tl::where(take, a[0], b[0]), tl::where(take, a[1], b[1])};
          });
          auto pos = rbeg + rs[1].to(tl::int64);  // the winner's r
          result = IDX_IN ? tl::load(xi + (xoff1 + pos * sr), omask, 0).to(tl::int64) : pos;
          if (VAL_OUT) tl::store(out_v + outoff, rs[0], omask);
        } else {
          result = reduce_block(acc);
        }
        if (!TS) {
          tl::store(out + outoff, result, omask);
          return;
        }
        // One launch for a split r (TS > 0, not argmax/argmin): the chunk's partial goes to `part`
        // ([O, S] or [O, S, I], the accumulation type, as the second launch's input); the last of
        // the S programs of a tile to count itself in cnt[tile] (an acq_rel atomic: the others'
        // partials are visible to it) combines the tile's S partials in order s = 0, 1, ... (the
        // result does not depend on which program is last), writes the result and zeroes the
        // counter for the next launch on the stream (PyTorch's and CUB's last-block pattern).
        tl::store(part + outoff, result, omask);
        auto done = tl::atomic_add(cnt + rest, 1);
        tl::if_(done == S32 - 1, [&] {
          const ir::Shape tile2 = INNER ? ir::Shape{TS, T1} : ir::Shape{T0, TS};
          const bool sums = kind == Red::sum || kind == Red::mean;
          tl::tensor acc2 = sums ? tl::zeros(tile2, acc_t) : extreme(tile2, acc_t, is_max(kind));
          for (auto s0 : tl::range(0, S, TS)) {
            auto sv = s0 + tl::arange(0, TS).to(tl::int64);
            tl::tensor poff, m;
            if (!INNER) {
              poff = (ko * S)(tl::_, tl::None) + sv(tl::None, tl::_);
              m = omask(tl::_, tl::None) && sv(tl::None, tl::_) < S;
            } else {
              poff = ((ko * S + sv) * I)(tl::_, tl::None) + ki(tl::None, tl::_);
              m = sv(tl::_, tl::None) < S && omask(tl::None, tl::_);
            }
            // .cg: from L2, where the other programs' stores are (never a line this SM cached).
            auto v = tl::load(part + poff, m, 0, ".cg");
            if (sums) {
              acc2 = acc2 + v;
            } else {
              v = tl::where(m, v, acc2);
              acc2 = tl::where(prefer(is_max(kind), flt, v, tl::tensor(), acc2, tl::tensor()), v, acc2);
            }
          }
          tl::tensor total = reduce_block(acc2);
          if (sums) total = epilogue(total);
          tl::store(out + (INNER ? ko * I + ki : ko), total, omask);
          tl::store(cnt + rest, 0);
        });
      });
  return k;
}

DType accumulate_type(Red kind, DType d) {
  if (kind == Red::sum || kind == Red::mean) {
    if (is_float(d)) return d == DType::f64 ? DType::f64 : DType::f32;
    return DType::i64;
  }
  if (d == DType::i1) return DType::i32;
  return detail::math_type(d);
}

struct Problem {
  int64_t O = 1, R = 1, I = 1, so = 0, sr = 0, si = 0;
};

// A dot-product reduction (detail::reduce_products): y's elements multiply x's (y at its own
// strides), then alpha * the sum + beta * z (z at the output's index; beta = 0: z is not read).
struct Products {
  Tensor y, z;
  int64_t yso = 0, ysr = 0, ysi = 0, zso = 0, zsi = 0;
  double alpha = 1, beta = 0;
};

// One launch of the kernel: x viewed as (O, R, I) with r cut in chunks of `chunk`, tiles
// [t0, t1]; xi: the indices of argmax/argmin partials (or undefined), out_v: where their values
// go; mul: the second factor (first launch of a dot product); epi: 1 scales the result by
// `scale`, 2 also adds beta * z (the last launch of a dot product).
// fused (ts > 0): one launch for a split r, partials in `part`, counters in `cnt`, the last program
// of a tile combining them in [.., ts] (rows) or [ts, ..] (columns) blocks.
struct Fused {
  Tensor part, cnt;
  int64_t ts = 0;
};

void launch(Red kind, DType acc, const Tensor& x, const Tensor& xi, Tensor& out, Tensor& out_v, const Problem& p,
            int64_t chunk, double scale, int64_t programs, bool columns, int64_t t0, int64_t t1,
            const Products* mul = nullptr, int epi = 0, const Products* add = nullptr, const Fused* fused = nullptr) {
  const Tensor& idx_in = xi.defined() ? xi : x;
  Tensor& val_out = out_v.defined() ? out_v : out;
  static const Products none;
  const Products& m = mul ? *mul : none;
  const Products& e = add ? *add : none;
  const Tensor& y = mul ? m.y : x;
  const Tensor& z = epi == 2 ? e.z : x;
  const int64_t S = (std::max<int64_t>(p.R, 1) + chunk - 1) / chunk;
  // Positions within a chunk (and a tile past its end) in i32 unless that could overflow.
  const bool pos64 = is_arg(kind) && chunk > int64_t{INT32_MAX} - std::max(t0, t1);
  // One-row tiles under 4 KB of max / min / argmax / argmin on CUDA: fewer warps, 32 bytes a
  // thread a trip (detail::row_warps), for their compare-and-select (NaN, index) work an element.
  // Sums, means and products (mv) keep 4: at 2 warps sum / mean dim -1 bf16 fell 0.93 -> 0.86 x
  // PyTorch and mv bf16 0.73 -> 0.71 where amax rose 0.74 -> 0.83, max.dim 0.72 -> 0.79, argmax
  // 0.82 -> 0.90 (H200, stop 49, bench/results/2026-11-27n-h100/gpu_run2.sh). Lane-row tiles
  // ([kLaneRows, 512 / element size]) keep 4 warps: a row a warp.
  int warps = 4;
  const bool compares = kind != Red::sum && kind != Red::mean;
  if (x.device().is_cuda() && !columns && t0 == 1 && compares) warps = detail::row_warps(t1 * x.element_size());
  const Tensor& part = fused ? fused->part : out;
  const Tensor& cnt = fused ? fused->cnt : out;
  reduce_kernel()[{programs}](x, idx_in, y, z, out, val_out, part, cnt, p.O, p.R, p.I, p.so, p.sr, p.si, m.yso, m.ysr,
                              m.ysi, e.zso, e.zsi, chunk, S, scale, e.beta, static_cast<int>(kind),
                              static_cast<int>(acc), columns, static_cast<int>(t0), static_cast<int>(t1), xi.defined(),
                              out_v.defined(), mul != nullptr, epi, pos64, static_cast<int>(fused ? fused->ts : 0),
                              Options{.num_warps = warps, .num_stages = 3, .device = x.device()});
}

// Launches the reduction of x viewed as (O, R, I) into `out` (contiguous, O * I elements):
// one launch, or two when the plan cuts r into chunks (partials [O, S, I], then over S).
// `prod`: a dot product (kind sum), alpha * sum x y (+ beta z).
// `values` (argmax/argmin): where the winning values go too (max.dim / min.dim in one pass).
void launch_reduce(Red kind, const Tensor& x, Tensor& out, Problem p, const Products* prod = nullptr,
                   Tensor* values = nullptr) {
  const DType acc = accumulate_type(kind, x.dtype());
  double scale = p.R > 0 ? 1.0 / static_cast<double>(p.R) : std::numeric_limits<double>::quiet_NaN();
  const int epi = prod ? (prod->z.defined() && prod->beta != 0 ? 2 : 1) : 0;
  if (prod) scale = prod->alpha;
  const ReducePlan plan = plan_reduce(p.O, p.R, p.I, reduce_device(x.device()), x.element_size());
  // Tiles are [rows, r] for rows and [r, columns] for columns.
  auto tile = [&](int64_t br, int64_t bk) { return plan.columns ? std::pair{br, bk} : std::pair{bk, br}; };
  Tensor none;
  Tensor& vals = values ? *values : none;
  if (plan.chunks == 1) {
    auto [t0, t1] = tile(plan.block_r, plan.block_k);
    launch(kind, acc, x, none, out, vals, p, plan.chunk, scale, plan.programs, plan.columns, t0, t1, prod, epi, prod);
    return;
  }
  const int64_t S = plan.chunks;
  const Shape pshape = plan.columns ? Shape{p.O, S, p.I} : Shape{p.O, S};
  if (!is_arg(kind)) {
    // One launch: the last program of each tile combines its S partials (the kernel's TS path).
    Fused f;
    f.part = Tensor::empty(pshape, acc, x.device());
    f.cnt = detail::reduce_counters(x.device(), plan.programs / S);
    f.ts = plan.block_r2;
    auto [t0, t1] = tile(plan.block_r, plan.block_k);
    launch(kind, acc, x, none, out, vals, p, plan.chunk, scale, plan.programs, plan.columns, t0, t1, prod, epi, prod,
           &f);
    return;
  }
  Tensor partial = Tensor::empty(pshape, is_arg(kind) ? DType::i64 : acc, x.device());
  Tensor partial_v = is_arg(kind) ? Tensor::empty(pshape, acc, x.device()) : Tensor();
  {
    auto [t0, t1] = tile(plan.block_r, plan.block_k);
    launch(kind == Red::mean ? Red::sum : kind, acc, x, none, partial, partial_v, p, plan.chunk, 1.0, plan.programs,
           plan.columns, t0, t1, prod);
  }
  // The partials as (O, S, I), contiguous; the values are the input of the second launch.
  Problem q;
  q.O = p.O, q.R = S, q.I = p.I, q.so = S * p.I, q.sr = p.I, q.si = 1;
  auto [t0, t1] = tile(plan.block_r2, plan.block_k2);
  if (is_arg(kind))
    launch(kind, acc, partial_v, partial, out, vals, q, S, scale, plan.programs2, plan.columns, t0, t1);
  else
    launch(kind, acc, partial, none, out, none, q, S, scale, plan.programs2, plan.columns, t0, t1, nullptr, epi, prod);
}

struct Dim {
  int64_t size, stride;
};

// Merges dims (outermost first) into one; nullopt if their strides do not allow it.
std::optional<Dim> merge(const std::vector<Dim>& dims) {
  if (dims.empty()) return Dim{1, 0};
  Dim m = dims.back();
  for (size_t k = dims.size() - 1; k-- > 0;) {
    if (dims[k].stride != m.stride * m.size) return std::nullopt;
    m.size *= dims[k].size;
  }
  return m;
}

// Normalised, sorted, duplicate-free dims; empty input means all.
std::vector<int> reduce_dims(const char* op, const Tensor& x, const std::vector<int>& dims) {
  std::vector<int> out;
  if (dims.empty()) {
    for (int d = 0; d < x.dim(); ++d) out.push_back(d);
    return out;
  }
  std::vector<bool> seen(std::max(x.dim(), 1), false);
  for (int d : dims) {
    int n = detail::normalize_dim(op, d, x.dim());
    if (seen[n]) fail("{}: dimension {} appears more than once in the list of dims [{}]", op, d, fmt::join(dims, ", "));
    seen[n] = true;
    if (x.dim() > 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Reduces x over `dims` (normalised) into a new tensor of shape `out_shape` and dtype `out_dtype`.
// argmax/argmin with `values`: also their values (x's dtype, out_shape) from the same pass.
Tensor reduce(Red kind, const Tensor& x, const std::vector<int>& dims, const Shape& out_shape, DType out_dtype,
              Tensor* values = nullptr) {
  const char* op = red_name(kind);
  // Without an identity an empty reduced dim is an error, whether or not the result is empty
  // (PyTorch's zero_numel_check_dims): amax of [0, 3] over dim 0 fails, over dim 1 gives [0].
  if (kind != Red::sum && kind != Red::mean)
    for (int d : dims)
      if (x.size(d) == 0)
        fail("{}: Expected reduction dim {} to have non-zero size (input shape {}; the operation has no identity)",
             op, d, shape_str(x.shape()));
  Tensor out = Tensor::empty(out_shape, out_dtype, x.device());
  if (values) *values = Tensor::empty(out_shape, x.dtype(), x.device());
  if (out.numel() == 0) return out;
  std::vector<bool> red(x.dim(), false);
  for (int d : dims) red[d] = true;
  int64_t R = 1;
  for (int d : dims) R *= x.size(d);
  if (R == 0) {  // sum of nothing: 0 (mean: 0 * NaN = NaN, via the kernel's scale)
    Problem p;
    p.O = out.numel(), p.R = 0;
    p.so = 0;
    launch_reduce(kind, x, out, p);
    return out;
  }

  // Classify the non-trivial dims, outermost (largest stride) first: a channels-last tensor's
  // N, H, W merge into one reduced dim beside C. The kept dims must stay in their own order (the
  // output is contiguous in it); when the strides would reorder them, the dims' order is used.
  std::vector<int> order;
  for (int d = 0; d < x.dim(); ++d)
    if (x.size(d) != 1) order.push_back(d);
  std::vector<int> by_stride = order;
  std::stable_sort(by_stride.begin(), by_stride.end(), [&](int a, int b) { return x.stride(a) > x.stride(b); });
  {
    int last_kept = -1;
    bool kept_in_order = true;
    for (int d : by_stride)
      if (!red[d]) kept_in_order = kept_in_order && d > last_kept, last_kept = d;
    if (kept_in_order) order = by_stride;
  }
  std::vector<Dim> before, reduced, after;
  std::vector<int> inner_reduced;  // the reduced dims after the last kept one
  bool interleaved = false;
  for (int d : order) {
    Dim dm{x.size(d), x.stride(d)};
    if (red[d]) {
      if (!after.empty()) interleaved = true;
      reduced.push_back(dm);
      inner_reduced.push_back(d);
    } else {
      (reduced.empty() ? before : after).push_back(dm);
      inner_reduced.clear();
    }
  }
  std::stable_sort(reduced.begin(), reduced.end(), [](const Dim& a, const Dim& b) { return a.stride > b.stride; });
  auto mo = merge(before), mr = merge(reduced), mi = merge(after);
  Problem p;
  if (!interleaved && mo && mr && mi) {
    p.O = mo->size, p.so = mo->stride, p.R = mr->size, p.sr = mr->stride, p.I = mi->size, p.si = mi->stride;
    if (p.I == 1 && p.O > 1 && p.so == 1 && p.sr != 1) {  // the kept dim is the contiguous one
      p.I = p.O, p.si = 1, p.O = 1, p.so = 0;
    }
    launch_reduce(kind, x, out, p, nullptr, values);
    return out;
  }
  // Reduced dims on both sides of a kept one (a bias gradient: sum over N, H, W of NCHW): the
  // innermost reduced dims first, into [.., C, 1, 1] in the accumulation type, then the rest -
  // the input is read once and a tensor |inner| times smaller written, where the permuted copy
  // below writes all of it and reads it again. Not for argmax / argmin (an index is not a
  // partial), nor for an inner part so small that its rows would be a handful of elements.
  int64_t inner = 1;
  for (int d : inner_reduced) inner *= x.size(d);
  if (interleaved && !is_arg(kind) && inner >= 8 && inner_reduced.size() < reduced.size()) {
    Shape partial_shape = x.shape();
    for (int d : inner_reduced) partial_shape[d] = 1;
    std::vector<int> inner_dims = inner_reduced, outer_dims;
    std::sort(inner_dims.begin(), inner_dims.end());
    for (int d : dims)
      if (std::find(inner_dims.begin(), inner_dims.end(), d) == inner_dims.end()) outer_dims.push_back(d);
    const DType partial_dtype = kind == Red::sum || kind == Red::mean ? accumulate_type(kind, x.dtype()) : x.dtype();
    Tensor partial = reduce(kind, x, inner_dims, partial_shape, partial_dtype);
    return reduce(kind, partial, outer_dims, out_shape, out_dtype);
  }
  // Permute (kept dims, reduced dims) and copy contiguous; then it is (O, R, 1).
  Shape shape, strides;
  for (int d = 0; d < x.dim(); ++d)
    if (!red[d]) shape.push_back(x.size(d)), strides.push_back(x.stride(d));
  for (int d = 0; d < x.dim(); ++d)
    if (red[d]) shape.push_back(x.size(d)), strides.push_back(x.stride(d));
  Tensor y = contiguous(x.as_strided(shape, strides, x.storage_offset()));
  p.O = out.numel(), p.R = R, p.I = 1, p.so = R, p.sr = 1, p.si = 0;
  launch_reduce(kind, y, out, p, nullptr, values);
  return out;
}

Tensor reduce_op(Red kind, const Tensor& x, const std::vector<int>& dims_in, bool keepdim) {
  const char* op = red_name(kind);
  detail::check_tensors(op, {&x});
  DType out_dtype = x.dtype();
  if (kind == Red::sum && !is_float(x.dtype())) out_dtype = DType::i64;
  if (kind == Red::mean && !is_float(x.dtype()))
    fail("mean: could not infer the output dtype: the input dtype must be a floating-point type, got {} "
         "(convert with to_dtype first)",
         dtype_name(x.dtype()));
  std::vector<int> dims = reduce_dims(op, x, dims_in);
  return reduce(kind, x, dims, detail::reduced_shape_of(x, dims, keepdim), out_dtype);
}

Tensor arg_op(Red kind, const Tensor& x, int dim, bool keepdim, Tensor* values = nullptr) {
  const char* op = red_name(kind);
  detail::check_tensors(op, {&x});
  if (x.dtype() == DType::i1) fail("{}: not implemented for bool tensors", op);
  std::vector<int> dims = reduce_dims(op, x, {dim});  // reduce() checks the reduced dim is not empty
  return reduce(kind, x, dims, detail::reduced_shape_of(x, dims, keepdim), DType::i64, values);
}

}  // namespace

Kernel& detail::plain_reduce_kernel() { return reduce_kernel(); }

Tensor detail::matrix_vector(const Tensor& a, const Tensor& v, const Tensor& self, double beta, double alpha) {
  const bool dot = a.dim() == 1;
  const int64_t M = dot ? 1 : a.size(0), K = dot ? a.size(0) : a.size(1);
  Tensor out = Tensor::empty(dot ? Shape{} : Shape{M}, a.dtype(), a.device());
  if (M == 0) return out;
  const int64_t sm = dot ? 0 : a.stride(0), sk = dot ? a.stride(0) : a.stride(1);
  Products pr;
  pr.y = v, pr.alpha = alpha, pr.beta = beta;
  if (self.defined() && beta != 0) pr.z = self.expand(dot ? Shape{} : Shape{M});
  const int64_t zs = pr.z.defined() && !dot ? pr.z.stride(0) : 0;
  Problem p;
  p.R = K, p.sr = sk;
  pr.ysr = v.stride(0);
  if (M > 1 && sm == 1 && sk != 1) {  // a transposed: columns, vectorised across the outputs
    p.O = 1, p.I = M, p.si = 1;
    pr.zsi = zs;
  } else {
    p.O = M, p.so = sm;
    pr.zso = zs;
  }
  launch_reduce(Red::sum, a, out, p, &pr);
  return out;
}

Tensor sum(const Tensor& x, std::vector<int> dims, bool keepdim) { return reduce_op(Red::sum, x, dims, keepdim); }
Tensor mean(const Tensor& x, std::vector<int> dims, bool keepdim) { return reduce_op(Red::mean, x, dims, keepdim); }
Tensor amax(const Tensor& x, std::vector<int> dims, bool keepdim) { return reduce_op(Red::max, x, dims, keepdim); }
Tensor amin(const Tensor& x, std::vector<int> dims, bool keepdim) { return reduce_op(Red::min, x, dims, keepdim); }
Tensor argmax(const Tensor& x, int dim, bool keepdim) { return arg_op(Red::argmax, x, dim, keepdim); }
Tensor argmin(const Tensor& x, int dim, bool keepdim) { return arg_op(Red::argmin, x, dim, keepdim); }

std::pair<Tensor, Tensor> detail::extreme_with_index(const Tensor& x, int dim, bool keepdim, bool is_max) {
  Tensor values;
  Tensor indices = arg_op(is_max ? Red::argmax : Red::argmin, x, dim, keepdim, &values);
  return {values, indices};
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  detail::check_tensors("sum_to", {&grad});
  const int gr = grad.dim(), sr = static_cast<int>(shape.size());
  bool ok = sr <= gr;
  std::vector<int> dims;
  for (int d = 0; d < gr && ok; ++d) {
    int k = d - (gr - sr);
    if (k < 0) dims.push_back(d);
    else if (shape[k] == 1 && grad.size(d) != 1) dims.push_back(d);
    else if (shape[k] != grad.size(d)) ok = false;
  }
  if (!ok)
    fail("sum_to: shape {} does not broadcast to the gradient's shape {}", shape_str(shape), shape_str(grad.shape()));
  if (dims.empty()) {
    if (grad.shape() == shape) return grad;
  }
  DType out_dtype = is_float(grad.dtype()) ? grad.dtype() : DType::i64;
  return reduce(Red::sum, grad, dims, shape, out_dtype);
}

}  // namespace tritium::ops
