// The backward of views copies nothing it need not (issue 29): a leaf's .grad takes a contiguous
// view that a backward made of the caller's gradient as it is, sharing its storage (PyTorch's
// AccumulateGrad steals it too), while the caller's own gradient tensor is still copied; unfold's
// backward with windows that do not overlap is one copy (or a view); values against float64 host
// references on every backend.
#include "test_support.h"

#include <functional>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/tensor_ops.h"

namespace tt = tritium::test;
using tritium::Tensor;
using Shape = std::vector<int64_t>;

namespace {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Tensor random(const Shape& shape, uint32_t seed) {
  return Tensor::from_vector(tt::random_vector<double>(static_cast<size_t>(numel(shape)), seed, -1, 1), shape);
}

Tensor leaf(const Shape& shape, uint32_t seed) {
  Tensor t = random(shape, seed);
  t.requires_grad_();
  return t;
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

bool shares_storage(const Tensor& a, const Tensor& b) { return a.storage() == b.storage(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_view_grads)

// flatten / ravel / unflatten / reshape / stack / cat: .grad is the gradient's view, no copy (as
// PyTorch: x.grad.data_ptr() == dy.data_ptr() there); the identity backward of x + 1 hands the
// caller's own tensor, which is copied, so that .grad never is the caller's tensor.
BOOST_AUTO_TEST_CASE(view_gradients_are_not_copied) {
  tt::for_each_backend([&](const tt::Backend&) {
    struct Case {
      const char* what;
      Shape in, out;
      std::function<Tensor(const Tensor&)> f;
    };
    const std::vector<Case> cases = {
        {"flatten", {3, 5, 7}, {105}, [](const Tensor& x) { return tritium::flatten(x); }},
        {"ravel", {4, 9}, {36}, [](const Tensor& x) { return tritium::ravel(x); }},
        {"unflatten", {35}, {5, 7}, [](const Tensor& x) { return tritium::unflatten(x, 0, {5, 7}); }},
        {"unfold, step == size", {3, 16}, {3, 4, 4}, [](const Tensor& x) { return tritium::unfold(x, 1, 4, 4); }},
    };
    for (const Case& c : cases) {
      Tensor x = leaf(c.in, 1);
      Tensor dy = random(c.out, 2);
      Tensor y = c.f(x);
      BOOST_TEST((y.shape() == c.out), c.what);
      y.backward(dy);
      tt::check_close<double>(values(x.grad()), values(dy), 0.0, c.what);
      BOOST_TEST(shares_storage(x.grad(), dy), c.what << ": .grad is a view of the gradient");
      BOOST_TEST((x.grad().shape() == c.in), c.what);
    }
    // stack's backward is unbind: each input's .grad is a slice of the gradient.
    Tensor a = leaf({6, 5}, 3), b = leaf({6, 5}, 4);
    Tensor dy = random({2, 6, 5}, 5);
    tritium::stack({a, b}, 0).backward(dy);
    auto dv = values(dy);
    tt::check_close<double>(values(a.grad()), std::vector<double>(dv.begin(), dv.begin() + 30), 0.0, "stack a");
    tt::check_close<double>(values(b.grad()), std::vector<double>(dv.begin() + 30, dv.end()), 0.0, "stack b");
    BOOST_TEST(shares_storage(a.grad(), dy));
    BOOST_TEST(shares_storage(b.grad(), dy));
    // The caller's own tensor is never the .grad: x + 1 passes it through unchanged.
    Tensor x = leaf({7, 3}, 6);
    Tensor g = random({7, 3}, 7);
    (x + 1.0).backward(g);
    tt::check_close<double>(values(x.grad()), values(g), 0.0, "x + 1");
    BOOST_TEST(!shares_storage(x.grad(), g), "identity backward: .grad is a copy");
    // A view that is not contiguous (a column of the gradient) is copied into .grad.
    Tensor m = leaf({4, 6}, 8);
    Tensor gt = random({6, 4}, 9);
    m.transpose(0, 1).backward(gt);
    BOOST_TEST(!shares_storage(m.grad(), gt));
    BOOST_TEST(m.grad().is_contiguous());
    auto gv = values(gt), mv = values(m.grad());
    double worst = 0;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j) worst = std::max(worst, std::abs(mv[size_t(i * 6 + j)] - gv[size_t(j * 4 + i)]));
    BOOST_TEST(worst == 0.0);
    // A second backward adds into .grad out of place: the first gradient is untouched.
    Tensor z = leaf({10}, 10);
    Tensor d1 = random({2, 5}, 11), d2 = random({2, 5}, 12);
    tritium::unflatten(z, 0, {2, 5}).backward(d1);
    auto d1v = values(d1);
    tritium::unflatten(z, 0, {2, 5}).backward(d2);
    auto d2v = values(d2);
    std::vector<double> want(10);
    for (size_t i = 0; i < 10; ++i) want[i] = d1v[i] + d2v[i];
    tt::check_close<double>(values(z.grad()), want, 1e-15, "two backwards");
    tt::check_close<double>(values(d1), d1v, 0.0, "the first gradient after the second backward");
  });
}

// unfold's backward against a host reference: windows that overlap (a sum), that leave gaps and
// a tail (zeros there), and that tile the dim exactly, along a middle dim.
BOOST_AUTO_TEST_CASE(unfold_backward_values) {
  tt::for_each_backend([&](const tt::Backend&) {
    struct Case {
      Shape in;
      int dim;
      int64_t size, step;
    };
    for (const Case& c : std::vector<Case>{{{3, 13, 2}, 1, 4, 3},   // overlapping
                                            {{3, 13, 2}, 1, 3, 5},   // gaps and a tail
                                            {{3, 12, 2}, 1, 4, 4},   // exact tiling, middle dim
                                            {{3, 13, 2}, 1, 4, 4},   // a tail
                                            {{5, 7}, -1, 7, 1}}) {   // one window
      const std::string what = fmt::format("unfold in {} dim {} size {} step {}", fmt::join(c.in, "x"), c.dim,
                                           c.size, c.step);
      Tensor x = leaf(c.in, 20);
      Tensor y = tritium::unfold(x, c.dim, c.size, c.step);
      Tensor dy = random(y.shape(), 21);
      y.backward(dy);
      // Reference: each window element adds its gradient at its input position.
      const int d = c.dim < 0 ? c.dim + static_cast<int>(c.in.size()) : c.dim;
      int64_t outer = 1, inner = 1;
      for (int i = 0; i < d; ++i) outer *= c.in[size_t(i)];
      for (size_t i = size_t(d) + 1; i < c.in.size(); ++i) inner *= c.in[i];
      const int64_t L = c.in[size_t(d)], W = y.shape()[size_t(d)];
      std::vector<double> want(static_cast<size_t>(numel(c.in)), 0.0);
      auto g = values(dy);  // [outer, W, inner, size]
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t w = 0; w < W; ++w)
          for (int64_t i = 0; i < inner; ++i)
            for (int64_t j = 0; j < c.size; ++j)
              want[size_t((o * L + w * c.step + j) * inner + i)] += g[size_t(((o * W + w) * inner + i) * c.size + j)];
      tt::check_close<double>(values(x.grad()), want, 1e-15, what);
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
