// Radix selection (ops/select.h; docs/ops.md, "Radix selection"). Each element maps to a key: an
// i32 whose unsigned order is the value's order, in its low BITS bits (floats through their bits
// with negatives' magnitude bits flipped, every NaN the largest key; signed integers offset by
// 2^(BITS-1); bf16 and f16 from their own 16 bits the same way). The k-th smallest
// key is found from the top bit down by counting keys, never by sorting.
//  - Rows of up to kRowMax (`select_rows`): a program holds its row's keys (or BR short rows') in
//    registers and decides one bit a step (BITS steps of one count per row, a block reduction
//    each); then a cumsum over the keys equal to the selected one finds the k-th of them in
//    position order (the stable sort's k-th, which tests/test_ops_sort.cpp pins), and the value is
//    read back at that index (bit-exact: -0.0 and NaN payloads kept; -0.0 and 0.0 are one key
//    there, as the sort).
//  - Digit passes (`select_count`; the median of all elements, rows over kRowMax): 8-bit digits,
//    a launch each (4 for f32, 2 for bf16): a grid of (row, chunk) programs counts the digits of
//    its chunk's keys still matching the decided prefix with tl::histogram and adds them to the
//    row's global counts with atomics. Every program of the next pass (and of the launches after)
//    re-derives the prefix and the remaining rank from the earlier passes' counts (a 256-wide
//    cumsum each), so the selection's state never goes through the host. The median of all
//    elements rebuilds its value from the key (-0.0 below 0.0 there, as PyTorch's CUDA radix
//    select); rows find the index of the k-th selected key (chunk counts, then a scan). Pass 0
//    also counts NaNs: a median over NaN selects the first NaN's rank (torch.median's rule).
#include "ops/select.h"

#include <algorithm>
#include <cstdint>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/reduce_plan.h"

namespace tritium::ops::detail {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;

// The longest row select_rows holds in one program (a [BR, N] block of i32 keys; 16 a thread at
// 8 warps).
constexpr int64_t kRowMax = 4096;
constexpr int32_t kSignBit = std::numeric_limits<int32_t>::min();
constexpr int64_t kSignBit64 = std::numeric_limits<int64_t>::min(), kMax64 = std::numeric_limits<int64_t>::max();

// The keys' dtype: i64 for 64-bit dtypes, else i32.
DType key_type(int bits) { return bits == 64 ? DType::i64 : DType::i32; }

// v (a bit pattern, as uint64) as a literal of the keys' dtype.
int64_t key_literal(uint64_t v, int bits) {
  return bits == 64 ? static_cast<int64_t>(v) : static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)));
}

// Bits of d's key (0: not taken).
int key_bits(DType d) {
  switch (d) {
    case DType::f64: case DType::i64: case DType::u64: return 64;
    case DType::f32: case DType::i32: case DType::u32: return 32;
    case DType::f16: case DType::bf16: case DType::i16: case DType::u16: return 16;
    case DType::i8: case DType::u8: case DType::i1: return 8;
    default: return 0;
  }
}

// The key of v (see the top): an i32 (i64 for 64-bit dtypes) in [0, 2^bits) read as unsigned.
// merge_zero: -0.0 is 0.0's key.
tl::tensor order_key(const tl::tensor& v, int bits, bool merge_zero) {
  const DType d = v.dtype();
  if (d == DType::f64) {
    auto b = v.to(tl::int64, true);
    auto s = b ^ ((b >> 63) & kMax64);
    if (merge_zero) s = tl::where(v == 0, 0, s);
    s = tl::where(v != v, kMax64, s);
    return s ^ kSignBit64;
  }
  if (d == DType::u64) return v.to(tl::int64, true);
  if (d == DType::i64) return v ^ kSignBit64;
  if (is_float(d)) {  // f32, or f16 / bf16 on their own 16 bits
    const bool wide = d == DType::f32;
    auto b = wide ? v.to(tl::int32, true) : v.to(tl::int16, true).to(tl::int32);
    auto s = b ^ ((b >> (wide ? 31 : 15)) & (wide ? 0x7fffffff : 0x7fff));  // signed order
    if (merge_zero) s = tl::where(v == 0, 0, s);
    s = tl::where(v != v, wide ? 0x7fffffff : 0x7fff, s);
    return wide ? s ^ kSignBit : s + 0x8000;  // unsigned order
  }
  if (d == DType::u32) return v.to(tl::int32, true);
  if (is_unsigned_int(d) || d == DType::i1) return v.to(tl::int32);
  auto s = v.to(tl::int32);
  return bits == 32 ? s ^ kSignBit : s + (1 << (bits - 1));
}

// The value of dtype d whose key is `key` (merge_zero false: the inverse of order_key).
tl::tensor key_value(const tl::tensor& key, DType d, int bits) {
  if (d == DType::f64) {
    auto s = key ^ kSignBit64;
    return (s ^ ((s >> 63) & kMax64)).to(tl::float64, true);
  }
  if (d == DType::u64) return key.to(d, true);
  if (d == DType::i64) return key ^ kSignBit64;
  if (d == DType::f32) {
    auto s = key ^ kSignBit;
    return (s ^ ((s >> 31) & 0x7fffffff)).to(tl::float32, true);
  }
  if (is_float(d)) {
    auto s = key - 0x8000;
    return (s ^ ((s >> 15) & 0x7fff)).to(tl::int16).to(d, true);
  }
  if (d == DType::u32) return key.to(d, true);
  if (is_unsigned_int(d) || d == DType::i1) return key.to(d);
  return (bits == 32 ? key ^ kSignBit : key - (1 << (bits - 1))).to(d);
}

// Passes of select_median_all: pass q decides key bits [lo, hi), at most 8 of them.
struct Digit {
  int lo, hi;
  int width() const { return hi - lo; }
  int bins() const { return 1 << width(); }
  // The bits above the digit (those already decided) of a `bits`-bit key, as a mask of its dtype.
  int64_t decided(int bits) const { return hi >= bits ? 0 : key_literal(~uint64_t{0} << hi, bits); }
};
constexpr int kDigitBits = 8, kBins = 1 << kDigitBits;
Digit digit(int bits, int q) { return {std::max(0, bits - kDigitBits * (q + 1)), bits - kDigitBits * q}; }
int passes(int bits) { return (bits + kDigitBits - 1) / kDigitBits; }

}  // namespace

Kernel& select_rows_kernel() {
  static Kernel k = tritium::kernel(
      "select_rows", [](P x, P vals, P idx, tl::i64 O, tl::i64 R, tl::i64 K, int BITS, int BR, int N) {
        // BR rows of N keys ([BR, N] blocks, per-row values [BR]); one row (BR = 1): [N] keys and
        // scalars per row, which the GPU keeps in every thread's registers (a [1] block lived in
        // shared memory, one thread updating it between barriers, at every one of the BITS steps).
        const bool one = BR == 1;
        auto per_row = [&](const tl::tensor& t) { return one ? t : t(tl::_, tl::None); };
        auto row_sum = [&](const tl::tensor& t) { return one ? tl::sum(t) : tl::sum(t, 1); };
        auto pid = tl::program_id(0).to(tl::int64);
        auto rows = one ? pid : pid * BR + tl::arange(0, BR).to(tl::int64);
        auto cols = one ? tl::arange(0, N) : tl::arange(0, N)(tl::None, tl::_);
        auto rmask = rows < O;
        auto r32 = R.to(tl::int32);  // R <= kRowMax: 32-bit column masks (the CPU recomputes them each step)
        auto m = per_row(rmask) && cols < r32;
        auto base = rows * R;
        auto v = tl::load(x + (per_row(base) + cols), m, 0);
        // Padding keys are all ones: never counted below (a count needs the decided bit 0), so
        // the counts need no mask.
        auto key = tl::where(m, order_key(v, BITS, true), -1);
        // The rank sought (1-based): K, or the lower median's unless the row holds NaN, then the
        // first NaN's (NaN is the largest key, so R - nans + 1).
        tl::tensor k = one ? K.to(tl::int32) : tl::zeros({BR}, tl::int32) + K.to(tl::int32);
        if (is_float(v.dtype())) {
          auto nans = row_sum(((v != v) && m).to(tl::int32));
          k = tl::where(k > 0, k, tl::where(nans > 0, r32 - nans + 1, (r32 - 1) / 2 + 1));
        } else {
          k = tl::where(k > 0, k, (r32 - 1) / 2 + 1);
        }
        // One bit a step from the top: the keys matching the decided bits with this bit 0 are the
        // candidates below; past them the bit is 1 and the rank drops by their count.
        // A run-time loop: unrolled, each step recomputed the keys from the values (an inline
        // value is evaluated at each use), 4416 SASS instructions for a row of 1024 on 4 warps.
        const DType kt = key_type(BITS);
        tl::tensor prefix = one ? tl::zeros({}, kt) : tl::zeros({BR}, kt);
        tl::tensor b = tl::full({}, key_literal(uint64_t{1} << (BITS - 1), BITS), kt);
        tl::tensor above = tl::full({}, BITS >= 32 ? 0 : key_literal(~uint64_t{0} << BITS, BITS), kt);
        for (auto step : tl::range(0, BITS)) {
          (void)step;
          auto below = row_sum(((key & (above | b)) == per_row(prefix)).to(tl::int32));
          auto up = k > below;
          prefix = tl::where(up, prefix | b, prefix);
          k = tl::where(up, k - below, k);
          above = above | b;
          b = (b >> 1) & (BITS == 64 ? kMax64 : int64_t{0x7fffffff});
        }
        // The k-th key equal to the selected one, in position order.
        auto eq = m && key == per_row(prefix);
        auto nth = tl::cumsum(eq.to(tl::int32), one ? 0 : 1);
        auto hit = tl::where(eq && nth == per_row(k), cols, N);
        auto pos = (one ? tl::min(hit) : tl::min(hit, 1)).to(tl::int64);
        tl::store(vals + rows, tl::load(x + (base + pos), rmask, 0), rmask);
        tl::store(idx + rows, pos, rmask);
      });
  return k;
}

static ValuesIndices select_in_registers(const Rows& rows, DType d, int64_t k) {
  const int64_t O = rows.O, R = rows.R;
  const Device device = rows.data.device();
  ValuesIndices out{Tensor::empty({O, 1}, d, device), Tensor::empty({O, 1}, DType::i64, device)};
  if (O == 0) return out;
  const int64_t N = std::max<int64_t>(2, next_power_of_2(R));
  // About 1024 keys a program (several short rows). Each of the BITS steps is a dependent chain
  // (count, warp shuffles, one barrier), so few rows (under the device's fill) take 8 keys a
  // thread, more warps for less latency; many rows 16 keys a thread, fewer warps for less work
  // per row (each warp pays the shuffles and the barrier of every step).
  const int64_t BR = std::min(std::max<int64_t>(1, 1024 / N), next_power_of_2(O));
  const int64_t per_thread = cdiv(O, BR) >= reduce_device(device).fill ? 16 : 8;
  const int warps = static_cast<int>(std::clamp<int64_t>(BR * N / (32 * per_thread), 1, 8));
  select_rows_kernel()[{cdiv(O, BR)}](rows.data, out.values, out.indices, O, R, k, key_bits(d), static_cast<int>(BR),
                                      static_cast<int>(N),
                                      Options{.num_warps = device.is_cuda() ? warps : 1, .num_stages = 1, .device = device});
  return out;
}

// Counts of the digit passes, per row: [passes * kBins] digit counts then the row's NaN count.
int count_stride(int bits) { return passes(bits) * kBins + 1; }

// The rank sought in a row of R (1-based): K, or with K = 0 the lower median's unless the row
// holds NaN (counted in pass 0), then the first NaN's (NaN is the largest key: R - nans + 1).
static tl::tensor rank_sought(const P& counts, const tl::i64& R, const tl::i64& K, int bits, bool flt) {
  auto r32 = R.to(tl::int32);
  tl::tensor k = (r32 - 1) / 2 + 1;
  if (flt) {
    auto nans = tl::load(counts + passes(bits) * kBins);
    k = tl::where(nans > 0, r32 - nans + 1, k);
  }
  return tl::where(K > 0, K.to(tl::int32), k);
}

// The decided prefix and the rank left within it after passes 0 .. upto-1 of one row, from its
// counts (each pass: the digit holding the rank, by a cumsum of its bins).
static std::pair<tl::tensor, tl::tensor> decided(const P& counts, const tl::i64& R, const tl::i64& K, int bits, int upto,
                                                 bool flt) {
  tl::tensor k = rank_sought(counts, R, K, bits, flt);
  tl::tensor prefix = tl::zeros({}, key_type(bits));
  for (int q = 0; q < upto; ++q) {
    const Digit g = digit(bits, q);
    auto bins = tl::arange(0, g.bins());
    auto h = tl::load(counts + (q * kBins + bins));
    auto cum = tl::cumsum(h, 0);
    auto b = tl::sum((cum < k).to(tl::int32));
    k = k - tl::sum(tl::where(bins < b, h, 0));
    prefix = prefix | (b.to(key_type(bits)) << g.lo);
  }
  return {prefix, k};
}

// A program's (row, chunk) of a grid of O * nchunks (32-bit division: fewer than 2^31 programs).
static std::pair<tl::tensor, tl::tensor> row_and_chunk(const tl::i64& nchunks) {
  auto pid = tl::program_id(0);
  auto nc = nchunks.to(tl::int32);
  return {(pid / nc).to(tl::int64), (pid % nc).to(tl::int64)};
}

Kernel& select_count_kernel() {
  static Kernel k = tritium::kernel(
      "select_count", [](P x, P counts, tl::i64 R, tl::i64 K, tl::i64 chunk, tl::i64 nchunks, int BITS, int PASS,
                         bool MERGE_ZERO, int BLOCK) {
        const bool flt = is_float(x.element_ty());
        const Digit g = digit(BITS, PASS);
        auto [row, c] = row_and_chunk(nchunks);
        auto crow = counts + row * count_stride(BITS);
        auto prefix = decided(crow, R, K, BITS, PASS, flt).first;
        auto xrow = x + row * R;
        auto start = c * chunk;
        auto end = tl::minimum(start + chunk, R);
        auto hist = tl::zeros({g.bins()}, tl::int32);
        auto nans = tl::zeros({}, tl::int32);
        for (auto off : tl::range(start, end, BLOCK)) {
          auto i = off + tl::arange(0, BLOCK).to(tl::int64);
          auto m = i < end;
          auto v = tl::load(xrow + i, m, 0);
          auto key = order_key(v, BITS, MERGE_ZERO);
          auto sel = PASS == 0 ? m : m && (key & g.decided(BITS)) == prefix;
          hist = hist + tl::histogram(((key >> g.lo) & (g.bins() - 1)).to(tl::int32), g.bins(), sel);
          if (PASS == 0 && flt) nans = nans + tl::sum(((v != v) && m).to(tl::int32));
        }
        tl::atomic_add(crow + (PASS * kBins + tl::arange(0, g.bins())), hist, hist > 0, "relaxed");
        if (PASS == 0 && flt) tl::atomic_add(crow + passes(BITS) * kBins, nans, std::nullopt, "relaxed");
      });
  return k;
}

Kernel& select_value_kernel() {
  static Kernel k = tritium::kernel("select_value", [](P counts, P out, tl::i64 R, int BITS, int DT) {
    const DType d = static_cast<DType>(DT);
    auto key = decided(counts, R, tl::i64(tl::zeros({}, tl::int64)), BITS, passes(BITS), is_float(d)).first;
    tl::store(out, key_value(key, d, BITS));
  });
  return k;
}

Kernel& select_find_kernel() {
  static Kernel k = tritium::kernel(
      "select_find", [](P x, P counts, P found, tl::i64 R, tl::i64 K, tl::i64 chunk, tl::i64 nchunks, int BITS, int BLOCK) {
        auto [row, c] = row_and_chunk(nchunks);
        auto key_sel = decided(counts + row * count_stride(BITS), R, K, BITS, passes(BITS), is_float(x.element_ty())).first;
        auto xrow = x + row * R;
        auto start = c * chunk;
        auto end = tl::minimum(start + chunk, R);
        auto n = tl::zeros({}, tl::int32);
        for (auto off : tl::range(start, end, BLOCK)) {
          auto i = off + tl::arange(0, BLOCK).to(tl::int64);
          auto m = i < end;
          n = n + tl::sum((m && order_key(tl::load(xrow + i, m, 0), BITS, true) == key_sel).to(tl::int32));
        }
        tl::store(found + (row * nchunks + c), n);
      });
  return k;
}

Kernel& select_index_kernel() {
  static Kernel k = tritium::kernel(
      "select_index", [](P x, P counts, P found, P vals, P idx, tl::i64 R, tl::i64 K, tl::i64 chunk, tl::i64 nchunks,
                         int BITS, int NC, int BLOCK) {
        auto row = tl::program_id(0).to(tl::int64);
        auto [key_sel, j] = decided(counts + row * count_stride(BITS), R, K, BITS, passes(BITS), is_float(x.element_ty()));
        // The chunk holding the j-th selected key in position order, and j within it.
        auto cs = tl::arange(0, NC);
        auto f = tl::load(found + (row * nchunks + cs), cs < nchunks, 0);
        auto cum = tl::cumsum(f, 0);
        auto c = tl::sum((cum < j).to(tl::int32));
        j = j - tl::sum(tl::where(cs < c, f, 0));
        auto xrow = x + row * R;
        auto start = c.to(tl::int64) * chunk;
        auto end = tl::minimum(start + chunk, R);
        auto seen = tl::zeros({}, tl::int32);
        auto pos = tl::zeros({}, tl::int64) + R;
        for (auto off : tl::range(start, end, BLOCK)) {
          auto i = off + tl::arange(0, BLOCK).to(tl::int64);
          auto m = i < end;
          auto eq = m && order_key(tl::load(xrow + i, m, 0), BITS, true) == key_sel;
          auto nth = tl::cumsum(eq.to(tl::int32), 0) + seen;
          pos = tl::minimum(pos, tl::min(tl::where(eq && nth == j, i, R)));
          seen = seen + tl::sum(eq.to(tl::int32));
        }
        tl::store(vals + row, tl::load(xrow + pos));
        tl::store(idx + row, pos);
      });
  return k;
}

namespace {

// Chunks of whole blocks for O rows of R, no more programs than fill the device (each adds its
// counts once a pass) and at most kMaxChunks a row. A block's tl::histogram has a fixed cost on
// the GPU (its input staged in shared memory, the 256 bins zeroed and read back: 4 barriers), so
// blocks of 2048 (16 elements a thread at 4 warps); 2^20 elements are 512 programs of one block.
constexpr int64_t kBlock = 2048, kMaxChunks = 1024;
int64_t chunk_of(int64_t O, int64_t R, const Device& device) {
  const int64_t per_row = std::clamp<int64_t>(reduce_device(device).fill / std::max<int64_t>(O, 1), 1,
                                              std::min(kMaxChunks, cdiv(R, kBlock)));
  return cdiv(cdiv(R, per_row), kBlock) * kBlock;
}

Options select_options(const Device& device) {
  return Options{.num_warps = device.is_cuda() ? 4 : 1, .num_stages = 1, .device = device};
}

// The digit passes over O rows of R (counts zeroed first): [O, count_stride] i32 counts.
Tensor count_digits(const Tensor& data, int64_t O, int64_t R, int64_t k, int bits, bool merge_zero, int64_t chunk) {
  const Device device = data.device();
  Tensor counts = zeros({O, count_stride(bits)}, DType::i32, device);
  const int64_t nchunks = cdiv(R, chunk);
  for (int q = 0; q < passes(bits); ++q)
    select_count_kernel()[{O * nchunks}](data, counts, R, k, chunk, nchunks, bits, q, merge_zero,
                                         static_cast<int>(kBlock), select_options(device));
  return counts;
}

}  // namespace

bool row_selectable(DType d, int64_t R) { return key_bits(d) > 0 && R < (int64_t{1} << 31); }

bool all_selectable(DType d, int64_t n) { return key_bits(d) > 0 && n < (int64_t{1} << 31); }

ValuesIndices select_rows(const Rows& rows, DType d, int64_t k) {
  const int64_t O = rows.O, R = rows.R;
  if (R <= kRowMax) return select_in_registers(rows, d, k);
  const Device device = rows.data.device();
  ValuesIndices out{Tensor::empty({O, 1}, d, device), Tensor::empty({O, 1}, DType::i64, device)};
  if (O == 0) return out;
  const int bits = key_bits(d);
  const int64_t chunk = chunk_of(O, R, device), nchunks = cdiv(R, chunk);
  Tensor counts = count_digits(rows.data, O, R, k, bits, true, chunk);
  Tensor found = Tensor::empty({O, nchunks}, DType::i32, device);
  select_find_kernel()[{O * nchunks}](rows.data, counts, found, R, k, chunk, nchunks, bits, static_cast<int>(kBlock),
                                      select_options(device));
  select_index_kernel()[{O}](rows.data, counts, found, out.values, out.indices, R, k, chunk, nchunks, bits,
                             static_cast<int>(std::max<int64_t>(2, next_power_of_2(nchunks))), static_cast<int>(kBlock),
                             select_options(device));
  return out;
}

Tensor select_median_all(const Tensor& flat) {
  const DType d = flat.dtype();
  const Device device = flat.device();
  const int64_t n = flat.numel();
  const int bits = key_bits(d);
  Tensor out = Tensor::empty({}, d, device);
  Tensor counts = count_digits(flat, 1, n, 0, bits, false, chunk_of(1, n, device));
  select_value_kernel()[{1}](counts, out, n, bits, static_cast<int>(d), select_options(device));
  return out;
}

}  // namespace tritium::ops::detail
