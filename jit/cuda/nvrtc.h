// NVRTC (CUDA C++ -> cubin), opened at run time with dlopen: nothing links libnvrtc at build
// time and no CUDA header is needed. TRITIUM_LIBNVRTC names the library to open; otherwise the
// usual sonames and /usr/local/cuda/lib64 are tried.
#pragma once
#include <string>
#include <vector>

namespace tritium::jit::cuda {

// Whether libnvrtc could be opened; when not, nvrtc_unavailable_reason() lists the paths tried.
bool nvrtc_available();
std::string nvrtc_unavailable_reason();
// "13.0" (major.minor); throws tritium::Error when NVRTC is unavailable.
std::string nvrtc_version();

// Compiles `source` (named `name` in diagnostics) for `arch` ("sm_90a", "sm_80", ...). A compile
// error is a tritium::Error with the NVRTC log and the numbered source lines around each error.
std::vector<char> compile_to_cubin(const std::string& source, const std::string& name, const std::string& arch,
                                   const std::vector<std::string>& extra_options = {});

}  // namespace tritium::jit::cuda
