// Statistics reductions (ops/reduce_stats.h): var/std (two passes over each row: the mean, then
// the squared deviations from it, so a large mean costs no accuracy), prod, logsumexp (the row's
// maximum, then sum(exp(x - max))), vector norms, all/any, count_nonzero; and max/min along a dim
// (amax and argmax of ops/reduce.cpp).
//
// One kernel, `row_stats`, reduces each row of the contiguous [O, R] matrix that
// detail::rows_of makes of the input (kept dims first, reduced dims last): a program takes BO rows
// and loops over them in [BO, BR] blocks, accumulating elementwise and reducing along the row at
// the end. Accumulation is in f32 for f16/bf16/f32, f64 for f64, i64 for integer sums/products.
#include "ops/reduce_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

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

// sum: the partial sums of a split count_nonzero.
enum class Stat : int { var, std, prod, logsumexp, norm_p, norm0, norm1, norm2, norm_inf, norm_ninf, all, any, count, sum };
static_assert(static_cast<int>(Stat::sum) + 1 == detail::kRowStatKinds);
static_assert(static_cast<int>(Stat::sum) == detail::kRowStatSum && static_cast<int>(Stat::prod) == detail::kRowStatProd);

// NaN-propagating maximum (or minimum) of two blocks.
tl::tensor nan_extreme(const tl::tensor& a, const tl::tensor& b, bool max) {
  return tl::where((max ? a > b : a < b) || a != a, a, b);
}

}  // namespace

Kernel& detail::row_stats_kernel() {
  static Kernel k = tritium::kernel(
      "row_stats", [](P x, P out, P out2, P part, P cnt, tl::i64 O, tl::i64 R, tl::i64 S, tl::i64 C, tl::f64 param,
                      tl::f64 scale, int KIND, int ACC, int OUT, bool MEAN_OUT, int BO, int BR, int KIND2, int ACC2,
                      int PART, int TS) {
        const DType out_t = static_cast<DType>(OUT);
        // Output o is chunk o % S of row o / S: elements [s C, min(R, (s + 1) C)) (S = 1, C = R
        // unless a few long rows are split).
        auto pid = tl::program_id(0);
        auto o = pid.to(tl::int64) * BO + tl::arange(0, BO);
        auto omask = o < O * S;
        const double inf = std::numeric_limits<double>::infinity();
        // The reduction `kind` (accumulated in acc_t) of the [BO] rows of `src` that start at
        // `start` and hold `len` elements (at most C), in [BO, BR] blocks; loads with cache
        // modifier `cm`. Returns the result and, for var/std, the mean.
        auto stat = [&](Stat kind, DType acc_t, P src, const tl::tensor& start, const tl::tensor& len, tl::tensor C,
                        const tl::tensor& omask, int BR, const std::string& cm) {
          const ir::Shape tile{BO, BR};
          auto rows = start(tl::_, tl::None);
          auto rmask = omask(tl::_, tl::None);
          auto rlen = len(tl::_, tl::None);
          auto load = [&](const tl::tensor& r0, tl::tensor& m) {
            auto r = (r0 + tl::arange(0, BR))(tl::None, tl::_);
            m = rmask && (r < rlen);
            auto v = tl::load(src + (rows + r), m, 0, cm);
            return v.dtype() == acc_t ? v : v.to(acc_t);
          };
          tl::tensor result, result2;
          switch (kind) {
            case Stat::var:
            case Stat::std: {
              // Pass 1 sums x - x_first: the shift keeps the sum small when the mean is large
              // against the spread, so the mean (and the deviations of pass 2) stay accurate.
              auto first = tl::load(src + start, omask && len > 0, 0, cm);
              auto shift = first.dtype() == acc_t ? first : first.to(acc_t);
              auto shift2 = shift(tl::_, tl::None);
              auto acc = tl::zeros(tile, acc_t);
              for (auto r0 : tl::range(0, C, BR)) {
                tl::tensor m;
                auto v = load(r0, m);
                acc = acc + tl::where(m, v - shift2, 0);
              }
              auto mean = shift + tl::sum(acc, 1) / len.to(acc_t);  // 0 / 0: NaN for an empty row
              auto mean2 = mean(tl::_, tl::None);
              auto acc2 = tl::zeros(tile, acc_t);
              for (auto r0 : tl::range(0, C, BR)) {
                tl::tensor m;
                auto v = load(r0, m);
                auto d = tl::where(m, v - mean2, 0);
                acc2 = acc2 + d * d;
              }
              result = tl::sum(acc2, 1) * param.to(acc_t);  // param = 1 / max(0, R - correction)
              if (kind == Stat::std) result = tl::sqrt(result);
              result2 = mean;
              break;
            }
            case Stat::prod: {
              auto acc = tl::full(tile, 1, acc_t);
              for (auto r0 : tl::range(0, C, BR)) {
                tl::tensor m;
                auto v = load(r0, m);
                acc = acc * tl::where(m, v, 1);
              }
              result = tl::reduce(acc, 1, [](tl::tensor a, tl::tensor b) { return a * b; });
              break;
            }
            case Stat::logsumexp: {
              auto mx = tl::full(tile, -inf, acc_t);
              for (auto r0 : tl::range(0, C, BR)) {
                tl::tensor m;
                auto v = load(r0, m);
                mx = tl::where(m, nan_extreme(v, mx, true), mx);
              }
              auto rmax = tl::reduce(mx, 1, [](tl::tensor a, tl::tensor b) { return nan_extreme(a, b, true); });
              // An infinite maximum (a row of -inf, or one holding +inf) is not subtracted: the sum
              // then gives -inf or +inf itself, where x - max would give NaN.
              auto shift = tl::where(tl::abs(rmax) == inf, 0, rmax);
              auto shift2 = shift(tl::_, tl::None);
              auto acc = tl::zeros(tile, acc_t);
              for (auto r0 : tl::range(0, C, BR)) {
                tl::tensor m;
                auto v = load(r0, m);
                acc = acc + tl::where(m, tl::exp(v - shift2), 0);
              }
              result = tl::log(tl::sum(acc, 1)) + shift;
              break;
            }
            case Stat::norm_p: case Stat::norm0: case Stat::norm1: case Stat::norm2: {
              auto acc = tl::zeros(tile, acc_t);
              for (auto r0 : tl::range(0, C, BR)) {
                tl::tensor m;
                auto v = load(r0, m);
                auto a = tl::abs(v);
                tl::tensor term;
                if (kind == Stat::norm0) term = (v != 0).to(acc_t);
                else if (kind == Stat::norm1) term = a;
                else if (kind == Stat::norm2) term = v * v;
                else term = tl::exp2(param.to(acc_t) * tl::log2(a));  // |v|^p (0^p: 0 for p > 0, inf for p < 0)
                acc = acc + tl::where(m, term, 0);
              }
              result = tl::sum(acc, 1);
              if (kind == Stat::norm2) result = tl::sqrt(result);
              if (kind == Stat::norm_p) result = tl::exp2(tl::log2(result) * scale.to(acc_t));  // ^(1/p)
              break;
            }
            case Stat::norm_inf: case Stat::norm_ninf: {
              const bool mxk = kind == Stat::norm_inf;
              auto acc = tl::full(tile, mxk ? -inf : inf, acc_t);
              for (auto r0 : tl::range(0, C, BR)) {
                tl::tensor m;
                auto a = tl::abs(load(r0, m));
                acc = tl::where(m, nan_extreme(a, acc, mxk), acc);
              }
              result = tl::reduce(acc, 1, [mxk](tl::tensor a, tl::tensor b) { return nan_extreme(a, b, mxk); });
              break;
            }
            case Stat::sum: {
              auto acc = tl::zeros(tile, acc_t);
              for (auto r0 : tl::range(0, C, BR)) {
                tl::tensor m;
                acc = acc + load(r0, m);
              }
              result = tl::sum(acc, 1);
              break;
            }
            case Stat::all: case Stat::any: case Stat::count: {
              const bool is_all = kind == Stat::all;
              auto acc = kind == Stat::count ? tl::zeros(tile, tl::int64) : tl::full(tile, is_all ? 1 : 0, tl::int32);
              for (auto r0 : tl::range(0, C, BR)) {
                tl::tensor m;
                auto nz = load(r0, m) != 0;
                if (kind == Stat::count) acc = acc + tl::where(m, nz, false).to(tl::int64);
                else if (is_all) acc = tl::minimum(acc, tl::where(m, nz, true).to(tl::int32));
                else acc = tl::maximum(acc, tl::where(m, nz, false).to(tl::int32));
              }
              result = kind == Stat::count ? tl::sum(acc, 1) : is_all ? tl::min(acc, 1) : tl::max(acc, 1);
              if (kind != Stat::count) result = result != 0;
              break;
            }
          }
          return std::pair{result, result2};
        };
        auto start = (o / S) * R + (o % S) * C;
        auto len = tl::minimum(tl::maximum(R - (o % S) * C, 0), C);
        auto [result, result2] = stat(static_cast<Stat>(KIND), static_cast<DType>(ACC), x, start, len, C, omask, BR, "");
        if (!TS) {
          tl::store(out + o, result.dtype() == out_t ? result : result.to(out_t), omask);
          if (MEAN_OUT) tl::store(out2 + o, result2.dtype() == out_t ? result2 : result2.to(out_t), omask);
          return;
        }
        // One launch for split rows (TS > 0, one chunk a program): the chunk's partial goes to
        // part[o] ([O, S], dtype PART, the second launch's input); the last of a row's S programs
        // to count itself in cnt[row] (an acq_rel atomic: the others' partials are visible to it)
        // reduces the row's partials with KIND2 in ACC2 (as the second launch did, same order
        // whichever program is last), writes the result and zeroes the counter for the next launch.
        if (BO != 1) fail("row_stats: a one-launch split takes one chunk a program (BO = 1, got {})", BO);
        const DType part_t = static_cast<DType>(PART);
        tl::store(part + o, result.dtype() == part_t ? result : result.to(part_t), omask);
        auto row = pid / S.to(tl::int32);
        auto done = tl::atomic_add(cnt + row, 1);
        tl::if_(done == S.to(tl::int32) - 1, [&] {
          auto row_o = o / S;
          // .cg: from L2, where the other programs' stores are.
          auto total = stat(static_cast<Stat>(KIND2), static_cast<DType>(ACC2), part, row_o * S,
                            tl::zeros({BO}, tl::int64) + S, S, row_o < O, TS, ".cg").first;
          tl::store(out + row_o, total.dtype() == out_t ? total : total.to(out_t), row_o < O);
          tl::store(cnt + row, 0);
        });
      });
  return k;
}

Kernel& detail::var_combine_kernel() {
  static Kernel k = tritium::kernel(
      "var_combine", [](P means, P m2s, P out, P out2, tl::i64 R, tl::i64 S, tl::i64 C, tl::f64 param, bool STD,
                        bool MEAN_OUT, int ACC, int OUT, int BS) {
        const DType acc_t = static_cast<DType>(ACC), out_t = static_cast<DType>(OUT);
        auto o = tl::program_id(0).to(tl::int64);
        auto load = [&](P p, const tl::tensor& s, const tl::tensor& m) {
          auto v = tl::load(p + (o * S + s), m, 0);
          return v.dtype() == acc_t ? v : v.to(acc_t);
        };
        auto chunk_len = [&](const tl::tensor& s) { return tl::minimum(R - s * C, C).to(acc_t); };
        // Chan et al.'s combination of (count, mean, M2) per chunk: the mean from the chunks'
        // weighted means, then M2 = sum M2_s + n_s (mean_s - mean)^2.
        auto total = tl::zeros({BS}, acc_t);
        for (auto s0 : tl::range(0, S, BS)) {
          auto s = s0 + tl::arange(0, BS).to(tl::int64);
          auto m = s < S;
          total = total + tl::where(m, chunk_len(s) * load(means, s, m), 0);
        }
        auto mean = tl::sum(total, 0) / R.to(acc_t);
        auto m2 = tl::zeros({BS}, acc_t);
        for (auto s0 : tl::range(0, S, BS)) {
          auto s = s0 + tl::arange(0, BS).to(tl::int64);
          auto m = s < S;
          auto d = load(means, s, m) - mean;
          m2 = m2 + tl::where(m, load(m2s, s, m) + chunk_len(s) * d * d, 0);
        }
        auto result = tl::sum(m2, 0) * param.to(acc_t);
        if (STD) result = tl::sqrt(result);
        tl::store(out + o, result.dtype() == out_t ? result : result.to(out_t));
        if (MEAN_OUT) tl::store(out2 + o, mean.dtype() == out_t ? mean : mean.to(out_t));
      });
  return k;
}

namespace {

const char* stat_name(Stat s) {
  switch (s) {
    case Stat::var: return "var";
    case Stat::std: return "std";
    case Stat::prod: return "prod";
    case Stat::logsumexp: return "logsumexp";
    case Stat::all: return "all";
    case Stat::any: return "any";
    case Stat::count: return "count_nonzero";
    default: return "linalg.vector_norm";
  }
}

DType stat_acc(Stat kind, DType d) {
  if (kind == Stat::all || kind == Stat::any) return d == DType::i1 ? DType::i32 : detail::math_type(d);
  if (kind == Stat::count) return d == DType::i1 ? DType::i32 : d;
  if (is_float(d)) return d == DType::f64 ? DType::f64 : DType::f32;
  if (kind == Stat::prod || kind == Stat::sum) return DType::i64;
  return DType::f32;  // logsumexp of integers
}

// Reduces the O contiguous rows of R elements of `data` into `out` (and the mean into `mean`,
// for var/std). A few long rows are split in chunks (enough programs to fill the device: the
// reductions' fill of ops/reduce_plan.h, 4 per SM or one per CPU thread): a first launch reduces each chunk to a partial in the accumulation type, a second
// combines the partials - the same kind again (a product of products, a p-norm of p-norms, a
// logsumexp of logsumexps, ...), a sum for count_nonzero, Chan's formula for var/std.
void launch_rows(Stat kind, const Tensor& data, int64_t O, int64_t R, Tensor& out, Tensor* mean, double param,
                 double scale) {
  const DType acc = stat_acc(kind, data.dtype());
  // Rows longer than 1024: the reductions' widest block for the dtype (2048 of 2-byte elements).
  const int64_t br = R > 1024 ? detail::max_row_block(data.element_size()) : std::clamp<int64_t>(next_power_of_2(R), 16, 1024);
  // Rows of 1024 and more: one a program (as the sum/amax plan, ops/reduce_plan.cpp). A [2, 1024]
  // tile is reduced along its rows by the element-loop generator through shared memory (the
  // accumulator stored, two barriers, one warp a row walking 32 elements a lane while the other
  // warps wait), where a [1, 1024] tile is a full reduction (in-thread, butterflies, one partial
  // a warp): var / std make two such reductions a row.
  const int64_t bo = br >= 1024 ? 1 : std::clamp<int64_t>(2048 / br, 1, std::max<int64_t>(1, next_power_of_2(O)));
  int64_t S = 1, C = R;
  const int64_t fill = detail::reduce_device(data.device()).fill;
  if (cdiv(O, bo) < fill && R >= 16384) {
    S = std::clamp<int64_t>(cdiv(fill, O), 1, cdiv(R, 4096));
    C = cdiv(cdiv(R, S), br) * br;
    S = cdiv(R, C);
  }
  const bool moments = kind == Stat::var || kind == Stat::std;
  if (S == 1) {
    Tensor out2 = mean ? *mean : out;
    detail::row_stats_kernel()[{cdiv(O, bo)}](data, out, out2, out, out, O, R, int64_t(1), R, param, scale,
                                              static_cast<int>(kind), static_cast<int>(acc),
                                              static_cast<int>(out.dtype()), mean != nullptr, static_cast<int>(bo),
                                              static_cast<int>(br), 0, 0, 0, 0);
    return;
  }
  const DType partial_t = kind == Stat::all || kind == Stat::any ? DType::i1 : kind == Stat::count ? DType::i64 : acc;
  Tensor partial = Tensor::empty({O, S}, partial_t, data.device());
  // Counts add up (count_nonzero, and the 0-"norm"); the other kinds combine as themselves.
  const Stat second = kind == Stat::count ? Stat::sum : kind == Stat::norm0 ? Stat::norm1 : kind;
  if (!moments) {
    // One launch: the last chunk of each row to finish combines the row's partials (row_stats' TS
    // path), as a second launch over them would (the same kind, tile and order).
    Tensor cnt = detail::reduce_counters(data.device(), O);
    const int64_t ts = std::clamp<int64_t>(next_power_of_2(S), 16, 1024);
    detail::row_stats_kernel()[{O * S}](data, out, out, partial, cnt, O, R, S, C, param, scale, static_cast<int>(kind),
                                        static_cast<int>(acc), static_cast<int>(out.dtype()), false, 1,
                                        static_cast<int>(br), static_cast<int>(second),
                                        static_cast<int>(stat_acc(second, partial_t)), static_cast<int>(partial_t),
                                        static_cast<int>(ts));
    return;
  }
  // var/std: chunks give their M2 (divisor 1) and mean, var_combine applies Chan's formula.
  Tensor partial_mean = Tensor::empty({O, S}, acc, data.device());
  detail::row_stats_kernel()[{O * S}](data, partial, partial_mean, partial, partial, O, R, S, C, 1.0, scale,
                                      static_cast<int>(Stat::var), static_cast<int>(acc), static_cast<int>(partial_t),
                                      true, 1, static_cast<int>(br), 0, 0, 0, 0);
  Tensor out2 = mean ? *mean : out;
  const int64_t bs = std::clamp<int64_t>(next_power_of_2(S), 16, 1024);
  detail::var_combine_kernel()[{O}](partial_mean, partial, out, out2, R, S, C, param, kind == Stat::std,
                                    mean != nullptr, static_cast<int>(acc), static_cast<int>(out.dtype()),
                                    static_cast<int>(bs));
}

// Reduces x over `dims` (as given by the user) with `kind` into results of dtype `out_t`
// (`second` also gets the mean, for var_mean / std_mean).
Tensor run_stat(Stat kind, const Tensor& x, const std::vector<int>& dims_in, bool keepdim, DType out_t, double param,
                double scale, Tensor* second = nullptr) {
  const char* op = stat_name(kind);
  std::vector<int> dims = detail::reduction_dims(op, x, dims_in);
  Shape out_shape = detail::reduced_shape_of(x, dims, keepdim);
  Tensor out = Tensor::empty(out_shape, out_t, x.device());
  if (second) *second = Tensor::empty(out_shape, out_t, x.device());
  if (out.numel() == 0) return out;
  detail::Rows rows = detail::rows_of(x, dims);
  launch_rows(kind, rows.data, rows.O, rows.R, out, second, param, scale);
  return out;
}

void require_float(const char* op, const Tensor& x, const char* what) {
  detail::check_tensors(op, {&x});
  if (!is_float(x.dtype())) fail("{}: {} (got a tensor of dtype {})", op, what, dtype_name(x.dtype()));
}

double var_param(int64_t n, double correction) {
  double denom = std::max(0.0, static_cast<double>(n) - correction);
  return 1.0 / denom;  // inf when the divisor is 0: var is then inf, or NaN (0/0) for a constant row
}

int64_t reduced_numel(const Tensor& x, const std::vector<int>& dims) {
  int64_t n = 1;
  for (int d : dims) n *= x.dim() ? x.size(d) : 1;
  return n;
}

Tensor var_like(Stat kind, const Tensor& x, const std::vector<int>& dims, double correction, bool keepdim,
                Tensor* mean) {
  const char* op = stat_name(kind);
  require_float(op, x, "std and var only support floating point dtypes");
  int64_t n = reduced_numel(x, detail::reduction_dims(op, x, dims));
  return run_stat(kind, x, dims, keepdim, x.dtype(), var_param(n, correction), 0, mean);
}

}  // namespace

Tensor var(const Tensor& x, std::vector<int> dims, double correction, bool keepdim) {
  return var_like(Stat::var, x, dims, correction, keepdim, nullptr);
}
Tensor std(const Tensor& x, std::vector<int> dims, double correction, bool keepdim) {
  return var_like(Stat::std, x, dims, correction, keepdim, nullptr);
}
std::pair<Tensor, Tensor> var_mean(const Tensor& x, std::vector<int> dims, double correction, bool keepdim) {
  Tensor mean;
  Tensor v = var_like(Stat::var, x, dims, correction, keepdim, &mean);
  return {v, mean};
}
std::pair<Tensor, Tensor> std_mean(const Tensor& x, std::vector<int> dims, double correction, bool keepdim) {
  Tensor mean;
  Tensor s = var_like(Stat::std, x, dims, correction, keepdim, &mean);
  return {s, mean};
}

namespace {
DType prod_dtype(const Tensor& x) { return is_float(x.dtype()) ? x.dtype() : DType::i64; }
}  // namespace

Tensor prod(const Tensor& x) {
  detail::check_tensors("prod", {&x});
  return run_stat(Stat::prod, x, {}, false, prod_dtype(x), 0, 0);
}
Tensor prod(const Tensor& x, int dim, bool keepdim) {
  detail::check_tensors("prod", {&x});
  return run_stat(Stat::prod, x, {dim}, keepdim, prod_dtype(x), 0, 0);
}

Tensor logsumexp(const Tensor& x, std::vector<int> dims, bool keepdim) {
  detail::check_tensors("logsumexp", {&x});
  DType out = is_float(x.dtype()) ? x.dtype() : DType::f32;
  return run_stat(Stat::logsumexp, x, dims, keepdim, out, 0, 0);
}

Tensor vector_norm(const Tensor& x, double ord, std::vector<int> dims, bool keepdim) {
  const char* op = "linalg.vector_norm";
  detail::check_tensors(op, {&x});
  if (!is_float(x.dtype()))
    fail("{}: expected a floating point tensor as input, got {}", op, dtype_name(x.dtype()));
  if (std::isnan(ord)) fail("{}: ord must not be NaN", op);
  Stat kind = ord == 0 ? Stat::norm0 : ord == 1 ? Stat::norm1 : ord == 2 ? Stat::norm2
            : ord == INFINITY ? Stat::norm_inf : ord == -INFINITY ? Stat::norm_ninf : Stat::norm_p;
  if (kind == Stat::norm_inf || kind == Stat::norm_ninf || ord < 0) {
    // No identity (PyTorch's rule): an empty reduced dim is an error.
    std::vector<int> nd = detail::reduction_dims(op, x, dims);
    bool empty = x.numel() == 0 && (dims.empty() || x.dim() == 0);
    for (int d : nd) empty = empty || x.size(d) == 0;
    if (empty)
      fail("{}: cannot compute the {} norm on an empty tensor because the operation does not have an identity", op, ord);
  }
  return run_stat(kind, x, dims, keepdim, x.dtype(), ord, 1.0 / ord);
}

Tensor all(const Tensor& x, std::vector<int> dims, bool keepdim) {
  detail::check_tensors("all", {&x});
  return run_stat(Stat::all, x, dims, keepdim, x.dtype() == DType::u8 ? DType::u8 : DType::i1, 0, 0);
}
Tensor any(const Tensor& x, std::vector<int> dims, bool keepdim) {
  detail::check_tensors("any", {&x});
  return run_stat(Stat::any, x, dims, keepdim, x.dtype() == DType::u8 ? DType::u8 : DType::i1, 0, 0);
}
Tensor count_nonzero(const Tensor& x, std::vector<int> dims) {
  detail::check_tensors("count_nonzero", {&x});
  return run_stat(Stat::count, x, dims, false, DType::i64, 0, 0);
}

namespace {
ValuesIndices extreme_along(const char* op, const Tensor& x, int dim, bool keepdim, bool is_max) {
  detail::check_tensors(op, {&x});
  int d = detail::normalize_dim(op, dim, x.dim());
  if (x.dim() > 0 && x.size(d) == 0)
    fail("{}: Expected reduction dim {} to have non-zero size (input shape {})", op, d, detail::shape_str(x.shape()));
  // One pass gives both; bool (which argmax/argmin refuse) takes its indices from the same values as u8.
  if (x.dtype() != DType::i1) {
    auto [values, indices] = detail::extreme_with_index(x, dim, keepdim, is_max);
    return {values, indices};
  }
  Tensor keyed = to_dtype(x, DType::u8);
  Tensor values = is_max ? amax(x, {dim}, keepdim) : amin(x, {dim}, keepdim);
  Tensor indices = is_max ? argmax(keyed, dim, keepdim) : argmin(keyed, dim, keepdim);
  return {values, indices};
}
Tensor extreme_all(const char* op, const Tensor& x, bool is_max) {
  detail::check_tensors(op, {&x});
  if (x.numel() == 0)
    fail("{}: Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the "
         "'dim' argument.", op);
  return is_max ? amax(x) : amin(x);
}
}  // namespace

ValuesIndices max(const Tensor& x, int dim, bool keepdim) { return extreme_along("max", x, dim, keepdim, true); }
ValuesIndices min(const Tensor& x, int dim, bool keepdim) { return extreme_along("min", x, dim, keepdim, false); }
Tensor max(const Tensor& x) { return extreme_all("max", x, true); }
Tensor min(const Tensor& x) { return extreme_all("min", x, false); }

}  // namespace tritium::ops
