// Global memory in the CPU generator: loads (one masked vector access where the pointer is
// contiguous along the chunk, else gathers), stores, scalar loads and atomics.
#include "jit/cpu/codegen_impl.h"

namespace tritium::jit::cpu::detail {

int Codegen::lane_dim(const Index& idx, int w) {
  int dim = -1;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (idx[d].vec) return -2;
    if (idx[d].stride == 0) continue;
    if (dim >= 0 || idx[d].stride != 1 || idx[d].align % w != 0) return -2;
    dim = static_cast<int>(d);
  }
  return dim;
}

bool Codegen::contiguous(const ir::Value* ptr, const Index& idx, int w) {
  if (w == 1) return true;
  // The lanes move along one dim (the last one, or another in a transposed materialisation).
  const int d = lane_dim(idx, w);
  return d >= 0 && axis_.get(ptr).contiguity[d] >= w;
}

Value* Codegen::first_lane_pointer(const ir::Value* ptr, const Index& idx) {
  return b_.CreateExtractElement(eval(ptr, idx, 1), uint64_t(0));
}

bool Codegen::same_element(const ir::Value* ptr, const Index& idx, int w) {
  if (w <= 1) return false;
  if (uniform(idx)) return true;
  // The lanes move along one dim over which the pointer's axis info says groups of at least w
  // aligned elements are equal: a broadcast operand.
  const int d = lane_dim(idx, w);
  return d >= 0 && axis_.get(ptr).constancy[d] >= w;
}

bool Codegen::uniform(const Index& idx) {
  for (const VIdx& x : idx)
    if (x.vec || x.stride != 0) return false;
  return true;
}

Value* Codegen::eval_load(const ir::Op* op, const Index& idx, int w) {
  const ir::Value* p = op->operand(0);
  DType d = p->type.pointee;
  llvm::Type* mt = mem_type(d);
  bool has_mask = op->operands.size() > 1, has_other = op->operands.size() > 2;
  const bool vector_access = contiguous(p, idx, w), one_element = !vector_access && same_element(p, idx, w);
  // A load along an exact lane pattern needs no vector of the lanes' addresses (lane_patterns.cpp).
  std::optional<LanePattern> pat;
  if (!vector_access && !one_element) {
    pat = lane_pattern(p, idx, w);
    if (pat && !pattern_worth_loading(pat->offsets, d)) pat.reset();
  }
  Value* ptrs = vector_access || one_element || (pat && pat->exact) ? nullptr : eval(p, idx, w);
  Value* mask = has_mask ? eval(op->operand(1), idx, w) : nullptr;
  if (all_lanes_on(mask)) mask = nullptr;
  Value* other = has_other ? reg_to_mem(eval(op->operand(2), idx, w), d) : llvm::Constant::getNullValue(vec_of(mt, w));
  llvm::Align align(dtype_bytes(d));
  Value* v;
  if (vector_access) {
    Value* p0 = first_lane_pointer(p, idx);
    if (mask) {
      // Masked accesses are slow on some CPUs (AMD Zen 4): most chunks are fully on.
      llvm::Type* vt = vec_of(mt, w);
      Value* whole = nullptr;
      Value* part = nullptr;
      llvm::BasicBlock *whole_bb = nullptr, *part_bb = nullptr;
      branch_on_all(mask, [&] { whole = b_.CreateAlignedLoad(vt, p0, align); whole_bb = b_.GetInsertBlock(); },
                    [&] {
                      // The pass-through goes in by a select of a frozen load, not as the
                      // intrinsic's operand: LLVM 19's x86 lowering of a masked load split in halves
                      // (16 f32 lanes on AVX2) with a zero pass-through and an all-false half loads
                      // that half unmasked, reading past the buffer and using what it finds (a NaN
                      // there made softmax_backward of a one-element row NaN; found by
                      // tests/test_torch_parity.cpp). The freeze keeps InstCombine from folding the
                      // select back into the intrinsic.
                      Value* loaded = b_.CreateMaskedLoad(vt, p0, align, mask, llvm::PoisonValue::get(vt));
                      part = b_.CreateSelect(mask, b_.CreateFreeze(loaded), other);
                      part_bb = b_.GetInsertBlock();
                    });
      llvm::PHINode* phi = b_.CreatePHI(vt, 2);
      phi->addIncoming(whole, whole_bb);
      phi->addIncoming(part, part_bb);
      v = phi;
    } else {
      v = b_.CreateAlignedLoad(vec_of(mt, w), p0, align);
    }
  } else if (one_element) {
    // Every lane reads one element (a load broadcast along the chunk: a bias, a row's mean):
    // one scalar load, splat. A gather of w equal addresses is w scalar loads on AVX2. The mask
    // may still vary along the lanes (a [rows, 1] operand under a [rows, cols] mask): the element
    // is read when any lane is on (its address is every lane's), and lanes off take `other`.
    llvm::BasicBlock* before = b_.GetInsertBlock();
    Value* p0 = first_lane_pointer(p, idx);
    Value* o0 = b_.CreateExtractElement(other, uint64_t(0));
    Value* s = nullptr;
    if (mask) {
      auto* then_bb = llvm::BasicBlock::Create(ctx_, "load.one", fn_);
      auto* cont = llvm::BasicBlock::Create(ctx_, "loaded.one", fn_);
      b_.CreateCondBr(b_.CreateOrReduce(mask), then_bb, cont);
      b_.SetInsertPoint(then_bb);
      Value* loaded = b_.CreateAlignedLoad(mt, p0, align);
      b_.CreateBr(cont);
      b_.SetInsertPoint(cont);
      llvm::PHINode* phi = b_.CreatePHI(mt, 2);
      phi->addIncoming(loaded, then_bb);
      phi->addIncoming(o0, before);
      s = phi;
    } else {
      s = b_.CreateAlignedLoad(mt, p0, align);
    }
    v = splat(s, w);
    if (mask) v = b_.CreateSelect(mask, v, other);
  } else {
    auto gather = [&] { return b_.CreateMaskedGather(vec_of(mt, w), ptrs, align, mask, other); };
    if (!pat)
      v = gather();
    else if (pat->exact)  // lane 0's address by scalar arithmetic, unchecked
      v = load_by_pattern(first_lane_pointer(p, idx), nullptr, pat->offsets, mask, other, d, gather);
    else
      v = load_by_pattern(b_.CreateExtractElement(ptrs, uint64_t(0)), ptrs, pat->offsets, mask, other, d, gather);
  }
  return mem_to_reg(v, d);
}

void Codegen::emit_store(const ir::Op* op) {
  const ir::Value* p = op->operand(0);
  DType d = p->type.pointee;
  llvm::Align align(dtype_bytes(d));
  bool has_mask = op->operands.size() > 2;
  if (p->type.is_scalar()) {
    Value* v = reg_to_mem(scalar(op->operand(1)), d);
    guarded(has_mask ? scalar(op->operand(2)) : nullptr, [&] { b_.CreateAlignedStore(v, scalar(p), align); });
    return;
  }
  int w = lanes_for(p->type.shape);
  // A value read down the columns (a transposed view) stored along rows: materialised first in
  // transposed squares (transpose.cpp), then stored by vectors, instead of a gather a chunk.
  const ir::Value* val = op->operand(1);
  const size_t r = p->type.shape.size();
  if (r >= 2 && !buffers_.count(val) && val->def && axis_.get(p).contiguity[r - 1] >= w && transposed_lanes(val))
    buffers_[val] = materialize_into(val);
  if (int wt = transposed_store_lanes(op)) {
    store_transposed(op, wt);
    return;
  }
  std::vector<const ir::Value*> masks;
  if (has_mask) masks.push_back(op->operand(2));
  versioned_on_masks(masks, {p, op->operand(1)}, p->type.numel() / w, [&] {
    loop_nest(p->type.shape, w, [&](const Index& idx) {
      const bool vector_access = contiguous(p, idx, w);
      Value* ptrs = vector_access ? nullptr : eval(p, idx, w);
      Value* v = reg_to_mem(eval(op->operand(1), idx, w), d);
      Value* mask = has_mask ? eval(op->operand(2), idx, w) : nullptr;
      if (all_lanes_on(mask)) mask = nullptr;
      if (vector_access) {
        Value* p0 = first_lane_pointer(p, idx);
        if (mask)
          branch_on_all(mask, [&] { b_.CreateAlignedStore(v, p0, align); },
                        [&] { b_.CreateMaskedStore(v, p0, align, mask); });
        else
          b_.CreateAlignedStore(v, p0, align);
      } else {
        b_.CreateMaskedScatter(v, ptrs, align, mask);
      }
    });
    return std::vector<Value*>{};
  });
}

void Codegen::branch_on_all(Value* mask, const std::function<void()>& all, const std::function<void()>& some) {
  auto* all_bb = llvm::BasicBlock::Create(ctx_, "mask.all", fn_);
  auto* some_bb = llvm::BasicBlock::Create(ctx_, "mask.some", fn_);
  auto* cont = llvm::BasicBlock::Create(ctx_, "mask.end", fn_);
  b_.CreateCondBr(b_.CreateAndReduce(mask), all_bb, some_bb);
  b_.SetInsertPoint(all_bb);
  all();
  b_.CreateBr(cont);
  b_.SetInsertPoint(some_bb);
  some();
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
}

void Codegen::guarded(Value* cond, const std::function<void()>& body) {
  if (!cond) {
    body();
    return;
  }
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
  auto* cont = llvm::BasicBlock::Create(ctx_, "cont", fn_);
  b_.CreateCondBr(cond, then_bb, cont);
  b_.SetInsertPoint(then_bb);
  body();
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
}

Value* Codegen::scalar_load(const ir::Op* op) {
  const ir::Value* p = op->operand(0);
  DType d = p->type.pointee;
  llvm::Type* mt = mem_type(d);
  llvm::Align align(dtype_bytes(d));
  if (op->operands.size() < 2) return mem_to_reg(b_.CreateAlignedLoad(mt, scalar(p), align), d);
  Value* other = op->operands.size() > 2 ? reg_to_mem(scalar(op->operand(2)), d) : llvm::Constant::getNullValue(mt);
  llvm::BasicBlock* before = b_.GetInsertBlock();
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "load", fn_);
  auto* cont = llvm::BasicBlock::Create(ctx_, "loaded", fn_);
  b_.CreateCondBr(scalar(op->operand(1)), then_bb, cont);
  b_.SetInsertPoint(then_bb);
  Value* v = b_.CreateAlignedLoad(mt, scalar(p), align);
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
  llvm::PHINode* phi = b_.CreatePHI(mt, 2);
  phi->addIncoming(v, then_bb);
  phi->addIncoming(other, before);
  return mem_to_reg(phi, d);
}

Value* Codegen::atomic_one(OpKind k, Value* ptr, Value* val, Value* cmp, DType d) {
  llvm::Type* it = b_.getIntNTy(dtype_bits(d));
  llvm::Align align(dtype_bytes(d));
  auto order = llvm::AtomicOrdering::SequentiallyConsistent;
  if (k == OpKind::AtomicCas) {
    Value* c = b_.CreateBitCast(cmp, it), *n = b_.CreateBitCast(val, it);
    auto* x = b_.CreateAtomicCmpXchg(ptr, c, n, align, order, order);
    return b_.CreateBitCast(b_.CreateExtractValue(x, 0), reg_type(d));
  }
  if (k == OpKind::AtomicXchg)
    return b_.CreateBitCast(b_.CreateAtomicRMW(llvm::AtomicRMWInst::Xchg, ptr, b_.CreateBitCast(val, it), align, order), reg_type(d));
  if (is_float(d)) {  // compare-exchange loop, computing in f32/f64 (covers f16 and bf16 too)
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    Value* init = b_.CreateAlignedLoad(it, ptr, align);
    auto* loop = llvm::BasicBlock::Create(ctx_, "cas", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "cas.done", fn_);
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode* old_bits = b_.CreatePHI(it, 2);
    old_bits->addIncoming(init, pre);
    Value* old_v = b_.CreateBitCast(old_bits, reg_type(d));
    OpKind ak = k == OpKind::AtomicAdd ? OpKind::Add : k == OpKind::AtomicMax ? OpKind::Max : OpKind::Min;
    Value* new_v = float_op(ak, {old_v, val}, d);
    auto* x = b_.CreateAtomicCmpXchg(ptr, old_bits, b_.CreateBitCast(new_v, it), align, order, order);
    Value* seen = b_.CreateExtractValue(x, 0);
    old_bits->addIncoming(seen, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateExtractValue(x, 1), done, loop);
    b_.SetInsertPoint(done);
    return b_.CreateBitCast(seen, reg_type(d));
  }
  bool sgn = is_signed_int(d);
  llvm::AtomicRMWInst::BinOp bop;
  switch (k) {
    case OpKind::AtomicAdd: bop = llvm::AtomicRMWInst::Add; break;
    case OpKind::AtomicMax: bop = sgn ? llvm::AtomicRMWInst::Max : llvm::AtomicRMWInst::UMax; break;
    case OpKind::AtomicMin: bop = sgn ? llvm::AtomicRMWInst::Min : llvm::AtomicRMWInst::UMin; break;
    case OpKind::AtomicAnd: bop = llvm::AtomicRMWInst::And; break;
    case OpKind::AtomicOr: bop = llvm::AtomicRMWInst::Or; break;
    default: bop = llvm::AtomicRMWInst::Xor; break;
  }
  return b_.CreateAtomicRMW(bop, ptr, val, align, order);
}

void Codegen::emit_atomic(const ir::Op* op) {
  OpKind k = op->kind;
  const ir::Value* p = op->operand(0);
  DType d = p->type.pointee;
  bool cas = k == OpKind::AtomicCas;
  bool has_mask = !cas && op->operands.size() > 2;
  // Element j: (pointer, value, compare, mask) -> old value, under the mask.
  auto one = [&](Value* ptr, Value* val, Value* cmp, Value* mask) -> Value* {
    if (!mask) return atomic_one(k, ptr, val, cmp, d);
    llvm::BasicBlock* before = b_.GetInsertBlock();
    auto* then_bb = llvm::BasicBlock::Create(ctx_, "atomic", fn_);
    auto* cont = llvm::BasicBlock::Create(ctx_, "atomic.cont", fn_);
    b_.CreateCondBr(mask, then_bb, cont);
    b_.SetInsertPoint(then_bb);
    Value* old = atomic_one(k, ptr, val, cmp, d);
    llvm::BasicBlock* end = b_.GetInsertBlock();
    b_.CreateBr(cont);
    b_.SetInsertPoint(cont);
    llvm::PHINode* phi = b_.CreatePHI(old->getType(), 2);
    phi->addIncoming(old, end);
    phi->addIncoming(llvm::Constant::getNullValue(old->getType()), before);
    return phi;
  };
  if (p->type.is_scalar()) {
    Value* old = one(scalar(p), scalar(op->operand(cas ? 2 : 1)), cas ? scalar(op->operand(1)) : nullptr,
                     has_mask ? scalar(op->operand(2)) : nullptr);
    scalars_[op->result()] = old;
    return;
  }
  Value* out = plan_.users(op->result()).empty() ? nullptr : alloc_buffer(op->result()->type);
  if (out) buffers_[op->result()] = out;
  int w = lanes_for(p->type.shape);
  loop_nest(p->type.shape, w, [&](const Index& idx) {
    Value* ptrs = eval(p, idx, w);
    Value* vals = eval(op->operand(cas ? 2 : 1), idx, w);
    Value* cmps = cas ? eval(op->operand(1), idx, w) : nullptr;
    Value* mask = has_mask ? eval(op->operand(2), idx, w) : nullptr;
    Value* olds = llvm::UndefValue::get(vec_of(reg_type(d), w));
    for (int j = 0; j < w; ++j) {
      Value* old = one(b_.CreateExtractElement(ptrs, j), b_.CreateExtractElement(vals, j),
                       cmps ? b_.CreateExtractElement(cmps, j) : nullptr,
                       mask ? b_.CreateExtractElement(mask, j) : nullptr);
      olds = b_.CreateInsertElement(olds, old, j);
    }
    if (out) write_buffer(out, op->result()->type, idx, w, olds);
  });
}

}  // namespace tritium::jit::cpu::detail
