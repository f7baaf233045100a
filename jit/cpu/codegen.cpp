// IR -> LLVM IR for the CPU backend: the generator's driver (class and design:
// jit/cpu/codegen_impl.h) - run, the dispatch of each op to the file of its family, the entry
// function over a range of programs - and lower_to_llvm.
#include "jit/cpu/codegen_impl.h"

namespace tritium::jit::cpu {
namespace detail {

std::unique_ptr<llvm::Module> Codegen::run() {
  plan_ = plan_blocks(f_);
  emit_entry();
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(*module_, &os))
    fail("internal error: the CPU code generator produced invalid LLVM IR for kernel {}: {}", f_.name, os.str());
  return std::move(module_);
}

void Codegen::emit_op(const ir::Op* op) {
  switch (op->kind) {
    case OpKind::Yield: return;  // read by the parent
    case OpKind::For: return emit_for(op);
    case OpKind::If: return emit_if(op);
    case OpKind::While: return emit_while(op);
    case OpKind::Store: return emit_store(op);
    case OpKind::Reduce: return emit_reduce(op);
    case OpKind::Scan: return emit_scan(op);
    case OpKind::Dot: return emit_dot(op);
    case OpKind::Print: return emit_print(op);
    case OpKind::Assert: return emit_assert(op);
    case OpKind::DebugBarrier: return;  // one thread runs a program
    case OpKind::Histogram: return emit_histogram(op);
    case OpKind::Gather: return emit_gather(op);
    case OpKind::Split: return emit_split(op);
    default: break;
  }
  if (is_atomic(op->kind)) return emit_atomic(op);
  const ir::Value* r = op->result();
  if (r->type.is_block()) {
    if (plan_.materialized(r)) buffers_[r] = materialize_into(r);
    return;  // inline values are evaluated where they are used
  }
  scalars_[r] = emit_scalar(op);
}

Value* Codegen::emit_scalar(const ir::Op* op) {
  switch (op->kind) {
    case OpKind::Constant: return constant_of(op, 0);
    case OpKind::ProgramId: return pid_[op->attrs.axis];
    case OpKind::NumPrograms: return nprog_[op->attrs.axis];
    case OpKind::MultipleOf: case OpKind::MaxContiguous: return scalar(op->operand(0));
    case OpKind::Load: return scalar_load(op);
    default: break;
  }
  if (!ir::is_elementwise(op->kind))
    fail("internal error: CPU codegen has no scalar form of {}", ir::op_name(op->kind));
  std::vector<Value*> xs;
  for (ir::Value* o : op->operands) xs.push_back(scalar(o));
  return elementwise(op, xs);
}

void Codegen::emit_entry() {
  auto* i32t = b_.getInt32Ty();
  auto* i64t = b_.getInt64Ty();
  auto* ptrt = b_.getPtrTy();
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {ptrt, i32t, i32t, i32t, i64t, i64t, ptrt}, false);
  fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, kEntrySymbol, module_.get());
  fn_->addFnAttr(llvm::Attribute::NoUnwind);
  auto arg = fn_->arg_begin();
  Value* args = &*arg++;
  nprog_[0] = &*arg++;
  nprog_[1] = &*arg++;
  nprog_[2] = &*arg++;
  Value* begin = &*arg++;
  Value* end = &*arg++;
  launch_ = &*arg++;
  alloca_block_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  b_.SetInsertPoint(alloca_block_);
  // Arguments: one 64-bit slot each.
  for (size_t i = 0; i < f_.params.size(); ++i) {
    const ir::Type& t = f_.params[i].type;
    Value* slot = b_.CreateLoad(i64t, b_.CreateGEP(i64t, args, b_.getInt64(i)));
    Value* v;
    DType d = t.dtype;
    if (t.is_ptr()) v = b_.CreateIntToPtr(slot, ptrt);
    else if (d == DType::f64) v = b_.CreateBitCast(slot, b_.getDoubleTy());
    else if (d == DType::f32) v = b_.CreateBitCast(b_.CreateTrunc(slot, i32t), b_.getFloatTy());
    else v = b_.CreateTrunc(slot, reg_type(d));
    scalars_[f_.body->args[i]] = v;
  }
  // for (id = begin; id < end; ++id): program (id % nx, id / nx % ny, id / (nx * ny))
  Value* nx = b_.CreateZExt(nprog_[0], i64t);
  Value* ny = b_.CreateZExt(nprog_[1], i64t);
  emit_loop(begin, end, b_.getInt64(1), {}, [&](Value* id, std::vector<Value*>) {
    pid_[0] = b_.CreateTrunc(b_.CreateURem(id, nx), i32t);
    Value* rest = b_.CreateUDiv(id, nx);
    pid_[1] = b_.CreateTrunc(b_.CreateURem(rest, ny), i32t);
    pid_[2] = b_.CreateTrunc(b_.CreateUDiv(rest, ny), i32t);
    emit_block(f_.body);
    return std::vector<Value*>{};
  });
  b_.CreateRetVoid();
  move_large_buffers_to_heap();
}

}  // namespace detail

std::unique_ptr<llvm::Module> lower_to_llvm(ir::Function& f, const AxisInfoMap& axis, llvm::LLVMContext& ctx,
                                            const VectorRegisters& regs) {
  f.renumber();
  return detail::Codegen(f, axis, ctx, regs).run();
}

}  // namespace tritium::jit::cpu
