// A user's program: the README's first kernel, launched with the documented spellings
// (tritium::Options{.num_warps = 8}, autotune options {.key = ...}), checked against a float64 sum.
// Built with -Wall -Wextra -Werror: the public headers must compile cleanly in a user's project.
#include <tritium/tritium.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "autotune/autotuner.h"  // installed beside tritium.h, as the README's "nn/..." includes

namespace tl = tritium::tl;

auto add = tritium::kernel("add", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 n, int BLOCK) {
  auto pid = tl::program_id(0);
  auto offs = pid * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask) + tl::load(y + offs, mask), mask);
}, {"x", "y", "out", "n", "BLOCK"});  // names: the autotuner's key and configs refer to them

// Counts wrong elements of out against x + y computed in float64.
static int count_wrong(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& out) {
  int wrong = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (!(std::fabs(double(out[i]) - (double(x[i]) + double(y[i]))) <= 1e-6 * (1 + std::fabs(double(x[i]) + y[i]))))
      ++wrong;
  return wrong;
}

int main() {
  const int n = 10007;  // not a multiple of the block: the last program is masked
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) x[i] = u(rng), y[i] = u(rng);

  try {
    std::fill(out.begin(), out.end(), NAN);  // poisoned: an element the kernel misses stays NaN
    add[{tritium::cdiv(n, 1024)}](x.data(), y.data(), out.data(), n, 1024, tritium::Options{.num_warps = 8});
    int wrong = count_wrong(x, y, out);

    auto tuned = tritium::autotune(add, {tritium::Config({{"BLOCK", 256}}), tritium::Config({{"BLOCK", 2048}})},
                                   {.key = {"n"}, .warmup_ms = 1, .rep_ms = 5, .cache_results = false});
    std::fill(out.begin(), out.end(), NAN);
    auto grid = [&](const tritium::Meta& m) { return tritium::Grid(tritium::cdiv(n, m["BLOCK"])); };
    tuned[grid](x.data(), y.data(), out.data(), n);
    wrong += count_wrong(x, y, out);
    if (wrong) {
      std::printf("FAILED: %d wrong elements\n", wrong);
      return 1;
    }
  } catch (const tritium::Error& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
  std::printf("vector_add: ok (%d elements)\n", n);
  return 0;
}
