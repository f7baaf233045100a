// tl:: reductions and scans: a Reduce/Scan op whose region is the traced combine function.
#include <algorithm>

#include "dsl/early_exit.h"
#include "dsl/ops.h"
#include "dsl/semantic.h"

namespace tritium::tl {

using ir::OpKind;
using ir::Shape;
using ir::Type;
using ir::Value;

namespace {

SourceLoc L(const loc_t& l) { return SourceLoc::from(l); }

// Common checks; returns the inputs (flattened when axis is None) and the normalised axis.
std::vector<Value*> prepare_inputs(const char* op, const std::vector<tensor>& xs, axis_t& axis, const SourceLoc& loc) {
  if (xs.empty()) fail(loc, "tl::{}: needs at least one input", op);
  std::vector<Value*> vs;
  for (auto& x : xs) {
    Value* v = x.value();
    if (v->type.is_scalar()) fail(loc, "tl::{}: expects a block, got scalar {}", op, dsl::describe(v));
    if (v->type.is_ptr()) fail(loc, "tl::{}: cannot reduce pointers ({})", op, dsl::describe(v));
    if (!vs.empty() && v->type.shape != vs[0]->type.shape)
      fail(loc, "tl::{}: inputs have different shapes {} and {}", op, dsl::describe(vs[0]), dsl::describe(v));
    vs.push_back(v);
  }
  if (!axis) {
    for (auto& v : vs)
      if (v->type.rank() > 1) v = reshape(tensor(v), {v->type.numel()}, std::source_location::current()).value();
    axis = 0;
  }
  int r = vs[0]->type.rank();
  int a = *axis < 0 ? *axis + r : *axis;
  if (a < 0 || a >= r) fail(loc, "tl::{}: axis {} is out of range for {} (rank {})", op, *axis, dsl::describe(vs[0]), r);
  axis = a;
  return vs;
}

// Traces `combine` into `region`: args are 2N scalars (lhs..., rhs...), the results are yielded.
void trace_combine(const char* op, ir::Op* owner, const std::vector<Value*>& inputs, const combineN_t& combine,
                   const SourceLoc& loc) {
  ir::Builder& b = dsl::builder(op, loc);
  dsl::check_nesting(op, loc, b);
  ir::Function& f = b.function();
  ir::Block* outer = b.block();
  ir::Block* region = f.new_block(owner);
  owner->regions.push_back(region);
  size_t n = inputs.size();
  std::vector<tensor> lhs, rhs;
  for (size_t i = 0; i < n; ++i) lhs.emplace_back(f.add_block_arg(region, inputs[i]->type.element()));
  for (size_t i = 0; i < n; ++i) rhs.emplace_back(f.add_block_arg(region, inputs[i]->type.element()));
  b.set_insertion_end(region);
  dsl::NoReturnScope no_return;
  std::vector<tensor> out;
  try {
    out = combine(std::span<const tensor>(lhs), std::span<const tensor>(rhs));
  } catch (...) {
    b.set_insertion_end(outer);
    throw;
  }
  if (out.size() != n)
    fail(loc, "tl::{}: the combine function returned {} values for {} inputs", op, out.size(), n);
  std::vector<Value*> ys;
  for (size_t i = 0; i < n; ++i) {
    Value* v = out[i].value();
    if (v->type != inputs[i]->type.element())
      fail(loc, "tl::{}: the combine function returned {} for input {} of type {}; it must keep the element type",
           op, dsl::describe(v), i, inputs[i]->type.element().str());
    ys.push_back(v);
  }
  b.loc = loc;
  b.create(OpKind::Yield, ys, {});
  b.set_insertion_end(outer);
}

Value* keep(Value* v, int axis, int rank, bool all, const SourceLoc& loc) {
  if (all) {
    Shape ones(rank, 1);
    ir::Attrs a;
    if (v->type.is_scalar()) return dsl::builder("reduce", loc).create1(OpKind::Splat, {v}, v->type.with_shape(ones));
    a.ints = ones;
    return dsl::builder("reduce", loc).create1(OpKind::Reshape, {v}, v->type.with_shape(ones), a);
  }
  Shape s = v->type.shape;
  s.insert(s.begin() + axis, 1);
  if (v->type.is_scalar()) return dsl::builder("reduce", loc).create1(OpKind::Splat, {v}, v->type.with_shape(s));
  ir::Attrs a;
  a.axis = axis;
  return dsl::builder("reduce", loc).create1(OpKind::ExpandDims, {v}, v->type.with_shape(s), a);
}

std::vector<tensor> reduce_impl(const char* op, const std::vector<tensor>& xs, axis_t axis, const combineN_t& combine,
                                bool keep_dims, const SourceLoc& loc) {
  int orig_rank = xs.empty() ? 0 : xs[0].rank();
  bool all = !axis.has_value();
  std::vector<Value*> vs = prepare_inputs(op, xs, axis, loc);
  Shape out_shape = vs[0]->type.shape;
  out_shape.erase(out_shape.begin() + *axis);
  std::vector<Type> types;
  for (Value* v : vs) types.push_back(v->type.with_shape(out_shape));
  ir::Attrs a;
  a.axis = *axis;
  ir::Op* red = dsl::builder(op, loc).create(OpKind::Reduce, vs, types, a);
  trace_combine(op, red, vs, combine, loc);
  std::vector<tensor> out;
  for (Value* r : red->results) out.emplace_back(keep_dims ? keep(r, *axis, orig_rank, all, loc) : r);
  return out;
}

combineN_t lift(const combine1_t& f) {
  return [f](std::span<const tensor> l, std::span<const tensor> r) { return std::vector<tensor>{f(l[0], r[0])}; };
}

// Triton widens narrow integers for sums (and products) so they do not overflow.
tensor widen_for_sum(const tensor& x, const loc_t& loc) {
  DType d = x.dtype();
  if (d == DType::i1 || (is_signed_int(d) && dtype_bits(d) < 32)) return x.to(DType::i32, false, loc);
  if (is_unsigned_int(d) && dtype_bits(d) < 32) return x.to(DType::u32, false, loc);
  return x;
}

// max/min compute narrow types in 32 bits, as Triton does.
tensor widen_for_minmax(const tensor& x, const loc_t& loc) {
  DType d = x.dtype();
  if (dtype_bits(d) >= 32) return x;
  return x.to(is_float(d) ? DType::f32 : DType::i32, false, loc);
}

}  // namespace

tensor reduce(const tensor& x, axis_t axis, const combine1_t& combine, bool keep_dims, loc_t loc) {
  return reduce_impl("reduce", {x}, axis, lift(combine), keep_dims, L(loc))[0];
}

std::vector<tensor> reduce(const std::vector<tensor>& xs, axis_t axis, const combineN_t& combine, bool keep_dims,
                           loc_t loc) {
  return reduce_impl("reduce", xs, axis, combine, keep_dims, L(loc));
}

tensor sum(const tensor& x, axis_t axis, bool keep_dims, loc_t loc) {
  return reduce_impl("sum", {widen_for_sum(x, loc)}, axis, lift([](tensor a, tensor b) { return a + b; }), keep_dims,
                     L(loc))[0];
}

tensor max(const tensor& x, axis_t axis, bool keep_dims, loc_t loc) {
  return reduce_impl("max", {widen_for_minmax(x, loc)}, axis, lift([](tensor a, tensor b) { return maximum(a, b); }),
                     keep_dims, L(loc))[0];
}

tensor min(const tensor& x, axis_t axis, bool keep_dims, loc_t loc) {
  return reduce_impl("min", {widen_for_minmax(x, loc)}, axis, lift([](tensor a, tensor b) { return minimum(a, b); }),
                     keep_dims, L(loc))[0];
}

tensor xor_sum(const tensor& x, axis_t axis, bool keep_dims, loc_t loc) {
  if (!is_int(x.dtype())) fail(L(loc), "tl::xor_sum expects integers, got {}", x.type().str());
  return reduce_impl("xor_sum", {x}, axis, lift([](tensor a, tensor b) { return a ^ b; }), keep_dims, L(loc))[0];
}

// argmax/argmin: reduce (value, index) pairs; ties go to the lower index, as Triton's default.
static tensor arg_reduce(const char* op, const tensor& x, int axis, bool keep_dims, bool is_max, const loc_t& loc) {
  Value* v = x.value();
  if (v->type.is_scalar()) fail(L(loc), "tl::{}: expects a block, got scalar {}", op, dsl::describe(v));
  int r = v->type.rank();
  int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) fail(L(loc), "tl::{}: axis {} is out of range for {} (rank {})", op, axis, dsl::describe(v), r);
  tensor idx = arange(0, v->type.shape[a], loc);
  for (int d = 0; d < r; ++d)
    if (d != a) idx = expand_dims(idx, d, loc);
  idx = broadcast_to(idx, v->type.shape, loc);
  auto combine = [is_max](std::span<const tensor> l, std::span<const tensor> rr) {
    tensor better = is_max ? (l[0] > rr[0]) : (l[0] < rr[0]);
    tensor tie = (l[0] == rr[0]) && (l[1] < rr[1]);
    tensor take_left = better || tie;
    return std::vector<tensor>{where(take_left, l[0], rr[0]), where(take_left, l[1], rr[1])};
  };
  return reduce_impl(op, {x, idx}, a, combine, keep_dims, L(loc))[1];
}

tensor argmax(const tensor& x, int axis, bool keep_dims, loc_t loc) { return arg_reduce("argmax", x, axis, keep_dims, true, loc); }
tensor argmin(const tensor& x, int axis, bool keep_dims, loc_t loc) { return arg_reduce("argmin", x, axis, keep_dims, false, loc); }

// ---- scans ----------------------------------------------------------------------------------

std::vector<tensor> associative_scan(const std::vector<tensor>& xs, int axis, const combineN_t& combine, bool reverse,
                                     loc_t loc) {
  SourceLoc l = L(loc);
  axis_t ax = axis;
  std::vector<Value*> vs = prepare_inputs("associative_scan", xs, ax, l);
  std::vector<Type> types;
  for (Value* v : vs) types.push_back(v->type);
  ir::Attrs a;
  a.axis = *ax;
  a.flag = reverse;
  ir::Op* scan = dsl::builder("associative_scan", l).create(OpKind::Scan, vs, types, a);
  trace_combine("associative_scan", scan, vs, combine, l);
  std::vector<tensor> out;
  for (Value* r : scan->results) out.emplace_back(r);
  return out;
}

tensor associative_scan(const tensor& x, int axis, const combine1_t& combine, bool reverse, loc_t loc) {
  return associative_scan(std::vector<tensor>{x}, axis, lift(combine), reverse, loc)[0];
}

tensor cumsum(const tensor& x, int axis, bool reverse, loc_t loc) {
  return associative_scan(std::vector<tensor>{widen_for_sum(x, loc)}, axis,
                          lift([](tensor a, tensor b) { return a + b; }), reverse, loc)[0];
}

tensor cumprod(const tensor& x, int axis, bool reverse, loc_t loc) {
  return associative_scan(std::vector<tensor>{widen_for_sum(x, loc)}, axis,
                          lift([](tensor a, tensor b) { return a * b; }), reverse, loc)[0];
}

}  // namespace tritium::tl
