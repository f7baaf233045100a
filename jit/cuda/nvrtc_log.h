// NVRTC's log of a successful compile, for tests that read what ptxas notes about a kernel.
#pragma once

#include <string>
#include <vector>

namespace tritium::jit::cuda {

// Compiles as compile_to_cubin (jit/cuda/nvrtc.h) does and returns NVRTC's log: empty, or ptxas's
// notes, e.g. "(C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized due
// to ...". A compile error is the same tritium::Error.
std::string compile_log(const std::string& source, const std::string& name, const std::string& arch,
                        const std::vector<std::string>& extra_options = {});

}  // namespace tritium::jit::cuda
