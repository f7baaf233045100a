// runtime/tensor.h, buffer.h, device.h: factories, views through as_strided, dtype checks, devices.
#include "test_support.h"

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "ops/ops.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

namespace tt = tritium::test;
using tritium::DType;
using tritium::Error;
using tritium::Tensor;
using tritium::runtime::Device;

namespace {

// Runs f, which must throw tritium::Error whose message contains `needle`.
template <class F>
void check_error(F&& f, const std::string& needle) {
  try {
    f();
    BOOST_ERROR("expected tritium::Error containing: " << needle);
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos, "message: " << e.what());
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_tensor)

BOOST_AUTO_TEST_CASE(empty_and_zeros) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor t = Tensor::empty({4, 8}, DType::f32);
    BOOST_TEST(t.defined());
    BOOST_TEST(t.numel() == 32);
    BOOST_TEST(t.dim() == 2);
    BOOST_TEST(t.element_size() == 4);
    BOOST_TEST(t.nbytes() == 128);
    BOOST_TEST((t.strides() == std::vector<int64_t>{8, 1}));
    BOOST_TEST(t.is_contiguous());
    BOOST_TEST((t.device() == be.device));  // the default device
    BOOST_TEST(t.str() == "Tensor([4, 8], f32, " + be.device.str() + ")");
    BOOST_TEST(reinterpret_cast<uintptr_t>(t.raw_data()) % 64 == 0u);  // cuda buffers: 256 or better

    Tensor z = Tensor::zeros({3, 5, 7}, DType::i64);
    BOOST_TEST((z.strides() == std::vector<int64_t>{35, 7, 1}));
    for (int64_t v : z.to_vector<int64_t>()) BOOST_TEST(v == 0);

    Tensor scalar = Tensor::zeros({}, DType::f64);
    BOOST_TEST(scalar.numel() == 1);
    BOOST_TEST(scalar.str() == "Tensor([], f64, " + be.device.str() + ")");

    Tensor none = Tensor::empty({0, 16}, DType::f16);
    BOOST_TEST(none.numel() == 0);
    BOOST_TEST(none.raw_data() != nullptr);
    BOOST_TEST(none.to_vector<tritium::f16_t>().empty());

    Tensor flags = Tensor::zeros({10}, DType::i1);
    BOOST_TEST(flags.element_size() == 1);
    BOOST_TEST(Tensor().str() == "Tensor(undefined)");
    BOOST_TEST(!Tensor().defined());
  });
}

// The test suite runs with TRITIUM_POISON_BUFFERS=1 (tests/main.cpp): a fresh buffer holds NaN in
// every float dtype, so an op output whose elements are never written fails check_close.
BOOST_AUTO_TEST_CASE(fresh_buffers_are_poisoned_in_the_tests) {
  BOOST_TEST_REQUIRE(tritium::env().poison_buffers);
  tt::for_each_backend([&](const tt::Backend&) {
    for (float v : Tensor::empty({300}, DType::f32).to_vector<float>()) BOOST_TEST_REQUIRE(std::isnan(v));
    for (double v : Tensor::empty({7}, DType::f64).to_vector<double>()) BOOST_TEST_REQUIRE(std::isnan(v));
    for (auto v : Tensor::empty({9}, DType::bf16).to_vector<tritium::bf16_t>()) BOOST_TEST_REQUIRE(std::isnan(tt::to_float(v)));
    for (int32_t v : Tensor::empty({5}, DType::i32).to_vector<int32_t>()) BOOST_TEST_REQUIRE(v == -1);
    for (int64_t v : Tensor::zeros({5}, DType::i64).to_vector<int64_t>()) BOOST_TEST_REQUIRE(v == 0);  // zeros still zero
  });
}

BOOST_AUTO_TEST_CASE(bad_factory_arguments) {
  tt::for_each_backend([&](const tt::Backend&) {
    check_error([] { Tensor::empty({2, -1}, DType::f32); }, "negative size -1");
    check_error([] { Tensor::empty({2}, DType::ptr); }, "dtype ptr");
    check_error([] { Tensor::empty({2}, DType::invalid); }, "dtype invalid");
    check_error([] { Tensor::empty({int64_t{1} << 40, int64_t{1} << 40}, DType::f32); }, "too");
    check_error([] { Tensor::empty({2}, DType::f32, Device::cuda(1000)); }, "device cuda:1000 is not available");
    check_error([] { Tensor::from_vector(std::vector<float>{1, 2, 3}, {2, 2}); }, "3 values do not fill shape [2, 2]");
  });
}

BOOST_AUTO_TEST_CASE(from_vector_round_trips) {
  tt::for_each_backend([&](const tt::Backend& be) {
    std::vector<float> values = {1, 2, 3, 4, 5, 6};
    Tensor t = Tensor::from_vector(values, {2, 3});
    BOOST_TEST((t.dtype() == DType::f32));
    BOOST_TEST((t.shape() == std::vector<int64_t>{2, 3}));
    BOOST_TEST(t.to_vector<float>() == values);
    BOOST_TEST((t.device() == be.device));
    BOOST_TEST(static_cast<void*>(t.data_ptr<float>()) == t.raw_data());
    // data_ptr is host memory only on the CPU (on cuda a device address, never dereferenced here).
    if (be.device.is_cpu()) BOOST_TEST(t.data_ptr<float>()[4] == 5.0f);

    Tensor one_d = Tensor::from_vector(std::vector<int32_t>{7, 8, 9});
    BOOST_TEST((one_d.device() == be.device));
    BOOST_TEST((one_d.shape() == std::vector<int64_t>{3}));
    BOOST_TEST((one_d.to_vector<int32_t>() == std::vector<int32_t>{7, 8, 9}));
    BOOST_TEST((one_d.dtype() == DType::i32));

    std::vector<bool> bits = {true, false, true, true};
    Tensor b = Tensor::from_vector(bits);
    BOOST_TEST((b.dtype() == DType::i1));
    BOOST_TEST(b.to_vector<bool>() == bits);

    Tensor d = Tensor::from_vector(std::vector<double>{2.5}, {});
    BOOST_TEST(d.dim() == 0);
    BOOST_TEST(d.to_vector<double>()[0] == 2.5);
  });
}

BOOST_AUTO_TEST_CASE(strided_views) {
  tt::for_each_backend([&](const tt::Backend& be) {
    std::vector<int32_t> values(12);
    for (int i = 0; i < 12; ++i) values[static_cast<size_t>(i)] = i;
    Tensor t = Tensor::from_vector(values, {3, 4});

    Tensor tr = t.transpose(0, 1);
    BOOST_TEST((tr.shape() == std::vector<int64_t>{4, 3}));
    BOOST_TEST((tr.strides() == std::vector<int64_t>{1, 4}));
    BOOST_TEST(!tr.is_contiguous());
    BOOST_TEST(tr.storage() == t.storage());
    BOOST_TEST((tr.to_vector<int32_t>() == std::vector<int32_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
    Tensor c = tr.contiguous();
    BOOST_TEST(c.is_contiguous());
    BOOST_TEST(c.storage() != t.storage());
    BOOST_TEST((c.device() == be.device));
    BOOST_TEST(c.to_vector<int32_t>() == tr.to_vector<int32_t>());

    // Column 2 of t: offset 2, stride 4.
    Tensor col = t.as_strided({3}, {4}, 2);
    BOOST_TEST((col.to_vector<int32_t>() == std::vector<int32_t>{2, 6, 10}));
    BOOST_TEST(col.data_ptr<int32_t>() == t.data_ptr<int32_t>() + 2);
    BOOST_TEST(!col.is_contiguous());
    // Size-1 dimensions do not break contiguity whatever their stride.
    BOOST_TEST(t.as_strided({1, 4}, {99, 1}, 4).is_contiguous());
    // Broadcast (stride 0) view.
    BOOST_TEST((t.as_strided({2, 3}, {0, 1}, 0).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
    check_error([&] { t.as_strided({4}, {4}, 0); }, "reaches outside a buffer of 12 elements");
    check_error([&] { t.as_strided({2}, {1, 1}, 0); }, "differ in rank");
    check_error([&] { t.transpose(0, 2); }, "dimension 2 is out of range");
    BOOST_TEST(t.size(-1) == 4);
    BOOST_TEST(t.stride(0) == 4);
  });
}

BOOST_AUTO_TEST_CASE(data_ptr_checks_the_dtype) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor h = Tensor::empty({4}, DType::f16);
    check_error([&] { h.data_ptr<float>(); }, "Tensor::data_ptr<float>: tensor has dtype f16");
    check_error([&] { h.to_vector<int32_t>(); }, "Tensor::to_vector<int32_t>: tensor has dtype f16");
    BOOST_TEST(h.data_ptr<tritium::f16_t>() != nullptr);
    check_error([] { Tensor().data_ptr<float>(); }, "tensor is undefined");
    check_error([] { Tensor().raw_data(); }, "tensor is undefined");
  });
}

// Parsing and printing Device values: no tensor, no backend involved; runs once.
BOOST_AUTO_TEST_CASE(device_parse_and_print) {
  BOOST_TEST(Device::parse("cpu").str() == "cpu");
  BOOST_TEST((Device::parse("cpu:0") == Device::cpu()));
  BOOST_TEST((Device::parse("cuda") == Device::cuda(0)));
  BOOST_TEST(Device::parse("cuda:3").index == 3);
  BOOST_TEST(Device::cuda(1).str() == "cuda:1");
  for (const char* bad : {"", "gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:1x", "cpu:1", "CPU", "cuda:99999999999"})
    check_error([&] { Device::parse(bad); }, "Device::parse: invalid device");
  check_error([] { Device::parse("tpu:0"); }, "expected \"cpu\", \"cuda\" or \"cuda:N\"");
}

// Queries every device by name (cpu, cuda:1000) whatever the default device; runs once.
BOOST_AUTO_TEST_CASE(device_availability) {
  // Host memory is always there; CPU kernels need the LLVM backend.
  BOOST_TEST(tritium::runtime::memory_available(Device::cpu()));
#if TRITIUM_HAS_CPU_BACKEND
  BOOST_TEST(tritium::runtime::device_available(Device::cpu()));
  BOOST_TEST(tritium::runtime::device_unavailable_reason(Device::cpu()).empty());
#else
  BOOST_TEST(!tritium::runtime::device_available(Device::cpu()));
  BOOST_TEST(tritium::runtime::device_unavailable_reason(Device::cpu()).find("LLVM") != std::string::npos);
#endif
  // cuda:0 depends on the machine (tests/test_cuda_runtime.cpp); cuda:1000 exists nowhere.
  BOOST_TEST(!tritium::runtime::device_available(Device::cuda(1000)));
  std::string reason = tritium::runtime::device_unavailable_reason(Device::cuda(1000));
  BOOST_TEST(!reason.empty());
}

BOOST_AUTO_TEST_CASE(buffers_are_shared_and_aligned) {
  tt::for_each_backend([&](const tt::Backend& be) {
    auto buffer = tritium::runtime::Buffer::allocate(100, be.device);
    BOOST_TEST(buffer->nbytes() == 100u);
    BOOST_TEST((buffer->device() == be.device));
    // Host buffers are 64-byte aligned; the cuda caching allocator gives 256 or better.
    BOOST_TEST(reinterpret_cast<uintptr_t>(buffer->data()) % tritium::runtime::kHostAlignment == 0u);
    BOOST_TEST(tritium::runtime::Buffer::allocate(0, be.device)->data() != nullptr);
    bool freed = false;
    {  // adopting memory: host memory here on every backend (the deleter is what is checked)
      static char storage[16];
      auto adopted =
          tritium::runtime::Buffer::adopt(storage, sizeof storage, Device::cpu(), [&](void*) { freed = true; });
      auto copy = adopted;
    }
    BOOST_TEST(freed);
    Tensor a = Tensor::zeros({8}, DType::u8);
    Tensor b = a;  // shares storage
    // Write element 3 through b with a kernel (not a host pointer, so that it works on every device).
    Tensor b3 = b.as_strided({}, {}, 3);
    tritium::ops::fill_(b3, 42);
    BOOST_TEST((a.to_vector<uint8_t>() == std::vector<uint8_t>{0, 0, 0, 42, 0, 0, 0, 0}));
  });
}

// set_default_device: factories follow it, a guard restores it, other threads keep cpu, and a
// device that cannot hold memory is refused when a tensor is created, not when it is set.
BOOST_AUTO_TEST_CASE(default_device_scopes) {
  BOOST_TEST((tritium::default_device() == Device::cpu()));
  tt::for_each_backend([&](const tt::Backend& be) {
    BOOST_TEST((tritium::default_device() == be.device));  // for_each_backend sets it
    {
      tritium::DefaultDeviceGuard nested(Device::cpu());
      BOOST_TEST((Tensor::empty({3}, DType::f32).device() == Device::cpu()));
      BOOST_TEST((Tensor::from_vector<float>({1, 2}).device() == Device::cpu()));
    }
    BOOST_TEST((tritium::default_device() == be.device));
    Tensor z = tritium::ops::zeros({2, 3}), v = Tensor::from_vector<int32_t>({4, 5, 6}, {3});
    BOOST_TEST((z.device() == be.device));
    BOOST_TEST((v.device() == be.device));
    BOOST_TEST((v.to_vector<int32_t>() == std::vector<int32_t>{4, 5, 6}));
    // Explicit devices win over the default.
    BOOST_TEST((Tensor::from_vector<float>({7}, {1}, Device::cpu()).device() == Device::cpu()));
    Device seen_by_thread = be.device;
    std::thread([&] { seen_by_thread = tritium::default_device(); }).join();
    BOOST_TEST((seen_by_thread == Device::cpu()));
  });
  BOOST_TEST((tritium::default_device() == Device::cpu()));
  {
    tritium::DefaultDeviceGuard missing(Device::cuda(1000));
    tt::check_throws([] { (void)Tensor::empty({4}, DType::f32); }, {"cuda:1000"}, "empty on an absent default device");
  }
  BOOST_TEST((tritium::default_device() == Device::cpu()));
}

BOOST_AUTO_TEST_SUITE_END()
