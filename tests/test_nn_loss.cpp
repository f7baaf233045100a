// The losses (ops/losses.h, nn/loss.h) on every backend: values for every option (weight,
// ignore_index, label_smoothing, probability targets, reductions, beta, delta, pos_weight,
// log_target, batchmean, margin) against float64 host references written here, gradients through
// autograd against central differences of those references, class counts above one block,
// [N, C, d1, d2] inputs, the modules, and every bad-input error.
#include <cmath>
#include <functional>

#include <fmt/ranges.h>

#include "nn/autograd.h"
#include "nn/loss.h"
#include "ops/losses.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;
using Vec = std::vector<double>;

namespace {

Vec reduce_ref(const Vec& loss, const std::string& reduction, double denominator = -1) {
  if (reduction == "none") return loss;
  double s = 0;
  for (double v : loss) s += v;
  if (reduction == "sum") return {s};
  return {s / (denominator >= 0 ? denominator : static_cast<double>(loss.size()))};
}

// Class losses on [N, C, D] (D = product of d1, ...), rows (n, d) in row-major order of [N, D].
struct ClassCase {
  int64_t N, C, D;
  Vec w;                  // empty: ones
  int64_t ignore = -100;
  double smoothing = 0;
  std::string reduction = "mean";
};

double weight_at(const ClassCase& k, int64_t c) { return k.w.empty() ? 1.0 : k.w[static_cast<size_t>(c)]; }

// log_softmax of row (n, d) of x [N, C, D].
Vec log_probs(const Vec& x, const ClassCase& k, int64_t n, int64_t d, bool already_log) {
  Vec lp(static_cast<size_t>(k.C));
  double m = -INFINITY, s = 0;
  for (int64_t c = 0; c < k.C; ++c) m = std::max(m, x[static_cast<size_t>((n * k.C + c) * k.D + d)]);
  for (int64_t c = 0; c < k.C; ++c) s += std::exp(x[static_cast<size_t>((n * k.C + c) * k.D + d)] - m);
  for (int64_t c = 0; c < k.C; ++c) {
    double v = x[static_cast<size_t>((n * k.C + c) * k.D + d)];
    lp[static_cast<size_t>(c)] = already_log ? v : v - m - std::log(s);
  }
  return lp;
}

// cross_entropy (nll: input already log-probabilities, no smoothing) with class-index targets.
Vec class_loss_ref(const Vec& x, const Vec& t, const ClassCase& k, bool nll) {
  Vec rows;
  double total = 0;
  for (int64_t n = 0; n < k.N; ++n)
    for (int64_t d = 0; d < k.D; ++d) {
      int64_t label = static_cast<int64_t>(t[static_cast<size_t>(n * k.D + d)]);
      if (label == k.ignore) {
        rows.push_back(0);
        continue;
      }
      Vec lp = log_probs(x, k, n, d, nll);
      double wt = weight_at(k, label), smooth = 0;
      for (int64_t c = 0; c < k.C; ++c) smooth -= weight_at(k, c) * lp[static_cast<size_t>(c)];
      rows.push_back((1 - k.smoothing) * -wt * lp[static_cast<size_t>(label)] + k.smoothing / k.C * smooth);
      total += wt;
    }
  return reduce_ref(rows, k.reduction, total);
}

// cross_entropy with probability targets t [N, C, D].
Vec prob_loss_ref(const Vec& x, const Vec& t, const ClassCase& k) {
  Vec rows;
  for (int64_t n = 0; n < k.N; ++n)
    for (int64_t d = 0; d < k.D; ++d) {
      Vec lp = log_probs(x, k, n, d, false);
      double s = 0;
      for (int64_t c = 0; c < k.C; ++c) {
        double p = t[static_cast<size_t>((n * k.C + c) * k.D + d)] * (1 - k.smoothing) + k.smoothing / k.C;
        s -= weight_at(k, c) * p * lp[static_cast<size_t>(c)];
      }
      rows.push_back(s);
    }
  return reduce_ref(rows, k.reduction, static_cast<double>(k.N * k.D));
}

Vec fd_grad(const std::function<Vec(const Vec&)>& f, Vec v, const Vec& dy) {
  Vec g(v.size());
  const double h = 1e-6;
  for (size_t i = 0; i < v.size(); ++i) {
    double keep = v[i];
    v[i] = keep + h;
    Vec hi = f(v);
    v[i] = keep - h;
    Vec lo = f(v);
    v[i] = keep;
    double s = 0;
    for (size_t k = 0; k < dy.size(); ++k) s += dy[k] * (hi[k] - lo[k]);
    g[i] = s / (2 * h);
  }
  return g;
}

using LossFn = std::function<Tensor(const Tensor& input, const Tensor& target)>;
using RefFn = std::function<Vec(const Vec& input, const Vec& target)>;

// Values of f(input, target) against ref; with a float64 input, input.grad (and target.grad when
// grad_target) through autograd against differences of ref.
void check_loss(const std::string& what, const LossFn& f, const RefFn& ref, Tensor input, Tensor target, double tol,
                bool grad_target = false) {
  BOOST_TEST_CONTEXT(what) {
    const Vec iv = ou::values(input), tv = ou::values(target);
    const Vec expect = ref(iv, tv);
    Tensor out = f(input, target);
    BOOST_TEST((out.dtype() == input.dtype()));
    ou::check_values(out, expect, tol, what + " value");
    if (input.dtype() != DType::f64) return;
    input.requires_grad_(true);
    if (grad_target) target.requires_grad_(true);
    Tensor y = f(input, target);
    Tensor dy = ou::random_tensor<double>(y.shape(), 991, 0.5, 1.5);
    y.backward(dy);
    const Vec dyv = ou::values(dy);
    ou::check_values(input.grad(), fd_grad([&](const Vec& v) { return ref(v, tv); }, iv, dyv), 1e-7,
                     what + " input grad");
    if (grad_target)
      ou::check_values(target.grad(), fd_grad([&](const Vec& v) { return ref(iv, v); }, tv, dyv), 1e-7,
                       what + " target grad");
  }
}

Tensor labels(ou::Shape shape, int64_t C, uint32_t seed, int64_t ignore_every = 0) {
  Vec v = ou::values(ou::random_tensor<double>(shape, seed, 0, static_cast<double>(C) - 1e-9));
  std::vector<int64_t> l;
  for (size_t i = 0; i < v.size(); ++i)
    l.push_back(ignore_every && i % static_cast<size_t>(ignore_every) == 1 ? -100 : static_cast<int64_t>(v[i]));
  return Tensor::from_vector(l, shape);
}

template <class T>
void check_cross_entropy(ClassCase k, ou::Shape shape, double tol, uint32_t seed, int64_t ignore_every = 0,
                         bool prob = false) {
  ou::Shape tshape = shape;
  tshape.erase(tshape.begin() + 1);
  Tensor x = ou::random_tensor<T>(shape, seed, -3, 3);
  Tensor t = prob ? ou::random_tensor<T>(shape, seed + 1, 0, 1) : labels(tshape, k.C, seed + 1, ignore_every);
  Tensor w = k.w.empty() ? Tensor() : Tensor::from_vector(std::vector<T>(k.w.begin(), k.w.end()), {k.C});
  const std::string what = fmt::format("cross_entropy {} {} weight={} ignore={} smoothing={} {} {}",
                                       tritium::dtype_name(tritium::dtype_of<T>()), shape, !k.w.empty(), ignore_every,
                                       k.smoothing, k.reduction, prob ? "probabilities" : "classes");
  check_loss(
      what,
      [&](const Tensor& a, const Tensor& b) {
        return tritium::cross_entropy(a, b, w, k.ignore, k.reduction, k.smoothing);
      },
      [&](const Vec& a, const Vec& b) { return prob ? prob_loss_ref(a, b, k) : class_loss_ref(a, b, k, false); }, x, t,
      tol);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_loss)

BOOST_AUTO_TEST_CASE(cross_entropy_every_option) {
  tt::for_each_backend([&](const tt::Backend&) {
    const Vec w5{0.5, 2.0, 1.0, 1.5, 0.7};
    for (std::string red : {"mean", "sum", "none"}) {
      check_cross_entropy<double>({7, 5, 1, {}, -100, 0.0, red}, {7, 5}, 1e-12, 1);
      check_cross_entropy<double>({7, 5, 1, w5, -100, 0.0, red}, {7, 5}, 1e-12, 2, 3);      // weight, ignored rows
      check_cross_entropy<double>({6, 5, 1, w5, -100, 0.25, red}, {6, 5}, 1e-12, 3, 4);     // + label smoothing
      check_cross_entropy<double>({2, 3, 6, {}, -100, 0.1, red}, {2, 3, 2, 3}, 1e-12, 4, 5);  // [N, C, d1, d2]
      check_cross_entropy<double>({5, 5, 1, w5, -100, 0.2, red}, {5, 5}, 1e-12, 5, 0, true);  // probabilities
      check_cross_entropy<double>({2, 4, 3, {}, -100, 0.0, red}, {2, 4, 3}, 1e-12, 6, 0, true);
    }
    ClassCase other_ignore{5, 4, 1, {}, 2, 0.0, "mean"};  // ignore_index a valid class
    check_cross_entropy<double>(other_ignore, {5, 4}, 1e-12, 7);
    check_cross_entropy<float>({37, 3001, 1, {}, -100, 0.1, "mean"}, {37, 3001}, 2e-6, 8, 5);  // rows over blocks
    check_cross_entropy<float>({300, 10, 1, {}, -100, 0.0, "none"}, {300, 10}, 2e-6, 9, 7);
    check_cross_entropy<tritium::bf16_t>({9, 33, 1, {}, -100, 0.1, "sum"}, {9, 33}, 1e-2, 10);
  });
}

BOOST_AUTO_TEST_CASE(cross_entropy_edge_cases) {
  tt::for_each_backend([&](const tt::Backend&) {
    // Every target ignored: mean is 0 / 0 = NaN, sum is 0 (as PyTorch).
    Tensor x = ou::random_tensor<float>({3, 4}, 11);
    Tensor t = Tensor::from_vector(std::vector<int64_t>{-100, -100, -100}, {3});
    BOOST_TEST(std::isnan(ou::values(tritium::cross_entropy(x, t, {}))[0]));
    BOOST_TEST(ou::values(tritium::cross_entropy(x, t, {}, -100, "sum"))[0] == 0.0);
    // Large logits stay finite (the online max).
    Tensor big = Tensor::from_vector(std::vector<float>{1000, -1000, 0, 5, 5, 5}, {2, 3});
    Tensor lab = Tensor::from_vector(std::vector<int64_t>{1, 2}, {2});
    ou::check_values(tritium::cross_entropy(big, lab, {}, -100, "none"), {2000, std::log(3.0)}, 1e-6, "large logits");
    // u8 class indices.
    Tensor u8 = Tensor::from_vector(std::vector<uint8_t>{1, 2}, {2});
    ou::check_values(tritium::cross_entropy(big, u8, {}, -100, "none"), {2000, std::log(3.0)}, 1e-6, "u8 targets");
    // The two-argument form is unchanged (i32 labels accepted).
    Tensor i32 = Tensor::from_vector(std::vector<int32_t>{1, 2}, {2});
    ou::check_values(tritium::cross_entropy(big, i32), {(2000 + std::log(3.0)) / 2}, 1e-6, "two-argument form");
  });
}

BOOST_AUTO_TEST_CASE(nll_loss_every_option) {
  tt::for_each_backend([&](const tt::Backend&) {
    const Vec w4{0.5, 2.0, 1.0, 1.5};
    for (std::string red : {"mean", "sum", "none"})
      for (bool weighted : {false, true}) {
        ClassCase k{6, 4, 1, weighted ? w4 : Vec{}, -100, 0.0, red};
        Tensor x = ou::random_tensor<double>({6, 4}, 21, -3, 0), t = labels({6}, 4, 22, 4);
        Tensor w = weighted ? Tensor::from_vector(w4, {4}) : Tensor();
        check_loss(fmt::format("nll_loss {} weight={}", red, weighted),
                   [&](const Tensor& a, const Tensor& b) { return tritium::nll_loss(a, b, w, -100, red); },
                   [&](const Vec& a, const Vec& b) { return class_loss_ref(a, b, k, true); }, x, t, 1e-12);
        ClassCase k3{2, 4, 5, weighted ? w4 : Vec{}, 1, 0.0, red};  // [N, C, d], ignore_index 1
        Tensor x3 = ou::random_tensor<double>({2, 4, 5}, 23, -3, 0), t3 = labels({2, 5}, 4, 24);
        check_loss(fmt::format("nll_loss [2,4,5] {} weight={}", red, weighted),
                   [&](const Tensor& a, const Tensor& b) { return tritium::nll_loss(a, b, w, 1, red); },
                   [&](const Vec& a, const Vec& b) { return class_loss_ref(a, b, k3, true); }, x3, t3, 1e-12);
      }
  });
}

BOOST_AUTO_TEST_CASE(elementwise_losses) {
  tt::for_each_backend([&](const tt::Backend&) {
    const ou::Shape s{5, 7};
    auto per = [](auto f) {
      return [f](const Vec& a, const Vec& b) {
        Vec l;
        for (size_t i = 0; i < a.size(); ++i) l.push_back(f(a[i], b[i], i));
        return l;
      };
    };
    for (std::string red : {"mean", "sum", "none"}) {
      auto R = [red](RefFn f) { return [f, red](const Vec& a, const Vec& b) { return reduce_ref(f(a, b), red); }; };
      Tensor a = ou::random_tensor<double>(s, 31, -2, 2), b = ou::random_tensor<double>(s, 32, -2, 2);
      check_loss("mse " + red, [&](auto& x, auto& y) { return tritium::mse_loss(x, y, red); },
                 R(per([](double x, double y, size_t) { return (x - y) * (x - y); })), a, b, 1e-12, true);
      check_loss("l1 " + red, [&](auto& x, auto& y) { return tritium::l1_loss(x, y, red); },
                 R(per([](double x, double y, size_t) { return std::abs(x - y); })), a, b, 1e-12, true);
      for (double beta : {0.0, 0.7}) {
        check_loss(fmt::format("smooth_l1 {} beta {}", red, beta),
                   [&](auto& x, auto& y) { return tritium::smooth_l1_loss(x, y, red, beta); },
                   R(per([beta](double x, double y, size_t) {
                     double d = std::abs(x - y);
                     return d < beta ? 0.5 * d * d / beta : d - 0.5 * beta;
                   })),
                   a, b, 1e-12, true);
      }
      check_loss("huber " + red, [&](auto& x, auto& y) { return tritium::huber_loss(x, y, red, 0.8); },
                 R(per([](double x, double y, size_t) {
                   double d = std::abs(x - y);
                   return d < 0.8 ? 0.5 * d * d : 0.8 * (d - 0.4);
                 })),
                 a, b, 1e-12, true);
      // Probabilities in (0, 1) and targets in [0, 1], with a weight.
      Tensor p = ou::random_tensor<double>(s, 33, 0.05, 0.95), q = ou::random_tensor<double>(s, 34, 0, 1);
      Tensor w = ou::random_tensor<double>(s, 35, 0.5, 1.5);
      const Vec wv = ou::values(w);
      check_loss("bce " + red, [&](auto& x, auto& y) { return tritium::binary_cross_entropy(x, y, w, red); },
                 R(per([&](double x, double y, size_t i) {
                   return -wv[i] * (y * std::max(std::log(x), -100.0) + (1 - y) * std::max(std::log(1 - x), -100.0));
                 })),
                 p, q, 1e-12, true);
      // Logits with large magnitudes (the stable form), weight and pos_weight over the last dim.
      Tensor z = ou::random_tensor<double>(s, 36, -30, 30);
      Tensor pw = ou::random_tensor<double>({7}, 37, 0.5, 3);
      const Vec pwv = ou::values(pw);
      check_loss("bce_with_logits " + red,
                 [&](auto& x, auto& y) { return tritium::binary_cross_entropy_with_logits(x, y, w, red, pw); },
                 R(per([&](double x, double y, size_t i) {
                   double log_sig = -std::log1p(std::exp(-std::abs(x))) + std::min(x, 0.0);  // log sigmoid(x)
                   double log_one_minus = log_sig - x;                                    // log(1 - sigmoid(x))
                   return -wv[i] * (pwv[i % 7] * y * log_sig + (1 - y) * log_one_minus);
                 })),
                 z, q, 1e-10, true);
      check_loss("bce_with_logits plain " + red,
                 [&](auto& x, auto& y) { return tritium::binary_cross_entropy_with_logits(x, y, {}, red); },
                 R(per([&](double x, double y, size_t) {
                   double log_sig = -std::log1p(std::exp(-std::abs(x))) + std::min(x, 0.0);
                   return -(y * log_sig + (1 - y) * (log_sig - x));
                 })),
                 z, q, 1e-10);
    }
    // kl_div: targets with zeros (0 log 0 = 0), log_target, every reduction including batchmean.
    Tensor lp = ou::random_tensor<double>({4, 6}, 41, -3, 0);
    Vec tv = ou::values(ou::random_tensor<double>({4, 6}, 42, 0, 1));
    tv[3] = 0, tv[10] = 0;
    Tensor tgt = Tensor::from_vector(tv, {4, 6});
    for (std::string red : {"mean", "sum", "none", "batchmean"})
      for (bool log_target : {false, true}) {
        auto ref = [red, log_target](const Vec& a, const Vec& b) {
          Vec l;
          for (size_t i = 0; i < a.size(); ++i)
            l.push_back(log_target ? std::exp(b[i]) * (b[i] - a[i]) : (b[i] > 0 ? b[i] * (std::log(b[i]) - a[i]) : 0.0));
          if (red == "batchmean") return reduce_ref(l, "mean", 4.0);  // the sum over the batch size
          return reduce_ref(l, red);
        };
        check_loss(fmt::format("kl_div {} log_target={}", red, log_target),
                   [&](auto& x, auto& y) { return tritium::kl_div(x, y, red, log_target); }, ref, lp,
                   log_target ? ou::random_tensor<double>({4, 6}, 43, -3, 0) : tgt, 1e-12, log_target);
      }
  });
}

BOOST_AUTO_TEST_CASE(cosine_embedding) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x1 = ou::random_tensor<double>({6, 5}, 51), x2 = ou::random_tensor<double>({6, 5}, 52);
    Tensor y = Tensor::from_vector(std::vector<double>{1, -1, 1, -1, -1, 1}, {6});
    const Vec x2v = ou::values(x2), yv = ou::values(y);
    for (std::string red : {"mean", "sum", "none"}) {
      auto ref = [&, red](const Vec& a, const Vec&) {
        Vec l;
        for (int64_t n = 0; n < 6; ++n) {
          double p = 0, m1 = 1e-12, m2 = 1e-12;
          for (int64_t d = 0; d < 5; ++d) {
            size_t i = static_cast<size_t>(n * 5 + d);
            p += a[i] * x2v[i], m1 += a[i] * a[i], m2 += x2v[i] * x2v[i];
          }
          double cos = p / std::sqrt(m1 * m2);
          l.push_back(yv[static_cast<size_t>(n)] > 0 ? 1 - cos : std::max(0.0, cos - 0.1));
        }
        return reduce_ref(l, red);
      };
      check_loss("cosine_embedding " + red,
                 [&](auto& a, auto&) { return tritium::cosine_embedding_loss(a, x2, y, 0.1, red); }, ref, x1, y, 1e-12);
    }
  });
}

BOOST_AUTO_TEST_CASE(modules) {
  tt::for_each_backend([&](const tt::Backend&) {
    namespace nn = tritium::nn;
    BOOST_TEST(nn::MSELoss().str() == "MSELoss()");
    BOOST_TEST(nn::CrossEntropyLoss().str() == "CrossEntropyLoss()");
    BOOST_TEST(nn::BCEWithLogitsLoss().str() == "BCEWithLogitsLoss()");
    BOOST_TEST(nn::CrossEntropyLoss().parameters().empty());
    Tensor x = ou::random_tensor<float>({6, 4}, 61, -2, 2), t = labels({6}, 4, 62, 3);
    Tensor w = ou::random_tensor<float>({4}, 63, 0.5, 2);
    nn::CrossEntropyLoss ce(w, -100, "sum", 0.1);
    ou::check_values(ce(x, t), ou::values(tritium::cross_entropy(x, t, w, -100, "sum", 0.1)), 0, "CrossEntropyLoss");
    // A class weight is a buffer (PyTorch's _WeightedLoss), None is not registered.
    BOOST_TEST((ce.state_dict().keys() == std::vector<std::string>{"weight"}));
    BOOST_TEST(nn::CrossEntropyLoss().state_dict().keys().empty());
    BOOST_TEST((nn::BCEWithLogitsLoss(Tensor(), "mean", w).state_dict().keys() == std::vector<std::string>{"pos_weight"}));
    nn::NLLLoss nll(Tensor(), 2, "none");
    Tensor t2 = labels({6}, 4, 66);
    ou::check_values(nll(x, t2), ou::values(tritium::nll_loss(x, t2, {}, 2, "none")), 0, "NLLLoss");
    Tensor a = ou::random_tensor<float>({3, 5}, 64), b = ou::random_tensor<float>({3, 5}, 65);
    ou::check_values(nn::SmoothL1Loss("sum", 0.5)(a, b), ou::values(tritium::smooth_l1_loss(a, b, "sum", 0.5)), 0, "SmoothL1Loss");
    ou::check_values(nn::HuberLoss("none", 0.3)(a, b), ou::values(tritium::huber_loss(a, b, "none", 0.3)), 0, "HuberLoss");
    ou::check_values(nn::L1Loss()(a, b), ou::values(tritium::l1_loss(a, b)), 0, "L1Loss");
    ou::check_values(nn::MSELoss()(a, b), ou::values(tritium::mse_loss(a, b)), 0, "MSELoss");
    ou::check_values(nn::KLDivLoss("batchmean", true)(a, b), ou::values(tritium::kl_div(a, b, "batchmean", true)), 0, "KLDivLoss");
    Tensor y = Tensor::from_vector(std::vector<float>{1, -1, 1}, {3});
    ou::check_values(nn::CosineEmbeddingLoss(0.2)(a, b, y), ou::values(tritium::cosine_embedding_loss(a, b, y, 0.2)), 0,
                     "CosineEmbeddingLoss");
    tt::check_throws([&] { nn::MSELoss("avg"); }, {"avg is not a valid value for reduction"}, "module reduction");
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = ou::random_tensor<float>({4, 5}, 71);
    Tensor t = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3}, {4});
    tt::check_throws([&] { tritium::nll_loss(x, ou::random_tensor<float>({4}, 72)); },
                     {"nll_loss", "expected target dtype to be i64 or u8", "f32"}, "nll float target");
    tt::check_throws([&] { tritium::cross_entropy(x, Tensor::from_vector(std::vector<int32_t>{0, 1, 2, 3}, {4}), {}); },
                     {"cross_entropy", "expected target dtype to be i64 or u8", "i32"}, "ce i32 target");
    tt::check_throws([&] { ou::values(tritium::nll_loss(x, Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 7}, {4}))); },
                     {"nll_loss", "target 7 at index 3 is out of range for 5 classes"}, "label out of range");
    tt::check_throws([&] { ou::values(tritium::cross_entropy(x, Tensor::from_vector(std::vector<int64_t>{0, -3, 2, 1}, {4}), {})); },
                     {"cross_entropy", "target -3 at index 1 is out of range"}, "negative label");
    tt::check_throws([&] { tritium::cross_entropy(x, t, ops::ones({4})); },
                     {"weight tensor should be defined either for all 5 classes", "[4]"}, "weight length");
    tt::check_throws([&] { tritium::nll_loss(x, Tensor::from_vector(std::vector<int64_t>{0, 1, 2}, {3})); },
                     {"input batch_size (4) to match target batch_size (3)"}, "batch size");
    tt::check_throws([&] { tritium::cross_entropy(ou::random_tensor<float>({2, 3, 4}, 73), labels({2, 5}, 3, 74), {}); },
                     {"expected target size [2, 4], got [2, 5]"}, "spatial target shape");
    tt::check_throws([&] { tritium::cross_entropy(x, ou::random_tensor<float>({4, 4}, 75), {}); },
                     {"probability targets must have the input's shape [4, 5]", "[4, 4]"}, "prob target shape");
    tt::check_throws([&] { tritium::cross_entropy(x, t, {}, -100, "mean", 1.5); },
                     {"label_smoothing must be between 0.0 and 1.0. Got: 1.5"}, "smoothing");
    tt::check_throws([&] { tritium::cross_entropy(x, t, {}, -100, "foo"); }, {"foo is not a valid value for reduction"},
                     "reduction");
    tt::check_throws([&] { tritium::mse_loss(x, x, "avg"); }, {"mse_loss", "avg is not a valid value"}, "mse reduction");
    Tensor p = ou::random_tensor<float>({3}, 76, 0.1, 0.9);
    tt::check_throws([&] { tritium::binary_cross_entropy(p, Tensor::from_vector(std::vector<float>{0, 1.5f, 1}, {3})); },
                     {"binary_cross_entropy", "all elements of target should be between 0 and 1"}, "bce target range");
    tt::check_throws([&] { tritium::binary_cross_entropy(Tensor::from_vector(std::vector<float>{0, 1.5f, 1}, {3}), p); },
                     {"all elements of input should be between 0 and 1"}, "bce input range");
    tt::check_throws([&] { tritium::binary_cross_entropy(p, ou::random_tensor<float>({4}, 77, 0, 1)); },
                     {"target size [4] must be the same as input size [3]"}, "bce shape");
    tt::check_throws([&] { tritium::binary_cross_entropy_with_logits(p, ou::random_tensor<float>({4}, 78, 0, 1)); },
                     {"binary_cross_entropy_with_logits", "target size [4] must be the same as input size [3]"},
                     "bce logits shape");
    tt::check_throws([&] { tritium::smooth_l1_loss(p, p, "mean", -1); }, {"does not support negative values for beta"},
                     "beta");
    tt::check_throws([&] { tritium::huber_loss(p, p, "mean", 0); }, {"does not support non-positive values for delta"},
                     "delta");
    tt::check_throws([&] { tritium::cosine_embedding_loss(x, x, ops::ones({3})); },
                     {"cosine_embedding_loss", "expected a target of shape [4]", "[3]"}, "cosine target");
    tt::check_throws([&] { tritium::cosine_embedding_loss(x, ou::random_tensor<float>({4, 6}, 79), ops::ones({4})); },
                     {"input1 and input2 must have one shape"}, "cosine shapes");
  });
}

BOOST_AUTO_TEST_SUITE_END()
