// autograd::grad and double backward: gradients returned (not accumulated), with respect to leaves
// and intermediate tensors, several outputs and inputs, grad_outputs, allow_unused, retain_graph
// (and PyTorch's error when a freed graph is reused), create_graph (second derivatives against
// float64 references), Tensor::backward(create_graph), and gradgradcheck over every registry op
// whose derivatives are recorded (the others refuse a double backward with a clear error).
#include "test_support.h"

#include <cmath>

#include "nn/autograd.h"
#include "nn/dispatch.h"
#include "nn/functional.h"
#include "nn/gradcheck.h"
#include "ops/decl/op_decl.h"

namespace tt = tritium::test;
namespace ag = tritium::autograd;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;
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

}  // namespace

BOOST_AUTO_TEST_SUITE(test_autograd_grad)

BOOST_AUTO_TEST_CASE(grad_returns_without_accumulating) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({2, 3}, 1), w = leaf({3}, 2);
    const auto xv = values(x), wv = values(w);
    Tensor h = tritium::tanh(x * w);  // intermediate, also differentiated
    Tensor loss = tritium::sum(h * h);
    auto g = ag::grad({loss}, {x, w, h});
    BOOST_TEST(!x.grad().defined());
    BOOST_TEST(!w.grad().defined());
    std::vector<double> gx(6), gw(3, 0.0), gh(6);
    for (size_t i = 0; i < 6; ++i) {
      double t = std::tanh(xv[i] * wv[i % 3]);
      gh[i] = 2 * t;
      double d = 2 * t * (1 - t * t);
      gx[i] = d * wv[i % 3];
      gw[i % 3] += d * xv[i];
    }
    tt::check_close<double>(values(g.at(0)), gx, 1e-13, "d loss / dx");
    tt::check_close<double>(values(g.at(1)), gw, 1e-13, "d loss / dw (broadcast summed)");
    tt::check_close<double>(values(g.at(2)), gh, 1e-13, "d loss / dh (an intermediate)");
    // The graph was freed (retain_graph defaults to create_graph = false).
    tt::check_throws([&] { ag::grad({loss}, {x}); }, {"backward through the graph a second time", "retain_graph=true"},
                     "grad through a freed graph");
  });
}

BOOST_AUTO_TEST_CASE(several_outputs_grad_outputs_allow_unused_retain_graph) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({4}, 3), unused = leaf({2}, 4);
    const auto xv = values(x);
    Tensor y1 = tritium::exp(x), y2 = x * x;
    Tensor v1 = Tensor::from_vector(tt::random_vector<double>(4, 5, -1, 1), {4});
    Tensor v2 = Tensor::from_vector(tt::random_vector<double>(4, 6, -1, 1), {4});
    auto g = ag::grad({y1, y2}, {x}, {v1, v2}, /*retain_graph=*/true);
    std::vector<double> ref(4);
    auto v1v = values(v1), v2v = values(v2);
    for (size_t i = 0; i < 4; ++i) ref[i] = v1v[i] * std::exp(xv[i]) + v2v[i] * 2 * xv[i];
    tt::check_close<double>(values(g.at(0)), ref, 1e-14, "sum of vector-Jacobian products");
    auto again = ag::grad({y1, y2}, {x}, {v1, v2});  // retained: works
    tt::check_close<double>(values(again.at(0)), ref, 1e-14, "second grad through a retained graph");

    Tensor loss = tritium::sum(x * 2.0);
    tt::check_throws([&] { ag::grad({loss}, {x, unused}, {}, true); },
                     {"autograd::grad", "appears to not have been used in the graph", "allow_unused=True"}, "unused input");
    auto some = ag::grad({loss}, {x, unused}, {}, true, false, /*allow_unused=*/true);
    BOOST_TEST(!some.at(1).defined());
    tt::check_close<double>(values(some.at(0)), std::vector<double>(4, 2.0), 0, "used input");
    Tensor plain = Tensor::from_vector(std::vector<double>{1, 2}, {2});
    tt::check_throws([&] { ag::grad({loss}, {plain}, {}, true); }, {"does not require grad"}, "input without grad");
    tt::check_throws([&] { ag::grad({y1}, {x}); }, {"grad can be implicitly created only for scalar outputs"},
                     "non-scalar output without grad_outputs");
    tt::check_throws([&] { ag::grad({loss}, {x}, {v1, v2}); }, {"2 gradients for 1 tensors"}, "grad_outputs count");
  });
}

// Second derivatives against closed forms: d²/dx² sum(x³) = 6x; tanh'' = -2 tanh (1 - tanh²);
// a Hessian-vector product through matmul and softmax (checked by gradgradcheck).
BOOST_AUTO_TEST_CASE(create_graph_second_derivatives) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({5}, 7);
    const auto xv = values(x);
    Tensor g = ag::grad({tritium::sum(tritium::pow(x, 3))}, {x}, {}, std::nullopt, true).at(0);
    BOOST_TEST(g.requires_grad());
    Tensor gg = ag::grad({tritium::sum(g)}, {x}).at(0);
    std::vector<double> ref;
    for (double v : xv) ref.push_back(6 * v);
    tt::check_close<double>(values(gg), ref, 1e-13, "d2 sum(x^3)");

    Tensor t1 = ag::grad({tritium::sum(tritium::tanh(x))}, {x}, {}, std::nullopt, true).at(0);
    Tensor t2 = ag::grad({tritium::sum(t1)}, {x}).at(0);
    ref.clear();
    for (double v : xv) ref.push_back(-2 * std::tanh(v) * (1 - std::tanh(v) * std::tanh(v)));
    tt::check_close<double>(values(t2), ref, 1e-13, "tanh''");

    // Tensor::backward(create_graph): .grad carries a graph; differentiating it gives the second
    // derivative (d/dx of sum(3x²) = 6x).
    Tensor y = leaf({3}, 8);
    const auto yv = values(y);
    tritium::sum(y * y * y).backward(Tensor(), false, /*create_graph=*/true);
    BOOST_TEST(y.grad().requires_grad());
    Tensor second = ag::grad({tritium::sum(y.grad())}, {y}).at(0);
    ref.clear();
    for (double v : yv) ref.push_back(6 * v);
    tt::check_close<double>(values(second), ref, 1e-13, "backward(create_graph) then grad");
    // y.grad's graph holds y: a reference cycle, as in PyTorch, which dropping .grad breaks
    // (docs/autograd.md). Without this LeakSanitizer reports the graph (scripts/sanitize.sh).
    y.zero_grad();
    BOOST_TEST(!y.grad().defined());

    Tensor a = leaf({3, 4}, 9), b = leaf({4, 2}, 10);
    BOOST_TEST(ag::gradgradcheck(
        [](const tensor_list& in) { return tritium::softmax(tritium::matmul(in[0], in[1]), 1); }, {a, b}));
    BOOST_TEST(ag::gradgradcheck(
        [](const tensor_list& in) { return in[0].t().reshape({2, 6}).slice(1, 1, 5).select(0, 1) * tritium::sum(in[0]); }, {a}));
  });
}

// gradgradcheck on every declared op that records its derivatives; the others refuse a double
// backward with PyTorch's "not implemented" error instead of giving a wrong second derivative.
BOOST_AUTO_TEST_CASE(every_twice_differentiable_op_passes_gradgradcheck) {
  tt::for_each_backend([&](const tt::Backend& be) {
    int checked = 0, refused = 0;
    for (const ops::OpDecl* op : ops::op_registry().differentiable()) {
      for (const ops::GradcheckSample& s : op->gradcheck_samples(be.device)) {
        BOOST_TEST_CONTEXT(op->name << " (" << s.what << ")") {
          tensor_list in;
          for (size_t i = 0; i < s.inputs.size(); ++i) {
            Tensor t = s.inputs[i].detach();
            if (t.defined() && op->arg_of(i).differentiable && is_float(t.dtype())) t.requires_grad_();
            in.push_back(t);
          }
          auto f = [op, &s](const tensor_list& x) { return tritium::nn::call(*op, x, s.attrs()).front(); };
          if (op->twice_differentiable) {
            ag::GradcheckOptions o;
            o.eps = s.eps;
            o.atol = std::max(o.atol, s.tol);
            o.rtol = std::max(o.rtol, s.tol);
            BOOST_TEST(ag::gradgradcheck(f, in, o));
            ++checked;
          } else {
            // Output weights v that require grad, so the first gradients have a graph that
            // reaches the fused backward's node.
            tensor_list diff;
            for (const Tensor& t : in)
              if (t.defined() && t.requires_grad()) diff.push_back(t);
            Tensor y = f(in);
            Tensor v = tritium::ops::ones_like(y);
            v.requires_grad_();
            auto g = ag::grad({y}, diff, {v}, std::nullopt, true, true);
            Tensor total;
            for (const Tensor& gi : g)
              if (gi.defined()) total = total.defined() ? total + tritium::sum(gi * gi) : tritium::sum(gi * gi);
            BOOST_TEST_REQUIRE(total.requires_grad());
            tensor_list wrt = diff;
            wrt.push_back(v);
            tt::check_throws([&] { ag::grad({total}, wrt, {}, std::nullopt, false, true); },
                             {"derivative for", "is not implemented", op->name}, "double backward of " + op->name);
            ++refused;
          }
        }
      }
    }
    BOOST_TEST(checked >= 40);
    BOOST_TEST(refused >= 4);
  });
}

BOOST_AUTO_TEST_SUITE_END()
