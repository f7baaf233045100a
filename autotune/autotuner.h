// The autotuner, after triton.autotune and triton.heuristics.
//
//   auto matmul = tritium::autotune(matmul_kernel,
//       {tritium::Config({{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"BLOCK_K", 32}}, /*num_warps=*/4, /*num_stages=*/3),
//        tritium::Config({{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"BLOCK_K", 32}}, 4, 4)},
//       {.key = {"M", "N", "K"}});
//   matmul[grid](a, b, c, M, N, K, ...);   // the config's meta-parameters are not passed
//
// The first launch with a new key (the values of the `key` arguments, the dtypes of all
// arguments and the device) compiles every candidate in parallel, benchmarks them (do_bench:
// events and an L2 flush on the GPU, a steady clock on the CPU; a candidate clearly slower than
// the best so far stops early; one that fails to compile or run is skipped with its reason),
// keeps the fastest and launches it. Later launches with that key cost one hash lookup more than
// a plain launch. Results persist in the disk cache's directory (autotune/), per key, device and
// toolchain, one line per config keyed by the config's compiled content hash: another process
// benchmarks nothing, and adding a config measures only the new one. Failures are kept there only
// when they cannot depend on the data (compile and load failures, ResourceError at launch); a
// tuning that skips configs lists them in one line on stderr. TRITIUM_PRINT_AUTOTUNING=1 prints
// each tuning. TRITIUM_AUTOTUNE=heuristic skips the benchmarking: each new key compiles and
// launches one config, the tuner's heuristic choice. Under the default, `auto`, a tuner that can
// estimate a launch's time (AutotuneOptions::estimate_ms) launches the heuristic's choice first and
// tunes a key only once its launches have run long enough to repay the tuning (autotune_mode(),
// launches_before_tuning(); docs/autotune.md, "When tuning pays").
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dsl/kernel.h"
#include "runtime/tensor.h"

namespace tritium {

// How a tuner picks the config of a new key, from TRITIUM_AUTOTUNE: `auto` (the default: tune
// where it pays - a tuner with an estimate_ms launches the heuristic's choice and tunes the key
// once launches_before_tuning() launches have run; one without tunes at once), `tune` (compile and
// benchmark the candidates at a key's first launch, as triton.autotune) or `heuristic` ("off"
// too: compile only the heuristic's choice, time nothing - a first call costs one compile, as
// PyTorch's kernels without max-autotune). Any other value is an Error naming the accepted ones.
// Read at every new key: part of the key.
enum class AutotuneMode { when_it_pays, tune, heuristic };
AutotuneMode autotune_mode();

// Named access to launch arguments, for keys, hooks, heuristics and performance models.
class ArgView {
 public:
  ArgView(const Kernel& kernel, const LaunchArgs& args) : kernel_(&kernel), args_(&args) {}
  bool has(std::string_view name) const;
  int64_t integer(std::string_view name) const;  // an integer scalar or meta-parameter
  double number(std::string_view name) const;    // any scalar or meta-parameter
  const runtime::Tensor& tensor(std::string_view name) const;  // a Tensor argument
  DType dtype(std::string_view name) const;      // pointee of a pointer, type of a scalar
  const Kernel& kernel() const { return *kernel_; }
  const LaunchArgs& args() const { return *args_; }

 private:
  const Kernel* kernel_;
  const LaunchArgs* args_;
};

// One candidate: meta-parameter values and launch options.
struct Config {
  Meta meta;
  int num_warps = 4;
  int num_stages = 3;
  std::function<void(const ArgView&)> pre_hook;  // before every launch with this config

  Config(Meta m = {}, int warps = 4, int stages = 3) : meta(std::move(m)), num_warps(warps), num_stages(stages) {}
  std::string str() const;  // "BLOCK_M=128 BLOCK_N=64 num_warps=4 num_stages=3"
};

using Heuristic = std::function<MetaValue(const ArgView&)>;

struct PruneConfigsBy {
  // Estimated cost of a config for the arguments (any unit); with top_k > 0 only the top_k
  // cheapest configs are benchmarked.
  std::function<double(const Config&, const ArgView&)> perf_model = {};
  int top_k = 0;
  // Drops configs before anything else (e.g. those whose tiles exceed the problem).
  std::function<std::vector<Config>(const std::vector<Config>&, const ArgView&)> early_config_prune = {};
  // Under TRITIUM_AUTOTUNE=heuristic: the index (into the candidates early_config_prune left) of
  // the config to launch without benchmarking. Empty: the perf_model's cheapest, else the first
  // (config lists are written in order of preference, as Triton's). A choice that fails to
  // compile falls to the next candidate in order.
  std::function<size_t(const std::vector<Config>&, const ArgView&)> heuristic = {};
};

// Every member has a default member initializer, so designated initializers such as
// `{.key = {"n"}}` leave the others out without a -Wmissing-field-initializers warning (g++ -Wextra).
struct AutotuneOptions {
  std::vector<std::string> key = {};            // argument names whose values select a tuning entry
  PruneConfigsBy prune_configs_by = {};
  std::vector<std::string> reset_to_zero = {};  // Tensor arguments zeroed before every benchmarked run
  std::vector<std::string> restore_value = {};  // Tensor arguments restored after every benchmarked run
  std::function<void(const ArgView&)> pre_hook = {}, post_hook = {};  // around every benchmarked run
  // Meta-parameters computed from the arguments (and the config's values) at every launch.
  std::vector<std::pair<std::string, Heuristic>> heuristics = {};
  double warmup_ms = 25, rep_ms = 100;  // per candidate, as triton.testing.do_bench
  // A candidate whose fastest estimate run is this many times slower than the best so far is
  // not measured further.
  double early_stop_factor = 1.5;
  bool cache_results = true;  // persist results on disk (also needs the disk cache enabled)
  // The estimated time of one launch with the heuristic's config, in ms on the launch's device
  // (a roofline of the work is enough). Under TRITIUM_AUTOTUNE=auto it decides when a key is
  // worth tuning (launches_before_tuning); empty: every new key is tuned at its first launch.
  std::function<double(const ArgView&)> estimate_ms = {};
};

// TRITIUM_AUTOTUNE=auto: how many launches of a key run the heuristic's config before the key is
// tuned (0: at the first). Ski rental: tuning costs about `candidates` x (warmup_ms + rep_ms) of
// benchmarking plus their compiles, and is assumed to win kAssumedTuningGain of each later launch
// over the heuristic's config; the key is tuned once its launches have lost, at that rate, what the
// tuning costs - never more than twice the better of the two choices in hindsight. A key whose
// disk record exists is tuned at once (the record answers without measuring).
inline constexpr double kAssumedTuningGain = 0.2;
inline constexpr double kCompileMsPerCandidate = 250;  // NVRTC of a tiled kernel, spread over the cores
int64_t launches_before_tuning(double estimate_ms, size_t candidates, const AutotuneOptions& options);

struct ConfigResult {
  Config config;
  double ms = 0;       // median; NaN when failed
  // "ok", "early-stopped", "failed: <reason>"; under TRITIUM_AUTOTUNE=heuristic "heuristic" (the
  // config chosen, compiled, not timed) and "not measured" (the others, not compiled).
  std::string status;
  bool from_disk = false;
  bool ok() const { return status == "ok" || status == "early-stopped" || status == "heuristic"; }
};

struct TuningResult {
  std::string key;                    // "M=1024, N=1024, K=1024; f16, f16, f16, ...; cuda:0"
  std::vector<ConfigResult> results;  // the candidates after pruning, in config order
  size_t best = 0;                    // index into results
  double tuning_ms = 0, compile_ms = 0;
  int benchmarked = 0;                // candidates measured in this process
  bool heuristic = false;             // the heuristic's choice, nothing timed (heuristic or auto mode)
  // Under TRITIUM_AUTOTUNE=auto: the launches of the heuristic's choice after which the key is tuned
  // (launches_before_tuning); 0 when nothing is deferred.
  int64_t tune_after_launches = 0;
  const Config& best_config() const { return results[best].config; }
};

class Autotuner {
 public:
  Autotuner(Kernel kernel, std::vector<Config> configs, AutotuneOptions options = {});

  template <class... A> void launch(const GridSpec& grid, const A&... args) {
    launch(grid, LaunchArgs::collect(args...));
  }
  void launch(const GridSpec& grid, const LaunchArgs& args);

  struct Launcher {
    Autotuner& tuner;
    GridSpec grid;
    template <class... A> void operator()(const A&... args) { tuner.launch(grid, args...); }
  };
  Launcher operator[](GridSpec grid) { return Launcher{*this, std::move(grid)}; }

  // Tunes for these arguments (or finds the earlier result) without the final launch; under
  // TRITIUM_AUTOTUNE=auto it tunes now what launches would have deferred.
  template <class... A> const TuningResult& tune(const GridSpec& grid, const A&... args) {
    return tune(grid, LaunchArgs::collect(args...));
  }
  const TuningResult& tune(const GridSpec& grid, const LaunchArgs& args);
  // The result launches with these arguments use now, or null before the key's first launch.
  template <class... A> const TuningResult* current(const A&... args) { return current(LaunchArgs::collect(args...)); }
  const TuningResult* current(const LaunchArgs& args);

  Kernel& kernel();
  const std::vector<Config>& configs() const;
  // Forgets in-memory results (the disk keeps its own): the next launch per key looks again.
  void clear_memory();

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

Autotuner autotune(Kernel kernel, std::vector<Config> configs, AutotuneOptions options = {});

// triton.heuristics without autotuning: meta-parameters computed from the arguments.
class Heuristics {
 public:
  Heuristics(Kernel kernel, std::vector<std::pair<std::string, Heuristic>> heuristics);
  template <class... A> void launch(const GridSpec& grid, const A&... args) {
    launch(grid, LaunchArgs::collect(args...));
  }
  void launch(const GridSpec& grid, const LaunchArgs& args);
  struct Launcher {
    Heuristics& h;
    GridSpec grid;
    template <class... A> void operator()(const A&... args) { h.launch(grid, args...); }
  };
  Launcher operator[](GridSpec grid) { return Launcher{*this, std::move(grid)}; }
  Kernel& kernel() { return kernel_; }

 private:
  Kernel kernel_;
  std::vector<std::pair<std::string, Heuristic>> heuristics_;
};

Heuristics heuristics(Kernel kernel, std::vector<std::pair<std::string, Heuristic>> heuristics);

}  // namespace tritium
