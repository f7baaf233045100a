// scaled_dot_product_attention's kernels and their GPU tile candidates (ops/attention.cpp), named
// so that tests can generate each kernel's CUDA code for each candidate on a machine without a GPU
// and check that some candidate fits the shared memory of the GPU (tests/test_attention_tuning.cpp).
#pragma once
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "dsl/kernel.h"

namespace tritium::ops::detail {

// "sdpa_fwd", "sdpa_bwd_dkdv", "sdpa_bwd_dq".
Kernel& attention_kernel(const std::string& kernel_name);
// The autotuner's candidates on a GPU, in order of preference: BLOCK_M and BLOCK_N, warps, stages.
const std::vector<Config>& attention_gpu_configs(const std::string& kernel_name);

}  // namespace tritium::ops::detail
