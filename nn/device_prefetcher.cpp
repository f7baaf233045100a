#include "nn/device_prefetcher.h"

#include "common/error.h"
#include "ops/ops.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_driver.h"

namespace tritium::nn {

namespace cuda = runtime::cuda;

DevicePrefetcher::DevicePrefetcher(DataLoader& loader, Device device) : loader_(loader), device_(device) {
  if (!runtime::memory_available(device))
    fail("DevicePrefetcher: cannot place batches on {}: {}", device.str(), runtime::memory_unavailable_reason(device));
  // Non-blocking: a stream created blocking would serialise with the legacy default stream.
  if (device.is_cuda()) side_ = std::make_unique<cuda::Stream>(device.index, cuda::CU_STREAM_NON_BLOCKING);
}

DevicePrefetcher::~DevicePrefetcher() {
  if (side_) {
    try {
      side_->synchronize();  // the host batches of copies in flight must outlive them
    } catch (...) {
    }
  }
}

void DevicePrefetcher::release_finished() {
  while (!in_flight_.empty() && in_flight_.front().done->query()) in_flight_.pop_front();
}

Batch DevicePrefetcher::copy_async(const Batch& host, std::shared_ptr<cuda::Event>& done) {
  const cuda::Driver& d = cuda::driver();
  const int dev = device_.index;
  auto check_host = [&](const Tensor& h) {
    if (h.defined() && !h.device().is_cpu())
      fail("DevicePrefetcher: the loader gave a batch on {}, expected host tensors", h.device().str());
  };
  check_host(host.x), check_host(host.y);
  auto allocate = [&](const Tensor& h) { return h.defined() ? Tensor::empty(h.shape(), h.dtype(), device_) : Tensor(); };
  Batch out{allocate(host.x), allocate(host.y)};
  // The destinations come from the default stream's cache, and allocation may queue work there (the
  // poisoning memset): the side stream waits for everything queued there so far, allocation included.
  cuda::Event compute_ready(dev, cuda::CU_EVENT_DISABLE_TIMING);
  compute_ready.record(cuda::default_stream(dev));
  cuda::check(d.cuStreamWaitEvent(side_->get(), compute_ready.get(), 0), "cuStreamWaitEvent", "DevicePrefetcher");
  auto copy = [&](const Tensor& h, const Tensor& dst) {
    if (!h.defined()) return;
    Tensor src = h.is_contiguous() ? h : ops::contiguous(h);
    cuda::copy_h2d(cuda::to_deviceptr(dst.raw_data()), src.raw_data(), static_cast<size_t>(src.nbytes()), dev,
                   side_->get());
  };
  copy(host.x, out.x), copy(host.y, out.y);
  done = std::make_shared<cuda::Event>(dev, cuda::CU_EVENT_DISABLE_TIMING);
  done->record(side_->get());
  in_flight_.push_back(InFlight{host, done});
  return out;
}

DevicePrefetcher::iterator DevicePrefetcher::begin() { return iterator(this, loader_.begin()); }

DevicePrefetcher::iterator::iterator(DevicePrefetcher* owner, DataLoader::iterator source)
    : owner_(owner), source_(std::move(source)), done_(false) {
  issue_next();
  ++*this;
}

void DevicePrefetcher::iterator::issue_next() {
  has_pending_ = source_ != std::default_sentinel;
  if (!has_pending_) return;
  if (owner_->device_.is_cpu()) {
    pending_ = std::move(*source_);
  } else {
    owner_->release_finished();
    pending_ = owner_->copy_async(*source_, pending_done_);
  }
}

DevicePrefetcher::iterator& DevicePrefetcher::iterator::operator++() {
  if (done_) return *this;
  if (!has_pending_) {
    done_ = true;
    current_ = Batch{};
    return *this;
  }
  current_ = std::move(pending_);
  if (pending_done_) {
    // Kernels queued from now on (on the default stream) run after the copy; the host goes on.
    const int dev = owner_->device_.index;
    cuda::check(cuda::driver().cuStreamWaitEvent(cuda::default_stream(dev), pending_done_->get(), 0),
                "cuStreamWaitEvent", "DevicePrefetcher");
    pending_done_.reset();
  }
  ++source_;      // the loader's next host batch (its workers prepared it meanwhile)
  issue_next();  // and its copy starts now, overlapping the compute on current_
  return *this;
}

}  // namespace tritium::nn
