// The activations (ops/activations.h, nn/elementwise_ops.h): forward values and the fused
// `_backward` kernels against float64 formulas on random inputs plus the edges (NaN, +-inf,
// signed zeros, huge), in f32, f64, f16 and bf16, PyTorch's special values (silu(-inf) = NaN,
// softplus above its threshold is x), and the errors (integer inputs, bad parameters).
// Gradchecks and gradgradchecks of the declarations: test_op_registry.cpp, test_autograd_grad.cpp.
#include <cmath>
#include <limits>

#include "nn/functional.h"
#include "ops_test_helpers.h"
#include "ew_test_support.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ew = tritium::test::ew;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

BOOST_AUTO_TEST_SUITE(test_ops_activations)

namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535588;

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double softplus_ref(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}
double elu_ref(double x, double alpha, double scale, double input_scale) {
  return x > 0 ? x * scale : std::expm1(x * input_scale) * alpha * scale;
}
double hardtanh_ref(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }
double gelu_tanh_ref(double x) {
  return 0.5 * x * (1 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}

struct Activation {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  std::function<Tensor(const Tensor&, const Tensor&)> backward;  // (grad, x); empty if none
  std::function<double(double)> derivative;
};

std::vector<Activation> activations() {
  const double alpha = 1.3, slope = 0.2;
  return {
      {"leaky_relu", [=](const Tensor& x) { return ops::leaky_relu(x, slope); },
       [=](double x) { return x > 0 ? x : x * slope; },
       [=](const Tensor& g, const Tensor& x) { return ops::leaky_relu_backward(g, x, slope); },
       [=](double x) { return x > 0 ? 1 : slope; }},
      {"silu", [](const Tensor& x) { return ops::silu(x); }, [](double x) { return x / (1 + std::exp(-x)); },
       [](const Tensor& g, const Tensor& x) { return ops::silu_backward(g, x); },
       [](double x) { return sigmoid(x) * (1 + x * (1 - sigmoid(x))); }},
      {"softplus(beta 2, threshold 3)", [](const Tensor& x) { return ops::softplus(x, 2, 3); },
       [](double x) { return softplus_ref(x, 2, 3); },
       [](const Tensor& g, const Tensor& x) { return ops::softplus_backward(g, x, 2, 3); },
       [](double x) { return x * 2 > 3 ? 1 : sigmoid(2 * x); }},
      {"elu", [=](const Tensor& x) { return ops::elu(x, alpha); }, [=](double x) { return elu_ref(x, alpha, 1, 1); },
       [=](const Tensor& g, const Tensor& x) { return ops::elu_backward(g, x, alpha, 1, 1); },
       [=](double x) { return x > 0 ? 1 : alpha * std::exp(x); }},
      {"selu", [](const Tensor& x) { return ops::selu(x); },
       [](double x) { return elu_ref(x, ops::kSeluAlpha, ops::kSeluScale, 1); }, nullptr, nullptr},
      {"celu", [=](const Tensor& x) { return ops::celu(x, alpha); },
       [=](double x) { return elu_ref(x, alpha, 1, 1 / alpha); }, nullptr, nullptr},
      {"mish", [](const Tensor& x) { return ops::mish(x); },
       [](double x) { return x * std::tanh(std::log1p(std::exp(x))); },
       [](const Tensor& g, const Tensor& x) { return ops::mish_backward(g, x); },
       [](double x) {
         double t = std::tanh(std::log1p(std::exp(x)));
         return t + x * sigmoid(x) * (1 - t * t);
       }},
      {"hardswish", [](const Tensor& x) { return ops::hardswish(x); },
       [](double x) {
         // x * clamp(x + 3, 0, 6) / 6 in that order, as PyTorch: the product overflows f32 first
         // (hardswish(3e38) is inf in f32, PyTorch's too).
         double t = x * std::min(std::max(x + 3, 0.0), 6.0);
         if (std::abs(t) > std::numeric_limits<float>::max() && std::abs(x) < 1e300) t = std::copysign(ew::kInf, t);
         return t / 6;
       },
       [](const Tensor& g, const Tensor& x) { return ops::hardswish_backward(g, x); },
       [](double x) { return x < -3 ? 0.0 : x <= 3 ? x / 3 + 0.5 : 1.0; }},
      {"hardsigmoid", [](const Tensor& x) { return ops::hardsigmoid(x); },
       [](double x) { return std::min(std::max(x + 3, 0.0), 6.0) / 6; },
       [](const Tensor& g, const Tensor& x) { return ops::hardsigmoid_backward(g, x); },
       [](double x) { return x > -3 && x < 3 ? 1.0 / 6 : 0.0; }},
      {"hardtanh(-0.5, 2)", [](const Tensor& x) { return ops::hardtanh(x, -0.5, 2); },
       [](double x) { return std::isnan(x) ? x : hardtanh_ref(x, -0.5, 2); },
       [](const Tensor& g, const Tensor& x) { return ops::hardtanh_backward(g, x, -0.5, 2); },
       [](double x) { return x <= -0.5 || x >= 2 ? 0.0 : 1.0; }},
      {"relu6", [](const Tensor& x) { return ops::relu6(x); },
       [](double x) { return std::isnan(x) ? x : hardtanh_ref(x, 0, 6); }, nullptr, nullptr},
      {"softsign", [](const Tensor& x) { return ops::softsign(x); }, [](double x) { return x / (1 + std::abs(x)); },
       nullptr, nullptr},
      {"tanhshrink", [](const Tensor& x) { return ops::tanhshrink(x); }, [](double x) { return x - std::tanh(x); },
       nullptr, nullptr},
      {"gelu(tanh)", [](const Tensor& x) { return ops::gelu_tanh(x); }, gelu_tanh_ref,
       [](const Tensor& g, const Tensor& x) { return ops::gelu_tanh_backward(g, x); },
       [](double x) {
         double t = std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
         return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * kSqrt2OverPi * (1 + 3 * 0.044715 * x * x);
       }},
  };
}

}  // namespace

BOOST_AUTO_TEST_CASE(forward_against_float64) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16})
      for (const Activation& a : activations()) {
        ew::Input in = ew::make_input(d, 777, 13, -8, 8);
        Tensor out = a.op(in.t);
        BOOST_TEST((out.dtype() == d), a.name);
        std::vector<double> ref;
        for (double v : in.v) ref.push_back(ew::round_to(a.ref(v), d));
        // tanhshrink cancels near 0 (x - tanh x): an absolute tolerance at the f32 scale there.
        double atol = d == DType::f64 ? 1e-15 : d == DType::f32 ? 2e-7 : 1e-3;
        ew::check_elements(out, ref, 8 * ew::tol_of(d), atol, std::string(a.name) + " " + tritium::dtype_name(d));
      }
  });
}

BOOST_AUTO_TEST_CASE(special_values_as_pytorch) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = Tensor::from_vector<float>({-INFINITY, INFINITY, NAN, -0.0f, 100.0f}, {5});
    ew::check_elements(ops::silu(x), {ew::kNaN, ew::kInf, ew::kNaN, -0.0, 100.0}, 0, 0, "silu", true);
    ew::check_elements(ops::softplus(x), {0.0, ew::kInf, ew::kNaN, std::log(2.0f), 100.0}, 1e-7, 0, "softplus");
    ew::check_elements(ops::mish(x), {ew::kNaN, ew::kInf, ew::kNaN, -0.0, 100.0}, 0, 0, "mish", true);
    ew::check_elements(ops::elu(x), {-1.0, ew::kInf, ew::kNaN, -0.0, 100.0}, 0, 0, "elu", true);
    ew::check_elements(ops::hardswish(Tensor::from_vector<float>({-3.0f, 3.0f}, {2})), {-0.0, 3.0}, 0, 0, "hardswish", true);
  });
}

BOOST_AUTO_TEST_CASE(fused_backward_kernels_against_float64) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (DType d : {DType::f32, DType::f64, DType::bf16})
      for (const Activation& a : activations()) {
        if (!a.backward) continue;
        // Away from the kinks (where the derivative is one-sided).
        ew::Input in = ew::make_input(d, 613, 19, -6, 6, /*edges=*/false);
        Tensor g = ops::to_dtype(ou::random_tensor<double>({613}, 20, -2, 2), d);
        auto gv = ou::values(g);
        std::vector<double> ref;
        for (size_t i = 0; i < in.v.size(); ++i) ref.push_back(ew::round_to(gv[i] * a.derivative(in.v[i]), d));
        Tensor out = a.backward(g, in.t);
        BOOST_TEST((out.dtype() == d), a.name);
        ew::check_elements(out, ref, 16 * ew::tol_of(d), d == DType::f64 ? 1e-14 : d == DType::f32 ? 1e-6 : 1e-2,
                           std::string(a.name) + " backward " + tritium::dtype_name(d));
      }
  });
}

BOOST_AUTO_TEST_CASE(differentiable_functions_use_the_fused_backward) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = ou::random_tensor<float>({4, 5}, 31, -3, 3);
    x.requires_grad_();
    Tensor y = tritium::sum(tritium::silu(x) + tritium::gelu(x, "tanh") + tritium::hardswish(x));
    y.backward();
    auto xv = ou::values(x.detach());
    std::vector<double> ref;
    for (double v : xv) {
      double t = std::tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v));
      double dg = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * kSqrt2OverPi * (1 + 3 * 0.044715 * v * v);
      double dh = v < -3 ? 0.0 : v <= 3 ? v / 3 + 0.5 : 1.0;
      ref.push_back(sigmoid(v) * (1 + v * (1 - sigmoid(v))) + dg + dh);
    }
    ew::check_elements(x.grad(), ref, 1e-5, 1e-6, "d/dx (silu + gelu_tanh + hardswish)");
    ew::check_elements(tritium::selu(x).detach(), ou::values(ops::selu(x.detach())), 0, 0, "tritium::selu");
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor i = Tensor::from_vector<int32_t>({1, -2}, {2});
    EW_CHECK_ERROR(ops::silu(i), "silu: not implemented for i32 tensors");
    EW_CHECK_ERROR(tritium::leaky_relu(i), "leaky_relu: argument 'self' must be a floating-point tensor");
    Tensor x = ou::random_tensor<float>({3}, 41);
    EW_CHECK_ERROR(ops::hardtanh(x, 1, -1), "hardtanh: min_val cannot be greater than max_val");
    EW_CHECK_ERROR(tritium::celu(x, 0), "celu: ZeroDivisionError");
    EW_CHECK_ERROR(tritium::gelu(x, "fast"), "gelu: approximate must be \"none\" or \"tanh\", got \"fast\"");
    EW_CHECK_ERROR(ops::silu_backward(x, ou::random_tensor<float>({4}, 42)), "silu_backward: grad shape [3] differs");
  });
}

BOOST_AUTO_TEST_SUITE_END()
