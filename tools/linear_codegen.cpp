// ops::matmul's kernel for one of a Linear layer's three products, generated for sm_90a without a
// GPU, to read its code (issues 27, 31): x [M, K] and W [N, K] row-major, g [M, N] the output's
// gradient; fwd = x @ W^T, dgrad = g @ W, wgrad = g^T @ x (f32: exact fp32 products, the FMA dot;
// tf32: fp32 on tensor cores), each with the strides and block-pointer
// form (ops::matmul_block_pointers) the op launches, for one config; with SPLITS > 1 the split-K
// kernel over chunks of K / SPLITS. (In tf32 the op copies a small MN-major operand K-major first -
// W in dgrad - and then launches the forward's form; this generates the strides as given.) Generated as the CUDA backend does (contraction in the IR,
// generate_cuda's routing, NVRTC with --fmad=false); writes the source and the cubin (read the SASS
// with cuobjdump -sass, registers with cuobjdump -res-usage).
//   linear-codegen bf16|f16|f32|tf32 fwd|dgrad|wgrad M K N BLOCK_M BLOCK_N BLOCK_K num_warps num_stages SPLITS DIR
#include <tritium/tritium.h>

#include <fstream>
#include <iostream>
#include <string>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "jit/passes/axis_info.h"
#include "jit/passes/contract_fma.h"
#include "jit/passes/dce.h"
#include "ops/matmul_block_pointers.h"
#include "ops/matmul_split_k.h"
#include "ops/ops.h"

namespace {
template <class T>
T* fake_address(uint64_t i) {  // 1 MB apart: 16-byte aligned pointers, as a launch's
  return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000);
}
}  // namespace

int main(int argc, char** argv) {
  namespace cuda = tritium::jit::cuda;
  using tritium::DType;
  if (argc != 13) {
    std::cerr << "usage: linear-codegen bf16|f16|f32|tf32 fwd|dgrad|wgrad M K N BLOCK_M BLOCK_N BLOCK_K num_warps "
                 "num_stages SPLITS DIR\n";
    return 2;
  }
  const std::string dtype = argv[1], product = argv[2], dir = argv[12];
  const int64_t m = std::atoll(argv[3]), k = std::atoll(argv[4]), n = std::atoll(argv[5]);
  const int bm = std::atoi(argv[6]), bn = std::atoi(argv[7]), bk = std::atoi(argv[8]);
  const int nw = std::atoi(argv[9]), ns = std::atoi(argv[10]), splits = std::atoi(argv[11]);
  const DType dt = dtype == "bf16" ? DType::bf16 : dtype == "f16" ? DType::f16 : DType::f32;
  const bool tf32 = dtype == "tf32";
  if ((dtype != "bf16" && dtype != "f16" && dtype != "f32" && !tf32) || (product != "fwd" && product != "dgrad" && product != "wgrad")) {
    std::cerr << "linear-codegen: bad dtype or product\n";
    return 2;
  }
  // The product's (PM, PN, PK) and operand strides, as compare_ops_matmul.py's views give them.
  int64_t pm = m, pn = n, pk = k, sam = k, sak = 1, sbk = 1, sbn = k;  // fwd: x @ W^T
  if (product == "dgrad") pm = m, pn = k, pk = n, sam = n, sak = 1, sbk = k, sbn = 1;
  if (product == "wgrad") pm = n, pn = k, pk = m, sam = 1, sak = n, sbk = k, sbn = 1;
  const int bp = tritium::ops::matmul_block_pointers(dt, tf32, sam, sak, sbk, sbn, 90, 1);
  const tritium::Meta meta{{"BLOCK_M", bm}, {"BLOCK_N", bn},           {"BLOCK_K", bk},
                           {"GROUP_M", 8},  {"TF32", tf32 ? 1 : 0},    {"CARRY_POINTERS", bp == 0},
                           {"BLOCK_POINTERS", bp}};
  const int64_t chunk = splits > 1 ? ((pk + splits - 1) / splits + 63) / 64 * 64 : pk;
  auto trace = [&](auto a) {
    auto c32 = fake_address<float>(3);
    const auto M = static_cast<int32_t>(pm), N = static_cast<int32_t>(pn), K = static_cast<int32_t>(pk);
    if (splits > 1)
      return tritium::ops::split_k::product_kernel(dt).optimized_function(
          a, a + 0x100000 / sizeof(*a), c32, M, N, K, sam, sak, sbk, sbn, int64_t{pn}, int64_t{1}, int64_t{1},
          int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, static_cast<int32_t>(chunk),
          int64_t{pm * pn}, meta);
    return tritium::ops::matmul_kernel(dt).optimized_function(
        a, a + 0x100000 / sizeof(*a), a + 0x200000 / sizeof(*a), M, N, K, sam, sak, sbk, sbn, int64_t{pn}, int64_t{1},
        int64_t{1}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, meta);
  };
  std::unique_ptr<tritium::ir::Function> f = dt == DType::bf16  ? trace(fake_address<tritium::bf16_t>(0))
                                             : dt == DType::f16 ? trace(fake_address<tritium::f16_t>(0))
                                                                : trace(fake_address<float>(0));
  tritium::jit::CompileOptions opts;
  opts.num_warps = nw;
  opts.num_stages = ns;
  if (tritium::jit::contract_multiply_add(*f)) tritium::jit::eliminate_dead_code(*f);
  const cuda::KernelSource ks = cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts, 219 * 1024, 90);
  std::vector<char> cubin = cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a", {"--fmad=false"});
  const std::string stem = dir + "/linear_" + dtype + "_" + product + "_m" + std::to_string(bm) + "_n" +
                           std::to_string(bn) + "_k" + std::to_string(bk) + "_w" + std::to_string(nw) + "_s" +
                           std::to_string(ns) + "_S" + std::to_string(splits);
  std::ofstream(stem + ".cu") << ks.source;
  std::ofstream(stem + ".cubin", std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  std::printf("%s: BLOCK_POINTERS %d, %zu tensor maps, cubin %zu bytes\n", stem.c_str(), bp, ks.tma_maps.size(),
              cubin.size());
  for (const std::string& map : ks.tma_maps) std::printf("  map %s\n", map.c_str());
  return 0;
}
