// The activations (ops/activations.h): host side (dtype check, one generic elementwise call) and
// apply_activation(), the traced body the elementwise kernels run for these ops. Formulas and
// special values are PyTorch's CPU kernels' (silu(-inf) is NaN, softplus switches to x above the
// threshold, ...). Parameters (slopes, alpha, bounds) are the call's extra numbers: kernel
// arguments, so a new value launches the same compiled kernel.
#include "ops/activations.h"

#include "ops/elementwise_kernels.h"
#include "ops/math_approx.h"
#include "ops/unary_math.h"

namespace tritium::ops {

namespace tl = tritium::tl;
using detail::Ew;

namespace {

enum class A : int {
  leaky_relu = static_cast<int>(Ew::activation_first), silu, softplus, elu, mish, hardswish, hardsigmoid,
  hardtanh, softsign, tanhshrink, gelu_tanh,
  // x = grad, y = the input
  leaky_relu_bw, silu_bw, softplus_bw, elu_bw, mish_bw, hardswish_bw, hardsigmoid_bw, hardtanh_bw, gelu_tanh_bw,
  count_,
};
constexpr Ew ew(A a) { return static_cast<Ew>(static_cast<int>(a)); }

constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCoeff = 0.044715;

tl::tensor softplus_of(const tl::tensor& x, const tl::tensor& beta, const tl::tensor& threshold) {
  tl::tensor bx = x * beta;
  namespace m = detail::math;
  tl::tensor e = m::exp(bx);  // in [0, inf], or NaN
  return tl::where(bx > threshold, x, (m::wide(x) ? m::log1p(e) : m::log1p_nonneg_f32(e)) / beta);
}

// tanh(softplus(x)) = n / (n + 2), n = e (e + 2), e = exp(x) (tanh(log u) = (u^2 - 1) / (u^2 + 1),
// u = 1 + e): one exp and one division, where tanh(log1p(exp(x))) took an exp, a log, a
// division and tanhf (issue 29). No cancellation: n > 0. Above x = 20 it is 1 in f32 (and n
// would overflow past 44). f64 keeps the composition.
tl::tensor tanh_softplus(const tl::tensor& x) {
  namespace m = detail::math;
  if (m::wide(x)) return tl::tanh(m::log1p(m::exp(x)));
  tl::tensor e = m::exp(x);
  tl::tensor n = e * (e + 2.0);
  return tl::where(x > 20.0, 1.0, n / (n + 2.0));
}

tl::tensor clamp01x6(const tl::tensor& x) {  // min(max(x + 3, 0), 6)
  tl::tensor s = x + 3.0;
  return tl::where(s < 0.0, 0.0, tl::where(s > 6.0, 6.0, s));
}

}  // namespace

namespace detail {

const int kActivationOps = static_cast<int>(A::count_) - static_cast<int>(Ew::activation_first);

tl::tensor apply_activation(Ew op, DType, const EwOperands& v) {
  namespace m = detail::math;
  const tl::tensor& x = v.x;
  const tl::tensor& y = v.y;
  const auto& e = v.e;
  switch (static_cast<A>(static_cast<int>(op))) {
    case A::leaky_relu: return tl::where(x > 0.0, x, x * e[0]);
    case A::silu: return x / (1.0 + detail::math::exp(-x));
    case A::softplus: return softplus_of(x, e[0], e[1]);
    case A::elu: return tl::where(x > 0.0, x * e[1], m::expm1(x * e[2]) * (e[0] * e[1]));
    case A::mish: return x * tanh_softplus(x);
    case A::hardswish: return x * clamp01x6(x) / 6.0;
    case A::hardsigmoid: return clamp01x6(x) / 6.0;
    case A::hardtanh: {
      tl::tensor r = tl::where(x < e[0], e[0], x);
      return tl::where(r > e[1], e[1], r);
    }
    case A::softsign: return x / (1.0 + tl::abs(x));
    case A::tanhshrink: return x - tl::tanh(x);
    case A::gelu_tanh: return 0.5 * x * (1.0 + tl::tanh(kSqrt2OverPi * (x + kGeluCoeff * x * x * x)));

    case A::leaky_relu_bw: return tl::where(y > 0.0, x, x * e[0]);
    case A::silu_bw: {
      tl::tensor s = 1.0 / (1.0 + detail::math::exp(-y));
      return x * s * (1.0 + y * (1.0 - s));
    }
    case A::softplus_bw: {
      tl::tensor z = detail::math::exp(y * e[0]);
      return tl::where(y * e[0] > e[1], x, x * z / (z + 1.0));
    }
    case A::elu_bw:
      return tl::where(y > 0.0, x * e[1], x * (e[2] * e[0] * e[1]) * detail::math::exp(y * e[2]));
    case A::mish_bw: {
      tl::tensor t = tanh_softplus(y);
      tl::tensor s = 1.0 / (1.0 + detail::math::exp(-y));
      return x * (t + y * s * (1.0 - t * t));
    }
    case A::hardswish_bw:
      return tl::where(y < -3.0, 0.0, tl::where(y <= 3.0, x * (y / 3.0 + 0.5), x));
    case A::hardsigmoid_bw: return tl::where((y > -3.0) && (y < 3.0), x / 6.0, 0.0);
    case A::hardtanh_bw: return tl::where((y <= e[0]) || (y >= e[1]), 0.0, x);
    case A::gelu_tanh_bw: {
      tl::tensor inner = kSqrt2OverPi * (y + kGeluCoeff * y * y * y);
      tl::tensor t = tl::tanh(inner);
      tl::tensor dinner = kSqrt2OverPi * (1.0 + 3.0 * kGeluCoeff * y * y);
      return x * (0.5 * (1.0 + t) + 0.5 * y * (1.0 - t * t) * dinner);
    }
    case A::count_: break;
  }
  fail("elementwise: unknown activation {}", static_cast<int>(op));
}

}  // namespace detail

namespace {

using Extra = std::array<std::optional<Scalar>, detail::kExtraScalars>;

void check_float(const char* name, const Tensor& x) {
  if (!is_float(x.dtype()))
    fail("{}: not implemented for {} tensors (expected a floating-point tensor)", name,
         x.dtype() == DType::i1 ? "bool" : dtype_name(x.dtype()));
}

Tensor act(const char* name, A op, const Tensor& x, Extra extra = {}) {
  detail::check_tensors(name, {&x});
  check_float(name, x);
  return detail::elementwise(detail::ew_call(name, ew(op), detail::math_type(x.dtype()), 0, std::move(extra)), x.dtype(),
                             {&x});
}

Tensor act_bw(const char* name, A op, const Tensor& grad, const Tensor& x, Extra extra = {}) {
  detail::check_tensors(name, {&grad, &x});
  check_float(name, x);
  if (grad.shape() != x.shape())
    fail("{}: grad shape {} differs from input shape {}", name, detail::shape_str(grad.shape()), detail::shape_str(x.shape()));
  DType r = detail::promote_operands(name, {&grad, &x});
  return detail::elementwise(detail::ew_call(name, ew(op), detail::math_type(r), 0, std::move(extra)), r, {&grad, &x});
}

Extra nums(std::optional<Scalar> a, std::optional<Scalar> b = std::nullopt, std::optional<Scalar> c = std::nullopt) {
  return {a, b, c};
}

}  // namespace

Tensor leaky_relu(const Tensor& x, double slope) { return act("leaky_relu", A::leaky_relu, x, nums(slope)); }
Tensor silu(const Tensor& x) { return act("silu", A::silu, x); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return act("softplus", A::softplus, x, nums(beta, threshold));
}
Tensor elu(const Tensor& x, double alpha, double scale, double input_scale) {
  return act("elu", A::elu, x, nums(alpha, scale, input_scale));
}
Tensor selu(const Tensor& x) { return elu(x, kSeluAlpha, kSeluScale, 1.0); }
Tensor celu(const Tensor& x, double alpha) {
  if (alpha == 0) fail("celu: ZeroDivisionError (alpha must not be 0)");
  return elu(x, alpha, 1.0, 1.0 / alpha);
}
Tensor mish(const Tensor& x) { return act("mish", A::mish, x); }
Tensor hardswish(const Tensor& x) { return act("hardswish", A::hardswish, x); }
Tensor hardsigmoid(const Tensor& x) { return act("hardsigmoid", A::hardsigmoid, x); }
Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  if (min_val > max_val) fail("hardtanh: min_val cannot be greater than max_val (min_val {}, max_val {})", min_val, max_val);
  // Integers clamp to the bounds converted to the integer type (truncated), as PyTorch's
  // hardtanh (a clamp) does; bool is PyTorch's error.
  if (x.defined() && !is_float(x.dtype())) {
    if (x.dtype() == DType::i1) fail("hardtanh: Bool inputs not supported for hardtanh");
    return clamp(x, Scalar(static_cast<int64_t>(min_val)), Scalar(static_cast<int64_t>(max_val)));
  }
  return act("hardtanh", A::hardtanh, x, nums(min_val, max_val));
}
Tensor relu6(const Tensor& x) { return hardtanh(x, 0.0, 6.0); }
// PyTorch's softsign and tanhshrink are compositions (x / (1 + |x|), x - tanh(x)): integers give
// f32; bool is an error there (abs and subtraction refuse it) and here.
Tensor softsign(const Tensor& x) {
  if (x.defined() && !is_float(x.dtype()) && x.dtype() != DType::i1) return softsign(to_dtype(x, DType::f32));
  return act("softsign", A::softsign, x);
}
Tensor tanhshrink(const Tensor& x) {
  if (x.defined() && !is_float(x.dtype()) && x.dtype() != DType::i1) return tanhshrink(to_dtype(x, DType::f32));
  return act("tanhshrink", A::tanhshrink, x);
}
Tensor gelu_tanh(const Tensor& x) { return act("gelu", A::gelu_tanh, x); }

Tensor leaky_relu_backward(const Tensor& g, const Tensor& x, double slope) {
  return act_bw("leaky_relu_backward", A::leaky_relu_bw, g, x, nums(slope));
}
Tensor silu_backward(const Tensor& g, const Tensor& x) { return act_bw("silu_backward", A::silu_bw, g, x); }
Tensor softplus_backward(const Tensor& g, const Tensor& x, double beta, double threshold) {
  return act_bw("softplus_backward", A::softplus_bw, g, x, nums(beta, threshold));
}
Tensor elu_backward(const Tensor& g, const Tensor& x, double alpha, double scale, double input_scale) {
  return act_bw("elu_backward", A::elu_bw, g, x, nums(alpha, scale, input_scale));
}
Tensor mish_backward(const Tensor& g, const Tensor& x) { return act_bw("mish_backward", A::mish_bw, g, x); }
Tensor hardswish_backward(const Tensor& g, const Tensor& x) {
  return act_bw("hardswish_backward", A::hardswish_bw, g, x);
}
Tensor hardsigmoid_backward(const Tensor& g, const Tensor& x) {
  return act_bw("hardsigmoid_backward", A::hardsigmoid_bw, g, x);
}
Tensor hardtanh_backward(const Tensor& g, const Tensor& x, double min_val, double max_val) {
  return act_bw("hardtanh_backward", A::hardtanh_bw, g, x, nums(min_val, max_val));
}
Tensor gelu_tanh_backward(const Tensor& g, const Tensor& x) {
  return act_bw("gelu_backward", A::gelu_tanh_bw, g, x);
}

}  // namespace tritium::ops
