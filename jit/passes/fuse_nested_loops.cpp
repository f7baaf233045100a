#include "jit/passes/fuse_nested_loops.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "ir/builder.h"
#include "ir/clone.h"

namespace tritium::jit {

using ir::OpKind;
using ir::Type;
using ir::Value;

namespace {

// Whether `v` is defined inside `op` (in one of its regions, at any depth).
bool defined_inside(const Value* v, const ir::Op* op) {
  const ir::Block* b = v->is_block_arg() ? v->owner : v->def->parent;
  for (; b; b = b->parent ? b->parent->parent : nullptr)
    if (b->parent == op) return true;
  return false;
}

// Ops a fused loop may recompute every trip: no memory, no side effects, no regions.
bool recomputable(const ir::Op* op) {
  if (!op->regions.empty() || ir::has_side_effects(op->kind)) return false;
  switch (op->kind) {
    case OpKind::Load: case OpKind::Histogram: case OpKind::Dot: case OpKind::DebugBarrier: return false;
    default: return true;
  }
}

// Whether `v` has one value at every trip of `outer`: defined outside it, or by recomputable ops of
// its body's top level from such values (`tl::range(k_tiles)`'s 0 is a constant traced inside).
bool invariant(const Value* v, const ir::Op* outer, int depth = 0) {
  if (!defined_inside(v, outer)) return true;
  if (v->is_block_arg() || v->def->parent != outer->regions[0] || !recomputable(v->def) || depth > 32) return false;
  for (const Value* o : v->def->operands)
    if (!invariant(o, outer, depth + 1)) return false;
  return true;
}

// `v` (invariant in `outer`) at the builder's point, before `outer`: its ops inside cloned there.
Value* hoisted(ir::Builder& b, Value* v, const ir::Op* outer, ir::ValueMap& done) {
  if (!defined_inside(v, outer)) return ir::mapped(done, v);
  if (auto it = done.find(v); it != done.end()) return it->second;
  for (Value* o : v->def->operands) hoisted(b, o, outer, done);
  ir::clone_op(b, v->def, done);
  return done.at(v);
}

// An `if` with results of `types` at b's point, and its then and else blocks.
struct Branch {
  ir::Op* op;
  ir::Block* then_block;
  ir::Block* else_block;
};
Branch create_if(ir::Builder& b, Value* cond, const std::vector<Type>& types) {
  ir::Op* op = b.create(OpKind::If, {cond}, types);
  Branch br{op, b.function().new_block(op), b.function().new_block(op)};
  op->regions = {br.then_block, br.else_block};
  return br;
}

struct Nest {
  ir::Op* outer = nullptr;
  ir::Op* inner = nullptr;
  std::vector<ir::Op*> prologue, epilogue;  // the outer body's ops before and after the inner loop (no yield)
};

// The nest `outer` heads, if it can be fused.
bool flattenable(ir::Op* outer, Nest& nest) {
  const ir::Block* body = outer->regions[0];
  nest.outer = outer;
  for (ir::Op* op : body->ops) {
    if (op->kind == OpKind::Yield) continue;
    if (op->kind == OpKind::For && !nest.inner) {
      nest.inner = op;
      continue;
    }
    if (op->kind == OpKind::For || op->kind == OpKind::While) return false;  // one inner loop only
    (nest.inner ? nest.epilogue : nest.prologue).push_back(op);
  }
  if (!nest.inner) return false;
  for (const ir::Op* op : nest.prologue)
    if (!recomputable(op)) return false;
  for (size_t i = 0; i < 3; ++i)  // the inner trip count is the same at every outer trip
    if (!invariant(nest.inner->operand(i), outer)) return false;
  return true;
}

void fuse(ir::Function& f, const Nest& nest) {
  ir::Op* O = nest.outer;
  ir::Op* I = nest.inner;
  ir::Block* obody = O->regions[0];
  ir::Block* ibody = I->regions[0];
  const ir::Op* oyield = obody->ops.back();
  const ir::Op* iyield = ibody->ops.back();
  const size_t no = O->results.size(), ni = I->results.size();
  // Inner carried values advanced by a step the inner loop does not change (`a_ptrs += BK`) are
  // not carried by the fused loop: at inner trip j they are init + j * step, a function of the
  // fused counter that the pipeliner can compute for a later trip. The others are carried, reset
  // to their inits at each outer trip's first inner trip.
  std::vector<Value*> steps(ni, nullptr);
  std::vector<size_t> reset;
  for (size_t k = 0; k < ni; ++k) {
    Value* arg = ibody->args[k + 1];
    const ir::Op* d = iyield->operand(k)->def;
    if (d && d->parent == ibody && d->kind == OpKind::AddPtr && d->operand(0) == arg) {
      steps[k] = d->operand(1);
    } else if (d && d->parent == ibody && d->kind == OpKind::Add && is_int(arg->type.dtype) && arg->type.dtype != DType::i1) {
      if (d->operand(0) == arg) steps[k] = d->operand(1);
      else if (d->operand(1) == arg) steps[k] = d->operand(0);
    }
    if (steps[k] && (steps[k] == arg || !invariant(steps[k], I))) steps[k] = nullptr;
    if (!steps[k]) reset.push_back(k);
  }
  const Type to = O->operand(0)->type, tj = I->operand(0)->type;
  const Type tf = to.dtype == DType::i32 && tj.dtype == DType::i32 ? to : Type::scalar(DType::i64);
  const Type i64 = Type::scalar(DType::i64), i1 = Type::scalar(DType::i1);

  ir::Builder b(f);
  b.set_insertion_before(O);
  b.loc = O->loc;
  auto cast = [&](ir::Builder& bb, Value* v, const Type& t) { return v->type == t ? v : bb.create1(OpKind::Cast, {v}, t); };
  auto bin = [&](ir::Builder& bb, OpKind k, Value* x, Value* y) {
    const bool cmp = k >= OpKind::CmpEq && k <= OpKind::CmpGe;
    return bb.create1(k, {x, y}, cmp ? i1 : x->type);
  };
  // Trip counts in i64 (steps are positive: tl::range makes a non-positive run-time step run no trips).
  ir::Value* bounds[2][3];  // the loops' lb, ub, step before the nest
  ir::ValueMap done;
  for (size_t i = 0; i < 3; ++i) {
    bounds[0][i] = O->operand(i);
    bounds[1][i] = hoisted(b, I->operand(i), O, done);
  }
  auto trips = [&](Value* const* bd) {
    Value* lb = cast(b, bd[0], i64);
    Value* ub = cast(b, bd[1], i64);
    Value* st = cast(b, bd[2], i64);
    Value* n = bin(b, OpKind::Div, bin(b, OpKind::Add, bin(b, OpKind::Sub, ub, lb), bin(b, OpKind::Sub, st, b.constant_int(1, i64))), st);
    return b.create1(OpKind::Select, {bin(b, OpKind::CmpGt, ub, lb), n, b.constant_int(0, i64)}, i64);
  };
  Value* LI = trips(bounds[0]);
  Value* LJ = trips(bounds[1]);
  Value* zero64 = b.constant_int(0, i64);
  Value* cond = bin(b, OpKind::And, bin(b, OpKind::CmpGt, LI, zero64), bin(b, OpKind::CmpGt, LJ, zero64));
  // The fused counter must not wrap: LI * LJ within its type.
  const int64_t limit = tf.dtype == DType::i32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  Value* safe_lj = b.create1(OpKind::Max, {LJ, b.constant_int(1, i64)}, i64);
  cond = bin(b, OpKind::And, cond, bin(b, OpKind::CmpLe, LI, bin(b, OpKind::Div, b.constant_int(limit, i64), safe_lj)));

  std::vector<Type> otypes;
  for (const Value* r : O->results) otypes.push_back(r->type);
  const auto [version, then_block, else_block] = create_if(b, cond, otypes);

  // ---- then: the fused loop ----
  ir::Builder tb(f);
  tb.set_insertion_end(then_block);
  tb.loc = O->loc;
  // The inner loop's inits at the first outer trip (the prologue at i = lbi: pure, and LI > 0 here).
  ir::ValueMap first;
  first[obody->args[0]] = O->operand(0);
  for (size_t k = 0; k < no; ++k) first[obody->args[k + 1]] = O->operand(3 + k);
  for (const ir::Op* op : nest.prologue) ir::clone_op(tb, op, first);
  std::vector<Value*> inits;
  for (size_t k = 0; k < no; ++k) inits.push_back(O->operand(3 + k));
  for (size_t k : reset) inits.push_back(ir::mapped(first, I->operand(3 + k)));
  Value* total = cast(tb, tb.create1(OpKind::Mul, {LI, LJ}, i64), tf);
  // The inner trip count in the counter's type, before the loop: a divisor the loop does not change
  // (the CUDA backend divides by such with magic numbers made once).
  Value* lj = cast(tb, LJ, tf);
  Value* lj_last = bin(tb, OpKind::Sub, lj, tb.constant_int(1, tf));
  std::vector<Value*> operands{tb.constant_int(0, tf), total, tb.constant_int(1, tf)};
  operands.insert(operands.end(), inits.begin(), inits.end());
  std::vector<Type> ftypes;
  for (const Value* v : inits) ftypes.push_back(v->type);
  ir::Op* fused = tb.create(OpKind::For, operands, ftypes);
  ir::Block* fbody = f.new_block(fused);
  fused->regions.push_back(fbody);
  Value* t = f.add_block_arg(fbody, tf);
  std::vector<Value*> fargs;
  for (const Type& ty : ftypes) fargs.push_back(f.add_block_arg(fbody, ty));

  ir::Builder bb(f);
  bb.set_insertion_end(fbody);
  bb.loc = O->loc;
  Value* ti = bin(bb, OpKind::Div, t, lj);
  Value* tjv = bin(bb, OpKind::Sub, t, bin(bb, OpKind::Mul, ti, lj));
  ir::ValueMap m;
  m[obody->args[0]] = bin(bb, OpKind::Add, O->operand(0), bin(bb, OpKind::Mul, cast(bb, ti, to), O->operand(2)));
  for (size_t k = 0; k < no; ++k) m[obody->args[k + 1]] = fargs[k];
  for (const ir::Op* op : nest.prologue) ir::clone_op(bb, op, m);
  bb.loc = I->loc;
  m[ibody->args[0]] = bin(bb, OpKind::Add, bounds[1][0], bin(bb, OpKind::Mul, cast(bb, tjv, tj), bounds[1][2]));
  Value* starts = bin(bb, OpKind::CmpEq, tjv, bb.constant_int(0, tf));
  for (size_t r = 0; r < reset.size(); ++r) {
    Value* init = ir::mapped(m, I->operand(3 + reset[r]));
    Value* c = starts;
    if (init->type.is_block()) c = bb.create1(OpKind::Splat, {starts}, init->type.with_dtype(DType::i1));
    m[ibody->args[reset[r] + 1]] = bb.create1(OpKind::Select, {c, init, fargs[no + r]}, init->type);
  }
  for (size_t k = 0; k < ni; ++k) {
    if (!steps[k]) continue;
    Value* init = ir::mapped(m, I->operand(3 + k));
    const Type& ty = init->type;
    Value* step = hoisted(bb, steps[k], I, m);
    // j * step: pointers in i64 (the nest advanced them in 64-bit address arithmetic), integers in
    // their own type (where the nest's repeated adds wrap, so does the product).
    const Type st = ty.is_ptr() ? Type::scalar(DType::i64) : Type::scalar(ty.dtype);
    Value* j = cast(bb, tjv, st);
    Value* off = nullptr;
    if (step->type.is_scalar() || (step->def && step->def->kind == OpKind::Splat)) {
      Value* s0 = step->type.is_scalar() ? step : step->def->operand(0);
      off = bin(bb, OpKind::Mul, j, cast(bb, s0, st));
      if (ty.is_block()) off = bb.create1(OpKind::Splat, {off}, ty.with_dtype(st.dtype));
    } else {
      off = bin(bb, OpKind::Mul, bb.create1(OpKind::Splat, {j}, ty.with_dtype(st.dtype)), cast(bb, step, step->type.with_dtype(st.dtype)));
    }
    m[ibody->args[k + 1]] = ty.is_ptr() ? bb.create1(OpKind::AddPtr, {init, off}, ty) : bin(bb, OpKind::Add, init, off);
  }
  for (const ir::Op* op : ibody->ops)
    if (op != iyield) ir::clone_op(bb, op, m);
  std::vector<Value*> inner_next;
  for (size_t k = 0; k < ni; ++k) m[I->results[k]] = ir::mapped(m, iyield->operand(k));
  for (size_t k : reset) inner_next.push_back(m.at(I->results[k]));
  // The epilogue at each outer trip's last inner trip; the outer carried values pass otherwise.
  bb.loc = O->loc;
  Value* ends = bin(bb, OpKind::CmpEq, tjv, lj_last);
  const auto [epi, epi_then, epi_else] = create_if(bb, ends, otypes);
  {
    ir::Builder eb(f);
    eb.set_insertion_end(epi_then);
    for (const ir::Op* op : nest.epilogue) ir::clone_op(eb, op, m);
    std::vector<Value*> ys;
    for (Value* y : oyield->operands) ys.push_back(ir::mapped(m, y));
    eb.loc = oyield->loc;
    eb.create(OpKind::Yield, ys, {});
    eb.set_insertion_end(epi_else);
    eb.create(OpKind::Yield, std::vector<Value*>(fargs.begin(), fargs.begin() + static_cast<long>(no)), {});
  }
  std::vector<Value*> next(epi->results.begin(), epi->results.end());
  next.insert(next.end(), inner_next.begin(), inner_next.end());
  bb.create(OpKind::Yield, next, {});
  tb.create(OpKind::Yield, std::vector<Value*>(fused->results.begin(), fused->results.begin() + static_cast<long>(no)), {});

  // ---- else: the nest as written (no inner trip, or a count the fused counter cannot hold) ----
  for (size_t k = 0; k < no; ++k) f.replace_all_uses(O->results[k], version->results[k]);
  ir::Block* parent = O->parent;
  std::erase(parent->ops, O);
  O->parent = else_block;
  O->attrs.flag = false;
  else_block->ops.push_back(O);
  ir::Builder eb(f);
  eb.set_insertion_end(else_block);
  eb.loc = O->loc;
  eb.create(OpKind::Yield, std::vector<Value*>(O->results.begin(), O->results.end()), {});
}

}  // namespace

bool fuse_nested_loops(ir::Function& f) {
  std::vector<ir::Op*> loops;  // pre-order: reversed, inner nests come before the nests around them
  f.walk([&](ir::Op* op) {
    if (op->kind == OpKind::For && op->attrs.flag) loops.push_back(op);
  });
  bool changed = false;
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
    Nest nest;
    if (!flattenable(*it, nest)) continue;
    fuse(f, nest);
    changed = true;
  }
  return changed;
}

}  // namespace tritium::jit
