// tritium-bench: the core figures of the CPU backend, printed as a table and written as JSON.
//   vector add GB/s beside a plain -O3 -march=native loop on the same thread pool
//   host overhead of launching a cached kernel
//   cold compile and disk-cache load (in a new process) of tutorial 01's kernel
//
//   tritium-bench [--json FILE] [--quick] [--device cpu|cuda]
//   tritium-bench --matmul [SIZE]   fp32 matmul beside OpenBLAS (bench/matmul_vs_openblas.cpp)
//   tritium-bench --ops-matmul ...  ops::matmul TFLOP/s on a GPU (bench/ops_matmul_gpu.cpp)
//   tritium-bench --block-ptr-matmul ...  a matmul with pointer blocks against block pointers
//   tritium-bench --ops ...         every op of the op table, forward and backward (bench/ops_bench.cpp)
//   tritium-bench --data-loader ... the DataLoader's batches/s by worker count (bench/data_loader_bench.cpp)
// On cuda the plain-loop column is absent (bench/compare_gpu.py sets Triton and PyTorch beside
// these figures) and a bare cuLaunchKernel of an empty kernel is timed as the launch baseline.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <tritium/tritium.h>

#include "autotune/do_bench.h"
#include "jit/compiled_kernel.h"
#include "common/env.h"
#include "jit/cuda/nvrtc.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_driver.h"
#include "runtime/thread_pool.h"
#include "tools/cli.h"

int matmul_bench(int argc, char** argv);      // bench/matmul_vs_openblas.cpp
int ops_matmul_bench(int argc, char** argv);  // bench/ops_matmul_gpu.cpp
int block_ptr_matmul_bench(int argc, char** argv);  // bench/block_ptr_matmul.cpp
namespace tritium::bench {
int ops_bench(int argc, char** argv);  // bench/ops_bench.cpp
int optim_bench(int argc, char** argv);  // bench/optim_step_bench.cpp (issue 30: multi-tensor optimiser steps)
int data_loader_bench(int argc, char** argv);  // bench/data_loader_bench.cpp
int rnn_bench(int argc, char** argv);  // bench/rnn_bench.cpp (issue 30, wt-rnn)
int matmul_shapes_bench(int argc, char** argv);  // bench/matmul_shapes_bench.cpp
int profiler_overhead_bench(int argc, char** argv);  // bench/profiler_overhead.cpp
}

namespace tl = tritium::tl;
using clock_type = std::chrono::steady_clock;

namespace {

tritium::Device g_device = tritium::Device::cpu();
tritium::Options on_device() { return tritium::Options{.device = g_device}; }

// Host data copied to the benchmark's device.
tritium::Tensor on_device_tensor(const std::vector<float>& host) {
  return tritium::Tensor::from_vector(host).to(g_device);
}

void wait_for_device() {
  if (g_device.is_cuda()) tritium::runtime::cuda::synchronize(g_device.index);
}

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

tritium::Kernel make_add_kernel() {
  return tritium::kernel("add_kernel", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 n, int BLOCK) {
    auto offsets = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offsets < n;
    tl::store(out + offsets, tl::load(x + offsets, mask) + tl::load(y + offsets, mask), mask);
  });
}

// A family of distinct small kernels (each scales by its own constant, so each compiles anew).
tritium::Kernel make_scale_kernel(int c) {
  return tritium::kernel("scale_" + std::to_string(c), [c](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int BLOCK) {
    auto offsets = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offsets < n;
    tl::store(out + offsets, tl::load(x + offsets, mask) * float(c) + 1.0f, mask);
  });
}

void plain_add(const float* x, const float* y, float* out, int64_t n) {
  tritium::runtime::ThreadPool::global().parallel_for(tritium::cdiv(n, 4096), [&](int64_t b, int64_t e) {
    int64_t lo = b * 4096, hi = std::min(n, e * 4096);
    for (int64_t i = lo; i < hi; ++i) out[i] = x[i] + y[i];
  });
}

// Child mode: time the first launch (trace + disk-cache load) of the named kernels.
int probe(int argc, char** argv) {
  int first = 2;
  if (argc > 3 && !std::strcmp(argv[2], "--device")) g_device = tritium::cli::parse_device("--device", argv[3]), first = 4;
  for (int i = first; i < argc; ++i)  // check every name before timing any
    if (std::strcmp(argv[i], "add")) tritium::cli::parse_int("--probe kernel", argv[i], 0, 1000000);
  auto x = on_device_tensor(std::vector<float>(4096, 1.0f)), y = on_device_tensor(std::vector<float>(4096, 2.0f));
  auto out = on_device_tensor(std::vector<float>(4096, 0.0f));
  wait_for_device();
  for (int i = first; i < argc; ++i) {
    std::string what = argv[i];
    auto t0 = clock_type::now();
    if (what == "add") {
      auto k = make_add_kernel();
      k[{4}](x, y, out, 4096, 1024, on_device());
    } else {
      auto k = make_scale_kernel(std::atoi(what.c_str()));
      k[{4}](x, out, 4096, 1024, on_device());
    }
    wait_for_device();
    std::printf("%s %.4f\n", what.c_str(), ms_since(t0));
  }
  return 0;
}

// Runs this program in probe mode in a new process; returns the milliseconds it reported.
std::vector<double> probe_in_new_process(const std::string& cache_dir, const std::vector<std::string>& names) {
  std::string cmd = "TRITIUM_CACHE_DIR='" + cache_dir + "' /proc/" + std::to_string(getpid()) + "/exe --probe --device " +
                    g_device.str();
  for (auto& n : names) cmd += " " + n;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw tritium::Error("cannot start the probe process");
  std::vector<double> out;
  char name[64];
  double ms;
  while (std::fscanf(p, "%63s %lf", name, &ms) == 2) out.push_back(ms);
  if (pclose(p) != 0 || out.size() != names.size()) throw tritium::Error("the probe process failed");
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

const char* kUsage =
    "usage: tritium-bench [--json FILE] [--quick] [--device cpu|cuda|cuda:N]\n"
    "       tritium-bench --matmul [SIZE (1 to 16384) [f32|f64|f16|bf16]]\n"
    "       tritium-bench --ops-matmul [--device D] [--sizes N,...] [--dtypes f16,bf16,f32,tf32]\n"
    "       tritium-bench --block-ptr-matmul [--device D] [--sizes N,...] [--rounds R] [--configs C,...]\n"
    "       tritium-bench --matmul-shapes [--tokens T] [--layers IN,OUT,...] [--rounds R] (the Linear products)\n"
    "       tritium-bench --rnn [--device D] [--modules lstm,gru,rnn] [--seq N] ... (bench/rnn_bench.cpp)\n"
    "       tritium-bench --ops [--device D] [--filter REGEX] [--json FILE] [--elements N] ...\n"
    "       tritium-bench --optim [--device D] [--layers L] [--optimizer adamw|adam|sgd] ...\n"
    "       tritium-bench --profiler-overhead [ops|mlp] [--reps R]\n"
    "The CPU backend's core figures (vector add beside a plain loop, launch overhead, cold compile\n"
    "and disk-cache load), or one of the matmul benchmarks; --help after a mode lists its options.\n";

int bench_main(int argc, char** argv) {
  // NVRTC (12.9+) also caches compiles, in the driver's compute cache: a second run of this
  // program would time those hits, not cold compiles. Off for this process (and its probes).
  setenv("CUDA_CACHE_DISABLE", "1", 0);
  if (argc > 1 && !std::strcmp(argv[1], "--probe")) return probe(argc, argv);
  if (argc > 1 && !std::strcmp(argv[1], "--matmul")) return matmul_bench(argc, argv);
  if (argc > 1 && !std::strcmp(argv[1], "--ops-matmul")) return ops_matmul_bench(argc, argv);
  if (argc > 1 && !std::strcmp(argv[1], "--block-ptr-matmul")) return block_ptr_matmul_bench(argc, argv);
  if (argc > 1 && !std::strcmp(argv[1], "--ops")) return tritium::bench::ops_bench(argc, argv);
  if (argc > 1 && !std::strcmp(argv[1], "--optim")) return tritium::bench::optim_bench(argc, argv);
  if (argc > 1 && !std::strcmp(argv[1], "--data-loader")) return tritium::bench::data_loader_bench(argc, argv);
  if (argc > 1 && !std::strcmp(argv[1], "--rnn")) return tritium::bench::rnn_bench(argc, argv);
  if (argc > 1 && !std::strcmp(argv[1], "--matmul-shapes")) return tritium::bench::matmul_shapes_bench(argc, argv);
  if (argc > 1 && !std::strcmp(argv[1], "--profiler-overhead")) return tritium::bench::profiler_overhead_bench(argc, argv);
  std::string json_path;
  bool quick = false;
  tritium::cli::Args args(argc, argv, kUsage);
  while (args.next()) {
    if (args.is("--json")) json_path = args.value();
    else if (args.is("--quick")) quick = true;
    else if (args.is("--device")) g_device = tritium::cli::parse_device(args.option(), args.value());
    else args.unknown();
  }
  // A fresh cache directory, so the compile figures are cold.
  std::string cache_dir = std::filesystem::temp_directory_path() / ("tritium-bench-" + std::to_string(getpid()));
  std::filesystem::remove_all(cache_dir);
  setenv("TRITIUM_CACHE_DIR", cache_dir.c_str(), 1);
  setenv("TRITIUM_CACHE", "1", 1);
  tritium::reload_env_for_tests();
  std::string json = "{\n";
  if (!tritium::runtime::device_available(g_device)) {
    std::fprintf(stderr, "device %s is unavailable: %s\n", g_device.str().c_str(),
                 tritium::runtime::device_unavailable_reason(g_device).c_str());
    return 2;
  }
  bool cuda = g_device.is_cuda();
  int threads = tritium::runtime::ThreadPool::global().size();
  if (cuda) std::printf("Tritium benchmarks on %s (%s)\n\n", g_device.str().c_str(), tritium::runtime::cuda::properties(g_device.index).name.c_str());
  else std::printf("Tritium CPU benchmarks (%d threads)\n\n", threads);
  json += fmt::format("  \"device\": \"{}\",\n", g_device.str());

  // 1. Cold compile, then disk-cache loads in new processes.
  auto small_x = on_device_tensor(std::vector<float>(4096, 1.0f)), small_y = on_device_tensor(std::vector<float>(4096, 2.0f));
  auto small_out = on_device_tensor(std::vector<float>(4096, 0.0f));
  wait_for_device();
  auto t0 = clock_type::now();
  auto add = make_add_kernel();
  add[{4}](small_x, small_y, small_out, 4096, 1024, on_device());
  wait_for_device();
  double cold_add = ms_since(t0);
  std::vector<double> cold_family;
  std::vector<std::string> family_names;
  auto stats_before = tritium::jit::compile_stats();
  for (int c = 1; c <= 20; ++c) {
    auto t = clock_type::now();
    auto k = make_scale_kernel(c);
    k[{4}](small_x, small_out, 4096, 1024, on_device());
    wait_for_device();
    cold_family.push_back(ms_since(t));
    family_names.push_back(std::to_string(c));
  }
  auto stats_after = tritium::jit::compile_stats();
  double mean_total = 0;
  for (double t : cold_family) mean_total += t / 20;
  double passes = (stats_after.passes_ms - stats_before.passes_ms) / 20;
  double generate = (stats_after.generate_ms - stats_before.generate_ms) / 20;
  double load = (stats_after.load_ms - stats_before.load_ms) / 20;
  std::vector<double> warm_add;
  for (int r = 0; r < 5; ++r) warm_add.push_back(probe_in_new_process(cache_dir, {"add"})[0]);
  std::vector<double> warm_family = probe_in_new_process(cache_dir, family_names);
  std::printf("%-60s %10.2f ms\n", "cold compile, tutorial 01 kernel", cold_add);
  std::printf("%-60s %10.2f ms\n", "disk-cache load in a new process, tutorial 01 (median of 5)", median(warm_add));
  std::printf("%-60s %10.2f ms\n", "cold compile, 20 distinct small kernels (median)", median(cold_family));
  std::printf("%-60s %10.2f ms\n", "disk-cache load, 20 distinct kernels, new process (median)", median(warm_family));
  std::printf("  cold compile phases, mean per kernel: trace+launch %.2f, passes %.2f, generate (%s) %.2f, load %.2f ms\n",
              mean_total - passes - generate - load, passes, cuda ? "PTX or NVRTC" : "LLVM", generate, load);
  json += fmt::format("  \"cold_compile_add_ms\": {:.3f},\n  \"disk_load_add_ms\": {:.3f},\n", cold_add, median(warm_add));
  json += fmt::format("  \"cold_compile_20_median_ms\": {:.3f},\n  \"disk_load_20_median_ms\": {:.3f},\n",
                      median(cold_family), median(warm_family));
  json += fmt::format("  \"cold_compile_phases_ms\": {{\"passes\": {:.3f}, \"generate\": {:.3f}, \"load\": {:.3f}}},\n",
                      passes, generate, load);

  // 2. Host overhead of a cached launch (an empty program, 4 arguments). On CUDA launches are
  // asynchronous: the host time per launch is measured, the queue drained after each batch. The
  // bare cuLaunchKernel baseline runs in batches alternating with ours, so that both see the same
  // GPU clocks and host load (timed one after the other, the ratio moved 1.05-1.62 between runs).
  auto empty = tritium::kernel("empty", [](tl::ptr<float>, tl::ptr<float>, tl::ptr<float>, tl::i32) {});
  int n = 4096;
  empty[{1}](small_x, small_y, small_out, n, on_device());
  wait_for_device();
  const int batches = quick ? 20 : 200, per_batch = 1000;
  auto time_batch = [&](auto&& launch_one) {  // us per launch
    auto t = clock_type::now();
    for (int i = 0; i < per_batch; ++i) launch_one();
    double ms = ms_since(t);
    wait_for_device();
    return ms * 1000.0 / per_batch;
  };
  namespace cu = tritium::runtime::cuda;
  const cu::Driver* driver = nullptr;
  cu::CUmodule bare_module = nullptr;
  cu::CUfunction bare_fn = nullptr;
  void* px = small_x.raw_data();
  void* py = small_y.raw_data();
  void* po = small_out.raw_data();
  void* params[] = {&px, &py, &po, &n};
  if (cuda) {
    // The floor: cuLaunchKernel of an empty 4-argument kernel built directly with NVRTC.
    driver = &cu::driver();
    const cu::Driver& d = *driver;
    auto cubin = tritium::jit::cuda::compile_to_cubin(
        "extern \"C\" __global__ void empty4(float*, float*, float*, int) {}", "empty4",
        cu::properties(g_device.index).arch() + "a");
    cu::check(d.cuModuleLoadData(&bare_module, cubin.data()), "cuModuleLoadData", "empty4");
    cu::check(d.cuModuleGetFunction(&bare_fn, bare_module, "empty4"), "cuModuleGetFunction", "empty4");
  }
  auto bare_launch = [&] {  // called only on CUDA, where driver is set
    cu::check(driver->cuLaunchKernel(bare_fn, 1, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel",
              "empty4");
  };
  std::vector<double> ours_one, ours_all, bare;
  for (int b = 0; b < batches; ++b) {
    ours_one.push_back(time_batch([&] { empty[{1}](small_x, small_y, small_out, n, on_device()); }));
    if (cuda) bare.push_back(time_batch(bare_launch));
    ours_all.push_back(time_batch([&] { empty[{threads * 4}](small_x, small_y, small_out, n, on_device()); }));
  }
  double us_one = median(ours_one), us_all = median(ours_all);
  std::printf("%-60s %10.3f us\n", "launch overhead, cached kernel, grid 1", us_one);
  std::printf("%-60s %10.3f us\n", fmt::format("launch overhead, cached kernel, grid {}", threads * 4).c_str(), us_all);
  json += fmt::format("  \"launch_overhead_grid1_us\": {:.4f},\n  \"launch_overhead_all_cores_us\": {:.4f},\n", us_one, us_all);
  if (cuda) {
    double bare_us = median(bare);
    std::printf("%-60s %10.3f us   (Tritium / bare = %.2f)\n", "bare cuLaunchKernel, same empty kernel", bare_us,
                us_one / bare_us);
    json += fmt::format("  \"bare_launch_us\": {:.4f},\n", bare_us);
    cu::driver().cuModuleUnload(bare_module);
  }

  // 3. Vector add bandwidth (beside the plain loop on the CPU).
  if (cuda) std::printf("\n%12s %14s\n", "elements", "Tritium GB/s");
  else std::printf("\n%12s %14s %14s %8s\n", "elements", "Tritium GB/s", "plain GB/s", "ratio");
  json += "  \"vector_add\": [\n";
  std::vector<int> exps = cuda ? std::vector<int>{20, 24, 27}
                         : quick ? std::vector<int>{20, 24} : std::vector<int>{16, 18, 20, 22, 24, 26};
  for (size_t i = 0; i < exps.size(); ++i) {
    int64_t size = int64_t(1) << exps[i];
    std::vector<float> hx(size, 1.0f), hy(size, 2.0f), hout(size);
    auto x = on_device_tensor(hx), y = on_device_tensor(hy), out = on_device_tensor(hout);
    auto t = tritium::do_bench([&] { add[{tritium::cdiv(size, 1024)}](x, y, out, static_cast<int>(size), 1024, on_device()); },
                               g_device);
    double bytes = 12.0 * size, gt = bytes / (t.median_ms * 1e6);
    if (cuda) {
      std::printf("%12lld %14.1f\n", static_cast<long long>(size), gt);
      json += fmt::format("    {{\"elements\": {}, \"tritium_gbs\": {:.2f}}}{}\n", size, gt, i + 1 < exps.size() ? "," : "");
      continue;
    }
    auto p = tritium::do_bench([&] { plain_add(hx.data(), hy.data(), hout.data(), size); });
    double gp = bytes / (p.median_ms * 1e6);
    std::printf("%12lld %14.1f %14.1f %8.2f\n", static_cast<long long>(size), gt, gp, gt / gp);
    json += fmt::format("    {{\"elements\": {}, \"tritium_gbs\": {:.2f}, \"plain_gbs\": {:.2f}, \"ratio\": {:.3f}}}{}\n", size, gt,
                        gp, gt / gp, i + 1 < exps.size() ? "," : "");
  }
  json += fmt::format("  ],\n  \"threads\": {}\n}}\n", threads);
  std::filesystem::remove_all(cache_dir);
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) throw tritium::Error("cannot write " + json_path);
    std::fputs(json.c_str(), f);
    std::fclose(f);
    std::printf("\nwrote %s\n", json_path.c_str());
  }
  return 0;
}

int main(int argc, char** argv) {
  return tritium::cli::run_main("tritium-bench", [&] { return bench_main(argc, argv); });
}
