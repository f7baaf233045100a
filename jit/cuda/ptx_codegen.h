// IR -> PTX for straight-line kernels over 1-D blocks (elementwise chains of loads, arithmetic,
// compares, casts and stores: the op library's pointwise kernels, tutorial 01), so that their
// first compile skips NVRTC's C++ front end and NVVM - about 20 of the ~25 ms NVRTC spends on
// such a kernel - and goes straight to ptxas through nvJitLink (jit/cuda/nvjitlink.h).
//
// It is a second code generator for a small subset, kept to the same results: the same thread
// mapping as the CUDA generator (element (k * nthreads + tid) * V + lane, V from the axis info),
// the same 16-byte predicated accesses, and every operation computed as the CUDA generator's
// code computes it (Triton's f32 math: ex2.approx, div.full, sqrt/rsqrt.approx; wrapping integer
// arithmetic; the header's division and shift rules; the same f16/bf16 rounding). A kernel with
// anything else (loops, reductions, other math, 2-D blocks, narrow integers, f64, atomics,
// prints, asserts, a load after a store) is declined and goes through the CUDA generator.
#pragma once
#include <optional>
#include <string>

#include "jit/cuda/codegen.h"

namespace tritium::jit::cuda {

// The PTX of `f` for `arch` ("sm_90a", "sm_80", ...) with generate_cuda's signature and launch
// shape, or std::nullopt when f is outside the subset (why in *declined, when given).
std::optional<KernelSource> generate_ptx(const ir::Function& f, const AxisInfoMap& axis, const CompileOptions& opts,
                                         const std::string& arch, std::string* declined = nullptr);

}  // namespace tritium::jit::cuda
