// The device header every generated CUDA kernel starts with: fixed-width integers, f16/bf16 as
// 16-bit containers with our own conversions, integer helpers with the CPU backend's semantics,
// warp shuffles, atomics and the assertion flag. Self-contained: NVRTC has no C++ standard
// library, and cuda_fp16.h / cuda_bf16.h would cost ~60 ms of compile time each.
#pragma once

namespace tritium::jit::cuda {

const char* device_header();

}  // namespace tritium::jit::cuda
