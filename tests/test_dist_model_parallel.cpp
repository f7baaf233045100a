// Model parallelism (issue 32 item 4, nn/pipeline.h) on every backend: a two-stage model split by
// hand over two devices (nn::to_device between them) and GPipe's pipeline of micro-batches over
// the same split give the gradients of a float64 host reference of the whole model, and those of
// the unsplit model; the pipeline issues its stages in GPipe's clock order; bad arguments are
// clear errors. Stages run on cuda:0 and cuda:1 where two GPUs exist, on two streams of the one
// device otherwise (on the CPU: the correctness of the split and of micro-batch accumulation).
#include <boost/test/unit_test.hpp>

#include "test_support.h"

#include <cmath>

#include "common/error.h"
#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/loss.h"
#include "nn/module.h"
#include "nn/pipeline.h"
#include "runtime/cuda_device.h"

using namespace tritium;
using runtime::Tensor;
namespace tt = tritium::test;

namespace {

constexpr int64_t kIn = 7, kHidden = 16, kOut = 5;

// Stage 0: tanh(W1 x + b1); stage 1: W2 h + b2. `log` (if set) records (stage, micro-batch) per call.
class Stage : public nn::Module {
 public:
  Stage(int index, int64_t in, int64_t out, Generator& gen, std::vector<std::pair<int, int>>* log = nullptr)
      : index_(index), log_(log) {
    linear = register_module("linear", std::make_shared<nn::Linear>(in, out, true, gen));
  }
  Tensor forward(const Tensor& x) override {
    if (log_) log_->push_back({index_, calls_++});
    Tensor y = (*linear)(x);
    return index_ == 0 ? tritium::tanh(y) : y;
  }
  std::shared_ptr<nn::Linear> linear;

 private:
  int index_;
  std::vector<std::pair<int, int>>* log_;
  int calls_ = 0;
};

// The two devices of the split: cuda:0 and cuda:1 with two GPUs, else the backend's device twice.
std::pair<Device, Device> stage_devices(const tt::Backend& be) {
  if (be.device.is_cuda() && runtime::cuda::device_count() > 1) return {Device::cuda(0), Device::cuda(1)};
  return {be.device, be.device};
}

struct Reference {
  std::vector<double> w1, b1, w2, b2;
};

// Gradients of mean((W2 tanh(W1 x + b1) + b2 - t)^2) in float64 on the host.
Reference reference_gradients(const std::vector<float>& x, const std::vector<float>& t, const std::vector<float>& w1,
                              const std::vector<float>& b1, const std::vector<float>& w2, const std::vector<float>& b2,
                              int64_t n) {
  Reference g{std::vector<double>(w1.size()), std::vector<double>(b1.size()), std::vector<double>(w2.size()),
              std::vector<double>(b2.size())};
  const double scale = 2.0 / static_cast<double>(n * kOut);
  for (int64_t r = 0; r < n; ++r) {
    std::vector<double> h(kHidden), dh(kHidden, 0.0);
    for (int64_t j = 0; j < kHidden; ++j) {
      double z = b1[j];
      for (int64_t i = 0; i < kIn; ++i) z += static_cast<double>(w1[j * kIn + i]) * x[r * kIn + i];
      h[j] = std::tanh(z);
    }
    for (int64_t k = 0; k < kOut; ++k) {
      double y = b2[k];
      for (int64_t j = 0; j < kHidden; ++j) y += static_cast<double>(w2[k * kHidden + j]) * h[j];
      const double dy = scale * (y - t[r * kOut + k]);
      g.b2[k] += dy;
      for (int64_t j = 0; j < kHidden; ++j) g.w2[k * kHidden + j] += dy * h[j], dh[j] += dy * w2[k * kHidden + j];
    }
    for (int64_t j = 0; j < kHidden; ++j) {
      const double dz = dh[j] * (1 - h[j] * h[j]);
      g.b1[j] += dz;
      for (int64_t i = 0; i < kIn; ++i) g.w1[j * kIn + i] += dz * x[r * kIn + i];
    }
  }
  return g;
}

double rel_error(const Tensor& got, const std::vector<double>& want) {
  if (!got.defined()) return INFINITY;
  std::vector<float> v = got.to(Device::cpu()).to_vector<float>();
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(v[i])) return INFINITY;
    num += (v[i] - want[i]) * (v[i] - want[i]), den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

// A split model (two stages on their devices), its data and the float64 reference.
struct SplitCase {
  std::shared_ptr<Stage> first, second;
  Tensor x, t;
  Reference ref;
  SplitCase(Device d0, Device d1, int64_t n, std::vector<std::pair<int, int>>* log = nullptr) {
    Generator gen(11);
    first = std::make_shared<Stage>(0, kIn, kHidden, gen, log);
    second = std::make_shared<Stage>(1, kHidden, kOut, gen, log);
    first->to(d0), second->to(d1);
    auto xs = tt::random_vector<float>(static_cast<size_t>(n * kIn), 1), ts = tt::random_vector<float>(static_cast<size_t>(n * kOut), 2);
    x = Tensor::from_vector(xs, {n, kIn}, d0);
    t = Tensor::from_vector(ts, {n, kOut}, d1);
    auto host = [](const Tensor& p) { return p.to(Device::cpu()).to_vector<float>(); };
    ref = reference_gradients(xs, ts, host(first->linear->weight), host(first->linear->bias),
                              host(second->linear->weight), host(second->linear->bias), n);
  }
  std::string check(const char* what) const {
    const double e = std::max({rel_error(first->linear->weight.grad(), ref.w1), rel_error(first->linear->bias.grad(), ref.b1),
                               rel_error(second->linear->weight.grad(), ref.w2),
                               rel_error(second->linear->bias.grad(), ref.b2)});
    return e < 1e-5 ? "" : fmt::format("{}: gradients' relative error {}", what, e);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(test_dist_model_parallel)

BOOST_AUTO_TEST_CASE(a_model_split_over_two_devices_has_the_whole_models_gradients) {
  tt::for_each_backend([](const tt::Backend& be) {
    auto [d0, d1] = stage_devices(be);
    SplitCase c(d0, d1, 13);
    Tensor y = (*c.second)(nn::to_device((*c.first)(c.x), d1));
    BOOST_TEST((y.device() == d1));
    tritium::mse_loss(y, c.t).backward();
    std::string failure = c.check("split by hand");
    BOOST_TEST(failure.empty(), failure);
    BOOST_TEST((c.first->linear->weight.grad().device() == d0));  // the gradient came back across
  });
}

BOOST_AUTO_TEST_CASE(gpipe_micro_batches_give_the_full_batch_gradients) {
  tt::for_each_backend([](const tt::Backend& be) {
    auto [d0, d1] = stage_devices(be);
    // 13 rows in 4 micro-batches: 4, 4, 4 and 1 (torch.chunk's split).
    for (int64_t chunks : {1, 4, 13, 20}) {
      BOOST_TEST_CONTEXT("chunks " << chunks) {
        SplitCase c(d0, d1, 13);
        nn::Pipeline pipe({{c.first, d0}, {c.second, d1}}, chunks);
        Tensor y = pipe.forward(c.x);
        BOOST_TEST((y.device() == d1));
        BOOST_TEST((y.shape() == std::vector<int64_t>{13, kOut}));
        tritium::mse_loss(y, c.t).backward();
        std::string failure = c.check("pipeline, one loss");
        BOOST_TEST(failure.empty(), failure);
      }
    }
    // A loss per micro-batch (sums over the batch's elements): the gradients accumulate over them.
    SplitCase c(d0, d1, 13);
    nn::Pipeline pipe({{c.first, d0}, {c.second, d1}}, 4);
    std::vector<Tensor> outs = pipe.forward_micro_batches(c.x);
    BOOST_TEST(outs.size() == 4u);
    int64_t row = 0;
    Tensor total;
    for (const Tensor& o : outs) {
      Tensor target = c.t.slice(0, row, row + o.size(0));
      row += o.size(0);
      Tensor l = tritium::mse_loss(o, target, "sum");
      total = total.defined() ? total + l : l;
    }
    BOOST_TEST(row == 13);
    (total / static_cast<double>(13 * kOut)).backward();
    std::string failure = c.check("pipeline, a loss per micro-batch");
    BOOST_TEST(failure.empty(), failure);
  });
}

BOOST_AUTO_TEST_CASE(the_pipeline_runs_in_gpipe_clock_order) {
  tt::for_each_backend([](const tt::Backend& be) {
    auto [d0, d1] = stage_devices(be);
    std::vector<std::pair<int, int>> log;
    SplitCase c(d0, d1, 6, &log);
    nn::Pipeline pipe({{c.first, d0}, {c.second, d1}}, 3);
    pipe.forward(c.x);
    // Clock t: stage 0 on micro-batch t, then stage 1 on micro-batch t - 1.
    const std::vector<std::pair<int, int>> want = {{0, 0}, {0, 1}, {1, 0}, {0, 2}, {1, 1}, {1, 2}};
    BOOST_TEST((log == want));
  });
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_clear_errors) {
  tt::for_each_backend([](const tt::Backend& be) {
    Generator gen(3);
    auto stage = std::make_shared<Stage>(1, kIn, kOut, gen);
    stage->to(be.device);
    tt::check_throws([] { nn::Pipeline({}, 2); }, {"Pipeline: no stage given"});
    tt::check_throws([&] { nn::Pipeline({{stage, be.device}}, 0); }, {"chunks must be at least 1, got 0"});
    tt::check_throws([&] { nn::Pipeline({{stage, be.device}, {nullptr, be.device}}, 2); }, {"stage 1 has a null module"});
    nn::Pipeline pipe({{stage, be.device}}, 2);
    tt::check_throws([&] { pipe.forward(Tensor::from_vector<float>({1.f}, {}, be.device)); }, {"has no rows to split"});
    tt::check_throws([&] { pipe.forward(Tensor()); }, {"Pipeline::forward: the input is undefined"});
    tt::check_throws([&] { nn::to_device(Tensor(), be.device); }, {"to_device: the tensor is undefined"});
  });
}

BOOST_AUTO_TEST_SUITE_END()
