// The DataLoader, as torch.utils.data.DataLoader: batches of a Dataset in a sampler's order,
// loaded by num_workers threads ahead of the consumer.
//
//   nn::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .num_workers = 2, .seed = 0});
//   for (auto& [x, y] : loader) { ... }
//
// Workers are threads, not processes: a C++ dataset needs no pickling and no GIL, so each worker
// reads the one shared dataset (Dataset::get must be thread-safe). The batches of an epoch are
// handed to workers in the sampler's order, at most num_workers * prefetch_factor of them loaded
// or loading ahead of the consumer, and the consumer receives them strictly in that order however
// the workers finish. With num_workers 0 the calling thread loads each batch when it is asked for.
#pragma once
#include <concepts>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "nn/dataset.h"
#include "nn/sampler.h"

namespace tritium::nn {

// PyTorch's DataLoader arguments (designated initialisers read like its keyword arguments).
// Errors as PyTorch's: batch_sampler with batch_size, shuffle, sampler or drop_last; shuffle with
// a sampler; negative num_workers; prefetch_factor without workers or not positive; batch_size not
// positive.
struct DataLoaderOptions {
  std::optional<int64_t> batch_size = std::nullopt;  // 1 when unset (PyTorch's default)
  bool shuffle = false;               // a RandomSampler seeded with `seed`
  std::shared_ptr<const Sampler> sampler = nullptr;
  std::shared_ptr<const BatchSampler> batch_sampler = nullptr;
  int num_workers = 0;
  std::optional<int> prefetch_factor = std::nullopt;  // batches per worker loaded ahead; 2 when unset (workers > 0)
  CollateFn collate = nullptr;         // default: Dataset::get_batch (get + nn::collate)
  bool drop_last = false;
  // Batches in page-locked host memory, so that copies to a GPU run asynchronously
  // (nn::DevicePrefetcher). Where no CUDA device is present it does nothing, as PyTorch's.
  bool pin_memory = false;
  uint64_t seed = 0;  // the shuffle's generator seed
};

class DataLoader {
  struct Epoch;

 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  template <std::derived_from<Dataset> D>
  DataLoader(D dataset, DataLoaderOptions options = {})
      : DataLoader(std::make_shared<const D>(std::move(dataset)), std::move(options)) {}
  // The short form of the common case.
  template <std::derived_from<Dataset> D>
  DataLoader(D dataset, int64_t batch_size, bool shuffle = false, uint64_t seed = 0, bool drop_last = false)
      : DataLoader(std::make_shared<const D>(std::move(dataset)),
                   DataLoaderOptions{.batch_size = batch_size, .shuffle = shuffle, .drop_last = drop_last, .seed = seed}) {}
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  int64_t size() const { return batch_sampler_->size(); }  // batches per epoch
  int64_t batch_size() const { return batch_sampler_->batch_size(); }
  const Dataset& dataset() const { return *dataset_; }
  const BatchSampler& batch_sampler() const { return *batch_sampler_; }
  int num_workers() const { return num_workers_; }
  int64_t epoch() const { return epoch_; }  // epochs started so far

  // The sample order of epoch e (what the batches of that epoch concatenate to).
  std::vector<int64_t> order(int64_t epoch) const;

  class iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    Batch& operator*() { return current_; }
    Batch* operator->() { return &current_; }
    iterator& operator++();
    bool operator==(std::default_sentinel_t) const { return done_; }

   private:
    friend class DataLoader;
    explicit iterator(std::shared_ptr<Epoch> epoch);
    std::shared_ptr<Epoch> epoch_;
    Batch current_;
    bool done_ = true;
  };
  // Starts the next epoch: its workers begin loading at once. An error while loading a batch is
  // thrown by the iteration (a tritium::Error naming the batch and sample) and ends the epoch.
  // Stopping early (break, destroying the iterator or the loader) stops and joins the workers.
  iterator begin();
  std::default_sentinel_t end() const { return {}; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const BatchSampler> batch_sampler_;
  CollateFn collate_;
  int num_workers_ = 0;
  int prefetch_factor_ = 2;
  bool pin_memory_ = false;
  int64_t epoch_ = 0;
  std::vector<std::weak_ptr<Epoch>> live_;
};

}  // namespace tritium::nn
