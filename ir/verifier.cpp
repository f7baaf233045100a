#include "ir/verifier.h"

#include "ir/cache_hints.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/printer.h"

namespace tritium::ir {
namespace {

std::string type_of(const Value* v) { return v ? v->type.str() : "<null>"; }

std::string types_of(const std::vector<Value*>& vs) {
  std::string out;
  for (size_t i = 0; i < vs.size(); ++i) out += (i ? ", " : "") + type_of(vs[i]);
  return "(" + out + ")";
}

[[noreturn]] void reject(const Op& op, const std::string& why) {
  throw Error(op.loc, fmt::format("invalid IR: '{}': {}", op_name(op.kind), why));
}

void expect(bool ok, const Op& op, const std::string& why) {
  if (!ok) reject(op, why);
}

void expect_counts(const Op& op, size_t min_operands, size_t max_operands, size_t results) {
  size_t n = op.operands.size();
  if (n < min_operands || n > max_operands) {
    std::string want = min_operands == max_operands ? fmt::format("{}", min_operands)
                       : max_operands == SIZE_MAX   ? fmt::format("at least {}", min_operands)
                                                    : fmt::format("{} to {}", min_operands, max_operands);
    reject(op, fmt::format("expects {} operands, got {} {}", want, n, types_of(op.operands)));
  }
  if (op.results.size() != results)
    reject(op, fmt::format("expects {} results, got {}", results, op.results.size()));
}

void expect_no_regions(const Op& op) {
  expect(op.regions.empty(), op, fmt::format("takes no regions, got {}", op.regions.size()));
}

bool is_integer_type(const Type& t) { return is_int(t.dtype); }

// ---- values from nothing ----------------------------------------------------------------------

void verify_source(const Op& op) {
  expect_counts(op, 0, 0, 1);
  const Type& t = op.result()->type;
  switch (op.kind) {
    case OpKind::Constant:
      expect(t.dtype != DType::invalid, op, "constant of invalid dtype");
      break;
    case OpKind::ProgramId:
    case OpKind::NumPrograms:
      expect(t == Type::scalar(DType::i32), op, fmt::format("result must be i32, got {}", t.str()));
      expect(op.attrs.axis >= 0 && op.attrs.axis < 3, op, fmt::format("axis {} out of range [0, 3)", op.attrs.axis));
      break;
    case OpKind::Arange: {
      const auto& b = op.attrs.ints;
      expect(b.size() == 2 && b[1] > b[0], op, "needs ints = {start, end} with end > start");
      Type want = Type::block(DType::i32, {b[1] - b[0]});
      expect(t == want, op, fmt::format("result must be {}, got {}", want.str(), t.str()));
      break;
    }
    default: break;
  }
}

// ---- shape manipulation -----------------------------------------------------------------------

void verify_shape_op(const Op& op) {
  expect_counts(op, 1, 1, 1);
  const Type& in = op.operand(0)->type;
  const Type& out = op.result()->type;
  std::string types = fmt::format("{} -> {}", in.str(), out.str());
  expect(in.element() == out.element(), op, "element type changes: " + types);
  switch (op.kind) {
    case OpKind::Splat:
      expect(in.is_scalar() && out.is_block(), op, "needs a scalar operand and a block result: " + types);
      break;
    case OpKind::Broadcast: {
      expect(in.is_block() && in.rank() == out.rank(), op, "needs a block operand of the result's rank: " + types);
      for (int d = 0; d < in.rank(); ++d)
        expect(in.shape[d] == out.shape[d] || in.shape[d] == 1, op,
               fmt::format("dim {} of size {} cannot be broadcast to {}: {}", d, in.shape[d], out.shape[d], types));
      break;
    }
    case OpKind::ExpandDims: {
      int axis = op.attrs.axis;
      expect(axis >= 0 && axis <= in.rank(), op, fmt::format("axis {} out of range for {}", axis, in.str()));
      Shape want = in.shape;
      want.insert(want.begin() + axis, 1);
      expect(out.shape == want, op, fmt::format("result shape must be {}: {}", shape_str(want), types));
      break;
    }
    case OpKind::Reshape:
      expect(in.is_block() && out.is_block() && in.numel() == out.numel(), op,
             "needs blocks with the same number of elements: " + types);
      expect(op.attrs.ints.empty() || op.attrs.ints == out.shape, op,
             fmt::format("shape attribute {} differs from the result: {}", shape_str(op.attrs.ints), types));
      break;
    case OpKind::Permute: {
      const auto& perm = op.attrs.ints;
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      bool valid = static_cast<int>(perm.size()) == in.rank();
      for (size_t i = 0; valid && i < sorted.size(); ++i) valid = sorted[i] == static_cast<int64_t>(i);
      expect(valid, op, fmt::format("{} is not a permutation of the dims of {}", shape_str(perm), in.str()));
      Shape want;
      for (auto p : perm) want.push_back(in.shape[p]);
      expect(out.shape == want, op, fmt::format("result shape must be {}: {}", shape_str(want), types));
      break;
    }
    default: break;
  }
}

// ---- elementwise ------------------------------------------------------------------------------

int arity(OpKind k) {
  switch (k) {
    case OpKind::Neg: case OpKind::Not: case OpKind::Cast: case OpKind::Bitcast: return 1;
    case OpKind::Fma: case OpKind::Select: return 3;
    default: return k >= OpKind::Exp && k <= OpKind::Sigmoid ? 1 : 2;
  }
}

bool is_cmp(OpKind k) { return k >= OpKind::CmpEq && k <= OpKind::CmpGe; }

void verify_elementwise(const Op& op) {
  size_t n = static_cast<size_t>(arity(op.kind));
  expect_counts(op, n, n, 1);
  const Type& out = op.result()->type;
  std::string types = fmt::format("{} -> {}", types_of(op.operands), out.str());
  auto same_shape = [&](const Value* v) { return v->type.shape == out.shape; };
  for (const Value* v : op.operands) expect(same_shape(v), op, "operand and result shapes differ: " + types);

  switch (op.kind) {
    case OpKind::Cast:
      return;
    case OpKind::Bitcast:
      expect(dtype_bits(op.operand(0)->type.dtype) == dtype_bits(out.dtype), op, "bit widths differ: " + types);
      return;
    case OpKind::AddPtr:
      expect(out.is_ptr() && op.operand(0)->type == out, op, "needs a pointer operand of the result type: " + types);
      expect(is_integer_type(op.operand(1)->type) && !is_bool(op.operand(1)->type.dtype), op,
             "offset must be an integer: " + types);
      return;
    case OpKind::Select:
      expect(op.operand(0)->type.dtype == DType::i1, op, "condition must be i1: " + types);
      expect(op.operand(1)->type == out && op.operand(2)->type == out, op, "branches must have the result type: " + types);
      return;
    default: break;
  }
  if (is_cmp(op.kind)) {
    expect(out.dtype == DType::i1, op, "result must be i1: " + types);
    expect(op.operand(0)->type == op.operand(1)->type, op, "operand types differ: " + types);
    return;
  }
  for (const Value* v : op.operands) expect(v->type == out, op, "operand and result types differ: " + types);
  expect(!out.is_ptr(), op, "does not apply to pointers: " + types);
  switch (op.kind) {
    case OpKind::And: case OpKind::Or: case OpKind::Xor: case OpKind::Not:
    case OpKind::Shl: case OpKind::Shr: case OpKind::Umulhi:
      expect(is_int(out.dtype), op, "needs integer operands: " + types);
      break;
    case OpKind::Fma: case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2:
    case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Rcp: case OpKind::Floor: case OpKind::Ceil: case OpKind::Sin:
    case OpKind::Cos: case OpKind::Tanh: case OpKind::Erf: case OpKind::Sigmoid:
      expect(is_float(out.dtype), op, "needs float operands: " + types);
      break;
    default: break;
  }
}

// ---- memory -----------------------------------------------------------------------------------

// The type loaded/stored through `ptr`: the pointee with the pointer's shape.
Type pointee_type(const Type& ptr) { return Type::block(ptr.pointee, ptr.shape); }

void expect_pointer(const Op& op, const Value* ptr) {
  expect(ptr->type.is_ptr() && ptr->type.pointee != DType::invalid, op,
         fmt::format("first operand must be a pointer, got {}", ptr->type.str()));
}

void expect_mask(const Op& op, const Value* ptr, const Value* mask) {
  expect(mask->type == Type::block(DType::i1, ptr->type.shape), op,
         fmt::format("mask must be i1 of the pointer's shape: pointer {}, mask {}", ptr->type.str(), mask->type.str()));
}

void verify_memory(const Op& op) {
  const Value* ptr = op.operands.empty() ? nullptr : op.operand(0);
  switch (op.kind) {
    case OpKind::Load: {
      expect_counts(op, 1, 3, 1);
      expect_pointer(op, ptr);
      Type want = pointee_type(ptr->type);
      expect(op.result()->type == want, op,
             fmt::format("result must be {} for pointer {}, got {}", want.str(), ptr->type.str(), op.result()->type.str()));
      if (op.operands.size() >= 2) expect_mask(op, ptr, op.operand(1));
      if (op.operands.size() == 3)
        expect(op.operand(2)->type == want, op,
               fmt::format("'other' must be {}, got {}", want.str(), op.operand(2)->type.str()));
      const auto& f = op.attrs.ints;
      expect(f.empty() || ((f.size() == 2 || f.size() == 4) && f[0] == (op.operands.size() >= 2) &&
                           f[1] == (op.operands.size() == 3)),
             op, "flags {has_mask, has_other[, cache, eviction]} disagree with the operands");
      if (f.size() == 4)
        expect(f[2] >= 0 && f[2] <= static_cast<int64_t>(CacheModifier::cv) && f[3] >= 0 &&
                   f[3] <= static_cast<int64_t>(EvictionPolicy::evict_last),
               op, "cache modifier (.ca, .cg, .cv) or eviction policy out of range");
      break;
    }
    case OpKind::Store: {
      expect_counts(op, 2, 3, 0);
      expect_pointer(op, ptr);
      Type want = pointee_type(ptr->type);
      expect(op.operand(1)->type == want, op,
             fmt::format("value must be {} for pointer {}, got {}", want.str(), ptr->type.str(), op.operand(1)->type.str()));
      if (op.operands.size() == 3) expect_mask(op, ptr, op.operand(2));
      const auto& f = op.attrs.ints;
      expect(f.empty() || (f.size() == 2 && (f[0] == 0 || (f[0] >= static_cast<int64_t>(CacheModifier::cg) &&
                                                           f[0] <= static_cast<int64_t>(CacheModifier::wt) &&
                                                           f[0] != static_cast<int64_t>(CacheModifier::cv))) &&
                           f[1] >= 0 && f[1] <= static_cast<int64_t>(EvictionPolicy::evict_last)),
             op, "cache hints must be {cache modifier (.wb, .cg, .cs, .wt), eviction policy}");
      break;
    }
    case OpKind::AtomicCas: {
      expect_counts(op, 3, 3, 1);
      expect_pointer(op, ptr);
      Type want = pointee_type(ptr->type);
      for (size_t i = 1; i < 3; ++i)
        expect(op.operand(i)->type == want, op, fmt::format("operands must be {}, got {}", want.str(), types_of(op.operands)));
      expect(op.result()->type == want, op, fmt::format("result must be {}", want.str()));
      break;
    }
    default: {  // the other atomics: (ptr, val [, mask]) -> old
      expect_counts(op, 2, 3, 1);
      expect_pointer(op, ptr);
      Type want = pointee_type(ptr->type);
      expect(op.operand(1)->type == want, op, fmt::format("value must be {}, got {}", want.str(), op.operand(1)->type.str()));
      expect(op.result()->type == want, op, fmt::format("result must be {}, got {}", want.str(), op.result()->type.str()));
      if (op.operands.size() == 3) expect_mask(op, ptr, op.operand(2));
      break;
    }
  }
}

// ---- regions ----------------------------------------------------------------------------------

// The yield ending `region`, or nullptr if it has none.
const Op* terminator(const Block& region) {
  if (region.ops.empty() || region.ops.back()->kind != OpKind::Yield) return nullptr;
  return region.ops.back();
}

void expect_yield(const Op& op, const Block& region, const std::vector<Type>& types, const char* what) {
  const Op* y = terminator(region);
  if (!y) {
    expect(types.empty() && op.kind != OpKind::Reduce && op.kind != OpKind::Scan, op,
           fmt::format("{} region must end with 'yield'", what));
    return;
  }
  bool ok = y->operands.size() == types.size();
  for (size_t i = 0; ok && i < types.size(); ++i) ok = y->operands[i] && y->operands[i]->type == types[i];
  if (!ok) {
    std::string want;
    for (size_t i = 0; i < types.size(); ++i) want += (i ? ", " : "") + types[i].str();
    reject(op, fmt::format("{} region must yield ({}), yields {}", what, want, types_of(y->operands)));
  }
}

void expect_region_args(const Op& op, const Block& region, const std::vector<Type>& types, const char* what) {
  bool ok = region.args.size() == types.size();
  for (size_t i = 0; ok && i < types.size(); ++i) ok = region.args[i]->type == types[i];
  if (!ok) {
    std::string want;
    for (size_t i = 0; i < types.size(); ++i) want += (i ? ", " : "") + types[i].str();
    reject(op, fmt::format("{} region arguments must be ({}), got {}", what, want, types_of(region.args)));
  }
}

void verify_combine(const Op& op) {
  size_t n = op.operands.size();
  expect(n >= 1 && op.results.size() == n, op,
         fmt::format("expects N >= 1 operands and N results, got {} and {}", n, op.results.size()));
  expect(op.regions.size() == 1, op, fmt::format("needs one combine region, got {}", op.regions.size()));
  const Type& first = op.operand(0)->type;
  int axis = op.attrs.axis;
  expect(first.is_block(), op, "operands must be blocks, got " + first.str());
  expect(axis >= 0 && axis < first.rank(), op, fmt::format("axis {} out of range for {}", axis, first.str()));
  std::vector<Type> elements;
  for (size_t i = 0; i < n; ++i) {
    const Type& t = op.operand(i)->type;
    expect(t.shape == first.shape, op, "operand shapes differ: " + types_of(op.operands));
    elements.push_back(t.element());
    Type want = t;
    if (op.kind == OpKind::Reduce) {
      if (op.attrs.flag) want.shape[axis] = 1;
      else want.shape.erase(want.shape.begin() + axis);
    }
    expect(op.results[i]->type == want, op,
           fmt::format("result {} must be {}, got {}", i, want.str(), op.results[i]->type.str()));
  }
  std::vector<Type> args = elements;
  args.insert(args.end(), elements.begin(), elements.end());
  expect_region_args(op, *op.regions[0], args, "combine");
  expect_yield(op, *op.regions[0], elements, "combine");
}

void verify_for(const Op& op) {
  expect(op.operands.size() >= 3, op, fmt::format("expects lb, ub, step and inits, got {} operands", op.operands.size()));
  expect(op.regions.size() == 1, op, fmt::format("needs one body region, got {}", op.regions.size()));
  const Type& iv = op.operand(0)->type;
  expect(iv.is_scalar() && is_int(iv.dtype) && !is_bool(iv.dtype) && op.operand(1)->type == iv && op.operand(2)->type == iv,
         op, "lb, ub and step must be scalar integers of one type, got " + types_of({op.operands.begin(), op.operands.begin() + 3}));
  std::vector<Type> carried;
  for (size_t i = 3; i < op.operands.size(); ++i) carried.push_back(op.operands[i]->type);
  expect(op.results.size() == carried.size(), op,
         fmt::format("has {} loop-carried inits but {} results", carried.size(), op.results.size()));
  for (size_t i = 0; i < carried.size(); ++i)
    expect(op.results[i]->type == carried[i], op,
           fmt::format("result {} is {} but its init is {}", i, op.results[i]->type.str(), carried[i].str()));
  std::vector<Type> args{iv};
  args.insert(args.end(), carried.begin(), carried.end());
  expect_region_args(op, *op.regions[0], args, "body");
  expect_yield(op, *op.regions[0], carried, "body");
}

void verify_if(const Op& op) {
  expect_counts(op, 1, 1, op.results.size());
  expect(op.operand(0)->type == Type::scalar(DType::i1), op, "condition must be a scalar i1, got " + type_of(op.operand(0)));
  expect(op.regions.size() == 2, op, fmt::format("needs then and else regions, got {}", op.regions.size()));
  std::vector<Type> types;
  for (const Value* r : op.results) types.push_back(r->type);
  for (int r = 0; r < 2; ++r) {
    const char* what = r == 0 ? "then" : "else";
    expect(op.regions[r]->args.empty(), op, fmt::format("{} region takes no arguments", what));
    expect_yield(op, *op.regions[r], types, what);
  }
}

void verify_while(const Op& op) {
  expect(op.regions.size() == 2, op, fmt::format("needs before and body regions, got {}", op.regions.size()));
  std::vector<Type> carried;
  for (const Value* v : op.operands) carried.push_back(v->type);
  expect(op.results.size() == carried.size(), op,
         fmt::format("has {} loop-carried inits but {} results", carried.size(), op.results.size()));
  for (size_t i = 0; i < carried.size(); ++i)
    expect(op.results[i]->type == carried[i], op,
           fmt::format("result {} is {} but its init is {}", i, op.results[i]->type.str(), carried[i].str()));
  expect_region_args(op, *op.regions[0], carried, "before");
  expect_yield(op, *op.regions[0], {Type::scalar(DType::i1)}, "before");
  expect_region_args(op, *op.regions[1], carried, "body");
  expect_yield(op, *op.regions[1], carried, "body");
}

// ---- everything else --------------------------------------------------------------------------

void verify_misc(const Op& op) {
  switch (op.kind) {
    case OpKind::Dot: {
      expect_counts(op, 3, 4, 1);
      const Type &a = op.operand(0)->type, &b = op.operand(1)->type, &acc = op.operand(2)->type;
      if (op.operands.size() == 4)
        expect(op.operand(3)->type == Type::scalar(DType::i1), op, "use_acc must be a scalar i1, got " + type_of(op.operand(3)));
      std::string types = fmt::format("{} x {} + {} -> {}", a.str(), b.str(), acc.str(), op.result()->type.str());
      bool ok = a.rank() == 2 && b.rank() == 2 && acc.rank() == 2 && a.shape[1] == b.shape[0] &&
                acc.shape[0] == a.shape[0] && acc.shape[1] == b.shape[1];
      expect(ok, op, "needs [M,K] x [K,N] + [M,N]: " + types);
      expect(a.dtype == b.dtype, op, "operand dtypes differ: " + types);
      expect(op.result()->type == acc, op, "result must have the accumulator's type: " + types);
      expect(op.attrs.str.empty() ? a.dtype != DType::f32 : a.dtype == DType::f32 && is_input_precision(op.attrs.str), op,
             "input_precision (tf32, tf32x3 or ieee) is given for fp32 operands only, got \"" + op.attrs.str + "\" for " + types);
      break;
    }
    case OpKind::Histogram: {
      expect_counts(op, 1, 2, 1);
      const Type& x = op.operand(0)->type;
      const Type& out = op.result()->type;
      expect(x.is_block() && x.rank() == 1 && is_int(x.dtype) && x.dtype != DType::i1, op,
             "needs a 1-D block of integers, got " + x.str());
      expect(op.operands.size() < 2 || op.operand(1)->type == x.with_dtype(DType::i1), op,
             fmt::format("mask must be {}, got {}", x.with_dtype(DType::i1).str(), type_of(op.operand(op.operands.size() - 1))));
      expect(out.is_block() && out.rank() == 1 && out.dtype == DType::i32, op, "result must be [num_bins]i32, got " + out.str());
      break;
    }
    case OpKind::Gather: {
      expect_counts(op, 2, 2, 1);
      const Type &src = op.operand(0)->type, &idx = op.operand(1)->type, &out = op.result()->type;
      std::string types = fmt::format("gather({}, {}) -> {}", src.str(), idx.str(), out.str());
      expect(src.is_block() && idx.is_block() && src.rank() == idx.rank(), op, "needs blocks of one rank: " + types);
      expect(is_int(idx.dtype) && idx.dtype != DType::i1, op, "index must be integers: " + types);
      expect(op.attrs.axis >= 0 && op.attrs.axis < src.rank(), op, fmt::format("axis {} out of range: {}", op.attrs.axis, types));
      for (int d = 0; d < src.rank(); ++d)
        expect(d == op.attrs.axis || src.shape[d] == idx.shape[d], op, fmt::format("dim {} differs off the axis: {}", d, types));
      expect(out == idx.with_dtype(src.dtype), op, "result must have index's shape and src's dtype: " + types);
      break;
    }
    case OpKind::Join: {
      expect_counts(op, 2, 2, 1);
      const Type &a = op.operand(0)->type, &b = op.operand(1)->type;
      Shape want = a.shape;
      want.push_back(2);
      std::string types = fmt::format("join({}, {}) -> {}", a.str(), b.str(), op.result()->type.str());
      expect(a == b, op, "operands must have one type: " + types);
      expect(op.result()->type == a.with_shape(want), op, "result must add a minor dim of 2: " + types);
      break;
    }
    case OpKind::Split: {
      expect_counts(op, 1, 1, 2);
      const Type& x = op.operand(0)->type;
      expect(x.is_block() && x.rank() >= 1 && x.shape.back() == 2, op, "needs a block whose last dim is 2, got " + x.str());
      Shape want(x.shape.begin(), x.shape.end() - 1);
      Type half = want.empty() ? x.with_shape({}) : x.with_shape(want);
      for (const Value* r : op.results)
        expect(r->type == half, op, fmt::format("results must be {}, got {}", half.str(), r->type.str()));
      break;
    }
    case OpKind::Yield:
      expect(op.results.empty(), op, "has no results");
      expect(op.parent && op.parent->parent, op, "only ends a region");
      expect(op.parent->ops.back() == &op, op, "must be the last op of its region");
      break;
    case OpKind::Print:
      expect(op.results.empty(), op, "has no results");
      break;
    case OpKind::Assert:
      // (cond [, payload...]): debug checks report i64 payloads of the failing lane (jit/passes/debug_checks.h).
      expect_counts(op, 1, 4, 0);
      expect(op.operand(0)->type.dtype == DType::i1, op, "condition must be i1, got " + type_of(op.operand(0)));
      for (size_t i = 1; i < op.operands.size(); ++i)
        expect(op.operand(i)->type.dtype == DType::i64 &&
                   (op.operand(i)->type.is_scalar() || op.operand(i)->type.shape == op.operand(0)->type.shape),
               op, "payloads must be i64 scalars or blocks of the condition's shape, got " + type_of(op.operand(i)));
      break;
    case OpKind::DebugBarrier:
      expect_counts(op, 0, 0, 0);
      break;
    case OpKind::MultipleOf:
    case OpKind::MaxContiguous: {
      expect_counts(op, 1, 1, 1);
      const Type& t = op.operand(0)->type;
      expect(op.result()->type == t, op, fmt::format("result must be {}, got {}", t.str(), op.result()->type.str()));
      size_t dims = std::max(1, t.rank());
      expect(op.attrs.ints.size() == dims, op,
             fmt::format("needs one hint per dim ({}) of {}, got {}", dims, t.str(), op.attrs.ints.size()));
      for (auto h : op.attrs.ints) expect(h >= 1, op, fmt::format("hint {} must be >= 1", h));
      break;
    }
    case OpKind::ConvertLayout:
      expect_counts(op, 1, 1, 1);
      expect(op.result()->type == op.operand(0)->type && op.result()->type.is_block(), op,
             "converts a block to the same type, got " + type_of(op.operand(0)) + " -> " + op.result()->type.str());
      break;
    default:
      reject(op, "unknown op kind");
  }
}

void verify_op(const Op& op) {
  for (const Value* v : op.operands) expect(v != nullptr, op, "has a null operand");
  for (size_t i = 0; i < op.results.size(); ++i) {
    const Value* r = op.results[i];
    expect(r && r->def == &op && r->index == static_cast<int>(i), op, fmt::format("result {} is not owned by the op", i));
  }
  for (const Block* r : op.regions) expect(r->parent == &op, op, "region's parent is not the op");
  OpKind k = op.kind;
  bool has_regions = k == OpKind::For || k == OpKind::If || k == OpKind::While || k == OpKind::Reduce || k == OpKind::Scan;
  if (!has_regions) expect_no_regions(op);

  if (k <= OpKind::Arange) verify_source(op);
  else if (k <= OpKind::Permute) verify_shape_op(op);
  else if (is_elementwise(k)) verify_elementwise(op);
  else if (k >= OpKind::Load && k <= OpKind::AtomicCas) verify_memory(op);
  else if (k == OpKind::Reduce || k == OpKind::Scan) verify_combine(op);
  else if (k == OpKind::For) verify_for(op);
  else if (k == OpKind::If) verify_if(op);
  else if (k == OpKind::While) verify_while(op);
  else verify_misc(op);
}

// Walks blocks in program order with the set of values visible at each point: a value is visible
// after its definition in its own block and in regions nested below that point.
class ScopeChecker {
 public:
  void block(const Block& b) {
    std::vector<const Value*> added;
    auto define = [&](const Value* v) {
      visible_.insert(v);
      added.push_back(v);
    };
    for (const Value* a : b.args) define(a);
    for (const Op* op : b.ops) {
      if (op->parent != &b) reject(*op, "op's parent is not the block holding it");
      if (op->kind == OpKind::Yield && op != b.ops.back()) reject(*op, "must be the last op of its region");
      for (size_t i = 0; i < op->operands.size(); ++i) {
        const Value* v = op->operands[i];
        if (v && !visible_.count(v))
          reject(*op, fmt::format("operand {} ({}: {}) is not defined before use in a visible scope", i,
                                  print_value(v), v->type.str()));
      }
      verify_op(*op);
      for (const Block* r : op->regions) block(*r);
      for (const Value* r : op->results) define(r);
    }
    for (const Value* v : added) visible_.erase(v);
  }

 private:
  std::unordered_set<const Value*> visible_;
};

// Every operand slot is in its value's use list and every use list entry is such a slot: the
// passes rely on Value::uses to replace values without walking the function.
void check_uses(Function& f) {
  std::unordered_map<const Value*, size_t> slots;  // every value defined in f, with its slot count
  for (const Value* a : f.body->args) slots[a];
  f.walk([&](Op* op) {
    for (size_t i = 0; i < op->operands.size(); ++i) ++slots[op->operands[i]];
    for (const Value* r : op->results) slots[r];
    for (const Block* r : op->regions)
      for (const Value* a : r->args) slots[a];
  });
  for (const auto& [v, n] : slots) {
    bool ok = v->uses().size() == n;
    for (const Use& u : v->uses()) ok = ok && u.operand < u.user->operands.size() && u.user->operands[u.operand] == v;
    if (!ok)
      throw Error(fmt::format("invalid IR: function @{}: the use list of {} ({} entries) does not match its {} operand "
                              "slots",
                              f.name, print_value(v), v->uses().size(), n));
  }
}

}  // namespace

void verify(Function& f) {
  f.renumber();  // so messages can name values
  if (f.body->args.size() != f.params.size())
    throw Error(fmt::format("invalid IR: function @{} has {} params but {} body arguments", f.name, f.params.size(),
                            f.body->args.size()));
  for (size_t i = 0; i < f.params.size(); ++i) {
    const Value* a = f.body->args[i];
    if (a->type != f.params[i].type || !a->type.is_scalar())
      throw Error(fmt::format("invalid IR: function @{}: param {} ('{}') is {} but its argument is {}", f.name, i,
                              f.params[i].name, f.params[i].type.str(), a->type.str()));
    if (f.params[i].divisibility < 1)
      throw Error(fmt::format("invalid IR: function @{}: param {} has divisibility {}", f.name, i, f.params[i].divisibility));
  }
  ScopeChecker{}.block(*f.body);
  check_uses(f);
}

}  // namespace tritium::ir
