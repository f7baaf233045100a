// Gloo's collectives on CPU tensors, run in issue order by one worker thread per group.
//
// Gloo 0.5 (Debian 12) has no reduce-scatter in its options API: reduce_scatter all-reduces the
// concatenated inputs and keeps this rank's part (twice the traffic of a ring reduce-scatter; CPU
// groups are for tests and small jobs). avg sums and divides by the group size afterwards.
#include "dist/gloo_process_group.h"

#include "common/error.h"

#if !TRITIUM_HAS_GLOO
namespace tritium::dist {
struct GlooProcessGroup::Impl {};
bool GlooProcessGroup::available() { return false; }
std::shared_ptr<GlooProcessGroup> GlooProcessGroup::create(std::shared_ptr<Store>, int, int, std::chrono::milliseconds,
                                                           std::vector<int>) {
  fail("dist: the gloo backend is not in this build (configure with libgloo-dev installed, -DTRITIUM_GLOO=ON)");
}
GlooProcessGroup::~GlooProcessGroup() = default;
WorkPtr GlooProcessGroup::all_reduce(Tensor&, ReduceOp) { return nullptr; }
WorkPtr GlooProcessGroup::broadcast(Tensor&, int) { return nullptr; }
WorkPtr GlooProcessGroup::all_gather(std::vector<Tensor>&, const Tensor&) { return nullptr; }
WorkPtr GlooProcessGroup::reduce_scatter(Tensor&, const std::vector<Tensor>&, ReduceOp) { return nullptr; }
WorkPtr GlooProcessGroup::barrier() { return nullptr; }
}  // namespace tritium::dist
#else

#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "common/error.h"
#include "profiler/hooks.h"

namespace tritium::dist {

namespace {

namespace prof = profiler::detail;

// Our store seen through Gloo's Store interface (Gloo's address exchange goes through it).
class GlooStoreAdapter : public gloo::rendezvous::Store {
 public:
  explicit GlooStoreAdapter(std::shared_ptr<dist::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::vector<char>& data) override { store_->set(key, data); }
  std::vector<char> get(const std::string& key) override { return store_->get(key); }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    store_->wait(keys, timeout);
  }

 private:
  std::shared_ptr<dist::Store> store_;
};

// The address this process's Gloo device listens on: GLOO_SOCKET_IFNAME's interface when set
// (PyTorch's variable), loopback for a job on one host (MASTER_ADDR loopback or unset), else the
// host name, which the other hosts must resolve to this host.
gloo::transport::tcp::attr device_attributes() {
  gloo::transport::tcp::attr attr;
  const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
  const char* master = std::getenv("MASTER_ADDR");
  std::string m = master ? master : "";
  if (iface && *iface) attr.iface = iface;
  else if (m.empty() || m == "localhost" || m.rfind("127.", 0) == 0 || m == "::1") attr.hostname = "127.0.0.1";
  else {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    attr.hostname = host;
  }
  return attr;
}

// One collective's completion, shared by the worker (which fulfils it) and the caller's Work.
class GlooWork : public Work {
 public:
  void wait() override {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return done_; });
    if (!error_.empty()) throw Error(error_);
  }
  bool is_completed() override {
    std::lock_guard lock(mutex_);
    return done_;
  }
  void finish(std::string error) {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
      error_ = std::move(error);
    }
    done_cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::string error_;
};

template <class F> void dispatch_reducible(DType dtype, const char* collective, F&& f) {
  switch (dtype) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i32: return f(int32_t{});
    case DType::i64: return f(int64_t{});
    default:
      fail("dist::{} (gloo): dtype {} is not supported (f32, f64, i32 or i64; broadcast and all_gather take any)",
           collective, dtype_name(dtype));
  }
}

template <class T> gloo::AllreduceOptions::Func reduce_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::max: return [](void* c, const void* a, const void* b, size_t n) { gloo::max<T>(c, a, b, n); };
    case ReduceOp::min: return [](void* c, const void* a, const void* b, size_t n) { gloo::min<T>(c, a, b, n); };
    default: return [](void* c, const void* a, const void* b, size_t n) { gloo::sum<T>(c, a, b, n); };
  }
}

}  // namespace

struct GlooProcessGroup::Impl {
  std::shared_ptr<gloo::Context> context;
  std::chrono::milliseconds timeout;
  int rank = 0, size = 1;
  uint32_t next_tag = 0;  // only the worker touches it

  std::mutex mutex;
  std::condition_variable queued;
  std::deque<std::pair<std::function<void(uint32_t)>, std::shared_ptr<GlooWork>>> queue;
  bool stopping = false;
  std::thread worker;

  void run() {
    for (;;) {
      std::function<void(uint32_t)> task;
      std::shared_ptr<GlooWork> work;
      {
        std::unique_lock lock(mutex);
        queued.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;
        std::tie(task, work) = std::move(queue.front());
        queue.pop_front();
      }
      std::string error;
      try {
        task(next_tag++);
      } catch (const std::exception& e) {
        error = e.what();
      }
      work->finish(std::move(error));
    }
  }

  // Queues `task` (given its tag) and returns its Work; errors name the collective and the rank.
  // `issued`: the profiler's scope of the issue; the worker reports when it ran the collective.
  WorkPtr enqueue(const char* collective, std::function<void(uint32_t)> task, const prof::OpenScope& issued) {
    auto work = std::make_shared<GlooWork>();
    std::string what = fmt::format("dist::{} (gloo) failed on rank {} of {}", collective, rank, size);
    auto wrapped = [what, task = std::move(task), issued](uint32_t tag) {
      const auto start = std::chrono::steady_clock::now();
      try {
        task(tag);
      } catch (const std::exception& e) {
        prof::record_collective_execution(issued, start);
        throw Error(fmt::format("{}: {}", what, e.what()));
      }
      prof::record_collective_execution(issued, start);
    };
    {
      std::lock_guard lock(mutex);
      queue.emplace_back(std::move(wrapped), work);
    }
    queued.notify_one();
    return work;
  }
};

bool GlooProcessGroup::available() { return true; }

// Gloo's TCP pairs write with plain writev(): a write to a peer that has died raises SIGPIPE,
// whose default action ends this process silently, mid-collective. PyTorch never sees it because
// Python ignores SIGPIPE. Ignore it too, unless the program chose a disposition of its own: the
// write then fails with EPIPE and the collective with an error naming it and this rank.
static void ignore_sigpipe_if_default() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) return;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, nullptr);
}

GlooProcessGroup::GlooProcessGroup(int rank, int size, std::vector<int> global_ranks, std::chrono::milliseconds timeout)
    : ProcessGroup(rank, size, std::move(global_ranks), timeout), impl_(std::make_unique<Impl>()) {}

std::shared_ptr<GlooProcessGroup> GlooProcessGroup::create(std::shared_ptr<Store> store, int rank, int size,
                                                           std::chrono::milliseconds timeout,
                                                           std::vector<int> global_ranks) {
  if (size < 1 || rank < 0 || rank >= size) fail("dist: rank {} is out of range for a group of {} ranks", rank, size);
  if (global_ranks.empty())
    for (int r = 0; r < size; ++r) global_ranks.push_back(r);
  std::shared_ptr<GlooProcessGroup> group(new GlooProcessGroup(rank, size, std::move(global_ranks), timeout));
  Impl& impl = *group->impl_;
  impl.timeout = timeout, impl.rank = rank, impl.size = size;
  ignore_sigpipe_if_default();
  try {
    auto device = gloo::transport::tcp::CreateDevice(device_attributes());
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    GlooStoreAdapter adapter(store);
    context->connectFullMesh(adapter, device);
    impl.context = context;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("dist: the Gloo group of {} ranks could not connect (rank {}): {}", size, rank, e.what());
  }
  impl.worker = std::thread([&impl] { impl.run(); });
  return group;
}

GlooProcessGroup::~GlooProcessGroup() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->queued.notify_one();
  if (impl_->worker.joinable()) impl_->worker.join();
}

void GlooProcessGroup::check_cpu(const Tensor& t, const char* collective) const {
  check_tensor(t, collective);
  if (!t.device().is_cpu())
    fail("dist::{} (gloo): the tensor is on {}; the Gloo backend takes CPU tensors (use the nccl backend for CUDA)",
         collective, t.device().str());
}

WorkPtr GlooProcessGroup::all_reduce(Tensor& tensor, ReduceOp op) {
  check_cpu(tensor, "all_reduce");
  if (op == ReduceOp::avg && !is_float(tensor.dtype()))
    fail("dist::all_reduce (gloo): avg needs a floating dtype, got {}", dtype_name(tensor.dtype()));
  dispatch_reducible(tensor.dtype(), "all_reduce", [](auto) {});
  auto ctx = impl_->context;
  auto timeout = impl_->timeout;
  int size = this->size();
  prof::CollectiveScope profiled("gloo", "all_reduce", dtype_name(tensor.dtype()), tensor.numel(), tensor.nbytes(), size);
  return impl_->enqueue("all_reduce", [=, t = tensor](uint32_t tag) {
    dispatch_reducible(t.dtype(), "all_reduce", [&](auto zero) {
      using T = decltype(zero);
      T* data = static_cast<T*>(t.raw_data());
      auto n = static_cast<size_t>(t.numel());
      if (n == 0) return;
      gloo::AllreduceOptions opts(ctx);
      opts.setOutput<T>(data, n);
      opts.setReduceFunction(reduce_function<T>(op));
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::allreduce(opts);
      if (op == ReduceOp::avg)
        for (size_t i = 0; i < n; ++i) data[i] /= static_cast<T>(size);
    });
  }, profiled.handle());
}

WorkPtr GlooProcessGroup::broadcast(Tensor& tensor, int root) {
  check_cpu(tensor, "broadcast");
  check_root(root, "broadcast");
  auto ctx = impl_->context;
  auto timeout = impl_->timeout;
  prof::CollectiveScope profiled("gloo", "broadcast", dtype_name(tensor.dtype()), tensor.numel(), tensor.nbytes(), size());
  return impl_->enqueue("broadcast", [=, t = tensor](uint32_t tag) {
    if (t.nbytes() == 0) return;
    gloo::BroadcastOptions opts(ctx);
    opts.setOutput<char>(static_cast<char*>(t.raw_data()), static_cast<size_t>(t.nbytes()));
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(timeout);
    gloo::broadcast(opts);
  }, profiled.handle());
}

WorkPtr GlooProcessGroup::all_gather(std::vector<Tensor>& outputs, const Tensor& input) {
  check_cpu(input, "all_gather");
  check_list(outputs, input, "all_gather", "outputs");
  auto ctx = impl_->context;
  auto timeout = impl_->timeout;
  prof::CollectiveScope profiled("gloo", "all_gather", dtype_name(input.dtype()), input.numel(), input.nbytes(), size());
  return impl_->enqueue("all_gather", [=, in = input, outs = outputs](uint32_t tag) {
    auto bytes = static_cast<size_t>(in.nbytes());
    if (bytes == 0) return;
    std::vector<char> gathered(bytes * outs.size());
    gloo::AllgatherOptions opts(ctx);
    opts.setInput<char>(static_cast<char*>(in.raw_data()), bytes);
    opts.setOutput<char>(gathered.data(), gathered.size());
    opts.setTag(tag);
    opts.setTimeout(timeout);
    gloo::allgather(opts);
    for (size_t r = 0; r < outs.size(); ++r) std::memcpy(outs[r].raw_data(), gathered.data() + r * bytes, bytes);
  }, profiled.handle());
}

WorkPtr GlooProcessGroup::reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) {
  check_cpu(output, "reduce_scatter");
  check_list(inputs, output, "reduce_scatter", "inputs");
  if (op == ReduceOp::avg && !is_float(output.dtype()))
    fail("dist::reduce_scatter (gloo): avg needs a floating dtype, got {}", dtype_name(output.dtype()));
  dispatch_reducible(output.dtype(), "reduce_scatter", [](auto) {});
  auto ctx = impl_->context;
  auto timeout = impl_->timeout;
  int rank = this->rank(), size = this->size();
  prof::CollectiveScope profiled("gloo", "reduce_scatter", dtype_name(output.dtype()), output.numel() * size,
                                 output.nbytes() * size, size);
  return impl_->enqueue("reduce_scatter", [=, out = output, ins = inputs](uint32_t tag) {
    dispatch_reducible(out.dtype(), "reduce_scatter", [&](auto zero) {
      using T = decltype(zero);
      auto n = static_cast<size_t>(out.numel());
      if (n == 0) return;
      std::vector<T> all(n * ins.size());
      for (size_t r = 0; r < ins.size(); ++r) std::memcpy(all.data() + r * n, ins[r].raw_data(), n * sizeof(T));
      gloo::AllreduceOptions opts(ctx);
      opts.setOutput<T>(all.data(), all.size());
      opts.setReduceFunction(reduce_function<T>(op));
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::allreduce(opts);
      T* dst = static_cast<T*>(out.raw_data());
      const T* mine = all.data() + static_cast<size_t>(rank) * n;
      for (size_t i = 0; i < n; ++i) dst[i] = op == ReduceOp::avg ? mine[i] / static_cast<T>(size) : mine[i];
    });
  }, profiled.handle());
}

WorkPtr GlooProcessGroup::barrier() {
  auto ctx = impl_->context;
  auto timeout = impl_->timeout;
  prof::CollectiveScope profiled("gloo", "barrier", "-", 0, 0, size());
  return impl_->enqueue("barrier", [=](uint32_t tag) {
    gloo::BarrierOptions opts(ctx);
    opts.setTag(tag);
    opts.setTimeout(timeout);
    gloo::barrier(opts);
  }, profiled.handle());
}

}  // namespace tritium::dist
#endif  // TRITIUM_HAS_GLOO
