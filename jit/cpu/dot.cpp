// dot in the CPU generator: register micro-tiles sized to the host's vector registers
// (VectorRegisters), full tiles first, then the edges.
#include "jit/cpu/codegen_impl.h"

#include <llvm/IR/IntrinsicsX86.h>

namespace tritium::jit::cpu::detail {

Codegen::MicroTile Codegen::micro_tile(DType compute, int w, int64_t M, int64_t chunks) {
  const int64_t regs_per_chunk = std::max<int64_t>(1, int64_t(w) * dtype_bytes(compute) / regs_.bytes);
  MicroTile best{1, 1};
  double best_score = -1;
  for (int64_t cn = 1; cn <= std::min<int64_t>(chunks, 4); ++cn)
    for (int64_t rm = 1; rm <= std::min<int64_t>(M, 8); ++rm) {
      const int64_t v = cn * regs_per_chunk;
      if (rm * v + v + 1 > regs_.count) continue;
      int edges = (M % rm != 0) + (chunks % cn != 0);
      double score = double(rm * v) / double(rm + v) - 0.01 * edges + 0.001 * cn;
      if (score > best_score) best_score = score, best = {rm, cn};
    }
  return best;
}

Value* Codegen::dot_output_buffer(const ir::Op* op) {
  const ir::Value* c = op->operand(2);
  auto it = buffers_.find(c);
  const ir::Block* home = c->def ? c->def->parent : c->owner;
  bool only_accumulator = plan_.users(c).size() == 1 && c != op->operand(0) && c != op->operand(1);
  if (it != buffers_.end() && home == op->parent && only_accumulator && c->type == op->result()->type)
    return it->second;
  return alloc_buffer(op->result()->type);
}

void Codegen::emit_dot(const ir::Op* op) {
  const ir::Type& rt = op->result()->type;
  DType acc_t = rt.dtype;
  DType compute = is_float(acc_t) ? (acc_t == DType::f64 ? DType::f64 : DType::f32) : DType::i32;
  Value* out = buffers_[op->result()] = dot_output_buffer(op);
  DotArgs d{op->operand(0), op->operand(1), op->operand(2), rt, buffers_.at(op->operand(0)),
            buffers_.at(op->operand(1)), out, compute, lanes_for(rt.shape)};
  const int64_t M = rt.shape[0], chunks = rt.shape[1] / d.w;
  MicroTile t = micro_tile(compute, d.w, M, chunks);
  // Full tiles, then the tiles at the bottom and right edges with fewer rows or chunks.
  const int64_t full_m = M - M % t.rows, full_c = chunks - chunks % t.chunks;
  emit_dot_tiles(d, {0, full_m, t.rows}, {0, full_c, t.chunks});
  if (full_c < chunks) emit_dot_tiles(d, {0, full_m, t.rows}, {full_c, chunks, chunks - full_c});
  if (full_m < M) {
    emit_dot_tiles(d, {full_m, M, M - full_m}, {0, full_c, t.chunks});
    if (full_c < chunks) emit_dot_tiles(d, {full_m, M, M - full_m}, {full_c, chunks, chunks - full_c});
  }
}

void Codegen::emit_dot_tiles(const DotArgs& d, TileRange rows, TileRange chunks) {
  if (rows.begin >= rows.end || chunks.begin >= chunks.end) return;
  emit_loop(rows.begin, rows.end, rows.step, [&](Value* i0) {
    emit_loop(chunks.begin * d.w, chunks.end * d.w, chunks.step * d.w,
              [&](Value* j0) { emit_dot_tile(d, i0, j0, rows.step, chunks.step); });
  });
}

void Codegen::emit_dot_tile(const DotArgs& d, Value* i0, Value* j0, int64_t rows, int64_t chunks) {
  const int w = d.w;
  auto row = [&](int64_t r) { return VIdx{b_.CreateAdd(i0, i32(r)), 0, nullptr, 1}; };
  auto col = [&](int64_t cc) { return VIdx{b_.CreateAdd(j0, i32(cc * w)), 1, nullptr, w}; };
  auto kidx = [&](Value* k) { return VIdx{k, 0, nullptr, 1}; };
  std::vector<Value*> init;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t cc = 0; cc < chunks; ++cc)
      init.push_back(cast(eval(d.c, {row(r), col(cc)}, w), d.result.dtype, d.compute));
  const int64_t K = d.a->type.shape[1];
  // One k-step: B's vectors widened, one element of A broadcast per row, an FMA per vector.
  auto one_step = [&](Value* k, std::vector<Value*> cur) {
    std::vector<Value*> bv(chunks);
    for (int64_t cc = 0; cc < chunks; ++cc)
      bv[cc] = cast(read_buffer(d.bbuf, d.b->type, {kidx(k), col(cc)}, w), d.b->type.dtype, d.compute);
    for (int64_t r = 0; r < rows; ++r) {
      Value* av = read_buffer(d.abuf, d.a->type, {row(r), kidx(k)}, 1);
      av = splat(cast(b_.CreateExtractElement(av, uint64_t(0)), d.a->type.dtype, d.compute), w);
      for (int64_t cc = 0; cc < chunks; ++cc) cur[r * chunks + cc] = multiply_add(av, bv[cc], cur[r * chunks + cc], d.compute);
    }
    return cur;
  };
  std::vector<Value*> acc;
  if (bf16_pairs(d) && K % 2 == 0) {  // block dims are powers of two >= 16
    // Two k-steps an instruction (VDPBF16PS): lane j of the accumulator gains a[r][k] b[k][j] +
    // a[r][k+1] b[k+1][j] from A's pair broadcast to every lane and B's rows k and k+1
    // interleaved. The products of bf16 values are exact in f32 and each is added with one
    // rounding (the instruction's order: k+1, then k), as two FMAs; inputs and results below
    // f32's normal range are flushed to zero (the instruction's DAZ / FTZ).
    acc = emit_loop(i32(0), i32(K / 2), i32(1), init, [&](Value* kp, std::vector<Value*> cur) {
      Value* k0 = b_.CreateMul(kp, i32(2));
      Value* k1 = b_.CreateAdd(k0, i32(1));
      std::vector<Value*> bv(chunks);
      for (int64_t cc = 0; cc < chunks; ++cc)
        bv[cc] = interleave(read_buffer(d.bbuf, d.b->type, {kidx(k0), col(cc)}, w),
                            read_buffer(d.bbuf, d.b->type, {kidx(k1), col(cc)}, w));
      for (int64_t r = 0; r < rows; ++r) {
        // A's a[r][k], a[r][k+1] are adjacent (row-major): one 32-bit load, broadcast.
        Value* pair = read_buffer(d.abuf, d.a->type, {row(r), VIdx{k0, 1, nullptr, 2}}, 2);
        Value* av = splat(b_.CreateBitCast(pair, b_.getInt32Ty()), w);
        for (int64_t cc = 0; cc < chunks; ++cc) cur[r * chunks + cc] = bf16_pair_dot(cur[r * chunks + cc], av, bv[cc]);
      }
      return cur;
    });
  } else {
    acc = emit_loop(i32(0), i32(K), i32(1), init, one_step);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t cc = 0; cc < chunks; ++cc)
      write_buffer(d.out, d.result, {row(r), col(cc)}, w, cast(acc[r * chunks + cc], d.compute, d.result.dtype));
}

bool Codegen::bf16_pairs(const DotArgs& d) const {
  return regs_.bf16_dot && d.a->type.dtype == DType::bf16 && d.b->type.dtype == DType::bf16 && d.compute == DType::f32 &&
         d.w == 16;
}

Value* Codegen::interleave(Value* x, Value* y) {
  const int n = llvm::cast<llvm::FixedVectorType>(x->getType())->getNumElements();
  std::vector<int> mask;
  for (int i = 0; i < n; ++i) mask.push_back(i), mask.push_back(n + i);
  return b_.CreateShuffleVector(x, y, mask);
}

Value* Codegen::bf16_pair_dot(Value* acc, Value* a_pairs, Value* b_pairs) {
  llvm::Function* fn = llvm::Intrinsic::getDeclaration(module_.get(), llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512);
  llvm::FunctionType* ft = fn->getFunctionType();
  return b_.CreateCall(fn, {acc, b_.CreateBitCast(a_pairs, ft->getParamType(1)), b_.CreateBitCast(b_pairs, ft->getParamType(2))});
}

Value* Codegen::multiply_add(Value* x, Value* y, Value* acc, DType d) {
  if (is_float(d)) return b_.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {x, y, acc});
  return b_.CreateAdd(acc, b_.CreateMul(x, y));
}

}  // namespace tritium::jit::cpu::detail
