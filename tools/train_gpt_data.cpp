// train-gpt's batches (tools/train_gpt_data.h).
#include "tools/train_gpt_data.h"

#include "nn/sampler.h"

namespace tritium::train_gpt {

namespace {

// A DistributedSampler (drop_last: every rank the same number of windows) whose epochs are counted
// from `first_epoch` (the DataLoader of a resumed run starts its count at 0) and whose first epoch
// starts `skip` of this rank's indices in (the batches taken before the run stopped).
class ResumedSampler : public nn::Sampler {
 public:
  ResumedSampler(int64_t n, int world, int rank, uint64_t seed, int64_t first_epoch, int64_t skip)
      : inner_(n, world, rank, /*shuffle=*/true, seed, /*drop_last=*/true), first_epoch_(first_epoch), skip_(skip) {}
  int64_t size() const override { return inner_.size(); }
  std::vector<int64_t> indices(int64_t epoch) const override {
    nn::DistributedSampler at_epoch = inner_;
    at_epoch.set_epoch(first_epoch_ + epoch);
    std::vector<int64_t> idx = at_epoch.indices(0);
    if (epoch == 0) idx.erase(idx.begin(), idx.begin() + std::min<int64_t>(skip_, static_cast<int64_t>(idx.size())));
    return idx;
  }

 private:
  nn::DistributedSampler inner_;
  int64_t first_epoch_, skip_;
};

}  // namespace

TrainBatches::TrainBatches(std::shared_ptr<const nn::TextCorpus> corpus, int64_t batch, int64_t context, int workers,
                           uint64_t seed, ops::Generator& gen, Device device, DataPosition start, int world,
                           int rank)
    : corpus_(std::move(corpus)), batch_(batch), context_(context), world_(world), rank_(rank), gen_(gen),
      device_(device), position_(start) {
  if (world < 1 || rank < 0 || rank >= world || batch % world != 0)
    fail("train-gpt: the global batch {} cannot be split over rank {} of {}", batch, rank, world);
  if (workers < 0) return;
  auto windows = std::make_shared<const nn::TextWindowDataset>(corpus_, nn::TextCorpus::Split::train, context);
  if (windows->size() < batch)
    fail("--batch-size {}: the training split has only {} windows of context {}", batch, windows->size(), context);
  // A position at the end of an epoch (saved after its last batch) is the start of the next.
  if (start.batch >= windows->size() / batch) ++position_.epoch, position_.batch = 0;
  // floor(floor(n / world) / (batch / world)) = floor(n / batch): the same batches per epoch at
  // every world size.
  const int64_t local = batch / world;
  auto sampler = std::make_shared<const ResumedSampler>(windows->size(), world, rank, seed, position_.epoch,
                                                        position_.batch * local);
  loader_ = std::make_unique<nn::DataLoader>(
      windows, nn::DataLoaderOptions{.batch_size = local, .sampler = sampler, .num_workers = workers,
                                     .drop_last = true, .pin_memory = device.is_cuda()});
}

std::pair<Tensor, Tensor> TrainBatches::next() {
  if (!loader_) {
    // Every rank draws the whole global batch (window starts only: cheap) and keeps its rows.
    auto [x, y] = corpus_->get_batch(nn::TextCorpus::Split::train, batch_, context_, gen_, device_);
    if (world_ == 1) return {x, y};
    const int64_t local = batch_ / world_;
    return {x.slice(0, rank_ * local, (rank_ + 1) * local).contiguous(),
            y.slice(0, rank_ * local, (rank_ + 1) * local).contiguous()};
  }
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
