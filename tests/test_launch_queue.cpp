// Launches that wait for their compile (runtime/launch_queue.h): the queue's order, its errors and
// its workers without a GPU; on CUDA, cold kernels launched one after another (each reading the
// previous one's output, across streams, around copies and fills) give the values of a plain run.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/launch_queue.h"
#include "test_support.h"

#include <fmt/format.h>

namespace lq = tritium::runtime::launch_queue;
namespace tl = tritium::tl;
namespace tt = tritium::test;

namespace {

std::shared_future<void> ready_now() {
  std::promise<void> p;
  p.set_value();
  return p.get_future().share();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_launch_queue)

BOOST_AUTO_TEST_CASE(entries_run_in_program_order_whatever_order_compiles_finish) {
  lq::drain();
  std::vector<int> order;
  std::promise<void> first, third;
  lq::enqueue(first.get_future().share(), [&] { order.push_back(1); });
  lq::enqueue(ready_now(), [&] { order.push_back(2); });  // ready, but behind entry 1
  lq::enqueue(third.get_future().share(), [&] { order.push_back(3); });
  BOOST_TEST(order.empty());
  BOOST_TEST(lq::pending());
  third.set_value();
  lq::enqueue(ready_now(), [&] { order.push_back(4); });  // still behind 1
  BOOST_TEST(order.empty());
  first.set_value();
  lq::enqueue(ready_now(), [&] { order.push_back(5); });  // the head is ready now: all run
  BOOST_TEST(order == (std::vector<int>{1, 2, 3, 4, 5}), boost::test_tools::per_element());
  BOOST_TEST(!lq::pending());
}

BOOST_AUTO_TEST_CASE(drain_waits_for_every_compile) {
  std::vector<int> order;
  auto slow = lq::run_compile([] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); });
  lq::enqueue(slow, [&] { order.push_back(1); });
  lq::enqueue(ready_now(), [&] { order.push_back(2); });
  lq::drain_before_ordered_call();
  BOOST_TEST(order == (std::vector<int>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(!lq::pending());
}

// The compile fails before its launch is queued (the order ThreadSanitizer's timing produced in the
// case below): what is queued after it is dropped all the same, until the error is rethrown.
BOOST_AUTO_TEST_CASE(an_entry_that_failed_before_it_was_queued_drops_what_follows) {
  lq::rethrow_error();  // nothing kept
  std::vector<int> order;
  auto failing = lq::run_compile([] { throw std::runtime_error("NVRTC could not compile kernel k"); });
  failing.wait();
  lq::enqueue(failing, [&] { order.push_back(2); });
  lq::enqueue(ready_now(), [&] { order.push_back(3); });  // would read entry 2's missing output
  lq::drain();
  BOOST_TEST(order.empty());
  BOOST_TEST(!lq::pending());
  BOOST_CHECK_THROW(lq::rethrow_error(), std::runtime_error);
  lq::enqueue(ready_now(), [&] { order.push_back(4); });  // after the rethrow, launches run again
  lq::drain();
  BOOST_TEST(order == (std::vector<int>{4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_failed_entry_is_thrown_once_and_drops_what_follows) {
  lq::rethrow_error();  // nothing kept
  std::vector<int> order;
  auto failing = lq::run_compile([] { throw std::runtime_error("NVRTC could not compile kernel k"); });
  lq::enqueue(ready_now(), [&] { order.push_back(1); });
  lq::enqueue(failing, [&] { order.push_back(2); });
  lq::enqueue(ready_now(), [&] { order.push_back(3); });  // would read entry 2's missing output
  lq::drain();                                            // never throws: drivers' calls make it
  BOOST_TEST(order == (std::vector<int>{1}), boost::test_tools::per_element());
  BOOST_TEST(!lq::pending());
  BOOST_CHECK_EXCEPTION(lq::rethrow_error(), std::runtime_error, [](const std::runtime_error& e) {
    return std::string(e.what()) == "NVRTC could not compile kernel k";
  });
  lq::rethrow_error();  // once
  // A launch that throws is kept the same way.
  lq::enqueue(ready_now(), [] { throw std::runtime_error("cuLaunchKernel failed"); });
  BOOST_CHECK_THROW(lq::rethrow_error(), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(workers_and_the_issuing_thread_never_drain) {
  // A compile worker that makes an ordered call (a driver call inside the compile) must not wait
  // for the queue it feeds; an entry that makes one while it is issued must not drain again.
  std::vector<int> order;
  auto job = lq::run_compile([] { lq::drain_before_ordered_call(); });
  lq::enqueue(job, [&] {
    lq::drain_before_ordered_call();
    order.push_back(1);
  });
  lq::enqueue(ready_now(), [&] { order.push_back(2); });
  lq::drain();
  BOOST_TEST(order == (std::vector<int>{1, 2}), boost::test_tools::per_element());
  // While a NoDrainScope lives, ordered calls leave the queue alone.
  std::promise<void> gate;
  lq::enqueue(gate.get_future().share(), [&] { order.push_back(3); });
  {
    lq::NoDrainScope held;
    lq::drain_before_ordered_call();  // would wait for `gate` forever
    BOOST_TEST(lq::pending());
  }
  gate.set_value();
  lq::drain_before_ordered_call();
  BOOST_TEST(order.back() == 3);
}

// Four threads queue behind compiles that finish in a random order on other threads, and drain
// from time to time (as their copies would): every entry runs once, each thread's in its order.
BOOST_AUTO_TEST_CASE(threads_queue_and_drain_concurrently) {
  constexpr int kThreads = 4, kEach = 150;
  std::mutex m;
  std::vector<std::vector<int>> ran(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t) + 1);
      for (int i = 0; i < kEach; ++i) {
        const int sleep_us = static_cast<int>(rng() % 300);
        std::shared_future<void> ready =
            rng() % 3 == 0 ? ready_now()
                           : lq::run_compile([sleep_us] { std::this_thread::sleep_for(std::chrono::microseconds(sleep_us)); });
        lq::enqueue(ready, [&, t, i] {
          std::lock_guard lock(m);
          ran[t].push_back(i);
        });
        if (rng() % 25 == 0) lq::drain_before_ordered_call();
      }
    });
  for (auto& th : threads) th.join();
  lq::drain();
  BOOST_TEST(!lq::pending());
  for (int t = 0; t < kThreads; ++t) {
    BOOST_TEST_CONTEXT("thread " << t) {
      BOOST_TEST_REQUIRE(ran[t].size() == size_t(kEach));
      for (int i = 0; i < kEach; ++i) BOOST_TEST_REQUIRE(ran[t][i] == i);
    }
  }
  lq::rethrow_error();  // nothing failed
}

// Kernels nobody launched before (a salt in the name and the body: new specialisations, so each
// compiles in the background), launched one after another, each reading the previous output.
BOOST_AUTO_TEST_CASE(cold_launches_keep_program_order_on_cuda) {
  tt::for_each_backend([&](const tt::Backend& be) {
    if (!be.device.is_cuda()) return;
    std::mt19937 rng(7);
    const int n = 3001;  // not a multiple of the block
    // A salt new to the disk cache too, so that the compiles are real NVRTC compiles.
    const float salt = 1.0f + static_cast<float>(std::random_device{}() % 4096) / 8192.0f;
    std::vector<tritium::Kernel> steps;
    for (int s = 0; s < 6; ++s)
      steps.push_back(tritium::kernel(fmt::format("launch_queue_step{}", s),
                                      [s, salt](tl::ptr<float> in, tl::ptr<float> out, tl::i32 n, int BLOCK) {
                                        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                                        auto m = offs < n;
                                        auto v = tl::load(in + offs, m);
                                        tl::store(out + offs, v * (salt + static_cast<float>(s)) + 1.0f, m);
                                      }));
    std::uniform_real_distribution<float> u(-1, 1);
    tt::host_vector<float> x(n);
    for (auto& v : x) v = u(rng);
    auto a = be.upload<float>(x);
    auto b = be.alloc_poisoned<float>(n);
    auto grid = tritium::cdiv(n, 256);
    // a -> b -> a -> b ... : each launch overwrites what the one before read.
    for (int s = 0; s < 6; ++s) {
      if (s % 2 == 0) steps[s][{grid}](a.ptr(), b.ptr(), n, 256, be.options());
      else steps[s][{grid}](b.ptr(), a.ptr(), n, 256, be.options());
    }
    tt::host_vector<float> got = a.download();  // a copy: issues the queue first
    for (int i = 0; i < n; ++i) {
      double r = x[i];
      for (int s = 0; s < 6; ++s) r = r * (double(salt) + s) + 1.0;
      BOOST_TEST(std::abs(got[i] - r) <= 1e-4 * (1 + std::abs(r)), "element " << i << ": " << got[i] << " vs " << r);
      if (std::abs(got[i] - r) > 1e-4 * (1 + std::abs(r))) break;
    }
    BOOST_TEST(!lq::pending());
  });
}

BOOST_AUTO_TEST_SUITE_END()
