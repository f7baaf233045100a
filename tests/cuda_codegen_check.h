// The CUDA code generators without a GPU, for the suites that check generated code: trace a kernel,
// generate CUDA C++ through the layout generator or generate_cuda's routing (both apply the backend's
// fp contraction themselves: this is the code a launch runs), write it under TRITIUM_DUMP to be read, and compile it with NVRTC for one or more architectures - a
// compile error fails the test with the log. Nothing here runs a kernel: the GPU suites do that
// (scripts/gpu_check.sh). Include only where the CUDA backend is built.
#pragma once

#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "jit/passes/axis_info.h"

namespace tritium::test {

// A fake device address (1 MB apart, 256-byte aligned: what a launch's pointers look like to the
// specialisation), never dereferenced.
template <class T> T* fake_address(uint64_t i) {
  return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000);
}

// An H100's opt-in shared memory less the backend's 8 KB margin (jit/cuda/cuda_backend.cpp).
inline constexpr int64_t kH100SharedMemory = 219 * 1024;

// Whether NVRTC can be opened; logs why the case is skipped when it cannot.
inline bool nvrtc_or_skip() {
  if (jit::cuda::nvrtc_available()) return true;
  BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << jit::cuda::nvrtc_unavailable_reason());
  return false;
}

// How a kernel is generated and which architectures it is compiled for; the setters chain:
// CudaCheck().warps(8).target(80, "sm_80").
struct CudaCheck {
  int num_warps = 4;
  int num_stages = 3;
  int cc = 90;  // the compute capability the generator targets
  std::vector<std::string> archs = {"sm_90a"};
  // true: generate_cuda_layouts; false: generate_cuda, which picks the generator as the backend
  // does (kernels with a dot through layouts, the others through the element-loop generator).
  bool layouts = true;
  int64_t smem_budget = kH100SharedMemory;
  std::string what;  // the kernel's name in failures; its entry when empty

  CudaCheck& warps(int n) { return num_warps = n, *this; }
  CudaCheck& stages(int n) { return num_stages = n, *this; }
  // Generated for compute capability `c`, compiled for `arch` only.
  CudaCheck& target(int c, const std::string& arch) { return cc = c, archs = {arch}, *this; }
  CudaCheck& also_for(const std::string& arch) { return archs.push_back(arch), *this; }
  CudaCheck& routed() { return layouts = false, *this; }
  CudaCheck& budget(int64_t bytes) { return smem_budget = bytes, *this; }
  CudaCheck& named(const std::string& name) { return what = name, *this; }
};

// Generates `k` for `args` as `c` says, writes `<entry>.<arch>.cu` under TRITIUM_DUMP, and compiles
// it for every arch of c.archs; each compile that fails (or yields no cubin) is a test error.
template <class... A>
jit::cuda::KernelSource compile_cuda(tritium::Kernel& k, const CudaCheck& c, const A&... args) {
  namespace cuda = jit::cuda;
  auto f = k.optimized_function(args...);
  jit::CompileOptions opts;
  opts.num_warps = c.num_warps;
  opts.num_stages = c.num_stages;
  cuda::KernelSource ks = c.layouts ? cuda::generate_cuda_layouts(*f, opts, c.smem_budget, c.cc)
                                    : cuda::generate_cuda(*f, jit::analyze_axis_info(*f), opts, c.smem_budget, c.cc);
  const std::string what = c.what.empty() ? ks.entry : c.what;
  for (const std::string& arch : c.archs) {
    if (const char* dir = std::getenv("TRITIUM_DUMP"); dir && *dir)
      std::ofstream(std::string(dir) + "/" + ks.entry + "." + arch + ".cu") << ks.source;
    try {
      BOOST_TEST(!cuda::compile_to_cubin(ks.source, ks.entry, arch).empty(), what << " for " << arch);
    } catch (const tritium::Error& e) {
      BOOST_ERROR(what << " does not compile for " << arch << ":\n" << e.what());
    }
  }
  return ks;
}

// The generated kernel past the device header (which defines every tt_ helper: a search for a
// helper's name must not find its definition).
inline std::string kernel_body(const jit::cuda::KernelSource& ks) {
  const size_t at = ks.source.find("__global__");
  BOOST_TEST_REQUIRE(at != std::string::npos);
  return ks.source.substr(at);
}

// How often `what` occurs in `text` (occurrences that do not overlap).
inline size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

}  // namespace tritium::test
