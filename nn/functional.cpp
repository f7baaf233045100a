// The differentiable API: every function is one call of the generic dispatch (nn/dispatch.h) on
// its op's declaration (ops/decl/), which checks the dtypes, runs the forward and records the
// declared derivatives. Nothing here is per-op autograd code.
#include "nn/functional.h"

#include <utility>

#include "nn/dispatch.h"

namespace tritium {
namespace {

using ops::Attrs;
using Dims = std::vector<int>;

}  // namespace

// ---- elementwise ----------------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) { return nn::call("add", {a, b}); }
Tensor sub(const Tensor& a, const Tensor& b) { return nn::call("sub", {a, b}); }
Tensor mul(const Tensor& a, const Tensor& b) { return nn::call("mul", {a, b}); }
Tensor div(const Tensor& a, const Tensor& b) { return nn::call("div", {a, b}); }
Tensor neg(const Tensor& x) { return nn::call("neg", {x}); }
Tensor exp(const Tensor& x) { return nn::call("exp", {x}); }
Tensor log(const Tensor& x) { return nn::call("log", {x}); }
Tensor sqrt(const Tensor& x) { return nn::call("sqrt", {x}); }
Tensor pow(const Tensor& x, Scalar exponent) { return nn::call("pow", {x}, Attrs{{"exponent", exponent}}); }
Tensor tanh(const Tensor& x) { return nn::call("tanh", {x}); }
Tensor sigmoid(const Tensor& x) { return nn::call("sigmoid", {x}); }
Tensor relu(const Tensor& x) { return nn::call("relu", {x}); }
Tensor gelu(const Tensor& x) { return nn::call("gelu", {x}); }
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return nn::call("where", {cond, a, b}); }

// ---- reductions -----------------------------------------------------------------------------------

Tensor sum(const Tensor& x, Dims dims, bool keepdim) {
  return nn::call("sum", {x}, Attrs{{"dims", std::move(dims)}, {"keepdim", keepdim}});
}
Tensor mean(const Tensor& x, Dims dims, bool keepdim) {
  return nn::call("mean", {x}, Attrs{{"dims", std::move(dims)}, {"keepdim", keepdim}});
}
Tensor amax(const Tensor& x, Dims dims, bool keepdim) {
  return nn::call("amax", {x}, Attrs{{"dims", std::move(dims)}, {"keepdim", keepdim}});
}
Tensor amin(const Tensor& x, Dims dims, bool keepdim) {
  return nn::call("amin", {x}, Attrs{{"dims", std::move(dims)}, {"keepdim", keepdim}});
}

Tensor sum_to(const Tensor& x, const std::vector<int64_t>& shape) {
  const int lead = x.dim() - static_cast<int>(shape.size());
  if (lead < 0) fail("sum_to: cannot reduce {} to {} dims", x.str(), shape.size());
  Dims dims;
  for (int d = 0; d < x.dim(); ++d)
    if (d < lead || (shape[static_cast<size_t>(d - lead)] == 1 && x.shape()[static_cast<size_t>(d)] != 1)) dims.push_back(d);
  if (dims.empty()) return x.reshape(shape);
  return tritium::sum(x, dims, /*keepdim=*/true).reshape(shape);
}

// ---- matmul, softmax, losses, normalisation, attention, dropout ---------------------------------------

Tensor matmul(const Tensor& a, const Tensor& b) { return nn::call("matmul", {a, b}); }
Tensor softmax(const Tensor& x, int dim) { return nn::call("softmax", {x}, Attrs{{"dim", dim}}); }
Tensor log_softmax(const Tensor& x, int dim) { return nn::call("log_softmax", {x}, Attrs{{"dim", dim}}); }

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal,
                                    std::optional<double> scale) {
  return nn::call("scaled_dot_product_attention", {q, k, v}, Attrs{{"is_causal", is_causal}, {"scale", scale}});
}

Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  return nn::call("layer_norm", {x, weight, bias}, Attrs{{"normalized_shape", normalized_shape}, {"eps", eps}});
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) { return nn::call("cross_entropy", {logits, targets}); }

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  if (!(p >= 0 && p <= 1)) fail("dropout probability has to be between 0 and 1, but got {}", p);
  // As PyTorch's at::dropout: no kernel (and no copy) in eval mode or at p = 0 (the GPT's default,
  // 13 copies a step forward and as many backward).
  if (!training || p == 0) return x;
  return nn::call("dropout", {x}, Attrs{{"p", p}, {"generator", &gen}});
}

// ---- operators --------------------------------------------------------------------------------------

namespace runtime {

Tensor operator+(const Tensor& a, const Tensor& b) { return tritium::add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return tritium::sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return tritium::mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return tritium::div(a, b); }

Tensor operator+(const Tensor& a, ops::Scalar b) { return nn::call("add.Scalar", {a}, ops::Attrs{{"other", b}}); }
Tensor operator-(const Tensor& a, ops::Scalar b) { return nn::call("sub.Scalar", {a}, ops::Attrs{{"other", b}}); }
Tensor operator*(const Tensor& a, ops::Scalar b) { return nn::call("mul.Scalar", {a}, ops::Attrs{{"other", b}}); }
Tensor operator/(const Tensor& a, ops::Scalar b) { return nn::call("div.Scalar", {a}, ops::Attrs{{"other", b}}); }
Tensor operator+(ops::Scalar a, const Tensor& b) { return b + a; }
Tensor operator-(ops::Scalar a, const Tensor& b) { return nn::call("rsub.Scalar", {b}, ops::Attrs{{"other", a}}); }
Tensor operator*(ops::Scalar a, const Tensor& b) { return b * a; }
Tensor operator-(const Tensor& x) { return tritium::neg(x); }

}  // namespace runtime
}  // namespace tritium
