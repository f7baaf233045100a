// Tutorial 06's kernels generated for sm_90a without a GPU, to read their code beside Triton's (issue 27):
// traces the tutorial's own _attn_fwd (one config) or _attn_bwd (the tutorial's config), generates CUDA
// as the CUDA backend does (contraction in the IR, --fmad=false), compiles it with NVRTC and writes the
// source and cubin (read the SASS with cuobjdump -sass, registers with cuobjdump -res-usage).
//   attn-codegen BLOCK_M BLOCK_N num_warps num_stages HEAD_DIM STAGE(1 full, 3 causal) [f16|bf16] DIR
//   attn-codegen bwd HEAD_DIM CAUSAL(0|1) [f16|bf16] DIR [WARPS STAGES]   (default 4 warps, 5 stages, as the tutorial)
#define main tutorial06_main
#include "06-fused-attention.cpp"
#undef main

#include <cctype>
#include <fstream>
#include <iostream>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "jit/passes/axis_info.h"
#include "jit/passes/contract_fma.h"
#include "jit/passes/dce.h"

namespace {
template <class T>
T* fake_address(uint64_t i) {  // 1 MB apart: 16-byte aligned pointers, as a launch's
  return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000);
}

// As the CUDA backend compiles it (jit/cuda/cuda_backend.cpp, generate): the IR's contraction, the
// routing of generate_cuda, NVRTC without contraction of its own.
void compile_and_write(std::unique_ptr<tritium::ir::Function> f, int nw, int ns, const std::string& stem) {
  namespace cuda = tritium::jit::cuda;
  tritium::jit::CompileOptions opts;
  opts.num_warps = nw;
  opts.num_stages = ns;
  if (tritium::jit::contract_multiply_add(*f)) tritium::jit::eliminate_dead_code(*f);
  // An H100's budgets (cuda_backend.cpp): its opt-in 227 KB for the layout generator, less 8 KB else.
  const cuda::KernelSource ks =
      cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts, 219 * 1024, 90, 232448);
  std::vector<char> cubin = cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a", {"--fmad=false"});
  std::ofstream(stem + ".cu") << ks.source;
  std::ofstream(stem + ".cubin", std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  std::printf("%s: cubin %zu bytes\n", stem.c_str(), cubin.size());
}

// The backward as the tutorial launches it for its benchmark (B 4, H 32, N_CTX 4096, contiguous).
template <class T>
std::unique_ptr<tritium::ir::Function> bwd_function(int d, int causal) {
  const int n_ctx = 4096, h = 32, z = 4;
  (void)z;
  return _attn_bwd.optimized_function(
      fake_address<T>(1), fake_address<T>(2), fake_address<T>(3), 0.125f, fake_address<T>(4), fake_address<T>(5),
      fake_address<T>(6), fake_address<T>(7), fake_address<float>(8), fake_address<float>(9), h * n_ctx * d, n_ctx * d, d,
      1, h, n_ctx, 32, 128, 128, 32, 2, d, causal);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc >= 5 && std::string(argv[1]) == "bwd") {
    // bwd D C [dtype] DIR [WARPS STAGES]: the last two numbers, when there are two after DIR
    const bool config = argc == 8 || (argc == 7 && std::isdigit(static_cast<unsigned char>(argv[5][0])));
    const int last = config ? argc - 3 : argc - 1;  // DIR
    const int d = std::atoi(argv[2]), causal = std::atoi(argv[3]);
    const std::string dtype = last >= 5 ? argv[4] : "f16", dir = argv[last];
    const int nw = config ? std::atoi(argv[last + 1]) : 4, ns = config ? std::atoi(argv[last + 2]) : 5;
    auto f = dtype == "bf16" ? bwd_function<tritium::bf16_t>(d, causal) : bwd_function<tritium::f16_t>(d, causal);
    std::string stem = dir + "/attn_bwd_" + dtype + "_d" + std::to_string(d) + "_c" + std::to_string(causal);
    if (config) stem += "_w" + std::to_string(nw) + "_s" + std::to_string(ns);
    compile_and_write(std::move(f), nw, ns, stem);
    return 0;
  }
  if (argc != 9 && argc != 8) {
    std::cerr << "usage: attn-codegen BLOCK_M BLOCK_N num_warps num_stages HEAD_DIM STAGE [f16|bf16] DIR\n"
                 "       attn-codegen bwd HEAD_DIM CAUSAL [f16|bf16] DIR\n";
    return 2;
  }
  const int bm = std::atoi(argv[1]), bn = std::atoi(argv[2]), nw = std::atoi(argv[3]), ns = std::atoi(argv[4]);
  const int d = std::atoi(argv[5]), stage = std::atoi(argv[6]);
  const std::string dtype = argc == 9 ? argv[7] : "f16", dir = argv[argc - 1];
  const int n_ctx = 4096, z = 4, h = 32;
  std::unique_ptr<tritium::ir::Function> f =
      dtype == "bf16" ? _attn_fwd.optimized_function(0.125f, fake_address<float>(1), z, h, fake_address<tritium::bf16_t>(2),
                                                     fake_address<tritium::bf16_t>(3), fake_address<tritium::bf16_t>(4),
                                                     fake_address<tritium::bf16_t>(5), n_ctx, d, bm, bn, 0, stage)
                      : _attn_fwd.optimized_function(0.125f, fake_address<float>(1), z, h, fake_address<tritium::f16_t>(2),
                                                     fake_address<tritium::f16_t>(3), fake_address<tritium::f16_t>(4),
                                                     fake_address<tritium::f16_t>(5), n_ctx, d, bm, bn, 0, stage);
  compile_and_write(std::move(f), nw, ns,
                    dir + "/attn_fwd_" + dtype + "_m" + std::to_string(bm) + "_n" + std::to_string(bn) + "_w" +
                        std::to_string(nw) + "_s" + std::to_string(ns) + "_d" + std::to_string(d) + "_st" +
                        std::to_string(stage));
  return 0;
}
