#include "nn/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "common/error.h"

namespace tritium::nn {

namespace {

// The generator of (seed, epoch): seed_seq spreads both words of each over the state.
std::mt19937_64 generator(uint64_t seed, int64_t epoch) {
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(epoch), uint32_t(uint64_t(epoch) >> 32)};
  return std::mt19937_64(seq);
}

// Unbiased uniform integer in [0, n) (rejection of the top partial range; n > 0).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  for (;;) {
    uint64_t x = rng();
    if (x < limit) return x % n;
  }
}

// Uniform double in [0, 1) from the top 53 bits.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

void shuffle_in_place(std::vector<int64_t>& idx, std::mt19937_64& rng) {
  for (size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[uniform_below(rng, i)]);
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), int64_t(0));
  return idx;
}

void check_positive(const char* who, const char* what, int64_t value) {
  if (value <= 0) fail("{}: {} should be a positive integer value, but got {}={}", who, what, what, value);
}

}  // namespace

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  auto rng = generator(seed, epoch);
  std::vector<int64_t> idx = iota(n);
  shuffle_in_place(idx, rng);
  return idx;
}

// ---- SequentialSampler --------------------------------------------------------------------------

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  if (n < 0) fail("SequentialSampler: the dataset size must be non-negative, got {}", n);
}

std::vector<int64_t> SequentialSampler::indices(int64_t) const { return iota(n_); }

// ---- RandomSampler ----------------------------------------------------------------------------------

RandomSampler::RandomSampler(int64_t n, bool replacement, std::optional<int64_t> num_samples, uint64_t seed)
    : n_(n), num_samples_(num_samples.value_or(n)), replacement_(replacement), seed_(seed) {
  if (n < 0) fail("RandomSampler: the dataset size must be non-negative, got {}", n);
  check_positive("RandomSampler", "num_samples", num_samples_);
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  auto rng = generator(seed_, epoch);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  if (replacement_) {
    for (int64_t i = 0; i < num_samples_; ++i) out.push_back(static_cast<int64_t>(uniform_below(rng, uint64_t(n_))));
    return out;
  }
  // Whole permutations, then the start of one more (one generator: each permutation differs).
  while (static_cast<int64_t>(out.size()) < num_samples_) {
    std::vector<int64_t> perm = iota(n_);
    shuffle_in_place(perm, rng);
    size_t take = std::min<size_t>(perm.size(), static_cast<size_t>(num_samples_) - out.size());
    out.insert(out.end(), perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(take));
  }
  return out;
}

// ---- WeightedRandomSampler ------------------------------------------------------------------------

WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement,
                                             uint64_t seed)
    : weights_(std::move(weights)), num_samples_(num_samples), replacement_(replacement), seed_(seed) {
  check_positive("WeightedRandomSampler", "num_samples", num_samples);
  if (weights_.empty()) fail("WeightedRandomSampler: weights is empty; it needs one weight per sample");
  double sum = 0;
  int64_t positive = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    if (!std::isfinite(weights_[i]) || weights_[i] < 0)
      fail("WeightedRandomSampler: weights[{}] = {} is not a finite non-negative number", i, weights_[i]);
    sum += weights_[i];
    positive += weights_[i] > 0;
  }
  if (!(sum > 0)) fail("WeightedRandomSampler: the weights sum to {}; at least one must be positive", sum);
  if (!replacement && num_samples > positive)
    fail("WeightedRandomSampler: cannot draw {} samples without replacement from {} positive weights", num_samples,
         positive);
}

std::vector<int64_t> WeightedRandomSampler::indices(int64_t epoch) const {
  auto rng = generator(seed_, epoch);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  if (replacement_) {
    std::vector<double> cumulative(weights_.size());
    std::partial_sum(weights_.begin(), weights_.end(), cumulative.begin());
    const double total = cumulative.back();
    for (int64_t i = 0; i < num_samples_; ++i) {
      double u = uniform01(rng) * total;
      auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
      size_t k = std::min<size_t>(static_cast<size_t>(it - cumulative.begin()), cumulative.size() - 1);
      while (weights_[k] == 0) --k;  // u at a boundary never picks a zero-weight index
      out.push_back(static_cast<int64_t>(k));
    }
    return out;
  }
  // Without replacement: the num_samples largest keys log(u) / w (Efraimidis-Spirakis), which is
  // sequential drawing proportional to the remaining weights; zero weights are never drawn.
  std::vector<std::pair<double, int64_t>> keys;
  for (size_t i = 0; i < weights_.size(); ++i)
    if (weights_[i] > 0) keys.push_back({std::log(1.0 - uniform01(rng)) / weights_[i], static_cast<int64_t>(i)});
  std::partial_sort(keys.begin(), keys.begin() + num_samples_, keys.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int64_t i = 0; i < num_samples_; ++i) out.push_back(keys[static_cast<size_t>(i)].second);
  return out;
}

// ---- DistributedSampler ---------------------------------------------------------------------------

DistributedSampler::DistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank, bool shuffle,
                                       uint64_t seed, bool drop_last)
    : n_(dataset_size), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle), seed_(seed), drop_last_(drop_last) {
  if (dataset_size < 0) fail("DistributedSampler: the dataset size must be non-negative, got {}", dataset_size);
  check_positive("DistributedSampler", "num_replicas", num_replicas);
  if (rank < 0 || rank >= num_replicas)
    fail("DistributedSampler: Invalid rank {}, rank should be in the interval [0, {}]", rank, num_replicas - 1);
  // PyTorch: with drop_last, ceil((n - r) / r) per replica when r does not divide n; else ceil(n / r).
  if (drop_last && n_ % num_replicas != 0)
    num_samples_ = std::max<int64_t>(0, (n_ - num_replicas + num_replicas - 1) / num_replicas);
  else
    num_samples_ = (n_ + num_replicas - 1) / num_replicas;
}

std::vector<int64_t> DistributedSampler::indices(int64_t) const {
  // PyTorch seeds its generator with seed + epoch.
  std::vector<int64_t> order = shuffle_ ? random_permutation(n_, seed_ + static_cast<uint64_t>(epoch_), 0) : iota(n_);
  const size_t total = static_cast<size_t>(total_size());
  if (!drop_last_) {
    // Pad by repeating the order from its start (several times when the padding exceeds it).
    for (size_t i = 0; order.size() < total; ++i) order.push_back(order[i]);
  } else {
    order.resize(total);
  }
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(num_replicas_)) mine.push_back(order[i]);
  return mine;
}

// ---- BatchSampler -------------------------------------------------------------------------------------

BatchSampler::BatchSampler(std::shared_ptr<const Sampler> sampler, int64_t batch_size, bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
  if (!sampler_) fail("BatchSampler: the sampler is null");
  check_positive("BatchSampler", "batch_size", batch_size);
}

int64_t BatchSampler::size() const {
  int64_t n = sampler_->size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

std::vector<std::vector<int64_t>> BatchSampler::batches(int64_t epoch) const {
  std::vector<int64_t> idx = sampler_->indices(epoch);
  std::vector<std::vector<int64_t>> out;
  for (size_t lo = 0; lo < idx.size(); lo += static_cast<size_t>(batch_size_)) {
    size_t hi = std::min(idx.size(), lo + static_cast<size_t>(batch_size_));
    if (drop_last_ && hi - lo < static_cast<size_t>(batch_size_)) break;
    out.emplace_back(idx.begin() + static_cast<std::ptrdiff_t>(lo), idx.begin() + static_cast<std::ptrdiff_t>(hi));
  }
  return out;
}

}  // namespace tritium::nn
