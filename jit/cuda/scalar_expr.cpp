#include "jit/cuda/scalar_expr.h"

#include <cmath>
#include <cstring>

namespace tritium::jit::cuda {

std::string float_literal(double x, bool f32) {
  if (f32) {
    float v = static_cast<float>(x);
    uint32_t u;
    std::memcpy(&u, &v, 4);
    if (!std::isfinite(v)) return fmt::format("__int_as_float(0x{:08x})", u);
    std::string s = fmt::format("{}", v);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s + "f";
  }
  uint64_t u;
  std::memcpy(&u, &x, 8);
  if (!std::isfinite(x)) return fmt::format("__longlong_as_double(0x{:016x}ll)", u);
  std::string s = fmt::format("{}", x);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string constant(DType d, int64_t ival, double fval, bool is_fp) {
  if (is_float(d)) {
    double x = is_fp ? fval : static_cast<double>(ival);
    if (d == DType::f16) return fmt::format("tt_f16_from({})", float_literal(x, true));
    if (d == DType::bf16) return fmt::format("tt_bf16_from({})", float_literal(x, true));
    if (is_fp8(d)) return fmt::format("{}{{(uint8_t)0x{:02x}}}", ctype(d), fp8_from_float(static_cast<float>(x), d));
    return float_literal(x, d == DType::f32);
  }
  switch (d) {
    case DType::i1: return ival ? "true" : "false";
    case DType::i64: return ival == INT64_MIN ? "(int64_t)(-9223372036854775807ll - 1)" : fmt::format("(int64_t){}ll", ival);
    case DType::u64: return fmt::format("(uint64_t){}ull", static_cast<uint64_t>(ival));
    case DType::u32: return fmt::format("(uint32_t){}u", static_cast<uint32_t>(ival));
    case DType::i32: return static_cast<int32_t>(ival) == INT32_MIN ? "(int32_t)(-2147483647 - 1)" : fmt::format("(int32_t){}", static_cast<int32_t>(ival));
    case DType::ptr: return fmt::format("(uint8_t*){}ull", static_cast<uint64_t>(ival));
    default: return fmt::format("({}){}", ctype(d), ival);
  }
}

std::string from_f32(const std::string& x, DType d, bool nan_unseen) {
  if (d == DType::f16) return "tt_f16_from(" + x + ")";
  if (d == DType::bf16) return (nan_unseen ? "tt_bf16_from_rn(" : "tt_bf16_from(") + x + ")";
  if (is_fp8(d)) return ctype(d) + "_from(" + x + ")";
  return x;
}

std::string float_op(OpKind k, std::vector<std::string> x, DType d, bool nan_unseen) {
  // f16 + - * natively (the device header's tt_hadd: the same bits as through f32).
  if (d == DType::f16 && (k == OpKind::Add || k == OpKind::Sub || k == OpKind::Mul))
    return fmt::format("{}({}, {})", k == OpKind::Add ? "tt_hadd" : k == OpKind::Sub ? "tt_hsub" : "tt_hmul", x[0], x[1]);
  // bf16 + - * natively where a NaN's bits cannot show (tt_badd_rn: the same bits otherwise; the
  // f32 road's cvt is an F2F at the conversion unit's eighth rate). Seen NaNs keep the fix-up.
  if (d == DType::bf16 && nan_unseen && (k == OpKind::Add || k == OpKind::Sub || k == OpKind::Mul))
    return fmt::format("{}({}, {})", k == OpKind::Add ? "tt_badd_rn" : k == OpKind::Sub ? "tt_bsub_rn" : "tt_bmul_rn", x[0], x[1]);
  bool half = is_narrow_float(d);
  bool dbl = d == DType::f64;
  if (half)
    for (auto& v : x) v = to_f32(v, d);
  auto fn = [&](const char* name) { return fmt::format("{}{}({})", name, dbl ? "" : "f", x[0]); };
  std::string one = dbl ? "1.0" : "1.0f";
  std::string r;
  switch (k) {
    case OpKind::Add: r = fmt::format("{} + {}", x[0], x[1]); break;
    case OpKind::Sub: r = fmt::format("{} - {}", x[0], x[1]); break;
    case OpKind::Mul: r = fmt::format("{} * {}", x[0], x[1]); break;
    // f32 (and f16/bf16, computed in f32) division, exp, sqrt and rsqrt are Triton's defaults:
    // div.full (2 ulp), ex2.approx of x * log2(e), exp2 as ex2.approx.ftz, sqrt.approx,
    // rsqrt.approx; f64 is exact.
    case OpKind::Div: r = dbl ? fmt::format("{} / {}", x[0], x[1]) : fmt::format("tt_fdiv({}, {})", x[0], x[1]); break;
    case OpKind::Rem: r = fmt::format("fmod{}({}, {})", dbl ? "" : "f", x[0], x[1]); break;
    case OpKind::Neg: r = fmt::format("-{}", x[0]); break;
    case OpKind::Min: r = fmt::format("fmin{}({}, {})", dbl ? "" : "f", x[0], x[1]); break;
    case OpKind::Max: r = fmt::format("fmax{}({}, {})", dbl ? "" : "f", x[0], x[1]); break;
    case OpKind::Fma: r = fmt::format("fma{}({}, {}, {})", dbl ? "" : "f", x[0], x[1], x[2]); break;
    case OpKind::Exp: r = dbl ? fn("exp") : fmt::format("tt_exp({})", x[0]); break;
    case OpKind::Exp2: r = dbl ? fn("exp2") : fmt::format("tt_exp2({})", x[0]); break;
    case OpKind::Log: r = fn("log"); break;
    case OpKind::Log2: r = fn("log2"); break;
    case OpKind::Sqrt: r = dbl ? fn("sqrt") : fmt::format("tt_sqrt({})", x[0]); break;
    case OpKind::Rsqrt: r = dbl ? fmt::format("{} / {}", one, fn("sqrt")) : fmt::format("tt_rsqrt({})", x[0]); break;
    case OpKind::Rcp: r = dbl ? fmt::format("{} / {}", one, x[0]) : fmt::format("tt_rcp({})", x[0]); break;
    case OpKind::Abs: r = fn("fabs"); break;
    case OpKind::Floor: r = fn("floor"); break;
    case OpKind::Ceil: r = fn("ceil"); break;
    case OpKind::Sin: r = fn("sin"); break;
    case OpKind::Cos: r = fn("cos"); break;
    case OpKind::Tanh: r = fn("tanh"); break;
    case OpKind::Erf: r = fn("erf"); break;
    case OpKind::Sigmoid: r = fmt::format("tt_sigmoid({})", x[0]); break;
    default: fail("internal error: {} is not a float op", ir::op_name(k));
  }
  return half ? from_f32(r, d, nan_unseen) : r;
}

std::string int_op(OpKind k, const std::vector<std::string>& x, DType d) {
  std::string t = ctype(d);
  if (d == DType::i1) {
    switch (k) {
      case OpKind::And: case OpKind::Min: case OpKind::Mul: return fmt::format("{} && {}", x[0], x[1]);
      case OpKind::Or: case OpKind::Max: return fmt::format("{} || {}", x[0], x[1]);
      case OpKind::Xor: case OpKind::Add: case OpKind::Sub: return fmt::format("{} != {}", x[0], x[1]);
      case OpKind::Not: return fmt::format("!{}", x[0]);
      case OpKind::Neg: case OpKind::Abs: return x[0];
      default: break;
    }
  }
  // Wrapping arithmetic: computed in the unsigned type of the same width.
  std::string u = d == DType::i1 ? "uint8_t" : ctype(is_signed_int(d) ? static_cast<DType>(static_cast<int>(d) + 4) : d);
  switch (k) {
    case OpKind::Add: return fmt::format("({})({})((uint64_t){} + (uint64_t){})", t, u, x[0], x[1]);
    case OpKind::Sub: return fmt::format("({})({})((uint64_t){} - (uint64_t){})", t, u, x[0], x[1]);
    case OpKind::Mul: return fmt::format("({})({})((uint64_t){} * (uint64_t){})", t, u, x[0], x[1]);
    case OpKind::Neg: return fmt::format("({})({})(0ull - (uint64_t){})", t, u, x[0]);
    case OpKind::Div: return fmt::format("tt_div<{}>({}, {})", t, x[0], x[1]);
    case OpKind::Rem: return fmt::format("tt_rem<{}>({}, {})", t, x[0], x[1]);
    case OpKind::Abs: return fmt::format("tt_abs<{}>({})", t, x[0]);
    case OpKind::Min: return fmt::format("tt_min<{}>({}, {})", t, x[0], x[1]);
    case OpKind::Max: return fmt::format("tt_max<{}>({}, {})", t, x[0], x[1]);
    case OpKind::And: return fmt::format("({})({} & {})", t, x[0], x[1]);
    case OpKind::Or: return fmt::format("({})({} | {})", t, x[0], x[1]);
    case OpKind::Xor: return fmt::format("({})({} ^ {})", t, x[0], x[1]);
    case OpKind::Not: return fmt::format("({})(~{})", t, x[0]);
    case OpKind::Shl: return fmt::format("tt_shl<{}>({}, {})", t, x[0], x[1]);
    case OpKind::Shr: return fmt::format("tt_shr<{}>({}, {})", t, x[0], x[1]);
    case OpKind::Umulhi: return fmt::format("tt_umulhi<{}>({}, {})", t, x[0], x[1]);
    default: fail("internal error: {} is not an integer op", ir::op_name(k));
  }
}

std::string compare(OpKind k, std::string a, std::string b, DType d) {
  a = to_f32(a, d), b = to_f32(b, d);
  const char* o = k == OpKind::CmpEq ? "==" : k == OpKind::CmpNe ? "!=" : k == OpKind::CmpLt ? "<"
                : k == OpKind::CmpLe ? "<=" : k == OpKind::CmpGt ? ">" : ">=";
  return fmt::format("{} {} {}", a, o, b);
}

std::string cast(const std::string& v, const ir::Type& from_t, const ir::Type& to_t, bool nan_unseen) {
  DType from = from_t.dtype, to = to_t.dtype;
  if (from == DType::ptr && to == DType::ptr) return fmt::format("({})({})", ctype(to_t.element()), v);
  if (from == to) return v;
  if (from == DType::ptr) return fmt::format("({})(uint64_t)({})", ctype(to), v);
  if (to == DType::ptr) return fmt::format("({})(uint64_t)(int64_t)({})", ctype(to_t.element()), v);
  if (to == DType::i1) return is_float(from) ? fmt::format("({} != 0)", to_f32(v, from)) : fmt::format("({} != 0)", v);
  if (is_int(from) && is_int(to)) return fmt::format("({})({})", ctype(to), v);
  if (is_int(from)) {
    if (is_narrow_float(to)) return from_f32(fmt::format("(float)({})", v), to);
    return fmt::format("({})({})", ctype(to), v);
  }
  if (is_int(to)) {  // saturating, NaN -> 0 (as cvt.rzi.sat)
    std::string x = to_f32(v, from);
    return fmt::format("({})({})", ctype(to), x);
  }
  std::string x = to_f32(v, from);
  if (to == DType::f64) return fmt::format("(double)({})", x);
  if (from == DType::f64) x = fmt::format("(float)({})", x);
  return to == DType::f32 ? x : from_f32(x, to, nan_unseen);
}

std::string elementwise(const ir::Op* op, const std::vector<std::string>& x, bool nan_unseen) {
  OpKind k = op->kind;
  DType d = op->operand(0)->type.dtype;
  switch (k) {
    case OpKind::CmpEq: case OpKind::CmpNe: case OpKind::CmpLt: case OpKind::CmpLe: case OpKind::CmpGt:
    case OpKind::CmpGe:
      return compare(k, x[0], x[1], d);
    case OpKind::Select: return fmt::format("{} ? {} : {}", x[0], x[1], x[2]);
    case OpKind::Cast: return cast(x[0], op->operand(0)->type.element(), op->result()->type.element(), nan_unseen);
    case OpKind::Bitcast: return fmt::format("tt_bitcast<{}>({})", ctype(op->result()->type.element()), x[0]);
    case OpKind::AddPtr: return fmt::format("{} + (int64_t)({})", x[0], x[1]);
    default: break;
  }
  if (is_float(d)) return float_op(k, x, d, nan_unseen);
  return int_op(k, x, d);
}

bool nan_bits_unseen(const ir::Value* v, const std::function<const std::vector<ir::Op*>&(const ir::Value*)>& users,
                     std::unordered_map<const ir::Value*, bool>& memo) {
  if (auto it = memo.find(v); it != memo.end()) return it->second;
  memo[v] = false;  // (no cycles in SSA; conservative meanwhile)
  bool unseen = true;
  for (const ir::Op* u : users(v)) {
    switch (u->kind) {
      // FADD / FMUL / FFMA, div.full, ex2 / rsqrt / sqrt (MUFU) return the canonical NaN.
      case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Fma:
      case OpKind::Exp: case OpKind::Exp2: case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Rcp:
        unseen = is_float(u->result()->type.dtype);
        break;
      case OpKind::CmpEq: case OpKind::CmpNe: case OpKind::CmpLt: case OpKind::CmpLe: case OpKind::CmpGt:
      case OpKind::CmpGe:
        break;
      case OpKind::Select:  // the condition is a bool; a selected value passes its bits on
        unseen = u->operand(0) == v || nan_bits_unseen(u->result(), users, memo);
        break;
      case OpKind::Cast: case OpKind::Neg: case OpKind::Abs:  // keep the payload (f32 / f64 widen it)
        unseen = !is_float(u->result()->type.dtype) || nan_bits_unseen(u->result(), users, memo);
        break;
      case OpKind::Splat: case OpKind::Broadcast: case OpKind::ExpandDims: case OpKind::Reshape:
        unseen = nan_bits_unseen(u->result(), users, memo);
        break;
      case OpKind::Reduce:  // an element may become the result as it is (the first of a sum)
        for (const ir::Value* r : u->results) unseen = unseen && (!is_float(r->type.dtype) || nan_bits_unseen(r, users, memo));
        break;
      default: unseen = false; break;
    }
    if (!unseen) break;
  }
  memo[v] = unseen;
  return unseen;
}

std::string wide_addptr(const std::string& p, const std::string& off, DType off_dtype) {
  if (off_dtype != DType::i32 && off_dtype != DType::u32) return fmt::format("{} + (int64_t)({})", p, off);
  return fmt::format("tt_addptr({}, ({})({}))", p, off_dtype == DType::i32 ? "int32_t" : "uint32_t", off);
}

std::string atomic_call(OpKind k, DType d, const std::string& p, const std::string& v,
                                 const std::string& cmp) {
  std::string ct = ctype(d);
  int bytes = dtype_bytes(d);
  bool i32 = d == DType::i32 || d == DType::u32;
  bool i64 = d == DType::i64 || d == DType::u64;
  switch (k) {
    case OpKind::AtomicCas: return fmt::format("tt_atomic_cas<{}>({}, {}, {})", ct, p, cmp, v);
    case OpKind::AtomicAdd:
      if (i32 || d == DType::f32 || d == DType::f64) return fmt::format("atomicAdd({}, {})", p, v);
      if (i64) return fmt::format("({})atomicAdd((unsigned long long*){}, (unsigned long long){})", ct, p, v);
      if (d == DType::f16 || d == DType::bf16) return fmt::format("tt_atomic_add_16({}, {})", p, v);
      break;
    case OpKind::AtomicMax: case OpKind::AtomicMin: {
      const char* fn = k == OpKind::AtomicMax ? "atomicMax" : "atomicMin";
      if (i32) return fmt::format("{}({}, {})", fn, p, v);
      if (d == DType::i64) return fmt::format("(int64_t){}((long long*){}, (long long){})", fn, p, v);
      if (d == DType::u64) return fmt::format("(uint64_t){}((unsigned long long*){}, (unsigned long long){})", fn, p, v);
      break;
    }
    case OpKind::AtomicAnd: case OpKind::AtomicOr: case OpKind::AtomicXor: {
      const char* fn = k == OpKind::AtomicAnd ? "atomicAnd" : k == OpKind::AtomicOr ? "atomicOr" : "atomicXor";
      if (i32) return fmt::format("{}({}, {})", fn, p, v);
      if (i64) return fmt::format("({}){}((unsigned long long*){}, (unsigned long long){})", ct, fn, p, v);
      break;
    }
    case OpKind::AtomicXchg:
      if (bytes == 4) return fmt::format("tt_bitcast<{}>(atomicExch((unsigned int*){}, tt_bitcast<unsigned int>({})))", ct, p, v);
      if (bytes == 8)
        return fmt::format("tt_bitcast<{}>(atomicExch((unsigned long long*){}, tt_bitcast<unsigned long long>({})))", ct, p, v);
      break;
    default: break;
  }
  const char* opn = k == OpKind::AtomicAdd ? "TT_ADD" : k == OpKind::AtomicMax ? "TT_MAX" : k == OpKind::AtomicMin ? "TT_MIN"
                  : k == OpKind::AtomicAnd ? "TT_AND" : k == OpKind::AtomicOr ? "TT_OR" : k == OpKind::AtomicXor ? "TT_XOR" : "TT_XCHG";
  return fmt::format("tt_atomic_rmw<{}, {}>({}, {})", opn, ct, p, v);
}

}  // namespace tritium::jit::cuda
