// Private to ops/: the generic elementwise machinery (ops/elementwise.cpp) and helpers shared
// by the op library's files (argument checks, dims, type promotion). See docs/ops.md.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "dsl/ops.h"
#include "ops/ops.h"

namespace tritium::ops::detail {

namespace tl = tritium::tl;

// Elementwise operations of the generic kernels. Operands are x, y, z (y may be a Scalar).
enum class Ew : int {
  copy,      // x (with a dtype conversion)
  add, sub, mul, div, rsub,
  logical_or, logical_and,  // bool add / mul
  pow_int,   // x ** param (integer exponent, traced as multiplications)
  pow_float, // x ** y (y a Scalar), computed in f64
  neg, exp, log, sqrt, tanh, sigmoid, relu, gelu,
  eq, ne, lt, le, gt, ge,
  where,     // x ? y : z (x bool)
  relu_bw, gelu_bw, tanh_bw, sigmoid_bw,  // x = grad, y = input or output
  // The families of ops/unary_math.cpp, ops/activations.cpp and ops/bitwise.cpp start at these
  // values; apply() hands them to apply_family() (below).
  math_first = 1000,
  activation_first = 2000,
  bitwise_first = 3000,
};

// Up to three extra numbers of an op (clamp's bounds, nan_to_num's replacements, an activation's
// alpha / beta): kernel arguments, so a new value is a new launch, never a new kernel.
constexpr int kExtraScalars = 3;

// The traced values an op of a family computes from: operands x, y, z converted to the compute
// type, the extra numbers e[0..2] in the compute type (undefined when not given), and PARAM.
struct EwOperands {
  tl::tensor x, y, z;
  std::array<tl::tensor, kExtraScalars> e;
  int param = 0;
};

// One elementwise launch: out = f(inputs..., scalar) with out's shape; inputs broadcast to it.
struct EwCall {
  const char* name = "";            // the op, for errors
  Ew op = Ew::copy;
  DType compute = DType::f32;       // inputs are converted to this type before `op`
  int param = 0;                    // Ew::pow_int's exponent
  std::optional<Scalar> scalar;     // operand y when it is a C++ number
  std::array<std::optional<Scalar>, kExtraScalars> extra;  // the extra numbers (EwOperands::e)
};

inline EwCall ew_call(const char* name, Ew op, DType compute, int param = 0, std::optional<Scalar> scalar = {}) {
  EwCall c;
  c.name = name, c.op = op, c.compute = compute, c.param = param, c.scalar = std::move(scalar);
  return c;
}

inline EwCall ew_call(const char* name, Ew op, DType compute, int param,
                      std::array<std::optional<Scalar>, kExtraScalars> extra) {
  EwCall c = ew_call(name, op, compute, param);
  c.extra = std::move(extra);
  return c;
}

// The traced computation of the ops of each family (one switch per family's file); `cdt` is the
// compute dtype. apply_family() routes by the op's value.
tl::tensor apply_unary_math(Ew op, DType cdt, const EwOperands& v);
tl::tensor apply_activation(Ew op, DType cdt, const EwOperands& v);
tl::tensor apply_bitwise(Ew op, DType cdt, const EwOperands& v);
tl::tensor apply_family(Ew op, DType cdt, const EwOperands& v);
// How many ops each family has (from its first value on): tests trace every one.
extern const int kUnaryMathOps, kActivationOps, kBitwiseOps;

// Runs `call` over `inputs` (1 to 3 tensors; with a scalar, inputs are x and optionally z),
// writing into `out` (any strides; its shape is the broadcast shape). Collapses dims, picks the
// contiguous fast path or the strided kernel.
void run_elementwise(const EwCall& call, Tensor& out, const std::vector<const Tensor*>& inputs);

// Allocates a contiguous output of the broadcast shape and runs `call`.
Tensor elementwise(const EwCall& call, DType out_dtype, const std::vector<const Tensor*>& inputs);

// ---- helpers ---------------------------------------------------------------------------------
// Inside a kernel: the element offset of row-major linear indices `i` (an i64 block) in a
// rank-4 view with sizes (s0,) s1, s2, s3 and strides t0..t3 in elements (the strided kernels
// of fill_ and uniform_, after runtime::collapse_dims).
inline tl::tensor strided_offset(const tl::tensor& i, const tl::tensor& s1, const tl::tensor& s2,
                                 const tl::tensor& s3, const tl::tensor& t0, const tl::tensor& t1,
                                 const tl::tensor& t2, const tl::tensor& t3) {
  auto i3 = i % s3;
  auto r = i / s3;
  auto i2 = r % s2;
  r = r / s2;
  return (r / s1) * t0 + (r % s1) * t1 + i2 * t2 + i3 * t3;
}

std::string shape_str(const Shape& s);  // "[2, 3]"
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// Every tensor defined and on one device; returns it.
Device check_tensors(const char* op, const std::vector<const Tensor*>& ts);
int normalize_dim(const char* op, int dim, int rank);
// The compute type of a float result: f32 for f16/bf16 (math in fp32, rounded once on store).
inline DType math_type(DType d) { return d == DType::f16 || d == DType::bf16 ? DType::f32 : d; }
int kind_of(DType d);  // 0 bool, 1 integer, 2 float
DType promote_types(const char* op, DType a, DType b);
DType scalar_dtype(const Scalar& s);
// PyTorch's result_type over tensors (undefined ones skipped) and C++ numbers (wrapped numbers).
DType promote_operands(const char* op, const std::vector<const Tensor*>& ts, const std::vector<Scalar>& scalars = {});  // bool, i64 or (for promotion) f32 as PyTorch wraps numbers
// The default launch block for n elements: enough programs for every thread of the pool.
int64_t default_block(int64_t n);

}  // namespace tritium::ops::detail
