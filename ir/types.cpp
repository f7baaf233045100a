#include "ir/types.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace tritium {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::invalid: return "invalid";
    case DType::i1: return "i1";
    case DType::i8: return "i8";
    case DType::i16: return "i16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
    case DType::u16: return "u16";
    case DType::u32: return "u32";
    case DType::u64: return "u64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f8e4m3: return "f8e4m3";
    case DType::f8e5m2: return "f8e5m2";
    case DType::ptr: return "ptr";
  }
  return "?";
}

DType dtype_from_name(const std::string& name) {
  for (int i = 1; i <= static_cast<int>(DType::ptr); ++i)
    if (name == dtype_name(static_cast<DType>(i))) return static_cast<DType>(i);
  return DType::invalid;
}

int dtype_bits(DType t) {
  switch (t) {
    case DType::i1: return 1;
    case DType::i8: case DType::u8: case DType::f8e4m3: case DType::f8e5m2: return 8;
    case DType::i16: case DType::u16: case DType::f16: case DType::bf16: return 16;
    case DType::i32: case DType::u32: case DType::f32: return 32;
    case DType::i64: case DType::u64: case DType::f64: case DType::ptr: return 64;
    case DType::invalid: return 0;
  }
  return 0;
}

uint8_t fp8_from_float(float x, DType t) {
  const bool e4 = t == DType::f8e4m3;
  const int mbits = e4 ? 3 : 2, bias = e4 ? 7 : 15;
  if (std::isnan(x)) return 0x7f;
  uint8_t sign = std::signbit(x) ? 0x80 : 0;
  float a = std::min(std::fabs(x), e4 ? 448.0f : 57344.0f);
  if (a < std::ldexp(1.0f, 1 - bias))  // subnormal (a rounding carry gives the smallest normal)
    return sign | static_cast<uint8_t>(std::nearbyint(std::ldexp(a, bias - 1 + mbits)));
  uint32_t u;
  std::memcpy(&u, &a, 4);
  const int drop = 23 - mbits;
  u += (1u << (drop - 1)) - 1 + ((u >> drop) & 1);
  return sign | static_cast<uint8_t>((u >> drop) - (static_cast<uint32_t>(127 - bias) << mbits));
}

namespace ir {

int64_t Type::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::optional<Shape> broadcast_shape(const Shape& a, const Shape& b, int* bad_dim) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) {
      if (bad_dim) *bad_dim = static_cast<int>(i);
      return std::nullopt;
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

std::string Type::str() const {
  std::string elem = is_ptr() ? fmt::format("ptr<{}>", dtype_name(pointee)) : dtype_name(dtype);
  if (shape.empty()) return elem;
  return fmt::format("[{}]{}", fmt::join(shape, ","), elem);
}

}  // namespace ir
}  // namespace tritium
