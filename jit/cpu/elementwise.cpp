// The CPU generator's LLVM types, constants and elementwise arithmetic: float and integer ops,
// comparisons, casts (f16, bf16 and fp8 through f32), and exp, log, sin, cos, tanh and erf inline on vectors.
#include "jit/cpu/codegen_impl.h"

#include <llvm/IR/IntrinsicsX86.h>

namespace tritium::jit::cpu::detail {

llvm::Type* Codegen::reg_type(DType d) {
  switch (d) {
    case DType::i1: return b_.getInt1Ty();
    case DType::i8: case DType::u8: case DType::f8e4m3: case DType::f8e5m2: return b_.getInt8Ty();  // fp8: raw bits
    case DType::i16: case DType::u16: case DType::bf16: return b_.getInt16Ty();  // bf16: raw bits
    case DType::i32: case DType::u32: return b_.getInt32Ty();
    case DType::i64: case DType::u64: return b_.getInt64Ty();
    case DType::f16: return b_.getHalfTy();
    case DType::f32: return b_.getFloatTy();
    case DType::f64: return b_.getDoubleTy();
    case DType::ptr: return b_.getPtrTy();
    case DType::invalid: break;
  }
  fail("internal error: no LLVM type for {}", dtype_name(d));
}

llvm::Type* Codegen::shaped(llvm::Type* t, Value* like) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(like->getType())) return vec_of(t, vt->getNumElements());
  return t;
}

int Codegen::width_of(Value* v) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) return static_cast<int>(vt->getNumElements());
  return 0;
}

Value* Codegen::to_f32(Value* v, DType d) {
  auto ci = [&](llvm::Type* t, uint64_t x) { return llvm::ConstantInt::get(t, x); };
  if (d == DType::f16) return b_.CreateFPExt(v, shaped(b_.getFloatTy(), v));
  if (d == DType::bf16) {
    Value* w = b_.CreateZExt(v, shaped(b_.getInt32Ty(), v));
    w = b_.CreateShl(w, llvm::ConstantInt::get(w->getType(), 16));
    return b_.CreateBitCast(w, shaped(b_.getFloatTy(), v));
  }
  if (d == DType::f8e5m2) {  // the high byte of an f16 (infinities and NaNs included)
    Value* h = b_.CreateShl(b_.CreateZExt(v, shaped(b_.getInt16Ty(), v)), ci(shaped(b_.getInt16Ty(), v), 8));
    return b_.CreateFPExt(b_.CreateBitCast(h, shaped(b_.getHalfTy(), v)), shaped(b_.getFloatTy(), v));
  }
  if (d == DType::f8e4m3) {
    // The magnitude's bits shifted into an f16's exponent and mantissa read 2^-8 of the value
    // (subnormals too: f16's bias is 8 more); 0x7f is NaN, the sign goes back on last.
    llvm::Type* i16 = shaped(b_.getInt16Ty(), v);
    llvm::Type* i32 = shaped(b_.getInt32Ty(), v);
    llvm::Type* f32 = shaped(b_.getFloatTy(), v);
    Value* mag = b_.CreateAnd(b_.CreateZExt(v, i16), ci(i16, 0x7f));
    Value* h = b_.CreateBitCast(b_.CreateShl(mag, ci(i16, 7)), shaped(b_.getHalfTy(), v));
    Value* f = b_.CreateFMul(b_.CreateFPExt(h, f32), llvm::ConstantFP::get(f32, 256.0));
    f = b_.CreateSelect(b_.CreateICmpEQ(mag, ci(i16, 0x7f)), llvm::ConstantFP::getNaN(f32), f);
    Value* sign = b_.CreateShl(b_.CreateAnd(b_.CreateZExt(v, i32), ci(i32, 0x80)), ci(i32, 24));
    return b_.CreateBitCast(b_.CreateOr(b_.CreateBitCast(f, i32), sign), f32);
  }
  return v;
}

Value* Codegen::from_f32(Value* v, DType d) {
  if (d == DType::f16) return b_.CreateFPTrunc(v, shaped(b_.getHalfTy(), v));
  if (d == DType::bf16) {  // round to nearest even; NaN stays a quiet NaN
    llvm::Type* it = shaped(b_.getInt32Ty(), v);
    Value* u = b_.CreateBitCast(v, it);
    Value* lsb = b_.CreateAnd(b_.CreateLShr(u, llvm::ConstantInt::get(it, 16)), llvm::ConstantInt::get(it, 1));
    Value* r = b_.CreateAdd(u, b_.CreateAdd(lsb, llvm::ConstantInt::get(it, 0x7fff)));
    r = b_.CreateTrunc(b_.CreateLShr(r, llvm::ConstantInt::get(it, 16)), shaped(b_.getInt16Ty(), v));
    Value* nan = b_.CreateFCmpUNO(v, v);
    return b_.CreateSelect(nan, llvm::ConstantInt::get(r->getType(), 0x7fc0), r);
  }
  if (is_fp8(d)) return f32_to_fp8(v, d);
  return v;
}

Value* Codegen::f32_to_fp8(Value* v, DType d) {
  const bool e4 = d == DType::f8e4m3;
  const int mbits = e4 ? 3 : 2, bias = e4 ? 7 : 15, drop = 23 - mbits;
  llvm::Type* f32 = shaped(b_.getFloatTy(), v);
  llvm::Type* i32 = shaped(b_.getInt32Ty(), v);
  auto ci = [&](uint64_t x) { return llvm::ConstantInt::get(i32, x); };
  auto cf = [&](double x) { return llvm::ConstantFP::get(f32, x); };
  Value* u = b_.CreateBitCast(v, i32);
  Value* sign = b_.CreateLShr(b_.CreateAnd(u, ci(0x80000000u)), ci(24));
  Value* a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v);
  a = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a, cf(e4 ? 448.0 : 57344.0));
  Value* sub = b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b_.CreateFMul(a, cf(std::ldexp(1.0, bias - 1 + mbits))));
  sub = b_.CreateFPToUI(sub, i32);
  Value* ua = b_.CreateBitCast(a, i32);
  Value* r = b_.CreateAdd(ua, b_.CreateAdd(ci((1u << (drop - 1)) - 1), b_.CreateAnd(b_.CreateLShr(ua, ci(drop)), ci(1))));
  Value* norm = b_.CreateSub(b_.CreateLShr(r, ci(drop)), ci(uint64_t(127 - bias) << mbits));
  Value* code = b_.CreateSelect(b_.CreateFCmpOLT(a, cf(std::ldexp(1.0, 1 - bias))), sub, norm);
  code = b_.CreateOr(code, sign);
  code = b_.CreateSelect(b_.CreateFCmpUNO(v, v), ci(0x7f), code);
  return b_.CreateTrunc(code, shaped(b_.getInt8Ty(), v));
}

Value* Codegen::constant(DType d, int64_t ival, double fval, bool is_fp) {
  if (is_float(d)) {
    double x = is_fp ? fval : static_cast<double>(ival);
    if (is_fp8(d)) return b_.getInt8(fp8_from_float(static_cast<float>(x), d));
    if (d == DType::bf16) {
      float f = static_cast<float>(x);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      uint16_t bits = std::isnan(f) ? 0x7fc0 : static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
      return b_.getInt16(bits);
    }
    return llvm::ConstantFP::get(reg_type(d), x);
  }
  if (d == DType::ptr) return llvm::ConstantExpr::getIntToPtr(b_.getInt64(ival), b_.getPtrTy());
  return llvm::ConstantInt::get(reg_type(d), static_cast<uint64_t>(ival), is_signed_int(d));
}

Value* Codegen::constant_of(const ir::Op* op, int w) {
  DType d = op->result()->type.dtype;
  return splat(constant(d, op->attrs.ival, op->attrs.fval, is_float(d)), w);
}

Value* Codegen::call_per_lane(const char* name32, const char* name64, Value* x, DType d) {
  bool dbl = d == DType::f64;
  llvm::Type* st = dbl ? b_.getDoubleTy() : b_.getFloatTy();
  llvm::FunctionCallee fnc = module_->getOrInsertFunction(dbl ? name64 : name32, st, st);
  int w = width_of(x);
  if (w == 0) return b_.CreateCall(fnc, {x});
  Value* out = llvm::UndefValue::get(x->getType());
  for (int i = 0; i < w; ++i) out = b_.CreateInsertElement(out, b_.CreateCall(fnc, {b_.CreateExtractElement(x, i)}), i);
  return out;
}

llvm::Type* Codegen::i32_like(llvm::Type* t) {
  if (auto* v = llvm::dyn_cast<llvm::VectorType>(t)) return llvm::VectorType::get(b_.getInt32Ty(), v);
  return b_.getInt32Ty();
}

Value* Codegen::exp_f32(Value* x) { return exp_f32(x, false); }

Value* Codegen::exp_f32(Value* x, bool base2) {
  llvm::Type* t = x->getType();
  llvm::Type* it = i32_like(t);
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto ci = [&](int v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v), true); };
  auto fma = [&](Value* a, Value* m, Value* add) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {a, m, add});
  };
  // Past hi the result is inf, below lo 0 (2^128 and 2^-150 rounded, in either base).
  const double hi = base2 ? 128.0 : 88.72283935546875, lo = base2 ? -150.0 : -103.97208404541015625;
  Value* xc = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, c(hi)), c(lo));
  Value *n, *r;
  if (base2) {
    // 2^x = 2^n e^(f ln 2), f = x - n exact (|f| <= 1/2); f ln 2 with ln 2 in two parts.
    n = b_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, xc);
    Value* f = b_.CreateFSub(xc, n);
    r = fma(f, c(0.693145751953125), b_.CreateFMul(f, c(1.4286068203094173e-06)));
  } else {
    n = b_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b_.CreateFMul(xc, c(1.44269504088896341)));
    r = fma(n, c(-0.693359375), xc);
    r = fma(n, c(2.12194440e-4), r);
  }
  Value* p = c(1.9875691500e-4);
  for (double k : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1}) p = fma(p, r, c(k));
  Value* y = fma(b_.CreateFMul(p, r), r, b_.CreateFAdd(r, c(1.0)));  // p r^2 + r + 1
  // y 2^n: with AVX-512, one VSCALEFPS (exact, one rounding, subnormal and overflowing results
  // included) for a 16-lane vector, where the portable form below builds two factors from the
  // exponent bits (nine instructions: silu's chunk was 58).
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t);
  if (regs_.bytes >= 64 && vt && vt->getNumElements() == 16) {
    y = b_.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                           {y, n, llvm::UndefValue::get(t), b_.getInt16(0xffff), b_.getInt32(4)});
    y = b_.CreateSelect(b_.CreateFCmpOGT(x, c(hi)), c(INFINITY), y);
    y = b_.CreateSelect(b_.CreateFCmpOLT(x, c(lo)), c(0.0), y);
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);
  }
  Value* ni = b_.CreateFPToSI(n, it);
  Value* n1 = b_.CreateAShr(ni, ci(1)), *n2 = b_.CreateSub(ni, n1);
  auto pow2 = [&](Value* e) { return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, ci(127)), ci(23)), t); };
  y = b_.CreateFMul(b_.CreateFMul(y, pow2(n1)), pow2(n2));
  y = b_.CreateSelect(b_.CreateFCmpOGT(x, c(hi)), c(INFINITY), y);
  y = b_.CreateSelect(b_.CreateFCmpOLT(x, c(lo)), c(0.0), y);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);
}

Value* Codegen::log_f32(Value* x, bool base2) {
  llvm::Type* t = x->getType();
  llvm::Type* it = i32_like(t);
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto ci = [&](int64_t v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v), true); };
  Value* tiny = b_.CreateFCmpOLT(x, c(0x1p-126));  // subnormals (and what the selects below replace)
  Value* xs = b_.CreateSelect(tiny, b_.CreateFMul(x, c(0x1p23)), x);
  Value* u = b_.CreateBitCast(xs, it);
  Value* kb = b_.CreateAnd(b_.CreateSub(u, ci(0x3f400000)), ci(int32_t(0xff800000)));  // k << 23
  Value* f = b_.CreateFSub(b_.CreateBitCast(b_.CreateSub(u, kb), t), c(1.0));          // m - 1, exact
  Value* p = horner({-0.04738242484408123, 0.10625629206036313, -0.13122876906238734, 0.14438456749865944,
                     -0.16647644092244285, 0.1999359250754254, -0.25000153882264686, 0.33333395449384995,
                     -0.4999999979624426},
                    f);  // kLog1pF32, highest power first
  Value* r = b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {b_.CreateFMul(f, p), f, f});  // f + f^2 P(f)
  Value* k = b_.CreateSIToFP(kb, t);  // k 2^23, exact (|k| <= 149)
  k = b_.CreateSelect(tiny, b_.CreateFSub(k, c(23.0 * 0x1p23)), k);
  Value* y = base2 ? b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {r, c(1.4426950408889634), b_.CreateFMul(k, c(0x1p-23))})
                   : b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {k, c(0.6931471805599453 * 0x1p-23), r});
  y = b_.CreateSelect(b_.CreateFCmpOEQ(x, c(INFINITY)), c(INFINITY), y);
  y = b_.CreateSelect(b_.CreateFCmpOEQ(x, c(0.0)), c(-INFINITY), y);
  y = b_.CreateSelect(b_.CreateFCmpOLT(x, c(0.0)), c(NAN), y);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);
}

Value* Codegen::sincos_f32(Value* x, bool cosine) {
  llvm::Type* t = x->getType();
  llvm::Type* it = i32_like(t);
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto ci = [&](int v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v), true); };
  auto fma = [&](Value* a, Value* m, Value* add) { return b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {a, m, add}); };
  Value* j = b_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b_.CreateFMul(x, c(0.63661977236758134308)));
  Value* nj = b_.CreateFNeg(j);
  // pi / 2 = 1.5703125 + p2 + p3 + 8.3e-20 (p2, p3 floats): j 1.5703125 is exact (8 significant
  // bits, |j| < 2^16), each FMA rounds once at r's scale, and the 8.3e-20 j left out is far below an
  // ulp of r even next to a zero of sin or cos (tan's poles: tests/test_ops_unary_math.cpp).
  Value* r = fma(nj, c(1.5703125), x);
  r = fma(nj, c(4.838267923332751e-4), r);
  r = fma(nj, c(2.5633440682570896e-12), r);
  Value* z = b_.CreateFMul(r, r);
  Value* s = fma(b_.CreateFMul(horner({-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1}, z), z), r, r);
  Value* k = fma(b_.CreateFMul(horner({2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2}, z), z), z,
                 fma(z, c(-0.5), c(1.0)));
  Value* q = b_.CreateFPToSI(j, it);
  if (cosine) q = b_.CreateAdd(q, ci(1));
  Value* odd = b_.CreateICmpNE(b_.CreateAnd(q, ci(1)), ci(0));
  Value* y = b_.CreateSelect(odd, k, s);
  Value* neg = b_.CreateICmpNE(b_.CreateAnd(q, ci(2)), ci(0));
  y = b_.CreateSelect(neg, b_.CreateFNeg(y), y);
  if (!cosine) y = b_.CreateSelect(b_.CreateFCmpOEQ(x, c(0.0)), x, y);  // sin(-0) = -0 (r lost the sign)
  // Past 65536 (infinities too; NaN is not: its r, and so y, is NaN) libm, lane by lane.
  Value* big = b_.CreateFCmpOGT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), c(65536.0));
  Value* any_big = t->isVectorTy() ? b_.CreateOrReduce(big) : big;
  llvm::BasicBlock* fast_bb = b_.GetInsertBlock();
  auto* slow_bb = llvm::BasicBlock::Create(ctx_, "trig.big", fn_);
  auto* cont = llvm::BasicBlock::Create(ctx_, "trig.end", fn_);
  b_.CreateCondBr(any_big, slow_bb, cont);
  b_.SetInsertPoint(slow_bb);
  Value* slow = b_.CreateSelect(big, call_per_lane(cosine ? "cosf" : "sinf", cosine ? "cos" : "sin", x, DType::f32), y);
  llvm::BasicBlock* slow_end = b_.GetInsertBlock();
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
  llvm::PHINode* out = b_.CreatePHI(t, 2);
  out->addIncoming(y, fast_bb);
  out->addIncoming(slow, slow_end);
  return out;
}

Value* Codegen::horner(std::initializer_list<double> cs, Value* x) {
  llvm::Type* t = x->getType();
  auto it = cs.begin();
  Value* p = llvm::ConstantFP::get(t, *it++);
  for (; it != cs.end(); ++it)
    p = b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {p, x, llvm::ConstantFP::get(t, *it)});
  return p;
}

Value* Codegen::tanh_f32(Value* x) {
  llvm::Type* t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  Value* s = b_.CreateFMul(x, x);
  Value* p = horner({-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1}, s);
  Value* small = b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {b_.CreateFMul(p, s), x, x});
  Value* e = exp_f32(b_.CreateFMul(ax, c(2.0)));
  Value* big = b_.CreateFSub(c(1.0), b_.CreateFDiv(c(2.0), b_.CreateFAdd(e, c(1.0))));
  big = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
  Value* r = b_.CreateSelect(b_.CreateFCmpOGT(ax, c(0.625)), big, small);
  return b_.CreateSelect(b_.CreateFCmpOEQ(x, c(0.0)), x, r);
}

Value* Codegen::erf_f32(Value* x) {
  llvm::Type* t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  Value* small = b_.CreateFMul(x, horner({-0.0006008741911500692, 0.00499701639637351, -0.026769503951072693,
                                            0.11281905323266983, -0.3761250376701355, 1.1283791065216064},
                                           b_.CreateFMul(x, x)));
  Value* r = horner({-2.7327868679094536e-07, -1.7692525943857618e-05, 0.0004163692065048963, -0.00411737198010087,
                     0.02502213977277279, -0.1081698015332222, -0.6334233283996582, -1.1294852495193481,
                     0.00016976200276985765},
                    b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, ax, c(4.0)));
  Value* big = b_.CreateFSub(c(1.0), exp_f32(r));
  big = b_.CreateSelect(b_.CreateFCmpOGE(ax, c(4.0)), c(1.0), big);
  big = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
  Value* y = b_.CreateSelect(b_.CreateFCmpOLE(ax, c(0.921875)), small, big);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);  // minnum above would turn NaN into 4
}

Value* Codegen::float_op(OpKind k, std::vector<Value*> x, DType d) {
  bool half = is_narrow_float(d);
  if (half)
    for (auto& v : x) v = to_f32(v, d);
  Value* r = nullptr;
  auto un = [&](llvm::Intrinsic::ID id) { return b_.CreateUnaryIntrinsic(id, x[0]); };
  switch (k) {
    case OpKind::Add: r = b_.CreateFAdd(x[0], x[1]); break;
    case OpKind::Sub: r = b_.CreateFSub(x[0], x[1]); break;
    case OpKind::Mul: r = b_.CreateFMul(x[0], x[1]); break;
    case OpKind::Div: r = b_.CreateFDiv(x[0], x[1]); break;
    case OpKind::Rem: r = b_.CreateFRem(x[0], x[1]); break;
    case OpKind::Neg: r = b_.CreateFNeg(x[0]); break;
    case OpKind::Min: r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x[0], x[1]); break;
    case OpKind::Max: r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x[0], x[1]); break;
    case OpKind::Fma: r = b_.CreateIntrinsic(llvm::Intrinsic::fma, {x[0]->getType()}, {x[0], x[1], x[2]}); break;
    case OpKind::Exp: r = x[0]->getType()->getScalarType()->isFloatTy() ? exp_f32(x[0]) : un(llvm::Intrinsic::exp); break;
    case OpKind::Exp2: r = x[0]->getType()->getScalarType()->isFloatTy() ? exp_f32(x[0], true) : un(llvm::Intrinsic::exp2); break;
    case OpKind::Log: r = x[0]->getType()->getScalarType()->isFloatTy() ? log_f32(x[0], false) : un(llvm::Intrinsic::log); break;
    case OpKind::Log2: r = x[0]->getType()->getScalarType()->isFloatTy() ? log_f32(x[0], true) : un(llvm::Intrinsic::log2); break;
    case OpKind::Sqrt: r = un(llvm::Intrinsic::sqrt); break;
    case OpKind::Rsqrt: r = b_.CreateFDiv(llvm::ConstantFP::get(x[0]->getType(), 1.0), un(llvm::Intrinsic::sqrt)); break;
    case OpKind::Rcp: r = b_.CreateFDiv(llvm::ConstantFP::get(x[0]->getType(), 1.0), x[0]); break;
    case OpKind::Abs: r = un(llvm::Intrinsic::fabs); break;
    case OpKind::Floor: r = un(llvm::Intrinsic::floor); break;
    case OpKind::Ceil: r = un(llvm::Intrinsic::ceil); break;
    case OpKind::Sin: r = x[0]->getType()->getScalarType()->isFloatTy() ? sincos_f32(x[0], false) : un(llvm::Intrinsic::sin); break;
    case OpKind::Cos: r = x[0]->getType()->getScalarType()->isFloatTy() ? sincos_f32(x[0], true) : un(llvm::Intrinsic::cos); break;
    case OpKind::Tanh:
      r = x[0]->getType()->getScalarType()->isFloatTy() ? tanh_f32(x[0]) : call_per_lane("tanhf", "tanh", x[0], d);
      break;
    case OpKind::Erf:
      r = x[0]->getType()->getScalarType()->isFloatTy() ? erf_f32(x[0]) : call_per_lane("erff", "erf", x[0], d);
      break;
    case OpKind::Sigmoid: {
      Value* one = llvm::ConstantFP::get(x[0]->getType(), 1.0);
      Value* neg = b_.CreateFNeg(x[0]);
      Value* e = neg->getType()->getScalarType()->isFloatTy() ? exp_f32(neg) : b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, neg);
      r = b_.CreateFDiv(one, b_.CreateFAdd(one, e));
      break;
    }
    default: fail("internal error: {} is not a float op", ir::op_name(k));
  }
  return half ? from_f32(r, d) : r;
}

Value* Codegen::int_op(OpKind k, std::vector<Value*> x, DType d) {
  bool sgn = is_signed_int(d);
  llvm::Type* t = x[0]->getType();
  auto c = [&](int64_t v) { return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), true); };
  int bits = dtype_bits(d);
  switch (k) {
    case OpKind::Add: return b_.CreateAdd(x[0], x[1]);
    case OpKind::Sub: return b_.CreateSub(x[0], x[1]);
    case OpKind::Mul: return b_.CreateMul(x[0], x[1]);
    case OpKind::Div: case OpKind::Rem: {
      // Division by zero (and INT_MIN / -1) would trap on x86: such lanes get an unspecified
      // value instead, as on a GPU, rather than killing the process.
      Value* zero = b_.CreateICmpEQ(x[1], c(0));
      Value* d1 = b_.CreateSelect(zero, c(1), x[1]);
      if (!sgn) return k == OpKind::Div ? b_.CreateUDiv(x[0], d1) : b_.CreateURem(x[0], d1);
      Value* minus1 = b_.CreateICmpEQ(d1, c(-1));
      Value* d2 = b_.CreateSelect(minus1, c(1), d1);
      if (k == OpKind::Div) return b_.CreateSelect(minus1, b_.CreateNeg(x[0]), b_.CreateSDiv(x[0], d2));
      return b_.CreateSelect(minus1, c(0), b_.CreateSRem(x[0], d2));
    }
    case OpKind::Neg: return b_.CreateNeg(x[0]);
    case OpKind::Abs: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x[0], b_.getFalse());
    case OpKind::Min: return b_.CreateBinaryIntrinsic(sgn ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, x[0], x[1]);
    case OpKind::Max: return b_.CreateBinaryIntrinsic(sgn ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x[0], x[1]);
    case OpKind::And: return b_.CreateAnd(x[0], x[1]);
    case OpKind::Or: return b_.CreateOr(x[0], x[1]);
    case OpKind::Xor: return b_.CreateXor(x[0], x[1]);
    case OpKind::Not: return b_.CreateNot(x[0]);
    case OpKind::Shl: case OpKind::Shr: {
      Value* big = b_.CreateICmpUGE(x[1], c(bits));
      if (k == OpKind::Shl) return b_.CreateSelect(big, c(0), b_.CreateShl(x[0], x[1]));
      if (!sgn) return b_.CreateSelect(big, c(0), b_.CreateLShr(x[0], x[1]));
      return b_.CreateAShr(x[0], b_.CreateSelect(big, c(bits - 1), x[1]));
    }
    case OpKind::Umulhi: {
      llvm::Type* wide = shaped(b_.getIntNTy(bits * 2), x[0]);
      Value* p = b_.CreateMul(b_.CreateZExt(x[0], wide), b_.CreateZExt(x[1], wide));
      return b_.CreateTrunc(b_.CreateLShr(p, llvm::ConstantInt::get(wide, bits)), t);
    }
    default: fail("internal error: {} is not an integer op", ir::op_name(k));
  }
}

Value* Codegen::compare(OpKind k, Value* a, Value* bv, DType d) {
  if (is_float(d)) {
    a = to_f32(a, d), bv = to_f32(bv, d);
    switch (k) {
      case OpKind::CmpEq: return b_.CreateFCmpOEQ(a, bv);
      case OpKind::CmpNe: return b_.CreateFCmpUNE(a, bv);
      case OpKind::CmpLt: return b_.CreateFCmpOLT(a, bv);
      case OpKind::CmpLe: return b_.CreateFCmpOLE(a, bv);
      case OpKind::CmpGt: return b_.CreateFCmpOGT(a, bv);
      default: return b_.CreateFCmpOGE(a, bv);
    }
  }
  bool sgn = is_signed_int(d);
  switch (k) {
    case OpKind::CmpEq: return b_.CreateICmpEQ(a, bv);
    case OpKind::CmpNe: return b_.CreateICmpNE(a, bv);
    case OpKind::CmpLt: return sgn ? b_.CreateICmpSLT(a, bv) : b_.CreateICmpULT(a, bv);
    case OpKind::CmpLe: return sgn ? b_.CreateICmpSLE(a, bv) : b_.CreateICmpULE(a, bv);
    case OpKind::CmpGt: return sgn ? b_.CreateICmpSGT(a, bv) : b_.CreateICmpUGT(a, bv);
    default: return sgn ? b_.CreateICmpSGE(a, bv) : b_.CreateICmpUGE(a, bv);
  }
}

Value* Codegen::cast(Value* v, DType from, DType to) {
  if (from == to) return v;
  if (from == DType::ptr) return b_.CreateIntCast(b_.CreatePtrToInt(v, shaped(b_.getInt64Ty(), v)), shaped(reg_type(to), v), false);
  if (to == DType::ptr) return b_.CreateIntToPtr(b_.CreateIntCast(v, shaped(b_.getInt64Ty(), v), is_signed_int(from)), shaped(b_.getPtrTy(), v));
  llvm::Type* target = shaped(reg_type(to), v);
  if (to == DType::i1) {
    if (is_float(from)) return b_.CreateFCmpUNE(to_f32(v, from), llvm::Constant::getNullValue(shaped(is_narrow_float(from) ? b_.getFloatTy() : reg_type(from), v)));
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (is_int(from) && is_int(to)) return b_.CreateIntCast(v, target, is_signed_int(from));
  if (is_int(from)) {  // int -> float
    llvm::Type* ft = shaped(is_narrow_float(to) ? b_.getFloatTy() : reg_type(to), v);
    Value* r = is_signed_int(from) ? b_.CreateSIToFP(v, ft) : b_.CreateUIToFP(v, ft);
    return is_narrow_float(to) ? from_f32(r, to) : r;
  }
  if (is_int(to)) {  // float -> int, saturating (defined for out-of-range and NaN)
    Value* x = to_f32(v, from);
    auto id = is_signed_int(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
    return b_.CreateIntrinsic(id, {target, x->getType()}, {x});
  }
  // float -> float
  Value* x = to_f32(v, from);
  if (to == DType::f64) return b_.CreateFPExt(x, target);
  if (from == DType::f64) x = b_.CreateFPTrunc(x, shaped(b_.getFloatTy(), v));
  return to == DType::f32 ? x : from_f32(x, to);
}

Value* Codegen::elementwise(const ir::Op* op, const std::vector<Value*>& x) {
  OpKind k = op->kind;
  DType d = op->operand(0)->type.dtype;
  DType rd = op->result()->type.dtype;
  switch (k) {
    case OpKind::CmpEq: case OpKind::CmpNe: case OpKind::CmpLt: case OpKind::CmpLe: case OpKind::CmpGt:
    case OpKind::CmpGe:
      return compare(k, x[0], x[1], d);
    case OpKind::Select: return b_.CreateSelect(x[0], x[1], x[2]);
    case OpKind::Cast: return cast(x[0], d, rd);
    case OpKind::Bitcast: return b_.CreateBitCast(x[0], shaped(reg_type(rd), x[0]));
    case OpKind::AddPtr: {
      DType od = op->operand(1)->type.dtype;
      Value* off = b_.CreateIntCast(x[1], shaped(b_.getInt64Ty(), x[1]), is_signed_int(od));
      return b_.CreateGEP(mem_type(op->operand(0)->type.pointee), x[0], off);
    }
    default: break;
  }
  if (is_float(d)) return float_op(k, x, d);
  return int_op(k, x, d);
}

}  // namespace tritium::jit::cpu::detail
