// Batches of a DataLoader moved to a device ahead of use: the host-to-device copy of batch i+1
// is issued on a side stream when batch i is handed out, so it runs while the GPU computes on
// batch i (from pinned batches, DataLoaderOptions::pin_memory, the copy is truly asynchronous).
// This is PyTorch's prefetcher recipe (runtime/streams.h): the destination is allocated and
// copied under a StreamGuard of the side stream; when the batch is handed out, the consumer's
// stream (the current stream of the device at that moment) waits for the copy's event and the
// batch's tensors are record_stream'ed on it, so their blocks go back to the side stream's cache
// only after the consumer's work on them. No host synchronisation on the way. Each pinned host
// batch stays alive until its copy's event has completed. On the CPU device the batches pass
// through unchanged.
//
//   nn::DataLoader loader(train, {.batch_size = 256, .shuffle = true, .num_workers = 2, .pin_memory = true});
//   nn::DevicePrefetcher on_gpu(loader, Device::cuda(0));
//   for (auto& [x, y] : on_gpu) { ... }   // x, y on cuda:0, ready on the current stream
#pragma once
#include <deque>
#include <memory>
#include <optional>

#include "nn/data_loader.h"
#include "runtime/cuda_device.h"
#include "runtime/streams.h"

namespace tritium::nn {

class DevicePrefetcher {
 public:
  DevicePrefetcher(DataLoader& loader, Device device);  // errors: device memory unavailable
  ~DevicePrefetcher();
  DevicePrefetcher(const DevicePrefetcher&) = delete;
  DevicePrefetcher& operator=(const DevicePrefetcher&) = delete;

  Device device() const { return device_; }

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
    friend class DevicePrefetcher;
    iterator(DevicePrefetcher* owner, DataLoader::iterator source);
    void issue_next();  // starts the copy of the source's current batch (if any) into pending_
    DevicePrefetcher* owner_ = nullptr;
    DataLoader::iterator source_;
    Batch current_, pending_;
    std::shared_ptr<runtime::cuda::Event> pending_done_;
    bool has_pending_ = false, done_ = true;
  };
  iterator begin();
  std::default_sentinel_t end() const { return {}; }

 private:
  struct InFlight {
    Batch host;
    std::shared_ptr<runtime::cuda::Event> done;
  };
  Batch copy_async(const Batch& host, std::shared_ptr<runtime::cuda::Event>& done);
  void release_finished();

  DataLoader& loader_;
  Device device_;
  std::optional<runtime::Stream> side_;  // cuda only: a stream of the device's pool
  std::deque<InFlight> in_flight_;
};

}  // namespace tritium::nn
