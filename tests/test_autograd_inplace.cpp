// In-place ops and version counters: add_ sub_ mul_ div_ (tensor and number) relu_ clamp_ copy_
// fill_ zero_ against float64 host references (views see the writes and share the version
// counter), gradients through in-place ops on non-leaves, PyTorch's errors (a saved tensor
// modified before backward, in-place on a leaf that requires grad or on a view of one, a result
// self cannot hold, a shape self cannot take), and inference tensors (made inside
// InferenceModeGuard; refused by autograd and by in-place ops outside the mode).
#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/optim.h"

namespace tt = tritium::test;
namespace nn = tritium::nn;
using tritium::DType;
using tritium::Tensor;
using Shape = std::vector<int64_t>;

namespace {

Tensor data(Shape shape, uint32_t seed, double lo = -1, double hi = 1) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return Tensor::from_vector(tt::random_vector<double>(static_cast<size_t>(n), seed, lo, hi), shape);
}

Tensor leaf(Shape shape, uint32_t seed) { return data(std::move(shape), seed).requires_grad_(); }

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

template <class F>
std::vector<double> map2(const std::vector<double>& a, const std::vector<double>& b, F f) {
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = f(a[i], b[i % b.size()]);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_autograd_inplace)

BOOST_AUTO_TEST_CASE(values_and_versions) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = data({3, 5}, 1);  // 15 elements, [5] operands broadcast along rows
    Tensor o = data({5}, 2, 0.5, 2);
    auto xv = values(x);
    const auto ov = values(o);
    uint64_t v0 = x._version();
    x.add_(o);
    xv = map2(xv, ov, [](double a, double b) { return a + b; });
    tt::check_close<double>(values(x), xv, 1e-15, "add_");
    x.sub_(0.25);
    xv = map2(xv, ov, [](double a, double) { return a - 0.25; });
    x.mul_(o);
    xv = map2(xv, ov, [](double a, double b) { return a * b; });
    x.div_(o);
    xv = map2(xv, ov, [](double a, double b) { return a / b; });
    x.mul_(-3.0);
    x.div_(2.0);
    xv = map2(xv, ov, [](double a, double) { return a * -3.0 / 2.0; });
    tt::check_close<double>(values(x), xv, 1e-15, "sub_ mul_ div_");
    BOOST_TEST(x._version() == v0 + 6);
    x.clamp_(-0.5, 0.75);
    xv = map2(xv, ov, [](double a, double) { return std::clamp(a, -0.5, 0.75); });
    tt::check_close<double>(values(x), xv, 0, "clamp_");
    x.clamp_(std::nullopt, 0.5);
    xv = map2(xv, ov, [](double a, double) { return std::min(a, 0.5); });
    x.relu_();
    xv = map2(xv, ov, [](double a, double) { return std::max(a, 0.0); });
    tt::check_close<double>(values(x), xv, 0, "clamp_(max) relu_");

    // A view shares the storage and the counter: writing through it changes the base.
    Tensor row = x.select(0, 1);
    uint64_t before = x._version();
    row.fill_(7.0);
    BOOST_TEST(x._version() == before + 1);
    BOOST_TEST(row._version() == x._version());
    for (size_t j = 0; j < 5; ++j) xv[5 + j] = 7.0;
    tt::check_close<double>(values(x), xv, 0, "fill_ through a view");
    // copy_ broadcasts and converts (an f32 source into the f64 tensor).
    Tensor src = tritium::ops::to_dtype(data({5}, 3), DType::f32);
    x.copy_(src);
    auto sv = values(tritium::ops::to_dtype(src, DType::f64));
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = sv[i % 5];
    tt::check_close<double>(values(x), xv, 0, "copy_ broadcast + convert");
    x.zero_();
    tt::check_close<double>(values(x), std::vector<double>(15, 0.0), 0, "zero_");

    Tensor ints = Tensor::from_vector(std::vector<int64_t>{1, 2, 3}, {3});
    ints.add_(2);
    BOOST_TEST((ints.to_vector<int64_t>() == std::vector<int64_t>{3, 4, 5}));
    tt::check_throws([&] { ints.add_(0.5); }, {"add_", "result type f", "can't be cast to the desired output type i64"},
                     "float into an integer tensor");
    tt::check_throws([&] { o.add_(x); }, {"add_", "output with shape [5] doesn't match the broadcast shape [3, 5]"},
                     "in-place broadcasting self");
    tt::check_throws([&] { x.clamp_(std::nullopt, std::nullopt); }, {"clamp_", "At least one of 'min' or 'max'"},
                     "clamp_ without bounds");
  });
}

// Gradients through in-place ops on non-leaves: y = x * 1; y.mul_(w); y.add_(x); y.relu_();
// loss = sum(y * c), against the closed form.
BOOST_AUTO_TEST_CASE(gradients_through_inplace_ops) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({6}, 4), w = leaf({6}, 5);
    const auto xv = values(x), wv = values(w);
    Tensor c = data({6}, 6);
    const auto cv = values(c);
    Tensor y = x * 1.0;
    Tensor alias = y;  // another handle of y: sees the new history too
    y.mul_(w);
    y.add_(x);
    y.relu_();
    BOOST_TEST(alias.autograd()->grad_fn->name() == "ReluBackward");
    tritium::sum(alias * c).backward();
    std::vector<double> gx(6), gw(6);
    for (size_t i = 0; i < 6; ++i) {
      double pre = xv[i] * wv[i] + xv[i];
      double on = pre > 0 ? 1.0 : 0.0;
      gx[i] = cv[i] * on * (wv[i] + 1);
      gw[i] = cv[i] * on * xv[i];
    }
    tt::check_close<double>(values(x.grad()), gx, 1e-14, "d/dx");
    tt::check_close<double>(values(w.grad()), gw, 1e-14, "d/dw");

    // A tensor without grad made to require it by an in-place op with one that does; clamp_'s
    // gradient reaches the kept elements only; copy_ gives the source the gradient.
    Tensor z = data({6}, 7);
    const auto zv = values(z);
    z.mul_(w);
    BOOST_TEST(z.requires_grad());
    z.clamp_(-0.2, 0.2);
    Tensor s = leaf({6}, 8);
    Tensor target = data({6}, 9);
    target.copy_(s);
    BOOST_TEST(target.requires_grad());
    w.zero_grad();
    tritium::sum(z * 2.0 + target * 3.0).backward();
    std::vector<double> gw2(6);
    for (size_t i = 0; i < 6; ++i) {
      double p = zv[i] * wv[i];
      gw2[i] = (p >= -0.2 && p <= 0.2) ? 2 * zv[i] : 0.0;
    }
    tt::check_close<double>(values(w.grad()), gw2, 1e-14, "clamp_ gradient");
    tt::check_close<double>(values(s.grad()), std::vector<double>(6, 3.0), 0, "copy_ gradient");

    // Overwriting a non-leaf from values without grad (copy_ of a plain tensor, fill_, zero_):
    // the old history gets zeros (PyTorch's CopyBackwards / FillBackward), not the gradient.
    for (int how = 0; how < 3; ++how) {
      Tensor u = leaf({6}, 10 + how);
      Tensor h = u * 2.0;
      if (how == 0) h.copy_(data({6}, 11));
      if (how == 1) h.fill_(1.5);
      if (how == 2) h.zero_();
      BOOST_TEST(h.requires_grad());
      BOOST_TEST(h.autograd()->grad_fn->name() == (how == 0 ? "CopyBackwards" : "FillBackward"));
      tritium::sum(h * 3.0).backward();
      BOOST_REQUIRE(u.grad().defined());
      tt::check_close<double>(values(u.grad()), std::vector<double>(6, 0.0), 0, "history overwritten without grad");
    }
  });
}

// In-place ops on views of a non-leaf rewrite the base's history (CopySlices): h = x * 1 (3x4);
// h[:, 1] *= w; h[0:2][:, 2] += v (a view of a view); then loss = sum(h * c), uses of the view
// after the op included (loss2 adds sum(col * d)).
BOOST_AUTO_TEST_CASE(inplace_on_views_rewrites_the_base_history) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({3, 4}, 20), w = leaf({3}, 21), v = leaf({2}, 22);
    const auto xv = values(x), wv = values(w), vv = values(v);
    Tensor c = data({3, 4}, 23), d = data({3}, 24);
    const auto cv = values(c), dv = values(d);
    Tensor h = x * 1.0;
    Tensor col = h.select(1, 1);
    col.mul_(w);
    h.slice(0, 0, 2).select(1, 2).add_(v);
    BOOST_TEST(h.autograd()->grad_fn->name() == "CopySlices");
    std::vector<double> hv = xv;
    for (size_t i = 0; i < 3; ++i) hv[i * 4 + 1] *= wv[i];
    for (size_t i = 0; i < 2; ++i) hv[i * 4 + 2] += vv[i];
    tt::check_close<double>(values(h), hv, 1e-15, "values after the in-place ops on views");
    tritium::sum(h * c + 0.0).backward(Tensor(), /*retain_graph=*/true);
    tritium::sum(col * d).backward();
    std::vector<double> gx(12), gw(3), gv(2);
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 4; ++j) gx[i * 4 + j] = cv[i * 4 + j] * (j == 1 ? wv[i] : 1.0);
    for (size_t i = 0; i < 3; ++i) {
      gx[i * 4 + 1] += dv[i] * wv[i];
      gw[i] = (cv[i * 4 + 1] + dv[i]) * xv[i * 4 + 1];
    }
    for (size_t i = 0; i < 2; ++i) gv[i] = cv[i * 4 + 2];
    tt::check_close<double>(values(x.grad()), gx, 1e-14, "d/dx through CopySlices");
    tt::check_close<double>(values(w.grad()), gw, 1e-14, "d/dw (the view's own use and the base's)");
    tt::check_close<double>(values(v.grad()), gv, 1e-14, "d/dv (a view of a view)");
  });
}

BOOST_AUTO_TEST_CASE(modified_saved_tensors_and_refusals) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({4}, 10);
    // exp saves its output; changing it in place before backward is PyTorch's error.
    Tensor y = tritium::exp(x);
    y.add_(1.0);
    tt::check_throws([&] { tritium::sum(y).backward(); },
                     {"one of the variables needed for gradient computation has been modified by an inplace operation",
                      "output 'result' of ExpBackward", "is at version 1; expected version 0 instead"},
                     "saved output modified");
    // mul saves its inputs; a view's write bumps the base's counter too.
    Tensor a = x * 1.0;
    Tensor b = tritium::mul(a, a);
    {
      nn::NoGradGuard no_grad;
      a.slice(0, 0, 2).mul_(2.0);
    }
    tt::check_throws([&] { tritium::sum(b).backward(); }, {"input '", "of MulBackward", "is at version 1; expected version 0"},
                     "saved input modified through a view");

    tt::check_throws([&] { x.add_(1.0); }, {"add_", "a leaf Variable that requires grad is being used in an in-place operation"},
                     "in-place on a leaf that requires grad");
    {
      nn::NoGradGuard no_grad;  // an optimiser's update: allowed, no history
      x.sub_(0.5);
    }
    BOOST_TEST(x.is_leaf());
    Tensor h = x * 2.0;
    tt::check_throws([&] { x.slice(0, 1, 3).mul_(2.0); },
                     {"mul_", "a view of a leaf Variable that requires grad is being used in an in-place operation"},
                     "in-place on a view of a leaf that requires grad");
    tt::check_throws([&] { h.unsqueeze(0).expand({3, 4}).mul_(2.0); },
                     {"mul_", "more than one element of the written-to tensor refers to a single memory location"},
                     "in-place on an expanded view");
    // A view of a tensor without grad written from one with grad: the base would miss the
    // history, so it is refused too; under NoGradGuard it is a plain write.
    Tensor plain = Tensor::from_vector(std::vector<double>{1, 2, 3, 4}, {4});
    Tensor part = plain.slice(0, 0, 2);
    BOOST_TEST(!part.requires_grad());
    tt::check_throws([&] { part.copy_(x.slice(0, 0, 2)); }, {"copy_", "in-place operation recorded on a view"},
                     "recorded in-place on a view of a tensor without grad");
    {
      nn::NoGradGuard no_grad;
      part.copy_(x.slice(0, 0, 2));
    }
    auto xv = values(x);
    BOOST_TEST((values(plain) == std::vector<double>{xv[0], xv[1], 3, 4}));
  });
}

// An optimiser step updates its parameters in place: their version counters move, so a graph that
// saved a parameter before the step refuses its backward after it (PyTorch's error), while a new
// forward after the step is fine.
BOOST_AUTO_TEST_CASE(optimiser_steps_bump_parameter_versions) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (int which = 0; which < 3; ++which) {
      Tensor w = data({5}, 30 + which).to(DType::f32).requires_grad_();  // the optimisers take f32
      Tensor x = data({5}, 40 + which).to(DType::f32).requires_grad_();
      tritium::sum(tritium::mul(w, x)).backward();
      std::unique_ptr<nn::Optimizer> opt;
      if (which == 0) opt = std::make_unique<nn::SGD>(std::vector<Tensor>{w}, 0.1);
      if (which == 1) opt = std::make_unique<nn::SGD>(std::vector<Tensor>{w}, 0.1, 0.9);
      if (which == 2) opt = std::make_unique<nn::AdamW>(std::vector<Tensor>{w}, 0.01);
      Tensor stale = tritium::mul(w, x);  // saves w at its current version
      const uint64_t before = w._version();
      opt->step();
      BOOST_TEST(w._version() == before + 1);
      BOOST_TEST(w.is_leaf());
      tt::check_throws([&] { tritium::sum(stale).backward(); },
                       {"modified by an inplace operation", "of MulBackward", "is at version"},
                       "backward through a graph that saved a parameter before the step");
      tritium::sum(tritium::mul(w, x)).backward();  // a forward after the step is fine
    }
  });
}

BOOST_AUTO_TEST_CASE(inference_tensors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({3}, 11);
    Tensor made;
    {
      nn::InferenceModeGuard inference;
      made = tritium::ops::ones({3}, DType::f64);
      BOOST_TEST(made.is_inference());
      made.mul_(2.0);  // in-place inside the mode is fine
      Tensor r = tritium::mul(made, x);
      BOOST_TEST(!r.requires_grad());
      BOOST_TEST(r.is_inference());
    }
    BOOST_TEST(!x.is_inference());
    BOOST_TEST(values(made) == std::vector<double>(3, 2.0));
    tt::check_throws([&] { made.add_(1.0); }, {"Inplace update to inference tensor outside InferenceMode is not allowed"},
                     "in-place on an inference tensor");
    tt::check_throws([&] { tritium::mul(made, x); }, {"Inference tensors cannot be saved for backward"},
                     "an inference tensor saved for backward");
    tt::check_throws([&] { made.requires_grad_(); },
                     {"Setting requires_grad=True on inference tensor outside InferenceMode is not allowed"},
                     "requires_grad_ on an inference tensor");
    // Using one where nothing is saved is fine, and a clone is a normal tensor.
    Tensor sum = tritium::add(made, x);
    BOOST_TEST(sum.requires_grad());
    Tensor normal = made.clone();
    BOOST_TEST(!normal.is_inference());
    tritium::sum(tritium::mul(normal, x)).backward();
    tt::check_close<double>(values(x.grad()), std::vector<double>(3, 2.0), 0, "gradient with a cloned inference tensor");
  });
}

BOOST_AUTO_TEST_SUITE_END()
