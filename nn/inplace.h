// The in-place mechanism of Tensor's in-place methods (nn/inplace_ops.cpp), for in-place ops
// defined outside runtime/tensor.h (nn/elementwise_inplace.h): computes `compute(self)` (recorded,
// from a clone when recording), writes it into self's storage, bumps the version counter and
// rebases self's history; PyTorch's refusals first (a leaf that requires grad, an inference
// tensor outside inference mode, overlapping elements, a result dtype self cannot hold).
#pragma once
#include <functional>
#include <vector>

#include "runtime/tensor.h"

namespace tritium::nn {

runtime::Tensor& apply_inplace(runtime::Tensor& self, const char* name, const std::vector<runtime::Tensor>& others,
                               const std::function<runtime::Tensor(const runtime::Tensor& self_value)>& compute);

}  // namespace tritium::nn
