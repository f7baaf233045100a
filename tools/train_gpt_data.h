// train-gpt's training batches, from one of two sources:
//  - nanoGPT's get_batch (the default): random window starts drawn with replacement from the batch
//    generator; the generator's state is the data position;
//  - with --workers N, nn::DataLoader over every window of the training split (TextWindowDataset)
//    in a RandomSampler's order (each window once per epoch, epochs reshuffled from (seed, epoch)),
//    loaded by N worker threads ahead of training (0: on the training thread), pinned for the copy
//    to a GPU; the position is (epoch, batches taken in it), and a loader made at a position skips
//    the sampler's first batches of that epoch without loading them.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "nn/data_loader.h"
#include "nn/text_corpus.h"
#include "nn/text_windows.h"

namespace tritium::train_gpt {

struct DataPosition {
  int64_t epoch = 0;  // the loader's epoch
  int64_t batch = 0;  // batches taken from it
};

class TrainBatches {
 public:
  // workers < 0: get_batch from `gen`; otherwise the DataLoader, its sampler seeded with `seed`,
  // starting at `start`.
  TrainBatches(std::shared_ptr<const nn::TextCorpus> corpus, int64_t batch, int64_t context, int workers,
               uint64_t seed, ops::Generator& gen, Device device, DataPosition start);
  // The next batch (x, y), [batch, context] i64 each, on the device.
  std::pair<Tensor, Tensor> next();
  DataPosition position() const { return position_; }
  bool uses_loader() const { return loader_ != nullptr; }

 private:
  std::shared_ptr<const nn::TextCorpus> corpus_;
  int64_t batch_, context_;
  ops::Generator& gen_;
  Device device_;
  DataPosition position_;
  std::unique_ptr<nn::DataLoader> loader_;
  std::optional<nn::DataLoader::iterator> it_;
};

}  // namespace tritium::train_gpt
