// tritium-tune: an autotuning sweep of a kernel over a grid of shapes and configs, like
// triton.testing.perf_report over triton.autotune. Prints a table (best config per shape, time,
// throughput, speed-up over the worst and over the default config) and writes CSV, JSON and an
// SVG plot. Results persist in the disk cache: a second run measures nothing.
//
//   tritium-tune [--kernel matmul|add] [--device cpu|cuda|cuda:N] [--dtype f32|f16|bf16]
//                [--sizes 128,256,...] [--quick] [--out DIR] [--warmup-ms X] [--rep-ms X] [--help]
//
// matmul: the op library's matmul kernel (ops::matmul_kernel) on square N x N x N problems,
// 16 configs (BLOCK_M, BLOCK_N in {32, 64} on CUDA, {64, 128} on the CPU; BLOCK_K in {16, 32};
// num_warps in {4, 8}); the default is 64 x 64 x 32 on CUDA (ops::matmul's blocks before it
// autotuned over tensor-core configs) and the CPU heuristic's 128 x 128 x 32. add: tutorial 01's vector add over 2^12 ... 2^26 elements,
// BLOCK in {256 ... 8192} x num_warps in {2, 4, 8}.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <tritium/tritium.h>

#include "autotune/autotuner.h"
#include "autotune/report.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/thread_pool.h"
#include "tools/cli.h"

namespace tl = tritium::tl;
namespace at = tritium::sweep;
using tritium::Config;
using tritium::Meta;
using tritium::Tensor;

namespace {

struct Args {
  std::string kernel = "matmul";
  tritium::Device device = tritium::Device::cpu();
  tritium::DType dtype = tritium::DType::f32;
  std::vector<int64_t> sizes;
  bool quick = false;
  std::string out = ".";
  double warmup_ms = 25, rep_ms = 100;
};

const char* kUsage =
    "usage: tritium-tune [--kernel matmul|add] [--device cpu|cuda|cuda:N] [--dtype f32|f16|bf16]\n"
    "                    [--sizes N,N,...] [--quick] [--out DIR] [--warmup-ms X] [--rep-ms X]\n"
    "An autotuning sweep: the best config per shape, its time and speed-ups, written as\n"
    "tune-<kernel>-<device>.csv/.json/.svg in DIR (default .).\n"
    "  --kernel K       matmul (the op library's, N x N x N) or add (tutorial 01's)\n"
    "  --device D       cpu (default), cuda or cuda:N\n"
    "  --dtype T        matmul's element type: f32 (default), f16 or bf16\n"
    "  --sizes LIST     matmul: N from 1 to 16384; add: elements from 1 to 2^30\n"
    "  --quick          at most three sizes\n"
    "  --warmup-ms X    warm-up per config, above 0 and at most 60000 (default 25)\n"
    "  --rep-ms X       measuring time per config, above 0 and at most 60000 (default 100)\n"
    "  --help           this text\n";

Args parse(int argc, char** argv) {
  namespace cli = tritium::cli;
  Args a;
  std::optional<std::string> sizes;
  cli::Args args(argc, argv, kUsage);
  while (args.next()) {
    const std::string& o = args.option();
    if (args.is("--kernel")) a.kernel = cli::parse_choice(o, args.value(), {"matmul", "add"});
    else if (args.is("--device")) a.device = cli::parse_device(o, args.value());
    else if (args.is("--dtype")) {
      std::string d = cli::parse_choice(o, args.value(), {"f32", "f16", "bf16"});
      a.dtype = d == "f32" ? tritium::DType::f32 : d == "f16" ? tritium::DType::f16 : tritium::DType::bf16;
    } else if (args.is("--sizes")) sizes = args.value();
    else if (args.is("--quick")) a.quick = true;
    else if (args.is("--out")) a.out = args.value();
    else if (args.is("--warmup-ms") || args.is("--rep-ms")) {
      double ms = cli::parse_double(o, args.value(), 0, 60000);
      if (ms <= 0) throw cli::UsageError(o + ": expected milliseconds above 0, got 0");
      (args.is("--rep-ms") ? a.rep_ms : a.warmup_ms) = ms;
    } else args.unknown();
  }
  // The range depends on the kernel, which may come after --sizes.
  if (sizes) a.sizes = cli::parse_int_list("--sizes", *sizes, 1, a.kernel == "matmul" ? 16384 : int64_t(1) << 30);
  return a;
}

std::string device_name(const tritium::Device& d) {
  if (d.is_cuda()) return d.str() + " (" + tritium::runtime::cuda::properties(d.index).name + ")";
  return "cpu (" + std::to_string(tritium::runtime::ThreadPool::global().size()) + " threads)";
}

// Tutorial 01's kernel, with BLOCK and num_warps left to the tuner.
tritium::Kernel add_kernel() {
  return tritium::kernel(
      "add",
      [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 n, int BLOCK) {
        auto offsets = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto mask = offsets < n;
        tl::store(out + offsets, tl::load(x + offsets, mask) + tl::load(y + offsets, mask), mask);
      },
      {"x", "y", "out", "n", "BLOCK"});
}

void add_rows(at::SweepReport& report, const std::string& shape, double x, double work,
              const tritium::TuningResult& r, const std::string& default_config) {
  for (const auto& c : r.results) {
    at::SweepRow row;
    row.shape = shape;
    row.x = x;
    row.config = c.config.str();
    row.family = row.config;
    row.ms = c.ms;
    row.status = c.status;
    row.work = work;
    row.is_default = row.config == default_config;
    report.rows.push_back(row);
  }
}

}  // namespace

int tune(int argc, char** argv) {
  Args args = parse(argc, argv);
  if (!tritium::runtime::device_available(args.device)) {
    std::fprintf(stderr, "device %s is unavailable: %s\n", args.device.str().c_str(),
                 tritium::runtime::device_unavailable_reason(args.device).c_str());
    return 2;
  }
  tritium::DefaultDeviceGuard on(args.device);
  auto start = std::chrono::steady_clock::now();
  at::SweepReport report;
  report.device = device_name(args.device);
  tritium::AutotuneOptions options;
  options.warmup_ms = args.warmup_ms;
  options.rep_ms = args.rep_ms;
  int measured = 0, from_disk = 0;
  auto count = [&](const tritium::TuningResult& r) {
    measured += r.benchmarked;
    for (const auto& c : r.results) from_disk += c.from_disk;
  };

  if (args.kernel == "matmul") {
    if (args.sizes.empty())
      args.sizes = args.device.is_cuda() ? std::vector<int64_t>{256, 512, 768, 1024, 1536, 2048, 3072, 4096}
                                         : std::vector<int64_t>{64, 96, 128, 192, 256, 384, 512, 768};
    if (args.quick) args.sizes.resize(std::min<size_t>(args.sizes.size(), 3));
    report.kernel = std::string("matmul ") + tritium::dtype_name(args.dtype);
    report.metric = args.device.is_cuda() ? "TFLOP/s" : "GFLOP/s";
    report.x_label = "N (M = N = K)";
    std::vector<Config> configs;
    const int small = args.device.is_cuda() ? 32 : 64, large = 2 * small;
    for (int bm : {small, large})
      for (int bn : {small, large})
        for (int bk : {16, 32})
          for (int warps : {4, 8}) configs.emplace_back(Meta{{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"GROUP_M", 8}}, warps, 3);
    const std::string default_config = Config(Meta{{"BLOCK_M", large}, {"BLOCK_N", large}, {"BLOCK_K", 32}, {"GROUP_M", 8}}, 4, 3).str();
    options.key = {"M", "N", "K"};
    auto tuner = tritium::autotune(tritium::ops::matmul_kernel(args.dtype), configs, options);
    at::ProgressBar bar(static_cast<int>(args.sizes.size()), "matmul shapes");
    for (int64_t n : args.sizes) {
      Tensor a = tritium::ops::randn({n, n}).to(args.dtype), b = tritium::ops::randn({n, n}).to(args.dtype);
      Tensor c = tritium::ops::zeros({n, n}, args.dtype);
      auto grid = [n](const Meta& m) {
        return tritium::Grid(tritium::cdiv(n, m["BLOCK_M"]) * tritium::cdiv(n, m["BLOCK_N"]), 1);
      };
      int32_t n32 = static_cast<int32_t>(n);
      const auto& r = tuner.tune(grid, a, b, c, n32, n32, n32, n, int64_t{1}, n, int64_t{1}, n, int64_t{1}, int64_t{1},
                                 int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0},
                                 Meta{{"TF32", 0}, {"CARRY_POINTERS", args.device.is_cuda()}, {"BLOCK_POINTERS", false}});
      count(r);
      add_rows(report, "N=" + std::to_string(n), static_cast<double>(n), 2.0 * n * n * n, r, default_config);
      bar.tick("N=" + std::to_string(n));
    }
    bar.finish();
  } else {
    if (args.sizes.empty())
      for (int p = 12; p <= 26; p += 2) args.sizes.push_back(int64_t{1} << p);
    if (args.quick) args.sizes.resize(std::min<size_t>(args.sizes.size(), 3));
    report.kernel = "vector add f32";
    report.metric = "GB/s";
    report.x_label = "elements";
    std::vector<Config> configs;
    for (int block : {256, 512, 1024, 2048, 4096, 8192})
      for (int warps : {2, 4, 8}) configs.emplace_back(Meta{{"BLOCK", block}}, warps, 3);
    const std::string default_config = Config(Meta{{"BLOCK", 1024}}, 4, 3).str();
    options.key = {"n"};
    auto tuner = tritium::autotune(add_kernel(), configs, options);
    at::ProgressBar bar(static_cast<int>(args.sizes.size()), "vector add sizes");
    for (int64_t n : args.sizes) {
      Tensor x = tritium::ops::rand({n}), y = tritium::ops::rand({n}), out = tritium::ops::zeros({n});
      auto grid = [n](const Meta& m) { return tritium::Grid(tritium::cdiv(n, m["BLOCK"])); };
      const auto& r = tuner.tune(grid, x, y, out, static_cast<int32_t>(n));
      count(r);
      add_rows(report, "n=" + std::to_string(n), static_cast<double>(n), 12.0 * static_cast<double>(n), r,
               default_config);
      bar.tick("n=" + std::to_string(n));
    }
    bar.finish();
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::printf("%s\n", at::format_table(report).c_str());
  std::string base = args.out + "/tune-" + args.kernel + "-" + (args.device.is_cuda() ? "cuda" : "cpu");
  try {
    std::filesystem::create_directories(args.out);
    at::write_csv(report, base + ".csv");
    at::write_json(report, base + ".json");
    at::write_svg(report, base + ".svg");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tritium-tune: error: cannot write the report to %s: %s\n", args.out.c_str(), e.what());
    return 2;
  }
  std::printf("sweep: %zu configs x %zu shapes in %.2f s (%d benchmarked, %d results from the disk cache)\n",
              report.rows.size() / std::max<size_t>(1, args.sizes.size()), args.sizes.size(), report.seconds,
              measured, from_disk);
  std::printf("wrote %s.csv, %s.json, %s.svg\n", base.c_str(), base.c_str(), base.c_str());
  return 0;
}

int main(int argc, char** argv) {
  return tritium::cli::run_main("tritium-tune", [&] { return tune(argc, argv); });
}
