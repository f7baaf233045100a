// Random sampling ops (ops/sampling.h): one element-wise sampler kernel for the distributions
// that are a function of one counter's four words, a Poisson kernel (inversion / PTRS), the two
// multinomial methods and randperm. Counter layouts are in docs/ops.md, "Random sampling".
#include "ops/sampling.h"

#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <tritium/tritium.h>

#include "ops/elementwise_kernels.h"
#include "ops/random.h"
#include "ops/random_key_sort.h"
#include "ops/sampling_kernels.h"
#include "runtime/dtype_dispatch.h"
#include "runtime/views.h"

namespace tritium::ops {

namespace tl = tritium::tl;
using P = tl::ptr<tl::any>;
using namespace detail;

namespace {

constexpr int kBlock = 1024;

Options on(const Tensor& x) { return Options{.device = x.device()}; }

tl::tensor element_index(int BLOCK) { return tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK); }

// Row-wise launches flatten (row, block) into grid x (CUDA's y and z stop at 65535): program p
// is block p % blocks_per_row of row p / blocks_per_row, over `per_row` elements.
struct RowElements {
  tl::tensor row, index;  // the row (i64 scalar) and the block's element indices in it
};
RowElements row_elements(const tl::tensor& per_row, int BLOCK) {
  auto pid = tl::program_id(0).to(tl::int64);
  auto blocks_per_row = (per_row + (BLOCK - 1)) / BLOCK;
  return {pid / blocks_per_row, (pid % blocks_per_row) * BLOCK + tl::arange(0, BLOCK)};
}

// ---- element-wise samplers -------------------------------------------------------------------

// The distributions of detail::sampler_kernel (its DIST).
enum Dist : int { kNormal, kLogNormal, kExponential, kGeometric, kCauchy, kBernoulli, kRandom };

struct SamplerArgs {
  Dist dist;
  Tensor A = Tensor(), B = Tensor();  // per-element parameters (contiguous, out's shape) or undefined
  double a = 0, b = 0;
  int64_t low = 0;
  uint64_t range = 1;
};

// Fills the contiguous `out` from numel counters of gen.
void run_sampler(const Tensor& out, const SamplerArgs& s, Generator& gen) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const bool f64_math = s.dist == kGeometric || s.dist == kCauchy || s.dist == kBernoulli || s.dist == kRandom;
  const DType compute = f64_math || !is_float(out.dtype()) ? DType::f64 : detail::math_type(out.dtype());
  const bool wide = s.range == 0 || s.range > (uint64_t(1) << 32);
  Generator::Stream r = gen.reserve(static_cast<uint64_t>(n));
  sampler_kernel()[{cdiv(n, kBlock)}](out, s.A, s.B, n, r.seed, r.offset, s.a, s.b, s.low, s.range,
                                      static_cast<int>(s.dist), static_cast<int>(out.dtype()),
                                      static_cast<int>(compute), wide, kBlock, on(out));
}

// Samples into x (any strides): directly when contiguous, else through a contiguous temporary,
// so the counter of an element is its row-major index either way.
void sample_into(Tensor& x, const SamplerArgs& s, Generator& gen) {
  if (x.is_contiguous()) return run_sampler(x, s, gen);
  Tensor tmp = Tensor::empty(x.shape(), x.dtype(), x.device());
  run_sampler(tmp, s, gen);
  copy_(x, tmp);
}

// A parameter tensor broadcast to `shape`, contiguous.
Tensor param(const Tensor& p, const Shape& shape) { return contiguous(runtime::expand_of(p, shape)); }

// ---- value checks that need the data -----------------------------------------------------------

bool any_outside(const Tensor& x_in, double lo, double hi) {
  Tensor x = contiguous(x_in);
  if (x.numel() == 0) return false;
  Tensor flag = zeros({1}, DType::i32, x.device());
  outside_kernel()[{cdiv(x.numel(), kBlock)}](x, flag, x.numel(), lo, hi, kBlock, on(x));
  return flag.to_vector<int32_t>()[0] != 0;
}

void check_float(const char* op, const Tensor& x) {
  if (!x.defined()) fail("{}: the tensor is undefined", op);
  if (!is_float(x.dtype()))
    fail("{}: expects a floating-point tensor (f16, bf16, f32 or f64), got {}", op, dtype_name(x.dtype()));
}

// ---- poisson -----------------------------------------------------------------------------------

// log(k!) = lgamma(k + 1) for k >= 0 (f64): Stirling's series at x + 8 >= 9 (error below 1e-13),
// shifted down by log(x (x+1) ... (x+7)).
tl::tensor log_factorial(const tl::tensor& k) {
  auto x = k + 1.0;
  auto y = x + 8.0;
  auto shift = x * (x + 1.0) * (x + 2.0) * (x + 3.0) * (x + 4.0) * (x + 5.0) * (x + 6.0) * (x + 7.0);
  auto inv = 1.0 / y, inv2 = inv * inv;
  auto series = inv * (1.0 / 12 - inv2 * (1.0 / 360 - inv2 * (1.0 / 1260 - inv2 * (1.0 / 1680))));
  return (y - 0.5) * tl::log(y) - y + 0.91893853320467274 + series - tl::log(shift);
}

constexpr double kPtrsThreshold = 10.0;  // rates below: inversion; from here: PTRS
constexpr int kInversionSteps = 64;      // P(Poisson(10) > 64) < 1e-25
constexpr int kPtrsTries = 32;           // PTRS accepts with probability > 0.85: 0.15^32 < 1e-26

// ---- multinomial -------------------------------------------------------------------------------

// The first index j of cdf[0, C) with cdf[j] > u (STRICT) or cdf[j] >= u, C if none: a binary
// search of `steps` = bit width of C halvings on blocks lo, hi.
tl::tensor search(const tl::ptr<double>& cdf, const tl::tensor& row_start, const tl::tensor& u, const tl::tensor& C,
                  const tl::tensor& steps, bool strict) {
  auto lo = tl::zeros(u.shape(), tl::int64);
  auto hi = lo + C;
  for ([[maybe_unused]] auto s : tl::range(0, steps)) {
    auto active = lo < hi;
    auto mid = (lo + hi) / 2;
    auto v = tl::load(cdf + row_start + mid, active, 0.0);
    auto right = strict ? (v <= u) : (v < u);
    lo = tl::where(active && right, mid + 1, lo);
    hi = tl::where(active && !right, mid, hi);
  }
  return lo;
}

// ---- randperm and helpers -------------------------------------------------------------------------

int bit_width(int64_t n) { return static_cast<int>(std::bit_width(static_cast<uint64_t>(n))); }

// The largest integer of dtype d as __int128 (floats: 2^mantissa digits, PyTorch's random_ bound).
__int128 dtype_max(DType d) {
  switch (d) {
    case DType::i1: return 1;
    case DType::f16: return int64_t(1) << 11;
    case DType::bf16: return int64_t(1) << 8;
    case DType::f32: return int64_t(1) << 24;
    case DType::f64: return int64_t(1) << 53;
    default:
      return is_signed_int(d) ? (static_cast<__int128>(1) << (dtype_bits(d) - 1)) - 1
                              : (static_cast<__int128>(1) << dtype_bits(d)) - 1;
  }
}
__int128 dtype_min(DType d) {
  if (is_float(d)) return -dtype_max(d);
  return is_signed_int(d) ? -dtype_max(d) - 1 : 0;
}

}  // namespace

// ---- the kernels (ops/sampling_kernels.h) ------------------------------------------------------

namespace detail {

Kernel& sampler_kernel() {
  static Kernel k = kernel(
      "sample_elementwise",
      [](P out, P A, P B, tl::i64 n, tl::u64 seed, tl::u64 base, tl::f64 a, tl::f64 b, tl::i64 low, tl::u64 range,
         int DIST, int OUT, int COMPUTE, bool WIDE, int BLOCK) {
        const DType out_t = static_cast<DType>(OUT), ct = static_cast<DType>(COMPUTE);
        auto i = element_index(BLOCK);
        auto mask = i < n;
        auto w = philox::random_words(seed, base + i.to(tl::uint64, true));
        tl::tensor pa = A.is_none() ? a.to(ct) : tl::load(A + i, mask).to(ct);
        tl::tensor pb = B.is_none() ? b.to(ct) : tl::load(B + i, mask).to(ct);
        tl::tensor v;
        switch (DIST) {
          case kNormal: v = pa + pb * philox::standard_normal(w, ct).to(ct); break;
          case kLogNormal: v = tl::exp(pa + pb * philox::standard_normal(w, ct).to(ct)); break;
          // 1 - u is in (0, 1]: the log is finite.
          case kExponential: v = tl::log(1.0 - philox::uniform01(w, ct).to(ct)) * (-1.0 / pa); break;
          // b = log(1 - p) (from the host's log1p); u in (0, 1), so the value is >= 1.
          case kGeometric: v = tl::ceil(tl::log(philox::open_uniform_f64(w[0], w[1])) / pb); break;
          case kCauchy: {
            auto x = 3.141592653589793 * (philox::open_uniform_f64(w[0], w[1]) - 0.5);
            v = pa + pb * (tl::sin(x) / tl::cos(x));
            break;
          }
          // u in [0, 1) with 53 bits: p = 0 never, p = 1 always.
          case kBernoulli: v = tl::where(philox::uniform_f64(w[0], w[1]) < pa, 1.0, 0.0); break;
          default: {
            tl::tensor bits = w[0].to(tl::uint64);
            if (WIDE) bits = (bits << 32) | w[1].to(tl::uint64);
            // range 0 stands for 2^64 (random_() of u64): every bit pattern.
            auto reduced = tl::where(range == 0, bits, bits % tl::maximum(range, 1));
            v = low + reduced.to(tl::int64, true);
          }
        }
        tl::store(out + i, v.to(out_t), mask);
      },
      {"out", "A", "B", "n", "seed", "base", "a", "b", "low", "range", "DIST", "OUT", "COMPUTE", "WIDE", "BLOCK"});
  return k;
}

Kernel& outside_kernel() {
  static Kernel k = kernel(
      "sample_check_range",
      [](P x, tl::ptr<int32_t> flag, tl::i64 n, tl::f64 lo, tl::f64 hi, int BLOCK) {
        auto i = element_index(BLOCK);
        auto mask = i < n;
        auto v = tl::load(x + i, mask).to(tl::float64);
        auto bad = mask && !((v >= lo) && (v <= hi));
        tl::atomic_max(flag, tl::max(bad.to(tl::int32), 0), std::nullopt, "relaxed");
      },
      {"x", "flag", "n", "lo", "hi", "BLOCK"});
  return k;
}

Kernel& poisson_kernel() {
  static Kernel k = kernel(
      "poisson",
      [](P rates, P out, tl::i64 n, tl::u64 seed, tl::u64 base, int BLOCK) {
        auto i = element_index(BLOCK);
        auto mask = i < n;
        auto counter = base + i.to(tl::uint64, true);
        auto lam = tl::load(rates + i, mask, 0).to(tl::float64);
        // Inversion: the smallest k with u <= P(X <= k), walking the pmf.
        auto w = philox::random_words(seed, counter);
        auto u = philox::uniform_f64(w[0], w[1]);
        auto small = tl::minimum(lam, kPtrsThreshold);
        auto pk = tl::exp(0.0 - small);
        auto cdf = pk;
        auto count = tl::zeros({BLOCK}, tl::float64);
        for (auto j : tl::range(0, kInversionSteps)) {
          count = count + tl::where(u > cdf, 1.0, 0.0);
          pk = pk * small / (j.to(tl::float64) + 1.0);
          cdf = cdf + pk;
        }
        // PTRS (Hormann 1993) for the large rates.
        auto large = mask && (lam >= kPtrsThreshold);
        auto L = tl::maximum(lam, kPtrsThreshold);
        auto slam = tl::sqrt(L), loglam = tl::log(L);
        auto b = 0.931 + 2.53 * slam;
        auto a = -0.059 + 0.02483 * b;
        auto inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
        auto vr = 0.9277 - 3.6224 / (b - 2.0);
        auto pending = large;
        auto result = count;
        for (auto t : tl::range(0, kPtrsTries)) {
          tl::if_(tl::max(pending.to(tl::int32), 0) > 0, [&] {
            auto wt = philox::random_words(seed, counter, (t + 1).to(tl::uint32));
            auto U = philox::uniform_f64(wt[0], wt[1]) - 0.5;
            auto V = philox::open_uniform_f64(wt[2], wt[3]);
            auto us = 0.5 - tl::abs(U);
            auto kk = tl::floor((2.0 * a / us + b) * U + L + 0.43);
            auto quick = (us >= 0.07) && (V <= vr);
            auto hopeless = (kk < 0.0) || ((us < 0.013) && (V > us));
            auto k0 = tl::maximum(kk, 0.0);
            auto lhs = tl::log(V * inv_alpha / (a / (us * us) + b));
            auto rhs = 0.0 - L + k0 * loglam - log_factorial(k0);
            auto accept = quick || (!hopeless && (lhs <= rhs));
            auto take = pending && accept;
            result = tl::where(take, k0, result);
            pending = pending && !take;
          });
        }
        tl::store(out + i, result.to(out.element_ty()), mask);
      },
      {"rates", "out", "n", "seed", "base", "BLOCK"});
  return k;
}

Kernel& multinomial_rows_kernel() {
  static Kernel k = kernel(
      "multinomial_rows",
      [](P probs, tl::ptr<double> cdf, tl::ptr<double> total, tl::ptr<int32_t> bad, tl::ptr<int64_t> positive,
         tl::i64 C, bool WRITE_CDF, int BLOCK) {
        auto row = tl::program_id(0).to(tl::int64);
        auto lane = tl::arange(0, BLOCK).to(tl::int64);
        auto run = tl::zeros({}, tl::float64);
        auto any_bad = tl::zeros({}, tl::int32);
        auto npos = tl::zeros({}, tl::int64);
        for (auto c : tl::range(0, C, BLOCK)) {
          auto j = c.to(tl::int64) + lane;
          auto m = j < C;
          auto p = tl::load(probs + row * C + j, m, 0).to(tl::float64);
          auto wrong = m && !((p >= 0.0) && (p < std::numeric_limits<double>::infinity()));
          any_bad = tl::maximum(any_bad, tl::max(wrong.to(tl::int32), 0));
          npos = npos + tl::sum((m && (p > 0.0)).to(tl::int64), 0);
          auto sums = tl::cumsum(p, 0) + run;
          if (WRITE_CDF) tl::store(cdf + row * C + j, sums, m);
          run = run + tl::sum(p, 0);
        }
        tl::store(total + row, run);
        tl::store(bad + row, any_bad);
        tl::store(positive + row, npos);
      },
      {"probs", "cdf", "total", "bad", "positive", "C", "WRITE_CDF", "BLOCK"});
  return k;
}

Kernel& multinomial_draw_kernel() {
  static Kernel k = kernel(
      "multinomial_with_replacement",
      [](tl::ptr<double> cdf, tl::ptr<double> total, tl::ptr<int64_t> out, tl::i64 C, tl::i64 S, tl::i32 steps,
         tl::u64 seed, tl::u64 base, int BLOCK) {
        auto [row, s] = row_elements(S, BLOCK);
        auto m = s < S;
        auto w = philox::random_words(seed, base + (row * S + s).to(tl::uint64, true));
        auto t = tl::load(total + row);
        auto u = philox::uniform_f64(w[0], w[1]) * t;
        auto j = tl::minimum(search(cdf, row * C, u, C, steps, true),
                             search(cdf, row * C, tl::zeros(u.shape(), tl::float64) + t, C, steps, false));
        tl::store(out + row * S + s, j, m);
      },
      {"cdf", "total", "out", "C", "S", "steps", "seed", "base", "BLOCK"});
  return k;
}

Kernel& race_keys_kernel() {
  static Kernel k = kernel(
      "multinomial_race_keys",
      [](P probs, tl::ptr<uint64_t> keys, tl::i64 C, tl::i64 N, tl::i64 IB, tl::u64 seed, tl::u64 base, int BLOCK) {
        auto [row, j] = row_elements(N, BLOCK);
        auto m = j < C;
        auto p = tl::load(probs + row * C + j, m, 1.0).to(tl::float64);
        auto w = philox::random_words(seed, base + (row * C + j).to(tl::uint64, true));
        auto e = 0.0 - tl::log(philox::open_uniform_f64(w[0], w[1]));
        auto bits = (e / p).to(tl::uint64, true);
        auto low_mask = (tl::full({}, 1, tl::uint64) << IB.to(tl::uint64, true)) - 1;
        auto key = (bits & ~low_mask) | j.to(tl::uint64, true);
        tl::store(keys + row * N + j, tl::where(m, key, ~tl::zeros({BLOCK}, tl::uint64)), j < N);
      },
      {"probs", "keys", "C", "N", "IB", "seed", "base", "BLOCK"});
  return k;
}

Kernel& key_index_kernel() {
  static Kernel k = kernel(
      "random_key_indices",
      [](tl::ptr<uint64_t> keys, P out, tl::i64 N, tl::i64 S, tl::i64 IB, int BLOCK) {
        auto [row, s] = row_elements(S, BLOCK);
        auto low_mask = (tl::full({}, 1, tl::uint64) << IB.to(tl::uint64, true)) - 1;
        auto idx = (tl::load(keys + row * N + s, s < S, 0) & low_mask).to(tl::int64, true);
        tl::store(out + row * S + s, idx.to(out.element_ty()), s < S);
      },
      {"keys", "out", "N", "S", "IB", "BLOCK"});
  return k;
}

Kernel& randperm_keys_kernel() {
  static Kernel k = kernel(
      "randperm_keys",
      [](tl::ptr<uint64_t> keys, tl::i64 n, tl::i64 N, tl::i64 IB, tl::u64 seed, tl::u64 base, int BLOCK) {
        auto i = element_index(BLOCK);
        auto w = philox::random_words(seed, base + i.to(tl::uint64, true));
        auto bits = (w[0].to(tl::uint64) << 32) | w[1].to(tl::uint64);
        auto low_mask = (tl::full({}, 1, tl::uint64) << IB.to(tl::uint64, true)) - 1;
        auto key = (bits & ~low_mask) | i.to(tl::uint64, true);
        tl::store(keys + i, tl::where(i < n, key, ~tl::zeros({BLOCK}, tl::uint64)), i < N);
      },
      {"keys", "n", "N", "IB", "seed", "base", "BLOCK"});
  return k;
}

}  // namespace detail


// ---- *_like ------------------------------------------------------------------------------------

Tensor rand_like(const Tensor& x, Generator& gen) {
  check_float("rand_like", x);
  return rand(x.shape(), gen, x.dtype(), x.device());
}

Tensor randn_like(const Tensor& x, Generator& gen) {
  check_float("randn_like", x);
  return randn(x.shape(), gen, x.dtype(), x.device());
}

Tensor randint_like(const Tensor& x, int64_t high, Generator& gen) { return randint_like(x, 0, high, gen); }

Tensor randint_like(const Tensor& x, int64_t low, int64_t high, Generator& gen) {
  if (!x.defined()) fail("randint_like: the tensor is undefined");
  return randint(low, high, x.shape(), gen, x.dtype(), x.device());
}

// ---- normal ------------------------------------------------------------------------------------

namespace {
Tensor normal_impl(const Tensor& mean, const Tensor& std, double mean_v, double std_v, Generator& gen) {
  const Tensor* a = mean.defined() ? &mean : nullptr;
  const Tensor* b = std.defined() ? &std : nullptr;
  if (a) check_float("normal", *a);
  if (b) check_float("normal", *b);
  if (a && b) detail::check_tensors("normal", {a, b});
  if (!b && !(std_v >= 0)) fail("normal expects std >= 0.0, but found std {}", std_v);
  if (b && any_outside(*b, 0, std::numeric_limits<double>::infinity()))
    fail("normal expects all elements of std >= 0.0 (std {} has a negative or NaN element)", b->str());
  Shape shape = a && b ? detail::broadcast_shapes("normal", a->shape(), b->shape()) : a ? a->shape() : b->shape();
  DType dtype = a && b ? detail::promote_types("normal", a->dtype(), b->dtype()) : a ? a->dtype() : b->dtype();
  Tensor out = Tensor::empty(shape, dtype, (a ? a : b)->device());
  SamplerArgs s{.dist = kNormal, .a = mean_v, .b = std_v};
  if (a) s.A = param(*a, shape);
  if (b) s.B = param(*b, shape);
  run_sampler(out, s, gen);
  return out;
}
}  // namespace

Tensor normal(const Tensor& mean, const Tensor& std, Generator& gen) {
  if (!mean.defined() || !std.defined()) fail("normal: mean and std must be defined tensors");
  return normal_impl(mean, std, 0, 0, gen);
}
Tensor normal(const Tensor& mean, double std, Generator& gen) {
  if (!mean.defined()) fail("normal: mean is undefined");
  return normal_impl(mean, Tensor(), 0, std, gen);
}
Tensor normal(double mean, const Tensor& std, Generator& gen) {
  if (!std.defined()) fail("normal: std is undefined");
  return normal_impl(Tensor(), std, mean, 0, gen);
}
Tensor normal(double mean, double std, const Shape& size, Generator& gen, DType dtype, Device device) {
  runtime::dispatch_float(dtype, "normal", [](auto) {});
  if (!(std >= 0)) fail("normal expects std >= 0.0, but found std {}", std);
  Tensor out = Tensor::empty(size, dtype, device);
  run_sampler(out, SamplerArgs{.dist = kNormal, .a = mean, .b = std}, gen);
  return out;
}

// ---- in-place samplers ---------------------------------------------------------------------------

void normal_(Tensor& x, double mean, double std, Generator& gen) {
  check_float("normal_", x);
  if (!(std >= 0)) fail("normal_ expects std >= 0.0, but found std {}", std);
  sample_into(x, SamplerArgs{.dist = kNormal, .a = mean, .b = std}, gen);
}

void exponential_(Tensor& x, double lambd, Generator& gen) {
  check_float("exponential_", x);
  if (!(lambd > 0)) fail("exponential_ expects lambda > 0.0, but found lambda={}", lambd);
  sample_into(x, SamplerArgs{.dist = kExponential, .a = lambd}, gen);
}

void geometric_(Tensor& x, double p, Generator& gen) {
  if (!x.defined()) fail("geometric_: the tensor is undefined");
  runtime::dispatch_dtype(x.dtype(), "geometric_", [](auto) {});
  if (!(p > 0 && p < 1)) fail("geometric_ expects p to be in (0, 1), but got p={}", p);
  sample_into(x, SamplerArgs{.dist = kGeometric, .b = std::log1p(-p)}, gen);
}

void log_normal_(Tensor& x, double mean, double std, Generator& gen) {
  check_float("log_normal_", x);
  if (!(std > 0)) fail("log_normal_ expects std > 0.0, but found std={}", std);
  sample_into(x, SamplerArgs{.dist = kLogNormal, .a = mean, .b = std}, gen);
}

void cauchy_(Tensor& x, double median, double sigma, Generator& gen) {
  check_float("cauchy_", x);
  if (!(sigma > 0)) fail("cauchy_ expects sigma > 0.0, but found sigma={}", sigma);
  sample_into(x, SamplerArgs{.dist = kCauchy, .a = median, .b = sigma}, gen);
}

void bernoulli_(Tensor& x, double p, Generator& gen) {
  if (!x.defined()) fail("bernoulli_: the tensor is undefined");
  runtime::dispatch_dtype(x.dtype(), "bernoulli_", [](auto) {});
  if (!(p >= 0 && p <= 1)) fail("bernoulli_ expects p to be in [0, 1], but got p={}", p);
  sample_into(x, SamplerArgs{.dist = kBernoulli, .a = p}, gen);
}

void bernoulli_(Tensor& x, const Tensor& p, Generator& gen) {
  if (!x.defined()) fail("bernoulli_: the tensor is undefined");
  runtime::dispatch_dtype(x.dtype(), "bernoulli_", [](auto) {});
  check_float("bernoulli_", p);
  detail::check_tensors("bernoulli_", {&x, &p});
  if (detail::broadcast_shapes("bernoulli_", x.shape(), p.shape()) != x.shape())
    fail("bernoulli_: p of shape {} does not broadcast to the tensor's shape {}", detail::shape_str(p.shape()),
         detail::shape_str(x.shape()));
  if (any_outside(p, 0, 1)) fail("bernoulli_ expects all elements of p to be in [0, 1] (p {})", p.str());
  sample_into(x, SamplerArgs{.dist = kBernoulli, .A = param(p, x.shape())}, gen);
}

void random_(Tensor& x, Generator& gen) { random_(x, 0, std::nullopt, gen); }

void random_(Tensor& x, int64_t to, Generator& gen) { random_(x, 0, to, gen); }

void random_(Tensor& x, int64_t from, std::optional<int64_t> to, Generator& gen) {
  if (!x.defined()) fail("random_: the tensor is undefined");
  runtime::dispatch_dtype(x.dtype(), "random_", [](auto) {});
  const DType d = x.dtype();
  __int128 hi = to ? static_cast<__int128>(*to) - 1 : dtype_max(d);
  if (to && from >= *to) fail("random_ expects 'from' to be less than 'to', but got from={} >= to={}", from, *to);
  if (!to && from > hi) fail("random_ expects 'from' to be at most {} for dtype {}, but got from={}", static_cast<int64_t>(hi), dtype_name(d), from);
  if (from < dtype_min(d) || hi > dtype_max(d))
    fail("random_: the range [{}, {}] does not fit dtype {}", from, static_cast<int64_t>(hi), dtype_name(d));
  __int128 range = hi - from + 1;  // <= 2^64 (u64's full range)
  SamplerArgs s{.dist = kRandom, .low = from, .range = static_cast<uint64_t>(range)};  // 2^64 wraps to 0: all bits
  sample_into(x, s, gen);
}

// ---- bernoulli ---------------------------------------------------------------------------------

Tensor bernoulli(const Tensor& p, Generator& gen) {
  check_float("bernoulli", p);
  if (any_outside(p, 0, 1)) fail("bernoulli expects all elements of p to be in [0, 1] (p {})", p.str());
  Tensor out = Tensor::empty(p.shape(), p.dtype(), p.device());
  run_sampler(out, SamplerArgs{.dist = kBernoulli, .A = contiguous(p)}, gen);
  return out;
}

Tensor bernoulli(const Tensor& x, double p, Generator& gen) {
  if (!x.defined()) fail("bernoulli: the tensor is undefined");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  bernoulli_(out, p, gen);
  return out;
}

// ---- poisson -----------------------------------------------------------------------------------

Tensor poisson(const Tensor& rates, Generator& gen) {
  check_float("poisson", rates);
  if (any_outside(rates, 0, std::numeric_limits<double>::max()))
    fail("poisson: invalid Poisson rate, expected rate to be non-negative and finite (rates {})", rates.str());
  Tensor r = contiguous(rates);
  Tensor out = Tensor::empty(r.shape(), r.dtype(), r.device());
  const int64_t n = r.numel();
  if (n == 0) return out;
  Generator::Stream s = gen.reserve(static_cast<uint64_t>(n));
  constexpr int block = 256;
  poisson_kernel()[{cdiv(n, block)}](r, out, n, s.seed, s.offset, block, on(r));
  return out;
}

// ---- multinomial -------------------------------------------------------------------------------

Tensor multinomial(const Tensor& probs_in, int64_t num_samples, bool replacement, Generator& gen) {
  check_float("multinomial", probs_in);
  if (probs_in.dim() != 1 && probs_in.dim() != 2)
    fail("multinomial: prob_dist must be 1 or 2 dim, got {}", probs_in.str());
  const int64_t C = probs_in.size(-1), R = probs_in.dim() == 2 ? probs_in.size(0) : 1;
  if (C == 0) fail("multinomial: the probability rows are empty ({})", probs_in.str());
  if (C > (int64_t(1) << 24)) fail("multinomial: number of categories cannot exceed 2^24, got {}", C);
  if (num_samples <= 0) fail("multinomial: cannot sample n_sample <= 0 samples (got {})", num_samples);
  if (!replacement && num_samples > C)
    fail("multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement ({} > {})",
         num_samples, C);
  const Device dev = probs_in.device();
  Tensor probs = contiguous(probs_in);
  Shape out_shape = probs_in.dim() == 2 ? Shape{R, num_samples} : Shape{num_samples};
  Tensor out = Tensor::empty(out_shape, DType::i64, dev);
  if (R == 0) return out;

  // The rows' checks (and, with replacement, their running sums).
  Tensor cdf = replacement ? Tensor::empty({R, C}, DType::f64, dev) : Tensor::empty({1}, DType::f64, dev);
  Tensor total = Tensor::empty({R}, DType::f64, dev);
  Tensor bad = Tensor::empty({R}, DType::i32, dev);
  Tensor positive = Tensor::empty({R}, DType::i64, dev);
  multinomial_rows_kernel()[{R}](probs, cdf, total, bad, positive, C, replacement, 256, on(probs));
  auto bad_h = bad.to_vector<int32_t>();
  auto total_h = total.to_vector<double>();
  for (int64_t r = 0; r < R; ++r) {
    if (bad_h[r]) fail("multinomial: probability tensor contains either `inf`, `nan` or element < 0 (row {})", r);
    if (!(total_h[r] > 0)) fail("multinomial: invalid multinomial distribution (sum of probabilities <= 0) in row {}", r);
  }

  if (replacement) {
    Generator::Stream s = gen.reserve(static_cast<uint64_t>(R * num_samples));
    const int block = 256;
    multinomial_draw_kernel()[{cdiv(num_samples, block) * R}](cdf, total, out, C, num_samples, bit_width(C) + 1,
                                                             s.seed, s.offset, block, on(probs));
    return out;
  }
  const int64_t N = next_power_of_2(C);
  const int64_t ib = bit_width(C);
  Tensor keys = Tensor::empty({R, N}, DType::u64, dev);
  Generator::Stream s = gen.reserve(static_cast<uint64_t>(R * C));
  race_keys_kernel()[{cdiv(N, kBlock) * R}](probs, keys, C, N, ib, s.seed, s.offset, kBlock, on(probs));
  detail::sort_rows_u64(keys);
  key_index_kernel()[{cdiv(num_samples, kBlock) * R}](keys, out, N, num_samples, ib, kBlock, on(probs));
  return out;
}

// ---- randperm ----------------------------------------------------------------------------------

Tensor randperm(int64_t n, Generator& gen, DType dtype, Device device) {
  if (n < 0) fail("randperm: n must be non-negative, got {}", n);
  runtime::dispatch_dtype(dtype, "randperm", [](auto) {});
  if (is_bool(dtype) || (n > 0 && static_cast<__int128>(n - 1) > dtype_max(dtype)))
    fail("randperm: n = {} is too large for dtype {} (the values 0..n-1 must be exact in it)", n, dtype_name(dtype));
  Tensor out = Tensor::empty({n}, dtype, device);
  if (n == 0) return out;
  const int64_t N = next_power_of_2(n);
  const int64_t ib = bit_width(n);
  Tensor keys = Tensor::empty({1, N}, DType::u64, device);
  Generator::Stream s = gen.reserve(static_cast<uint64_t>(n));
  randperm_keys_kernel()[{cdiv(N, kBlock)}](keys, n, N, ib, s.seed, s.offset, kBlock, on(keys));
  detail::sort_rows_u64(keys);
  key_index_kernel()[{cdiv(n, kBlock)}](keys, out, N, n, ib, kBlock, on(keys));
  return out;
}

}  // namespace tritium::ops
