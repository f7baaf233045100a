// IR -> PTX for straight-line kernels over 1-D blocks (why and what: ptx_codegen.h). Every block
// value has the same size B; thread tid owns elements (k * nthreads + tid) * V + lane for
// k < B / (nthreads * V) and lane < V, each in its own register, so elementwise chains are
// straight-line register code and ptxas does the rest. Scalars are one register, computed by
// every thread.
#include "jit/cuda/ptx_codegen.h"

#include "jit/cuda/cache_hints.h"

#include <cstring>
#include <map>
#include <unordered_map>
#include <vector>

#include "jit/cuda/codegen_impl.h"

namespace tritium::jit::cuda {
namespace {

using ir::OpKind;

// Thrown while checking or emitting: the kernel goes through the CUDA generator instead.
struct Declined {
  std::string why;
};

enum class RegClass { pred, b16, b32, b64 };

RegClass reg_class(DType d) {
  switch (d) {
    case DType::i1: return RegClass::pred;
    case DType::f16: case DType::bf16: return RegClass::b16;
    case DType::i32: case DType::u32: case DType::f32: return RegClass::b32;
    case DType::i64: case DType::u64: case DType::ptr: return RegClass::b64;
    default: throw Declined{fmt::format("values of type {}", dtype_name(d))};
  }
}
// 90 for "sm_90a", 80 for "sm_80" (0 when unreadable: the oldest forms).
int sm_number(const std::string& arch) {
  int n = 0;
  for (size_t i = 3; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i) n = n * 10 + (arch[i] - '0');
  return arch.rfind("sm_", 0) == 0 ? n : 0;
}
int reg_bits(RegClass c) { return c == RegClass::b16 ? 16 : c == RegClass::b32 ? 32 : c == RegClass::b64 ? 64 : 1; }

// Types a Load or Store may move (i1 is a byte in memory: not here).
bool is_memory_type(DType d) {
  switch (d) {
    case DType::f16: case DType::bf16: case DType::f32: case DType::i32: case DType::u32: case DType::i64:
    case DType::u64: case DType::ptr:
      return true;
    default: return false;
  }
}

const char* int_suffix(DType d) {  // the signedness-carrying PTX type of an integer or pointer
  switch (d) {
    case DType::i32: return "s32";
    case DType::u32: return "u32";
    case DType::i64: return "s64";
    case DType::u64: case DType::ptr: return "u64";
    default: throw Declined{fmt::format("integer arithmetic on {}", dtype_name(d))};
  }
}

std::string f32_literal(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return fmt::format("0f{:08X}", u);
}

bool is_supported(OpKind k) {
  switch (k) {
    case OpKind::Constant: case OpKind::ProgramId: case OpKind::NumPrograms: case OpKind::Arange:
    case OpKind::Splat: case OpKind::MultipleOf: case OpKind::MaxContiguous:
    case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
    case OpKind::Neg: case OpKind::And: case OpKind::Or: case OpKind::Xor: case OpKind::Not:
    case OpKind::Shl: case OpKind::Shr: case OpKind::Min: case OpKind::Max: case OpKind::Umulhi:
    case OpKind::Fma: case OpKind::Abs: case OpKind::Exp: case OpKind::Sqrt: case OpKind::Rsqrt:
    case OpKind::Floor: case OpKind::Ceil:
    case OpKind::CmpEq: case OpKind::CmpNe: case OpKind::CmpLt: case OpKind::CmpLe: case OpKind::CmpGt:
    case OpKind::CmpGe: case OpKind::Select: case OpKind::Cast: case OpKind::Bitcast: case OpKind::AddPtr:
    case OpKind::Load: case OpKind::Store:
      return true;
    default: return false;
  }
}

class PtxEmitter {
 public:
  PtxEmitter(const ir::Function& f, const AxisInfoMap& axis, int num_warps, std::string arch)
      : f_(f), axis_(axis), nt_(std::max(1, num_warps) * 32), arch_(std::move(arch)), sm_(sm_number(arch_)) {}

  KernelSource run() {
    plan();
    KernelSource ks;
    ks.entry = identifier(f_.name);
    ks.num_threads = nt_;
    std::string params;
    for (size_t i = 0; i < f_.params.size(); ++i) {
      const ir::Type& t = f_.params[i].type;
      std::string name = fmt::format("{}_param_{}", ks.entry, i);
      const ir::Value* v = f_.body->args[i];
      if (t.is_ptr() || t.dtype == DType::i64 || t.dtype == DType::u64) {
        params += fmt::format("  .param .u64 {},\n", name);
        set(v, load_param(RegClass::b64, "u64", name));
      } else if (t.dtype == DType::i32 || t.dtype == DType::u32 || t.dtype == DType::f32) {
        params += fmt::format("  .param .b32 {},\n", name);
        set(v, load_param(RegClass::b32, "b32", name));
      } else if (t.dtype == DType::i1) {  // a C++ bool: one byte
        params += fmt::format("  .param .u8 {},\n", name);
        std::string byte = load_param(RegClass::b16, "u8", name), p = reg(RegClass::pred);
        emit("setp.ne.b16 {}, {}, 0;", p, byte);
        set(v, p);
      } else if (!v->has_uses() && (t.dtype == DType::f64 || t.dtype == DType::f16 || t.dtype == DType::bf16)) {
        // Declared, never read: the op library's element-wise kernels pass their scalars as f64
        // (clamp's bounds, pow's exponent), which most ops leave unused; declining them sent
        // abs, neg, relu, ... through NVRTC's rolled loop, one 16-byte load in flight a thread.
        params += fmt::format("  .param .b{} {},\n", t.dtype == DType::f64 ? 64 : 16, name);
      } else {
        throw Declined{fmt::format("a parameter of type {}", t.str())};
      }
    }
    params += fmt::format("  .param .u64 {0}_param_scratch,\n  .param .u64 {0}_param_assert", ks.entry);
    tid_ = reg(RegClass::b32);
    emit("mov.u32 {}, %tid.x;", tid_);
    tid_v_ = reg(RegClass::b32);
    emit("mul.lo.s32 {}, {}, {};", tid_v_, tid_, V_);
    for (const ir::Op* op : f_.body->ops) emit_op(op);

    std::string& s = ks.source;
    s = fmt::format("// Tritium: kernel {} as PTX (jit/cuda/ptx_codegen.cpp), {} threads, {} element(s) per thread\n",
                    f_.name, nt_, per_thread_);
    s += fmt::format(".version 8.0\n.target {}\n.address_size 64\n\n", arch_);
    s += fmt::format(".visible .entry {}(\n{}\n)\n.maxntid {}, 1, 1\n{{\n", ks.entry, params, nt_);
    const char* cls[] = {".pred %p", ".b16 %h", ".b32 %r", ".b64 %rd"};
    for (int c = 0; c < 4; ++c)
      if (count_[c]) s += fmt::format("  .reg {}<{}>;\n", cls[c], count_[c]);
    s += body_ + "  ret;\n}\n";
    return ks;
  }

 private:
  const ir::Function& f_;
  const AxisInfoMap& axis_;
  int nt_;
  std::string arch_;
  int sm_;                           // 90 for "sm_90a": cvt.rn.bf16.f32 needs 80
  int64_t block_ = 0;                // B, the size of every block value (0: none)
  int V_ = 1, per_thread_ = 1;       // lanes per vector access; elements per thread
  std::string body_, tid_, tid_v_;
  int count_[4] = {};
  std::unordered_map<const ir::Value*, std::vector<std::string>> vals_;
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> products_;  // wide_product

  // ---- checks and the thread mapping ----

  void plan() {
    bool stored = false;
    int V = 0;
    for (const ir::Op* op : f_.body->ops) {
      if (!is_supported(op->kind)) throw Declined{fmt::format("operation {}", ir::op_name(op->kind))};
      if (!op->regions.empty()) throw Declined{"regions"};
      auto check_type = [&](const ir::Type& t) {
        if (t.rank() > 1) throw Declined{"blocks of rank 2 or more"};
        if (t.is_block()) {
          if (block_ != 0 && t.shape[0] != block_) throw Declined{"blocks of different sizes"};
          block_ = t.shape[0];
        }
        reg_class(t.dtype);
      };
      for (const ir::Value* v : op->operands) check_type(v->type);
      for (const ir::Value* v : op->results) check_type(v->type);
      if (op->kind == OpKind::Load || op->kind == OpKind::Store) {
        if (!is_memory_type(op->operand(0)->type.pointee))
          throw Declined{fmt::format("memory of type {}", dtype_name(op->operand(0)->type.pointee))};
        if (op->kind == OpKind::Load && stored) throw Declined{"a load after a store (needs a barrier)"};
        if (op->kind == OpKind::Store) stored = true;
        if (int w = access_width(op); w > 1) V = V == 0 ? w : std::min(V, w);
      }
    }
    if (block_ == 0) return;
    V_ = std::max(V, 1);
    while (V_ > 1 && (block_ % V_ != 0 || block_ / V_ < nt_)) V_ /= 2;
    if (block_ % (int64_t(nt_) * V_) != 0) throw Declined{fmt::format("a block of {} for {} threads", block_, nt_)};
    per_thread_ = static_cast<int>(block_ / nt_);
    if (per_thread_ > 64) throw Declined{fmt::format("{} elements per thread", per_thread_)};
  }

  int access_width(const ir::Op* op) const { return detail::access_width(op, axis_); }

  // ---- registers ----

  std::string reg(RegClass c) {
    const char* prefix[] = {"%p", "%h", "%r", "%rd"};
    int i = static_cast<int>(c);
    return fmt::format("{}{}", prefix[i], count_[i]++);
  }
  std::string reg(DType d) { return reg(reg_class(d)); }
  template <class... A> void emit(fmt::format_string<A...> f, A&&... a) {
    body_ += "  " + fmt::format(f, std::forward<A>(a)...) + "\n";
  }
  int lanes(const ir::Value* v) const { return v->type.is_block() ? per_thread_ : 1; }
  // The registers of v: one (scalars, splats, uniform values) or one per element of the thread.
  const std::vector<std::string>& regs_of(const ir::Value* v) const {
    auto it = vals_.find(v);
    if (it == vals_.end()) throw Declined{"internal: a value used before its definition"};
    return it->second;
  }
  const std::string& at(const ir::Value* v, int i) const {
    const auto& r = regs_of(v);
    return r.size() == 1 ? r[0] : r[static_cast<size_t>(i)];
  }
  void set(const ir::Value* v, std::string r) { vals_[v] = {std::move(r)}; }
  std::string load_param(RegClass c, const char* type, const std::string& name) {
    std::string r = reg(c);
    emit("ld.param.{} {}, [{}];", type, r, name);
    return r;
  }

  // ---- f16 / bf16, computed in f32 as the device header does ----

  std::string to_f32(const std::string& x, DType d) {
    if (d == DType::f32) return x;
    std::string r = reg(RegClass::b32);
    if (d == DType::f16) {
      emit("cvt.f32.f16 {}, {};", r, x);
    } else if (d == DType::bf16) {  // the bits, shifted up: exact
      emit("cvt.u32.u16 {}, {};", r, x);
      emit("shl.b32 {0}, {0}, 16;", r);
    } else {
      throw Declined{fmt::format("float arithmetic on {}", dtype_name(d))};
    }
    return r;
  }
  std::string from_f32(const std::string& x, DType d) {
    if (d == DType::f32) return x;
    std::string h = reg(RegClass::b16);
    if (d == DType::f16) {
      emit("cvt.rn.f16.f32 {}, {};", h, x);
      return h;
    }
    if (d != DType::bf16) throw Declined{fmt::format("float arithmetic on {}", dtype_name(d))};
    if (sm_ >= 80) {  // tt_bf16_from: one cvt and the NaN fix-up (the integer rounding below took 9
                      // instructions an element: half of swiglu's instructions, 2026-11-26)
      std::string b = reg(RegClass::b16), nan = reg(RegClass::pred);
      emit("cvt.rn.bf16.f32 {}, {};", b, x);
      emit("setp.nan.f32 {}, {}, {};", nan, x, x);
      emit("selp.b16 {}, 0x7fc0, {}, {};", h, b, nan);
      return h;
    }
    // tt_bf16_from: round to nearest even on the bits; NaN -> 0x7fc0.
    std::string mag = reg(RegClass::b32), odd = reg(RegClass::b32), u = reg(RegClass::b32), nan = reg(RegClass::pred),
                rounded = reg(RegClass::b16);
    emit("and.b32 {}, {}, 2147483647;", mag, x);
    emit("setp.gt.u32 {}, {}, 2139095040;", nan, mag);
    emit("shr.u32 {}, {}, 16;", odd, x);
    emit("and.b32 {0}, {0}, 1;", odd);
    emit("add.s32 {}, {}, {};", u, x, odd);
    emit("add.s32 {0}, {0}, 32767;", u);
    emit("shr.u32 {0}, {0}, 16;", u);
    emit("cvt.u16.u32 {}, {};", rounded, u);
    emit("selp.b16 {}, 0x7fc0, {}, {};", h, rounded, nan);
    return h;
  }

  // ---- one element of an elementwise op ----

  std::string float_op(OpKind k, std::vector<std::string> x, DType d) {
    for (auto& v : x) v = to_f32(v, d);
    std::string r = reg(RegClass::b32);
    switch (k) {
      case OpKind::Add: emit("add.rn.f32 {}, {}, {};", r, x[0], x[1]); break;
      case OpKind::Sub: emit("sub.rn.f32 {}, {}, {};", r, x[0], x[1]); break;
      case OpKind::Mul: emit("mul.rn.f32 {}, {}, {};", r, x[0], x[1]); break;
      case OpKind::Div: emit("div.full.f32 {}, {}, {};", r, x[0], x[1]); break;
      case OpKind::Neg: emit("neg.f32 {}, {};", r, x[0]); break;
      case OpKind::Min: emit("min.f32 {}, {}, {};", r, x[0], x[1]); break;
      case OpKind::Max: emit("max.f32 {}, {}, {};", r, x[0], x[1]); break;
      case OpKind::Fma: emit("fma.rn.f32 {}, {}, {}, {};", r, x[0], x[1], x[2]); break;
      case OpKind::Abs: emit("abs.f32 {}, {};", r, x[0]); break;
      case OpKind::Floor: emit("cvt.rmi.f32.f32 {}, {};", r, x[0]); break;
      case OpKind::Ceil: emit("cvt.rpi.f32.f32 {}, {};", r, x[0]); break;
      case OpKind::Sqrt: emit("sqrt.approx.f32 {}, {};", r, x[0]); break;
      case OpKind::Rsqrt: emit("rsqrt.approx.f32 {}, {};", r, x[0]); break;
      case OpKind::Exp: {  // tt_exp: ex2.approx of x * log2(e)
        std::string t = reg(RegClass::b32);
        emit("mul.rn.f32 {}, {}, {};", t, x[0], f32_literal(1.4426950408889634f));
        emit("ex2.approx.f32 {}, {};", r, t);
        break;
      }
      default: throw Declined{fmt::format("{} on {}", ir::op_name(k), dtype_name(d))};
    }
    return from_f32(r, d);
  }

  std::string bool_op(OpKind k, const std::vector<std::string>& x) {
    std::string r = reg(RegClass::pred);
    switch (k) {
      case OpKind::And: case OpKind::Min: case OpKind::Mul: emit("and.pred {}, {}, {};", r, x[0], x[1]); break;
      case OpKind::Or: case OpKind::Max: emit("or.pred {}, {}, {};", r, x[0], x[1]); break;
      case OpKind::Xor: case OpKind::Add: case OpKind::Sub: emit("xor.pred {}, {}, {};", r, x[0], x[1]); break;
      case OpKind::Not: emit("not.pred {}, {};", r, x[0]); break;
      case OpKind::Neg: case OpKind::Abs: return x[0];
      default: throw Declined{fmt::format("{} on i1", ir::op_name(k))};
    }
    return r;
  }

  // The low and high words of a 32-bit product, from one mul.wide.u32 shared by every `*` and
  // umulhi of the same operands (Philox multiplies each pair both ways: one IMAD.WIDE.U32 instead
  // of IMAD + IMAD.HI). The low word does not depend on signedness.
  std::pair<std::string, std::string> wide_product(const std::string& a, const std::string& b) {
    auto key = a < b ? std::pair{a, b} : std::pair{b, a};
    if (auto it = products_.find(key); it != products_.end()) return it->second;
    std::string w = reg(RegClass::b64), lo = reg(RegClass::b32), hi = reg(RegClass::b32);
    emit("mul.wide.u32 {}, {}, {};", w, a, b);
    emit("mov.b64 {{{}, {}}}, {};", lo, hi, w);
    return products_[key] = {lo, hi};
  }

  std::string int_op(OpKind k, const std::vector<std::string>& x, DType d) {
    if (d == DType::i1) return bool_op(k, x);
    const char* s = int_suffix(d);
    const bool wide = dtype_bits(d) == 64, is_signed = is_signed_int(d);
    const int bits = wide ? 64 : 32;
    if (!wide && k == OpKind::Mul) return wide_product(x[0], x[1]).first;
    if (!wide && k == OpKind::Umulhi) return wide_product(x[0], x[1]).second;
    if (!is_signed && k == OpKind::Abs) return x[0];
    std::string r = reg(d);
    switch (k) {
      case OpKind::Add: emit("add.{} {}, {}, {};", s, r, x[0], x[1]); break;  // wraps
      case OpKind::Sub: emit("sub.{} {}, {}, {};", s, r, x[0], x[1]); break;
      case OpKind::Mul: emit("mul.lo.{} {}, {}, {};", s, r, x[0], x[1]); break;
      case OpKind::Neg: emit("neg.s{} {}, {};", bits, r, x[0]); break;
      case OpKind::And: emit("and.b{} {}, {}, {};", bits, r, x[0], x[1]); break;
      case OpKind::Or: emit("or.b{} {}, {}, {};", bits, r, x[0], x[1]); break;
      case OpKind::Xor: emit("xor.b{} {}, {}, {};", bits, r, x[0], x[1]); break;
      case OpKind::Not: emit("not.b{} {}, {};", bits, r, x[0]); break;
      case OpKind::Min: emit("min.{} {}, {}, {};", s, r, x[0], x[1]); break;
      case OpKind::Max: emit("max.{} {}, {}, {};", s, r, x[0], x[1]); break;
      case OpKind::Abs: emit("abs.{} {}, {};", s, r, x[0]); break;  // abs(MIN) = MIN, as the header's wrapping negation
      case OpKind::Umulhi: emit("mul.hi.u64 {}, {}, {};", r, x[0], x[1]); break;
      case OpKind::Shl: case OpKind::Shr: {
        // ptxas clamps shift amounts to the width: past it, shl gives 0, shr.s the sign and
        // shr.u 0 - the header's rules. The amount is a u32: a 64-bit one is clamped first.
        std::string amount = x[1];
        if (wide) {
          std::string c = reg(RegClass::b64);
          amount = reg(RegClass::b32);
          emit("min.u64 {}, {}, 64;", c, x[1]);
          emit("cvt.u32.u64 {}, {};", amount, c);
        }
        if (k == OpKind::Shl) emit("shl.b{} {}, {}, {};", bits, r, x[0], amount);
        else emit("shr.{}{} {}, {}, {};", is_signed ? "s" : "u", bits, r, x[0], amount);
        break;
      }
      case OpKind::Div: case OpKind::Rem: {
        // The header's rules: x / 0 = x, x % 0 = 0; signed x / -1 = -x (wrapping), x % -1 = 0.
        // Dividing by 1 instead of 0 or -1 gives x and 0; the quotient is then patched.
        std::string by_zero = reg(RegClass::pred), by_minus1 = reg(RegClass::pred), safe = reg(d);
        emit("setp.eq.{} {}, {}, 0;", s, by_zero, x[1]);
        if (is_signed) {
          std::string either = reg(RegClass::pred);
          emit("setp.eq.{} {}, {}, -1;", s, by_minus1, x[1]);
          emit("or.pred {}, {}, {};", either, by_zero, by_minus1);
          emit("selp.b{} {}, 1, {}, {};", bits, safe, x[1], either);
        } else {
          emit("selp.b{} {}, 1, {}, {};", bits, safe, x[1], by_zero);
        }
        if (k == OpKind::Rem) {
          emit("rem.{} {}, {}, {};", s, r, x[0], safe);
        } else {
          emit("div.{} {}, {}, {};", s, r, x[0], safe);
          if (is_signed) {
            std::string neg = reg(d);
            emit("neg.s{} {}, {};", bits, neg, x[0]);
            emit("selp.b{} {}, {}, {}, {};", bits, r, neg, r, by_minus1);
          }
        }
        break;
      }
      default: throw Declined{fmt::format("{} on {}", ir::op_name(k), dtype_name(d))};
    }
    return r;
  }

  std::string compare(OpKind k, std::string a, std::string b, DType d) {
    static const char* ops[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    std::string op = ops[static_cast<int>(k) - static_cast<int>(OpKind::CmpEq)];
    std::string type;
    if (is_float(d)) {
      a = to_f32(a, d), b = to_f32(b, d);
      if (op == "ne") op = "neu";  // C's != is true for NaN operands
      type = "f32";
    } else if (d == DType::i1) {  // false < true
      std::string ia = reg(RegClass::b32), ib = reg(RegClass::b32);
      emit("selp.u32 {}, 1, 0, {};", ia, a);
      emit("selp.u32 {}, 1, 0, {};", ib, b);
      a = ia, b = ib, type = "u32";
    } else {
      type = int_suffix(d);
    }
    std::string r = reg(RegClass::pred);
    emit("setp.{}.{} {}, {}, {};", op, type, r, a, b);
    return r;
  }

  std::string select(const std::string& c, const std::string& a, const std::string& b, DType d) {
    std::string r = reg(d);
    if (d == DType::i1) {  // (c and a) or (not c and b)
      std::string nc = reg(RegClass::pred), t = reg(RegClass::pred), e = reg(RegClass::pred);
      emit("and.pred {}, {}, {};", t, c, a);
      emit("not.pred {}, {};", nc, c);
      emit("and.pred {}, {}, {};", e, nc, b);
      emit("or.pred {}, {}, {};", r, t, e);
    } else {
      emit("selp.b{} {}, {}, {}, {};", reg_bits(reg_class(d)), r, a, b, c);
    }
    return r;
  }

  // As Codegen::cast.
  std::string cast(const std::string& x, DType from, DType to) {
    if (from == to) return x;
    if (to == DType::i1) {
      std::string r = reg(RegClass::pred);
      if (is_float(from)) emit("setp.neu.f32 {}, {}, 0f00000000;", r, to_f32(x, from));
      else emit("setp.ne.b{} {}, {}, 0;", reg_bits(reg_class(from)), r, x);
      return r;
    }
    if (from == DType::i1) {
      if (is_float(to)) {
        std::string r = reg(RegClass::b32);
        emit("selp.f32 {}, 0f3F800000, 0f00000000, {};", r, x);
        return from_f32(r, to);
      }
      std::string r = reg(to);
      emit("selp.b{} {}, 1, 0, {};", reg_bits(reg_class(to)), r, x);
      return r;
    }
    const bool from_int = !is_float(from), to_int = !is_float(to);  // pointers count as integers
    if (from_int && to_int) {
      int fb = reg_bits(reg_class(from)), tb = reg_bits(reg_class(to));
      if (fb == tb) return x;
      std::string r = reg(to);
      if (tb < fb) emit("cvt.u32.u64 {}, {};", r, x);
      else emit("cvt.{}64.{}32 {}, {};", is_signed_int(from) ? "s" : "u", is_signed_int(from) ? "s" : "u", r, x);
      return r;
    }
    if (from == DType::ptr || to == DType::ptr) throw Declined{"casts between pointers and floats"};
    if (from_int) {
      std::string r = reg(RegClass::b32);
      emit("cvt.rn.f32.{} {}, {};", int_suffix(from), r, x);
      return from_f32(r, to);
    }
    std::string f = to_f32(x, from);
    if (to_int) {  // truncation, saturating, NaN -> 0
      std::string r = reg(to);
      emit("cvt.rzi.{}.f32 {}, {};", int_suffix(to), r, f);
      return r;
    }
    return from_f32(f, to);
  }

  std::string add_ptr(const std::string& p, const std::string& off, DType off_type, DType pointee) {
    int64_t bytes = pointee == DType::invalid ? 1 : pointee == DType::ptr ? 8 : dtype_bytes(pointee);
    std::string scaled = reg(RegClass::b64), r = reg(RegClass::b64);
    if (dtype_bits(off_type) == 32) emit("mul.wide.{} {}, {}, {};", int_suffix(off_type), scaled, off, bytes);
    else emit("mul.lo.s64 {}, {}, {};", scaled, off, bytes);
    emit("add.s64 {}, {}, {};", r, p, scaled);
    return r;
  }

  // ---- ops ----

  void emit_op(const ir::Op* op) {
    const ir::Value* res = op->results.empty() ? nullptr : op->result();
    switch (op->kind) {
      case OpKind::Constant: return set(res, constant(op));
      case OpKind::ProgramId: case OpKind::NumPrograms: {
        static const char* axes[] = {"x", "y", "z"};
        std::string r = reg(RegClass::b32);
        emit("mov.u32 {}, %{}.{};", r, op->kind == OpKind::ProgramId ? "ctaid" : "nctaid", axes[op->attrs.axis]);
        return set(res, r);
      }
      case OpKind::Arange: {
        std::vector<std::string> regs;
        for (int i = 0; i < per_thread_; ++i) {
          int64_t k = i / V_, lane = i % V_;
          std::string r = reg(RegClass::b32);
          emit("add.s32 {}, {}, {};", r, tid_v_, op->attrs.ints[0] + k * nt_ * V_ + lane);
          regs.push_back(r);
        }
        vals_[res] = std::move(regs);
        return;
      }
      case OpKind::Splat: case OpKind::MultipleOf: case OpKind::MaxContiguous: case OpKind::Bitcast:
        vals_[res] = regs_of(op->operand(0));
        return;
      case OpKind::Load: return load(op);
      case OpKind::Store: return store(op);
      default: break;
    }
    // Elementwise: one element at a time - once when every operand is uniform (splats, scalars).
    std::vector<std::string> regs;
    const DType d = op->operand(0)->type.dtype;
    bool uniform = true;
    for (const ir::Value* o : op->operands) uniform = uniform && regs_of(o).size() == 1;
    for (int i = 0; i < (uniform ? 1 : lanes(res)); ++i) {
      std::vector<std::string> x;
      for (const ir::Value* o : op->operands) x.push_back(at(o, i));
      switch (op->kind) {
        case OpKind::CmpEq: case OpKind::CmpNe: case OpKind::CmpLt: case OpKind::CmpLe: case OpKind::CmpGt:
        case OpKind::CmpGe:
          regs.push_back(compare(op->kind, x[0], x[1], d));
          break;
        case OpKind::Select: regs.push_back(select(x[0], x[1], x[2], res->type.dtype)); break;
        case OpKind::Cast: {
          DType from = d, to = res->type.dtype;
          if (from == DType::ptr && to == DType::ptr) regs.push_back(x[0]);
          else regs.push_back(cast(x[0], from, to));
          break;
        }
        case OpKind::AddPtr:
          regs.push_back(add_ptr(x[0], x[1], op->operand(1)->type.dtype, op->operand(0)->type.pointee));
          break;
        default: regs.push_back(is_float(d) ? float_op(op->kind, x, d) : int_op(op->kind, x, d)); break;
      }
    }
    vals_[res] = std::move(regs);
  }

  std::string constant(const ir::Op* op) {
    const DType d = op->result()->type.dtype;
    if (is_float(d)) {  // f16/bf16 as the CUDA generator's tt_f16_from(f32 literal)
      std::string f = reg(RegClass::b32);
      emit("mov.b32 {}, {};", f, f32_literal(static_cast<float>(op->attrs.fval)));
      return from_f32(f, d);
    }
    std::string r = reg(d);
    if (d == DType::i1) emit("mov.pred {}, {};", r, op->attrs.ival ? 1 : 0);
    else if (dtype_bits(d) == 32) emit("mov.b32 {}, {};", r, static_cast<uint32_t>(op->attrs.ival));
    else emit("mov.b64 {}, {};", r, static_cast<uint64_t>(op->attrs.ival));
    return r;
  }

  // A load or store moves V lanes at once when the pointer is contiguous and aligned for them
  // (Codegen::emit_vector_loads), else lane by lane.
  bool vector_access(const ir::Op* op) const { return V_ > 1 && access_width(op) >= V_; }

  // The predicates of one vector access of lanes [first, first + V): `whole` guards the V-lane
  // access (empty: unmasked), `lane` (when not empty) the per-lane accesses of the same
  // elements, done when the mask is not the same for all V - as the CUDA generator's run-time
  // "all lanes in the mask" test, without the branch.
  struct VectorGuard {
    std::string whole;
    std::vector<std::string> lane;
  };
  VectorGuard vector_guard(const ir::Op* op, int mask_operand, int first) {
    VectorGuard g;
    if (static_cast<int>(op->operands.size()) <= mask_operand) return g;
    const ir::Value* m = op->operand(mask_operand);
    if (axis_.contains(m) && axis_.get(m).constancy[0] >= V_) {
      g.whole = at(m, first);
      return g;
    }
    g.whole = reg(RegClass::pred);
    emit("and.pred {}, {}, {};", g.whole, at(m, first), at(m, first + 1));
    for (int l = 2; l < V_; ++l) emit("and.pred {0}, {0}, {1};", g.whole, at(m, first + l));
    std::string some = reg(RegClass::pred);
    emit("not.pred {}, {};", some, g.whole);
    for (int l = 0; l < V_; ++l) {
      std::string q = reg(RegClass::pred);
      emit("and.pred {}, {}, {};", q, some, at(m, first + l));
      g.lane.push_back(q);
    }
    return g;
  }
  static std::string guarded(const std::string& pred) { return pred.empty() ? "" : "@" + pred + " "; }

  // The registers of `count` consecutive lanes as PTX vector operands, 16-bit lanes paired into
  // 32-bit words (ld/st have no 8-lane 16-bit form).
  struct Words {
    std::vector<std::string> regs;
    int bits;
  };
  Words words_for(const std::vector<std::string>& lanes_regs, DType d, bool pack) {
    RegClass c = reg_class(d);
    if (c != RegClass::b16 || lanes_regs.size() == 1) return {lanes_regs, reg_bits(c)};
    Words w{{}, 32};
    for (size_t i = 0; i < lanes_regs.size(); i += 2) {
      std::string r = reg(RegClass::b32);
      if (pack) emit("mov.b32 {}, {{{}, {}}};", r, lanes_regs[i], lanes_regs[i + 1]);
      w.regs.push_back(r);
    }
    return w;
  }
  static std::string vec(const std::vector<std::string>& regs) {
    if (regs.size() == 1) return regs[0];
    std::string s = "{";
    for (size_t i = 0; i < regs.size(); ++i) s += (i ? ", " : "") + regs[i];
    return s + "}";
  }
  static std::string vsuffix(size_t n) { return n == 1 ? "" : fmt::format(".v{}", n); }

  void load(const ir::Op* op) {
    const ir::Value* p = op->operand(0);
    const DType d = p->type.pointee;
    const bool masked = op->operands.size() > 1, has_other = op->operands.size() > 2;
    const int bits = reg_bits(reg_class(d));
    const std::string q = ptx_cache_qualifier(*op);  // cache hints: ".cg", ".L1::evict_first", ...
    auto initial = [&](int i) {  // what a masked-off lane holds
      std::string r = reg(d);
      if (has_other) emit("mov.b{} {}, {};", bits, r, at(op->operand(2), i));
      else emit("mov.b{} {}, 0;", bits, r);
      return r;
    };
    std::vector<std::string> out;
    if (p->type.is_scalar() || !vector_access(op)) {
      for (int i = 0; i < lanes(op->result()); ++i) {
        std::string r = masked ? initial(i) : reg(d);
        emit("{}ld.global{}.b{} {}, [{}];", masked ? guarded(at(op->operand(1), i)) : "", q, bits, r, at(p, i));
        out.push_back(r);
      }
      vals_[op->result()] = std::move(out);
      return;
    }
    for (int k = 0; k < per_thread_ / V_; ++k) {
      std::vector<std::string> lane_regs;
      for (int l = 0; l < V_; ++l) lane_regs.push_back(masked ? initial(k * V_ + l) : reg(d));
      VectorGuard g = vector_guard(op, 1, k * V_);
      Words w = words_for(lane_regs, d, /*pack=*/masked);
      emit("{}ld.global{}{}.b{} {}, [{}];", guarded(g.whole), q, vsuffix(w.regs.size()), w.bits, vec(w.regs), at(p, k * V_));
      if (w.regs != lane_regs)
        for (size_t j = 0; j < w.regs.size(); ++j)
          emit("mov.b32 {{{}, {}}}, {};", lane_regs[2 * j], lane_regs[2 * j + 1], w.regs[j]);
      for (size_t l = 0; l < g.lane.size(); ++l)
        emit("@{} ld.global{}.b{} {}, [{}];", g.lane[l], q, bits, lane_regs[l], at(p, k * V_ + static_cast<int>(l)));
      out.insert(out.end(), lane_regs.begin(), lane_regs.end());
    }
    vals_[op->result()] = std::move(out);
  }

  void store(const ir::Op* op) {
    const ir::Value* p = op->operand(0);
    const ir::Value* v = op->operand(1);
    const DType d = p->type.pointee;
    const bool masked = op->operands.size() > 2;
    const int bits = reg_bits(reg_class(d));
    const std::string q = ptx_cache_qualifier(*op);
    if (p->type.is_scalar()) {  // one thread stores
      std::string first = reg(RegClass::pred);
      emit("setp.eq.u32 {}, {}, 0;", first, tid_);
      if (masked) emit("and.pred {0}, {0}, {1};", first, at(op->operand(2), 0));
      emit("@{} st.global{}.b{} [{}], {};", first, q, bits, at(p, 0), at(v, 0));
      return;
    }
    if (!vector_access(op)) {
      for (int i = 0; i < per_thread_; ++i)
        emit("{}st.global{}.b{} [{}], {};", masked ? guarded(at(op->operand(2), i)) : "", q, bits, at(p, i), at(v, i));
      return;
    }
    for (int k = 0; k < per_thread_ / V_; ++k) {
      std::vector<std::string> lane_regs;
      for (int l = 0; l < V_; ++l) lane_regs.push_back(at(v, k * V_ + l));
      VectorGuard g = vector_guard(op, 2, k * V_);
      Words w = words_for(lane_regs, d, /*pack=*/true);
      emit("{}st.global{}{}.b{} [{}], {};", guarded(g.whole), q, vsuffix(w.regs.size()), w.bits, at(p, k * V_), vec(w.regs));
      for (size_t l = 0; l < g.lane.size(); ++l)
        emit("@{} st.global{}.b{} [{}], {};", g.lane[l], q, bits, at(p, k * V_ + static_cast<int>(l)), lane_regs[l]);
    }
  }
};

}  // namespace

std::optional<KernelSource> generate_ptx(const ir::Function& f, const AxisInfoMap& axis, const CompileOptions& opts,
                                         const std::string& arch, std::string* declined) {
  try {
    return PtxEmitter(f, axis, opts.num_warps, arch).run();
  } catch (const Declined& d) {
    if (declined) *declined = d.why;
    return std::nullopt;
  }
}

}  // namespace tritium::jit::cuda
