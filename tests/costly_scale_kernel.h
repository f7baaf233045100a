// The autotuning suites' test kernel (test_autotune, test_autotune_policy): out = x * 2 * REPS,
// each program recomputing its block REPS times, so REPS sets a config's cost (the fastest is
// known: REPS = 1) and the values say which config ran; with the grid and the exact value check.
#pragma once
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

namespace tritium::test {

inline Kernel make_costly_scale(const std::string& name = "costly_scale") {
  namespace tl = tritium::tl;
  return tritium::kernel(
      name,
      [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int BLOCK, int REPS) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto mask = offs < n;
        auto acc = tl::zeros({BLOCK}, tl::float32);
        for (auto r : tl::range(0, REPS)) {
          (void)r;
          acc = acc + tl::load(x + offs, mask) * 2.0f;
        }
        tl::store(out + offs, acc, mask);
      },
      {"x", "out", "n", "BLOCK", "REPS"});
}

inline auto costly_scale_grid(int64_t n) {
  return [n](const Meta& m) { return Grid(cdiv(n, m["BLOCK"])); };
}

// Every element is x * 2 * reps, exactly (inputs whose products are exact).
inline void check_costly_scale(const Tensor& out, const std::vector<float>& x, int reps, const std::string& what) {
  auto got = out.to_vector<float>();
  BOOST_TEST_REQUIRE(got.size() == x.size());
  for (size_t i = 0; i < x.size(); ++i)
    if (got[i] != x[i] * 2.0f * static_cast<float>(reps)) {
      BOOST_ERROR(what << ": element " << i << " = " << got[i] << ", expected " << x[i] * 2.0f * reps);
      return;
    }
}

}  // namespace tritium::test
