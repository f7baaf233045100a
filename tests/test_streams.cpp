// Streams and events (runtime/streams.h): the current stream per thread and device, guards,
// priorities, events, wait_stream, record_stream and the stream-aware caching allocator,
// non_blocking copies (nn/non_blocking_copy.h), the prefetcher and a training step on a side
// stream. Everything runs on every backend; on the CPU streams order nothing (work is synchronous)
// and the checks that need concurrent GPU work (a long kernel still running) apply on CUDA only.
#include <cmath>
#include <limits>
#include <optional>
#include <thread>
#include <vector>

#include "autotune/do_bench.h"
#include "nn/data_loader.h"
#include "nn/dataset.h"
#include "nn/device_prefetcher.h"
#include "nn/functional.h"
#include "nn/module.h"
#include "nn/non_blocking_copy.h"
#include "nn/optim.h"
#include "nn/pinned_memory.h"
#include "ops/ops.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_streams.h"
#include "runtime/memory_stats.h"
#include "runtime/streams.h"
#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
using namespace tritium;

namespace {

constexpr int kBlock = 256;

// out = x after `iters` rounds of v = v * a + b (a = 1, b = 0 keeps x): a kernel whose length the
// test chooses, so that work queued behind it on another stream is still waiting when looked at.
auto spin_kernel() {
  return tritium::kernel("streams_spin", [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::i32 iters, tl::f32 a,
                                            tl::f32 b, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto v = tl::load(x + offs, mask);
    for (auto i : tl::range(0, iters)) {
      (void)i;
      v = v * a + b;
    }
    tl::store(out + offs, v, mask);
  });
}

// About 70 ms on an H100 (a dependent fma chain of 2^25 steps); a trifle on the CPU, where
// nothing runs concurrently anyway.
int spin_iters(Device d) { return d.is_cuda() ? 1 << 25 : 64; }
// A warm-up count specialised like spin_iters (neither 1 nor indivisible by 16), so the long
// launch finds its kernel compiled.
constexpr int kWarmIters = 16;


template <class K> void launch_spin(K& spin, const Tensor& x, const Tensor& out, int iters) {
  const int n = static_cast<int>(x.numel());
  spin[{(n + kBlock - 1) / kBlock}](x.data_ptr<float>(), out.data_ptr<float>(), n, iters, 1.0f, 0.0f, kBlock,
                                    Options{.device = x.device()});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_streams)

BOOST_AUTO_TEST_CASE(current_stream_defaults_guards_nest_and_restore) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const Device dev = be.device;
    Stream initial = current_stream(dev);
    BOOST_TEST((initial == default_stream(dev)));
    BOOST_TEST(initial.is_default());
    BOOST_TEST(initial.id() == 0);
    BOOST_TEST((initial.device() == dev));
    BOOST_TEST(initial.str().find("default stream of " + dev.str()) != std::string::npos);

    Stream s1(dev), s2(dev);
    BOOST_TEST(!s1.is_default());
    BOOST_TEST(!(s1 == s2));  // the pool hands out distinct streams before it wraps around
    BOOST_TEST((s1.device() == dev));
    {
      StreamGuard g1(s1);
      BOOST_TEST((current_stream(dev) == s1));
      BOOST_TEST((g1.original_stream() == initial));
      {
        StreamGuard g2(s2);
        BOOST_TEST((current_stream(dev) == s2));
        {
          StreamGuard again(s2);  // a guard of the current stream changes nothing
          BOOST_TEST((current_stream(dev) == s2));
        }
        BOOST_TEST((current_stream(dev) == s2));
      }
      BOOST_TEST((current_stream(dev) == s1));
      set_current_stream(s2);  // inside a guard: the guard still restores what it found
      BOOST_TEST((current_stream(dev) == s2));
    }
    BOOST_TEST((current_stream(dev) == initial));

    // Work under a guard: an op on a side stream gives what it gives on the default stream.
    auto v = tt::random_vector<float>(1000, 11);
    Tensor x = Tensor::from_vector(v, {1000}, dev);
    Stream side(dev);
    side.wait_stream(current_stream(dev));  // x was written on the current stream
    std::vector<float> y;
    {
      StreamGuard on_side(side);
      y = ops::mul(ops::add(x, 1.0), 3.0).to_vector<float>();  // to_vector waits for `side`
    }
    std::vector<double> ref(v.size());
    for (size_t i = 0; i < v.size(); ++i) ref[i] = (double(v[i]) + 1.0) * 3.0;
    tt::check_close<float>(y, ref, 1e-6, "ops on a side stream");
  });
}

BOOST_AUTO_TEST_CASE(current_stream_is_per_thread) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const Device dev = be.device;
    Stream mine(dev), theirs(dev);
    StreamGuard on_mine(mine);
    std::optional<Stream> seen_at_start, seen_after_set;
    std::vector<float> their_result;
    auto v = tt::random_vector<float>(777, 12);
    std::thread other([&] {
      seen_at_start = current_stream(dev);  // a new thread starts on the default stream
      StreamGuard on_theirs(theirs);
      seen_after_set = current_stream(dev);
      Tensor x = Tensor::from_vector(v, {777}, dev);
      their_result = ops::add(x, 2.0).to_vector<float>();
    });
    Tensor x = Tensor::from_vector(v, {777}, dev);
    std::vector<float> my_result = ops::add(x, 5.0).to_vector<float>();
    other.join();
    BOOST_TEST((current_stream(dev) == mine));  // the other thread's guard did not touch ours
    BOOST_REQUIRE(seen_at_start.has_value());
    BOOST_TEST(seen_at_start->is_default());
    BOOST_TEST((*seen_after_set == theirs));
    std::vector<double> ref2(v.size()), ref5(v.size());
    for (size_t i = 0; i < v.size(); ++i) ref2[i] = double(v[i]) + 2.0, ref5[i] = double(v[i]) + 5.0;
    tt::check_close<float>(their_result, ref2, 1e-6, "other thread");
    tt::check_close<float>(my_result, ref5, 1e-6, "this thread");
  });
}

BOOST_AUTO_TEST_CASE(priorities_are_clamped_into_the_device_range) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const Device dev = be.device;
    auto [least, greatest] = stream_priority_range(dev);
    BOOST_TEST(least >= greatest);  // lower numbers are higher priorities
    if (dev.is_cpu()) BOOST_TEST((least == 0 && greatest == 0));
    BOOST_TEST(Stream(dev).priority() == 0);
    BOOST_TEST(Stream(dev, -1000).priority() == greatest);
    BOOST_TEST(Stream(dev, 1000).priority() == least);
    if (greatest < 0) {
      Stream high(dev, -1);
      BOOST_TEST(high.priority() == -1);
      BOOST_TEST(high.str().find("priority -1") != std::string::npos);
      // A high-priority stream runs kernels like any other.
      StreamGuard on_high(high);
      high.wait_stream(default_stream(dev));
      Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}, dev);
      BOOST_TEST(ops::add(x, 1.0).to_vector<float>() == (std::vector<float>{2, 3, 4}), boost::test_tools::per_element());
    }
  });
}

BOOST_AUTO_TEST_CASE(events_record_query_wait_and_time) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const Device dev = be.device;
    Event never(true);
    BOOST_TEST(!never.is_recorded());
    BOOST_TEST(never.query());  // an event never recorded is complete (as PyTorch's)
    never.synchronize();        // and returns at once
    never.wait(current_stream(dev));  // a no-op
    Event start(true), end(true);
    tt::check_throws([&] { start.elapsed_time(end); }, {"Event::elapsed_time", "recorded"}, "unrecorded");

    Stream s(dev);
    s.wait_stream(current_stream(dev));
    Tensor x = Tensor::from_vector(tt::random_vector<float>(4096, 13), {4096}, dev);
    s.wait_stream(current_stream(dev));
    start.record(s);
    Tensor y;
    {
      StreamGuard on_s(s);
      y = ops::mul(x, 2.0);
    }
    end.record(s);
    BOOST_TEST((start.device() == dev));
    BOOST_TEST(start.is_recorded());
    end.synchronize();
    BOOST_TEST(end.query());
    BOOST_TEST(s.query());
    const float ms = start.elapsed_time(end);
    BOOST_TEST(ms >= 0.0f);
    BOOST_TEST(ms < 10000.0f);
    // The consumer waits for the producer's event, then reads on its own stream.
    Event produced = s.record_event();
    current_stream(dev).wait_event(produced);
    auto xv = x.to_vector<float>(), yv = y.to_vector<float>();
    for (size_t i = 0; i < xv.size(); ++i) BOOST_TEST(yv[i] == 2.0f * xv[i]);

    Event untimed;  // enable_timing defaults to false, as torch.cuda.Event
    untimed.record(s);
    tt::check_throws([&] { start.elapsed_time(untimed); }, {"Event::elapsed_time", "enable_timing"}, "untimed");
    if (dev.is_cuda()) {
      // An event belongs to the device it was first recorded on.
      tt::check_throws([&] { start.record(Stream(Device::cpu())); }, {"Event::record", "belongs to " + dev.str(), "cpu"},
                       "another device");
      Event on_cpu(true);
      on_cpu.record(Stream(Device::cpu()));
      tt::check_throws([&] { on_cpu.wait(s); }, {"Event::wait", "cpu"}, "a cpu event on a cuda stream");
      tt::check_throws([&] { on_cpu.elapsed_time(end); }, {"different devices"}, "devices differ");
      tt::check_throws([&] { Stream(Device::cpu()).wait_stream(s); }, {"Stream::wait_stream", "cpu", dev.str()},
                       "a cpu stream waiting for a cuda stream");
    }
  });
}

// Stream b's kernel reads what stream a's long kernel writes: b.wait_stream(a) orders it. The
// order is observed through events alone (b's event never completes before a's), and the result
// must equal the host reference. Without the wait (reported, not required: a race) b reads the
// poison.
BOOST_AUTO_TEST_CASE(wait_stream_orders_a_side_stream_after_a_long_kernel) {
  auto spin = spin_kernel();
  tt::for_each_backend([&](const tt::Backend& be) {
    const Device dev = be.device;
    const int64_t n = 1000;  // not a multiple of the block
    auto v = tt::random_vector<float>(n, 14);
    Tensor x = Tensor::from_vector(v, {n}, dev);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    Stream a(dev), b(dev);
    a.wait_stream(current_stream(dev));
    b.wait_stream(current_stream(dev));
    // Compile the kernels and leave a block of each size on each stream's free list: neither a
    // compilation nor a driver allocation may come between the launches checked below.
    {
      StreamGuard on_a(a);
      Tensor warm = ops::full({n}, nan, DType::f32, dev);
      launch_spin(spin, x, warm, kWarmIters);
      StreamGuard on_b(b);
      b.wait_stream(a);
      ops::add(warm, 1.0).to_vector<float>();
      a.synchronize();
    }
    auto run = [&](bool wait) {
      Tensor mid, y;
      Event a_done, b_done;
      {
        StreamGuard on_a(a);
        mid = ops::full({n}, nan, DType::f32, dev);  // poisoned, on a
        launch_spin(spin, x, mid, spin_iters(dev));
        a_done.record(a);
      }
      {
        StreamGuard on_b(b);
        if (wait) b.wait_stream(a);
        y = ops::add(mid, 1.0);
        record_stream(mid, b);  // mid (allocated on a) is read on b
        b_done.record(b);
      }
      const bool a_running = !a_done.query();
      if (wait) {
        if (dev.is_cuda()) BOOST_TEST(a_running, "the long kernel ended before the check could see the order");
        for (;;) {  // b's event first: if it has completed, a's must have too
          const bool b_finished = b_done.query();
          const bool a_finished = a_done.query();
          if (b_finished) {
            BOOST_TEST(a_finished, "stream b finished its kernel before stream a's, which it waits for");
            break;
          }
        }
      }
      current_stream(dev).wait_stream(b);  // the reader's stream (to_vector) waits for b
      current_stream(dev).wait_stream(a);
      return y.to_vector<float>();
    };
    std::vector<double> ref(v.size());
    for (size_t i = 0; i < v.size(); ++i) ref[i] = double(v[i]) + 1.0;
    auto ordered = run(true);
    tt::check_close<float>(ordered, ref, 1e-6, "with wait_stream");
    if (dev.is_cuda()) {
      auto raced = run(false);
      size_t poisoned = 0;
      for (float f : raced) poisoned += std::isnan(f);
      BOOST_TEST_MESSAGE("without wait_stream " << poisoned << " of " << n
                                                << " elements were read before stream a wrote them (a race: not checked)");
    }
  });
}

// A block freed on stream a after record_stream(b) is not handed out again while b's work may
// still use it; once b's event completes it is reused (by a, its allocation stream), and the
// statistics follow. Without record_stream the same stream reuses a freed block at once.
BOOST_AUTO_TEST_CASE(record_stream_defers_the_reuse_of_a_block) {
  auto spin = spin_kernel();
  tt::for_each_backend([&](const tt::Backend& be) {
    const Device dev = be.device;
    tt::check_throws([&] { record_stream(Tensor(), current_stream(dev)); }, {"record_stream", "undefined"}, "undefined");
    if (dev.is_cpu()) {
      Tensor t = Tensor::from_vector(std::vector<float>{1, 2}, {2}, dev);
      record_stream(t, Stream(dev));  // a no-op on the CPU
      BOOST_TEST(t.to_vector<float>() == (std::vector<float>{1, 2}), boost::test_tools::per_element());
      return;
    }
    tt::check_throws([&] { record_stream(Tensor::from_vector(std::vector<float>{1}, {1}, Device::cpu()), Stream(dev)); },
                     {"record_stream", "cpu", dev.str()}, "a host tensor and a cuda stream");
    const int64_t n = 100003;  // an odd size class (400384 bytes) no other block of these streams has
    const size_t block = runtime::cuda::round_size(size_t(n) * 4);
    Tensor x = Tensor::from_vector(tt::random_vector<float>(n, 15), {n}, dev);
    launch_spin(spin, x, ops::zeros_like(x), kWarmIters);  // compile first
    runtime::cuda::empty_cache();  // no cached blocks of this class anywhere
    Stream a(dev), b(dev);
    a.wait_stream(current_stream(dev));
    b.wait_stream(current_stream(dev));
    StreamGuard on_a(a);

    // Without record_stream: freed and reused at once by the same stream.
    Tensor spare = Tensor::empty({n}, DType::f32, dev);  // for u below: no driver call there
    void* first = nullptr;
    {
      Tensor t = Tensor::empty({n}, DType::f32, dev);
      first = t.raw_data();
    }
    {
      Tensor t = Tensor::empty({n}, DType::f32, dev);
      BOOST_TEST(t.raw_data() == first);
    }

    // With it: b runs a long kernel over t, t is freed on the host at once.
    Tensor t = Tensor::empty({n}, DType::f32, dev);
    BOOST_TEST(t.raw_data() == first);
    void* spare_block = spare.raw_data();
    spare = Tensor();  // the one free block of this class on a
    b.wait_stream(a);  // t's allocation (and poisoning) happened on a
    {
      StreamGuard on_b(b);
      launch_spin(spin, x, t, spin_iters(dev));
    }
    Event b_done = b.record_event();
    record_stream(t, b);
    record_stream(t, b);  // twice is once
    record_stream(t, a);  // its own stream: nothing to wait for
    const runtime::cuda::AllocatorStats before = runtime::cuda::stats(dev.index);
    const size_t pending_before = runtime::cuda::pending_free_bytes(dev.index);
    t = Tensor();
    const runtime::cuda::AllocatorStats freed = runtime::cuda::stats(dev.index);
    BOOST_TEST(freed.allocated == before.allocated - block);
    BOOST_TEST(freed.reserved == before.reserved);
    BOOST_TEST(freed.cached == before.cached + block);
    BOOST_TEST(runtime::cuda::pending_free_bytes(dev.index) == pending_before + block);
    BOOST_TEST(freed.reserved - freed.allocated == freed.cached);

    Tensor u = Tensor::empty({n}, DType::f32, dev);  // on a, the same size class
    // Still running after the allocation, so it was running when the allocation looked.
    BOOST_TEST(!b_done.query(), "the long kernel ended before the allocation could be checked");
    BOOST_TEST(u.raw_data() != first, "a block still used by stream b was handed to stream a");
    BOOST_TEST(u.raw_data() == spare_block);
    b_done.synchronize();
    Tensor w = Tensor::empty({n}, DType::f32, dev);  // b is done: the pending block is free again
    BOOST_TEST(w.raw_data() == first);
    const runtime::cuda::AllocatorStats after = runtime::cuda::stats(dev.index);
    BOOST_TEST(runtime::cuda::pending_free_bytes(dev.index) == pending_before);
    BOOST_TEST(after.reserved - after.allocated == after.cached);
  });
}

// One kernel (the same specialisation, the same optimised IR) launched on cuda:0 and then on
// cuda:1: each device runs the module loaded in its own context (cuda:1 once launched cuda:0's
// module with cuda:1's pointers and read garbage). Needs two CUDA devices.
BOOST_AUTO_TEST_CASE(one_kernel_on_two_devices) {
  if (!runtime::cuda::available() || runtime::cuda::device_count() < 2) {
    BOOST_TEST_MESSAGE("skipped: needs two CUDA devices");
    return;
  }
  const int64_t n = 3001;
  const auto a = tt::random_vector<float>(n, 21), b = tt::random_vector<float>(n, 22);
  for (int dev : {0, 1, 0}) {
    const Device d = Device::cuda(dev);
    Tensor sum = ops::add(Tensor::from_vector(a, {n}, d), Tensor::from_vector(b, {n}, d));
    BOOST_TEST((sum.device() == d));
    const auto got = sum.to_vector<float>();
    for (int64_t i = 0; i < n; ++i)
      if (got[static_cast<size_t>(i)] != a[static_cast<size_t>(i)] + b[static_cast<size_t>(i)]) {
        BOOST_TEST(false, "cuda:" << dev << " element " << i << " = " << got[static_cast<size_t>(i)] << ", expected "
                                  << a[static_cast<size_t>(i)] + b[static_cast<size_t>(i)]);
        break;
      }
  }
}

// A block of cuda:0 read on a stream of cuda:1 (a peer copy's source, nn::to_device) is
// record_stream'ed there: freed, it waits for an event of cuda:1's stream, not cuda:0's. Needs two
// CUDA devices.
BOOST_AUTO_TEST_CASE(record_stream_on_another_devices_stream) {
  if (!runtime::cuda::available() || runtime::cuda::device_count() < 2) {
    BOOST_TEST_MESSAGE("skipped: needs two CUDA devices");
    return;
  }
  auto spin = spin_kernel();
  const Device d0 = Device::cuda(0), d1 = Device::cuda(1);
  const int64_t n = 100003;
  Tensor x1 = Tensor::from_vector(tt::random_vector<float>(n, 20), {n}, d1);
  launch_spin(spin, x1, ops::zeros_like(x1), kWarmIters);  // compile first
  runtime::cuda::empty_cache();
  Stream b(d1);
  b.wait_stream(current_stream(d1));
  void* first = nullptr;
  {
    Tensor t = Tensor::empty({n}, DType::f32, d0);
    first = t.raw_data();
    runtime::cuda::synchronize(0);
    {
      StreamGuard on_b(b);
      launch_spin(spin, x1, ops::zeros_like(x1), spin_iters(d1));  // b busy for a while
    }
    record_stream(t, b);  // t is read on b (as a peer copy would)
  }
  Event b_done = b.record_event();
  BOOST_TEST(runtime::cuda::pending_free_bytes(0) > 0u);
  Tensor u = Tensor::empty({n}, DType::f32, d0);
  BOOST_TEST(!b_done.query(), "the long kernel on cuda:1 ended before the allocation could be checked");
  BOOST_TEST(u.raw_data() != first, "a block still used by a stream of cuda:1 was handed out on cuda:0");
  b_done.synchronize();
  Tensor w = Tensor::empty({n}, DType::f32, d0);
  BOOST_TEST(w.raw_data() == first, "the block did not come back once cuda:1's stream was done");
  BOOST_TEST(runtime::cuda::pending_free_bytes(0) == 0u);
}

// Copies from pinned memory to the device and back without waiting: the host returns while the
// stream works; the source freed at once is not recycled before its copy ran; results equal the
// host reference once the stream is synchronised.
BOOST_AUTO_TEST_CASE(non_blocking_copies_from_pinned_memory) {
  auto spin = spin_kernel();
  tt::for_each_backend([&](const tt::Backend& be) {
    const Device dev = be.device;
    const int64_t n = 5003;
    auto v = tt::random_vector<float>(n, 16);
    Tensor host = Tensor::from_vector(v, {n}, Device::cpu());
    if (dev.is_cpu()) {  // no GPU: a plain copy (or the tensor itself on its own device)
      Tensor same = nn::to(host, dev, true);
      BOOST_TEST(same.raw_data() == host.raw_data());
      return;
    }
    Tensor x = Tensor::from_vector(v, {n}, dev);
    launch_spin(spin, x, ops::zeros_like(x), kWarmIters);  // compile first
    Stream s(dev);
    s.wait_stream(current_stream(dev));
    StreamGuard on_s(s);
    Tensor pinned = nn::pin_memory(host);
    BOOST_REQUIRE(nn::is_pinned(pinned));
    const void* pinned_block = pinned.raw_data();
    nn::pin_memory(host);  // a second pinned block of this size, free again: `other` below takes it
    launch_spin(spin, x, ops::zeros_like(x), spin_iters(dev));  // the copy queues behind this
    Event spun = s.record_event();
    Tensor on_device = nn::to(pinned, dev, true);
    pinned = Tensor();  // freed while its copy is still queued
    Tensor other = nn::pin_memory(Tensor::from_vector(std::vector<float>(n, -7.0f), {n}, Device::cpu()));
    // Still running after both calls: the host did not wait, and the copy was pending when the
    // pinned cache chose a block.
    BOOST_TEST(!spun.query(), "the host waited for the stream");
    BOOST_TEST(other.raw_data() != pinned_block, "a pinned block was recycled before its copy ran");
    Tensor doubled = ops::mul(on_device, 2.0);
    Tensor back = nn::to(doubled, Device::cpu(), true);
    BOOST_TEST(nn::is_pinned(back));
    BOOST_TEST((back.device() == Device::cpu()));
    s.synchronize();
    auto got = back.to_vector<float>();
    std::vector<double> ref(v.size());
    for (size_t i = 0; i < v.size(); ++i) ref[i] = 2.0 * double(v[i]);
    tt::check_close<float>(got, ref, 1e-6, "pinned -> device -> pinned");
    // A strided device tensor goes through a contiguous copy on the stream first.
    Tensor m = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, dev);
    Tensor mt = nn::to(m.t(), Device::cpu(), true);
    s.synchronize();
    BOOST_TEST(mt.to_vector<float>() == (std::vector<float>{1, 4, 2, 5, 3, 6}), boost::test_tools::per_element());
  });
}

// The prefetcher's batches are ready on the consumer's current stream, whatever it is.
BOOST_AUTO_TEST_CASE(prefetcher_hands_batches_to_the_current_stream) {
  const int64_t rows = 37;
  std::vector<float> xs(rows * 3);
  std::vector<int64_t> ys(rows);
  for (int64_t r = 0; r < rows; ++r) {
    ys[r] = r;
    for (int c = 0; c < 3; ++c) xs[r * 3 + c] = float(r) + 0.25f * float(c);
  }
  nn::TensorDataset ds(Tensor::from_vector(xs, {rows, 3}, Device::cpu()), Tensor::from_vector(ys, {rows}, Device::cpu()));
  tt::for_each_backend([&](const tt::Backend& be) {
    const Device dev = be.device;
    Stream consumer(dev);
    consumer.wait_stream(current_stream(dev));
    StreamGuard on_consumer(consumer);
    const size_t baseline = runtime::memory_allocated(dev);
    for (int workers : {0, 2}) {
      nn::DataLoader loader(ds, {.batch_size = 5, .shuffle = true, .num_workers = workers, .pin_memory = true, .seed = 3});
      nn::DevicePrefetcher prefetcher(loader, dev);
      std::vector<int64_t> seen;
      for (auto& [x, y] : prefetcher) {
        // Work on the consumer stream reads the batch: x * 2 on the device, then the host.
        auto xv = ops::mul(x, 2.0).to_vector<float>();
        auto yv = y.to_vector<int64_t>();
        for (size_t r = 0; r < yv.size(); ++r)
          for (int c = 0; c < 3; ++c) BOOST_TEST(xv[3 * r + c] == 2.0f * (float(yv[r]) + 0.25f * float(c)));
        seen.insert(seen.end(), yv.begin(), yv.end());
      }
      BOOST_TEST(seen == loader.order(0), boost::test_tools::per_element());
    }
    BOOST_TEST(runtime::memory_allocated(dev) == baseline);  // every batch's block was given back
  });
}

// A few SGD steps of a small MLP under a non-default current stream give the same parameters and
// losses as on the default stream (the same kernels in the same order).
BOOST_AUTO_TEST_CASE(training_step_on_a_side_stream_equals_the_default_stream) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const Device dev = be.device;
    const int64_t N = 19, I = 7, H = 13, O = 3;
    auto xv = tt::random_vector<float>(N * I, 17), tv = tt::random_vector<float>(N * O, 18);
    auto train = [&](bool on_side) {
      Generator gen(9);
      nn::Sequential model(nn::Linear(I, H, true, gen), nn::ReLU(), nn::Linear(H, O, true, gen));
      nn::SGD opt(model.parameters(), 0.05, 0.9);
      Tensor x = Tensor::from_vector(xv, {N, I}, dev), target = Tensor::from_vector(tv, {N, O}, dev);
      std::optional<Stream> side;
      std::optional<StreamGuard> guard;
      if (on_side) {
        side.emplace(dev, -1);
        side->wait_stream(current_stream(dev));  // the parameters and inputs were written there
        guard.emplace(*side);
      }
      std::vector<float> losses;
      for (int step = 0; step < 3; ++step) {
        Tensor d = model(x) - target;
        Tensor loss = sum(d * d);
        opt.zero_grad();
        loss.backward();
        opt.step();
        losses.push_back(loss.to_vector<float>()[0]);
      }
      std::vector<float> params;
      for (const Tensor& p : model.parameters())
        for (float f : p.to_vector<float>()) params.push_back(f);
      if (on_side) default_stream(dev).wait_stream(*side);  // the parameters die on the default stream's side
      params.insert(params.end(), losses.begin(), losses.end());
      return params;
    };
    auto reference = train(false);
    auto on_side = train(true);
    // The same kernels in the same order: equal up to any non-deterministic reduction order (none
    // on the CPU, where the comparison is exact); a missed wait would read garbage or NaN.
    BOOST_REQUIRE(on_side.size() == reference.size());
    if (dev.is_cpu()) BOOST_TEST(on_side == reference, boost::test_tools::per_element());
    tt::check_close<float>(on_side, std::vector<double>(reference.begin(), reference.end()), 1e-6, "side vs default stream");
  });
}

// do_bench (and so the autotuner) times the calls on the stream they launch on: under a guard of
// a non-blocking stream, events on the default stream would bracket nothing.
BOOST_AUTO_TEST_CASE(do_bench_times_on_the_current_stream) {
  auto spin = spin_kernel();
  tt::for_each_backend([&](const tt::Backend& be) {
    const Device dev = be.device;
    const int64_t n = 300;
    Tensor x = Tensor::from_vector(tt::random_vector<float>(n, 19), {n}, dev);
    Tensor out = ops::zeros_like(x);
    Stream s(dev);
    s.wait_stream(current_stream(dev));
    StreamGuard on_s(s);
    // 2^20 dependent steps: about 2 ms on an H100.
    const int iters = dev.is_cuda() ? 1 << 20 : 64;
    BenchResult r = do_bench([&] { launch_spin(spin, x, out, iters); }, dev,
                             BenchOptions{.warmup_ms = 1, .rep_ms = 10, .min_reps = 3, .flush_l2 = false});
    BOOST_TEST(r.reps >= 3);
    if (dev.is_cuda()) BOOST_TEST(r.median_ms > 0.5, "the events did not bracket the kernel: " << r.median_ms << " ms");
    auto got = out.to_vector<float>(), want = x.to_vector<float>();
    BOOST_TEST(got == want, boost::test_tools::per_element());
  });
}

BOOST_AUTO_TEST_CASE(bad_devices_are_clear_errors) {
  tt::check_throws([] { Stream(Device{Device::Kind::cpu, 1}); }, {"Stream", "cpu:1"}, "cpu:1");
  tt::check_throws([] { current_stream(Device{Device::Kind::cpu, 1}); }, {"cpu:1"}, "current stream of cpu:1");
  const int count = runtime::cuda::device_count();
  tt::check_throws([&] { Stream(Device::cuda(count)); }, {"Stream", "cuda:" + std::to_string(count)}, "a missing GPU");
  tt::check_throws([&] { stream_priority_range(Device::cuda(count)); }, {"cuda:" + std::to_string(count)},
                   "the priorities of a missing GPU");
  if (count >= 2) {
    // (record_stream of a tensor on another device's stream is allowed since stop 42, as a peer
    // copy needs: record_stream_on_another_devices_stream.)
    Event e;
    e.record(Stream(Device::cuda(0)));
    tt::check_throws([&] { e.record(Stream(Device::cuda(1))); }, {"Event::record", "cuda:0", "cuda:1"},
                     "an event of cuda:0 recorded on cuda:1");
    // Guards of two devices are independent.
    Stream s0(Device::cuda(0)), s1(Device::cuda(1));
    StreamGuard g0(s0);
    StreamGuard g1(s1);
    BOOST_TEST((current_stream(Device::cuda(0)) == s0));
    BOOST_TEST((current_stream(Device::cuda(1)) == s1));
  }
}

BOOST_AUTO_TEST_SUITE_END()
