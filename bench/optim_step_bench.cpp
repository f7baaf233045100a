// `tritium-bench --optim`: one optimiser step over a GPT-like parameter list (token and position
// embeddings, per layer two LayerNorms and the attention and MLP weights and biases, a final
// LayerNorm: 4 + 12 per layer tensors, GPT-2's shapes), with the multi-tensor launch (foreach,
// one launch per group) and with one launch per parameter. Prints ms per step, launches per step
// and the bytes moved per second; --json writes them for bench/compare_optim.py, which runs
// PyTorch's AdamW (foreach and fused) on the same list.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "nn/autograd.h"
#include "nn/optim.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/thread_pool.h"
#include "tools/cli.h"

namespace tritium::bench {

using runtime::Tensor;
using Shape = std::vector<int64_t>;

namespace {

const char* kOptimUsage =
    "usage: tritium-bench --optim [--device D] [--layers L] [--d-model D] [--vocab V] [--context C]\n"
    "                             [--optimizer adamw|adam|sgd] [--dtype f32|bf16] [--steps N] [--json FILE]\n"
    "One optimiser step over a GPT-like parameter list (default: 4 layers of GPT-2 small, 52 tensors),\n"
    "foreach (one launch) and per parameter (one launch each); ms per step, median of N steps.\n";

std::vector<Shape> gpt_shapes(int64_t layers, int64_t d, int64_t vocab, int64_t context) {
  std::vector<Shape> s{{vocab, d}, {context, d}};
  for (int64_t l = 0; l < layers; ++l) {
    s.insert(s.end(), {{d}, {d}, {d, 3 * d}, {3 * d}, {d, d}, {d}, {d}, {d}, {d, 4 * d}, {4 * d}, {4 * d, d}, {d}});
  }
  s.insert(s.end(), {{d}, {d}});
  return s;
}

}  // namespace

int optim_bench(int argc, char** argv) {
  Device device = Device::cpu();
  int64_t layers = 4, d = 768, vocab = 50257, context = 1024, steps = 10;
  std::string optimizer = "adamw", json_path;
  DType dtype = DType::f32;
  cli::Args args(argc, argv, kOptimUsage, 2);
  while (args.next()) {
    if (args.is("--device")) device = cli::parse_device(args.option(), args.value());
    else if (args.is("--layers")) layers = cli::parse_int(args.option(), args.value(), 0, 96);
    else if (args.is("--d-model")) d = cli::parse_int(args.option(), args.value(), 1, 16384);
    else if (args.is("--vocab")) vocab = cli::parse_int(args.option(), args.value(), 1, 1 << 20);
    else if (args.is("--context")) context = cli::parse_int(args.option(), args.value(), 1, 1 << 20);
    else if (args.is("--steps")) steps = cli::parse_int(args.option(), args.value(), 1, 10000);
    else if (args.is("--optimizer")) optimizer = args.value();
    else if (args.is("--json")) json_path = args.value();
    else if (args.is("--dtype")) {
      std::string v = args.value();
      if (v != "f32" && v != "bf16") throw cli::UsageError("--dtype: f32 or bf16");
      dtype = v == "f32" ? DType::f32 : DType::bf16;
    } else args.unknown();
  }
  if (optimizer != "adamw" && optimizer != "adam" && optimizer != "sgd")
    throw cli::UsageError("--optimizer: adamw, adam or sgd");
  DefaultDeviceGuard on(device);
  auto shapes = gpt_shapes(layers, d, vocab, context);
  int64_t elements = 0;
  for (const Shape& s : shapes) {
    int64_t n = 1;
    for (int64_t x : s) n *= x;
    elements += n;
  }
  auto wait = [&] {
    if (device.is_cuda()) runtime::cuda::synchronize(device.index);
  };
  std::string json = "{\"runs\": [";
  for (bool foreach : {true, false}) {
    std::vector<Tensor> params;
    for (const Shape& s : shapes) {
      Tensor p = ops::full(s, 0.5, dtype, device);
      p.requires_grad_(true);
      p.autograd()->grad = ops::full(s, 1e-3, dtype, device);
      params.push_back(p);
    }
    std::unique_ptr<nn::Optimizer> opt;
    if (optimizer == "adamw") opt = std::make_unique<nn::AdamW>(params, 1e-3);
    else if (optimizer == "adam") opt = std::make_unique<nn::Adam>(params, 1e-3);
    else opt = std::make_unique<nn::SGD>(params, 1e-3, 0.9);
    opt->foreach = foreach;
    for (int w = 0; w < 2; ++w) opt->step();  // compiles, creates the state
    wait();
    std::vector<double> ms;
    for (int64_t i = 0; i < steps; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      opt->step();
      wait();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    double med = ms[ms.size() / 2];
    // AdamW reads p, g, m, v and writes p, m, v; SGD with momentum reads p, g, buf and writes p, buf.
    double bytes = double(elements) * dtype_bytes(dtype) * (optimizer == "sgd" ? 5 : 7);
    fmt::print("{} {} {} tensors {} elements {}: {:.3f} ms/step, {} launches/step, {:.1f} GB/s\n", optimizer,
               dtype_name(dtype), shapes.size(), elements, foreach ? "foreach" : "per-parameter", med,
               opt->last_step_launches(), bytes / med / 1e6);
    json += fmt::format("{}{{\"optimizer\": \"{}\", \"dtype\": \"{}\", \"device\": \"{}\", \"tensors\": {}, "
                        "\"elements\": {}, \"foreach\": {}, \"ms\": {}, \"launches\": {}, \"threads\": {}}}",
                        foreach ? "" : ", ", optimizer, dtype_name(dtype), device.str(), shapes.size(), elements,
                        foreach ? "true" : "false", med, opt->last_step_launches(),
                        runtime::ThreadPool::global().size());
  }
  json += fmt::format("], \"layers\": {}, \"d_model\": {}, \"vocab\": {}, \"context\": {}}}\n", layers, d, vocab, context);
  if (!json_path.empty()) std::ofstream(json_path) << json;
  return 0;
}

}  // namespace tritium::bench
