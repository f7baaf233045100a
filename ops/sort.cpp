// Sorting along a dim (ops/sort.h): a stable merge sort of each row of the contiguous [O, R]
// matrix of detail::rows_of (the sorted dim last), for rows of any length.
//  1. `sort_runs`: each program sorts one run of L0 (<= 64) elements of a row by ranking: element
//     i goes to the number of elements that come before it (a [L0, L0] comparison block; equal
//     elements come before it when their position is lower, which makes the order stable).
//  2. `merge_runs`, once per doubling of the run length L until one run holds the row: each
//     element of a pair of sorted runs finds by binary search how many elements of the other run
//     come before it (strictly before for the left run, before or equal for the right one, so
//     ties keep the left run first) and lands at its own position plus that count. Every element
//     is placed independently, so a pass is one fully parallel launch over the rows.
// The comparison puts NaN after every number (before it, descending), as PyTorch's sort.
// Rows of at most kBlockSortMax elements of a 32-bit or narrower dtype take one launch instead
// (`sort_block`): each program sorts whole rows with tl::sort (a bitonic network in registers,
// shuffles and a few shared-memory exchanges on the GPU) over 64-bit keys that pack an
// order-preserving integer image of the value above the element's position, so every key is
// distinct: the order is total, ties keep their positions (stable), NaN and -0.0 land where
// PyTorch puts them, and the values are read back at the sorted positions. topk (and kthvalue
// where radix selection does not run) on such rows keeps only the k first keys of tl::topk (a
// bitonic selection), not a full sort.
// On the CPU, topk of a small k on rows too long for one program passes over each row k times
// instead (`topk_extract`: each pass the next key of the same packed keys), without sorting.
// Otherwise topk selects from the sorted rows; kthvalue and median do only where radix selection
// (ops/select.h) does not take the dtype (fp8) or the input is 0-dim.
#include "ops/sort.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/indexing.h"
#include "ops/reduce_kernels.h"
#include "ops/reduce_rows.h"
#include "ops/select.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;

// Whether a comes strictly before b in the order (NaN largest).
tl::tensor before(const tl::tensor& a, const tl::tensor& b, bool descending, bool flt) {
  tl::tensor r = descending ? a > b : a < b;
  if (flt) r = r || (descending ? (a != a && b == b) : (a == a && b != b));
  return r;
}

// The type comparisons run in: f16/bf16 as f32, bool as i32, others as they are.
DType compare_type(DType d) { return d == DType::i1 ? DType::i32 : detail::math_type(d); }

}  // namespace

Kernel& detail::sort_runs_kernel() {
  static Kernel k = tritium::kernel(
      "sort_runs", [](P x, P keys, P idx, tl::i64 R, tl::i64 nruns, bool DESC, int CMP, int L0) {
        const DType cmp_t = static_cast<DType>(CMP);
        const bool flt = is_float(cmp_t);
        // 32-bit coordinates (fewer than 2^31 programs): not the 64-bit division subroutine.
        auto pid = tl::program_id(0);
        auto nr = nruns.to(tl::int32);
        auto row = (pid / nr).to(tl::int64), start = (pid % nr).to(tl::int64) * L0;
        auto pos = start + tl::arange(0, L0).to(tl::int64);
        auto m = pos < R;
        auto v = tl::load(x + (row * R + pos), m, 0);
        auto c = v.dtype() == cmp_t ? v : v.to(cmp_t);
        auto ci = c(tl::_, tl::None), cj = c(tl::None, tl::_);
        auto pi = pos(tl::_, tl::None), pj = pos(tl::None, tl::_);
        auto earlier = before(cj, ci, DESC, flt) || (!before(ci, cj, DESC, flt) && pj < pi);
        auto rank = tl::sum((earlier && m(tl::None, tl::_)).to(tl::int64), 1);
        auto dest = row * R + start + rank;
        tl::store(keys + dest, v, m);
        tl::store(idx + dest, pos, m);
      });
  return k;
}

Kernel& detail::merge_runs_kernel() {
  static Kernel k = tritium::kernel(
      "merge_runs", [](P keys, P idx, P keys_out, P idx_out, tl::i64 R, tl::i64 L, tl::i64 nchunks, tl::i64 steps,
                       bool DESC, int CMP, int BLOCK) {
        const DType cmp_t = static_cast<DType>(CMP);
        const bool flt = is_float(cmp_t);
        auto pid = tl::program_id(0);
        auto nc = nchunks.to(tl::int32);
        auto row = (pid / nc).to(tl::int64);
        auto p = (pid % nc).to(tl::int64) * BLOCK + tl::arange(0, BLOCK).to(tl::int64);
        auto valid = p < R;
        auto run = p / L;
        auto left = run % 2 == 0;
        auto base = (run / 2) * (2 * L);
        auto j = p - run * L;
        auto other = tl::where(left, base + L, base);
        auto other_len = tl::minimum(tl::maximum(R - other, 0), L);
        auto rowp = row * R;
        auto v = tl::load(keys + (rowp + p), valid, 0);
        auto c = v.dtype() == cmp_t ? v : v.to(cmp_t);
        auto lo = tl::zeros({BLOCK}, tl::int64);
        auto hi = other_len;
        for (auto s : tl::range(0, steps)) {
          (void)s;
          auto active = lo < hi;
          auto mid = (lo + hi) / 2;
          auto y = tl::load(keys + (rowp + other + mid), valid && active, 0);
          auto cy = y.dtype() == cmp_t ? y : y.to(cmp_t);
          // Left elements count the right run's elements strictly before them; right elements
          // count the left run's elements not after them.
          auto goes_before = tl::where(left, before(cy, c, DESC, flt), !before(c, cy, DESC, flt));
          lo = tl::where(active && goes_before, mid + 1, lo);
          hi = tl::where(active && !goes_before, mid, hi);
        }
        auto dest = rowp + base + j + lo;
        tl::store(keys_out + dest, v, valid);
        tl::store(idx_out + dest, tl::load(idx + (rowp + p), valid, 0), valid);
      });
  return k;
}

namespace {

// The longest row `sort_block` takes in one program; longer rows (and 64-bit dtypes, whose key
// leaves no room for the position) take the merge sort. On the CPU the merge sort's launches
// cost little and its kernels serve every length, while each width of the unrolled network is a
// compile of its own (a 2048-wide one took ~30 s on the loaded 2-core dev machine): short rows only.
constexpr int64_t kBlockSortMax = 4096, kBlockSortMaxCpu = 256;

// An i64 key per element whose order is the sort's: an i32 whose signed order is the value's
// (floats through their bits, negatives' magnitude bits flipped; -0.0 as 0.0, which PyTorch's
// sort finds equal; every NaN above +inf), complemented when descending, above the element's
// position - so all keys of a row are distinct and equal values come in position order. For
// dtypes of 32 bits or fewer but u32 (key_sortable).
tl::tensor position_key(const tl::tensor& v, const tl::tensor& pos, bool descending) {
  tl::tensor s;
  if (is_float(v.dtype())) {
    auto c = v.dtype() == DType::f32 ? v : v.to(tl::float32);
    auto b = c.to(tl::int32, true);
    s = b ^ ((b >> 31) & 0x7fffffff);
    s = tl::where(c == 0, 0, s);
    s = tl::where(c != c, 0x7fffffff, s);
  } else {
    s = v.to(tl::int32);
  }
  if (descending) s = ~s;
  return (s.to(tl::int64) << 32) | pos.to(tl::int64);
}

bool key_sortable(DType d) { return dtype_bits(d) <= 32 && d != DType::u32 && !is_fp8(d); }

bool block_sortable(DType d, int64_t R, const Device& device) {
  return R <= (device.is_cuda() ? kBlockSortMax : kBlockSortMaxCpu) && key_sortable(d);
}

// Whether topk takes the k first keys of a row by extraction (topk_extract): on the CPU, rows too
// long for sort_block and k small enough that k passes over the row cost less than the merge
// sort (~90 ns an element of f32 on one core, against under 1 ns a pass; kCpuExtractMax passes).
// The GPU's rows of up to 4096 take tl::topk in one program; not measured there beyond.
constexpr int64_t kCpuExtractMax = 128, kExtractWhole = 4096;
bool topk_extractable(DType d, int64_t R, int64_t k, const Device& device) {
  return device.is_cpu() && key_sortable(d) && k <= kCpuExtractMax && R < (int64_t{1} << 31) &&
         !block_sortable(d, R, device);
}

}  // namespace

Kernel& detail::sort_block_kernel() {
  static Kernel k = tritium::kernel(
      "sort_block", [](P x, P keys, P idx, tl::i64 O, tl::i64 R, tl::i64 W, bool DESC, int BR, int N, int K) {
        // Rows pid * BR .. + BR, each padded to N with keys that sort last.
        auto rows = tl::program_id(0).to(tl::int64) * BR + tl::arange(0, BR).to(tl::int64);
        auto cols = tl::arange(0, N);
        auto rmask = rows < O;
        auto m = rmask(tl::_, tl::None) && cols(tl::None, tl::_) < R;
        auto base = rows(tl::_, tl::None) * R;
        auto v = tl::load(x + (base + cols(tl::None, tl::_)), m, 0);
        auto key = position_key(v, cols(tl::None, tl::_), DESC);
        key = tl::where(m, key, std::numeric_limits<int64_t>::max());
        tl::tensor first;
        if (K == N) {
          first = tl::sort(key);
        } else {  // the K smallest keys, ascending: tl::topk of the complement, complemented back
          first = ~tl::topk(~key, K);
        }
        const int width = K;
        auto j = tl::arange(0, width);
        auto pos = first & int64_t{0xffffffff};
        auto out = rows(tl::_, tl::None) * W + j(tl::None, tl::_);
        auto om = rmask(tl::_, tl::None) && j(tl::None, tl::_) < W;
        tl::store(idx + out, pos, om);
        tl::store(keys + out, tl::load(x + (base + pos), om, 0), om);
      });
  return k;
}

Kernel& detail::topk_extract_kernel() {
  static Kernel k = tritium::kernel(
      "topk_extract", [](P x, P values, P idx, tl::i64 R, tl::i64 W, bool DESC, int BLOCK, bool WHOLE) {
        // One row a program; pass j finds the smallest key above pass j-1's (the keys are
        // distinct): the W first keys in order, W * R comparisons. WHOLE (R <= BLOCK): the row's
        // keys are made once and held; else each pass streams the row in blocks.
        auto row = tl::program_id(0).to(tl::int64);
        auto base = row * R;
        auto cols = tl::arange(0, BLOCK).to(tl::int64);
        constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
        auto keys_at = [&](const tl::tensor& pos) {
          auto m = pos < R;
          return tl::where(m, position_key(tl::load(x + (base + pos), m, 0), pos, DESC), kNone);
        };
        tl::tensor held = WHOLE ? keys_at(cols) : tl::tensor();
        auto prev = tl::full({}, kNone, tl::int64);
        for (auto j : tl::range(0, W)) {
          auto best = tl::full({}, kNone, tl::int64);
          auto fold = [&](const tl::tensor& key) {
            // kNone (padding) is never taken: a row has at least W keys.
            best = tl::minimum(best, tl::min(tl::where(key > prev || j == 0, key, kNone)));
          };
          if (WHOLE) {
            fold(held);
          } else {
            for (auto c : tl::range(0, R, BLOCK)) fold(keys_at(c + cols));
          }
          prev = best;
          auto at = best & int64_t{0xffffffff};
          tl::store(idx + (row * W + j), at);
          tl::store(values + (row * W + j), tl::load(x + (base + at)));
        }
      });
  return k;
}

namespace {

int bit_length(int64_t x) {
  int n = 0;
  while (x > 0) ++n, x >>= 1;
  return n;
}

struct SortedRows {
  Tensor keys, idx;  // [O, W] contiguous: the first W of each sorted row (W = R but for `first`)
  detail::Rows rows;
  int dim = 0;
  int64_t W = 0;
};

// One launch of sort_block over the rows; only the `first` columns of each sorted row are kept.
void sort_in_blocks(SortedRows& s, bool descending, int64_t first) {
  const int64_t O = s.rows.O, R = s.rows.R;
  const int64_t N = std::max<int64_t>(2, next_power_of_2(R));
  // The first `first` keys of tl::topk (a power of two), or the whole row sorted.
  const int64_t K = first < R ? std::max<int64_t>(2, next_power_of_2(first)) : N;
  // Several short rows a program, up to 2048 keys; warps as the block grows (16 keys a thread).
  const int64_t BR = std::min(std::max<int64_t>(1, 2048 / N), next_power_of_2(O));
  const int warps = static_cast<int>(std::clamp<int64_t>(BR * N / 256, 1, 8));
  const bool gpu = s.keys.device().is_cuda();
  detail::sort_block_kernel()[{cdiv(O, BR)}](s.rows.data, s.keys, s.idx, O, R, s.W, descending, static_cast<int>(BR),
                                             static_cast<int>(N), static_cast<int>(K),
                                             Options{.num_warps = gpu ? warps : 1, .num_stages = 1, .device = s.keys.device()});
}

// Rows of x along dim sorted (stable); first >= 0: only the first `first` columns are needed.
SortedRows sort_rows(const char* op, const Tensor& x, int dim, bool descending, int64_t first = -1) {
  detail::check_tensors(op, {&x});
  SortedRows s;
  s.dim = detail::normalize_dim(op, dim, x.dim());
  if (x.dim() == 0) {
    Tensor one = x.as_strided({1}, {1}, x.storage_offset());
    s.rows = detail::rows_of(one, {0});
  } else {
    s.rows = detail::rows_of(x, {s.dim});
  }
  const int64_t O = s.rows.O, R = s.rows.R;
  const bool one_program = block_sortable(x.dtype(), R, x.device());
  s.W = one_program && first >= 0 ? first : R;
  s.keys = Tensor::empty({O, s.W}, x.dtype(), x.device());
  s.idx = Tensor::empty({O, s.W}, DType::i64, x.device());
  if (O * R == 0 || s.W == 0) return s;
  if (one_program) {
    sort_in_blocks(s, descending, s.W);
    return s;
  }
  const int cmp = static_cast<int>(compare_type(x.dtype()));
  const int64_t L0 = std::clamp<int64_t>(next_power_of_2(R), 16, 64);
  const int64_t nruns = cdiv(R, L0);
  detail::sort_runs_kernel()[{O * nruns}](s.rows.data, s.keys, s.idx, R, nruns, descending, cmp, static_cast<int>(L0));
  if (R <= L0) return s;
  Tensor k2 = Tensor::empty({O, R}, x.dtype(), x.device()), i2 = Tensor::empty({O, R}, DType::i64, x.device());
  const int64_t block = std::clamp<int64_t>(next_power_of_2(R), 16, 1024);
  const int64_t nchunks = cdiv(R, block);
  for (int64_t L = L0; L < R; L *= 2) {
    const int64_t steps = bit_length(L) + 1;
    detail::merge_runs_kernel()[{O * nchunks}](s.keys, s.idx, k2, i2, R, L, nchunks, steps, descending, cmp,
                                       static_cast<int>(block));
    std::swap(s.keys, k2);
    std::swap(s.idx, i2);
  }
  return s;
}

// [O, k] columns [from, from + k) of sorted rows, back in x's dim order.
ValuesIndices columns_back(const SortedRows& s, const Tensor& x, int64_t from, int64_t k) {
  Tensor kv = s.keys.as_strided({s.rows.O, k}, {s.W, 1}, s.keys.storage_offset() + from);
  Tensor ki = s.idx.as_strided({s.rows.O, k}, {s.W, 1}, s.idx.storage_offset() + from);
  return {detail::rows_back(kv, x, s.dim, k), detail::rows_back(ki, x, s.dim, k)};
}

// x's shape with `dim` dropped (or kept as 1).
Shape selected_shape(const Tensor& x, int dim, bool keepdim) {
  if (x.dim() == 0) return {};
  return detail::reduced_shape_of(x, {dim}, keepdim);
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  int64_t s = 1;
  for (size_t k = shape.size(); k-- > 0;) st[k] = s, s *= std::max<int64_t>(shape[k], 1);
  return st;
}

// A contiguous result seen with another shape of the same number of elements.
ValuesIndices reshaped(ValuesIndices r, const Shape& shape) {
  r.values = r.values.as_strided(shape, contiguous_strides(shape), r.values.storage_offset());
  r.indices = r.indices.as_strided(shape, contiguous_strides(shape), r.indices.storage_offset());
  return r;
}

// kthvalue / median (k = 0) of the rows along dim by radix selection (ops/select.h), [O]
// contiguous values and indices; nullopt for fp8 (then the sort's k-th column).
std::optional<ValuesIndices> selected(const Tensor& x, int dim, int64_t k) {
  if (x.dim() == 0) return std::nullopt;  // the sort's path keeps the 0-dim shapes
  if (!detail::row_selectable(x.dtype(), x.size(dim))) return std::nullopt;
  detail::Rows rows = detail::rows_of(x, {dim});
  // [O, 1] whose O runs over x's other dims in order: already the result's layout (keepdim or
  // not, `reshaped` only relabels it).
  return detail::select_rows(rows, x.dtype(), k);
}

void check_selected_dim(const char* op, const Tensor& x, int dim) {
  if (x.dim() > 0 && x.size(dim) == 0)
    fail("{}: Expected reduction dim {} to have non-zero size (input shape {})", op, dim, detail::shape_str(x.shape()));
}

}  // namespace

ValuesIndices sort(const Tensor& x, int dim, bool descending) {
  SortedRows s = sort_rows("sort", x, dim, descending);
  if (x.dim() == 0) return reshaped({s.keys, s.idx}, {});
  return columns_back(s, x, 0, s.rows.R);
}

Tensor argsort(const Tensor& x, int dim, bool descending) { return sort(x, dim, descending).indices; }

ValuesIndices topk(const Tensor& x, int64_t k, int dim, bool largest, bool /*sorted*/) {
  detail::check_tensors("topk", {&x});
  int d = detail::normalize_dim("topk", dim, x.dim());
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  if (k < 0 || k > n) fail("topk: selected index k = {} out of range for a dimension of size {}", k, n);
  SortedRows s;
  if (x.dim() > 0 && topk_extractable(x.dtype(), n, k, x.device())) {
    s.dim = d;
    s.rows = detail::rows_of(x, {d});
    s.W = k;
    s.keys = Tensor::empty({s.rows.O, k}, x.dtype(), x.device());
    s.idx = Tensor::empty({s.rows.O, k}, DType::i64, x.device());
    if (s.rows.O * k > 0) {
      // Rows of up to kExtractWhole keys held in one block, longer ones streamed.
      const int64_t block = std::min(next_power_of_2(n), kExtractWhole);
      detail::topk_extract_kernel()[{s.rows.O}](s.rows.data, s.keys, s.idx, n, k, largest, static_cast<int>(block),
                                                n <= block, Options{.num_warps = 1, .num_stages = 1, .device = x.device()});
    }
  } else {
    s = sort_rows("topk", x, dim, largest, k);
  }
  if (x.dim() == 0) return reshaped({s.keys, s.idx}, {});
  return columns_back(s, x, 0, k);
}

ValuesIndices kthvalue(const Tensor& x, int64_t k, int dim, bool keepdim) {
  detail::check_tensors("kthvalue", {&x});
  int d = detail::normalize_dim("kthvalue", dim, x.dim());
  check_selected_dim("kthvalue", x, d);
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  if (k < 1 || k > n) fail("kthvalue: selected number k = {} out of range for dimension {} of size {}", k, d, n);
  if (auto r = selected(x, d, k)) return reshaped(*r, selected_shape(x, d, keepdim));
  SortedRows s = sort_rows("kthvalue", x, dim, false, k);
  if (x.dim() == 0) return reshaped({s.keys, s.idx}, {});
  return reshaped(columns_back(s, x, k - 1, 1), selected_shape(x, d, keepdim));
}

ValuesIndices median(const Tensor& x, int dim, bool keepdim) {
  detail::check_tensors("median", {&x});
  int d = detail::normalize_dim("median", dim, x.dim());
  check_selected_dim("median", x, d);
  if (auto r = selected(x, d, 0)) return reshaped(*r, selected_shape(x, d, keepdim));
  SortedRows s = sort_rows("median", x, dim, false);
  const int64_t O = s.rows.O, R = s.rows.R;
  // The lower median's column, or the first NaN's where a row holds one (NaN sorts last, and the
  // sort is stable, so that is the row's first NaN).
  Tensor col = full({O, 1}, (R - 1) / 2, DType::i64, x.device());
  if (is_float(x.dtype()) && O > 0) {
    Tensor nans = count_nonzero(ne(s.keys, s.keys), {1}).as_strided({O, 1}, {1, 1}, 0);
    col = where(gt(nans, Scalar(0)), rsub(nans, Scalar(R)), col);
  }
  ValuesIndices picked{gather(s.keys, 1, col), gather(s.idx, 1, col)};
  if (x.dim() == 0) return reshaped(picked, {});
  return reshaped({detail::rows_back(picked.values, x, d, 1), detail::rows_back(picked.indices, x, d, 1)},
                  selected_shape(x, d, keepdim));
}

Tensor median(const Tensor& x) {
  detail::check_tensors("median", {&x});
  if (x.numel() == 0) {
    if (!is_float(x.dtype())) fail("median: an empty {} tensor has no median (NaN needs a floating-point dtype)", dtype_name(x.dtype()));
    return full({}, NAN, x.dtype(), x.device());
  }
  Tensor flat = contiguous(x);
  flat = flat.as_strided({x.numel()}, {1}, flat.storage_offset());
  if (detail::all_selectable(x.dtype(), x.numel())) return detail::select_median_all(flat);
  Tensor v = median(flat, 0, false).values;
  return v;
}

}  // namespace tritium::ops
