// NCCL's collectives on the group's communication stream, ordered against the caller's current
// stream by events (PyTorch's ProcessGroupNCCL scheme), and a watchdog for errors and timeouts.
// Written without a GPU at hand: it compiles and links here; docs/distributed.md says how it is run
// on two GPUs.
#include "dist/nccl_process_group.h"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include "common/error.h"
#include "dist/nccl_library.h"
#include "profiler/hooks.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"
#include "runtime/streams.h"

namespace tritium::dist {

namespace cuda = runtime::cuda;

namespace {

int nccl_type(DType d, const char* collective) {
  switch (d) {
    case DType::f32: return nccl::kFloat32;
    case DType::f64: return nccl::kFloat64;
    case DType::f16: return nccl::kFloat16;
    case DType::bf16: return nccl::kBfloat16;
    case DType::i32: return nccl::kInt32;
    case DType::i64: return nccl::kInt64;
    case DType::i8: return nccl::kInt8;
    case DType::u8: return nccl::kUint8;
    default:
      fail("dist::{} (nccl): dtype {} is not supported (f32, f64, f16, bf16, i32, i64, i8, u8)", collective,
           dtype_name(d));
  }
}

int nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return nccl::kSum;
    case ReduceOp::avg: return nccl::kAvg;
    case ReduceOp::max: return nccl::kMax;
    case ReduceOp::min: return nccl::kMin;
  }
  return nccl::kSum;
}

const void* ptr(const Tensor& t) { return t.raw_data(); }

}  // namespace

// One collective: its done event (recorded on the communication stream after it) and the
// tensors it reads and writes, kept alive until the watchdog sees it finished.
class NcclWork : public Work {
 public:
  NcclWork(int device, std::string what, std::vector<Tensor> keep, bool blocking)
      : device_(device), what_(std::move(what)), keep_(std::move(keep)), blocking_(blocking) {}
  Event& done() { return done_; }
  const std::string& what() const { return what_; }
  std::chrono::steady_clock::time_point issued = std::chrono::steady_clock::now();

  // The caller's current stream (at wait time, as PyTorch's Work::wait) waits on the GPU for the
  // collective; the host returns at once. A barrier blocks the host instead.
  void wait() override {
    if (blocking_) done_.synchronize();
    else current_stream(Device::cuda(device_)).wait_event(done_);
  }
  bool is_completed() override {
    cuda::ensure_context(device_);
    return done_.query();
  }
  void release_tensors() { keep_.clear(); }

 private:
  int device_;
  std::string what_;
  std::vector<Tensor> keep_;
  bool blocking_;
  Event done_;
};

struct NcclProcessGroup::Impl {
  int device = 0, rank = 0, size = 1;
  std::chrono::milliseconds timeout{};
  nccl::Comm comm = nullptr;
  std::optional<Stream> stream;          // the communication stream (one of the device's pool)
  std::mutex mutex;                      // issue order and the watchdog's list
  std::list<std::shared_ptr<NcclWork>> in_flight;
  std::atomic<bool> stopping{false};
  std::thread watchdog;

  // Issues `call` on the communication stream once the work queued so far on the caller's current
  // stream is done (an event, no host wait). `used` are the caller's tensors the collective reads
  // or writes: record_stream'ed on the communication stream, so that the caching allocator does
  // not hand their blocks out again before the collective has run, even if the caller drops them
  // at once. `call` runs with the communication stream current, so that the scratch it allocates
  // belongs to that stream. `message` (this rank's tensor: dtype, elements, bytes) is what the
  // profiler records; while one records, events on the communication stream around `call` time
  // the collective there (read when the profile stops).
  struct Message {
    std::string_view dtype;
    int64_t elements = 0, bytes = 0;
  };
  WorkPtr issue(const char* collective, const std::vector<Tensor>& used, bool blocking, Message message,
                const std::function<void(cuda::CUstream)>& call) {
    std::lock_guard lock(mutex);
    profiler::detail::CollectiveScope profiled("nccl", collective, message.dtype, message.elements, message.bytes, size);
    cuda::ensure_context(device);
    stream->wait_stream(current_stream(Device::cuda(device)));
    for (const Tensor& t : used) record_stream(t, *stream);
    auto work = std::make_shared<NcclWork>(
        device, fmt::format("dist::{} (nccl) on rank {} of {}", collective, rank, size), used, blocking);
    {
      StreamGuard on_comm(*stream);
      void* native = stream->native_handle();
      auto timing = profiler::detail::gpu_timing_begin(device, native);
      call(static_cast<cuda::CUstream>(native));
      profiler::detail::gpu_timing_end(timing, device, native);
    }
    work->done().record(*stream);
    in_flight.push_back(work);
    return work;
  }

  // Every 100 ms: drops finished collectives; on an NCCL error or a collective past the timeout,
  // aborts the communicator and ends the process (PyTorch's watchdog does the same by default).
  void watch() {
    try {
      cuda::ensure_context(device);
    } catch (const std::exception&) {
      return;
    }
    while (!stopping) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::string failure;
      {
        std::lock_guard lock(mutex);
        for (auto it = in_flight.begin(); it != in_flight.end();) {
          if ((*it)->is_completed()) {
            (*it)->release_tensors();
            it = in_flight.erase(it);
            continue;
          }
          if (std::chrono::steady_clock::now() - (*it)->issued > timeout)
            failure = fmt::format("{} did not finish within {} ms (a peer died or hangs)", (*it)->what(),
                                  timeout.count());
          ++it;
        }
        nccl::Result async = nccl::kSuccess;
        if (failure.empty() && nccl::library().ncclCommGetAsyncError(comm, &async) == nccl::kSuccess &&
            async != nccl::kSuccess && async != nccl::kInProgress)
          failure = fmt::format("NCCL reported an asynchronous error on rank {} of {}: {}", rank, size,
                                nccl::library().ncclGetErrorString(async));
      }
      if (!failure.empty()) {
        nccl::library().ncclCommAbort(comm);
        std::fprintf(stderr, "tritium dist: %s; aborting the process\n", failure.c_str());
        std::fflush(stderr);
        std::_Exit(1);
      }
    }
  }
};

NcclProcessGroup::NcclProcessGroup(int rank, int size, std::vector<int> global_ranks, std::chrono::milliseconds timeout)
    : ProcessGroup(rank, size, std::move(global_ranks), timeout), impl_(std::make_shared<Impl>()) {}

std::shared_ptr<NcclProcessGroup> NcclProcessGroup::create(std::shared_ptr<Store> store, int rank, int size,
                                                           std::chrono::milliseconds timeout, int cuda_device,
                                                           std::vector<int> global_ranks) {
  const nccl::Library& lib = nccl::library();  // the reason, when NCCL is missing
  if (!cuda::available()) fail("dist: the nccl backend needs CUDA: {}", cuda::unavailable_reason());
  if (cuda_device < 0 || cuda_device >= cuda::device_count())
    fail("dist: the nccl backend's device cuda:{} (LOCAL_RANK) does not exist: this machine has {} GPUs",
         cuda_device, cuda::device_count());
  if (size < 1 || rank < 0 || rank >= size) fail("dist: rank {} is out of range for a group of {} ranks", rank, size);
  if (global_ranks.empty())
    for (int r = 0; r < size; ++r) global_ranks.push_back(r);
  std::shared_ptr<NcclProcessGroup> group(new NcclProcessGroup(rank, size, std::move(global_ranks), timeout));
  Impl& impl = *group->impl_;
  impl.device = cuda_device, impl.rank = rank, impl.size = size, impl.timeout = timeout;
  cuda::ensure_context(cuda_device);

  // The unique id through the store; every rank checks in first, so that ncclCommInitRank (which
  // blocks without a timeout) starts only once all have arrived.
  nccl::UniqueId id{};
  if (rank == 0) {
    nccl::check(lib.ncclGetUniqueId(&id), "ncclGetUniqueId");
    store->set("nccl_unique_id", Bytes(id.internal, id.internal + sizeof id.internal));
  } else {
    Bytes b = store->get("nccl_unique_id");
    if (b.size() != sizeof id.internal) fail("dist: the NCCL unique id in the store has {} bytes, not 128", b.size());
    std::copy(b.begin(), b.end(), id.internal);
  }
  store->set("nccl_ready/" + std::to_string(rank), std::string("1"));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back("nccl_ready/" + std::to_string(r));
  store->wait(keys, timeout);
  nccl::check(lib.ncclCommInitRank(&impl.comm, size, id, rank), "ncclCommInitRank");
  impl.stream.emplace(Device::cuda(cuda_device));  // from the pool: non-blocking, as PyTorch's NCCL streams
  impl.watchdog = std::thread([&impl] { impl.watch(); });
  return group;
}

NcclProcessGroup::~NcclProcessGroup() {
  impl_->stopping = true;
  if (impl_->watchdog.joinable()) impl_->watchdog.join();
  if (impl_->comm) {
    try {
      cuda::ensure_context(impl_->device);
      impl_->stream->synchronize();
    } catch (const std::exception&) {
    }
    nccl::library().ncclCommDestroy(impl_->comm);
  }
}

void NcclProcessGroup::check_cuda(const Tensor& t, const char* collective) const {
  check_tensor(t, collective);
  if (t.device() != Device::cuda(impl_->device))
    fail("dist::{} (nccl): the tensor is on {}, but this rank's group uses cuda:{} (LOCAL_RANK); the nccl backend "
         "takes CUDA tensors of that device (use gloo for CPU tensors)",
         collective, t.device().str(), impl_->device);
}

WorkPtr NcclProcessGroup::all_reduce(Tensor& tensor, ReduceOp op) {
  check_cuda(tensor, "all_reduce");
  int type = nccl_type(tensor.dtype(), "all_reduce");
  auto comm = impl_->comm;
  Impl::Message message{dtype_name(tensor.dtype()), tensor.numel(), tensor.nbytes()};
  return impl_->issue("all_reduce", {tensor}, false, message, [&](cuda::CUstream s) {
    nccl::check(nccl::library().ncclAllReduce(ptr(tensor), tensor.raw_data(), static_cast<size_t>(tensor.numel()),
                                              type, nccl_op(op), comm, s),
                "ncclAllReduce");
  });
}

WorkPtr NcclProcessGroup::broadcast(Tensor& tensor, int root) {
  check_cuda(tensor, "broadcast");
  check_root(root, "broadcast");
  auto comm = impl_->comm;
  Impl::Message message{dtype_name(tensor.dtype()), tensor.numel(), tensor.nbytes()};
  return impl_->issue("broadcast", {tensor}, false, message, [&](cuda::CUstream s) {
    nccl::check(nccl::library().ncclBroadcast(ptr(tensor), tensor.raw_data(), static_cast<size_t>(tensor.nbytes()),
                                              nccl::kUint8, root, comm, s),
                "ncclBroadcast");
  });
}

WorkPtr NcclProcessGroup::all_gather(std::vector<Tensor>& outputs, const Tensor& input) {
  check_cuda(input, "all_gather");
  check_list(outputs, input, "all_gather", "outputs");
  auto bytes = static_cast<size_t>(input.nbytes());
  std::vector<Tensor> used = outputs;
  used.push_back(input);
  auto comm = impl_->comm;
  Impl::Message message{dtype_name(input.dtype()), input.numel(), input.nbytes()};
  return impl_->issue("all_gather", used, false, message, [&](cuda::CUstream s) {
    // Scratch of the communication stream: freed there, reused only by its later work.
    Tensor gathered = Tensor::empty({static_cast<int64_t>(bytes) * size()}, DType::u8, input.device());
    nccl::check(nccl::library().ncclAllGather(ptr(input), gathered.raw_data(), bytes, nccl::kUint8, comm, s),
                "ncclAllGather");
    for (size_t r = 0; r < outputs.size(); ++r)
      cuda::check(cuda::driver().cuMemcpyDtoDAsync(cuda::to_deviceptr(outputs[r].raw_data()),
                                                   cuda::to_deviceptr(gathered.raw_data()) + r * bytes, bytes, s),
                  "cuMemcpyDtoDAsync", "dist::all_gather");
  });
}

WorkPtr NcclProcessGroup::reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) {
  check_cuda(output, "reduce_scatter");
  check_list(inputs, output, "reduce_scatter", "inputs");
  int type = nccl_type(output.dtype(), "reduce_scatter");
  auto bytes = static_cast<size_t>(output.nbytes());
  std::vector<Tensor> used = inputs;
  used.push_back(output);
  auto comm = impl_->comm;
  Impl::Message message{dtype_name(output.dtype()), output.numel() * size(), output.nbytes() * size()};
  return impl_->issue("reduce_scatter", used, false, message, [&](cuda::CUstream s) {
    Tensor packed = Tensor::empty({output.numel() * size()}, output.dtype(), output.device());  // comm-stream scratch
    for (size_t r = 0; r < inputs.size(); ++r)
      cuda::check(cuda::driver().cuMemcpyDtoDAsync(cuda::to_deviceptr(packed.raw_data()) + r * bytes,
                                                   cuda::to_deviceptr(inputs[r].raw_data()), bytes, s),
                  "cuMemcpyDtoDAsync", "dist::reduce_scatter");
    nccl::check(nccl::library().ncclReduceScatter(ptr(packed), output.raw_data(), static_cast<size_t>(output.numel()),
                                                  type, nccl_op(op), comm, s),
                "ncclReduceScatter");
  });
}

WorkPtr NcclProcessGroup::barrier() {
  // An all-reduce of one element, waited for on the host (PyTorch's barrier on NCCL).
  auto comm = impl_->comm;
  const Device device = Device::cuda(impl_->device);
  return impl_->issue("barrier", {}, true, {"-", 0, 0}, [&](cuda::CUstream s) {
    Tensor one = Tensor::zeros({1}, DType::f32, device);  // filled and freed on the communication stream
    nccl::check(nccl::library().ncclAllReduce(ptr(one), one.raw_data(), 1, nccl::kFloat32, nccl::kSum, comm, s),
                "ncclAllReduce");
  });
}

}  // namespace tritium::dist
