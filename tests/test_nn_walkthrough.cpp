// The custom-module walk-through of docs/nn.md ("Writing a model of your own"), compiled and
// checked: a residual block of registered children (conv-bn-relu-conv-bn plus the input, relu)
// has PyTorch's state_dict keys, computes what a float64 host reference computes (eval mode,
// random weights and running statistics loaded through load_state_dict, a size that is no
// multiple of any block), round trips through nn::save / nn::load, and refuses another model's
// checkpoint with an error naming the missing keys.
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "nn/autograd.h"
#include "nn/conv.h"
#include "nn/functional.h"
#include "nn/module.h"
#include "nn/norm.h"
#include "nn/pooling.h"
#include "nn/serialize.h"
#include "ops/conv.h"
#include "test_support.h"

namespace tt = tritium::test;
namespace fs = std::filesystem;
using namespace tritium;

namespace {

// As in docs/nn.md.
struct ResidualBlock : nn::Module {
  ResidualBlock(int64_t channels, Generator& gen) {
    auto conv = [&] {
      return std::make_shared<nn::Conv2d>(channels, channels, 3, /*stride=*/1, /*padding=*/1, /*dilation=*/1,
                                          /*groups=*/1, /*bias=*/false, "zeros", gen);
    };
    conv1 = register_module("conv1", conv());
    bn1 = register_module("bn1", std::make_shared<nn::BatchNorm2d>(channels));
    conv2 = register_module("conv2", conv());
    bn2 = register_module("bn2", std::make_shared<nn::BatchNorm2d>(channels));
  }
  std::string type_name() const override { return "ResidualBlock"; }
  Tensor forward(const Tensor& x) override {
    Tensor y = relu((*bn1)((*conv1)(x)));
    return relu((*bn2)((*conv2)(y)) + x);
  }
  std::shared_ptr<nn::Conv2d> conv1, conv2;
  std::shared_ptr<nn::BatchNorm2d> bn1, bn2;
};

constexpr int64_t N = 2, C = 3, H = 5, W = 7;

// 3x3 convolution, padding 1, no bias, [N, C, H, W] in and out, in float64.
std::vector<double> conv3x3(const std::vector<double>& x, const std::vector<double>& w) {
  std::vector<double> y(N * C * H * W, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < C; ++o)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t di = 0; di < 3; ++di)
              for (int64_t dj = 0; dj < 3; ++dj) {
                int64_t ii = i + di - 1, jj = j + dj - 1;
                if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                acc += x[((n * C + c) * H + ii) * W + jj] * w[((o * C + c) * 3 + di) * 3 + dj];
              }
          y[((n * C + o) * H + i) * W + j] = acc;
        }
  return y;
}

// Eval-mode batch norm with the given statistics and affine parameters, optionally then relu.
struct BnParams { std::vector<double> weight, bias, mean, var; };
void batch_norm(std::vector<double>& x, const BnParams& p) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < H * W; ++k) {
        double& v = x[(n * C + c) * H * W + k];
        v = (v - p.mean[c]) / std::sqrt(p.var[c] + 1e-5) * p.weight[c] + p.bias[c];
      }
}

std::vector<double> to_doubles(const tt::host_vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

struct TempFile {
  fs::path path = fs::temp_directory_path() / ("tritium-walkthrough-" + std::to_string(::getpid()) + ".safetensors");
  ~TempFile() { fs::remove(path); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_walkthrough)

BOOST_AUTO_TEST_CASE(residual_block_keys_values_and_checkpoints) {
  // Exact fp32 convolutions for the 1e-4 check (a GPU's default is tf32, as PyTorch's).
  struct ExactConv {
    ExactConv() { ops::set_conv_allow_tf32(false); }
    ~ExactConv() { ops::set_conv_allow_tf32(true); }
  } exact;
  tt::for_each_backend([&](const tt::Backend&) {
    Generator gen(1);
    ResidualBlock block(C, gen);
    std::vector<std::string> keys;
    for (const auto& [name, t] : block.state_dict()) keys.push_back(name);
    // PyTorch's keys for the same module (BatchNorm2d's num_batches_tracked included).
    std::vector<std::string> want = {"conv1.weight",        "bn1.weight",      "bn1.bias",         "bn1.running_mean",
                                     "bn1.running_var",     "bn1.num_batches_tracked", "conv2.weight", "bn2.weight",
                                     "bn2.bias",            "bn2.running_mean", "bn2.running_var",  "bn2.num_batches_tracked"};
    BOOST_TEST(keys == want, boost::test_tools::per_element());

    // Random weights and statistics, loaded as a checkpoint would be.
    auto w1 = tt::random_vector<float>(C * C * 9, 11), w2 = tt::random_vector<float>(C * C * 9, 12);
    BnParams p1{to_doubles(tt::random_vector<float>(C, 13, 0.5, 1.5)), to_doubles(tt::random_vector<float>(C, 14)),
                to_doubles(tt::random_vector<float>(C, 15)), to_doubles(tt::random_vector<float>(C, 16, 0.5, 2))};
    BnParams p2{to_doubles(tt::random_vector<float>(C, 17, 0.5, 1.5)), to_doubles(tt::random_vector<float>(C, 18)),
                to_doubles(tt::random_vector<float>(C, 19)), to_doubles(tt::random_vector<float>(C, 20, 0.5, 2))};
    auto f32 = [](const std::vector<double>& v, Tensor::Shape shape) {
      return Tensor::from_vector(std::vector<float>(v.begin(), v.end()), shape);
    };
    std::map<std::string, Tensor> values = {{"conv1.weight", f32(to_doubles(w1), {C, C, 3, 3})},
                                            {"conv2.weight", f32(to_doubles(w2), {C, C, 3, 3})}};
    for (auto [prefix, p] : {std::pair{"bn1.", &p1}, std::pair{"bn2.", &p2}}) {
      values[std::string(prefix) + "weight"] = f32(p->weight, {C});
      values[std::string(prefix) + "bias"] = f32(p->bias, {C});
      values[std::string(prefix) + "running_mean"] = f32(p->mean, {C});
      values[std::string(prefix) + "running_var"] = f32(p->var, {C});
    }
    nn::StateDict loaded;  // the block's own order; the step counters kept
    for (const auto& [name, t] : block.state_dict()) loaded.insert(name, values.contains(name) ? values.at(name) : t);
    block.load_state_dict(loaded);
    block.eval();

    auto x_host = tt::random_vector<float>(N * C * H * W, 21);
    Tensor x = Tensor::from_vector(std::vector<float>(x_host.begin(), x_host.end()), {N, C, H, W});
    std::vector<float> got;
    {
      nn::NoGradGuard no_grad;
      got = block(x).to_vector<float>();
    }
    std::vector<double> xd = to_doubles(x_host);
    std::vector<double> y = conv3x3(xd, to_doubles(w1));
    batch_norm(y, p1);
    for (double& v : y) v = std::max(v, 0.0);
    y = conv3x3(y, to_doubles(w2));
    batch_norm(y, p2);
    for (size_t i = 0; i < y.size(); ++i) y[i] = std::max(y[i] + xd[i], 0.0);
    BOOST_REQUIRE_EQUAL(got.size(), y.size());
    for (size_t i = 0; i < y.size(); ++i) BOOST_TEST(got[i] == y[i], boost::test_tools::tolerance(1e-4));

    // Save, load into a block of other weights: the same outputs.
    TempFile file;
    nn::save(block, file.path.string());
    Generator other_gen(2);
    ResidualBlock copy(C, other_gen);
    nn::load(copy, file.path.string());
    copy.eval();
    {
      nn::NoGradGuard no_grad;
      BOOST_TEST(copy(x).to_vector<float>() == got, boost::test_tools::per_element());
    }

    // A checkpoint of another model: an error naming what is missing.
    nn::save(nn::Linear(3, 3, true, gen), file.path.string());
    BOOST_CHECK_EXCEPTION(nn::load(copy, file.path.string()), Error, [](const Error& e) {
      std::string m = e.what();
      return m.find("conv1.weight") != std::string::npos && m.find("Missing") != std::string::npos;
    });
  });
}

// Step 3 of the walk-through: the block composed in a named Sequential; keys nest with dots and
// a batch of images becomes [N, 10] logits.
BOOST_AUTO_TEST_CASE(composed_network_keys_and_shape) {
  tt::for_each_backend([&](const tt::Backend&) {
    Generator gen(0);
    nn::Sequential net(std::vector<nn::NamedModule>{
        {"stem", std::make_shared<nn::Conv2d>(1, 16, 3, 1, 1, 1, 1, true, "zeros", gen)},
        {"block", std::make_shared<ResidualBlock>(16, gen)},
        {"pool", std::make_shared<nn::AdaptiveAvgPool2d>(Ints{1, 1})},
        {"flatten", std::make_shared<nn::Flatten>()},
        {"fc", std::make_shared<nn::Linear>(16, 10, true, gen)}});
    std::vector<std::string> keys = net.state_dict().keys();
    BOOST_REQUIRE_EQUAL(keys.size(), 2u + 12u + 2u);
    BOOST_TEST(keys[0] == "stem.weight");
    BOOST_TEST(keys[2] == "block.conv1.weight");
    BOOST_TEST(keys[5] == "block.bn1.running_mean");
    BOOST_TEST(keys[15] == "fc.bias");
    BOOST_TEST(net.str().find("(block): ResidualBlock(") != std::string::npos);
    Tensor x = Tensor::from_vector(tt::random_vector<float>(3 * 1 * 9 * 11, 5), {3, 1, 9, 11});
    Tensor y = net(x);
    BOOST_TEST(y.shape() == (Tensor::Shape{3, 10}), boost::test_tools::per_element());
    sum(y).backward();  // the gradient reaches the first layer through the residual block
    BOOST_TEST(net.at<nn::Conv2d>(0).weight.grad().defined());
  });
}

BOOST_AUTO_TEST_SUITE_END()
