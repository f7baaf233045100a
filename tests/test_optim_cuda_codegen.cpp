// The optimisers' multi-tensor kernels (nn/optim_kernels.h: pointers made from int64 addresses
// read from a table, a run-time loop over each row) as CUDA without a GPU: traced for f32, f16
// and bf16 with every flag, turned into CUDA C++ and compiled by NVRTC for sm_90a and sm_80.
// Skips (with the reason) when NVRTC cannot be opened. Their values on a GPU are checked by
// tests/test_nn_optim_groups.cpp (for_each_backend) on the GPU machine.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <string>
#include <vector>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "jit/passes/axis_info.h"
#include "nn/optim_kernels.h"

namespace cuda = tritium::jit::cuda;
namespace ok = tritium::nn::optim_kernels;
using tritium::DType;

namespace {

// Fake device addresses: 256-byte aligned, never dereferenced.
template <class T> T* addr(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000); }

template <class... A> void compile_both(const std::string& what, tritium::Kernel& k, const A&... args) {
  auto f = k.optimized_function(args...);
  tritium::jit::AxisInfoMap axis = tritium::jit::analyze_axis_info(*f);
  cuda::KernelSource ks = cuda::generate_cuda(*f, axis, tritium::jit::CompileOptions{}, cuda::kSharedMemoryBudget);
  for (const char* arch : {"sm_90a", "sm_80"}) {
    try {
      BOOST_TEST(!cuda::compile_to_cubin(ks.source, ks.entry, arch).empty(), what << " " << arch);
    } catch (const tritium::Error& e) {
      BOOST_ERROR(what << ": " << ks.entry << " does not compile for " << arch << ":\n" << e.what());
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_optim_cuda_codegen)

BOOST_AUTO_TEST_CASE(multi_tensor_kernels_compile_for_sm90a_and_sm80) {
  if (!cuda::nvrtc_available()) {
    BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << cuda::nvrtc_unavailable_reason());
    return;
  }
  auto* table = addr<int64_t>(0);
  auto* scalars = addr<float>(1);
  auto* found_inf = addr<float>(2);  // Optimizer::skip_if's flag, read with SKIPPABLE
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    std::string d = tritium::dtype_name(dt);
    for (bool a : {false, true}) {
      for (bool b : {false, true}) {
        // SKIPPABLE both ways over the flags' four combinations (the early return before the loop).
        bool skip = a == b;
        compile_both("sgd " + d, ok::multi_tensor_kernel("sgd"), table, scalars, 0.1f, 0.01f, 0.9f, dt, a, b,
                     found_inf, skip, 1024);
        compile_both("rmsprop " + d, ok::multi_tensor_kernel("rmsprop"), table, scalars, 0.1f, 0.01f, 0.9f, 0.1f,
                     1e-8f, 0.5f, dt, a, b, found_inf, skip, 1024);
      }
      compile_both("adam " + d, ok::multi_tensor_kernel("adam"), table, scalars, 0.99f, 0.0f, 0.9f, 0.1f, 0.999f,
                   0.001f, 1e-8f, dt, a, found_inf, !a, 1024);
    }
    for (bool skip : {false, true})
      compile_both("adagrad " + d, ok::multi_tensor_kernel("adagrad"), table, scalars, 0.01f, 1e-10f, dt, found_inf,
                   skip, 1024);
  }
}

BOOST_AUTO_TEST_SUITE_END()
