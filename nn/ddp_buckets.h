// How DistributedDataParallel groups gradients into buckets (PyTorch's
// compute_bucket_assignment_by_size): parameters in reverse order (the order backward produces
// their gradients), one open bucket per dtype and device, a bucket closed as soon as it holds at
// least its cap in bytes (the first bucket's cap small, so that communication starts early in
// backward, the others large, so that each all-reduce moves enough to run at full bandwidth).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tritium::nn {

struct BucketedTensor {
  int64_t bytes;
  std::string kind;  // tensors of different kinds (dtype and device) never share a bucket
};

// The buckets as lists of indices into `tensors`, each in reverse index order, the buckets ordered
// by their first (highest) index descending. Caps in bytes; both must be positive.
std::vector<std::vector<int>> compute_bucket_assignment(const std::vector<BucketedTensor>& tensors,
                                                        int64_t first_bucket_cap_bytes, int64_t bucket_cap_bytes);
// The same, filling the buckets in `order` (a permutation of the indices: the order gradients
// became ready, when DDP rebuilds its buckets after the first iteration, as PyTorch's Reducer);
// each bucket lists its indices in that order, and the buckets are ordered by their first one's
// position in it. An `order` that is no permutation is an error.
std::vector<std::vector<int>> compute_bucket_assignment(const std::vector<BucketedTensor>& tensors,
                                                        int64_t first_bucket_cap_bytes, int64_t bucket_cap_bytes,
                                                        const std::vector<int>& order);

}  // namespace tritium::nn
