#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/env.h"
#include "runtime/thread_pool.h"

using tritium::runtime::ThreadPool;

namespace {

// Runs parallel_for over n and checks every index was visited exactly once.
void check_exactly_once(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
  std::atomic<int64_t> bad_ranges{0};
  pool.parallel_for(n, [&](int64_t begin, int64_t end) {
    if (begin < 0 || end > n || begin >= end) ++bad_ranges;
    for (int64_t i = begin; i < end; ++i) visits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
  });
  BOOST_TEST(bad_ranges.load() == 0);
  int64_t wrong = 0;
  for (auto& v : visits) wrong += v.load() != 1;
  BOOST_TEST(wrong == 0, "n = " << n << " on " << pool.size() << " threads");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_thread_pool)

BOOST_AUTO_TEST_CASE(every_index_exactly_once) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    BOOST_TEST(pool.size() == threads);
    for (int64_t n : {0, 1, 2, 3, 5, 7, 8, 13, 31, 64, 97, 1000, 4097, 100003}) check_exactly_once(pool, n);
  }
  check_exactly_once(ThreadPool::global(), 12345);
}

BOOST_AUTO_TEST_CASE(raw_function_pointer_interface) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(
      1000,
      [](void* ctx, int64_t begin, int64_t end) {
        int64_t local = 0;
        for (int64_t i = begin; i < end; ++i) local += i;
        static_cast<std::atomic<int64_t>*>(ctx)->fetch_add(local);
      },
      &sum);
  BOOST_TEST(sum.load() == 999 * 1000 / 2);
  // The per-index form of the convenience wrapper.
  std::atomic<int64_t> count{0};
  pool.parallel_for(777, [&](int64_t) { ++count; });
  BOOST_TEST(count.load() == 777);
}

BOOST_AUTO_TEST_CASE(grid_of_one_runs_inline_on_the_caller) {
  ThreadPool pool(4);
  std::thread::id ran_on;
  pool.parallel_for(1, [&](int64_t, int64_t) { ran_on = std::this_thread::get_id(); });
  BOOST_TEST((ran_on == std::this_thread::get_id()));
}

BOOST_AUTO_TEST_CASE(work_is_spread_over_threads) {
  ThreadPool pool(4);
  std::mutex mutex;
  std::set<std::thread::id> ids;
  // Slow chunks, so every worker has time to claim some.
  pool.parallel_for(64, [&](int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard lock(mutex);
    ids.insert(std::this_thread::get_id());
  });
  BOOST_TEST(ids.size() > 1u);
}

BOOST_AUTO_TEST_CASE(exceptions_propagate_to_the_caller) {
  ThreadPool pool(4);
  for (int64_t thrower : {int64_t{0}, int64_t{500}, int64_t{999}}) {
    BOOST_CHECK_THROW(pool.parallel_for(1000,
                                        [&](int64_t i) {
                                          if (i == thrower) throw std::runtime_error("boom");
                                        }),
                      std::runtime_error);
  }
  // Every chunk throws: exactly one exception arrives, the pool stays usable.
  BOOST_CHECK_THROW(pool.parallel_for(100, [](int64_t, int64_t) { throw std::logic_error("all"); }), std::logic_error);
  // Inline paths propagate too.
  BOOST_CHECK_THROW(pool.parallel_for(1, [](int64_t, int64_t) { throw std::runtime_error("one"); }), std::runtime_error);
  check_exactly_once(pool, 1000);
}

BOOST_AUTO_TEST_CASE(nested_parallel_for_runs_inline) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> visits(100 * 50);
  pool.parallel_for(100, [&](int64_t outer) {
    BOOST_CHECK(ThreadPool::in_parallel_region());
    pool.parallel_for(50, [&](int64_t inner) { visits[static_cast<size_t>(outer * 50 + inner)].fetch_add(1); });
    ThreadPool::global().parallel_for(3, [](int64_t) {});  // another pool from inside: inline too
  });
  int64_t wrong = 0;
  for (auto& v : visits) wrong += v.load() != 1;
  BOOST_TEST(wrong == 0);
  BOOST_TEST(!ThreadPool::in_parallel_region());
}

BOOST_AUTO_TEST_CASE(many_back_to_back_launches) {
  ThreadPool pool(4);
  std::atomic<int64_t> total{0};
  const int launches = 20000;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) {
    int64_t n = 1 + i % 37;
    pool.parallel_for(n, [&](int64_t begin, int64_t end) { total.fetch_add(end - begin, std::memory_order_relaxed); });
  }
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  int64_t expected = 0;
  for (int i = 0; i < launches; ++i) expected += 1 + i % 37;
  BOOST_TEST(total.load() == expected);
  BOOST_TEST_MESSAGE("back-to-back launch: " << us / launches << " us each");
}

BOOST_AUTO_TEST_CASE(launches_after_workers_fall_asleep) {
  ThreadPool pool(3);
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the spin window
    check_exactly_once(pool, 1000);
  }
}

BOOST_AUTO_TEST_CASE(concurrent_callers_are_serialised) {
  ThreadPool pool(4);
  std::vector<std::thread> callers;
  std::atomic<int64_t> total{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int i = 0; i < 500; ++i)
        pool.parallel_for(100, [&](int64_t b, int64_t e) { total.fetch_add(e - b, std::memory_order_relaxed); });
    });
  for (auto& t : callers) t.join();
  BOOST_TEST(total.load() == 4 * 500 * 100);
}

BOOST_AUTO_TEST_CASE(forked_child_runs_inline) {
  ThreadPool& pool = ThreadPool::global();
  check_exactly_once(pool, 1000);  // make sure its workers exist
  pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    std::atomic<int64_t> total{0};
    pool.parallel_for(1000, [&](int64_t b, int64_t e) { total += e - b; });
    ::_exit(total.load() == 1000 ? 0 : 1);
  }
  int status = 0;
  BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
}

BOOST_AUTO_TEST_CASE(bad_sizes_and_env) {
  BOOST_CHECK_THROW(ThreadPool(0), std::exception);
  BOOST_TEST(tritium::env().num_threads >= 1);
  const char* old = std::getenv("TRITIUM_NUM_THREADS");
  std::string saved = old ? old : "";
  ::setenv("TRITIUM_NUM_THREADS", "3", 1);
  tritium::reload_env_for_tests();
  BOOST_TEST(tritium::env().num_threads == 3);
  ::setenv("TRITIUM_NUM_THREADS", "zero", 1);  // ignored with a warning
  tritium::reload_env_for_tests();
  BOOST_TEST(tritium::env().num_threads >= 1);
  if (old) ::setenv("TRITIUM_NUM_THREADS", saved.c_str(), 1);
  else ::unsetenv("TRITIUM_NUM_THREADS");
  tritium::reload_env_for_tests();
}

BOOST_AUTO_TEST_SUITE_END()
