#include "nn/data_loader.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/error.h"
#include "nn/pinned_memory.h"

namespace tritium::nn {

namespace {

std::string index_list(const std::vector<int64_t>& idx) {
  std::string out = "[";
  for (size_t i = 0; i < idx.size() && i < 8; ++i) out += (i ? ", " : "") + std::to_string(idx[i]);
  return out + (idx.size() > 8 ? ", ...]" : "]");
}

const char* what_of(std::exception_ptr e, std::string& storage) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    storage = x.what();
  } catch (...) {
    storage = "an exception that is not a std::exception";
  }
  return storage.c_str();
}

}  // namespace

// One epoch: its batches (from the batch sampler), the workers that load them and the queue of
// loaded batches, keyed by position so that delivery follows the sampler's order.
struct DataLoader::Epoch {
  struct Loaded {
    Batch batch;
    std::exception_ptr error;
  };

  std::shared_ptr<const Dataset> dataset;
  std::vector<std::vector<int64_t>> batches;
  CollateFn collate;
  bool pin = false;
  int num_workers = 0;
  size_t capacity = 0;  // batches loaded or loading ahead of the consumer
  int64_t epoch = 0;

  std::mutex mutex;
  std::condition_variable changed;
  size_t next_issue = 0, next_deliver = 0;
  std::map<size_t, Loaded> ready;
  bool stop = false;
  std::vector<std::thread> workers;

  ~Epoch() {
    request_stop();
    for (auto& t : workers)
      if (t.joinable()) t.join();
  }

  void start() {
    for (int w = 0; w < num_workers; ++w) workers.emplace_back([this, w] { work(w); });
  }

  void request_stop() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    changed.notify_all();
  }

  // Batch b, collated (and pinned); errors name the worker, the batch and the failing sample.
  Batch load(size_t b, int worker) const {
    const std::vector<int64_t>& idx = batches[b];
    const std::string who = worker < 0 ? std::string("DataLoader") : fmt::format("DataLoader worker {}", worker);
    auto failed_sample = [&](int64_t i, const char* why) {
      fail("{}: failed to load sample {} (batch {} of epoch {}): {}", who, i, b, epoch, why);
    };
    Batch batch;
    if (!collate) {
      try {
        batch = dataset->get_batch(idx);
      } catch (...) {
        std::string storage;
        const char* why = what_of(std::current_exception(), storage);
        // Find the sample whose get() fails, to name it; else the batch as a whole failed.
        for (int64_t i : idx) {
          try {
            (void)dataset->get(i);
          } catch (...) {
            std::string s;
            failed_sample(i, what_of(std::current_exception(), s));
          }
        }
        fail("{}: failed to load batch {} of epoch {} (samples {}): {}", who, b, epoch, index_list(idx), why);
      }
    } else {
      std::vector<Example> samples;
      samples.reserve(idx.size());
      for (int64_t i : idx) {
        try {
          samples.push_back(dataset->get(i));
        } catch (...) {
          std::string s;
          failed_sample(i, what_of(std::current_exception(), s));
        }
      }
      try {
        batch = collate(samples);
      } catch (...) {
        std::string s;
        fail("{}: the collate function failed on batch {} of epoch {} (samples {}): {}", who, b, epoch,
             index_list(idx), what_of(std::current_exception(), s));
      }
    }
    return pin ? pin_memory(batch) : batch;
  }

  void work(int w) {
    for (;;) {
      size_t b;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] {
          return stop || next_issue >= batches.size() || next_issue - next_deliver < capacity;
        });
        if (stop || next_issue >= batches.size()) return;
        b = next_issue++;
      }
      Loaded loaded;
      try {
        loaded.batch = load(b, w);  // outside the lock: the work that overlaps the consumer's
      } catch (...) {
        loaded.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        ready.emplace(b, std::move(loaded));
      }
      changed.notify_all();
    }
  }

  // The next batch in order; false at the end of the epoch or after a stop.
  bool next(Batch& out) {
    if (num_workers == 0) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (stop || next_deliver >= batches.size()) return false;
      }
      size_t b = next_deliver++;
      try {
        out = load(b, -1);
      } catch (...) {
        next_deliver = batches.size();  // an error ends the epoch
        throw;
      }
      return true;
    }
    std::unique_lock<std::mutex> lock(mutex);
    if (next_deliver >= batches.size()) return false;
    changed.wait(lock, [&] { return stop || ready.count(next_deliver) != 0; });
    auto it = ready.find(next_deliver);
    if (it == ready.end()) return false;  // stopped
    Loaded loaded = std::move(it->second);
    ready.erase(it);
    ++next_deliver;
    if (loaded.error) {
      stop = true;  // an error ends the epoch: the workers stop
      next_deliver = batches.size();
      lock.unlock();
      changed.notify_all();
      std::rethrow_exception(loaded.error);
    }
    lock.unlock();
    changed.notify_all();  // a slot is free: a worker may load the next batch
    out = std::move(loaded.batch);
    return true;
  }
};

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions o)
    : dataset_(std::move(dataset)), collate_(std::move(o.collate)), num_workers_(o.num_workers),
      pin_memory_(o.pin_memory) {
  if (!dataset_) fail("DataLoader: the dataset is null");
  if (o.num_workers < 0)
    fail("DataLoader: num_workers option should be non-negative ({} given); use num_workers=0 to load on the calling "
         "thread",
         o.num_workers);
  if (o.num_workers == 0 && o.prefetch_factor)
    fail("DataLoader: prefetch_factor option could only be specified with num_workers > 0 (prefetch_factor={}, "
         "num_workers=0)",
         *o.prefetch_factor);
  if (o.prefetch_factor && *o.prefetch_factor <= 0)
    fail("DataLoader: prefetch_factor should be a positive integer value, but got prefetch_factor={}",
         *o.prefetch_factor);
  prefetch_factor_ = o.prefetch_factor.value_or(2);
  if (o.sampler && o.shuffle) fail("DataLoader: sampler option is mutually exclusive with shuffle");
  if (o.batch_sampler) {
    if (o.batch_size || o.shuffle || o.sampler || o.drop_last)
      fail("DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last");
    batch_sampler_ = o.batch_sampler;
    return;
  }
  const int64_t batch_size = o.batch_size.value_or(1);
  if (batch_size <= 0) fail("DataLoader: batch_size should be a positive integer value, but got batch_size={}", batch_size);
  std::shared_ptr<const Sampler> sampler = o.sampler;
  if (!sampler) {
    if (o.shuffle)
      sampler = std::make_shared<RandomSampler>(dataset_->size(), false, std::nullopt, o.seed);
    else
      sampler = std::make_shared<SequentialSampler>(dataset_->size());
  }
  batch_sampler_ = std::make_shared<BatchSampler>(std::move(sampler), batch_size, o.drop_last);
}

DataLoader::~DataLoader() {
  for (auto& weak : live_)
    if (auto epoch = weak.lock()) epoch->request_stop();
}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  std::vector<int64_t> out;
  for (auto& batch : batch_sampler_->batches(epoch)) out.insert(out.end(), batch.begin(), batch.end());
  return out;
}

DataLoader::iterator DataLoader::begin() {
  auto epoch = std::make_shared<Epoch>();
  epoch->dataset = dataset_;
  epoch->epoch = epoch_;
  epoch->batches = batch_sampler_->batches(epoch_++);
  epoch->collate = collate_;
  epoch->pin = pin_memory_;
  epoch->num_workers = num_workers_;
  epoch->capacity = static_cast<size_t>(num_workers_) * static_cast<size_t>(prefetch_factor_);
  std::erase_if(live_, [](const std::weak_ptr<Epoch>& w) { return w.expired(); });
  live_.push_back(epoch);
  epoch->start();
  return iterator(std::move(epoch));
}

DataLoader::iterator::iterator(std::shared_ptr<Epoch> epoch) : epoch_(std::move(epoch)), done_(false) { ++*this; }

DataLoader::iterator& DataLoader::iterator::operator++() {
  if (done_ || !epoch_) {
    done_ = true;
    return *this;
  }
  current_ = Batch{};  // release the previous batch before waiting
  bool got = false;
  try {
    got = epoch_->next(current_);
  } catch (...) {
    done_ = true;
    epoch_.reset();  // joins the workers
    throw;
  }
  if (!got) {
    done_ = true;
    epoch_.reset();
  }
  return *this;
}

}  // namespace tritium::nn
