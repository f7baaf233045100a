// The GradScaler's kernels' CUDA code without a GPU (issue 31 item 4): amp_foreach_unscale_and_check (a
// block reduction of the inf/NaN flag, a conditional scalar store) and amp_update_scale (scalar
// loads, selects and stores in one program) are traced, generated and compiled by NVRTC for
// sm_90a and sm_80, and so are clip_grad_norm_'s multi-tensor kernels. Running them is for the GPU
// machine (tests/test_amp_grad_scaler.cpp, tests/test_nn_optim_more.cpp).
#include <boost/test/unit_test.hpp>

#ifdef TRITIUM_HAS_CUDA_BACKEND
#include <tritium/tritium.h>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "jit/passes/axis_info.h"
#include "nn/clip_grad.h"
#include "nn/grad_scaler.h"

namespace cuda = tritium::jit::cuda;

namespace {

template <class T> T* addr(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x1000000); }

template <class... A> void compiles(tritium::Kernel& k, const A&... args) {
  tritium::jit::CompileOptions opts;
  opts.num_warps = 4;
  for (auto [cc, arch] : {std::pair{90, "sm_90a"}, std::pair{80, "sm_80"}}) {
    auto copy = k.optimized_function(args...);  // generation may change the IR: a fresh trace each
    cuda::KernelSource ks = cuda::generate_cuda(*copy, tritium::jit::analyze_axis_info(*copy), opts,
                                                cuda::kSharedMemoryBudget, cc);
    std::vector<char> cubin;
    try {
      cubin = cuda::compile_to_cubin(ks.source, ks.entry, arch);
    } catch (const tritium::Error& e) {
      BOOST_ERROR("kernel " << ks.entry << " does not compile for " << arch << ":\n" << e.what());
    }
    BOOST_TEST(!cubin.empty(), ks.entry << " for " << arch);
  }
}

bool nvrtc_present() {
  if (cuda::nvrtc_available()) return true;
  BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << cuda::nvrtc_unavailable_reason());
  return false;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_amp_codegen)

BOOST_AUTO_TEST_CASE(grad_scaler_kernels_compile_for_sm90a_and_sm80) {
  if (!nvrtc_present()) return;
  compiles(tritium::nn::detail::unscale_kernel(), addr<int64_t>(0), addr<float>(1), addr<float>(2), 1024);
  compiles(tritium::nn::detail::update_scale_kernel(), addr<float>(0), addr<int32_t>(1), addr<float>(2), 2.0f, 0.5f,
           2000);
}

// clip_grad_norm_'s multi-tensor kernels (the 2-norm's partial sums, the scale read from the
// device), f32 and bf16 gradients.
BOOST_AUTO_TEST_CASE(clip_grad_norm_kernels_compile_for_sm90a_and_sm80) {
  if (!nvrtc_present()) return;
  for (tritium::DType dt : {tritium::DType::f32, tritium::DType::bf16}) {
    compiles(tritium::nn::detail::foreach_partial_norm_kernel(), addr<int64_t>(0), addr<float>(1), dt, 1024);
    compiles(tritium::nn::detail::foreach_clip_kernel(), addr<int64_t>(0), addr<float>(1), 1.0f, dt, 1024);
  }
}

BOOST_AUTO_TEST_SUITE_END()
#endif
