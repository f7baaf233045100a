// train-gpt's training batches, from one of two sources:
//  - nanoGPT's get_batch (the default): random window starts drawn with replacement from the batch
//    generator; the generator's state is the data position;
//  - with --workers N, nn::DataLoader over every window of the training split (TextWindowDataset)
//    in a DistributedSampler's order (each window once per epoch, epochs reshuffled from
//    (seed, epoch), the last incomplete global batch dropped), loaded by N worker threads ahead of
//    training (0: on the training thread), pinned for the copy to a GPU; the position is (epoch,
//    batches taken in it), and a loader made at a position skips the sampler's first batches of
//    that epoch without loading them.
// Data parallel (world > 1): --batch-size is the global batch and each rank reads its batch /
// world rows of it. Every rank draws the same global batch (get_batch: the same generator state
// on every rank, each keeping its contiguous block of rows; the loader: the DistributedSampler's
// strided share of the same permutation, cut to a multiple of the world), so global batch k is the
// same set of windows at any world size: the losses of N processes equal one process's (to
// rounding), and the data position means the same at every world size.
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
  // starting at `start`. batch: the global batch, divisible by world; this is rank `rank` of it.
  TrainBatches(std::shared_ptr<const nn::TextCorpus> corpus, int64_t batch, int64_t context, int workers,
               uint64_t seed, ops::Generator& gen, Device device, DataPosition start, int world = 1, int rank = 0);
  // This rank's part of the next batch (x, y), [batch / world, context] i64 each, on the device.
  std::pair<Tensor, Tensor> next();
  DataPosition position() const { return position_; }
  bool uses_loader() const { return loader_ != nullptr; }

 private:
  std::shared_ptr<const nn::TextCorpus> corpus_;
  int64_t batch_, context_;
  int world_, rank_;
  ops::Generator& gen_;
  Device device_;
  DataPosition position_;
  std::unique_ptr<nn::DataLoader> loader_;
  std::optional<nn::DataLoader::iterator> it_;
};

}  // namespace tritium::train_gpt
