// addcmul with a scaled self, one elementwise pass (ops/unary_math.cpp's addcmul kernel, PARAM 1):
// addr's beta * self + alpha * vec1 * vec2, which took a separate mul over the whole self first.
#pragma once
#include "ops/unary_math.h"

namespace tritium::ops {

// self_scale * self + value * t1 * t2 (dtype rule: addcmul's, the two numbers as wrapped numbers).
Tensor addcmul_scaled(const Tensor& self, Scalar self_scale, const Tensor& t1, const Tensor& t2, Scalar value);

}  // namespace tritium::ops
