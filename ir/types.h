// Element types and block types of the IR. A Type is an element type (a scalar dtype or a
// pointer to one) plus a shape; an empty shape is a scalar, a non-empty one a block.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tritium {

enum class DType : uint8_t {
  invalid,
  i1,  // bool
  i8, i16, i32, i64,
  u8, u16, u32, u64,
  f16, bf16, f32, f64,
  f8e4m3, f8e5m2,  // fp8 (OCP): e4m3 without infinities (PyTorch's float8_e4m3fn, Triton's fp8e4nv), e5m2
  ptr,  // pointer; the pointee is carried by ir::Type
};

const char* dtype_name(DType t);      // "i32", "f16", ...
DType dtype_from_name(const std::string& name);  // inverse; DType::invalid if unknown
int dtype_bits(DType t);              // 1 for i1, 64 for ptr
inline int dtype_bytes(DType t) { return t == DType::i1 ? 1 : dtype_bits(t) / 8; }
inline bool is_fp8(DType t) { return t == DType::f8e4m3 || t == DType::f8e5m2; }
inline bool is_float(DType t) {
  return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64 || is_fp8(t);
}
// Stored narrow, computed in f32 (each op rounds its f32 result back): f16, bf16 and fp8.
inline bool is_narrow_float(DType t) { return t == DType::f16 || t == DType::bf16 || is_fp8(t); }
inline bool is_bool(DType t) { return t == DType::i1; }
inline bool is_signed_int(DType t) { return t >= DType::i8 && t <= DType::i64; }
inline bool is_unsigned_int(DType t) { return t >= DType::u8 && t <= DType::u64; }
// Integers in Triton's sense include bool (i1).
inline bool is_int(DType t) { return t == DType::i1 || is_signed_int(t) || is_unsigned_int(t); }
inline bool is_ptr(DType t) { return t == DType::ptr; }

// f32 -> fp8 bits on the host (the code generators' constants): rounds to nearest even and
// saturates to the largest finite value (448 for e4m3, 57344 for e5m2; e5m2 infinities too),
// NaN -> 0x7f, as PTX's cvt.rn.satfinite and the generated code of both backends.
uint8_t fp8_from_float(float x, DType t);

// C++ type -> DType, used by the launch API and the typed handles.
struct bf16_t { uint16_t bits; };
struct f16_t { uint16_t bits; };
// fp8 bit containers (conversions: round to nearest even, saturating to the largest finite value).
struct f8e4m3_t { uint8_t bits; };
struct f8e5m2_t { uint8_t bits; };
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<bool>() { return DType::i1; }
template <> constexpr DType dtype_of<int8_t>() { return DType::i8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::i16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::u16; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::u32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::u64; }
template <> constexpr DType dtype_of<f16_t>() { return DType::f16; }
template <> constexpr DType dtype_of<bf16_t>() { return DType::bf16; }
template <> constexpr DType dtype_of<f8e4m3_t>() { return DType::f8e4m3; }
template <> constexpr DType dtype_of<f8e5m2_t>() { return DType::f8e5m2; }
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }

namespace ir {

using Shape = std::vector<int64_t>;

struct Type {
  DType dtype = DType::invalid;   // element type
  DType pointee = DType::invalid; // element type pointed to, when dtype == ptr
  Shape shape;                    // empty: scalar

  static Type scalar(DType d) { return {d, DType::invalid, {}}; }
  static Type pointer(DType pointee) { return {DType::ptr, pointee, {}}; }
  static Type block(DType d, Shape s) { return {d, DType::invalid, std::move(s)}; }

  bool is_block() const { return !shape.empty(); }
  bool is_scalar() const { return shape.empty(); }
  bool is_ptr() const { return dtype == DType::ptr; }
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;
  Type element() const { return {dtype, pointee, {}}; }          // drop the shape
  Type with_shape(Shape s) const { return {dtype, pointee, std::move(s)}; }
  Type with_dtype(DType d) const { return {d, DType::invalid, shape}; }

  bool operator==(const Type&) const = default;
  std::string str() const;  // "f32", "ptr<f32>", "[64,32]f32", "[128]ptr<f16>"
};

std::string shape_str(const Shape& s);  // "[64, 32]"

// numpy broadcasting of two shapes (missing leading dims are 1, size-1 dims stretch). When a dim
// differs and neither side is 1: std::nullopt, and that dim (of the result) in *bad_dim.
std::optional<Shape> broadcast_shape(const Shape& a, const Shape& b, int* bad_dim = nullptr);

}  // namespace ir
}  // namespace tritium
