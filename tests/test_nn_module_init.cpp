// nn::init (issue 30 item 2): gains and fans as PyTorch computes them, the distributions'
// bounds and moments with tolerances a wrong fan or gain fails (each is checked against the
// factor-of-two-or-more change a wrong mode/gain would make), exact constant_/eye_, orthogonality,
// truncation, the error paths, and initialisers writing parameters that require grad.
#include <cmath>
#include <vector>

#include "nn/autograd.h"
#include "nn/init.h"
#include "nn/module.h"
#include "test_support.h"

namespace tt = tritium::test;
using tritium::Tensor;
using namespace tritium;
namespace init = tritium::nn::init;

namespace {

struct Moments {
  double mean, std, min, max;
};

Moments moments(const Tensor& t) {
  auto v = t.to(DType::f64).to_vector<double>();
  double s = 0, sq = 0, lo = 1e300, hi = -1e300;
  for (double x : v) s += x, sq += x * x, lo = std::min(lo, x), hi = std::max(hi, x);
  double mean = s / v.size();
  return {mean, std::sqrt(sq / v.size() - mean * mean), lo, hi};
}

// U(-bound, bound): max near bound and never past it, std = bound / sqrt(3) within 2%.
void check_uniform(const Tensor& t, double bound, const char* what) {
  Moments m = moments(t);
  BOOST_TEST(m.max <= bound, what);
  BOOST_TEST(m.min >= -bound, what);
  BOOST_TEST(m.max > 0.98 * bound, what);
  BOOST_TEST(std::abs(m.std / (bound / std::sqrt(3.0)) - 1) < 0.02, what << ": std " << m.std << " vs " << bound / std::sqrt(3.0));
  BOOST_TEST(std::abs(m.mean) < 0.02 * bound, what);
}

void check_normal(const Tensor& t, double mean, double std, const char* what) {
  Moments m = moments(t);
  BOOST_TEST(std::abs(m.std / std - 1) < 0.02, what << ": std " << m.std << " vs " << std);
  BOOST_TEST(std::abs(m.mean - mean) < 0.02 * std, what << ": mean " << m.mean << " vs " << mean);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_module_init)

BOOST_AUTO_TEST_CASE(gains_and_fans) {
  BOOST_TEST(init::calculate_gain("linear") == 1.0);
  BOOST_TEST(init::calculate_gain("conv_transpose2d") == 1.0);
  BOOST_TEST(init::calculate_gain("sigmoid") == 1.0);
  BOOST_TEST(init::calculate_gain("tanh") == 5.0 / 3);
  BOOST_TEST(init::calculate_gain("relu") == std::sqrt(2.0));
  BOOST_TEST(init::calculate_gain("leaky_relu") == std::sqrt(2.0 / (1 + 0.01 * 0.01)));
  BOOST_TEST(init::calculate_gain("leaky_relu", 0.2) == std::sqrt(2.0 / 1.04));
  BOOST_TEST(init::calculate_gain("selu") == 0.75);
  tt::check_throws([] { init::calculate_gain("swish"); }, {"unsupported nonlinearity swish"}, "unknown nonlinearity");
  tt::check_throws([] { init::calculate_gain("leaky_relu", NAN); }, {"negative_slope", "not a valid number"}, "NaN slope");
  tt::for_each_backend([&](const tt::Backend&) {
    BOOST_TEST((init::calculate_fan_in_and_fan_out(ops::zeros({30, 20})) == std::pair<int64_t, int64_t>{20, 30}));
    BOOST_TEST((init::calculate_fan_in_and_fan_out(ops::zeros({8, 4, 3, 5})) == std::pair<int64_t, int64_t>{60, 120}));
    tt::check_throws([] { init::calculate_fan_in_and_fan_out(ops::zeros({7})); }, {"fewer than 2 dimensions"}, "fan of 1-D");
  });
}

BOOST_AUTO_TEST_CASE(kaiming_and_xavier) {
  tt::for_each_backend([&](const tt::Backend&) {
    Generator gen(17);
    Tensor w = Tensor::empty({256, 120, 3}, DType::f32);  // fan_in 360, fan_out 768
    init::kaiming_uniform_(w, 0.0, "fan_in", "relu", gen);
    check_uniform(w, std::sqrt(3.0) * std::sqrt(2.0) / std::sqrt(360.0), "kaiming_uniform_ fan_in relu");
    init::kaiming_uniform_(w, std::sqrt(5.0), "fan_out", "leaky_relu", gen);  // Linear's and Conv's default
    check_uniform(w, std::sqrt(3.0) * std::sqrt(2.0 / 6.0) / std::sqrt(768.0), "kaiming_uniform_ a=sqrt(5) fan_out");
    init::kaiming_normal_(w, 0.2, "fan_out", "leaky_relu", gen);
    check_normal(w, 0.0, std::sqrt(2.0 / 1.04) / std::sqrt(768.0), "kaiming_normal_ fan_out");
    init::kaiming_normal_(w, 0.0, "fan_in", "tanh", gen);
    check_normal(w, 0.0, (5.0 / 3) / std::sqrt(360.0), "kaiming_normal_ tanh");
    init::xavier_uniform_(w, 2.0, gen);
    check_uniform(w, 2.0 * std::sqrt(6.0 / (360 + 768)), "xavier_uniform_");
    init::xavier_normal_(w, 0.5, gen);
    check_normal(w, 0.0, 0.5 * std::sqrt(2.0 / (360 + 768)), "xavier_normal_");
    // bf16 tensors are initialised too.
    Tensor h = Tensor::empty({300, 200}, DType::bf16);
    init::kaiming_normal_(h, 0.0, "fan_in", "relu", gen);
    check_normal(h, 0.0, std::sqrt(2.0 / 200), "kaiming_normal_ bf16");

    tt::check_throws([&] { init::kaiming_uniform_(w, 0, "fan_avg"); }, {"mode fan_avg not supported", "fan_in, fan_out"}, "bad mode");
    tt::check_throws([&] { init::kaiming_normal_(w, 0, "fan_in", "softmax"); }, {"unsupported nonlinearity softmax"}, "bad nonlinearity");
    Tensor v = ops::zeros({9});
    tt::check_throws([&] { init::xavier_uniform_(v); }, {"fewer than 2 dimensions"}, "xavier of 1-D");
    tt::check_throws([&] { init::kaiming_uniform_(v); }, {"fewer than 2 dimensions"}, "kaiming of 1-D");
    Tensor empty = Tensor::empty({0, 4}, DType::f32);
    init::kaiming_uniform_(empty);  // a no-op, as PyTorch's (which warns)
    Tensor ints = ops::zeros({3, 3}, DType::i32);
    tt::check_throws([&] { init::xavier_normal_(ints); }, {"xavier_normal_", "floating"}, "integer tensor");
  });
}

BOOST_AUTO_TEST_CASE(uniform_normal_trunc_normal) {
  tt::for_each_backend([&](const tt::Backend&) {
    Generator gen(4);
    Tensor t = Tensor::empty({50001}, DType::f32);
    init::uniform_(t, -0.5, 1.5, gen);
    Moments m = moments(t);
    BOOST_TEST((m.min >= -0.5 && m.max <= 1.5 && m.min < -0.49 && m.max > 1.49));
    BOOST_TEST(std::abs(m.mean - 0.5) < 0.01);
    init::normal_(t, 3.0, 0.5, gen);
    check_normal(t, 3.0, 0.5, "normal_");
    // Truncated to [a, b] = [-1, 2] from N(1, 2): alpha = -1, beta = 0.5.
    init::trunc_normal_(t, 1.0, 2.0, -1.0, 2.0, gen);
    m = moments(t);
    BOOST_TEST(m.min >= -1.0);
    BOOST_TEST(m.max <= 2.0);
    auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); };
    auto cdf = [](double x) { return (1 + std::erf(x / std::sqrt(2.0))) / 2; };
    double z = cdf(0.5) - cdf(-1.0);
    double mean = 1.0 + 2.0 * (phi(-1.0) - phi(0.5)) / z;
    double var = 4.0 * (1 + (-1.0 * phi(-1.0) - 0.5 * phi(0.5)) / z - std::pow((phi(-1.0) - phi(0.5)) / z, 2));
    BOOST_TEST(std::abs(m.mean - mean) < 0.01, "trunc_normal_ mean " << m.mean << " vs " << mean);
    BOOST_TEST(std::abs(m.std / std::sqrt(var) - 1) < 0.02, "trunc_normal_ std " << m.std << " vs " << std::sqrt(var));
    tt::check_throws([&] { init::trunc_normal_(t, 0, 1, 2, 1, gen); }, {"trunc_normal_", "empty"}, "a > b");
    // The same generator state gives the same values.
    Generator a(8), b(8);
    Tensor x = Tensor::empty({100}, DType::f32), y = Tensor::empty({100}, DType::f32);
    init::normal_(x, 0, 1, a);
    init::normal_(y, 0, 1, b);
    BOOST_TEST(x.to_vector<float>() == y.to_vector<float>());
  });
}

BOOST_AUTO_TEST_CASE(constant_eye_and_parameters) {
  tt::for_each_backend([&](const tt::Backend&) {
    nn::Linear lin(7, 5);
    init::constant_(lin.weight, 0.25);
    for (float v : lin.weight.to_vector<float>()) BOOST_TEST_REQUIRE(v == 0.25f);
    BOOST_TEST(lin.weight.requires_grad());  // still a leaf parameter, no history
    BOOST_TEST(lin.weight.is_leaf());
    init::ones_(lin.bias);
    for (float v : lin.bias.to_vector<float>()) BOOST_TEST_REQUIRE(v == 1.0f);
    init::zeros_(lin.bias);
    for (float v : lin.bias.to_vector<float>()) BOOST_TEST_REQUIRE(v == 0.0f);
    for (auto shape : {Tensor::Shape{5, 7}, Tensor::Shape{7, 5}}) {
      Tensor e = Tensor::empty(shape, DType::f32);
      init::eye_(e);
      auto v = e.to_vector<float>();
      for (int64_t i = 0; i < shape[0]; ++i)
        for (int64_t j = 0; j < shape[1]; ++j) BOOST_TEST_REQUIRE(v[i * shape[1] + j] == (i == j ? 1.0f : 0.0f));
    }
    init::eye_(lin.weight);
    BOOST_TEST(lin.weight.to_vector<float>()[8] == 1.0f);  // [1][1]
    Tensor three = ops::zeros({2, 2, 2});
    tt::check_throws([&] { init::eye_(three); }, {"eye_", "only tensors with 2 dimensions"}, "eye_ of 3-D");
    // A wrong fan in Linear's own init would move its bound: weights stay within 1/sqrt(7).
    Generator gen(2);
    nn::Linear fresh(7, 400, true, gen);
    Moments m = moments(fresh.weight);
    BOOST_TEST((m.max <= 1 / std::sqrt(7.0) && m.max > 0.95 / std::sqrt(7.0)));
  });
}

BOOST_AUTO_TEST_CASE(orthogonal) {
  tt::for_each_backend([&](const tt::Backend&) {
    Generator gen(6);
    for (auto shape : {Tensor::Shape{6, 10}, Tensor::Shape{10, 6}, Tensor::Shape{4, 3, 2}, Tensor::Shape{7, 7}}) {
      BOOST_TEST_CONTEXT("shape [" << shape[0] << ", " << shape[1] << ", ...]") {
        Tensor t = Tensor::empty(shape, DType::f32);
        t.requires_grad_(true);
        init::orthogonal_(t, 2.0, gen);
        int64_t rows = shape[0], cols = t.numel() / rows;
        auto v = t.to_vector<float>();
        // The smaller side is orthonormal (times gain^2 = 4): rows when rows <= cols, else columns.
        bool by_rows = rows <= cols;
        int64_t k = by_rows ? rows : cols, len = by_rows ? cols : rows;
        double worst = 0;
        for (int64_t a = 0; a < k; ++a)
          for (int64_t b = 0; b < k; ++b) {
            double dot = 0;
            for (int64_t i = 0; i < len; ++i)
              dot += by_rows ? double(v[a * cols + i]) * v[b * cols + i] : double(v[i * cols + a]) * v[i * cols + b];
            worst = std::max(worst, std::abs(dot - (a == b ? 4.0 : 0.0)));
          }
        BOOST_TEST(worst < 1e-5);
      }
    }
    Tensor a = Tensor::empty({5, 8}, DType::f32), b = Tensor::empty({5, 8}, DType::f32);
    Generator ga(3), gb(3);
    init::orthogonal_(a, 1.0, ga);
    init::orthogonal_(b, 1.0, gb);
    BOOST_TEST(a.to_vector<float>() == b.to_vector<float>());
    Tensor one = ops::zeros({4});
    tt::check_throws([&] { init::orthogonal_(one); }, {"orthogonal_", "2 or more dimensions"}, "orthogonal_ of 1-D");
  });
}

BOOST_AUTO_TEST_SUITE_END()
