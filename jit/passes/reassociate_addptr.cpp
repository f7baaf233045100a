#include "jit/passes/reassociate_addptr.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ir/builder.h"

namespace tritium::jit {
namespace {

using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::Shape;
using ir::Value;

// A trip of an inner loop costs this many times one of the loop around it.
constexpr double kTripWeight = 1024.0;
// Chains longer than this keep their order (permutations are tried exhaustively).
constexpr size_t kMaxTerms = 6;

Block* defining_block(const Value* v) { return v->def ? v->def->parent : v->owner; }

int block_depth(const Block* b) {
  int d = 0;
  for (; b && b->parent; b = b->parent->parent) ++d;
  return d;
}

int loop_depth(const Block* b) {
  int d = 0;
  for (; b && b->parent; b = b->parent->parent)
    if (b->parent->kind == OpKind::For || b->parent->kind == OpKind::While) ++d;
  return d;
}

// The op of `b` that is `op` or holds it in one of its regions (b is a block around op).
Op* ancestor_in(Block* b, Op* op) {
  while (op->parent != b) op = op->parent->parent;
  return op;
}

// The value a broadcast term stands for: broadcasts stripped; a splat's scalar.
Value* source(Value* v) {
  while (v->def && v->def->kind == OpKind::Broadcast) v = v->def->operand(0);
  if (v->def && v->def->kind == OpKind::Splat) v = v->def->operand(0);
  return v;
}

// What an addition at shape s costs: a nominal 32 elements for each dim that is not 1. The
// elements themselves would be the true count, but which of a [M, 1] and a [1, K] pointer block
// holds fewer registers a thread depends on the layouts, chosen later (tutorial 08's grouped
// GEMM: adding its [1, 32] column term before the [64, 1] rows took 40 more registers); a term
// moved to a shape with fewer dims is cheaper in any layout.
double nominal_elements(const Shape& s) {
  double n = 1;
  for (int64_t d : s)
    if (d > 1) n *= 32;
  return n;
}

// The shape holding both (each is the root's shape with some dims 1, or a scalar: empty).
Shape joined(const Shape& a, const Shape& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  Shape r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = std::max(a[i], b[i]);
  return r;
}

bool single_use(const Value* v) { return v->uses().size() == 1; }

struct Chain {
  Op* root = nullptr;
  Value* base = nullptr;              // the stripped base pointer
  std::vector<Value*> terms;          // stripped offsets, from the base up
  double original_cost = 0;           // of the additions inside loops (Cost::loop)
  bool in_loop = false;               // some addition of the chain is inside a loop
};

class Reassociator {
 public:
  explicit Reassociator(ir::Function& f) : f_(f), builder_(f) {}

  bool run() {
    std::vector<Op*> roots;
    f_.walk([&](Op* op) {
      // Scalar chains stay (their additions cost nothing here).
      if (op->kind == OpKind::AddPtr && op->result()->type.is_block() && !continues_chain(op->result()))
        roots.push_back(op);
    });
    bool changed = false;
    for (Op* root : roots) {
      Chain c = collect(root);
      if (!c.in_loop || c.terms.size() < 2 || c.terms.size() > kMaxTerms) continue;
      changed |= rebuild(c);
    }
    return changed;
  }

 private:
  // Whether v's only use is the pointer operand of an addptr, maybe through single-use
  // broadcasts / splats: v is then inside a longer chain, not its root.
  static bool continues_chain(const Value* v) {
    while (single_use(v)) {
      const ir::Use& u = v->uses()[0];
      if (u.operand != 0) return false;
      if (u.user->kind == OpKind::AddPtr) return true;
      if (u.user->kind != OpKind::Broadcast && u.user->kind != OpKind::Splat) return false;
      v = u.user->result();
    }
    return false;
  }

  Chain collect(Op* root) {
    Chain c;
    c.root = root;
    Op* cur = root;
    for (;;) {
      c.terms.push_back(source(cur->operand(1)));
      Cost k;
      add_step(k, cur->result()->type.shape, loop_depth(cur->parent));
      c.original_cost += k.loop;
      if (loop_depth(cur->parent) > 0) c.in_loop = true;
      Value* p = cur->operand(0);
      Value* q = p;  // through single-use views to the addptr below, if any
      while (single_use(q) && q->def && (q->def->kind == OpKind::Broadcast || q->def->kind == OpKind::Splat))
        q = q->def->operand(0);
      if (single_use(q) && q->def && q->def->kind == OpKind::AddPtr) {
        cur = q->def;
        continue;
      }
      c.base = source(p);
      break;
    }
    std::reverse(c.terms.begin(), c.terms.end());
    return c;
  }

  // Inside loops a trip costs its additions (an inner loop's trip kTripWeight times its outer
  // loop's). Additions before every loop run once: they only break ties, by the values they keep
  // live across the loop.
  struct Cost {
    double loop = 0, hoisted = 0;
    bool operator<(const Cost& o) const { return loop < o.loop || (loop == o.loop && hoisted < o.hoisted); }
  };
  static void add_step(Cost& k, const Shape& s, int depth) {
    // A scalar addition is one uniform instruction: free, so that no block of pointers is hoisted
    // to save one (test_cuda_codegen's hist: 32 -> 40 registers when it was counted).
    if (s.empty()) return;
    if (depth == 0) k.hoisted += nominal_elements(s);
    else k.loop += nominal_elements(s) * std::pow(kTripWeight, depth - 1);
  }

  Cost cost(const Chain& c, const std::vector<size_t>& order) const {
    Shape s = c.base->type.shape;
    int depth = loop_depth(defining_block(c.base));
    Cost total;
    for (size_t i : order) {
      s = joined(s, c.terms[i]->type.shape);
      depth = std::max(depth, loop_depth(defining_block(c.terms[i])));
      add_step(total, s, depth);
    }
    return total;
  }

  bool rebuild(Chain& c) {
    std::vector<size_t> order(c.terms.size()), best;
    std::iota(order.begin(), order.end(), 0);
    Cost best_cost;
    do {  // lexicographic: among equal costs the first found keeps the original order most
      Cost k = cost(c, order);
      if (best.empty() || k < best_cost) best_cost = k, best = order;
    } while (std::next_permutation(order.begin(), order.end()));
    // Rewritten only for fewer additions a trip: the fixed point of run_passes relies on it.
    if (!(best_cost.loop < c.original_cost * (1 - 1e-9))) return false;

    root_ = c.root;
    const ir::Type& root_type = c.root->result()->type;
    Value* cur = c.base;
    for (size_t i : best) {
      Value* t = c.terms[i];
      Shape s = joined(cur->type.shape, t->type.shape);
      Value* p = materialize(cur, s);
      Value* o = materialize(t, s);
      cur = emit(OpKind::AddPtr, {p, o}, root_type.with_shape(s));
    }
    cur = materialize(cur, root_type.shape);
    f_.replace_all_uses(c.root->result(), cur);
    return true;
  }

  // v at shape s (v's own shape or one it broadcasts to; s empty only where v is a scalar).
  Value* materialize(Value* v, const Shape& s) {
    if (v->type.shape == s) return v;
    OpKind k = v->type.is_scalar() ? OpKind::Splat : OpKind::Broadcast;
    return emit(k, {v}, v->type.with_shape(s));
  }

  // A new op in the innermost block that defines one of its operands, before the op of that block
  // that holds the chain's root: as far out of loops as its operands allow.
  Value* emit(OpKind k, std::vector<Value*> operands, const ir::Type& t) {
    Block* where = nullptr;
    for (Value* o : operands) {
      Block* b = defining_block(o);
      if (!where || block_depth(b) > block_depth(where)) where = b;
    }
    builder_.set_insertion_before(ancestor_in(where, root_));
    builder_.loc = root_->loc;
    return builder_.create1(k, std::move(operands), t);
  }

  ir::Function& f_;
  ir::Builder builder_;
  Op* root_ = nullptr;
};

}  // namespace

bool reassociate_pointer_chains(ir::Function& f) { return Reassociator(f).run(); }

}  // namespace tritium::jit
