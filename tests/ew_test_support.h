// Helpers of the element-wise breadth tests (test_ops_unary_math.cpp, test_ops_activations.cpp,
// test_ops_bitwise.cpp): inputs with the domain's edges (NaN, +-inf, +-0, huge, tiny, subnormal)
// among random values, and an element-by-element comparison with a float64 reference that
// accepts NaN only where the reference is NaN, infinities only of the same sign, and checks the
// sign of zeros where asked. Include after ops_test_helpers.h.
#pragma once
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace tritium::test::ew {

namespace ou = tritium::test::ops_util;
using Shape = std::vector<int64_t>;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Special values representable in `d` (subnormals of f32 / f64; f16 and bf16 get their own).
inline std::vector<double> edge_values(DType d) {
  std::vector<double> v{kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -3.0, 1e-3, -1e-3};
  if (d == DType::f32) v.insert(v.end(), {1e30, -1e30, 3e38, 1e-30, -1e-30, 1e-40, -1e-42, 88.5, -88.5, 0.99999994, -0.99999994});
  if (d == DType::f64) v.insert(v.end(), {1e300, -1e300, 1e-300, 1e-310, -4e-320, 700.0, -745.0, 1 - 1e-16, -(1 - 1e-16)});
  if (d == DType::f16) v.insert(v.end(), {60000.0, -60000.0, 1e-6, 6e-8, 11.0, -11.0});
  if (d == DType::bf16) v.insert(v.end(), {1e30, -1e30, 1e-30, 88.0, -88.0});
  return v;
}

// n random values in [lo, hi] followed by the edges: a tensor of dtype d (values rounded to d)
// and the values as stored, read back on the host.
struct Input {
  Tensor t;
  std::vector<double> v;
};
inline Input make_input(DType d, int64_t n, uint32_t seed, double lo, double hi, bool edges = true) {
  auto r = random_vector<double>(static_cast<size_t>(n), seed, lo, hi);
  std::vector<double> all(r.begin(), r.end());
  if (edges) {
    auto e = edge_values(d);
    all.insert(all.end(), e.begin(), e.end());
  }
  Tensor t = ops::to_dtype(Tensor::from_vector<double>(all, {static_cast<int64_t>(all.size())}), d);
  return {t, ou::values(t)};
}

inline double round_to(double x, DType d) {
  switch (d) {
    case DType::f32: return static_cast<float>(x);
    case DType::f16: return to_float(to_f16(static_cast<float>(x)));
    case DType::bf16: return to_float(to_bf16(static_cast<float>(x)));
    default: return x;
  }
}

// Element-wise: |out - ref| <= atol + rtol |ref|; NaN only where ref is NaN; infinities equal;
// with signed_zero, a zero reference needs a zero of the same sign.
inline void check_elements(const Tensor& out, const std::vector<double>& ref, double rtol, double atol,
                           const std::string& what, bool signed_zero = false) {
  auto v = ou::values(out);
  BOOST_TEST_REQUIRE(v.size() == ref.size(), what << ": " << v.size() << " elements, expected " << ref.size());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    double o = v[i], r = ref[i];
    bool ok;
    if (std::isnan(r)) ok = std::isnan(o);
    else if (std::isinf(r)) ok = o == r;
    else ok = std::isfinite(o) && std::abs(o - r) <= atol + rtol * std::abs(r);
    if (ok && signed_zero && r == 0 && o == 0) ok = std::signbit(o) == std::signbit(r);
    if (!ok && !bad++) first = i;
  }
  BOOST_TEST(bad == 0u, what << ": " << bad << " of " << v.size() << " elements differ; first [" << first
                             << "] = " << (bad ? v[first] : 0) << ", reference " << (bad ? ref[first] : 0));
}

// The relative tolerance of a float function's result in dtype d (a few ulp; half types round once).
inline double tol_of(DType d) {
  switch (d) {
    case DType::f64: return 4e-15;
    case DType::f32: return 5e-7;
    case DType::f16: return 1e-3;
    case DType::bf16: return 8e-3;
    default: return 0;
  }
}

// An error naming `needle`.
#define EW_CHECK_ERROR(stmt, needle)                                                                   \
  BOOST_CHECK_EXCEPTION(stmt, tritium::Error, [&](const tritium::Error& e) {                         \
    bool ok = std::string(e.what()).find(needle) != std::string::npos;                                \
    if (!ok) BOOST_TEST_MESSAGE("error message: " << e.what());                                       \
    return ok;                                                                                        \
  })

}  // namespace tritium::test::ew
