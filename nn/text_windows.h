// Every window of a text corpus split as a map-style Dataset (nn/dataset.h), for language models
// fed through nn::DataLoader: sample i is the `context` + 1 tokens from position i, data the first
// `context` (i64 [context]), target the last `context` (the next token at each position). With a
// RandomSampler an epoch visits every window once, in a shuffled order (where nanoGPT's
// get_batch, TextCorpus::get_batch, draws starts with replacement). Include "nn/text_windows.h".
//
//   auto corpus = std::make_shared<const nn::TextCorpus>(nn::TextCorpus::fortunes());
//   nn::TextWindowDataset windows(corpus, nn::TextCorpus::Split::train, 64);
//   nn::DataLoader loader(windows, {.batch_size = 16, .shuffle = true, .num_workers = 2});
#pragma once
#include <cstdint>
#include <memory>

#include "nn/dataset.h"
#include "nn/text_corpus.h"

namespace tritium::nn {

class TextWindowDataset : public Dataset {
 public:
  // Errors: a null corpus, context below 1, a split of no more than `context` tokens.
  TextWindowDataset(std::shared_ptr<const TextCorpus> corpus, TextCorpus::Split split, int64_t context);
  int64_t size() const override { return size_; }  // split size - context windows
  Example get(int64_t index) const override;      // host tensors; an index out of range is an error
  Batch get_batch(const std::vector<int64_t>& indices) const override;  // [B, context] each, directly
  int64_t context() const { return context_; }

 private:
  std::shared_ptr<const TextCorpus> corpus_;
  TextCorpus::Split split_;
  int64_t context_, size_;
};

}  // namespace tritium::nn
