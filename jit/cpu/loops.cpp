// The CPU generator's loops (with carried values) and loop nests over a block's shape, the last
// dim in chunks of LLVM vector lanes; per-lane indices, flattening and reshaping them.
#include "jit/cpu/codegen_impl.h"

namespace tritium::jit::cpu::detail {

std::vector<Value*> Codegen::emit_loop(Value* begin, Value* end, Value* step, std::vector<Value*> inits,
                                       const std::function<std::vector<Value*>(Value*, std::vector<Value*>)>& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "loop", fn_);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "exit", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(begin->getType(), 2);
  iv->addIncoming(begin, pre);
  std::vector<llvm::PHINode*> phis;
  std::vector<Value*> carried;
  for (Value* v : inits) {
    llvm::PHINode* p = b_.CreatePHI(v->getType(), 2);
    p->addIncoming(v, pre);
    phis.push_back(p);
    carried.push_back(p);
  }
  b_.CreateCondBr(b_.CreateICmpSLT(iv, end), body_bb, exit);
  b_.SetInsertPoint(body_bb);
  std::vector<Value*> next = body(iv, carried);
  Value* iv_next = b_.CreateAdd(iv, step);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  iv->addIncoming(iv_next, latch);
  for (size_t i = 0; i < phis.size(); ++i) phis[i]->addIncoming(next[i], latch);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  return carried;
}

void Codegen::emit_loop(int64_t begin, int64_t end, int64_t step, const std::function<void(Value*)>& body) {
  if (end - begin == step) {  // one trip: no loop
    body(i32(begin));
    return;
  }
  emit_loop(i32(begin), i32(end), i32(step), {}, [&](Value* iv, std::vector<Value*>) {
    body(iv);
    return std::vector<Value*>{};
  });
}

void Codegen::loop_nest(const Shape& shape, int w, const std::function<void(const Index&)>& body) {
  Index idx(shape.size());
  // Two or more outer dims of more than one element: one flat loop over all the outer dims, each
  // dim's index taken from the flat counter. A nest of short constant loops is fully unrolled by
  // LLVM, 2^rank copies of each op for tl::sort's [2, 2, ..., 2] shapes (a 256-element sort
  // took 33 s to compile, a 1024-element one minutes); 1-D and 2-D blocks keep their loops.
  const size_t r = shape.size();
  int outer_dims = 0;
  int64_t outer_total = 1;
  for (size_t d = 0; d + 1 < r; ++d) outer_dims += shape[d] > 1, outer_total *= shape[d];
  if (outer_dims >= 2) {
    const int64_t step = w;
    emit_loop(0, outer_total, 1, [&](Value* flat) {
      int64_t inner = 1;
      for (size_t d = r - 1; d-- > 0;) {
        if (shape[d] == 1) {
          idx[d] = {i32(0), 0, nullptr, int64_t(1) << 30};
          continue;
        }
        Value* q = inner == 1 ? flat : b_.CreateUDiv(flat, i32(inner));
        idx[d] = {b_.CreateURem(q, i32(shape[d])), 0, nullptr, 1};
        inner *= shape[d];
      }
      if (shape[r - 1] == step) {
        idx[r - 1] = {i32(0), 1, nullptr, int64_t(1) << 30};
        body(idx);
        return;
      }
      emit_loop(0, shape[r - 1], step, [&](Value* iv) {
        idx[r - 1] = {iv, 1, nullptr, step};
        body(idx);
      });
    });
    return;
  }
  std::function<void(size_t)> rec = [&](size_t d) {
    if (d == shape.size()) {
      body(idx);
      return;
    }
    bool last = d + 1 == shape.size();
    int64_t step = last ? w : 1;
    if (shape[d] == step) {
      idx[d] = {i32(0), last ? 1 : 0, nullptr, int64_t(1) << 30};
      rec(d + 1);
      return;
    }
    emit_loop(0, shape[d], step, [&](Value* iv) {
      idx[d] = {iv, last ? 1 : 0, nullptr, step};
      rec(d + 1);
    });
  };
  rec(0);
}

Value* Codegen::lane_vector(const VIdx& x, int w) {
  if (x.vec) return x.vec;
  Value* base = splat(x.base, w);
  if (x.stride == 0) return base;
  std::vector<llvm::Constant*> steps;
  for (int i = 0; i < w; ++i) steps.push_back(b_.getInt32(static_cast<uint32_t>(i * x.stride)));
  return b_.CreateAdd(base, llvm::ConstantVector::get(steps));
}

std::vector<int64_t> Codegen::strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

VIdx Codegen::flatten(const Index& idx, const Shape& shape, int w) {
  auto st = strides_of(shape);
  bool affine = true;
  for (auto& x : idx) affine &= x.vec == nullptr;
  if (affine) {
    VIdx out{i32(0), 0, nullptr, int64_t(1) << 30};
    for (size_t d = 0; d < idx.size(); ++d) {
      if (shape[d] == 1) continue;
      out.base = b_.CreateAdd(out.base, b_.CreateMul(idx[d].base, i32(st[d])));
      out.stride += idx[d].stride * st[d];
      out.align = std::min(out.align, idx[d].align * st[d]);
    }
    return out;
  }
  Value* v = splat(i32(0), w);
  for (size_t d = 0; d < idx.size(); ++d)
    v = b_.CreateAdd(v, b_.CreateMul(lane_vector(idx[d], w), splat(i32(st[d]), w)));
  return {nullptr, 0, v, 1};
}

Index Codegen::reshape_index(const Index& idx, const Shape& from, const Shape& to, int w) {
  VIdx flat = flatten(idx, from, w);
  auto st = strides_of(to);
  Index out(to.size());
  bool affine_ok = !flat.vec && (flat.stride == 0 || (flat.stride == 1 && flat.align >= w));
  if (affine_ok && flat.stride == 1)
    for (size_t e = 0; e < to.size(); ++e)
      if (!(st[e] >= w || (st[e] == 1 && to[e] % w == 0))) affine_ok = false;
  for (size_t e = 0; e < to.size(); ++e) {
    if (affine_ok) {
      Value* q = b_.CreateURem(b_.CreateUDiv(flat.base, i32(st[e])), i32(to[e]));
      bool moves = flat.stride == 1 && st[e] == 1;
      out[e] = {q, moves ? 1 : 0, nullptr, moves ? w : 1};
    } else {
      Value* v = lane_vector(flat, w);
      out[e] = {nullptr, 0, b_.CreateURem(b_.CreateUDiv(v, splat(i32(st[e]), w)), splat(i32(to[e]), w)), 1};
    }
  }
  return out;
}

}  // namespace tritium::jit::cpu::detail
