// Calls a generic function with the C++ element type of a run-time DType: f(float{}) for f32,
// f(f16_t{}) for f16, ... Op-library kernels are templates over that type.
#pragma once
#include "common/error.h"
#include "ir/types.h"

namespace tritium::runtime {

// Floating-point dtypes only; another dtype is an error naming `op`.
template <class F> decltype(auto) dispatch_float(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::f16: return f(f16_t{});
    case DType::bf16: return f(bf16_t{});
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    default: fail("{}: expects a floating-point dtype (f16, bf16, f32 or f64), got {}", op, dtype_name(dtype));
  }
}

// Every element dtype (not pointers).
template <class F> decltype(auto) dispatch_dtype(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::i1: return f(bool{});
    case DType::i8: return f(int8_t{});
    case DType::i16: return f(int16_t{});
    case DType::i32: return f(int32_t{});
    case DType::i64: return f(int64_t{});
    case DType::u8: return f(uint8_t{});
    case DType::u16: return f(uint16_t{});
    case DType::u32: return f(uint32_t{});
    case DType::u64: return f(uint64_t{});
    case DType::f16: case DType::bf16: case DType::f32: case DType::f64: return dispatch_float(dtype, op, f);
    default: fail("{}: unsupported dtype {}", op, dtype_name(dtype));
  }
}

}  // namespace tritium::runtime
