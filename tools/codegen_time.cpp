// Compile time of CUDA code generation, without a GPU: tutorial 03's matmul kernel (its own source,
// included) for every config of its CUDA autotune list at M = N = K = 4096, through the layout
// generator, each generated and NVRTC-compiled to a cubin for sm_90a. Prints, per config, the
// kernel's lines and the compile's CPU time (this process's, so a loaded machine's waiting is left
// out) - the figures of issue 27's "layouts compile as fast as the matcher" (docs/cuda-backend.md,
// "Register loops"; the matcher, the element-loop generator's `legacy` side, went at stop 41).
//   codegen-time [f16|bf16] [layouts] [config index] [dump directory]
#define main tutorial03_main
#include "03-matrix-multiplication.cpp"
#undef main

#include <ctime>
#include <fstream>
#include <iostream>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"

namespace {

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// Distinct 1 MB-aligned addresses: the specialisation sees 16-byte aligned pointers, as a launch's.
template <class T>
T* fake_address(uint64_t i) {
  return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000);
}

}  // namespace

int main(int argc, char** argv) {
  namespace cuda = tritium::jit::cuda;
  const std::string dtype = argc > 1 ? argv[1] : "f16", which = argc > 2 ? argv[2] : "both";
  const int only = argc > 3 ? std::atoi(argv[3]) : -1;
  const std::string dump = argc > 4 ? argv[4] : "";
  if (which == "legacy" || which == "both") {
    std::cerr << "codegen-time: the matmul-loop matcher ('legacy') was removed at stop 41 (issue 27)\n";
    return 2;
  }
  if ((dtype != "f16" && dtype != "bf16") || (which != "layouts" && which != "both")) {
    std::cerr << "usage: codegen-time [f16|bf16] [layouts] [config index] [dump directory]\n";
    return 2;
  }
  if (!cuda::nvrtc_available()) {
    std::cerr << "codegen-time: NVRTC is unavailable: " << cuda::nvrtc_unavailable_reason() << "\n";
    return 1;
  }
  const int n = 4096;
  const std::vector<tritium::Config> configs = get_cuda_autotune_config();
  double total = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    if (only >= 0 && static_cast<int>(i) != only) continue;
    const tritium::Config& c = configs[i];
    const int bm = static_cast<int>(c.meta["BLOCK_SIZE_M"]), bn = static_cast<int>(c.meta["BLOCK_SIZE_N"]);
    const int bk = static_cast<int>(c.meta["BLOCK_SIZE_K"]), group = static_cast<int>(c.meta["GROUP_SIZE_M"]);
    {
      const std::string mode = "layouts";
      std::unique_ptr<tritium::ir::Function> f =
          dtype == "f16"
              ? matmul_kernel.optimized_function(fake_address<tritium::f16_t>(1), fake_address<tritium::f16_t>(2),
                                                 fake_address<tritium::f16_t>(3), n, n, n, n, 1, n, 1, n, 1, bm, bn, bk, group, 0)
              : matmul_kernel.optimized_function(fake_address<tritium::bf16_t>(1), fake_address<tritium::bf16_t>(2),
                                                 fake_address<tritium::f16_t>(3), n, n, n, n, 1, n, 1, n, 1, bm, bn, bk, group, 0);
      tritium::jit::CompileOptions opts;
      opts.num_warps = c.num_warps;
      opts.num_stages = c.num_stages;
      const cuda::KernelSource ks = cuda::generate_cuda_layouts(*f, opts, 219 * 1024, 90);
      const double t0 = cpu_ms();
      std::vector<char> cubin = cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a");
      const double ms = cpu_ms() - t0;
      total += ms;
      size_t lines = 0;
      for (size_t p = ks.source.find("// Kernel "); p < ks.source.size(); ++p) lines += ks.source[p] == '\n';
      std::printf("%s config %zu (%s) %-7s: kernel lines %5zu, NVRTC %6.0f ms CPU, cubin %zu bytes\n", dtype.c_str(), i,
                  c.str().c_str(), mode.c_str(), lines, ms, cubin.size());
      if (!dump.empty()) {
        const std::string stem = dump + "/" + dtype + "_config" + std::to_string(i) + "_" + mode;
        std::ofstream(stem + ".cu") << ks.source;
        std::ofstream(stem + ".cubin", std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
      }
    }
  }
  std::printf("total NVRTC CPU time: layouts %.0f ms\n", total);
  return 0;
}
