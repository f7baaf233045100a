// Declarations of the element-wise math ops of issue 29 item 3 (ops/unary_math.h): forward,
// dtype rule, autocast class (PyTorch's fp32 list: acos asin cosh erfinv exp expm1 log log10 log2
// log1p reciprocal rsqrt sinh tan ...) and the derivative of each input as derivatives.yaml gives
// it, in recorded calls (tritium::, so a create_graph backward can be differentiated again).
// Masks (which side of a kink, which bound is active) are constants of the formula: raw ops.
#include "ops/decl/op_decl.h"

#include <cmath>
#include <tuple>
#include <utility>

#include "nn/autograd.h"
#include "nn/elementwise_ops.h"
#include "nn/functional.h"
#include "ops/elementwise_kernels.h"
#include "runtime/views.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tritium::ops::decl {
namespace {

using Ctx = DerivativeContext;
using Inputs = std::vector<Tensor>;
using Samples = std::function<std::vector<GradcheckSample>(Device)>;
namespace ad = ::tritium;

constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kSqrtPiOverTwo = 0.88622692545275801365;
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn10 = 2.30258509299404568402;

Attrs no_attrs() { return {}; }

Samples unary(double lo, double hi, bool away_from_zero = false, std::function<Attrs()> attrs = no_attrs) {
  return [=](Device d) {
    auto draw = [&](const Shape& s, uint64_t seed) {
      return away_from_zero ? sample_away_from_zero(s, d, seed, lo, hi) : sample_uniform(s, d, seed, lo, hi);
    };
    return std::vector<GradcheckSample>{
        {"[3,4]", {draw({3, 4}, 51)}, attrs},
        {"strided [3,4]", {runtime::t_of(draw({4, 3}, 52))}, attrs},
    };
  };
}

// Two operands: same shape and broadcast ([3,1] with [1,4]); `b` drawn from [blo, bhi].
Samples binary(double alo, double ahi, double blo, double bhi) {
  return [=](Device d) {
    return std::vector<GradcheckSample>{
        {"same shape", {sample_uniform({2, 3}, d, 61, alo, ahi), sample_uniform({2, 3}, d, 62, blo, bhi)}, no_attrs},
        {"[3,1] op [1,4]", {sample_uniform({3, 1}, d, 63, alo, ahi), sample_uniform({1, 4}, d, 64, blo, bhi)}, no_attrs},
    };
  };
}

// A constant mask of `cond` (bool) in g's dtype.
Tensor mask_of(const Tensor& cond, const Tensor& like) { return to_dtype(cond, like.dtype()); }
Tensor raw(const Tensor& t) { return t.detach(); }

OpDecl unary_op(std::string name, Tensor (*fw)(const Tensor&), ResultDType rule, AutocastClass ac,
                std::vector<std::string> saves, std::string text, DerivativeFormula f, Samples samples,
                Accepts accepts = Accepts::any) {
  OpDecl op;
  op.torch_name = "torch." + name;
  op.name = std::move(name);
  op.inputs = {{.name = "self", .accepts = accepts}};
  op.forward = [fw](const Inputs& in, Attrs&) { return Inputs{fw(in[0])}; };
  op.result_dtype = rule;
  op.autocast = ac;
  op.derivatives = {{.input = "self", .saves = std::move(saves), .text = std::move(text), .formula = std::move(f)}};
  op.gradcheck_samples = std::move(samples);
  return op;
}

// The ops whose backward ops::unary_math_backward computes in one kernel.
bool has_fused_backward(const std::string& name) {
  for (const char* n : {"tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log1p", "expm1", "log2",
                        "log10", "exp2", "reciprocal", "rsqrt", "erf", "erfc", "erfinv"})
    if (name == n) return true;
  return false;
}

// A float function of one input (integers give f32). Without a graph to record (a plain
// backward), the derivative runs as one fused kernel where there is one (PyTorch's backward
// kernels are fused too); a create_graph backward runs the recorded formula.
OpDecl float_op(std::string name, Tensor (*fw)(const Tensor&), AutocastClass ac, std::vector<std::string> saves,
                std::string text, DerivativeFormula f, Samples samples) {
  if (has_fused_backward(name) && saves.size() == 1)
    f = [op = name, saved = saves[0], recorded = std::move(f)](const Tensor& g, const Ctx& c) {
      if (!nn::grad_enabled()) return ops::unary_math_backward(op.c_str(), g, c.saved(saved));
      return recorded(g, c);
    };
  return unary_op(std::move(name), fw, ResultDType::int_to_float, ac, std::move(saves), std::move(text), std::move(f),
                  std::move(samples));
}

Tensor zero_grad(const Tensor& g, const Ctx&) { return zeros_like(g); }

DType promote_all(const char* op, const Inputs& in, std::vector<Scalar> scalars = {}) {
  std::vector<const Tensor*> ts;
  for (const Tensor& t : in) ts.push_back(&t);
  return detail::promote_operands(op, ts, scalars);
}

OpDecl binary_op(std::string name, Tensor (*fw)(const Tensor&, const Tensor&), ResultDType rule, AutocastClass ac,
                 Derivative self, Derivative other, Samples samples) {
  OpDecl op;
  op.torch_name = "torch." + name;
  op.name = std::move(name);
  op.inputs = {{.name = "self"}, {.name = "other"}};
  op.forward = [fw](const Inputs& in, Attrs&) { return Inputs{fw(in[0], in[1])}; };
  op.result_dtype = rule;
  op.autocast = ac;
  op.derivatives = {std::move(self), std::move(other)};
  op.gradcheck_samples = std::move(samples);
  return op;
}

}  // namespace

void declare_unary_math(OpRegistry& r) {
  const auto fp32 = AutocastClass::fp32, none = AutocastClass::none;
  const auto same = ResultDType::same_as_input;

  // ---- sign, magnitude, rounding ----
  r.add(unary_op("abs", ops::abs, same, none, {"self"}, "grad * self.sgn()",
                 [](const Tensor& g, const Ctx& c) { return ad::mul(g, ops::sign(raw(c.saved("self")))); },
                 unary(0.2, 1, true), Accepts::non_bool));
  r.add(unary_op("sign", ops::sign, same, none, {}, "zeros_like(grad)", zero_grad, unary(0.2, 1, true)));
  {
    OpDecl op = unary_op("square", ops::square, ResultDType::custom, none, {"self"}, "2 * self * grad",
                         [](const Tensor& g, const Ctx& c) { return ad::mul(g, c.saved("self")) * 2.0; }, unary(-1, 1));
    op.custom_result_dtype = [](const Inputs& in, const Attrs&) {
      return in[0].dtype() == DType::i1 ? DType::i64 : in[0].dtype();
    };
    r.add(std::move(op));
  }
  using UnaryOp = Tensor (*)(const Tensor&);
  for (auto [name, fw] : {std::pair<const char*, UnaryOp>{"floor", ops::floor}, std::pair<const char*, UnaryOp>{"ceil", ops::ceil},
                          std::pair<const char*, UnaryOp>{"trunc", ops::trunc}})
    r.add(unary_op(name, fw, same, none, {}, "zeros_like(grad)", zero_grad, unary(0.1, 0.9, true), Accepts::non_bool));
  {
    OpDecl op = unary_op("round", ops::floor, same, none, {}, "zeros_like(grad)", zero_grad,
                         unary(0.1, 0.4, true, [] { return Attrs{{"decimals", 0}}; }), Accepts::non_bool);
    op.forward = [](const Inputs& in, Attrs& a) { return Inputs{ops::round(in[0], a.get<int>("decimals"))}; };
    r.add(std::move(op));
  }
  r.add(unary_op("frac", ops::frac, same, none, {}, "grad", [](const Tensor& g, const Ctx&) { return g; },
                 unary(0.1, 0.9, true), Accepts::floating));

  // ---- trigonometric and hyperbolic ----
  r.add(float_op("sin", ops::sin, none, {"self"}, "grad * self.cos()",
                 [](const Tensor& g, const Ctx& c) { return ad::mul(g, ad::cos(c.saved("self"))); }, unary(-2, 2)));
  r.add(float_op("cos", ops::cos, none, {"self"}, "grad * -self.sin()",
                 [](const Tensor& g, const Ctx& c) { return ad::neg(ad::mul(g, ad::sin(c.saved("self")))); },
                 unary(-2, 2)));
  r.add(float_op("tan", ops::tan, fp32, {"result"}, "grad * (1 + result.pow(2))",
                 [](const Tensor& g, const Ctx& c) {
                   const Tensor& y = c.saved("result");
                   return ad::mul(g, 1.0 + y * y);
                 },
                 unary(-1, 1)));
  r.add(float_op("asin", ops::asin, fp32, {"self"}, "grad * (-self * self + 1).rsqrt()",
                 [](const Tensor& g, const Ctx& c) {
                   const Tensor& x = c.saved("self");
                   return ad::mul(g, ad::rsqrt(1.0 - x * x));
                 },
                 unary(-0.9, 0.9)));
  r.add(float_op("acos", ops::acos, fp32, {"self"}, "grad * -((-self * self + 1).rsqrt())",
                 [](const Tensor& g, const Ctx& c) {
                   const Tensor& x = c.saved("self");
                   return ad::neg(ad::mul(g, ad::rsqrt(1.0 - x * x)));
                 },
                 unary(-0.9, 0.9)));
  r.add(float_op("atan", ops::atan, none, {"self"}, "grad / (self * self + 1)",
                 [](const Tensor& g, const Ctx& c) {
                   const Tensor& x = c.saved("self");
                   return ad::div(g, x * x + 1.0);
                 },
                 unary(-3, 3)));
  r.add(float_op("sinh", ops::sinh, fp32, {"self"}, "grad * self.cosh()",
                 [](const Tensor& g, const Ctx& c) { return ad::mul(g, ad::cosh(c.saved("self"))); }, unary(-2, 2)));
  r.add(float_op("cosh", ops::cosh, fp32, {"self"}, "grad * self.sinh()",
                 [](const Tensor& g, const Ctx& c) { return ad::mul(g, ad::sinh(c.saved("self"))); }, unary(-2, 2)));
  r.add(float_op("asinh", ops::asinh, none, {"self"}, "grad * (self.pow(2) + 1).rsqrt()",
                 [](const Tensor& g, const Ctx& c) {
                   const Tensor& x = c.saved("self");
                   return ad::mul(g, ad::rsqrt(x * x + 1.0));
                 },
                 unary(-3, 3)));
  r.add(float_op("acosh", ops::acosh, none, {"self"}, "grad * (self.pow(2) - 1).rsqrt()",
                 [](const Tensor& g, const Ctx& c) {
                   const Tensor& x = c.saved("self");
                   return ad::mul(g, ad::rsqrt(x * x - 1.0));
                 },
                 unary(1.2, 3)));
  r.add(float_op("atanh", ops::atanh, none, {"self"}, "grad * 1 / (1 - self.pow(2))",
                 [](const Tensor& g, const Ctx& c) {
                   const Tensor& x = c.saved("self");
                   return ad::div(g, 1.0 - x * x);
                 },
                 unary(-0.9, 0.9)));

  // ---- exponentials and logarithms ----
  r.add(float_op("log1p", ops::log1p, fp32, {"self"}, "log1p_backward(grad, self) = grad / (self + 1)",
                 [](const Tensor& g, const Ctx& c) { return ad::div(g, c.saved("self") + 1.0); }, unary(-0.5, 2)));
  r.add(float_op("expm1", ops::expm1, fp32, {"result"}, "grad * (result + 1)",
                 [](const Tensor& g, const Ctx& c) { return ad::mul(g, c.saved("result") + 1.0); }, unary(-2, 2)));
  r.add(float_op("log2", ops::log2, fp32, {"self"}, "grad / (self * 0.6931471805599453)",
                 [](const Tensor& g, const Ctx& c) { return ad::div(g, c.saved("self") * kLn2); }, unary(0.5, 2)));
  r.add(float_op("log10", ops::log10, fp32, {"self"}, "grad / (self * 2.3025850929940456)",
                 [](const Tensor& g, const Ctx& c) { return ad::div(g, c.saved("self") * kLn10); }, unary(0.5, 2)));
  r.add(float_op("exp2", ops::exp2, none, {"result"}, "grad * result * 0.6931471805599453",
                 [](const Tensor& g, const Ctx& c) { return ad::mul(g, c.saved("result") * kLn2); }, unary(-2, 2)));
  r.add(float_op("reciprocal", ops::reciprocal, fp32, {"result"}, "-grad * (result * result)",
                 [](const Tensor& g, const Ctx& c) {
                   const Tensor& y = c.saved("result");
                   return ad::neg(ad::mul(g, y * y));
                 },
                 unary(0.5, 2, true)));
  r.add(float_op("rsqrt", ops::rsqrt, fp32, {"result"}, "-0.5 * grad * result.pow(3)",
                 [](const Tensor& g, const Ctx& c) {
                   const Tensor& y = c.saved("result");
                   return ad::mul(g, y * y * y) * -0.5;
                 },
                 unary(0.5, 2)));
  r.add(float_op("erf", ops::erf, none, {"self"}, "2.0 / sqrt(M_PI) * exp(-(self.pow(2))) * grad",
                 [](const Tensor& g, const Ctx& c) {
                   const Tensor& x = c.saved("self");
                   return ad::mul(g, ad::exp(-(x * x)) * kTwoOverSqrtPi);
                 },
                 unary(-2, 2)));
  r.add(float_op("erfc", ops::erfc, none, {"self"}, "-2.0 / sqrt(M_PI) * exp(-(self.pow(2))) * grad",
                 [](const Tensor& g, const Ctx& c) {
                   const Tensor& x = c.saved("self");
                   return ad::mul(g, ad::exp(-(x * x)) * -kTwoOverSqrtPi);
                 },
                 unary(-2, 2)));
  r.add(float_op("erfinv", ops::erfinv, fp32, {"result"}, "0.5 * sqrt(M_PI) * exp(self.erfinv().pow(2)) * grad",
                 [](const Tensor& g, const Ctx& c) {
                   const Tensor& y = c.saved("result");
                   return ad::mul(g, ad::exp(y * y) * kSqrtPiOverTwo);
                 },
                 unary(-0.9, 0.9)));
  {
    OpDecl op = unary_op("nan_to_num", ops::abs, same, none, {"self"}, "grad * at::isfinite(self)",
                         [](const Tensor& g, const Ctx& c) {
                           return ad::mul(g, mask_of(ops::isfinite(raw(c.saved("self"))), g));
                         },
                         unary(-1, 1, false, [] {
                           return Attrs{{"nan", std::optional<double>()}, {"posinf", std::optional<double>()},
                                        {"neginf", std::optional<double>()}};
                         }));
    op.forward = [](const Inputs& in, Attrs& a) {
      using O = std::optional<double>;
      return Inputs{ops::nan_to_num(in[0], a.get<O>("nan"), a.get<O>("posinf"), a.get<O>("neginf"))};
    };
    r.add(std::move(op));
  }

  // ---- binary ----
  const auto promote = ResultDType::promote, to_float = ResultDType::promote_to_float;
  // minimum / maximum: the gradient goes to the smaller (larger) operand, half to each on ties.
  auto pick = [](bool want_smaller, bool first) {
    return [=](const Tensor& g, const Ctx& c) {
      Tensor a = raw(c.saved("self")), b = raw(c.saved("other"));
      if (!nn::grad_enabled()) return ops::minmax_backward(g, a, b, !want_smaller, false, !first);  // one kernel
      if (!first) std::swap(a, b);
      Tensor wins = want_smaller ? ops::lt(a, b) : ops::gt(a, b);
      Tensor w = ops::add(mask_of(wins, g), ops::mul(mask_of(ops::eq(a, b), g), Scalar(0.5)));
      return ad::mul(g, w);
    };
  };
  auto both = [](DerivativeFormula f1, DerivativeFormula f2, std::string t1, std::string t2) {
    return std::pair{Derivative{.input = "self", .saves = {"self", "other"}, .text = std::move(t1), .formula = std::move(f1)},
                     Derivative{.input = "other", .saves = {"self", "other"}, .text = std::move(t2), .formula = std::move(f2)}};
  };
  {
    auto [d1, d2] = both(pick(true, true), pick(true, false), "at::where(self == other, grad / 2, grad).masked_fill_(self > other, 0)",
                         "at::where(self == other, grad / 2, grad).masked_fill_(self < other, 0)");
    r.add(binary_op("minimum", ops::minimum, promote, none, d1, d2, binary(-1, 1, -1, 1)));
  }
  {
    auto [d1, d2] = both(pick(false, true), pick(false, false), "at::where(self == other, grad / 2, grad).masked_fill_(self < other, 0)",
                         "at::where(self == other, grad / 2, grad).masked_fill_(self > other, 0)");
    r.add(binary_op("maximum", ops::maximum, promote, none, d1, d2, binary(-1, 1, -1, 1)));
  }
  // fmin / fmax: the operand taken gets the gradient, half to each on ties (as PyTorch 2.x's
  // derivatives.yaml); a NaN operand is not taken unless both are (then self is).
  auto taken = [](bool smaller, bool self_side) {
    return [=](const Tensor& g, const Ctx& c) {
      Tensor a = raw(c.saved("self")), b = raw(c.saved("other"));
      if (!nn::grad_enabled()) return ops::minmax_backward(g, a, b, !smaller, true, !self_side);  // one kernel
      Tensor self_wins = ops::logical_or(smaller ? ops::lt(a, b) : ops::gt(a, b), ops::isnan(b));
      Tensor tie = ops::eq(a, b);
      Tensor wins = self_side ? self_wins : ops::logical_not(ops::logical_or(self_wins, tie));
      return ad::mul(g, ops::add(mask_of(wins, g), ops::mul(mask_of(tie, g), Scalar(0.5))));
    };
  };
  {
    auto [d1, d2] = both(taken(true, true), taken(true, false),
                         "at::where(self == other, grad / 2, grad).masked_fill_((self < other).logical_or_(other.isnan()).logical_or_(self == other).logical_not_(), 0)",
                         "at::where(self == other, grad / 2, grad).masked_fill_((self < other).logical_or_(other.isnan()), 0)");
    r.add(binary_op("fmin", ops::fmin, promote, none, d1, d2, binary(-1, 1, -1, 1)));
  }
  {
    auto [d1, d2] = both(taken(false, true), taken(false, false),
                         "at::where(self == other, grad / 2, grad).masked_fill_((self > other).logical_or_(other.isnan()).logical_or_(self == other).logical_not_(), 0)",
                         "at::where(self == other, grad / 2, grad).masked_fill_((self > other).logical_or_(other.isnan()), 0)");
    r.add(binary_op("fmax", ops::fmax, promote, none, d1, d2, binary(-1, 1, -1, 1)));
  }
  {
    auto [d1, d2] = both(
        [](const Tensor& g, const Ctx& c) {
          const Tensor &a = c.saved("self"), &b = c.saved("other");
          return ad::div(ad::mul(g, b), a * a + b * b);
        },
        [](const Tensor& g, const Ctx& c) {
          const Tensor &a = c.saved("self"), &b = c.saved("other");
          return ad::neg(ad::div(ad::mul(g, a), a * a + b * b));
        },
        "grad * other / (self * self + other * other)", "grad * -self / (self * self + other * other)");
    r.add(binary_op("atan2", ops::atan2, to_float, AutocastClass::promote, d1, d2, binary(-1, 1, 0.5, 2)));
  }
  r.add(binary_op("hypot", ops::hypot, promote, none,
                  {.input = "self", .saves = {"self", "result"}, .text = "grad * self / result",
                   .formula = [](const Tensor& g, const Ctx& c) { return ad::div(ad::mul(g, c.saved("self")), c.saved("result")); }},
                  {.input = "other", .saves = {"other", "result"}, .text = "grad * other / result",
                   .formula = [](const Tensor& g, const Ctx& c) { return ad::div(ad::mul(g, c.saved("other")), c.saved("result")); }},
                  binary(-1, 1, -1, 1)));
  r.add(binary_op("copysign", ops::copysign, to_float, none,
                  {.input = "self", .saves = {"self", "result"}, .text = "copysign_tensor_self_backward(grad, self, result)",
                   .formula = [](const Tensor& g, const Ctx& c) {
                     // result / self is +-1 (a constant); 0 where self is 0.
                     Tensor x = raw(c.saved("self")), y = raw(c.saved("result"));
                     if (!nn::grad_enabled()) return ops::copysign_backward(g, x, y);  // one kernel
                     Tensor ratio = ops::where(ops::eq(x, Scalar(0)), ops::zeros_like(x), ops::div(y, x));
                     return ad::mul(g, ratio);
                   }},
                  {.input = "other", .text = "zeros_like(other)", .formula = zero_grad},
                  binary(0.2, 1, -1, 1)));
  r.add(binary_op("logaddexp", ops::logaddexp, promote, none,
                  {.input = "self", .saves = {"self", "other"}, .text = "grad / (1 + exp(other - self))",
                   .formula = [](const Tensor& g, const Ctx& c) {
                     return ad::div(g, 1.0 + ad::exp(c.saved("other") - c.saved("self")));
                   }},
                  {.input = "other", .saves = {"self", "other"}, .text = "grad / (1 + exp(self - other))",
                   .formula = [](const Tensor& g, const Ctx& c) {
                     return ad::div(g, 1.0 + ad::exp(c.saved("self") - c.saved("other")));
                   }},
                  binary(-1, 1, -1, 1)));
  // fmod / remainder: self gets grad; other -grad * (the rounded quotient), a constant.
  // The rounded quotient is (a - fmod(a, b)) / b (remainder for floor), rounded to the integer it
  // is up to rounding, in f32 for f16/bf16: floor(a / b) of a rounded a / b is one off where the
  // quotient rounds up to an integer (bf16 2.99 -> 3), as PyTorch's div_floor / div_trunc avoid.
  auto quotient_grad = [](bool floor_div) {
    return [=](const Tensor& g, const Ctx& c) {
      if (!nn::grad_enabled()) return ops::quotient_backward(g, raw(c.saved("self")), raw(c.saved("other")), floor_div);
      DType math = g.dtype() == DType::f64 ? DType::f64 : DType::f32;
      Tensor a = to_dtype(raw(c.saved("self")), math), b = to_dtype(raw(c.saved("other")), math);
      Tensor rest = floor_div ? ops::remainder(a, b) : ops::fmod(a, b);
      Tensor q = to_dtype(ops::round(ops::div(ops::sub(a, rest), b), 0), g.dtype());
      return ad::neg(ad::mul(g, q));
    };
  };
  auto identity = [](const Tensor& g, const Ctx&) { return g; };
  r.add(binary_op("fmod", ops::fmod, promote, none, {.input = "self", .text = "grad", .formula = identity},
                  {.input = "other", .saves = {"self", "other"}, .text = "-grad * self.div(other, rounding_mode=\"trunc\")",
                   .formula = quotient_grad(false)},
                  binary(-3, 3, 0.7, 1.3)));
  r.add(binary_op("remainder", ops::remainder, promote, none, {.input = "self", .text = "grad", .formula = identity},
                  {.input = "other", .saves = {"self", "other"}, .text = "-grad * self.div(other, rounding_mode=\"floor\")",
                   .formula = quotient_grad(true)},
                  binary(-3, 3, 0.7, 1.3)));
  using ScalarOp = Tensor (*)(const Tensor&, Scalar);
  for (auto [name, torch, op_fn] : {std::tuple{"fmod.Scalar", "torch.fmod", static_cast<ScalarOp>(ops::fmod)},
                                    std::tuple{"remainder.Scalar", "torch.remainder", static_cast<ScalarOp>(ops::remainder)}}) {
    ScalarOp fw = op_fn;
    r.add({.name = name,
           .torch_name = torch,
           .inputs = {{.name = "self"}},
           .forward = [fw](const Inputs& in, Attrs& a) { return Inputs{fw(in[0], a.get<Scalar>("other"))}; },
           .result_dtype = promote,
           .scalar_operand = "other",
           .derivatives = {{.input = "self", .text = "grad", .formula = identity}},
           .gradcheck_samples = unary(-3, 3, false, [] { return Attrs{{"other", Scalar(1.3)}}; })});
  }

  // ---- clamp: numbers (attributes) or tensors (optional inputs) ----
  r.add({.name = "clamp",
         .torch_name = "torch.clamp",
         .inputs = {{.name = "self"}},
         .forward = [](const Inputs& in, Attrs& a) {
           auto bound = [&](const char* has, const char* v) {
             return a.get<bool>(has) ? std::optional<Scalar>(a.get<Scalar>(v)) : std::nullopt;
           };
           return Inputs{ops::clamp(in[0], bound("has_min", "min"), bound("has_max", "max"))};
         },
         .result_dtype = ResultDType::custom,
         .custom_result_dtype = [](const Inputs& in, const Attrs& a) {
           std::vector<Scalar> s;
           if (a.get<bool>("has_min")) s.push_back(a.get<Scalar>("min"));
           if (a.get<bool>("has_max")) s.push_back(a.get<Scalar>("max"));
           return promote_all("clamp", in, s);
         },
         .derivatives = {{.input = "self", .saves = {"self"}, .text = "clamp_backward(grad, self, min, max)",
                          .formula = [](const Tensor& g, const Ctx& c) {
                            const Attrs& a = c.attrs();
                            Tensor x = raw(c.saved("self"));
                            if (!nn::grad_enabled()) {  // one kernel
                              auto bound = [&](const char* has, const char* v) {
                                return a.get<bool>(has) ? std::optional<Scalar>(a.get<Scalar>(v)) : std::nullopt;
                              };
                              return ops::clamp_backward(g, x, bound("has_min", "min"), bound("has_max", "max"));
                            }
                            Tensor keep = ops::full(x.shape(), Scalar(true), DType::i1, x.device());
                            if (a.get<bool>("has_min")) keep = ops::logical_and(keep, ops::logical_not(ops::lt(x, a.get<Scalar>("min"))));
                            if (a.get<bool>("has_max")) keep = ops::logical_and(keep, ops::logical_not(ops::gt(x, a.get<Scalar>("max"))));
                            return ad::mul(g, mask_of(keep, g));
                          }}},
         .gradcheck_samples = [](Device d) {
           auto attrs = [](bool has_min, bool has_max) {
             return [=] { return Attrs{{"has_min", has_min}, {"has_max", has_max}, {"min", Scalar(-0.45)}, {"max", Scalar(0.55)}}; };
           };
           return std::vector<GradcheckSample>{
               {"min and max", {sample_uniform({3, 4}, d, 71)}, attrs(true, true)},
               {"min only", {sample_uniform({3, 4}, d, 72)}, attrs(true, false)},
               {"max only", {runtime::t_of(sample_uniform({4, 3}, d, 73))}, attrs(false, true)},
           };
         }});
  r.add({.name = "clamp.Tensor",
         .torch_name = "torch.clamp",
         .inputs = {{.name = "self"}, {.name = "min", .optional = true}, {.name = "max", .optional = true}},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{ops::clamp(in[0], in[1], in[2])}; },
         .result_dtype = ResultDType::custom,
         .custom_result_dtype = [](const Inputs& in, const Attrs&) { return promote_all("clamp", in); },
         .derivatives =
             {{.input = "self", .saves = {"self", "min", "max"}, .text = "where(self >= min & self <= max, grad, 0)",
               .formula = [](const Tensor& g, const Ctx& c) {
                 Tensor x = raw(c.saved("self")), lo = raw(c.saved("min")), hi = raw(c.saved("max"));
                 Tensor keep = ops::full(x.shape(), Scalar(true), DType::i1, x.device());
                 if (lo.defined()) keep = ops::logical_and(keep, ops::ge(x, lo));
                 if (hi.defined()) keep = ops::logical_and(keep, ops::le(x, hi));
                 return ad::mul(g, mask_of(keep, g));
               }},
              {.input = "min", .saves = {"self", "min", "max"}, .text = "where(self < min & min < max, grad, 0)",
               .formula = [](const Tensor& g, const Ctx& c) {
                 Tensor x = raw(c.saved("self")), lo = raw(c.saved("min")), hi = raw(c.saved("max"));
                 Tensor take = ops::lt(x, lo);
                 if (hi.defined()) take = ops::logical_and(take, ops::lt(lo, hi));
                 return ad::mul(g, mask_of(take, g));
               }},
              {.input = "max", .saves = {"self", "min", "max"}, .text = "where(self > max | min > max, grad, 0)",
               .formula = [](const Tensor& g, const Ctx& c) {
                 Tensor x = raw(c.saved("self")), lo = raw(c.saved("min")), hi = raw(c.saved("max"));
                 Tensor take = ops::gt(x, hi);
                 if (lo.defined()) take = ops::logical_or(take, ops::gt(lo, hi));
                 return ad::mul(g, mask_of(take, g));
               }}},
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               {"min and max tensors",
                {sample_uniform({3, 4}, d, 74), sample_uniform({3, 1}, d, 75, -0.6, -0.2), sample_uniform({4}, d, 76, 0.2, 0.6)},
                no_attrs},
               {"min tensor only", {sample_uniform({3, 4}, d, 77), sample_uniform({3, 4}, d, 78), Tensor()}, no_attrs},
           };
         }});

  // ---- lerp, addcmul, addcdiv ----
  r.add({.name = "lerp.Scalar",
         .torch_name = "torch.lerp",
         .inputs = {{.name = "self", .accepts = Accepts::floating}, {.name = "end", .accepts = Accepts::floating}},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{ops::lerp(in[0], in[1], a.get<Scalar>("weight"))}; },
         .result_dtype = ResultDType::same_across,
         .derivatives = {{.input = "self", .text = "grad * (1 - weight)",
                          .formula = [](const Tensor& g, const Ctx& c) { return g * (1.0 - c.attrs().get<Scalar>("weight").to_double()); }},
                         {.input = "end", .text = "grad * weight",
                          .formula = [](const Tensor& g, const Ctx& c) { return g * c.attrs().get<Scalar>("weight"); }}},
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               {"w = 0.3", {sample_uniform({3, 4}, d, 81), sample_uniform({3, 4}, d, 82)}, [] { return Attrs{{"weight", Scalar(0.3)}}; }},
               {"w = 0.8, broadcast", {sample_uniform({3, 1}, d, 83), sample_uniform({4}, d, 84)}, [] { return Attrs{{"weight", Scalar(0.8)}}; }},
           };
         }});
  r.add({.name = "lerp.Tensor",
         .torch_name = "torch.lerp",
         .inputs = {{.name = "self", .accepts = Accepts::floating},
                    {.name = "end", .accepts = Accepts::floating},
                    {.name = "weight", .accepts = Accepts::floating}},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{ops::lerp(in[0], in[1], in[2])}; },
         .result_dtype = ResultDType::same_across,
         .derivatives = {{.input = "self", .saves = {"weight"}, .text = "grad * (1 - weight)",
                          .formula = [](const Tensor& g, const Ctx& c) { return ad::mul(g, 1.0 - c.saved("weight")); }},
                         {.input = "end", .saves = {"weight"}, .text = "grad * weight",
                          .formula = [](const Tensor& g, const Ctx& c) { return ad::mul(g, c.saved("weight")); }},
                         {.input = "weight", .saves = {"self", "end"}, .text = "grad * (end - self)",
                          .formula = [](const Tensor& g, const Ctx& c) { return ad::mul(g, c.saved("end") - c.saved("self")); }}},
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               {"[3,4] x3", {sample_uniform({3, 4}, d, 85), sample_uniform({3, 4}, d, 86), sample_uniform({3, 4}, d, 87, 0, 1)}, no_attrs},
               {"broadcast", {sample_uniform({3, 1}, d, 88), sample_uniform({4}, d, 89), sample_uniform({}, d, 90, 0, 1)}, no_attrs},
           };
         }});
  auto three = [](uint64_t seed, double lo3, double hi3) {
    return [=](Device d) {
      return std::vector<GradcheckSample>{
          {"[2,3] x3", {sample_uniform({2, 3}, d, seed), sample_uniform({2, 3}, d, seed + 1), sample_away_from_zero({2, 3}, d, seed + 2, lo3, hi3)},
           [] { return Attrs{{"value", Scalar(0.7)}}; }},
          {"broadcast", {sample_uniform({3, 1}, d, seed + 3), sample_uniform({4}, d, seed + 4), sample_away_from_zero({3, 4}, d, seed + 5, lo3, hi3)},
           [] { return Attrs{{"value", Scalar(-1.5)}}; }},
      };
    };
  };
  auto value_of = [](const Ctx& c) { return c.attrs().get<Scalar>("value"); };
  r.add({.name = "addcmul",
         .torch_name = "torch.addcmul",
         .inputs = {{.name = "self"}, {.name = "tensor1"}, {.name = "tensor2"}},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{ops::addcmul(in[0], in[1], in[2], a.get<Scalar>("value"))}; },
         .result_dtype = ResultDType::custom,
         .custom_result_dtype = [](const Inputs& in, const Attrs& a) { return promote_all("addcmul", in, {a.get<Scalar>("value")}); },
         .autocast = AutocastClass::promote,  // PyTorch's autocast promote list
         .derivatives = {{.input = "self", .text = "grad", .formula = identity},
                         {.input = "tensor1", .saves = {"tensor2"}, .text = "grad * tensor2 * value",
                          .formula = [=](const Tensor& g, const Ctx& c) { return ad::mul(g, c.saved("tensor2")) * value_of(c); }},
                         {.input = "tensor2", .saves = {"tensor1"}, .text = "grad * tensor1 * value",
                          .formula = [=](const Tensor& g, const Ctx& c) { return ad::mul(g, c.saved("tensor1")) * value_of(c); }}},
         .gradcheck_samples = three(91, 0.2, 1)});
  r.add({.name = "addcdiv",
         .torch_name = "torch.addcdiv",
         .inputs = {{.name = "self"}, {.name = "tensor1"}, {.name = "tensor2"}},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{ops::addcdiv(in[0], in[1], in[2], a.get<Scalar>("value"))}; },
         .result_dtype = ResultDType::custom,
         .custom_result_dtype = [](const Inputs& in, const Attrs& a) { return promote_all("addcdiv", in, {a.get<Scalar>("value")}); },
         .autocast = AutocastClass::promote,  // PyTorch's autocast promote list
         .derivatives = {{.input = "self", .text = "grad", .formula = identity},
                         {.input = "tensor1", .saves = {"tensor2"}, .text = "grad * value / tensor2",
                          .formula = [=](const Tensor& g, const Ctx& c) { return ad::div(g, c.saved("tensor2")) * value_of(c); }},
                         {.input = "tensor2", .saves = {"tensor1", "tensor2"}, .text = "-grad * value * tensor1 / (tensor2 * tensor2)",
                          .formula = [=](const Tensor& g, const Ctx& c) {
                            const Tensor& t2 = c.saved("tensor2");
                            return ad::neg(ad::div(ad::mul(g, c.saved("tensor1")), t2 * t2)) * value_of(c);
                          }}},
         .gradcheck_samples = three(101, 0.5, 1.5)});
}

}  // namespace tritium::ops::decl
