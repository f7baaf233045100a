// tritium-bench: the core figures of the CPU backend, printed as a table and written as JSON.
//   vector add GB/s beside a plain -O3 -march=native loop on the same thread pool
//   host overhead of launching a cached kernel
//   cold compile and disk-cache load (in a new process) of tutorial 01's kernel
//
//   tritium-bench [--json FILE] [--quick]
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
#include "common/env.h"
#include "runtime/thread_pool.h"

namespace tl = tritium::tl;
using clock_type = std::chrono::steady_clock;

namespace {

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
  std::vector<float> x(4096, 1.0f), y(4096, 2.0f), out(4096);
  for (int i = 2; i < argc; ++i) {
    std::string what = argv[i];
    auto t0 = clock_type::now();
    if (what == "add") {
      auto k = make_add_kernel();
      k[{4}](x.data(), y.data(), out.data(), 4096, 1024);
    } else {
      auto k = make_scale_kernel(std::atoi(what.c_str()));
      k[{4}](x.data(), out.data(), 4096, 1024);
    }
    std::printf("%s %.4f\n", what.c_str(), ms_since(t0));
  }
  return 0;
}

// Runs this program in probe mode in a new process; returns the milliseconds it reported.
std::vector<double> probe_in_new_process(const std::string& cache_dir, const std::vector<std::string>& names) {
  std::string cmd = "TRITIUM_CACHE_DIR='" + cache_dir + "' /proc/" + std::to_string(getpid()) + "/exe --probe";
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

int main(int argc, char** argv) {
  if (argc > 1 && !std::strcmp(argv[1], "--probe")) return probe(argc, argv);
  std::string json_path;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else {
      std::fprintf(stderr, "usage: %s [--json FILE] [--quick]\n", argv[0]);
      return 2;
    }
  }
  // A fresh cache directory, so the compile figures are cold.
  std::string cache_dir = std::filesystem::temp_directory_path() / ("tritium-bench-" + std::to_string(getpid()));
  std::filesystem::remove_all(cache_dir);
  setenv("TRITIUM_CACHE_DIR", cache_dir.c_str(), 1);
  setenv("TRITIUM_CACHE", "1", 1);
  tritium::reload_env_for_tests();
  std::string json = "{\n";
  int threads = tritium::runtime::ThreadPool::global().size();
  std::printf("Tritium CPU benchmarks (%d threads)\n\n", threads);

  // 1. Cold compile, then disk-cache loads in new processes.
  std::vector<float> small_x(4096, 1.0f), small_y(4096, 2.0f), small_out(4096);
  auto t0 = clock_type::now();
  auto add = make_add_kernel();
  add[{4}](small_x.data(), small_y.data(), small_out.data(), 4096, 1024);
  double cold_add = ms_since(t0);
  std::vector<double> cold_family;
  std::vector<std::string> family_names;
  for (int c = 1; c <= 20; ++c) {
    auto t = clock_type::now();
    auto k = make_scale_kernel(c);
    k[{4}](small_x.data(), small_out.data(), 4096, 1024);
    cold_family.push_back(ms_since(t));
    family_names.push_back(std::to_string(c));
  }
  std::vector<double> warm_add;
  for (int r = 0; r < 5; ++r) warm_add.push_back(probe_in_new_process(cache_dir, {"add"})[0]);
  std::vector<double> warm_family = probe_in_new_process(cache_dir, family_names);
  std::printf("%-60s %10.2f ms\n", "cold compile, tutorial 01 kernel", cold_add);
  std::printf("%-60s %10.2f ms\n", "disk-cache load in a new process, tutorial 01 (median of 5)", median(warm_add));
  std::printf("%-60s %10.2f ms\n", "cold compile, 20 distinct small kernels (median)", median(cold_family));
  std::printf("%-60s %10.2f ms\n", "disk-cache load, 20 distinct kernels, new process (median)", median(warm_family));
  json += fmt::format("  \"cold_compile_add_ms\": {:.3f},\n  \"disk_load_add_ms\": {:.3f},\n", cold_add, median(warm_add));
  json += fmt::format("  \"cold_compile_20_median_ms\": {:.3f},\n  \"disk_load_20_median_ms\": {:.3f},\n",
                      median(cold_family), median(warm_family));

  // 2. Host overhead of a cached launch (an empty program, 4 arguments).
  auto empty = tritium::kernel("empty", [](tl::ptr<float>, tl::ptr<float>, tl::ptr<float>, tl::i32) {});
  int n = 4096;
  empty[{1}](small_x.data(), small_y.data(), small_out.data(), n);
  const int launches = quick ? 20000 : 200000;
  auto one = tritium::do_bench([&] {
    for (int i = 0; i < 1000; ++i) empty[{1}](small_x.data(), small_y.data(), small_out.data(), n);
  }, 2, launches / 1000, 0);
  auto all = tritium::do_bench([&] {
    for (int i = 0; i < 100; ++i) empty[{threads * 4}](small_x.data(), small_y.data(), small_out.data(), n);
  }, 2, launches / 1000, 0);
  double us_one = one.median_ms, us_all = all.median_ms * 10;  // per launch, in microseconds
  std::printf("%-60s %10.3f us\n", "launch overhead, cached kernel, grid 1", us_one);
  std::printf("%-60s %10.3f us\n", fmt::format("launch overhead, cached kernel, grid {} (all cores)", threads * 4).c_str(), us_all);
  json += fmt::format("  \"launch_overhead_grid1_us\": {:.4f},\n  \"launch_overhead_all_cores_us\": {:.4f},\n", us_one, us_all);

  // 3. Vector add bandwidth against the plain loop.
  std::printf("\n%12s %14s %14s %8s\n", "elements", "Tritium GB/s", "plain GB/s", "ratio");
  json += "  \"vector_add\": [\n";
  std::vector<int> exps = quick ? std::vector<int>{20, 24} : std::vector<int>{16, 18, 20, 22, 24, 26};
  for (size_t i = 0; i < exps.size(); ++i) {
    int64_t size = int64_t(1) << exps[i];
    std::vector<float> x(size, 1.0f), y(size, 2.0f), out(size);
    auto t = tritium::do_bench([&] { add[{tritium::cdiv(size, 1024)}](x.data(), y.data(), out.data(), static_cast<int>(size), 1024); });
    auto p = tritium::do_bench([&] { plain_add(x.data(), y.data(), out.data(), size); });
    double bytes = 12.0 * size, gt = bytes / (t.median_ms * 1e6), gp = bytes / (p.median_ms * 1e6);
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
