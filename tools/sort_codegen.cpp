// One row-sorting kernel over tl::sort without a GPU (issues 28/29): a program loads one row of N
// f32 values, sorts it (descending, as sparsemax does) with tl::sort and stores it, generated as
// the CUDA backend generates it (generate_cuda's routing) or through the layout generator, and
// NVRTC-compiled for sm_90a; `ops`: the op library's sort_block kernel (ops/sort.cpp) on one f32
// row of N, keeping the first K (K = N: a full sort; else tl::topk), routed as the backend does;
// `select`: radix selection's select_rows (ops/select.cpp) on one f32 row of N (32 one-bit counts,
// the median's rank), or on K rows of N a program; `count`: select_count's first digit pass over 2^20 f32 in blocks of N.
// Prints the SASS instructions, registers and the __syncthreads of the source; writes the .cu and
// the cubin under a directory for cuobjdump -sass. The same tl.sort in Triton: bench/triton_sort_sass.py.
//   sort-codegen <N> <num_warps> <routed|layouts|ops|select|count> [dump directory] [K]
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include <tritium/tritium.h>

#include "jit/cuda/codegen.h"
#include "jit/cuda/cubin_stats.h"
#include "jit/cuda/nvrtc.h"
#include "jit/passes/axis_info.h"
#include "jit/passes/contract_fma.h"
#include "jit/passes/dce.h"
#include "ops/reduce_kernels.h"
#include "ops/select.h"

namespace tl = tritium::tl;
namespace cuda = tritium::jit::cuda;

namespace {

template <class T> T* fake(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000); }

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: sort-codegen <N> <num_warps> <routed|layouts|ops|select|count> [dump directory] [K]\n";
    return 2;
  }
  const int n = std::atoi(argv[1]), warps = std::atoi(argv[2]);
  const bool layouts = std::strcmp(argv[3], "layouts") == 0, op = std::strcmp(argv[3], "ops") == 0;
  const std::string dump = argc > 4 ? argv[4] : "";
  const int K = argc > 5 ? std::atoi(argv[5]) : n;
  if (!cuda::nvrtc_available()) {
    std::cerr << "sort-codegen: NVRTC is unavailable\n";
    return 1;
  }
  auto k = tritium::kernel("sort_row", [](tl::ptr<float> x, tl::ptr<float> out, int N) {
    auto offs = tl::program_id(0) * N + tl::arange(0, N);
    tl::store(out + offs, tl::sort(tl::load(x + offs), std::nullopt, true));
  });
  const bool select = std::strcmp(argv[3], "select") == 0, count = std::strcmp(argv[3], "count") == 0;
  namespace od = tritium::ops::detail;
  auto f = op       ? od::sort_block_kernel().optimized_function(fake<float>(0), fake<float>(1), fake<int64_t>(2),
                                                                 int64_t{1} << 20, int64_t{n}, int64_t{K}, false, 1, n, K)
           : select ? od::select_rows_kernel().optimized_function(fake<float>(0), fake<float>(1), fake<int64_t>(2),
                                                                  int64_t{1} << 10, int64_t{n}, int64_t{0}, 32,
                                                                  argc > 5 ? K : 1, n)
           : count  ? od::select_count_kernel().optimized_function(fake<float>(0), fake<int32_t>(1), int64_t{1} << 20,
                                                                   int64_t{0}, int64_t{2048}, int64_t{512}, 32, 0, false, n)
                    : k.optimized_function(fake<float>(0), fake<float>(1), n);
  if (tritium::jit::contract_multiply_add(*f)) tritium::jit::eliminate_dead_code(*f);
  tritium::jit::CompileOptions opts;
  opts.num_warps = warps;
  cuda::KernelSource ks = layouts ? cuda::generate_cuda_layouts(*f, opts, 219 * 1024, 90)
                                  : cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts, 219 * 1024, 90);
  std::vector<char> cubin = cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a");
  const std::string body = ks.source.substr(ks.source.find("__global__"));
  std::printf("sort %d on %d warps (%s): %lld SASS instructions, %d registers, %zu __syncthreads in the source\n", n,
              warps, argv[3], static_cast<long long>(cuda::cubin_instructions(cubin)),
              cuda::cubin_registers(cubin), occurrences(body, "__syncthreads"));
  if (!dump.empty()) {
    const std::string stem = dump + "/sort_" + std::to_string(n) + "_" + std::to_string(warps) + "_" + argv[3] + (op ? "_k" + std::to_string(K) : "");
    std::ofstream(stem + ".cubin", std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    std::ofstream(stem + ".cu") << ks.source;
  }
  return 0;
}
