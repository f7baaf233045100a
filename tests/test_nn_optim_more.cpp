// Adam, RMSprop and Adagrad (issue 30 item 3) against float64 host references of PyTorch's
// single-tensor update formulas (torch/optim/{adam,rmsprop,adagrad}.py), each option on, 5 steps
// with random gradients on two parameters (37 and 1100 elements: one partial block, one block and
// a partial one); their state_dict names; PyTorch's constructor errors; clip_grad_norm_ and
// clip_grad_value_. Every test runs on every backend.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "nn/autograd.h"
#include "nn/clip_grad.h"
#include "nn/optim.h"
#include "profiler/profile.h"
#include "test_support.h"

namespace tt = tritium::test;
using tritium::Tensor;
using namespace tritium;

namespace {

Tensor f32_tensor(const std::vector<double>& values) {
  return Tensor::from_vector(std::vector<float>(values.begin(), values.end()), {static_cast<int64_t>(values.size())});
}

// Random values in [lo, hi] as doubles exactly representable in f32.
std::vector<double> random_f32(size_t n, uint32_t seed, double lo = -1, double hi = 1) {
  auto v = tt::random_vector<float>(n, seed, lo, hi);
  return std::vector<double>(v.begin(), v.end());
}

Tensor parameter(const std::vector<double>& values) {
  Tensor p = f32_tensor(values);
  p.requires_grad_(true);
  return p;
}

void set_grad(Tensor& p, const std::vector<double>& g) { p.autograd()->grad = f32_tensor(g); }

std::vector<double> values_of(const Tensor& t) {
  auto v = t.to_vector<float>();
  return std::vector<double>(v.begin(), v.end());
}

// One element's update at step t (1-based): p and the element's state s[0..3], as PyTorch.
using Reference = std::function<void(double& p, double g, double* s, int t)>;

struct Case {
  std::string what;
  std::function<std::unique_ptr<nn::Optimizer>(std::vector<Tensor>)> make;
  Reference ref;
  double initial_state;                 // every state element before the first step
  std::set<std::string> state_names;  // PyTorch's names in state_dict()["state"][i]
};

Reference adam_ref(double lr, double b1, double b2, double eps, double wd, bool amsgrad) {
  return [=](double& p, double g, double* s, int t) {
    g += wd * p;
    s[0] = b1 * s[0] + (1 - b1) * g;
    s[1] = b2 * s[1] + (1 - b2) * g * g;
    double v = s[1];
    if (amsgrad) v = s[2] = std::max(s[2], s[1]);
    double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    p -= lr / bc1 * s[0] / (std::sqrt(v) / std::sqrt(bc2) + eps);
  };
}

Reference rmsprop_ref(double lr, double alpha, double eps, double wd, double momentum, bool centered) {
  return [=](double& p, double g, double* s, int) {
    g += wd * p;
    s[0] = alpha * s[0] + (1 - alpha) * g * g;
    double var = s[0];
    if (centered) {
      s[1] = alpha * s[1] + (1 - alpha) * g;
      var -= s[1] * s[1];
    }
    double d = g / (std::sqrt(var) + eps);
    if (momentum > 0) d = s[2] = momentum * s[2] + d;
    p -= lr * d;
  };
}

Reference adagrad_ref(double lr, double lr_decay, double wd, double eps) {
  return [=](double& p, double g, double* s, int t) {
    g += wd * p;
    s[0] += g * g;
    double clr = lr / (1 + (t - 1) * lr_decay);
    p -= clr * g / (std::sqrt(s[0]) + eps);
  };
}

std::vector<Case> cases() {
  using P = std::vector<Tensor>;
  std::vector<Case> out;
  out.push_back({"Adam", [](P p) { return std::make_unique<nn::Adam>(p, 1e-2); }, adam_ref(1e-2, 0.9, 0.999, 1e-8, 0, false),
                 0, {"step", "exp_avg", "exp_avg_sq"}});
  out.push_back({"Adam weight_decay betas eps",
                 [](P p) { return std::make_unique<nn::Adam>(p, 3e-2, std::pair{0.8, 0.95}, 1e-3, 0.1); },
                 adam_ref(3e-2, 0.8, 0.95, 1e-3, 0.1, false), 0, {"step", "exp_avg", "exp_avg_sq"}});
  out.push_back({"Adam amsgrad",
                 [](P p) { return std::make_unique<nn::Adam>(p, 1e-2, std::pair{0.9, 0.99}, 1e-8, 0.05, true); },
                 adam_ref(1e-2, 0.9, 0.99, 1e-8, 0.05, true), 0, {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}});
  out.push_back({"RMSprop", [](P p) { return std::make_unique<nn::RMSprop>(p); }, rmsprop_ref(1e-2, 0.99, 1e-8, 0, 0, false),
                 0, {"step", "square_avg"}});
  out.push_back({"RMSprop weight_decay momentum large eps",
                 [](P p) { return std::make_unique<nn::RMSprop>(p, 5e-3, 0.9, 0.1, 0.1, 0.8); },
                 rmsprop_ref(5e-3, 0.9, 0.1, 0.1, 0.8, false), 0, {"step", "square_avg", "momentum_buffer"}});
  out.push_back({"RMSprop centered momentum",
                 [](P p) { return std::make_unique<nn::RMSprop>(p, 1e-2, 0.9, 1e-8, 0, 0.5, true); },
                 rmsprop_ref(1e-2, 0.9, 1e-8, 0, 0.5, true), 0, {"step", "square_avg", "momentum_buffer", "grad_avg"}});
  out.push_back({"Adagrad", [](P p) { return std::make_unique<nn::Adagrad>(p); }, adagrad_ref(1e-2, 0, 0, 1e-10), 0,
                 {"step", "sum"}});
  out.push_back({"Adagrad lr_decay weight_decay initial_accumulator_value large eps",
                 [](P p) { return std::make_unique<nn::Adagrad>(p, 5e-2, 0.1, 0.2, 0.5, 0.1); },
                 adagrad_ref(5e-2, 0.1, 0.2, 0.1), 0.5, {"step", "sum"}});
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_optim_more)

BOOST_AUTO_TEST_CASE(adam_rmsprop_adagrad_trajectories) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (const Case& c : cases()) {
      const std::vector<size_t> sizes{37, 1100};
      std::vector<std::vector<double>> p_ref, state;
      std::vector<Tensor> params;
      for (size_t k = 0; k < sizes.size(); ++k) {
        p_ref.push_back(random_f32(sizes[k], 11 + k));
        state.emplace_back(4 * sizes[k], c.initial_state);
        params.push_back(parameter(p_ref[k]));
      }
      auto opt = c.make(params);
      BOOST_TEST(opt->state_dict().tensors.empty(), c.what << ": state before the first step");
      for (int t = 1; t <= 5; ++t) {
        for (size_t k = 0; k < sizes.size(); ++k) {
          auto g = random_f32(sizes[k], 100 * t + k, -3, 3);
          set_grad(params[k], g);
          for (size_t i = 0; i < sizes[k]; ++i) c.ref(p_ref[k][i], g[i], &state[k][4 * i], t);
        }
        opt->step();
        for (size_t k = 0; k < sizes.size(); ++k) {
          BOOST_TEST((params[k].device() == be.device));
          tt::check_close<float>(params[k].to_vector<float>(), p_ref[k], 2e-6,
                                 c.what + ": parameter " + std::to_string(k) + " after step " + std::to_string(t));
        }
      }
      // The state under PyTorch's names, on the parameter's device (step: a host scalar).
      nn::OptimizerState st = opt->state_dict();
      std::set<std::string> names;
      for (const auto& [key, tensor] : st.tensors) {
        if (key.rfind("state.1.", 0) != 0) continue;
        std::string name = key.substr(8);
        names.insert(name);
        if (name == "step") {
          BOOST_TEST(values_of(tensor).at(0) == 5.0, c.what << ": step");
        } else {
          BOOST_TEST((tensor.device() == be.device), c.what << ": " << name << " device");
          BOOST_TEST(tensor.numel() == 1100, c.what << ": " << name << " shape");
        }
      }
      BOOST_TEST((names == c.state_names), c.what << ": state names");
      BOOST_TEST(st.metadata.at("optimizer") == c.what.substr(0, c.what.find(' ')));
    }
  });
}

// The state values themselves after 5 steps (the first element's of each, against the reference).
BOOST_AUTO_TEST_CASE(optimizer_state_values) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto p0 = random_f32(50, 3);
    Tensor p = parameter(p0);
    nn::Adam adam({p}, 1e-2, {0.9, 0.99}, 1e-8, 0.0, true);
    std::vector<double> pr = p0, s(4 * 50, 0);
    auto ref = adam_ref(1e-2, 0.9, 0.99, 1e-8, 0, true);
    for (int t = 1; t <= 5; ++t) {
      auto g = random_f32(50, 300 + t, -2, 2);
      set_grad(p, g);
      adam.step();
      for (size_t i = 0; i < 50; ++i) ref(pr[i], g[i], &s[4 * i], t);
    }
    std::vector<double> m(50), v(50), vmax(50);
    for (size_t i = 0; i < 50; ++i) m[i] = s[4 * i], v[i] = s[4 * i + 1], vmax[i] = s[4 * i + 2];
    tt::check_close<float>(adam.exp_avg(0).to_vector<float>(), m, 1e-6, "exp_avg");
    tt::check_close<float>(adam.exp_avg_sq(0).to_vector<float>(), v, 1e-6, "exp_avg_sq");
    tt::check_close<float>(adam.max_exp_avg_sq(0).to_vector<float>(), vmax, 1e-6, "max_exp_avg_sq");
    BOOST_TEST(adam.step_count(0) == 5);
  });
}

BOOST_AUTO_TEST_CASE(optimizer_bad_arguments) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor q = parameter({1.0, 2.0});
    using Pair = std::pair<double, double>;
    tt::check_throws([&] { nn::Adam({q}, -1e-3); }, {"Adam", "invalid learning rate", "-0.001"}, "Adam lr < 0");
    tt::check_throws([&] { nn::Adam({q}, 1e-3, Pair{1.0, 0.999}); }, {"Adam", "beta parameter at index 0"}, "beta1 = 1");
    tt::check_throws([&] { nn::Adam({q}, 1e-3, Pair{0.9, -0.1}); }, {"Adam", "beta parameter at index 1"}, "beta2 < 0");
    tt::check_throws([&] { nn::Adam({q}, 1e-3, Pair{0.9, 0.999}, -1); }, {"Adam", "invalid epsilon"}, "Adam eps < 0");
    tt::check_throws([&] { nn::Adam({q}, 1e-3, Pair{0.9, 0.999}, 1e-8, -1); }, {"Adam", "invalid weight_decay"}, "Adam wd");
    tt::check_throws([&] { nn::RMSprop({q}, -1); }, {"RMSprop", "invalid learning rate"}, "RMSprop lr");
    tt::check_throws([&] { nn::RMSprop({q}, 1e-2, -0.5); }, {"RMSprop", "invalid alpha"}, "RMSprop alpha");
    tt::check_throws([&] { nn::RMSprop({q}, 1e-2, 0.99, -1); }, {"RMSprop", "invalid epsilon"}, "RMSprop eps");
    tt::check_throws([&] { nn::RMSprop({q}, 1e-2, 0.99, 1e-8, -1); }, {"RMSprop", "invalid weight_decay"}, "RMSprop wd");
    tt::check_throws([&] { nn::RMSprop({q}, 1e-2, 0.99, 1e-8, 0, -0.9); }, {"RMSprop", "invalid momentum"}, "momentum");
    tt::check_throws([&] { nn::Adagrad({q}, -1); }, {"Adagrad", "invalid learning rate"}, "Adagrad lr");
    tt::check_throws([&] { nn::Adagrad({q}, 1e-2, -1); }, {"Adagrad", "invalid lr_decay"}, "Adagrad lr_decay");
    tt::check_throws([&] { nn::Adagrad({q}, 1e-2, 0, -1); }, {"Adagrad", "invalid weight_decay"}, "Adagrad wd");
    tt::check_throws([&] { nn::Adagrad({q}, 1e-2, 0, 0, -1); }, {"Adagrad", "invalid initial_accumulator_value"},
                     "Adagrad initial accumulator");
    tt::check_throws([&] { nn::Adagrad({q}, 1e-2, 0, 0, 0, -1); }, {"Adagrad", "invalid epsilon"}, "Adagrad eps");
    // A state whose tensors do not match its own options (centered without grad_avg) is refused
    // before anything changes; a complete one of another configuration brings its options, as
    // PyTorch's load_state_dict replaces param_groups.
    nn::RMSprop plain({q}), centered({q}, 1e-2, 0.99, 1e-8, 0, 0, true);
    set_grad(q, {0.5, -0.25});
    centered.step();
    nn::OptimizerState full = centered.state_dict(), partial;
    partial.metadata = full.metadata;
    for (const auto& [key, t] : full.tensors)
      if (key != "state.0.grad_avg") partial.tensors.insert(key, t);
    tt::check_throws([&] { plain.load_state_dict(partial); }, {"RMSprop", "incomplete", "grad_avg"}, "centered state");
    BOOST_TEST(plain.step_count(0) == 0);
    plain.load_state_dict(full);
    BOOST_TEST(plain.param_groups()[0].option("centered") == 1);
    BOOST_TEST(plain.state(0, "grad_avg").defined());
  });
}

namespace {

// torch.linalg.vector_norm of doubles.
double host_norm(const std::vector<double>& v, double ord) {
  double acc = std::isinf(ord) && ord < 0 ? std::numeric_limits<double>::infinity() : 0;
  for (double x : v) {
    if (std::isinf(ord)) acc = ord > 0 ? std::max(acc, std::abs(x)) : std::min(acc, std::abs(x));
    else acc += std::pow(std::abs(x), ord);
  }
  return std::isinf(ord) ? acc : std::pow(acc, 1 / ord);
}

}  // namespace

BOOST_AUTO_TEST_CASE(clip_grad_norm_values) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const double inf = std::numeric_limits<double>::infinity();
    for (double ord : {2.0, 1.0, 3.0, inf, -inf})
      for (double max_norm : {0.5, 1e6}) {
        std::vector<std::vector<double>> g{random_f32(37, 21, -2, 2), random_f32(1100, 22, -2, 2)};
        std::vector<Tensor> params{parameter(random_f32(37, 1)), parameter(random_f32(1100, 2)), parameter({1.0})};
        set_grad(params[0], g[0]);
        set_grad(params[1], g[1]);  // params[2] has no gradient: skipped
        Tensor total = nn::clip_grad_norm_(params, max_norm, ord);
        double ref_total = host_norm({host_norm(g[0], ord), host_norm(g[1], ord)}, ord);
        std::string what = "norm " + std::to_string(ord) + " max_norm " + std::to_string(max_norm);
        BOOST_TEST((total.device() == be.device), what);
        BOOST_TEST(total.numel() == 1);
        tt::check_close<float>(total.to_vector<float>(), {ref_total}, 1e-5, what + ": total norm");
        double coef = std::min(1.0, max_norm / (ref_total + 1e-6));
        for (size_t k = 0; k < 2; ++k) {
          std::vector<double> want(g[k]);
          for (double& x : want) x *= coef;
          tt::check_close<float>(params[k].grad().to_vector<float>(), want, 1e-5, what + ": clipped gradient");
        }
        BOOST_TEST(!params[2].grad().defined());
      }
    // No gradients at all: 0.
    std::vector<Tensor> none{parameter({1.0, 2.0})};
    BOOST_TEST(values_of(nn::clip_grad_norm_(none, 1.0)).at(0) == 0.0);
    tt::check_throws([&] { nn::clip_grad_norm_(none, 1.0, 0.0); }, {"clip_grad_norm_", "norm_type 0"}, "norm 0");
  });
}

// The 2-norm of contiguous gradients of one dtype is PyTorch's foreach path: one launch for the
// partial norms of every gradient (one larger than a table row's 65536 elements included), one to
// scale them all, whatever the number of parameters. Values against the float64 host norm.
BOOST_AUTO_TEST_CASE(clip_grad_norm_is_a_few_launches_for_every_gradient) {
  tt::for_each_backend([&](const tt::Backend&) {
    std::vector<std::vector<double>> g{random_f32(37, 41, -2, 2), random_f32(70001, 42, -2, 2), random_f32(5, 43, -2, 2)};
    std::vector<Tensor> params;
    for (size_t k = 0; k < g.size(); ++k) {
      params.push_back(parameter(random_f32(g[k].size(), 50 + uint32_t(k))));
      set_grad(params[k], g[k]);
    }
    int64_t partial = 0, scale = 0, launches = 0;
    Tensor total;
    {
      tritium::profiler::Profile prof;
      total = nn::clip_grad_norm_(params, 0.5);
      prof.stop();
      for (const tritium::profiler::Event& e : prof.events()) {
        if (e.kind != tritium::profiler::EventKind::kernel) continue;
        ++launches;
        partial += e.name == "clip_grad_foreach_partial_norm";
        scale += e.name == "clip_grad_foreach_scale";
      }
    }
    BOOST_TEST(partial == 1);
    BOOST_TEST(scale == 1);
    BOOST_TEST(launches <= 5);  // the two, the table's reduction and sqrt
    double ref_total = host_norm({host_norm(g[0], 2), host_norm(g[1], 2), host_norm(g[2], 2)}, 2);
    tt::check_close<float>(total.to_vector<float>(), {ref_total}, 1e-5, "total norm");
    const double coef = std::min(1.0, 0.5 / (ref_total + 1e-6));
    for (size_t k = 0; k < g.size(); ++k) {
      std::vector<double> want(g[k]);
      for (double& x : want) x *= coef;
      tt::check_close<float>(params[k].grad().to_vector<float>(), want, 1e-5, "clipped gradient " + std::to_string(k));
    }
  });
}

BOOST_AUTO_TEST_CASE(clip_grad_norm_nonfinite) {
  tt::for_each_backend([&](const tt::Backend&) {
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<Tensor> params{parameter({1.0, 2.0, 3.0})};
    set_grad(params[0], {1.0, inf, 2.0});
    tt::check_throws([&] { nn::clip_grad_norm_(params, 1.0, 2.0, true); }, {"clip_grad_norm_", "non-finite", "order 2"},
                     "inf gradient");
    auto unchanged = values_of(params[0].grad());
    BOOST_TEST((unchanged == std::vector<double>{1.0, inf, 2.0}), "the gradient changed before the error");
    // Without the flag the norm is returned (inf) and the gradients are scaled by max_norm / inf.
    Tensor total = nn::clip_grad_norm_(params, 1.0);
    BOOST_TEST(std::isinf(values_of(total).at(0)));
    BOOST_TEST(values_of(params[0].grad()).at(0) == 0.0);
  });
}

BOOST_AUTO_TEST_CASE(clip_grad_value_clamps) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto g = random_f32(1100, 31, -3, 3);
    std::vector<Tensor> params{parameter(random_f32(1100, 32)), parameter({1.0})};
    set_grad(params[0], g);
    nn::clip_grad_value_(params, 0.75);
    for (double& x : g) x = std::clamp(x, -0.75, 0.75);
    tt::check_close<float>(params[0].grad().to_vector<float>(), g, 0, "clamped gradient");
    BOOST_TEST(!params[1].grad().defined());
  });
}

BOOST_AUTO_TEST_SUITE_END()
