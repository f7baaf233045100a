// Tutorial 06's forward kernel generated for sm_90a without a GPU, to read its code (issue 27,
// "attention forward against Triton's"): traces the tutorial's own _attn_fwd for one config,
// generates CUDA as the CUDA backend does (contraction in the IR, --fmad=false), compiles it with NVRTC and writes the source and
// cubin (read the SASS with cuobjdump -sass, registers with cuobjdump -res-usage).
//   attn-codegen BLOCK_M BLOCK_N num_warps num_stages HEAD_DIM STAGE(1 full, 3 causal) [f16|bf16] DIR
#define main tutorial06_main
#include "06-fused-attention.cpp"
#undef main

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
}  // namespace

int main(int argc, char** argv) {
  namespace cuda = tritium::jit::cuda;
  if (argc != 9 && argc != 8) {
    std::cerr << "usage: attn-codegen BLOCK_M BLOCK_N num_warps num_stages HEAD_DIM STAGE [f16|bf16] DIR\n";
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
  tritium::jit::CompileOptions opts;
  opts.num_warps = nw;
  opts.num_stages = ns;
  // As the CUDA backend compiles it (jit/cuda/cuda_backend.cpp, generate): the IR's contraction,
  // the routing of generate_cuda, NVRTC without contraction of its own.
  if (tritium::jit::contract_multiply_add(*f)) tritium::jit::eliminate_dead_code(*f);
  const cuda::KernelSource ks = cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts, 219 * 1024, 90);
  std::vector<char> cubin = cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a", {"--fmad=false"});
  const std::string stem = dir + "/attn_fwd_" + dtype + "_m" + std::to_string(bm) + "_n" + std::to_string(bn) + "_w" +
                           std::to_string(nw) + "_s" + std::to_string(ns) + "_d" + std::to_string(d) + "_st" +
                           std::to_string(stage);
  std::ofstream(stem + ".cu") << ks.source;
  std::ofstream(stem + ".cubin", std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  std::printf("%s: cubin %zu bytes\n", stem.c_str(), cubin.size());
  return 0;
}
