// A persistent pool that runs a kernel's grid across all cores with very little overhead.
//
// One launch at a time owns the pool (concurrent callers queue on a mutex). The caller takes
// part in the work. The range is split into one contiguous block per participant, each with its
// own atomic chunk counter on its own cache line: a participant claims chunks of its block
// without contention, then steals chunks from the other blocks until none are left. After a job the
// workers spin briefly before sleeping on a condition variable, so back-to-back launches find
// them awake. A launch that cannot use the workers (a range of one chunk, a one-thread pool, a
// call from inside a running parallel_for, a forked child) runs inline on the caller without
// any synchronisation.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace tritium::runtime {

class ThreadPool {
 public:
  using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);

  // num_threads: participants including the calling thread (>= 1), so num_threads - 1 workers.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The process-wide pool, env().num_threads participants; created on first use.
  static ThreadPool& global();

  int size() const { return size_; }

  // Runs fn(ctx, begin, end) over disjoint chunks covering [0, n) and returns when all are
  // done. The first exception thrown by fn is rethrown here (after every participant stopped);
  // chunks not yet started when it was thrown are skipped.
  void parallel_for(int64_t n, RangeFn fn, void* ctx);

  // f(begin, end) over chunks, or f(i) for each index if f takes one argument.
  template <class F>
  void parallel_for(int64_t n, F&& f) {
    using Fn = std::remove_reference_t<F>;
    RangeFn trampoline = [](void* ctx, int64_t begin, int64_t end) {
      Fn& body = *static_cast<Fn*>(ctx);
      if constexpr (std::is_invocable_v<Fn&, int64_t, int64_t>) {
        body(begin, end);
      } else {
        static_assert(std::is_invocable_v<Fn&, int64_t>, "parallel_for: f must take (begin, end) or (index)");
        for (int64_t i = begin; i < end; ++i) body(i);
      }
    };
    parallel_for(n, trampoline, const_cast<void*>(static_cast<const void*>(std::addressof(f))));
  }

  // True on a pool worker, or on a caller while it runs its share of a parallel_for.
  static bool in_parallel_region();

 private:
  struct alignas(64) WorkerSlot {
    std::mutex mutex;
    std::condition_variable wake;
    std::atomic<bool> sleeping{false};
    // The generation of the job this worker is inside, 0 when none. Written only by the
    // worker, so joining and leaving a job never contend with other threads.
    std::atomic<uint64_t> joined{0};
  };
  // One participant's block of the current range; index 0 is the caller's.
  struct alignas(64) Block {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };

  void worker_main(int id);
  uint64_t wait_for_job(int id, uint64_t seen_word);
  void run_chunks(int participant);
  bool run_block(Block& block);
  void close_and_wait_for_workers(int wanted);
  bool workers_alive() const;

  int size_;
  uint64_t fork_generation_;  // pools made before a fork() have no workers in the child
  std::vector<std::thread> threads_;
  std::unique_ptr<WorkerSlot[]> slots_;
  std::mutex launch_mutex_;
  uint64_t generation_ = 0;  // guarded by launch_mutex_

  // The job being run; written under launch_mutex_ before job_word_ is published.
  RangeFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t chunk_ = 1;
  int participants_ = 1;
  std::unique_ptr<Block[]> blocks_;
  std::exception_ptr error_;  // written only by the thread that wins has_error_

  // (generation << kWantedBits) | number of workers wanted: what sleeping and spinning workers
  // watch. One word, so a worker that is not wanted reads nothing else of the job.
  alignas(64) std::atomic<uint64_t> job_word_{0};
  // The latest generation the caller has closed: a worker may no longer join it, so the caller
  // waits only for workers that took part, never for one that was slow to wake.
  alignas(64) std::atomic<uint64_t> closed_generation_{0};
  std::atomic<bool> caller_waiting_{false};
  std::atomic<bool> has_error_{false};
  std::atomic<bool> stop_{false};
  std::mutex done_mutex_;
  std::condition_variable done_;
};

}  // namespace tritium::runtime
