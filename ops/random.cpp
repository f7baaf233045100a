// Random tensors from Philox-4x32-10 (ops/random.h), computed inside Tritium kernels with tl::
// integer ops on u32 (umulhi, *, ^, +). Element i of a draw uses counter (gen offset + i) and key
// seed; a Generator reserves numel counters per draw (under its lock), so draws never overlap,
// also when threads share it.
#include "ops/random.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <tritium/tritium.h>

#include "ops/elementwise_kernels.h"
#include "ops/ops.h"
#include "runtime/dtype_dispatch.h"
#include "runtime/views.h"

namespace tritium::ops {

// ---- Philox on traced values ------------------------------------------------------------------

namespace philox {

std::array<tl::tensor, 4> random_words(const tl::tensor& seed, const tl::tensor& offset) {
  tl::tensor o = offset.to(tl::uint64, offset.dtype() == DType::i64);
  tl::tensor zero = tl::zeros(o.shape(), tl::uint32);
  // Key (seed lo, seed hi), as tl::philox with 32-bit counters; the counter's high word carries
  // the offset's high half, so streams past 2^32 elements do not repeat.
  return tl::philox(seed, o.to(tl::uint32), (o >> 32).to(tl::uint32), zero, zero);
}

std::array<tl::tensor, 4> random_words(const tl::tensor& seed, const tl::tensor& offset, const tl::tensor& subsequence) {
  tl::tensor o = offset.to(tl::uint64, offset.dtype() == DType::i64);
  tl::tensor zero = tl::zeros(o.shape(), tl::uint32);
  tl::tensor sub = subsequence.to(tl::uint32, subsequence.dtype() == DType::i32);
  return tl::philox(seed, o.to(tl::uint32), (o >> 32).to(tl::uint32), sub + zero, zero);
}

namespace {
// The largest value below 1 in dtype d, as f32 (f16: 1 - 2^-11, bf16: 1 - 2^-8): uniforms are
// clamped to it before rounding so that they stay in [0, 1).
float below_one(DType d) { return d == DType::f16 ? 0.99951171875f : d == DType::bf16 ? 0.99609375f : 1.0f; }
tl::tensor bits53(const tl::tensor& hi, const tl::tensor& lo) {
  return ((hi.to(tl::uint64) << 32) | lo.to(tl::uint64)) >> 11;
}
}  // namespace

tl::tensor uniform_f64(const tl::tensor& hi, const tl::tensor& lo) {
  return bits53(hi, lo).to(tl::float64) * 1.1102230246251565e-16;  // 2^-53
}

tl::tensor open_uniform_f64(const tl::tensor& hi, const tl::tensor& lo) {
  return (bits53(hi, lo).to(tl::float64) + 0.5) * 1.1102230246251565e-16;
}

tl::tensor uniform01(const std::array<tl::tensor, 4>& w, DType d) {
  if (d == DType::f64) return uniform_f64(w[0], w[1]);
  auto u = tl::uint_to_uniform_float(w[0]);
  if (d != DType::f32) u = tl::minimum(u, below_one(d));
  return u;
}

tl::tensor standard_normal(const std::array<tl::tensor, 4>& w, DType d) {
  if (d == DType::f64) {
    // u1 in (0, 1] from words 0 and 1, u2 in [0, 1) from words 2 and 3.
    auto u1 = (bits53(w[0], w[1]) + 1).to(tl::float64) * 1.1102230246251565e-16;
    auto u2 = uniform_f64(w[2], w[3]);
    return tl::sqrt(-2.0 * tl::log(u1)) * tl::cos(6.283185307179586 * u2);
  }
  return tl::pair_uniform_to_normal(tl::uint_to_uniform_float(w[0]), tl::uint_to_uniform_float(w[1]))[0];
}

namespace {
Kernel& raw_kernel() {
  static Kernel k = kernel(
      "philox4x32_10",
      [](tl::ptr<uint32_t> ctr, tl::ptr<uint32_t> out, tl::i64 n, tl::u32 k0, tl::u32 k1, int BLOCK) {
        auto offs = tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK);
        auto mask = offs < n;
        auto base = offs * 4;
        auto seed = k0.to(tl::uint64) | (k1.to(tl::uint64) << 32);  // key (k0, k1)
        auto w = tl::philox(seed, tl::load(ctr + base, mask, 0u), tl::load(ctr + base + 1, mask, 0u),
                            tl::load(ctr + base + 2, mask, 0u), tl::load(ctr + base + 3, mask, 0u));
        for (int j = 0; j < 4; ++j) tl::store(out + base + j, w[j], mask);
      },
      {"ctr", "out", "n", "k0", "k1", "BLOCK"});
  return k;
}
}  // namespace

runtime::Tensor philox4x32_10(const runtime::Tensor& counters, uint32_t k0, uint32_t k1) {
  if (!counters.defined() || counters.dtype() != DType::u32 || counters.dim() != 2 || counters.size(1) != 4)
    fail("philox4x32_10: counters must be a [N, 4] u32 tensor, got {}", counters.str());
  if (!counters.is_contiguous()) fail("philox4x32_10: counters must be contiguous");
  const runtime::Tensor& c = counters;
  runtime::Tensor out = runtime::Tensor::empty(c.shape(), DType::u32, c.device());
  int64_t n = c.size(0);
  if (n > 0) raw_kernel()[{cdiv(n, 256)}](c, out, n, k0, k1, 256, Options{.device = c.device()});
  return out;
}

}  // namespace philox

// ---- generators ------------------------------------------------------------------------------

Generator::Generator(const Generator& other) {
  std::lock_guard lock(other.mutex_);
  seed_ = other.seed_;
  offset_ = other.offset_;
}

Generator& Generator::operator=(const Generator& other) {
  if (this == &other) return *this;
  std::scoped_lock lock(mutex_, other.mutex_);
  seed_ = other.seed_;
  offset_ = other.offset_;
  return *this;
}

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard lock(mutex_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t Generator::seed() const {
  std::lock_guard lock(mutex_);
  return seed_;
}

uint64_t Generator::offset() const {
  std::lock_guard lock(mutex_);
  return offset_;
}

Generator::Stream Generator::reserve(uint64_t n) {
  std::lock_guard lock(mutex_);
  if (n > std::numeric_limits<uint64_t>::max() - offset_)
    fail("Generator: the counter space of seed {} is exhausted (offset {}, {} more requested)", seed_, offset_, n);
  Stream s{seed_, offset_};
  offset_ += n;
  return s;
}

Generator& default_generator() {
  static Generator g(67280421310721ull);  // PyTorch's default seed
  return g;
}

namespace {

namespace tl = tritium::tl;
using runtime::Tensor;

constexpr int kBlock = 1024;

template <class T> tl::tensor uniform01(const std::array<tl::tensor, 4>& w) { return philox::uniform01(w, dtype_of<T>()); }
template <class T> tl::tensor normal(const std::array<tl::tensor, 4>& w) { return philox::standard_normal(w, dtype_of<T>()); }

// Counters for the elements of a program: base + linear index.
tl::tensor element_offsets(int BLOCK) { return tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK); }

// Uniform [0, 1) or, with NORMAL, standard normal values in dtype T.
template <class T> Kernel& random_float_kernel() {
  static Kernel k = kernel(
      "random_float",
      [](tl::ptr<T> out, tl::i64 n, tl::u64 seed, tl::u64 base, int BLOCK, bool NORMAL) {
        auto offs = element_offsets(BLOCK);
        auto w = philox::random_words(seed, base + offs.to(tl::uint64, true));
        tl::store(out + offs, (NORMAL ? normal<T>(w) : uniform01<T>(w)).to(dtype_of<T>()), offs < n);
      },
      {"out", "n", "seed", "base", "BLOCK", "NORMAL"});
  return k;
}

// low + (random % range): 32 random bits when range <= 2^32 (WIDE = false), else 64.
template <class T> Kernel& randint_kernel() {
  static Kernel k = kernel(
      "randint",
      [](tl::ptr<T> out, tl::i64 n, tl::u64 seed, tl::u64 base, tl::i64 low, tl::u64 range, int BLOCK, bool WIDE) {
        auto offs = element_offsets(BLOCK);
        auto w = philox::random_words(seed, base + offs.to(tl::uint64, true));
        tl::tensor bits = w[0].to(tl::uint64);
        if (WIDE) bits = (bits << 32) | w[1].to(tl::uint64);
        auto v = low + (bits % range).to(tl::int64, true);
        tl::store(out + offs, v.to(dtype_of<T>()), offs < n);
      },
      {"out", "n", "seed", "base", "low", "range", "BLOCK", "WIDE"});
  return k;
}

// x = low + (high - low) * U[0, 1) on any strides (rank <= 4 after collapsing; sizes s0..s3,
// strides t0..t3). The counter is base + the row-major logical index, whatever the strides.
template <class T> Kernel& uniform_kernel() {
  static Kernel k = kernel(
      "uniform",
      [](tl::ptr<T> out, tl::i64 n, tl::u64 seed, tl::u64 base, tl::f64 low, tl::f64 high, tl::i64 s1, tl::i64 s2,
         tl::i64 s3, tl::i64 t0, tl::i64 t1, tl::i64 t2, tl::i64 t3, int BLOCK) {
        auto offs = element_offsets(BLOCK);
        auto w = philox::random_words(seed, base + offs.to(tl::uint64, true));
        constexpr DType d = dtype_of<T>();
        constexpr DType compute = d == DType::f64 ? DType::f64 : DType::f32;
        auto u = uniform01<T>(w).to(compute);
        auto v = low.to(compute) + (high - low).to(compute) * u;
        tl::store(out + detail::strided_offset(offs, s1, s2, s3, t0, t1, t2, t3), v.to(d), offs < n);
      },
      {"out", "n", "seed", "base", "low", "high", "s1", "s2", "s3", "t0", "t1", "t2", "t3", "BLOCK"});
  return k;
}

Options on(const Tensor& x) { return Options{.device = x.device()}; }

void uniform_impl(const Tensor& x, double low, double high, uint64_t seed, uint64_t base) {
  int64_t n = x.numel();
  if (n == 0) return;
  Shape sizes, strides;
  runtime::collapse_dims(x, sizes, strides);
  if (sizes.size() > 4) {
    int64_t inner = n / x.shape()[0];
    for (int64_t i = 0; i < x.shape()[0]; ++i)
      uniform_impl(runtime::select_of(x, 0, i), low, high, seed, base + static_cast<uint64_t>(i * inner));
    return;
  }
  while (sizes.size() < 4) sizes.insert(sizes.begin(), 1), strides.insert(strides.begin(), 0);
  runtime::dispatch_float(x.dtype(), "uniform_", [&](auto tag) {
    using T = decltype(tag);
    uniform_kernel<T>()[{cdiv(n, kBlock)}](x, n, seed, base, low, high, sizes[1], sizes[2], sizes[3], strides[0],
                                           strides[1], strides[2], strides[3], kBlock, on(x));
  });
}

}  // namespace

Tensor rand(const Shape& shape, Generator& gen, DType dtype, Device device) {
  runtime::dispatch_float(dtype, "rand", [](auto) {});
  Tensor t = Tensor::empty(shape, dtype, device);
  int64_t n = t.numel();
  if (n == 0) return t;
  Generator::Stream s = gen.reserve(static_cast<uint64_t>(n));
  runtime::dispatch_float(dtype, "rand", [&](auto tag) {
    using T = decltype(tag);
    random_float_kernel<T>()[{cdiv(n, kBlock)}](t, n, s.seed, s.offset, kBlock, false, on(t));
  });
  return t;
}

Tensor randn(const Shape& shape, Generator& gen, DType dtype, Device device) {
  runtime::dispatch_float(dtype, "randn", [](auto) {});
  Tensor t = Tensor::empty(shape, dtype, device);
  int64_t n = t.numel();
  if (n == 0) return t;
  Generator::Stream s = gen.reserve(static_cast<uint64_t>(n));
  runtime::dispatch_float(dtype, "randn", [&](auto tag) {
    using T = decltype(tag);
    random_float_kernel<T>()[{cdiv(n, kBlock)}](t, n, s.seed, s.offset, kBlock, true, on(t));
  });
  return t;
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen, DType dtype, Device device) {
  if (low >= high) fail("randint: expects 'low' to be less than 'high', but got low={} >= high={}", low, high);
  if (is_int(dtype)) {
    // Both low and high - 1 must be values of dtype.
    __int128 lo, hi;
    if (is_bool(dtype)) lo = 0, hi = 1;
    else if (is_signed_int(dtype)) hi = (static_cast<__int128>(1) << (dtype_bits(dtype) - 1)) - 1, lo = -hi - 1;
    else lo = 0, hi = (static_cast<__int128>(1) << dtype_bits(dtype)) - 1;
    if (low < lo || static_cast<__int128>(high) - 1 > hi)
      fail("randint: the range [{}, {}) does not fit dtype {}", low, high, dtype_name(dtype));
  }
  runtime::dispatch_dtype(dtype, "randint", [](auto) {});
  Tensor t = Tensor::empty(shape, dtype, device);
  int64_t n = t.numel();
  if (n == 0) return t;
  uint64_t range = static_cast<uint64_t>(static_cast<__int128>(high) - low);
  bool wide = range > (uint64_t(1) << 32);
  Generator::Stream s = gen.reserve(static_cast<uint64_t>(n));
  runtime::dispatch_dtype(dtype, "randint", [&](auto tag) {
    using T = decltype(tag);
    randint_kernel<T>()[{cdiv(n, kBlock)}](t, n, s.seed, s.offset, low, range, kBlock, wide, on(t));
  });
  return t;
}

void uniform_(Tensor& x, double low, double high, Generator& gen) {
  if (!x.defined()) fail("uniform_: tensor is undefined");
  runtime::dispatch_float(x.dtype(), "uniform_", [](auto) {});
  if (!(low <= high) || !std::isfinite(low) || !std::isfinite(high))
    fail("uniform_: expects low <= high (finite), but got low={}, high={}", low, high);
  int64_t n = x.numel();
  if (n == 0) return;
  Generator::Stream s = gen.reserve(static_cast<uint64_t>(n));
  uniform_impl(x, low, high, s.seed, s.offset);
}

}  // namespace tritium::ops
