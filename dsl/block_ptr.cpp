// Block pointers and tensor descriptors, lowered at trace time to a block of pointers and a bounds mask.
#include "dsl/block_ptr.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "dsl/semantic.h"

namespace tritium::tl {

namespace {

using ir::Value;

SourceLoc L(const loc_t& l) { return SourceLoc::from(l); }

// An integer scalar (a run-time value or a C++ number) converted to `to` (DType::invalid: as it is).
tensor index_scalar(const char* op, const char* what, size_t d, const operand& o, DType to, const SourceLoc& loc) {
  Value* v = o.is_literal() ? dsl::operand_value(op, o) : o.value;
  if (!v->type.is_scalar() || !is_int(v->type.dtype) || v->type.dtype == DType::i1)
    fail(loc, "tl::{}: {}[{}] must be an integer scalar, got {}", op, what, d, dsl::describe(v));
  return tensor(to == DType::invalid ? v : dsl::cast(op, loc, v, to));
}

// A kernel parameter ("pN"), an integer constant ("cV"), or wrapping integer arithmetic over those
// (jit/cuda/codegen.h, RecipeValue: tutorial 06's Z * H * N_CTX rows), else "": a tensor whose
// base, shape and strides have such recipes can be copied by TMA (the launcher encodes its map).
std::string host_value(const Value* v, int depth) {
  if (v->is_block_arg() && v->owner->parent == nullptr) return fmt::format("p{}", v->index);
  const ir::Op* d = v->def;
  if (!d || !v->type.is_scalar()) return "";
  if (d->kind == ir::OpKind::Constant && is_int(v->type.dtype)) return fmt::format("c{}", d->attrs.ival);
  const char* type = v->type.dtype == DType::i32 ? "i32" : v->type.dtype == DType::u32 ? "u32"
                   : v->type.dtype == DType::i64 ? "i64" : v->type.dtype == DType::u64 ? "u64" : nullptr;
  const char* op = d->kind == ir::OpKind::Add ? "add" : d->kind == ir::OpKind::Sub ? "sub"
                 : d->kind == ir::OpKind::Mul ? "mul" : d->kind == ir::OpKind::Cast ? "cvt" : nullptr;
  if (!type || !op || depth >= 8) return "";  // (jit/cuda/codegen.h's kMaxRecipeDepth)
  std::vector<std::string> args;
  for (const Value* o : d->operands) {
    if (!o->type.is_scalar() || !is_int(o->type.dtype) || o->type.dtype == DType::i1) return "";
    args.push_back(host_value(o, depth + 1));
    if (args.back().empty()) return "";
  }
  return fmt::format("{}.{}({})", op, type, fmt::join(args, ","));
}
std::string host_value(const operand& o) {
  if (o.is_literal()) return o.kind == operand::Kind::int_literal ? fmt::format("c{}", o.ival) : "";
  return host_value(o.value, 0);
}

void check_rank(const char* op, const char* what, size_t got, size_t rank, const SourceLoc& loc) {
  if (got != rank)
    fail(loc, "tl::{}: {} has {} entries but the block pointer has {} dims", op, what, got, rank);
}

// A tile's element pointers (block_shape) and, when a dim is checked, its bounds mask. Dim d's
// indices, offsets[d] + arange, are laid along axis d of the tile.
struct Tile {
  tensor pointers;
  std::optional<tensor> mask;
};

Tile tile(const char* op, const block_ptr& p, const std::vector<int>& boundary_check, const loc_t& loc) {
  const int r = p.rank();
  std::vector<bool> checked(static_cast<size_t>(r), false);
  for (int d : boundary_check) {
    if (d < 0 || d >= r)
      fail(L(loc), "tl::{}: boundary_check dim {} is out of range for a {}-D block pointer", op, d, r);
    if (checked[static_cast<size_t>(d)]) fail(L(loc), "tl::{}: boundary_check names dim {} twice", op, d);
    checked[static_cast<size_t>(d)] = true;
  }
  Tile t{p.base, std::nullopt};
  for (int d = 0; d < r; ++d) {
    const size_t u = static_cast<size_t>(d);
    tensor idx = p.offsets[u] + arange(0, p.block_shape[u], loc);
    for (int a = 0; a < d; ++a) idx = expand_dims(idx, 0, loc);
    for (int a = d + 1; a < r; ++a) idx = expand_dims(idx, -1, loc);
    t.pointers = t.pointers + idx * p.strides[u];
    if (!checked[u]) continue;
    tensor in = (idx >= 0) && (idx < p.shape[u]);
    t.mask = t.mask ? (*t.mask && in) : in;
  }
  // A dim of size 1 everywhere else: every operand above broadcast to the tile.
  if (t.pointers.shape() != p.block_shape) t.pointers = broadcast_to(t.pointers, p.block_shape, loc);
  if (t.mask && t.mask->shape() != p.block_shape) t.mask = broadcast_to(*t.mask, p.block_shape, loc);
  return t;
}

}  // namespace

block_ptr& block_ptr::operator=(const block_ptr& o) {
  auto assign = [](std::vector<tensor>& to, const std::vector<tensor>& from) {
    if (to.size() != from.size()) {
      to = from;
      return;
    }
    for (size_t i = 0; i < to.size(); ++i) to[i] = from[i];
  };
  base = o.base;
  assign(shape, o.shape);
  assign(strides, o.strides);
  assign(offsets, o.offsets);
  block_shape = o.block_shape;
  order = o.order;
  return *this;
}

block_ptr make_block_ptr(const tensor& base, const std::vector<operand>& shape, const std::vector<operand>& strides,
                         const std::vector<operand>& offsets, const ir::Shape& block_shape,
                         const std::vector<int>& order, loc_t loc) {
  const char* op = "make_block_ptr";
  SourceLoc l = L(loc);
  Value* b = base.value(loc);
  if (!b->type.is_ptr() || !b->type.is_scalar())
    fail(l, "tl::make_block_ptr: the base must be a scalar pointer (a kernel's pointer argument), got {}",
         dsl::describe(b));
  const size_t r = block_shape.size();
  if (r == 0) fail(l, "tl::make_block_ptr: block_shape is empty; a block pointer has at least one dim");
  check_rank(op, "shape", shape.size(), r, l);
  check_rank(op, "strides", strides.size(), r, l);
  check_rank(op, "offsets", offsets.size(), r, l);
  check_rank(op, "order", order.size(), r, l);
  for (size_t d = 0; d < r; ++d)
    if (block_shape[d] <= 0 || (block_shape[d] & (block_shape[d] - 1)) != 0)
      fail(l, "tl::make_block_ptr: block_shape[{}] = {} must be a power of two", d, block_shape[d]);
  dsl::check_block_shape(op, l, block_shape);
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t d = 0; d < r; ++d)
    if (sorted[d] != static_cast<int>(d))
      fail(l, "tl::make_block_ptr: order {{{}}} must be a permutation of the dims 0..{}", fmt::join(order, ", "), r - 1);
  block_ptr p;
  p.base = base;
  for (size_t d = 0; d < r; ++d) {
    // (Kept in its own integer type: the bounds compare in 32 bits when the shape is an i32, with
    // the same result as Triton's i64 compare, since both sides are exact.)
    p.shape.push_back(index_scalar(op, "shape", d, shape[d], DType::invalid, l));
    p.strides.push_back(index_scalar(op, "strides", d, strides[d], DType::i64, l));
    p.offsets.push_back(index_scalar(op, "offsets", d, offsets[d], DType::i32, l));
  }
  p.block_shape = block_shape;
  p.order = order;
  std::vector<std::string> recipe{host_value(operand(base, loc))};
  for (const auto* list : {&shape, &strides})
    for (const operand& o : *list) recipe.push_back(host_value(o));
  if (std::none_of(recipe.begin(), recipe.end(), [](const std::string& t) { return t.empty(); }))
    p.tensor_recipe = fmt::format("{}", fmt::join(recipe, " "));
  return p;
}

block_ptr advance(const block_ptr& p, const std::vector<operand>& offsets, loc_t loc) {
  SourceLoc l = L(loc);
  if (p.rank() == 0) fail(l, "tl::advance: the block pointer was never made (tl::make_block_ptr)");
  check_rank("advance", "offsets", offsets.size(), static_cast<size_t>(p.rank()), l);
  block_ptr q = p;
  for (size_t d = 0; d < offsets.size(); ++d) {
    const operand& o = offsets[d];
    if (o.is_literal() && o.kind == operand::Kind::int_literal && o.ival == 0) continue;  // (no op to fold)
    q.offsets[d] = p.offsets[d] + index_scalar("advance", "offsets", d, o, DType::i32, l);
  }
  return q;
}

tensor load(const block_ptr& p, const std::vector<int>& boundary_check, const std::string& padding_option,
            const std::string& cache_modifier, const std::string& eviction_policy, loc_t loc) {
  SourceLoc l = L(loc);
  if (p.rank() == 0) fail(l, "tl::load: the block pointer was never made (tl::make_block_ptr)");
  if (!padding_option.empty() && padding_option != "zero" && padding_option != "nan")
    fail(l, "tl::load: padding_option must be \"zero\" or \"nan\", got \"{}\"", padding_option);
  DType elem = p.base.value(loc)->type.pointee;
  if (padding_option == "nan" && !is_float(elem))
    fail(l, "tl::load: padding_option \"nan\" needs a floating-point block pointer, this one points to {}",
         dtype_name(elem));
  Tile t = tile("load", p, boundary_check, loc);
  if (!t.mask) return load(t.pointers, std::nullopt, std::nullopt, cache_modifier, eviction_policy, loc);
  if (padding_option == "nan") return load(t.pointers, *t.mask, operand(NAN, loc), cache_modifier, eviction_policy, loc);
  tensor v = load(t.pointers, *t.mask, operand(0, loc), cache_modifier, eviction_policy, loc);
  // Every dim checked, zero padding: exactly a bulk tensor copy's out-of-bounds fill. The tensor's
  // recipe lets the CUDA backend copy such tiles with TMA (the mask still holds the offsets).
  if (!p.tensor_recipe.empty() && boundary_check.size() == static_cast<size_t>(p.rank()))
    v.value(loc)->def->attrs.str = "tensor " + p.tensor_recipe;
  return v;
}

void store(const block_ptr& p, operand value, const std::vector<int>& boundary_check, const std::string& cache_modifier,
           const std::string& eviction_policy, loc_t loc) {
  SourceLoc l = L(loc);
  if (p.rank() == 0) fail(l, "tl::store: the block pointer was never made (tl::make_block_ptr)");
  // Triton broadcasts the value to the block; a shape that does not broadcast is named here.
  if (!value.is_literal() && !dsl::broadcastable_to(value.value->type.shape, p.block_shape))
    fail(l, "tl::store: value shape {} does not match the block pointer's block_shape {}",
         ir::shape_str(value.value->type.shape), ir::shape_str(p.block_shape));
  Tile t = tile("store", p, boundary_check, loc);
  if (t.mask) store(t.pointers, value, *t.mask, cache_modifier, eviction_policy, loc);
  else store(t.pointers, value, std::nullopt, cache_modifier, eviction_policy, loc);
}

// ---- tensor descriptors ------------------------------------------------------------------------

namespace {

bool is_one(const operand& o) {
  if (o.is_literal()) return o.kind == operand::Kind::int_literal && o.ival == 1;
  const ir::Op* d = o.value->def;
  return d && d->kind == ir::OpKind::Constant && is_int(o.value->type.dtype) && d->attrs.ival == 1;
}

block_ptr at_offsets(const char* op, const block_ptr& tile, const std::vector<operand>& offsets, const SourceLoc& l) {
  check_rank(op, "offsets", offsets.size(), static_cast<size_t>(tile.rank()), l);
  block_ptr q = tile;
  for (size_t d = 0; d < offsets.size(); ++d) q.offsets[d] = index_scalar(op, "offsets", d, offsets[d], DType::i32, l);
  return q;
}

std::vector<int> all_dims(int rank) {
  std::vector<int> dims(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) dims[static_cast<size_t>(d)] = d;
  return dims;
}

}  // namespace

tensor_descriptor make_tensor_descriptor(const tensor& base, const std::vector<operand>& shape,
                                         const std::vector<operand>& strides, const ir::Shape& block_shape, loc_t loc) {
  const char* op = "make_tensor_descriptor";
  SourceLoc l = L(loc);
  const size_t r = block_shape.size();
  if (r == 0 || r > 5) fail(l, "tl::{}: a tensor descriptor has 1 to 5 dims, block_shape has {}", op, r);
  check_rank(op, "strides", strides.size(), r, l);
  if (!is_one(strides.back()))
    fail(l, "tl::{}: the last stride must be the constant 1 (the last dim contiguous in memory)", op);
  Value* b = base.value(loc);
  if (b->type.is_ptr() && b->type.is_scalar()) {
    int64_t row_bytes = block_shape.back() * dtype_bytes(b->type.pointee);
    if (row_bytes < 16)
      fail(l, "tl::{}: a tile row must hold at least 16 bytes; block_shape[{}] = {} of {} is {} bytes", op, r - 1,
           block_shape.back(), dtype_name(b->type.pointee), row_bytes);
  }
  std::vector<operand> zeros(r, operand(0, loc));
  std::vector<int> order(r);
  for (size_t d = 0; d < r; ++d) order[d] = static_cast<int>(r - 1 - d);
  return tensor_descriptor{make_block_ptr(base, shape, strides, zeros, block_shape, order, loc)};
}

tensor tensor_descriptor::load(const std::vector<operand>& offsets, loc_t loc) const {
  SourceLoc l = L(loc);
  if (tile.rank() == 0) fail(l, "tl::tensor_descriptor::load: the descriptor was never made (tl::make_tensor_descriptor)");
  return tl::load(at_offsets("tensor_descriptor::load", tile, offsets, l), all_dims(tile.rank()), "zero", "", "", loc);
}

void tensor_descriptor::store(const std::vector<operand>& offsets, operand value, loc_t loc) const {
  SourceLoc l = L(loc);
  if (tile.rank() == 0) fail(l, "tl::tensor_descriptor::store: the descriptor was never made (tl::make_tensor_descriptor)");
  tl::store(at_offsets("tensor_descriptor::store", tile, offsets, l), value, all_dims(tile.rank()), "", "", loc);
}

}  // namespace tritium::tl
