// tritium-bench --profiler-overhead [ops|mlp] [--reps R]: what the profiler costs.
//   ops: a tight loop of small dispatched op calls (add of two 16-element tensors) with no profile
//        alive: the cost of the hooks when off. Run it with this library and with one built
//        before the hooks (LD_LIBRARY_PATH) to compare; this mode calls nothing of the profiler.
//   mlp: MLP training steps (784-512-512-10, batch 128, AdamW, cross-entropy) alternately without
//        and with a Profile recording (shapes and memory on): the cost of recording.
// Prints medians over R repetitions.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "nn/functional.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "nn/simple_modules.h"
#include "ops/ops.h"
#include "profiler/profile.h"
#include "runtime/tensor.h"
#include "tools/cli.h"

namespace tritium::bench {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int ops_overhead(int reps) {
  Tensor a = Tensor::from_vector(std::vector<float>(16, 1.5f), {16});
  Tensor b = Tensor::from_vector(std::vector<float>(16, 2.5f), {16});
  const int calls = 2000;
  for (int i = 0; i < 200; ++i) tritium::add(a, b);  // compile, warm the caches
  std::vector<double> ns;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) tritium::add(a, b);
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / calls);
  }
  std::printf("profiler off: add of 16 floats through the dispatch: median %.1f ns per call (%d x %d calls)\n",
              median(ns), reps, calls);
  return 0;
}

int mlp_overhead(int reps) {
  Generator gen(0);
  nn::Sequential model(nn::Linear(784, 512, true, gen), nn::ReLU(), nn::Linear(512, 512, true, gen), nn::ReLU(),
                       nn::Linear(512, 10, true, gen));
  nn::AdamW opt(model.parameters(), 1e-3);
  Tensor x = ops::rand({128, 784}, gen);
  std::vector<int64_t> labels(128);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 10);
  Tensor y = Tensor::from_vector(labels, {128});
  auto step = [&] {
    Tensor loss = tritium::cross_entropy(model(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    loss.to_vector<float>();
  };
  for (int i = 0; i < 5; ++i) step();
  const int steps = 5;
  std::vector<double> off, on;
  size_t events = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < steps; ++i) step();
    off.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / steps);
    profiler::Profile p({.record_shapes = true, .profile_memory = true});
    t0 = Clock::now();
    for (int i = 0; i < steps; ++i) step();
    on.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / steps);
    events = p.events().size() / steps;
  }
  double m_off = median(off), m_on = median(on);
  std::printf("MLP training step (batch 128): profiler off %.3f ms, on %.3f ms (%+.2f%%; %zu events per step), "
              "medians of %d x %d steps\n",
              m_off, m_on, 100 * (m_on / m_off - 1), events, reps, steps);
  return 0;
}

}  // namespace

int profiler_overhead_bench(int argc, char** argv) {
  std::string mode = argc > 2 ? argv[2] : "ops";
  int reps = 15;
  if (argc > 4 && !std::strcmp(argv[3], "--reps")) reps = static_cast<int>(cli::parse_int("--reps", argv[4], 1, 10000));
  if (mode == "ops") return ops_overhead(reps);
  if (mode == "mlp") return mlp_overhead(reps);
  throw cli::UsageError("--profiler-overhead: expected ops or mlp, got '" + mode + "'");
}

}  // namespace tritium::bench
