// The sampling kernels (ops/sampling_kernels.h) through the CUDA code generator without a GPU:
// each is traced with the argument kinds the op library launches it with, turned into CUDA C++
// and compiled by NVRTC for sm_90a and sm_80. Running them (and checking their numbers against
// the CPU's) is test_sampling's job on a GPU machine. Skips when libnvrtc cannot be opened.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <string>
#include <vector>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "jit/passes/axis_info.h"
#include "ops/sampling_kernels.h"

namespace cuda = tritium::jit::cuda;
namespace detail = tritium::ops::detail;
using tritium::DType;

namespace {

template <class T> T* addr(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000); }

// sm_90a always; sm_80 too with `also_sm80` (kept to the kernels with loops, branches and block
// sorts, to keep the suite quick: NVRTC takes about a second per kernel here).
template <class... A> void compile_for(bool also_sm80, tritium::Kernel& k, const A&... args) {
  auto f = k.optimized_function(args...);
  tritium::jit::AxisInfoMap axis = tritium::jit::analyze_axis_info(*f);
  tritium::jit::CompileOptions opts;
  opts.num_warps = 4;
  cuda::KernelSource ks = cuda::generate_cuda(*f, axis, opts, cuda::kSharedMemoryBudget);
  for (const char* arch : {"sm_90a", "sm_80"}) {
    if (!also_sm80 && std::string(arch) == "sm_80") continue;
    std::vector<char> cubin;
    try {
      cubin = cuda::compile_to_cubin(ks.source, ks.entry, arch);
    } catch (const tritium::Error& e) {
      BOOST_ERROR("kernel " << ks.entry << " does not compile for " << arch << ":\n" << e.what());
    }
    BOOST_TEST(!cubin.empty(), ks.entry << " for " << arch);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_sampling_codegen)

BOOST_AUTO_TEST_CASE(sampling_kernels_compile_for_sm90a_and_sm80) {
  if (!cuda::nvrtc_available()) {
    BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << cuda::nvrtc_unavailable_reason());
    return;
  }
  const int64_t n = 1000;
  const uint64_t seed = 5, base = 7;
  // Every distribution of the element-wise sampler (DIST 0..6, ops/sampling.cpp's Dist) into
  // f32, with tensor parameters for normal and bernoulli; then f16, f64 and i64 outputs.
  struct Case {
    int dist;
    DType out;
  };
  const std::vector<Case> cases = {{0, DType::f32}, {1, DType::f32}, {2, DType::f32}, {3, DType::f32},
                                   {4, DType::f32}, {5, DType::f32}, {6, DType::f32}, {0, DType::f16},
                                   {0, DType::f64}, {5, DType::i64}, {6, DType::i64}};
  for (const Case& c : cases) {
    const DType compute = c.dist >= 3 || c.out == DType::i64 ? DType::f64 : c.out == DType::f16 ? DType::f32 : c.out;
    const bool tensors = c.dist == 0 || c.dist == 5;
    const bool wide = c.dist == 6 && c.out == DType::i64;
    compile_for(c.dist == 0 && c.out == DType::f32, detail::sampler_kernel(), addr<float>(0),
                tensors ? addr<double>(1) : nullptr, tensors && c.dist == 0 ? addr<float>(2) : nullptr, n, seed, base,
                0.5, 2.0, int64_t(-3), uint64_t(wide ? 0 : 10), c.dist, static_cast<int>(c.out),
                static_cast<int>(compute), wide, 1024);
  }
  compile_for(false, detail::outside_kernel(), addr<float>(0), addr<int32_t>(1), n, 0.0, 1.0, 1024);
  compile_for(true, detail::poisson_kernel(), addr<float>(0), addr<float>(1), n, seed, base, 256);
  compile_for(false, detail::poisson_kernel(), addr<double>(0), addr<double>(1), n, seed, base, 256);
  for (bool write : {true, false})
    compile_for(write, detail::multinomial_rows_kernel(), addr<float>(0), addr<double>(1), addr<double>(2),
                 addr<int32_t>(3), addr<int64_t>(4), int64_t(1500), write, 256);
  compile_for(true, detail::multinomial_draw_kernel(), addr<double>(0), addr<double>(1), addr<int64_t>(2),
               int64_t(1500), int64_t(300), int32_t(12), seed, base, 256);
  compile_for(false, detail::race_keys_kernel(), addr<float>(0), addr<uint64_t>(1), int64_t(1500), int64_t(2048),
               int64_t(11), seed, base, 1024);
  compile_for(false, detail::key_index_kernel(), addr<uint64_t>(0), addr<int64_t>(1), int64_t(2048), int64_t(300),
               int64_t(11), 1024);
  compile_for(false, detail::randperm_keys_kernel(), addr<uint64_t>(0), n, int64_t(1024), int64_t(10), seed, base, 1024);
  compile_for(true, detail::block_sort_kernel(), addr<uint64_t>(0), int64_t(4096), int64_t(1024), 1024);
  compile_for(false, detail::merge_pass_kernel(), addr<uint64_t>(0), int64_t(4096), int64_t(4096), int64_t(1024), 1024);
}

BOOST_AUTO_TEST_SUITE_END()
