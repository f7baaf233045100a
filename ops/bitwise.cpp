// Bitwise and logical ops (ops/bitwise.h): dtype checks and one generic elementwise call each on
// the host; apply_bitwise() is the traced body of these ops in the elementwise kernels.
#include "ops/bitwise.h"

#include "ops/elementwise_kernels.h"

namespace tritium::ops {

namespace tl = tritium::tl;
using detail::Ew;

namespace {

enum class B : int {
  band = static_cast<int>(Ew::bitwise_first), bor, bxor, bnot, shl, shr,
  land, lor, lxor, lnot,
  count_,
};
constexpr Ew ew(B b) { return static_cast<Ew>(static_cast<int>(b)); }

tl::tensor truth(const tl::tensor& v) { return v.dtype() == DType::i1 ? v : v != 0; }

}  // namespace

namespace detail {

const int kBitwiseOps = static_cast<int>(B::count_) - static_cast<int>(Ew::bitwise_first);

tl::tensor apply_bitwise(Ew op, DType cdt, const EwOperands& v) {
  const tl::tensor& x = v.x;
  const tl::tensor& y = v.y;
  const int bits = cdt == DType::i1 ? 1 : dtype_bits(cdt);
  switch (static_cast<B>(static_cast<int>(op))) {
    case B::band: return x & y;
    case B::bor: return x | y;
    case B::bxor: return x ^ y;
    case B::bnot: return cdt == DType::i1 ? !x : ~x;
    case B::shl: {
      tl::tensor out_of_range = (y < 0) || (y >= bits);
      return tl::where(out_of_range, tl::zeros_like(x), x << tl::where(out_of_range, 0, y));
    }
    case B::shr: {
      tl::tensor out_of_range = (y < 0) || (y >= bits);
      tl::tensor fill = is_signed_int(cdt) ? x >> (bits - 1) : tl::zeros_like(x);
      return tl::where(out_of_range, fill, x >> tl::where(out_of_range, 0, y));
    }
    case B::land: return truth(x) && truth(y);
    case B::lor: return truth(x) || truth(y);
    case B::lxor: return truth(x) != truth(y);
    case B::lnot: return !truth(x);
    case B::count_: break;
  }
  fail("elementwise: unknown bitwise op {}", static_cast<int>(op));
}

}  // namespace detail

namespace {

void check_integral(const char* name, DType d, bool bool_ok) {
  if (is_float(d) || (!bool_ok && d == DType::i1))
    fail("{}: not implemented for {} tensors (expected integer{} tensors)", name, d == DType::i1 ? "bool" : dtype_name(d),
         bool_ok ? " or bool" : "");
}

Tensor bitwise(const char* name, B op, const Tensor& a, const Tensor& b, bool bool_ok = true) {
  detail::check_tensors(name, {&a, &b});
  check_integral(name, a.dtype(), bool_ok);
  check_integral(name, b.dtype(), bool_ok);
  DType r = detail::promote_operands(name, {&a, &b});
  return detail::elementwise(detail::ew_call(name, ew(op), r), r, {&a, &b});
}

Tensor bitwise(const char* name, B op, const Tensor& a, Scalar b, bool bool_ok = true) {
  detail::check_tensors(name, {&a});
  check_integral(name, a.dtype(), bool_ok);
  if (std::holds_alternative<double>(b.value)) check_integral(name, DType::f64, bool_ok);
  DType r = detail::promote_operands(name, {&a}, {b});
  check_integral(name, r, bool_ok);
  return detail::elementwise(detail::ew_call(name, ew(op), r, 0, b), r, {&a});
}

Tensor logical(const char* name, B op, const Tensor& a, const Tensor& b) {
  detail::check_tensors(name, {&a, &b});
  DType c = detail::promote_operands(name, {&a, &b});
  return detail::elementwise(detail::ew_call(name, ew(op), detail::math_type(c)), DType::i1, {&a, &b});
}

}  // namespace

Tensor bitwise_and(const Tensor& a, const Tensor& b) { return bitwise("bitwise_and", B::band, a, b); }
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return bitwise("bitwise_or", B::bor, a, b); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) { return bitwise("bitwise_xor", B::bxor, a, b); }
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b) { return bitwise("bitwise_left_shift", B::shl, a, b, false); }
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b) { return bitwise("bitwise_right_shift", B::shr, a, b, false); }
Tensor bitwise_and(const Tensor& a, Scalar b) { return bitwise("bitwise_and", B::band, a, b); }
Tensor bitwise_or(const Tensor& a, Scalar b) { return bitwise("bitwise_or", B::bor, a, b); }
Tensor bitwise_xor(const Tensor& a, Scalar b) { return bitwise("bitwise_xor", B::bxor, a, b); }
Tensor bitwise_left_shift(const Tensor& a, Scalar b) { return bitwise("bitwise_left_shift", B::shl, a, b, false); }
Tensor bitwise_right_shift(const Tensor& a, Scalar b) { return bitwise("bitwise_right_shift", B::shr, a, b, false); }
Tensor bitwise_not(const Tensor& x) {
  detail::check_tensors("bitwise_not", {&x});
  check_integral("bitwise_not", x.dtype(), true);
  return detail::elementwise(detail::ew_call("bitwise_not", ew(B::bnot), x.dtype()), x.dtype(), {&x});
}

Tensor logical_and(const Tensor& a, const Tensor& b) { return logical("logical_and", B::land, a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return logical("logical_or", B::lor, a, b); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return logical("logical_xor", B::lxor, a, b); }
Tensor logical_not(const Tensor& x) {
  detail::check_tensors("logical_not", {&x});
  return detail::elementwise(detail::ew_call("logical_not", ew(B::lnot), detail::math_type(x.dtype())), DType::i1, {&x});
}

}  // namespace tritium::ops
