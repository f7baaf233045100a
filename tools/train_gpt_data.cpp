// train-gpt's batches (tools/train_gpt_data.h).
#include "tools/train_gpt_data.h"

#include "nn/sampler.h"

namespace tritium::train_gpt {

namespace {

// A RandomSampler whose epochs are counted from `first_epoch` (the DataLoader of a resumed run
// starts its count at 0) and whose first epoch starts `skip` indices in (the batches taken before
// the run stopped).
class ResumedSampler : public nn::Sampler {
 public:
  ResumedSampler(int64_t n, uint64_t seed, int64_t first_epoch, int64_t skip)
      : inner_(n, /*replacement=*/false, std::nullopt, seed), first_epoch_(first_epoch), skip_(skip) {}
  int64_t size() const override { return inner_.size(); }
  std::vector<int64_t> indices(int64_t epoch) const override {
    std::vector<int64_t> idx = inner_.indices(first_epoch_ + epoch);
    if (epoch == 0) idx.erase(idx.begin(), idx.begin() + std::min<int64_t>(skip_, static_cast<int64_t>(idx.size())));
    return idx;
  }

 private:
  nn::RandomSampler inner_;
  int64_t first_epoch_, skip_;
};

}  // namespace

TrainBatches::TrainBatches(std::shared_ptr<const nn::TextCorpus> corpus, int64_t batch, int64_t context, int workers,
                           uint64_t seed, ops::Generator& gen, Device device, DataPosition start)
    : corpus_(std::move(corpus)), batch_(batch), context_(context), gen_(gen), device_(device), position_(start) {
  if (workers < 0) return;
  auto windows = std::make_shared<const nn::TextWindowDataset>(corpus_, nn::TextCorpus::Split::train, context);
  if (windows->size() < batch)
    fail("--batch-size {}: the training split has only {} windows of context {}", batch, windows->size(), context);
  // A position at the end of an epoch (saved after its last batch) is the start of the next.
  if (start.batch >= windows->size() / batch) ++position_.epoch, position_.batch = 0;
  auto sampler = std::make_shared<const ResumedSampler>(windows->size(), seed, position_.epoch, position_.batch * batch);
  loader_ = std::make_unique<nn::DataLoader>(
      windows, nn::DataLoaderOptions{.batch_size = batch, .sampler = sampler, .num_workers = workers,
                                     .drop_last = true, .pin_memory = device.is_cuda()});
}

std::pair<Tensor, Tensor> TrainBatches::next() {
  if (!loader_) return corpus_->get_batch(nn::TextCorpus::Split::train, batch_, context_, gen_, device_);
  if (it_ && *it_ == std::default_sentinel) {  // the epoch is over: the next one, from its start
    it_.reset();
    ++position_.epoch, position_.batch = 0;
  }
  if (!it_) {
    it_.emplace(loader_->begin());
    if (*it_ == std::default_sentinel) fail("train-gpt: the data loader gave an empty epoch");
  }
  nn::Batch b = **it_;
  ++*it_;  // the workers load ahead
  ++position_.batch;
  return {b.x.to(device_), b.y.to(device_)};
}

}  // namespace tritium::train_gpt
