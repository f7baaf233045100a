#include "jit/passes/index_width.h"

#include <unordered_map>

namespace tritium::jit {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Value;

bool is_shape_op(OpKind k) {
  return k == OpKind::Splat || k == OpKind::Broadcast || k == OpKind::ExpandDims || k == OpKind::Reshape ||
         k == OpKind::Permute || k == OpKind::MultipleOf || k == OpKind::MaxContiguous;
}

// Arithmetic whose result can leave the range of its operands' type.
bool can_grow(OpKind k) {
  return k == OpKind::Add || k == OpKind::Sub || k == OpKind::Mul || k == OpKind::Shl || k == OpKind::Neg ||
         k == OpKind::Fma;
}

class Analysis {
 public:
  explicit Analysis(ir::Function& f) : f_(f) {}

  std::vector<SourceLoc> run() {
    for (size_t i = 0; i < f_.body->args.size() && i < 64; ++i)
      if (f_.body->args[i]->type.is_ptr()) origins_[f_.body->args[i]] = uint64_t(1) << i;
    f_.walk([&](Op* op) { values(op); });
    // Pointers carried by loops and merged by branches take their origins from values defined
    // later in program order: repeat until nothing changes (each round only adds bits).
    for (bool changed = true; changed;) {
      changed = false;
      f_.walk([&](Op* op) { changed |= pointers(op); });
    }
    std::vector<SourceLoc> out(f_.params.size());
    f_.walk([&](Op* op) {
      if (op->kind != OpKind::AddPtr) return;
      const Value* off = op->operand(1);
      if (dtype_bits(off->type.dtype) > 32 || !risky_[off]) return;
      uint64_t bits = origin(op->operand(0));
      for (size_t i = 0; i < out.size() && i < 64; ++i)
        if ((bits >> i & 1) && !out[i].known()) out[i] = op->loc;
    });
    return out;
  }

 private:
  // varies: depends on a run-time value; risky: a <= 32-bit integer that arithmetic on run-time
  // values computed (or a narrowing cast of a run-time value), which may have wrapped.
  void values(Op* op) {
    bool any_varies = false, any_risky = false;
    for (Value* o : op->operands) {
      any_varies |= varies(o);
      any_risky |= risky_[o];
    }
    for (Value* r : op->results) {
      bool v, rk = false;
      switch (op->kind) {
        case OpKind::Constant: case OpKind::Arange: v = false; break;
        case OpKind::ProgramId: case OpKind::NumPrograms: case OpKind::Load: v = true; break;
        default: v = op->operands.empty() || any_varies; break;
      }
      if (is_int(r->type.dtype) && dtype_bits(r->type.dtype) <= 32) {
        if (can_grow(op->kind)) rk = any_varies;
        else if (op->kind == OpKind::Cast)
          rk = any_risky || (is_int(op->operand(0)->type.dtype) && dtype_bits(op->operand(0)->type.dtype) > 32 && any_varies);
        else if (op->kind != OpKind::Load && !(op->kind >= OpKind::AtomicAdd && op->kind <= OpKind::AtomicCas) &&
                 op->regions.empty())
          rk = any_risky;
      }
      varies_[r] = v;
      risky_[r] = rk;
    }
  }

  bool varies(const Value* v) {
    if (v->is_block_arg()) return true;  // parameters, induction variables, carried values
    auto it = varies_.find(v);
    return it == varies_.end() || it->second;
  }

  uint64_t origin(const Value* v) {
    auto it = origins_.find(v);
    return it == origins_.end() ? 0 : it->second;
  }

  bool add_origin(const Value* v, uint64_t bits) {
    if (!bits) return false;
    uint64_t& o = origins_[v];
    uint64_t before = o;
    o |= bits;
    return o != before;
  }

  // The parameters each pointer value may derive from; returns whether any set grew.
  bool pointers(Op* op) {
    bool changed = false;
    if (op->kind == OpKind::AddPtr || is_shape_op(op->kind)) {
      changed |= add_origin(op->result(), origin(op->operand(0)));
    } else if (op->kind == OpKind::Select) {
      changed |= add_origin(op->result(), origin(op->operand(1)) | origin(op->operand(2)));
    } else if (op->kind == OpKind::Join) {  // blocks of pointers moved within a block
      changed |= add_origin(op->result(), origin(op->operand(0)) | origin(op->operand(1)));
    } else if (op->kind == OpKind::Split || op->kind == OpKind::Gather) {
      for (Value* r : op->results) changed |= add_origin(r, origin(op->operand(0)));
    } else if (op->kind == OpKind::For) {
      // operands: lb, ub, step, init...; body args: iv, carried...; the yield: next values
      ir::Block* body = op->regions[0];
      const Op* yield = body->ops.empty() ? nullptr : body->ops.back();
      for (size_t i = 0; i + 3 < op->operands.size(); ++i) {
        uint64_t bits = origin(op->operand(3 + i));
        if (yield && yield->kind == OpKind::Yield && i < yield->operands.size()) bits |= origin(yield->operands[i]);
        changed |= add_origin(body->args[1 + i], bits);
        if (i < op->results.size()) changed |= add_origin(op->results[i], bits);
      }
    } else if (op->kind == OpKind::If) {
      for (const ir::Block* r : op->regions)
        if (!r->ops.empty() && r->ops.back()->kind == OpKind::Yield)
          for (size_t i = 0; i < op->results.size() && i < r->ops.back()->operands.size(); ++i)
            changed |= add_origin(op->results[i], origin(r->ops.back()->operands[i]));
    } else if (op->kind == OpKind::While) {
      // operands: init...; both regions take the carried values; the body's yield feeds them.
      const ir::Block* after = op->regions[1];
      const Op* yield = after->ops.empty() ? nullptr : after->ops.back();
      for (size_t i = 0; i < op->operands.size(); ++i) {
        uint64_t bits = origin(op->operand(i));
        if (yield && yield->kind == OpKind::Yield && i < yield->operands.size()) bits |= origin(yield->operands[i]);
        for (ir::Block* r : op->regions)
          if (i < r->args.size()) changed |= add_origin(r->args[i], bits);
        if (i < op->results.size()) changed |= add_origin(op->results[i], bits);
      }
    }
    return changed;
  }

  ir::Function& f_;
  std::unordered_map<const Value*, bool> varies_, risky_;
  std::unordered_map<const Value*, uint64_t> origins_;
};

}  // namespace

std::vector<SourceLoc> narrow_offsets(ir::Function& f) { return Analysis(f).run(); }

}  // namespace tritium::jit
