// Anomaly detection (autograd::DetectAnomalyGuard): a NaN produced by a node's backward is an
// error naming the node and where its forward op was called (the recorded stack); without the
// guard the NaN reaches .grad silently (as PyTorch); guards nest and restore.
#include "test_support.h"

#include <cmath>

#include "nn/anomaly_mode.h"
#include "nn/autograd.h"
#include "nn/functional.h"

namespace tt = tritium::test;
namespace ag = tritium::autograd;
using tritium::DType;
using tritium::Tensor;

namespace {

// sqrt at 0 times 0: the forward is finite (0), SqrtBackward computes 0 * 0.5 / 0 = NaN.
Tensor nan_in_backward_loss(const Tensor& x) { return tritium::sum(tritium::sqrt(x) * 0.0); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_autograd_anomaly)

BOOST_AUTO_TEST_CASE(nan_in_backward_names_the_forward_op) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = Tensor::from_vector(std::vector<double>{0.0, 1.0, 4.0}, {3});
    x.requires_grad_();
    BOOST_TEST(!ag::anomaly_mode_enabled());
    {
      Tensor loss = nan_in_backward_loss(x);
      loss.backward();  // no guard: the NaN is accumulated quietly
      auto g = x.grad().to_vector<double>();
      BOOST_TEST(std::isnan(g[0]));
      BOOST_TEST(g[1] == 0.0);
    }
    x.zero_grad();
    {
      ag::DetectAnomalyGuard detect;
      BOOST_TEST(ag::anomaly_mode_enabled());
      Tensor loss = nan_in_backward_loss(x);
      std::string msg = tt::check_throws([&] { loss.backward(); },
                                         {"Function 'SqrtBackward' returned nan values in its 0th output.",
                                          "The forward op was recorded at:", "tritium::sqrt"},
                                         "NaN in SqrtBackward");
      // A clean backward under the guard passes.
      Tensor ok = tritium::sum(tritium::sqrt(x + 1.0));
      ok.backward();
      auto g = x.grad().to_vector<double>();
      BOOST_TEST(std::abs(g[2] - 0.5 / std::sqrt(5.0)) < 1e-14);
      {
        ag::DetectAnomalyGuard off(false);
        BOOST_TEST(!ag::anomaly_mode_enabled());
      }
      BOOST_TEST(ag::anomaly_mode_enabled());
    }
    BOOST_TEST(!ag::anomaly_mode_enabled());
    // A node recorded before the guard: named, without a place.
    Tensor early = nan_in_backward_loss(x);
    ag::DetectAnomalyGuard detect;
    tt::check_throws([&] { early.backward(); }, {"SqrtBackward", "recorded before anomaly detection was enabled"},
                     "node recorded outside the guard");
  });
}

BOOST_AUTO_TEST_SUITE_END()
