// The differentiable API. The ops declared in ops/decl/ (elementwise so far) are one call of the
// generic dispatch (nn/dispatch.h); the others are still the op library's forward plus a recorded
// backward made of op-library calls (every one a Tritium kernel). Gradients of broadcast inputs are reduced by
// nn::record (ops::sum_to); saved tensors are detached handles, so a node never keeps its own
// output's autograd state alive (no reference cycles) and release() frees them.
#include "nn/functional.h"

#include <utility>

#include "nn/autograd.h"
#include "nn/dispatch.h"
#include "runtime/views.h"

namespace tritium {
namespace {

using ops::Attrs;
using Grads = std::vector<Tensor>;
using Shape = std::vector<int64_t>;
using nn::record;

// Whether the gradient of input t will be wanted (decided at forward time, so that a backward
// skips the work for inputs that do not require grad, such as a model's input batch).
bool needs(const Tensor& t) { return nn::grad_enabled() && t.defined() && t.requires_grad(); }
Tensor saved(const Tensor& t) { return t.detach(); }

// The shape `x` had before a reduction over `dims` without keepdim: size 1 at each reduced dim.
Shape keepdim_shape(const Shape& shape, const std::vector<int>& dims) {
  Shape out = shape;
  int rank = static_cast<int>(shape.size());
  if (dims.empty()) {
    for (auto& s : out) s = 1;
  } else {
    for (int d : dims) out[static_cast<size_t>(runtime::wrap_dim(d, rank, "reduction"))] = 1;
  }
  return out;
}

int64_t reduced_count(const Shape& shape, const std::vector<int>& dims) {
  int64_t n = 1;
  int rank = static_cast<int>(shape.size());
  if (dims.empty()) {
    for (int64_t s : shape) n *= s;
  } else {
    std::vector<bool> seen(shape.size(), false);
    for (int d : dims) {
      auto w = static_cast<size_t>(runtime::wrap_dim(d, rank, "reduction"));
      if (!seen[w]) n *= shape[w];
      seen[w] = true;
    }
  }
  return n;
}

// The gradient of a reduction's output, seen with the input's rank (size 1 at reduced dims): a view
// when the strides allow it, else a contiguous copy.
Tensor unreduce(const Tensor& g, const Shape& in_shape, const std::vector<int>& dims, bool keepdim) {
  if (keepdim) return g;
  Shape s = keepdim_shape(in_shape, dims);
  if (runtime::view_strides(g.shape(), g.strides(), s)) return runtime::view_of(g, s);
  return runtime::view_of(ops::contiguous(g), s);
}

// amax/amin backward: the gradient is shared evenly by the elements equal to the extremum
// (PyTorch's amax/amin rule; with distinct values it all goes to the single max).
Tensor extremum_backward(const Tensor& g, const Tensor& x, const Tensor& y, const std::vector<int>& dims,
                         bool keepdim) {
  Tensor yk = unreduce(y, x.shape(), dims, keepdim);
  Tensor gk = unreduce(g, x.shape(), dims, keepdim);
  Tensor mask = ops::to_dtype(ops::eq(x, yk), g.dtype());
  Tensor count = ops::sum(mask, dims, /*keepdim=*/true);
  return ops::mul(mask, ops::div(gk, count));
}

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

Tensor sum(const Tensor& x, std::vector<int> dims, bool keepdim) {
  Shape in = x.shape();
  Tensor y = ops::sum(x, dims, keepdim);
  return record(std::move(y), {x}, "SumBackward", [in, dims, keepdim](const Tensor& g) {
    return Grads{runtime::expand_of(unreduce(g, in, dims, keepdim), in)};
  });
}

Tensor mean(const Tensor& x, std::vector<int> dims, bool keepdim) {
  Shape in = x.shape();
  Tensor y = ops::mean(x, dims, keepdim);
  double count = static_cast<double>(reduced_count(in, dims));
  return record(std::move(y), {x}, "MeanBackward", [in, dims, keepdim, count](const Tensor& g) {
    return Grads{runtime::expand_of(unreduce(ops::div(g, count), in, dims, keepdim), in)};
  });
}

Tensor amax(const Tensor& x, std::vector<int> dims, bool keepdim) {
  Tensor y = ops::amax(x, dims, keepdim);
  Tensor sx = saved(x), sy = saved(y);
  return record(std::move(y), {x}, "AmaxBackward", [sx, sy, dims, keepdim](const Tensor& g) {
    return Grads{extremum_backward(g, sx, sy, dims, keepdim)};
  });
}

Tensor amin(const Tensor& x, std::vector<int> dims, bool keepdim) {
  Tensor y = ops::amin(x, dims, keepdim);
  Tensor sx = saved(x), sy = saved(y);
  return record(std::move(y), {x}, "AminBackward", [sx, sy, dims, keepdim](const Tensor& g) {
    return Grads{extremum_backward(g, sx, sy, dims, keepdim)};
  });
}

// ---- matmul ---------------------------------------------------------------------------------------

// With 1-D operands promoted to matrices (a [k] -> [1, k], b [k] -> [k, 1]) the gradients are
// grad_a = g @ b^T and grad_b = a^T @ g; broadcast batch dims are summed away (sum_to) and the
// promotion is undone by a reshape.
Tensor matmul(const Tensor& a, const Tensor& b) {
  bool na = needs(a), nb = needs(b);
  Tensor sa = nb ? saved(a) : Tensor(), sb = na ? saved(b) : Tensor();
  Shape a_shape = a.shape(), b_shape = b.shape();
  return record(ops::matmul(a, b), {a, b}, "MmBackward", [=](const Tensor& g) {
    bool a1 = a_shape.size() == 1, b1 = b_shape.size() == 1;
    Tensor g2 = g;
    if (a1 && b1) g2 = runtime::view_of(ops::contiguous(g), {1, 1});
    else if (a1) g2 = runtime::unsqueeze_of(g, -2);
    else if (b1) g2 = runtime::unsqueeze_of(g, -1);
    Tensor ga, gb;
    if (na) {
      Tensor b2 = b1 ? runtime::unsqueeze_of(sb, 1) : sb;
      Shape a2_shape = a1 ? Shape{1, a_shape[0]} : a_shape;
      ga = ops::matmul(g2, runtime::transpose_of(b2, -1, -2));
      if (ga.shape() != a2_shape) ga = ops::sum_to(ga, a2_shape);
      if (a1) ga = runtime::view_of(ops::contiguous(ga), a_shape);
    }
    if (nb) {
      Tensor a2 = a1 ? runtime::unsqueeze_of(sa, 0) : sa;
      Shape b2_shape = b1 ? Shape{b_shape[0], 1} : b_shape;
      gb = ops::matmul(runtime::transpose_of(a2, -1, -2), g2);
      if (gb.shape() != b2_shape) gb = ops::sum_to(gb, b2_shape);
      if (b1) gb = runtime::view_of(ops::contiguous(gb), b_shape);
    }
    return Grads{ga, gb};
  });
}

// ---- softmax, losses, dropout -------------------------------------------------------------------------

Tensor softmax(const Tensor& x, int dim) {
  Tensor y = ops::softmax(x, dim);
  Tensor sy = saved(y);
  return record(std::move(y), {x}, "SoftmaxBackward",
                [sy, dim](const Tensor& g) { return Grads{ops::softmax_backward(g, sy, dim)}; });
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal,
                                    std::optional<double> scale) {
  ops::AttentionResult r = ops::scaled_dot_product_attention_forward(q, k, v, is_causal, scale);
  Tensor sq = saved(q), sk = saved(k), sv = saved(v), so = saved(r.out), lse = r.lse;
  return record(std::move(r.out), {q, k, v}, "ScaledDotProductAttentionBackward",
                [sq, sk, sv, so, lse, is_causal, scale](const Tensor& g) {
                  ops::AttentionGrads d = ops::scaled_dot_product_attention_backward(g, sq, sk, sv, so, lse, is_causal, scale);
                  return Grads{d.dq, d.dk, d.dv};
                });
}

Tensor log_softmax(const Tensor& x, int dim) {
  Tensor y = ops::log_softmax(x, dim);
  Tensor sy = saved(y);
  return record(std::move(y), {x}, "LogSoftmaxBackward",
                [sy, dim](const Tensor& g) { return Grads{ops::log_softmax_backward(g, sy, dim)}; });
}

Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  ops::LayerNormResult r = ops::layer_norm(x, normalized_shape, weight, bias, eps);
  Tensor sx = saved(x), sw = weight.defined() ? saved(weight) : Tensor(), mean = r.mean, rstd = r.rstd;
  return record(std::move(r.y), {x, weight, bias}, "LayerNormBackward",
                [sx, sw, mean, rstd, normalized_shape](const Tensor& g) {
                  ops::LayerNormGrads d = ops::layer_norm_backward(g, sx, normalized_shape, sw, mean, rstd);
                  return Grads{d.dx, d.dweight, d.dbias};
                });
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  Tensor sl = saved(logits), st = saved(targets);
  return record(ops::cross_entropy(logits, targets), {logits, Tensor()}, "CrossEntropyBackward",
                [sl, st](const Tensor& g) { return Grads{ops::cross_entropy_backward(g, sl, st), Tensor()}; });
}

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  if (!training) return x;
  ops::DropoutState state;
  Tensor y = ops::dropout(x, p, gen, &state);
  return record(std::move(y), {x}, "DropoutBackward",
                [state](const Tensor& g) { return Grads{ops::dropout_backward(g, state)}; });
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
