// Launches that wait for their kernel's compile, so that a cold run compiles kernels in parallel.
//
// A CUDA kernel's first launch with a new specialisation needs a compile (NVRTC: 30 ms to 1 s of
// CPU each). Compiled where the launch happens, one after the other, they made a cold first
// epoch of the MLP take 4.5-4.8 s on the H100 machine, nearly all of it compiles in a row. Here
// the launching thread traces the kernel (trace errors stay where the user's code is), hands
// the rest of the compile to a worker thread and queues the launch; launches made while the
// queue holds anything queue behind it, so that the GPU sees them in the program's order. The
// queue is issued, in order, as each compile finishes and, in full, before any other operation
// that the GPU or the host orders against kernels: copies, fills, frees, events, stream waits
// and synchronisations, NCCL collectives (runtime/cuda_driver.cpp wraps those driver entries;
// dist/ drains before its collectives). So every operation sees the kernels launched before it,
// exactly as without the queue; only the moment the launch reaches the driver moves.
//
// Errors: a compile or launch that fails while the queue is issued is kept and thrown by the next
// launch or the next checked driver call (cu::check), as CUDA reports a failed kernel later;
// the launches queued behind it are dropped (their inputs would be missing). Trace errors are
// thrown by the launch, as before.
//
// TRITIUM_ASYNC_COMPILE=0 compiles where the launch happens, as before. The queue is only ever
// non-empty while kernels compile; a warm run launches directly.
#pragma once
#include <functional>
#include <future>

namespace tritium::runtime::launch_queue {

// Whether launches may wait for their compile (TRITIUM_ASYNC_COMPILE, default on).
bool enabled();

// True when launches are queued; cheap (one atomic load).
bool pending();

// Runs `job` on a compile worker (at most as many at once as the machine has CPUs) and returns
// its result. Worker threads never drain the queue.
std::shared_future<void> run_compile(std::function<void()> job);

// Queues `issue`, to run once `ready` is ready and every earlier entry has run. Then issues the
// entries at the head that are ready, without waiting. Dropped while a kept error waits for
// rethrow_error(): what follows a failed entry never runs, however the two are timed.
void enqueue(std::shared_future<void> ready, std::function<void()> issue);

// Issues every queued entry in order, waiting for each one's compile. Errors are kept (see above),
// never thrown: this runs inside driver calls that may be made from destructors.
void drain() noexcept;

// drain() unless the queue is empty or this thread is issuing the queue or compiling: what a
// driver call or collective that orders against kernels does first.
void drain_before_ordered_call() noexcept;

// Throws the error kept from issuing the queue, if any (once).
void rethrow_error();

// While one lives on a thread, drain_before_ordered_call() does nothing there: for code that makes
// ordered driver calls with a lock held that issuing the queue takes too (the caching allocator,
// which drains before it locks where it will need to).
class NoDrainScope {
 public:
  NoDrainScope();
  ~NoDrainScope();
  NoDrainScope(const NoDrainScope&) = delete;
  NoDrainScope& operator=(const NoDrainScope&) = delete;
};

}  // namespace tritium::runtime::launch_queue
