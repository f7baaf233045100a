// Samplers as torch.utils.data's: which dataset indices an epoch visits, in which order, and how
// they group into batches.
//
// Randomness is explicit: a sampler's indices for epoch e come from a generator seeded with
// (seed, e), so a run is reproducible, epochs differ, and any epoch can be regenerated (a resumed
// run). The DataLoader passes the number of epochs it has started; DistributedSampler, as
// PyTorch's, uses the epoch given to set_epoch() instead (forgetting it repeats one order).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace tritium::nn {

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual int64_t size() const = 0;  // indices per epoch
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
};

// 0, 1, ..., n-1.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  int64_t size() const override { return n_; }
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t n_;
};

// Uniformly random indices of [0, n). Without replacement: a permutation; with num_samples > n,
// whole permutations followed by the start of one more (PyTorch's rule). With replacement:
// num_samples independent draws. num_samples defaults to n and must be positive.
class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(int64_t n, bool replacement = false, std::optional<int64_t> num_samples = std::nullopt,
                         uint64_t seed = 0);
  int64_t size() const override { return num_samples_; }
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t n_, num_samples_;
  bool replacement_;
  uint64_t seed_;
};

// num_samples indices of [0, len(weights)) drawn with probability proportional to the weights
// (torch.multinomial's contract): with replacement independent draws; without, each index at most
// once (then num_samples must not exceed the number of positive weights). Weights must be finite
// and non-negative with a positive sum.
class WeightedRandomSampler : public Sampler {
 public:
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement = true, uint64_t seed = 0);
  int64_t size() const override { return num_samples_; }
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  std::vector<double> weights_;
  int64_t num_samples_;
  bool replacement_;
  uint64_t seed_;
};

// The part of a dataset of dataset_size samples that replica `rank` of num_replicas reads, as
// PyTorch's DistributedSampler: the order (a permutation seeded with seed + epoch when shuffle,
// else 0..n-1) is padded by repeating its start to a multiple of num_replicas (or, with
// drop_last, cut to one), and rank takes every num_replicas-th index from position rank.
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);
  int64_t size() const override { return num_samples_; }
  // Ignores the DataLoader's epoch: uses set_epoch's.
  std::vector<int64_t> indices(int64_t epoch) const override;
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t total_size() const { return num_samples_ * num_replicas_; }

 private:
  int64_t n_, num_replicas_, rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t num_samples_;
  int64_t epoch_ = 0;
};

// Groups a sampler's indices into batches of batch_size (the last one shorter unless drop_last).
class BatchSampler {
 public:
  BatchSampler(std::shared_ptr<const Sampler> sampler, int64_t batch_size, bool drop_last);
  int64_t size() const;  // batches per epoch
  std::vector<std::vector<int64_t>> batches(int64_t epoch) const;
  int64_t batch_size() const { return batch_size_; }
  bool drop_last() const { return drop_last_; }
  const std::shared_ptr<const Sampler>& sampler() const { return sampler_; }

 private:
  std::shared_ptr<const Sampler> sampler_;
  int64_t batch_size_;
  bool drop_last_;
};

// A uniform random permutation of [0, n) drawn from (seed, epoch): what RandomSampler and
// DistributedSampler shuffle with (the same on every platform: mt19937_64 and Fisher-Yates).
std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace tritium::nn
