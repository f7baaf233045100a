// runtime/device_checks.h: input checks made by kernels and reported by the host, at the launch
// (immediate) or at the next host read / synchronize (deferred, CUDA's default). Both modes are
// forced here on every backend, so the deferred path runs on the CPU too; the ops' own bad-input
// tests (test_tensor_indexing, test_nn_loss, test_nn_embedding, test_ops_softmax) read a result
// inside the throwing call, which holds in either mode.
#include "test_support.h"
#include "ops_test_helpers.h"

#include <cstdint>
#include <limits>
#include <optional>

#include "nn/functional.h"
#include "nn/loss.h"
#include "ops/embedding.h"
#include "ops/indexing.h"
#include "runtime/device_checks.h"
#include "runtime/streams.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace T = tritium;
namespace ops = tritium::ops;
namespace rt = tritium::runtime;
using tritium::DType;
using tritium::Tensor;
using namespace tritium::indexing;

namespace {

struct ModeGuard {
  explicit ModeGuard(rt::DeviceCheckMode m) { rt::set_device_checks_mode(m); }
  ~ModeGuard() { rt::set_device_checks_mode(std::nullopt); }
};

Tensor randf(std::vector<int64_t> shape, uint64_t seed) { return ou::random_tensor<float>(shape, seed); }
Tensor idx(std::vector<int64_t> v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); }

// x[:, i] on the host in float64.
std::vector<double> select_columns(const Tensor& x, const std::vector<int64_t>& cols) {
  std::vector<double> xs = ou::values(x), out;
  const int64_t n = x.size(1);
  for (int64_t r = 0; r < x.size(0); ++r)
    for (int64_t c : cols) out.push_back(xs[static_cast<size_t>(r * n + c)]);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_device_checks)

BOOST_AUTO_TEST_CASE(deferred_error_surfaces_at_the_next_host_read_once) {
  tt::for_each_backend([](const tt::Backend& be) {
    ModeGuard deferred(rt::DeviceCheckMode::deferred);
    Tensor x = randf({3, 4}, 1);
    rt::report_device_checks(be.device);  // nothing left from before
    Tensor y;
    BOOST_CHECK_NO_THROW(y = T::index_select(x, 1, idx({0, 4, 1})));
    BOOST_TEST(rt::pending_device_checks(be.device) == 1);
    tt::check_throws([&] { ou::values(y); },
                     {"index_select: index 4 is out of bounds for dimension 1 with size 4", "checked on",
                      "reported at the next host read or synchronize"},
                     "deferred index_select");
    BOOST_TEST(rt::pending_device_checks(be.device) == 0);
    BOOST_CHECK_NO_THROW(ou::values(y));  // reported once, then the slots are clean again
    // Good indices afterwards: no error, right values.
    Tensor z = T::index_select(x, 1, idx({3, 0, 3}));
    ou::check_values(z, select_columns(x, {3, 0, 3}), 0, "index_select after an error");
  });
}

BOOST_AUTO_TEST_CASE(synchronize_reports) {
  tt::for_each_backend([](const tt::Backend& be) {
    ModeGuard deferred(rt::DeviceCheckMode::deferred);
    Tensor x = randf({3, 4}, 2);
    Tensor g = T::gather(x, 0, ops::full({2, 2}, 3, DType::i64));
    tt::check_throws([&] { rt::synchronize(be.device); },
                     {"gather: index 3 is out of bounds for dimension 0 with size 3"}, "synchronize");
    BOOST_CHECK_NO_THROW(rt::synchronize(be.device));
  });
}

BOOST_AUTO_TEST_CASE(first_failure_wins_and_later_ones_are_counted) {
  tt::for_each_backend([](const tt::Backend&) {
    ModeGuard deferred(rt::DeviceCheckMode::deferred);
    Tensor x = randf({3, 4}, 3);
    Tensor a = T::gather(x, 1, Tensor::from_vector(std::vector<int64_t>{0, 5, 1}, {3, 1}));
    Tensor b = T::index_select(x, 1, idx({-7}));
    Tensor c = T::index_select(x, 1, idx({2}));  // a good one in between changes nothing
    std::string msg = tt::check_throws([&] { ou::values(c); },
                                       {"gather: index 5 is out of bounds for dimension 1 with size 4",
                                        "1 more failed checks were dropped"},
                                       "two failures");
    BOOST_TEST(msg.find("index_select") == std::string::npos);
  });
}

BOOST_AUTO_TEST_CASE(extreme_indices_are_named_exactly) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor x = randf({3, 4}, 4);
    const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
    for (auto mode : {rt::DeviceCheckMode::immediate, rt::DeviceCheckMode::deferred}) {
      ModeGuard guard(mode);
      tt::check_throws([&] { ou::values(T::index_select(x, 1, idx({1, big, 2}))); },
                       {"index 9223372036854775807 is out of bounds"}, "INT64_MAX");
      tt::check_throws([&] { ou::values(T::index_select(x, 1, idx({small, 2}))); },
                       {"index -9223372036854775808 is out of bounds"}, "INT64_MIN");
      // Both ends in one call: the too-large one is named (the largest of those).
      tt::check_throws([&] { ou::values(T::gather(x, 1, Tensor::from_vector(std::vector<int64_t>{-9, 6, 4}, {3, 1}))); },
                       {"gather: index 6 is out of bounds"}, "both ends");
      tt::check_throws([&] { ou::values(T::gather(x, 1, Tensor::from_vector(std::vector<int32_t>{-9, -2, 1}, {3, 1}))); },
                       {"gather: index -9 is out of bounds"}, "negatives: the smallest");
      // An empty dim: every index is out of bounds (checked on the host).
      tt::check_throws([&] { ou::values(T::index_select(randf({3, 0}, 10), 1, idx({0}))); },
                       {"index_select: index 0 is out of bounds for dimension 1 with size 0"}, "empty dim");
      // Negatives wrap in x[idx]: -4 is fine for size 4, -5 is not.
      ou::check_values(x.index({Slice(), idx({-4})}), select_columns(x, {0}), 0, "x[:, -4]");
      tt::check_throws([&] { ou::values(x.index({Slice(), idx({-5})})); }, {"index -5 is out of bounds"}, "x[:, -5]");
    }
  });
}

BOOST_AUTO_TEST_CASE(immediate_mode_throws_at_the_call) {
  tt::for_each_backend([](const tt::Backend& be) {
    ModeGuard immediate(rt::DeviceCheckMode::immediate);
    Tensor x = randf({3, 4}, 5);
    tt::check_throws([&] { T::index_select(x, 1, idx({4})); }, {"index_select: index 4"}, "immediate");
    std::string msg = tt::check_throws([&] { T::scatter_add(x, 1, idx({0, 9}).reshape({1, 2}), randf({1, 2}, 6)); },
                                       {"scatter_add: index 9"}, "immediate scatter_add");
    BOOST_TEST(msg.find("reported at the next") == std::string::npos);
    BOOST_TEST(rt::pending_device_checks(be.device) == 0);
  });
}

BOOST_AUTO_TEST_CASE(the_ring_wraps_without_losing_a_failure) {
  tt::for_each_backend([](const tt::Backend& be) {
    ModeGuard deferred(rt::DeviceCheckMode::deferred);
    Tensor x = randf({2, 4}, 7), good = idx({1}), bad = idx({1, 8});
    rt::report_device_checks(be.device);
    const int64_t calls = rt::kDeviceCheckSlots / 2 + 9;  // two slots a call: goes round once
    for (int64_t i = 0; i < calls; ++i) (void)T::index_select(x, 1, good);
    BOOST_TEST(rt::pending_device_checks(be.device) < calls);  // the ring reported on its way round
    Tensor y = T::index_select(x, 1, bad);
    for (int64_t i = 0; i < 20; ++i) (void)T::index_select(x, 1, good);
    tt::check_throws([&] { ou::values(y); }, {"index_select: index 8 is out of bounds"}, "after wrapping");
    ou::check_values(T::index_select(x, 1, good), select_columns(x, {1}), 0, "good after wrapping");
  });
}

BOOST_AUTO_TEST_CASE(losses_and_embedding_deferred) {
  tt::for_each_backend([](const tt::Backend&) {
    ModeGuard deferred(rt::DeviceCheckMode::deferred);
    Tensor x = randf({4, 5}, 8);
    Tensor l = T::nll_loss(x, idx({0, 1, 9, 7}));
    tt::check_throws([&] { ou::values(l); }, {"nll_loss: target 9 at index 2 is out of range for 5 classes"},
                     "nll_loss: the first bad row");
    Tensor ce = T::cross_entropy(x, idx({0, -3, 2, 1}), {});
    tt::check_throws([&] { ou::values(ce); }, {"cross_entropy: target -3 at index 1"}, "cross_entropy");
    Tensor e = ops::embedding(randf({10, 3}, 9), idx({2, 11, 3}));
    tt::check_throws([&] { ou::values(e); }, {"indices[1] = 11"}, "embedding");
    // A good loss afterwards: -mean(x[i, t_i]) in float64.
    std::vector<double> xs = ou::values(x);
    std::vector<int64_t> t{4, 0, 2, 3};
    double ref = 0;
    for (int i = 0; i < 4; ++i) ref -= xs[static_cast<size_t>(i * 5 + t[static_cast<size_t>(i)])] / 4;
    ou::check_values(T::nll_loss(x, idx(t)), {ref}, 1e-6, "nll_loss after errors");
  });
}

BOOST_AUTO_TEST_SUITE_END()
