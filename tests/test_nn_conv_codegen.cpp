// The convolution kernels' CUDA code without a GPU (issue 30 item 1): the implicit-GEMM forward
// kernel (conv2d's forward and dgrad, conv_transpose2d's forward) and the weight-gradient kernel,
// traced at a ResNet-50 layer shape (batch 64, bf16, channels-last input and weight), generated
// through the layout generator and compiled by NVRTC for sm_90a and sm_80: the dot must run on
// tensor cores (wgmma on Hopper, mma.sync on Ampere) and the gathered tiles be loaded with
// cp.async into pipeline stages. Running them is for the GPU machine (tests/test_nn_conv.cpp).
#include <boost/test/unit_test.hpp>

#ifdef TRITIUM_HAS_CUDA_BACKEND
#include <tritium/tritium.h>

#include <cstdlib>
#include <fstream>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "ops/conv_gemm.h"

namespace cuda = tritium::jit::cuda;
using tritium::bf16_t;

namespace {

template <class T> T* addr(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x1000000); }

template <class... A>
std::string compile_for(tritium::Kernel& k, int num_warps, int num_stages, int cc, const std::string& arch,
                        const A&... args) {
  auto f = k.optimized_function(args...);
  tritium::jit::CompileOptions opts;
  opts.num_warps = num_warps;
  opts.num_stages = num_stages;
  cuda::KernelSource ks = cuda::generate_cuda_layouts(*f, opts, 219 * 1024, cc);
  if (const char* dir = std::getenv("TRITIUM_DUMP"); dir && *dir)
    std::ofstream(std::string(dir) + "/" + ks.entry + "." + arch + ".cu") << ks.source;
  std::vector<char> cubin;
  try {
    cubin = cuda::compile_to_cubin(ks.source, ks.entry, arch);
  } catch (const tritium::Error& e) {
    BOOST_ERROR("kernel " << ks.entry << " does not compile for " << arch << ":\n" << e.what());
  }
  BOOST_TEST(!cubin.empty());
  return ks.source.substr(ks.source.find("__global__"));
}

// ResNet-50 layer1's 3x3 convolution: 64 -> 64 channels at 56 x 56, batch 64, padding 1, bf16,
// NHWC input and output, the weight [O, kh, kw, C] in memory (channels-last too).
std::string resnet_forward(int warps, int stages, int cc, const std::string& arch, int bm,
                                                    int bn, int bk, bool transposed) {
  const int32_t n = 64, c = 64, h = 56, w = 56, o = 64;
  return compile_for(tritium::ops::conv_detail::forward_kernel(), warps, stages, cc, arch, addr<bf16_t>(0),
                     addr<bf16_t>(1), addr<bf16_t>(2), addr<bf16_t>(3), addr<int32_t>(4), n * h * w, h, w, h, w, c, o, 3, 3, 1, 1, 1, 1,
                     1, 1, h * w * c, 1, w * c, c, 0, 9 * c, 1, 3 * c, c, h * w * o, 1, w * o, o, bm, bn, bk,
                     transposed, true, false, false, static_cast<int>(tritium::DType::f32), 0);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_conv_codegen)

BOOST_AUTO_TEST_CASE(forward_kernel_uses_tensor_cores_and_cp_async) {
  if (!cuda::nvrtc_available()) {
    BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << cuda::nvrtc_unavailable_reason());
    return;
  }
  const std::string h = resnet_forward(4, 3, 90, "sm_90a", 128, 64, 64, false);
  BOOST_TEST(h.find("wgmma.mma_async") != std::string::npos);
  BOOST_TEST(h.find("tt_cp_async<16>(") != std::string::npos);
  BOOST_TEST(h.find("// pipelined:") != std::string::npos);
  const std::string a = resnet_forward(4, 3, 80, "sm_80", 128, 64, 32, false);
  BOOST_TEST(a.find("mma.sync") != std::string::npos);
  BOOST_TEST(a.find("wgmma") == std::string::npos);
  // The transposed index rule (dgrad) compiles to the same tensor-core loop.
  const std::string t = resnet_forward(4, 3, 90, "sm_90a", 128, 64, 64, true);
  BOOST_TEST(t.find("wgmma.mma_async") != std::string::npos);
}

// The weight gradient at the same shape: grad_out [64, 64, 56, 56] times the gathered input, K =
// N*OH*OW split in 8, partial sums in f32.
BOOST_AUTO_TEST_CASE(weight_gradient_kernel_uses_tensor_cores) {
  if (!cuda::nvrtc_available()) return;
  const int32_t n = 64, c = 64, h = 56, w = 56, o = 64, p = n * h * w;
  const std::string s = compile_for(tritium::ops::conv_detail::weight_grad_kernel(), 4, 3, 90, "sm_90a",
                                    addr<bf16_t>(0), addr<bf16_t>(1), addr<float>(2), p, p / 8, 8, h, w, h, w, c, o, 3,
                                    3, 1, 1, 1, 1, 1, 1, h * w * o, 1, w * o, o, h * w * c, 1, w * c, c, o * c * 9, 64,
                                    64, 32, true, static_cast<int>(tritium::DType::f32), 0);
  BOOST_TEST(s.find("wgmma.mma_async") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

#endif  // TRITIUM_HAS_CUDA_BACKEND
