// The GPT model (nn/gpt.h) on every backend: parameter names and shapes (nanoGPT's), the head tied
// to the token embedding, logits and loss against a float64 host transformer written here, the
// loss's gradients against central differences of that reference, causal masking (a later token
// changes no earlier logit), generation with the key/value cache equal to recomputing the sequence
// at every step (also past the context), top-k / top-p filtering and sampling on known
// distributions, and the errors (prompt too long or empty, top_p, temperature, top_k, config).
#include <cmath>
#include <map>
#include <numeric>

#include "fixtures_dir.h"
#include "io/safetensors.h"
#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/gpt.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
namespace nn = tritium::nn;
using tritium::DType;
using tritium::Generator;
using tritium::Tensor;

namespace {

using Vec = std::vector<double>;
using Params = std::map<std::string, Vec>;

nn::GPTConfig tiny_config(bool bias = true) {
  return nn::GPTConfig{.vocab_size = 13, .block_size = 9, .n_layer = 2, .n_head = 2, .n_embd = 8, .dropout = 0.0,
                       .bias = bias};
}

// Every parameter replaced by random values of order 1 (LayerNorm weights around 1), so that the
// reference comparison and the gradients are not dominated by the small initialisation.
Params randomise(nn::GPT& model, uint32_t seed) {
  Params out;
  nn::StateDict dict;
  for (auto& [name, p] : model.named_parameters()) {
    bool norm_weight = name.find("ln_") != std::string::npos && name.ends_with(".weight");
    Tensor v = ou::random_tensor<float>(p.shape(), seed++, norm_weight ? 0.5 : -0.5, norm_weight ? 1.5 : 0.5);
    dict.insert(name, v);
    out[name] = ou::values(v);
  }
  model.load_state_dict(dict);
  return out;
}

Tensor tokens_tensor(const std::vector<int64_t>& ids, int64_t B, int64_t T) { return Tensor::from_vector(ids, {B, T}); }

std::vector<int64_t> random_tokens(size_t n, int64_t vocab, uint32_t seed) {
  auto r = tt::random_vector<double>(n, seed, 0, static_cast<double>(vocab) - 1e-9);
  std::vector<int64_t> out;
  for (double x : r) out.push_back(static_cast<int64_t>(std::floor(x)));
  return out;
}

// ---- the float64 reference transformer -------------------------------------------------------------

struct Ref {
  const nn::GPTConfig& c;
  const Params& P;
  const Vec& p(const std::string& name) const { return P.at(name); }
  Vec layer_norm(const Vec& x, const std::string& prefix) const {  // rows of C
    const int64_t C = c.n_embd;
    Vec y(x.size());
    for (size_t r = 0; r < x.size() / static_cast<size_t>(C); ++r) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < C; ++i) mean += x[r * C + i];
      mean /= static_cast<double>(C);
      for (int64_t i = 0; i < C; ++i) var += (x[r * C + i] - mean) * (x[r * C + i] - mean);
      var /= static_cast<double>(C);
      for (int64_t i = 0; i < C; ++i) {
        double b = c.bias ? p(prefix + ".bias")[static_cast<size_t>(i)] : 0.0;
        y[r * C + i] = (x[r * C + i] - mean) / std::sqrt(var + 1e-5) * p(prefix + ".weight")[static_cast<size_t>(i)] + b;
      }
    }
    return y;
  }
  Vec linear(const Vec& x, int64_t in, int64_t out, const std::string& prefix) const {
    const Vec& W = p(prefix + ".weight");
    Vec y(x.size() / static_cast<size_t>(in) * static_cast<size_t>(out));
    for (size_t r = 0; r < x.size() / static_cast<size_t>(in); ++r)
      for (int64_t o = 0; o < out; ++o) {
        double s = c.bias ? p(prefix + ".bias")[static_cast<size_t>(o)] : 0.0;
        for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * W[static_cast<size_t>(o * in + i)];
        y[r * out + o] = s;
      }
    return y;
  }
  // logits [B, T, V] of tokens [B, T].
  Vec logits(const std::vector<int64_t>& tok, int64_t B, int64_t T) const {
    const int64_t C = c.n_embd, H = c.n_head, D = C / H, V = c.vocab_size;
    Vec x(static_cast<size_t>(B * T * C));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < C; ++i)
          x[static_cast<size_t>((b * T + t) * C + i)] = p("transformer.wte.weight")[static_cast<size_t>(tok[b * T + t] * C + i)] +
                                                       p("transformer.wpe.weight")[static_cast<size_t>(t * C + i)];
    for (int64_t l = 0; l < c.n_layer; ++l) {
      std::string pre = "transformer.h." + std::to_string(l) + ".";
      Vec qkv = linear(layer_norm(x, pre + "ln_1"), C, 3 * C, pre + "attn.c_attn");
      Vec y(x.size(), 0.0);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t t = 0; t < T; ++t) {
            auto at = [&](int64_t s, int64_t part, int64_t d) { return qkv[static_cast<size_t>((b * T + s) * 3 * C + part * C + h * D + d)]; };
            Vec score(static_cast<size_t>(t + 1));
            double mx = -1e300;
            for (int64_t s = 0; s <= t; ++s) {
              double dot = 0;
              for (int64_t d = 0; d < D; ++d) dot += at(t, 0, d) * at(s, 1, d);
              score[static_cast<size_t>(s)] = dot / std::sqrt(static_cast<double>(D));
              mx = std::max(mx, score[static_cast<size_t>(s)]);
            }
            double z = 0;
            for (double& s : score) z += (s = std::exp(s - mx));
            for (int64_t d = 0; d < D; ++d) {
              double acc = 0;
              for (int64_t s = 0; s <= t; ++s) acc += score[static_cast<size_t>(s)] / z * at(s, 2, d);
              y[static_cast<size_t>((b * T + t) * C + h * D + d)] = acc;
            }
          }
      Vec proj = linear(y, C, C, pre + "attn.c_proj");
      for (size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
      Vec f = linear(layer_norm(x, pre + "ln_2"), C, 4 * C, pre + "mlp.c_fc");
      for (double& v : f) v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      Vec m = linear(f, 4 * C, C, pre + "mlp.c_proj");
      for (size_t i = 0; i < x.size(); ++i) x[i] += m[i];
    }
    Vec xf = layer_norm(x, "transformer.ln_f");
    Vec out(static_cast<size_t>(B * T * V));
    for (int64_t r = 0; r < B * T; ++r)
      for (int64_t v = 0; v < V; ++v) {
        double s = 0;
        for (int64_t i = 0; i < C; ++i) s += xf[static_cast<size_t>(r * C + i)] * p("transformer.wte.weight")[static_cast<size_t>(v * C + i)];
        out[static_cast<size_t>(r * V + v)] = s;
      }
    return out;
  }
  double loss(const std::vector<int64_t>& tok, const std::vector<int64_t>& tgt, int64_t B, int64_t T) const {
    Vec lg = logits(tok, B, T);
    const int64_t V = c.vocab_size;
    double sum = 0;
    for (int64_t r = 0; r < B * T; ++r) {
      double mx = -1e300, z = 0;
      for (int64_t v = 0; v < V; ++v) mx = std::max(mx, lg[static_cast<size_t>(r * V + v)]);
      for (int64_t v = 0; v < V; ++v) z += std::exp(lg[static_cast<size_t>(r * V + v)] - mx);
      sum += -(lg[static_cast<size_t>(r * V + tgt[static_cast<size_t>(r)])] - mx - std::log(z));
    }
    return sum / static_cast<double>(B * T);
  }
};

template <class F> void expect_error(F&& f, const std::string& fragment) {
  try {
    f();
    BOOST_ERROR("expected an error containing: " << fragment);
  } catch (const tritium::Error& e) {
    BOOST_TEST(std::string(e.what()).find(fragment) != std::string::npos, "message: " << e.what());
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_gpt)

BOOST_AUTO_TEST_CASE(names_shapes_and_tied_head) {
  tt::for_each_backend([&](const tt::Backend&) {
    Generator gen(1);
    nn::GPT model(tiny_config(), gen);
    std::vector<std::string> names;
    for (auto& [name, p] : model.named_parameters()) names.push_back(name);
    std::vector<std::string> want = {"transformer.wte.weight", "transformer.wpe.weight"};
    for (int l = 0; l < 2; ++l)
      for (const char* s : {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                            "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                            "mlp.c_proj.weight", "mlp.c_proj.bias"})
        want.push_back("transformer.h." + std::to_string(l) + "." + s);
    want.push_back("transformer.ln_f.weight");
    want.push_back("transformer.ln_f.bias");
    BOOST_TEST(names == want, boost::test_tools::per_element());
    BOOST_TEST(model.state_dict().keys() == want, boost::test_tools::per_element());
    // 13*8 + 9*8 + 2 * (2*8 + 8*24+24 + 8*8+8 + 2*8 + 8*32+32 + 32*8+8) + 2*8
    BOOST_TEST(model.num_parameters() == 13 * 8 + 9 * 8 + 2 * (16 + 216 + 72 + 16 + 288 + 264) + 16);
    BOOST_TEST(model.num_parameters_without_positions() == model.num_parameters() - 9 * 8);

    // nanoGPT's initialisation: N(0, 0.02), the residual projections N(0, 0.02 / sqrt(2 * 2)),
    // biases zero, LayerNorms ones and zeros.
    auto stddev = [](const Vec& v) {
      double m = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()), s = 0;
      for (double x : v) s += (x - m) * (x - m);
      return std::sqrt(s / static_cast<double>(v.size()));
    };
    auto sd = model.state_dict();
    BOOST_TEST(std::abs(stddev(ou::values(sd.at("transformer.h.0.mlp.c_fc.weight"))) - 0.02) < 0.003);
    BOOST_TEST(std::abs(stddev(ou::values(sd.at("transformer.h.1.mlp.c_proj.weight"))) - 0.01) < 0.0015);
    BOOST_TEST(std::abs(stddev(ou::values(sd.at("transformer.h.0.attn.c_proj.weight"))) - 0.01) < 0.002);
    for (double v : ou::values(sd.at("transformer.h.0.attn.c_attn.bias"))) BOOST_TEST(v == 0.0);
    for (double v : ou::values(sd.at("transformer.ln_f.weight"))) BOOST_TEST(v == 1.0);

    // The head is the embedding: a token that is never an input still gets a gradient (through the
    // head alone), and changing its embedding row changes its logit.
    Tensor x = tokens_tensor({1, 2, 3, 1, 2, 3}, 2, 3);
    Tensor logits = model(x);
    BOOST_TEST((logits.shape() == std::vector<int64_t>{2, 3, 13}));
    Tensor loss = model.loss(x, tokens_tensor({2, 3, 1, 2, 3, 1}, 2, 3));
    loss.backward();
    Vec g = ou::values(model.wte->weight.grad());
    double row12 = 0;
    for (int i = 0; i < 8; ++i) row12 += std::abs(g[static_cast<size_t>(12 * 8 + i)]);
    BOOST_TEST(row12 > 0.0);
  });
}

BOOST_AUTO_TEST_CASE(logits_and_loss_match_float64_reference) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (bool bias : {true, false}) {
      BOOST_TEST_CONTEXT("bias " << bias) {
        Generator gen(2);
        nn::GPTConfig cfg = tiny_config(bias);
        nn::GPT model(cfg, gen);
        Params P = randomise(model, 10);
        const int64_t B = 3, T = 7;  // T below the context, not a power of two
        auto tok = random_tokens(B * T, cfg.vocab_size, 20), tgt = random_tokens(B * T, cfg.vocab_size, 21);
        Ref ref{cfg, P};
        ou::check_values(model(tokens_tensor(tok, B, T)), ref.logits(tok, B, T), 1e-5, "logits");
        double loss = ou::values(model.loss(tokens_tensor(tok, B, T), tokens_tensor(tgt, B, T)))[0];
        BOOST_TEST(std::abs(loss - ref.loss(tok, tgt, B, T)) < 1e-5 * std::abs(ref.loss(tok, tgt, B, T)));
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(gradients_match_central_differences_of_the_reference) {
  tt::for_each_backend([&](const tt::Backend&) {
    Generator gen(3);
    nn::GPTConfig cfg = tiny_config();
    nn::GPT model(cfg, gen);
    Params P = randomise(model, 30);
    const int64_t B = 2, T = 9;  // the whole context
    auto tok = random_tokens(B * T, cfg.vocab_size, 40), tgt = random_tokens(B * T, cfg.vocab_size, 41);
    model.zero_grad();
    model.loss(tokens_tensor(tok, B, T), tokens_tensor(tgt, B, T)).backward();
    std::map<std::string, Vec> grads;
    for (auto& [name, p] : model.named_parameters()) grads[name] = ou::values(p.grad());
    // A few elements of every parameter, against (L(p + h) - L(p - h)) / 2h in float64.
    double worst = 0, scale = 0;
    uint32_t pick = 7;
    for (auto& [name, values] : P) {
      for (int k = 0; k < 3; ++k) {
        size_t i = (pick = pick * 1103515245u + 12345u) % values.size();
        Params Q = P;
        const double h = 1e-5;
        Q[name][i] = values[i] + h;
        double up = Ref{cfg, Q}.loss(tok, tgt, B, T);
        Q[name][i] = values[i] - h;
        double down = Ref{cfg, Q}.loss(tok, tgt, B, T);
        double numeric = (up - down) / (2 * h), analytic = grads.at(name)[i];
        worst = std::max(worst, std::abs(numeric - analytic));
        scale = std::max(scale, std::abs(numeric));
        BOOST_TEST(std::abs(numeric - analytic) <= 2e-4 + 2e-3 * std::abs(numeric), name << "[" << i << "]: numeric "
                                                                                          << numeric << ", autograd "
                                                                                          << analytic);
      }
    }
    BOOST_TEST(scale > 1e-2);  // the comparison is not between zeros
  });
}

BOOST_AUTO_TEST_CASE(later_tokens_do_not_change_earlier_logits) {
  tt::for_each_backend([&](const tt::Backend&) {
    Generator gen(4);
    nn::GPTConfig cfg = tiny_config();
    nn::GPT model(cfg, gen);
    randomise(model, 50);
    auto a = random_tokens(9, cfg.vocab_size, 60);
    for (int64_t t : {2, 5, 8}) {
      auto b = a;
      b[static_cast<size_t>(t)] = (a[static_cast<size_t>(t)] + 1) % cfg.vocab_size;
      Vec la = ou::values(model(tokens_tensor(a, 1, 9))), lb = ou::values(model(tokens_tensor(b, 1, 9)));
      const size_t V = 13;
      for (size_t i = 0; i < static_cast<size_t>(t) * V; ++i) BOOST_TEST(la[i] == lb[i], "position " << i / V << " changed by token " << t);
      double diff = 0;
      for (size_t i = static_cast<size_t>(t) * V; i < la.size(); ++i) diff += std::abs(la[i] - lb[i]);
      BOOST_TEST(diff > 1e-3, "token " << t << " changes its own logits");
    }
  });
}

BOOST_AUTO_TEST_CASE(cached_generation_equals_recomputing) {
  tt::for_each_backend([&](const tt::Backend&) {
    Generator gen(5);
    nn::GPTConfig cfg = tiny_config();
    nn::GPT model(cfg, gen);
    randomise(model, 70);
    model.train();
    // Two prompts of 3 tokens and 11 new ones: past the context of 9, where the window moves.
    Tensor prompt = tokens_tensor({1, 4, 7, 12, 0, 5}, 2, 3);
    for (bool greedy : {true, false}) {
      BOOST_TEST_CONTEXT("greedy " << greedy) {
        nn::GenerationConfig g{.max_new_tokens = 11, .temperature = 0.9, .top_k = 6, .top_p = 0.95, .greedy = greedy,
                               .seed = 3};
        std::vector<Tensor> cached_logits, plain_logits;
        Tensor cached = model.generate(prompt, g, &cached_logits);
        g.use_cache = false;
        Tensor plain = model.generate(prompt, g, &plain_logits);
        BOOST_TEST((cached.shape() == std::vector<int64_t>{2, 14}));
        BOOST_TEST(cached.to_vector<int64_t>() == plain.to_vector<int64_t>(), boost::test_tools::per_element());
        BOOST_TEST(cached_logits.size() == 11u);
        for (size_t s = 0; s < cached_logits.size(); ++s)
          ou::check_values(cached_logits[s], ou::values(plain_logits[s]), 1e-5, "step " + std::to_string(s));
        auto ids = cached.to_vector<int64_t>();
        BOOST_TEST((ids[0] == 1 && ids[1] == 4 && ids[2] == 7 && ids[14] == 12));  // the prompts kept
        // The greedy tokens are the argmax of the reference's logits of the whole sequence.
        if (greedy) {
          Vec last = ou::values(plain_logits[0]);
          int64_t best = std::max_element(last.begin(), last.begin() + 13) - last.begin();
          BOOST_TEST(ids[3] == best);
        }
      }
    }
    BOOST_TEST(model.is_training());  // generate restores the mode
    // A 1-D prompt gives a 1-D result; the same seed gives the same text.
    nn::GenerationConfig g{.max_new_tokens = 4, .seed = 9};
    Tensor one = model.generate(std::vector<int64_t>{3, 3}, g);
    BOOST_TEST((one.shape() == std::vector<int64_t>{6}));
    BOOST_TEST(one.to_vector<int64_t>() == model.generate(std::vector<int64_t>{3, 3}, g).to_vector<int64_t>(),
               boost::test_tools::per_element());
  });
}

BOOST_AUTO_TEST_CASE(top_k_and_top_p_on_known_distributions) {
  tt::for_each_backend([&](const tt::Backend&) {
    // Probabilities 0.05, 0.5, 0.1, 0.2, 0.15 (shuffled), as logits with an offset.
    const Vec probs = {0.05, 0.5, 0.1, 0.2, 0.15};
    std::vector<float> lg;
    for (double p : probs) lg.push_back(static_cast<float>(std::log(p) + 3.0));
    Tensor logits = Tensor::from_vector(lg, {1, 5});
    auto kept = [&](int64_t k, double p) {
      Vec v = ou::values(nn::filter_logits(logits, k, p));
      std::vector<int> out;
      for (size_t i = 0; i < v.size(); ++i) {
        if (std::isinf(v[i])) BOOST_TEST(v[i] < 0);
        else BOOST_TEST(v[i] == static_cast<double>(lg[i]));  // kept logits unchanged
        out.push_back(!std::isinf(v[i]));
      }
      return out;
    };
    BOOST_TEST(kept(0, 1.0) == (std::vector<int>{1, 1, 1, 1, 1}), boost::test_tools::per_element());
    BOOST_TEST(kept(2, 1.0) == (std::vector<int>{0, 1, 0, 1, 0}), boost::test_tools::per_element());
    BOOST_TEST(kept(3, 1.0) == (std::vector<int>{0, 1, 0, 1, 1}), boost::test_tools::per_element());
    BOOST_TEST(kept(0, 0.45) == (std::vector<int>{0, 1, 0, 0, 0}), boost::test_tools::per_element());
    BOOST_TEST(kept(0, 0.55) == (std::vector<int>{0, 1, 0, 1, 0}), boost::test_tools::per_element());
    BOOST_TEST(kept(0, 0.9) == (std::vector<int>{0, 1, 1, 1, 1}), boost::test_tools::per_element());
    BOOST_TEST(kept(2, 0.9) == (std::vector<int>{0, 1, 0, 1, 0}), boost::test_tools::per_element());
    BOOST_TEST(kept(4, 0.55) == (std::vector<int>{0, 1, 0, 1, 0}), boost::test_tools::per_element());

    // Sampling 3000 rows with top_k = 3 and temperature 1: the frequencies of the three kept
    // tokens are their renormalised probabilities (within 5 sigma), the others never appear.
    const int64_t N = 3000;
    std::vector<float> rows;
    for (int64_t r = 0; r < N; ++r) rows.insert(rows.end(), lg.begin(), lg.end());
    Generator gen(11);
    nn::GenerationConfig g{.temperature = 1.0, .top_k = 3};
    auto draws = nn::sample_next_token(Tensor::from_vector(rows, {N, 5}), g, gen).to_vector<int64_t>();
    std::vector<double> freq(5, 0);
    for (int64_t d : draws) freq[static_cast<size_t>(d)] += 1.0 / N;
    const double mass = 0.5 + 0.2 + 0.15;
    BOOST_TEST(freq[0] == 0.0);
    BOOST_TEST(freq[2] == 0.0);
    for (int i : {1, 3, 4}) {
      double p = probs[static_cast<size_t>(i)] / mass, sigma = std::sqrt(p * (1 - p) / N);
      BOOST_TEST(std::abs(freq[static_cast<size_t>(i)] - p) < 5 * sigma, "token " << i << ": " << freq[static_cast<size_t>(i)] << " vs " << p);
    }
    // Temperature 0.5 squares the probabilities (renormalised): 0.5^2 : 0.2^2.
    g = nn::GenerationConfig{.temperature = 0.5, .top_k = 2};
    draws = nn::sample_next_token(Tensor::from_vector(rows, {N, 5}), g, gen).to_vector<int64_t>();
    double f1 = static_cast<double>(std::count(draws.begin(), draws.end(), 1)) / N, p1 = 0.25 / (0.25 + 0.04);
    BOOST_TEST(std::abs(f1 - p1) < 5 * std::sqrt(p1 * (1 - p1) / N));
    // Greedy is the argmax.
    g = nn::GenerationConfig{.greedy = true};
    BOOST_TEST(nn::sample_next_token(logits, g, gen).to_vector<int64_t>()[0] == 1);
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Generator gen(6);
    nn::GPTConfig cfg = tiny_config();
    nn::GPT model(cfg, gen);
    std::vector<int64_t> ok = {1, 2, 3};
    expect_error([&] { model.generate(std::vector<int64_t>(10, 1), {.max_new_tokens = 1}); },
                 "the prompt has 10 tokens, longer than the context block_size = 9");
    expect_error([&] { model.generate(std::vector<int64_t>{}, {.max_new_tokens = 1}); }, "the prompt is empty");
    expect_error([&] { model.generate(Tensor::from_vector(std::vector<float>{1, 2}), {.max_new_tokens = 1}); },
                 "prompt tokens must be integers, got f32");
    expect_error([&] { model.generate(ok, {.top_p = 0.0}); }, "top_p must be in (0, 1], got 0");
    expect_error([&] { model.generate(ok, {.top_p = 1.5}); }, "top_p must be in (0, 1], got 1.5");
    expect_error([&] { model.generate(ok, {.temperature = 0.0}); }, "temperature must be a finite number above 0");
    expect_error([&] { model.generate(ok, {.temperature = -1.0}); }, "temperature must be a finite number above 0");
    model.generate(ok, {.max_new_tokens = 1, .temperature = 0.0, .greedy = true});  // greedy ignores temperature
    expect_error([&] { model.generate(ok, {.top_k = 14}); }, "top_k must be in [0, 13]");
    expect_error([&] { model.generate(ok, {.max_new_tokens = -1}); }, "max_new_tokens must be >= 0");
    expect_error([&] { model.generate(std::vector<int64_t>{1, 13}, {.max_new_tokens = 1}); },
                 "prompt token 13 is outside [0, vocab_size = 13)");
    expect_error([&] { model(tokens_tensor(std::vector<int64_t>(10, 1), 1, 10)); },
                 "10 positions exceed the context block_size = 9");
    expect_error([&] { model(Tensor::from_vector(std::vector<int64_t>{1, 2})); }, "tokens must be [batch, length]");
    expect_error([&] { model.loss(tokens_tensor(ok, 1, 3), tokens_tensor({1, 2}, 1, 2)); }, "must have the tokens' shape");
    nn::KVCache cache = model.make_cache(1);
    model.forward_cached(tokens_tensor({1, 2, 3, 4, 5, 6, 7}, 1, 7), cache);
    expect_error([&] { model.forward_cached(tokens_tensor({1, 2, 3}, 1, 3), cache); },
                 "3 positions after 7 cached ones exceed the context block_size = 9");
    expect_error([&] { model.forward_cached(tokens_tensor({1, 2, 1, 2}, 2, 2), cache); }, "for a cache of batch 1");
    auto bad = [](auto edit, const std::string& msg) {
      nn::GPTConfig c = tiny_config();
      edit(c);
      expect_error([&] { nn::GPT m(c); }, msg);
    };
    bad([](nn::GPTConfig& c) { c.n_embd = 9; }, "n_embd (9) must be divisible by n_head (2)");
    bad([](nn::GPTConfig& c) { c.n_layer = 0; }, "n_layer must be at least 1, got 0");
    bad([](nn::GPTConfig& c) { c.dropout = 1.0; }, "dropout must be in [0, 1), got 1");
    expect_error([&] { nn::filter_logits(Tensor::from_vector(std::vector<float>{1, 2}, {1, 2}), 3, 1.0); },
                 "top_k must be in [0, 2], got 3");
  });
}

BOOST_AUTO_TEST_CASE(cache_after_a_prompt_one_token_at_a_time) {
  tt::for_each_backend([&](const tt::Backend&) {
    // forward_cached of several tokens after a filled cache goes one position at a time: its
    // logits equal those of the whole sequence at once.
    Generator gen(7);
    nn::GPTConfig cfg = tiny_config();
    nn::GPT model(cfg, gen);
    randomise(model, 90);
    model.eval();
    auto tok = random_tokens(8, cfg.vocab_size, 91);
    Vec whole = ou::values(model(tokens_tensor(tok, 1, 8)));
    nn::KVCache cache = model.make_cache(1);
    Tensor first = model.forward_cached(tokens_tensor({tok.begin(), tok.begin() + 3}, 1, 3), cache);
    Tensor rest = model.forward_cached(tokens_tensor({tok.begin() + 3, tok.end()}, 1, 5), cache);
    BOOST_TEST(cache.length == 8);
    Vec got = ou::values(first);
    Vec more = ou::values(rest);
    got.insert(got.end(), more.begin(), more.end());
    ou::check_values(Tensor::from_vector(got), whole, 1e-5, "cached logits");
  });
}

BOOST_AUTO_TEST_CASE(pytorch_parity) {
  // bench/torch_gpt_reference.py's model (nanoGPT's names) with random weights, its logits, loss
  // and gradients (scripts/make_torch_gpt_fixtures.py): the same keys in the same order, and the
  // same numbers from the loaded checkpoint, the tied head's gradient included.
  tt::for_each_backend([&](const tt::Backend&) {
    auto dir = tt::fixtures_dir() / "torch_gpt";
    auto ckpt = tritium::io::load_safetensors((dir / "tiny.safetensors").string());
    auto io = tritium::io::load_safetensors((dir / "tiny_io.safetensors").string());
    Generator gen(8);
    nn::GPT model(tiny_config(), gen);
    std::string keys = "[";
    for (auto& [name, p] : model.named_parameters()) keys += (keys.size() > 1 ? ", \"" : "\"") + name + "\"";
    BOOST_TEST(keys + "]" == ckpt.metadata.at("keys"));
    model.load_state_dict(nn::StateDict(ckpt.tensors));
    const Tensor& tokens = io.tensors.at("tokens");
    const Tensor& targets = io.tensors.at("targets");
    ou::check_values(model(tokens), ou::values(io.tensors.at("logits")), 1e-5, "logits");
    Tensor loss = model.loss(tokens, targets);
    double want = ou::values(io.tensors.at("loss"))[0];
    BOOST_TEST(std::abs(ou::values(loss)[0] - want) < 1e-5 * want);
    loss.backward();
    for (auto& [name, p] : model.named_parameters())
      ou::check_values(p.grad(), ou::values(io.tensors.at("grad." + name)), 1e-4, "grad " + name);
  });
}

BOOST_AUTO_TEST_SUITE_END()
