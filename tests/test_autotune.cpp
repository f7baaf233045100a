// The autotuner (autotune/autotuner.h) and do_bench on every backend: the chosen config is the
// fastest measured one, results persist across tuners and processes, adding a config measures
// only that one, restore_value / reset_to_zero keep benchmarking from changing the outputs, a
// failing config is skipped with its reason (and remembered only when the failure cannot depend
// on the data), pruning, heuristics, and the errors.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_driver.h"
#include "costly_scale_kernel.h"
#include "test_support.h"

namespace tt = tritium::test;
namespace tl = tritium::tl;
namespace fs = std::filesystem;
using tritium::Config;
using tritium::Meta;
using tritium::Tensor;

namespace {

// The test binary runs with TRITIUM_AUTOTUNE=heuristic (tests/main.cpp); this suite tests the
// tuner itself, so its cases benchmark the candidates.
struct TunedAutotuning : tt::ScopedEnv {
  TunedAutotuning() : tt::ScopedEnv("TRITIUM_AUTOTUNE", "tune") {}
};

// A fresh, enabled disk cache for one test (restored afterwards).
struct FreshCache : tt::FreshCacheDir {
  FreshCache() : tt::FreshCacheDir("autotune-test") {}
};

using tt::make_costly_scale;

// out = x * 2, with a flaw chosen by MODE: 1 asserts on the data (x >= 0: a run-time failure that
// depends on the values), 2 reduces with a combine function that reads program_id(1) (only
// there, so no pass can share or hoist it), which the code generators refuse after tracing (a
// compile failure, whatever the data).
tritium::Kernel make_flawed_scale() {
  return tritium::kernel(
      "flawed_scale",
      [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int BLOCK, int MODE) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto mask = offs < n;
        auto v = tl::load(x + offs, mask, 0.0f);
        if (MODE == 1) tl::device_assert(v >= 0.0f, "x must not be negative");
        if (MODE == 2) {
          auto s = tl::reduce(v, 0, [](const tl::tensor& a, const tl::tensor& b) {
            return a + b * tl::program_id(1).to(tl::float32);
          });
          v = tl::where(s > 1e30f, 0.0f, v);  // keeps the reduction alive
        }
        tl::store(out + offs, v * 2.0f, mask);
      },
      {"x", "out", "n", "BLOCK", "MODE"});
}

tritium::AutotuneOptions quick(std::vector<std::string> key) {
  tritium::AutotuneOptions o;
  o.key = std::move(key);
  o.warmup_ms = 1;
  o.rep_ms = 5;
  return o;
}

auto grid_of(int64_t n) { return tt::costly_scale_grid(n); }
void check_scaled(const Tensor& out, const std::vector<float>& x, int reps, const std::string& what) {
  tt::check_costly_scale(out, x, reps, what);
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(test_autotune, TunedAutotuning)

BOOST_AUTO_TEST_CASE(do_bench_measures_and_gives_up) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1 << 16;
    auto k = make_costly_scale();
    auto hx = tt::random_vector<float>(n, 1);
    Tensor x = Tensor::from_vector(std::vector<float>(hx.begin(), hx.end())), out = tritium::ops::zeros({n});
    tritium::BenchOptions o;
    o.warmup_ms = 1;
    o.rep_ms = 5;
    int calls = 0, prepared = 0;
    o.before_each = [&] { ++prepared; };
    auto r = tritium::do_bench([&] { ++calls, k[{n / 1024}](x, out, n, 1024, 1); }, be.device, o);
    BOOST_TEST(r.reps >= o.min_reps);
    BOOST_TEST(r.min_ms > 0);
    BOOST_TEST(r.min_ms <= r.median_ms);
    BOOST_TEST(r.median_ms <= r.max_ms);
    BOOST_TEST(!r.stopped_early);
    BOOST_TEST(prepared == calls);  // every call, timed or not, was prepared
    o.give_up_above_ms = 0;         // anything is slower than that
    auto g = tritium::do_bench([&] { k[{n / 1024}](x, out, n, 1024, 1); }, be.device, o);
    BOOST_TEST(g.stopped_early);
    BOOST_TEST(g.reps == 5);
  });
}

// rep_ms and warmup_ms budget whole repetitions, untimed preparation (and on a GPU the L2 flush)
// included, as Triton's do_bench: a fast call behind a 2 ms preparation runs about rep_ms / 2
// times, not rep_ms / (the call's time) - thousands of flushes per config before this.
BOOST_AUTO_TEST_CASE(do_bench_budgets_count_the_preparation) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1 << 10;
    auto k = make_costly_scale();
    Tensor x = tritium::ops::ones({n}), out = tritium::ops::zeros({n});
    tritium::BenchOptions o;
    o.warmup_ms = 1;
    o.rep_ms = 40;
    o.before_each = [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
    auto start = std::chrono::steady_clock::now();
    auto r = tritium::do_bench([&] { k[{1}](x, out, n, 1024, 1); }, be.device, o);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    BOOST_TEST(r.reps >= o.min_reps);
    BOOST_TEST(r.reps <= 20, r.reps << " repetitions of a call behind a 2 ms preparation in 40 ms");
    BOOST_TEST(ms < 1000.0, "do_bench took " << ms << " ms for rep_ms = 40");
  });
}

BOOST_AUTO_TEST_CASE(picks_the_fastest_measured_config) {
  tt::for_each_backend([&](const tt::Backend& be) {
    FreshCache cache;
    const int n = 1 << 18;
    auto hx = tt::random_vector<float>(n, 2);
    std::vector<float> vx(hx.begin(), hx.end());
    Tensor x = Tensor::from_vector(vx), out = Tensor::from_vector(std::vector<float>(n, -1.0f));
    // REPS is a meta-parameter of the configs here, and every config computes x * 2 * REPS:
    // the check below uses the chosen config's REPS.
    auto tuner = tritium::autotune(make_costly_scale(),
                                   {Config({{"BLOCK", 1024}, {"REPS", 512}}), Config({{"BLOCK", 1024}, {"REPS", 1}}),
                                    Config({{"BLOCK", 256}, {"REPS", 256}}, 2)},
                                   quick({"n"}));
    const auto& r = tuner.tune(grid_of(n), x, out, n);
    BOOST_TEST_REQUIRE(r.results.size() == 3u);
    double fastest = INFINITY;
    for (const auto& c : r.results)
      if (c.status == "ok") fastest = std::min(fastest, c.ms);
    BOOST_TEST(r.results[r.best].ms == fastest);
    // 256-512x less work: a margin that launch overhead and timing noise cannot close (trips that
    // only re-read L1 cost little once the CUDA loop has no barrier between them).
    BOOST_TEST(r.best_config().meta["REPS"] == 1, "chose " << r.best_config().str());
    BOOST_TEST(r.benchmarked == 3);
    tuner[grid_of(n)](x, out, n);
    check_scaled(out, vx, 1, "launch with the best config");
    BOOST_TEST((out.device() == be.device));
  });
}

BOOST_AUTO_TEST_CASE(results_persist_and_new_configs_add_to_them) {
  tt::for_each_backend([&](const tt::Backend&) {
    FreshCache cache;
    const int n = 5000;
    Tensor x = tritium::ops::ones({n}), out = tritium::ops::zeros({n});
    std::vector<Config> two = {Config({{"BLOCK", 512}, {"REPS", 1}}), Config({{"BLOCK", 128}, {"REPS", 1}})};
    auto first = tritium::autotune(make_costly_scale(), two, quick({"n"}));
    const auto& a = first.tune(grid_of(n), x, out, n);
    BOOST_TEST(a.benchmarked == 2);
    // A new tuner (as in a new process) measures nothing and picks the same config.
    auto second = tritium::autotune(make_costly_scale(), two, quick({"n"}));
    const auto& b = second.tune(grid_of(n), x, out, n);
    BOOST_TEST(b.benchmarked == 0);
    for (const auto& c : b.results) BOOST_TEST(c.from_disk);
    BOOST_TEST(b.best_config().str() == a.best_config().str());
    // A third config: only it is measured, the other two come from the disk.
    auto three = two;
    three.push_back(Config({{"BLOCK", 2048}, {"REPS", 1}}, 8));
    auto third = tritium::autotune(make_costly_scale(), three, quick({"n"}));
    const auto& c = third.tune(grid_of(n), x, out, n);
    BOOST_TEST(c.benchmarked == 1);
    BOOST_TEST(c.results[0].from_disk);
    BOOST_TEST(c.results[1].from_disk);
    BOOST_TEST(!c.results[2].from_disk);
    // Another key value is another entry.
    const auto& d = third.tune(grid_of(n - 904), x, out, n - 904);
    BOOST_TEST(d.benchmarked == 3);
    // The same in a child process: nothing benchmarked there.
    std::string cmd = "/proc/" + std::to_string(getpid()) +
                      "/exe --run_test=test_autotune/child_tunes_from_disk --log_level=nothing -- " +
                      tritium::default_device().str() + " from-disk > /dev/null 2>&1";
    int rc = std::system(cmd.c_str());
    BOOST_TEST((WIFEXITED(rc) && WEXITSTATUS(rc) == 0), "child exited with " << rc);
  });
}

// The ranks of a data-parallel run tune on cuda:0, cuda:1, ... of one host: a device of the same
// model reuses the records another one wrote (the disk record is keyed by the model, not the
// index), so rank 3 does not re-measure every config. Needs two CUDA devices of one model.
BOOST_AUTO_TEST_CASE(devices_of_one_model_share_tuning_records) {
  namespace cuda = tritium::runtime::cuda;
  if (!cuda::available() || cuda::device_count() < 2 || cuda::properties(0).name != cuda::properties(1).name) {
    BOOST_TEST_MESSAGE("skipped: needs two CUDA devices of one model");
    return;
  }
  FreshCache cache;
  const int n = 5000;
  std::vector<float> vx(n);
  for (int i = 0; i < n; ++i) vx[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i % 97) - 3.0f;
  std::vector<Config> two = {Config({{"BLOCK", 512}, {"REPS", 1}}), Config({{"BLOCK", 128}, {"REPS", 1}})};
  auto tuner = tritium::autotune(make_costly_scale(), two, quick({"n"}));
  for (int dev = 0; dev < 2; ++dev) {
    const auto d = tritium::Device::cuda(dev);
    Tensor x = Tensor::from_vector(vx).to(d), out = tritium::ops::full({n}, -1.0f, tritium::DType::f32, d);
    const auto& r = tuner.tune(grid_of(n), x, out, n);
    BOOST_TEST(r.benchmarked == (dev == 0 ? 2 : 0), "cuda:" << dev << " measured " << r.benchmarked);
    if (dev == 1)
      for (const auto& c : r.results) BOOST_TEST(c.from_disk);
    tuner[grid_of(n)](x, out, n);
    check_scaled(out, vx, 1, "the tuned launch on cuda:" + std::to_string(dev));
  }
}

// Run by results_persist_and_new_configs_add_to_them in a child process with "-- <device>
// from-disk": tunes the same kernel and key (TRITIUM_CACHE_DIR inherited) and expects only disk
// hits. Run on its own (a whole-suite run enables it), it tunes from scratch on cpu (or cuda).
BOOST_AUTO_TEST_CASE(child_tunes_from_disk, *boost::unit_test::disabled()) {
  auto& suite = boost::unit_test::framework::master_test_suite();
  std::vector<std::string> extra(suite.argv + 1, suite.argv + suite.argc);
  bool from_disk = !extra.empty() && extra.back() == "from-disk";
  // On its own: the CPU, or the GPU in a build without the CPU backend.
  tritium::Device own_device = tritium::runtime::device_available(tritium::Device::cpu()) ? tritium::Device::cpu()
                                                                                          : tritium::Device::cuda();
  tritium::DefaultDeviceGuard on(from_disk && extra.size() >= 2 ? tritium::Device::parse(extra[extra.size() - 2])
                                                               : own_device);
  std::optional<FreshCache> own;
  if (!from_disk) own.emplace();
  const int n = 5000;
  Tensor x = tritium::ops::ones({n}), out = tritium::ops::zeros({n});
  auto tuner = tritium::autotune(make_costly_scale(),
                                 {Config({{"BLOCK", 512}, {"REPS", 1}}), Config({{"BLOCK", 128}, {"REPS", 1}}),
                                  Config({{"BLOCK", 2048}, {"REPS", 1}}, 8)},
                                 quick({"n"}));
  const auto& r = tuner.tune(grid_of(n), x, out, n);
  BOOST_TEST_REQUIRE(r.benchmarked == (from_disk ? 0 : 3));
  for (const auto& c : r.results) BOOST_TEST_REQUIRE(c.from_disk == from_disk);
  tuner[grid_of(n)](x, out, n);
  check_scaled(out, std::vector<float>(n, 1.0f), 1, "child launch");
}

BOOST_AUTO_TEST_CASE(restore_value_and_reset_to_zero) {
  tt::for_each_backend([&](const tt::Backend&) {
    FreshCache cache;
    const int n = 3000;
    // In place: x += 1. Benchmarking runs it many times; restore_value undoes every run.
    auto inc = tritium::kernel(
        "increment",
        [](tl::ptr<float> x, tl::i32 n, int BLOCK) {
          auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
          tl::store(x + offs, tl::load(x + offs, offs < n) + 1.0f, offs < n);
        },
        {"x", "n", "BLOCK"});
    auto hx = tt::random_vector<float>(n, 3);
    std::vector<float> vx(hx.begin(), hx.end());
    Tensor x = Tensor::from_vector(vx);
    auto o = quick({"n"});
    o.restore_value = {"x"};
    auto tuner = tritium::autotune(inc, {Config({{"BLOCK", 256}}), Config({{"BLOCK", 1024}})}, o);
    tuner.tune(grid_of(n), x, n);
    BOOST_TEST(x.to_vector<float>() == vx);  // unchanged by tuning
    tuner[grid_of(n)](x, n);
    auto once = x.to_vector<float>();
    for (size_t i = 0; i < vx.size(); ++i)
      if (once[i] != vx[i] + 1.0f) {
        BOOST_ERROR("restore_value: element " << i << " = " << once[i] << ", expected " << vx[i] + 1.0f);
        break;
      }

    // Accumulating: sum[0] += x over the grid. reset_to_zero makes each run start from 0, and the
    // launch after tuning sees what the caller passed (zeros).
    auto sum = tritium::kernel(
        "accumulate",
        [](tl::ptr<float> x, tl::ptr<float> total, tl::i32 n, int BLOCK) {
          auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
          tl::atomic_add(total, tl::sum(tl::load(x + offs, offs < n, 0.0f), 0));
        },
        {"x", "total", "n", "BLOCK"});
    Tensor ones = tritium::ops::ones({n}), total = tritium::ops::zeros({1});
    auto o2 = quick({"n"});
    o2.reset_to_zero = {"total"};
    auto acc = tritium::autotune(sum, {Config({{"BLOCK", 128}}), Config({{"BLOCK", 512}})}, o2);
    acc[grid_of(n)](ones, total, n);
    BOOST_TEST(total.to_vector<float>()[0] == static_cast<float>(n));
  });
}

BOOST_AUTO_TEST_CASE(failing_configs_are_skipped_with_their_reason) {
  tt::for_each_backend([&](const tt::Backend&) {
    FreshCache cache;
    const int n = 4096;
    Tensor x = tritium::ops::ones({n}), out = tritium::ops::zeros({n});
    // BLOCK = 1000 is not a power of two: tl::arange refuses it while tracing.
    auto tuner = tritium::autotune(make_costly_scale(),
                                   {Config({{"BLOCK", 1000}, {"REPS", 1}}), Config({{"BLOCK", 512}, {"REPS", 1}})},
                                   quick({"n"}));
    const auto& r = tuner.tune(grid_of(n), x, out, n);
    BOOST_TEST(r.results[0].status.rfind("failed: ", 0) == 0u, r.results[0].status);
    BOOST_TEST(r.results[0].status.find("power of two") != std::string::npos, r.results[0].status);
    BOOST_TEST(r.best == 1u);
    tuner[grid_of(n)](x, out, n);
    check_scaled(out, std::vector<float>(n, 1.0f), 1, "after a failed config");
    // The failure is remembered on disk too: a new tuner does not retry it.
    auto again = tritium::autotune(make_costly_scale(),
                                   {Config({{"BLOCK", 1000}, {"REPS", 1}}), Config({{"BLOCK", 512}, {"REPS", 1}})},
                                   quick({"n"}));
    const auto& r2 = again.tune(grid_of(n), x, out, n);
    BOOST_TEST(r2.benchmarked == 0);
    // When every config fails, the error lists each one's reason.
    auto none = tritium::autotune(make_costly_scale(), {Config({{"BLOCK", 1000}, {"REPS", 1}}), Config({{"BLOCK", 3}, {"REPS", 1}})},
                                  quick({"n"}));
    tt::check_throws([&] { none[grid_of(n)](x, out, n); },
                     {"no config of kernel costly_scale works", "BLOCK=1000", "BLOCK=3", "power of two"}, "all fail");
  });
}

BOOST_AUTO_TEST_CASE(only_data_independent_failures_are_remembered) {
  tt::DebugModeScope debug;  // MODE 1's device_assert is compiled in only in debug mode
  tt::for_each_backend([&](const tt::Backend&) {
    FreshCache cache;
    const int n = 3000;
    std::vector<Config> configs = {Config({{"BLOCK", 256}, {"MODE", 0}}), Config({{"BLOCK", 256}, {"MODE", 1}}),
                                   Config({{"BLOCK", 256}, {"MODE", 2}})};
    // Negative data: MODE 1's assertion fails at run time, MODE 2 never compiles. Both are
    // skipped, and the one line on stderr (printed without TRITIUM_PRINT_AUTOTUNING) says so
    // (TRITIUM_LOG off too: its compile lines would be counted with it).
    tt::ScopedEnv quiet("TRITIUM_PRINT_AUTOTUNING", nullptr), no_log("TRITIUM_LOG", nullptr);
    Tensor bad = Tensor::from_vector(std::vector<float>(n, -1.0f)), out = tritium::ops::zeros({n});
    auto first = tritium::autotune(make_flawed_scale(), configs, quick({"n"}));
    std::string text = tt::capture_fd(2, [&] { first[grid_of(n)](bad, out, n); });
    BOOST_TEST(first.tune(grid_of(n), bad, out, n).best == 0u);
    BOOST_TEST(text.find("autotune: kernel flawed_scale for n=3000") != std::string::npos, text);
    BOOST_TEST(text.find("skipped 2 of 3 configs: BLOCK=256 MODE=1") != std::string::npos, text);
    BOOST_TEST(text.find("x must not be negative") != std::string::npos, text);
    BOOST_TEST(text.find("; BLOCK=256 MODE=2") != std::string::npos, text);
    BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 1, text);  // one line
    check_scaled(out, std::vector<float>(n, -1.0f), 1, "launch with the working config");
    // Another tuner (as another process) on good data: the compile failure comes from the disk,
    // the run-time failure is measured again and now works.
    Tensor good = tritium::ops::ones({n});
    auto second = tritium::autotune(make_flawed_scale(), configs, quick({"n"}));
    const auto& r = second.tune(grid_of(n), good, out, n);
    BOOST_TEST_REQUIRE(r.results.size() == 3u);
    BOOST_TEST(r.results[0].from_disk);
    BOOST_TEST(!r.results[1].from_disk, "a failure caused by one launch's data was stored");
    BOOST_TEST(r.results[1].ok(), r.results[1].status);
    BOOST_TEST(r.results[2].from_disk, "a compile failure was not stored");
    BOOST_TEST(r.results[2].status.rfind("failed: ", 0) == 0u, r.results[2].status);
    BOOST_TEST(r.benchmarked == 1);
  });
}

// How many times the kernel body of transient_compile_failures_are_not_remembered was traced, per
// MODE (tuner threads trace at once).
std::array<std::atomic<int>, 8> g_traces_by_mode{};

// A candidate whose compile fails with an exception that is not a tritium::Error (memory or
// thread exhaustion; here the kernel body throws std::runtime_error when traced the second time,
// which is the compile: the first trace only hashes the specialisation) is skipped but not
// remembered: another tuner compiles it again. Several such candidates compile at once on the
// tuner's threads, each marking its own result: while the marks were bits of one
// std::vector<bool>, two threads marking at once raced on the same word (a data race for
// ThreadSanitizer, a lost mark otherwise).
BOOST_AUTO_TEST_CASE(transient_compile_failures_are_not_remembered) {
  auto make = [] {
    return tritium::kernel(
        "sometimes_throws",
        [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int BLOCK, int MODE) {
          if (MODE > 0 && ++g_traces_by_mode[size_t(MODE)] == 2)
            throw std::runtime_error("no resources for MODE " + std::to_string(MODE));
          auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
          auto mask = offs < n;
          // The factor makes each MODE's code differ (equal code would share one measurement).
          tl::store(out + offs, tl::load(x + offs, mask) * float(2 + MODE), mask);
        },
        {"x", "out", "n", "BLOCK", "MODE"});
  };
  tt::for_each_backend([&](const tt::Backend&) {
    FreshCache cache;
    for (auto& t : g_traces_by_mode) t = 0;
    const int n = 1000;
    std::vector<Config> configs;
    for (int mode = 0; mode < 8; ++mode) configs.push_back(Config({{"BLOCK", 128}, {"MODE", mode}}));
    std::vector<float> xs = tt::random_vector<float>(n, 5);
    Tensor x = Tensor::from_vector(xs), out = Tensor::from_vector(std::vector<float>(n, NAN));
    auto first = tritium::autotune(make(), configs, quick({"n"}));
    const auto& r = first.tune(grid_of(n), x, out, n);
    BOOST_TEST(r.best == 0u);
    for (int mode = 1; mode < 8; ++mode)
      BOOST_TEST(r.results[size_t(mode)].status == "failed: no resources for MODE " + std::to_string(mode));
    first[grid_of(n)](x, out, n);
    check_scaled(out, xs, 1, "launch with the config that compiles");
    // Another tuner compiles the seven again (their bodies no longer throw) and measures them.
    auto second = tritium::autotune(make(), configs, quick({"n"}));
    const auto& r2 = second.tune(grid_of(n), x, out, n);
    BOOST_TEST(r2.results[0].from_disk);
    for (int mode = 1; mode < 8; ++mode) {
      BOOST_TEST(!r2.results[size_t(mode)].from_disk, "a transient failure was stored (MODE " << mode << ")");
      BOOST_TEST(r2.results[size_t(mode)].ok(), r2.results[size_t(mode)].status);
    }
  });
}

BOOST_AUTO_TEST_CASE(pruning_and_heuristics) {
  tt::for_each_backend([&](const tt::Backend&) {
    FreshCache cache;
    const int n = 2000;
    Tensor x = tritium::ops::ones({n}), out = tritium::ops::zeros({n});
    std::vector<Config> configs = {Config({{"BLOCK", 128}}), Config({{"BLOCK", 256}}), Config({{"BLOCK", 512}}),
                                   Config({{"BLOCK", 4096}})};
    auto o = quick({"n"});
    // Heuristic: REPS from n (here 1); early prune: no block larger than n rounded up.
    o.heuristics = {{"REPS", [](const tritium::ArgView& a) { return tritium::MetaValue(a.integer("n") > 0 ? 1 : 2); }}};
    o.prune_configs_by.early_config_prune = [](const std::vector<Config>& cs, const tritium::ArgView& a) {
      std::vector<Config> keep;
      for (const auto& c : cs)
        if (c.meta["BLOCK"] <= tritium::next_power_of_2(a.integer("n"))) keep.push_back(c);
      return keep;
    };
    o.prune_configs_by.perf_model = [](const Config& c, const tritium::ArgView&) { return -double(c.meta["BLOCK"]); };
    o.prune_configs_by.top_k = 2;
    auto tuner = tritium::autotune(make_costly_scale(), configs, o);
    const auto& r = tuner.tune(grid_of(n), x, out, n);
    BOOST_TEST_REQUIRE(r.results.size() == 2u);  // 4096 pruned, then the two largest blocks kept
    BOOST_TEST(r.results[0].config.meta["BLOCK"] == 256);
    BOOST_TEST(r.results[1].config.meta["BLOCK"] == 512);
    tuner[grid_of(n)](x, out, n);
    check_scaled(out, std::vector<float>(n, 1.0f), 1, "with a REPS heuristic");

    // triton.heuristics on its own.
    auto h = tritium::heuristics(make_costly_scale(),
                                 {{"BLOCK", [](const tritium::ArgView& a) { return tritium::MetaValue(tritium::next_power_of_2(a.integer("n"))); }},
                                  {"REPS", [](const tritium::ArgView&) { return tritium::MetaValue(3); }}});
    Tensor out2 = tritium::ops::zeros({n});
    h[1](x, out2, n);
    check_scaled(out2, std::vector<float>(n, 1.0f), 3, "heuristics");
  });
}

// TRITIUM_AUTOTUNE=heuristic: a new key compiles one config - the options' heuristic choice, else
// the perf model's cheapest, else the first; the next in order when it fails to compile - and
// times nothing; the disk record is not written; switching the mode tunes the key again.
BOOST_AUTO_TEST_CASE(heuristic_mode_compiles_one_config_and_times_none) {
  tt::for_each_backend([&](const tt::Backend&) {
    FreshCache cache;
    tt::ScopedEnv mode("TRITIUM_AUTOTUNE", "heuristic");
    BOOST_TEST((tritium::autotune_mode() == tritium::AutotuneMode::heuristic));
    const int n = 3000;
    auto hx = tt::random_vector<float>(n, 5);
    Tensor x = Tensor::from_vector(hx, {n}), out = tritium::ops::full({n}, NAN, tritium::DType::f32);
    // REPS = 3 everywhere: the values say which config ran only through the count of compiles.
    const std::vector<Config> configs = {Config({{"BLOCK", 128}, {"REPS", 3}}), Config({{"BLOCK", 256}, {"REPS", 3}}),
                                         Config({{"BLOCK", 1000}, {"REPS", 3}}), Config({{"BLOCK", 512}, {"REPS", 3}})};
    auto o = quick({"n"});
    o.prune_configs_by.heuristic = [](const std::vector<Config>&, const tritium::ArgView&) { return size_t{1}; };
    auto k = make_costly_scale();
    auto tuner = tritium::autotune(k, configs, o);
    const auto& r = tuner.tune(grid_of(n), x, out, n);
    BOOST_TEST(r.heuristic);
    BOOST_TEST(r.benchmarked == 0);
    BOOST_TEST(r.best == 1u);
    BOOST_TEST(r.results[1].status == "heuristic");
    for (size_t i : {size_t{0}, size_t{2}, size_t{3}}) BOOST_TEST(r.results[i].status == "not measured", i << ": " << r.results[i].status);
    BOOST_TEST(k.num_specializations() == 1u);  // the others were not even compiled
    tuner[grid_of(n)](x, out, n);
    check_scaled(out, hx, 3, "heuristic choice");
    size_t tune_files = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(cache.dir)) tune_files += e.path().extension() == ".tune";
    BOOST_TEST(tune_files == 0u);  // nothing was measured, nothing is remembered

    // A choice that fails to compile (BLOCK = 1000) falls to the next config in order, with the
    // one line on stderr that names the skipped config.
    auto o2 = quick({"n"});
    o2.prune_configs_by.heuristic = [](const std::vector<Config>&, const tritium::ArgView&) { return size_t{2}; };
    auto k2 = make_costly_scale();
    auto falls = tritium::autotune(k2, configs, o2);
    std::string text = tt::capture_fd(2, [&] { falls.tune(grid_of(n), x, out, n); });
    const auto& r2 = falls.tune(grid_of(n), x, out, n);
    BOOST_TEST(r2.best == 3u);
    BOOST_TEST(r2.results[2].status.find("power of two") != std::string::npos, r2.results[2].status);
    BOOST_TEST(text.find("skipped 1 of 4 configs: BLOCK=1000") != std::string::npos, text);

    // No heuristic: the perf model's cheapest; neither: the first.
    auto o3 = quick({"n"});
    o3.prune_configs_by.perf_model = [](const Config& c, const tritium::ArgView&) {
      return std::abs(double(c.meta["BLOCK"]) - 256.0);
    };
    BOOST_TEST(tritium::autotune(make_costly_scale(), configs, o3).tune(grid_of(n), x, out, n).best == 1u);
    BOOST_TEST(tritium::autotune(make_costly_scale(), configs, quick({"n"})).tune(grid_of(n), x, out, n).best == 0u);

    // A heuristic index past the candidates is an error naming the kernel.
    auto o4 = quick({"n"});
    o4.prune_configs_by.heuristic = [](const std::vector<Config>& cs, const tritium::ArgView&) { return cs.size(); };
    auto bad = tritium::autotune(make_costly_scale(), configs, o4);
    tt::check_throws([&] { bad.tune(grid_of(n), x, out, n); }, {"heuristic of kernel costly_scale chose config 4 of 4"},
                     "index past the end");

    // Back to tuning: the same tuner measures the key (the mode is part of the key).
    {
      tt::ScopedEnv tune("TRITIUM_AUTOTUNE", "tune");
      const auto& t = tuner.tune(grid_of(n), x, out, n);
      BOOST_TEST(!t.heuristic);
      BOOST_TEST(t.benchmarked == 3);  // BLOCK = 1000 fails to trace: not benchmarked
    }
    // An unknown value is an error that names the accepted ones.
    tt::ScopedEnv wrong("TRITIUM_AUTOTUNE", "fastest");
    tt::check_throws([&] { tuner.tune(grid_of(n + 1), x, out, n + 1); }, {"TRITIUM_AUTOTUNE=fastest", "'tune'", "'heuristic'"},
                     "unknown mode");
  });
}

BOOST_AUTO_TEST_CASE(print_autotuning) {
  tt::for_each_backend([&](const tt::Backend&) {
    FreshCache cache;
    tt::ScopedEnv print("TRITIUM_PRINT_AUTOTUNING", "1");
    const int n = 1000;
    Tensor x = tritium::ops::ones({n}), out = tritium::ops::zeros({n});
    auto tuner = tritium::autotune(make_costly_scale(), {Config({{"BLOCK", 128}, {"REPS", 1}})}, quick({"n"}));
    std::string text = tt::capture_fd(2, [&] { tuner[grid_of(n)](x, out, n); });
    BOOST_TEST(text.find("autotuning costly_scale for n=1000") != std::string::npos, text);
    BOOST_TEST(text.find("best BLOCK=128 REPS=1 num_warps=4 num_stages=3") != std::string::npos, text);
    BOOST_TEST(text.find("\n  BLOCK=") == std::string::npos, text);  // one line per tuning
    // "all": also one line per config, with its time and status.
    tt::ScopedEnv all("TRITIUM_PRINT_AUTOTUNING", "all");
    auto two = tritium::autotune(make_costly_scale(), {Config({{"BLOCK", 128}, {"REPS", 1}}), Config({{"BLOCK", 256}, {"REPS", 1}})},
                                 quick({"n"}));
    text = tt::capture_fd(2, [&] { two[grid_of(n)](x, out, n); });
    BOOST_TEST(text.find("autotuning costly_scale for n=1000") != std::string::npos, text);
    for (const char* c : {"  BLOCK=128 REPS=1 num_warps=4 num_stages=3: ", "  BLOCK=256 REPS=1 num_warps=4 num_stages=3: "})
      BOOST_TEST(text.find(c) != std::string::npos, c << " in " << text);
    BOOST_TEST(text.find(" ms, ok") != std::string::npos, text);
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    FreshCache cache;
    const int n = 1000;
    Tensor x = tritium::ops::ones({n}), out = tritium::ops::zeros({n});
    tt::check_throws([&] { tritium::autotune(make_costly_scale(), {Config({{"BLOCK", 128}})}, quick({"m"})); },
                     {"key 'm' is not an argument of kernel costly_scale", "x, out, n, BLOCK, REPS"}, "bad key");
    tt::check_throws([&] { tritium::autotune(make_costly_scale(), {}, quick({"n"})); }, {"no configs"}, "no configs");
    auto o = quick({"n"});
    o.reset_to_zero = {"n"};
    tt::check_throws([&] { tritium::autotune(make_costly_scale(), {Config({{"BLOCK", 128}})}, o); },
                     {"'n'", "not a pointer argument"}, "reset_to_zero of a scalar");
    tt::check_throws([&] { tritium::autotune(make_costly_scale(), {Config({{"BLOK", 128}, {"REPS", 1}})}, quick({"n"})); },
                     {"sets 'BLOK'", "not a meta-parameter"}, "unknown meta");
    auto positional = tritium::autotune(make_costly_scale(), {Config({{"BLOCK", 128}, {"REPS", 1}})}, quick({"n"}));
    tt::check_throws([&] { positional[grid_of(n)](x, out, n, 128); }, {"got 'BLOCK' by position"}, "positional meta");
    // restore_value needs a Tensor (a raw pointer has no size).
    auto o2 = quick({"n"});
    o2.restore_value = {"out"};
    auto raw = tritium::autotune(make_costly_scale(), {Config({{"BLOCK", 128}, {"REPS", 1}})}, o2);
    tt::DeviceArray<float> dx(tritium::default_device(), tt::host_vector<float>(n, 1.0f));
    tt::DeviceArray<float> dout(tritium::default_device(), tt::host_vector<float>(n, 0.0f));
    tt::check_throws([&] { raw[grid_of(n)](dx.ptr(), dout.ptr(), n, tritium::Options{.device = tritium::default_device()}); },
                     {"'out' must be a tritium::Tensor"}, "raw pointer restore");
  });
}

BOOST_AUTO_TEST_SUITE_END()
