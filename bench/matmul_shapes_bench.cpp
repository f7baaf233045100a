// tritium-bench --matmul-shapes: GFLOP/s of ops::matmul on the products a Linear layer runs in
// training (docs/cpu-backend.md), on the GPT's CPU shapes by default: for each (in, out) layer,
// the forward x[T, in] @ W[out, in]^T + b, the input gradient g[T, out] @ W and the weight
// gradient g^T @ x (K = T). The machine's noise is large next to the differences measured, so
// every product is timed in R rounds (interleaved, so a busy spell hits all of them) and the
// median is printed; run two builds alternately for an A/B.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <tritium/tritium.h>

#include "autotune/do_bench.h"
#include "ops/matmul_add.h"
#include "ops/ops.h"
#include "runtime/thread_pool.h"
#include "tools/cli.h"

namespace tritium::bench {
namespace {

struct Product {
  std::string name;
  int64_t m, n, k;
  std::function<void()> run;
};

Tensor uniform(const std::vector<int64_t>& s, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::vector<float> v(n);
  for (float& x : v) x = float((seed = seed * 1664525u + 1013904223u) >> 8) / float(1 << 24) - 0.5f;
  return Tensor::from_vector(v, s);
}

double cpu_ms() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

// The median CPU time of one call (the process's, all threads): on a machine shared with other
// work, wall time mostly measures waiting for a core.
double median_cpu_ms(const std::function<void()>& fn, double budget_ms) {
  fn();
  std::vector<double> v;
  for (double spent = 0; spent < budget_ms || v.size() < 5;) {
    double t0 = cpu_ms();
    fn();
    v.push_back(cpu_ms() - t0);
    spent += v.back();
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int matmul_shapes_bench(int argc, char** argv) {
  int64_t tokens = 1024, rounds = 5;
  std::vector<int64_t> layers = {128, 384, 128, 128, 128, 512, 512, 128};  // (in, out) pairs
  std::string only, clock = "wall";
  cli::Args args(argc, argv,
                 "usage: tritium-bench --matmul-shapes [--tokens T (1024)] [--layers IN,OUT,... (the GPT's)]\n"
                 "                     [--rounds R (5)] [--only fwd|dx|dw] [--clock wall|cpu]\n"
                 "--clock cpu times the process's CPU time (all threads; spinning workers count)\n",
                 2);
  while (args.next()) {
    if (args.is("--tokens")) tokens = cli::parse_int(args.option(), args.value(), 1, 1 << 20);
    else if (args.is("--rounds")) rounds = cli::parse_int(args.option(), args.value(), 1, 1000);
    else if (args.is("--layers")) layers = cli::parse_int_list(args.option(), args.value(), 1, 1 << 16);
    else if (args.is("--clock")) clock = cli::parse_choice(args.option(), args.value(), {"wall", "cpu"});
    else if (args.is("--only")) only = cli::parse_choice(args.option(), args.value(), {"fwd", "dx", "dw"});
    else args.unknown();
  }
  if (layers.size() % 2) throw cli::UsageError("--layers takes (in, out) pairs");
  std::vector<Product> products;
  std::vector<Tensor> keep;
  for (size_t i = 0; i < layers.size(); i += 2) {
    const int64_t in = layers[i], out = layers[i + 1];
    Tensor x = uniform({tokens, in}, 1 + i), w = uniform({out, in}, 2 + i), b = uniform({out}, 3 + i);
    Tensor g = uniform({tokens, out}, 4 + i);
    keep.insert(keep.end(), {x, w, b, g});
    auto tag = fmt::format("{}x{}", in, out);
    if (only.empty() || only == "fwd")
      products.push_back({"fwd " + tag, tokens, out, in, [=] { (void)ops::matmul_add(b, x, w.t()); }});
    if (only.empty() || only == "dx")
      products.push_back({"dx  " + tag, tokens, in, out, [=] { (void)ops::matmul(g, w); }});
    if (only.empty() || only == "dw")
      products.push_back({"dw  " + tag, out, in, tokens, [=] { (void)ops::matmul(g.t(), x); }});
  }
  std::vector<std::vector<double>> gflops(products.size());
  BenchOptions o;
  o.warmup_ms = 10, o.rep_ms = 60;
  for (int64_t r = 0; r < rounds; ++r)
    for (size_t p = 0; p < products.size(); ++p) {
      const Product& q = products[p];
      double ms = clock == "cpu" ? median_cpu_ms(q.run, o.rep_ms) : do_bench(q.run, Device::cpu(), o).median_ms;
      gflops[p].push_back(2.0 * double(q.m) * double(q.n) * double(q.k) / (ms * 1e6));
    }
  std::printf("%d threads, %lld rounds, %s clock, median GFLOP/s (min..max)\n", runtime::ThreadPool::global().size(),
              static_cast<long long>(rounds), clock.c_str());
  double total_flop = 0, total_ms = 0;
  for (size_t p = 0; p < products.size(); ++p) {
    std::vector<double> v = gflops[p];
    std::sort(v.begin(), v.end());
    const Product& q = products[p];
    const double flop = 2.0 * double(q.m) * double(q.n) * double(q.k), med = v[v.size() / 2];
    total_flop += flop, total_ms += flop / (med * 1e6);
    std::printf("%-12s M %5lld N %5lld K %5lld  %7.1f  (%.1f..%.1f)\n", q.name.c_str(), static_cast<long long>(q.m),
                static_cast<long long>(q.n), static_cast<long long>(q.k), med, v.front(), v.back());
  }
  std::printf("all          %.1f GFLOP/s (%.3f ms for one of each)\n", total_flop / (total_ms * 1e6), total_ms);
  return 0;
}

}  // namespace tritium::bench
