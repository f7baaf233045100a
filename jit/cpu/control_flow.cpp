// Control flow in the CPU generator: tl::range loops (carried scalars and buffers), while loops
// and if.
#include "jit/cpu/codegen_impl.h"

namespace tritium::jit::cpu::detail {

void Codegen::emit_for(const ir::Op* op) {
  const ir::Block* body = op->regions[0];
  size_t n = op->results.size();
  std::vector<Value*> scalar_inits;
  std::vector<size_t> scalar_idx;
  std::vector<Value*> carried_bufs(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    const ir::Value* init = op->operands[3 + i];
    const ir::Value* arg = body->args[1 + i];
    if (arg->type.is_scalar()) {
      scalar_inits.push_back(scalar(init));
      scalar_idx.push_back(i);
    } else {
      Value* buf = alloc_buffer(arg->type);
      if (auto it = buffers_.find(init); it != buffers_.end()) copy_buffer(it->second, buf, arg->type);
      else materialize_into(init, buf);
      carried_bufs[i] = buffers_[arg] = buffers_[op->results[i]] = buf;
    }
  }
  Value* lb = scalar(op->operand(0));
  Value* ub = scalar(op->operand(1));
  Value* st = scalar(op->operand(2));
  std::vector<Value*> finals = emit_loop(lb, ub, st, scalar_inits, [&](Value* iv, std::vector<Value*> cur) {
    scalars_[body->args[0]] = iv;
    for (size_t j = 0; j < scalar_idx.size(); ++j) scalars_[body->args[1 + scalar_idx[j]]] = cur[j];
    emit_block(body);
    const ir::Op* yield = body->ops.back();
    // Block values: every new value is computed from the old ones before any carried buffer
    // is overwritten, through a temporary, except values that can be updated in place.
    std::vector<Value*> temps(n, nullptr);
    std::vector<bool> in_place(n, false);
    for (size_t i = 0; i < n; ++i) {
      if (!carried_bufs[i]) continue;
      const ir::Value* y = yield->operands[i];
      auto it = buffers_.find(y);
      if (it == buffers_.end() && updatable_in_place(y, body, 1 + i, true)) {
        in_place[i] = true;
        continue;
      }
      if (it != buffers_.end() && it->second == carried_bufs[i]) {  // already there (a dot updated it in place)
        temps[i] = carried_bufs[i];
        continue;
      }
      bool is_carried = it != buffers_.end() && std::find(carried_bufs.begin(), carried_bufs.end(), it->second) != carried_bufs.end();
      temps[i] = (it != buffers_.end() && !is_carried) ? it->second : materialize_into(y);
    }
    for (size_t i = 0; i < n; ++i)
      if (in_place[i]) materialize_into(yield->operands[i], carried_bufs[i]);
    for (size_t i = 0; i < n; ++i)
      if (carried_bufs[i] && !in_place[i] && temps[i] != carried_bufs[i])
        copy_buffer(temps[i], carried_bufs[i], op->results[i]->type);
    std::vector<Value*> next;
    for (size_t j : scalar_idx) next.push_back(scalar(yield->operands[j]));
    return next;
  });
  for (size_t j = 0; j < scalar_idx.size(); ++j) scalars_[op->results[scalar_idx[j]]] = finals[j];
}

void Codegen::emit_while(const ir::Op* op) {
  const ir::Block* before = op->regions[0];
  const ir::Block* body = op->regions[1];
  size_t n = op->results.size();
  for (const ir::Value* r : op->results)
    if (!r->type.is_scalar())
      fail(op->loc, "the CPU backend carries only scalars through a while loop (got {})", r->type.str());
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "while", fn_);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "while.body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "while.end", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  std::vector<llvm::PHINode*> phis;
  for (size_t i = 0; i < n; ++i) {
    Value* init = scalar(op->operands[i]);
    llvm::PHINode* p = b_.CreatePHI(init->getType(), 2);
    p->addIncoming(init, pre);
    phis.push_back(p);
    scalars_[before->args[i]] = scalars_[body->args[i]] = scalars_[op->results[i]] = p;
  }
  emit_block(before);
  b_.CreateCondBr(scalar(before->ops.back()->operand(0)), body_bb, exit);
  b_.SetInsertPoint(body_bb);
  emit_block(body);
  const ir::Op* yield = body->ops.back();
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  for (size_t i = 0; i < n; ++i) phis[i]->addIncoming(scalar(yield->operands[i]), latch);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
}

bool Codegen::updatable_in_place(const ir::Value* v, const ir::Block* body, size_t self, bool same_index) {
  if (v->type.is_scalar()) return true;
  for (size_t j = 1; j < body->args.size(); ++j)
    if (v == body->args[j]) return j == self ? same_index : !v->type.is_block();
  if (buffers_.count(v) || !v->def) return true;  // another materialised value: a plain read
  const ir::Op* op = v->def;
  bool keeps_index = ir::is_elementwise(op->kind) || op->kind == OpKind::Load || op->kind == OpKind::MultipleOf ||
                     op->kind == OpKind::MaxContiguous;
  for (const ir::Value* o : op->operands)
    if (!updatable_in_place(o, body, self, same_index && keeps_index)) return false;
  return true;
}

void Codegen::emit_if(const ir::Op* op) {
  size_t n = op->results.size();
  std::vector<Value*> bufs(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (op->results[i]->type.is_block()) bufs[i] = buffers_[op->results[i]] = alloc_buffer(op->results[i]->type);
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, "if.else", fn_);
  auto* cont = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
  b_.CreateCondBr(scalar(op->operand(0)), then_bb, else_bb);
  std::vector<std::vector<Value*>> incoming(2);
  llvm::BasicBlock* ends[2];
  for (int side = 0; side < 2; ++side) {
    b_.SetInsertPoint(side == 0 ? then_bb : else_bb);
    const ir::Block* region = op->regions[side];
    emit_block(region);
    const ir::Op* yield = region->ops.back();
    for (size_t i = 0; i < n; ++i) {
      const ir::Value* y = yield->operands[i];
      if (bufs[i]) {
        if (auto it = buffers_.find(y); it != buffers_.end()) copy_buffer(it->second, bufs[i], y->type);
        else materialize_into(y, bufs[i]);
      } else {
        incoming[side].push_back(scalar(y));
      }
    }
    ends[side] = b_.GetInsertBlock();
    b_.CreateBr(cont);
  }
  b_.SetInsertPoint(cont);
  size_t j = 0;
  for (size_t i = 0; i < n; ++i) {
    if (bufs[i]) continue;
    llvm::PHINode* phi = b_.CreatePHI(incoming[0][j]->getType(), 2);
    phi->addIncoming(incoming[0][j], ends[0]);
    phi->addIncoming(incoming[1][j], ends[1]);
    scalars_[op->results[i]] = phi;
    ++j;
  }
}

}  // namespace tritium::jit::cpu::detail
