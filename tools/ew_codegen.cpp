// The CUDA code of one element-wise op without a GPU (issue 29): the contiguous elementwise
// kernel's body (ops/elementwise.cpp: one or two operands loaded, converted to the compute type,
// detail::apply_family, stored) over a 4096 block on 4 warps (32 elements a thread) unless given, generated as
// the CUDA backend generates it (the PTX generator when it takes the kernel, else NVRTC at the
// fast level for short kernels) for sm_90a. Prints the SASS instructions a thread, the registers
// and which generator; writes the cubin under a directory for cuobjdump -sass.
//   ew-codegen <op value> <f32|bf16|f16|f64> <operands 1|2> [dump directory] [block] [warps]
// Op values: ops/unary_math.cpp's enum M from 1000 (Ew::math_first), ops/activations.cpp's A
// from 2000.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include <tritium/tritium.h>

#include "common/env.h"
#include "jit/cuda/codegen.h"
#include "jit/cuda/cubin_stats.h"
#include "jit/cuda/nvjitlink.h"
#include "jit/cuda/nvrtc.h"
#include "jit/cuda/ptx_codegen.h"
#include "jit/passes/axis_info.h"
#include "jit/passes/contract_fma.h"
#include "jit/passes/dce.h"
#include "ops/elementwise_kernels.h"

namespace tl = tritium::tl;
namespace cuda = tritium::jit::cuda;
namespace detail = tritium::ops::detail;
using tritium::DType;

namespace {

template <class T> T* fake(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: ew-codegen <op value> <f32|bf16|f16|f64> <operands 1|2> [dump directory] [block] [warps]\n";
    return 2;
  }
  const int op = std::atoi(argv[1]);
  const std::string dt = argv[2];
  const int nin = std::atoi(argv[3]);
  const std::string dump = argc > 4 ? argv[4] : "";
  const int block = argc > 5 ? std::atoi(argv[5]) : 4096, warps = argc > 6 ? std::atoi(argv[6]) : 4;
  if (block < 32 * warps || (block & (block - 1)) != 0 || warps < 1 || warps > 32) {
    std::cerr << "ew-codegen: block must be a power of two of at least 32 x warps (warps 1 to 32)\n";
    return 2;
  }
  const DType io = dt == "bf16" ? DType::bf16 : dt == "f16" ? DType::f16 : dt == "f64" ? DType::f64 : DType::f32;
  if (!cuda::nvrtc_available()) {
    std::cerr << "ew-codegen: NVRTC is unavailable\n";
    return 1;
  }
  using P = tl::ptr<tl::any>;
  auto k = tritium::kernel("ew_probe", [](P out, P a, P b, tl::i64 n, tl::f64 e0, tl::f64 e1, tl::f64 e2, int OP, int NIN,
                                          int CDT, int BLOCK) {
    const DType cdt = static_cast<DType>(CDT);
    auto offs = tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto conv = [&](const tl::tensor& t) { return t.dtype() == cdt ? t : t.to(cdt); };
    detail::EwOperands v;
    v.x = conv(tl::load(a + offs, mask));
    if (NIN >= 2) v.y = conv(tl::load(b + offs, mask));
    v.e = {conv(e0), conv(e1), conv(e2)};
    tl::store(out + offs, detail::apply_family(static_cast<detail::Ew>(OP), cdt, v), mask);
  });
  const int cdt = static_cast<int>(detail::math_type(io));
  std::unique_ptr<tritium::ir::Function> f;
  auto trace = [&](auto tag) {
    using T = decltype(tag);
    return k.optimized_function(fake<T>(0), fake<T>(1), fake<T>(2), int64_t{1} << 24, 1.0, 1.0, 1.0, op, nin, cdt, block);
  };
  if (io == DType::bf16) f = trace(tritium::bf16_t{});
  else if (io == DType::f16) f = trace(tritium::f16_t{});
  else if (io == DType::f64) f = trace(double{});
  else f = trace(float{});
  if (tritium::jit::contract_multiply_add(*f)) tritium::jit::eliminate_dead_code(*f);
  tritium::jit::AxisInfoMap axis = tritium::jit::analyze_axis_info(*f);
  tritium::jit::CompileOptions opts;
  opts.num_warps = warps;
  std::vector<char> cubin;
  std::string source, gen;
  // As the CUDA backend (jit/cuda/cuda_backend.cpp): the PTX generator when it takes the kernel
  // (unless TRITIUM_FAST_COMPILE=0), else NVRTC with --fmad=false, at the fast level for short
  // kernels (unless TRITIUM_FAST_COMPILE=0).
  const bool fast = tritium::env().fast_compile;
  std::string declined;
  std::optional<cuda::KernelSource> pk;
  if (fast) pk = cuda::generate_ptx(*f, axis, opts, "sm_90a", &declined);
  if (pk) {
    gen = "ptx", source = pk->source, cubin = cuda::ptx_to_cubin(pk->source, pk->entry, "sm_90a");
  } else {
    cuda::KernelSource ks = cuda::generate_cuda(*f, axis, opts, 219 * 1024);
    std::vector<std::string> options = {"--fmad=false"};
    if (fast && cuda::compiles_fast(*f)) options.push_back(cuda::kFastCompileOption);
    gen = options.size() == 1 ? "nvrtc" : "nvrtc-fast";
    if (!declined.empty()) gen += " (PTX generator declined: " + declined + ")";
    source = ks.source, cubin = cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a", options);
  }
  std::printf("op %d %s: %s, %lld SASS instructions a thread (%d elements), %d registers\n", op, dt.c_str(),
              gen.c_str(), static_cast<long long>(cuda::cubin_instructions(cubin)), block / (32 * warps),
              cuda::cubin_registers(cubin));
  if (!dump.empty()) {
    std::ofstream(dump + "/ew_" + std::to_string(op) + "_" + dt + ".cubin", std::ios::binary).write(cubin.data(), cubin.size());
    std::ofstream(dump + "/ew_" + std::to_string(op) + "_" + dt + (gen == "ptx" ? ".ptx" : ".cu")) << source;
  }
  return 0;
}
