// Sorting rows of random u64 keys for the samplers that need an order (randperm, multinomial
// without replacement). Kept apart from the general sort (ops/sort*, another op family) so the
// samplers depend only on tl::sort: a bitonic network whose blocks are sorted in one program with
// tl::sort and whose longer strides are compare-exchange passes over global memory.
#pragma once
#include "runtime/tensor.h"

namespace tritium::ops::detail {

// Sorts each row of `keys` ([rows, n] u64, contiguous, n a power of two) ascending, in place.
// O(n log^2 n) work in O(log^2 (n / 1024)) launches; the result does not depend on the block
// size (a sort's result is unique), so it is the same on every backend.
void sort_rows_u64(runtime::Tensor& keys);

}  // namespace tritium::ops::detail
