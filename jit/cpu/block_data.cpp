// Histogram, gather and split in the CPU generator (join is evaluated inline: values.cpp).
#include "jit/cpu/codegen_impl.h"

namespace tritium::jit::cpu::detail {

void Codegen::emit_histogram(const ir::Op* op) {
  const ir::Value* r = op->result();
  const ir::Value* x = op->operand(0);
  int64_t bins = r->type.shape[0];
  Value* counts = alloc_buffer(r->type);
  b_.CreateMemSet(counts, b_.getInt8(0), b_.getInt64(static_cast<uint64_t>(bins * 4)), llvm::MaybeAlign(64));
  bool sgn = is_signed_int(x->type.dtype);
  loop_nest(x->type.shape, 1, [&](const Index& idx) {
    Value* v = b_.CreateExtractElement(eval(x, idx, 1), uint64_t(0));
    v = b_.CreateIntCast(v, b_.getInt64Ty(), sgn);
    Value* ok = b_.CreateICmpULT(v, b_.getInt64(static_cast<uint64_t>(bins)));  // negatives wrap to large
    if (op->operands.size() > 1) ok = b_.CreateAnd(ok, b_.CreateExtractElement(eval(op->operand(1), idx, 1), uint64_t(0)));
    guarded(ok, [&] {
      Value* p = b_.CreateGEP(b_.getInt32Ty(), counts, v);
      b_.CreateStore(b_.CreateAdd(b_.CreateLoad(b_.getInt32Ty(), p), i32(1)), p);
    });
  });
  buffers_[r] = counts;
}

void Codegen::emit_gather(const ir::Op* op) {
  const ir::Value* src = op->operand(0);
  const ir::Value* index = op->operand(1);
  const ir::Value* r = op->result();
  auto it = buffers_.find(src);
  Value* sbuf = it != buffers_.end() ? it->second : materialize_into(src);
  Value* out = alloc_buffer(r->type);
  int axis = op->attrs.axis;
  int64_t n = src->type.shape[static_cast<size_t>(axis)];
  bool sgn = is_signed_int(index->type.dtype);
  int w = lanes_for(r->type.shape);
  loop_nest(r->type.shape, w, [&](const Index& idx) {
    Value* k = b_.CreateIntCast(eval(index, idx, w), vec_of(b_.getInt32Ty(), w), sgn);
    k = b_.CreateAnd(k, splat(i32(n - 1), w));
    Index in(idx);
    in[static_cast<size_t>(axis)] = VIdx{nullptr, 0, k, 1};
    write_buffer(out, r->type, idx, w, read_buffer(sbuf, src->type, in, w));
  });
  buffers_[r] = out;
}

void Codegen::emit_split(const ir::Op* op) {
  const ir::Value* x = op->operand(0);
  for (int i = 0; i < 2; ++i) {
    const ir::Value* r = op->results[static_cast<size_t>(i)];
    VIdx half{i32(i), 0, nullptr, i == 0 ? int64_t(1) << 30 : 1};
    if (r->type.is_scalar()) {
      scalars_[r] = b_.CreateExtractElement(eval(x, {half}, 1), uint64_t(0));
      continue;
    }
    Value* buf = alloc_buffer(r->type);
    int w = lanes_for(r->type.shape);
    loop_nest(r->type.shape, w, [&](const Index& idx) {
      Index in(idx);
      in.push_back(half);
      write_buffer(buf, r->type, idx, w, eval(x, in, w));
    });
    buffers_[r] = buf;
  }
}

}  // namespace tritium::jit::cpu::detail
