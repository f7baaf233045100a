// A code generator and loader for one kind of device. The compile driver (compiler.cpp) owns the
// pipeline and the caches; a backend only turns optimised IR into a binary and a binary into a
// launchable kernel.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "jit/compiled_kernel.h"
#include "jit/passes/axis_info.h"

namespace tritium::jit {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;  // "cpu", "cuda"
  // Everything besides the IR that changes the binary: target CPU and features, toolchain version.
  virtual std::string target_id() const = 0;
  virtual std::string binary_kind() const = 0;  // disk cache file extension: "o", "cubin"
  virtual std::vector<char> generate(ir::Function& f, const AxisInfoMap& axis, const CompileOptions& opts) = 0;
  virtual std::shared_ptr<CompiledKernel> load(const std::vector<char>& binary, const ir::Function& f) = 0;
};

// The backend for a device, or a tritium::Error saying why it is unavailable.
Backend& backend_for(const runtime::Device& device);

#if TRITIUM_HAS_CPU_BACKEND
Backend& cpu_backend();
#endif
#if TRITIUM_HAS_CUDA_BACKEND
// The CUDA backend of device index `device` (built unless TRITIUM_CUDA_BACKEND=OFF: libcuda and
// libnvrtc are opened at run time; backend_for checks that the driver is available).
Backend& cuda_backend(int device = 0);
#endif

}  // namespace tritium::jit
