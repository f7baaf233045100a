// tl::tensor: a traced value (scalar or block) inside a kernel being traced, and tl::operand,
// which is what every tl:: operation takes: a tensor or a C++ number, together with the
// source location of the user's expression (so trace errors name the user's file:line).
#pragma once
#include <cstdint>
#include <source_location>
#include <type_traits>

#include "common/error.h"
#include "ir/ir.h"

namespace tritium::tl {

// Element type names for casts and factories, spelt as in Triton (tl.float32, tl.int32, ...).
inline constexpr DType int1 = DType::i1, int8 = DType::i8, int16 = DType::i16, int32 = DType::i32,
                       int64 = DType::i64, uint8 = DType::u8, uint16 = DType::u16, uint32 = DType::u32,
                       uint64 = DType::u64, float16 = DType::f16, bfloat16 = DType::bf16,
                       float32 = DType::f32, float64 = DType::f64,
                       float8e4nv = DType::f8e4m3, float8e5 = DType::f8e5m2;  // Triton's fp8 names

// Triton's tl.pointer_type(tl.float16): the target of a cast that makes a pointer, from a 64-bit
// integer address or from another pointer, e.g. tl.load(a_ptrs + g).to(tl.pointer_type(tl.float16))
// (tutorial 08's device arrays of addresses): x.to(tl::pointer_type(tl::float16)).
struct pointer_type {
  DType element_ty;
  explicit pointer_type(DType element) : element_ty(element) {}
};

// Marks the `None` and `:` of Triton's indexing: x(_, None) is x[:, None].
struct None_t {};
struct Colon_t {};
inline constexpr None_t None{};
inline constexpr Colon_t _{};
struct index_item {
  bool new_axis;
  index_item(None_t) : new_axis(true) {}
  index_item(Colon_t) : new_axis(false) {}
};

class tensor {
 public:
  tensor() { link(); }
  explicit tensor(ir::Value* v);  // a value of the trace running on this thread
  tensor(const tensor& o) : v_(o.v_), trace_(o.trace_), none_(o.none_) { link(); }
  tensor& operator=(const tensor& o) {
    v_ = o.v_;
    trace_ = o.trace_;
    none_ = o.none_;
    return *this;
  }
  ~tensor() { unlink(); }

  bool defined() const { return v_ != nullptr; }
  // Triton's None: a pointer argument given as nullptr (or a null void*) or an undefined Tensor.
  // Test it while tracing (Triton's `if bias_ptr is not None:` is a compile-time branch):
  //   if (!bias.is_none()) acc += tl::load(bias + offs, mask);
  // Any other use of it is a trace error naming the argument and the line.
  bool is_none() const { return none_ != nullptr; }
  void set_none(const char* param_name) { none_ = param_name; }  // (the tracer, for None arguments)
  // Triton's `ptr.dtype.element_ty`: the element type a pointer, or a block of pointers, points to
  // (a trace error for anything else, and for None).
  DType element_ty(std::source_location loc = std::source_location::current()) const;
  ir::Value* value(std::source_location loc = std::source_location::current()) const;
  const ir::Type& type() const { return value()->type; }
  DType dtype() const { return type().dtype; }
  const ir::Shape& shape() const { return type().shape; }
  int rank() const { return type().rank(); }
  int64_t numel() const { return type().numel(); }

  // x.to(tl::float16), x.to(tl::int32, /*bitcast=*/true)
  tensor to(DType dtype, bool bitcast = false, std::source_location loc = std::source_location::current()) const;
  // x.to(tl::pointer_type(tl::float16)): an i64/u64 address or a pointer, as a pointer to f16
  tensor to(pointer_type type, std::source_location loc = std::source_location::current()) const;
  // x(_, None) == x[:, None]; x(None, _) == x[None, :]
  tensor operator()(index_item a, std::source_location loc = std::source_location::current()) const;
  tensor operator()(index_item a, index_item b, std::source_location loc = std::source_location::current()) const;
  tensor operator()(index_item a, index_item b, index_item c,
                    std::source_location loc = std::source_location::current()) const;
  tensor T(std::source_location loc = std::source_location::current()) const;  // 2-D transpose

  // Run-time control flow rebinds live tensors to loop-carried / branch values; it walks every
  // tensor object alive on this thread, so each tensor links itself into this list.
  static tensor* live_head();
  void rebind(ir::Value* v) { v_ = v; }
  ir::Value* raw() const { return v_; }
  tensor* next_live() const { return next_; }
  // Whether the value belongs to the trace running on this thread (not to an outer trace whose
  // body launched this one, nor to a trace that has ended: its IR is gone).
  bool in_current_trace() const;

 private:
  void link();
  void unlink();
  ir::Value* v_ = nullptr;
  uint64_t trace_ = 0;  // the serial number of the trace that made v_ (dsl::TraceContext)
  const char* none_ = nullptr;  // a None pointer argument: the parameter's name
  tensor* prev_ = nullptr;
  tensor* next_ = nullptr;
};

// Kernel parameter types. tl::ptr<float> is a pointer argument, tl::i32 a run-time scalar.
// tl::ptr<tl::any> takes a pointer of any element type: the pointee is the argument's dtype (a
// Tensor or a typed pointer; void* is refused), part of the specialisation key, as in Triton.
struct any {};
template <class Elem> struct ptr : tensor {
  using element_type = Elem;
  using tensor::tensor;
  ptr(const tensor& t) : tensor(t) {}
};
template <DType D> struct scalar : tensor {
  static constexpr DType dtype_v = D;
  using tensor::tensor;
  scalar(const tensor& t) : tensor(t) {}
};
using i1 = scalar<DType::i1>;
using i8 = scalar<DType::i8>;
using i16 = scalar<DType::i16>;
using i32 = scalar<DType::i32>;
using i64 = scalar<DType::i64>;
using u8 = scalar<DType::u8>;
using u16 = scalar<DType::u16>;
using u32 = scalar<DType::u32>;
using u64 = scalar<DType::u64>;
using f16 = scalar<DType::f16>;
using bf16 = scalar<DType::bf16>;
using f32 = scalar<DType::f32>;
using f64 = scalar<DType::f64>;
using f8e4m3 = scalar<DType::f8e4m3>;
using f8e5m2 = scalar<DType::f8e5m2>;

// A compile-time meta-parameter (Triton's tl.constexpr). A plain `int`/`bool`/`float`
// parameter is a meta-parameter too; constexpr_<T> only makes it explicit.
template <class T> struct constexpr_ {
  using value_type = T;
  T value;
  constexpr operator T() const { return value; }
  // `reduction == "mean"` for a constexpr_<std::string> (std::string's own == is a template,
  // which an implicit conversion cannot reach); also X_dtype == tl::float16.
  friend bool operator==(const constexpr_& a, const T& b)
    requires(!std::is_arithmetic_v<T>)
  {
    return a.value == b;
  }
};

class operand {
 public:
  enum class Kind : uint8_t { tensor, int_literal, float_literal };

  operand(const tensor& t, std::source_location l = std::source_location::current())
      : kind(Kind::tensor), value(t.value(l)), loc(SourceLoc::from(l)) {}
  template <class T>
    requires std::is_arithmetic_v<T>
  operand(T v, std::source_location l = std::source_location::current()) : loc(SourceLoc::from(l)) {
    set_number(v);
  }
  template <class T>
  operand(const constexpr_<T>& c, std::source_location l = std::source_location::current())
      : loc(SourceLoc::from(l)) {
    set_number(c.value);
  }

  Kind kind = Kind::tensor;
  ir::Value* value = nullptr;  // Kind::tensor
  int64_t ival = 0;            // Kind::int_literal (bit pattern for u64 literals)
  double fval = 0;             // Kind::float_literal
  DType literal_dtype = DType::invalid;  // i1, i32, i64, u64 or f32, as Triton types Python numbers
  SourceLoc loc;

  bool is_literal() const { return kind != Kind::tensor; }

 private:
  template <class T> void set_number(T v) {
    if constexpr (std::is_same_v<T, bool>) {
      kind = Kind::int_literal, ival = v, literal_dtype = DType::i1;
    } else if constexpr (std::is_floating_point_v<T>) {
      kind = Kind::float_literal, fval = static_cast<double>(v), literal_dtype = DType::f32;
    } else if constexpr (std::is_unsigned_v<T>) {
      kind = Kind::int_literal, ival = static_cast<int64_t>(v);
      literal_dtype = v <= 0x7fffffffull ? DType::i32 : v <= 0x7fffffffffffffffull ? DType::i64 : DType::u64;
    } else {
      kind = Kind::int_literal, ival = static_cast<int64_t>(v);
      literal_dtype = (v >= INT32_MIN && v <= INT32_MAX) ? DType::i32 : DType::i64;
    }
  }
};

}  // namespace tritium::tl
