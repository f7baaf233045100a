// tl::histogram, tl::gather, tl::join, tl::split and tl::interleave: Triton's data movement within a
// block. The first four are IR ops (each backend lowers them); interleave is join + reshape, as in
// Triton's core.py.
#include "dsl/ops.h"
#include "dsl/semantic.h"

namespace tritium::tl {

using ir::OpKind;
using ir::Shape;
using ir::Type;
using ir::Value;

namespace {
SourceLoc L(const loc_t& l) { return SourceLoc::from(l); }
}  // namespace

tensor histogram(const tensor& x, int64_t num_bins, std::optional<operand> mask, loc_t loc) {
  Value* v = x.value();
  if (v->type.rank() != 1 || !is_int(v->type.dtype) || v->type.dtype == DType::i1)
    fail(L(loc), "tl::histogram: expects a 1-D block of integers, got {}", dsl::describe(v));
  if (num_bins <= 0) fail(L(loc), "tl::histogram: num_bins must be positive, got {}", num_bins);
  dsl::check_block_shape("histogram", L(loc), {num_bins});
  std::vector<Value*> operands{v};
  if (mask) {
    Value* m = dsl::operand_value("histogram", *mask);
    if (m->type.dtype != DType::i1)
      fail(L(loc), "tl::histogram: the mask must be boolean, got {}", dsl::describe(m));
    if (!dsl::broadcastable_to(m->type.shape, v->type.shape))
      fail(L(loc), "tl::histogram: the mask {} does not broadcast to the input {}", dsl::describe(m), dsl::describe(v));
    operands.push_back(dsl::broadcast_to("histogram", L(loc), m, v->type.shape));
  }
  return tensor(dsl::builder("histogram", L(loc)).create1(OpKind::Histogram, operands, Type::block(DType::i32, {num_bins})));
}

tensor gather(const tensor& src, const tensor& index, int axis, loc_t loc) {
  Value* s = src.value();
  Value* i = index.value();
  int r = s->type.rank();
  if (r == 0) fail(L(loc), "tl::gather: the source must be a block, got {}", dsl::describe(s));
  if (i->type.rank() != r)
    fail(L(loc), "tl::gather: the source {} and the index {} must have the same rank", dsl::describe(s), dsl::describe(i));
  if (!is_int(i->type.dtype) || i->type.dtype == DType::i1)
    fail(L(loc), "tl::gather: the index must be an integer block, got {}", dsl::describe(i));
  int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) fail(L(loc), "tl::gather: axis {} is out of range for {} (rank {})", axis, dsl::describe(s), r);
  for (int d = 0; d < r; ++d)
    if (d != a && s->type.shape[d] != i->type.shape[d])
      fail(L(loc), "tl::gather: index dim {} ({}) must match the source's ({}) off axis {}: {} and {}", d,
           i->type.shape[d], s->type.shape[d], a, dsl::describe(s), dsl::describe(i));
  ir::Attrs at;
  at.axis = a;
  return tensor(dsl::builder("gather", L(loc)).create1(OpKind::Gather, {s, i}, i->type.with_dtype(s->type.dtype), at));
}

tensor join(operand a, operand b, loc_t loc) {
  Value* x = dsl::operand_value("join", a);
  Value* y = dsl::operand_value("join", b);
  if (x->type.element() != y->type.element())
    fail(L(loc), "tl::join: the two inputs must have one dtype, got {} and {}; cast one first", dsl::describe(x),
         dsl::describe(y));
  std::tie(x, y) = dsl::broadcast_pair("join", L(loc), x, y);
  Shape s = x->type.shape;
  s.push_back(2);
  dsl::check_block_shape("join", L(loc), s);
  return tensor(dsl::builder("join", L(loc)).create1(OpKind::Join, {x, y}, x->type.with_shape(s)));
}

std::pair<tensor, tensor> split(const tensor& x, loc_t loc) {
  Value* v = x.value();
  if (v->type.rank() == 0 || v->type.shape.back() != 2)
    fail(L(loc), "tl::split: the last dim must be 2, got {}", dsl::describe(v));
  Shape s(v->type.shape.begin(), v->type.shape.end() - 1);
  Type half = v->type.with_shape(s);
  ir::Op* op = dsl::builder("split", L(loc)).create(OpKind::Split, {v}, {half, half});
  return {tensor(op->results[0]), tensor(op->results[1])};
}

tensor interleave(operand a, operand b, loc_t loc) {
  tensor c = join(a, b, loc);
  if (c.rank() == 1) return c;  // two scalars: [a, b]
  Shape s = c.shape();
  s.pop_back();
  s.back() *= 2;
  return reshape(c, s, loc);
}

}  // namespace tritium::tl
