#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

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
  Tensor t = Tensor::empty({4, 8}, DType::f32);
  BOOST_TEST(t.defined());
  BOOST_TEST(t.numel() == 32);
  BOOST_TEST(t.dim() == 2);
  BOOST_TEST(t.element_size() == 4);
  BOOST_TEST(t.nbytes() == 128);
  BOOST_TEST((t.strides() == std::vector<int64_t>{8, 1}));
  BOOST_TEST(t.is_contiguous());
  BOOST_TEST(t.str() == "Tensor([4, 8], f32, cpu)");
  BOOST_TEST(reinterpret_cast<uintptr_t>(t.raw_data()) % 64 == 0u);

  Tensor z = Tensor::zeros({3, 5, 7}, DType::i64);
  BOOST_TEST((z.strides() == std::vector<int64_t>{35, 7, 1}));
  for (int64_t v : z.to_vector<int64_t>()) BOOST_TEST(v == 0);

  Tensor scalar = Tensor::zeros({}, DType::f64);
  BOOST_TEST(scalar.numel() == 1);
  BOOST_TEST(scalar.str() == "Tensor([], f64, cpu)");

  Tensor none = Tensor::empty({0, 16}, DType::f16);
  BOOST_TEST(none.numel() == 0);
  BOOST_TEST(none.raw_data() != nullptr);
  BOOST_TEST(none.to_vector<tritium::f16_t>().empty());

  Tensor flags = Tensor::zeros({10}, DType::i1);
  BOOST_TEST(flags.element_size() == 1);
  BOOST_TEST(Tensor().str() == "Tensor(undefined)");
  BOOST_TEST(!Tensor().defined());
}

BOOST_AUTO_TEST_CASE(bad_factory_arguments) {
  check_error([] { Tensor::empty({2, -1}, DType::f32); }, "negative size -1");
  check_error([] { Tensor::empty({2}, DType::ptr); }, "dtype ptr");
  check_error([] { Tensor::empty({2}, DType::invalid); }, "dtype invalid");
  check_error([] { Tensor::empty({int64_t{1} << 40, int64_t{1} << 40}, DType::f32); }, "too");
  check_error([] { Tensor::empty({2}, DType::f32, Device::cuda(1000)); }, "device cuda:1000 is not available");
  check_error([] { Tensor::from_vector(std::vector<float>{1, 2, 3}, {2, 2}); }, "3 values do not fill shape [2, 2]");
}

BOOST_AUTO_TEST_CASE(from_vector_round_trips) {
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_vector(values, {2, 3});
  BOOST_TEST((t.dtype() == DType::f32));
  BOOST_TEST((t.shape() == std::vector<int64_t>{2, 3}));
  BOOST_TEST(t.to_vector<float>() == values);
  BOOST_TEST(t.data_ptr<float>()[4] == 5.0f);

  Tensor one_d = Tensor::from_vector(std::vector<int32_t>{7, 8, 9});
  BOOST_TEST((one_d.shape() == std::vector<int64_t>{3}));
  BOOST_TEST((one_d.dtype() == DType::i32));

  std::vector<bool> bits = {true, false, true, true};
  Tensor b = Tensor::from_vector(bits);
  BOOST_TEST((b.dtype() == DType::i1));
  BOOST_TEST(b.to_vector<bool>() == bits);

  Tensor d = Tensor::from_vector(std::vector<double>{2.5}, {});
  BOOST_TEST(d.dim() == 0);
  BOOST_TEST(d.to_vector<double>()[0] == 2.5);
}

BOOST_AUTO_TEST_CASE(strided_views) {
  std::vector<int32_t> values(12);
  for (int i = 0; i < 12; ++i) values[static_cast<size_t>(i)] = i;
  Tensor t = Tensor::from_vector(values, {3, 4});

  Tensor tt = t.transpose(0, 1);
  BOOST_TEST((tt.shape() == std::vector<int64_t>{4, 3}));
  BOOST_TEST((tt.strides() == std::vector<int64_t>{1, 4}));
  BOOST_TEST(!tt.is_contiguous());
  BOOST_TEST(tt.storage() == t.storage());
  BOOST_TEST((tt.to_vector<int32_t>() == std::vector<int32_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  Tensor c = tt.contiguous();
  BOOST_TEST(c.is_contiguous());
  BOOST_TEST(c.storage() != t.storage());
  BOOST_TEST(c.to_vector<int32_t>() == tt.to_vector<int32_t>());

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
}

BOOST_AUTO_TEST_CASE(data_ptr_checks_the_dtype) {
  Tensor h = Tensor::empty({4}, DType::f16);
  check_error([&] { h.data_ptr<float>(); }, "Tensor::data_ptr<float>: tensor has dtype f16");
  check_error([&] { h.to_vector<int32_t>(); }, "Tensor::to_vector<int32_t>: tensor has dtype f16");
  BOOST_TEST(h.data_ptr<tritium::f16_t>() != nullptr);
  check_error([] { Tensor().data_ptr<float>(); }, "tensor is undefined");
  check_error([] { Tensor().raw_data(); }, "tensor is undefined");
}

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
  auto buffer = tritium::runtime::Buffer::allocate(100, Device::cpu());
  BOOST_TEST(buffer->nbytes() == 100u);
  BOOST_TEST(reinterpret_cast<uintptr_t>(buffer->data()) % tritium::runtime::kHostAlignment == 0u);
  BOOST_TEST(tritium::runtime::Buffer::allocate(0, Device::cpu())->data() != nullptr);
  bool freed = false;
  {
    static char storage[16];
    auto adopted = tritium::runtime::Buffer::adopt(storage, sizeof storage, Device::cpu(), [&](void*) { freed = true; });
    auto copy = adopted;
  }
  BOOST_TEST(freed);
  Tensor a = Tensor::zeros({8}, DType::u8);
  Tensor b = a;  // shares storage
  b.data_ptr<uint8_t>()[3] = 42;
  BOOST_TEST(a.to_vector<uint8_t>()[3] == 42);
}

BOOST_AUTO_TEST_SUITE_END()
