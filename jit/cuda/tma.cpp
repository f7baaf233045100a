// The TMA analysis both CUDA generators share (jit/cuda/tma.h): which tiles the bulk tensor copy
// engine can load or store, the tensor maps the launcher encodes for them, and the guards under
// which a copy moves exactly what the IR's load or store moves; the maps' recipes as the launcher
// reads them back (parse_tensor_map_recipe, tensor_map_usable). The layout generator calls it from
// lowering/tma_ring.cpp.
#include "jit/cuda/tma.h"

#include <array>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include <fmt/ranges.h>

#include "jit/cuda/codegen.h"
#include "jit/cuda/scalar_expr.h"

namespace tritium::jit::cuda {

using ir::OpKind;
using ir::Shape;

namespace {

// Broadcasts, hints and layout conversions keep every element's value along the dims that matter here.
const ir::Value* peel(const ir::Value* v) {
  while (v->def && (v->def->kind == OpKind::Broadcast || v->def->kind == OpKind::MultipleOf ||
                    v->def->kind == OpKind::MaxContiguous || v->def->kind == OpKind::ConvertLayout))
    v = v->def->operand(0);
  return v;
}

// A value the same at every element: a scalar (v) or an integer constant (c, v null).
struct Uniform {
  const ir::Value* v = nullptr;
  int64_t c = 0;
};
std::optional<Uniform> uniform(const ir::Value* v) {
  v = peel(v);
  if (v->def && v->def->kind == OpKind::Constant) {
    if (!is_int(v->type.dtype) || v->type.dtype == DType::i1) return std::nullopt;
    return Uniform{nullptr, v->def->attrs.ival};
  }
  if (v->type.is_scalar()) return Uniform{v, 0};
  if (v->def && v->def->kind == OpKind::Splat) return uniform(v->def->operand(0));
  return std::nullopt;
}

// A 1-D index vector off + arange(a0, a0 + n), maybe `% wrap` (signed integers: C's remainder).
struct IndexVec {
  std::optional<Uniform> off;
  int64_t a0 = 0, n = 0;
  std::optional<Uniform> wrap;
  DType dtype = DType::i32;
};
std::optional<IndexVec> index_vec(const ir::Value* v, bool allow_wrap) {
  v = peel(v);
  if (!v->def || v->type.rank() != 1 || !is_signed_int(v->type.dtype)) return std::nullopt;
  const ir::Op* d = v->def;
  if (allow_wrap && d->kind == OpKind::Rem) {
    std::optional<Uniform> D = uniform(d->operand(1));
    std::optional<IndexVec> in = index_vec(d->operand(0), false);
    if (!D || !in) return std::nullopt;
    in->wrap = D;
    return in;
  }
  IndexVec r;
  r.n = v->type.shape[0];
  r.dtype = v->type.dtype;
  if (d->kind == OpKind::Arange) {
    r.a0 = d->attrs.ints[0];
    return r;
  }
  if (d->kind == OpKind::Add)
    for (int i : {0, 1}) {
      const ir::Value* x = peel(d->operand(i));
      if (!x->def || x->def->kind != OpKind::Arange) continue;
      r.off = uniform(d->operand(1 - i));
      if (!r.off) return std::nullopt;
      r.a0 = x->def->attrs.ints[0];
      return r;
    }
  return std::nullopt;
}

// A 2-D index block expand_dims(vector): the tile dim it runs along and the vector.
std::optional<std::pair<int, const ir::Value*>> expanded(const ir::Value* v) {
  v = peel(v);
  if (!v->def || v->def->kind != OpKind::ExpandDims || v->type.rank() != 2) return std::nullopt;
  return std::make_pair(v->def->attrs.axis == 1 ? 0 : 1, v->def->operand(0));
}

// A pointer block base + rows[:, None] * stride + cols[None, :] (each index an IndexVec, maybe
// `% D`), base a pointer parameter of the kernel (`body`'s argument): rows of a row stride
// (dims[0].stride), contiguous columns (dims[1].stride none or 1).
struct PointerBlock {
  const ir::Value* base = nullptr;
  struct Term {
    std::optional<IndexVec> idx;
    std::optional<Uniform> stride;  // none: 1
  } dims[2];
};
std::optional<PointerBlock> pointer_block(const ir::Value* ptr, const ir::Block* body) {
  PointerBlock r;
  std::function<bool(const ir::Value*)> offsets = [&](const ir::Value* v) {
    v = peel(v);
    if (!v->def) return false;
    const ir::Op* d = v->def;
    if (d->kind == OpKind::Add) return offsets(d->operand(0)) && offsets(d->operand(1));
    std::optional<Uniform> stride;
    if (d->kind == OpKind::Mul) {
      for (int i : {0, 1})
        if (!stride && expanded(d->operand(1 - i)) && (stride = uniform(d->operand(i)))) v = d->operand(1 - i);
      if (!stride) return false;
    }
    auto e = expanded(v);
    if (!e) return false;
    PointerBlock::Term& t = r.dims[e->first];
    if (t.idx || !(t.idx = index_vec(e->second, true))) return false;
    t.stride = stride;
    return true;
  };
  std::function<bool(const ir::Value*)> pointer = [&](const ir::Value* v) {
    v = peel(v);
    if (!v->def) return false;
    if (v->def->kind == OpKind::AddPtr) return pointer(v->def->operand(0)) && offsets(v->def->operand(1));
    if (v->def->kind != OpKind::Splat || r.base) return false;
    r.base = v->def->operand(0);
    return r.base->is_block_arg() && r.base->owner == body;
  };
  if (!pointer(ptr) || !r.dims[0].idx || !r.dims[1].idx || !r.dims[0].stride) return std::nullopt;
  if (r.dims[1].stride && (r.dims[1].stride->v || r.dims[1].stride->c != 1)) return std::nullopt;
  return r;
}

// A mask (index < limit) per dim, and-ed (a dim without one: idx empty).
struct Bound {
  std::optional<IndexVec> idx;
  Uniform limit;
};
std::optional<std::array<Bound, 2>> bound_mask(const ir::Value* m) {
  std::array<Bound, 2> bounds;
  std::function<bool(const ir::Value*)> mask = [&](const ir::Value* v) {
    v = peel(v);
    if (!v->def) return false;
    const ir::Op* d = v->def;
    if (d->kind == OpKind::And) return mask(d->operand(0)) && mask(d->operand(1));
    if (d->kind != OpKind::CmpLt || !is_signed_int(d->operand(0)->type.dtype)) return false;
    auto e = expanded(d->operand(0));
    std::optional<Uniform> limit = uniform(d->operand(1));
    if (!e || !limit || bounds[e->first].idx) return false;
    bounds[e->first] = Bound{index_vec(e->second, false), *limit};
    return bounds[e->first].idx.has_value();
  };
  if (!mask(m)) return std::nullopt;
  return bounds;
}

// Scalars the guards read (values from before the loop or the store): a scalar's C++ name, if any.
using Known = std::function<std::optional<std::string>(const ir::Value*)>;

std::optional<std::string> uniform_expr(const Uniform& u, const Known& known) {
  if (!u.v) return fmt::format("(int64_t){}", u.c);
  std::optional<std::string> name = known(u.v);
  if (!name) return std::nullopt;
  return fmt::format("(int64_t)({})", *name);
}

// The first index of iv in its own type (as the kernel computes it: 32-bit arithmetic), and the
// test that no lane is negative or past the type's maximum.
std::optional<std::pair<std::string, std::string>> first_index(const IndexVec& iv, const Known& known) {
  const std::string ct = ctype(iv.dtype);
  std::string pre = fmt::format("({}){}", ct, iv.a0);
  if (iv.off) {
    std::optional<std::string> o = uniform_expr(*iv.off, known);
    if (!o) return std::nullopt;
    pre = fmt::format("({})((uint64_t){} + (uint64_t){})", ct, *o, iv.a0);
  }
  std::string fits = fmt::format("{} >= 0 && {} <= ({}){}", pre, pre, ct,
                                 (dtype_bits(iv.dtype) == 64 ? INT64_MAX : INT32_MAX) - (iv.n - 1));
  return std::make_pair(pre, fits);
}

// +0 exactly (TMA fills with +0: a load whose `other` is -0.0 differs in the sign bit).
bool is_zero_constant(const ir::Value* v) {
  return v->def && v->def->kind == OpKind::Constant && v->def->attrs.ival == 0 && v->def->attrs.fval == 0.0 &&
         !std::signbit(v->def->attrs.fval);
}

// The analysis over one kernel (TmaContext): recipe values, guards, plans.
class Planner {
 public:
  explicit Planner(const TmaContext& c, bool round_tf32 = false) : c_(c), round_tf32_(round_tf32) {}
  std::optional<TmaTile> block_ptr(const ir::Op* ld, int64_t R, int64_t C);
  std::optional<TmaTile> pointers(const ir::Op* ld, int64_t R, const ir::Op* loop, const ir::Value* init,
                                  const ir::Value* step);
  std::optional<TmaTile> store(const ir::Op* st);

 private:
  const TmaContext& c_;
  bool round_tf32_;  // f32 tiles: the copy rounds them to tf32 (the map's TFLOAT32 type)
  // A kernel parameter or constant as a recipe value ("pN", "iN", "uN", "cV").
  std::optional<std::string> recipe_token(const ir::Value* v) const;
  std::optional<std::string> recipe_token(const RecipeValue& v) const;
  // A parameter or, v null, the constant c as a recipe value; a map's base and row stride as recipe
  // values when they are 16-byte aligned (f16/bf16 rows).
  std::optional<std::string> value_token(const ir::Value* v, int64_t c) const;
  std::optional<std::pair<std::string, std::string>> map_base_stride(const ir::Value* base, const ir::Value* stride,
                                                                     int64_t c) const;
  std::optional<std::string> known_scalar(const ir::Value* v) const { return c_.known(v); }
  std::string scalar(const ir::Value* v) const;  // a value the generator must have emitted
  // A recipe value as the kernel reads it (an int64 C++ expression), and its known divisor.
  std::string recipe_expr(const std::string& token) const;
  std::string recipe_expr(const RecipeValue& v) const;
  int64_t recipe_divisibility(const std::string& token) const;
  int64_t recipe_divisibility(const RecipeValue& v) const;
  // The map's recipe (base, shape0, shape1, stride0, 1), element type, box; and the kernel's test
  // that the launcher encoded it (tensor_map_usable).
  std::string tma_map(const std::string& base, const std::string& shape0, const std::string& shape1,
                      const std::string& stride0, DType dt, int64_t rows) const;
  std::string tensor_map_usable_expr(const std::string& shape0, const std::string& shape1,
                                     const std::string& stride0, DType dt) const;
  // A scalar of a loop's body as c0 + trip * c1 (int64 C++ expressions over values from before
  // the loop; c1 empty when 0), or nothing when it is not affine in the trip.
  std::optional<std::pair<std::string, std::string>> trip_affine(const ir::Value* v, const ir::Op* loop) const;
};

std::string Planner::scalar(const ir::Value* v) const {
  std::optional<std::string> s = c_.known(v);
  if (!s) fail("internal error: the TMA analysis reads scalar %{}, which was not emitted", v->id);
  return *s;
}

std::optional<std::string> Planner::recipe_token(const ir::Value* v) const {
  if (v->def && v->def->kind == OpKind::Constant && v->type.is_scalar() && is_int(v->type.dtype))
    return fmt::format("c{}", v->def->attrs.ival);
  if (!v->is_block_arg() || v->owner != c_.f.body) return std::nullopt;
  switch (v->type.dtype) {
    case DType::ptr: case DType::i64: case DType::u64: return fmt::format("p{}", v->index);
    case DType::i32: return fmt::format("i{}", v->index);
    case DType::u32: return fmt::format("u{}", v->index);
    default: return std::nullopt;
  }
}

std::optional<std::string> Planner::recipe_token(const RecipeValue& v) const {
  if (v.expr()) {
    // Each parameter typed as the kernel declares it (the DSL names them all "pN").
    RecipeValue typed = v;
    for (RecipeValue& o : typed.operands) {
      std::optional<std::string> t = recipe_token(o);
      if (!t) return std::nullopt;
      o = *parse_recipe_value(*t);
    }
    return recipe_string(typed);
  }
  if (!v.param()) return fmt::format("c{}", v.value);
  if (static_cast<size_t>(v.value) >= c_.f.body->args.size()) return std::nullopt;
  return recipe_token(c_.f.body->args[static_cast<size_t>(v.value)]);
}

std::optional<std::string> Planner::value_token(const ir::Value* v, int64_t c) const {
  return v ? recipe_token(v) : std::optional<std::string>(fmt::format("c{}", c));
}

std::optional<std::pair<std::string, std::string>> Planner::map_base_stride(const ir::Value* base,
                                                                            const ir::Value* stride, int64_t c) const {
  std::optional<std::string> b = recipe_token(base), st = value_token(stride, c);
  if (!b || !st || recipe_divisibility(*b) % 16 != 0 || recipe_divisibility(*st) % 8 != 0) return std::nullopt;
  return std::make_pair(*b, *st);
}

std::string Planner::tma_map(const std::string& base, const std::string& shape0, const std::string& shape1,
                             const std::string& stride0, DType dt, int64_t rows) const {
  // + element bytes, CUtensorMapDataType (FLOAT16 6, FLOAT32 7, BFLOAT16 9, TFLOAT32 11: the copy
  // engine rounds each f32 to tf32, to nearest even - Triton's round_f32_to_tf32 descriptors), box
  // (a 128-byte column block, R rows).
  const int esz = dtype_bytes(dt);
  const int type = dt == DType::f16 ? 6 : dt == DType::bf16 ? 9 : round_tf32_ ? 11 : 7;
  return fmt::format("{} {} {} {} c1 {} {} {} {}", base, shape0, shape1, stride0, esz, type, 128 / esz, rows);
}

std::string Planner::recipe_expr(const std::string& token) const {
  std::optional<RecipeValue> v = parse_recipe_value(token);
  if (!v) fail("internal error: bad recipe value '{}'", token);
  return recipe_expr(*v);
}

std::string Planner::recipe_expr(const RecipeValue& v) const {
  if (v.kind == 'c') return fmt::format("(int64_t){}", v.value);
  if (v.param()) return fmt::format("(int64_t)({})", scalar(c_.f.body->args[static_cast<size_t>(v.value)]));
  // As recipe_value computes it on the host: unsigned 64-bit arithmetic, wrapped to the type.
  const std::string a = recipe_expr(v.operands[0]);
  if (v.op == 'x') return fmt::format("(int64_t)({})(uint64_t){}", ctype(v.type), a);
  return fmt::format("(int64_t)({})((uint64_t){} {} (uint64_t){})", ctype(v.type), a, v.op, recipe_expr(v.operands[1]));
}

int64_t Planner::recipe_divisibility(const std::string& token) const {
  std::optional<RecipeValue> v = parse_recipe_value(token);
  if (!v) fail("internal error: bad recipe value '{}'", token);
  return recipe_divisibility(*v);
}

int64_t Planner::recipe_divisibility(const RecipeValue& v) const {
  // A power of two dividing the value (wrap-around modulo 2^32 or 2^64 keeps those up to 2^30).
  if (v.kind == 'c') return pow2_divisor(v.value);
  if (v.param()) return pow2_divisor(c_.axis.get(c_.f.body->args[static_cast<size_t>(v.value)]).divisibility[0]);
  const int64_t a = recipe_divisibility(v.operands[0]);
  if (v.op == 'x') return a;
  const int64_t b = recipe_divisibility(v.operands[1]);
  return v.op == '*' ? std::min<int64_t>(a * b, int64_t{1} << 30) : std::min(a, b);
}

std::string Planner::tensor_map_usable_expr(const std::string& shape0, const std::string& shape1,
                                            const std::string& stride0, DType dt) const {
  // tensor_map_usable (below): the launcher encoded the map.
  const int esz = dtype_bytes(dt);
  return fmt::format("tt_tensor_map_usable({}, {}, {}{})", recipe_expr(shape0), recipe_expr(shape1), recipe_expr(stride0),
                     esz == 2 ? std::string() : fmt::format(", {}", esz));
}

std::optional<std::pair<std::string, std::string>> Planner::trip_affine(const ir::Value* v, const ir::Op* loop) const {
  const ir::Block* body = loop->regions[0];
  if (!v->type.is_scalar() || !is_int(v->type.dtype) || v->type.dtype == DType::i1) return std::nullopt;
  if (v == body->args[0])
    return std::make_pair(fmt::format("(int64_t)({})", scalar(loop->operand(0))),
                          fmt::format("(int64_t)({})", scalar(loop->operand(2))));
  if (v->def && v->def->kind == OpKind::Constant) return std::make_pair(fmt::format("(int64_t){}", v->def->attrs.ival), std::string());
  const bool outside = v->is_block_arg() ? v->owner == c_.f.body : v->def->parent != body;
  if (outside) {
    std::optional<std::string> name = known_scalar(v);
    if (!name) return std::nullopt;
    return std::make_pair(fmt::format("(int64_t)({})", *name), std::string());
  }
  if (v->is_block_arg()) return std::nullopt;  // carried by this loop
  const ir::Op* d = v->def;
  if (d->kind == OpKind::Cast) {
    DType from = d->operand(0)->type.dtype;
    if (!is_int(from) || dtype_bits(from) > dtype_bits(v->type.dtype) || is_signed_int(from) != is_signed_int(v->type.dtype))
      return std::nullopt;
    return trip_affine(d->operand(0), loop);
  }
  if (d->kind != OpKind::Add && d->kind != OpKind::Sub && d->kind != OpKind::Mul) return std::nullopt;
  auto a = trip_affine(d->operand(0), loop), b = trip_affine(d->operand(1), loop);
  if (!a || !b) return std::nullopt;
  auto sum = [](const std::string& x, const char* op, const std::string& y) {
    if (y.empty()) return x;
    if (x.empty()) return *op == '-' ? fmt::format("(-{})", y) : y;
    return fmt::format("({} {} {})", x, op, y);
  };
  if (d->kind == OpKind::Add) return std::make_pair(sum(a->first, "+", b->first), sum(a->second, "+", b->second));
  if (d->kind == OpKind::Sub) return std::make_pair(sum(a->first, "-", b->first), sum(a->second, "-", b->second));
  // Mul: one factor must not depend on the trip.
  if (!a->second.empty() && !b->second.empty()) return std::nullopt;
  if (!a->second.empty()) std::swap(a, b);
  return std::make_pair(fmt::format("({} * {})", a->first, b->first),
                        b->second.empty() ? std::string() : fmt::format("({} * {})", a->first, b->second));
}

std::optional<TmaTile> Planner::block_ptr(const ir::Op* ld, int64_t R, int64_t C) {
  if (ld->operands.size() != 3) return std::nullopt;
  // base, shape0, shape1, stride0, stride1 (block_ptr.cpp); the last stride must be 1.
  std::istringstream in(ld->attrs.str.substr(7));
  std::vector<std::string> t{std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
  if (t.size() != 5 || t[4] != "c1") return std::nullopt;
  std::vector<std::string> tok;
  for (size_t i = 0; i < 4; ++i) {
    std::optional<RecipeValue> v = parse_recipe_value(t[i]);
    std::optional<std::string> typed = v ? recipe_token(*v) : std::nullopt;
    if (!typed) return std::nullopt;
    tok.push_back(*typed);
  }
  // TMA wants a 16-byte aligned base and row stride (in bytes; f16/bf16 here).
  if (tok[0][0] != 'p' || recipe_divisibility(tok[0]) % 16 != 0 || recipe_divisibility(tok[3]) % 8 != 0)
    return std::nullopt;
  // The indices of each dim, from the mask (idx >= 0) && (idx < shape) per dim (block_ptr.cpp).
  TmaTile r;
  std::function<void(const ir::Value*)> walk = [&](const ir::Value* v) {
    const ir::Op* d = v->def;
    if (!d) return;
    if (d->kind == OpKind::And || d->kind == OpKind::Broadcast) {
      for (const ir::Value* o : d->operands) walk(o);
    } else if (d->kind == OpKind::CmpGe && d->operand(1)->def && d->operand(1)->def->kind == OpKind::Constant &&
               d->operand(1)->def->attrs.ival == 0) {
      const ir::Shape& sh = d->operand(0)->type.shape;
      if (sh == ir::Shape{R, 1}) r.row = d->operand(0);
      if (sh == ir::Shape{1, C}) r.col = d->operand(0);
    }
  };
  walk(ld->operand(1));
  if (!r.row || !r.col) return std::nullopt;
  r.map = tma_map(tok[0], tok[1], tok[2], tok[3], ld->result()->type.dtype, R);
  r.guard = tensor_map_usable_expr(tok[1], tok[2], tok[3], ld->result()->type.dtype);
  return r;
}

// Tutorial 03's tiles: a carried pointer block whose init is base + rows[:, None] * stride + cols[None, :]
// (rows, cols: off + arange, maybe % D), advanced by a multiple of one dim's stride, its mask
// `index < bound` per dim. The copy at coordinates start + trip * adv reads what the load reads when
// (each program's guard, from values before the loop): no index wraps (0 <= off, off + n <= D: no
// division), none is negative, and each dim's mask at every trip is the tensor's bound (shape - start - trip * adv);
// a dim without a mask must not advance and its `% D` bounds it.
std::optional<TmaTile> Planner::pointers(const ir::Op* ld, int64_t R, const ir::Op* loop, const ir::Value* init,
                                         const ir::Value* step) {
  if (!init || !step) return std::nullopt;
  if (ld->operands.size() == 3 && !is_zero_constant(ld->operand(2))) return std::nullopt;

  // The init: base + one index term per dim.
  std::optional<PointerBlock> pb = pointer_block(init, c_.f.body);
  if (!pb) return std::nullopt;
  const ir::Value* base = pb->base;
  const PointerBlock::Term* dims = pb->dims;
  const Uniform& stride0 = *dims[0].stride;

  // The advance a trip: along the columns (a constant, their stride being 1), or c rows (c * stride).
  int64_t adv[2] = {0, 0};
  std::optional<Uniform> su = uniform(step);
  if (!su) return std::nullopt;
  if (!su->v) {
    adv[1] = su->c;
  } else if (stride0.v && su->v == stride0.v) {
    adv[0] = 1;
  } else if (stride0.v && su->v->def && su->v->def->kind == OpKind::Mul) {
    const ir::Op* d = su->v->def;
    for (int i : {0, 1}) {
      std::optional<Uniform> c = uniform(d->operand(i));
      if (c && !c->v && d->operand(1 - i) == stride0.v) adv[0] = c->c;
    }
    if (!adv[0]) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (adv[0] < 0 || adv[1] < 0) return std::nullopt;

  // The mask: (index < bound) per dim, and-ed.
  std::array<Bound, 2> bounds;
  if (ld->operands.size() > 1) {
    std::optional<std::array<Bound, 2>> b = bound_mask(ld->operand(1));
    if (!b) return std::nullopt;
    bounds = *b;
  }
  // Host-known values: the base, the row stride and each dim's extent; 16-byte alignment.
  auto token = [&](const Uniform& u) { return value_token(u.v, u.c); };
  std::optional<std::pair<std::string, std::string>> base_stride = map_base_stride(base, stride0.v, stride0.c);
  if (!base_stride) return std::nullopt;
  const auto& [base_tok, stride_tok] = *base_stride;
  Known known = [this](const ir::Value* v) { return known_scalar(v); };
  auto affine = [&](const Uniform& u) -> std::optional<std::pair<std::string, std::string>> {
    if (!u.v) return std::make_pair(fmt::format("(int64_t){}", u.c), std::string());
    return trip_affine(u.v, loop);
  };

  TmaTile r;
  std::vector<std::string> guard, shape(2);
  for (int d = 0; d < 2; ++d) {
    const IndexVec& iv = *dims[d].idx;
    if (iv.dtype != DType::i32) return std::nullopt;  // the copy's coordinates are 32-bit
    // The first index (for a wrapped one, its own remainder where the guard holds).
    const std::string ct = ctype(iv.dtype);
    std::optional<std::pair<std::string, std::string>> first = first_index(iv, known);
    if (!first) return std::nullopt;
    const auto& [pre, fits] = *first;
    if (iv.wrap) {
      std::optional<std::string> D = uniform_expr(*iv.wrap, known);
      if (!D) return std::nullopt;
      const std::string d32 = fmt::format("({}){}", ct, *D);
      // No division: a first index already inside [0, D - n] is its own remainder and does not
      // wrap; one past D (no program of a cdiv grid) takes the fallback, slower but exact.
      guard.push_back(fmt::format("{2} > 0 && {0} && (int64_t){1} + {3} <= {2}", fits, pre, d32, iv.n));
      r.start[d] = pre;
    } else {
      guard.push_back(fits);
      r.start[d] = pre;
    }
    r.adv[d] = adv[d];
    if (const Bound& b = bounds[d]; b.idx) {
      // index = a0' + l + w(trip) < limit(trip)  <=>  l < Y(trip) = limit - w - a0'; the copy's
      // bound is l < shape - start - trip * adv.
      auto X = affine(b.limit);
      std::optional<std::pair<std::string, std::string>> w;
      if (b.idx->off) w = affine(*b.idx->off);
      if (!X || (b.idx->off && !w)) return std::nullopt;
      std::string y0 = fmt::format("({} - {})", X->first, b.idx->a0), y1 = X->second.empty() ? "0" : X->second;
      if (w) {
        y0 = fmt::format("({} - {})", y0, w->first);
        if (!w->second.empty()) y1 = fmt::format("({} - {})", y1, w->second);
      }
      // The extent: the limit's leading term (K in `K - k * BK`), a parameter or a constant.
      const ir::Value* lead = b.limit.v;
      std::optional<std::string> tok = b.limit.v ? std::nullopt : token(b.limit);
      while (!tok && lead) {
        tok = recipe_token(lead);
        lead = lead->def && (lead->def->kind == OpKind::Sub || lead->def->kind == OpKind::Add) ? lead->def->operand(0) : nullptr;
      }
      if (!tok) return std::nullopt;
      shape[d] = *tok;
      guard.push_back(fmt::format("{} == -(int64_t){} && {} + {} == {}", y1, adv[d], y0, r.start[d], recipe_expr(*tok)));
    } else if (iv.wrap && adv[d] == 0) {
      std::optional<std::string> tok = token(*iv.wrap);
      if (!tok) return std::nullopt;
      shape[d] = *tok;
    } else {
      return std::nullopt;
    }
  }
  r.map = tma_map(base_tok, shape[0], shape[1], stride_tok, ld->result()->type.dtype, R);
  guard.push_back(tensor_map_usable_expr(shape[0], shape[1], stride_tok, ld->result()->type.dtype));
  r.guard = fmt::format("({})", fmt::join(guard, ") && ("));
  return r;
}

// A C tile stored by the copy engine (store_through_tma, tensor_cores.cpp): a pointer block
// base + rows[:, None] * stride + cols[None, :] (no `% D`) under the mask (rows' index < M) &
// (cols' index < N), M and N kernel parameters or constants. The copy of the box at (column start,
// row start) of the M x N tensor writes what lies inside it and skips the rest: the masked store
// exactly when (the guard) no start is negative, each mask's index starts where the pointer's does,
// and the launcher encoded the map.
std::optional<TmaTile> Planner::store(const ir::Op* st) {
  const ir::Value* p = st->operand(0);
  const Shape& s = p->type.shape;
  const DType dt = p->type.pointee;
  if (c_.cc < 90 || (dt != DType::f16 && dt != DType::bf16) || st->operands.size() != 3 || s.size() != 2 ||
      s[1] % 64 != 0 || s[0] % 8 != 0 || s[0] > 256)
    return std::nullopt;
  std::optional<PointerBlock> pb = pointer_block(p, c_.f.body);
  std::optional<std::array<Bound, 2>> bounds = bound_mask(st->operand(2));
  if (!pb || !bounds) return std::nullopt;
  const PointerBlock::Term* dims = pb->dims;
  std::optional<std::pair<std::string, std::string>> base_stride =
      map_base_stride(pb->base, dims[0].stride->v, dims[0].stride->c);
  if (!base_stride) return std::nullopt;
  const auto& [base_tok, stride_tok] = *base_stride;
  Known known = [this](const ir::Value* v) { return known_scalar(v); };
  TmaTile r;
  std::vector<std::string> guard, shape(2);
  for (int d = 0; d < 2; ++d) {
    const Bound& b = (*bounds)[d];
    // (32-bit indices: the copy's coordinates are 32-bit.)
    if (dims[d].idx->wrap || dims[d].idx->dtype != DType::i32 || !b.idx) return std::nullopt;
    std::optional<std::string> extent = value_token(b.limit.v, b.limit.c);
    auto at = first_index(*dims[d].idx, known), masked = first_index(*b.idx, known);
    if (!extent || !at || !masked) return std::nullopt;
    shape[d] = *extent;
    r.start[d] = at->first;
    guard.push_back(fmt::format("{} && (int64_t){} == (int64_t){}", at->second, at->first, masked->first));
  }
  r.map = tma_map(base_tok, shape[0], shape[1], stride_tok, dt, s[0]);
  guard.push_back(tensor_map_usable_expr(shape[0], shape[1], stride_tok, dt));
  r.guard = fmt::format("({})", fmt::join(guard, ") && ("));
  return r;
}

}  // namespace

// ---- tensor map recipes (KernelSource::tma_maps), as the kernel names them and the launcher reads them

namespace {

constexpr std::pair<const char*, DType> kRecipeTypes[] = {
    {"i32", DType::i32}, {"u32", DType::u32}, {"i64", DType::i64}, {"u64", DType::u64}};
constexpr std::pair<const char*, char> kRecipeOps[] = {{"add", '+'}, {"sub", '-'}, {"mul", '*'}, {"cvt", 'x'}};

// A recipe value at `at` of `s` (advanced past it): a leaf, or OP.T( operands ) nested at most
// kMaxRecipeDepth deep.
std::optional<RecipeValue> parse_value(std::string_view s, size_t& at, int depth) {
  if (at >= s.size()) return std::nullopt;
  RecipeValue r{'e', 0};
  for (const auto& [name, op] : kRecipeOps)
    if (s.substr(at, 4) == std::string(name) + ".") r.op = op;
  if (!r.op) {
    const char kind = s[at];
    if (std::string_view("piuc").find(kind) == std::string_view::npos) return std::nullopt;
    int64_t v = 0;
    const char* first = s.data() + at + 1;
    // (from_chars takes a '-' but no '+'; only a constant may be negative.)
    auto [end, ec] = std::from_chars(first, s.data() + s.size(), v);
    if (ec != std::errc() || end == first || (kind != 'c' && *first == '-')) return std::nullopt;
    at = static_cast<size_t>(end - s.data());
    return RecipeValue{kind, v};
  }
  if (depth >= kMaxRecipeDepth) return std::nullopt;
  at += 4;
  for (const auto& [name, type] : kRecipeTypes)
    if (s.substr(at, 4) == std::string(name) + "(") r.type = type;
  if (r.type == DType::invalid) return std::nullopt;
  at += 4;
  const size_t n = r.op == 'x' ? 1 : 2;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (at >= s.size() || s[at++] != ',')) return std::nullopt;
    std::optional<RecipeValue> o = parse_value(s, at, depth + 1);
    if (!o) return std::nullopt;
    r.operands.push_back(std::move(*o));
  }
  if (at >= s.size() || s[at++] != ')') return std::nullopt;
  return r;
}

// A 64-bit value as `type` holds it: wrapped to its width, then sign- or zero-extended.
int64_t in_type(uint64_t x, DType type) {
  switch (type) {
    case DType::i32: return static_cast<int32_t>(static_cast<uint32_t>(x));
    case DType::u32: return static_cast<uint32_t>(x);
    default: return static_cast<int64_t>(x);
  }
}

bool params_below(const RecipeValue& v, size_t num_params) {
  if (v.param()) return static_cast<uint64_t>(v.value) < num_params;
  for (const RecipeValue& o : v.operands)
    if (!params_below(o, num_params)) return false;
  return true;
}

}  // namespace

std::optional<RecipeValue> parse_recipe_value(const std::string& token) {
  if (token.size() > kMaxRecipeChars) return std::nullopt;
  size_t at = 0;
  std::optional<RecipeValue> v = parse_value(token, at, 0);
  if (!v || at != token.size()) return std::nullopt;
  return v;
}

std::string recipe_string(const RecipeValue& v) {
  if (!v.expr()) return fmt::format("{}{}", v.kind, v.value);
  std::string name, type;
  for (const auto& [n, op] : kRecipeOps)
    if (op == v.op) name = n;
  for (const auto& [n, t] : kRecipeTypes)
    if (t == v.type) type = n;
  std::vector<std::string> ops;
  for (const RecipeValue& o : v.operands) ops.push_back(recipe_string(o));
  return fmt::format("{}.{}({})", name, type, fmt::join(ops, ","));
}

int64_t recipe_value(const RecipeValue& v, const uint64_t* args) {
  switch (v.kind) {
    case 'c': return v.value;
    case 'i': return static_cast<int32_t>(static_cast<uint32_t>(args[v.value]));
    case 'u': return static_cast<uint32_t>(args[v.value]);
    case 'e': break;
    default: return static_cast<int64_t>(args[v.value]);
  }
  const uint64_t a = static_cast<uint64_t>(recipe_value(v.operands[0], args));
  const uint64_t b = v.op == 'x' ? 0 : static_cast<uint64_t>(recipe_value(v.operands[1], args));
  switch (v.op) {
    case '+': return in_type(a + b, v.type);
    case '-': return in_type(a - b, v.type);
    case '*': return in_type(a * b, v.type);
    default: return in_type(a, v.type);
  }
}

std::optional<TensorMapRecipe> parse_tensor_map_recipe(const std::string& line, size_t num_params) {
  std::istringstream in(line);
  TensorMapRecipe r;
  for (RecipeValue& v : r.values) {
    std::string tok;
    in >> tok;
    std::optional<RecipeValue> x = parse_recipe_value(tok);
    if (!x || !params_below(*x, num_params)) return std::nullopt;
    v = *x;
  }
  in >> r.esize >> r.dtype >> r.box[0] >> r.box[1];
  std::string rest;
  if (!in || (in >> rest) || r.esize <= 0 || r.values[4].kind != 'c' || r.values[4].value != 1) return std::nullopt;
  return r;
}

bool tensor_map_usable(int64_t shape0, int64_t shape1, int64_t stride0, int esize) {
  // cuTensorMapEncodeTiled: dims in [1, 2^32], the row stride in bytes a multiple of 16 below 2^40.
  constexpr int64_t kMaxDim = int64_t{1} << 32;
  return shape0 >= 1 && shape0 <= kMaxDim && shape1 >= 1 && shape1 <= kMaxDim && stride0 >= 1 &&
         stride0 < (int64_t{1} << 40) / esize && (stride0 * esize) % 16 == 0;
}

std::optional<TmaTile> plan_tma_load(const TmaContext& ctx, const ir::Op* load, int64_t rows, int64_t cols,
                                     const ir::Op* loop, const ir::Value* init, const ir::Value* step, bool round_tf32) {
  const DType dt = load->result()->type.dtype;
  if (ctx.cc < 90 || load->result()->type.rank() != 2 || (dt != DType::f16 && dt != DType::bf16 && dt != DType::f32) ||
      cols % (128 / dtype_bytes(dt)) != 0 || rows % 8 != 0 || rows > 256 || load->result()->type.shape != ir::Shape{rows, cols})
    return std::nullopt;
  Planner p(ctx, round_tf32 && dt == DType::f32);
  if (load->attrs.str.rfind("tensor ", 0) == 0) return p.block_ptr(load, rows, cols);
  return p.pointers(load, rows, loop, init, step);
}

std::optional<TmaTile> plan_tma_store(const TmaContext& ctx, const ir::Op* store) { return Planner(ctx).store(store); }

}  // namespace tritium::jit::cuda
