// Every differentiable function of nn/functional.h and every differentiable Tensor view method,
// checked against central finite differences in float64: each input element is perturbed by
// ±1e-6, the scalar L = sum(w * f(x)) (fixed random weights w, so that no gradient is trivially
// symmetric) is evaluated without autograd, and (L+ - L-) / 2e-6 is compared with the gradient
// that backward(w) accumulated into the input's .grad. Every test runs on every backend
// (tt::for_each_backend): inputs live on the backend's device and are perturbed there by a fill
// kernel, never through a host pointer.
#include "test_support.h"
#include "gradcheck_support.h"

#include <functional>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "ops/ops.h"

namespace tt = tritium::test;
namespace T = tritium;
using tritium::DType;
using tritium::Tensor;
using Shape = std::vector<int64_t>;
using Inputs = tt::GradInputs;
using Fn = tt::GradFn;

namespace {

using tt::gradcheck;
using tt::input;
using tt::set_element;
using tt::strided_input;

// The same unary function on a contiguous input and on a transposed (strided) one.
void gradcheck_unary(const std::string& what, const std::function<Tensor(const Tensor&)>& f, double lo = -1,
                     double hi = 1, double min_abs = 0, double tol = 1e-6) {
  Fn fn = [f](const Inputs& in) { return f(in[0]); };
  gradcheck(what, fn, {input({3, 4}, 11, lo, hi, min_abs)}, tol);
  Tensor s = strided_input({4, 3}, 12, lo, hi);
  if (min_abs > 0) {  // reuse the contiguous draw's property by rejecting small values
    T::nn::NoGradGuard ng;
    const std::vector<double> v = s.to_vector<double>();
    for (int64_t i = 0; i < s.numel(); ++i)
      if (double e = v[static_cast<size_t>(i)]; std::abs(e) < min_abs)
        set_element(s, i, e < 0 ? -min_abs - 0.1 : min_abs + 0.1);
  }
  gradcheck(what + " (strided input)", fn, {s}, tol);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_gradcheck)

// ---- elementwise ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(binary_arithmetic) {
  tt::for_each_backend([&](const tt::Backend&) {
    Fn add = [](const Inputs& in) { return T::add(in[0], in[1]); };
    Fn sub = [](const Inputs& in) { return T::sub(in[0], in[1]); };
    Fn mul = [](const Inputs& in) { return T::mul(in[0], in[1]); };
    Fn div = [](const Inputs& in) { return T::div(in[0], in[1]); };
    for (auto& [name, f] :
         std::vector<std::pair<std::string, Fn>>{{"add", add}, {"sub", sub}, {"mul", mul}, {"div", div}}) {
      gradcheck(name + " same shape", f, {input({2, 3}, 1), input({2, 3}, 2, 0.5, 2)});
      gradcheck(name + " [3,1] op [1,4]", f, {input({3, 1}, 3), input({1, 4}, 4, 0.5, 2)});
      gradcheck(name + " [2,3,4] op [4]", f, {input({2, 3, 4}, 5), input({4}, 6, 0.5, 2)});
      gradcheck(name + " [4] op [2,3,4]", f, {input({4}, 7), input({2, 3, 4}, 8, 0.5, 2)});
      gradcheck(name + " 0-d op [3]", f, {input({}, 9), input({3}, 10, 0.5, 2)});
      gradcheck(name + " strided", f, {strided_input({3, 4}, 11), strided_input({3, 4}, 12, 0.5, 2)});
      gradcheck(name + " strided op broadcast", f, {strided_input({3, 4}, 13), input({3, 1}, 14, 0.5, 2)});
      // Only one input requires grad.
      Tensor c = input({3, 4}, 15, 0.5, 2);
      c.requires_grad_(false);
      gradcheck(name + " constant rhs", f, {input({3, 4}, 16), c});
    }
    // The same tensor on both sides.
    Tensor x = input({5}, 17, 0.5, 2);
    gradcheck("mul(x, x)", [](const Inputs& in) { return T::mul(in[0], in[0]); }, {x});
    gradcheck("div(x, x + x*x)", [](const Inputs& in) { return T::div(in[0], in[0] + in[0] * in[0]); }, {x});
  });
}

BOOST_AUTO_TEST_CASE(operators) {
  tt::for_each_backend([&](const tt::Backend&) {
    Inputs ab = {input({2, 3}, 21), input({2, 3}, 22, 0.5, 2)};
    gradcheck("a + b", [](const Inputs& in) { return in[0] + in[1]; }, ab);
    gradcheck("a - b", [](const Inputs& in) { return in[0] - in[1]; }, ab);
    gradcheck("a * b", [](const Inputs& in) { return in[0] * in[1]; }, ab);
    gradcheck("a / b", [](const Inputs& in) { return in[0] / in[1]; }, ab);
    Inputs x = {input({2, 3}, 23, 0.5, 2)};
    gradcheck("x + 2.5", [](const Inputs& in) { return in[0] + 2.5; }, x);
    gradcheck("x - 3", [](const Inputs& in) { return in[0] - 3; }, x);
    gradcheck("x * -1.5", [](const Inputs& in) { return in[0] * -1.5; }, x);
    gradcheck("x / 4", [](const Inputs& in) { return in[0] / 4; }, x);
    gradcheck("2 + x", [](const Inputs& in) { return 2 + in[0]; }, x);
    gradcheck("2 - x", [](const Inputs& in) { return 2.0 - in[0]; }, x);
    gradcheck("3 * x", [](const Inputs& in) { return 3 * in[0]; }, x);
    gradcheck("-x", [](const Inputs& in) { return -in[0]; }, x);
    gradcheck("neg", [](const Inputs& in) { return T::neg(in[0]); }, x);
    gradcheck("chain", [](const Inputs& in) { return (in[0] * 2 - 1) / (in[0] + 3) * in[0]; }, x);
  });
}

BOOST_AUTO_TEST_CASE(unary_math) {
  tt::for_each_backend([&](const tt::Backend&) {
    gradcheck_unary("exp", [](const Tensor& x) { return T::exp(x); });
    gradcheck_unary("log", [](const Tensor& x) { return T::log(x); }, 0.2, 3);
    gradcheck_unary("sqrt", [](const Tensor& x) { return T::sqrt(x); }, 0.2, 3);
    gradcheck_unary("tanh", [](const Tensor& x) { return T::tanh(x); }, -2, 2);
    gradcheck_unary("sigmoid", [](const Tensor& x) { return T::sigmoid(x); }, -3, 3);
    gradcheck_unary("relu", [](const Tensor& x) { return T::relu(x); }, -1, 1, 0.05);
    gradcheck_unary("gelu", [](const Tensor& x) { return T::gelu(x); }, -3, 3);
  });
}

BOOST_AUTO_TEST_CASE(pow_exponents) {
  tt::for_each_backend([&](const tt::Backend&) {
    gradcheck_unary("pow 2", [](const Tensor& x) { return T::pow(x, 2); });
    gradcheck_unary("pow 3", [](const Tensor& x) { return T::pow(x, 3); });
    gradcheck_unary("pow 1", [](const Tensor& x) { return T::pow(x, 1); });
    gradcheck_unary("pow 0", [](const Tensor& x) { return T::pow(x, 0); });
    gradcheck_unary("pow -2", [](const Tensor& x) { return T::pow(x, -2); }, -2, 2, 0.3);
    gradcheck_unary("pow 1.5", [](const Tensor& x) { return T::pow(x, 1.5); }, 0.2, 2);
    gradcheck_unary("pow -0.5", [](const Tensor& x) { return T::pow(x, -0.5); }, 0.2, 2);
  });
}

BOOST_AUTO_TEST_CASE(where_) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor cond = T::ops::gt(Tensor::from_vector(tt::random_vector<double>(12, 31), {3, 4}), 0.0);
    Fn f = [cond](const Inputs& in) { return T::where(cond, in[0], in[1]); };
    gradcheck("where same shape", f, {input({3, 4}, 32), input({3, 4}, 33)});
    gradcheck("where broadcast a/b", f, {input({3, 1}, 34), input({1, 4}, 35)});
    gradcheck("where strided", f, {strided_input({3, 4}, 36), input({4}, 37)});
    Tensor col = T::ops::gt(Tensor::from_vector(tt::random_vector<double>(3, 38), {3, 1}), 0.0);
    gradcheck("where broadcast cond", [col](const Inputs& in) { return T::where(col, in[0], in[1]); },
              {input({3, 4}, 39), input({4}, 40)});
  });
}

// ---- reductions -----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(sum_and_mean) {
  tt::for_each_backend([&](const tt::Backend&) {
    using Dims = std::vector<int>;
    for (bool keepdim : {false, true}) {
      for (const Dims& dims : {Dims{}, Dims{0}, Dims{1}, Dims{-1}, Dims{0, 2}, Dims{2, 0, 1}}) {
        std::string tag = fmt::format(" dims [{}] keepdim {}", fmt::join(dims, ", "), keepdim);
        gradcheck("sum" + tag, [=](const Inputs& in) { return T::sum(in[0], dims, keepdim); }, {input({2, 3, 4}, 41)});
        gradcheck("mean" + tag, [=](const Inputs& in) { return T::mean(in[0], dims, keepdim); },
                  {input({2, 3, 4}, 42)});
      }
      gradcheck("sum strided", [=](const Inputs& in) { return T::sum(in[0], {0}, keepdim); },
                {strided_input({3, 5}, 43)});
      gradcheck("mean strided", [=](const Inputs& in) { return T::mean(in[0], {1}, keepdim); },
                {strided_input({3, 5}, 44)});
    }
    gradcheck("sum of 0-d", [](const Inputs& in) { return T::sum(in[0]); }, {input({}, 45)});
    gradcheck("sum of sum", [](const Inputs& in) { return T::sum(T::sum(in[0], {1})); }, {input({3, 4}, 46)});
  });
}

BOOST_AUTO_TEST_CASE(amax_and_amin) {
  tt::for_each_backend([&](const tt::Backend&) {
    using Dims = std::vector<int>;
    for (bool keepdim : {false, true}) {
      for (const Dims& dims : {Dims{}, Dims{0}, Dims{-1}, Dims{0, 2}}) {
        std::string tag = fmt::format(" dims [{}] keepdim {}", fmt::join(dims, ", "), keepdim);
        gradcheck("amax" + tag, [=](const Inputs& in) { return T::amax(in[0], dims, keepdim); },
                  {input({2, 3, 4}, 51)});
        gradcheck("amin" + tag, [=](const Inputs& in) { return T::amin(in[0], dims, keepdim); },
                  {input({2, 3, 4}, 52)});
      }
      gradcheck("amax strided", [=](const Inputs& in) { return T::amax(in[0], {1}, keepdim); },
                {strided_input({3, 5}, 53)});
    }
    // Ties share the gradient evenly (PyTorch's amax rule).
    Tensor x = Tensor::from_vector(std::vector<double>{1, 3, 3, 2}, {4});
    x.requires_grad_();
    T::amax(x).backward();
    tt::check_close<double>(x.grad().to_vector<double>(), {0, 0.5, 0.5, 0}, 0, "amax ties");
  });
}

// ---- matmul ---------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(matmul_) {
  tt::for_each_backend([&](const tt::Backend&) {
    Fn mm = [](const Inputs& in) { return T::matmul(in[0], in[1]); };
    gradcheck("matmul 2-D", mm, {input({3, 5}, 61), input({5, 4}, 62)});
    gradcheck("matmul 2-D larger", mm, {input({17, 20}, 63), input({20, 18}, 64)});
    gradcheck("matmul transposed a", mm, {strided_input({3, 5}, 65), input({5, 4}, 66)});
    gradcheck("matmul transposed b", mm, {input({3, 5}, 67), strided_input({5, 4}, 68)});
    gradcheck("matmul batched", mm, {input({2, 3, 5}, 69), input({2, 5, 4}, 70)});
    gradcheck("matmul batched x 2-D", mm, {input({2, 3, 5}, 71), input({5, 4}, 72)});
    gradcheck("matmul 2-D x batched", mm, {input({3, 5}, 73), input({2, 5, 4}, 74)});
    gradcheck("matmul broadcast batch", mm, {input({2, 1, 3, 5}, 75), input({3, 5, 4}, 76)});
    gradcheck("matmul 1-D x 2-D", mm, {input({5}, 77), input({5, 4}, 78)});
    gradcheck("matmul 2-D x 1-D", mm, {input({3, 5}, 79), input({5}, 80)});
    gradcheck("matmul 1-D x 1-D", mm, {input({5}, 81), input({5}, 82)});
    gradcheck("matmul 1-D x batched", mm, {input({5}, 83), input({2, 5, 4}, 84)});
    gradcheck("matmul batched x 1-D", mm, {input({2, 3, 5}, 85), input({5}, 86)});
    Tensor w = input({5, 4}, 87);
    w.requires_grad_(false);
    gradcheck("matmul constant b", mm, {input({3, 5}, 88), w});
    gradcheck("linear layer", [](const Inputs& in) { return T::matmul(in[0], in[1].t()) + in[2]; },
              {input({4, 6}, 89), input({3, 6}, 90), input({3}, 91)});
  });
}

// ---- softmax, losses, dropout ---------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(softmax_and_log_softmax) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (int dim : {0, 1, -1}) {
      gradcheck(fmt::format("softmax dim {}", dim), [dim](const Inputs& in) { return T::softmax(in[0], dim); },
                {input({3, 5}, 101, -2, 2)});
      gradcheck(fmt::format("log_softmax dim {}", dim), [dim](const Inputs& in) { return T::log_softmax(in[0], dim); },
                {input({3, 5}, 102, -2, 2)});
    }
    gradcheck("softmax 3-D dim 1", [](const Inputs& in) { return T::softmax(in[0], 1); },
              {input({2, 3, 4}, 103, -2, 2)});
    gradcheck("log_softmax strided", [](const Inputs& in) { return T::log_softmax(in[0], -1); },
              {strided_input({4, 6}, 104, -2, 2)});
  });
}

BOOST_AUTO_TEST_CASE(cross_entropy_) {
  tt::for_each_backend([&](const tt::Backend&) {
    std::mt19937 rng(7);
    for (auto [n, c] : std::vector<std::pair<int64_t, int64_t>>{{5, 4}, {8, 10}, {1, 3}}) {
      std::vector<int64_t> labels(static_cast<size_t>(n));
      for (auto& l : labels) l = std::uniform_int_distribution<int64_t>(0, c - 1)(rng);
      Tensor targets = Tensor::from_vector(labels);
      gradcheck(fmt::format("cross_entropy [{}, {}]", n, c),
                [targets](const Inputs& in) { return T::cross_entropy(in[0], targets); }, {input({n, c}, 111, -3, 3)});
    }
    std::vector<int64_t> labels{2, 0, 3};
    Tensor targets = Tensor::from_vector(labels);
    gradcheck("cross_entropy strided logits", [targets](const Inputs& in) { return T::cross_entropy(in[0], targets); },
              {strided_input({3, 4}, 112, -3, 3)});
    gradcheck("cross_entropy of a linear layer",
              [targets](const Inputs& in) { return T::cross_entropy(T::matmul(in[0], in[1]), targets); },
              {input({3, 6}, 113), input({6, 4}, 114)});
  });
}

// An all-zero (or identity) dropout passes a gradcheck: its gradient and its finite differences
// agree. So the mask itself is checked on a larger input: about 1 - p of the elements kept, each
// kept one exactly x / (1 - p), the others 0.
void check_dropout_mask(double p, uint64_t seed, bool strided) {
  BOOST_TEST_CONTEXT("dropout mask, p " << p << (strided ? ", strided" : "")) {
    Tensor x = strided ? strided_input({64, 64}, 125, 0.5, 2) : input({64, 64}, 124, 0.5, 2);  // never 0
    T::Generator gen(seed);
    Tensor y = T::dropout(x, p, true, gen);
    auto xv = x.to_vector<double>(), yv = y.to_vector<double>();
    const double scale = 1.0 / (1.0 - p);
    int64_t kept = 0, bad = 0;
    for (size_t i = 0; i < xv.size(); ++i)
      if (yv[i] != 0) ++kept, bad += yv[i] != xv[i] * scale;
    BOOST_TEST(bad == 0, bad << " kept elements not x / (1 - p)");
    const double n = static_cast<double>(xv.size()), sigma = std::sqrt(n * p * (1 - p));
    BOOST_TEST(std::abs(static_cast<double>(kept) - n * (1 - p)) <= std::max(5 * sigma, 0.0),
               "kept " << kept << " of " << n << ", expected " << n * (1 - p) << " +- " << 5 * sigma);
  }
}

BOOST_AUTO_TEST_CASE(dropout_) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (double p : {0.0, 0.3, 0.7}) check_dropout_mask(p, 1234, false);
    check_dropout_mask(0.5, 99, true);
    for (double p : {0.0, 0.3, 0.7}) {
      // A fresh generator with the same seed in every evaluation: the same mask each time.
      gradcheck(fmt::format("dropout p {}", p),
                [p](const Inputs& in) {
                  T::Generator gen(1234);
                  return T::dropout(in[0], p, true, gen);
                },
                {input({4, 7}, 121)});
    }
    gradcheck("dropout strided",
              [](const Inputs& in) {
                T::Generator gen(99);
                return T::dropout(in[0], 0.5, true, gen);
              },
              {strided_input({5, 6}, 122)});
    gradcheck("dropout eval", [](const Inputs& in) { return T::dropout(in[0], 0.5, false) * 1.0; },
              {input({4, 7}, 123)});
  });
}

// ---- view methods ---------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(view_methods) {
  tt::for_each_backend([&](const tt::Backend&) {
    // Each view is followed by a multiplication with a fixed pattern so that a gradient routed to
    // the wrong element shows (the weights of L already differ per element, this makes two paths).
    auto x = [](uint32_t seed) { return Inputs{input({2, 3, 4}, seed)}; };
    gradcheck("view", [](const Inputs& in) { return in[0].view({6, 4}); }, x(131));
    gradcheck("view -1", [](const Inputs& in) { return in[0].view({4, -1}); }, x(132));
    gradcheck("reshape (a view)", [](const Inputs& in) { return in[0].reshape({-1}); }, x(133));
    gradcheck("reshape (a copy)", [](const Inputs& in) { return in[0].transpose(0, 2).reshape({4, 6}); }, x(134));
    gradcheck("reshape of strided leaf", [](const Inputs& in) { return in[0].reshape({12}); },
              {strided_input({3, 4}, 135)});
    gradcheck("permute", [](const Inputs& in) { return in[0].permute({2, 0, 1}); }, x(136));
    gradcheck("permute negative", [](const Inputs& in) { return in[0].permute({-1, -3, -2}) * 2.0; }, x(137));
    gradcheck("transpose", [](const Inputs& in) { return in[0].transpose(0, -1); }, x(138));
    gradcheck("t", [](const Inputs& in) { return in[0].t(); }, {input({3, 5}, 139)});
    gradcheck("t 1-D", [](const Inputs& in) { return in[0].t() * 1.0; }, {input({5}, 140)});
    gradcheck("squeeze", [](const Inputs& in) { return in[0].squeeze(); }, {input({3, 1, 4, 1}, 141)});
    gradcheck("squeeze dim", [](const Inputs& in) { return in[0].squeeze(-1); }, {input({3, 1, 4, 1}, 142)});
    gradcheck("squeeze non-1 dim", [](const Inputs& in) { return in[0].squeeze(0) * 1.0; }, {input({3, 1, 4, 1}, 143)});
    gradcheck("unsqueeze", [](const Inputs& in) { return in[0].unsqueeze(1); }, {input({3, 4}, 144)});
    gradcheck("unsqueeze end", [](const Inputs& in) { return in[0].unsqueeze(-1); }, {input({3, 4}, 145)});
    gradcheck("expand", [](const Inputs& in) { return in[0].expand({2, 3, 4}); }, {input({3, 1}, 146)});
    gradcheck("expand -1", [](const Inputs& in) { return in[0].expand({5, -1}); }, {input({1, 4}, 147)});
    gradcheck("slice", [](const Inputs& in) { return in[0].slice(1, 1, 3); }, x(148));
    gradcheck("slice step", [](const Inputs& in) { return in[0].slice(-1, 0, 4, 2); }, x(149));
    gradcheck("slice negative", [](const Inputs& in) { return in[0].slice(0, -1, 100); }, x(150));
    gradcheck("select", [](const Inputs& in) { return in[0].select(1, 2); }, x(151));
    gradcheck("select negative", [](const Inputs& in) { return in[0].select(-1, -1); }, x(152));
    gradcheck("contiguous", [](const Inputs& in) { return in[0].transpose(0, 1).contiguous(); }, x(153));
    gradcheck("contiguous of contiguous", [](const Inputs& in) { return in[0].contiguous() * 1.0; }, x(154));
    gradcheck("clone", [](const Inputs& in) { return in[0].clone(); }, x(155));
    gradcheck("to(f64) of f64", [](const Inputs& in) { return in[0].to(DType::f64) * 1.0; }, x(156));
    // Views composed with ops (gradients through strided views of intermediate results).
    gradcheck("ops on views", [](const Inputs& in) {
      Tensor h = T::exp(in[0]);
      return T::sum(h.transpose(0, 1).slice(0, 0, 2) * h.select(1, 1).unsqueeze(0).expand({2, 2, 4}), {2});
    }, x(157));
    gradcheck("slice twice overlapping", [](const Inputs& in) { return in[0].slice(0, 0, 2) + in[0].slice(0, 1, 3); },
              {input({3, 4}, 158)});
  });
}

BOOST_AUTO_TEST_SUITE_END()
