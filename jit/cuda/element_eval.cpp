// Evaluation in the element-loop generator: a block value at an index (elementwise ops through
// scalar_expr.h, constants, arange, splat, broadcasts, expand_dims, permute, reshape, join, inline
// loads, register and buffer reads) and a scalar op's value.
#include "jit/cuda/codegen_impl.h"

namespace tritium::jit::cuda::detail {

std::string Codegen::scalar(const ir::Value* v) {
  auto it = scalars_.find(v);
  if (it == scalars_.end()) fail("internal error: scalar %{} of kernel {} was not emitted", v->id, f_.name);
  return it->second;
}

std::string Codegen::eval(const ir::Value* v, const Index& idx) {
  if (v->type.is_scalar()) return scalar(v);
  if (auto it = regs_.find(v); it != regs_.end()) {
    if (std::string r = register_at(it->second, v, idx); !r.empty()) return r;
    if (!buffers_.count(v))
      fail("internal error: register value %{} of kernel {} read at an element of another thread", v->id, f_.name);
  }
  if (!row_regs_.empty())
    if (std::string r = row_register_at(v, idx); !r.empty()) return r;
  if (auto it = buffers_.find(v); it != buffers_.end()) return fmt::format("{}[{}]", it->second, flatten(idx, v->type.shape));
  return eval_op(v->def, idx);
}

std::string Codegen::eval_op(const ir::Op* op, const Index& idx) {
  const ir::Type& t = op->result()->type;
  switch (op->kind) {
    case OpKind::Constant: return constant_of(op);
    case OpKind::Arange: return fmt::format("((int32_t)({}) + {})", idx[0], op->attrs.ints[0]);
    case OpKind::Splat: return scalar(op->operand(0));
    case OpKind::MultipleOf: case OpKind::MaxContiguous: return eval(op->operand(0), idx);
    case OpKind::Broadcast: {
      const Shape& s = op->operand(0)->type.shape;
      Index in(idx);
      for (size_t d = 0; d < s.size(); ++d)
        if (s[d] == 1 && t.shape[d] != 1) in[d] = "0";
      return eval(op->operand(0), in);
    }
    case OpKind::ExpandDims: {
      Index in(idx);
      in.erase(in.begin() + op->attrs.axis);
      return eval(op->operand(0), in);
    }
    case OpKind::Permute: {
      Index in(idx.size());
      for (size_t i = 0; i < idx.size(); ++i) in[static_cast<size_t>(op->attrs.ints[i])] = idx[i];
      return eval(op->operand(0), in);
    }
    case OpKind::Reshape: {
      const Shape& to = op->operand(0)->type.shape;
      if (!reshape_moves_elements(*op)) {
        // Only unit dims come or go: the other dims keep their index expressions (so a row
        // result reached through [M] -> [M, 1] is still recognised at its row: row_register_at).
        Index in(to.size(), "0");
        size_t d = 0;
        for (size_t i = 0; i < t.shape.size(); ++i) {
          if (t.shape[i] == 1) continue;
          while (to[d] == 1) ++d;
          in[d++] = idx[i];
        }
        return eval(op->operand(0), in);
      }
      std::string flat = tmp("int", flatten(idx, t.shape));
      auto st = strides_of(to);
      Index in(to.size());
      for (size_t d = 0; d < to.size(); ++d)
        in[d] = to[d] == 1 ? "0" : fmt::format("({} / {} % {})", flat, st[d], to[d]);
      return eval(op->operand(0), in);
    }
    case OpKind::Join: {  // [..., j]: a's element [...] where j == 0, b's where j == 1
      Index in(idx.begin(), idx.end() - 1);
      std::string a = eval(op->operand(0), in), b = eval(op->operand(1), in);
      return tmp(ctype(t.element()), fmt::format("({}) == 0 ? {} : {}", idx.back(), a, b));
    }
    case OpKind::Load: {
      if (auto it = vec_loads_.find(op); it != vec_loads_.end()) return fmt::format("{}[{}]", it->second, lane_);
      const ir::Value* p = op->operand(0);
      std::string ct = ctype(p->type.pointee);
      std::string ptr = eval(p, idx);
      if (op->operands.size() < 2) return tmp(ct, load_of(op, ptr));
      std::string mask = eval(op->operand(1), idx);
      std::string other = op->operands.size() > 2 ? eval(op->operand(2), idx) : ct + "{}";
      return tmp(ct, fmt::format("{} ? {} : {}", mask, load_of(op, ptr), other));
    }
    default: break;
  }
  if (ir::is_elementwise(op->kind)) {
    // A value equal over each aligned run of V elements (a mask `cols < N` with N a multiple of
    // 16) is computed at the chunk's first lane: the same expression in every lane, which the
    // compiler computes once per chunk instead of once per element.
    Index at(idx);
    if (lane_width_ > 1 && idx.back() == lane_index_ && axis_.contains(op->result()) &&
        axis_.get(op->result()).constancy.back() >= lane_width_)
      at.back() = lane_base_;
    std::string key = fmt::format("{}|{}", static_cast<const void*>(op), fmt::join(at, ","));
    if (const std::string* done = memo_find(key)) return *done;
    std::vector<std::string> xs;
    for (ir::Value* o : op->operands) xs.push_back(eval(o, at));
    std::string v = tmp(ctype(t.element()), elementwise(op, xs, nan_unseen(op->result())));
    memo_.back()[key] = v;
    return v;
  }
  fail("internal error: CUDA codegen cannot evaluate {} inline", ir::op_name(op->kind));
}

std::string Codegen::constant_of(const ir::Op* op) {
  const ir::Type& t = op->result()->type;
  if (t.is_ptr()) return fmt::format("({}){}ull", ctype(t.element()), static_cast<uint64_t>(op->attrs.ival));
  return constant(t.dtype, op->attrs.ival, op->attrs.fval, is_float(t.dtype));
}

std::string Codegen::emit_scalar(const ir::Op* op) {
  switch (op->kind) {
    case OpKind::Constant: return constant_of(op);
    case OpKind::ProgramId: return fmt::format("tt_pid{}", op->attrs.axis);
    case OpKind::NumPrograms: return fmt::format("tt_npid{}", op->attrs.axis);
    case OpKind::MultipleOf: case OpKind::MaxContiguous: return scalar(op->operand(0));
    case OpKind::Load: return scalar_load(op);
    default: break;
  }
  if (!ir::is_elementwise(op->kind)) fail("internal error: CUDA codegen has no scalar form of {}", ir::op_name(op->kind));
  std::vector<std::string> xs;
  for (ir::Value* o : op->operands) xs.push_back(scalar(o));
  return elementwise(op, xs, nan_unseen(op->result()));
}

}  // namespace tritium::jit::cuda::detail
