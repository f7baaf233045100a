// Data: IDX files (the MNIST family's format), Fashion-MNIST, and a DataLoader that batches,
// shuffles and prepares the next batch on a background thread, as torch.utils.data.
//
//   nn::FashionMNIST train(nn::FashionMNIST::default_root(), /*train=*/true);
//   nn::DataLoader loader(train, /*batch_size=*/128, /*shuffle=*/true, /*seed=*/0);
//   for (auto& [x, y] : loader) { ... }       // x [B, 784] f32, y [B] i64
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace tritium::nn {

using runtime::Tensor;

// ---- IDX files -------------------------------------------------------------------------------------
// Big-endian header: magic 0x00000803 (u8 images: count, rows, cols) or 0x00000801 (u8 labels:
// count), then the bytes. Files compressed with gzip (".gz" or not: the content decides) are
// read through zlib. A missing or unreadable file, a wrong magic, a truncated file or trailing
// data is a tritium::Error naming the path and what is wrong.
struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, row-major
};
IdxImages read_idx_images(const std::string& path);
std::vector<uint8_t> read_idx_labels(const std::string& path);

// ---- datasets --------------------------------------------------------------------------------------
// Samples are rows: data [N, ...] and targets [N] (host tensors, contiguous).
struct TensorDataset {
  Tensor data, targets;
  TensorDataset() = default;
  TensorDataset(Tensor data, Tensor targets);  // errors: undefined, not host, count mismatch
  int64_t size() const { return data.defined() ? data.size(0) : 0; }
};

// Fashion-MNIST from `root` ({train,t10k}-{images-idx3,labels-idx1}-ubyte, optionally .gz):
// data [N, 784] f32 normalised as (x / 255 - 0.2860) / 0.3530, targets [N] i64 in [0, 10).
// Train: 60000 samples, test: 10000. Inconsistent image and label counts are an error.
class FashionMNIST : public TensorDataset {
 public:
  static constexpr double kMean = 0.2860, kStd = 0.3530;
  FashionMNIST(const std::string& root, bool train);
  // Where Debian's dataset-fashion-mnist package installs the files.
  static std::string default_root() { return "/usr/share/datasets/fashion-mnist"; }
  static const char* class_name(int64_t label);  // "T-shirt/top", "Trouser", ...
};

// ---- DataLoader ------------------------------------------------------------------------------------
struct Batch {
  Tensor x, y;  // x [B, ...] like data, y [B] like targets
};

// Iterates an epoch of batches. With shuffle, epoch e uses a permutation drawn from (seed, e), so
// a run is reproducible and epochs differ. A background thread assembles batches into a queue of
// at most 2 while the caller trains on the current one. Stopping early (break, destroying the
// iteration or the loader) stops and joins the thread. An error in the thread is rethrown by the
// iteration.
class DataLoader {
  struct Epoch;

 public:
  DataLoader(TensorDataset dataset, int64_t batch_size, bool shuffle = false, uint64_t seed = 0,
             bool drop_last = false);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  int64_t size() const;  // batches per epoch
  int64_t batch_size() const { return batch_size_; }
  const TensorDataset& dataset() const { return dataset_; }
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
  // Starts the next epoch (its thread begins preparing batches at once).
  iterator begin();
  std::default_sentinel_t end() const { return {}; }

 private:
  TensorDataset dataset_;
  int64_t batch_size_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t epoch_ = 0;
  std::vector<std::weak_ptr<Epoch>> live_;
};

}  // namespace tritium::nn
