// torch.nn.functional.embedding (sparse=False, no max_norm) and its backward, as Tritium kernels
// (ops/embedding.cpp).
#pragma once
#include <cstdint>

#include "ops/ops.h"

namespace tritium::ops {

// weight [num_embeddings, dim] (any strides), indices of any shape (i64 or i32): the rows
// weight[indices], shape indices.shape + [dim]. An index outside [0, num_embeddings) is an error
// naming the first such index and its position (found on the device, read with one small copy).
Tensor embedding(const Tensor& weight, const Tensor& indices);

// The gradient of weight: grad [*indices.shape, dim] summed into the rows the indices name, the
// row padding_idx (>= 0; -1 for none) left zero. Atomic adds into a zeroed f32/f64 buffer (so on
// the GPU the order of a row's sum, and its last bits, may vary between runs).
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights, int64_t padding_idx);

}  // namespace tritium::ops
