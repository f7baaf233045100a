// IR -> LLVM IR for the CPU backend.
//
// Scalars are SSA values. A block value is either *inline* (evaluated inside the loop nest of the
// op that consumes it: that is how chains of elementwise ops, broadcasts and single-use loads
// fuse into one loop) or *materialised* in a stack buffer (values used several times, results
// of reductions/scans/dots/atomics, loop-carried blocks). Loop nests run over a block's shape
// with the last dim in chunks of up to kLanes lanes, as LLVM vectors; a load or store whose
// pointer is contiguous along the chunk (axis info) becomes one llvm.masked.load/store, any
// other becomes a gather/scatter.
#include "jit/cpu/codegen.h"

#include "jit/passes/block_plan.h"

#include <cmath>
#include <functional>
#include <initializer_list>
#include <unordered_map>
#include <unordered_set>

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

namespace tritium::jit::cpu {
namespace {

using ir::OpKind;
using ir::Shape;
using llvm::Value;

constexpr int kLanes = 16;  // lanes per chunk: one 512-bit register of f32

// One dim of an index into a block, for the W lanes of a chunk: base + lane * stride, or an
// arbitrary per-lane vector when not affine. `align` is a power of two known to divide base.
struct VIdx {
  Value* base = nullptr;
  int64_t stride = 0;
  Value* vec = nullptr;
  int64_t align = 1;
};
using Index = std::vector<VIdx>;

bool is_atomic(OpKind k) { return k >= OpKind::AtomicAdd && k <= OpKind::AtomicCas; }

class Codegen {
 public:
  Codegen(ir::Function& f, const AxisInfoMap& axis, llvm::LLVMContext& ctx, const VectorRegisters& regs)
      : f_(f), axis_(axis), ctx_(ctx), regs_(regs), b_(ctx), module_(std::make_unique<llvm::Module>("tritium_" + f.name, ctx)) {}

  std::unique_ptr<llvm::Module> run() {
    plan_ = plan_blocks(f_);
    emit_entry();
    std::string err;
    llvm::raw_string_ostream os(err);
    if (llvm::verifyModule(*module_, &os))
      fail("internal error: the CPU code generator produced invalid LLVM IR for kernel {}: {}", f_.name, os.str());
    return std::move(module_);
  }

 private:
  ir::Function& f_;
  const AxisInfoMap& axis_;
  llvm::LLVMContext& ctx_;
  VectorRegisters regs_;
  llvm::IRBuilder<> b_;
  std::unique_ptr<llvm::Module> module_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* alloca_block_ = nullptr;
  std::vector<std::pair<llvm::AllocaInst*, uint64_t>> buffer_allocas_;

  std::unordered_map<const ir::Value*, Value*> scalars_;   // scalar SSA values
  std::unordered_map<const ir::Value*, Value*> buffers_;   // materialised block values
  BlockPlan plan_;  // which block values get a buffer
  Value* pid_[3] = {};
  Value* nprog_[3] = {};
  Value* launch_ = nullptr;

  // ---- types ------------------------------------------------------------------------------

  llvm::Type* reg_type(DType d) {
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
  llvm::Type* mem_type(DType d) { return d == DType::i1 ? b_.getInt8Ty() : reg_type(d); }
  llvm::Type* vec_of(llvm::Type* t, int w) { return llvm::FixedVectorType::get(t, w); }
  // `t` shaped like `like` (a vector of the same width, or a scalar).
  llvm::Type* shaped(llvm::Type* t, Value* like) {
    if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(like->getType())) return vec_of(t, vt->getNumElements());
    return t;
  }
  int width_of(Value* v) {
    if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) return static_cast<int>(vt->getNumElements());
    return 0;
  }
  Value* splat(Value* s, int w) { return w == 0 ? s : b_.CreateVectorSplat(w, s); }
  Value* i32(int64_t v) { return b_.getInt32(static_cast<uint32_t>(v)); }

  // f16, bf16 and fp8 (is_narrow_float) compute in f32.
  Value* to_f32(Value* v, DType d) {
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
  Value* from_f32(Value* v, DType d) {
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
  // fp8_from_float (ir/types.h) on vectors: saturate, then subnormals by rounding a * 2^(bias-1+m)
  // to an integer (nearest even), normals by rounding the f32 mantissa (nearest even) and
  // rebiasing the exponent.
  Value* f32_to_fp8(Value* v, DType d) {
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

  // ---- constants --------------------------------------------------------------------------

  Value* constant(DType d, int64_t ival, double fval, bool is_fp) {
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
  Value* constant_of(const ir::Op* op, int w) {
    DType d = op->result()->type.dtype;
    return splat(constant(d, op->attrs.ival, op->attrs.fval, is_float(d)), w);
  }

  // ---- loops ------------------------------------------------------------------------------

  // for (iv = begin; iv < end; iv += step) with loop-carried values; returns their final values.
  std::vector<Value*> emit_loop(Value* begin, Value* end, Value* step, std::vector<Value*> inits,
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

  void emit_loop(int64_t begin, int64_t end, int64_t step, const std::function<void(Value*)>& body) {
    if (end - begin == step) {  // one trip: no loop
      body(i32(begin));
      return;
    }
    emit_loop(i32(begin), i32(end), i32(step), {}, [&](Value* iv, std::vector<Value*>) {
      body(iv);
      return std::vector<Value*>{};
    });
  }

  // Runs body over `shape`, the last dim in chunks of w lanes (w divides the last dim).
  void loop_nest(const Shape& shape, int w, const std::function<void(const Index&)>& body) {
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

  int lanes_for(const Shape& shape) { return shape.empty() ? 1 : static_cast<int>(std::min<int64_t>(kLanes, shape.back())); }

  // ---- indices ----------------------------------------------------------------------------

  Value* lane_vector(const VIdx& x, int w) {
    if (x.vec) return x.vec;
    Value* base = splat(x.base, w);
    if (x.stride == 0) return base;
    std::vector<llvm::Constant*> steps;
    for (int i = 0; i < w; ++i) steps.push_back(b_.getInt32(static_cast<uint32_t>(i * x.stride)));
    return b_.CreateAdd(base, llvm::ConstantVector::get(steps));
  }

  static std::vector<int64_t> strides_of(const Shape& s) {
    std::vector<int64_t> st(s.size(), 1);
    for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
    return st;
  }

  // Row-major flat index of idx in shape.
  VIdx flatten(const Index& idx, const Shape& shape, int w) {
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

  // The index into `to` (same number of elements) of element `idx` of `from` (row-major reshape).
  Index reshape_index(const Index& idx, const Shape& from, const Shape& to, int w) {
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

  // ---- buffers ----------------------------------------------------------------------------

  Value* alloc_buffer(const ir::Type& t) {
    llvm::IRBuilder<> ab(alloca_block_, alloca_block_->begin());
    auto* a = ab.CreateAlloca(mem_type(t.dtype), i32(t.numel()));
    a->setAlignment(llvm::Align(64));
    buffer_allocas_.push_back({a, static_cast<uint64_t>(t.numel() * dtype_bytes(t.dtype))});
    return a;
  }

  // Blocks of up to 2^20 elements would overflow a thread's stack: past kMaxStackBytes in all,
  // the buffers move to one heap block allocated per call of the entry (per chunk of programs).
  static constexpr uint64_t kMaxStackBytes = 256 * 1024;
  void move_large_buffers_to_heap() {
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

  Value* mem_to_reg(Value* v, DType d) {
    if (d == DType::i1) return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    return v;
  }
  Value* reg_to_mem(Value* v, DType d) {
    if (d == DType::i1) return b_.CreateZExt(v, shaped(b_.getInt8Ty(), v));
    return v;
  }

  Value* read_buffer(Value* buf, const ir::Type& t, const Index& idx, int w) {
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

  void write_buffer(Value* buf, const ir::Type& t, const Index& idx, int w, Value* v) {
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

  // Evaluates `v` over its whole shape into a new buffer.
  Value* materialize_into(const ir::Value* v, Value* buf = nullptr) {
    if (!buf) buf = alloc_buffer(v->type);
    int w = lanes_for(v->type.shape);
    loop_nest(v->type.shape, w, [&](const Index& idx) { write_buffer(buf, v->type, idx, w, eval(v, idx, w)); });
    return buf;
  }

  void copy_buffer(Value* from, Value* to, const ir::Type& t) {
    b_.CreateMemCpy(to, llvm::MaybeAlign(64), from, llvm::MaybeAlign(64),
                    b_.getInt64(static_cast<uint64_t>(t.numel() * dtype_bytes(t.dtype))));
  }

  // ---- evaluation of block values at an index ---------------------------------------------

  Value* scalar(const ir::Value* v) {
    auto it = scalars_.find(v);
    if (it == scalars_.end()) fail("internal error: scalar %{} of kernel {} was not emitted", v->id, f_.name);
    return it->second;
  }

  Value* eval(const ir::Value* v, const Index& idx, int w) {
    if (v->type.is_scalar()) return splat(scalar(v), w);
    if (auto it = buffers_.find(v); it != buffers_.end()) return read_buffer(it->second, v->type, idx, w);
    return eval_op(v->def, idx, w);
  }

  Value* eval_op(const ir::Op* op, const Index& idx, int w) {
    const ir::Type& t = op->result()->type;
    switch (op->kind) {
      case OpKind::Constant: return constant_of(op, w);
      case OpKind::Arange: return b_.CreateAdd(lane_vector(idx[0], w), splat(i32(op->attrs.ints[0]), w));
      case OpKind::Splat: return splat(scalar(op->operand(0)), w);
      case OpKind::MultipleOf: case OpKind::MaxContiguous: return eval(op->operand(0), idx, w);
      case OpKind::Broadcast: {
        const Shape& s = op->operand(0)->type.shape;
        Index in(idx);
        for (size_t d = 0; d < s.size(); ++d)
          if (s[d] == 1 && t.shape[d] != 1) in[d] = {i32(0), 0, nullptr, int64_t(1) << 30};
        return eval(op->operand(0), in, w);
      }
      case OpKind::ExpandDims: {
        Index in(idx);
        in.erase(in.begin() + op->attrs.axis);
        return eval(op->operand(0), in, w);
      }
      case OpKind::Permute: {
        Index in(idx.size());
        for (size_t i = 0; i < idx.size(); ++i) in[op->attrs.ints[i]] = idx[i];
        return eval(op->operand(0), in, w);
      }
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

  // ---- elementwise arithmetic -------------------------------------------------------------

  Value* call_per_lane(const char* name32, const char* name64, Value* x, DType d) {
    bool dbl = d == DType::f64;
    llvm::Type* st = dbl ? b_.getDoubleTy() : b_.getFloatTy();
    llvm::FunctionCallee fnc = module_->getOrInsertFunction(dbl ? name64 : name32, st, st);
    int w = width_of(x);
    if (w == 0) return b_.CreateCall(fnc, {x});
    Value* out = llvm::UndefValue::get(x->getType());
    for (int i = 0; i < w; ++i) out = b_.CreateInsertElement(out, b_.CreateCall(fnc, {b_.CreateExtractElement(x, i)}), i);
    return out;
  }

  // expf for f32 scalars and vectors, inline (LLVM lowers llvm.exp.v16f32 to 16 libm calls):
  // n = round(x / ln 2), r = x - n ln 2 in two parts (Cody-Waite), exp(r) by Cephes' degree-6
  // polynomial (~1 ulp), times 2^n built in two halves so subnormal results come out right.
  // Overflow gives inf, underflow 0, NaN stays NaN.
  Value* exp_f32(Value* x) {
    llvm::Type* t = x->getType();
    llvm::Type* it = t->isVectorTy()
                         ? static_cast<llvm::Type*>(llvm::VectorType::get(b_.getInt32Ty(), llvm::cast<llvm::VectorType>(t)))
                         : b_.getInt32Ty();
    auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
    auto ci = [&](int v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v), true); };
    auto fma = [&](Value* a, Value* m, Value* add) {
      return b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {a, m, add});
    };
    const double hi = 88.72283935546875, lo = -103.97208404541015625;
    Value* xc = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, c(hi)), c(lo));
    Value* n = b_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b_.CreateFMul(xc, c(1.44269504088896341)));
    Value* r = fma(n, c(-0.693359375), xc);
    r = fma(n, c(2.12194440e-4), r);
    Value* p = c(1.9875691500e-4);
    for (double k : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1}) p = fma(p, r, c(k));
    Value* y = fma(b_.CreateFMul(p, r), r, b_.CreateFAdd(r, c(1.0)));  // p r^2 + r + 1
    Value* ni = b_.CreateFPToSI(n, it);
    Value* n1 = b_.CreateAShr(ni, ci(1)), *n2 = b_.CreateSub(ni, n1);
    auto pow2 = [&](Value* e) { return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, ci(127)), ci(23)), t); };
    y = b_.CreateFMul(b_.CreateFMul(y, pow2(n1)), pow2(n2));
    y = b_.CreateSelect(b_.CreateFCmpOGT(x, c(hi)), c(INFINITY), y);
    y = b_.CreateSelect(b_.CreateFCmpOLT(x, c(lo)), c(0.0), y);
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);
  }

  // Horner's rule with fused multiply-adds; `cs` from the highest power down.
  Value* horner(std::initializer_list<double> cs, Value* x) {
    llvm::Type* t = x->getType();
    auto it = cs.begin();
    Value* p = llvm::ConstantFP::get(t, *it++);
    for (; it != cs.end(); ++it)
      p = b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {p, x, llvm::ConstantFP::get(t, *it)});
    return p;
  }

  // tanhf for f32 scalars and vectors, inline (libm's would be called lane by lane, ~70x slower
  // than exp): Cephes' odd polynomial below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) with x's sign
  // above (exp overflowing to inf gives 1). Within 1.3 ulp of tanh on 450k sampled points
  // (modelling exp as correctly rounded); tanh(-0) = -0, NaN stays NaN.
  Value* tanh_f32(Value* x) {
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

  // erff for f32 scalars and vectors, inline: x Q(x^2) up to |x| = 0.921875 and
  // 1 - exp(R(|x|)) with x's sign above (R fits log(erfc)), 1 from |x| = 4 (erf rounds to 1 in
  // f32 from 3.92). Q (degree 5) and R (degree 8) are least-squares fits on Chebyshev nodes,
  // within 2.4 ulp of erf on 160k sampled points; NaN stays NaN.
  Value* erf_f32(Value* x) {
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

  Value* float_op(OpKind k, std::vector<Value*> x, DType d) {
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
      case OpKind::Exp2: r = un(llvm::Intrinsic::exp2); break;
      case OpKind::Log: r = un(llvm::Intrinsic::log); break;
      case OpKind::Log2: r = un(llvm::Intrinsic::log2); break;
      case OpKind::Sqrt: r = un(llvm::Intrinsic::sqrt); break;
      case OpKind::Rsqrt: r = b_.CreateFDiv(llvm::ConstantFP::get(x[0]->getType(), 1.0), un(llvm::Intrinsic::sqrt)); break;
      case OpKind::Abs: r = un(llvm::Intrinsic::fabs); break;
      case OpKind::Floor: r = un(llvm::Intrinsic::floor); break;
      case OpKind::Ceil: r = un(llvm::Intrinsic::ceil); break;
      case OpKind::Sin: r = un(llvm::Intrinsic::sin); break;
      case OpKind::Cos: r = un(llvm::Intrinsic::cos); break;
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

  Value* int_op(OpKind k, std::vector<Value*> x, DType d) {
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

  Value* compare(OpKind k, Value* a, Value* bv, DType d) {
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

  Value* cast(Value* v, DType from, DType to) {
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

  Value* elementwise(const ir::Op* op, const std::vector<Value*>& x) {
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

  // ---- memory -----------------------------------------------------------------------------

  // Lanes of this chunk are consecutive elements of `ptr` (so one vector access can move them).
  bool contiguous(const ir::Value* ptr, const Index& idx, int w) {
    if (w == 1) return true;
    for (size_t d = 0; d + 1 < idx.size(); ++d)
      if (idx[d].vec || idx[d].stride != 0) return false;
    const VIdx& last = idx.back();
    if (last.vec || last.stride != 1 || last.align % w != 0) return false;
    const AxisInfo& info = axis_.get(ptr);
    return info.contiguity.back() >= w;
  }

  Value* eval_load(const ir::Op* op, const Index& idx, int w) {
    const ir::Value* p = op->operand(0);
    DType d = p->type.pointee;
    llvm::Type* mt = mem_type(d);
    bool has_mask = op->operands.size() > 1, has_other = op->operands.size() > 2;
    Value* ptrs = eval(p, idx, w);
    Value* mask = has_mask ? eval(op->operand(1), idx, w) : nullptr;
    Value* other = has_other ? reg_to_mem(eval(op->operand(2), idx, w), d) : llvm::Constant::getNullValue(vec_of(mt, w));
    llvm::Align align(dtype_bytes(d));
    Value* v;
    if (contiguous(p, idx, w)) {
      Value* p0 = b_.CreateExtractElement(ptrs, uint64_t(0));
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
    } else {
      v = b_.CreateMaskedGather(vec_of(mt, w), ptrs, align, mask, other);
    }
    return mem_to_reg(v, d);
  }

  void emit_store(const ir::Op* op) {
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
    loop_nest(p->type.shape, w, [&](const Index& idx) {
      Value* ptrs = eval(p, idx, w);
      Value* v = reg_to_mem(eval(op->operand(1), idx, w), d);
      Value* mask = has_mask ? eval(op->operand(2), idx, w) : nullptr;
      if (contiguous(p, idx, w)) {
        Value* p0 = b_.CreateExtractElement(ptrs, uint64_t(0));
        if (mask)
          branch_on_all(mask, [&] { b_.CreateAlignedStore(v, p0, align); },
                        [&] { b_.CreateMaskedStore(v, p0, align, mask); });
        else
          b_.CreateAlignedStore(v, p0, align);
      } else {
        b_.CreateMaskedScatter(v, ptrs, align, mask);
      }
    });
  }

  // if (all lanes of mask) all(); else some(); then continues after both.
  void branch_on_all(Value* mask, const std::function<void()>& all, const std::function<void()>& some) {
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

  // if (cond) body(); cond may be null (always).
  void guarded(Value* cond, const std::function<void()>& body) {
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

  Value* scalar_load(const ir::Op* op) {
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

  // One atomic on one element; returns the old value (register type).
  Value* atomic_one(OpKind k, Value* ptr, Value* val, Value* cmp, DType d) {
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

  void emit_atomic(const ir::Op* op) {
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

  // ---- reductions, scans, dot ---------------------------------------------------------------

  // Emits a combine region on vectors (or scalars): args lhs..., rhs... -> yielded values.
  std::vector<Value*> combine(const ir::Block* region, const std::vector<Value*>& lhs, const std::vector<Value*>& rhs) {
    std::unordered_map<const ir::Value*, Value*> local;
    int w = width_of(lhs[0]);
    for (size_t i = 0; i < lhs.size(); ++i) local[region->args[i]] = lhs[i];
    for (size_t i = 0; i < rhs.size(); ++i) local[region->args[lhs.size() + i]] = rhs[i];
    auto get = [&](const ir::Value* v) -> Value* {
      if (auto it = local.find(v); it != local.end()) return it->second;
      return splat(scalar(v), w);  // a scalar from outside the region
    };
    for (const ir::Op* op : region->ops) {
      if (op->kind == OpKind::Yield) {
        std::vector<Value*> out;
        for (ir::Value* v : op->operands) out.push_back(get(v));
        return out;
      }
      Value* r;
      if (op->kind == OpKind::Constant) r = constant_of(op, w);
      else if (op->kind == OpKind::MultipleOf || op->kind == OpKind::MaxContiguous) r = get(op->operand(0));
      else if (ir::is_elementwise(op->kind)) {
        std::vector<Value*> xs;
        for (ir::Value* v : op->operands) xs.push_back(get(v));
        r = elementwise(op, xs);
      } else {
        fail(op->loc, "a reduce/scan combine function may only use elementwise operations; {} is not supported",
             ir::op_name(op->kind));
      }
      local[op->result()] = r;
    }
    fail("internal error: combine region without yield");
  }

  Value* shuffle_half(Value* v, int from, int n) {
    std::vector<int> m;
    for (int i = 0; i < n; ++i) m.push_back(from + i);
    return b_.CreateShuffleVector(v, m);
  }

  void emit_reduce(const ir::Op* op) {
    const Shape& s = op->operand(0)->type.shape;
    int axis = op->attrs.axis, r = static_cast<int>(s.size());
    size_t n = op->operands.size();
    const ir::Block* region = op->regions[0];
    bool scalar_out = op->result()->type.is_scalar();
    std::vector<Value*> outs;
    if (!scalar_out)
      for (ir::Value* res : op->results) outs.push_back(buffers_[res] = alloc_buffer(res->type));
    Shape out_shape = op->result()->type.shape;

    auto eval_inputs = [&](const Index& idx, int w) {
      std::vector<Value*> xs;
      for (ir::Value* x : op->operands) xs.push_back(eval(x, idx, w));
      return xs;
    };
    auto with_axis = [&](const Index& out_idx, VIdx k) {
      Index in(out_idx);
      in.insert(in.begin() + axis, k);
      return in;
    };

    if (axis == r - 1) {
      // Along the contiguous axis: lanes accumulate strided partial results, then a tree.
      int wk = lanes_for(s);
      auto body = [&](const Index& out_index) {
        // out_index comes from a 1-lane loop nest: its last dim has stride 1, which would move
        // along the wk lanes here; the lanes move along the reduced axis only.
        Index out_idx(out_index);
        for (VIdx& x : out_idx) x.stride = 0;
        std::vector<Value*> acc = eval_inputs(with_axis(out_idx, {i32(0), 1, nullptr, wk}), wk);
        if (s[axis] > wk)
          acc = emit_loop(i32(wk), i32(s[axis]), i32(wk), acc, [&](Value* k, std::vector<Value*> cur) {
            return combine(region, cur, eval_inputs(with_axis(out_idx, {k, 1, nullptr, wk}), wk));
          });
        for (int half = wk / 2; half >= 1; half /= 2) {
          std::vector<Value*> lo, hi;
          for (Value* v : acc) lo.push_back(shuffle_half(v, 0, half)), hi.push_back(shuffle_half(v, half, half));
          acc = combine(region, lo, hi);
        }
        for (size_t i = 0; i < n; ++i) {
          if (scalar_out) scalars_[op->results[i]] = b_.CreateExtractElement(acc[i], uint64_t(0));
          else write_buffer(outs[i], op->results[i]->type, out_idx, 1, acc[i]);
        }
      };
      if (scalar_out) body({});
      else loop_nest(out_shape, 1, body);
      return;
    }
    // Along an outer axis: vectorise across the last dim, combine one slice at a time.
    int w = lanes_for(out_shape);
    loop_nest(out_shape, w, [&](const Index& out_idx) {
      std::vector<Value*> acc = eval_inputs(with_axis(out_idx, {i32(0), 0, nullptr, int64_t(1) << 30}), w);
      if (s[axis] > 1)
        acc = emit_loop(i32(1), i32(s[axis]), i32(1), acc, [&](Value* k, std::vector<Value*> cur) {
          return combine(region, cur, eval_inputs(with_axis(out_idx, {k, 0, nullptr, 1}), w));
        });
      for (size_t i = 0; i < n; ++i) write_buffer(outs[i], op->results[i]->type, out_idx, w, acc[i]);
    });
  }

  void emit_scan(const ir::Op* op) {
    const Shape& s = op->operand(0)->type.shape;
    int axis = op->attrs.axis, r = static_cast<int>(s.size());
    bool reverse = op->attrs.flag;
    const ir::Block* region = op->regions[0];
    std::vector<Value*> outs;
    for (ir::Value* res : op->results) outs.push_back(buffers_[res] = alloc_buffer(res->type));
    Shape outer = s;
    outer.erase(outer.begin() + axis);
    int w = axis == r - 1 ? 1 : lanes_for(outer);
    int64_t len = s[axis];
    auto step = [&](const Index& o, Value* k, std::vector<Value*>* acc) {
      Index idx(o);
      Value* pos = reverse ? b_.CreateSub(i32(len - 1), k) : k;
      idx.insert(idx.begin() + axis, VIdx{pos, 0, nullptr, 1});
      std::vector<Value*> xs;
      for (ir::Value* x : op->operands) xs.push_back(eval(x, idx, w));
      std::vector<Value*> next = acc ? combine(region, *acc, xs) : xs;
      for (size_t i = 0; i < outs.size(); ++i) write_buffer(outs[i], op->results[i]->type, idx, w, next[i]);
      return next;
    };
    auto body = [&](const Index& o) {
      std::vector<Value*> acc = step(o, i32(0), nullptr);
      if (len > 1)
        emit_loop(i32(1), i32(len), i32(1), acc, [&](Value* k, std::vector<Value*> cur) { return step(o, k, &cur); });
    };
    if (outer.empty()) body({});
    else loop_nest(outer, w, body);
  }

  // ---- histogram, gather, split ----------------------------------------------------------

  // One element at a time: counts[x]++ where x is in [0, bins) and the mask holds.
  void emit_histogram(const ir::Op* op) {
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

  // Reads the materialised source at the index's positions (masked gathers); an index outside
  // [0, n) wraps modulo n (a power of two), so a bad index never reads outside the buffer.
  void emit_gather(const ir::Op* op) {
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

  void emit_split(const ir::Op* op) {
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

  // ---- dot --------------------------------------------------------------------------------
  //
  // out = a @ b + c on materialised row-major operands, as a register-blocked FMA micro-kernel:
  // a tile of `rows` x `chunks` vectors of C stays in registers across the whole K loop, and each
  // k loads the tile's vectors of B once and broadcasts one element of A per row. The operand
  // buffers are already packed (contiguous, the transposes resolved when they were materialised),
  // so no further packing pays. f16/bf16 and i8 operands are widened as they are read; the
  // accumulation is in f32 (f64 for f64, i32 for integers) and rounded to the result type once.

  struct DotArgs {
    const ir::Value *a, *b, *c;
    const ir::Type& result;
    Value *abuf, *bbuf, *out;
    DType compute;  // accumulation type
    int w;          // lanes per vector chunk of a row of C
  };

  struct MicroTile {
    int64_t rows, chunks;
  };

  // Among the tiles whose accumulators, plus the B vectors of one k and a broadcast A element,
  // fit the vector registers: the most FMAs per load (rows * v / (rows + v) for v registers of B
  // per k), then the fewest edge tiles, then wider (B is read along rows). AVX-512: 6 x 4 f32,
  // 6 x 2 f64 (two registers per 16 lanes); AVX2: 6 rows x 1 chunk of 16 f32.
  MicroTile micro_tile(DType compute, int w, int64_t M, int64_t chunks) {
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

  // The dot writes into c's buffer when c dies here: a materialised value whose only use is as
  // this dot's accumulator (not also an operand), in the same region (not re-read by a later trip
  // of an inner loop). Each tile reads its part of c before writing it, so the update is safe,
  // and a loop-carried accumulator is then neither copied nor given a second buffer.
  Value* dot_output_buffer(const ir::Op* op) {
    const ir::Value* c = op->operand(2);
    auto it = buffers_.find(c);
    const ir::Block* home = c->def ? c->def->parent : c->owner;
    bool only_accumulator = plan_.users(c).size() == 1 && c != op->operand(0) && c != op->operand(1);
    if (it != buffers_.end() && home == op->parent && only_accumulator && c->type == op->result()->type)
      return it->second;
    return alloc_buffer(op->result()->type);
  }

  void emit_dot(const ir::Op* op) {
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

  struct TileRange {
    int64_t begin, end, step;  // rows (or chunks) [begin, end) in tiles of `step`
  };

  void emit_dot_tiles(const DotArgs& d, TileRange rows, TileRange chunks) {
    if (rows.begin >= rows.end || chunks.begin >= chunks.end) return;
    emit_loop(rows.begin, rows.end, rows.step, [&](Value* i0) {
      emit_loop(chunks.begin * d.w, chunks.end * d.w, chunks.step * d.w,
                [&](Value* j0) { emit_dot_tile(d, i0, j0, rows.step, chunks.step); });
    });
  }

  // One rows x chunks tile of C at row i0, column j0: accumulators in registers over all of K.
  void emit_dot_tile(const DotArgs& d, Value* i0, Value* j0, int64_t rows, int64_t chunks) {
    const int w = d.w;
    auto row = [&](int64_t r) { return VIdx{b_.CreateAdd(i0, i32(r)), 0, nullptr, 1}; };
    auto col = [&](int64_t cc) { return VIdx{b_.CreateAdd(j0, i32(cc * w)), 1, nullptr, w}; };
    auto kidx = [&](Value* k) { return VIdx{k, 0, nullptr, 1}; };
    std::vector<Value*> init;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t cc = 0; cc < chunks; ++cc)
        init.push_back(cast(eval(d.c, {row(r), col(cc)}, w), d.result.dtype, d.compute));
    const int64_t K = d.a->type.shape[1];
    std::vector<Value*> acc = emit_loop(i32(0), i32(K), i32(1), init, [&](Value* k, std::vector<Value*> cur) {
      std::vector<Value*> bv(chunks);
      for (int64_t cc = 0; cc < chunks; ++cc)
        bv[cc] = cast(read_buffer(d.bbuf, d.b->type, {kidx(k), col(cc)}, w), d.b->type.dtype, d.compute);
      for (int64_t r = 0; r < rows; ++r) {
        Value* av = read_buffer(d.abuf, d.a->type, {row(r), kidx(k)}, 1);
        av = splat(cast(b_.CreateExtractElement(av, uint64_t(0)), d.a->type.dtype, d.compute), w);
        for (int64_t cc = 0; cc < chunks; ++cc) cur[r * chunks + cc] = multiply_add(av, bv[cc], cur[r * chunks + cc], d.compute);
      }
      return cur;
    });
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t cc = 0; cc < chunks; ++cc)
        write_buffer(d.out, d.result, {row(r), col(cc)}, w, cast(acc[r * chunks + cc], d.compute, d.result.dtype));
  }

  Value* multiply_add(Value* x, Value* y, Value* acc, DType d) {
    if (is_float(d)) return b_.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {x, y, acc});
    return b_.CreateAdd(acc, b_.CreateMul(x, y));
  }

  // ---- control flow -----------------------------------------------------------------------

  void emit_for(const ir::Op* op) {
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

  // while (before(carried)) carried = body(carried), carried values being scalars (the DSL
  // carries only scalars through a while loop): a header that evaluates the condition with phis.
  void emit_while(const ir::Op* op) {
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

  // Whether inline value v can be written straight into the buffer of loop argument `self`:
  // it reads no other loop-carried block, and reads `self` only at the element it writes (through
  // elementwise ops, `same_index`), so each element is read before it is overwritten.
  bool updatable_in_place(const ir::Value* v, const ir::Block* body, size_t self, bool same_index) {
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

  void emit_if(const ir::Op* op) {
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

  // ---- debugging ----------------------------------------------------------------------------

  Value* global_string(const std::string& s) { return b_.CreateGlobalStringPtr(s); }

  void emit_print(const ir::Op* op) {
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

  // A failing lane reports its row-major index and the payload values there (debug checks' address
  // and bounds, jit/passes/debug_checks.h); the first failure of the launch is raised after it.
  void emit_assert(const ir::Op* op) {
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

  // ---- ops in program order -------------------------------------------------------------------

  void emit_block(const ir::Block* block) {
    for (const ir::Op* op : block->ops) emit_op(op);
  }

  void emit_op(const ir::Op* op) {
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
      if (plan_.materialized(r)) {
        Value* buf = alloc_buffer(r->type);
        int w = lanes_for(r->type.shape);
        loop_nest(r->type.shape, w, [&](const Index& idx) { write_buffer(buf, r->type, idx, w, eval_op(op, idx, w)); });
        buffers_[r] = buf;
      }
      return;  // inline values are evaluated where they are used
    }
    scalars_[r] = emit_scalar(op);
  }

  Value* emit_scalar(const ir::Op* op) {
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

  // ---- the entry function ---------------------------------------------------------------------

  void emit_entry() {
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
};

}  // namespace

std::unique_ptr<llvm::Module> lower_to_llvm(ir::Function& f, const AxisInfoMap& axis, llvm::LLVMContext& ctx,
                                            const VectorRegisters& regs) {
  f.renumber();
  return Codegen(f, axis, ctx, regs).run();
}

}  // namespace tritium::jit::cpu
