// The tl:: operations, with Triton's names and meanings. Every function takes the user's source
// location as a defaulted last argument so that trace errors point at the kernel's own line.
// Differences from Triton are listed in docs/language.md.
#pragma once
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dsl/tensor.h"

namespace tritium::tl {

using loc_t = std::source_location;
#define TL_LOC loc_t loc = loc_t::current()

// ---- program and index ----------------------------------------------------------------------
tensor program_id(int axis, TL_LOC);
tensor num_programs(int axis, TL_LOC);
tensor arange(int64_t start, int64_t end, TL_LOC);  // [end-start] i32; end-start a power of two
tensor full(const ir::Shape& shape, operand value, DType dtype, TL_LOC);
tensor zeros(const ir::Shape& shape, DType dtype, TL_LOC);
tensor zeros_like(const tensor& x, TL_LOC);
tensor cdiv(operand a, operand b, TL_LOC);  // (a + b - 1) / b on integers

// ---- casts ----------------------------------------------------------------------------------
tensor cast(operand x, DType dtype, bool bitcast = false, TL_LOC);
// To a pointer: from a 64-bit integer (an address; Triton's int_to_ptr) or from a pointer of
// another element type. Narrower integers, floats and bools are trace errors.
tensor cast(operand x, pointer_type type, TL_LOC);

// ---- arithmetic (operators are below) --------------------------------------------------------
tensor where(operand cond, operand a, operand b, TL_LOC);
tensor minimum(operand a, operand b, TL_LOC);
tensor maximum(operand a, operand b, TL_LOC);
tensor clamp(operand x, operand lo, operand hi, TL_LOC);
tensor fma(operand a, operand b, operand c, TL_LOC);
tensor umulhi(operand a, operand b, TL_LOC);
tensor fdiv(operand a, operand b, TL_LOC);     // floating-point division, like Triton's a / b
// a / b as a times an approximate reciprocal of b, like Triton's libdevice.fast_dividef (CUDA's
// __fdividef): on CUDA in f32 one MUFU.RCP and a multiply (error about 2 ulp) where a / b
// (div.full) also scales operands past 2^126 or below 2^-126 (8 instructions); b must stay in
// [2^-126, 2^126] in magnitude (beyond 2^126 the result is 0). f64 and the CPU divide exactly.
tensor fast_dividef(operand a, operand b, TL_LOC);
tensor exp(operand x, TL_LOC);
tensor exp2(operand x, TL_LOC);
tensor log(operand x, TL_LOC);
tensor log2(operand x, TL_LOC);
tensor sqrt(operand x, TL_LOC);
tensor rsqrt(operand x, TL_LOC);
tensor abs(operand x, TL_LOC);
tensor floor(operand x, TL_LOC);
tensor ceil(operand x, TL_LOC);
tensor sin(operand x, TL_LOC);
tensor cos(operand x, TL_LOC);
tensor tanh(operand x, TL_LOC);
tensor erf(operand x, TL_LOC);
tensor sigmoid(operand x, TL_LOC);

// ---- shapes ---------------------------------------------------------------------------------
tensor expand_dims(const tensor& x, int axis, TL_LOC);
tensor broadcast_to(operand x, const ir::Shape& shape, TL_LOC);
std::pair<tensor, tensor> broadcast(operand a, operand b, TL_LOC);
tensor reshape(const tensor& x, const ir::Shape& shape, TL_LOC);
tensor view(const tensor& x, const ir::Shape& shape, TL_LOC);  // same as reshape here
tensor permute(const tensor& x, const std::vector<int>& dims, TL_LOC);
tensor trans(const tensor& x, TL_LOC);  // reverse the dims (2-D transpose)
tensor trans(const tensor& x, const std::vector<int>& dims, TL_LOC);

// ---- memory ---------------------------------------------------------------------------------
// mask and other are optional (pass std::nullopt or omit). `other` fills masked-off lanes.
// cache_modifier and eviction_policy are Triton's hints, honoured by the CUDA backend (PTX cache
// operators and L1 eviction priorities) and ignored on the CPU: loads take "", ".ca", ".cg", ".cv",
// stores "", ".wb", ".cg", ".cs", ".wt", both "", "evict_first", "evict_last"; another string is
// a trace error. (docs/language.md: a cache modifier wins where both are given.)
tensor load(const tensor& pointer, std::optional<operand> mask = std::nullopt,
            std::optional<operand> other = std::nullopt, const std::string& cache_modifier = "",
            const std::string& eviction_policy = "", TL_LOC);
void store(const tensor& pointer, operand value, std::optional<operand> mask = std::nullopt,
           const std::string& cache_modifier = "", const std::string& eviction_policy = "", TL_LOC);

// Triton's `sem` argument: the memory order of the atomic.
//   "acq_rel"  (the default) the program's earlier accesses are released before the atomic
//              and what it observed is acquired after it (a fence on each side on the GPU): locks,
//              flags, counters read by other programs;
//   "acquire", "release"  one of the two fences;
//   "relaxed"  no ordering of the program's other accesses (PyTorch's atomicAdd): scatters,
//              histograms, reductions whose result is read after the kernel.
// Another string is a trace error. The CPU backend ignores it. The IR keeps it as the atomic's
// attrs.str ("" for acq_rel), printed as `sem=...` (so it is part of the kernel's cache key).
tensor atomic_add(const tensor& pointer, operand val, std::optional<operand> mask = std::nullopt,
                  const std::string& sem = "acq_rel", TL_LOC);
tensor atomic_max(const tensor& pointer, operand val, std::optional<operand> mask = std::nullopt,
                  const std::string& sem = "acq_rel", TL_LOC);
tensor atomic_min(const tensor& pointer, operand val, std::optional<operand> mask = std::nullopt,
                  const std::string& sem = "acq_rel", TL_LOC);
tensor atomic_and(const tensor& pointer, operand val, std::optional<operand> mask = std::nullopt,
                  const std::string& sem = "acq_rel", TL_LOC);
tensor atomic_or(const tensor& pointer, operand val, std::optional<operand> mask = std::nullopt,
                  const std::string& sem = "acq_rel", TL_LOC);
tensor atomic_xor(const tensor& pointer, operand val, std::optional<operand> mask = std::nullopt,
                  const std::string& sem = "acq_rel", TL_LOC);
tensor atomic_xchg(const tensor& pointer, operand val, std::optional<operand> mask = std::nullopt,
                  const std::string& sem = "acq_rel", TL_LOC);
tensor atomic_cas(const tensor& pointer, operand cmp, operand val, const std::string& sem = "acq_rel", TL_LOC);

// ---- reductions and scans ---------------------------------------------------------------------
// axis = std::nullopt reduces over all elements (the block is flattened first).
using axis_t = std::optional<int>;
tensor sum(const tensor& x, axis_t axis = std::nullopt, bool keep_dims = false, TL_LOC);
tensor max(const tensor& x, axis_t axis = std::nullopt, bool keep_dims = false, TL_LOC);
tensor min(const tensor& x, axis_t axis = std::nullopt, bool keep_dims = false, TL_LOC);
tensor argmax(const tensor& x, int axis, bool keep_dims = false, TL_LOC);
tensor argmin(const tensor& x, int axis, bool keep_dims = false, TL_LOC);
tensor xor_sum(const tensor& x, axis_t axis = std::nullopt, bool keep_dims = false, TL_LOC);
// A combine function receives scalars (lhs, rhs) and returns their combination.
using combine1_t = std::function<tensor(tensor, tensor)>;
using combineN_t = std::function<std::vector<tensor>(std::span<const tensor> lhs, std::span<const tensor> rhs)>;
tensor reduce(const tensor& x, axis_t axis, const combine1_t& combine, bool keep_dims = false, TL_LOC);
std::vector<tensor> reduce(const std::vector<tensor>& xs, axis_t axis, const combineN_t& combine,
                           bool keep_dims = false, TL_LOC);
tensor cumsum(const tensor& x, int axis = 0, bool reverse = false, TL_LOC);
tensor cumprod(const tensor& x, int axis = 0, bool reverse = false, TL_LOC);
tensor associative_scan(const tensor& x, int axis, const combine1_t& combine, bool reverse = false, TL_LOC);
std::vector<tensor> associative_scan(const std::vector<tensor>& xs, int axis, const combineN_t& combine,
                                     bool reverse = false, TL_LOC);

// ---- data movement within a block (dsl/data_movement.cpp, dsl/sort.cpp) -----------------------
// Counts of the values of a 1-D integer block in [0, num_bins) (num_bins a power of two): an
// [num_bins] i32 block. Values outside the range, and elements whose mask is false, are not counted.
tensor histogram(const tensor& x, int64_t num_bins, std::optional<operand> mask = std::nullopt, TL_LOC);
// out[i] = src[i with i[axis] replaced by index[i]]: index is an integer block of src's rank and of
// src's shape off the axis; the result has index's shape. Out-of-range indices wrap (see the docs).
tensor gather(const tensor& src, const tensor& index, int axis, TL_LOC);
// a and b (broadcast together, one dtype) stacked in a new minor dim of 2; split is its inverse
// (the last dim must be 2) and interleave(a, b) is join then merging the last two dims.
tensor join(operand a, operand b, TL_LOC);
std::pair<tensor, tensor> split(const tensor& x, TL_LOC);
tensor interleave(operand a, operand b, TL_LOC);
// Bitonic sort along the last dim (Triton's only supported dim): ascending unless descending.
tensor sort(const tensor& x, std::optional<int> dim = std::nullopt, bool descending = false, TL_LOC);
// The k largest elements along the last dim, largest first: x's shape with k as the last dim.
tensor topk(const tensor& x, int64_t k, std::optional<int> dim = std::nullopt, TL_LOC);

// ---- dot ------------------------------------------------------------------------------------
// a [M,K] @ b [K,N] (+ acc [M,N]); fp32 accumulation for float inputs, i32 for int8.
// input_precision (fp32 operands only, as in Triton): "tf32" rounds the operands to tf32 for the
// tensor cores (~3e-4 relative error), "tf32x3" splits each into two tf32 parts and runs three
// products (close to fp32), "ieee" computes in fp32. "" takes TRITIUM_F32_DEFAULT, else "tf32".
// The CPU backend always computes in fp32 (it has no tf32 arithmetic).
tensor dot(const tensor& a, const tensor& b, std::optional<tensor> acc = std::nullopt,
           std::optional<DType> out_dtype = std::nullopt, const std::string& input_precision = "", TL_LOC);

// ---- hints and debugging ----------------------------------------------------------------------
tensor multiple_of(const tensor& x, std::vector<int64_t> values, TL_LOC);
tensor max_contiguous(const tensor& x, std::vector<int64_t> values, TL_LOC);
inline tensor multiple_of(const tensor& x, int64_t v, TL_LOC) { return multiple_of(x, std::vector<int64_t>{v}, loc); }
inline tensor max_contiguous(const tensor& x, int64_t v, TL_LOC) { return max_contiguous(x, std::vector<int64_t>{v}, loc); }
// Trace-time check of a condition on meta-parameters (Triton's tl.static_assert).
void static_assert_(bool condition, const std::string& message = "", TL_LOC);
// Prints `prefix` and every element of the values, per program (Triton's tl.device_print).
void device_print(const std::string& prefix, std::vector<tensor> values, TL_LOC);
void device_print(const std::string& prefix, const tensor& value, TL_LOC);
// Run-time check, compiled in only in debug mode (TRITIUM_DEBUG=1, as Triton's TRITON_DEBUG); a
// failed assertion makes the launch raise an error naming the message, program and lane.
void device_assert(operand condition, const std::string& message = "", TL_LOC);
// Synchronises the threads of a program (Triton's tl.debug_barrier: __syncthreads on a GPU; a
// no-op on the CPU, where one thread runs a program).
void debug_barrier(TL_LOC);

// ---- operators -------------------------------------------------------------------------------
// `/` on two integers is C division (truncation), as Triton's `//`; `%` is C's remainder
// (sign of the dividend) on integers and fmod on floats. fp16/bf16 `/` and `%` compute in fp32.
// Integer division by zero gives an unspecified value (no trap, as on a GPU); INT_MIN / -1 wraps.
// Shifts by the bit width or more give 0 (`>>` of a negative signed value gives -1).
tensor operator+(const operand& a, const operand& b);
tensor operator-(const operand& a, const operand& b);
tensor operator*(const operand& a, const operand& b);
tensor operator/(const operand& a, const operand& b);
tensor operator%(const operand& a, const operand& b);
tensor operator&(const operand& a, const operand& b);
tensor operator|(const operand& a, const operand& b);
tensor operator^(const operand& a, const operand& b);
tensor operator<<(const operand& a, const operand& b);
tensor operator>>(const operand& a, const operand& b);
tensor operator==(const operand& a, const operand& b);
tensor operator!=(const operand& a, const operand& b);
tensor operator<(const operand& a, const operand& b);
tensor operator<=(const operand& a, const operand& b);
tensor operator>(const operand& a, const operand& b);
tensor operator>=(const operand& a, const operand& b);
tensor operator&&(const operand& a, const operand& b);  // on i1 (both sides evaluated)
tensor operator||(const operand& a, const operand& b);
tensor operator-(const operand& a);
tensor operator~(const operand& a);
tensor operator!(const operand& a);
tensor& operator+=(tensor& a, const operand& b);
tensor& operator-=(tensor& a, const operand& b);
tensor& operator*=(tensor& a, const operand& b);
tensor& operator/=(tensor& a, const operand& b);
tensor& operator%=(tensor& a, const operand& b);
tensor& operator&=(tensor& a, const operand& b);
tensor& operator|=(tensor& a, const operand& b);
tensor& operator^=(tensor& a, const operand& b);
tensor& operator<<=(tensor& a, const operand& b);
tensor& operator>>=(tensor& a, const operand& b);

#undef TL_LOC
}  // namespace tritium::tl
