// NVRTC (CUDA C++ -> cubin), opened at run time with dlopen: nothing links libnvrtc at build
// time and no CUDA header is needed. TRITIUM_LIBNVRTC names the library to open; otherwise the
// usual sonames and /usr/local/cuda/lib64 are tried.
#pragma once
#include <string>
#include <vector>

namespace tritium::ir {
class Function;
}

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

// The option the CUDA backend adds for kernels that compiles_fast() accepts (unless
// TRITIUM_FAST_COMPILE turns it off).
inline constexpr const char* kFastCompileOption = "--Ofast-compile=min";
// Whether `f` is short straight-line code - no loops, reductions, scans or dots, at most
// kMaxFastCompileOps operations - that compiles in about 0.6 of the time at kFastCompileOption and
// runs as fast (why: nvrtc.cpp).
inline constexpr int kMaxFastCompileOps = 48;
bool compiles_fast(const ir::Function& f);

}  // namespace tritium::jit::cuda
