// Loop nests in two versions on their bounds masks (codegen_impl.h, "mask versioning"): integer
// ranges of block values over a whole block, the test that a mask is on in every lane, and the
// emission of a nest once under that test (the masks known true) and once without.
#include "jit/cpu/codegen_impl.h"

namespace tritium::jit::cpu::detail {
namespace {

// Below this many vector chunks the per-chunk masks cost little and a second copy of the nest
// would only cost compile time.
constexpr int64_t kMinVersionedChunks = 4;

bool is_shape_op(OpKind k) {
  return k == OpKind::Broadcast || k == OpKind::ExpandDims || k == OpKind::Reshape || k == OpKind::Permute ||
         k == OpKind::MultipleOf || k == OpKind::MaxContiguous;
}

bool is_integer(DType d) { return is_signed_int(d) || is_unsigned_int(d); }

}  // namespace

Value* Codegen::wide_int(Value* v, DType d) {
  llvm::Type* t = b_.getInt128Ty();
  return is_unsigned_int(d) ? b_.CreateZExt(v, t) : b_.CreateSExt(v, t);
}

std::optional<Codegen::IntRange> Codegen::int_range(const ir::Value* v, std::vector<Value*>& valid) {
  const DType d = v->type.dtype;
  if (!is_integer(d)) return std::nullopt;
  if (v->type.is_scalar()) {
    auto it = scalars_.find(v);
    if (it == scalars_.end()) return std::nullopt;  // not emitted here (a loop-carried block's scalar view)
    Value* x = wide_int(it->second, d);
    return IntRange{x, x};
  }
  const ir::Op* op = v->def;
  if (!op) return std::nullopt;  // a region argument: a loop-carried block
  auto c128 = [&](int64_t x) -> Value* { return llvm::ConstantInt::get(b_.getInt128Ty(), x, true); };
  auto smin = [&](Value* a, Value* b) { return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, b); };
  auto smax = [&](Value* a, Value* b) { return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, b); };
  // Every element's exact value lies in the range; the IR's arithmetic computes it exactly (does
  // not wrap) when the range lies within the result's dtype.
  auto checked = [&](IntRange r) -> std::optional<IntRange> {
    const int bits = dtype_bits(d);
    llvm::APInt lo = is_unsigned_int(d) ? llvm::APInt::getMinValue(bits) : llvm::APInt::getSignedMinValue(bits);
    llvm::APInt hi = is_unsigned_int(d) ? llvm::APInt::getMaxValue(bits) : llvm::APInt::getSignedMaxValue(bits);
    lo = is_unsigned_int(d) ? lo.zext(128) : lo.sext(128);
    hi = is_unsigned_int(d) ? hi.zext(128) : hi.sext(128);
    valid.push_back(b_.CreateICmpSGE(r.lo, llvm::ConstantInt::get(b_.getInt128Ty(), lo)));
    valid.push_back(b_.CreateICmpSLE(r.hi, llvm::ConstantInt::get(b_.getInt128Ty(), hi)));
    return r;
  };
  auto operand = [&](size_t i) { return int_range(op->operand(i), valid); };
  switch (op->kind) {
    case OpKind::Constant: {
      const unsigned bits = static_cast<unsigned>(dtype_bits(d));
      llvm::APInt c(bits, static_cast<uint64_t>(op->attrs.ival), is_signed_int(d));
      Value* x = llvm::ConstantInt::get(b_.getInt128Ty(), is_unsigned_int(d) ? c.zext(128) : c.sext(128));
      return IntRange{x, x};
    }
    case OpKind::Arange: return IntRange{c128(op->attrs.ints[0]), c128(op->attrs.ints[1] - 1)};
    case OpKind::Splat: return operand(0);
    case OpKind::Cast: {
      if (!is_integer(op->operand(0)->type.dtype)) return std::nullopt;
      auto x = operand(0);
      if (!x) return std::nullopt;
      return checked(*x);
    }
    case OpKind::Add: case OpKind::Sub: {
      auto x = operand(0), y = operand(1);
      if (!x || !y) return std::nullopt;
      if (op->kind == OpKind::Add) return checked({b_.CreateAdd(x->lo, y->lo), b_.CreateAdd(x->hi, y->hi)});
      return checked({b_.CreateSub(x->lo, y->hi), b_.CreateSub(x->hi, y->lo)});
    }
    case OpKind::Mul: {
      auto x = operand(0), y = operand(1);
      if (!x || !y) return std::nullopt;
      // Factors within [-2^63, 2^63): products below 2^126 in magnitude, exact in i128 (two u64
      // factors near 2^64 would wrap it).
      const llvm::APInt lim = llvm::APInt::getOneBitSet(128, 63);
      Value* l = llvm::ConstantInt::get(b_.getInt128Ty(), lim), *nl = llvm::ConstantInt::get(b_.getInt128Ty(), -lim);
      for (const IntRange* f : {&*x, &*y}) {
        valid.push_back(b_.CreateICmpSGE(f->lo, nl));
        valid.push_back(b_.CreateICmpSLT(f->hi, l));
      }
      Value* p[4] = {b_.CreateMul(x->lo, y->lo), b_.CreateMul(x->lo, y->hi), b_.CreateMul(x->hi, y->lo),
                     b_.CreateMul(x->hi, y->hi)};
      return checked({smin(smin(p[0], p[1]), smin(p[2], p[3])), smax(smax(p[0], p[1]), smax(p[2], p[3]))});
    }
    case OpKind::Div: {
      // By a divisor of at least 1, truncating division is non-decreasing in the dividend.
      auto x = operand(0), y = operand(1);
      if (!x || !y) return std::nullopt;
      // The quotient moves towards zero as the divisor grows: the extremes are the dividend's with
      // the largest divisor (a non-negative dividend's minimum, a negative one's maximum) or the
      // smallest.
      valid.push_back(b_.CreateICmpSGE(y->lo, c128(1)));
      Value* small = smax(y->lo, c128(1));  // at least 1 whatever the test says: no division by 0
      Value* large = smax(y->hi, c128(1));
      auto at = [&](Value* n, Value* if_nonneg, Value* if_neg) {
        return b_.CreateSDiv(n, b_.CreateSelect(b_.CreateICmpSGE(n, c128(0)), if_nonneg, if_neg));
      };
      return checked({at(x->lo, large, small), at(x->hi, small, large)});
    }
    case OpKind::Rem: {
      // A non-negative dividend and a divisor of at least 1: [0, min(x, divisor - 1)].
      auto x = operand(0), y = operand(1);
      if (!x || !y) return std::nullopt;
      valid.push_back(b_.CreateICmpSGE(x->lo, c128(0)));
      valid.push_back(b_.CreateICmpSGE(y->lo, c128(1)));
      return IntRange{c128(0), smin(x->hi, b_.CreateSub(y->hi, c128(1)))};
    }
    case OpKind::Min: case OpKind::Max: {
      auto x = operand(0), y = operand(1);
      if (!x || !y) return std::nullopt;
      if (op->kind == OpKind::Min) return IntRange{smin(x->lo, y->lo), smin(x->hi, y->hi)};
      return IntRange{smax(x->lo, y->lo), smax(x->hi, y->hi)};
    }
    case OpKind::Select: {
      auto x = operand(1), y = operand(2);
      if (!x || !y) return std::nullopt;
      return IntRange{smin(x->lo, y->lo), smax(x->hi, y->hi)};
    }
    default: break;
  }
  if (is_shape_op(op->kind)) return operand(0);
  return std::nullopt;
}

Value* Codegen::all_true_test(const ir::Value* mask) {
  if (known_true_.count(mask)) return b_.getTrue();
  if (mask->type.dtype != DType::i1) return nullptr;
  if (mask->type.is_scalar()) {
    auto it = scalars_.find(mask);
    return it == scalars_.end() ? nullptr : it->second;
  }
  const ir::Op* op = mask->def;
  if (!op) return nullptr;
  switch (op->kind) {
    case OpKind::Constant: return b_.getInt1(op->attrs.ival != 0);
    case OpKind::Splat: return all_true_test(op->operand(0));
    case OpKind::And: {
      Value* a = all_true_test(op->operand(0));
      Value* c = a ? all_true_test(op->operand(1)) : nullptr;
      return c ? b_.CreateAnd(a, c) : nullptr;
    }
    case OpKind::Or: {  // either side on everywhere is enough
      Value* a = all_true_test(op->operand(0));
      Value* c = all_true_test(op->operand(1));
      return a && c ? b_.CreateOr(a, c) : a ? a : c;
    }
    case OpKind::CmpLt: case OpKind::CmpLe: case OpKind::CmpGt: case OpKind::CmpGe: case OpKind::CmpNe: {
      std::vector<Value*> valid;
      auto x = int_range(op->operand(0), valid), y = int_range(op->operand(1), valid);
      if (!x || !y) return nullptr;
      Value* t;
      switch (op->kind) {
        case OpKind::CmpLt: t = b_.CreateICmpSLT(x->hi, y->lo); break;
        case OpKind::CmpLe: t = b_.CreateICmpSLE(x->hi, y->lo); break;
        case OpKind::CmpGt: t = b_.CreateICmpSGT(x->lo, y->hi); break;
        case OpKind::CmpGe: t = b_.CreateICmpSGE(x->lo, y->hi); break;
        default: t = b_.CreateOr(b_.CreateICmpSLT(x->hi, y->lo), b_.CreateICmpSGT(x->lo, y->hi)); break;
      }
      for (Value* c : valid) t = b_.CreateAnd(t, c);
      return t;
    }
    default: break;
  }
  if (is_shape_op(op->kind)) return all_true_test(op->operand(0));
  return nullptr;
}

void Codegen::collect_masks(const ir::Value* v, std::vector<const ir::Value*>& out,
                            std::unordered_set<const ir::Value*>& seen) {
  if (v->type.is_scalar() || !v->def || buffers_.count(v) || !seen.insert(v).second) return;
  const ir::Op* op = v->def;
  if (op->kind == OpKind::Load && op->operands.size() > 1) out.push_back(op->operand(1));
  if (op->kind == OpKind::Load || ir::is_elementwise(op->kind) || is_shape_op(op->kind) || op->kind == OpKind::Join)
    for (const ir::Value* o : op->operands) collect_masks(o, out, seen);
}

std::vector<Value*> Codegen::versioned_on_masks(std::vector<const ir::Value*> masks,
                                                const std::vector<const ir::Value*>& roots, int64_t chunks,
                                                const std::function<std::vector<Value*>()>& emit) {
  if (chunks < kMinVersionedChunks) return emit();
  std::unordered_set<const ir::Value*> seen;
  for (const ir::Value* r : roots) collect_masks(r, masks, seen);
  std::vector<const ir::Value*> proven;
  Value* test = nullptr;
  for (const ir::Value* m : masks) {
    if (known_true_.count(m) || std::find(proven.begin(), proven.end(), m) != proven.end()) continue;
    Value* t = all_true_test(m);
    if (!t) continue;
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(t); c && c->isZero()) continue;  // never on everywhere
    proven.push_back(m);
    if (!llvm::isa<llvm::Constant>(t)) test = test ? b_.CreateAnd(test, t) : t;
  }
  auto with_known = [&] {
    for (const ir::Value* m : proven) known_true_.insert(m);
    std::vector<Value*> r = emit();
    for (const ir::Value* m : proven) known_true_.erase(m);
    return r;
  };
  if (proven.empty()) return emit();
  if (!test) return with_known();  // masks that are constants
  auto* whole_bb = llvm::BasicBlock::Create(ctx_, "block.whole", fn_);
  auto* edge_bb = llvm::BasicBlock::Create(ctx_, "block.edge", fn_);
  auto* cont = llvm::BasicBlock::Create(ctx_, "block.end", fn_);
  b_.CreateCondBr(test, whole_bb, edge_bb);
  b_.SetInsertPoint(whole_bb);
  std::vector<Value*> whole = with_known();
  llvm::BasicBlock* whole_end = b_.GetInsertBlock();
  b_.CreateBr(cont);
  b_.SetInsertPoint(edge_bb);
  std::vector<Value*> edge = emit();
  llvm::BasicBlock* edge_end = b_.GetInsertBlock();
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
  std::vector<Value*> out;
  for (size_t i = 0; i < whole.size(); ++i) {
    llvm::PHINode* phi = b_.CreatePHI(whole[i]->getType(), 2);
    phi->addIncoming(whole[i], whole_end);
    phi->addIncoming(edge[i], edge_end);
    out.push_back(phi);
  }
  return out;
}

bool Codegen::all_lanes_on(Value* mask) {
  auto* c = llvm::dyn_cast_or_null<llvm::Constant>(mask);
  return c && c->isAllOnesValue();
}

}  // namespace tritium::jit::cpu::detail
