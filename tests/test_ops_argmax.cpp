// argmax / argmin / max.dim / min.dim along the contiguous last dim (ops/reduce.cpp): each lane
// carries its winner as a position in the chunk and takes a later element only when it is
// strictly better (or the first NaN), so the first-index rule rests on the lanes' starting
// positions and the final reduction's tie-break. Rows shorter than, equal to, longer than the
// block and long enough to be split, in f32, bf16 and integers, with ties everywhere, rows of
// nothing but the extreme (-inf, INT32_MIN, 0 of u8), NaNs (one, several, first, last), -0.0
// beside +0.0; against a host reference of PyTorch's rule (first index of the extreme; NaN is
// the extreme); every index and value is checked.
#include <cmath>
#include <limits>

#include <optional>

#include "ops/reduce_kernels.h"
#include "ops/reduce_plan.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

BOOST_AUTO_TEST_SUITE(test_ops_argmax)

namespace {

// The first index of the extreme of each row of [O, R] values; NaN beats everything.
std::vector<double> arg_ref(const std::vector<double>& v, int64_t O, int64_t R, bool max) {
  std::vector<double> out;
  for (int64_t o = 0; o < O; ++o) {
    int64_t best = 0;
    for (int64_t r = 1; r < R; ++r) {
      double a = v[o * R + r], b = v[o * R + best];
      if (std::isnan(b)) break;
      if (std::isnan(a) || (max ? a > b : a < b)) best = r;
    }
    out.push_back(static_cast<double>(best));
  }
  return out;
}

// Rows drawn from six levels in [a, b] (ties everywhere); row kinds by o % 8: levels, all equal to
// the dtype's lowest value lo (argmax's worst case), all equal to its highest hi, one NaN at a
// random place, NaNs at the first and last places, -0.0 and +0.0 alternating, one hi at the last
// place among equal values, levels again.
std::vector<double> tied_rows(int64_t O, int64_t R, uint32_t seed, bool floats, double lo, double hi, double a,
                              double b) {
  auto r = tt::random_vector<double>(static_cast<size_t>(O * R), seed, 0, 5.999);
  std::vector<double> v(r.size());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t o = 0; o < O; ++o)
    for (int64_t k = 0; k < R; ++k) {
      double& x = v[o * R + k];
      x = a + std::floor(r[o * R + k]) * (b - a) / 5;
      switch (o % 8) {
        case 1: x = lo; break;
        case 2: x = hi; break;
        case 3: if (floats && k == (o * 7919) % R) x = nan; break;
        case 4: if (floats && (k == 0 || k == R - 1)) x = nan; break;
        case 5: if (floats) x = k % 2 ? 0.0 : -0.0; break;
        case 6: x = k == R - 1 ? hi : a; break;
        default: break;
      }
    }
  return v;
}

void check_on(const Tensor& t, const tt::Backend& be, const std::string& what) {
  BOOST_TEST((t.device() == be.device), what << ": result on " << t.device().str() << ", expected " << be.device.str());
}

void check_exact(const Tensor& out, const std::vector<double>& ref, const std::string& what) {
  auto v = ou::values(out);
  BOOST_TEST_REQUIRE(v.size() == ref.size(), what);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    bool same = (std::isnan(v[i]) && std::isnan(ref[i])) || (v[i] == ref[i] && std::signbit(v[i]) == std::signbit(ref[i]));
    if (!same && !bad++) first = i;
  }
  BOOST_TEST(bad == 0u, what << ": " << bad << " of " << v.size() << " differ; first [" << first << "] "
                             << (bad ? v[first] : 0) << ", expected " << (bad ? ref[first] : 0));
}

}  // namespace

BOOST_AUTO_TEST_CASE(last_dim_rows_of_every_length) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const double inf = std::numeric_limits<double>::infinity();
    struct Type {
      DType d;
      double lo, hi;  // the dtype's extremes
      double a, b;    // the range of the levels
    };
    const Type types[] = {{DType::f32, -inf, inf, -2.5, 2.5},
                          {DType::bf16, -inf, inf, -2.5, 2.5},
                          {DType::i32, double(INT32_MIN), double(INT32_MAX), -1e9, 1e9},
                          {DType::u8, 0, 255, 0, 250}};
    // Lengths: 1, odd and short, one short of and one past a 1024 block, several blocks, and a
    // row long enough that the plan splits it into chunks (partials, a second launch).
    // The device's own plan, and an H100's (132 SMs): it cuts the rows of 70001 into 14 chunks, so
    // the second launch reduces positions among the partials and loads the winner's index.
    for (bool h100 : {false, true})
      for (int64_t R : {int64_t(1), int64_t(7), int64_t(1023), int64_t(1025), int64_t(3001), int64_t(70001)})
        for (const Type& t : types) {
          std::optional<tritium::ops::detail::ScopedReduceDevice> plan;
          if (h100) plan.emplace(tritium::ops::detail::ReduceDevice::cuda(132));
          const int64_t O = R > 10000 ? 9 : 24;
          const bool floats = t.d == DType::f32 || t.d == DType::bf16;
          auto v = tied_rows(O, R, static_cast<uint32_t>(R * 3 + static_cast<int>(t.d)), floats, t.lo, t.hi, t.a, t.b);
          Tensor x = ops::to_dtype(Tensor::from_vector<double>(v, {O, R}), t.d);
          auto stored = ou::values(x);
          const std::string what =
              std::string(tritium::dtype_name(t.d)) + " R=" + std::to_string(R) + (h100 ? " (H100 plan)" : "");
          for (bool max : {true, false}) {
            const std::string w = (max ? "argmax " : "argmin ") + what;
            Tensor idx = max ? ops::argmax(x, -1) : ops::argmin(x, -1);
            BOOST_TEST((idx.dtype() == DType::i64), w);
            check_on(idx, be, w);
            auto ref = arg_ref(stored, O, R, max);
            check_exact(idx, ref, w);
            // max.dim / min.dim: the same indices and the values at them, from one pass.
            auto [vals, ids] = tritium::ops::detail::extreme_with_index(x, 1, false, max);
            check_exact(ids, ref, w + " (with values)");
            std::vector<double> want;
            for (int64_t o = 0; o < O; ++o) want.push_back(stored[o * R + static_cast<int64_t>(ref[o])]);
            check_exact(vals, want, w + " values");  // -0.0 where the winner is -0.0
          }
        }
  });
}

BOOST_AUTO_TEST_SUITE_END()
