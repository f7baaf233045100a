#include "runtime/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "common/env.h"
#include "common/error.h"

namespace tritium::runtime {
namespace {

constexpr int kWantedBits = 20;
constexpr uint64_t kWantedMask = (uint64_t{1} << kWantedBits) - 1;
constexpr uint64_t kGenerationMask = ~uint64_t{0} >> kWantedBits;  // generations wrap; 0 is "none"
// Chunks per participant: enough to even out noise from other processes and uneven programs,
// few enough that claiming (one atomic add each) stays negligible.
constexpr int64_t kChunksPerParticipant = 4;
// Spin this long for the next job before sleeping (a futex wake costs tens of microseconds).
constexpr auto kWorkerSpin = std::chrono::microseconds(50);
// The caller spins this long for the last chunks before sleeping on done_.
constexpr auto kCallerSpin = std::chrono::microseconds(100);

thread_local bool t_in_parallel_region = false;

// Bumped in the child after fork(): worker threads do not survive it.
std::atomic<uint64_t> g_fork_generation{0};
void on_fork_child() { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls `done()` in a pause loop until it returns true or `budget` elapses. Every 64 polls it
// reads the clock and yields the core: free when cores are idle, and when threads outnumber
// cores it lets the thread we are waiting for run instead of spinning against it.
template <class Pred>
bool spin_until(Pred done, std::chrono::microseconds budget) {
  auto deadline = std::chrono::steady_clock::now() + budget;
  for (uint32_t i = 1;; ++i) {
    if (done()) return true;
    cpu_relax();
    if ((i & 63) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) return done();
      std::this_thread::yield();
    }
  }
}

struct RegionGuard {
  bool previous = t_in_parallel_region;
  RegionGuard() { t_in_parallel_region = true; }
  ~RegionGuard() { t_in_parallel_region = previous; }
};

}  // namespace

ThreadPool::ThreadPool(int num_threads) : size_(num_threads) {
  if (num_threads < 1) fail("ThreadPool: num_threads must be at least 1, got {}", num_threads);
  if (num_threads - 1 > static_cast<int>(kWantedMask)) fail("ThreadPool: {} threads is too many", num_threads);
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] { pthread_atfork(nullptr, nullptr, on_fork_child); });
  fork_generation_ = g_fork_generation.load(std::memory_order_relaxed);

  int workers = num_threads - 1;
  slots_ = std::make_unique<WorkerSlot[]>(static_cast<size_t>(workers));
  blocks_ = std::make_unique<Block[]>(static_cast<size_t>(num_threads));
  threads_.reserve(static_cast<size_t>(workers));
  for (int id = 0; id < workers; ++id) {
    threads_.emplace_back([this, id] { worker_main(id); });
    std::string name = "tritium-w" + std::to_string(id);
    pthread_setname_np(threads_.back().native_handle(), name.c_str());  // for debuggers only
  }
}

ThreadPool::~ThreadPool() {
  if (!workers_alive()) {
    // In a forked child the std::thread objects name threads that do not exist here: joining
    // them would hang and destroying them joinable would terminate, so let them go.
    new std::vector<std::thread>(std::move(threads_));
    return;
  }
  {
    std::lock_guard launch(launch_mutex_);  // let a running launch finish
    stop_.store(true);
  }
  for (size_t i = 0; i < threads_.size(); ++i) {
    { std::lock_guard lock(slots_[i].mutex); }
    slots_[i].wake.notify_one();
  }
  for (auto& t : threads_) t.join();
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool(env().num_threads);
  return pool;
}

bool ThreadPool::in_parallel_region() { return t_in_parallel_region; }

bool ThreadPool::workers_alive() const {
  return fork_generation_ == g_fork_generation.load(std::memory_order_relaxed);
}

void ThreadPool::parallel_for(int64_t n, RangeFn fn, void* ctx) {
  if (n <= 0) return;
  int64_t max_participants = std::min<int64_t>(size_, n);
  int64_t chunk = std::max<int64_t>(1, n / (max_participants * kChunksPerParticipant));
  int64_t num_chunks = (n - 1) / chunk + 1;
  if (num_chunks == 1 || t_in_parallel_region || !workers_alive()) {
    fn(ctx, 0, n);  // inline: nothing to share, or we are already inside a job
    return;
  }
  int wanted = static_cast<int>(std::min<int64_t>(size_ - 1, num_chunks - 1));

  std::lock_guard launch(launch_mutex_);
  fn_ = fn;
  ctx_ = ctx;
  chunk_ = chunk;
  participants_ = wanted + 1;
  error_ = nullptr;
  has_error_.store(false, std::memory_order_relaxed);
  // Contiguous blocks of near-equal size, without overflowing n * i.
  int64_t base = n / participants_, extra = n % participants_, begin = 0;
  for (int i = 0; i < participants_; ++i) {
    int64_t end = begin + base + (i < extra ? 1 : 0);
    blocks_[i].next.store(begin, std::memory_order_relaxed);
    blocks_[i].end = end;
    begin = end;
  }
  generation_ = (generation_ + 1) & kGenerationMask;
  if (generation_ == 0) generation_ = 1;
  // seq_cst (a release) publishes the job; it also pairs with the `sleeping` flag a worker sets
  // before it blocks (see wait_for_job).
  job_word_.store((generation_ << kWantedBits) | static_cast<uint64_t>(wanted));
  for (int id = 0; id < wanted; ++id) {
    if (slots_[id].sleeping.load()) {
      { std::lock_guard lock(slots_[id].mutex); }
      slots_[id].wake.notify_one();
    }
  }

  {
    RegionGuard region;
    run_chunks(0);
  }
  close_and_wait_for_workers(wanted);

  if (has_error_.load(std::memory_order_acquire)) {
    std::exception_ptr error = std::move(error_);
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

// Claims and runs chunks of one block; false if a chunk threw (the job is then cancelled).
bool ThreadPool::run_block(Block& block) {
  const int64_t end = block.end;
  // Test before the atomic add: a finished block is read, not written, by every stealer.
  while (block.next.load(std::memory_order_relaxed) < end) {
    int64_t begin = block.next.fetch_add(chunk_, std::memory_order_relaxed);
    if (begin >= end) break;
    try {
      fn_(ctx_, begin, std::min(begin + chunk_, end));
    } catch (...) {
      if (!has_error_.exchange(true, std::memory_order_acq_rel)) error_ = std::current_exception();
      for (int i = 0; i < participants_; ++i)  // skip the chunks nobody has started
        blocks_[i].next.store(blocks_[i].end, std::memory_order_relaxed);
      return false;
    }
  }
  return true;
}

// The participant's own block first, then whatever is left of the others'.
void ThreadPool::run_chunks(int participant) {
  if (!run_block(blocks_[participant])) return;
  for (int k = 1; k < participants_; ++k) {
    int victim = participant + k < participants_ ? participant + k : participant + k - participants_;
    if (!run_block(blocks_[victim])) return;
  }
}

void ThreadPool::close_and_wait_for_workers(int wanted) {
  // Every chunk is claimed by now. Closing stops late workers from joining (seq_cst pairs with
  // the worker's `joined` store), so we wait only for those still running a chunk.
  closed_generation_.store(generation_);
  auto all_left = [&] {
    for (int id = 0; id < wanted; ++id)
      if (slots_[id].joined.load() == generation_) return false;
    return true;
  };
  if (spin_until(all_left, kCallerSpin)) return;
  std::unique_lock lock(done_mutex_);
  caller_waiting_.store(true);
  done_.wait(lock, all_left);
  caller_waiting_.store(false, std::memory_order_relaxed);
}

uint64_t ThreadPool::wait_for_job(int id, uint64_t seen_word) {
  auto changed = [&] {
    return job_word_.load(std::memory_order_acquire) != seen_word || stop_.load(std::memory_order_relaxed);
  };
  if (!spin_until(changed, kWorkerSpin)) {
    WorkerSlot& slot = slots_[id];
    std::unique_lock lock(slot.mutex);
    slot.sleeping.store(true);  // seq_cst: either the launcher sees this or we see its job
    slot.wake.wait(lock, [&] { return job_word_.load() != seen_word || stop_.load(); });
    slot.sleeping.store(false, std::memory_order_relaxed);
  }
  return job_word_.load(std::memory_order_acquire);
}

void ThreadPool::worker_main(int id) {
  t_in_parallel_region = true;  // nested parallel_for calls from kernels run inline
  WorkerSlot& slot = slots_[id];
  uint64_t seen_word = 0;
  for (;;) {
    uint64_t word = wait_for_job(id, seen_word);
    if (stop_.load(std::memory_order_acquire)) return;
    seen_word = word;
    if (static_cast<uint64_t>(id) >= (word & kWantedMask)) continue;  // not needed this time
    uint64_t generation = word >> kWantedBits;
    // Join, then check the job is still open: seq_cst on both sides means either the caller
    // sees us joined (and waits) or we see it closed (and stay out).
    slot.joined.store(generation);
    bool open = closed_generation_.load() != generation && (job_word_.load() >> kWantedBits) == generation;
    if (open) run_chunks(id + 1);
    // Leave (a release: our chunks' writes happen before the caller returns), then wake the
    // caller if it went to sleep, even if we stayed out: it may have seen us joined.
    // seq_cst pairs with caller_waiting_.
    slot.joined.store(0);
    if (caller_waiting_.load()) {
      std::lock_guard lock(done_mutex_);
      done_.notify_one();
    }
  }
}

}  // namespace tritium::runtime
