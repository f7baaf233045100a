// C++ text for scalar values and elementwise arithmetic in generated CUDA code, shared by the
// CUDA code generators: C++ types of IR dtypes, literals, Triton's float math (f16, bf16 and fp8
// computed in f32, rounded back after each op; f16 + - * and bf16 + - * whose NaN bits no one sees
// in one native instruction, the same bits), wrapping integer arithmetic, comparisons and
// casts. Each function returns an expression.
#pragma once
#include <cctype>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"
#include "ir/ir.h"

namespace tritium::jit::cuda {
using ir::OpKind;
using ir::Shape;

inline bool is_atomic(OpKind k) { return k >= OpKind::AtomicAdd && k <= OpKind::AtomicCas; }
// An atomic's fences by its sem (attrs.str, empty for Triton's default acq_rel): a fence before it
// releases the program's earlier accesses, one after it acquires what it observed; a relaxed
// atomic has neither (PyTorch's atomicAdd).
inline bool atomic_fence_before(const ir::Op* op) { return op->attrs.str.empty() || op->attrs.str == "release"; }
inline bool atomic_fence_after(const ir::Op* op) { return op->attrs.str.empty() || op->attrs.str == "acquire"; }
inline bool is_half(DType d) { return d == DType::f16 || d == DType::bf16; }
// 8-bit dot operands on tensor cores (Hopper's wgmma only): fp8 into f32, int8 into i32.
inline bool is_byte_mma(DType d) { return is_fp8(d) || d == DType::i8 || d == DType::u8; }

inline std::string ctype(DType d) {
  switch (d) {
    case DType::i1: return "bool";
    case DType::i8: return "int8_t";
    case DType::i16: return "int16_t";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::u8: return "uint8_t";
    case DType::u16: return "uint16_t";
    case DType::u32: return "uint32_t";
    case DType::u64: return "uint64_t";
    case DType::f16: return "tt_f16";
    case DType::bf16: return "tt_bf16";
    case DType::f8e4m3: return "tt_f8e4m3";
    case DType::f8e5m2: return "tt_f8e5m2";
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::ptr: return "uint8_t*";
    case DType::invalid: break;
  }
  fail("internal error: no CUDA type for {}", dtype_name(d));
}
inline std::string ctype(const ir::Type& t) {
  if (t.is_ptr()) return (t.pointee == DType::invalid ? std::string("uint8_t") : ctype(t.pointee)) + "*";
  return ctype(t.dtype);
}
inline int64_t mem_bytes(const ir::Type& t) { return t.is_ptr() ? 8 : dtype_bytes(t.dtype); }

inline int64_t pow2_divisor(int64_t v) {
  if (v <= 0) return int64_t(1) << 30;
  int64_t p = 1;
  while (p < (int64_t(1) << 30) && v % (p * 2) == 0) p *= 2;
  return p;
}

inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}
inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

// A C string literal.
inline std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c < 32 || c >= 127) out += fmt::format("\\{:03o}", c);
    else out += static_cast<char>(c);
  }
  return out + "\"";
}

inline std::string identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "k_" + out;
  return out;
}

std::string float_literal(double x, bool f32);
std::string constant(DType d, int64_t ival, double fval, bool is_fp);
inline std::string to_f32(const std::string& x, DType d) { return is_narrow_float(d) ? "tt_to_f32(" + x + ")" : x; }
// Rounds f32 `x` to `d`. A bf16 NaN becomes 0x7fc0 (the CPU backend's bits) unless `nan_unseen`:
// for values whose NaN bits nothing can observe (nan_bits_unseen), cvt's own NaN is as good and
// the fix-up (FSETP + SEL) is saved.
std::string from_f32(const std::string& x, DType d, bool nan_unseen = false);
std::string float_op(OpKind k, std::vector<std::string> x, DType d, bool nan_unseen = false);
std::string int_op(OpKind k, const std::vector<std::string>& x, DType d);
std::string compare(OpKind k, std::string a, std::string b, DType d);
std::string cast(const std::string& v, const ir::Type& from_t, const ir::Type& to_t, bool nan_unseen = false);
inline std::string cast(const std::string& v, DType from, DType to) { return cast(v, ir::Type::scalar(from), ir::Type::scalar(to)); }
// The expression of elementwise op `op` over its operands' expressions `x` (`nan_unseen`: as
// from_f32's, for a narrow float result).
std::string elementwise(const ir::Op* op, const std::vector<std::string>& x, bool nan_unseen = false);
// Whether no one can observe the bits of a NaN in `v`: every use computes a new value with a
// float instruction (which yields the canonical NaN whatever NaN went in), compares it, or passes
// it on (casts, neg, abs, select, reductions) to a value of which the same holds. Stores, bitcasts,
// atomics, scans, loop-carried values and anything else may show them. `users` gives the
// ops that use a value. Memoised in `memo`.
bool nan_bits_unseen(const ir::Value* v, const std::function<const std::vector<ir::Op*>&(const ir::Value*)>& users,
                     std::unordered_map<const ir::Value*, bool>& memo);
// p + off for a 32-bit offset as one mul.wide and a 64-bit add (tt_addptr: one IMAD.WIDE); other
// offset types as elementwise's addptr.
std::string wide_addptr(const std::string& p, const std::string& off, DType off_dtype);
// An atomic read-modify-write of `v` at pointer `p` (compare value `cmp` for AtomicCas) returning the
// old value: native atomics where CUDA has them, a compare-and-swap loop (tt_atomic_rmw) otherwise.
std::string atomic_call(OpKind k, DType d, const std::string& p, const std::string& v, const std::string& cmp);

}  // namespace tritium::jit::cuda
