// scaled_dot_product_attention (ops/attention.cpp, nn/functional.h): output and gradients against a
// float64 reference on every backend, at lengths that are not multiples of any block, query and key
// lengths apart (the causal mask top-left aligned, as PyTorch's), head dims that are not powers of
// two, strided inputs, f32 / f16 / bf16; and the bad inputs.
#include <cmath>
#include <random>
#include <vector>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "test_support.h"

namespace tt = tritium::test;
using tritium::DType;
using tritium::Tensor;

namespace {

struct Case {
  int64_t B, H, NQ, NK, D;
  bool causal;
  DType dtype;
  bool transposed;  // q, k, v given as [B, N, H, D] memory seen as [B, H, N, D] (strided)
};

std::vector<float> host(const Tensor& t) { return t.to(DType::f32).contiguous().to_vector<float>(); }

// softmax(q k^T * scale + mask) v and its gradients for dout, in float64; [BH, N, D] row-major.
void reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
               const std::vector<float>& g, const Case& c, double scale, std::vector<double>& o, std::vector<double>& dq,
               std::vector<double>& dk, std::vector<double>& dv) {
  const int64_t BH = c.B * c.H, NQ = c.NQ, NK = c.NK, D = c.D;
  o.assign(size_t(BH * NQ * D), 0), dq.assign(o.size(), 0), dk.assign(size_t(BH * NK * D), 0), dv.assign(dk.size(), 0);
  for (int64_t h = 0; h < BH; ++h) {
    const size_t qb = size_t(h * NQ * D), kb = size_t(h * NK * D);
    std::vector<double> p(size_t(NQ * NK));
    for (int64_t i = 0; i < NQ; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < NK; ++j) {
        double s = 0;
        for (int64_t d = 0; d < D; ++d) s += double(q[qb + i * D + d]) * k[kb + j * D + d];
        s = (c.causal && j > i) ? -INFINITY : s * scale;
        p[size_t(i * NK + j)] = s, mx = std::max(mx, s);
      }
      double sum = 0;
      for (int64_t j = 0; j < NK; ++j) sum += (p[size_t(i * NK + j)] = std::exp(p[size_t(i * NK + j)] - mx));
      for (int64_t j = 0; j < NK; ++j) p[size_t(i * NK + j)] /= sum;
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < NK; ++j) o[qb + i * D + d] += p[size_t(i * NK + j)] * v[kb + j * D + d];
    }
    for (int64_t i = 0; i < NQ; ++i) {
      double delta = 0;
      for (int64_t d = 0; d < D; ++d) delta += double(g[qb + i * D + d]) * o[qb + i * D + d];
      for (int64_t j = 0; j < NK; ++j) {
        double dp = 0;
        for (int64_t d = 0; d < D; ++d) dp += double(g[qb + i * D + d]) * v[kb + j * D + d];
        const double pij = p[size_t(i * NK + j)], ds = pij * (dp - delta);
        for (int64_t d = 0; d < D; ++d) {
          dq[qb + i * D + d] += ds * k[kb + j * D + d] * scale;
          dk[kb + j * D + d] += ds * q[qb + i * D + d] * scale;
          dv[kb + j * D + d] += pij * g[qb + i * D + d];
        }
      }
    }
  }
}

double rel(const std::vector<float>& got, const std::vector<double>& ref) {
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    d2 += (got[i] - ref[i]) * (got[i] - ref[i]), r2 += ref[i] * ref[i];
  }
  return std::sqrt(d2 / std::max(r2, 1e-300));
}

void run_case(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto make = [&](int64_t n) {
    std::vector<float> h(size_t(c.B * c.H * n * c.D));
    for (auto& x : h) x = normal(rng);
    Tensor t = c.transposed ? Tensor::from_vector(h, {c.B, n, c.H, c.D}).to(c.dtype).permute({0, 2, 1, 3})
                            : Tensor::from_vector(h, {c.B, c.H, n, c.D}).to(c.dtype);
    return t.requires_grad_();
  };
  Tensor q = make(c.NQ), k = make(c.NK), v = make(c.NK);
  Tensor g = make(c.NQ).detach();
  const double scale = c.D == 48 ? 0.3 : 1.0 / std::sqrt(double(c.D));
  Tensor o = tritium::scaled_dot_product_attention(q, k, v, c.causal, c.D == 48 ? std::optional<double>(0.3) : std::nullopt);
  o.backward(g, false);
  std::vector<double> ro, rdq, rdk, rdv;
  reference(host(q), host(k), host(v), host(g), c, scale, ro, rdq, rdk, rdv);
  // DESIGN.md's bounds: f32 (exact fp32 dots by default) 1e-5; f16 1e-3 (P and dS rounded to f16
  // before their dots: 3e-3); bf16 1e-2 (2e-2 for the same reason).
  const double tol = c.dtype == DType::f32 ? 1e-5 : c.dtype == DType::f16 ? 3e-3 : 2e-2;
  BOOST_TEST_CONTEXT("B=" << c.B << " H=" << c.H << " NQ=" << c.NQ << " NK=" << c.NK << " D=" << c.D << " causal="
                          << c.causal << " " << tritium::dtype_name(c.dtype) << (c.transposed ? " strided" : "")) {
    BOOST_TEST(rel(host(o), ro) <= tol);
    BOOST_TEST(rel(host(q.grad()), rdq) <= tol);
    BOOST_TEST(rel(host(k.grad()), rdk) <= tol);
    BOOST_TEST(rel(host(v.grad()), rdv) <= tol);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_attention)

BOOST_AUTO_TEST_CASE(matches_float64_at_any_length) {
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 0;
    for (const Case& c : std::vector<Case>{
             {1, 2, 77, 77, 64, true, DType::f16, false},   // lengths off the blocks
             {2, 1, 40, 130, 32, false, DType::f16, false},  // more keys than queries
             {1, 1, 130, 45, 64, true, DType::f16, false},   // causal, top-left: later queries see every key
             {1, 2, 33, 50, 48, true, DType::f32, true},     // head dim 48 (padded to 64), a scale, strided
             {1, 1, 64, 64, 128, false, DType::bf16, false},
             {1, 1, 17, 9, 16, false, DType::f32, false},
         })
      run_case(c, ++seed);
  });
}

// The test binary picks attention's tiles by heuristic (TRITIUM_AUTOTUNE=heuristic, tests/main.cpp);
// here the tuner benchmarks every candidate, as the product does by default, and the kernels it
// picks (forward and both backward kernels) are checked.
BOOST_AUTO_TEST_CASE(tuned_tiles_match_float64) {
  tt::ScopedEnv tune("TRITIUM_AUTOTUNE", "tune");
  tt::for_each_backend([&](const tt::Backend&) {
    run_case({1, 2, 150, 150, 64, true, DType::f16, false}, 41);
    run_case({1, 1, 70, 96, 32, false, DType::f32, false}, 42);
  });
}

// q, k and v as head views of one projection [B, N, 3 H D] (GPT's c_attn output split and
// viewed as [B, H, N, D]): the forward writes the output, and the backward each gradient, in its
// input's dimension order (the backward reads q, k and v through their strides, no copy), so the
// transpose back to [B, N, H, D] is contiguous and the reshape to [B, N, H D] a view. Values against the float64 reference, through
// the packed leaf's gradient.
BOOST_AUTO_TEST_CASE(head_views_of_one_projection_get_gradients_in_their_layout) {
  tt::for_each_backend([&](const tt::Backend&) {
    const int64_t B = 2, N = 37, H = 3, D = 16, C = H * D;
    const Case c{B, H, N, N, D, true, DType::f32, false};
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> h(size_t(B * N * 3 * C)), hg(size_t(B * N * C));
    for (auto& x : h) x = normal(rng);
    for (auto& x : hg) x = normal(rng);
    Tensor qkv = Tensor::from_vector(h, {B, N, 3 * C}).requires_grad_();
    auto heads = [&](int part) { return qkv.slice(2, part * C, (part + 1) * C).view({B, N, H, D}).transpose(1, 2); };
    Tensor q = heads(0), k = heads(1), v = heads(2);
    Tensor g = Tensor::from_vector(hg, {B, H, N, D});
    Tensor o = tritium::scaled_dot_product_attention(q, k, v, true);
    o.backward(g, false);
    std::vector<double> ro, rdq, rdk, rdv;
    reference(host(q), host(k), host(v), host(g), c, 1.0 / std::sqrt(double(D)), ro, rdq, rdk, rdv);
    auto grad_of = [&](int part) {
      return qkv.grad().slice(2, part * C, (part + 1) * C).view({B, N, H, D}).transpose(1, 2);
    };
    BOOST_TEST(rel(host(o), ro) <= 1e-5);
    BOOST_TEST(o.transpose(1, 2).is_contiguous());  // the output in q's order: [B, N, C] is a view
    BOOST_TEST(rel(host(grad_of(0)), rdq) <= 1e-5);
    BOOST_TEST(rel(host(grad_of(1)), rdk) <= 1e-5);
    BOOST_TEST(rel(host(grad_of(2)), rdv) <= 1e-5);

    tritium::nn::NoGradGuard no_grad;
    auto fwd = tritium::ops::scaled_dot_product_attention_forward(q, k, v, true, std::nullopt);
    auto grads = tritium::ops::scaled_dot_product_attention_backward(g, q, k, v, fwd.out, fwd.lse, true, std::nullopt);
    for (const Tensor* d : {&grads.dq, &grads.dk, &grads.dv}) {
      BOOST_TEST(d->shape() == q.shape());
      BOOST_TEST(d->transpose(1, 2).is_contiguous());  // [B, N, H, D] memory: reshape to [B, N, C] is a view
    }
    BOOST_TEST(rel(host(grads.dq), rdq) <= 1e-5);
    BOOST_TEST(rel(host(grads.dv), rdv) <= 1e-5);
  });
}

BOOST_AUTO_TEST_CASE(bad_inputs_are_clear_errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto t = [](std::vector<int64_t> s, DType d = DType::f16) { return tritium::ops::zeros(s, d); };
    auto expect = [](auto fn, const char* text) {
      try {
        fn();
        BOOST_ERROR("no error, expected: " << text);
      } catch (const tritium::Error& e) {
        BOOST_TEST(std::string(e.what()).find(text) != std::string::npos, e.what());
      }
    };
    expect([&] { tritium::ops::scaled_dot_product_attention(t({2, 8, 16}), t({2, 8, 16}), t({2, 8, 16})); },
           "expects [batch, heads, length, head dim]");
    expect([&] { tritium::ops::scaled_dot_product_attention(t({1, 1, 8, 16}), t({1, 1, 8, 16}, DType::f32), t({1, 1, 8, 16})); },
           "must have one dtype");
    expect([&] { tritium::ops::scaled_dot_product_attention(t({1, 1, 8, 16}), t({1, 1, 8, 32}), t({1, 1, 8, 32})); },
           "one head dim");
    expect([&] { tritium::ops::scaled_dot_product_attention(t({1, 2, 8, 16}), t({1, 1, 8, 16}), t({1, 1, 8, 16})); },
           "same batch and heads");
    expect([&] { tritium::ops::scaled_dot_product_attention(t({1, 1, 8, 16}), t({1, 1, 8, 16}), t({1, 1, 9, 16})); },
           "same length");
    expect([&] { tritium::ops::scaled_dot_product_attention(t({1, 1, 8, 16}), t({1, 1, 0, 16}), t({1, 1, 0, 16})); },
           "no keys");
    expect([&] {
      tritium::ops::scaled_dot_product_attention(t({1, 1, 8, 16}, DType::i32), t({1, 1, 8, 16}, DType::i32),
                                                 t({1, 1, 8, 16}, DType::i32));
    }, "supports f16, bf16 and f32");
  });
}

BOOST_AUTO_TEST_SUITE_END()
