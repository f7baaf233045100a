// The differentiable tensor API (what a PyTorch user writes): ops from ops/ops.h that record
// autograd nodes when an input requires grad. Namespace tritium, so `tritium::relu(x)`, plus the
// arithmetic operators on tensors.
#pragma once
#include "nn/sampling_inplace.h"  // sampling, seeds and in-place samplers (issue 29, item 6)
#include "nn/tensor_ops.h"  // shape ops and indexing (issue 29, item 2)
#include "nn/matmul_family.h"  // mm, bmm, ..., tensordot, einsum (issue 29, item 5)
#include "ops/ops.h"

namespace tritium {

using ops::Generator;
using ops::Scalar;
using runtime::Tensor;

// Creation (leaves; pass requires_grad with .requires_grad_()).
using ops::arange;
using ops::full;
using ops::ones;
using ops::ones_like;
using ops::rand;
using ops::randint;
using ops::randn;
using ops::zeros;
using ops::zeros_like;

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor pow(const Tensor& x, Scalar exponent);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);  // differentiable in a and b
Tensor sum(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
// Gradient of amax/amin: shared evenly by the elements equal to the extremum (PyTorch's amax rule;
// with distinct values it all goes to the one max).
// The reverse of broadcasting: x summed over the dims that broadcasting to x.shape() added or
// stretched, giving `shape` (ops::sum_to, recorded: a sum and a reshape).
Tensor sum_to(const Tensor& x, const std::vector<int64_t>& shape);
Tensor amax(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor softmax(const Tensor& x, int dim);
Tensor log_softmax(const Tensor& x, int dim);
// torch.nn.functional.scaled_dot_product_attention (no dropout, no attention mask): fused forward
// and backward kernels (ops::scaled_dot_product_attention_forward / _backward).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);
// torch.nn.functional.layer_norm: over the trailing dims normalized_shape; weight and bias both
// given or both undefined.
Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
Tensor dropout(const Tensor& x, double p, bool training = true, Generator& gen = ops::default_generator());
// Not differentiable (integer/bool results).
using ops::argmax;
using ops::argmin;
using ops::eq;
using ops::ge;
using ops::gt;
using ops::le;
using ops::lt;
using ops::ne;

namespace runtime {
// Operators on tensors, found by argument-dependent lookup.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, ops::Scalar b);
Tensor operator-(const Tensor& a, ops::Scalar b);
Tensor operator*(const Tensor& a, ops::Scalar b);
Tensor operator/(const Tensor& a, ops::Scalar b);
Tensor operator+(ops::Scalar a, const Tensor& b);
Tensor operator-(ops::Scalar a, const Tensor& b);
Tensor operator*(ops::Scalar a, const Tensor& b);
Tensor operator-(const Tensor& x);
}  // namespace runtime

}  // namespace tritium
