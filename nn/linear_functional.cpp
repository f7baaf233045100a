#include "nn/linear_functional.h"

#include "nn/dispatch.h"

namespace tritium {

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return nn::call("linear", {input, weight, bias});
}

}  // namespace tritium
