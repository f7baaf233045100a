// Declarations of the activations (ops/activations.h). Each derivative is derivatives.yaml's: a
// plain backward runs PyTorch's fused `_backward` kernel (one pass over grad and the input); a
// create_graph backward runs the same formula in recorded calls so it can be differentiated
// again (as tanh and sigmoid do in ops/decl/elementwise.cpp).
#include "ops/decl/op_decl.h"

#include "nn/autograd.h"
#include "nn/elementwise_ops.h"
#include "nn/functional.h"
#include "runtime/views.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tritium::ops::decl {
namespace {

using Ctx = DerivativeContext;
using Inputs = std::vector<Tensor>;
namespace ad = ::tritium;

constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCoeff = 0.044715;

std::function<std::vector<GradcheckSample>(Device)> samples(double lo, double hi, std::function<Attrs()> attrs,
                                                            bool away_from_zero = false) {
  return [=](Device d) {
    auto draw = [&](const Shape& s, uint64_t seed) {
      return away_from_zero ? sample_away_from_zero(s, d, seed, lo, hi) : sample_uniform(s, d, seed, lo, hi);
    };
    return std::vector<GradcheckSample>{
        {"[3,4]", {draw({3, 4}, 111)}, attrs},
        {"strided [3,4]", {runtime::t_of(draw({4, 3}, 112))}, attrs},
    };
  };
}
Attrs no_attrs() { return {}; }
double attr(const Ctx& c, const char* name) { return c.attrs().get<double>(name); }
Tensor mask_of(const Tensor& cond, const Tensor& like) { return to_dtype(cond, like.dtype()); }
Tensor scalar_like(double v, const Tensor& like) { return full({}, Scalar(v), like.dtype(), like.device()); }

OpDecl activation(std::string name, std::function<Tensor(const Tensor&, const Attrs&)> fw, std::string text,
                  DerivativeFormula f, std::function<std::vector<GradcheckSample>(Device)> s) {
  OpDecl op;
  op.torch_name = "torch.nn.functional." + name;
  op.name = std::move(name);
  op.inputs = {{.name = "self", .accepts = Accepts::floating}};
  op.forward = [fw = std::move(fw)](const Inputs& in, Attrs& a) { return Inputs{fw(in[0], a)}; };
  op.result_dtype = ResultDType::same_as_input;
  op.derivatives = {{.input = "self", .saves = {"self"}, .text = std::move(text), .formula = std::move(f)}};
  op.gradcheck_samples = std::move(s);
  return op;
}

}  // namespace

void declare_activations(OpRegistry& r) {
  // softsign, tanhshrink and hardtanh take integers too (PyTorch's are compositions or a clamp):
  // softsign and tanhshrink give f32, hardtanh keeps the integer dtype (ops/activations.cpp).
  auto integers_too = [](OpDecl op, ResultDType rule) {
    op.inputs[0].accepts = Accepts::non_bool;
    op.result_dtype = rule;
    return op;
  };
  r.add(activation(
      "leaky_relu", [](const Tensor& x, const Attrs& a) { return leaky_relu(x, a.get<double>("negative_slope")); },
      "leaky_relu_backward(grad, self, negative_slope, false)",
      [](const Tensor& g, const Ctx& c) {
        const Tensor& x = c.saved("self");
        double slope = attr(c, "negative_slope");
        if (!nn::grad_enabled()) return leaky_relu_backward(g, x, slope);
        Tensor pos = mask_of(gt(x.detach(), Scalar(0)), g);  // 1 where x > 0: slope + (1 - slope) pos
        return ad::mul(g, add(mul(pos, Scalar(1 - slope)), Scalar(slope)));
      },
      samples(0.1, 1, [] { return Attrs{{"negative_slope", 0.2}}; }, true)));
  r.add(activation(
      "silu", [](const Tensor& x, const Attrs&) { return silu(x); }, "silu_backward(grad, self)",
      [](const Tensor& g, const Ctx& c) {
        const Tensor& x = c.saved("self");
        if (!nn::grad_enabled()) return silu_backward(g, x);
        Tensor s = ad::sigmoid(x);
        return ad::mul(g, s * (1.0 + x * (1.0 - s)));
      },
      samples(-3, 3, no_attrs)));
  OpDecl softplus_op = activation(
      "softplus",
      [](const Tensor& x, const Attrs& a) { return softplus(x, a.get<double>("beta"), a.get<double>("threshold")); },
      "softplus_backward(grad, self, beta, threshold)",
      [](const Tensor& g, const Ctx& c) {
        const Tensor& x = c.saved("self");
        double beta = attr(c, "beta"), threshold = attr(c, "threshold");
        if (!nn::grad_enabled()) return softplus_backward(g, x, beta, threshold);
        Tensor linear = mask_of(gt(mul(x.detach(), Scalar(beta)), Scalar(threshold)), g);
        return ad::mul(g, ad::sigmoid(x * beta) * (1.0 - linear) + linear);
      },
      // Both sides of the threshold: beta 2, threshold 1 switches at x = 0.5.
      samples(-1, 1, [] { return Attrs{{"beta", 2.0}, {"threshold", 1.0}}; }));
  softplus_op.autocast = AutocastClass::fp32;  // PyTorch's autocast fp32 list
  r.add(std::move(softplus_op));
  r.add(activation(
      "elu",
      [](const Tensor& x, const Attrs& a) {
        return elu(x, a.get<double>("alpha"), a.get<double>("scale"), a.get<double>("input_scale"));
      },
      "elu_backward(grad, alpha, scale, input_scale, /* is_result */ false, self)",
      [](const Tensor& g, const Ctx& c) {
        const Tensor& x = c.saved("self");
        double alpha = attr(c, "alpha"), scale = attr(c, "scale"), input_scale = attr(c, "input_scale");
        if (!nn::grad_enabled()) return elu_backward(g, x, alpha, scale, input_scale);
        Tensor pos = gt(x.detach(), Scalar(0));
        return ad::mul(g, ad::where(pos, scalar_like(scale, g), ad::exp(x * input_scale) * (input_scale * alpha * scale)));
      },
      samples(0.1, 2, [] { return Attrs{{"alpha", 1.3}, {"scale", 1.1}, {"input_scale", 0.7}}; }, true)));
  r.add(activation(
      "mish", [](const Tensor& x, const Attrs&) { return mish(x); }, "mish_backward(grad, self)",
      [](const Tensor& g, const Ctx& c) {
        const Tensor& x = c.saved("self");
        if (!nn::grad_enabled()) return mish_backward(g, x);
        Tensor t = ad::tanh(ad::softplus(x));
        Tensor s = ad::sigmoid(x);
        return ad::mul(g, t + x * s * (1.0 - t * t));
      },
      samples(-3, 3, no_attrs)));
  r.add(activation(
      "hardswish", [](const Tensor& x, const Attrs&) { return hardswish(x); }, "hardswish_backward(grad, self)",
      [](const Tensor& g, const Ctx& c) {
        const Tensor& x = c.saved("self");
        if (!nn::grad_enabled()) return hardswish_backward(g, x);
        Tensor xd = x.detach();
        Tensor middle = logical_and(ge(xd, full({}, Scalar(-3.0), xd.dtype(), xd.device())), le(xd, full({}, Scalar(3.0), xd.dtype(), xd.device())));
        Tensor above = gt(xd, Scalar(3.0));
        return ad::mul(g, ad::mul(x / 3.0 + 0.5, mask_of(middle, g)) + mask_of(above, g));
      },
      samples(-5, 5, no_attrs)));
  r.add(activation(
      "hardsigmoid", [](const Tensor& x, const Attrs&) { return hardsigmoid(x); }, "hardsigmoid_backward(grad, self)",
      [](const Tensor& g, const Ctx& c) {
        const Tensor& x = c.saved("self");
        if (!nn::grad_enabled()) return hardsigmoid_backward(g, x);
        Tensor xd = x.detach();
        Tensor inside = logical_and(gt(xd, Scalar(-3.0)), lt(xd, Scalar(3.0)));
        return ad::mul(g, mul(mask_of(inside, g), Scalar(1.0 / 6.0)));
      },
      samples(-5, 5, no_attrs)));
  r.add(integers_too(activation(
      "hardtanh",
      [](const Tensor& x, const Attrs& a) { return hardtanh(x, a.get<double>("min_val"), a.get<double>("max_val")); },
      "hardtanh_backward(grad, self, min_val, max_val)",
      [](const Tensor& g, const Ctx& c) {
        const Tensor& x = c.saved("self");
        double lo = attr(c, "min_val"), hi = attr(c, "max_val");
        if (!nn::grad_enabled()) return hardtanh_backward(g, x, lo, hi);
        Tensor xd = x.detach();
        Tensor inside = logical_and(gt(xd, Scalar(lo)), lt(xd, Scalar(hi)));
        return ad::mul(g, mask_of(inside, g));
      },
      samples(-2, 2, [] { return Attrs{{"min_val", -0.55}, {"max_val", 0.45}}; })), ResultDType::same_as_input));
  r.add(integers_too(activation(
      "softsign", [](const Tensor& x, const Attrs&) { return softsign(x); }, "grad / (1 + self.abs()).pow(2)",
      [](const Tensor& g, const Ctx& c) {
        Tensor d = 1.0 + ad::abs(c.saved("self"));
        return ad::div(g, d * d);
      },
      samples(0.1, 3, no_attrs, true)), ResultDType::int_to_float));
  r.add(integers_too(activation(
      "tanhshrink", [](const Tensor& x, const Attrs&) { return tanhshrink(x); }, "grad * self.tanh().pow(2)",
      [](const Tensor& g, const Ctx& c) {
        Tensor t = ad::tanh(c.saved("self"));
        return ad::mul(g, t * t);
      },
      samples(-2, 2, no_attrs)), ResultDType::int_to_float));
  {
    OpDecl op = activation(
        "gelu.tanh", [](const Tensor& x, const Attrs&) { return gelu_tanh(x); },
        "gelu_backward(grad, self, approximate=\"tanh\")",
        [](const Tensor& g, const Ctx& c) {
          const Tensor& x = c.saved("self");
          if (!nn::grad_enabled()) return gelu_tanh_backward(g, x);
          Tensor t = ad::tanh((x + x * x * x * kGeluCoeff) * kSqrt2OverPi);
          Tensor dinner = (x * x * (3.0 * kGeluCoeff) + 1.0) * kSqrt2OverPi;
          return ad::mul(g, (t + 1.0) * 0.5 + x * (1.0 - t * t) * dinner * 0.5);
        },
        samples(-3, 3, no_attrs));
    op.torch_name = "torch.nn.functional.gelu";
    r.add(std::move(op));
  }
}

}  // namespace tritium::ops::decl
