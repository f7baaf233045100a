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
  // The pool's streams are non-blocking: they do not serialise with the legacy default stream.
  if (device.is_cuda()) side_ = runtime::Stream(device);
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
  const int dev = device_.index;
  auto check_host = [&](const Tensor& h) {
    if (h.defined() && !h.device().is_cpu())
      fail("DevicePrefetcher: the loader gave a batch on {}, expected host tensors", h.device().str());
  };
  check_host(host.x), check_host(host.y);
  // Allocated for the side stream (its cache: a block comes back there only after the consumer's
  // work on it, by record_stream at hand-out), poisoned and filled there.
  runtime::StreamGuard on_side(*side_);
  auto allocate = [&](const Tensor& h) { return h.defined() ? Tensor::empty(h.shape(), h.dtype(), device_) : Tensor(); };
  Batch out{allocate(host.x), allocate(host.y)};
  auto copy = [&](const Tensor& h, const Tensor& dst) {
    if (!h.defined()) return;
    Tensor src = h.is_contiguous() ? h : ops::contiguous(h);
    cuda::copy_h2d(cuda::to_deviceptr(dst.raw_data()), src.raw_data(), static_cast<size_t>(src.nbytes()), dev,
                   static_cast<cuda::CUstream>(side_->native_handle()));
  };
  copy(host.x, out.x), copy(host.y, out.y);
  done = std::make_shared<cuda::Event>(dev, cuda::CU_EVENT_DISABLE_TIMING);
  done->record(static_cast<cuda::CUstream>(side_->native_handle()));
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
    // Kernels queued from now on on the consumer's stream run after the copy (the host goes on),
    // and the batch's blocks are not reused by the side stream before that work is done.
    const runtime::Stream consumer = runtime::current_stream(owner_->device_);
    cuda::ensure_context(owner_->device_.index);
    cuda::check(cuda::driver().cuStreamWaitEvent(static_cast<cuda::CUstream>(consumer.native_handle()),
                                                 pending_done_->get(), 0),
                "cuStreamWaitEvent", "DevicePrefetcher");
    if (current_.x.defined()) runtime::record_stream(current_.x, consumer);
    if (current_.y.defined()) runtime::record_stream(current_.y, consumer);
    pending_done_.reset();
  }
  ++source_;      // the loader's next host batch (its workers prepared it meanwhile)
  issue_next();  // and its copy starts now, overlapping the compute on current_
  return *this;
}

}  // namespace tritium::nn
