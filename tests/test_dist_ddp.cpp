// nn::DistributedDataParallel in one process (issue 32): the bucket assignment (reverse order,
// caps, kinds), and on a one-rank Gloo group the reducer's behaviour: gradients equal to a
// float64 host reference and to the plain module's, no_sync (no reduction, accumulation),
// unused parameters (an error naming them at the next forward, or find_unused_parameters),
// gradient_as_bucket_view, bad arguments. The multi-process equality of losses is
// tests/dist_ddp.sh (CTest dist_ddp_*).
#include <boost/test/unit_test.hpp>

#include "test_support.h"

#include <cmath>
#include <set>

#include "common/error.h"
#include "dist/gloo_process_group.h"
#include "dist/tcp_store.h"
#include "nn/autograd.h"
#include "nn/ddp.h"
#include "nn/ddp_buckets.h"
#include "nn/functional.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "runtime/device.h"

using namespace tritium;
using runtime::Tensor;
using namespace std::chrono_literals;

namespace {


// A one-rank Gloo group, or null (with a message) where Gloo or the CPU backend is missing.
std::shared_ptr<dist::ProcessGroup> one_rank_group() {
  if (!dist::GlooProcessGroup::available() || !runtime::device_available(Device::cpu())) {
    BOOST_TEST_MESSAGE("skipped: needs the Gloo backend and the CPU backend");
    return nullptr;
  }
  auto store = std::make_shared<dist::TCPStore>("127.0.0.1", 0, true, 5000ms);
  return dist::GlooProcessGroup::create(store, 0, 1, 5000ms);
}

// Two linear layers, the second optionally unused (its output dropped).
class TwoLayers : public nn::Module {
 public:
  TwoLayers(bool use_second, Generator& gen) : use_second_(use_second) {
    first = register_module("first", std::make_shared<nn::Linear>(7, 5, true, gen));
    second = register_module("second", std::make_shared<nn::Linear>(5, 3, true, gen));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = (*first)(x);
    return use_second_ ? (*second)(h) : h;
  }
  std::shared_ptr<nn::Linear> first, second;
  bool use_second_;
};

// Parameters registered in another order than the forward uses them ("late" first), so that
// reverse registration order is not the order backward produces the gradients.
class Reordered : public nn::Module {
 public:
  explicit Reordered(Generator& gen) {
    late = register_module("late", std::make_shared<nn::Linear>(5, 3, true, gen));
    early = register_module("early", std::make_shared<nn::Linear>(7, 5, true, gen));
  }
  Tensor forward(const Tensor& x) override { return (*late)(relu((*early)(x))); }
  std::shared_ptr<nn::Linear> late, early;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(test_dist_ddp)

BOOST_AUTO_TEST_CASE(bucket_assignment_reverse_order_caps_and_kinds) {
  using nn::BucketedTensor;
  // Bytes: 10, 20, 30, 40, 50; first cap 25, then 60: [4] closes the first bucket (50 >= 25), [3, 2]
  // reach 70 >= 60, [1, 0] stay open to the end.
  std::vector<BucketedTensor> t = {{10, "f32"}, {20, "f32"}, {30, "f32"}, {40, "f32"}, {50, "f32"}};
  auto b = nn::compute_bucket_assignment(t, 25, 60);
  BOOST_TEST((b == std::vector<std::vector<int>>{{4}, {3, 2}, {1, 0}}));
  // Large caps: one bucket, reverse order.
  b = nn::compute_bucket_assignment(t, 1 << 20, 25 << 20);
  BOOST_TEST((b == std::vector<std::vector<int>>{{4, 3, 2, 1, 0}}));
  // Kinds never mix; buckets ordered by their first (highest) index.
  std::vector<BucketedTensor> mixed = {{8, "f32"}, {8, "f64"}, {8, "f32"}, {8, "f64"}};
  b = nn::compute_bucket_assignment(mixed, 1000, 1000);
  BOOST_TEST((b == std::vector<std::vector<int>>{{3, 1}, {2, 0}}));
  // A tensor above the cap gets a bucket of its own.
  b = nn::compute_bucket_assignment({{5, "a"}, {500, "a"}, {5, "a"}}, 100, 100);
  BOOST_TEST((b == std::vector<std::vector<int>>{{2, 1}, {0}}));
  tritium::test::check_throws([] { nn::compute_bucket_assignment({{1, "a"}}, 0, 10); }, {"bucket caps must be positive"});
}

BOOST_AUTO_TEST_CASE(gradients_match_a_float64_reference_and_the_plain_module) {
  auto group = one_rank_group();
  if (!group) return;
  Generator g1(5), g2(5);
  auto model = std::make_shared<TwoLayers>(true, g1);
  TwoLayers plain(true, g2);
  nn::DistributedDataParallel ddp(model, {.process_group = group, .bucket_cap_mb = 1e-5, .first_bucket_cap_mb = 1e-5});
  BOOST_TEST(ddp.bucket_assignment().size() == 4u);  // one bucket per parameter at these caps
  BOOST_TEST(ddp.type_name() == "DistributedDataParallel");
  BOOST_TEST(ddp.state_dict().contains("module.first.weight"));  // PyTorch's key prefix

  const int64_t n = 9;
  auto xs = tritium::test::random_vector<float>(n * 7, 1);
  Tensor x = Tensor::from_vector(xs, {n, 7});
  sum(ddp(x)).backward();
  sum(plain(x)).backward();
  BOOST_TEST(ddp.buckets_reduced() == 4);
  // d sum(W2 (W1 x + b1) + b2) / d b2 = n per output; d / d W1[o][i] = sum_n x[n][i] * sum_k W2[k][o].
  auto w2 = model->second->weight.to_vector<float>();
  std::vector<double> ref_w1(5 * 7, 0.0);
  for (int o = 0; o < 5; ++o) {
    double col = 0;
    for (int k = 0; k < 3; ++k) col += w2[k * 5 + o];
    for (int i = 0; i < 7; ++i) {
      double s = 0;
      for (int r = 0; r < n; ++r) s += xs[r * 7 + i];
      ref_w1[o * 7 + i] = s * col;
    }
  }
  auto got_w1 = model->first->weight.grad().to_vector<float>();
  double num = 0, den = 0;
  for (size_t i = 0; i < ref_w1.size(); ++i) num += std::pow(got_w1[i] - ref_w1[i], 2), den += ref_w1[i] * ref_w1[i];
  BOOST_TEST(std::sqrt(num / den) < 1e-6);
  for (float v : model->second->bias.grad().to_vector<float>()) BOOST_TEST(v == static_cast<float>(n));
  auto mine = model->parameters(), theirs = plain.parameters();
  for (size_t i = 0; i < mine.size(); ++i)
    BOOST_TEST((mine[i].grad().to_vector<float>() == theirs[i].grad().to_vector<float>()));
}

BOOST_AUTO_TEST_CASE(buckets_launch_while_backward_goes_on) {
  auto group = one_rank_group();
  if (!group) return;
  Generator gen(4);
  auto model = std::make_shared<TwoLayers>(true, gen);
  nn::DistributedDataParallel ddp(model, {.process_group = group, .bucket_cap_mb = 1e-5, .first_bucket_cap_mb = 1e-5});
  // The first layer's gradients come last in backward; by the time they arrive, the buckets of the
  // second layer (bias, then weight) have been launched.
  int64_t launched_before_first_layer = -1;
  auto handle = model->first->weight.register_hook([&](const Tensor&) {
    launched_before_first_layer = ddp.buckets_reduced();
  });
  sum(ddp(Tensor::from_vector(tritium::test::random_vector<float>(2 * 7, 6), {2, 7}))).backward();
  BOOST_TEST(launched_before_first_layer >= 2);
  BOOST_TEST(ddp.buckets_reduced() == 4);
  handle.remove();
}

BOOST_AUTO_TEST_CASE(no_sync_skips_the_reduction_and_accumulates) {
  auto group = one_rank_group();
  if (!group) return;
  Generator gen(3);
  auto model = std::make_shared<TwoLayers>(true, gen);
  nn::DistributedDataParallel ddp(model, {.process_group = group});
  BOOST_TEST(ddp.bucket_assignment().size() == 1u);
  Tensor x = Tensor::from_vector(tritium::test::random_vector<float>(4 * 7, 2), {4, 7});
  {
    auto guard = ddp.no_sync();
    sum(ddp(x)).backward();
  }
  BOOST_TEST(ddp.buckets_reduced() == 0);
  auto once = model->first->bias.grad().to_vector<float>();
  sum(ddp(x)).backward();  // synchronised: reduces the accumulated sum
  BOOST_TEST(ddp.buckets_reduced() == 1);
  auto twice = model->first->bias.grad().to_vector<float>();
  for (size_t i = 0; i < once.size(); ++i) BOOST_TEST(twice[i] == 2 * once[i]);
}

BOOST_AUTO_TEST_CASE(unused_parameters_error_or_find_unused_parameters) {
  auto group = one_rank_group();
  if (!group) return;
  Tensor x = Tensor::from_vector(tritium::test::random_vector<float>(3 * 7, 4), {3, 7});
  {
    Generator gen(1);
    auto model = std::make_shared<TwoLayers>(false, gen);
    nn::DistributedDataParallel ddp(model, {.process_group = group});
    sum(ddp(x)).backward();  // "second" got no gradient: the reduction cannot finish
    tritium::test::check_throws([&] { ddp(x); }, {"expected to have finished the gradient reduction",
                                  "received no gradient on rank 0: second.weight, second.bias",
                                  "find_unused_parameters"});
  }
  {
    Generator gen(1);
    auto model = std::make_shared<TwoLayers>(false, gen);
    nn::DistributedDataParallel ddp(model, {.process_group = group, .find_unused_parameters = true});
    for (int step = 0; step < 2; ++step) {
      model->zero_grad();
      sum(ddp(x)).backward();
      BOOST_TEST(ddp.buckets_reduced() == step + 1);
      BOOST_TEST(!model->second->weight.grad().defined());  // unused everywhere: left alone
      for (float v : model->first->bias.grad().to_vector<float>()) BOOST_TEST(v == 3.f);
    }
  }
}

BOOST_AUTO_TEST_CASE(gradient_as_bucket_view) {
  auto group = one_rank_group();
  if (!group) return;
  Generator gen(2);
  auto model = std::make_shared<TwoLayers>(true, gen);
  nn::DistributedDataParallel ddp(model, {.process_group = group, .gradient_as_bucket_view = true});
  Tensor x = Tensor::from_vector(tritium::test::random_vector<float>(6 * 7, 5), {6, 7});
  for (int step = 0; step < 2; ++step) {
    model->zero_grad();
    sum(ddp(x)).backward();
    auto params = model->parameters();
    // One bucket: every gradient is a view of the same storage.
    for (auto& p : params) BOOST_TEST(p.grad().storage() == params[0].grad().storage());
    for (float v : model->second->bias.grad().to_vector<float>()) BOOST_TEST(v == 6.f);
  }
}

BOOST_AUTO_TEST_CASE(bucket_assignment_in_a_given_order) {
  using nn::BucketedTensor;
  std::vector<BucketedTensor> t = {{10, "f32"}, {20, "f32"}, {30, "f32"}, {40, "f32"}, {50, "f32"}};
  // Filled in the order 1, 3, 0, 4, 2: [1, 3] reach 60 >= 25, [0, 4] 60 >= 60, [2] stays open.
  auto b = nn::compute_bucket_assignment(t, 25, 60, {1, 3, 0, 4, 2});
  BOOST_TEST((b == std::vector<std::vector<int>>{{1, 3}, {0, 4}, {2}}));
  // Kinds: buckets ordered by the position of their first tensor in the order.
  std::vector<BucketedTensor> mixed = {{8, "f32"}, {8, "f64"}, {8, "f32"}, {8, "f64"}};
  b = nn::compute_bucket_assignment(mixed, 1000, 1000, {1, 0, 2, 3});
  BOOST_TEST((b == std::vector<std::vector<int>>{{1, 3}, {0, 2}}));
  tritium::test::check_throws([&] { nn::compute_bucket_assignment(t, 25, 60, {1, 3, 0, 4}); },
                              {"the bucket order lists 4 tensors, expected 5"});
  tritium::test::check_throws([&] { nn::compute_bucket_assignment(t, 25, 60, {1, 3, 0, 3, 2}); },
                              {"not a permutation of 0..4", "index 3 at position 3"});
}

BOOST_AUTO_TEST_CASE(buckets_are_rebuilt_in_the_order_gradients_became_ready) {
  auto group = one_rank_group();
  if (!group) return;
  Generator g1(8), g2(8);
  auto model = std::make_shared<Reordered>(g1);
  Reordered plain(g2);
  nn::DistributedDataParallel ddp(model, {.process_group = group, .bucket_cap_mb = 1e-5, .first_bucket_cap_mb = 1e-5});
  // Another DDP of the same parameters would double the hooks; a second model with a small first
  // bucket and a large second one checks the caps of the rebuilt buckets.
  Generator g3(8);
  auto grouped_model = std::make_shared<Reordered>(g3);
  nn::DistributedDataParallel grouped(grouped_model, {.process_group = group, .bucket_cap_mb = 25,
                                                      .first_bucket_cap_mb = 1e-5});
  // params: 0 late.weight, 1 late.bias, 2 early.weight, 3 early.bias. Reverse order puts early's
  // first, though backward produces late's first.
  BOOST_TEST((ddp.bucket_assignment() == std::vector<std::vector<int>>{{3}, {2}, {1}, {0}}));
  std::vector<int> order;
  std::vector<nn::RemovableHandle> hooks;
  auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    hooks.push_back(params[i].register_post_accumulate_grad_hook([&, i](const Tensor&) { order.push_back(int(i)); }));
  int64_t launched_before_early_weight = -1;
  hooks.push_back(model->early->weight.register_hook([&](const Tensor&) {
    launched_before_early_weight = ddp.buckets_reduced() % 4;  // launched so far in this backward
  }));
  nn::SGD sgd(model->parameters(), 0.1), plain_sgd(plain.parameters(), 0.1);
  Tensor x = Tensor::from_vector(tritium::test::random_vector<float>(5 * 7, 9), {5, 7});
  std::vector<int64_t> launched;
  std::vector<int> first_order;
  for (int step = 0; step < 3; ++step) {
    order.clear();
    sgd.zero_grad(), plain_sgd.zero_grad();
    sum(ddp(x)).backward();
    sum(plain(x)).backward();
    sum(grouped(x)).backward();
    launched.push_back(launched_before_early_weight);
    if (step == 0) {
      BOOST_TEST(!ddp.buckets_rebuilt());
      first_order = order;
      BOOST_TEST_REQUIRE(first_order.size() == 4u);
      BOOST_TEST((std::set<int>(first_order.begin(), first_order.begin() + 2) == std::set<int>{0, 1}));
    } else {
      // Rebuilt at the second forward, one parameter per bucket, in the order of the first backward.
      BOOST_TEST(ddp.buckets_rebuilt());
      BOOST_TEST((ddp.bucket_assignment() ==
                  std::vector<std::vector<int>>{{first_order[0]}, {first_order[1]}, {first_order[2]}, {first_order[3]}}));
      BOOST_TEST((grouped.bucket_assignment() ==
                  std::vector<std::vector<int>>{{first_order[0]}, {first_order[1], first_order[2], first_order[3]}}));
      BOOST_TEST(order == first_order);
    }
    // Results stay those of the plain module, bit for bit (one rank: the average is the sum).
    auto mine = model->parameters(), theirs = plain.parameters();
    for (size_t i = 0; i < mine.size(); ++i)
      BOOST_TEST((mine[i].grad().to_vector<float>() == theirs[i].grad().to_vector<float>()), "step " << step << " " << i);
    sgd.step(), plain_sgd.step();
  }
  // Before the rebuild the first bucket (early.bias) waited for the end of backward; after it,
  // late's two buckets are launched before early's weight gradient arrives.
  BOOST_TEST(launched[0] <= 1);
  BOOST_TEST(launched[1] >= 2);
  BOOST_TEST(launched[2] >= 2);
  BOOST_TEST(ddp.buckets_reduced() == 12);
  for (auto& h : hooks) h.remove();
}

BOOST_AUTO_TEST_CASE(bad_arguments) {
  auto group = one_rank_group();
  if (!group) return;
  tritium::test::check_throws([&] { nn::DistributedDataParallel(nullptr, {.process_group = group}); }, {"the module is null"});
  auto frozen = std::make_shared<nn::Linear>(3, 2);
  frozen->requires_grad_(false);
  tritium::test::check_throws([&] { nn::DistributedDataParallel(frozen, {.process_group = group}); },
              {"no parameter that requires grad"});
  tritium::test::check_throws([&] { nn::DistributedDataParallel(std::make_shared<nn::Linear>(3, 2), {.process_group = group,
                                                                                    .bucket_cap_mb = 0}); },
              {"bucket caps must be positive"});
}

BOOST_AUTO_TEST_SUITE_END()
