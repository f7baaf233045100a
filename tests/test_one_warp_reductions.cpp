// Whole-block reductions in one-warp programs (num_warps = 1), on every backend: the CUDA
// element-loop generator stops after the warp shuffles there (jit/cuda/block_reduce.cpp: no shared
// partials, no barriers), so the values of each lane must be the whole block's. An online
// log-sum-exp over rows in chunks (max and sum in a loop, as grpo_loss's forward), a keep_dims sum
// (a block result, which still goes through a buffer) and a masked max whose last chunk leaves
// lanes empty; num_warps 1 and 4 give the same values.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <cmath>

#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;

namespace {

constexpr int kRows = 5, kN = 1000, kBlock = 256;  // 4 chunks, the last partial

auto lse_kernel() {
  return tritium::kernel(
      "one_warp_lse",
      [](tl::ptr<float> x, tl::ptr<float> lse, tl::ptr<float> total, tl::ptr<float> last_max, tl::i32 n, int BLOCK) {
        auto row = tl::program_id(0);
        auto base = x + row * n;
        tl::tensor m = tl::full({}, -INFINITY, tl::float32);
        tl::tensor l = tl::full({}, 0.0, tl::float32);
        tl::tensor s = tl::zeros({1}, tl::float32);
        tl::tensor mx = tl::full({}, -INFINITY, tl::float32);
        for (auto start : tl::range(0, n, BLOCK)) {
          auto cols = start + tl::arange(0, BLOCK);
          auto v = tl::load(base + cols, cols < n, -INFINITY);
          auto m_new = tl::maximum(m, tl::max(v));
          l = l * tl::exp(m - m_new) + tl::sum(tl::exp(v - m_new));
          m = m_new;
          s = s + tl::sum(tl::where(cols < n, v, 0.0f), 0, true);  // keep_dims: a [1] block
          mx = tl::max(v);  // the last chunk's: lanes past n hold -inf
        }
        tl::store(lse + row, m + tl::log(l));
        tl::store(total + row + tl::arange(0, 1), s);
        tl::store(last_max + row, mx);
      },
      {"x", "lse", "total", "last_max", "n", "BLOCK"});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_one_warp_reductions)

BOOST_AUTO_TEST_CASE(online_logsumexp_in_one_warp_matches_four_warps_and_float64) {
  auto x = tt::random_vector<float>(size_t(kRows) * kN, 7, -3.0, 3.0);
  std::vector<double> want_lse(kRows), want_sum(kRows), want_last(kRows);
  for (int r = 0; r < kRows; ++r) {
    double m = -INFINITY, s = 0, t = 0, last = -INFINITY;
    for (int j = 0; j < kN; ++j) m = std::max(m, double(x[size_t(r * kN + j)]));
    for (int j = 0; j < kN; ++j) s += std::exp(double(x[size_t(r * kN + j)]) - m), t += x[size_t(r * kN + j)];
    for (int j = kN / kBlock * kBlock; j < kN; ++j) last = std::max(last, double(x[size_t(r * kN + j)]));
    want_lse[size_t(r)] = m + std::log(s), want_sum[size_t(r)] = t, want_last[size_t(r)] = last;
  }
  tt::for_each_backend([&](const tt::Backend& be) {
    for (int warps : {1, 4}) {
      auto k = lse_kernel();
      auto dx = be.upload<float>(x);
      auto dl = be.alloc_poisoned<float>(kRows), ds = be.alloc_poisoned<float>(kRows), dm = be.alloc_poisoned<float>(kRows);
      tritium::Options o = be.options();
      o.num_warps = warps;
      k[{kRows}](dx.ptr(), dl.ptr(), ds.ptr(), dm.ptr(), kN, kBlock, o);
      const std::string what = be.name + " num_warps=" + std::to_string(warps);
      tt::check_close<float>(dl.download(), want_lse, 1e-5, what + " lse");
      tt::check_close<float>(ds.download(), want_sum, 1e-5, what + " keep_dims sum");
      tt::check_close<float>(dm.download(), want_last, 0.0, what + " last chunk's max");
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
