// Materialising a block value column by column (jit/cpu/codegen_impl.h, "transposed
// materialisation"): when its loads run contiguously in memory along the dim before the last but
// not along the last (a transposed view: a matmul's W^T or g^T tile), the ordinary nest, lanes
// along the last dim, gathers every element (llvm.masked.gather: ~10 ns an element on Zen 3's
// AVX2, scalarised; slow on Intel since the GDS microcode too). Instead, square tiles of wt x wt
// elements are read as wt vector loads along the dim before the last, transposed in registers by
// shuffles and written as wt row vectors. Stores the other way round (store_transposed): a value
// whose pointer runs down the columns (an NCHW output from a [pixels, channels] tile) is read as
// wt row vectors, transposed, and each column stored as one vector.
#include "jit/cpu/codegen_impl.h"

namespace tritium::jit::cpu::detail {

namespace {

// For each dim of a value in v's inline tree, the dim of v it is indexed by (-1: none, a dim
// that was broadcast or added by expand_dims).
using DimMap = std::vector<int>;

}  // namespace

int Codegen::transposed_lanes(const ir::Value* v) {
  const Shape& s = v->type.shape;
  const size_t r = s.size();
  if (r < 2 || v->type.dtype == DType::i1 || s[r - 1] < 4 || s[r - 2] < 4) return 0;
  const int dt = static_cast<int>(r) - 2, dl = static_cast<int>(r) - 1;
  int64_t wt = std::min<int64_t>({kLanes, regs_.bytes / dtype_bytes(v->type.dtype), s[r - 2], s[r - 1]});
  bool gathers_saved = false, ok = true;
  // Where (if anywhere) dims dt and dl of v sit in a value's dims.
  auto find = [](const DimMap& m, int want) {
    for (size_t i = 0; i < m.size(); ++i)
      if (m[i] == want) return static_cast<int>(i);
    return -1;
  };
  std::function<void(const ir::Value*, const DimMap&)> walk = [&](const ir::Value* x, const DimMap& m) {
    if (!ok || x->type.is_scalar()) return;
    const Shape& xs = x->type.shape;
    const int t = find(m, dt), l = find(m, dl);
    const bool varies_t = t >= 0 && xs[t] > 1, varies_l = l >= 0 && xs[l] > 1;
    if (buffers_.count(x)) {
      // Read with lanes along dt: a vector when dt is its innermost dim that is not 1, a splat
      // when x does not vary along dt; else a gather.
      auto inner = [&](int d) {  // d is the innermost dim of x that is not 1
        for (size_t e = d + 1; e < xs.size(); ++e)
          if (xs[e] > 1) return false;
        return true;
      };
      if (varies_t) ok &= inner(t);
      if (varies_l) gathers_saved |= !inner(l);  // a permuted buffer: rows gather
      return;
    }
    const ir::Op* op = x->def;
    if (!op) {
      ok = false;
      return;
    }
    switch (op->kind) {
      case OpKind::Load: {
        const AxisInfo& info = axis_.get(op->operand(0));
        if (varies_l && info.contiguity[l] >= std::min<int64_t>(kLanes, xs[l])) ok = false;  // vector loads already
        if (varies_t) {
          if (info.contiguity[t] < 4) ok = false;
          wt = std::min<int64_t>(wt, info.contiguity[t]);
          gathers_saved |= varies_l;
        } else if (varies_l) {
          ok = false;  // a row broadcast down the columns: one gather per column either way
        }
        for (const ir::Value* o : op->operands) walk(o, m);
        return;
      }
      case OpKind::Broadcast: case OpKind::MultipleOf: case OpKind::MaxContiguous: case OpKind::Splat:
      case OpKind::Constant:
        for (const ir::Value* o : op->operands) walk(o, m);
        return;
      case OpKind::ExpandDims: {
        DimMap in(m);
        in.erase(in.begin() + op->attrs.axis);
        walk(op->operand(0), in);
        return;
      }
      case OpKind::Permute: {
        DimMap in(m.size());
        for (size_t i = 0; i < m.size(); ++i) in[op->attrs.ints[i]] = m[i];
        walk(op->operand(0), in);
        return;
      }
      case OpKind::Arange:
        return;
      default:
        break;
    }
    if (!ir::is_elementwise(op->kind)) {
      ok = false;
      return;
    }
    for (const ir::Value* o : op->operands) walk(o, m);
  };
  DimMap identity(r);
  for (size_t i = 0; i < r; ++i) identity[i] = static_cast<int>(i);
  walk(v, identity);
  // wt: a power of two (the contiguity is one) that divides both dims (powers of two).
  return ok && gathers_saved && wt >= 4 ? static_cast<int>(wt) : 0;
}

std::vector<Value*> Codegen::transpose_square(std::vector<Value*> rows) {
  // Element (i, j) is lane j of rows[i]. Swapping the off-diagonal h x h blocks of every 2h x 2h
  // block, for h = n/2 down to 1, transposes the square: one two-input shuffle per vector and
  // stage (x86 lowers them to unpack, shufps, blend and lane permutes).
  const int n = static_cast<int>(rows.size());
  for (int h = n / 2; h >= 1; h /= 2) {
    std::vector<Value*> next(n);
    for (int i = 0; i < n; ++i) {
      if (i & h) continue;
      const int p = i + h;
      std::vector<int> lo(n), hi(n);  // lanes of concat(rows[i], rows[p]): rows[p] from n
      for (int j = 0; j < n; ++j) {
        lo[j] = (j & h) ? n + j - h : j;  // i keeps its low block, takes p's low block as its high one
        hi[j] = (j & h) ? n + j : j + h;  // p takes i's high block as its low one, keeps its high one
      }
      next[i] = b_.CreateShuffleVector(rows[i], rows[p], lo);
      next[p] = b_.CreateShuffleVector(rows[i], rows[p], hi);
    }
    rows = std::move(next);
  }
  return rows;
}

void Codegen::for_each_square(const Shape& s, int wt,
                              const std::function<void(const Index&, const VIdx&, const VIdx&)>& body) {
  const size_t r = s.size();
  Index idx(r);
  // Outer dims one at a time, then the squares: rows i0.., columns j0...
  std::function<void(size_t)> outer = [&](size_t d) {
    if (d + 2 < r) {
      emit_loop(0, s[d], 1, [&](Value* iv) {
        idx[d] = {iv, 0, nullptr, 1};
        outer(d + 1);
      });
      return;
    }
    auto tile_base = [&](Value* iv, int64_t size) { return VIdx{iv, 0, nullptr, size == wt ? int64_t(1) << 30 : wt}; };
    emit_loop(0, s[r - 2], wt, [&](Value* i0) {
      emit_loop(0, s[r - 1], wt, [&](Value* j0) { body(idx, tile_base(i0, s[r - 2]), tile_base(j0, s[r - 1])); });
    });
  };
  outer(0);
}

void Codegen::materialize_transposed(const ir::Value* v, Value* buf, int wt) {
  const ir::Type& t = v->type;
  const size_t r = t.shape.size();
  for_each_square(t.shape, wt, [&](const Index& idx, const VIdx& rows, const VIdx& cols) {
    // Columns j0.. as vectors down rows i0..., transposed into rows.
    std::vector<Value*> columns(wt);
    for (int j = 0; j < wt; ++j) {
      Index at(idx);
      at[r - 2] = {rows.base, 1, nullptr, rows.align};
      at[r - 1] = {b_.CreateAdd(cols.base, i32(j)), 0, nullptr, 1};
      columns[j] = eval(v, at, wt);
    }
    std::vector<Value*> out = transpose_square(std::move(columns));
    for (int i = 0; i < wt; ++i) {
      Index at(idx);
      at[r - 2] = {b_.CreateAdd(rows.base, i32(i)), 0, nullptr, 1};
      at[r - 1] = {cols.base, 1, nullptr, cols.align};
      write_buffer(buf, t, at, wt, out[i]);
    }
  });
}

int Codegen::transposed_store_lanes(const ir::Op* store) {
  const ir::Value* p = store->operand(0);
  const ir::Value* val = store->operand(1);
  const Shape& s = p->type.shape;
  const size_t r = s.size();
  const DType d = p->type.pointee;
  if (r < 2 || d == DType::i1 || val->type.dtype == DType::i1) return 0;
  const AxisInfo& info = axis_.get(p);
  const int64_t w = std::min<int64_t>(kLanes, s[r - 1]);
  if (info.contiguity[r - 1] >= w) return 0;  // rows already store as vectors
  // Neighbours down the columns are (likely) adjacent in memory: an NCHW output written from a
  // [pixels, channels] tile. The stride is a likelihood; each column vector is checked.
  if (info.stride[r - 2] != dtype_bytes(d)) return 0;
  const int64_t wt = std::min<int64_t>({kLanes, regs_.bytes / dtype_bytes(d), s[r - 2], s[r - 1]});
  if (wt < 4 || s[r - 2] % wt != 0 || s[r - 1] % wt != 0) return 0;
  return static_cast<int>(wt);
}

void Codegen::store_transposed(const ir::Op* op, int wt) {
  const ir::Value* p = op->operand(0);
  const ir::Value* val = op->operand(1);
  const bool has_mask = op->operands.size() > 2;
  const DType d = p->type.pointee;
  const Shape& s = p->type.shape;
  const size_t r = s.size();
  llvm::Type* mt = mem_type(d);
  llvm::Align align(dtype_bytes(d));
  std::vector<llvm::Constant*> iota;
  for (int i = 0; i < wt; ++i) iota.push_back(b_.getInt64(static_cast<uint64_t>(i)));
  Value* iota_v = llvm::ConstantVector::get(iota);
  for_each_square(s, wt, [&](const Index& idx, const VIdx& rows, const VIdx& cols) {
    // wt row vectors of the value (lanes along the last dim), transposed into columns.
    std::vector<Value*> row_vectors(wt);
    for (int i = 0; i < wt; ++i) {
      Index at(idx);
      at[r - 2] = {b_.CreateAdd(rows.base, i32(i)), 0, nullptr, 1};
      at[r - 1] = {cols.base, 1, nullptr, cols.align};
      row_vectors[i] = reg_to_mem(eval(val, at, wt), d);
    }
    std::vector<Value*> columns = transpose_square(std::move(row_vectors));
    for (int j = 0; j < wt; ++j) {
      Index at(idx);
      at[r - 2] = {rows.base, 1, nullptr, rows.align};
      at[r - 1] = {b_.CreateAdd(cols.base, i32(j)), 0, nullptr, 1};
      Value* ptrs = eval(p, at, wt);
      Value* mask = has_mask ? eval(op->operand(2), at, wt) : nullptr;
      if (all_lanes_on(mask)) mask = nullptr;
      // The column is one vector store when the lanes that are on write consecutive
      // elements from the first lane's address; else a scatter.
      Value* p0 = b_.CreateExtractElement(ptrs, uint64_t(0));
      Value* adjacent = b_.CreateICmpEQ(ptrs, b_.CreateGEP(mt, p0, iota_v));
      if (mask) adjacent = b_.CreateOr(adjacent, b_.CreateNot(mask));
      auto* vec_bb = llvm::BasicBlock::Create(ctx_, "tstore.vector", fn_);
      auto* scatter_bb = llvm::BasicBlock::Create(ctx_, "tstore.scatter", fn_);
      auto* cont = llvm::BasicBlock::Create(ctx_, "tstore.end", fn_);
      b_.CreateCondBr(b_.CreateAndReduce(adjacent), vec_bb, scatter_bb);
      b_.SetInsertPoint(vec_bb);
      if (mask)
        branch_on_all(mask, [&] { b_.CreateAlignedStore(columns[j], p0, align); },
                      [&] { b_.CreateMaskedStore(columns[j], p0, align, mask); });
      else
        b_.CreateAlignedStore(columns[j], p0, align);
      b_.CreateBr(cont);
      b_.SetInsertPoint(scatter_bb);
      b_.CreateMaskedScatter(columns[j], ptrs, align, mask);
      b_.CreateBr(cont);
      b_.SetInsertPoint(cont);
    }
  });
}

}  // namespace tritium::jit::cpu::detail
