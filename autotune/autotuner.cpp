#include "autotune/autotuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "autotune/do_bench.h"
#include "common/env.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/log.h"
#include "jit/compiled_kernel.h"
#include "jit/disk_cache.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/thread_pool.h"

namespace tritium {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Version 2: only failures that do not depend on the data are recorded (version 1 also kept
// run-time failures of one launch's data, so its records are measured again once).
constexpr std::string_view kRecordMagic = "tritium-autotune 2";

// Index of the parameter called `name`, or -1.
int param_index(const Kernel& k, std::string_view name) {
  const auto& ps = k.params();
  for (size_t i = 0; i < ps.size(); ++i)
    if (ps[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string param_names(const Kernel& k) {
  std::string s;
  for (const auto& p : k.params()) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

double arg_number(const detail::ArgValue& a) {
  switch (a.kind) {
    case detail::ArgValue::Kind::integer:
      return a.is_unsigned ? static_cast<double>(a.bits) : static_cast<double>(static_cast<int64_t>(a.bits));
    case detail::ArgValue::Kind::boolean: return a.bits ? 1 : 0;
    case detail::ArgValue::Kind::floating: {
      double d;
      std::memcpy(&d, &a.bits, 8);
      return d;
    }
    case detail::ArgValue::Kind::meta:
      return a.meta.kind == MetaValue::Kind::floating ? a.meta.f : static_cast<double>(a.meta.i);
    default: return std::nan("");
  }
}

// The device a launch runs on: the options' device, else the first Tensor's, else cpu.
runtime::Device launch_device(const LaunchArgs& args) {
  if (args.options.device) return *args.options.device;
  for (const auto& a : args.values)
    if (a.tensor) return a.tensor->device();
  return runtime::Device::cpu();
}

// What measurements on d are valid for: the device model, not its index, so the ranks of a
// data-parallel run on cuda:0..3 of one host share their tuning records instead of each
// re-measuring every config (Triton keys its tuning cache by the target, not the device index).
std::string device_model(const runtime::Device& d) {
  if (d.is_cuda()) {
    const auto& p = runtime::cuda::properties(d.index);
    return fmt::format("cuda {} (sm_{}, {} SMs)", p.name, p.compute_capability(), p.multiprocessor_count);
  }
  return fmt::format("cpu ({} threads)", runtime::ThreadPool::global().size());
}

// Totals over the process, printed at exit under TRITIUM_LOG=compile (beside the compile totals):
// how many new keys a test suite or a first run tuned and what that cost.
struct Totals {
  std::mutex mutex;
  uint64_t tunings = 0, heuristic = 0, deferred = 0, compiled = 0, benchmarked = 0;
  double tuning_ms = 0, compile_ms = 0;
};
Totals& totals() {
  static Totals t;
  return t;
}
void count_tuning(const TuningResult& r, size_t compiled) {
  static std::once_flag once;
  std::call_once(once, [] {
    (void)env();  // constructed before the handler is registered, so destroyed after it runs
    (void)totals();
    std::atexit([] {
      if (!env().log_compile) return;
      Totals& t = totals();
      std::lock_guard lock(t.mutex);
      log_line(fmt::format("autotune totals: {} new keys ({} by heuristic, {} of them until tuning pays), {} configs "
                           "compiled or loaded for them ({:.1f} s), {} benchmarked; {:.1f} s in all",
                           t.tunings, t.heuristic, t.deferred, t.compiled, t.compile_ms / 1e3, t.benchmarked,
                           t.tuning_ms / 1e3));
    });
  });
  Totals& t = totals();
  std::lock_guard lock(t.mutex);
  ++t.tunings;
  t.heuristic += r.heuristic;
  t.deferred += r.tune_after_launches > 0;
  t.compiled += compiled;
  t.benchmarked += static_cast<uint64_t>(r.benchmarked);
  t.tuning_ms += r.tuning_ms;
  t.compile_ms += r.compile_ms;
}

}  // namespace

AutotuneMode autotune_mode() {
  const std::string& v = env().autotune;
  if (v.empty() || v == "auto") return AutotuneMode::when_it_pays;
  if (v == "tune" || v == "on" || v == "1") return AutotuneMode::tune;
  if (v == "heuristic" || v == "off" || v == "0") return AutotuneMode::heuristic;
  fail("TRITIUM_AUTOTUNE={}: expected 'auto' (the default: tune a key once tuning pays), 'tune' (benchmark the "
       "candidates at a key's first launch) or 'heuristic' (also 'off': launch the tuner's heuristic choice without "
       "benchmarking)",
       v);
}

int64_t launches_before_tuning(double estimate_ms, size_t candidates, const AutotuneOptions& options) {
  constexpr int64_t never = std::numeric_limits<int64_t>::max();
  if (candidates <= 1) return never;  // nothing to choose between
  if (!(estimate_ms > 0) || !std::isfinite(estimate_ms)) return 0;  // no estimate: tune, as triton.autotune
  const double cost = static_cast<double>(candidates) * (options.warmup_ms + options.rep_ms + kCompileMsPerCandidate);
  const double launches = std::ceil(cost / (kAssumedTuningGain * estimate_ms));
  return launches >= static_cast<double>(never) ? never : static_cast<int64_t>(launches);
}

// ---- ArgView ------------------------------------------------------------------------------------

bool ArgView::has(std::string_view name) const {
  int i = param_index(*kernel_, name);
  if (i < 0) return false;
  if (static_cast<size_t>(i) < args_->values.size()) return true;
  return args_->named.find(std::string(name)) != nullptr;
}

double ArgView::number(std::string_view name) const {
  int i = param_index(*kernel_, name);
  if (i < 0) fail("kernel {}: no argument named '{}' (arguments: {})", kernel_->name(), name, param_names(*kernel_));
  if (static_cast<size_t>(i) < args_->values.size()) {
    const auto& a = args_->values[static_cast<size_t>(i)];
    if (a.kind == detail::ArgValue::Kind::pointer)
      fail("kernel {}: argument '{}' is a pointer, not a number", kernel_->name(), name);
    return arg_number(a);
  }
  if (const MetaValue* m = args_->named.find(std::string(name)))
    return m->kind == MetaValue::Kind::floating ? m->f : static_cast<double>(m->i);
  fail("kernel {}: argument '{}' was not passed", kernel_->name(), name);
}

int64_t ArgView::integer(std::string_view name) const {
  int i = param_index(*kernel_, name);
  if (i >= 0 && static_cast<size_t>(i) < args_->values.size()) {
    const auto& a = args_->values[static_cast<size_t>(i)];
    if (a.kind == detail::ArgValue::Kind::integer || a.kind == detail::ArgValue::Kind::boolean)
      return static_cast<int64_t>(a.bits);
    if (a.kind == detail::ArgValue::Kind::meta && a.meta.kind != MetaValue::Kind::floating) return a.meta.i;
  } else if (i >= 0) {
    if (const MetaValue* m = args_->named.find(std::string(name)); m && m->kind != MetaValue::Kind::floating)
      return m->i;
  }
  double d = number(name);  // errors for unknown names and pointers
  if (d != std::floor(d)) fail("kernel {}: argument '{}' is {}, not an integer", kernel_->name(), name, d);
  return static_cast<int64_t>(d);
}

const runtime::Tensor& ArgView::tensor(std::string_view name) const {
  int i = param_index(*kernel_, name);
  if (i < 0) fail("kernel {}: no argument named '{}' (arguments: {})", kernel_->name(), name, param_names(*kernel_));
  if (static_cast<size_t>(i) >= args_->values.size() || !args_->values[static_cast<size_t>(i)].tensor)
    fail("kernel {}: argument '{}' must be a tritium::Tensor here (a raw pointer has no size to zero, save or "
         "restore)",
         kernel_->name(), name);
  return *args_->values[static_cast<size_t>(i)].tensor;
}

DType ArgView::dtype(std::string_view name) const {
  int i = param_index(*kernel_, name);
  if (i < 0 || static_cast<size_t>(i) >= args_->values.size())
    fail("kernel {}: no positional argument named '{}' (arguments: {})", kernel_->name(), name, param_names(*kernel_));
  return args_->values[static_cast<size_t>(i)].dtype;
}

// ---- Config -------------------------------------------------------------------------------------

std::string Config::str() const {
  std::string s;
  for (const auto& [k, v] : meta.items()) s += fmt::format("{}={} ", k, v.str());
  return s + fmt::format("num_warps={} num_stages={}", num_warps, num_stages);
}

namespace {

void apply_heuristics(const Kernel& k, LaunchArgs& la, const std::vector<std::pair<std::string, Heuristic>>& hs) {
  for (const auto& [name, fn] : hs) {
    int i = param_index(k, name);
    if (i < 0) fail("heuristic for '{}': kernel {} has no such meta-parameter (arguments: {})", name, k.name(), param_names(k));
    if (static_cast<size_t>(i) < la.values.size())
      fail("heuristic for '{}': kernel {} got that argument by position; leave it out of the launch", name, k.name());
    MetaValue v = fn(ArgView(k, la));
    la.named.set(name, v);
  }
}

// The arguments of a launch with `c`: its meta-parameters added by name, its warps and stages.
// Config meta-parameters must be meta-parameters of the kernel (checked once, when the tuner is
// made, and for configs a prune function returns).
void check_config(const Kernel& k, const Config& c) {
  for (const auto& [name, v] : c.meta.items()) {
    int i = param_index(k, name);
    if (i < 0 || k.params()[static_cast<size_t>(i)].kind != detail::ParamKind::meta)
      fail("autotune: config {} sets '{}', which is not a meta-parameter of kernel {} (arguments: {})", c.str(), name,
           k.name(), param_names(k));
  }
}

// The arguments of a launch with `c`: its meta-parameters added by name, its warps and stages.
// `checked`: the same arguments' layout was tuned already (no meta passed by position).
LaunchArgs with_config(const Kernel& k, const LaunchArgs& args, const Config& c,
                       const std::vector<std::pair<std::string, Heuristic>>& hs, bool checked = false) {
  LaunchArgs la = args;
  for (const auto& [name, v] : c.meta.items()) {
    if (!checked && static_cast<size_t>(param_index(k, name)) < args.values.size())
      fail("autotune: kernel {} got '{}' by position, but the configs choose it; leave it out of the launch", k.name(),
           name);
    la.named.set(name, v);
  }
  la.options.num_warps = c.num_warps;
  la.options.num_stages = c.num_stages;
  apply_heuristics(k, la, hs);
  return la;
}

// One line per measured config: "<content hash> <status> <ms> <config>\t<reason>".
struct Record {
  struct Entry {
    std::string status;  // ok, early-stopped, failed
    double ms = 0;
    std::string reason;
  };
  std::map<std::string, Entry> by_hash;

  static Record parse(const std::vector<char>& bytes) {
    Record r;
    std::istringstream in(std::string(bytes.begin(), bytes.end()));
    std::string line;
    if (!std::getline(in, line) || line != kRecordMagic) return r;
    while (std::getline(in, line)) {
      std::istringstream l(line);
      std::string hash, status, ms;
      if (!(l >> hash >> status >> ms)) continue;
      Entry e;
      e.status = status;
      e.ms = ms == "nan" ? std::nan("") : std::strtod(ms.c_str(), nullptr);
      if (auto tab = line.find('\t'); tab != std::string::npos) e.reason = line.substr(tab + 1);
      r.by_hash[hash] = e;
    }
    return r;
  }
  std::string text(const std::map<std::string, std::string>& config_of) const {
    std::string s = std::string(kRecordMagic) + "\n";
    for (const auto& [hash, e] : by_hash) {
      auto c = config_of.find(hash);
      s += fmt::format("{} {} {} {}\t{}\n", hash, e.status, std::isnan(e.ms) ? std::string("nan") : fmt::format("{:.6g}", e.ms),
                       c == config_of.end() ? std::string("-") : c->second, e.reason);
    }
    return s;
  }
};

std::string first_line(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// One line on stderr naming the configs a tuning skipped and why, whatever TRITIUM_PRINT_AUTOTUNING
// says: a config that never runs should not go unnoticed.
void report_skipped(const std::string& kernel, const TuningResult& r) {
  std::string list;
  size_t skipped = 0;
  for (const ConfigResult& c : r.results) {
    if (c.ok() || c.status == "not measured") continue;
    std::string why = c.status.rfind("failed: ", 0) == 0 ? c.status.substr(8) : c.status;
    if (why.size() > 160) why = why.substr(0, 157) + "...";
    list += fmt::format("{}{} ({}{})", skipped++ ? "; " : "", c.config.str(), why, c.from_disk ? ", from disk" : "");
  }
  if (skipped)
    log_line(fmt::format("autotune: kernel {} for {}: skipped {} of {} configs: {}", kernel, r.key, skipped,
                         r.results.size(), list));
}

}  // namespace

// ---- Autotuner ------------------------------------------------------------------------------------

struct Autotuner::Impl {
  Kernel kernel;
  std::vector<Config> configs;
  AutotuneOptions options;
  std::mutex tune_mutex;  // one tuning at a time
  std::mutex map_mutex;
  std::unordered_map<uint64_t, std::unique_ptr<TuningResult>> tuned;
  // TRITIUM_AUTOTUNE=auto: launches so far of each key whose tuning is deferred, and the results
  // a tuning replaced (kept: another thread may still be launching with one).
  std::unordered_map<uint64_t, int64_t> deferred_launches;
  std::vector<std::unique_ptr<TuningResult>> replaced;

  // A launch's look at its key, under one lock: the result launches use now (null: none yet) and,
  // for a deferred key, this launch counted - `due` when it is the one at which tuning pays.
  const TuningResult* find_for_launch(uint64_t h, bool& due) {
    std::lock_guard lock(map_mutex);
    due = false;
    auto it = tuned.find(h);
    if (it == tuned.end()) return nullptr;
    const TuningResult* r = it->second.get();
    if (r->tune_after_launches > 0) due = ++deferred_launches[h] > r->tune_after_launches;
    return r;
  }

  // A key argument's meta value (positional or named), when it is one: dtype and string values
  // key by what they are (their numeric fields are zero for strings).
  static const MetaValue* key_meta(const Kernel& kernel, const LaunchArgs& args, const std::string& name) {
    int i = param_index(kernel, name);
    if (i >= 0 && static_cast<size_t>(i) < args.values.size())
      return args.values[static_cast<size_t>(i)].kind == detail::ArgValue::Kind::meta ? &args.values[static_cast<size_t>(i)].meta
                                                                                       : nullptr;
    return args.named.find(name);
  }

  // The tuning key: key argument values, every argument's dtype, the device.
  uint64_t key_hash(const LaunchArgs& args) const {
    Hasher h;
    for (const std::string& name : options.key) {
      int i = param_index(kernel, name);
      const MetaValue* m = key_meta(kernel, args, name);
      if (m && (m->kind == MetaValue::Kind::dtype || m->kind == MetaValue::Kind::string)) h.add(m->str());
      else if (static_cast<size_t>(i) < args.values.size()) h.add(args.values[static_cast<size_t>(i)].bits);
      else if (m) h.add(static_cast<uint64_t>(m->i)).add(static_cast<uint64_t>(std::bit_cast<uint64_t>(m->f)));
    }
    for (const auto& a : args.values) h.add(static_cast<uint64_t>(a.dtype));
    runtime::Device d = launch_device(args);
    h.add(static_cast<uint64_t>(d.kind) << 32 | static_cast<uint32_t>(d.index));
    // A heuristic pick is not a tuning: switching TRITIUM_AUTOTUNE in one process tunes again.
    h.add(static_cast<uint64_t>(autotune_mode()));
    Hash128 r = h.finish();
    return r.lo ^ r.hi;
  }

  // The key for reports ("..., cuda:1"); with_device false leaves the device out (the disk record).
  std::string key_text(const LaunchArgs& args, bool with_device = true) const {
    ArgView view(kernel, args);
    std::string s;
    for (const std::string& name : options.key) {
      const MetaValue* m = key_meta(kernel, args, name);
      const bool text = m && (m->kind == MetaValue::Kind::dtype || m->kind == MetaValue::Kind::string);
      s += fmt::format("{}{}={}", s.empty() ? "" : ", ", name, text ? m->str() : fmt::format("{}", view.number(name)));
    }
    std::string types;
    for (const auto& a : args.values) types += fmt::format("{}{}", types.empty() ? "" : ",", dtype_name(a.dtype));
    if (!with_device) return fmt::format("{}; {}", s, types);
    return fmt::format("{}; {}; {}", s, types, launch_device(args).str());
  }

  void validate() const {
    for (const std::string& name : options.key)
      if (param_index(kernel, name) < 0)
        fail("autotune: key '{}' is not an argument of kernel {} (arguments: {})", name, kernel.name(), param_names(kernel));
    for (const auto* list : {&options.reset_to_zero, &options.restore_value})
      for (const std::string& name : *list) {
        int i = param_index(kernel, name);
        if (i < 0 || kernel.params()[static_cast<size_t>(i)].kind != detail::ParamKind::pointer)
          fail("autotune: '{}' in reset_to_zero/restore_value is not a pointer argument of kernel {} (arguments: {})",
               name, kernel.name(), param_names(kernel));
      }
    if (configs.empty()) fail("autotune: kernel {} was given no configs", kernel.name());
    for (const Config& c : configs) check_config(kernel, c);
  }

  const TuningResult* find(uint64_t h) {
    std::lock_guard lock(map_mutex);
    auto it = tuned.find(h);
    return it == tuned.end() ? nullptr : it->second.get();
  }

  // may_defer: a launch's first look at the key (auto mode may pick the heuristic's choice for
  // now); false: tune now, replacing a deferred result.
  const TuningResult& tune(const GridSpec& grid, const LaunchArgs& args, uint64_t h, bool may_defer);
  const TuningResult& store_result(uint64_t h, std::unique_ptr<TuningResult> result);
  // in_background: the launch that follows compiles the pick in the background with its other
  // kernels (runtime/launch_queue.h); a tune() that launches nothing waits for the compile.
  void pick_heuristic(const std::vector<Config>& candidates, const LaunchArgs& args, TuningResult& result,
                      bool in_background);
  void finish(const TuningResult& result) const;
};

// TRITIUM_AUTOTUNE=heuristic: the heuristic's choice (else the perf model's cheapest, else the
// first), compiled; on a compile failure the next candidate in order. Nothing is timed, nothing
// is written to the disk record (there is no measurement to keep).
void Autotuner::Impl::pick_heuristic(const std::vector<Config>& candidates, const LaunchArgs& args,
                                     TuningResult& result, bool in_background) {
  ArgView view(kernel, args);
  const size_t n = candidates.size();
  size_t first = 0;
  if (options.prune_configs_by.heuristic) {
    first = options.prune_configs_by.heuristic(candidates, view);
    if (first >= n)
      fail("autotune: the heuristic of kernel {} chose config {} of {} for {}", kernel.name(), first, n, result.key);
  } else if (options.prune_configs_by.perf_model) {
    double best = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < n; ++i)
      if (double c = options.prune_configs_by.perf_model(candidates[i], view); c < best) best = c, first = i;
  }
  result.heuristic = true;
  result.results.resize(n);
  for (size_t i = 0; i < n; ++i) {
    result.results[i].config = candidates[i];
    result.results[i].ms = std::nan("");
    result.results[i].status = "not measured";
  }
  for (size_t t = 0; t < n; ++t) {
    const size_t i = (first + t) % n;
    ConfigResult& r = result.results[i];
    try {
      // In the background where compiles run there (runtime/launch_queue.h): a cold first step
      // compiles its products side by side with its other kernels. A failure of that compile is
      // then thrown by a later launch instead of falling back to the next candidate here.
      if (t == 0 && in_background) kernel.start_compile(with_config(kernel, args, candidates[i], options.heuristics));
      else kernel.precompile(with_config(kernel, args, candidates[i], options.heuristics));
      r.status = "heuristic";
      result.best = i;
      return;
    } catch (const Error& e) {
      r.status = "failed: " + first_line(e.what());
    }
  }
  std::string why;
  for (const auto& r : result.results) why += fmt::format("\n  {}: {}", r.config.str(), r.status);
  fail("autotune: no config of kernel {} compiles for {}:{}", kernel.name(), result.key, why);
}

// What every new key reports: skipped configs (always), the tuning (TRITIUM_PRINT_AUTOTUNING).
void Autotuner::Impl::finish(const TuningResult& result) const {
  report_skipped(kernel.name(), result);
  if (env().print_autotuning) {
    int failed = 0, early = 0, cached = 0;
    for (const auto& r : result.results) {
      failed += r.status.rfind("failed", 0) == 0;
      early += r.status == "early-stopped";
      cached += r.from_disk;
    }
    if (result.heuristic)
      log_line(fmt::format("autotuning {} for {}: heuristic {} of {} configs ({}: nothing timed, {} failed to "
                           "compile); took {:.1f} ms",
                           kernel.name(), result.key, result.best_config().str(), result.results.size(),
                           result.tune_after_launches > 0
                               ? fmt::format("tuned after {} launches, when tuning pays", result.tune_after_launches)
                               : std::string("TRITIUM_AUTOTUNE=heuristic"),
                           failed, result.tuning_ms));
    else
      log_line(fmt::format("autotuning {} for {}: best {} ({:.4f} ms) of {} configs ({} measured, {} from disk, {} "
                           "stopped early, {} failed); took {:.1f} ms (compiling {:.1f} ms)",
                           kernel.name(), result.key, result.best_config().str(), result.results[result.best].ms,
                           result.results.size(), result.benchmarked, cached, early, failed, result.tuning_ms,
                           result.compile_ms));
    if (env().print_autotuning_all)
      for (const auto& r : result.results)
        log_line(fmt::format("  {}: {:.4f} ms, {}{}", r.config.str(), r.ms, r.status, r.from_disk ? " (from disk)" : ""));
  }
}

const TuningResult& Autotuner::Impl::store_result(uint64_t h, std::unique_ptr<TuningResult> result) {
  std::lock_guard lock(map_mutex);
  auto& slot = tuned[h];
  if (slot) replaced.push_back(std::move(slot));
  if (result->tune_after_launches > 0) deferred_launches[h] = 1;  // this launch is the first
  else deferred_launches.erase(h);
  slot = std::move(result);
  return *slot;
}

const TuningResult& Autotuner::Impl::tune(const GridSpec& grid, const LaunchArgs& args, uint64_t h, bool may_defer) {
  std::lock_guard tune_lock(tune_mutex);
  // Another thread tuned it meanwhile (or, for a launch, picked the heuristic's choice for now).
  if (const TuningResult* r = find(h); r && (may_defer || r->tune_after_launches == 0)) return *r;
  auto start = Clock::now();
  auto result = std::make_unique<TuningResult>();
  result->key = key_text(args);
  ArgView view(kernel, args);
  const runtime::Device device = launch_device(args);

  // Candidates: pruned, then the perf model's top k.
  std::vector<Config> candidates = configs;
  if (options.prune_configs_by.early_config_prune) {
    candidates = options.prune_configs_by.early_config_prune(candidates, view);
    for (const Config& c : candidates) check_config(kernel, c);
    if (candidates.empty()) fail("autotune: early_config_prune left no config for kernel {} ({})", kernel.name(), result->key);
  }
  auto heuristic_pick = [&](int64_t tune_after) -> const TuningResult& {
    pick_heuristic(candidates, args, *result, /*in_background=*/may_defer);
    result->tune_after_launches = tune_after;
    result->compile_ms = result->tuning_ms = ms_since(start);
    size_t tried = 0;
    for (const ConfigResult& r : result->results) tried += r.status != "not measured";
    count_tuning(*result, tried);
    finish(*result);
    return store_result(h, std::move(result));
  };
  const AutotuneMode mode = autotune_mode();
  if (mode == AutotuneMode::heuristic) return heuristic_pick(0);
  if (options.prune_configs_by.perf_model && options.prune_configs_by.top_k > 0 &&
      static_cast<size_t>(options.prune_configs_by.top_k) < candidates.size()) {
    std::vector<std::pair<double, size_t>> est;
    for (size_t i = 0; i < candidates.size(); ++i) est.emplace_back(options.prune_configs_by.perf_model(candidates[i], view), i);
    std::stable_sort(est.begin(), est.end());
    std::vector<size_t> keep;
    for (int i = 0; i < options.prune_configs_by.top_k; ++i) keep.push_back(est[static_cast<size_t>(i)].second);
    std::sort(keep.begin(), keep.end());  // keep config order
    std::vector<Config> top;
    for (size_t i : keep) top.push_back(candidates[i]);
    candidates = std::move(top);
  }

  // Earlier measurements of the same compiled code on this device, from the disk.
  jit::DiskCache* disk = options.cache_results ? jit::DiskCache::global() : nullptr;
  Hash128 record_key = Hasher()
                           .add("autotune")
                           .add(kernel.name())
                           .add(key_text(args, /*with_device=*/false))
                           .add(device_model(device))
                           .add(jit::toolchain_id(device))
                           .finish();
  std::optional<std::vector<char>> record_bytes;
  if (disk) record_bytes = disk->load(record_key, "tune");

  // Auto mode: the heuristic's choice until tuning pays, unless the disk already knows the key.
  if (mode == AutotuneMode::when_it_pays && may_defer && options.estimate_ms && !record_bytes) {
    const int64_t after = launches_before_tuning(options.estimate_ms(view), candidates.size(), options);
    if (after > 0) return heuristic_pick(after);
  }

  const size_t n = candidates.size();
  // Which results the disk may keep: measurements, and failures of the code itself (compile,
  // load, resource limits). A run-time failure may come from this launch's data (a device
  // assertion on its values, an allocation that another allocation starved): it skips the config
  // for this tuning only, and another process measures it again.
  std::vector<bool> keep(n, true);
  std::vector<LaunchArgs> cargs(n);
  std::vector<std::string> hash(n);
  result->results.resize(n);
  for (size_t i = 0; i < n; ++i) {
    ConfigResult& r = result->results[i];
    r.config = candidates[i];
    r.ms = std::nan("");
    // A config that names a wrong parameter is the user's mistake (an error), not a failed candidate.
    cargs[i] = with_config(kernel, args, candidates[i], options.heuristics);
    try {
      hash[i] = kernel.specialization_hash(cargs[i]).hex();
    } catch (const Error& e) {  // the kernel cannot be traced with this config (e.g. a static_assert_)
      r.status = "failed: " + first_line(e.what());
    }
  }

  Record record;
  if (record_bytes) record = Record::parse(*record_bytes);
  std::vector<size_t> todo;
  for (size_t i = 0; i < n; ++i) {
    ConfigResult& r = result->results[i];
    if (!r.status.empty()) continue;
    auto it = record.by_hash.find(hash[i]);
    if (it != record.by_hash.end()) {
      r.from_disk = true;
      r.ms = it->second.ms;
      r.status = it->second.status == "failed" ? "failed: " + it->second.reason : it->second.status;
    } else {
      todo.push_back(i);
    }
  }

  // Compile the candidates in parallel; a failure is that candidate's result.
  auto compile_start = Clock::now();
  if (!todo.empty()) {
    std::vector<std::string> errors(todo.size());
    // One byte per candidate: the compiling threads set theirs at once (std::vector<bool> packs
    // them into shared words, a data race).
    std::vector<char> transient(todo.size(), 0);
    size_t workers = std::min<size_t>(todo.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t t; (t = next++) < todo.size();) {
        try {
          kernel.precompile(cargs[todo[t]]);
        } catch (const Error& e) {
          errors[t] = first_line(e.what());
        } catch (const std::exception& e) {  // not the code's fault (memory, threads): not remembered
          errors[t] = e.what();
          transient[t] = 1;
        }
      }
    };
    std::vector<std::thread> threads;
    for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    for (size_t t = 0; t < todo.size(); ++t)
      if (!errors[t].empty()) {
        result->results[todo[t]].status = "failed: " + errors[t];
        keep[todo[t]] = !transient[t];
      }
  }
  result->compile_ms = ms_since(compile_start);

  // Benchmark what compiled, stopping early on a candidate clearly slower than the best so far.
  // restore_value tensors are restored after every run; those and the reset_to_zero ones are
  // restored once more after tuning, so the launch that follows sees what the caller passed.
  std::vector<std::pair<std::string, runtime::Tensor>> saved;
  if (!todo.empty()) {
    for (const auto* list : {&options.restore_value, &options.reset_to_zero})
      for (const std::string& name : *list) saved.emplace_back(name, ops::clone(view.tensor(name)));
  }
  auto restore = [&](bool all) {
    for (size_t i = 0; i < saved.size(); ++i) {
      if (!all && i >= options.restore_value.size()) break;
      runtime::Tensor t = view.tensor(saved[i].first);
      ops::copy_(t, saved[i].second);
    }
  };
  double best_ms = std::numeric_limits<double>::infinity();
  for (const auto& r : result->results)
    if (r.status == "ok") best_ms = std::min(best_ms, r.ms);
  for (size_t i : todo) {
    ConfigResult& r = result->results[i];
    if (!r.status.empty()) continue;
    const LaunchArgs& la = cargs[i];
    ArgView cview(kernel, la);
    BenchOptions bo;
    bo.warmup_ms = options.warmup_ms;
    bo.rep_ms = options.rep_ms;
    bo.give_up_above_ms = best_ms * options.early_stop_factor;
    bo.before_each = [&] {
      restore(false);
      for (const std::string& name : options.reset_to_zero) {
        runtime::Tensor t = view.tensor(name);
        ops::fill_(t, ops::Scalar(int64_t{0}));
      }
      if (options.pre_hook) options.pre_hook(cview);
      if (r.config.pre_hook) r.config.pre_hook(cview);
    };
    try {
      BenchResult b = do_bench(
          [&] {
            kernel.launch(grid, la);
            if (options.post_hook) options.post_hook(cview);
          },
          device, bo);
      r.ms = b.median_ms;
      r.status = b.stopped_early ? "early-stopped" : "ok";
      if (!b.stopped_early) best_ms = std::min(best_ms, r.ms);
    } catch (const ResourceError& e) {  // the code cannot launch on this device, whatever the data
      r.status = "failed: " + first_line(e.what());
    } catch (const Error& e) {
      r.status = "failed: " + first_line(e.what());
      keep[i] = false;
    }
    ++result->benchmarked;
  }
  restore(true);

  // The fastest fully measured config (an early-stopped one only if nothing else ran).
  bool found = false;
  for (size_t i = 0; i < n; ++i) {
    const ConfigResult& r = result->results[i];
    if (r.status != "ok") continue;
    if (!found || r.ms < result->results[result->best].ms) result->best = i, found = true;
  }
  for (size_t i = 0; i < n && !found; ++i)
    if (result->results[i].ok()) result->best = i, found = true;
  if (!found) {
    std::string why;
    for (const auto& r : result->results) why += fmt::format("\n  {}: {}", r.config.str(), r.status);
    fail("autotune: no config of kernel {} works for {}:{}", kernel.name(), result->key, why);
  }

  if (disk && !todo.empty()) {  // new measurements (or failures) to remember
    std::map<std::string, std::string> config_of;
    for (size_t i = 0; i < n; ++i) {
      if (hash[i].empty()) continue;
      const ConfigResult& r = result->results[i];
      config_of[hash[i]] = r.config.str();
      if (r.from_disk || !keep[i]) continue;
      Record::Entry e;
      bool failed = r.status.rfind("failed", 0) == 0;
      e.status = failed ? "failed" : r.status;
      e.ms = r.ms;
      if (failed) e.reason = r.status.substr(std::strlen("failed: "));
      record.by_hash[hash[i]] = e;
    }
    std::string text = record.text(config_of);
    disk->store(record_key, "tune", std::span<const char>(text.data(), text.size()));
  }
  result->tuning_ms = ms_since(start);
  count_tuning(*result, todo.size());

  finish(*result);
  return store_result(h, std::move(result));
}

Autotuner::Autotuner(Kernel kernel, std::vector<Config> configs, AutotuneOptions options)
    : impl_(std::make_shared<Impl>()) {
  impl_->kernel = std::move(kernel);
  impl_->configs = std::move(configs);
  impl_->options = std::move(options);
  impl_->validate();
}

const TuningResult& Autotuner::tune(const GridSpec& grid, const LaunchArgs& args) {
  uint64_t h = impl_->key_hash(args);
  if (const TuningResult* r = impl_->find(h); r && r->tune_after_launches == 0) return *r;
  return impl_->tune(grid, args, h, /*may_defer=*/false);
}

const TuningResult* Autotuner::current(const LaunchArgs& args) { return impl_->find(impl_->key_hash(args)); }

void Autotuner::launch(const GridSpec& grid, const LaunchArgs& args) {
  uint64_t h = impl_->key_hash(args);
  bool due = false;
  const TuningResult* found = impl_->find_for_launch(h, due);
  if (!found) found = &impl_->tune(grid, args, h, /*may_defer=*/true);
  else if (due) found = &impl_->tune(grid, args, h, /*may_defer=*/false);  // the launch at which tuning pays
  const TuningResult& r = *found;
  const Config& c = r.best_config();
  // The key fixes the arguments' layout, which tuning checked: no validation per launch.
  LaunchArgs la = with_config(impl_->kernel, args, c, impl_->options.heuristics, /*checked=*/true);
  if (c.pre_hook) c.pre_hook(ArgView(impl_->kernel, la));
  impl_->kernel.launch(grid, la);
}

Kernel& Autotuner::kernel() { return impl_->kernel; }
const std::vector<Config>& Autotuner::configs() const { return impl_->configs; }
void Autotuner::clear_memory() {
  std::lock_guard lock(impl_->map_mutex);
  impl_->tuned.clear();
  impl_->deferred_launches.clear();
}

Autotuner autotune(Kernel kernel, std::vector<Config> configs, AutotuneOptions options) {
  return Autotuner(std::move(kernel), std::move(configs), std::move(options));
}

// ---- Heuristics -----------------------------------------------------------------------------------

Heuristics::Heuristics(Kernel kernel, std::vector<std::pair<std::string, Heuristic>> hs)
    : kernel_(std::move(kernel)), heuristics_(std::move(hs)) {
  for (const auto& [name, fn] : heuristics_) {
    int i = param_index(kernel_, name);
    if (i < 0 || kernel_.params()[static_cast<size_t>(i)].kind != detail::ParamKind::meta)
      fail("heuristics: '{}' is not a meta-parameter of kernel {} (arguments: {})", name, kernel_.name(),
           param_names(kernel_));
    if (!fn) fail("heuristics: the function for '{}' is empty", name);
  }
}

void Heuristics::launch(const GridSpec& grid, const LaunchArgs& args) {
  LaunchArgs la = args;
  apply_heuristics(kernel_, la, heuristics_);
  kernel_.launch(grid, la);
}

Heuristics heuristics(Kernel kernel, std::vector<std::pair<std::string, Heuristic>> hs) {
  return Heuristics(std::move(kernel), std::move(hs));
}

}  // namespace tritium
