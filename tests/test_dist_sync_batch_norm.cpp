// nn::SyncBatchNorm in one process (issue 32 item 3): without a group (or in evaluation) it is
// BatchNorm, bit for bit; bad inputs are clear errors; convert_sync_batchnorm replaces every
// BatchNorm of a tree by a SyncBatchNorm sharing its tensors, settings and training flag. Across processes it equals BatchNorm on the
// whole batch: tests/dist_ddp.sh (CTest dist_ddp_collectives, tritium-dist-worker --mode syncbn).
#include <boost/test/unit_test.hpp>

#include <random>

#include "common/error.h"
#include "nn/module.h"
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

BOOST_AUTO_TEST_CASE(convert_sync_batchnorm_replaces_every_batch_norm) {
  if (!runtime::device_available(Device::cpu())) {
    BOOST_TEST_MESSAGE("skipped: needs the CPU backend");
    return;
  }
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.5f, 2.f);
  auto random = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = normal(gen);
    return v;
  };
  Generator g(2);
  // A BatchNorm registered twice ("1" and "4"), one without a bias in a nested Sequential, in
  // evaluation mode with other settings.
  auto shared = std::make_shared<nn::BatchNorm1d>(4);
  auto nobias = std::make_shared<nn::BatchNorm1d>(4, 1e-3, std::nullopt, true, true, /*bias=*/false);
  nobias->eval();
  auto inner = std::make_shared<nn::Sequential>(nobias);
  auto root = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 4, true, g), shared,
                                               std::make_shared<nn::ReLU>(), inner, shared);
  for (auto& [name, t] : root->named_parameters()) t.detach().copy_(Tensor::from_vector(random(t.numel()), t.shape()));
  for (nn::BatchNorm* bn : {static_cast<nn::BatchNorm*>(shared.get()), static_cast<nn::BatchNorm*>(nobias.get())}) {
    bn->running_mean.copy_(Tensor::from_vector(random(4), {4}));
    bn->running_var.copy_(Tensor::from_vector<float>({0.5f, 1.5f, 2.f, 3.f}, {4}));
  }
  auto before = root->named_parameters();
  auto buffers_before = root->named_buffers();
  Tensor x = Tensor::from_vector(random(6 * 3), {6, 3});
  root->eval();
  std::vector<float> y_before = (*root)(x).to_vector<float>();
  root->train();
  nobias->eval();

  std::shared_ptr<nn::Module> out = nn::SyncBatchNorm::convert_sync_batchnorm(root);
  BOOST_TEST(out.get() == root.get());  // not a BatchNorm itself: changed in place
  auto* first = dynamic_cast<nn::SyncBatchNorm*>(&(*root)[1]);
  auto* nested = dynamic_cast<nn::SyncBatchNorm*>(&(*inner)[0]);
  BOOST_TEST_REQUIRE(first != nullptr);
  BOOST_TEST_REQUIRE(nested != nullptr);
  BOOST_TEST(root->ptr(4).get() == root->ptr(1).get());  // still one module registered twice
  BOOST_TEST(dynamic_cast<nn::Linear*>(&(*root)[0]) != nullptr);
  // The same settings, training flags, parameters and buffers (the same tensors, so an optimiser
  // built before the conversion updates the new modules).
  BOOST_TEST((first->eps == 1e-5 && first->momentum == std::optional<double>(0.1) && first->affine));
  BOOST_TEST((nested->eps == 1e-3 && !nested->momentum.has_value() && !nested->bias.defined()));
  BOOST_TEST(first->is_training());
  BOOST_TEST(!nested->is_training());
  auto after = root->named_parameters();
  BOOST_TEST_REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    BOOST_TEST(after[i].first == before[i].first);
    BOOST_TEST(after[i].second.raw_data() == before[i].second.raw_data(), after[i].first);
    BOOST_TEST(after[i].second.requires_grad());
  }
  auto buffers_after = root->named_buffers();
  BOOST_TEST_REQUIRE(buffers_after.size() == buffers_before.size());
  for (size_t i = 0; i < buffers_after.size(); ++i) {
    BOOST_TEST(buffers_after[i].first == buffers_before[i].first);
    BOOST_TEST(buffers_after[i].second.raw_data() == buffers_before[i].second.raw_data(), buffers_after[i].first);
  }
  BOOST_TEST(first->weight.raw_data() == shared->weight.raw_data());  // the member handles follow
  BOOST_TEST(first->running_mean.raw_data() == shared->running_mean.raw_data());
  BOOST_TEST(root->str().find("SyncBatchNorm") != std::string::npos, root->str());
  // Without a group it computes what the BatchNorms computed.
  root->eval();
  BOOST_TEST(((*root)(x).to_vector<float>() == y_before));
  // A BatchNorm itself becomes a new module; a replaced one that is still called is an error.
  auto lone = std::make_shared<nn::BatchNorm2d>(3);
  std::shared_ptr<nn::Module> converted = nn::SyncBatchNorm::convert_sync_batchnorm(lone);
  BOOST_TEST(converted.get() != lone.get());
  BOOST_TEST(converted->type_name() == "SyncBatchNorm");
  try {
    (*shared)(x);
    BOOST_FAIL("expected a tritium::Error");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("was replaced by a SyncBatchNorm") != std::string::npos, e.what());
  }
  try {
    nn::SyncBatchNorm::convert_sync_batchnorm(nullptr);
    BOOST_FAIL("expected a tritium::Error");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("the module is null") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()
