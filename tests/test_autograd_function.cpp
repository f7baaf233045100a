// autograd::Function<T> with an AutogradContext: save_for_backward / get_saved_variables,
// saved_data, needs_input_grad, mark_non_differentiable, mark_dirty, the node's name, double
// backward through a backward written in recorded ops; and the errors (wrong number of gradients,
// a gradient for a non-tensor argument, a saved tensor modified in place, backward twice, a dirty
// leaf). Values against float64 host references.
#include "test_support.h"

#include <cmath>

#include "nn/custom_function.h"
#include "nn/functional.h"
#include "nn/gradcheck.h"

namespace tt = tritium::test;
namespace ag = tritium::autograd;
using tritium::DType;
using tritium::Tensor;
using ag::AutogradContext;
using ag::tensor_list;
using Shape = std::vector<int64_t>;

namespace {

Tensor leaf(Shape shape, uint32_t seed, double lo = -1, double hi = 1) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  Tensor t = Tensor::from_vector(tt::random_vector<double>(static_cast<size_t>(n), seed, lo, hi), shape);
  t.requires_grad_();
  return t;
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// y = x^3 * c: saves its input, keeps c in saved_data; the backward in recorded ops (so it can be
// differentiated again).
struct CubeScaled : ag::Function<CubeScaled> {
  static inline int backward_calls = 0;
  static Tensor forward(AutogradContext* ctx, const Tensor& x, double c) {
    BOOST_TEST(!tritium::nn::grad_enabled());  // forward runs without recording
    ctx->save_for_backward({x});
    ctx->saved_data["c"] = c;
    return x * x * x * c;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list g) {
    ++backward_calls;
    BOOST_TEST(ctx->needs_input_grad(0));
    BOOST_TEST(!ctx->needs_input_grad(1));
    Tensor x = ctx->get_saved_variables().at(0);
    double c = std::any_cast<double>(ctx->saved_data.at("c"));
    return {g.at(0) * x * x * (3 * c), Tensor()};
  }
};

// y = exp(x) saving its own output (detached while saved; re-attached under create_graph).
struct Exp : ag::Function<Exp> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor y = tritium::exp(x);
    ctx->save_for_backward({y});
    return y;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list g) { return {g.at(0) * ctx->get_saved_variables().at(0)}; }
};

// a * b where only the inputs that need it get a gradient computed.
struct Mul : ag::Function<Mul> {
  static inline std::vector<bool> needs;
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b) {
    ctx->save_for_backward({a, b});
    return a * b;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list g) {
    needs = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    auto s = ctx->get_saved_variables();
    return {needs[0] ? g[0] * s[1] : Tensor(), needs[1] ? g[0] * s[0] : Tensor()};
  }
};

// argmax-like output: integer-valued, marked non-differentiable.
struct SignOf : ag::Function<SignOf> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor s = tritium::ops::to_dtype(tritium::ops::gt(x, 0.0), DType::f64);
    ctx->mark_non_differentiable({s});
    return s;
  }
  static tensor_list backward(AutogradContext*, tensor_list) { return {Tensor()}; }
};

// x.mul_(2) in place, marked dirty: the caller's handle becomes the output.
struct DoubleInPlace : ag::Function<DoubleInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2.0);
    ctx->mark_dirty({x});
    return x;
  }
  static tensor_list backward(AutogradContext*, tensor_list g) { return {g[0] * 2.0}; }
};

struct TooManyGrads : ag::Function<TooManyGrads> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 1.0; }
  static tensor_list backward(AutogradContext*, tensor_list g) { return {g[0], g[0]}; }
};

struct GradForNumber : ag::Function<GradForNumber> {
  static Tensor forward(AutogradContext*, const Tensor& x, int) { return x * 1.0; }
  static tensor_list backward(AutogradContext*, tensor_list g) { return {g[0], g[0]}; }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(test_autograd_function)

BOOST_AUTO_TEST_CASE(forward_backward_saved_values) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({7}, 1);
    const auto xv = values(x);
    CubeScaled::backward_calls = 0;
    Tensor y = CubeScaled::apply(x, 1.5);
    BOOST_TEST(y.requires_grad());
    BOOST_TEST(y.autograd()->grad_fn->name() == "CubeScaledBackward");
    std::vector<double> yref(xv.size()), gref(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) {
      yref[i] = xv[i] * xv[i] * xv[i] * 1.5;
      gref[i] = 4.5 * xv[i] * xv[i];
    }
    tt::check_close<double>(values(y), yref, 1e-14, "forward");
    tritium::sum(y).backward();
    BOOST_TEST(CubeScaled::backward_calls == 1);
    tt::check_close<double>(values(x.grad()), gref, 1e-14, "gradient");
    // The node was released: a second backward is PyTorch's error.
    tt::check_throws([&] { tritium::sum(y).backward(); }, {"backward through the graph a second time"},
                     "backward twice through a Function");
    // No input requires grad: no node, and the forward still runs.
    Tensor plain = x.detach();
    Tensor z = CubeScaled::apply(plain, 2.0);
    BOOST_TEST(!z.requires_grad());
    BOOST_TEST(z.is_leaf());
    {
      tritium::nn::NoGradGuard no_grad;
      BOOST_TEST(!CubeScaled::apply(x, 2.0).requires_grad());
    }
    BOOST_TEST(ag::gradcheck([](const tensor_list& in) { return CubeScaled::apply(in[0], 1.5); }, {leaf({4}, 2)}));
  });
}

BOOST_AUTO_TEST_CASE(needs_input_grad_and_non_differentiable_outputs) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor a = leaf({3}, 3);
    Tensor b = Tensor::from_vector(tt::random_vector<double>(3, 4, -1, 1), {3});
    tritium::sum(Mul::apply(a, b)).backward();
    BOOST_TEST((Mul::needs == std::vector<bool>{true, false}));
    tt::check_close<double>(values(a.grad()), values(b), 0, "d(a*b)/da = b");
    Tensor s = SignOf::apply(a);
    BOOST_TEST(!s.requires_grad());
    std::vector<double> sref;
    for (double v : values(a)) sref.push_back(v > 0 ? 1.0 : 0.0);
    BOOST_TEST(values(s) == sref);
  });
}

// A Function whose backward is written in recorded ops is twice differentiable: under
// create_graph its saved output differentiates through the node (d²/dx² exp = exp).
BOOST_AUTO_TEST_CASE(double_backward_through_a_function) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({5}, 5);
    const auto xv = values(x);
    Tensor y = Exp::apply(x);
    Tensor g = ag::grad({tritium::sum(y)}, {x}, {}, std::nullopt, /*create_graph=*/true).at(0);
    BOOST_TEST(g.requires_grad());
    Tensor gg = ag::grad({tritium::sum(g)}, {x}).at(0);
    std::vector<double> ref;
    for (double v : xv) ref.push_back(std::exp(v));
    tt::check_close<double>(values(g), ref, 1e-14, "first derivative");
    tt::check_close<double>(values(gg), ref, 1e-14, "second derivative");
    BOOST_TEST(ag::gradgradcheck([](const tensor_list& in) { return CubeScaled::apply(in[0], -0.5); }, {leaf({4}, 6)}));
    BOOST_TEST(ag::gradgradcheck([](const tensor_list& in) { return Exp::apply(in[0]); }, {leaf({4}, 7)}));
  });
}

BOOST_AUTO_TEST_CASE(mark_dirty_rebases_the_input) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({4}, 8);
    const auto xv = values(x);
    Tensor h = x * 3.0;  // a non-leaf that requires grad
    Tensor handle_copy = h;
    Tensor out = DoubleInPlace::apply(h);
    BOOST_TEST(out.storage() == h.storage());
    BOOST_TEST(handle_copy.autograd()->grad_fn->name() == "DoubleInPlaceBackward");  // the caller's handle sees it
    BOOST_TEST(h._version() == 1u);
    std::vector<double> ref;
    for (double v : xv) ref.push_back(6 * v);
    tt::check_close<double>(values(h), ref, 1e-14, "doubled in place");
    tritium::sum(handle_copy).backward();
    tt::check_close<double>(values(x.grad()), std::vector<double>(4, 6.0), 1e-14, "d(2 * 3x)/dx");
    tt::check_throws([&] { DoubleInPlace::apply(x); }, {"leaf Variable that requires grad", "in-place"},
                     "a dirty leaf that requires grad");
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({3}, 9);
    tt::check_throws([&] { tritium::sum(TooManyGrads::apply(x)).backward(); },
                     {"TooManyGradsBackward", "incorrect number of gradients", "expected 1, got 2"}, "too many gradients");
    tt::check_throws([&] { tritium::sum(GradForNumber::apply(x, 3)).backward(); },
                     {"GradForNumberBackward", "position 2", "not a Variable"}, "a gradient for an int argument");
    // A saved input modified in place before backward.
    Tensor h = x * 1.0;
    Tensor y = CubeScaled::apply(h, 1.0);
    {
      tritium::nn::NoGradGuard no_grad;
      h.add_(1.0);
    }
    tt::check_throws([&] { tritium::sum(y).backward(); },
                     {"CubeScaledBackward", "modified by an inplace operation", "is at version 1; expected version 0"},
                     "saved tensor modified");
    tt::check_throws([&] { AutogradContext().needs_input_grad(3); }, {"needs_input_grad", "out of range"},
                     "needs_input_grad out of range");
  });
}

BOOST_AUTO_TEST_SUITE_END()
