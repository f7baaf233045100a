// `tritium-bench --ops`: times every entry of the op table (bench/ops_bench_table.cpp) through
// the op registry's generic dispatch (nn::call, as nn::functional calls it), forward and, for a
// differentiable op, forward + backward through autograd; prints time and effective GB/s and
// lists the registry's ops that have no entry. --json writes each case with what it ran, for
// bench/compare_ops.py to run the same calls in PyTorch.
//
// Timing: tritium::do_bench (the first call, which compiles, is not timed; warm-up, then the
// median of the repetitions; on CUDA two events around each call and the L2 flushed before it),
// or with --clock cpu the same procedure timed by the process's CPU clock.
// Effective bytes: every input, tensor attribute and output once; forward + backward adds the
// output gradient and each input gradient once (a lower bound of the traffic, the same model for
// both sides of the comparison).
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <tritium/tritium.h>

#include "autotune/do_bench.h"
#include "bench/ops_bench.h"
#include "nn/autograd.h"
#include "nn/dispatch.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/thread_pool.h"
#include "tools/cli.h"

// Results and specs name only the fields they set (designated initializers); GCC 12 warns about
// the rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tritium::bench {
namespace {

const char* kOpsUsage =
    "usage: tritium-bench --ops [--device cpu|cuda|cuda:N] [--filter REGEX] [--json FILE]\n"
    "                           [--elements N] [--dtypes f32,bf16] [--modes fwd,fwd+bwd] [--quick] [--list]\n"
    "                           [--clock wall|cpu]\n"
    "Times each op of the op table through the registry at about N elements (default 2^24; sorting\n"
    "ops at N/16), forward and forward+backward, median of repeats. --filter selects cases whose\n"
    "'op variant' matches REGEX (std::regex_search); --list prints the cases and the registry's ops\n"
    "without an entry, and times nothing. --quick measures for 20 ms instead of 100 per case.\n"
    "--clock cpu (CPU only) times each call by the process's CPU time instead of the wall clock: with\n"
    "one thread, the work done, whatever else the machine runs (on a shared machine wall times swing).\n"
    "The CPU thread count is TRITIUM_NUM_THREADS (default: the CPUs this process may use).\n";

const char* fill_name(Fill f) {
  switch (f) {
    case Fill::uniform: return "uniform";
    case Fill::positive: return "positive";
    case Fill::unit: return "unit";
    case Fill::above_one: return "above_one";
    case Fill::index: return "index";
    case Fill::mask: return "mask";
  }
  return "?";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", c);
    else out += c;
  }
  return out + "\"";
}

template <class T>
std::string json_list(const std::vector<T>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + fmt::format("{}", v[i]);
  return out + "]";
}

// An attribute as JSON; "" for those that are not data (generators, states, tensor lists).
std::string attr_json(const ops::AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) return fmt::format("{:.17g}", x);
        else if constexpr (std::is_same_v<T, ops::Scalar>)
          return std::visit(
              [](const auto& s) -> std::string {
                if constexpr (std::is_same_v<std::decay_t<decltype(s)>, bool>) return s ? "true" : "false";
                else if constexpr (std::is_same_v<std::decay_t<decltype(s)>, double>) return fmt::format("{:.17g}", s);
                else return std::to_string(s);
              },
              x.value);
        else if constexpr (std::is_same_v<T, std::vector<int>> || std::is_same_v<T, Shape>) return json_list(x);
        else if constexpr (std::is_same_v<T, std::optional<double>>) return x ? fmt::format("{:.17g}", *x) : "null";
        else if constexpr (std::is_same_v<T, std::string>) return json_string(x);
        else return "";
      },
      v);
}

std::string spec_json(const InputSpec& s) {
  return fmt::format(
      "{{\"shape\": {}, \"dtype\": \"{}\", \"fill\": \"{}\", \"high\": {}, \"grad\": {}, \"channels_last\": {}}}",
      json_list(s.shape), dtype_name(s.dtype), fill_name(s.fill), s.high, s.grad ? "true" : "false",
      s.channels_last ? "true" : "false");
}

// Random values drawn as the spec says, on `device`.
Tensor make_input(const InputSpec& s, Device device, ops::Generator& gen) {
  switch (s.fill) {
    case Fill::index: return ops::randint(0, s.high, s.shape, gen, s.dtype, device);
    case Fill::mask: return ops::lt(ops::rand(s.shape, gen, DType::f32, device), ops::Scalar(0.5));
    case Fill::positive: return ops::to_dtype(ops::add(ops::rand(s.shape, gen, DType::f32, device), ops::Scalar(0.5)), s.dtype);
    case Fill::unit:
      return ops::to_dtype(ops::sub(ops::mul(ops::rand(s.shape, gen, DType::f32, device), ops::Scalar(1.8)), ops::Scalar(0.9)), s.dtype);
    case Fill::above_one: return ops::to_dtype(ops::add(ops::rand(s.shape, gen, DType::f32, device), ops::Scalar(1.5)), s.dtype);
    case Fill::uniform: break;
  }
  return ops::to_dtype(ops::sub(ops::mul(ops::rand(s.shape, gen, DType::f32, device), ops::Scalar(2.0)), ops::Scalar(1.0)), s.dtype);
}

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

// do_bench's procedure (autotune/do_bench.cpp: an untimed first call, five to estimate, warm-up,
// repetitions, median and minimum) timed by the process's CPU clock.
BenchResult bench_cpu_clock(const std::function<void()>& fn, const BenchOptions& o) {
  auto timed = [&](int n) {
    std::vector<double> times;
    for (int i = 0; i < n; ++i) {
      if (o.before_each) o.before_each();
      double t0 = process_cpu_ms();
      fn();
      times.push_back(process_cpu_ms() - t0);
    }
    return times;
  };
  timed(1);
  auto estimate = timed(5);
  double mean = std::max(1e-6, std::accumulate(estimate.begin(), estimate.end(), 0.0) / 5);
  timed(std::min(o.max_reps, std::max(1, static_cast<int>(o.warmup_ms / mean))));
  auto times = timed(std::clamp(static_cast<int>(o.rep_ms / mean), std::max(1, o.min_reps), o.max_reps));
  std::sort(times.begin(), times.end());
  return BenchResult{.median_ms = times[times.size() / 2], .min_ms = times.front(), .max_ms = times.back(),
                     .reps = static_cast<int>(times.size())};
}

struct CaseResult {
  std::string op, variant, mode;
  DType dtype;
  OpCall call;
  double ms = 0, min_ms = 0, bytes = 0;
  int reps = 0;
  std::string error;
};

struct Runner {
  Device device;
  BenchOptions options;
  ops::Generator gen{1234};
  bool cpu_clock = false;

  BenchResult time(const std::function<void()>& fn, const BenchOptions& o) const {
    return cpu_clock ? bench_cpu_clock(fn, o) : do_bench(fn, device, o);
  }

  // The call with the case's dtype filled in.
  static OpCall resolve(OpCall c, DType dtype) {
    for (auto& s : c.inputs)
      if (s.dtype == DType::invalid) s.dtype = dtype;
    for (auto& [name, specs] : c.tensor_attrs)
      for (auto& s : specs)
        if (s.dtype == DType::invalid) s.dtype = dtype;
    return c;
  }

  void run(const OpBench& b, const ops::OpDecl* decl, bool backward, CaseResult& r) {
    std::vector<Tensor> inputs;
    for (const auto& s : r.call.inputs) {
      inputs.push_back(make_input(s, device, gen));
      if (s.channels_last) inputs.back() = ops::contiguous(inputs.back().permute({0, 2, 3, 1})).permute({0, 3, 1, 2});
    }
    Attrs attrs = r.call.attrs;
    double bytes = 0;
    for (const auto& [name, specs] : r.call.tensor_attrs) {
      std::vector<Tensor> ts;
      for (const auto& s : specs) ts.push_back(make_input(s, device, gen)), bytes += double(ts.back().nbytes());
      attrs.set(name, ts);
    }
    attrs.set("generator", &gen);  // read by the random ops (dropout), ignored by the others
    for (const auto& x : inputs) bytes += double(x.nbytes());
    auto forward = [&] { return decl ? nn::call(*decl, inputs, attrs)[0] : b.direct(inputs, attrs); };
    if (!backward) {
      Tensor y = forward();
      r.bytes = bytes + double(y.nbytes());
      auto t = time([&] { forward(); }, options);
      r.ms = t.median_ms, r.min_ms = t.min_ms, r.reps = t.reps;
      return;
    }
    std::vector<Tensor*> leaves;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (r.call.inputs[i].grad && is_float(inputs[i].dtype())) inputs[i].requires_grad_(), leaves.push_back(&inputs[i]);
    Tensor y = forward();
    Tensor dy = make_input({.shape = y.shape(), .dtype = y.dtype()}, device, gen);
    bytes += double(y.nbytes()) + double(dy.nbytes());
    for (Tensor* x : leaves) bytes += double(x->nbytes());
    r.bytes = bytes;
    y = Tensor();
    BenchOptions o = options;
    o.before_each = [&] {
      for (Tensor* x : leaves) x->zero_grad();
    };
    auto t = time([&] { forward().backward(dy); }, o);
    r.ms = t.median_ms, r.min_ms = t.min_ms, r.reps = t.reps;
  }
};

}  // namespace

int ops_bench(int argc, char** argv) {
  Device device = Device::cpu();
  std::string filter, json_path;
  int64_t elements = int64_t(1) << 24;
  std::vector<std::string> dtypes = {"f32", "bf16"}, modes = {"fwd", "fwd+bwd"};
  bool quick = false, list = false;
  std::string clock = "wall";
  cli::Args args(argc, argv, kOpsUsage, 2);
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(',', start);
      if (end == std::string::npos) end = s.size();
      out.push_back(s.substr(start, end - start));
      start = end + 1;
    }
    return out;
  };
  while (args.next()) {
    if (args.is("--device")) device = cli::parse_device(args.option(), args.value());
    else if (args.is("--filter")) filter = args.value();
    else if (args.is("--json")) json_path = args.value();
    else if (args.is("--elements")) elements = cli::parse_int(args.option(), args.value(), 1024, int64_t(1) << 31);
    else if (args.is("--dtypes")) {
      dtypes = split(args.value());
      for (auto& d : dtypes) cli::parse_choice("--dtypes", d, {"f32", "bf16", "f16"});
    } else if (args.is("--modes")) {
      modes = split(args.value());
      for (auto& m : modes) cli::parse_choice("--modes", m, {"fwd", "fwd+bwd"});
    } else if (args.is("--quick")) quick = true;
    else if (args.is("--list")) list = true;
    else if (args.is("--clock")) clock = cli::parse_choice(args.option(), args.value(), {"wall", "cpu"});
    else args.unknown();
  }
  if (clock == "cpu" && device.is_cuda()) throw cli::UsageError("--clock cpu times CPU work: it needs --device cpu");
  std::regex pattern;
  try {
    pattern = std::regex(filter.empty() ? std::string(".") : filter);
  } catch (const std::regex_error& e) {
    throw cli::UsageError(fmt::format("--filter: '{}' is not a regular expression ({})", filter, e.what()));
  }
  if (!list && !runtime::device_available(device)) {
    std::fprintf(stderr, "device %s is unavailable: %s\n", device.str().c_str(),
                 runtime::device_unavailable_reason(device).c_str());
    return 2;
  }
  auto wanted = [&](const std::string& v, const std::vector<std::string>& from) {
    return std::find(from.begin(), from.end(), v) != from.end();
  };

  const auto& registry = ops::op_registry();
  std::set<std::string> covered;
  Runner runner{.device = device};
  if (quick) runner.options.rep_ms = 20, runner.options.warmup_ms = 5;
  runner.cpu_clock = clock == "cpu";
  int threads = runtime::ThreadPool::global().size();
  if (!list) {
    if (device.is_cuda()) std::printf("Op benchmarks on %s (%s), about %lld elements\n\n", device.str().c_str(),
                                      runtime::cuda::properties(device.index).name.c_str(), static_cast<long long>(elements));
    else std::printf("Op benchmarks on the CPU (%d threads, %s clock), about %lld elements\n\n", threads, clock.c_str(),
                     static_cast<long long>(elements));
    std::printf("%-30s %-24s %-5s %-8s %-22s %11s %9s\n", "op", "variant", "dtype", "mode", "shape", "ms", "GB/s");
  }
  std::vector<CaseResult> results;
  for (const OpBench& b : op_benchmarks()) {
    covered.insert(b.op);
    const ops::OpDecl* decl = b.direct ? nullptr : registry.find(b.op);
    std::string label = b.variant.empty() ? b.op : b.op + " " + b.variant;
    if (!std::regex_search(label, pattern)) continue;
    for (DType dtype : b.dtypes) {
      if (!wanted(dtype_name(dtype), dtypes)) continue;
      for (bool backward : {false, true}) {
        if (!wanted(backward ? "fwd+bwd" : "fwd", modes)) continue;
        CaseResult r{.op = b.op, .variant = b.variant, .mode = backward ? "fwd+bwd" : "fwd", .dtype = dtype};
        r.call = Runner::resolve(b.make(b.sorting ? std::max<int64_t>(1024, elements / 16) : elements), dtype);
        if (backward) {
          bool grads = decl && decl->differentiable();
          bool any = false;
          for (const auto& s : r.call.inputs) any = any || (s.grad && is_float(s.dtype));
          if (!grads || !any) continue;
        }
        if (list) {
          std::printf("%-30s %-24s %-5s %s\n", b.op.c_str(), b.variant.c_str(), dtype_name(dtype), r.mode.c_str());
          continue;
        }
        try {
          if (!decl && !b.direct) fail("'{}' is not an op of the registry and its entry gives no direct call", b.op);
          runner.run(b, decl, backward, r);
        } catch (const std::exception& e) {
          r.error = e.what();
          if (auto nl = r.error.find('\n'); nl != std::string::npos) r.error.resize(nl);
        }
        std::string shape = r.call.inputs.empty() ? "" : fmt::format("[{}]", fmt::join(r.call.inputs[0].shape, ", "));
        if (r.error.empty())
          std::printf("%-30s %-24s %-5s %-8s %-22s %11.4f %9.1f\n", b.op.c_str(), b.variant.c_str(), dtype_name(dtype),
                      r.mode.c_str(), shape.c_str(), r.ms, r.bytes / (r.ms * 1e6));
        else
          std::printf("%-30s %-24s %-5s %-8s %-22s   error: %s\n", b.op.c_str(), b.variant.c_str(), dtype_name(dtype),
                      r.mode.c_str(), shape.c_str(), r.error.c_str());
        std::fflush(stdout);
        results.push_back(std::move(r));
      }
    }
  }
  std::vector<std::string> missing;
  for (const auto& op : registry.all())
    if (!covered.count(op->name)) missing.push_back(op->name);
  std::printf("\nnot benchmarked (registry ops without an entry in bench/ops_bench_table.cpp): %s\n",
              missing.empty() ? "none" : fmt::format("{}", fmt::join(missing, ", ")).c_str());

  if (!json_path.empty() && !list) {
    std::string json = fmt::format("{{\n  \"device\": {},\n  \"threads\": {},\n  \"clock\": \"{}\",\n  \"elements\": {},\n  \"cases\": [\n",
                                   json_string(device.str()), threads, clock, elements);
    for (size_t i = 0; i < results.size(); ++i) {
      const CaseResult& r = results[i];
      std::string inputs, attrs, tattrs;
      for (const auto& s : r.call.inputs) inputs += (inputs.empty() ? "" : ", ") + spec_json(s);
      for (const auto& [name, v] : r.call.attrs.values())
        if (std::string j = attr_json(v); !j.empty()) attrs += (attrs.empty() ? "" : ", ") + json_string(name) + ": " + j;
      for (const auto& [name, specs] : r.call.tensor_attrs) {
        std::string list_json;
        for (const auto& s : specs) list_json += (list_json.empty() ? "" : ", ") + spec_json(s);
        tattrs += (tattrs.empty() ? "" : ", ") + json_string(name) + ": [" + list_json + "]";
      }
      json += fmt::format(
          "    {{\"op\": {}, \"variant\": {}, \"dtype\": \"{}\", \"mode\": \"{}\", \"inputs\": [{}], \"attrs\": {{{}}}, "
          "\"tensor_attrs\": {{{}}}, \"ms\": {:.6f}, \"min_ms\": {:.6f}, \"bytes\": {:.0f}, \"reps\": {}, \"error\": {}}}{}\n",
          json_string(r.op), json_string(r.variant), dtype_name(r.dtype), r.mode, inputs, attrs, tattrs, r.ms, r.min_ms, r.bytes,
          r.reps, r.error.empty() ? "null" : json_string(r.error), i + 1 < results.size() ? "," : "");
    }
    std::string missing_json;
    for (const auto& m : missing) missing_json += (missing_json.empty() ? "" : ", ") + json_string(m);
    json += "  ],\n  \"not_benchmarked\": [" + missing_json + "]\n}\n";
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) fail("cannot write {}", json_path);
    std::fputs(json.c_str(), f);
    std::fclose(f);
    std::printf("wrote %s\n", json_path.c_str());
  }
  return 0;
}

}  // namespace tritium::bench
