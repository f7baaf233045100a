// The CUDA device runtime: driver loading, devices and contexts, the caching allocator, copies,
// streams and events, and tensors on cuda. Without a GPU the cases that need one are reported as
// skipped (Boost precondition, with the reason); the unavailable-driver case runs everywhere.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "runtime/buffer.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/tensor.h"
#include "test_support.h"

namespace cu = tritium::runtime::cuda;
namespace tt = tritium::test;
using tritium::DType;
using tritium::Error;
using tritium::Tensor;
using tritium::runtime::Buffer;
using tritium::runtime::Device;

namespace {

// Precondition for the cases that need a GPU: Boost reports them as skipped with this reason.
boost::test_tools::assertion_result gpu_present(boost::unit_test::test_unit_id) {
  if (cu::available()) return true;
  boost::test_tools::assertion_result r(false);
  r.message() << "no usable CUDA GPU here: " << cu::unavailable_reason();
  return r;
}
auto needs_gpu() { return boost::unit_test::precondition(&gpu_present); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  if (n) v[0] |= 1;  // never all zero
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_cuda_runtime)

// Runs on every machine: says what it found, and without a GPU the error paths are clear.
BOOST_AUTO_TEST_CASE(driver_availability_is_explained) {
  BOOST_TEST_MESSAGE("CUDA available: " << cu::available()
                                        << (cu::available() ? "" : "; reason: " + cu::unavailable_reason()));
  BOOST_TEST(!cu::library_paths_tried().empty());
  if (cu::available()) {
    BOOST_TEST(cu::unavailable_reason().empty());
    BOOST_TEST(cu::device_count() > 0);
    BOOST_TEST(tritium::runtime::device_available(Device::cuda()));
    BOOST_TEST(tritium::runtime::device_unavailable_reason(Device::cuda()).empty());
    BOOST_TEST(cu::driver().driver_version >= cu::kRequestedCudaVersion);
    BOOST_TEST_MESSAGE("driver " << cu::driver().library_path << ", CUDA " << cu::driver().driver_version);
    return;
  }
  const std::string& reason = cu::unavailable_reason();
  BOOST_TEST(!reason.empty());
  // Names the library (or the real cause: no device / too old driver / stub).
  BOOST_TEST((contains(reason, "libcuda") || contains(reason, "no CUDA device") || contains(reason, "driver too old")),
             reason);
  if (contains(reason, "could not be loaded")) {
    for (const std::string& path : cu::library_paths_tried()) BOOST_TEST(contains(reason, path), reason);
    BOOST_TEST(contains(reason, "TRITIUM_LIBCUDA"), reason);
  }
  BOOST_TEST(cu::device_count() == 0);
  BOOST_TEST(!tritium::runtime::device_available(Device::cuda()));
  BOOST_TEST(tritium::runtime::device_unavailable_reason(Device::cuda()) == reason);
  // The CPU is unaffected.
  BOOST_TEST(tritium::runtime::device_available(Device::cpu()));

  tt::check_throws([] { cu::driver(); }, {"CUDA is unavailable", reason}, "cuda::driver()");
  tt::check_throws([] { Tensor::empty({4}, DType::f32, Device::cuda()); },
                   {"Tensor::empty", "cuda:0 is not available", reason}, "Tensor::empty on cuda");
  tt::check_throws([] { Tensor::zeros({4}, DType::f32, Device::cuda()); }, {"cuda:0 is not available"},
                   "Tensor::zeros on cuda");
  tt::check_throws([] { Buffer::allocate(16, Device::cuda()); }, {"cannot allocate 16 bytes on cuda:0", reason},
                   "Buffer::allocate on cuda");
  tt::check_throws([] { Tensor::from_vector(std::vector<float>{1, 2}).to(Device::cuda()); },
                   {"to: cannot copy", "cuda:0", reason}, "Tensor::to(cuda)");
  tt::check_throws([] { cu::properties(0); }, {"CUDA is unavailable"}, "cuda::properties");
  // check() formats without a driver too.
  tt::check_throws([] { cu::check(cu::CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel", "kernel add_kernel"); },
                   {"cuLaunchKernel failed for kernel add_kernel: CUDA error 1"}, "check without a driver");
}

BOOST_AUTO_TEST_CASE(size_classes) {
  BOOST_TEST(cu::round_size(0) == 512u);
  BOOST_TEST(cu::round_size(1) == 512u);
  BOOST_TEST(cu::round_size(512) == 512u);
  BOOST_TEST(cu::round_size(513) == 1024u);
  BOOST_TEST(cu::round_size(size_t{1} << 20) == size_t{1} << 20);
  BOOST_TEST(cu::round_size((size_t{1} << 20) + 1) == size_t{2} << 20);
  BOOST_TEST(cu::round_size((size_t{2} << 20) + 1) == size_t{4} << 20);
  cu::check(cu::CUDA_SUCCESS, "cuInit");  // success is silent
}

BOOST_AUTO_TEST_CASE(device_arrays_round_trip_on_every_backend) {
  tt::for_each_backend([](const tt::Backend& be) {
    auto x = tt::random_vector<float>(1001, 7);
    auto d = be.upload<float>(x);
    BOOST_TEST(d.size() == x.size());
    BOOST_TEST(d.ptr() != nullptr);
    tt::check_equal<float>(d.download(), x, "download");
  });
}

BOOST_AUTO_TEST_CASE(device_properties_and_contexts, *needs_gpu()) {
  BOOST_TEST_REQUIRE(cu::device_count() > 0);
  const cu::DeviceProperties& p = cu::properties(0);
  BOOST_TEST_MESSAGE("cuda:0 " << p.name << " " << p.arch() << ", " << p.multiprocessor_count << " SMs, "
                               << p.total_memory / (1 << 20) << " MiB, L2 " << p.l2_cache_size << " B, shared/block opt-in "
                               << p.max_shared_memory_per_block_optin << " B");
  BOOST_TEST(!p.name.empty());
  BOOST_TEST(p.cc_major >= 5);
  BOOST_TEST(p.arch() == "sm_" + std::to_string(p.cc_major) + std::to_string(p.cc_minor));
  BOOST_TEST(p.warp_size == 32);
  BOOST_TEST(p.multiprocessor_count > 0);
  BOOST_TEST(p.max_blocks_per_multiprocessor >= 16);  // 16 (Pascal, Turing) to 32 (Volta, Ampere, Hopper)
  BOOST_TEST(p.max_threads_per_block >= 1024);
  BOOST_TEST(p.max_shared_memory_per_block_optin >= p.max_shared_memory_per_block);
  BOOST_TEST(p.l2_cache_size > 0);
  BOOST_TEST(p.total_memory > 0u);
  tt::check_throws([] { cu::properties(1000); }, {"no CUDA device cuda:1000"}, "properties(1000)");
  BOOST_TEST(!tritium::runtime::device_available(Device::cuda(1000)));
  BOOST_TEST(contains(tritium::runtime::device_unavailable_reason(Device::cuda(1000)), "no device cuda:1000"));

  // ensure_context makes the primary context current, on any thread.
  auto current = [] {
    cu::CUcontext c = nullptr;
    cu::check(cu::driver().cuCtxGetCurrent(&c), "cuCtxGetCurrent");
    return c;
  };
  cu::ensure_context(0);
  BOOST_TEST(current() == cu::primary_context(0));
  cu::CUcontext seen = nullptr;
  std::thread t([&] {
    cu::ensure_context(0);
    seen = current();
  });
  t.join();
  BOOST_TEST(seen == cu::primary_context(0));
  cu::synchronize(0);
}

BOOST_AUTO_TEST_CASE(allocator_reuses_blocks_and_counts, *needs_gpu()) {
  cu::empty_cache();
  const cu::AllocatorStats s0 = cu::stats(0);
  BOOST_TEST(s0.cached == 0u);
  BOOST_TEST(s0.reserved == s0.allocated);

  cu::CUdeviceptr a = cu::allocate(1000, 0);
  BOOST_TEST(a != 0u);
  BOOST_TEST(a % 256 == 0u);
  cu::AllocatorStats s1 = cu::stats(0);
  BOOST_TEST(s1.allocated == s0.allocated + 1024);
  BOOST_TEST(s1.reserved == s0.reserved + 1024);
  BOOST_TEST(s1.num_driver_allocs == s0.num_driver_allocs + 1);
  BOOST_TEST(s1.peak_allocated >= s1.allocated);

  cu::free(a);
  cu::AllocatorStats s2 = cu::stats(0);
  BOOST_TEST(s2.allocated == s0.allocated);
  BOOST_TEST(s2.reserved == s1.reserved);  // cached, not returned
  BOOST_TEST(s2.cached == 1024u);

  cu::CUdeviceptr b = cu::allocate(600, 0);  // same size class (1024): the same block
  BOOST_TEST(b == a);
  cu::AllocatorStats s3 = cu::stats(0);
  BOOST_TEST(s3.num_reuses == s2.num_reuses + 1);
  BOOST_TEST(s3.num_driver_allocs == s2.num_driver_allocs);
  BOOST_TEST(s3.cached == 0u);

  // A block cached for the default stream is not handed to another stream.
  cu::free(b);
  cu::Stream stream(0);
  cu::CUdeviceptr c = cu::allocate(1000, 0, stream.get());
  BOOST_TEST(c != a);
  cu::free(c);

  // Large sizes round to 2 MiB; peak follows.
  cu::reset_peak(0);
  cu::CUdeviceptr big = cu::allocate((size_t{3} << 20) + 5, 0);
  cu::AllocatorStats s4 = cu::stats(0);
  BOOST_TEST(s4.allocated == s0.allocated + (size_t{4} << 20));
  BOOST_TEST(s4.peak_allocated == s4.allocated);
  cu::free(big);
  BOOST_TEST(cu::stats(0).peak_allocated == s4.peak_allocated);

  // Buffers go through the allocator and back to it.
  {
    auto buf = Buffer::allocate(5000, Device::cuda());
    BOOST_TEST(buf->data() != nullptr);
    BOOST_TEST(cu::stats(0).allocated == s0.allocated + 5120);
  }
  BOOST_TEST(cu::stats(0).allocated == s0.allocated);

  cu::empty_cache();
  cu::AllocatorStats s5 = cu::stats(0);
  BOOST_TEST(s5.cached == 0u);
  BOOST_TEST(s5.reserved == s5.allocated);
  BOOST_TEST(s5.num_driver_frees > s0.num_driver_frees);

  // Out of memory names the call and the request.
  tt::check_throws([] { cu::allocate(size_t{1} << 50, 0); }, {"cuMemAlloc failed for", "CUDA_ERROR_OUT_OF_MEMORY"},
                   "allocate 1 PiB");
}

BOOST_AUTO_TEST_CASE(copies_round_trip, *needs_gpu()) {
  for (size_t n : {size_t{1}, size_t{511}, size_t{4097}, (size_t{3} << 20) + 7}) {
    BOOST_TEST_CONTEXT("n = " << n) {
      auto host = random_bytes(n, static_cast<uint32_t>(n));
      cu::CUdeviceptr a = cu::allocate(n, 0);
      cu::CUdeviceptr b = cu::allocate(n, 0);
      cu::copy_h2d(a, host.data(), n, 0);
      cu::copy_d2d(b, a, n, 0);
      std::vector<unsigned char> back(n, 0xA5);
      cu::copy_d2h(back.data(), b, n, 0);
      BOOST_TEST(std::memcmp(back.data(), host.data(), n) == 0);

      // Pinned staging on a stream, asynchronous both ways.
      cu::Stream stream(0);
      auto* pinned = static_cast<unsigned char*>(cu::allocate_pinned(n));
      std::memcpy(pinned, host.data(), n);
      cu::memset_d8(a, 0, n, 0, stream.get());
      cu::copy_h2d(a, pinned, n, 0, stream.get());
      std::memset(back.data(), 0, n);
      cu::copy_d2h(pinned, a, n, 0, stream.get(), /*async=*/true);
      stream.synchronize();
      BOOST_TEST(stream.query());
      BOOST_TEST(std::memcmp(pinned, host.data(), n) == 0);
      cu::free_pinned(pinned);

      cu::memset_d8(b, 0x3C, n, 0);
      cu::copy_d2h(back.data(), b, n, 0);
      BOOST_TEST(std::all_of(back.begin(), back.end(), [](unsigned char x) { return x == 0x3C; }));
      cu::free(a);
      cu::free(b);
    }
  }
}

BOOST_AUTO_TEST_CASE(tensors_on_cuda, *needs_gpu()) {
  auto values = tt::random_vector<float>(6 * 5, 3);
  Tensor x = Tensor::from_vector(values, {6, 5});
  Tensor d = x.to(Device::cuda());
  BOOST_TEST((d.device() == Device::cuda()));
  BOOST_TEST(d.str() == "Tensor([6, 5], f32, cuda:0)");
  BOOST_TEST(d.to_vector<float>() == values);
  BOOST_TEST(d.to(Device::cuda()).storage() == d.storage());  // already there: the same tensor
  Tensor back = d.to(Device::cpu());
  BOOST_TEST((back.device() == Device::cpu()));
  BOOST_TEST(back.to_vector<float>() == values);

  // A strided view on cuda comes back in row-major order (references made on the host).
  std::vector<float> xt, xs;
  for (int j = 0; j < 5; ++j)
    for (int i = 0; i < 6; ++i) xt.push_back(values[i * 5 + j]);
  for (int i = 0; i < 6; ++i)
    for (int j = 1; j < 5; j += 2) xs.push_back(values[i * 5 + j]);
  BOOST_TEST(d.t().to_vector<float>() == xt);
  BOOST_TEST(d.slice(1, 1, 5, 2).to_vector<float>() == xs);

  Tensor z = Tensor::zeros({1000}, DType::i32, Device::cuda());
  BOOST_TEST(z.to_vector<int32_t>() == std::vector<int32_t>(1000, 0));
  Tensor e = Tensor::empty({0}, DType::f32, Device::cuda());
  BOOST_TEST(e.to_vector<float>().empty());
  BOOST_TEST(e.to(Device::cpu()).numel() == 0);

  // The rest copies strided host tensors and runs autograd on the CPU: not in a build without
  // the CPU backend. A strided host tensor goes to cuda contiguous.
  if (!tritium::runtime::device_available(Device::cpu())) return;
  Tensor dt = x.t().to(Device::cuda());
  BOOST_TEST(dt.is_contiguous());
  BOOST_TEST(dt.to_vector<float>() == xt);

  // Autograd: the backward of to(device) is to(original device).
  Tensor leaf = Tensor::from_vector(values, {6, 5});
  leaf.requires_grad_();
  Tensor y = leaf.to(Device::cuda());
  BOOST_TEST(y.requires_grad());
  Tensor h = y.to(Device::cpu());
  auto gv = tt::random_vector<float>(30, 4);
  h.backward(Tensor::from_vector(gv, {6, 5}));
  BOOST_TEST_REQUIRE(leaf.grad().defined());
  BOOST_TEST((leaf.grad().device() == Device::cpu()));
  BOOST_TEST(leaf.grad().to_vector<float>() == gv);
}

BOOST_AUTO_TEST_CASE(events_time_work, *needs_gpu()) {
  cu::Stream stream(0);
  cu::Event start(0), end(0);
  const size_t n = size_t{256} << 20;
  cu::CUdeviceptr p = cu::allocate(n, 0, stream.get());
  start.record(stream);
  for (int i = 0; i < 4; ++i) cu::memset_d8(p, static_cast<unsigned char>(i), n, 0, stream.get());
  end.record(stream);
  float ms = cu::Event::elapsed_ms(start, end);
  BOOST_TEST_MESSAGE("4 memsets of 256 MiB: " << ms << " ms");
  BOOST_TEST(ms > 0.0f);
  BOOST_TEST(end.query());
  end.synchronize();
  stream.synchronize();
  cu::free(p);
  // Moving keeps one owner.
  cu::Event moved = std::move(start);
  BOOST_TEST(moved.get() != nullptr);
  BOOST_TEST(start.get() == nullptr);
}

BOOST_AUTO_TEST_CASE(errors_name_the_call, *needs_gpu()) {
  tt::check_throws([] { cu::check(cu::CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel", "kernel add_kernel"); },
                   {"cuLaunchKernel failed for kernel add_kernel: CUDA_ERROR_INVALID_VALUE (invalid argument)"},
                   "check format");
  tt::check_throws([] { cu::check(cu::CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"); },
                   {"cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"}, "check without context");
  // A real failing call: a device ordinal that does not exist.
  tt::check_throws(
      [] {
        cu::CUdevice dev = 0;
        cu::check(cu::driver().cuDeviceGet(&dev, 1000), "cuDeviceGet", "ordinal 1000");
      },
      {"cuDeviceGet failed for ordinal 1000: CUDA_ERROR_INVALID_DEVICE"}, "cuDeviceGet(1000)");
  // A module from garbage bytes.
  tt::check_throws(
      [] {
        cu::ensure_context(0);
        cu::CUmodule m = nullptr;
        const char garbage[64] = "this is not a cubin";
        cu::check(cu::driver().cuModuleLoadData(&m, garbage), "cuModuleLoadData", "kernel garbage");
      },
      {"cuModuleLoadData failed for kernel garbage: CUDA_ERROR_"}, "cuModuleLoadData(garbage)");
  // The context is still healthy.
  cu::synchronize(0);
}

BOOST_AUTO_TEST_SUITE_END()
