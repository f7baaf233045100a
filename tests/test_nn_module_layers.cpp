// The argument-light modules (issue 30 item 2): one module per activation against float64 host
// references of PyTorch's definitions (and a gradcheck through each module), Softmax/LogSoftmax,
// Identity, Flatten/Unflatten, Dropout2d's channel-wise mask, and their argument errors.
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/gradcheck.h"
#include "nn/module.h"
#include "test_support.h"

namespace tt = tritium::test;
using tritium::Tensor;
using namespace tritium;

namespace {

double softplus_ref(double x, double beta, double threshold) {
  return beta * x > threshold ? x : std::log1p(std::exp(beta * x)) / beta;
}

// check_close on a tensor's f32 values (every element written, rel error under tol).
void check_tensor(const Tensor& t, const std::vector<double>& ref, double tol, const std::string& what) {
  auto v = t.to_vector<float>();
  tt::host_vector<float> out(v.begin(), v.end());
  tt::check_close<float>(out, ref, tol, what);
}

struct Case {
  std::shared_ptr<nn::Module> module;
  std::function<double(double)> reference;
};

std::vector<Case> activation_cases() {
  const double selu_alpha = 1.6732632423543772848170429916717, selu_scale = 1.0507009873554804934193349852946;
  auto relu6 = [](double x) { return std::min(std::max(x, 0.0), 6.0); };
  return {
      {std::make_shared<nn::SiLU>(), [](double x) { return x / (1 + std::exp(-x)); }},
      {std::make_shared<nn::Tanh>(), [](double x) { return std::tanh(x); }},
      {std::make_shared<nn::Sigmoid>(), [](double x) { return 1 / (1 + std::exp(-x)); }},
      {std::make_shared<nn::Mish>(), [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }},
      {std::make_shared<nn::Hardswish>(), [=](double x) { return x * relu6(x + 3) / 6; }},
      {std::make_shared<nn::Hardsigmoid>(), [=](double x) { return relu6(x + 3) / 6; }},
      {std::make_shared<nn::ReLU6>(), relu6},
      {std::make_shared<nn::SELU>(), [=](double x) { return selu_scale * (x > 0 ? x : selu_alpha * std::expm1(x)); }},
      {std::make_shared<nn::Softsign>(), [](double x) { return x / (1 + std::abs(x)); }},
      {std::make_shared<nn::Tanhshrink>(), [](double x) { return x - std::tanh(x); }},
      {std::make_shared<nn::GELU>(), [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {std::make_shared<nn::GELU>("tanh"),
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }},
      {std::make_shared<nn::LeakyReLU>(0.2), [](double x) { return x > 0 ? x : 0.2 * x; }},
      {std::make_shared<nn::ELU>(1.5), [](double x) { return x > 0 ? x : 1.5 * std::expm1(x); }},
      {std::make_shared<nn::CELU>(0.5), [](double x) { return std::max(0.0, x) + std::min(0.0, 0.5 * std::expm1(x / 0.5)); }},
      {std::make_shared<nn::Softplus>(2.0, 5.0), [](double x) { return softplus_ref(x, 2.0, 5.0); }},
      {std::make_shared<nn::Hardtanh>(-0.5, 1.5), [](double x) { return std::min(std::max(x, -0.5), 1.5); }},
      {std::make_shared<nn::ReLU>(), [](double x) { return std::max(x, 0.0); }},
      {std::make_shared<nn::Identity>(), [](double x) { return x; }},
  };
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_module_layers)

BOOST_AUTO_TEST_CASE(activation_modules_match_references) {
  tt::for_each_backend([&](const tt::Backend&) {
    const int64_t rows = 7, cols = 93;  // 651 elements: no block multiple
    auto xv = tt::random_vector<float>(rows * cols, 11, -4.0, 4.0);
    Tensor x = Tensor::from_vector(std::vector<float>(xv.begin(), xv.end()), {rows, cols});
    for (auto& c : activation_cases()) {
      BOOST_TEST_CONTEXT(c.module->str()) {
        Tensor y = (*c.module)(x);
        BOOST_TEST((y.shape() == x.shape()));
        std::vector<double> ref;
        for (float v : xv) ref.push_back(c.reference(v));
        check_tensor(y, ref, 1e-5, c.module->str());
        // The gradient through the module, in f64 (PyTorch's gradcheck bounds).
        auto small = tt::random_vector<double>(13, 5, -2.5, 2.5);
        Tensor xd = Tensor::from_vector(std::vector<double>(small.begin(), small.end()), {13});
        xd.requires_grad_(true);
        BOOST_TEST(autograd::gradcheck([&](const autograd::tensor_list& in) { return (*c.module)(in[0]); }, {xd}));
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(activation_argument_errors) {
  tt::check_throws([] { nn::GELU("erf"); }, {"GELU", "none or tanh", "erf"}, "GELU approximate");
  tt::check_throws([] { nn::CELU(0.0); }, {"CELU", "alpha cannot be 0"}, "CELU alpha 0");
  tt::check_throws([] { nn::Hardtanh(2.0, 1.0); }, {"Hardtanh", "max_val (1)", "min_val (2)"}, "Hardtanh bounds");
}

BOOST_AUTO_TEST_CASE(softmax_modules) {
  tt::for_each_backend([&](const tt::Backend&) {
    const int64_t rows = 5, cols = 37;
    auto xv = tt::random_vector<float>(rows * cols, 3, -3.0, 3.0);
    Tensor x = Tensor::from_vector(std::vector<float>(xv.begin(), xv.end()), {rows, cols});
    for (int dim : {1, -1, 0}) {
      int d = dim < 0 ? dim + 2 : dim;
      std::vector<double> sm(xv.size()), lsm(xv.size());
      for (int64_t outer = 0; outer < (d == 1 ? rows : cols); ++outer) {
        auto at = [&](int64_t k) { return d == 1 ? outer * cols + k : k * cols + outer; };
        int64_t n = d == 1 ? cols : rows;
        double mx = -1e300, s = 0;
        for (int64_t k = 0; k < n; ++k) mx = std::max(mx, double(xv[at(k)]));
        for (int64_t k = 0; k < n; ++k) s += std::exp(xv[at(k)] - mx);
        for (int64_t k = 0; k < n; ++k) sm[at(k)] = std::exp(xv[at(k)] - mx) / s, lsm[at(k)] = xv[at(k)] - mx - std::log(s);
      }
      check_tensor(nn::Softmax(dim)(x), sm, 1e-5, "softmax");
      check_tensor(nn::LogSoftmax(dim)(x), lsm, 1e-5, "log_softmax");
    }
    tt::check_throws([&] { nn::Softmax(2)(x); }, {"2"}, "softmax dim out of range");
  });
}

BOOST_AUTO_TEST_CASE(flatten_unflatten) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto xv = tt::random_vector<float>(2 * 3 * 4 * 5, 9);
    Tensor x = Tensor::from_vector(std::vector<float>(xv.begin(), xv.end()), {2, 3, 4, 5});
    Tensor f = nn::Flatten()(x);
    BOOST_TEST((f.shape() == Tensor::Shape{2, 60}));
    BOOST_TEST(f.to_vector<float>() == std::vector<float>(xv.begin(), xv.end()));
    BOOST_TEST((nn::Flatten(1, 2)(x).shape() == Tensor::Shape{2, 12, 5}));
    BOOST_TEST((nn::Flatten(0, -1)(x).shape() == Tensor::Shape{120}));
    Tensor u = nn::Unflatten(1, {3, -1})(nn::Flatten(1, 2)(x));
    BOOST_TEST((u.shape() == Tensor::Shape{2, 3, 4, 5}));
    BOOST_TEST(u.to_vector<float>() == std::vector<float>(xv.begin(), xv.end()));
    tt::check_throws([&] { nn::Flatten(2, 1)(x); }, {"flatten"}, "start_dim after end_dim");
    tt::check_throws([&] { nn::Flatten(0, 5)(x); }, {"5"}, "end_dim out of range");
    tt::check_throws([&] { nn::Unflatten(1, {2, 2})(nn::Flatten(1, 2)(x)); }, {"unflatten", "12"}, "sizes that do not multiply up");
    tt::check_throws([] { nn::Unflatten(1, {}); }, {"Unflatten", "empty"}, "empty unflattened_size");
  });
}

BOOST_AUTO_TEST_CASE(dropout2d_drops_whole_channels) {
  tt::for_each_backend([&](const tt::Backend&) {
    const int64_t N = 40, C = 25, H = 2, W = 3;  // 1000 channels of 6 elements
    const double p = 0.3;
    auto xv = tt::random_vector<float>(N * C * H * W, 21, 0.5, 1.5);  // no zeros
    Tensor x = Tensor::from_vector(std::vector<float>(xv.begin(), xv.end()), {N, C, H, W});
    x.requires_grad_(true);
    Generator gen(5);
    nn::Dropout2d drop(p, gen);
    Tensor y = drop(x);
    auto yv = y.to_vector<float>();
    int kept = 0;
    bool channels_whole = true, values_right = true;
    for (int64_t ch = 0; ch < N * C; ++ch) {
      bool first_kept = yv[ch * H * W] != 0;
      kept += first_kept;
      for (int64_t k = 0; k < H * W; ++k) {
        size_t i = ch * H * W + k;
        bool is_kept = yv[i] != 0;
        channels_whole &= is_kept == first_kept;
        if (is_kept) values_right &= std::abs(yv[i] - xv[i] / (1 - p)) <= 1e-6 * std::abs(xv[i] / (1 - p));
      }
    }
    BOOST_TEST(channels_whole, "a channel is partly dropped");
    BOOST_TEST(values_right, "kept values are not x / (1 - p)");
    BOOST_TEST(std::abs(kept - 700) < 45, kept << " of 1000 channels kept, expected about 700");
    // The gradient is the same mask.
    tritium::sum(y).backward();
    auto g = x.grad().to_vector<float>();
    bool grad_right = true;
    for (size_t i = 0; i < g.size(); ++i) grad_right &= std::abs(g[i] - (yv[i] != 0 ? 1 / (1 - p) : 0.0)) < 1e-6;
    BOOST_TEST(grad_right);
    // 3-D input: one draw per (dim0, dim1) row, as PyTorch treats it.
    Tensor x3 = ops::ones({8, 16, 5});
    auto y3 = nn::Dropout2d(0.5, gen)(x3).to_vector<float>();
    bool rows_whole = true;
    for (int64_t r = 0; r < 8 * 16; ++r)
      for (int64_t k = 1; k < 5; ++k) rows_whole &= y3[r * 5 + k] == y3[r * 5];
    BOOST_TEST(rows_whole);
    // The same generator state gives the same mask; eval and p = 0 are the identity; p = 1 zeroes.
    Generator a(9), b(9);
    BOOST_TEST(nn::Dropout2d(p, a)(x).to_vector<float>() == nn::Dropout2d(p, b)(x).to_vector<float>());
    drop.eval();
    BOOST_TEST(drop(x).to_vector<float>() == std::vector<float>(xv.begin(), xv.end()));
    BOOST_TEST(nn::Dropout2d(0.0)(x).to_vector<float>() == std::vector<float>(xv.begin(), xv.end()));
    for (float v : nn::Dropout2d(1.0)(x).to_vector<float>()) BOOST_TEST_REQUIRE(v == 0.0f);
    tt::check_throws([] { nn::Dropout2d(1.5); }, {"Dropout2d", "between 0 and 1", "1.5"}, "p out of range");
    // F.dropout at p = 0 (training) or in eval mode returns its input, no kernel and no copy (as
    // PyTorch's at::dropout); a probability out of range is still an error.
    Generator g0(1);
    Tensor same = tritium::dropout(x, 0.0, true, g0);
    BOOST_TEST(same.data_ptr<float>() == x.data_ptr<float>());
    BOOST_TEST(tritium::dropout(x, 0.3, false, g0).data_ptr<float>() == x.data_ptr<float>());
    tt::check_throws([&] { tritium::dropout(x, -0.1, true, g0); }, {"dropout", "between 0 and 1", "-0.1"}, "F.dropout p < 0");
    tt::check_throws([] { nn::Dropout2d(0.5)(ops::ones({5})); }, {"dropout2d", "at least 2 dimensions"}, "1-D input");
    tt::check_throws([] { nn::Dropout2d(0.5)(ops::zeros({2, 2}, DType::i32)); }, {"dropout2d", "floating"}, "integer input");
  });
}

BOOST_AUTO_TEST_SUITE_END()
