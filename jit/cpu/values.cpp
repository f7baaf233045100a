// Where the CPU generator keeps block values - stack buffers (moved to the heap past
// kMaxStackBytes), read and written a chunk at a time - and the evaluation of a block value at an
// index (inline chains, views, buffers).
#include "jit/cpu/codegen_impl.h"

namespace tritium::jit::cpu::detail {

Value* Codegen::alloc_buffer(const ir::Type& t) {
  llvm::IRBuilder<> ab(alloca_block_, alloca_block_->begin());
  auto* a = ab.CreateAlloca(mem_type(t.dtype), i32(t.numel()));
  a->setAlignment(llvm::Align(64));
  buffer_allocas_.push_back({a, static_cast<uint64_t>(t.numel() * dtype_bytes(t.dtype))});
  return a;
}

void Codegen::move_large_buffers_to_heap() {
  uint64_t total = 0;
  for (auto& [a, bytes] : buffer_allocas_) total += (bytes + 63) / 64 * 64;
  if (total <= kMaxStackBytes) return;
  llvm::IRBuilder<> ab(alloca_block_, alloca_block_->begin());
  llvm::FunctionCallee malloc_fn = module_->getOrInsertFunction("aligned_alloc", b_.getPtrTy(), b_.getInt64Ty(), b_.getInt64Ty());
  llvm::FunctionCallee free_fn = module_->getOrInsertFunction("free", b_.getVoidTy(), b_.getPtrTy());
  Value* scratch = ab.CreateCall(malloc_fn, {ab.getInt64(64), ab.getInt64(total)});
  uint64_t offset = 0;
  for (auto& [a, bytes] : buffer_allocas_) {
    llvm::IRBuilder<> at(a);
    a->replaceAllUsesWith(at.CreateGEP(at.getInt8Ty(), scratch, at.getInt64(offset)));
    a->eraseFromParent();
    offset += (bytes + 63) / 64 * 64;
  }
  for (llvm::BasicBlock& bb : *fn_)
    if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(bb.getTerminator())) llvm::CallInst::Create(free_fn, {scratch}, "", ret);
}

Value* Codegen::mem_to_reg(Value* v, DType d) {
  if (d == DType::i1) return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  return v;
}

Value* Codegen::reg_to_mem(Value* v, DType d) {
  if (d == DType::i1) return b_.CreateZExt(v, shaped(b_.getInt8Ty(), v));
  return v;
}

Value* Codegen::read_buffer(Value* buf, const ir::Type& t, const Index& idx, int w) {
  llvm::Type* mt = mem_type(t.dtype);
  VIdx flat = flatten(idx, t.shape, w);
  Value* v;
  if (!flat.vec && flat.stride == 1) {
    v = b_.CreateAlignedLoad(vec_of(mt, w), b_.CreateGEP(mt, buf, flat.base), llvm::Align(dtype_bytes(t.dtype)));
  } else if (!flat.vec && flat.stride == 0) {
    v = splat(b_.CreateLoad(mt, b_.CreateGEP(mt, buf, flat.base)), w);
  } else {
    Value* ptrs = b_.CreateGEP(mt, buf, lane_vector(flat, w));
    v = b_.CreateMaskedGather(vec_of(mt, w), ptrs, llvm::Align(dtype_bytes(t.dtype)));
  }
  return mem_to_reg(v, t.dtype);
}

void Codegen::write_buffer(Value* buf, const ir::Type& t, const Index& idx, int w, Value* v) {
  llvm::Type* mt = mem_type(t.dtype);
  v = reg_to_mem(v, t.dtype);
  VIdx flat = flatten(idx, t.shape, w);
  if (!flat.vec && flat.stride == 1) {
    b_.CreateAlignedStore(v, b_.CreateGEP(mt, buf, flat.base), llvm::Align(dtype_bytes(t.dtype)));
  } else {
    Value* ptrs = b_.CreateGEP(mt, buf, lane_vector(flat, w));
    b_.CreateMaskedScatter(v, ptrs, llvm::Align(dtype_bytes(t.dtype)));
  }
}

Value* Codegen::materialize_into(const ir::Value* v, Value* buf) {
  if (!buf) buf = alloc_buffer(v->type);
  if (int wt = transposed_lanes(v)) {
    versioned_on_masks({}, {v}, v->type.numel() / (wt * wt), [&] {
      materialize_transposed(v, buf, wt);
      return std::vector<Value*>{};
    });
    return buf;
  }
  int w = lanes_for(v->type.shape);
  versioned_on_masks({}, {v}, v->type.numel() / w, [&] {
    loop_nest(v->type.shape, w, [&](const Index& idx) { write_buffer(buf, v->type, idx, w, eval(v, idx, w)); });
    return std::vector<Value*>{};
  });
  return buf;
}

void Codegen::copy_buffer(Value* from, Value* to, const ir::Type& t) {
  b_.CreateMemCpy(to, llvm::MaybeAlign(64), from, llvm::MaybeAlign(64),
                  b_.getInt64(static_cast<uint64_t>(t.numel() * dtype_bytes(t.dtype))));
}

Value* Codegen::scalar(const ir::Value* v) {
  auto it = scalars_.find(v);
  if (it == scalars_.end()) fail("internal error: scalar %{} of kernel {} was not emitted", v->id, f_.name);
  return it->second;
}

Value* Codegen::eval(const ir::Value* v, const Index& idx, int w) {
  if (v->type.is_scalar()) return splat(scalar(v), w);
  if (!known_true_.empty() && known_true_.count(v)) return splat(b_.getTrue(), w);
  if (auto it = buffers_.find(v); it != buffers_.end()) return read_buffer(it->second, v->type, idx, w);
  return eval_op(v->def, idx, w);
}

Index Codegen::view_operand_index(const ir::Op* view, const Index& idx) {
  switch (view->kind) {
    case OpKind::Broadcast: {
      const Shape& s = view->operand(0)->type.shape;
      const Shape& t = view->result()->type.shape;
      Index in(idx);
      for (size_t d = 0; d < s.size(); ++d)
        if (s[d] == 1 && t[d] != 1) in[d] = {i32(0), 0, nullptr, int64_t(1) << 30};
      return in;
    }
    case OpKind::ExpandDims: {
      Index in(idx);
      in.erase(in.begin() + view->attrs.axis);
      return in;
    }
    case OpKind::Permute: {
      Index in(idx.size());
      for (size_t i = 0; i < idx.size(); ++i) in[static_cast<size_t>(view->attrs.ints[i])] = idx[i];
      return in;
    }
    default: fail("internal error: {} is not a view", ir::op_name(view->kind));
  }
}

Value* Codegen::eval_op(const ir::Op* op, const Index& idx, int w) {
  const ir::Type& t = op->result()->type;
  switch (op->kind) {
    case OpKind::Constant: return constant_of(op, w);
    case OpKind::Arange: return b_.CreateAdd(lane_vector(idx[0], w), splat(i32(op->attrs.ints[0]), w));
    case OpKind::Splat: return splat(scalar(op->operand(0)), w);
    case OpKind::MultipleOf: case OpKind::MaxContiguous: return eval(op->operand(0), idx, w);
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Permute: return eval(op->operand(0), view_operand_index(op, idx), w);
    case OpKind::Reshape:
      return eval(op->operand(0), reshape_index(idx, t.shape, op->operand(0)->type.shape, w), w);
    case OpKind::Load: return eval_load(op, idx, w);
    case OpKind::Join: {  // [..., j]: a's element [...] where j == 0, b's where j == 1
      Index in(idx.begin(), idx.end() - 1);
      Value* first = b_.CreateICmpEQ(lane_vector(idx.back(), w), splat(i32(0), w));
      return b_.CreateSelect(first, eval(op->operand(0), in, w), eval(op->operand(1), in, w));
    }
    default: break;
  }
  if (ir::is_elementwise(op->kind)) {
    std::vector<Value*> xs;
    for (ir::Value* o : op->operands) xs.push_back(eval(o, idx, w));
    return elementwise(op, xs);
  }
  fail("internal error: CPU codegen cannot evaluate {} inline", ir::op_name(op->kind));
}

}  // namespace tritium::jit::cpu::detail
