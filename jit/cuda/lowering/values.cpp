// Values that move nothing: constants, splats and aranges, views (broadcast, expand_dims, permute,
// reshape, hints: the registers relabelled), elementwise ops register by register, and scalars.
#include "jit/cuda/lowering/lowering.h"

namespace tritium::jit::cuda::lowering {

std::string Lowering::constant_of(const ir::Op* op) {
  const ir::Type& t = op->result()->type;
  if (t.is_ptr()) return fmt::format("({}){}ull", ctype(t.element()), static_cast<uint64_t>(op->attrs.ival));
  return constant(t.dtype, op->attrs.ival, op->attrs.fval, is_float(t.dtype));
}

std::string Lowering::emit_scalar(const ir::Op* op) {
  switch (op->kind) {
    case OpKind::Constant: return constant_of(op);
    case OpKind::ProgramId: return fmt::format("tt_pid{}", op->attrs.axis);
    case OpKind::NumPrograms: return fmt::format("tt_npid{}", op->attrs.axis);
    case OpKind::MultipleOf: case OpKind::MaxContiguous: return scalar(op->operand(0));
    case OpKind::Load: return scalar_load(op);
    default: break;
  }
  if (!ir::is_elementwise(op->kind))
    fail("internal error: the layout generator has no scalar form of {}", ir::op_name(op->kind));
  std::vector<std::string> xs;
  for (ir::Value* o : op->operands) xs.push_back(scalar(o));
  return element_op(op, xs);
}

// The divisor of a 32-bit Div / Rem as a scalar (a splat's), or null.
static const ir::Value* scalar_divisor(const ir::Op* op) {
  if ((op->kind != OpKind::Div && op->kind != OpKind::Rem) || dtype_bits(op->result()->type.dtype) != 32 ||
      !is_int(op->result()->type.dtype))
    return nullptr;
  const ir::Value* d = op->operand(1);
  if (d->type.is_block()) d = d->def && d->def->kind == OpKind::Splat ? d->def->operand(0) : nullptr;
  return d;
}

std::string Lowering::element_op(const ir::Op* op, const std::vector<std::string>& xs) {
  if (const ir::Value* d = scalar_divisor(op))
    if (auto it = fastdiv_.find({d, is_signed_int(op->result()->type.dtype)}); it != fastdiv_.end())
      return fmt::format("tt_{}_fast<{}>({}, {})", op->kind == OpKind::Div ? "div" : "rem", ctype(op->result()->type.element()),
                         xs[0], it->second);
  return elementwise(op, xs);
}

std::vector<std::pair<const ir::Value*, bool>> Lowering::plan_fast_division(const ir::Op* loop) {
  std::vector<std::pair<const ir::Value*, bool>> made;
  auto visit = [&](ir::Op* op) {
    const ir::Value* d = scalar_divisor(op);
    if (!d) return;
    const std::pair<const ir::Value*, bool> key{d, is_signed_int(op->result()->type.dtype)};
    if (fastdiv_.count(key) || (d->def && d->def->kind == OpKind::Constant)) return;
    // From before the loop (already emitted): a block argument of an enclosing region or an op outside.
    bool inside = false;
    for (const ir::Block* b = d->is_block_arg() ? d->owner : d->def->parent; b; b = b->parent ? b->parent->parent : nullptr)
      inside = inside || b->parent == loop;
    if (inside || !scalars_.count(d)) return;
    const std::string name = fresh("fd");
    line(fmt::format("const tt_fastdiv {} = tt_fastdiv_of((int32_t){}, {});", name, scalar(d), key.second ? "true" : "false"));
    fastdiv_[key] = name;
    made.push_back(key);
  };
  ir::Function::walk_block(const_cast<ir::Block*>(loop->regions[0]), visit);
  return made;
}

void Lowering::emit_source(const ir::Op* op) {
  const ir::Value* r = op->result();
  switch (op->kind) {
    case OpKind::Constant: set_uniform(r, constant_of(op)); return;
    case OpKind::Splat: set_uniform(r, scalar(op->operand(0))); return;
    case OpKind::Arange: {
      const Layout& l = layout(r);
      const int64_t start = op->attrs.ints[0];
      auto element = [&](const std::string& c) {
        return start ? fmt::format("(int32_t)({}) + {}", c, start) : fmt::format("(int32_t)({})", c);
      };
      define_regs(
          r, [&](int i) { return element(coord(l, i, 0)); },
          [&](const std::string& var) -> std::optional<std::string> {
            auto c = coord_expr(l, var, 0);
            if (!c) return std::nullopt;
            return element(*c);
          });
      return;
    }
    default: fail("internal error: {} is not a source op", ir::op_name(op->kind));
  }
}

void Lowering::emit_view(const ir::Op* op) {
  const ir::Value* x = op->operand(0);
  const ir::Value* r = op->result();
  if (x->type.is_scalar()) return set_uniform(r, scalar(x));
  const Val& in = val(x);
  if (in.kind == Val::Kind::Uniform) return set_uniform(r, in.name);
  if (in.kind == Val::Kind::Tile) {  // a view of a tile (a transposed dot operand): the same bytes
    Val& out = vals_[r];
    out = in;
    out.layout = &layout(r);
    return;
  }
  const Layout& to = layout(r);
  const std::vector<int> regs = view_regs(op);
  bool identity = static_cast<int>(regs.size()) == layout(x).num_regs();
  for (size_t i = 0; i < regs.size() && identity; ++i) identity = regs[i] == static_cast<int>(i);
  if (identity) {  // the same array
    Val& out = vals_[r];
    out = in;
    out.layout = &to;
    return;
  }
  define_mapped_regs(r, in, regs);
}

std::vector<int> Lowering::view_regs(const ir::Op* op) {
  const ir::Value* x = op->operand(0);
  const ir::Value* r = op->result();
  const Layout& from = layout(x);
  const Layout& to = layout(r);
  const ir::Shape& xs = x->type.shape;
  const ir::Shape& rs = r->type.shape;
  CoordMap map;
  switch (op->kind) {
    case OpKind::Broadcast:
      map = [&](const std::vector<int64_t>& c) {
        std::vector<int64_t> o = c;
        for (size_t d = 0; d < o.size(); ++d)
          if (xs[d] == 1) o[d] = 0;
        return o;
      };
      break;
    case OpKind::ExpandDims:
      map = [&](const std::vector<int64_t>& c) {
        std::vector<int64_t> o = c;
        o.erase(o.begin() + op->attrs.axis);
        return o;
      };
      break;
    case OpKind::Permute:
      map = [&](const std::vector<int64_t>& c) {
        std::vector<int64_t> o(c.size());
        for (size_t i = 0; i < c.size(); ++i) o[static_cast<size_t>(op->attrs.ints[i])] = c[i];
        return o;
      };
      break;
    case OpKind::Reshape:
      map = [&](const std::vector<int64_t>& c) {
        int64_t flat = 0;
        for (size_t d = 0; d < c.size(); ++d) flat = flat * rs[d] + c[d];
        std::vector<int64_t> o(xs.size());
        for (size_t d = xs.size(); d-- > 0;) o[d] = flat % xs[d], flat /= xs[d];
        return o;
      };
      break;
    default: break;  // hints: the same elements
  }
  auto regs = register_map(from, to, map);
  if (!regs)
    fail("internal error: {} at {} from {} to {} moves data between threads", ir::op_name(op->kind), op->loc.str(),
         from.str(), to.str());
  return *regs;
}

bool Lowering::only_dot_operand_reads(const ir::Value* v) const {
  bool any = false, other = false;
  std::vector<const ir::Value*> work{v};
  while (!work.empty() && !other) {
    const ir::Value* x = work.back();
    work.pop_back();
    f_.walk([&](ir::Op* u) {
      for (size_t i = 0; i < u->operands.size(); ++i) {
        if (u->operand(i) != x) continue;
        if (u->kind == OpKind::ConvertLayout || u->kind == OpKind::Permute) work.push_back(u->result());
        else if (u->kind == OpKind::Dot && i < 2) any = true;
        else other = true;
      }
    });
  }
  return any && !other;
}

// Whether addptr `op` is best one IMAD.WIDE an element (tt_addptr) rather than the C++ form
// p + (int64_t)off, which NVVM reassociates but ptxas turns into SHF + LEA + LEA.HI.X. The asm
// form wins for a block of addresses that memory ops take as they are, whose offset varies over
// more of a thread's registers than its pointer (FlagGems' im2col gather: one row pointer a
// thread, 32 channel offsets: 623 -> 407 SASS instructions a K trip, 128 -> 96 registers). It
// loses where the pointer varies more (tutorial 08's epilogue, 32 row pointers and one column
// offset a thread: 128 -> 168 registers), or the offset is an arange or a constant (NVVM folds
// each register's constant into an immediate of one base), or the result is added to again.
bool Lowering::wide_address(const ir::Op* op) const {
  const ir::Value* r = op->result();
  const DType od = op->operand(1)->type.dtype;
  if (!r->type.is_block() || !r->has_uses() || (od != DType::i32 && od != DType::u32)) return false;
  for (const ir::Use& u : r->uses())
    if (u.operand != 0 || !(u.user->kind == OpKind::Load || u.user->kind == OpKind::Store ||
                            (u.user->kind >= OpKind::AtomicAdd && u.user->kind <= OpKind::AtomicCas)))
      return false;
  auto source = [](const ir::Value* v) {
    while (v->def && (v->def->kind == OpKind::Broadcast || v->def->kind == OpKind::ExpandDims ||
                      v->def->kind == OpKind::Splat || v->def->kind == OpKind::ConvertLayout ||
                      v->def->kind == OpKind::MultipleOf || v->def->kind == OpKind::MaxContiguous))
      v = v->def->operand(0);
    return v;
  };
  const ir::Value* off = source(op->operand(1));
  if (off->type.is_scalar() || (off->def && (off->def->kind == OpKind::Constant || off->def->kind == OpKind::Arange)))
    return false;
  const ir::Value* p = source(op->operand(0));
  const int p_regs = p->type.is_scalar() ? 1 : layout(p).num_regs();
  return p_regs < layout(off).num_regs();
}

void Lowering::emit_elementwise(const ir::Op* op) {
  const ir::Value* r = op->result();
  std::vector<const Val*> in;
  bool uniform = true;
  for (const ir::Value* o : op->operands) {
    if (o->type.is_scalar()) {
      in.push_back(nullptr);
      continue;
    }
    const Val& v = val(o);
    if (v.kind == Val::Kind::Tile) fail("internal error: elementwise {} of a shared-memory tile", ir::op_name(op->kind));
    uniform = uniform && v.kind == Val::Kind::Uniform;
    in.push_back(&v);
  }
  // f32 -> bf16 for nothing but dots' A / B operands (through layout conversions and transposes):
  // the tensor cores turn any NaN into the same NaN, so the rounding skips its NaN fix-up.
  const bool dot_operand_bf16 = op->kind == OpKind::Cast && r->type.dtype == DType::bf16 &&
                                op->operand(0)->type.dtype == DType::f32 && only_dot_operand_reads(r);
  const bool wide = op->kind == OpKind::AddPtr && wide_address(op);
  auto element = [&](const std::string& idx) {
    std::vector<std::string> xs;
    for (size_t i = 0; i < op->operands.size(); ++i) {
      if (!in[i]) xs.push_back(scalar(op->operand(i)));
      else if (in[i]->kind == Val::Kind::Uniform) xs.push_back(in[i]->name);
      else xs.push_back(fmt::format("{}[{}]", in[i]->name, idx));
    }
    if (dot_operand_bf16) return fmt::format("tt_bf16_from_rn({})", xs[0]);
    if (wide) return wide_addptr(xs[0], xs[1], op->operand(1)->type.dtype);
    return element_op(op, xs);
  };
  if (uniform) return set_uniform(r, tmp(ctype(r->type.element()), element("")));
  // An operand array nothing else reads takes the result (element r from element r): a carried
  // accumulator stays in its registers through `acc * alpha` and the dot after it, so a wgmma group
  // in flight into the next trip is never copied (a copy would wait for it).
  for (size_t i = 0; i < op->operands.size(); ++i) {
    const ir::Value* o = op->operand(i);
    if (!in[i] || !reusable(o, op) || o->type.element() != r->type.element() ||
        layout(o).num_regs() != layout(r).num_regs())
      continue;
    const std::string name = in[i]->name;
    std::string expr = element("tt_r");
    line("#pragma unroll");
    line(fmt::format("for (int tt_r = 0; tt_r < {}; ++tt_r) {}[tt_r] = {};", layout(r).num_regs(), name, expr));
    vals_.erase(o);
    Val& out = vals_[r];
    out.kind = Val::Kind::Regs;
    out.name = name;
    out.layout = &layout(r);
    return;
  }
  Val& out = declare_regs(r);
  line("#pragma unroll");
  line(fmt::format("for (int tt_r = 0; tt_r < {}; ++tt_r) {}[tt_r] = {};", layout(r).num_regs(), out.name, element("tt_r")));
}

}  // namespace tritium::jit::cuda::lowering
