// The windows of a corpus split as a Dataset (nn/text_windows.h). Host work only: copying token
// ids into the batch tensors is the data pipeline's (the DataLoader's workers), not computation.
#include "nn/text_windows.h"

#include <vector>

#include "common/error.h"

namespace tritium::nn {

TextWindowDataset::TextWindowDataset(std::shared_ptr<const TextCorpus> corpus, TextCorpus::Split split,
                                     int64_t context)
    : corpus_(std::move(corpus)), split_(split), context_(context) {
  if (!corpus_) fail("TextWindowDataset: the corpus is null");
  if (context < 1) fail("TextWindowDataset: context must be at least 1, got {}", context);
  const int64_t n = corpus_->size(split);
  if (n <= context)
    fail("TextWindowDataset: the {} split has {} tokens, too few for one window of context {} + 1",
         split == TextCorpus::Split::train ? "training" : "held-out", n, context);
  size_ = n - context;
}

Example TextWindowDataset::get(int64_t index) const {
  Batch b = get_batch({index});
  return Example{b.x.view({context_}), b.y.view({context_})};
}

Batch TextWindowDataset::get_batch(const std::vector<int64_t>& indices) const {
  if (indices.empty()) fail("TextWindowDataset::get_batch: no indices");
  const std::vector<uint8_t>& tokens = corpus_->tokens(split_);
  const int64_t B = static_cast<int64_t>(indices.size()), T = context_;
  std::vector<int64_t> x(static_cast<size_t>(B * T)), y(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t start = indices[static_cast<size_t>(b)];
    if (start < 0 || start >= size_)
      fail("TextWindowDataset: index {} is out of range for {} windows", start, size_);
    for (int64_t t = 0; t < T; ++t) {
      x[static_cast<size_t>(b * T + t)] = tokens[static_cast<size_t>(start + t)];
      y[static_cast<size_t>(b * T + t)] = tokens[static_cast<size_t>(start + t + 1)];
    }
  }
  return Batch{Tensor::from_vector(x, {B, T}, Device::cpu()), Tensor::from_vector(y, {B, T}, Device::cpu())};
}

}  // namespace tritium::nn
