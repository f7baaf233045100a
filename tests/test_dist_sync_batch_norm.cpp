// nn::SyncBatchNorm in one process (issue 32 item 3): without a group (or in evaluation) it is
// BatchNorm, bit for bit; bad inputs are clear errors. Across processes it equals BatchNorm on the
// whole batch: tests/dist_ddp.sh (CTest dist_ddp_collectives, tritium-dist-worker --mode syncbn).
#include <boost/test/unit_test.hpp>

#include <random>

#include "common/error.h"
#include "nn/norm.h"
#include "nn/sync_batch_norm.h"
#include "runtime/device.h"

using namespace tritium;
using runtime::Tensor;

BOOST_AUTO_TEST_SUITE(test_dist_sync_batch_norm)

BOOST_AUTO_TEST_CASE(without_a_group_it_is_batch_norm) {
  if (!runtime::device_available(Device::cpu())) {
    BOOST_TEST_MESSAGE("skipped: needs the CPU backend (Gloo's CPU tensors)");
    return;
  }
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(1.f, 3.f);
  std::vector<float> xs(7 * 4 * 3);
  for (auto& v : xs) v = normal(gen);
  nn::SyncBatchNorm sync(4);
  nn::BatchNorm1d plain(4);
  BOOST_TEST(sync.type_name() == "SyncBatchNorm");
  for (bool training : {true, false}) {
    sync.train(training), plain.train(training);
    Tensor a = Tensor::from_vector(xs, {7, 4, 3}).requires_grad_(), b = Tensor::from_vector(xs, {7, 4, 3}).requires_grad_();
    Tensor ya = sync(a), yb = plain(b);
    BOOST_TEST((ya.to_vector<float>() == yb.to_vector<float>()));
    sum(ya).backward(), sum(yb).backward();
    BOOST_TEST((a.grad().to_vector<float>() == b.grad().to_vector<float>()));
    BOOST_TEST((sync.running_var.to_vector<float>() == plain.running_var.to_vector<float>()));
  }
}

BOOST_AUTO_TEST_CASE(bad_inputs) {
  // The module's parameters on a device this build runs (a CUDA-only build has no CPU kernels).
  Device device = runtime::device_available(Device::cpu()) ? Device::cpu() : Device::cuda(0);
  if (!runtime::device_available(device)) {
    BOOST_TEST_MESSAGE("skipped: no backend available");
    return;
  }
  DefaultDeviceGuard on(device);
  nn::SyncBatchNorm sync(4);
  auto expect = [](auto&& f, const std::string& fragment) {
    try {
      f();
    } catch (const Error& e) {
      BOOST_TEST(std::string(e.what()).find(fragment) != std::string::npos, e.what());
      return;
    }
    BOOST_FAIL("expected a tritium::Error");
  };
  expect([&] { sync(Tensor::zeros({4}, DType::f32)); }, "expected at least 2D input (got 1D input)");
  expect([&] { sync(Tensor::zeros({2, 3, 5}, DType::f32)); }, "expected 4 channels in dim 1, got input of shape [2, 3, 5]");
  expect([&] { sync(Tensor()); }, "the input is undefined");
  expect([] { nn::SyncBatchNorm(0); }, "num_features must be positive");
}

BOOST_AUTO_TEST_SUITE_END()
