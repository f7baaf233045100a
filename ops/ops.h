// The op library: tensor operations, each one a Tritium kernel (no BLAS anywhere). These are
// the raw, non-differentiable ops; nn/functional.h wraps them with autograd.
//
// Conventions (as PyTorch):
// - Elementwise binary ops broadcast (numpy rules) and promote dtypes with PyTorch's rules
//   (docs/ops.md): bool < integers < floats; a Scalar (C++ number) only raises the category.
// - Inputs may be strided (views); ops that need contiguous data copy them first with
//   ops::contiguous (a Tritium kernel), which is documented per op in docs/ops.md.
// - Reductions take a list of dims (negative counts from the end; empty = all) and keepdim.
// - Errors (shape, dtype, device, argument) are tritium::Error naming the op and the values.
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <variant>
#include <vector>

#include "runtime/tensor.h"

namespace tritium {
class Kernel;
}

namespace tritium::ops {

using runtime::Tensor;
using Shape = std::vector<int64_t>;

// A C++ number standing for a tensor operand (a 0-dim "wrapped number" in PyTorch terms).
struct Scalar {
  std::variant<int64_t, double, bool> value;
  Scalar(bool v) : value(v) {}
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  Scalar(T v) : value(static_cast<int64_t>(v)) {}
  template <class T>
    requires std::is_floating_point_v<T>
  Scalar(T v) : value(static_cast<double>(v)) {}
  double to_double() const;
};

// ---- copies and creation ---------------------------------------------------------------------
Tensor contiguous(const Tensor& x);                 // x itself if already contiguous
Tensor clone(const Tensor& x);                      // always a new contiguous tensor
void copy_(Tensor& dst, const Tensor& src);         // broadcasting src into dst (any strides)
Tensor to_dtype(const Tensor& x, DType dtype);      // value conversion
Tensor full(const Shape& shape, Scalar value, DType dtype, Device device = default_device());
Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = default_device());
Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = default_device());
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
Tensor arange(int64_t start, int64_t end, int64_t step = 1, DType dtype = DType::i64, Device device = default_device());
void fill_(Tensor& x, Scalar value);

// ---- random (Philox-4x32-10; the same seed gives the same numbers on every backend) ---------
// A generator is a seed and a counter offset: a draw of n values reserves counters
// [offset, offset + n) and uses them with the seed. It is safe to share between threads (a
// mutex guards the pair, as PyTorch's generators): concurrent draws get disjoint counters, so no
// (seed, counter) is used twice. A generator used from one thread gives the same sequence as
// before; for streams that are reproducible whatever the threads' timing, give each thread its
// own Generator.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  Generator(const Generator& other);             // the same seed and offset (torch's clone)
  Generator& operator=(const Generator& other);
  void manual_seed(uint64_t seed);               // restarts at offset 0
  uint64_t seed() const;
  uint64_t offset() const;                       // the next counter a draw would get
  // What one draw uses: the seed and the first of its counters, read together.
  struct Stream {
    uint64_t seed = 0, offset = 0;
  };
  // Reserves n counters and returns them with the seed, atomically: a manual_seed on another
  // thread cannot pair one seed with the other seed's offset.
  Stream reserve(uint64_t n);
  // Reserves n counter values and returns the first; successive calls never overlap.
  uint64_t advance(uint64_t n) { return reserve(n).offset; }

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};
Generator& default_generator();
Tensor rand(const Shape& shape, Generator& gen = default_generator(), DType dtype = DType::f32, Device device = default_device());   // U[0, 1)
Tensor randn(const Shape& shape, Generator& gen = default_generator(), DType dtype = DType::f32, Device device = default_device());  // N(0, 1)
Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen = default_generator(), DType dtype = DType::i64, Device device = default_device());
void uniform_(Tensor& x, double low, double high, Generator& gen = default_generator());

// ---- elementwise ---------------------------------------------------------------------------
DType result_type(const Tensor& a, const Tensor& b);  // PyTorch's promotion of two tensors
DType result_type(const Tensor& a, Scalar b);
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: integers give f32
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, Scalar b);
Tensor rsub(const Tensor& a, Scalar b);        // b - a
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, Scalar b);
Tensor pow(const Tensor& a, Scalar exponent);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);  // exact (erf) form, PyTorch's default
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, Scalar b);
Tensor gt(const Tensor& a, Scalar b);
Tensor lt(const Tensor& a, Scalar b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// Backward helpers (elementwise, same shapes): grad * f'(x) or grad * f'(y) from the output.
Tensor relu_backward(const Tensor& grad, const Tensor& x);
Tensor gelu_backward(const Tensor& grad, const Tensor& x);
Tensor tanh_backward(const Tensor& grad, const Tensor& y);     // grad * (1 - y^2)
Tensor sigmoid_backward(const Tensor& grad, const Tensor& y);  // grad * y * (1 - y)

// ---- reductions -----------------------------------------------------------------------------
Tensor sum(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
Tensor amax(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, int dim, bool keepdim = false);  // i64, first index on ties
Tensor argmin(const Tensor& x, int dim, bool keepdim = false);
// Sums `grad` down to `shape` (the reverse of broadcasting), for the backward of broadcasting ops.
Tensor sum_to(const Tensor& grad, const Shape& shape);

// ---- linear algebra -------------------------------------------------------------------------
// 1-D/2-D/batched with broadcasting batch dims, as torch.matmul; through tl::dot.
Tensor matmul(const Tensor& a, const Tensor& b);
// The kernel behind matmul for a float dtype, for tools that tune it (tritium-tune). Arguments:
// a, b, c, M, N, K, the six strides of A/B/C, NB2, sa1, sa2, sb1, sb2, sc1, sc2 (batch split and
// strides; 1, 0... for one matrix) and the meta-parameters BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
// TF32 (1: fp32 operands as tf32 on tensor cores), CARRY_POINTERS (the GPU's loop form: pointer
// blocks advanced per K step; the CPU's computes the addresses from the trip).
Kernel& matmul_kernel(DType dtype);
// torch.set_float32_matmul_precision: "highest" (the default) computes fp32 matmuls in fp32,
// "high" and "medium" let GPUs use tf32 tensor cores (relative error ~3e-4; there is no bf16
// path, so "medium" is "high"). The CPU always computes in fp32. Process-wide.
void set_float32_matmul_precision(const std::string& precision);
std::string get_float32_matmul_precision();  // "highest" or "high"

// ---- softmax and losses ---------------------------------------------------------------------
Tensor softmax(const Tensor& x, int dim);
Tensor log_softmax(const Tensor& x, int dim);
Tensor softmax_backward(const Tensor& grad, const Tensor& y, int dim);       // y = softmax(x)
Tensor log_softmax_backward(const Tensor& grad, const Tensor& y, int dim);   // y = log_softmax(x)
// Mean over the batch of -log_softmax(logits)[i, target[i]]; logits [N, C], targets [N] integers
// in [0, C) (checked: a clear error names the first bad label).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);
Tensor cross_entropy_backward(const Tensor& grad, const Tensor& logits, const Tensor& targets);

// ---- attention ----------------------------------------------------------------------------------
// torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=..., scale=...) on [batch,
// heads, length, head dim] tensors (f16, bf16, f32; any strides; query and key lengths apart; head
// dims up to 256): softmax(q k^T * scale [+ a top-left causal mask]) v, scale 1/sqrt(head dim) by
// default, through fused kernels (tutorial 06's algorithm; ops/attention.cpp). The forward also
// returns the rows' log-sum-exp in base 2 ([batch, heads, length], f32) for the backward.
struct AttentionResult {
  Tensor out, lse;
};
AttentionResult scaled_dot_product_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal,
                                                     std::optional<double> scale = std::nullopt);
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);
struct AttentionGrads {
  Tensor dq, dk, dv;
};
AttentionGrads scaled_dot_product_attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k,
                                                     const Tensor& v, const Tensor& out, const Tensor& lse,
                                                     bool is_causal, std::optional<double> scale = std::nullopt);
double default_attention_scale(int64_t head_dim);  // 1 / sqrt(head_dim)

// ---- layer norm ---------------------------------------------------------------------------------
// Over the trailing dims `normalized_shape` (torch.nn.functional.layer_norm); weight and bias
// both given (of that shape) or both undefined. mean and rstd ([rows], f32; f64 for f64 inputs)
// are what the backward needs.
struct LayerNormResult {
  Tensor y, mean, rstd;
};
LayerNormResult layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                           double eps);
struct LayerNormGrads {
  Tensor dx, dweight, dbias;  // dweight/dbias undefined without a weight
};
LayerNormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Shape& normalized_shape,
                                   const Tensor& weight, const Tensor& mean, const Tensor& rstd);

// ---- dropout ----------------------------------------------------------------------------------
// Zeroes each element with probability p and scales the rest by 1/(1-p). The keep mask is a
// function of (seed, offset, element index) and is regenerated in the backward, never stored.
struct DropoutState {
  uint64_t seed = 0, offset = 0;
  double p = 0;
};
Tensor dropout(const Tensor& x, double p, Generator& gen, DropoutState* state = nullptr);
Tensor dropout_backward(const Tensor& grad, const DropoutState& state);

}  // namespace tritium::ops
