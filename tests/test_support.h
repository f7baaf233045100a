// Shared helpers for the op tests (elementwise, shapes, memory, reductions, dot, control flow,
// errors). Header-only; include after nothing else:
//
//   #include "test_support.h"
//   namespace tt = tritium::test;
//
//   BOOST_AUTO_TEST_CASE(add) {
//     tt::for_each_backend([&](const tt::Backend& be) {
//       auto x = tt::random_vector<float>(1000, /*seed=*/1);
//       auto out = tt::poisoned<float>(1000);
//       auto dx = be.upload(x); auto dout = be.upload(out);
//       kernel[{grid}](dx.ptr(), dout.ptr(), n, 128, be.options());
//       out = dout.download();
//       tt::check_close(out, reference, 1e-6);      // rel error + every element written
//     });
//   }
//
// Bool data lives in host_vector<bool> = std::vector<uint8_t> (std::vector<bool> is packed and
// has no bool* data()); data_as<bool>(v) gives the bool* a kernel takes.
//
// Conventions (DESIGN.md, Correctness): float64 host references, rel_error = ||out-ref||/||ref||
// in double with NaN/inf => infinity, fresh random inputs that are never all zero, outputs
// poisoned before the run and checked to be fully written, sizes that are not multiples of the block.
#pragma once

#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include "runtime/buffer.h"
#include "common/env.h"
#include "runtime/cuda_allocator.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace tritium::test {

// ---- element types ------------------------------------------------------------------------------

// Host storage of element type T: bool is stored as one byte (never as std::vector<bool>).
template <class T> using storage_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
template <class T> using host_vector = std::vector<storage_t<T>>;
template <class T> T* data_as(host_vector<T>& v) { return reinterpret_cast<T*>(v.data()); }
template <class T> const T* data_as(const host_vector<T>& v) { return reinterpret_cast<const T*>(v.data()); }

template <class T> inline constexpr bool is_half_v = std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t>;
template <class T> inline constexpr bool is_fp8_v = std::is_same_v<T, f8e4m3_t> || std::is_same_v<T, f8e5m2_t>;
template <class T> inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T> || is_fp8_v<T>;

// float <-> IEEE half / bfloat16 bits, round to nearest even; NaN stays NaN, overflow gives inf.
inline uint16_t float_to_f16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {                                                 // subnormal half or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    int shift = 14 - e;
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent: fine
  return static_cast<uint16_t>(sign | half);
}
inline float f16_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) x = sign | 0x7f800000u | (mant << 13);
  else if (exp != 0) x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  else if (mant == 0) x = sign;
  else {  // subnormal: normalise
    int e = -1;
    do { ++e; mant <<= 1; } while (!(mant & 0x400u));
    x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(x);
}
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
inline float bf16_bits_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline f16_t to_f16(float f) { return f16_t{float_to_f16_bits(f)}; }
inline bf16_t to_bf16(float f) { return bf16_t{float_to_bf16_bits(f)}; }

// long double (exact for every double and every 64-bit integer on x86-64) -> float with round
// to odd; then float -> f16/bf16 with round to nearest even is correctly rounded (24 >= 2*11+2),
// with no double-rounding error.
inline float round_to_odd_float(long double x) {
  float f = static_cast<float>(x);
  if (!std::isfinite(f) || static_cast<long double>(f) == x) return f;
  if (std::fabs(static_cast<long double>(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}
inline f16_t to_f16_exact(long double x) { return f16_t{float_to_f16_bits(round_to_odd_float(x))}; }
inline bf16_t to_bf16_exact(long double x) { return bf16_t{float_to_bf16_bits(round_to_odd_float(x))}; }
// fp8 (OCP 8-bit floats) straight from the definition: e4m3 (bias 7, no infinities, S.1111.111
// is NaN) and e5m2 (bias 15, IEEE-like). Encoding searches every code for the nearest value
// (ties to the even code), saturating to the largest finite one (cvt.rn.satfinite); NaN -> 0x7f.
template <class F> double fp8_value(uint8_t code) {
  const bool e4 = std::is_same_v<F, f8e4m3_t>;
  const int mbits = e4 ? 3 : 2, bias = e4 ? 7 : 15;
  const int e = (code >> mbits) & (e4 ? 15 : 31), m = code & ((1 << mbits) - 1);
  double v;
  if (e4 && e == 15 && m == 7) v = NAN;
  else if (!e4 && e == 31) v = m ? NAN : INFINITY;
  else if (e == 0) v = m * std::pow(2.0, 1 - bias - mbits);
  else v = (1.0 + m / double(1 << mbits)) * std::pow(2.0, e - bias);
  return (code & 0x80) ? -v : v;
}
template <class F> F fp8_nearest(double x) {
  if (std::isnan(x)) return F{0x7f};
  int best = 0;
  double a = std::min(std::fabs(x), std::is_same_v<F, f8e4m3_t> ? 448.0 : 57344.0);  // (infinities too)
  for (int c = 1; c < 128; ++c) {
    double v = fp8_value<F>(static_cast<uint8_t>(c)), bv = fp8_value<F>(static_cast<uint8_t>(best));
    if (!std::isfinite(v)) continue;
    double dv = std::fabs(v - a), db = std::fabs(bv - a);
    if (dv < db || (dv == db && (c & 1) == 0)) best = c;
  }
  return F{static_cast<uint8_t>(best | (std::signbit(x) ? 0x80 : 0))};
}
inline float to_float(f8e4m3_t h) { return static_cast<float>(fp8_value<f8e4m3_t>(h.bits)); }
inline float to_float(f8e5m2_t h) { return static_cast<float>(fp8_value<f8e5m2_t>(h.bits)); }
inline float to_float(f16_t h) { return f16_bits_to_float(h.bits); }
inline float to_float(bf16_t b) { return bf16_bits_to_float(b.bits); }

// Any element (including storage_t<bool> bytes and f16/bf16) -> double, and back (values are
// rounded like a C++ conversion: to nearest even for floats, correctly for f16/bf16;
// truncated toward zero for integers, which must be in range).
template <class T> double to_double(T v) {
  if constexpr (is_half_v<T> || is_fp8_v<T>) return to_float(v);
  else return static_cast<double>(v);
}
template <class T> T from_double(double d) {
  if constexpr (std::is_same_v<T, f16_t>) return to_f16_exact(d);
  else if constexpr (std::is_same_v<T, bf16_t>) return to_bf16_exact(d);
  else if constexpr (is_fp8_v<T>) return fp8_nearest<T>(d);
  else return static_cast<T>(d);
}
// Rounds a double to what T can hold (the reference for a float result stored as T).
template <class T> double round_to(double d) { return to_double(from_double<T>(d)); }

template <class T> std::string value_str(T v) {
  std::ostringstream os;
  if constexpr (is_half_v<T>) os << to_float(v) << " (bits 0x" << std::hex << v.bits << ")";
  else if constexpr (is_fp8_v<T>) os << to_float(v) << " (bits 0x" << std::hex << int(v.bits) << ")";
  else if constexpr (sizeof(T) == 1 && std::is_integral_v<T>) os << static_cast<int>(v);
  else { os.precision(17); os << v; }
  return os.str();
}

// ---- poison ---------------------------------------------------------------------------------------

// NaN for floats, a sentinel for integers (0xA5 repeated; 0xA5 for bool bytes, never 0 or 1).
template <class T> storage_t<T> poison_value() {
  if constexpr (std::is_same_v<T, f16_t>) return f16_t{0x7e00};
  else if constexpr (std::is_same_v<T, bf16_t>) return bf16_t{0x7fc0};
  else if constexpr (is_fp8_v<T>) return T{0x7f};
  else if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::quiet_NaN();
  else {
    uint64_t pattern = 0xA5A5A5A5A5A5A5A5ull;
    storage_t<T> v;
    std::memcpy(&v, &pattern, sizeof v);
    return v;
  }
}
template <class T> bool is_poison(storage_t<T> v) {
  if constexpr (is_float_v<T>) return std::isnan(to_double(v));
  else {
    const storage_t<T> p = poison_value<T>();
    return std::memcmp(&v, &p, sizeof v) == 0;
  }
}
template <class T> void poison(std::span<storage_t<T>> v) { std::fill(v.begin(), v.end(), poison_value<T>()); }
template <class T> void poison(host_vector<T>& v) { std::fill(v.begin(), v.end(), poison_value<T>()); }
template <class T> host_vector<T> poisoned(size_t n) { return host_vector<T>(n, poison_value<T>()); }

// Elements still holding the poison value. For integers a result can legitimately equal the
// sentinel; check_equal/check_close take the reference into account, prefer them.
template <class T> size_t count_poison(const host_vector<T>& v) {
  return static_cast<size_t>(std::count_if(v.begin(), v.end(), [](const storage_t<T>& x) { return is_poison<T>(x); }));
}
template <class T> bool all_written(const host_vector<T>& v) { return count_poison<T>(v) == 0; }

// ---- random inputs ---------------------------------------------------------------------------------

// Uniform values in [lo, hi] (integers: whole numbers in [lo, hi] clamped to T's range; floats
// are rounded to T). Never all zero: if every draw is 0, element 0 becomes hi (or lo).
template <class T>
host_vector<T> random_vector(size_t n, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 rng(seed);
  host_vector<T> v(n);
  if constexpr (std::is_same_v<T, bool>) {
    std::bernoulli_distribution d(0.5);
    for (auto& x : v) x = d(rng) ? 1 : 0;
    if (n && std::all_of(v.begin(), v.end(), [](uint8_t b) { return b == 0; })) v[0] = 1;
  } else if constexpr (std::is_integral_v<T>) {
    using L = std::numeric_limits<T>;
    double l = std::max(lo, static_cast<double>(L::min()));
    double h = std::min(hi, static_cast<double>(L::max()));
    if constexpr (sizeof(T) == 8) {
      // 64-bit ranges may exceed what double holds exactly: draw raw bits when asked for the full range.
      if (l <= static_cast<double>(L::min()) && h >= static_cast<double>(L::max())) {
        std::uniform_int_distribution<T> d(L::min(), L::max());
        for (auto& x : v) x = d(rng);
        if (n && std::all_of(v.begin(), v.end(), [](T b) { return b == 0; })) v[0] = 1;
        return v;
      }
    }
    std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(std::ceil(l)), static_cast<int64_t>(std::floor(h)));
    for (auto& x : v) x = static_cast<T>(d(rng));
    if (n && std::all_of(v.begin(), v.end(), [](T b) { return b == 0; })) v[0] = static_cast<T>(h != 0 ? h : l);
  } else {
    std::uniform_real_distribution<double> d(lo, hi);
    for (auto& x : v) x = from_double<T>(d(rng));
    if (n && std::all_of(v.begin(), v.end(), [](const T& b) { return to_double(b) == 0; }))
      v[0] = from_double<T>(hi != 0 ? hi : lo);
  }
  return v;
}
// Random values with |x| >= min_abs (divisors, log/sqrt arguments with lo > 0, ...).
template <class T>
host_vector<T> random_nonzero(size_t n, uint32_t seed, double lo, double hi, double min_abs = 1) {
  auto v = random_vector<T>(n, seed, lo, hi);
  std::mt19937 rng(seed ^ 0x9e3779b9u);
  for (auto& x : v)
    while (std::abs(to_double<storage_t<T>>(x)) < min_abs) x = random_vector<T>(1, static_cast<uint32_t>(rng()), lo, hi)[0];
  return v;
}

// ---- comparing with a reference ---------------------------------------------------------------------

inline double norm2(std::span<const double> v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// ||out - ref|| / ||ref|| in double; any NaN or inf in out (or a non-finite difference) gives
// infinity. A zero reference gives ||out||, so an all-zero match is 0.
template <class T> double rel_error(const host_vector<T>& out, std::span<const double> ref) {
  if (out.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    double o = to_double<storage_t<T>>(out[i]);
    if (!std::isfinite(o)) return std::numeric_limits<double>::infinity();
    double d = o - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  if (!std::isfinite(num) || !std::isfinite(den)) return std::numeric_limits<double>::infinity();
  return den == 0 ? std::sqrt(num) : std::sqrt(num) / std::sqrt(den);
}
template <class T> double rel_error(const host_vector<T>& out, const std::vector<double>& ref) {
  return rel_error<T>(out, std::span<const double>(ref));
}

// BOOST_TEST that every element was written and rel_error(out, ref) <= tol; on failure names
// `what` and the first element that is off by more than tol relative to ||ref||/sqrt(n).
template <class T>
void check_close(const host_vector<T>& out, const std::vector<double>& ref, double tol, const std::string& what = "") {
  BOOST_TEST_REQUIRE(out.size() == ref.size(), what << ": size " << out.size() << " vs reference " << ref.size());
  size_t unwritten = count_poison<T>(out);
  BOOST_TEST(unwritten == 0u, what << ": " << unwritten << " of " << out.size() << " elements never written (poison left)");
  double err = rel_error<T>(out, ref);
  if (!(err <= tol)) {
    double scale = norm2(ref) / std::sqrt(std::max<double>(1, ref.size()));
    size_t bad = 0;
    for (; bad < out.size(); ++bad) {
      double o = to_double<storage_t<T>>(out[bad]);
      if (!std::isfinite(o) || std::abs(o - ref[bad]) > tol * std::max(scale, std::abs(ref[bad]))) break;
    }
    std::ostringstream os;
    if (bad < out.size())
      os << "; first bad element [" << bad << "] = " << value_str<storage_t<T>>(out[bad]) << ", reference " << ref[bad];
    BOOST_TEST(err <= tol, what << ": rel_error " << err << " > " << tol << os.str());
  }
}

// Elements of a dot product's result off by more than tol * mag[i], where mag[i] = sum over K
// of |a_ik| |b_kj| (+ |c_ij| for an accumulator), in double; NaN counts. `first` gets the first.
template <class T>
size_t dot_outliers(const host_vector<T>& out, const std::vector<double>& ref, const std::vector<double>& mag, double tol,
                    size_t* first = nullptr) {
  size_t bad = 0;
  for (size_t i = 0; i < out.size() && i < ref.size() && i < mag.size(); ++i)
    if (!(std::abs(to_double<storage_t<T>>(out[i]) - ref[i]) <= tol * mag[i])) {
      if (!bad && first) *first = i;
      ++bad;
    }
  return bad;
}

// check_close for a dot product's result, plus the bound per element of dot_outliers. A dot's
// rounding errors (operands rounded to tf32, products and sums in f32, the output rounded to
// f16/bf16) scale with sum |a||b| whatever the cancellation, so a right result meets the bound at
// every element; a wrong element (a missed K step, a tile written twice) typically misses by about
// |ref| / sum|a||b| ~ 1/sqrt(K), far past it. The norm-wise rel_error alone lets a dozen wrong
// elements in 100,000 through at bf16's tolerance.
template <class T>
void check_dot(const host_vector<T>& out, const std::vector<double>& ref, const std::vector<double>& mag, double tol,
               const std::string& what = "") {
  check_close<T>(out, ref, tol, what);
  BOOST_TEST_REQUIRE(mag.size() == ref.size(), what << ": " << mag.size() << " magnitudes for " << ref.size() << " elements");
  size_t first = 0, bad = dot_outliers<T>(out, ref, mag, tol, &first);
  if (bad)
    BOOST_TEST(bad == 0u, what << ": " << bad << " of " << out.size() << " elements off by more than " << tol
                               << " * sum|a||b|; first [" << first << "] = " << value_str<storage_t<T>>(out[first])
                               << ", reference " << ref[first] << ", sum|a||b| " << mag[first]);
}

// Exact comparison (integer ops, casts, data movement). Elements are compared bitwise for
// floats too (NaN == NaN when the bits match); unwritten elements are reported as such.
template <class T>
void check_equal(const host_vector<T>& out, const host_vector<T>& ref, const std::string& what = "") {
  BOOST_TEST_REQUIRE(out.size() == ref.size(), what << ": size " << out.size() << " vs reference " << ref.size());
  size_t mismatches = 0, first = 0, unwritten = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::memcmp(&out[i], &ref[i], sizeof(storage_t<T>)) == 0) continue;
    if (!mismatches) first = i;
    ++mismatches;
    if (is_poison<T>(out[i])) ++unwritten;
  }
  if (mismatches)
    BOOST_TEST(mismatches == 0u, what << ": " << mismatches << " of " << out.size() << " elements differ ("
                                      << unwritten << " never written); first [" << first
                                      << "] = " << value_str<storage_t<T>>(out[first])
                                      << ", reference " << value_str<storage_t<T>>(ref[first]));
}

// ---- backends ------------------------------------------------------------------------------------------

// Memory on a backend's device holding a copy of host data. On the CPU it is host memory and
// ptr() is the data itself; on CUDA it is a buffer of the caching allocator filled by H2D, ptr()
// is the device address and download() copies back with D2H (synchronous).
template <class T> class DeviceArray {
 public:
  DeviceArray(Device device, host_vector<T> host) : device_(device), size_(host.size()), host_(std::move(host)) {
    if (device_.is_cuda()) {
      const size_t bytes = size_ * sizeof(storage_t<T>);
      buffer_ = runtime::Buffer::allocate(bytes, device_);
      runtime::cuda::copy_h2d(runtime::cuda::to_deviceptr(buffer_->data()), host_.data(), bytes, device_.index);
      host_ = {};  // staged by the driver before copy_h2d returned
    }
  }
  T* ptr() { return buffer_ ? static_cast<T*>(buffer_->data()) : data_as<T>(host_); }
  size_t size() const { return size_; }
  host_vector<T> download() const {
    if (!buffer_) return host_;
    host_vector<T> out(size_);
    runtime::cuda::copy_d2h(out.data(), runtime::cuda::to_deviceptr(buffer_->data()), out.size() * sizeof(storage_t<T>),
                            device_.index);
    return out;
  }

 private:
  Device device_;
  size_t size_;
  host_vector<T> host_;                      // the data on the CPU; empty on CUDA
  std::shared_ptr<runtime::Buffer> buffer_;  // set on CUDA
};

struct Backend {
  std::string name;
  Device device;
  // Pass as the last launch argument: kernel[grid](args..., be.options()).
  Options options() const { return Options{.device = device}; }
  template <class T> DeviceArray<T> upload(const host_vector<T>& host) const { return DeviceArray<T>(device, host); }
  template <class T> DeviceArray<T> alloc_poisoned(size_t n) const { return DeviceArray<T>(device, poisoned<T>(n)); }
};

// Every backend the tests know; those whose device is unavailable are skipped with a message.
// Adding a backend is one line here.
inline const std::vector<Backend>& all_backends() {
  static const std::vector<Backend> backends = {
      {"cpu", Device::cpu()},
      {"cuda", Device::cuda()},
  };
  return backends;
}

// Runs body(backend) on every available backend, inside a BOOST_TEST_CONTEXT naming it, with the
// backend's device as the default device: tensors the body creates without naming a device
// (Tensor::from_vector, ops::zeros, ops::rand, modules' parameters...) live there, so op-library
// and autograd tests run on every backend from the same source.
template <class F> void for_each_backend(F&& body) {
  for (const Backend& be : all_backends()) {
    if (!runtime::device_available(be.device)) {
      BOOST_TEST_MESSAGE("skipping backend " << be.name << ": " << runtime::device_unavailable_reason(be.device));
      continue;
    }
    DefaultDeviceGuard on_backend(be.device);
    BOOST_TEST_CONTEXT("backend " << be.name) { body(be); }
  }
}

// Precondition for cases that need the CPU backend whatever the backend under test (host-side
// data conversion, references computed by CPU kernels): in a build without it (the CUDA-only
// build on the GPU machine) Boost reports them as skipped, with the reason.
inline boost::test_tools::assertion_result cpu_backend_present(boost::unit_test::test_unit_id) {
  if (runtime::device_available(Device::cpu())) return true;
  boost::test_tools::assertion_result r(false);
  r.message() << runtime::device_unavailable_reason(Device::cpu());
  return r;
}
inline auto needs_cpu_backend() { return boost::unit_test::precondition(&cpu_backend_present); }

// ---- process environment and output ---------------------------------------------------------------------

// Sets (or, with nullptr, unsets) an environment variable for one scope and re-reads env().
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) old = v;
    if (value) ::setenv(n, value, 1);
    else ::unsetenv(n);
    reload_env_for_tests();
  }
  ~ScopedEnv() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
    reload_env_for_tests();
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

// An empty, enabled disk cache in a fresh temporary directory for one scope (TRITIUM_CACHE_DIR
// and TRITIUM_CACHE restored and the directory removed afterwards, even when a check throws).
struct FreshCacheDir {
  std::filesystem::path dir;
  std::optional<ScopedEnv> dir_env, enabled_env;
  explicit FreshCacheDir(const std::string& tag) {
    static int counter = 0;
    dir = std::filesystem::temp_directory_path() /
          ("tritium-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(dir);
    dir_env.emplace("TRITIUM_CACHE_DIR", dir.c_str());
    enabled_env.emplace("TRITIUM_CACHE", "1");
  }
  ~FreshCacheDir() {
    enabled_env.reset();
    dir_env.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  FreshCacheDir(const FreshCacheDir&) = delete;
  FreshCacheDir& operator=(const FreshCacheDir&) = delete;
};

// What f writes to file descriptor fd (1: stdout, 2: stderr), through a temporary file.
template <class F> std::string capture_fd(int fd, F&& f) {
  std::fflush(nullptr);
  char path[] = "/tmp/tritium-capture-XXXXXX";
  int tmp = ::mkstemp(path);
  int saved = ::dup(fd);
  ::dup2(tmp, fd);
  auto undo = [&] {
    std::fflush(nullptr);
    ::dup2(saved, fd);
    ::close(saved);
  };
  try {
    f();
  } catch (...) {
    undo();
    ::close(tmp);
    ::unlink(path);
    throw;
  }
  undo();
  std::string text;
  ::lseek(tmp, 0, SEEK_SET);
  char buf[4096];
  for (ssize_t got; (got = ::read(tmp, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(got));
  ::close(tmp);
  ::unlink(path);
  return text;
}

// ---- errors ---------------------------------------------------------------------------------------------

// Runs f and checks it throws tritium::Error whose what() contains every substring. Any other
// exception, or none, fails the test. Returns the message ("" if nothing matching was thrown).
template <class F>
std::string check_throws(F&& f, std::initializer_list<std::string_view> substrings, const std::string& what = "") {
  try {
    f();
  } catch (const Error& e) {
    std::string msg = e.what();
    for (std::string_view s : substrings)
      BOOST_TEST(msg.find(s) != std::string::npos,
                 what << ": error message does not contain \"" << s << "\": " << msg);
    BOOST_TEST_MESSAGE(what << ": " << msg);
    return msg;
  } catch (const std::exception& e) {
    BOOST_ERROR(what << ": threw a non-tritium exception: " << e.what());
    return "";
  } catch (...) {
    BOOST_ERROR(what << ": threw something that is not a std::exception");
    return "";
  }
  BOOST_ERROR(what << ": expected a tritium::Error, nothing was thrown");
  return "";
}

// "file:line" as errors print a source location (SourceLoc::str()).
// TRITIUM_DEBUG set to `value` for the scope's duration (debug mode: checked accesses,
// device_assert compiled in; docs/debug-mode.md).
struct DebugModeScope {
  std::string previous;
  bool had = false;
  explicit DebugModeScope(const char* value = "1") {
    if (const char* v = std::getenv("TRITIUM_DEBUG")) previous = v, had = true;
    ::setenv("TRITIUM_DEBUG", value, 1);
    reload_env_for_tests();
  }
  ~DebugModeScope() {
    if (had) ::setenv("TRITIUM_DEBUG", previous.c_str(), 1);
    else ::unsetenv("TRITIUM_DEBUG");
    reload_env_for_tests();
  }
  DebugModeScope(const DebugModeScope&) = delete;
  DebugModeScope& operator=(const DebugModeScope&) = delete;
};

inline std::string file_line(const char* file, unsigned line) { return std::string(file) + ":" + std::to_string(line); }

// As check_throws, and the message must name file:line (the user's line of the offending call).
// `line` is read after f ran, so a kernel body may set it: `line = __LINE__; auto c = a + b;`.
template <class F>
std::string check_throws_at(F&& f, const char* file, const unsigned& line,
                            std::initializer_list<std::string_view> substrings, const std::string& what = "") {
  std::string msg = check_throws(std::forward<F>(f), substrings, what);
  std::string where = file_line(file, line);
  BOOST_TEST(msg.find(where) != std::string::npos, what << ": error message does not name " << where << ": " << msg);
  return msg;
}

// Tutorial 03's tiles and K loop, traced inside a kernel: row-major A (M x K) and B (K x N), the
// rows rm and columns rn of the program's C tile (wrapped `% M`, `% N` for the loads), masks on
// K, BK a trip; returns the f32 accumulator.
inline tritium::tl::tensor tutorial_matmul_tile(tritium::tl::ptr<tritium::f16_t> a, tritium::tl::ptr<tritium::f16_t> b,
                                                const tritium::tl::tensor& rm, const tritium::tl::tensor& rn,
                                                tritium::tl::i32 M, tritium::tl::i32 N, tritium::tl::i32 K, int BK) {
  namespace tl = tritium::tl;
  auto rk = tl::arange(0, BK);
  auto a_ptrs = a + (rm % M)(tl::_, tl::None) * K + rk(tl::None, tl::_);
  auto b_ptrs = b + rk(tl::_, tl::None) * N + (rn % N)(tl::None, tl::_);
  auto acc = tl::zeros({rm.shape()[0], rn.shape()[0]}, tl::float32);
  for (auto kt : tl::range(0, tl::cdiv(K, BK))) {
    acc = tl::dot(tl::load(a_ptrs, rk(tl::None, tl::_) < K - kt * BK, 0.0f),
                  tl::load(b_ptrs, rk(tl::_, tl::None) < K - kt * BK, 0.0f), acc);
    a_ptrs += BK;
    b_ptrs += BK * N;
  }
  return acc;
}

}  // namespace tritium::test
