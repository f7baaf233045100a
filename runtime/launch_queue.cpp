#include "runtime/launch_queue.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <semaphore>
#include <string>
#include <thread>

#include <sys/syscall.h>
#include <unistd.h>

#include "common/env.h"

namespace tritium::runtime::launch_queue {
namespace {

struct Entry {
  std::shared_future<void> ready;
  std::function<void()> issue;
};

// Set on a thread while it issues the queue (the driver calls a launch makes must not drain
// again) and on compile workers (which must never wait for the queue they feed).
thread_local bool t_issuing = false;
// Set when the main thread ends (its thread-local objects are destroyed before the statics): from
// then on nothing is issued - issuing needs thread-local and static state (the current stream,
// pools) that process exit is destroying, and nothing could read the results any more.
// The main thread's mark also waits for the compiles still running (a compile whose launch was
// never made), before any static they use is destroyed.
std::atomic<bool> g_exiting{false};
void wait_for_running_compiles();
struct ExitMark {
  ~ExitMark() {
    if (static_cast<pid_t>(syscall(SYS_gettid)) != getpid()) return;
    g_exiting.store(true);
    wait_for_running_compiles();
  }
};
thread_local ExitMark t_exit_mark;
thread_local bool t_worker = false;
thread_local int t_no_drain = 0;

struct Queue {
  std::mutex mutex;  // held while issuing: entries run one at a time, in order
  std::deque<Entry> entries;
  std::atomic<size_t> size{0};
  // Compiles started and not finished: the exit handler waits for them (a compile still running
  // while the process destroys its statics would use them after their end).
  std::mutex running_mutex;
  std::condition_variable finished;
  size_t running = 0;
  std::mutex error_mutex;
  std::exception_ptr error;
  std::atomic<bool> has_error{false};
  // Compiles at once: NVRTC is single-threaded and takes 100-900 MB for a large kernel.
  std::counting_semaphore<1024> slots{static_cast<std::ptrdiff_t>(
      std::clamp<unsigned>(std::thread::hardware_concurrency(), 1u, 1024u))};

  void keep(std::exception_ptr e) {
    std::lock_guard lock(error_mutex);
    if (!error) error = e;
    has_error.store(true);
  }

  // With `mutex` held: runs the head entry (its compile done), or drops the queue after an error.
  void issue_head() {
    Entry e = std::move(entries.front());
    entries.pop_front();
    t_issuing = true;
    try {
      e.ready.get();  // a compile error, kept below
      e.issue();
    } catch (...) {
      keep(std::current_exception());
      size.fetch_sub(entries.size());
      entries.clear();  // what follows would read the failed kernel's missing output
    }
    t_issuing = false;
    // Counted until issued: another thread's ordered call that sees the queue empty must find
    // this launch already made (it waits on `mutex` otherwise).
    size.fetch_sub(1, std::memory_order_release);
  }
};

// Never destroyed: driver calls made during static destruction still find the queue.
Queue& queue() {
  static Queue* q = [] {
    auto* made = new Queue();
    // Compiles still running when main returns are waited for: they must not run while the
    // process destroys the statics they use.
    std::atexit(wait_for_running_compiles);  // (where the main thread never queued a launch)
    return made;
  }();
  return *q;
}

void wait_for_running_compiles() {
  std::unique_lock lock(queue().running_mutex);
  queue().finished.wait(lock, [] { return queue().running == 0; });
}

}  // namespace

bool enabled() { return env().async_compile; }

bool pending() { return queue().size.load(std::memory_order_acquire) != 0; }

std::shared_future<void> run_compile(std::function<void()> job) {
  Queue& q = queue();
  {
    std::lock_guard lock(q.running_mutex);
    ++q.running;
  }
  return std::async(std::launch::async,
                    [&q, job = std::move(job)]() mutable {
                      t_worker = true;
                      struct Finish {
                        Queue& q;
                        ~Finish() {
                          std::lock_guard lock(q.running_mutex);
                          --q.running;
                          q.finished.notify_all();
                        }
                      } finish{q};
                      q.slots.acquire();
                      struct Release {
                        Queue& q;
                        ~Release() { q.slots.release(); }
                      } release{q};
                      // What the job holds (the traced IR) goes now, on this thread, not when the
                      // last future does - at exit, after statics it may still use are gone.
                      struct Clear {
                        std::function<void()>& job;
                        ~Clear() { job = nullptr; }
                      } clear{job};
                      job();
                    })
      .share();
}

void enqueue(std::shared_future<void> ready, std::function<void()> issue) {
  (void)&t_exit_mark;  // constructs this thread's mark
  Queue& q = queue();
  std::lock_guard lock(q.mutex);
  // A failure kept and not yet rethrown drops what follows it - also what is queued after the
  // failed entry was issued (its compile may fail before its launch is even queued: seen under
  // ThreadSanitizer's timing, where launch 3 of test_launch_queue's failing case then ran).
  if (q.has_error.load(std::memory_order_acquire)) return;
  q.entries.push_back(Entry{std::move(ready), std::move(issue)});
  q.size.fetch_add(1, std::memory_order_release);
  while (!q.entries.empty() &&
         q.entries.front().ready.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
    q.issue_head();
}

void drain() noexcept {
  Queue& q = queue();
  if (q.size.load(std::memory_order_acquire) == 0 || g_exiting.load()) return;
  std::lock_guard lock(q.mutex);
  while (!q.entries.empty()) q.issue_head();
}

void drain_before_ordered_call() noexcept {
  if (t_issuing || t_worker || t_no_drain > 0 || !pending()) return;
  drain();
}

void rethrow_error() {
  Queue& q = queue();
  if (!q.has_error.load(std::memory_order_acquire)) return;
  std::exception_ptr e;
  {
    std::lock_guard lock(q.error_mutex);
    e = q.error;
    q.error = nullptr;
    q.has_error.store(false);
  }
  if (e) std::rethrow_exception(e);
}

NoDrainScope::NoDrainScope() { ++t_no_drain; }
NoDrainScope::~NoDrainScope() { --t_no_drain; }

}  // namespace tritium::runtime::launch_queue
