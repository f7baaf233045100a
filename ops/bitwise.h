// Bitwise and logical element-wise ops (raw; nn/elementwise_ops.h records the API): PyTorch's
// dtype rules. The bitwise ops take integer and bool tensors (a float is an error naming it);
// the logical ops take any dtype (non-zero is true, NaN included) and return bool.
#pragma once
#include "ops/ops.h"

namespace tritium::ops {

Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_not(const Tensor& x);
// Shifts of integers (the promoted dtype). As PyTorch: a shift by a negative amount or by the
// width or more gives 0 to the left and the sign (0 or -1) to the right.
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_and(const Tensor& a, Scalar b);
Tensor bitwise_or(const Tensor& a, Scalar b);
Tensor bitwise_xor(const Tensor& a, Scalar b);
Tensor bitwise_left_shift(const Tensor& a, Scalar b);
Tensor bitwise_right_shift(const Tensor& a, Scalar b);

Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);

}  // namespace tritium::ops
