// nvJitLink (PTX -> cubin: ptxas as a library), opened at run time with dlopen like NVRTC. Used for
// the kernels jit/cuda/ptx_codegen.h writes as PTX. TRITIUM_LIBNVJITLINK names the library to
// open; otherwise the usual sonames and /usr/local/cuda/lib64 are tried. Without it those kernels
// go through NVRTC.
#pragma once
#include <string>
#include <vector>

namespace tritium::jit::cuda {

bool nvjitlink_available();
std::string nvjitlink_unavailable_reason();
// "13.0"; throws tritium::Error when nvJitLink is unavailable.
std::string nvjitlink_version();

// Assembles `ptx` (kernel `name`, for diagnostics) into a cubin for `arch` ("sm_90a", ...) at
// ptxas's default optimisation level. An error is a tritium::Error with the log and the PTX.
std::vector<char> ptx_to_cubin(const std::string& ptx, const std::string& name, const std::string& arch);

}  // namespace tritium::jit::cuda
