// Reductions and scans in the CPU generator: combine regions on scalars or vectors, in-register
// halving of vectors, reductions along any axis and scans.
#include "jit/cpu/codegen_impl.h"

namespace tritium::jit::cpu::detail {

std::vector<Value*> Codegen::combine(const ir::Block* region, const std::vector<Value*>& lhs,
                                     const std::vector<Value*>& rhs) {
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

Value* Codegen::shuffle_half(Value* v, int from, int n) {
  std::vector<int> m;
  for (int i = 0; i < n; ++i) m.push_back(from + i);
  return b_.CreateShuffleVector(v, m);
}

void Codegen::emit_reduce(const ir::Op* op) {
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

  const std::vector<const ir::Value*> inputs(op->operands.begin(), op->operands.end());
  if (axis == r - 1) {
    // Along the contiguous axis: lanes accumulate strided partial results, then a tree. Up to
    // four accumulators take turns over the chunks (chunk c into accumulator c % u), so the
    // combines of consecutive chunks do not wait on each other (one chain of vector adds ran a
    // row of 1024 f32 at ~4 cycles a chunk); they are combined pairwise before the tree.
    int wk = lanes_for(s);
    const int64_t chunks = s[axis] / wk;
    int u = 1;
    for (int c : {4, 2})
      if (chunks % c == 0 && chunks / c >= 2) {
        u = c;
        break;
      }
    std::vector<Value*> scalar_results;
    auto body = [&](const Index& out_index) {
      // out_index comes from a 1-lane loop nest: its last dim has stride 1, which would move
      // along the wk lanes here; the lanes move along the reduced axis only.
      Index out_idx(out_index);
      for (VIdx& x : out_idx) x.stride = 0;
      auto chunk_at = [&](Value* k) { return eval_inputs(with_axis(out_idx, {k, 1, nullptr, wk}), wk); };
      std::vector<Value*> carried;  // accumulator j's n values at [j * n, (j + 1) * n)
      auto part = [&](const std::vector<Value*>& all, int j) {
        return std::vector<Value*>(all.begin() + j * n, all.begin() + (j + 1) * n);
      };
      for (int j = 0; j < u; ++j)
        for (Value* v : chunk_at(i32(j * wk))) carried.push_back(v);
      if (chunks > u)
        carried = emit_loop(i32(u * wk), i32(s[axis]), i32(u * wk), carried, [&](Value* k, std::vector<Value*> cur) {
          std::vector<Value*> next;
          for (int j = 0; j < u; ++j)
            for (Value* v : combine(region, part(cur, j), chunk_at(j == 0 ? k : b_.CreateAdd(k, i32(j * wk)))))
              next.push_back(v);
          return next;
        });
      for (int half = u / 2; half >= 1; half /= 2) {
        std::vector<Value*> merged;
        for (int j = 0; j < half; ++j)
          for (Value* v : combine(region, part(carried, j), part(carried, j + half))) merged.push_back(v);
        carried = merged;
      }
      std::vector<Value*> acc = carried;
      for (int half = wk / 2; half >= 1; half /= 2) {
        std::vector<Value*> lo, hi;
        for (Value* v : acc) lo.push_back(shuffle_half(v, 0, half)), hi.push_back(shuffle_half(v, half, half));
        acc = combine(region, lo, hi);
      }
      for (size_t i = 0; i < n; ++i) {
        if (scalar_out) scalar_results.push_back(b_.CreateExtractElement(acc[i], uint64_t(0)));
        else write_buffer(outs[i], op->results[i]->type, out_idx, 1, acc[i]);
      }
    };
    std::vector<Value*> results = versioned_on_masks({}, inputs, op->operand(0)->type.numel() / wk, [&] {
      scalar_results.clear();
      if (scalar_out) body({});
      else loop_nest(out_shape, 1, body);
      return scalar_results;
    });
    for (size_t i = 0; scalar_out && i < n; ++i) scalars_[op->results[i]] = results[i];
    return;
  }
  // Along an outer axis: vectorise across the last dim, combine one slice at a time.
  int w = lanes_for(out_shape);
  versioned_on_masks({}, inputs, op->operand(0)->type.numel() / w, [&] {
    loop_nest(out_shape, w, [&](const Index& out_idx) {
      std::vector<Value*> acc = eval_inputs(with_axis(out_idx, {i32(0), 0, nullptr, int64_t(1) << 30}), w);
      if (s[axis] > 1)
        acc = emit_loop(i32(1), i32(s[axis]), i32(1), acc, [&](Value* k, std::vector<Value*> cur) {
          return combine(region, cur, eval_inputs(with_axis(out_idx, {k, 0, nullptr, 1}), w));
        });
      for (size_t i = 0; i < n; ++i) write_buffer(outs[i], op->results[i]->type, out_idx, w, acc[i]);
    });
    return std::vector<Value*>{};
  });
}

void Codegen::emit_scan(const ir::Op* op) {
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
  // Along the last axis, rows of at least 8 elements go a chunk of W lanes at a time: an inclusive
  // scan inside the chunk in log2(W) steps (each lane combined with the lane s before it in scan
  // order, s = 1, 2, 4, ...: a combine region is associative, as Triton's scans require), then the
  // carry - the previous chunk's last element in scan order, broadcast - combined in front. One
  // thread, cummax over [1024, 1024] f32 rows: 16 scalar steps a chunk (loads, combine, stores) were
  // 4.4 ms against PyTorch's 0.94. Regions that divide stay scalar: a vector lane would combine
  // elements the scan never pairs (a division by zero the scalar loop would not make).
  bool divides = false;
  for (const ir::Op* c : region->ops) divides = divides || c->kind == OpKind::Div || c->kind == OpKind::Rem;
  const int W = axis == r - 1 && !divides ? lanes_for({len}) : 1;
  auto chunk = [&](const Index& o, Value* c, const std::vector<Value*>* carry) {
    Value* first = b_.CreateMul(c, i32(W));
    if (reverse) first = b_.CreateSub(i32(len - W), first);
    Index idx(o);
    for (VIdx& x : idx) x.stride = 0;  // the outer dims' loop ran one lane: scalars here
    idx.insert(idx.begin() + axis, VIdx{first, 1, nullptr, W});
    std::vector<Value*> cur;
    for (ir::Value* x : op->operands) cur.push_back(eval(x, idx, W));
    for (int sh = 1; sh < W; sh *= 2) {
      // Lane l's predecessor in scan order is l - sh (l + sh reversed); lanes without one keep
      // their value (the shuffle reads a real lane there, so the combine sees no poison).
      std::vector<int> from(W);
      std::vector<llvm::Constant*> has;
      for (int l = 0; l < W; ++l) {
        const int q = reverse ? l + sh : l - sh;
        from[l] = q >= 0 && q < W ? q : l;
        has.push_back(b_.getInt1(q >= 0 && q < W));
      }
      std::vector<Value*> before;
      for (Value* v : cur) before.push_back(b_.CreateShuffleVector(v, v, from));
      std::vector<Value*> both = combine(region, before, cur);
      Value* keep = llvm::ConstantVector::get(has);
      for (size_t i = 0; i < cur.size(); ++i) cur[i] = b_.CreateSelect(keep, both[i], cur[i]);
    }
    if (carry) cur = combine(region, *carry, cur);
    for (size_t i = 0; i < outs.size(); ++i) write_buffer(outs[i], op->results[i]->type, idx, W, cur[i]);
    std::vector<Value*> next;
    const int last = reverse ? 0 : W - 1;
    for (Value* v : cur) next.push_back(b_.CreateShuffleVector(v, v, std::vector<int>(W, last)));
    return next;
  };
  auto body = [&](const Index& o) {
    if (W >= 8) {
      std::vector<Value*> carry = chunk(o, i32(0), nullptr);
      if (len > W)
        emit_loop(i32(1), i32(len / W), i32(1), carry, [&](Value* c, std::vector<Value*> cur) { return chunk(o, c, &cur); });
      return;
    }
    std::vector<Value*> acc = step(o, i32(0), nullptr);
    if (len > 1)
      emit_loop(i32(1), i32(len), i32(1), acc, [&](Value* k, std::vector<Value*> cur) { return step(o, k, &cur); });
  };
  versioned_on_masks({}, std::vector<const ir::Value*>(op->operands.begin(), op->operands.end()),
                     op->operand(0)->type.numel() / std::max(w, 1), [&] {
                       if (outer.empty()) body({});
                       else loop_nest(outer, w, body);
                       return std::vector<Value*>{};
                     });
}

}  // namespace tritium::jit::cpu::detail
