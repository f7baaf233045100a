#include "jit/passes/cse.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace tritium::jit {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Value;

bool is_commutative(OpKind k) {
  switch (k) {
    case OpKind::Add: case OpKind::Mul: case OpKind::And: case OpKind::Or: case OpKind::Xor:
    case OpKind::Min: case OpKind::Max: case OpKind::Umulhi: case OpKind::CmpEq: case OpKind::CmpNe:
      return true;
    default:
      return false;
  }
}

bool can_merge(const Op& op) {
  return !op.results.empty() && op.regions.empty() && !ir::has_side_effects(op.kind) && op.kind != OpKind::Load &&
         op.kind != OpKind::Yield;
}

// Attrs::operator== compares doubles by value (0.0 == -0.0, NaN != NaN); merging needs bits.
bool same_attrs(const ir::Attrs& a, const ir::Attrs& b) {
  return a.ival == b.ival && std::bit_cast<uint64_t>(a.fval) == std::bit_cast<uint64_t>(b.fval) && a.axis == b.axis &&
         a.flag == b.flag && a.ints == b.ints && a.str == b.str;
}

// What makes two ops interchangeable. Commutative operands are kept in pointer order, which
// decides only which pairs match, never which op survives.
struct Key {
  const Op* op;
  std::vector<Value*> operands;

  explicit Key(const Op* o) : op(o), operands(o->operands) {
    if (is_commutative(o->kind) && operands.size() == 2 && std::less<Value*>{}(operands[1], operands[0]))
      std::swap(operands[0], operands[1]);
  }

  bool operator==(const Key& other) const {
    const Op& a = *op;
    const Op& b = *other.op;
    if (a.kind != b.kind || operands != other.operands || a.results.size() != b.results.size()) return false;
    for (size_t i = 0; i < a.results.size(); ++i)
      if (a.results[i]->type != b.results[i]->type) return false;
    return same_attrs(a.attrs, b.attrs);
  }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<int>{}(static_cast<int>(k.op->kind));
    auto mix = [&](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    for (const Value* v : k.operands) mix(std::hash<const Value*>{}(v));
    mix(std::hash<int64_t>{}(k.op->attrs.ival));
    mix(std::hash<uint64_t>{}(std::bit_cast<uint64_t>(k.op->attrs.fval)));
    mix(std::hash<int>{}(k.op->attrs.axis));
    for (auto i : k.op->attrs.ints) mix(std::hash<int64_t>{}(i));
    return h;
  }
};

class Eliminator {
 public:
  explicit Eliminator(ir::Function& f) : f_(f) {}

  bool run() {
    block(f_.body);
    return changed_;
  }

 private:
  // Scopes are one map per open block; a lookup searches the innermost first.
  const Op* find(const Key& key) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(key);
      if (found != it->end()) return found->second;
    }
    return nullptr;
  }

  void block(ir::Block* b) {
    scopes_.emplace_back();
    std::vector<Op*> kept;
    kept.reserve(b->ops.size());
    for (Op* op : b->ops) {
      if (can_merge(*op)) {
        Key key(op);
        if (const Op* same = find(key)) {
          for (size_t i = 0; i < op->results.size(); ++i) f_.replace_all_uses(op->results[i], same->results[i]);
          f_.release_uses(op);
          changed_ = true;
          continue;  // dropped from the block
        }
        scopes_.back().emplace(key, op);
      }
      kept.push_back(op);
      for (ir::Block* r : op->regions) block(r);
    }
    b->ops = std::move(kept);
    scopes_.pop_back();
  }

  ir::Function& f_;
  std::vector<std::unordered_map<Key, const Op*, KeyHash>> scopes_;
  bool changed_ = false;
};

}  // namespace

bool eliminate_common_subexpressions(ir::Function& f) { return Eliminator(f).run(); }

}  // namespace tritium::jit
