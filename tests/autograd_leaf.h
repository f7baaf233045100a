// A float64 leaf that requires grad, filled with uniform values in [-1, 1) from `seed`: the input
// of the autograd suites' hand-written graphs (checkpoint, hooks, in-place, part views).
#pragma once
#include <cstdint>
#include <vector>

#include "test_support.h"

namespace tritium::test {

inline Tensor random_leaf(const std::vector<int64_t>& shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  Tensor t = Tensor::from_vector(random_vector<double>(static_cast<size_t>(n), seed, -1, 1), shape);
  t.requires_grad_();
  return t;
}

}  // namespace tritium::test
