// RNN / LSTM / GRU and their cells (ops/rnn.h, nn/rnn.h) on every backend: outputs, h_n and c_n
// against a float64 host reference written here (PyTorch's gate formulas, step by step), and every
// gradient (input, h0, c0, each parameter) against central differences of that host reference,
// over modes x layers 1-2 x bidirectional x batch_first x with / without h0 x bias, unbatched
// inputs, odd sizes (hidden sizes off the kernel's blocks); f32 beside f64; dropout between layers
// (p = 1 zeroes the next layer's input, eval ignores it); the modules' parameter names, shapes,
// initialisation bounds and repr; PyTorch's argument errors; PyTorch checkpoints
// (tests/fixtures/torch_modules/rnn_*, scripts/make_torch_rnn_fixtures.py) loaded and reproduced,
// outputs and gradients.
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "fixtures_dir.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "nn/autograd.h"
#include "nn/rnn.h"
#include "nn/serialize.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
namespace nn = tritium::nn;
using tritium::DType;
using tritium::Tensor;
using Vec = std::vector<double>;

namespace {

// ---- float64 reference ------------------------------------------------------------------------------

struct Config {
  std::string mode;  // rnn_tanh, rnn_relu, lstm, gru
  int64_t layers = 1;
  bool bidirectional = false, batch_first = false, with_h0 = false, bias = true;
  int64_t T = 4, B = 3, I = 5, H = 7;
  std::string str() const {
    return fmt::format("{} L={} bidir={} batch_first={} h0={} bias={} T={} B={} I={} H={}", mode, layers,
                       bidirectional, batch_first, with_h0, bias, T, B, I, H);
  }
  int64_t D() const { return bidirectional ? 2 : 1; }
  int64_t G() const { return mode == "lstm" ? 4 : mode == "gru" ? 3 : 1; }
};

// Per layer and direction, PyTorch's order: w_ih, w_hh, b_ih, b_hh (biases empty without bias).
using Params = std::vector<std::array<Vec, 4>>;

struct Values {
  Vec x;       // [T, B, I], sequence first
  Vec h0, c0;  // [L*D, B, H]
  Params p;
};

struct Outputs {
  Vec out, hn, cn;  // out [T, B, D*H] sequence first; hn / cn [L*D, B, H]
};

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

Outputs reference(const Config& c, const Values& v, bool zero_between_layers = false) {
  const int64_t T = c.T, B = c.B, H = c.H, D = c.D(), G = c.G();
  Outputs o;
  o.hn.assign(size_t(c.layers * D * B * H), 0);
  o.cn.assign(o.hn.size(), 0);
  Vec in = v.x;
  int64_t in_size = c.I;
  for (int64_t l = 0; l < c.layers; ++l) {
    Vec out(size_t(T * B * D * H), 0);
    for (int64_t d = 0; d < D; ++d) {
      const int64_t k = l * D + d;
      const auto& [wi, wh, bi, bh] = v.p[size_t(k)];
      Vec h(v.h0.begin() + k * B * H, v.h0.begin() + (k + 1) * B * H), cell(size_t(B * H), 0);
      if (c.mode == "lstm") cell.assign(v.c0.begin() + k * B * H, v.c0.begin() + (k + 1) * B * H);
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t = d == 1 ? T - 1 - s : s;
        Vec nh(h.size()), nc(cell.size());
        for (int64_t b = 0; b < B; ++b) {
          // gx[g], gh[g] of unit j
          auto gx = [&](int64_t row) {
            double a = c.bias ? bi[size_t(row)] : 0;
            for (int64_t i = 0; i < in_size; ++i) a += wi[size_t(row * in_size + i)] * in[size_t((t * B + b) * in_size + i)];
            return a;
          };
          auto gh = [&](int64_t row) {
            double a = c.bias ? bh[size_t(row)] : 0;
            for (int64_t i = 0; i < H; ++i) a += wh[size_t(row * H + i)] * h[size_t(b * H + i)];
            return a;
          };
          for (int64_t j = 0; j < H; ++j) {
            const size_t e = size_t(b * H + j);
            if (c.mode == "rnn_tanh") nh[e] = std::tanh(gx(j) + gh(j));
            else if (c.mode == "rnn_relu") nh[e] = std::max(0.0, gx(j) + gh(j));
            else if (c.mode == "lstm") {
              double ig = sigmoid(gx(j) + gh(j)), fg = sigmoid(gx(H + j) + gh(H + j));
              double gg = std::tanh(gx(2 * H + j) + gh(2 * H + j)), og = sigmoid(gx(3 * H + j) + gh(3 * H + j));
              nc[e] = fg * cell[e] + ig * gg;
              nh[e] = og * std::tanh(nc[e]);
            } else {
              double r = sigmoid(gx(j) + gh(j)), z = sigmoid(gx(H + j) + gh(H + j));
              double n = std::tanh(gx(2 * H + j) + r * gh(2 * H + j));
              nh[e] = (1 - z) * n + z * h[e];
            }
          }
        }
        (void)G;
        h = nh;
        if (c.mode == "lstm") cell = nc;
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < H; ++j) out[size_t((t * B + b) * D * H + d * H + j)] = h[size_t(b * H + j)];
      }
      std::copy(h.begin(), h.end(), o.hn.begin() + k * B * H);
      std::copy(cell.begin(), cell.end(), o.cn.begin() + k * B * H);
    }
    in = out;
    if (zero_between_layers && l + 1 < c.layers) std::fill(in.begin(), in.end(), 0.0);
    in_size = D * H;
  }
  o.out = in;
  return o;
}

// [T, B, F] <-> [B, T, F]
Vec swap01(const Vec& v, int64_t A, int64_t Bn, int64_t F) {
  Vec r(v.size());
  for (int64_t a = 0; a < A; ++a)
    for (int64_t b = 0; b < Bn; ++b)
      for (int64_t f = 0; f < F; ++f) r[size_t((b * A + a) * F + f)] = v[size_t((a * Bn + b) * F + f)];
  return r;
}

double weighted(const Vec& a, const Vec& w) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * w[i];
  return s;
}

// d loss / d value for every element of `target` by central differences of the host reference,
// loss = <out, gy> + <hn, ghn> + <cn, gcn>.
Vec numeric_grad(const Config& c, Values& v, Vec& target, const Vec& gy, const Vec& ghn, const Vec& gcn) {
  Vec g(target.size());
  const double eps = 1e-6;
  for (size_t i = 0; i < target.size(); ++i) {
    const double keep = target[i];
    auto loss = [&] {
      Outputs o = reference(c, v, false);
      return weighted(o.out, gy) + weighted(o.hn, ghn) + (c.mode == "lstm" ? weighted(o.cn, gcn) : 0.0);
    };
    target[i] = keep + eps;
    const double up = loss();
    target[i] = keep - eps;
    const double down = loss();
    target[i] = keep;
    g[i] = (up - down) / (2 * eps);
  }
  return g;
}

std::unique_ptr<nn::RNNBase> make_module(const Config& c, ops::Generator& gen) {
  auto o = nn::RNNOptions(c.I, c.H)
               .num_layers(c.layers)
               .bias(c.bias)
               .batch_first(c.batch_first)
               .bidirectional(c.bidirectional);
  if (c.mode == "lstm") return std::make_unique<nn::LSTM>(o, gen);
  if (c.mode == "gru") return std::make_unique<nn::GRU>(o, gen);
  return std::make_unique<nn::RNN>(o.nonlinearity(c.mode == "rnn_relu" ? "relu" : "tanh"), gen);
}

Params params_of(const nn::RNNBase& m, const Config& c) {
  Params p;
  for (int64_t l = 0; l < c.layers; ++l)
    for (int64_t d = 0; d < c.D(); ++d) {
      std::vector<Tensor> w = m.layer_weights(l, d);
      p.push_back({ou::values(w[0]), ou::values(w[1]), c.bias ? ou::values(w[2]) : Vec{}, c.bias ? ou::values(w[3]) : Vec{}});
    }
  return p;
}

// Runs the module and its backward at `dtype` and checks outputs and every gradient against the
// reference (gradients by central differences in float64).
void check_module(const Config& c, DType dtype, double tol, uint32_t seed) {
  BOOST_TEST_CONTEXT(c.str() << " " << tritium::dtype_name(dtype)) {
    ops::Generator gen(seed);
    auto m = make_module(c, gen);
    m->to(dtype);
    const int64_t LD = c.layers * c.D();
    const ou::Shape x_shape = c.batch_first ? ou::Shape{c.B, c.T, c.I} : ou::Shape{c.T, c.B, c.I};
    Tensor x = ou::random_tensor<double>(x_shape, seed + 1).to(dtype);
    x.requires_grad_();
    Tensor h0 = ou::random_tensor<double>({LD, c.B, c.H}, seed + 2).to(dtype);
    Tensor c0 = ou::random_tensor<double>({LD, c.B, c.H}, seed + 3).to(dtype);
    std::vector<Tensor> in{x};
    if (c.with_h0) {
      h0.requires_grad_();
      in.push_back(h0);
      if (c.mode == "lstm") c0.requires_grad_(), in.push_back(c0);
    }
    std::vector<Tensor> outs = m->forward_many(in);
    BOOST_TEST(outs.size() == (c.mode == "lstm" ? 3u : 2u));

    Values v;
    v.x = c.batch_first ? swap01(ou::values(x), c.B, c.T, c.I) : ou::values(x);
    v.h0 = c.with_h0 ? ou::values(h0) : Vec(size_t(LD * c.B * c.H), 0.0);
    v.c0 = c.with_h0 && c.mode == "lstm" ? ou::values(c0) : Vec(size_t(LD * c.B * c.H), 0.0);
    v.p = params_of(*m, c);
    Outputs ref = reference(c, v);
    const int64_t F = c.D() * c.H;
    const Vec out_ref = c.batch_first ? swap01(ref.out, c.T, c.B, F) : ref.out;
    BOOST_TEST((outs[0].shape() == (c.batch_first ? ou::Shape{c.B, c.T, F} : ou::Shape{c.T, c.B, F})));
    ou::check_values(outs[0], out_ref, tol, "output");
    ou::check_values(outs[1], ref.hn, tol, "h_n");
    if (c.mode == "lstm") ou::check_values(outs[2], ref.cn, tol, "c_n");

    // Backward of <out, gy> + <h_n, ghn> + <c_n, gcn>.
    Tensor gy = ou::random_tensor<double>(outs[0].shape(), seed + 4).to(dtype);
    Tensor ghn = ou::random_tensor<double>(outs[1].shape(), seed + 5).to(dtype);
    Tensor gcn = ou::random_tensor<double>(outs[1].shape(), seed + 6).to(dtype);
    Tensor loss = tritium::sum(outs[0] * gy) + tritium::sum(outs[1] * ghn);
    if (c.mode == "lstm") loss = loss + tritium::sum(outs[2] * gcn);
    loss.backward();
    const Vec gy_ref = c.batch_first ? swap01(ou::values(gy), c.B, c.T, F) : ou::values(gy);
    const Vec ghn_v = ou::values(ghn), gcn_v = ou::values(gcn);
    const double gtol = dtype == DType::f64 ? 1e-6 : tol * 10;
    {
      Vec gx = numeric_grad(c, v, v.x, gy_ref, ghn_v, gcn_v);
      ou::check_values(x.grad(), c.batch_first ? swap01(gx, c.T, c.B, c.I) : gx, gtol, "input's gradient");
    }
    if (c.with_h0) {
      ou::check_values(h0.grad(), numeric_grad(c, v, v.h0, gy_ref, ghn_v, gcn_v), gtol, "h0's gradient");
      if (c.mode == "lstm") ou::check_values(c0.grad(), numeric_grad(c, v, v.c0, gy_ref, ghn_v, gcn_v), gtol, "c0's gradient");
    }
    const char* names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int64_t l = 0; l < c.layers; ++l)
      for (int64_t d = 0; d < c.D(); ++d) {
        std::vector<Tensor> w = m->layer_weights(l, d);
        for (int i = 0; i < (c.bias ? 4 : 2); ++i) {
          Vec& target = v.p[size_t(l * c.D() + d)][size_t(i)];
          ou::check_values(w[size_t(i)].grad(), numeric_grad(c, v, target, gy_ref, ghn_v, gcn_v), gtol,
                           fmt::format("{}_l{}{} gradient", names[i], l, d ? "_reverse" : ""));
        }
      }
  }
}

// The f32 module against the f64 one of the same parameters: outputs and every gradient (the f64
// gradients are checked against the host reference above).
void check_f32_against_f64(const Config& c, uint32_t seed) {
  BOOST_TEST_CONTEXT(c.str() << " f32") {
    std::vector<std::vector<Tensor>> grads(2);
    std::vector<std::vector<Tensor>> outs(2);
    for (int k = 0; k < 2; ++k) {
      const DType dt = k == 0 ? DType::f64 : DType::f32;
      ops::Generator gen(seed);
      auto m = make_module(c, gen);
      m->to(dt);
      const int64_t LD = c.layers * c.D();
      Tensor x = ou::random_tensor<double>({c.T, c.B, c.I}, seed + 1).to(dt);
      Tensor h0 = ou::random_tensor<double>({LD, c.B, c.H}, seed + 2).to(dt);
      Tensor c0 = ou::random_tensor<double>({LD, c.B, c.H}, seed + 3).to(dt);
      x.requires_grad_(), h0.requires_grad_(), c0.requires_grad_();
      std::vector<Tensor> in{x, h0};
      if (c.mode == "lstm") in.push_back(c0);
      outs[size_t(k)] = m->forward_many(in);
      Tensor loss;
      for (size_t i = 0; i < outs[size_t(k)].size(); ++i) {
        Tensor w = ou::random_tensor<double>(outs[size_t(k)][i].shape(), seed + 4 + uint32_t(i)).to(dt);
        Tensor term = tritium::sum(outs[size_t(k)][i] * w);
        loss = loss.defined() ? loss + term : term;
      }
      loss.backward();
      grads[size_t(k)] = {x.grad(), h0.grad()};
      if (c.mode == "lstm") grads[size_t(k)].push_back(c0.grad());
      for (auto& [n, p] : m->named_parameters()) grads[size_t(k)].push_back(p.grad());
    }
    for (size_t i = 0; i < outs[0].size(); ++i)
      ou::check_values(outs[1][i], ou::values(outs[0][i]), 1e-5, fmt::format("output {}", i));
    for (size_t i = 0; i < grads[0].size(); ++i)
      ou::check_values(grads[1][i], ou::values(grads[0][i]), 1e-5, fmt::format("gradient {}", i));
  }
}

const char* kModes[] = {"rnn_tanh", "rnn_relu", "lstm", "gru"};

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_rnn)

// Every mode over the options, float64 (tight), sizes off the kernel blocks.
BOOST_AUTO_TEST_CASE(modules_match_the_float64_reference_with_gradients) {
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 10;
    for (const char* mode : kModes) {
      std::vector<Config> cases = {
          {.mode = mode},
          {.mode = mode, .layers = 2, .with_h0 = true},
          {.mode = mode, .bidirectional = true, .batch_first = true, .with_h0 = true},
          {.mode = mode, .layers = 2, .bidirectional = true, .bias = false, .T = 3, .B = 2, .I = 4, .H = 5},
          {.mode = mode, .layers = 2, .batch_first = true, .T = 1, .B = 1, .I = 3, .H = 17},
      };
      for (const Config& c : cases) check_module(c, DType::f64, 1e-12, seed += 10);
    }
  });
}

BOOST_AUTO_TEST_CASE(f32_matches_the_reference) {
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 500;
    for (const char* mode : kModes)
      for (Config c : {Config{.mode = mode, .layers = 2, .bidirectional = true, .with_h0 = true, .T = 5, .B = 3, .I = 6,
                              .H = 33},
                       Config{.mode = mode, .with_h0 = true, .T = 2, .B = 2, .I = 3, .H = 260}})  // two column blocks
        check_f32_against_f64(c, seed += 10);
  });
}

// Unbatched inputs [T, I] with h0 [L*D, H], and the cells (one step, batched and unbatched) against
// the same reference with T = 1.
BOOST_AUTO_TEST_CASE(unbatched_inputs_and_cells) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (const char* mode : kModes) {
      BOOST_TEST_CONTEXT(mode) {
        Config c{.mode = mode, .layers = 2, .bidirectional = true, .with_h0 = true, .T = 4, .B = 1, .I = 3, .H = 6};
        ops::Generator gen(7);
        auto m = make_module(c, gen);
        m->to(DType::f64);
        Tensor x = ou::random_tensor<double>({c.T, c.I}, 71);
        Tensor h0 = ou::random_tensor<double>({4, c.H}, 72), c0 = ou::random_tensor<double>({4, c.H}, 73);
        std::vector<Tensor> in{x, h0};
        if (c.mode == "lstm") in.push_back(c0);
        std::vector<Tensor> outs = m->forward_many(in);
        Values v{ou::values(x), ou::values(h0), ou::values(c0), params_of(*m, c)};
        Outputs ref = reference(c, v);
        BOOST_TEST((outs[0].shape() == ou::Shape{c.T, 2 * c.H}));
        BOOST_TEST((outs[1].shape() == ou::Shape{4, c.H}));
        ou::check_values(outs[0], ref.out, 1e-12, "unbatched output");
        ou::check_values(outs[1], ref.hn, 1e-12, "unbatched h_n");
        if (c.mode == "lstm") ou::check_values(outs[2], ref.cn, 1e-12, "unbatched c_n");

        // Cells: one step of a one-layer module.
        for (bool bias : {true, false}) {
          const int64_t B = 5, I = 4, H = 9;
          ops::Generator g2(8);
          std::unique_ptr<nn::RNNCellBase> cell;
          const std::string md = mode;
          if (md == "lstm") cell = std::make_unique<nn::LSTMCell>(I, H, bias, g2);
          else if (md == "gru") cell = std::make_unique<nn::GRUCell>(I, H, bias, g2);
          else cell = std::make_unique<nn::RNNCell>(I, H, bias, md == "rnn_relu" ? "relu" : "tanh", g2);
          cell->to(DType::f64);
          Tensor cx = ou::random_tensor<double>({B, I}, 81), ch = ou::random_tensor<double>({B, H}, 82);
          Tensor cc = ou::random_tensor<double>({B, H}, 83);
          std::vector<Tensor> cin{cx, ch};
          if (md == "lstm") cin.push_back(cc);
          std::vector<Tensor> cout = cell->forward_many(cin);
          Config one{.mode = mode, .bias = bias, .T = 1, .B = B, .I = I, .H = H};
          Values cv{ou::values(cx), ou::values(ch), ou::values(cc),
                    {{ou::values(cell->weight_ih), ou::values(cell->weight_hh), bias ? ou::values(cell->bias_ih) : Vec{},
                      bias ? ou::values(cell->bias_hh) : Vec{}}}};
          Outputs cref = reference(one, cv);
          ou::check_values(cout[0], cref.hn, 1e-12, "cell h'");
          if (md == "lstm") ou::check_values(cout[1], cref.cn, 1e-12, "cell c'");
          // Unbatched, zero state: h' of row 0 with h = 0.
          std::vector<Tensor> u = cell->forward_many({cx.select(0, 0)});
          BOOST_TEST((u[0].shape() == ou::Shape{H}));
          Config one_row = one;
          one_row.B = 1;
          Values uv{Vec(cv.x.begin(), cv.x.begin() + I), Vec(size_t(H), 0.0), Vec(size_t(H), 0.0), cv.p};
          ou::check_values(u[0], reference(one_row, uv).hn, 1e-12, "unbatched cell h'");
        }
      }
    }
  });
}

// Dropout between layers: training with p = 1 zeroes the second layer's input (its output is the
// recurrence over zeros), eval ignores it; the last layer's output is never dropped.
BOOST_AUTO_TEST_CASE(dropout_between_layers_in_training_only) {
  tt::for_each_backend([&](const tt::Backend&) {
    Config c{.mode = "lstm", .layers = 2, .T = 3, .B = 2, .I = 3, .H = 4};
    ops::Generator gen(3);
    nn::LSTM m(nn::LSTMOptions(c.I, c.H).num_layers(2).dropout(1.0), gen);
    m.to(DType::f64);
    Tensor x = ou::random_tensor<double>({c.T, c.B, c.I}, 91);
    Values v{ou::values(x), Vec(size_t(2 * c.B * c.H), 0.0), Vec(size_t(2 * c.B * c.H), 0.0), params_of(m, c)};
    ou::check_values(m.forward_many({x})[0], reference(c, v, /*zero_between_layers=*/true).out, 1e-12,
                     "training, dropout 1");
    m.eval();
    ou::check_values(m.forward_many({x})[0], reference(c, v).out, 1e-12, "eval");
    BOOST_TEST(m.str() == "LSTM(3, 4, num_layers=2, dropout=1.0)");
  });
}

// PyTorch's parameter names and shapes (state_dict keys), uniform(-1/sqrt(H), 1/sqrt(H)) init, repr.
BOOST_AUTO_TEST_CASE(parameters_init_and_repr) {
  tt::for_each_backend([&](const tt::Backend&) {
    nn::LSTM lstm(nn::LSTMOptions(10, 20).num_layers(2).bias(false).batch_first(true).dropout(0.5).bidirectional(true));
    BOOST_TEST(lstm.str() == "LSTM(10, 20, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True)");
    std::vector<std::string> names;
    for (auto& [n, p] : lstm.named_parameters()) names.push_back(n);
    std::vector<std::string> want = {"weight_ih_l0", "weight_hh_l0", "weight_ih_l0_reverse", "weight_hh_l0_reverse",
                                     "weight_ih_l1", "weight_hh_l1", "weight_ih_l1_reverse", "weight_hh_l1_reverse"};
    BOOST_TEST(names == want, boost::test_tools::per_element());
    BOOST_TEST((lstm.named_parameters()[4].second.shape() == ou::Shape{80, 40}));

    nn::GRU gru(3, 16);
    std::vector<std::string> gnames;
    for (auto& [n, p] : gru.state_dict()) gnames.push_back(n);
    BOOST_TEST(gnames == (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"}),
               boost::test_tools::per_element());
    BOOST_TEST((gru.named_parameters()[0].second.shape() == ou::Shape{48, 3}));
    double lo = 1, hi = -1;
    for (auto& [n, p] : gru.named_parameters())
      for (double e : ou::values(p)) lo = std::min(lo, e), hi = std::max(hi, e);
    BOOST_TEST(lo >= -0.25);
    BOOST_TEST(hi <= 0.25);
    BOOST_TEST(hi - lo > 0.4);  // drawn over the whole range

    BOOST_TEST(nn::RNN(nn::RNNOptions(10, 20).nonlinearity("relu")).str() == "RNN(10, 20, nonlinearity=relu)");
    BOOST_TEST(nn::GRU(3, 4).str() == "GRU(3, 4)");
    BOOST_TEST(nn::RNNCell(3, 4, false, "relu").str() == "RNNCell(3, 4, bias=False, nonlinearity=relu)");
    BOOST_TEST(nn::LSTMCell(3, 4).str() == "LSTMCell(3, 4)");
    nn::GRUCell gc(3, 4);
    std::vector<std::string> cnames;
    for (auto& [n, p] : gc.named_parameters()) cnames.push_back(n);
    BOOST_TEST(cnames == (std::vector<std::string>{"weight_ih", "weight_hh", "bias_ih", "bias_hh"}),
               boost::test_tools::per_element());
    BOOST_TEST((gc.weight_ih.shape() == ou::Shape{12, 3}));
  });
}

// PyTorch's errors for bad arguments and inputs.
BOOST_AUTO_TEST_CASE(bad_arguments_are_clear_errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    tt::check_throws([] { nn::LSTM(nn::LSTMOptions(10, 20).dropout(1.5)); },
                     {"LSTM", "dropout should be a number in range [0, 1]", "1.5"});
    tt::check_throws([] { nn::GRU(nn::GRUOptions(10, 20).dropout(-0.1)); }, {"GRU", "dropout should be a number"});
    tt::check_throws([] { nn::LSTM(nn::LSTMOptions(10, 20).num_layers(0)); }, {"num_layers must be greater than zero"});
    tt::check_throws([] { nn::LSTM(10, 0); }, {"hidden_size must be greater than zero"});
    tt::check_throws([] { nn::RNN(nn::RNNOptions(10, 20).nonlinearity("sigmoid")); },
                     {"Unknown nonlinearity 'sigmoid'", "'tanh' or 'relu'"});
    tt::check_throws([] { nn::RNNCell(10, 20, true, "gelu"); }, {"RNNCell", "Unknown nonlinearity 'gelu'"});

    nn::LSTM lstm(nn::LSTMOptions(10, 20).num_layers(2));
    Tensor x = ops::rand({3, 2, 10});
    tt::check_throws([&] { lstm.forward_many({ops::rand({3, 2, 5})}); },
                     {"LSTM", "input.size(-1) must be equal to input_size. Expected 10, got 5"});
    tt::check_throws([&] { lstm.forward_many({x, ops::rand({1, 2, 20}), ops::rand({2, 2, 20})}); },
                     {"Expected hidden[0] size (2, 2, 20), got [1, 2, 20]"});
    tt::check_throws([&] { lstm.forward_many({x, ops::rand({2, 2, 20}), ops::rand({2, 3, 20})}); },
                     {"Expected hidden[1] size (2, 2, 20), got [2, 3, 20]"});
    tt::check_throws([&] { lstm.forward_many({x, ops::rand({2, 2, 20})}); }, {"give both h0 and c0"});
    tt::check_throws([&] { lstm.forward(x); }, {"LSTM", "forward_many"});
    nn::GRU gru(10, 20);
    tt::check_throws([&] { gru.forward_many({ops::rand({3, 2, 2, 10})}); },
                     {"GRU: Expected input to be 2D or 3D, got 4D instead"});
    tt::check_throws([&] { gru.forward_many({ops::rand({10})}); }, {"GRU: Expected input to be 2D or 3D, got 1D"});
    tt::check_throws([&] { gru.forward_many({ops::rand({3, 10}), ops::rand({1, 2, 20})}); },
                     {"For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"});
    tt::check_throws([&] { gru.forward_many({x, ops::rand({2, 20})}); },
                     {"For batched 3-D input, hx should also be 3-D but got 2-D tensor"});
    tt::check_throws([&] { gru.forward_many({x, ops::rand({1, 2, 20}, ops::default_generator(), DType::f64)}); },
                     {"GRU", "dtype"});
    tt::check_throws([&] { gru.forward_many({ops::rand({0, 2, 10})}); }, {"sequence length to be larger than 0"});
    nn::GRU gru_bf(nn::GRUOptions(10, 20).batch_first(true));
    tt::check_throws([&] { gru_bf.forward_many({ops::rand({2, 3, 7})}); }, {"Expected 10, got 7"});

    nn::GRUCell cell(10, 20);
    tt::check_throws([&] { cell.forward_many({ops::rand({3, 5})}); },
                     {"GRUCell", "input has inconsistent input_size: got 5 expected 10"});
    tt::check_throws([&] { cell.forward_many({ops::rand({3, 10}), ops::rand({2, 20})}); },
                     {"Input batch size 3 doesn't match hidden0 batch size 2"});
    tt::check_throws([&] { cell.forward_many({ops::rand({3, 10}), ops::rand({3, 19})}); },
                     {"hidden0 has inconsistent hidden_size: got 19, expected 20"});
    tt::check_throws([&] { cell.forward_many({ops::rand({2, 3, 10})}); },
                     {"GRUCell: Expected input to be 1D or 2D, got 3D instead"});
    nn::LSTMCell lcell(10, 20);
    tt::check_throws([&] { lcell.forward(ops::rand({3, 10})); }, {"LSTMCell", "forward_many"});

    // The raw op's own checks.
    Tensor gx = ops::rand({3, 2, 8}), h0 = ops::rand({2, 2}), w = ops::rand({8, 2});
    tt::check_throws([&] { ops::rnn_recurrence(ops::RnnMode::lstm, gx, h0, Tensor(), w, {}, {}, false); },
                     {"rnn_recurrence", "c0 is missing for mode lstm"});
    tt::check_throws([&] { ops::rnn_recurrence(ops::RnnMode::gru, gx, h0, Tensor(), w, {}, {}, false); },
                     {"rnn_recurrence", "does not match h0"});
    tt::check_throws([&] { ops::rnn_recurrence(ops::RnnMode::lstm, gx, h0, h0, ops::rand({8, 3}), {}, {}, false); },
                     {"rnn_recurrence", "w_hh must be [8, 2]"});
    tt::check_throws([&] { ops::rnn_mode("sigmoid"); }, {"unknown mode 'sigmoid'"});
  });
}

// PyTorch's modules (its own initialisation, saved with save_file(state_dict)) load by name and give
// PyTorch's outputs and gradients (of sum(out_i * grad_out_i)) for the input, h0, c0, each parameter.
BOOST_AUTO_TEST_CASE(pytorch_checkpoints_reproduce_outputs_and_gradients) {
  namespace io = tritium::io;
  tt::for_each_backend([&](const tt::Backend& be) {
    for (std::string name : {"lstm", "gru", "rnn_relu", "rnn_unbatched", "lstm_cell", "gru_cell"}) {
      BOOST_TEST_CONTEXT(name) {
        const auto dir = tt::fixtures_dir() / "torch_modules";
        io::Safetensors f = io::load_safetensors((dir / ("rnn_" + name + "_io.safetensors")).string(), be.device);
        io::Json cfg = io::parse_json(f.metadata.at("config"), "config");
        auto num = [&](const char* k, int64_t dflt) { const io::Json* j = cfg.find(k); return j ? j->as_int64(k) : dflt; };
        auto flag = [&](const char* k, bool dflt) { const io::Json* j = cfg.find(k); return j ? j->as_bool(k) : dflt; };
        const std::string module = cfg.at("module", "config").as_string("module");
        const int64_t in = num("input_size", 0), hidden = num("hidden_size", 0);
        std::unique_ptr<nn::Module> m;
        const nn::RNNOptions o = nn::RNNOptions(in, hidden)
                                     .num_layers(num("num_layers", 1))
                                     .bias(flag("bias", true))
                                     .batch_first(flag("batch_first", false))
                                     .bidirectional(flag("bidirectional", false))
                                     .nonlinearity(cfg.find("nonlinearity") ? cfg.at("nonlinearity", "config").as_string("nonlinearity") : "tanh");
        if (module == "LSTM") m = std::make_unique<nn::LSTM>(o);
        else if (module == "GRU") m = std::make_unique<nn::GRU>(o);
        else if (module == "RNN") m = std::make_unique<nn::RNN>(o);
        else if (module == "LSTMCell") m = std::make_unique<nn::LSTMCell>(in, hidden, o.bias_);
        else if (module == "GRUCell") m = std::make_unique<nn::GRUCell>(in, hidden, o.bias_);
        else BOOST_FAIL("unknown module " << module);
        std::vector<std::string> torch_keys;
        const io::Json keys = io::parse_json(f.metadata.at("keys"), "keys");
        for (const io::Json& k : keys.as_array("keys"))
          torch_keys.push_back(k.as_string("key"));
        BOOST_TEST(m->state_dict().keys() == torch_keys, boost::test_tools::per_element());
        nn::LoadStateDictResult r = nn::load(*m, (dir / ("rnn_" + name + ".safetensors")).string());
        BOOST_TEST(r.missing_keys.empty());

        std::vector<std::string> in_names{"input"};
        if (f.tensors.count("h0")) in_names.push_back("h0");
        if (f.tensors.count("c0")) in_names.push_back("c0");
        std::vector<Tensor> inputs;
        for (const std::string& n : in_names) {
          Tensor t = f.tensors.at(n).clone();
          t.requires_grad_();
          inputs.push_back(t);
        }
        std::vector<Tensor> outs = m->forward_many(inputs);
        Tensor loss;
        for (size_t i = 0; i < outs.size(); ++i) {
          ou::check_values(outs[i], ou::values(f.tensors.at(fmt::format("out{}", i))), 1e-5, fmt::format("out{}", i));
          Tensor term = tritium::sum(outs[i] * f.tensors.at(fmt::format("grad_out{}", i)));
          loss = loss.defined() ? loss + term : term;
        }
        BOOST_TEST(!f.tensors.count(fmt::format("out{}", outs.size())));
        loss.backward();
        for (size_t i = 0; i < inputs.size(); ++i)
          ou::check_values(inputs[i].grad(), ou::values(f.tensors.at("grad_" + in_names[i])), 1e-5, "grad_" + in_names[i]);
        for (auto& [k, p] : m->named_parameters())
          ou::check_values(p.grad(), ou::values(f.tensors.at("grad." + k)), 1e-5, "grad." + k);
      }
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
