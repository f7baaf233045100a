// first-run-census: what `train-mnist --backend cuda` (the MLP, fp32) compiles in its first epoch,
// and what each kernel costs to compile for a GPU, measured without one (issue 28 item 5). It runs
// train-mnist itself (its own source, included) on the CPU backend - two batches of 128, one of 96
// (the epoch's last), the evaluation - with a compile observer (jit/compile_observer.h) that
// generates every kernel the run compiles as the CUDA backend would (fp contraction, the direct PTX
// path or NVRTC, sm_90a) and times it. Matmul kernels are compiled on the CPU in the CPU's form, so
// the census replaces them by the CUDA form ops::matmul launches for each of the MLP's products:
// every candidate its tuner would compile (TRITIUM_AUTOTUNE=tune) and the heuristic's choice
// (TRITIUM_AUTOTUNE=heuristic or auto). Distinct kernels are counted once (as the disk cache and
// the in-memory map share them). Times are this thread's CPU time (the machine's load left out),
// wall time beside it.
//   first-run-census [DATA_DIR] [DUMP_DIR]
//   first-run-census --suite NAME...   the kernel suite's checks (kernels/, those linked in:
//                                      tools/CMakeLists.txt) on the CPU, each kernel they compile
//                                      timed for sm_90a: our side of bench/triton_cold_compile.py
#define main train_mnist_main
#include "train_mnist.cpp"
#undef main

#include <ctime>
#include <fstream>
#include <map>
#include <set>

#include "jit/compile_observer.h"
#include "jit/cuda/codegen.h"
#include "jit/cuda/nvjitlink.h"
#include "jit/cuda/nvrtc.h"
#include "jit/cuda/ptx_codegen.h"
#include "jit/passes/axis_info.h"
#include "jit/passes/contract_fma.h"
#include "jit/passes/dce.h"
#include "ir/printer.h"
#include "ops/matmul_add.h"
#include "ops/matmul_tuning.h"
#include "kernels/suite.h"

namespace {

namespace cuda = tritium::jit::cuda;

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

struct Compiled {
  std::string name, phase, how;  // how: "ptx" (nvJitLink) or "nvrtc" / "nvrtc-fast"
  double cpu_ms = 0, wall_ms = 0;
  size_t lines = 0;
};

// One kernel through the CUDA backend's steps (jit/cuda/cuda_backend.cpp, generate) for an H100.
Compiled compile_for_h100(tritium::ir::Function& f, const tritium::jit::CompileOptions& opts, const std::string& dump) {
  Compiled c;
  c.name = f.name;
  const auto wall = Clock::now();
  const double t0 = thread_cpu_ms();
  if (tritium::jit::contract_multiply_add(f)) tritium::jit::eliminate_dead_code(f);
  const tritium::jit::AxisInfoMap axis = tritium::jit::analyze_axis_info(f);
  std::string source;
  if (cuda::nvjitlink_available())
    if (auto ks = cuda::generate_ptx(f, axis, opts, "sm_90a")) {
      cuda::ptx_to_cubin(ks->source, ks->entry, "sm_90a");
      c.how = "ptx", source = ks->source;
    }
  if (c.how.empty()) {
    cuda::KernelSource ks = cuda::generate_cuda(f, axis, opts, 219 * 1024, 90);
    std::vector<std::string> options = {"--fmad=false"};
    const bool fast = cuda::compiles_fast(f);
    if (fast) options.push_back(cuda::kFastCompileOption);
    cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a", options);
    c.how = fast ? "nvrtc-fast" : "nvrtc", source = ks.source;
  }
  c.cpu_ms = thread_cpu_ms() - t0;
  c.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - wall).count();
  for (char ch : source) c.lines += ch == '\n';
  if (!dump.empty()) {
    static int n = 0;
    std::ofstream(fmt::format("{}/{:03}_{}.{}", dump, n++, f.name, c.how == "ptx" ? "ptx" : "cu")) << source;
  }
  return c;
}

template <class T> T* fake_address(uint64_t i) {  // 1 MB apart: 16-byte aligned, as a launch's pointers
  return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000);
}

struct Product {
  std::string what;
  int64_t m, n, k, sam, sak, sbk, sbn;
  bool bias;  // the forward: the epilogue kernel adds the bias
};

// The MLP's products for a batch (nn::Linear: x @ W^T + b; input gradient g @ W; weight gradient
// g^T @ x, ops/decl/linear.cpp), with the strides ops::matmul sees. The first layer's input
// gradient is not computed (the images need none).
std::vector<Product> mlp_products(int64_t batch, bool training) {
  std::vector<Product> out;
  const std::pair<int64_t, int64_t> layers[] = {{784, 512}, {512, 512}, {512, 10}};
  for (size_t l = 0; l < 3; ++l) {
    auto [in, o] = layers[l];
    const std::string tag = fmt::format("layer {} ({}x{}), batch {}", l + 1, in, o, batch);
    out.push_back({"fwd " + tag, batch, o, in, in, 1, 1, in, true});
    if (!training) continue;
    if (l > 0) out.push_back({"dgrad " + tag, batch, in, o, o, 1, in, 1, false});
    out.push_back({"wgrad " + tag, o, in, batch, 1, o, in, 1, false});
  }
  return out;
}

std::unique_ptr<tritium::ir::Function> trace_product(const Product& p, const tritium::Config& c) {
  const tritium::Options opts{.num_warps = c.num_warps, .num_stages = c.num_stages};
  float *a = fake_address<float>(1), *b = fake_address<float>(2), *out = fake_address<float>(3), *s = fake_address<float>(4);
  const int32_t m = static_cast<int32_t>(p.m), n = static_cast<int32_t>(p.n), k = static_cast<int32_t>(p.k);
  const int bm = static_cast<int>(c.meta["BLOCK_M"]), bn = static_cast<int>(c.meta["BLOCK_N"]),
            bk = static_cast<int>(c.meta["BLOCK_K"]), group = static_cast<int>(c.meta["GROUP_M"]);
  const int64_t one = 1, zero = 0;
  if (p.bias)
    return tritium::ops::matmul_epilogue_kernel(tritium::DType::f32)
        .optimized_function(a, b, out, m, n, k, p.sam, p.sak, p.sbk, p.sbn, p.n, one, one, zero, zero, zero, zero, zero,
                            zero, s, zero, one, zero, zero, 1.0f, 1.0f, bm, bn, bk, group, 0, true, 0, true, opts);
  return tritium::ops::matmul_kernel(tritium::DType::f32)
      .optimized_function(a, b, out, m, n, k, p.sam, p.sak, p.sbk, p.sbn, p.n, one, one, zero, zero, zero, zero, zero,
                          zero, bm, bn, bk, group, 0, true, 0, opts);
}

void print_table(const std::vector<Compiled>& list) {
  std::printf("%-3s %-24s %-34s %-10s %6s %9s %9s\n", "#", "kernel", "phase", "path", "lines", "cpu ms", "wall ms");
  int i = 0;
  for (const Compiled& c : list)
    std::printf("%-3d %-24s %-34s %-10s %6zu %9.1f %9.1f\n", i++, c.name.c_str(), c.phase.c_str(), c.how.c_str(), c.lines,
                c.cpu_ms, c.wall_ms);
}

double sum_cpu(const std::vector<Compiled>& list) {
  double s = 0;
  for (const Compiled& c : list) s += c.cpu_ms;
  return s;
}

}  // namespace

// The suite kernels' checks on the CPU, every kernel they compile generated and timed for sm_90a.
int suite_census(const std::vector<std::string>& names) {
  std::string current;
  std::set<std::string> seen;
  std::vector<Compiled> list;
  tritium::jit::set_compile_observer([&](ir::Function& f, const Device&, const tritium::jit::CompileOptions& opts) {
    const std::string key = fmt::format("{} w{} s{}", ir::print(f), opts.num_warps, opts.num_stages);
    if (!seen.insert(key).second) return;
    Compiled c = compile_for_h100(f, opts, "");
    c.phase = current;
    list.push_back(c);
  });
  int rc = 0;
  for (const std::string& name : names) {
    const suite::Kernel* k = nullptr;
    for (const suite::Kernel& s : suite::all())
      if (s.name == name) k = &s;
    if (!k) {
      std::fprintf(stderr, "first-run-census: kernel %s is not linked in (tools/CMakeLists.txt)\n", name.c_str());
      return 2;
    }
    current = name;
    if (!k->check(Device::cpu())) rc = 1;
  }
  tritium::jit::set_compile_observer({});
  print_table(list);
  return rc;
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each table line as it comes: a census runs for minutes
  if (argc > 1 && std::string(argv[1]) == "--suite") {
    if (!cuda::nvrtc_available()) {
      std::fprintf(stderr, "first-run-census: NVRTC is unavailable: %s\n", cuda::nvrtc_unavailable_reason().c_str());
      return 1;
    }
    cuda::compile_to_cubin("extern \"C\" __global__ void warm() {}", "warm", "sm_90a");  // NVRTC's start-up, apart
    return suite_census(std::vector<std::string>(argv + 2, argv + argc));
  }
  const std::string data = argc > 1 ? argv[1] : nn::FashionMNIST::default_root();
  const std::string dump = argc > 2 ? argv[2] : "";
  if (!cuda::nvrtc_available()) {
    std::fprintf(stderr, "first-run-census: NVRTC is unavailable: %s\n", cuda::nvrtc_unavailable_reason().c_str());
    return 1;
  }
  {  // NVRTC's first call loads its builtins (docs/cuda-backend.md): timed apart
    const double t0 = thread_cpu_ms();
    const auto w = Clock::now();
    cuda::compile_to_cubin("extern \"C\" __global__ void warm() {}", "warm", "sm_90a");
    std::printf("NVRTC's first call: %.1f ms CPU, %.1f ms wall\n", thread_cpu_ms() - t0,
                std::chrono::duration<double, std::milli>(Clock::now() - w).count());
  }
  std::string phase;
  std::set<std::string> seen;
  std::vector<Compiled> others;
  std::map<std::string, int> matmul_cpu_forms;
  tritium::jit::set_compile_observer([&](ir::Function& f, const Device&, const tritium::jit::CompileOptions& opts) {
    if (f.name.rfind("matmul", 0) == 0) {  // the CPU's form: the census adds the CUDA form below
      ++matmul_cpu_forms[f.name];
      return;
    }
    const std::string key = fmt::format("{} w{} s{}", ir::print(f), opts.num_warps, opts.num_stages);
    if (!seen.insert(key).second) return;
    Compiled c = compile_for_h100(f, opts, dump);
    c.phase = phase;
    others.push_back(c);
  });
  auto run = [&](const std::string& what, std::vector<std::string> args) {
    phase = what;
    args.insert(args.begin(), "train-mnist");
    std::vector<char*> argv2;
    for (auto& a : args) argv2.push_back(a.data());
    std::printf("== %s: train-mnist", what.c_str());
    for (size_t i = 1; i < args.size(); ++i) std::printf(" %s", args[i].c_str());
    std::printf("\n");
    std::fflush(stdout);
    const int rc = train_mnist_main(static_cast<int>(argv2.size()), argv2.data());
    if (rc != 0) std::exit(rc);
  };
  run("init, batches of 128, eval 1000", {"--backend", "cpu", "--epochs", "1", "--limit-batches", "2", "--workers", "0",
                                          "--data", data});
  run("the last batch (96)", {"--backend", "cpu", "--epochs", "1", "--limit-batches", "1", "--batch-size", "96",
                              "--workers", "0", "--data", data});
  tritium::jit::set_compile_observer({});

  std::printf("\n== kernels other than matmul, generated for sm_90a (distinct IR and options)\n");
  print_table(others);
  std::printf("total: %zu kernels, %.0f ms CPU\n", others.size(), sum_cpu(others));

  // The products in their CUDA form: every candidate (tune) and the heuristic's choice.
  std::vector<Product> products;
  for (int64_t batch : {128, 96}) {
    auto p = mlp_products(batch, true);
    products.insert(products.end(), p.begin(), p.end());
  }
  for (const Product& p : mlp_products(1000, false)) products.push_back(p);
  std::map<std::string, Compiled> by_ir;  // distinct matmul kernels, compiled once
  std::vector<std::string> heuristic_keys, tune_keys;
  std::set<std::string> heuristic_set, tune_set;
  int64_t candidates_total = 0;
  std::printf("\n== the MLP's products: candidates (FMA tiles, fp32) and the heuristic's choice\n");
  for (const Product& p : products) {
    const auto cands = tritium::ops::matmul_gpu_candidates(p.m, p.n, p.k, tritium::DType::f32, false);
    const size_t pick = tritium::ops::matmul_gpu_heuristic(cands, {p.m, p.n, p.k}, 132);
    const double est = tritium::ops::matmul_estimate_ms(p.m, p.n, p.k, 1, tritium::DType::f32, false, {});
    tritium::AutotuneOptions o;
    o.warmup_ms = 10, o.rep_ms = 40;
    std::printf("%-40s M %5lld N %4lld K %4lld: %2zu candidates, heuristic %s, estimate %.4f ms, tuned after %lld launches\n",
                p.what.c_str(), static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
                cands.size(), cands[pick].str().c_str(), est,
                static_cast<long long>(tritium::launches_before_tuning(est, cands.size(), o)));
    candidates_total += static_cast<int64_t>(cands.size());
    for (size_t i = 0; i < cands.size(); ++i) {
      auto f = trace_product(p, cands[i]);
      const std::string key = fmt::format("{} w{} s{}", ir::print(*f), cands[i].num_warps, cands[i].num_stages);
      if (!by_ir.count(key)) {
        tritium::jit::CompileOptions co;
        co.num_warps = cands[i].num_warps, co.num_stages = cands[i].num_stages;
        Compiled c = compile_for_h100(*f, co, dump);
        c.phase = fmt::format("{} {}", p.bias ? "epilogue" : "plain", cands[i].str());
        by_ir[key] = c;
      }
      tune_set.insert(key);
      if (i == pick) heuristic_set.insert(key);
    }
  }
  std::vector<Compiled> tuned, heuristic;
  for (const auto& k : tune_set) tuned.push_back(by_ir[k]);
  for (const auto& k : heuristic_set) heuristic.push_back(by_ir[k]);
  std::printf("\n== distinct matmul kernels under TRITIUM_AUTOTUNE=heuristic (and auto)\n");
  print_table(heuristic);
  std::printf("total: %zu kernels, %.0f ms CPU\n", heuristic.size(), sum_cpu(heuristic));
  std::printf("\n== distinct matmul kernels under TRITIUM_AUTOTUNE=tune (every candidate of every key)\n");
  print_table(tuned);
  std::printf("total: %zu kernels (%lld candidates over %zu keys), %.0f ms CPU\n", tuned.size(),
              static_cast<long long>(candidates_total), products.size(), sum_cpu(tuned));
  std::printf("\nmatmul specialisations the CPU run compiled (CPU form, not counted):");
  for (const auto& [name, n] : matmul_cpu_forms) std::printf(" %s %d", name.c_str(), n);
  std::printf("\nsummary: heuristic/auto %zu kernels %.0f ms CPU; tune %zu kernels %.0f ms CPU (+ benchmarks)\n",
              others.size() + heuristic.size(), sum_cpu(others) + sum_cpu(heuristic), others.size() + tuned.size(),
              sum_cpu(others) + sum_cpu(tuned));
  return 0;
}
