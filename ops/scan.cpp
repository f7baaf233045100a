// Scans along a dim (ops/reduce_stats.h): cumsum, cumprod, cummax, cummin, and the reverse affine
// scan behind cumprod's gradient. One kernel, `row_scan`, walks each row of the contiguous [O, R]
// matrix of detail::rows_of (the scanned dim last) in blocks of BR: each block is scanned with
// tl::cumsum / tl::cumprod / tl::associative_scan and combined with the carry of the blocks before
// it (the value of the block's last lane). Masked lanes only ever sit past the end of a row, so
// they never reach a stored value or a carry that is used.
#include <algorithm>
#include <cmath>
#include <limits>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/reduce_kernels.h"
#include "ops/reduce_rows.h"
#include "ops/reduce_stats.h"
#include "runtime/views.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;

// excl_cumprod: prod_{j<k} x_j (the cumprod of x shifted right by one, 1 first).
// affine_rev: S_k = g_k + x_{k+1} S_{k+1} from the end of the row (S_R = 0).
// excl_cumsum: sum_{j<k} x_j (the chunk offsets of a split cumsum).
// seg_sum_rev: x = cummax / cummin's indices, g = the gradient; out_j = the sum of g_i over the
// run of i with x_i = j (zero where x_j != j). The running arg-extremum only moves forward, so
// those i are the contiguous run starting at j: the affine_rev scan with a_{k+1} = [x_{k+1} == x_k]
// restarts at each run, and its value at the run's first lane is the run's sum. No atomics: a
// rising row sends every gradient to one index, which serialises a scatter_add.
enum class Scan : int { cumsum, cumprod, cummax, cummin, excl_cumprod, affine_rev, excl_cumsum, seg_sum_rev };
static_assert(static_cast<int>(Scan::seg_sum_rev) + 1 == detail::kRowScanKinds);

// The value of each row's last lane of a [BO, BR] block.
tl::tensor last_lane(const tl::tensor& v, int BR) {
  auto lane = tl::arange(0, BR)(tl::None, tl::_);
  return tl::sum(tl::where(lane == BR - 1, v, tl::zeros({}, v.dtype())), 1);
}

// cummax / cummin: the later element b wins when it is at least as large (small) as the
// earlier a, or NaN (PyTorch's rule: ties and NaNs take the latest index).
tl::tensor later_wins(bool max, const tl::tensor& a, const tl::tensor& b) {
  return (max ? b >= a : b <= a) || b != b;
}

}  // namespace

Kernel& detail::row_scan_kernel() {
  static Kernel k = tritium::kernel(
      "row_scan", [](P x, P g, P out, P idx, P init, tl::i64 O, tl::i64 R, tl::i64 S, tl::i64 C, int KIND, int ACC,
                     int OUT, bool HAS_INIT, int BO, int BR, bool ONE_BLOCK) {
        const Scan kind = static_cast<Scan>(KIND);
        const DType acc_t = static_cast<DType>(ACC), out_t = static_cast<DType>(OUT);
        // Program row p is chunk p % S of row p / S, elements [s C, min(R, (s + 1) C)), whose scan
        // starts from init[p] when HAS_INIT (S = 1, C = R unless a few long rows are split).
        auto prow = tl::program_id(0).to(tl::int64) * BO + tl::arange(0, BO);
        auto vmask = prow < O * S;
        auto rows = ((prow / S) * R + (prow % S) * C)(tl::_, tl::None);
        auto rlen = tl::minimum(tl::maximum(R - (prow % S) * C, 0), C)(tl::_, tl::None);
        auto rmask = vmask(tl::_, tl::None);
        auto lane = tl::arange(0, BR)(tl::None, tl::_).to(tl::int64);
        auto cast = [&](tl::tensor t, DType d) { return t.dtype() == d ? t : t.to(d); };
        auto nb = tl::cdiv(C, BR);
        // ONE_BLOCK (C <= BR, the host knows): the row is one block, so no loop and no carry out of
        // it (each carry is a reduction across the block's warps).
        auto blocks = [&](auto&& body) {
          if (ONE_BLOCK) body(nb * 0, false);
          else
            for (auto t : tl::range(0, nb)) body(t, true);
        };
        if (kind == Scan::affine_rev || kind == Scan::seg_sum_rev) {
          const bool seg = kind == Scan::seg_sum_rev;
          auto carry = tl::zeros({BO}, acc_t);
          blocks([&](const tl::tensor& t, bool more) {
            auto pos = (nb - 1 - t) * BR + (BR - 1 - lane);  // lane 0 holds the block's last element
            auto m = rmask && pos < rlen;
            auto b = cast(tl::load(g + (rows + pos), m, 0), acc_t);
            tl::tensor a, here;
            if (seg) {  // the next element continues this run: a = 1, else the scan restarts (a = 0)
              here = tl::load(x + (rows + pos), m, -1);
              auto next = tl::load(x + (rows + pos + 1), m && pos + 1 < rlen, -2);
              a = cast(next == here, acc_t);
            } else {
              a = cast(tl::load(x + (rows + pos + 1), m && pos + 1 < rlen, 1), acc_t);
            }
            auto s = tl::associative_scan({a, b}, 1, [](std::span<const tl::tensor> l, std::span<const tl::tensor> r) {
              return std::vector<tl::tensor>{r[0] * l[0], r[1] + r[0] * l[1]};
            });
            auto S = more ? s[1] + s[0] * carry(tl::_, tl::None) : s[1];
            auto res = seg ? tl::where(here == pos, S, tl::zeros({}, acc_t)) : S;
            tl::store(out + (rows + pos), cast(res, out_t), m);
            if (more) carry = last_lane(S, BR);
          });
          return;
        }
        const bool ext = kind == Scan::cummax || kind == Scan::cummin;
        const bool mx = kind == Scan::cummax;
        tl::tensor carry, carry_i;
        const bool sums = kind == Scan::cumsum || kind == Scan::excl_cumsum;
        if (HAS_INIT) carry = cast(tl::load(init + prow, vmask, sums ? 0 : 1), acc_t);
        else if (sums) carry = tl::zeros({BO}, acc_t);
        else if (!ext) carry = tl::full({BO}, 1, acc_t);
        else {
          // The identity: lower (higher) than every value, so the first element always wins.
          const double inf = std::numeric_limits<double>::infinity();
          if (is_float(acc_t)) carry = tl::full({BO}, mx ? -inf : inf, acc_t);
          else if (acc_t == DType::i64) carry = tl::full({BO}, mx ? INT64_MIN : INT64_MAX, acc_t);
          else carry = tl::full({BO}, mx ? INT32_MIN : INT32_MAX, acc_t);
          carry_i = tl::zeros({BO}, tl::int64);
        }
        blocks([&](const tl::tensor& t, bool more) {
          auto r = t * BR + lane;
          auto m = rmask && r < rlen;
          tl::tensor v;
          if (kind == Scan::excl_cumprod || kind == Scan::excl_cumsum)
            v = cast(tl::load(x + (rows + r - 1), m && r >= 1, sums ? 0 : 1), acc_t);
          else v = cast(tl::load(x + (rows + r), m, sums ? 0 : 1), acc_t);
          const bool from_carry = more || HAS_INIT;  // one block from the identity needs no combine
          if (sums) {
            auto s = tl::cumsum(v, 1);
            if (from_carry) s = s + carry(tl::_, tl::None);
            tl::store(out + (rows + r), cast(s, out_t), m);
            if (more) carry = last_lane(s, BR);
          } else if (!ext) {
            auto s = tl::cumprod(v, 1);
            if (from_carry) s = s * carry(tl::_, tl::None);
            tl::store(out + (rows + r), cast(s, out_t), m);
            if (more) carry = last_lane(s, BR);
          } else {
            // The scan carries the lane in the block as i32 (half the shuffles of i64 indices);
            // the block's start is added after.
            auto ri = tl::broadcast_to(tl::arange(0, BR)(tl::None, tl::_), {BO, BR});
            auto s = tl::associative_scan({v, ri}, 1, [mx](std::span<const tl::tensor> a, std::span<const tl::tensor> b) {
              auto take = later_wins(mx, a[0], b[0]);
              return std::vector<tl::tensor>{tl::where(take, b[0], a[0]), tl::where(take, b[1], a[1])};
            });
            auto si = s[1].to(tl::int64) + t.to(tl::int64) * BR;
            tl::tensor val = s[0], vi = si;
            if (from_carry) {
              auto c = carry(tl::_, tl::None), ci = carry_i(tl::_, tl::None);
              auto take = later_wins(mx, c, s[0]);
              val = tl::where(take, s[0], c);
              vi = tl::where(take, si, ci);
            }
            tl::store(out + (rows + r), cast(val, out_t), m);
            tl::store(idx + (rows + r), vi, m);
            if (more) {
              carry = last_lane(val, BR);
              carry_i = last_lane(vi, BR);
            }
          }
        });
      });
  return k;
}

namespace {

DType scan_acc(Scan kind, DType d) {
  if (is_float(d)) return d == DType::f64 ? DType::f64 : DType::f32;
  if (kind == Scan::cummax || kind == Scan::cummin) return d == DType::i64 || d == DType::u64 || d == DType::u32 ? DType::i64 : DType::i32;
  return DType::i64;
}

// Scans the O contiguous rows of R elements of `data` into `out` (and `idx`). A few long rows of
// cumsum / cumprod are split in S chunks: the chunks' totals (row_stats), their exclusive scan,
// then every chunk scanned at once from its offset.
void launch_scan(Scan kind, const Tensor& data, const Tensor& g, Tensor& out, Tensor& idx, int64_t O, int64_t R, DType acc) {
  const int64_t br = std::clamp<int64_t>(next_power_of_2(R), 16, 1024);
  const int64_t bo = std::clamp<int64_t>(2048 / br, 1, std::max<int64_t>(1, next_power_of_2(O)));
  const bool splittable = kind == Scan::cumsum || kind == Scan::cumprod;
  if (!splittable || cdiv(O, bo) >= 64 || R < 16384) {
    detail::row_scan_kernel()[{cdiv(O, bo)}](data, g, out, idx, out, O, R, int64_t(1), R, static_cast<int>(kind),
                                             static_cast<int>(acc), static_cast<int>(out.dtype()), false,
                                             static_cast<int>(bo), static_cast<int>(br), R <= br);
    return;
  }
  int64_t S = std::clamp<int64_t>(256 / O, 2, cdiv(R, 4096));
  const int64_t C = cdiv(cdiv(R, S), br) * br;
  S = cdiv(R, C);
  const bool sums = kind == Scan::cumsum;
  Tensor totals = Tensor::empty({O, S}, acc, data.device());
  detail::row_stats_kernel()[{O * S}](data, totals, totals, totals, totals, O, R, S, C, 0.0, 0.0,
                                      sums ? detail::kRowStatSum : detail::kRowStatProd, static_cast<int>(acc),
                                      static_cast<int>(acc), false, 1, static_cast<int>(br), 0, 0, 0, 0);
  Tensor offsets = Tensor::empty({O, S}, acc, data.device());
  launch_scan(sums ? Scan::excl_cumsum : Scan::excl_cumprod, totals, totals, offsets, offsets, O, S, acc);
  detail::row_scan_kernel()[{O * S}](data, g, out, idx, offsets, O, R, S, C, static_cast<int>(kind),
                                     static_cast<int>(acc), static_cast<int>(out.dtype()), true, 1,
                                     static_cast<int>(br), C <= br);
}

// Runs `kind` along `dim` of x (and g for affine_rev); returns the values (dtype out_t, x's
// shape) and, for cummax / cummin, the indices.
ValuesIndices run_scan(const char* op, Scan kind, const Tensor& x, const Tensor* g, int dim, DType out_t) {
  detail::check_tensors(op, {&x});
  int d = detail::normalize_dim(op, dim, x.dim());
  if (x.dim() == 0) {  // a 0-dim tensor scans as one element
    Tensor g1 = g ? g->as_strided({1}, {1}, g->storage_offset()) : Tensor();
    ValuesIndices r = run_scan(op, kind, x.as_strided({1}, {1}, x.storage_offset()), g ? &g1 : nullptr, 0, out_t);
    r.values = r.values.as_strided({}, {}, r.values.storage_offset());
    if (r.indices.defined()) r.indices = r.indices.as_strided({}, {}, r.indices.storage_offset());
    return r;
  }
  const bool ext = kind == Scan::cummax || kind == Scan::cummin;
  if (x.numel() == 0) {
    ValuesIndices r{Tensor::empty(x.shape(), out_t, x.device()), Tensor()};
    if (ext) r.indices = Tensor::empty(x.shape(), DType::i64, x.device());
    return r;
  }
  detail::Rows rows = detail::rows_of(x, {d});
  Tensor grows = g ? detail::rows_of(*g, {d}).data : rows.data;
  Tensor out = Tensor::empty({rows.O, rows.R}, out_t, x.device());
  Tensor idx = ext ? Tensor::empty({rows.O, rows.R}, DType::i64, x.device()) : out;
  DType acc = scan_acc(kind, kind == Scan::affine_rev || kind == Scan::seg_sum_rev ? g->dtype() : x.dtype());
  launch_scan(kind, rows.data, grows, out, idx, rows.O, rows.R, acc);
  ValuesIndices r{detail::rows_back(out, x, d, rows.R), Tensor()};
  if (ext) r.indices = detail::rows_back(idx, x, d, rows.R);
  return r;
}

DType cum_dtype(const Tensor& x) { return is_float(x.dtype()) ? x.dtype() : DType::i64; }

}  // namespace

Tensor cumsum(const Tensor& x, int dim) {
  detail::check_tensors("cumsum", {&x});
  return run_scan("cumsum", Scan::cumsum, x, nullptr, dim, cum_dtype(x)).values;
}
Tensor cumprod(const Tensor& x, int dim) {
  detail::check_tensors("cumprod", {&x});
  return run_scan("cumprod", Scan::cumprod, x, nullptr, dim, cum_dtype(x)).values;
}
ValuesIndices cummax(const Tensor& x, int dim) {
  detail::check_tensors("cummax", {&x});
  return run_scan("cummax", Scan::cummax, x, nullptr, dim, x.dtype());
}
ValuesIndices cummin(const Tensor& x, int dim) {
  detail::check_tensors("cummin", {&x});
  return run_scan("cummin", Scan::cummin, x, nullptr, dim, x.dtype());
}

Tensor cumprod_backward(const Tensor& grad, const Tensor& x, int dim) {
  detail::check_tensors("cumprod_backward", {&grad, &x});
  if (grad.shape() != x.shape())
    fail("cumprod_backward: the gradient's shape {} differs from the input's {}", detail::shape_str(grad.shape()),
         detail::shape_str(x.shape()));
  Tensor gx = grad.dtype() == x.dtype() ? grad : to_dtype(grad, x.dtype());
  Tensor before = run_scan("cumprod_backward", Scan::excl_cumprod, x, nullptr, dim, x.dtype()).values;
  Tensor S = run_scan("cumprod_backward", Scan::affine_rev, x, &gx, dim, x.dtype()).values;
  return mul(before, S);
}

}  // namespace tritium::ops

namespace tritium::ops {

Tensor cummaxmin_backward(const Tensor& grad, const Tensor& indices, int dim) {
  detail::check_tensors("cummaxmin_backward", {&grad, &indices});
  if (grad.shape() != indices.shape())
    fail("cummaxmin_backward: the gradient's shape {} differs from the indices' {}", detail::shape_str(grad.shape()),
         detail::shape_str(indices.shape()));
  if (indices.dtype() != DType::i64)
    fail("cummaxmin_backward: the indices must be i64 (cummax / cummin's), got {}", dtype_name(indices.dtype()));
  if (!is_float(grad.dtype()) || is_fp8(grad.dtype()))
    fail("cummaxmin_backward: the gradient must be f16, bf16, f32 or f64, got {}", dtype_name(grad.dtype()));
  return run_scan("cummaxmin_backward", Scan::seg_sum_rev, indices, &grad, dim, grad.dtype()).values;
}

}  // namespace tritium::ops
