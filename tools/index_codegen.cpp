// The CUDA code of the indexing ops' kernel without a GPU (issue 29): ops::gather and
// ops::scatter_add on bench/ops_bench_table.cpp's shapes (input and index [rows, 1024], i64
// indices, dim 1) run index_copy (ops/indexing.cpp) with the launch arguments generated here; the
// tool traces it as a launch would, generates it as the CUDA backend does (the PTX generator when it
// takes the kernel, else NVRTC) for sm_90a, prints the generator and the SASS instructions, and
// writes the source and the cubin under a directory (cuobjdump -sass / nvdisasm).
//   index-codegen <gather|scatter_add> <f32|bf16|f16> [dump directory] [rows] [tile]
// (tile: the elements a program takes; ops/indexing.cpp's choice when left out.)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <tritium/tritium.h>

#include "jit/cuda/codegen.h"
#include "jit/cuda/cubin_stats.h"
#include "jit/cuda/nvjitlink.h"
#include "jit/cuda/nvrtc.h"
#include "jit/cuda/ptx_codegen.h"
#include "jit/passes/axis_info.h"
#include "jit/passes/contract_fma.h"
#include "jit/passes/dce.h"
#include "ops/elementwise_kernels.h"
#include "ops/indexing_kernels.h"

namespace cuda = tritium::jit::cuda;
namespace detail = tritium::ops::detail;
using tritium::DType;

namespace {

template <class T> T* fake(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: index-codegen <gather|scatter_add> <f32|bf16|f16> [dump directory] [rows] [tile]\n";
    return 2;
  }
  const std::string op = argv[1], dt = argv[2];
  const std::string dump = argc > 3 ? argv[3] : "";
  const int64_t rows = argc > 4 ? std::atoll(argv[4]) : 16384, cols = 1024;
  if (op != "gather" && op != "scatter_add") {
    std::cerr << "index-codegen: unknown op " << op << "\n";
    return 2;
  }
  if (!cuda::nvrtc_available()) {
    std::cerr << "index-codegen: NVRTC is unavailable\n";
    return 1;
  }
  const DType io = dt == "bf16" ? DType::bf16 : dt == "f16" ? DType::f16 : DType::f32;
  const bool scatter = op == "scatter_add";
  // The arguments ops/indexing.cpp's launch() passes for contiguous [rows, 1024] tensors along dim 1:
  // rank 2, rows x 1024 columns; dst/src/index outer strides 1024; the indexed side's column stride
  // 0 (the index supplies it), the others 1.
  const int64_t one = 1, zero = 0;
  const int64_t tile = argc > 5 ? std::atoll(argv[5]) : detail::kIndexCopyTile;
  const int64_t bc = cols >= tile ? tile : cols, br = std::max<int64_t>(1, tile / bc);
  const int mode = scatter ? 1 : 0, side = scatter ? 2 : 1, check = 1;
  const int64_t a_col = scatter ? zero : one, b_col = scatter ? one : zero;
  // COLS (ops/indexing.cpp's ColumnStrides): dst unit and src zero (gather) or the reverse
  // (scatter), index unit.
  const int cols_known = (a_col == 1 ? 1 : 16) | (b_col == 1 ? 2 : 32) | 4;
  auto trace = [&](auto tag) {
    using T = decltype(tag);
    return detail::index_copy_kernel().optimized_function(
        fake<T>(0), fake<T>(1), fake<int64_t>(2), fake<int64_t>(3), cols, one, rows, cols,  //
        rows, one, one, one, one,                                                         //
        cols, zero, zero, zero, zero, a_col,                                              //
        cols, zero, zero, zero, zero, b_col,                                              //
        cols, zero, zero, zero, zero, one,                                                //
        2, mode, side, check, static_cast<int>(io), static_cast<int>(br), static_cast<int>(bc), cols_known);
  };
  std::unique_ptr<tritium::ir::Function> f =
      io == DType::bf16 ? trace(tritium::bf16_t{}) : io == DType::f16 ? trace(tritium::f16_t{}) : trace(float{});
  std::optional<tritium::jit::AxisInfoMap> axis;
  if (cuda::contract_for_cuda(*f)) tritium::jit::eliminate_dead_code(*f);
  axis = tritium::jit::analyze_axis_info(*f);
  tritium::jit::CompileOptions opts;
  opts.num_warps = 4;
  std::vector<char> cubin;
  std::string source, gen, declined;
  if (cuda::nvjitlink_available())
    if (auto pk = cuda::generate_ptx(*f, *axis, opts, "sm_90a", &declined))
      gen = "ptx", source = pk->source, cubin = cuda::ptx_to_cubin(pk->source, pk->entry, "sm_90a");
  if (gen.empty()) {
    cuda::KernelSource ks = cuda::generate_cuda(*f, *axis, opts, 219 * 1024);
    std::vector<std::string> options = {"--fmad=false"};
    if (cuda::compiles_fast(*f)) options.push_back(cuda::kFastCompileOption);
    gen = options.size() > 1 ? "nvrtc-fast" : "nvrtc";
    source = ks.source, cubin = cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a", options);
  }
  std::printf("%s %s [%lld, %lld], tile [%lld, %lld]: %s%s%s, %lld SASS instructions\n", op.c_str(), dt.c_str(),
              static_cast<long long>(rows), static_cast<long long>(cols), static_cast<long long>(br),
              static_cast<long long>(bc), gen.c_str(), declined.empty() ? "" : " (PTX declined: ",
              declined.empty() ? "" : (declined + ")").c_str(), static_cast<long long>(cuda::cubin_instructions(cubin)));
  if (!dump.empty()) {
    const std::string base = dump + "/" + op + "_" + dt;
    std::ofstream(base + ".cubin", std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    std::ofstream(base + (gen == "ptx" ? ".ptx" : ".cu")) << source;
  }
  return 0;
}
