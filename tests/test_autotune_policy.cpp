// TRITIUM_AUTOTUNE=auto, the default (docs/autotune.md, "When tuning pays"): a tuner that can
// estimate a launch's time launches the heuristic's choice and tunes a key only after
// launches_before_tuning() launches; one without an estimate tunes at once, as triton.autotune; a
// key with a disk record is tuned at once from it. And the op library's matmul policy: the MLP of
// train-mnist (issue 28's first epoch) never tunes in its first epochs, a large product does.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "ops/matmul_tuning.h"
#include "ops/ops.h"
#include "costly_scale_kernel.h"
#include "test_support.h"

namespace tt = tritium::test;
namespace tl = tritium::tl;
using tritium::Config;
using tritium::Meta;
using tritium::Tensor;

namespace {

struct AutoMode : tt::ScopedEnv {
  AutoMode() : tt::ScopedEnv("TRITIUM_AUTOTUNE", "auto") {}
};

tritium::Kernel make_repeated_scale() { return tt::make_costly_scale("repeated_scale"); }

// The heuristic's choice (index 0) is the slow one; tuning finds REPS = 1.
const std::vector<Config> kConfigs = {Config({{"BLOCK", 1024}, {"REPS", 512}}), Config({{"BLOCK", 1024}, {"REPS", 1}}),
                                      Config({{"BLOCK", 256}, {"REPS", 256}}, 2)};

tritium::AutotuneOptions options_with_estimate(double ms) {
  tritium::AutotuneOptions o;
  o.key = {"n"};
  o.warmup_ms = 1, o.rep_ms = 5;
  o.prune_configs_by.heuristic = [](const std::vector<Config>&, const tritium::ArgView&) { return size_t{0}; };
  if (ms >= 0) o.estimate_ms = [ms](const tritium::ArgView&) { return ms; };
  return o;
}

auto grid_of(int64_t n) { return tt::costly_scale_grid(n); }
void check_reps(const Tensor& out, const std::vector<float>& x, int reps, const std::string& what) {
  tt::check_costly_scale(out, x, reps, what);
}

// Inputs whose multiples by 2 * REPS are exact in f32 (k / 8, |k| < 2^10), so the sum of REPS
// terms is too whatever the order.
std::vector<float> exact_inputs(int n, uint64_t seed) {
  auto r = tt::random_vector<float>(n, seed);
  std::vector<float> v(r.size());
  for (size_t i = 0; i < r.size(); ++i) v[i] = std::round(r[i] * 1000.0f) / 8.0f;
  return v;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(test_autotune_policy, AutoMode)

BOOST_AUTO_TEST_CASE(auto_is_the_default_and_the_mode_names_it) {
  {
    tt::ScopedEnv unset("TRITIUM_AUTOTUNE", "");
    BOOST_TEST((tritium::autotune_mode() == tritium::AutotuneMode::when_it_pays));
  }
  BOOST_TEST((tritium::autotune_mode() == tritium::AutotuneMode::when_it_pays));
  tt::ScopedEnv wrong("TRITIUM_AUTOTUNE", "sometimes");
  tt::check_throws([] { tritium::autotune_mode(); }, {"TRITIUM_AUTOTUNE=sometimes", "'auto'", "'tune'", "'heuristic'"},
                   "unknown mode");
}

// Ski rental: tuning's cost (benchmarks and compiles of every candidate) over what each launch is
// assumed to lose to the heuristic's choice.
BOOST_AUTO_TEST_CASE(launches_before_tuning_rent_the_heuristic_until_tuning_pays) {
  tritium::AutotuneOptions o;
  o.warmup_ms = 10, o.rep_ms = 40;
  const double cost = 4 * (10 + 40 + tritium::kCompileMsPerCandidate);
  for (double est : {0.001, 0.05, 1.0, 30.0}) {
    const int64_t n = tritium::launches_before_tuning(est, 4, o);
    BOOST_TEST(n == static_cast<int64_t>(std::ceil(cost / (tritium::kAssumedTuningGain * est))), est);
    // After n launches the heuristic has lost at least what tuning costs, after n - 1 less.
    BOOST_TEST(static_cast<double>(n) * tritium::kAssumedTuningGain * est >= cost * (1 - 1e-12));
    BOOST_TEST(static_cast<double>(n - 1) * tritium::kAssumedTuningGain * est < cost);
  }
  BOOST_TEST(tritium::launches_before_tuning(0.01, 4, o) > tritium::launches_before_tuning(0.1, 4, o));
  // No estimate: tune at once. One candidate: nothing to tune.
  BOOST_TEST(tritium::launches_before_tuning(0, 4, o) == 0);
  BOOST_TEST(tritium::launches_before_tuning(std::nan(""), 4, o) == 0);
  BOOST_TEST(tritium::launches_before_tuning(0.01, 1, o) == std::numeric_limits<int64_t>::max());
}

BOOST_AUTO_TEST_CASE(a_key_runs_the_heuristic_choice_until_tuning_pays) {
  tt::for_each_backend([&](const tt::Backend&) {
    tt::FreshCacheDir cache("autotune-policy");
    const int n = 3000;  // not a multiple of any BLOCK
    auto hx = exact_inputs(n, 11);
    Tensor x = Tensor::from_vector(hx, {n}), out = tritium::ops::full({n}, NAN, tritium::DType::f32);
    // An estimate that makes tuning pay after 3 launches.
    auto probe = options_with_estimate(1);
    const double cost = 3 * (probe.warmup_ms + probe.rep_ms + tritium::kCompileMsPerCandidate);
    const double est = cost / (tritium::kAssumedTuningGain * 3) * (1 + 1e-9);  // above the rounding
    BOOST_TEST_REQUIRE(tritium::launches_before_tuning(est, 3, probe) == 3);
    auto k = make_repeated_scale();
    auto tuner = tritium::autotune(k, kConfigs, options_with_estimate(est));
    BOOST_TEST(tuner.current(x, out, n) == nullptr);
    for (int launch = 1; launch <= 3; ++launch) {
      tuner[grid_of(n)](x, out, n);
      const tritium::TuningResult* r = tuner.current(x, out, n);
      BOOST_TEST_REQUIRE(r != nullptr);
      BOOST_TEST(r->heuristic, "launch " << launch);
      BOOST_TEST(r->tune_after_launches == 3);
      BOOST_TEST(r->benchmarked == 0);
      BOOST_TEST(r->best == 0u);
      check_reps(out, hx, 512, "launch " + std::to_string(launch) + " (the heuristic's choice)");
      out = tritium::ops::full({n}, NAN, tritium::DType::f32);
    }
    BOOST_TEST(k.num_specializations() == 1u);  // only the heuristic's choice was compiled
    tuner[grid_of(n)](x, out, n);  // the fourth: tuning pays now
    const tritium::TuningResult* t = tuner.current(x, out, n);
    BOOST_TEST_REQUIRE(t != nullptr);
    BOOST_TEST(!t->heuristic);
    BOOST_TEST(t->tune_after_launches == 0);
    BOOST_TEST(t->benchmarked == 3);
    BOOST_TEST(t->best_config().meta["REPS"] == 1, "chose " << t->best_config().str());
    check_reps(out, hx, 1, "the launch that tuned");

    // A new tuner (a new process) finds the record on the disk and uses it at its first launch.
    auto again = tritium::autotune(make_repeated_scale(), kConfigs, options_with_estimate(est));
    again[grid_of(n)](x, out, n);
    const tritium::TuningResult* d = again.current(x, out, n);
    BOOST_TEST_REQUIRE(d != nullptr);
    BOOST_TEST(!d->heuristic);
    BOOST_TEST(d->benchmarked == 0);
    for (const auto& c : d->results) BOOST_TEST(c.from_disk);
    check_reps(out, hx, 1, "tuned from the disk record");
  });
}

BOOST_AUTO_TEST_CASE(without_an_estimate_or_under_tune_a_key_is_tuned_at_once) {
  tt::for_each_backend([&](const tt::Backend&) {
    tt::FreshCacheDir cache("autotune-policy");
    const int n = 2500;
    auto hx = exact_inputs(n, 12);
    Tensor x = Tensor::from_vector(hx, {n}), out = tritium::ops::full({n}, NAN, tritium::DType::f32);
    // No estimate: triton.autotune's behaviour.
    auto plain = tritium::autotune(make_repeated_scale(), kConfigs, options_with_estimate(-1));
    plain[grid_of(n)](x, out, n);
    BOOST_TEST_REQUIRE(plain.current(x, out, n) != nullptr);
    BOOST_TEST(plain.current(x, out, n)->benchmarked == 3);
    check_reps(out, hx, 1, "no estimate");
    // A tiny estimate, but TRITIUM_AUTOTUNE=tune: tuned at the first launch too.
    {
      tt::ScopedEnv tune("TRITIUM_AUTOTUNE", "tune");
      tt::FreshCacheDir fresh("autotune-policy-tune");
      auto tuned = tritium::autotune(make_repeated_scale(), kConfigs, options_with_estimate(1e-6));
      tuned[grid_of(n)](x, out, n);
      BOOST_TEST(!tuned.current(x, out, n)->heuristic);
      check_reps(out, hx, 1, "TRITIUM_AUTOTUNE=tune");
    }
    // Under auto, tune() tunes now what a launch defers.
    tt::FreshCacheDir fresh("autotune-policy-explicit");
    auto deferred = tritium::autotune(make_repeated_scale(), kConfigs, options_with_estimate(1e-6));
    deferred[grid_of(n)](x, out, n);
    BOOST_TEST(deferred.current(x, out, n)->heuristic);
    BOOST_TEST(deferred.current(x, out, n)->tune_after_launches > 1000000);
    const auto& r = deferred.tune(grid_of(n), x, out, n);
    BOOST_TEST(!r.heuristic);
    BOOST_TEST(r.benchmarked == 3);
    deferred[grid_of(n)](x, out, n);
    check_reps(out, hx, 1, "after tune()");
  });
}

// Which products ops::matmul tunes under auto on an H100 (the estimate needs no GPU): none of
// train-mnist's MLP (784-512-512-10, batch 128 and the last batch's 96, fp32) within five epochs
// of launches, while a large bf16 product pays within a few thousand.
BOOST_AUTO_TEST_CASE(matmul_tunes_large_products_not_the_mlp) {
  const tritium::ops::GpuSpeed h100;
  tritium::AutotuneOptions o;
  o.warmup_ms = 10, o.rep_ms = 40;  // ops::matmul's tuners
  struct Product {
    int64_t m, n, k;
  };
  std::vector<Product> mlp;
  for (int64_t batch : {128, 96})
    for (auto [in, out] : {std::pair<int64_t, int64_t>{784, 512}, {512, 512}, {512, 10}}) {
      mlp.push_back({batch, out, in});  // forward: x @ W^T
      mlp.push_back({batch, in, out});  // input gradient: g @ W
      mlp.push_back({out, in, batch});  // weight gradient: g^T @ x
    }
  const int64_t five_epochs = 5 * 469;
  for (const Product& p : mlp) {
    const auto candidates = tritium::ops::matmul_gpu_candidates(p.m, p.n, p.k, tritium::DType::f32, false);
    BOOST_TEST_REQUIRE(!candidates.empty());
    const double est = tritium::ops::matmul_estimate_ms(p.m, p.n, p.k, 1, tritium::DType::f32, false, h100);
    BOOST_TEST(est > 0.005);  // at least a launch
    BOOST_TEST(est < 0.02, p.m << " x " << p.n << " x " << p.k << ": " << est << " ms");
    if (candidates.size() > 1)
      BOOST_TEST(tritium::launches_before_tuning(est, candidates.size(), o) > five_epochs,
                 p.m << " x " << p.n << " x " << p.k << " (" << candidates.size() << " candidates, " << est << " ms)");
  }
  // 8192^3 in bf16: about 1.1 PFLOP/s dense at 70 % -> ~1.6 ms (cuBLAS: ~1.6-2 ms on an H100).
  const double big = tritium::ops::matmul_estimate_ms(8192, 8192, 8192, 1, tritium::DType::bf16, false, h100);
  BOOST_TEST(big > 1.0);
  BOOST_TEST(big < 3.0);
  const auto big_candidates = tritium::ops::matmul_gpu_candidates(8192, 8192, 8192, tritium::DType::bf16, false);
  BOOST_TEST(tritium::launches_before_tuning(big, big_candidates.size(), o) < 20000);
  // The memory-bound side: a matrix-vector product is priced by its bytes (256 MB of A at ~3.35
  // TB/s: 80 us, 115 us at 70 %).
  const double mv = tritium::ops::matmul_estimate_ms(8192, 1, 8192, 1, tritium::DType::f32, false, h100);
  BOOST_TEST(mv > 0.08);
  BOOST_TEST(mv < 0.2);
  // The heuristic's choice for the MLP's forward (4 x 16 tiles at most on 132 SMs): the candidate
  // with the most programs.
  const auto fwd = tritium::ops::matmul_gpu_candidates(128, 512, 784, tritium::DType::f32, false);
  const size_t pick = tritium::ops::matmul_gpu_heuristic(fwd, {128, 512, 784}, h100.sms);
  int64_t most = 0;
  for (const Config& c : fwd) most = std::max(most, tritium::cdiv(128, c.meta["BLOCK_M"]) * tritium::cdiv(512, c.meta["BLOCK_N"]));
  BOOST_TEST(tritium::cdiv(128, fwd[pick].meta["BLOCK_M"]) * tritium::cdiv(512, fwd[pick].meta["BLOCK_N"]) == most);
}

namespace {
std::string tile_of(const Config& c) {
  return std::to_string(c.meta["BLOCK_M"]) + "x" + std::to_string(c.meta["BLOCK_N"]);
}
std::string heuristic_tile(tritium::ops::ProductGrid g, tritium::DType dtype, bool tf32) {
  const auto cands = tritium::ops::matmul_gpu_candidates(g.m, g.n, g.k, dtype, tf32);
  return tile_of(cands.at(tritium::ops::matmul_gpu_heuristic(cands, g, 132)));
}
}  // namespace

// The GPT's products (batch 64 x context 256, width 384): the batch items are programs too, so a
// Linear's [64, 256, C] product fills the SMs with 128 x 128 tiles (it took 32 x 32 tiles when only
// one batch item's tiles were counted: 2-3 x slower than tuned), and a K loop of 384-1536 stays on
// 128 x 128 (larger tiles measured 1.16-1.98 x slower there).
BOOST_AUTO_TEST_CASE(matmul_heuristic_counts_batch_and_split_programs) {
  using tritium::DType;
  for (auto dtype : {DType::bf16, DType::f32}) {
    const bool tf32 = dtype == DType::f32;
    BOOST_TEST(heuristic_tile({256, 1152, 384, 64}, dtype, tf32) == "128x128");
    BOOST_TEST(heuristic_tile({256, 384, 1536, 64}, dtype, tf32) == "128x128");
    BOOST_TEST(heuristic_tile({16384, 256, 384, 1}, dtype, tf32) == "128x128");
    // The weight gradient split three ways along K = 16384: 36 tiles x 3 chunks reach half of 132
    // SMs with the split's own 128 x 128 tile; 128 x 256 would leave 78 SMs idle.
    BOOST_TEST(heuristic_tile({384, 1536, 16384, 1, 5504}, dtype, tf32) == "128x128");
    // Without counting the chunks the same launch would look like 36 programs and take small tiles.
    BOOST_TEST(heuristic_tile({384, 1536, 5504, 1}, dtype, tf32) != "128x128");
    // A long K loop on a big square: the largest tile (measured ~1.27 x ahead at 4096^3).
    const auto big = tritium::ops::matmul_gpu_candidates(4096, 4096, 4096, dtype, tf32);
    BOOST_TEST(heuristic_tile({4096, 4096, 4096, 1}, dtype, tf32) == tile_of(big.front()));
  }
}

BOOST_AUTO_TEST_SUITE_END()
