// nn::Module, Linear, ReLU, Dropout, Sequential and the optimisers, against float64 host
// references of PyTorch's definitions. Every test runs on every backend (tt::for_each_backend):
// parameters, inputs and optimiser state live on the backend's device.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "test_support.h"

namespace tt = tritium::test;
using tritium::Tensor;
using namespace tritium;

namespace {

std::vector<double> to_double(const Tensor& t) {
  auto v = t.to_vector<float>();
  return std::vector<double>(v.begin(), v.end());
}

Tensor f32_tensor(const std::vector<double>& values, Tensor::Shape shape) {
  return Tensor::from_vector(std::vector<float>(values.begin(), values.end()), std::move(shape));
}

// Random values in [lo, hi] as doubles that are exactly representable in f32.
std::vector<double> random_f32(size_t n, uint32_t seed, double lo = -1, double hi = 1) {
  auto v = tt::random_vector<float>(n, seed, lo, hi);
  return std::vector<double>(v.begin(), v.end());
}

// A parameter (f32 leaf that requires grad) holding `values`.
Tensor parameter(const std::vector<double>& values) {
  Tensor p = f32_tensor(values, {static_cast<int64_t>(values.size())});
  p.requires_grad_(true);
  return p;
}

// Sets p.grad directly (the optimiser tests do not depend on the autograd engine).
void set_grad(Tensor& p, const std::vector<double>& g) { p.autograd()->grad = f32_tensor(g, p.shape()); }

// A module with a parameter and a child, to test registration and its errors.
struct Custom : nn::Module {
  Custom() {
    scale = register_parameter("scale", Tensor::from_vector(std::vector<float>{2.0f}));
    inner = std::make_shared<nn::Sequential>(nn::Linear(3, 2), nn::Dropout(0.5));
    register_module("inner", inner);
  }
  void register_again() { register_parameter("scale", Tensor::from_vector(std::vector<float>{1.0f})); }
  void register_dotted() { register_parameter("a.b", Tensor::from_vector(std::vector<float>{1.0f})); }
  void register_null() { register_module("child", nullptr); }
  Tensor scale;
  std::shared_ptr<nn::Sequential> inner;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn)

BOOST_AUTO_TEST_CASE(linear_init_bounds_and_shapes) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Generator gen(7);
    nn::Linear lin(300, 40, true, gen);
    BOOST_TEST((lin.weight.shape() == Tensor::Shape{40, 300}));
    BOOST_TEST((lin.bias.shape() == Tensor::Shape{40}));
    BOOST_TEST((lin.weight.dtype() == DType::f32));
    BOOST_TEST(lin.weight.requires_grad());
    BOOST_TEST(lin.weight.is_leaf());
    BOOST_TEST(lin.bias.requires_grad());
    BOOST_TEST((lin.weight.device() == be.device));
    BOOST_TEST((lin.bias.device() == be.device));
    const double bound = 1.0 / std::sqrt(300.0);
    for (const Tensor& t : {lin.weight, lin.bias}) {
      auto v = to_double(t);
      double lo = 1e9, hi = -1e9, sum = 0, sq = 0;
      for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x), sum += x, sq += x * x;
      BOOST_TEST(std::isfinite(sum), "a NaN or inf parameter (min and max skip NaN)");
      BOOST_TEST(lo >= -bound);
      BOOST_TEST(hi <= bound);
      BOOST_TEST(lo < -0.8 * bound);  // spread over the whole interval
      BOOST_TEST(hi > 0.8 * bound);
      if (v.size() > 1000) {  // U(-b, b): mean 0, variance b^2 / 3
        double mean = sum / v.size(), var = sq / v.size() - mean * mean;
        BOOST_TEST(std::abs(mean) < 0.02 * bound);
        BOOST_TEST(std::abs(var / (bound * bound / 3) - 1) < 0.02);
      }
    }
    // The same seed gives the same parameters; another seed does not.
    Generator gen_a(7), gen_b(8);
    nn::Linear same(300, 40, true, gen_a), other(300, 40, true, gen_b);
    BOOST_TEST(same.weight.to_vector<float>() == lin.weight.to_vector<float>());
    BOOST_TEST(same.bias.to_vector<float>() == lin.bias.to_vector<float>());
    BOOST_TEST(other.weight.to_vector<float>() != lin.weight.to_vector<float>());

    nn::Linear no_bias(5, 3, false, gen);
    BOOST_TEST(!no_bias.bias.defined());
    BOOST_TEST(no_bias.named_parameters().size() == 1u);
    BOOST_TEST(no_bias.str() == "Linear(in_features=5, out_features=3, bias=False)");
  });
}

BOOST_AUTO_TEST_CASE(named_parameters_and_children) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Generator gen(1);
    nn::Sequential model(nn::Linear(4, 8, true, gen), nn::ReLU(), nn::Linear(8, 2, true, gen));
    std::vector<std::string> names;
    for (auto& [name, p] : model.named_parameters()) names.push_back(name);
    BOOST_TEST(names == (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}),
               boost::test_tools::per_element());
    BOOST_TEST(model.parameters().size() == 4u);
    BOOST_TEST(model.children().size() == 3u);
    BOOST_TEST(model.size() == 3u);
    BOOST_TEST(model.named_children()[1].first == "1");
    // A parameter handle from the module shares storage with the Linear's member.
    auto& first = dynamic_cast<nn::Linear&>(model[0]);
    BOOST_TEST(model.parameters()[0].raw_data() == first.weight.raw_data());  // addresses only

    Custom custom;
    names.clear();
    for (auto& [name, p] : custom.named_parameters()) names.push_back(name);
    BOOST_TEST(names == (std::vector<std::string>{"scale", "inner.0.weight", "inner.0.bias"}),
               boost::test_tools::per_element());
    for (auto& [name, p] : custom.named_parameters()) BOOST_TEST((p.device() == be.device), name);

    tt::check_throws([&] { custom.register_again(); }, {"scale", "already"}, "duplicate name");
    tt::check_throws([&] { custom.register_dotted(); }, {"a.b", "'.'"}, "dotted name");
    tt::check_throws([&] { custom.register_null(); }, {"child", "null"}, "null module");
    tt::check_throws([&] { (void)model[3]; }, {"index 3", "3 modules"}, "Sequential index");
    tt::check_throws([&] { nn::Module m; m.forward(Tensor()); }, {"no forward"}, "base forward");
  });
}

BOOST_AUTO_TEST_CASE(train_eval_propagates) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Custom custom;
    BOOST_TEST(custom.is_training());
    custom.eval();
    BOOST_TEST(!custom.is_training());
    BOOST_TEST(!custom.inner->is_training());
    BOOST_TEST(!(*custom.inner)[1].is_training());
    custom.train();
    BOOST_TEST((*custom.inner)[1].is_training());
    custom.train(false);
    BOOST_TEST(!(*custom.inner)[0].is_training());

    // Dropout: identity in eval mode; in training mode zeroes about p of the elements, scales the rest.
    Generator gen(3);
    nn::Dropout drop(0.5, gen);
    auto xv = random_f32(4000, 11, 0.5, 1.5);
    Tensor x = f32_tensor(xv, {40, 100});
    drop.eval();
    BOOST_TEST(drop(x).to_vector<float>() == x.to_vector<float>());
    drop.train();
    Tensor dropped = drop(x);
    BOOST_TEST((dropped.device() == be.device));
    auto y = dropped.to_vector<float>();
    size_t zeros = 0;
    bool scaled = true;
    for (size_t i = 0; i < y.size(); ++i) {
      if (y[i] == 0) ++zeros;
      else scaled = scaled && std::abs(y[i] - 2 * xv[i]) <= 1e-6 * std::abs(2 * xv[i]);
    }
    BOOST_TEST(scaled);
    BOOST_TEST(zeros > 1700u);
    BOOST_TEST(zeros < 2300u);
    tt::check_throws([] { nn::Dropout(1.5); }, {"Dropout", "1.5"}, "bad p");
  });
}

// y = relu(x W1^T + b1) W2^T + b2 against float64, and the gradients of sum(y * c).
BOOST_AUTO_TEST_CASE(sequential_forward_backward_against_float64) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int64_t N = 7, I = 13, H = 9, O = 5;
    Generator gen(5);
    nn::Sequential model(nn::Linear(I, H, true, gen), nn::ReLU(), nn::Linear(H, O, true, gen));
    auto& l1 = dynamic_cast<nn::Linear&>(model[0]);
    auto& l2 = dynamic_cast<nn::Linear&>(model[2]);
    auto W1 = to_double(l1.weight), b1 = to_double(l1.bias), W2 = to_double(l2.weight), b2 = to_double(l2.bias);
    auto x = random_f32(N * I, 21, -2, 2), c = random_f32(N * O, 22);

    std::vector<double> z(N * H), h(N * H), y(N * O);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t j = 0; j < H; ++j) {
        double s = b1[j];
        for (int64_t i = 0; i < I; ++i) s += x[n * I + i] * W1[j * I + i];
        z[n * H + j] = s, h[n * H + j] = std::max(s, 0.0);
      }
      for (int64_t o = 0; o < O; ++o) {
        double s = b2[o];
        for (int64_t j = 0; j < H; ++j) s += h[n * H + j] * W2[o * H + j];
        y[n * O + o] = s;
      }
    }
    Tensor out = model(f32_tensor(x, {N, I}));
    BOOST_TEST((out.shape() == Tensor::Shape{N, O}));
    BOOST_TEST((out.device() == be.device));
    tt::check_close<float>(out.to_vector<float>(), y, 1e-5, "forward");

    // d/dy = c; dW2 = c^T h, db2 = sum_n c, dh = c W2, dz = dh * (z > 0), dW1 = dz^T x, db1 = sum_n dz.
    Tensor loss = tritium::sum(out * f32_tensor(c, {N, O}));
    loss.backward();
    std::vector<double> dW2(O * H, 0), db2(O, 0), dW1(H * I, 0), db1(H, 0);
    for (int64_t n = 0; n < N; ++n) {
      std::vector<double> dz(H, 0);
      for (int64_t o = 0; o < O; ++o) {
        db2[o] += c[n * O + o];
        for (int64_t j = 0; j < H; ++j) {
          dW2[o * H + j] += c[n * O + o] * h[n * H + j];
          dz[j] += c[n * O + o] * W2[o * H + j];
        }
      }
      for (int64_t j = 0; j < H; ++j) {
        if (z[n * H + j] <= 0) dz[j] = 0;
        db1[j] += dz[j];
        for (int64_t i = 0; i < I; ++i) dW1[j * I + i] += dz[j] * x[n * I + i];
      }
    }
    tt::check_close<float>(l2.weight.grad().to_vector<float>(), dW2, 1e-5, "grad W2");
    tt::check_close<float>(l2.bias.grad().to_vector<float>(), db2, 1e-5, "grad b2");
    tt::check_close<float>(l1.weight.grad().to_vector<float>(), dW1, 1e-5, "grad W1");
    tt::check_close<float>(l1.bias.grad().to_vector<float>(), db1, 1e-5, "grad b1");
    for (auto& [name, p] : model.named_parameters()) BOOST_TEST((p.grad().device() == be.device), name);

    // zero_grad drops every gradient.
    model.zero_grad();
    for (auto& p : model.parameters()) BOOST_TEST(!p.grad().defined());

    tt::check_throws([&] { model(f32_tensor(x, {N, I}).t()); }, {"Linear", "in_features = 13"},
                     "wrong input size");
  });
}

BOOST_AUTO_TEST_CASE(sgd_against_float64) {
  tt::for_each_backend([&](const tt::Backend& be) {
    struct Config {
      double lr, momentum, weight_decay, dampening;
      bool nesterov;
    };
    const Config configs[] = {
        {0.1, 0, 0, 0, false},      {0.05, 0, 0.1, 0, false},  {0.1, 0.9, 0, 0, false},
        {0.1, 0.9, 0.01, 0.2, false}, {0.05, 0.8, 0.05, 0, true},
    };
    const size_t n = 2085;  // not a multiple of the block
    for (const Config& cfg : configs) {
      BOOST_TEST_CONTEXT("lr " << cfg.lr << " momentum " << cfg.momentum << " wd " << cfg.weight_decay
                               << " dampening " << cfg.dampening << " nesterov " << cfg.nesterov) {
        auto p_ref = random_f32(n, 31);
        std::vector<double> buf(n, 0);
        Tensor p = parameter(p_ref);
        nn::SGD opt({p}, cfg.lr, cfg.momentum, cfg.weight_decay, cfg.dampening, cfg.nesterov);
        for (int step = 0; step < 5; ++step) {
          auto g = random_f32(n, 100 + step, -2, 2);
          set_grad(p, g);
          opt.step();
          for (size_t i = 0; i < n; ++i) {  // torch.optim.SGD
            double d = g[i] + cfg.weight_decay * p_ref[i];
            if (cfg.momentum != 0) {
              buf[i] = step == 0 ? d : cfg.momentum * buf[i] + (1 - cfg.dampening) * d;
              d = cfg.nesterov ? d + cfg.momentum * buf[i] : buf[i];
            }
            p_ref[i] -= cfg.lr * d;
          }
          tt::check_close<float>(p.to_vector<float>(), p_ref, 1e-6, "parameter after step " + std::to_string(step));
          if (cfg.momentum != 0) {
            tt::check_close<float>(opt.momentum_buffer(0).to_vector<float>(), buf, 1e-6, "momentum buffer");
            BOOST_TEST((opt.momentum_buffer(0).device() == be.device));
          }
          BOOST_TEST((p.device() == be.device));
        }
      }
    }
    Tensor q = parameter({1.0, 2.0});
    tt::check_throws([&] { nn::SGD({q}, 0.1, 0, 0, 0, true); }, {"nesterov"}, "nesterov without momentum");
    tt::check_throws([&] { nn::SGD({q}, -1); }, {"learning rate"}, "negative lr");
  });
}

BOOST_AUTO_TEST_CASE(adamw_against_float64) {
  tt::for_each_backend([&](const tt::Backend& be) {
    struct Config {
      double lr, beta1, beta2, eps, weight_decay;
    };
    const Config configs[] = {
        {1e-3, 0.9, 0.999, 1e-8, 1e-2}, {1e-2, 0.8, 0.99, 1e-6, 0.1}, {5e-3, 0.9, 0.999, 1e-8, 0}};
    const size_t n = 3001;
    for (const Config& cfg : configs) {
      BOOST_TEST_CONTEXT("lr " << cfg.lr << " betas " << cfg.beta1 << "," << cfg.beta2 << " eps " << cfg.eps
                               << " wd " << cfg.weight_decay) {
        auto p_ref = random_f32(n, 41);
        std::vector<double> m(n, 0), v(n, 0);
        Tensor p = parameter(p_ref);
        nn::AdamW opt({p}, cfg.lr, {cfg.beta1, cfg.beta2}, cfg.eps, cfg.weight_decay);
        for (int step = 1; step <= 6; ++step) {
          auto g = random_f32(n, 200 + step, -3, 3);
          set_grad(p, g);
          opt.step();
          double bc1 = 1 - std::pow(cfg.beta1, step), bc2 = 1 - std::pow(cfg.beta2, step);
          for (size_t i = 0; i < n; ++i) {  // torch.optim.AdamW (amsgrad = False)
            p_ref[i] *= 1 - cfg.lr * cfg.weight_decay;
            m[i] = cfg.beta1 * m[i] + (1 - cfg.beta1) * g[i];
            v[i] = cfg.beta2 * v[i] + (1 - cfg.beta2) * g[i] * g[i];
            p_ref[i] -= cfg.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + cfg.eps);
          }
          BOOST_TEST(opt.step_count(0) == step);
          tt::check_close<float>(p.to_vector<float>(), p_ref, 1e-6, "parameter after step " + std::to_string(step));
          tt::check_close<float>(opt.exp_avg(0).to_vector<float>(), m, 1e-6, "exp_avg");
          tt::check_close<float>(opt.exp_avg_sq(0).to_vector<float>(), v, 1e-6, "exp_avg_sq");
          BOOST_TEST((opt.exp_avg(0).device() == be.device));
          BOOST_TEST((opt.exp_avg_sq(0).device() == be.device));
          BOOST_TEST((p.device() == be.device));
        }
      }
    }
    Tensor q = parameter({1.0, 2.0});
    tt::check_throws([&] { nn::AdamW({q}, 1e-3, {1.0, 0.999}); }, {"beta", "index 0"}, "beta1 = 1");
  });
}

BOOST_AUTO_TEST_CASE(optimizer_zero_grad_and_skipping) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto a_ref = random_f32(10, 51), b_ref = random_f32(20, 52);
    Tensor a = parameter(a_ref), b = parameter(b_ref);
    nn::AdamW opt({a, b}, 0.1);
    set_grad(a, random_f32(10, 53));
    opt.step();  // b has no gradient: untouched, no state
    BOOST_TEST(a.to_vector<float>() != std::vector<float>(a_ref.begin(), a_ref.end()));
    BOOST_TEST(b.to_vector<float>() == std::vector<float>(b_ref.begin(), b_ref.end()));
    BOOST_TEST(opt.step_count(1) == 0);
    BOOST_TEST(!opt.exp_avg(1).defined());
    opt.zero_grad();
    BOOST_TEST(!a.grad().defined());

    // A parameter and its gradient must agree; errors name the optimiser.
    Tensor c = parameter({1.0, 2.0, 3.0});
    nn::SGD sgd({c}, 0.1);
    c.autograd()->grad = Tensor::from_vector(std::vector<float>{1, 2});
    tt::check_throws([&] { sgd.step(); }, {"SGD", "gradient"}, "gradient shape");
    Tensor d = Tensor::from_vector(std::vector<double>{1.0, 2.0});
    d.requires_grad_(true);
    d.autograd()->grad = Tensor::from_vector(std::vector<double>{1.0, 2.0});
    nn::SGD sgd64({d}, 0.1);
    tt::check_throws([&] { sgd64.step(); }, {"SGD", "f64", "f32"}, "f64 parameter");
  });
}

// A few AdamW steps on a small MLP reduce the loss (the pieces work together).
BOOST_AUTO_TEST_CASE(training_reduces_loss) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Generator gen(9);
    nn::Sequential model(nn::Linear(6, 16, true, gen), nn::ReLU(), nn::Linear(16, 3, true, gen));
    nn::AdamW opt(model.parameters(), 1e-2);
    Tensor x = f32_tensor(random_f32(32 * 6, 61, -1, 1), {32, 6});
    std::vector<int64_t> labels(32);
    for (int i = 0; i < 32; ++i) labels[i] = i % 3;
    Tensor y = Tensor::from_vector(labels);
    float first = 0, last = 0;
    for (int step = 0; step < 30; ++step) {
      Tensor loss = tritium::cross_entropy(model(x), y);
      opt.zero_grad();
      loss.backward();
      opt.step();
      BOOST_TEST_REQUIRE((loss.device() == be.device));
      float value = loss.to_vector<float>()[0];
      if (step == 0) first = value;
      last = value;
    }
    BOOST_TEST(last < 0.8 * first, "loss " << first << " -> " << last);
  });
}

// Module::to moves every parameter to a device as a fresh leaf, Linear's handles follow, and
// the model computes the same function there. The model is built on the backend's device, moved
// to host memory (cpu: already there, nothing moves) and back, which exercises both directions of
// a move on a GPU without running a kernel on the CPU (a GPU build may have no CPU backend);
// an SGD step built after the move then updates the moved leaves in place.
BOOST_AUTO_TEST_CASE(module_to_device) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Generator gen(3);
    nn::Sequential model(nn::Linear(6, 5, true, gen), nn::ReLU(), nn::Linear(5, 3, true, gen));
    auto& first = dynamic_cast<nn::Linear&>(model[0]);
    auto x = Tensor::from_vector(std::vector<float>(tt::random_vector<float>(4 * 6, 21)), {4, 6});
    BOOST_TEST((x.device() == be.device));
    std::vector<float> before = model(x).detach().to_vector<float>();
    std::vector<std::vector<float>> values;
    for (auto& p : model.parameters()) values.push_back(p.to_vector<float>());

    const Device host = Device::cpu();
    const Tensor old_weight = first.weight;
    model.to(host);
    size_t k = 0;
    for (auto& [name, p] : model.named_parameters()) {
      BOOST_TEST((p.device() == host), name);
      BOOST_TEST(p.requires_grad(), name);
      BOOST_TEST(p.is_leaf(), name);
      BOOST_TEST(p.to_vector<float>() == values[k++], name);
    }
    BOOST_TEST((first.weight.device() == host));  // Linear's handle follows
    BOOST_TEST(first.weight.storage() == model.parameters()[0].storage());
    if (!(be.device == host)) BOOST_TEST(first.weight.storage() != old_weight.storage());  // a fresh tensor

    model.to(be.device);
    k = 0;
    for (auto& [name, p] : model.named_parameters()) {
      BOOST_TEST((p.device() == be.device), name);
      BOOST_TEST(p.requires_grad(), name);
      BOOST_TEST(p.is_leaf(), name);
      BOOST_TEST(p.to_vector<float>() == values[k++], name);
    }
    BOOST_TEST((first.weight.device() == be.device));
    BOOST_TEST((first.bias.device() == be.device));
    BOOST_TEST(first.weight.storage() == model.parameters()[0].storage());
    BOOST_TEST(first.bias.storage() == model.parameters()[1].storage());

    Tensor y = model(x.to(be.device));
    BOOST_TEST((y.device() == be.device));
    std::vector<double> ref(before.begin(), before.end());
    tt::check_close<float>(y.detach().to_vector<float>(), ref, 1e-6, "forward after to()");
    sum(y).backward();  // gradients arrive on the device, in the moved leaves
    for (auto& [name, p] : model.named_parameters()) {
      BOOST_TEST(p.grad().defined(), name);
      if (p.grad().defined()) BOOST_TEST((p.grad().device() == be.device), name);
    }

    // An optimiser built after the move updates the moved leaves, seen through Linear's handle.
    std::vector<std::vector<float>> grads;
    for (auto& p : model.parameters()) grads.push_back(p.grad().to_vector<float>());
    nn::SGD opt(model.parameters(), 0.5);
    opt.step();
    std::vector<std::vector<double>> expect(values.size());
    for (size_t j = 0; j < values.size(); ++j)
      for (size_t i = 0; i < values[j].size(); ++i)
        expect[j].push_back(double(values[j][i]) - 0.5 * double(grads[j][i]));
    k = 0;
    for (auto& [name, p] : model.named_parameters())
      tt::check_close<float>(p.to_vector<float>(), expect[k++], 1e-6, "SGD step on " + name);
    tt::check_close<float>(first.weight.to_vector<float>(), expect[0], 1e-6, "SGD step seen through Linear::weight");
  });
}

BOOST_AUTO_TEST_SUITE_END()
