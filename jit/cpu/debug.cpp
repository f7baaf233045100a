// device_print and device_assert in the CPU generator (calls back into cpu_runtime.cpp).
#include "jit/cpu/codegen_impl.h"

namespace tritium::jit::cpu::detail {

void Codegen::emit_print(const ir::Op* op) {
  llvm::FunctionCallee fnc = module_->getOrInsertFunction(
      kPrintSymbol, b_.getVoidTy(), b_.getPtrTy(), b_.getPtrTy(), b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty(),
      b_.getInt32Ty(), b_.getInt64Ty(), b_.getInt32Ty(), b_.getInt64Ty(), b_.getDoubleTy());
  Value* prefix = global_string(op->attrs.str);
  if (op->operands.empty()) {
    b_.CreateCall(fnc, {launch_, prefix, pid_[0], pid_[1], pid_[2], i32(-1), b_.getInt64(-1), i32(-1), b_.getInt64(0),
                        llvm::ConstantFP::get(b_.getDoubleTy(), 0.0)});
    return;
  }
  for (size_t oi = 0; oi < op->operands.size(); ++oi) {
    const ir::Value* v = op->operands[oi];
    DType d = v->type.dtype;
    int kind = is_float(d) ? 2 : d == DType::ptr ? 3 : d == DType::i1 ? 4 : is_unsigned_int(d) ? 1 : 0;
    auto print_one = [&](Value* x, Value* linear) {
      Value* iv = b_.getInt64(0);
      Value* fv = llvm::ConstantFP::get(b_.getDoubleTy(), 0.0);
      if (is_float(d)) fv = cast(x, d, DType::f64);
      else if (d == DType::ptr) iv = b_.CreatePtrToInt(x, b_.getInt64Ty());
      else iv = b_.CreateIntCast(x, b_.getInt64Ty(), is_signed_int(d));
      b_.CreateCall(fnc, {launch_, prefix, pid_[0], pid_[1], pid_[2], i32(static_cast<int64_t>(oi)), linear, i32(kind), iv, fv});
    };
    if (v->type.is_scalar()) {
      print_one(scalar(v), b_.getInt64(-1));
      continue;
    }
    loop_nest(v->type.shape, 1, [&](const Index& idx) {
      Value* x = b_.CreateExtractElement(eval(v, idx, 1), uint64_t(0));
      VIdx flat = flatten(idx, v->type.shape, 1);
      print_one(x, b_.CreateSExt(flat.base, b_.getInt64Ty()));
    });
  }
}

void Codegen::emit_assert(const ir::Op* op) {
  llvm::Type* i64t = b_.getInt64Ty();
  llvm::Type* i32t = b_.getInt32Ty();
  llvm::FunctionCallee fnc = module_->getOrInsertFunction(kAssertSymbol, b_.getVoidTy(), b_.getPtrTy(), b_.getPtrTy(),
                                                          i64t, i32t, i32t, i32t, i64t, i64t, i64t, i64t);
  const ir::Value* c = op->operand(0);
  Value* msg = global_string(op->attrs.str);
  Value* kind = b_.getInt64(op->attrs.ints.empty() ? 0 : op->attrs.ints[0]);
  auto widen = [&](Value* v, const ir::Value* p) {
    return v->getType()->isIntegerTy(64) ? v : b_.CreateIntCast(v, i64t, is_signed_int(p->type.dtype));
  };
  // The element of `v` (a vector of w lanes, or a scalar) at `lane`.
  auto at = [&](Value* v, Value* lane) { return v->getType()->isVectorTy() ? b_.CreateExtractElement(v, lane) : v; };
  auto report = [&](Value* lane, const std::function<Value*(const ir::Value*)>& payload_at) {
    std::vector<Value*> args{launch_, msg, kind, pid_[0], pid_[1], pid_[2], lane};
    for (size_t i = 1; i < 4; ++i) args.push_back(i < op->operands.size() ? widen(payload_at(op->operand(i)), op->operand(i)) : b_.getInt64(0));
    b_.CreateCall(fnc, args);
  };
  if (c->type.is_scalar()) {
    guarded(b_.CreateNot(scalar(c)), [&] { report(b_.getInt64(-1), [&](const ir::Value* p) { return scalar(p); }); });
    return;
  }
  int w = lanes_for(c->type.shape);
  loop_nest(c->type.shape, w, [&](const Index& idx) {
    Value* ok = eval(c, idx, w);
    Value* all = ok->getType()->isVectorTy() ? b_.CreateAndReduce(ok) : ok;
    guarded(b_.CreateNot(all), [&] {
      Value* first = b_.getInt32(0);
      if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(ok->getType()); vt && vt->getNumElements() > 1) {
        Value* bits = b_.CreateBitCast(b_.CreateNot(ok), b_.getIntNTy(vt->getNumElements()));
        first = b_.CreateIntCast(b_.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, bits, b_.getTrue()), i32t, false);
      }
      Value* lane = b_.CreateSExt(at(lane_vector(flatten(idx, c->type.shape, w), w), first), i64t);
      report(lane, [&](const ir::Value* p) { return p->type.is_scalar() ? scalar(p) : at(eval(p, idx, w), first); });
    });
  });
}

}  // namespace tritium::jit::cpu::detail
