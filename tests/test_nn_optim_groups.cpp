// Parameter groups (PyTorch's optimizer.param_groups), the multi-tensor step (one launch per
// group and dtype, PyTorch's foreach / fused) and f16 / bf16 parameters (issue 30 item 3):
// groups with their own options against float64 host references of PyTorch's update formulas,
// options changed between steps (what LR schedulers do), add_param_group and its errors,
// state_dict / load_state_dict with several groups and their errors; the multi-tensor launch
// against the per-parameter launches bit for bit (launches counted), on sizes below, across and
// above a table row (65536 elements); low-precision parameters against a float64 reference that
// rounds where the kernels store. Every test runs on every backend.
#include <bit>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/json.h"
#include "nn/autograd.h"
#include "nn/optim.h"
#include "test_support.h"

namespace tt = tritium::test;
using tritium::Tensor;
using namespace tritium;

namespace {

// Random values in [lo, hi], exactly representable in `dtype`.
std::vector<double> random_values(size_t n, uint32_t seed, DType dtype = DType::f32, double lo = -1, double hi = 1) {
  auto v = tt::random_vector<float>(n, seed, lo, hi);
  std::vector<double> out(v.begin(), v.end());
  for (double& x : out)
    x = dtype == DType::f16 ? tt::round_to<f16_t>(x) : dtype == DType::bf16 ? tt::round_to<bf16_t>(x) : x;
  return out;
}

Tensor tensor_of(const std::vector<double>& values, DType dtype) {
  Tensor t = Tensor::from_vector(std::vector<float>(values.begin(), values.end()), {static_cast<int64_t>(values.size())});
  return dtype == DType::f32 ? t : t.to(dtype);
}

Tensor parameter(const std::vector<double>& values, DType dtype = DType::f32) {
  Tensor p = tensor_of(values, dtype);
  p.requires_grad_(true);
  return p;
}

void set_grad(Tensor& p, const std::vector<double>& g) { p.autograd()->grad = tensor_of(g, p.dtype()); }

std::vector<double> values_of(const Tensor& t) {
  auto v = t.to(DType::f32).to(Device::cpu()).to_vector<float>();
  return std::vector<double>(v.begin(), v.end());
}

// The bits of a tensor's elements, for bit-for-bit comparisons.
std::vector<uint32_t> bits_of(const Tensor& t) {
  auto v = t.to(DType::f32).to(Device::cpu()).to_vector<float>();
  std::vector<uint32_t> out;
  for (float x : v) out.push_back(std::bit_cast<uint32_t>(x));
  return out;
}

void check_close(const std::vector<double>& out, const std::vector<double>& ref, double rel, const std::string& what) {
  BOOST_REQUIRE_EQUAL(out.size(), ref.size());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (!(std::abs(out[i] - ref[i]) <= rel * std::max(std::abs(ref[i]), 1e-2))) {
      if (bad++ == 0) first = i;
    }
  BOOST_TEST(bad == 0u, what << ": " << bad << " of " << out.size() << " elements differ, first [" << first
                             << "] = " << out[first] << " vs " << ref[first]);
}

// PyTorch's per-element updates in float64 (torch/optim/*.py, single-tensor path); R rounds a
// stored value to the parameter's dtype (the identity for f32 state checked against f32 tolerance).
using Round = std::function<double(double)>;
struct AdamCfg {
  double lr, b1, b2, eps, wd;
  bool amsgrad, decoupled;
};
void adam_ref(const AdamCfg& c, double& p, double g, double* s, int t, const Round& R) {
  if (!c.decoupled) g += c.wd * p;
  double q = c.decoupled ? p * (1 - c.lr * c.wd) : p;
  double m = c.b1 * s[0] + (1 - c.b1) * g, v = c.b2 * s[1] + (1 - c.b2) * g * g;
  s[0] = R(m), s[1] = R(v);
  if (c.amsgrad) v = std::max(s[2], v), s[2] = R(v);
  double bc1 = 1 - std::pow(c.b1, t), bc2 = 1 - std::pow(c.b2, t);
  p = R(q - c.lr / bc1 * m / (std::sqrt(v) / std::sqrt(bc2) + c.eps));
}
struct SgdCfg {
  double lr, momentum, wd, dampening;
  bool nesterov;
};
void sgd_ref(const SgdCfg& c, double& p, double g, double* s, int t, const Round& R) {
  g += c.wd * p;
  if (c.momentum != 0) {
    double buf = t == 1 ? g : c.momentum * s[0] + (1 - c.dampening) * g;
    s[0] = R(buf);
    g = c.nesterov ? g + c.momentum * buf : buf;
  }
  p = R(p - c.lr * g);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_optim_groups)

// Two AdamW groups (the second overriding lr, beta1 and weight_decay) and two SGD groups (one
// with nesterov momentum): each parameter follows its group's options; lr changed through
// param_groups() between steps applies from the next step.
BOOST_AUTO_TEST_CASE(groups_take_their_own_options) {
  tt::for_each_backend([&](const tt::Backend&) {
    const std::vector<size_t> sizes{37, 1100, 70};
    for (bool sgd : {false, true}) {
      std::vector<std::vector<double>> p_ref, st;
      std::vector<Tensor> params;
      for (size_t k = 0; k < sizes.size(); ++k) {
        p_ref.push_back(random_values(sizes[k], 21 + uint32_t(k)));
        st.emplace_back(3 * sizes[k], 0.0);
        params.push_back(parameter(p_ref[k]));
      }
      std::vector<nn::ParamGroup> groups{{{params[0], params[1]}, {}}, {{params[2]}, {}}};
      std::unique_ptr<nn::Optimizer> opt;
      std::vector<AdamCfg> acfg{{1e-2, 0.9, 0.999, 1e-8, 0.1, false, true}, {5e-2, 0.8, 0.999, 1e-8, 0, false, true}};
      std::vector<SgdCfg> scfg{{0.1, 0, 1e-2, 0, false}, {0.05, 0.9, 1e-2, 0, true}};
      if (sgd) {
        groups[1].options = {{"lr", 0.05}, {"momentum", 0.9}, {"nesterov", 1}};
        opt = std::make_unique<nn::SGD>(groups, 0.1, 0, 1e-2);
      } else {
        groups[1].options = {{"lr", 5e-2}, {"beta1", 0.8}, {"weight_decay", 0}};
        opt = std::make_unique<nn::AdamW>(groups, 1e-2, std::pair{0.9, 0.999}, 1e-8, 0.1);
      }
      BOOST_TEST(opt->param_groups().size() == 2u);
      BOOST_TEST(opt->param_groups()[1].option("lr") == (sgd ? 0.05 : 5e-2));
      BOOST_TEST(opt->param_groups()[1].option("weight_decay") == (sgd ? 1e-2 : 0.0));  // default vs override
      for (int t = 1; t <= 4; ++t) {
        if (t == 3) {  // a scheduler's move
          opt->param_groups()[0].option("lr") *= 0.5;
          acfg[0].lr *= 0.5, scfg[0].lr *= 0.5;
        }
        for (size_t k = 0; k < sizes.size(); ++k) {
          auto g = random_values(sizes[k], 100 * uint32_t(t) + uint32_t(k));
          set_grad(params[k], g);
          size_t grp = k < 2 ? 0 : 1;
          for (size_t i = 0; i < sizes[k]; ++i) {
            double* s = &st[k][3 * i];
            if (sgd) sgd_ref(scfg[grp], p_ref[k][i], g[i], s, t, [](double x) { return x; });
            else adam_ref(acfg[grp], p_ref[k][i], g[i], s, t, [](double x) { return x; });
          }
        }
        opt->step();
        for (size_t k = 0; k < sizes.size(); ++k)
          check_close(values_of(params[k]), p_ref[k], 2e-5,
                      fmt::format("{} parameter {} step {}", sgd ? "SGD" : "AdamW", k, t));
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(add_param_group_and_bad_groups) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor a = parameter(random_values(5, 1)), b = parameter(random_values(7, 2)), c = parameter(random_values(3, 3));
    nn::Adam opt({a}, 1e-3, {0.9, 0.99}, 1e-8, 0.0, true);
    opt.add_param_group({{b}, {{"lr", 0.5}}});
    BOOST_TEST(opt.param_groups().size() == 2u);
    BOOST_TEST(opt.param_groups()[1].option("lr") == 0.5);
    BOOST_TEST(opt.param_groups()[1].option("beta2") == 0.99);  // from the defaults
    BOOST_TEST(opt.param_groups()[1].option("amsgrad") == 1);
    BOOST_TEST(opt.params().size() == 2u);
    tt::check_throws([&] { opt.add_param_group({{}, {}}); }, {"Adam", "empty parameter list"}, "empty group");
    tt::check_throws([&] { opt.add_param_group({{c, a}, {}}); }, {"Adam", "more than one parameter group"},
                     "parameter already in a group");
    tt::check_throws([&] { opt.add_param_group({{c, c}, {}}); }, {"Adam", "more than one parameter group"},
                     "parameter twice in a group");
    tt::check_throws([&] { opt.add_param_group({{c}, {{"lr", -1}}}); }, {"Adam", "invalid learning rate -1"},
                     "invalid lr in a group");
    tt::check_throws([&] { opt.add_param_group({{c}, {{"beta1", 1.5}}}); }, {"Adam", "beta parameter at index 0"},
                     "invalid beta in a group");
    BOOST_TEST(opt.param_groups().size() == 2u, "a refused group was added");
    tt::check_throws([&] { nn::SGD({{{a}, {}}, {{b}, {{"nesterov", 1}}}}, 0.1); }, {"SGD", "nesterov"},
                     "nesterov without momentum in a group");
    tt::check_throws([&] { nn::SGD(std::vector<nn::ParamGroup>{}, 0.1); }, {"SGD", "empty parameter list"},
                     "no groups");
    tt::check_throws([&] { opt.param_groups()[0].option("momentum"); }, {"no option \"momentum\"", "lr"},
                     "unknown option");
    Tensor nonleaf = a.view({5, 1});
    tt::check_throws([&] { opt.add_param_group({{nonleaf}, {}}); }, {"Adam", "not a leaf"}, "non-leaf parameter");
  });
}

BOOST_AUTO_TEST_CASE(state_dict_carries_groups) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto make = [](uint32_t seed) {
      return std::vector<Tensor>{parameter(random_values(5, seed)), parameter(random_values(1100, seed + 1)),
                                 parameter(random_values(3, seed + 2))};
    };
    auto grads = [](std::vector<Tensor>& ps, int t) {
      for (size_t k = 0; k < ps.size(); ++k) set_grad(ps[k], random_values(size_t(ps[k].numel()), 50 + 7 * t + k));
    };
    auto p = make(1);
    nn::AdamW a({{{p[0], p[1]}, {}}, {{p[2]}, {{"lr", 0.1}, {"amsgrad", 1}}}}, 1e-2);
    for (int t = 0; t < 3; ++t) grads(p, t), a.step();
    nn::OptimizerState st = a.state_dict();
    io::Json groups = io::parse_json(st.metadata.at("param_groups"), "test");
    const auto& list = groups.as_array("test");
    BOOST_REQUIRE(list.size() == 2u);
    BOOST_TEST(list[0].at("params", "test").as_array("test").size() == 2u);
    BOOST_TEST(list[1].at("params", "test").as_array("test")[0].as_int64("test") == 2);
    BOOST_TEST(list[1].at("lr", "test").as_double("test") == 0.1);
    BOOST_TEST(list[1].at("amsgrad", "test").as_bool("test") == true);
    BOOST_TEST(list[0].at("amsgrad", "test").as_bool("test") == false);
    BOOST_TEST(st.tensors.contains("state.2.max_exp_avg_sq"));
    BOOST_TEST(!st.tensors.contains("state.0.max_exp_avg_sq"));

    // Same structure, other options: everything comes from the state; training goes on alike.
    auto q = make(1);
    for (size_t k = 0; k < 3; ++k) q[k] = parameter(values_of(p[k]));
    nn::AdamW b({{{q[0], q[1]}, {}}, {{q[2]}, {}}}, 3e-3);
    b.load_state_dict(st);
    BOOST_TEST(b.param_groups()[1].option("lr") == 0.1);
    BOOST_TEST(b.param_groups()[1].option("amsgrad") == 1);
    BOOST_TEST(b.step_count(2) == 3);
    for (int t = 3; t < 5; ++t) grads(p, t), grads(q, t), a.step(), b.step();
    for (size_t k = 0; k < 3; ++k) BOOST_TEST((bits_of(p[k]) == bits_of(q[k])), "parameter " << k);

    // Another group structure: refused, nothing changed.
    auto r = make(1);
    nn::AdamW one_group(r, 1e-2);
    tt::check_throws([&] { one_group.load_state_dict(st); }, {"AdamW", "2 parameter groups", "has 1"}, "group count");
    nn::AdamW other_split({{{r[0]}, {}}, {{r[1], r[2]}, {}}}, 1e-2);
    tt::check_throws([&] { other_split.load_state_dict(st); }, {"param_groups[0]", "doesn't match the size"},
                     "group sizes");
    BOOST_TEST(other_split.param_groups()[1].option("lr") == 1e-2);
    BOOST_TEST(other_split.step_count(0) == 0);
    // A malformed group: a missing option, a bad value.
    nn::OptimizerState missing = st;
    std::string pg = st.metadata.at("param_groups");
    missing.metadata["param_groups"] = pg.replace(pg.find("\"eps\""), 5, "\"epz\"");
    tt::check_throws([&] { b.load_state_dict(missing); }, {"param_groups[0]", "no \"eps\""}, "missing option");
    nn::OptimizerState negative = st;
    std::string pg2 = st.metadata.at("param_groups");
    negative.metadata["param_groups"] = pg2.replace(pg2.find("\"lr\": 0.1"), 9, "\"lr\": -0.1");
    tt::check_throws([&] { b.load_state_dict(negative); }, {"AdamW", "invalid learning rate"}, "negative lr");
  });
}

namespace {

// Every optimiser configuration the multi-tensor kernels have (each flag on and off).
struct Make {
  std::string what;
  std::function<std::unique_ptr<nn::Optimizer>(std::vector<Tensor>)> make;
};
std::vector<Make> configurations() {
  using P = std::vector<Tensor>;
  return {
      {"SGD", [](P p) { return std::make_unique<nn::SGD>(p, 0.1, 0, 0.01); }},
      {"SGD momentum dampening", [](P p) { return std::make_unique<nn::SGD>(p, 0.1, 0.9, 0.01, 0.2); }},
      {"SGD nesterov", [](P p) { return std::make_unique<nn::SGD>(p, 0.1, 0.9, 0, 0, true); }},
      {"Adam", [](P p) { return std::make_unique<nn::Adam>(p, 1e-2, std::pair{0.9, 0.99}, 1e-8, 0.1); }},
      {"Adam amsgrad", [](P p) { return std::make_unique<nn::Adam>(p, 1e-2, std::pair{0.9, 0.99}, 1e-8, 0, true); }},
      {"AdamW", [](P p) { return std::make_unique<nn::AdamW>(p, 1e-2); }},
      {"RMSprop", [](P p) { return std::make_unique<nn::RMSprop>(p, 1e-2); }},
      {"RMSprop centered momentum", [](P p) { return std::make_unique<nn::RMSprop>(p, 1e-2, 0.9, 1e-8, 0.1, 0.5, true); }},
      {"Adagrad", [](P p) { return std::make_unique<nn::Adagrad>(p, 5e-2, 0.1, 0.2, 0.5); }},
  };
}

}  // namespace

// foreach (one launch per group and dtype) against one launch per parameter: the same bits in
// every parameter and state tensor, for each configuration and dtype; a parameter without a
// gradient at step 2 makes the step counts differ between tensors of one launch.
BOOST_AUTO_TEST_CASE(multi_tensor_step_matches_per_parameter_bit_for_bit) {
  tt::for_each_backend([&](const tt::Backend&) {
    const std::vector<size_t> sizes{37, 1100, 70000, 5};
    for (DType dtype : {DType::f32, DType::bf16}) {
      for (const Make& m : configurations()) {
        BOOST_TEST_CONTEXT(m.what << " " << dtype_name(dtype)) {
          std::vector<Tensor> pa, pb;
          for (size_t k = 0; k < sizes.size(); ++k) {
            auto v = random_values(sizes[k], 31 + uint32_t(k), dtype);
            pa.push_back(parameter(v, dtype)), pb.push_back(parameter(v, dtype));
          }
          auto fused = m.make(pa), each = m.make(pb);
          each->foreach = false;
          for (int t = 1; t <= 3; ++t) {
            for (size_t k = 0; k < sizes.size(); ++k) {
              if (t == 2 && k == 3) {
                pa[k].zero_grad(), pb[k].zero_grad();
                continue;
              }
              auto g = random_values(sizes[k], 300 + 10 * uint32_t(t) + uint32_t(k), dtype);
              set_grad(pa[k], g), set_grad(pb[k], g);
            }
            fused->step(), each->step();
            int64_t with_grad = t == 2 ? 3 : 4;
            BOOST_TEST(fused->last_step_launches() == 1);
            BOOST_TEST(each->last_step_launches() == with_grad);
          }
          nn::OptimizerState sa = fused->state_dict(), sb = each->state_dict();
          BOOST_TEST(sa.tensors.size() == sb.tensors.size());
          for (const auto& [key, t] : sa.tensors) BOOST_TEST((bits_of(t) == bits_of(sb.tensors.at(key))), key);
          for (size_t k = 0; k < sizes.size(); ++k) BOOST_TEST((bits_of(pa[k]) == bits_of(pb[k])), "parameter " << k);
        }
      }
    }
  });
}

// A group holding parameters of two dtypes: one launch per dtype.
BOOST_AUTO_TEST_CASE(multi_tensor_step_splits_by_dtype) {
  tt::for_each_backend([&](const tt::Backend&) {
    std::vector<Tensor> ps{parameter(random_values(10, 1)), parameter(random_values(20, 2, DType::bf16), DType::bf16),
                           parameter(random_values(30, 3)), parameter(random_values(40, 4, DType::f16), DType::f16)};
    nn::AdamW opt(ps, 1e-2);
    for (auto& p : ps) set_grad(p, random_values(size_t(p.numel()), 9, p.dtype()));
    opt.step();
    BOOST_TEST(opt.last_step_launches() == 3);
    BOOST_TEST((opt.exp_avg(1).dtype() == DType::bf16));
    BOOST_TEST((opt.exp_avg(3).dtype() == DType::f16));
  });
}

// f16 and bf16 parameters: state in the parameter's dtype, f32 arithmetic, every stored value
// rounded (PyTorch's fused optimisers); a float64 reference rounding at the same places, to the
// dtype's precision (two units in the last place: the f32 arithmetic may round the other way).
BOOST_AUTO_TEST_CASE(low_precision_parameters) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (DType dtype : {DType::f16, DType::bf16}) {
      Round R = [dtype](double x) { return dtype == DType::f16 ? tt::round_to<f16_t>(x) : tt::round_to<bf16_t>(x); };
      double ulp = dtype == DType::f16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
      struct Cfg {
        std::string what;
        bool sgd;
        AdamCfg a;
        SgdCfg s;
      };
      std::vector<Cfg> cfgs{{"AdamW", false, {1e-2, 0.9, 0.999, 1e-8, 0.1, false, true}, {}},
                            {"Adam amsgrad", false, {1e-2, 0.9, 0.99, 1e-8, 0.05, true, false}, {}},
                            {"SGD nesterov", true, {}, {0.1, 0.9, 0.01, 0, true}}};
      for (const Cfg& c : cfgs) {
        BOOST_TEST_CONTEXT(c.what << " " << dtype_name(dtype)) {
          const std::vector<size_t> sizes{37, 1100};
          std::vector<std::vector<double>> p_ref, st;
          std::vector<Tensor> params;
          for (size_t k = 0; k < sizes.size(); ++k) {
            p_ref.push_back(random_values(sizes[k], 41 + uint32_t(k), dtype));
            st.emplace_back(3 * sizes[k], 0.0);
            params.push_back(parameter(p_ref[k], dtype));
          }
          std::unique_ptr<nn::Optimizer> opt;
          if (c.sgd) opt = std::make_unique<nn::SGD>(params, c.s.lr, c.s.momentum, c.s.wd, c.s.dampening, c.s.nesterov);
          else if (c.a.decoupled) opt = std::make_unique<nn::AdamW>(params, c.a.lr, std::pair{c.a.b1, c.a.b2}, c.a.eps, c.a.wd);
          else opt = std::make_unique<nn::Adam>(params, c.a.lr, std::pair{c.a.b1, c.a.b2}, c.a.eps, c.a.wd, c.a.amsgrad);
          for (int t = 1; t <= 4; ++t) {
            for (size_t k = 0; k < sizes.size(); ++k) {
              auto g = random_values(sizes[k], 500 + 10 * uint32_t(t) + uint32_t(k), dtype);
              set_grad(params[k], g);
              for (size_t i = 0; i < sizes[k]; ++i) {
                if (c.sgd) sgd_ref(c.s, p_ref[k][i], g[i], &st[k][3 * i], t, R);
                else adam_ref(c.a, p_ref[k][i], g[i], &st[k][3 * i], t, R);
              }
            }
            opt->step();
            for (size_t k = 0; k < sizes.size(); ++k) {
              BOOST_TEST((params[k].dtype() == dtype));
              check_close(values_of(params[k]), p_ref[k], 2 * ulp, fmt::format("parameter {} step {}", k, t));
            }
          }
          std::string first_state = c.sgd ? "momentum_buffer" : "exp_avg";
          BOOST_TEST((opt->state(0, first_state).dtype() == dtype));
          std::vector<double> s0;
          for (size_t i = 0; i < sizes[0]; ++i) s0.push_back(st[0][3 * i]);
          check_close(values_of(opt->state(0, first_state)), s0, 2 * ulp, "state " + first_state);
        }
      }
    }
    // A gradient of another dtype, an f64 parameter: errors naming them.
    Tensor h = parameter(random_values(4, 1, DType::bf16), DType::bf16);
    h.autograd()->grad = tensor_of(random_values(4, 2), DType::f32);
    nn::AdamW opt({h});
    tt::check_throws([&] { opt.step(); }, {"AdamW", "bf16", "f32 gradient", "same dtype"}, "gradient dtype");
    BOOST_TEST(opt.step_count(0) == 0);
  });
}

BOOST_AUTO_TEST_SUITE_END()
