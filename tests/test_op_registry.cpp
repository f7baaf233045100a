// The op declarations (ops/decl/) and the generic dispatch (nn/dispatch.h): every differentiable op
// in the registry passes a finite-difference gradient check on its declared samples on every
// backend (so an op declared with a wrong derivative fails here), the dtype rules refuse bad
// inputs with errors naming the op, the argument and the dtype, and the registry refuses
// incomplete declarations.
#include "test_support.h"
#include "gradcheck_support.h"

#include <cstdlib>
#include <set>
#include <string>

#include "nn/autograd.h"
#include "nn/dispatch.h"
#include "nn/functional.h"
#include "ops/decl/op_decl.h"
#include "ops/ops.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // partial declarations below

namespace tt = tritium::test;
namespace T = tritium;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;
using Inputs = std::vector<Tensor>;

namespace {

// A leaf copy of a sample input that requires grad where the op can differentiate it.
Inputs leaves(const ops::OpDecl& op, const Inputs& sample) {
  Inputs out;
  for (size_t i = 0; i < sample.size(); ++i) {
    Tensor t = sample[i].detach();
    if (t.defined() && op.arg_of(i).differentiable && is_float(t.dtype())) t.requires_grad_();
    out.push_back(t);
  }
  return out;
}

Tensor f64(std::vector<double> v, std::vector<int64_t> shape) { return Tensor::from_vector(v, shape); }

// A well-formed unary declaration to vary in the registry and dispatch tests.
ops::OpDecl square_decl() {
  using Ctx = ops::DerivativeContext;
  return {.name = "test_square",
          .torch_name = "torch.square",
          .inputs = {{.name = "self"}},
          .forward = [](const Inputs& in, ops::Attrs&) { return Inputs{ops::mul(in[0], in[0])}; },
          .derivatives = {{.input = "self", .saves = {"self"}, .text = "2 * grad * self",
                           .formula = [](const Tensor& g, const Ctx& c) { return ops::mul(ops::mul(g, c.saved("self")), 2.0); }}},
          .gradcheck_samples = [](T::Device) { return std::vector<ops::GradcheckSample>{}; }};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_op_registry)

// ---- every declared derivative against finite differences ------------------------------------------

// $TRITIUM_GRADCHECK_OPS ("conv2d,batch_norm") limits the walk to those ops: to rerun one op while
// debugging it, or to check a few new ops on a GPU without the whole registry's compile time.
BOOST_AUTO_TEST_CASE(every_differentiable_op_passes_gradcheck) {
  std::set<std::string> only;
  if (const char* env = std::getenv("TRITIUM_GRADCHECK_OPS")) {
    std::string list = env;
    for (size_t start = 0; start <= list.size();) {
      size_t comma = std::min(list.find(',', start), list.size());
      if (comma > start) only.insert(list.substr(start, comma - start));
      start = comma + 1;
    }
    BOOST_TEST_MESSAGE("TRITIUM_GRADCHECK_OPS: only " << list);
  }
  tt::for_each_backend([&](const tt::Backend& be) {
    for (const ops::OpDecl* op : ops::op_registry().differentiable()) {
      if (!only.empty() && !only.count(op->name)) continue;
      std::vector<ops::GradcheckSample> samples = op->gradcheck_samples(be.device);
      BOOST_TEST(!samples.empty(), op->name << " declares no gradcheck samples");
      for (const ops::GradcheckSample& s : samples) {
        tt::GradFn f = [op, &s](const Inputs& in) { return T::nn::call(*op, in, s.attrs()).front(); };
        tt::gradcheck(op->name + " " + s.what, f, leaves(*op, s.inputs), s.tol, s.eps);
      }
    }
  });
}

// The registry holds every differentiable function of nn/functional.h (so the walk above covers
// them), and the public functions record the node the declaration names.
BOOST_AUTO_TEST_CASE(registry_lists_the_functional_api) {
  tt::for_each_backend([&](const tt::Backend&) {
    std::set<std::string> names;
    for (const auto& op : ops::op_registry().all()) names.insert(op->name);
    for (const char* n : {"add", "sub", "mul", "div", "add.Scalar", "sub.Scalar", "rsub.Scalar", "mul.Scalar",
                          "div.Scalar", "neg", "exp", "log", "sqrt", "pow", "tanh", "sigmoid", "relu", "gelu", "where",
                          "sum", "mean", "amax", "amin", "matmul", "softmax", "log_softmax", "cross_entropy",
                          "layer_norm", "scaled_dot_product_attention", "dropout", "flatten", "unflatten", "ravel",
                          "broadcast_to", "narrow", "unfold", "movedim", "diagonal", "repeat", "flip", "roll", "tril",
                          "triu", "cat", "stack", "gather", "scatter", "scatter.value", "scatter_add",
                          "scatter_reduce", "index_select", "index_add", "masked_fill", "masked_select", "index",
                          "index_put"})
      BOOST_TEST(names.count(n) == 1, n << " is not declared");
    for (const auto& op : ops::op_registry().all())
      BOOST_TEST(op->torch_name.rfind("torch.", 0) == 0, op->name << ": torch name " << op->torch_name);

    const ops::OpRegistry& r = ops::op_registry();
    BOOST_TEST(r.at("mul").node_name() == "MulBackward");
    BOOST_TEST(r.at("mul.Scalar").node_name() == "MulBackward");
    BOOST_TEST(r.at("log_softmax").node_name() == "LogSoftmaxBackward");
    BOOST_TEST(r.at("mul").derivatives.at(0).text == "grad * other");
    BOOST_TEST((r.at("matmul").autocast == ops::AutocastClass::lower_precision_fp));
    BOOST_TEST((r.at("softmax").autocast == ops::AutocastClass::fp32));
    BOOST_TEST((r.at("add").autocast == ops::AutocastClass::none));
    BOOST_TEST(std::string(ops::autocast_class_name(r.at("exp").autocast)) == "fp32");
    BOOST_TEST(r.at("layer_norm").fused_backward_name == "layer_norm_backward");
    BOOST_TEST(!r.at("cross_entropy").inputs.at(1).differentiable);
    tt::check_throws([&] { r.at("no_such_op"); }, {"no op named 'no_such_op'"});

    Tensor x = f64({1, 2, 3}, {3});
    x.requires_grad_();
    Tensor y = T::softmax(x, 0);
    BOOST_TEST(y.autograd()->grad_fn->name() == "SoftmaxBackward");
  });
}

// A derivative formula that is wrong makes the finite differences disagree: the walk above can fail.
BOOST_AUTO_TEST_CASE(a_wrong_derivative_is_caught_by_the_finite_differences) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::OpDecl wrong = square_decl();
    wrong.derivatives[0].formula = [](const Tensor& g, const ops::DerivativeContext& c) {
      return ops::mul(g, c.saved("self"));  // missing the factor 2
    };
    Tensor x = tt::input({3, 4}, 7, 0.5, 1);
    tt::GradFn f = [&wrong](const Inputs& in) { return T::nn::call(wrong, in).front(); };
    Tensor out = f({x});
    auto w = tt::gradcheck_weights(out.numel());
    out.backward(Tensor::from_vector(w, out.shape()));
    std::vector<double> analytic = x.grad().to_vector<double>();
    std::vector<double> numeric = tt::numeric_gradient(f, {x}, 0, w, 1e-6);
    for (size_t i = 0; i < analytic.size(); ++i) BOOST_TEST(std::abs(numeric[i] - 2 * analytic[i]) < 1e-6);
    // And the right one agrees. (A declaration must outlive the graphs recorded from it: the
    // registry's live for the program, this one for the test.)
    const ops::OpDecl right = square_decl();
    tt::gradcheck("test_square", [&right](const Inputs& in) { return T::nn::call(right, in).front(); }, {x});
  });
}

// ---- the dispatch ----------------------------------------------------------------------------------

// Gradients are computed only for inputs that require grad; only what their derivatives read is saved.
BOOST_AUTO_TEST_CASE(needs_input_grad_skips_derivatives) {
  tt::for_each_backend([&](const tt::Backend&) {
    using Ctx = ops::DerivativeContext;
    int self_calls = 0, other_calls = 0;
    ops::OpDecl op = {.name = "test_mul",
                      .torch_name = "torch.mul",
                      .inputs = {{.name = "self"}, {.name = "other"}},
                      .forward = [](const Inputs& in, ops::Attrs&) { return Inputs{ops::mul(in[0], in[1])}; },
                      .result_dtype = ops::ResultDType::promote,
                      .derivatives = {{.input = "self", .saves = {"other"}, .text = "grad * other",
                                       .formula = [&](const Tensor& g, const Ctx& c) {
                                         ++self_calls;
                                         return ops::mul(g, c.saved("other"));
                                       }},
                                      {.input = "other", .saves = {"self"}, .text = "grad * self",
                                       .formula = [&](const Tensor& g, const Ctx& c) {
                                         ++other_calls;
                                         return ops::mul(g, c.saved("self"));
                                       }}}};
    Tensor a = f64({1, 2, 3}, {3}), b = f64({4, 5, 6}, {3});
    a.requires_grad_();
    T::sum(T::nn::call(op, {a, b}).front()).backward();
    BOOST_TEST(self_calls == 1);
    BOOST_TEST(other_calls == 0);
    BOOST_TEST(a.grad().to_vector<double>() == std::vector<double>({4, 5, 6}));
    BOOST_TEST(!b.grad().defined());
    // Without grad mode nothing is recorded.
    {
      T::nn::NoGradGuard ng;
      BOOST_TEST(!T::nn::call(op, {a, b}).front().requires_grad());
    }
  });
}

// Extra outputs carry no history; the first output does; broadcast gradients come back reduced.
BOOST_AUTO_TEST_CASE(non_differentiable_outputs_and_broadcast) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = tt::input({2, 3}, 9), w = tt::input({3}, 10), b = tt::input({3}, 11);
    std::vector<Tensor> outs = T::nn::call(ops::op_decl("layer_norm"), {x, w, b},
                                           ops::Attrs{{"normalized_shape", ops::Shape{3}}, {"eps", 1e-5}});
    BOOST_TEST(outs.size() == 3u);
    BOOST_TEST(outs[0].requires_grad());
    BOOST_TEST(!outs[1].requires_grad());
    BOOST_TEST(!outs[2].requires_grad());

    Tensor big = tt::input({2, 3}, 12), row = tt::input({3}, 13);
    T::sum(T::mul(big, row)).backward();
    BOOST_TEST(row.grad().shape() == std::vector<int64_t>({3}));
  });
}

// A formula that reads a value its declaration does not save fails with a message saying so.
BOOST_AUTO_TEST_CASE(unsaved_value_read_by_a_formula) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::OpDecl op = square_decl();
    op.derivatives[0].saves.clear();
    Tensor x = f64({1, 2}, {2});
    x.requires_grad_();
    Tensor y = T::nn::call(op, {x}).front();
    tt::check_throws([&] { T::sum(y).backward(); }, {"test_square backward", "'self'", "saves"});
  });
}

// ---- dtype rules --------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(dtype_rules_compute_result_dtypes) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor i32 = T::ops::arange(0, 4, 1, DType::i32), f32 = T::ops::ones({4}, DType::f32);
    Tensor bool4 = T::ops::gt(i32, ops::Scalar(1));
    const ops::OpRegistry& r = ops::op_registry();
    BOOST_TEST((r.at("add").check_dtypes({i32, f32}, {}) == DType::f32));
    BOOST_TEST((r.at("add").check_dtypes({i32, i32}, {}) == DType::i32));
    BOOST_TEST((r.at("div").check_dtypes({i32, i32}, {}) == DType::f32));
    BOOST_TEST((r.at("mul.Scalar").check_dtypes({i32}, ops::Attrs{{"other", ops::Scalar(1.5)}}) == DType::f32));
    BOOST_TEST((r.at("exp").check_dtypes({i32}, {}) == DType::f32));
    BOOST_TEST((r.at("sum").check_dtypes({i32}, ops::Attrs{}) == DType::i64));
    BOOST_TEST((r.at("pow").check_dtypes({bool4}, ops::Attrs{{"exponent", ops::Scalar(2)}}) == DType::i64));
    BOOST_TEST((r.at("where").check_dtypes({bool4, i32, f32}, {}) == DType::f32));
    // The dispatch agrees with the kernels it runs (it checks the forward's dtype against the rule).
    BOOST_TEST((T::exp(i32).dtype() == DType::f32));
    BOOST_TEST((T::div(i32, i32).dtype() == DType::f32));
    BOOST_TEST((T::sum(i32).dtype() == DType::i64));
    BOOST_TEST((T::pow(bool4, 2).dtype() == DType::i64));
  });
}

BOOST_AUTO_TEST_CASE(dtype_rule_errors_name_the_op_and_dtypes) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor i32 = T::ops::arange(0, 6, 1, DType::i32).reshape({2, 3});
    Tensor f32 = T::ops::ones({2, 3}, DType::f32), f64 = T::ops::ones({3, 2}, DType::f64);
    tt::check_throws([&] { T::softmax(i32, 1); }, {"softmax", "'self'", "floating-point", "i32"}, "softmax of i32");
    tt::check_throws([&] { T::mean(i32); }, {"mean", "floating-point", "i32"}, "mean of i32");
    tt::check_throws([&] { T::matmul(f32, f64); }, {"matmul", "one dtype", "self f32", "other f64"}, "matmul f32 f64");
    tt::check_throws([&] { T::where(i32, f32, f32); }, {"where", "'condition'", "bool", "i32"}, "where with i32");
    tt::check_throws([&] { T::neg(T::ops::gt(f32, ops::Scalar(0))); }, {"neg", "non-bool", "i1"}, "neg of bool");
    tt::check_throws([&] { T::cross_entropy(f32, f32.select(1, 0)); }, {"cross_entropy", "'target'", "i64 or i32", "f32"},
                     "float targets");
    tt::check_throws([&] { T::layer_norm(i32, {3}); }, {"layer_norm", "'input'", "floating-point", "i32"},
                     "layer_norm of i32");
    tt::check_throws([&] { T::add(Tensor(), f32); }, {"add", "'self'", "undefined"}, "undefined input");
  });
}

// A declaration whose dtype rule disagrees with its forward is caught at the call.
BOOST_AUTO_TEST_CASE(a_lying_dtype_rule_is_caught) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::OpDecl op = square_decl();
    op.forward = [](const Inputs& in, ops::Attrs&) { return Inputs{ops::to_dtype(in[0], DType::f64)}; };
    tt::check_throws([&] { T::nn::call(op, {T::ops::ones({2}, DType::f32)}); },
                     {"test_square", "dtype f64", "rule gives f32", "ops/decl"});
  });
}

// Attributes: a missing one and one of another type are errors naming the attribute.
BOOST_AUTO_TEST_CASE(attribute_errors) {
  ops::Attrs a{{"dim", 1}, {"keepdim", true}};
  BOOST_TEST(a.get<int>("dim") == 1);
  BOOST_TEST(a.has("keepdim"));
  a.set("dim", -1);
  BOOST_TEST(a.get<int>("dim") == -1);
  tt::check_throws([&] { a.get<int>("dims"); }, {"attribute 'dims' was not given", "dim, keepdim"}, "missing");
  tt::check_throws([&] { a.get<double>("dim"); }, {"attribute 'dim' holds a value of type int"}, "wrong type");
  Tensor x = f64({1, 2, 3}, {3});
  tt::check_throws([&] { T::nn::call("softmax", {x}, ops::Attrs{{"dim", 0.5}}); },
                   {"attribute 'dim' holds a value of type double"}, "a call with a wrongly typed attribute");
}

// ---- the registry refuses incomplete declarations ------------------------------------------------------

BOOST_AUTO_TEST_CASE(registry_validates_declarations) {
  {
    ops::OpRegistry r;
    r.add(square_decl());
    tt::check_throws([&] { r.add(square_decl()); }, {"'test_square' is declared twice"});
  }
  auto refused = [](ops::OpDecl d, std::initializer_list<std::string_view> words, const std::string& what) {
    ops::OpRegistry r;
    tt::check_throws([&] { r.add(std::move(d)); }, words, what);
  };
  ops::OpDecl d = square_decl();
  d.derivatives.clear();
  refused(d, {"test_square", "differentiable input 'self' has 0 derivative formulas"}, "no derivative");
  d = square_decl();
  d.derivatives[0].saves = {"other"};
  refused(d, {"test_square", "saves 'other'", "no input or output"}, "unknown saved name");
  d = square_decl();
  d.derivatives[0].input = "x";
  refused(d, {"test_square", "'self' has 0 derivative"}, "derivative of an unknown input");
  d = square_decl();
  d.gradcheck_samples = nullptr;
  refused(d, {"test_square", "needs gradcheck samples"}, "no samples");
  d = square_decl();
  d.forward = nullptr;
  refused(d, {"test_square", "no forward"}, "no forward");
  d = square_decl();
  d.inputs[0].differentiable = false;
  refused(d, {"non-differentiable input 'self' has a derivative"}, "derivative of a non-differentiable input");
}

BOOST_AUTO_TEST_SUITE_END()
