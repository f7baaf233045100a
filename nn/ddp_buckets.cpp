// Bucket assignment: reverse order (or the order given), one open bucket per kind, closed at its cap.
#include "nn/ddp_buckets.h"

#include <algorithm>
#include <map>

#include "common/error.h"

namespace tritium::nn {

std::vector<std::vector<int>> compute_bucket_assignment(const std::vector<BucketedTensor>& tensors,
                                                        int64_t first_bucket_cap_bytes, int64_t bucket_cap_bytes) {
  std::vector<int> reverse;
  for (int i = static_cast<int>(tensors.size()) - 1; i >= 0; --i) reverse.push_back(i);
  return compute_bucket_assignment(tensors, first_bucket_cap_bytes, bucket_cap_bytes, reverse);
}

std::vector<std::vector<int>> compute_bucket_assignment(const std::vector<BucketedTensor>& tensors,
                                                        int64_t first_bucket_cap_bytes, int64_t bucket_cap_bytes,
                                                        const std::vector<int>& order) {
  std::vector<int> position(tensors.size(), -1);
  if (order.size() != tensors.size())
    fail("DistributedDataParallel: the bucket order lists {} tensors, expected {}", order.size(), tensors.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const int i = order[k];
    if (i < 0 || i >= static_cast<int>(tensors.size()) || position[i] >= 0)
      fail("DistributedDataParallel: the bucket order is not a permutation of 0..{} (index {} at position {})",
           tensors.size() - 1, i, k);
    position[i] = static_cast<int>(k);
  }
  if (first_bucket_cap_bytes <= 0 || bucket_cap_bytes <= 0)
    fail("DistributedDataParallel: bucket caps must be positive (got {} and {} bytes)", first_bucket_cap_bytes,
         bucket_cap_bytes);
  struct Open {
    std::vector<int> indices;
    int64_t bytes = 0;
    bool first = true;  // still under the first bucket's cap
  };
  std::map<std::string, Open> open;
  std::vector<std::vector<int>> buckets;
  for (int i : order) {
    Open& b = open[tensors[i].kind];
    b.indices.push_back(i);
    b.bytes += tensors[i].bytes;
    if (b.bytes >= (b.first ? first_bucket_cap_bytes : bucket_cap_bytes)) {
      buckets.push_back(std::move(b.indices));
      b.indices.clear();
      b.bytes = 0;
      b.first = false;
    }
  }
  for (auto& [kind, b] : open)
    if (!b.indices.empty()) buckets.push_back(std::move(b.indices));
  std::stable_sort(buckets.begin(), buckets.end(),
                   [&](const auto& a, const auto& b) { return position[a[0]] < position[b[0]]; });
  return buckets;
}

}  // namespace tritium::nn
