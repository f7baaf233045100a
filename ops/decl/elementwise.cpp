// Declarations of the elementwise ops: arithmetic (tensor and Scalar overloads), math functions,
// activations and where. Each derivative is written as derivatives.yaml writes it ("self: grad *
// other") in recorded calls (tritium:: functions, `ad::` here), so that under create_graph the
// backward records a graph of its own; fused backward kernels serve the plain backward.
#include "ops/decl/op_decl.h"

#include "nn/autograd.h"
#include "nn/functional.h"

// Declarations name only the fields they set (designated initializers); GCC 12 warns about the
// rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include "runtime/views.h"

namespace tritium::ops::decl {
namespace {

using Ctx = DerivativeContext;
using Inputs = std::vector<Tensor>;
namespace ad = ::tritium;  // the recorded (differentiable) functions

// Samples of a binary broadcasting op: same shapes, broadcast both ways, a 0-d operand and a
// transposed (strided) operand; `other` is drawn from [other_lo, other_hi] (away from 0 for div).
std::function<std::vector<GradcheckSample>(Device)> binary_samples(double other_lo = -1, double other_hi = 1) {
  return [=](Device d) {
    auto other = [&](const Shape& s, uint64_t seed) { return sample_uniform(s, d, seed, other_lo, other_hi); };
    Tensor strided = sample_uniform({4, 3}, d, 7).detach();
    return std::vector<GradcheckSample>{
        {"same shape", {sample_uniform({2, 3}, d, 1), other({2, 3}, 2)}, [] { return Attrs{}; }},
        {"[3,1] op [1,4]", {sample_uniform({3, 1}, d, 3), other({1, 4}, 4)}, [] { return Attrs{}; }},
        {"[2,3,4] op 0-d", {sample_uniform({2, 3, 4}, d, 5), other({}, 6)}, [] { return Attrs{}; }},
        {"strided op [4]", {runtime::t_of(strided), other({4}, 8)}, [] { return Attrs{}; }},
    };
  };
}

// Samples of a unary op on values in [lo, hi] (or, with away_from_zero, |x| in [lo, hi]).
std::function<std::vector<GradcheckSample>(Device)> unary_samples(double lo = -1, double hi = 1,
                                                                  bool away_from_zero = false) {
  return [=](Device d) {
    auto draw = [&](const Shape& s, uint64_t seed) {
      return away_from_zero ? sample_away_from_zero(s, d, seed, lo, hi) : sample_uniform(s, d, seed, lo, hi);
    };
    return std::vector<GradcheckSample>{
        {"[3,4]", {draw({3, 4}, 11)}, [] { return Attrs{}; }},
        {"strided [3,4]", {runtime::t_of(draw({4, 3}, 12))}, [] { return Attrs{}; }},
    };
  };
}

// A Scalar-operand op's samples: a [3,4] tensor and the scalar `value`.
std::function<std::vector<GradcheckSample>(Device)> scalar_samples(Scalar value, const char* attr = "other") {
  return [=](Device d) {
    std::string a = attr;
    return std::vector<GradcheckSample>{
        {"[3,4]", {sample_uniform({3, 4}, d, 21)}, [=] { return Attrs{{a, value}}; }},
    };
  };
}

// A unary float op: integers and bool compute in f32 (PyTorch's int-to-float rule), fp32 under
// autocast where PyTorch lists it so.
OpDecl unary_float(std::string name, Tensor (*forward)(const Tensor&), AutocastClass autocast,
                   std::vector<std::string> saves, std::string text, DerivativeFormula formula, double lo = -1,
                   double hi = 1) {
  OpDecl op;
  op.torch_name = "torch." + name;
  op.name = std::move(name);
  op.inputs = {{.name = "self"}};
  op.forward = [forward](const Inputs& in, Attrs&) { return Inputs{forward(in[0])}; };
  op.result_dtype = ResultDType::int_to_float;
  op.autocast = autocast;
  op.derivatives = {{.input = "self", .saves = std::move(saves), .text = std::move(text), .formula = std::move(formula)}};
  op.gradcheck_samples = unary_samples(lo, hi);
  return op;
}

}  // namespace

void declare_elementwise(OpRegistry& r) {
  // ---- arithmetic, two tensors (broadcasting, promoting) ----
  r.add({.name = "add",
         .torch_name = "torch.add",
         .inputs = {{.name = "self"}, {.name = "other"}},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{add(in[0], in[1])}; },
         .result_dtype = ResultDType::promote,
         .derivatives = {{.input = "self", .text = "grad", .formula = [](const Tensor& g, const Ctx&) { return g; }},
                         {.input = "other", .text = "grad", .formula = [](const Tensor& g, const Ctx&) { return g; }}},
         .gradcheck_samples = binary_samples()});
  r.add({.name = "sub",
         .torch_name = "torch.sub",
         .inputs = {{.name = "self"}, {.name = "other"}},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{sub(in[0], in[1])}; },
         .result_dtype = ResultDType::promote,
         .derivatives = {{.input = "self", .text = "grad", .formula = [](const Tensor& g, const Ctx&) { return g; }},
                         {.input = "other", .text = "-grad", .formula = [](const Tensor& g, const Ctx&) { return ad::neg(g); }}},
         .gradcheck_samples = binary_samples()});
  r.add({.name = "mul",
         .torch_name = "torch.mul",
         .inputs = {{.name = "self"}, {.name = "other"}},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{mul(in[0], in[1])}; },
         .result_dtype = ResultDType::promote,
         .derivatives = {{.input = "self", .saves = {"other"}, .text = "grad * other",
                          .formula = [](const Tensor& g, const Ctx& c) { return ad::mul(g, c.saved("other")); }},
                         {.input = "other", .saves = {"self"}, .text = "grad * self",
                          .formula = [](const Tensor& g, const Ctx& c) { return ad::mul(g, c.saved("self")); }}},
         .gradcheck_samples = binary_samples()});
  r.add({.name = "div",
         .torch_name = "torch.div",
         .inputs = {{.name = "self"}, {.name = "other"}},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{div(in[0], in[1])}; },
         .result_dtype = ResultDType::promote_to_float,
         .derivatives = {{.input = "self", .saves = {"other"}, .text = "grad / other",
                          .formula = [](const Tensor& g, const Ctx& c) { return ad::div(g, c.saved("other")); }},
                         // d(a/b)/db = -a/b^2 = -(grad / b) * result
                         {.input = "other", .saves = {"other", "result"}, .text = "-grad / other * result",
                          .formula = [](const Tensor& g, const Ctx& c) {
                            return ad::neg(ad::mul(ad::div(g, c.saved("other")), c.saved("result")));
                          }}},
         .gradcheck_samples = binary_samples(0.5, 2)});

  // ---- arithmetic with a Scalar (PyTorch's .Scalar overloads; the number is an attribute) ----
  auto scalar_op = [&](std::string name, std::string torch, Tensor (*fw)(const Tensor&, Scalar),
                       std::string text, DerivativeFormula formula, Scalar sample,
                       ResultDType rule = ResultDType::promote) {
    r.add({.name = std::move(name),
           .torch_name = std::move(torch),
           .inputs = {{.name = "self"}},
           .forward = [fw](const Inputs& in, Attrs& a) { return Inputs{fw(in[0], a.get<Scalar>("other"))}; },
           .result_dtype = rule,
           .scalar_operand = "other",
           .derivatives = {{.input = "self", .text = std::move(text), .formula = std::move(formula)}},
           .gradcheck_samples = scalar_samples(sample)});
  };
  scalar_op("add.Scalar", "torch.add", [](const Tensor& a, Scalar b) { return add(a, b); }, "grad",
            [](const Tensor& g, const Ctx&) { return g; }, Scalar(2.5));
  scalar_op("sub.Scalar", "torch.sub", [](const Tensor& a, Scalar b) { return sub(a, b); }, "grad",
            [](const Tensor& g, const Ctx&) { return g; }, Scalar(3));
  scalar_op("rsub.Scalar", "torch.rsub", [](const Tensor& a, Scalar b) { return rsub(a, b); }, "-grad",
            [](const Tensor& g, const Ctx&) { return ad::neg(g); }, Scalar(2.0));
  scalar_op("mul.Scalar", "torch.mul", [](const Tensor& a, Scalar b) { return mul(a, b); }, "grad * other",
            [](const Tensor& g, const Ctx& c) { return g * c.attrs().get<Scalar>("other"); }, Scalar(-1.5));
  scalar_op("div.Scalar", "torch.div", [](const Tensor& a, Scalar b) { return div(a, b); }, "grad / other",
            [](const Tensor& g, const Ctx& c) { return g / c.attrs().get<Scalar>("other"); }, Scalar(4),
            ResultDType::promote_to_float);  // true division: integers give f32

  r.add({.name = "pow",
         .torch_name = "torch.pow",
         .inputs = {{.name = "self"}},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{pow(in[0], a.get<Scalar>("exponent"))}; },
         .result_dtype = ResultDType::custom,
         // Promotion with the exponent as a wrapped number, except bool ** integer, which PyTorch
         // computes in i64.
         .custom_result_dtype = [](const Inputs& in, const Attrs& a) {
           DType d = result_type(in[0], a.get<Scalar>("exponent"));
           return d == DType::i1 ? DType::i64 : d;
         },
         .autocast = AutocastClass::fp32,
         .derivatives = {{.input = "self", .saves = {"self"}, .text = "grad * exponent * self.pow(exponent - 1)",
                          .formula = [](const Tensor& g, const Ctx& c) {
                            double e = c.attrs().get<Scalar>("exponent").to_double();
                            if (e == 0) return zeros_like(g);
                            if (e == 1) return g;
                            // An integral exponent stays integral so negative bases keep real powers.
                            Scalar em1 = e == static_cast<double>(static_cast<int64_t>(e))
                                             ? Scalar(static_cast<int64_t>(e) - 1)
                                             : Scalar(e - 1);
                            return g * ad::pow(c.saved("self"), em1) * e;
                          }}},
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               {"x^3", {sample_uniform({3, 4}, d, 31)}, [] { return Attrs{{"exponent", Scalar(3)}}; }},
               {"x^-2", {sample_uniform({3, 4}, d, 32, 0.5, 2)}, [] { return Attrs{{"exponent", Scalar(-2)}}; }},
               {"x^2.5", {sample_uniform({3, 4}, d, 33, 0.5, 2)}, [] { return Attrs{{"exponent", Scalar(2.5)}}; }},
               {"x^1", {sample_uniform({3, 4}, d, 34)}, [] { return Attrs{{"exponent", Scalar(1)}}; }},
               {"x^0", {sample_uniform({3, 4}, d, 35)}, [] { return Attrs{{"exponent", Scalar(0)}}; }},
           };
         }});

  // ---- unary ----
  r.add({.name = "neg",
         .torch_name = "torch.neg",
         .inputs = {{.name = "self", .accepts = Accepts::non_bool}},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{neg(in[0])}; },
         .derivatives = {{.input = "self", .text = "-grad", .formula = [](const Tensor& g, const Ctx&) { return ad::neg(g); }}},
         .gradcheck_samples = unary_samples()});
  r.add(unary_float("exp", exp, AutocastClass::fp32, {"result"}, "grad * result",
                    [](const Tensor& g, const Ctx& c) { return ad::mul(g, c.saved("result")); }));
  r.add(unary_float("log", log, AutocastClass::fp32, {"self"}, "grad / self",
                    [](const Tensor& g, const Ctx& c) { return ad::div(g, c.saved("self")); }, 0.5, 2));
  r.add(unary_float("sqrt", sqrt, AutocastClass::none, {"result"}, "grad / (2 * result)",
                    [](const Tensor& g, const Ctx& c) { return ad::div(g * 0.5, c.saved("result")); }, 0.5, 2));
  r.add(unary_float("tanh", tanh, AutocastClass::none, {"result"}, "tanh_backward(grad, result)",
                    [](const Tensor& g, const Ctx& c) {
                      const Tensor& y = c.saved("result");
                      return nn::grad_enabled() ? g * (1.0 - y * y) : tanh_backward(g, y);
                    }));
  r.add(unary_float("sigmoid", sigmoid, AutocastClass::none, {"result"}, "sigmoid_backward(grad, result)",
                    [](const Tensor& g, const Ctx& c) {
                      const Tensor& y = c.saved("result");
                      return nn::grad_enabled() ? g * y * (1.0 - y) : sigmoid_backward(g, y);
                    }));
  {
    OpDecl gelu_op = unary_float("gelu", gelu, AutocastClass::none, {"self"}, "gelu_backward(grad, self)",
                                 [](const Tensor& g, const Ctx& c) { return gelu_backward(g, c.saved("self")); }, -2, 2);
    gelu_op.torch_name = "torch.nn.functional.gelu";
    gelu_op.inputs[0].accepts = Accepts::floating;  // PyTorch's gelu has no integer or bool kernels
    gelu_op.twice_differentiable = false;  // gelu_backward is a fused kernel (its derivative needs erf)
    r.add(std::move(gelu_op));
  }
  r.add({.name = "relu",
         .torch_name = "torch.relu",
         .inputs = {{.name = "self", .accepts = Accepts::non_bool}},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{relu(in[0])}; },
         .derivatives = {{.input = "self", .saves = {"self"}, .text = "relu_backward(grad, self)",
                          .formula = [](const Tensor& g, const Ctx& c) {
                            const Tensor& x = c.saved("self");
                            // threshold_backward: the mask is a constant (its derivative is zero).
                            return nn::grad_enabled() ? ad::mul(g, to_dtype(gt(x.detach(), Scalar(0)), g.dtype()))
                                                      : relu_backward(g, x);
                          }}},
         .gradcheck_samples = unary_samples(0.1, 1, /*away_from_zero=*/true)});

  // ---- where(condition, self, other) ----
  auto masked = [](bool keep_where_true) {
    return [keep_where_true](const Tensor& g, const Ctx& c) {
      Tensor zero = zeros(Shape{}, g.dtype(), g.device());
      return keep_where_true ? ad::where(c.saved("condition"), g, zero) : ad::where(c.saved("condition"), zero, g);
    };
  };
  r.add({.name = "where",
         .torch_name = "torch.where",
         .inputs = {{.name = "condition", .accepts = Accepts::boolean, .promotes = false, .differentiable = false},
                    {.name = "self"},
                    {.name = "other"}},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{where(in[0], in[1], in[2])}; },
         .result_dtype = ResultDType::promote,
         .derivatives = {{.input = "self", .saves = {"condition"}, .text = "where(condition, grad, 0)", .formula = masked(true)},
                         {.input = "other", .saves = {"condition"}, .text = "where(condition, 0, grad)", .formula = masked(false)}},
         .gradcheck_samples = [](Device d) {
           Tensor cond = gt(sample_uniform({3, 4}, d, 41), Scalar(0.0));
           return std::vector<GradcheckSample>{
               {"[3,4] [3,4]", {cond, sample_uniform({3, 4}, d, 42), sample_uniform({3, 4}, d, 43)}, [] { return Attrs{}; }},
               {"[3,4] [4] 0-d", {cond, sample_uniform({4}, d, 44), sample_uniform({}, d, 45)}, [] { return Attrs{}; }},
           };
         }});
}

}  // namespace tritium::ops::decl
