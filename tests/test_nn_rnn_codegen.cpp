// The recurrent layers' gate kernels (ops/rnn.h) as CUDA code without a GPU: the forward and
// backward step kernels of every mode, in f32, bf16 and f64, at a realistic width (H = 256) and an
// odd one (H = 33), traced, generated through the layout generator and compiled by NVRTC for
// sm_90a and sm_80. Running them is for the GPU machine (tests/test_nn_rnn.cpp).
#include <boost/test/unit_test.hpp>

#ifdef TRITIUM_HAS_CUDA_BACKEND
#include <tritium/tritium.h>

#include "cuda_codegen_check.h"
#include "ops/rnn.h"

namespace ops = tritium::ops;
using tritium::DType;

namespace {

template <class T> T* addr(uint64_t i) { return tritium::test::fake_address<T>(i); }

template <class... A>
std::string compile_for(tritium::Kernel& k, int cc, const std::string& arch, const A&... args) {
  return tritium::test::compile_cuda(k, tritium::test::CudaCheck().target(cc, arch), args...).source;
}

template <class T> void compile_modes(int cc, const std::string& arch, DType acc) {
  for (ops::RnnMode mode : {ops::RnnMode::rnn_tanh, ops::RnnMode::rnn_relu, ops::RnnMode::lstm, ops::RnnMode::gru})
    for (int64_t H : {int64_t{256}, int64_t{33}}) {
      BOOST_TEST_CONTEXT(ops::rnn_mode_name(mode) << " H=" << H << " " << arch) {
        const int block = H == 256 ? 256 : 64;
        compile_for(ops::rnn_detail::forward_step_kernel(), cc, arch, addr<T>(0), addr<T>(1), addr<T>(2), addr<T>(3),
                    addr<T>(4), addr<T>(5), addr<T>(6), addr<T>(7), addr<T>(8), H, static_cast<int>(acc),
                    static_cast<int>(mode), true, true, block);
        compile_for(ops::rnn_detail::backward_step_kernel(), cc, arch, addr<T>(0), addr<T>(1), addr<T>(2), addr<T>(3),
                    addr<T>(4), addr<T>(5), addr<T>(6), addr<T>(7), addr<T>(8), addr<T>(9), addr<T>(10), addr<T>(11), H,
                    static_cast<int>(acc), static_cast<int>(mode), true, block);
      }
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_rnn_codegen)

BOOST_AUTO_TEST_CASE(gate_kernels_compile_for_hopper_and_ampere) {
  if (!tritium::test::nvrtc_or_skip()) return;
  compile_modes<float>(90, "sm_90a", DType::f32);
  compile_modes<tritium::bf16_t>(90, "sm_90a", DType::f32);
  compile_modes<double>(80, "sm_80", DType::f64);
  compile_modes<float>(80, "sm_80", DType::f32);
}

BOOST_AUTO_TEST_SUITE_END()

#endif
