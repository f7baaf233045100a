// Folding, CSE, DCE, the pipeline and the axis-info analysis.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <optional>

#include "ir/builder.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "jit/passes/axis_info.h"
#include "jit/passes/cse.h"
#include "jit/passes/dce.h"
#include "jit/passes/fold_constants.h"
#include "jit/passes/pipeline.h"
#include "jit/passes/reassociate_addptr.h"

// Lets BOOST_TEST print optionals in failure messages.
namespace boost::test_tools::tt_detail {
template <class T>
struct print_log_value<std::optional<T>> {
  void operator()(std::ostream& os, const std::optional<T>& v) {
    if (v) os << *v;
    else os << "nullopt";
  }
};
}  // namespace boost::test_tools::tt_detail

using namespace tritium;
using namespace tritium::ir;
using namespace tritium::jit;

namespace {

const Type i1 = Type::scalar(DType::i1);
const Type i32 = Type::scalar(DType::i32);
const Type f32 = Type::scalar(DType::f32);

Value* add_param(Function& f, const std::string& name, const Type& t, int divisibility = 1) {
  f.params.push_back({name, t, divisibility});
  return f.add_block_arg(f.body, t);
}

Value* arange(Builder& b, int64_t start, int64_t end) {
  Attrs a;
  a.ints = {start, end};
  return b.create1(OpKind::Arange, {}, Type::block(DType::i32, {end - start}), a);
}

Value* splat(Builder& b, Value* v, Shape shape) { return b.create1(OpKind::Splat, {v}, v->type.with_shape(std::move(shape))); }

size_t count_ops(Function& f, OpKind kind) {
  size_t n = 0;
  f.walk([&](Op* op) { n += op->kind == kind; });
  return n;
}

Value* constant(Builder& b, double v, DType d) { return b.constant(v, Type::scalar(d)); }

// A function storing `make(builder)` through a pointer parameter; returns the stored value
// after folding (nullptr-def values are parameters).
struct Stored {
  Function f{"k"};
  Builder b{f};
  Value* out = nullptr;
  Op* store = nullptr;

  void keep(Value* v) {
    if (!out) out = add_param(f, "out", Type::pointer(v->type.dtype), 16);
    // A pointer param must come first in the body args, which add_param already ensured.
    store = b.create(OpKind::Store, {v->type.is_block() ? splat(b, out, v->type.shape) : out, v}, {});
  }
  Value* stored() const { return store->operand(1); }
  const Op* stored_constant() const {
    const Op* d = stored()->def;
    return d && d->kind == OpKind::Constant ? d : nullptr;
  }
};

// Folds `kind` over two scalar constants of dtype `d`; the folded integer, if folded.
std::optional<int64_t> fold_ints(OpKind kind, DType d, int64_t a, int64_t b, DType result = DType::invalid) {
  Stored s;
  s.out = add_param(s.f, "out", Type::pointer(result == DType::invalid ? d : result), 16);
  Value* x = s.b.constant_int(a, Type::scalar(d));
  Value* y = s.b.constant_int(b, Type::scalar(d));
  s.keep(s.b.create1(kind, {x, y}, Type::scalar(result == DType::invalid ? d : result)));
  fold_constants(s.f);
  verify(s.f);
  if (const Op* c = s.stored_constant()) return c->attrs.ival;
  return std::nullopt;
}


std::optional<double> fold_cast_to_float(DType from, double v, DType to) {
  Stored s;
  s.out = add_param(s.f, "out", Type::pointer(to), 16);
  s.keep(s.b.create1(OpKind::Cast, {constant(s.b, v, from)}, Type::scalar(to)));
  fold_constants(s.f);
  if (const Op* c = s.stored_constant()) return c->attrs.fval;
  return std::nullopt;
}

std::optional<int64_t> fold_cast_to_int(DType from, double v, DType to) {
  Stored s;
  s.out = add_param(s.f, "out", Type::pointer(to), 16);
  s.keep(s.b.create1(OpKind::Cast, {constant(s.b, v, from)}, Type::scalar(to)));
  fold_constants(s.f);
  if (const Op* c = s.stored_constant()) return c->attrs.ival;
  return std::nullopt;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_passes)

// ---- fold_constants ---------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(fold_integer_arithmetic_with_wrap_around) {
  BOOST_TEST(fold_ints(OpKind::Add, DType::i32, 2, 3) == 5);
  BOOST_TEST(fold_ints(OpKind::Add, DType::i32, 2147483647, 1) == -2147483648LL);
  BOOST_TEST(fold_ints(OpKind::Add, DType::u8, 200, 100) == 44);
  BOOST_TEST(fold_ints(OpKind::Sub, DType::u32, 0, 1) == 4294967295LL);
  BOOST_TEST(fold_ints(OpKind::Mul, DType::i8, 100, 3) == 44);
  BOOST_TEST(fold_ints(OpKind::Mul, DType::i16, 300, 300) == 24464);  // 90000 - 65536
  BOOST_TEST(fold_ints(OpKind::Div, DType::i32, -7, 2) == -3);       // C truncation
  BOOST_TEST(fold_ints(OpKind::Rem, DType::i32, -7, 2) == -1);
  BOOST_TEST(fold_ints(OpKind::Div, DType::i8, -128, -1) == -128);   // wraps
  BOOST_TEST(fold_ints(OpKind::Div, DType::u32, 4294967295LL, 2) == 2147483647);
  BOOST_TEST(fold_ints(OpKind::Shl, DType::i32, 1, 31) == -2147483648LL);
  BOOST_TEST(fold_ints(OpKind::Shr, DType::i32, -8, 1) == -4);       // arithmetic
  BOOST_TEST(fold_ints(OpKind::Shr, DType::u8, 128, 7) == 1);        // logical
  BOOST_TEST(fold_ints(OpKind::And, DType::i32, 12, 10) == 8);
  BOOST_TEST(fold_ints(OpKind::Xor, DType::i32, 12, 10) == 6);
  BOOST_TEST(fold_ints(OpKind::Min, DType::i32, -1, 1) == -1);
  BOOST_TEST(fold_ints(OpKind::Min, DType::u32, 4294967295LL, 1) == 1);
  BOOST_TEST(fold_ints(OpKind::Add, DType::i64, INT64_MAX, 1) == INT64_MIN);
}

BOOST_AUTO_TEST_CASE(fold_never_divides_by_zero_or_overshifts) {
  BOOST_TEST(!fold_ints(OpKind::Div, DType::i32, 7, 0).has_value());
  BOOST_TEST(!fold_ints(OpKind::Rem, DType::u32, 7, 0).has_value());
  BOOST_TEST(!fold_ints(OpKind::Shl, DType::i32, 1, 32).has_value());
  BOOST_TEST(!fold_ints(OpKind::Div, DType::i64, INT64_MIN, -1).has_value());
  Stored s;
  s.out = add_param(s.f, "out", Type::pointer(DType::f32), 16);
  s.keep(s.b.create1(OpKind::Div, {constant(s.b, 1, DType::f32), constant(s.b, 0, DType::f32)}, f32));
  BOOST_TEST(!fold_constants(s.f));
}

BOOST_AUTO_TEST_CASE(fold_comparisons) {
  BOOST_TEST(fold_ints(OpKind::CmpLt, DType::i32, -1, 1, DType::i1) == 1);
  BOOST_TEST(fold_ints(OpKind::CmpLt, DType::u32, 4294967295LL, 1, DType::i1) == 0);
  BOOST_TEST(fold_ints(OpKind::CmpEq, DType::i32, 3, 3, DType::i1) == 1);
  BOOST_TEST(fold_ints(OpKind::CmpGe, DType::i8, -5, 4, DType::i1) == 0);
}

BOOST_AUTO_TEST_CASE(fold_casts_and_floats) {
  BOOST_TEST(fold_cast_to_int(DType::i32, -1, DType::u8) == 255);
  BOOST_TEST(fold_cast_to_int(DType::u8, 255, DType::i8) == -1);
  BOOST_TEST(fold_cast_to_int(DType::f32, 2.7, DType::i32) == 2);
  BOOST_TEST(fold_cast_to_int(DType::f32, -2.7, DType::i32) == -2);
  BOOST_TEST(!fold_cast_to_int(DType::f32, 1e10, DType::i32).has_value());  // out of range: poison
  BOOST_TEST(fold_cast_to_int(DType::f32, 0.5, DType::i1) == 1);          // bool casts are != 0
  BOOST_TEST(fold_cast_to_float(DType::i32, 16777217, DType::f32) == 16777216.0);  // rounded to f32
  BOOST_TEST(fold_cast_to_float(DType::f64, 0.1, DType::f32) == static_cast<double>(0.1f));

  Stored s;
  s.out = add_param(s.f, "out", Type::pointer(DType::f32), 16);
  s.keep(s.b.create1(OpKind::Add, {constant(s.b, 0.1, DType::f32), constant(s.b, 0.2, DType::f32)}, f32));
  BOOST_TEST(fold_constants(s.f));
  BOOST_REQUIRE(s.stored_constant());
  BOOST_TEST(s.stored_constant()->attrs.fval == static_cast<double>(0.1f + 0.2f));
}

BOOST_AUTO_TEST_CASE(fold_identities) {
  struct Case {
    OpKind kind;
    bool param_on_left;
    double other;
    DType dtype;
    bool folds_to_param;
  };
  for (Case c : {Case{OpKind::Add, true, 0, DType::i32, true}, Case{OpKind::Add, false, 0, DType::i32, true},
                 Case{OpKind::Sub, true, 0, DType::i32, true}, Case{OpKind::Sub, false, 0, DType::i32, false},
                 Case{OpKind::Mul, true, 1, DType::i32, true}, Case{OpKind::Mul, false, 1, DType::i32, true},
                 Case{OpKind::Div, true, 1, DType::i32, true}, Case{OpKind::Mul, true, 1, DType::f32, true},
                 Case{OpKind::Add, true, 0, DType::f32, false},  // -0 + +0 is +0
                 Case{OpKind::Sub, true, 0, DType::f32, true}, Case{OpKind::Add, true, -0.0, DType::f32, true}}) {
    Function f("k");
    Value* out = add_param(f, "out", Type::pointer(c.dtype), 16);
    Value* x = add_param(f, "x", Type::scalar(c.dtype));
    Builder b(f);
    Value* k = constant(b, c.other, c.dtype);
    Value* r = b.create1(c.kind, c.param_on_left ? std::vector{x, k} : std::vector{k, x}, Type::scalar(c.dtype));
    Op* store = b.create(OpKind::Store, {out, r}, {});
    fold_constants(f);
    BOOST_TEST_INFO(op_name(c.kind) << " left=" << c.param_on_left << " " << dtype_name(c.dtype));
    BOOST_TEST((store->operand(1) == x) == c.folds_to_param);
  }
  // x * 0 -> 0 for integers (not for floats: NaN * 0 is NaN).
  for (DType d : {DType::i32, DType::f32}) {
    Function f("k");
    Value* out = add_param(f, "out", Type::pointer(d), 16);
    Value* x = add_param(f, "x", Type::scalar(d));
    Builder b(f);
    Op* store = b.create(OpKind::Store, {out, b.create1(OpKind::Mul, {x, constant(b, 0, d)}, Type::scalar(d))}, {});
    fold_constants(f);
    bool zero = store->operand(1)->def->kind == OpKind::Constant;
    BOOST_TEST(zero == is_int(d));
  }
  // x % 1 -> 0 for integers (a chunk index over one chunk); x % 2 and 1 % x stay.
  for (auto [k, left] : {std::pair{int64_t(1), false}, std::pair{int64_t(2), false}, std::pair{int64_t(1), true}}) {
    Function f("k");
    Value* out = add_param(f, "out", Type::pointer(DType::i64), 16);
    Value* x = add_param(f, "x", Type::scalar(DType::i64));
    Builder b(f);
    Value* c = constant(b, static_cast<double>(k), DType::i64);
    Op* store = b.create(OpKind::Store, {out, b.create1(OpKind::Rem, left ? std::vector{c, x} : std::vector{x, c},
                                                        Type::scalar(DType::i64))}, {});
    fold_constants(f);
    const Op* def = store->operand(1)->def;
    const bool folded = def && def->kind == OpKind::Constant;
    BOOST_TEST(folded == (k == 1 && !left), "x % " << k << (left ? " (constant on the left)" : ""));
    if (folded) BOOST_TEST(def->attrs.ival == 0);
  }
}

BOOST_AUTO_TEST_CASE(fold_shapes_select_neg_addptr) {
  Function f("k");
  Value* out = add_param(f, "out", Type::pointer(DType::i32), 16);
  Value* x = add_param(f, "x", i32);
  Builder b(f);
  // splat of a constant -> block constant
  Value* s = splat(b, b.constant_int(7, i32), {16});
  // broadcast of a splat -> splat
  Value* col = splat(b, x, {16, 1});
  Value* wide = b.create1(OpKind::Broadcast, {col}, Type::block(DType::i32, {16, 8}));
  // select with a constant condition, double negation, addptr of 0
  Value* picked = b.create1(OpKind::Select, {b.constant_int(0, i1), x, b.constant_int(3, i32)}, i32);
  Value* back = b.create1(OpKind::Neg, {b.create1(OpKind::Neg, {x}, i32)}, i32);
  Value* same_ptr = b.create1(OpKind::AddPtr, {out, b.constant_int(0, i32)}, out->type);
  Op* store_s = b.create(OpKind::Store, {splat(b, out, {16}), s}, {});
  Op* store_w = b.create(OpKind::Store, {splat(b, out, {16, 8}), wide}, {});
  Op* store_p = b.create(OpKind::Store, {same_ptr, picked}, {});
  Op* store_n = b.create(OpKind::Store, {out, back}, {});

  BOOST_TEST(fold_constants(f));
  verify(f);
  const Op* c = store_s->operand(1)->def;
  BOOST_TEST((c->kind == OpKind::Constant && c->attrs.ival == 7 && c->result()->type == Type::block(DType::i32, {16})));
  const Op* w = store_w->operand(1)->def;
  BOOST_TEST((w->kind == OpKind::Splat && w->operand(0) == x));
  BOOST_TEST(store_p->operand(0) == out);
  BOOST_TEST(store_p->operand(1)->def->attrs.ival == 3);
  BOOST_TEST(store_n->operand(1) == x);
  BOOST_TEST(count_ops(f, OpKind::Broadcast) == 0u);
  BOOST_TEST(count_ops(f, OpKind::Select) == 0u);
  BOOST_TEST(count_ops(f, OpKind::AddPtr) == 0u);
  BOOST_TEST(!fold_constants(f));  // nothing left to do
}

// addptr(splat(p), splat(s) + b) -> addptr(splat(addptr(p, s)), b): the uniform part of the
// offsets joins the scalar pointer (either operand order of the add), with the same axis info.
BOOST_AUTO_TEST_CASE(fold_moves_uniform_offsets_into_the_pointer) {
  for (bool splat_first : {true, false}) {
    BOOST_TEST_CONTEXT("splat operand first: " << splat_first) {
      Function f("k");
      Value* x = add_param(f, "x", Type::pointer(DType::f32), 16);
      Builder b(f);
      Value* pid = b.create1(OpKind::ProgramId, {}, i32);
      Value* start = b.create1(OpKind::Mul, {pid, b.constant_int(1024, i32)}, i32);
      Value* s = splat(b, start, {1024});
      Value* r = arange(b, 0, 1024);
      Value* offs = b.create1(OpKind::Add, {splat_first ? s : r, splat_first ? r : s}, Type::block(DType::i32, {1024}));
      Value* ptrs = b.create1(OpKind::AddPtr, {splat(b, x, {1024}), offs}, x->type.with_shape({1024}));
      Op* load = b.create(OpKind::Load, {ptrs}, {Type::block(DType::f32, {1024})});
      b.create(OpKind::Store, {ptrs, load->result()}, {});
      AxisInfo before = analyze_axis_info(f).get(ptrs);

      run_passes(f, "");
      const Value* p = load->operand(0);
      BOOST_REQUIRE(p->def->kind == OpKind::AddPtr);
      BOOST_TEST((p->def->operand(1)->def && p->def->operand(1)->def->kind == OpKind::Arange));
      const Op* base_splat = p->def->operand(0)->def;
      BOOST_REQUIRE(base_splat->kind == OpKind::Splat);
      const Op* base = base_splat->operand(0)->def;
      BOOST_REQUIRE(base->kind == OpKind::AddPtr);  // x + pid * 1024, a scalar
      BOOST_TEST(base->operand(0) == x);
      BOOST_TEST(base->operand(1) == start);
      BOOST_TEST(count_ops(f, OpKind::Add) == 0u);  // the block add is dead
      AxisInfo after = analyze_axis_info(f).get(p);
      BOOST_TEST(after.contiguity == before.contiguity);
      BOOST_TEST(after.divisibility == before.divisibility);
    }
  }
}

BOOST_AUTO_TEST_CASE(fold_chains_in_one_run) {
  Stored s;
  s.out = add_param(s.f, "out", Type::pointer(DType::i32), 16);
  Value* a = s.b.create1(OpKind::Mul, {s.b.constant_int(6, i32), s.b.constant_int(7, i32)}, i32);
  Value* c = s.b.create1(OpKind::Sub, {a, s.b.constant_int(2, i32)}, i32);
  s.keep(splat(s.b, c, {4}));
  BOOST_TEST(fold_constants(s.f));
  BOOST_REQUIRE(s.stored_constant());
  BOOST_TEST(s.stored_constant()->attrs.ival == 40);
  BOOST_TEST((s.stored()->type == Type::block(DType::i32, {4})));
}

// ---- CSE --------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(cse_merges_equal_pure_ops) {
  Function f("k");
  Value* out = add_param(f, "out", Type::pointer(DType::i32), 16);
  Value* x = add_param(f, "x", i32);
  Value* y = add_param(f, "y", i32);
  Builder b(f);
  Value* a1 = b.create1(OpKind::Add, {x, y}, i32);
  Value* a2 = b.create1(OpKind::Add, {y, x}, i32);  // commutative
  Value* s1 = b.create1(OpKind::Sub, {x, y}, i32);
  Value* s2 = b.create1(OpKind::Sub, {y, x}, i32);  // not commutative
  Op* st1 = b.create(OpKind::Store, {out, a1}, {});
  Op* st2 = b.create(OpKind::Store, {out, a2}, {});
  b.create(OpKind::Store, {out, s1}, {});
  b.create(OpKind::Store, {out, s2}, {});
  BOOST_TEST(eliminate_common_subexpressions(f));
  BOOST_TEST(st2->operand(1) == a1);
  BOOST_TEST(st1->operand(1) == a1);
  BOOST_TEST(count_ops(f, OpKind::Add) == 1u);
  BOOST_TEST(count_ops(f, OpKind::Sub) == 2u);
  BOOST_TEST(count_ops(f, OpKind::Store) == 4u);  // side effects never merge
  verify(f);
  BOOST_TEST(!eliminate_common_subexpressions(f));
}

BOOST_AUTO_TEST_CASE(cse_keeps_loads_and_distinct_constants) {
  Function f("k");
  Value* p = add_param(f, "p", Type::pointer(DType::f32), 16);
  Builder b(f);
  Value* l1 = b.create1(OpKind::Load, {p}, f32);
  Value* l2 = b.create1(OpKind::Load, {p}, f32);
  b.create(OpKind::Store, {p, l1}, {});
  b.create(OpKind::Store, {p, l2}, {});
  b.create(OpKind::Store, {p, b.constant_float(0.0, f32)}, {});
  b.create(OpKind::Store, {p, b.constant_float(-0.0, f32)}, {});
  b.create(OpKind::Store, {p, b.constant_float(0.0, f32)}, {});
  BOOST_TEST(eliminate_common_subexpressions(f));
  BOOST_TEST(count_ops(f, OpKind::Load) == 2u);
  BOOST_TEST(count_ops(f, OpKind::Constant) == 2u);  // +0 and -0 stay apart
}

BOOST_AUTO_TEST_CASE(cse_is_scoped) {
  Function f("k");
  Value* out = add_param(f, "out", Type::pointer(DType::i32), 16);
  Value* n = add_param(f, "n", i32);
  Builder b(f);
  Value* outer = b.create1(OpKind::Mul, {n, n}, i32);
  Value* zero = b.constant_int(0, i32);
  Op* loop = b.create(OpKind::For, {zero, n, n}, {});
  Block* body = f.new_block(loop);
  loop->regions.push_back(body);
  f.add_block_arg(body, i32);
  b.set_insertion_end(body);
  Value* inner_same = b.create1(OpKind::Mul, {n, n}, i32);  // -> outer
  Value* inner_only = b.create1(OpKind::Add, {n, n}, i32);
  Op* inner_store = b.create(OpKind::Store, {out, b.create1(OpKind::Add, {inner_same, inner_only}, i32)}, {});
  b.create(OpKind::Yield, {}, {});
  b.set_insertion_end(f.body);
  Value* after = b.create1(OpKind::Add, {n, n}, i32);  // must not become the loop's inner_only
  Op* after_store = b.create(OpKind::Store, {out, after}, {});

  BOOST_TEST(eliminate_common_subexpressions(f));
  verify(f);
  BOOST_TEST(inner_store->operand(1)->def->operand(0) == outer);
  BOOST_TEST(after_store->operand(1) == after);
  BOOST_TEST(count_ops(f, OpKind::Mul) == 1u);
  BOOST_TEST(count_ops(f, OpKind::Add) == 3u);
}

BOOST_AUTO_TEST_CASE(cse_does_not_merge_across_if_branches) {
  Function f("k");
  Value* out = add_param(f, "out", Type::pointer(DType::i32), 16);
  Value* n = add_param(f, "n", i32);
  Builder b(f);
  Value* c = b.create1(OpKind::CmpGt, {n, b.constant_int(0, i32)}, i1);
  Op* branch = b.create(OpKind::If, {c}, {i32});
  for (int r = 0; r < 2; ++r) {
    Block* blk = f.new_block(branch);
    branch->regions.push_back(blk);
    b.set_insertion_end(blk);
    b.create(OpKind::Yield, {b.create1(OpKind::Mul, {n, n}, i32)}, {});
  }
  b.set_insertion_end(f.body);
  b.create(OpKind::Store, {out, branch->result()}, {});
  BOOST_TEST(!eliminate_common_subexpressions(f));
  BOOST_TEST(count_ops(f, OpKind::Mul) == 2u);
}

// ---- DCE --------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(dce_removes_dead_chains_and_keeps_effects) {
  Function f("k");
  Value* out = add_param(f, "out", Type::pointer(DType::i32), 16);
  Value* n = add_param(f, "n", i32);
  Builder b(f);
  Value* d1 = b.create1(OpKind::Mul, {n, n}, i32);
  Value* d2 = b.create1(OpKind::Add, {d1, b.constant_int(3, i32)}, i32);
  b.create1(OpKind::Neg, {d2}, i32);                // dead chain
  b.create1(OpKind::Load, {out}, i32);              // unused load
  Value* live = b.create1(OpKind::Sub, {n, n}, i32);
  b.create(OpKind::Store, {out, live}, {});
  b.create1(OpKind::AtomicAdd, {out, n}, i32);      // unused, but has side effects

  // A loop whose results nobody uses and that has no effects goes; one with a store stays.
  Value* zero = b.constant_int(0, i32);
  for (bool with_store : {false, true}) {
    Op* loop = b.create(OpKind::For, {zero, n, n, zero}, {i32});
    Block* body = f.new_block(loop);
    loop->regions.push_back(body);
    f.add_block_arg(body, i32);
    Value* acc = f.add_block_arg(body, i32);
    b.set_insertion_end(body);
    Value* next = b.create1(OpKind::Add, {acc, n}, i32);
    if (with_store) b.create(OpKind::Store, {out, next}, {});
    b.create(OpKind::Yield, {next}, {});
    b.set_insertion_end(f.body);
  }
  BOOST_TEST(eliminate_dead_code(f));
  verify(f);
  BOOST_TEST(count_ops(f, OpKind::Mul) == 0u);
  BOOST_TEST(count_ops(f, OpKind::Neg) == 0u);
  BOOST_TEST(count_ops(f, OpKind::Load) == 0u);
  BOOST_TEST(count_ops(f, OpKind::Sub) == 1u);
  BOOST_TEST(count_ops(f, OpKind::AtomicAdd) == 1u);
  BOOST_TEST(count_ops(f, OpKind::For) == 1u);
  BOOST_TEST(count_ops(f, OpKind::Store) == 2u);
  BOOST_TEST(count_ops(f, OpKind::Constant) == 1u);  // 3 went with its user; 0 feeds the loop
  BOOST_TEST(!eliminate_dead_code(f));
}

// ---- reassociate_addptr -----------------------------------------------------------------------

namespace {

Value* expand(Builder& b, Value* v, int axis) {
  Attrs a;
  a.axis = axis;
  Shape s = v->type.shape;
  s.insert(s.begin() + axis, 1);
  return b.create1(OpKind::ExpandDims, {v}, v->type.with_shape(s), a);
}

Value* broadcast(Builder& b, Value* v, Shape s) { return b.create1(OpKind::Broadcast, {v}, v->type.with_shape(std::move(s))); }

// The conv's im2col shape: a [16, 1] row pointer made before a loop, and in the loop
// p + cols[None, :] + rows_trip[:, None] + splat(i * s), added left to right at [16, 8].
struct Im2col {
  Function f{"im2col"};
  Value* x = nullptr;
  Op* loop = nullptr;
  Op* load = nullptr;
  Value* rows_trip = nullptr;
  Im2col() {
    x = add_param(f, "x", Type::pointer(DType::f32), 16);
    Value* out = add_param(f, "out", Type::pointer(DType::f32), 16);
    Value* n = add_param(f, "n", i32);
    Value* s = add_param(f, "s", i32);
    Builder b(f);
    Type col = Type::block(DType::i32, {16, 1});
    Value* rows = expand(b, arange(b, 0, 16), 1);
    Value* row_off = b.create1(OpKind::Mul, {rows, splat(b, s, {16, 1})}, col);
    Value* base = b.create1(OpKind::AddPtr, {splat(b, x, {16, 1}), row_off}, x->type.with_shape({16, 1}));
    Value* cols = expand(b, arange(b, 0, 8), 0);
    Type tile = Type::block(DType::f32, {16, 8});
    Value* zero = b.constant_int(0, i32);
    loop = b.create(OpKind::For, {zero, n, b.constant_int(1, i32), b.constant_float(0.0, tile)}, {tile});
    Block* body = f.new_block(loop);
    loop->regions.push_back(body);
    Value* iv = f.add_block_arg(body, i32);
    Value* acc = f.add_block_arg(body, tile);
    b.set_insertion_end(body);
    rows_trip = b.create1(OpKind::Add, {rows, splat(b, iv, {16, 1})}, col);
    Type ptrs = x->type.with_shape({16, 8});
    Value* p = b.create1(OpKind::AddPtr, {broadcast(b, base, {16, 8}), broadcast(b, cols, {16, 8})}, ptrs);
    p = b.create1(OpKind::AddPtr, {p, broadcast(b, rows_trip, {16, 8})}, ptrs);
    Value* step = b.create1(OpKind::Mul, {iv, s}, i32);
    p = b.create1(OpKind::AddPtr, {p, splat(b, step, {16, 8})}, ptrs);
    load = b.create(OpKind::Load, {p}, {tile});
    b.create(OpKind::Yield, {b.create1(OpKind::Add, {acc, load->result()}, tile)}, {});
    b.set_insertion_end(f.body);
    b.create(OpKind::Store, {splat(b, out, {16, 8}), loop->result()}, {});
    verify(f);
  }
};

size_t count_addptr(Block* blk, const Shape& shape) {
  size_t n = 0;
  for (Op* op : blk->ops) n += op->kind == OpKind::AddPtr && op->result()->type.shape == shape;
  return n;
}

}  // namespace

// Per trip the rows' terms are added to the [16, 1] row pointer (16 additions each) and the
// pointer is broadcast for one [16, 8] addition of the columns, instead of three [16, 8] ones.
// Only 64-bit pointer additions move (no i32 offset is summed), so the addresses are the
// original ones.
BOOST_AUTO_TEST_CASE(reassociate_adds_row_terms_before_broadcasting) {
  Im2col k;
  Block* body = k.loop->regions[0];
  BOOST_TEST(count_addptr(body, {16, 8}) == 3u);
  run_passes(k.f, "");
  BOOST_TEST(count_addptr(body, {16, 8}) == 1u, print(k.f));
  BOOST_TEST(count_addptr(k.f.body, {16, 8}) == 0u, print(k.f));
  // x + i * s (a scalar: free), + rows * s, + rows_trip at [16, 1]; hoisting rows * s instead
  // would cost as much a trip and keep a pointer block live across the loop.
  BOOST_TEST(count_addptr(body, {}) == 1u, print(k.f));
  BOOST_TEST(count_addptr(body, {16, 1}) == 2u, print(k.f));
  BOOST_TEST(count_addptr(k.f.body, {16, 1}) == 0u, print(k.f));
  const Op* p = k.load->operand(0)->def;
  BOOST_REQUIRE(p->kind == OpKind::AddPtr);
  BOOST_TEST((p->operand(0)->def->kind == OpKind::Broadcast));  // the row pointer, broadcast
  BOOST_TEST(p->operand(0)->def->operand(0)->type.shape == (Shape{16, 1}));
  BOOST_TEST(p->operand(1)->type.shape == (Shape{16, 8}));
  BOOST_TEST(!reassociate_pointer_chains(k.f));  // already in the cheapest order
  verify(k.f);
}

// A chain already in its cheapest order, a chain through a pointer with another use, and a
// chain of two equal-cost terms are left alone (the fixed point of run_passes relies on it).
BOOST_AUTO_TEST_CASE(reassociate_leaves_cheapest_and_shared_chains) {
  Function f("k");
  Value* x = add_param(f, "x", Type::pointer(DType::f32), 16);
  Value* s = add_param(f, "s", i32);
  Builder b(f);
  Type ptrs = x->type.with_shape({8});
  Value* a = arange(b, 0, 8);
  Value* p = b.create1(OpKind::AddPtr, {splat(b, x, {8}), a}, ptrs);
  Value* q = b.create1(OpKind::AddPtr, {p, splat(b, s, {8})}, ptrs);  // p has two uses
  Op* l1 = b.create(OpKind::Load, {p}, {Type::block(DType::f32, {8})});
  Op* l2 = b.create(OpKind::Load, {q}, {Type::block(DType::f32, {8})});
  b.create(OpKind::Store, {p, b.create1(OpKind::Add, {l1->result(), l2->result()}, l1->result()->type)}, {});
  Value* r = b.create1(OpKind::AddPtr, {b.create1(OpKind::AddPtr, {x, s}, x->type), s}, x->type);  // scalar, equal cost
  b.create(OpKind::Store, {r, b.constant_float(1.0, f32)}, {});
  const std::string before = print(f);
  BOOST_TEST(!reassociate_pointer_chains(f));
  BOOST_TEST(print(f) == before);
}

// ---- pipeline ---------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(pipeline_reaches_a_fixed_point_and_dumps) {
  Function f("pipe");
  Value* out = add_param(f, "out", Type::pointer(DType::i32), 16);
  Value* n = add_param(f, "n", i32);
  Builder b(f);
  Value* two = b.create1(OpKind::Add, {b.constant_int(1, i32), b.constant_int(1, i32)}, i32);
  Value* a = b.create1(OpKind::Mul, {n, two}, i32);
  Value* a_again = b.create1(OpKind::Mul, {n, b.constant_int(2, i32)}, i32);
  b.create1(OpKind::Neg, {a}, i32);  // dead
  b.create(OpKind::Store, {out, b.create1(OpKind::Add, {a, a_again}, i32)}, {});

  auto dir = std::filesystem::temp_directory_path() / "tritium_test_pipeline_dump";
  std::filesystem::remove_all(dir);
  run_passes(f, dir.string());
  const std::string expected =
      "func @pipe(%0: ptr<i32> {div=16}, %1: i32) {\n"
      "  %2 = constant 2 : i32\n"
      "  %3 = mul %1, %2 : i32\n"
      "  %4 = add %3, %3 : i32\n"
      "  store %0, %4\n"
      "}\n";
  BOOST_TEST(print(f) == expected);
  BOOST_TEST(std::filesystem::exists(dir / "pipe.00-input.ir"));
  BOOST_TEST(std::filesystem::exists(dir / "pipe.01-fold_constants.ir"));
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  BOOST_TEST(files >= 3u);
  std::filesystem::remove_all(dir);
}

// ---- axis info --------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(axis_info_arange_and_constants) {
  Function f("k");
  Builder b(f);
  Value* r0 = arange(b, 0, 1024);
  Value* r16 = arange(b, 16, 48);
  Value* c48 = b.constant_int(48, Type::block(DType::i32, {8, 4}));
  AxisInfoMap info = analyze_axis_info(f);
  BOOST_TEST(info.get(r0).contiguity == std::vector<int64_t>{1024});
  BOOST_TEST(info.get(r0).divisibility == std::vector<int64_t>{AxisInfo::kMaxDivisor});
  BOOST_TEST(info.get(r0).constancy == std::vector<int64_t>{1});
  BOOST_TEST(info.get(r16).contiguity == std::vector<int64_t>{32});
  BOOST_TEST(info.get(r16).divisibility == std::vector<int64_t>{16});
  BOOST_TEST(info.get(c48).divisibility == (std::vector<int64_t>{16, 16}));
  BOOST_TEST(info.get(c48).constancy == (std::vector<int64_t>{8, 4}));
  BOOST_TEST(info.get(c48).constant == 48);
  BOOST_CHECK_THROW(info.get(nullptr), Error);
}

BOOST_AUTO_TEST_CASE(axis_info_vector_add_offsets_and_pointers) {
  Function f("add");
  Value* x = add_param(f, "x", Type::pointer(DType::f32), 16);
  Value* n = add_param(f, "n", i32, 16);
  Builder b(f);
  Value* pid = b.create1(OpKind::ProgramId, {}, i32);
  Value* start = b.create1(OpKind::Mul, {pid, b.constant_int(1024, i32)}, i32);
  Value* offs = b.create1(OpKind::Add, {splat(b, start, {1024}), arange(b, 0, 1024)}, Type::block(DType::i32, {1024}));
  Value* mask = b.create1(OpKind::CmpLt, {offs, splat(b, n, {1024})}, Type::block(DType::i1, {1024}));
  Type ptrs_t = x->type.with_shape({1024});
  Value* ptrs = b.create1(OpKind::AddPtr, {splat(b, x, {1024}), offs}, ptrs_t);
  Op* load = b.create(OpKind::Load, {ptrs, mask}, {Type::block(DType::f32, {1024})});
  Op* unmasked = b.create(OpKind::Load, {ptrs}, {Type::block(DType::f32, {1024})});
  AxisInfoMap info = analyze_axis_info(f);

  BOOST_TEST(info.get(start).divisibility == std::vector<int64_t>{1024});
  BOOST_TEST(info.get(offs).contiguity == std::vector<int64_t>{1024});
  BOOST_TEST(info.get(offs).divisibility == std::vector<int64_t>{1024});
  // Pointer divisibility is in bytes: a 16-byte aligned base plus 1024-element (4096-byte) steps.
  BOOST_TEST(info.get(ptrs).contiguity == std::vector<int64_t>{1024});
  BOOST_TEST(info.get(ptrs).divisibility == std::vector<int64_t>{16});
  // offs < n flips only at multiples of 16 elements.
  BOOST_TEST(info.get(mask).constancy == std::vector<int64_t>{16});
  BOOST_TEST(vector_width(info, *load) == 4);       // 16-byte alignment / 4-byte floats
  BOOST_TEST(vector_width(info, *unmasked) == 4);

  // A 64-byte aligned base allows one 16-float vector (64 bytes), if the mask allows it too.
  f.params[0].divisibility = 64;
  f.params[1].divisibility = 32;
  info = analyze_axis_info(f);
  BOOST_TEST(info.get(ptrs).divisibility == std::vector<int64_t>{64});
  BOOST_TEST(vector_width(info, *unmasked) == 16);
  BOOST_TEST(vector_width(info, *load) == 16);
}

BOOST_AUTO_TEST_CASE(axis_info_hints) {
  Function f("k");
  Value* n = add_param(f, "n", i32, 16);
  Builder b(f);
  Type row = Type::block(DType::i32, {128});
  Value* pid = b.create1(OpKind::ProgramId, {}, i32);
  Value* offs = b.create1(OpKind::Add, {splat(b, b.create1(OpKind::Mul, {pid, b.constant_int(128, i32)}, i32), {128}),
                                        arange(b, 0, 128)}, row);
  Value* wrapped = b.create1(OpKind::Rem, {offs, splat(b, n, {128})}, row);  // like offs_am % M in matmul
  Attrs div_hint, contig_hint;
  div_hint.ints = {128};
  contig_hint.ints = {128};
  Value* hinted = b.create1(OpKind::MultipleOf, {wrapped, }, row, div_hint);
  Value* both = b.create1(OpKind::MaxContiguous, {hinted}, row, contig_hint);
  AxisInfoMap info = analyze_axis_info(f);
  BOOST_TEST(info.get(wrapped).contiguity == std::vector<int64_t>{16});  // wraps at multiples of 16 at worst
  BOOST_TEST(info.get(wrapped).divisibility == std::vector<int64_t>{16});
  BOOST_TEST(info.get(hinted).divisibility == std::vector<int64_t>{128});
  BOOST_TEST(info.get(both).contiguity == std::vector<int64_t>{128});
  BOOST_TEST(info.get(both).divisibility == std::vector<int64_t>{128});
}

// Casts between 64-bit integers and pointers (tl::pointer_type) keep divisibility in bytes, but a
// run of consecutive integers is a run of byte addresses: as f16 pointers it is no run at all, and
// f16 pointers stepping by one element are integers stepping by 2.
BOOST_AUTO_TEST_CASE(axis_info_pointer_casts) {
  Function f("k");
  Value* base = add_param(f, "base", Type::scalar(DType::i64), 16);
  Value* x = add_param(f, "x", Type::pointer(DType::f16), 16);
  Builder b(f);
  const Shape s{64};
  Value* addrs = b.create1(OpKind::Add, {splat(b, base, s), b.create1(OpKind::Cast, {arange(b, 0, 64)}, Type::block(DType::i64, s))},
                           Type::block(DType::i64, s));
  Value* as_f16 = b.create1(OpKind::Cast, {addrs}, Type::pointer(DType::f16).with_shape(s));
  Value* as_u8 = b.create1(OpKind::Cast, {addrs}, Type::pointer(DType::u8).with_shape(s));
  Value* scalar = b.create1(OpKind::Cast, {base}, Type::pointer(DType::f32));
  Value* xs = b.create1(OpKind::AddPtr, {splat(b, x, s), arange(b, 0, 64)}, x->type.with_shape(s));
  Value* as_bf16 = b.create1(OpKind::Cast, {xs}, Type::pointer(DType::bf16).with_shape(s));
  Value* as_f32 = b.create1(OpKind::Cast, {xs}, Type::pointer(DType::f32).with_shape(s));
  Value* as_int = b.create1(OpKind::Cast, {xs}, Type::block(DType::i64, s));
  AxisInfoMap info = analyze_axis_info(f);
  BOOST_TEST(info.get(addrs).contiguity == std::vector<int64_t>{64});
  BOOST_TEST(info.get(as_u8).contiguity == std::vector<int64_t>{64});   // bytes either way
  BOOST_TEST(info.get(as_u8).divisibility == std::vector<int64_t>{16});
  BOOST_TEST(info.get(as_f16).contiguity == std::vector<int64_t>{1});
  BOOST_TEST(info.get(as_f16).divisibility == std::vector<int64_t>{1});  // base + k, k odd too
  BOOST_TEST(info.get(scalar).divisibility == std::vector<int64_t>{16});
  BOOST_TEST(info.get(as_bf16).contiguity == std::vector<int64_t>{64});  // both step by 2 bytes
  BOOST_TEST(info.get(as_bf16).divisibility == std::vector<int64_t>{16});
  BOOST_TEST(info.get(as_f32).contiguity == std::vector<int64_t>{1});
  BOOST_TEST(info.get(as_f32).divisibility == std::vector<int64_t>{2});
  BOOST_TEST(info.get(as_int).contiguity == std::vector<int64_t>{1});
  BOOST_TEST(info.get(as_int).divisibility == std::vector<int64_t>{2});
}

BOOST_AUTO_TEST_CASE(axis_info_broadcast_2d) {
  // offs = rm[:, None] * stride + rn[None, :] with rm = arange(32), rn = arange(64)
  Function f("k");
  Value* a = add_param(f, "a", Type::pointer(DType::f32), 16);
  Value* stride = add_param(f, "stride", i32, 16);
  Builder b(f);
  Attrs axis0, axis1;
  axis1.axis = 1;
  Type col_t = Type::block(DType::i32, {32, 1});
  Type tile_t = Type::block(DType::i32, {32, 64});
  Value* rm = b.create1(OpKind::ExpandDims, {arange(b, 0, 32)}, col_t, axis1);
  Value* rows = b.create1(OpKind::Mul, {rm, splat(b, stride, {32, 1})}, col_t);
  Value* rows_b = b.create1(OpKind::Broadcast, {rows}, tile_t);
  Value* rn = b.create1(OpKind::ExpandDims, {arange(b, 0, 64)}, Type::block(DType::i32, {1, 64}), axis0);
  Value* cols_b = b.create1(OpKind::Broadcast, {rn}, tile_t);
  Value* offs = b.create1(OpKind::Add, {rows_b, cols_b}, tile_t);
  Value* ptrs = b.create1(OpKind::AddPtr, {splat(b, a, {32, 64}), offs}, a->type.with_shape({32, 64}));
  Op* load = b.create(OpKind::Load, {ptrs}, {Type::block(DType::f32, {32, 64})});
  AxisInfoMap info = analyze_axis_info(f);

  BOOST_TEST(info.get(rm).contiguity == (std::vector<int64_t>{32, 1}));
  BOOST_TEST(info.get(rows).contiguity == (std::vector<int64_t>{1, 1}));
  BOOST_TEST(info.get(rows).divisibility == (std::vector<int64_t>{16, 16}));
  BOOST_TEST(info.get(rows_b).constancy == (std::vector<int64_t>{1, 64}));
  BOOST_TEST(info.get(cols_b).constancy == (std::vector<int64_t>{32, 1}));
  BOOST_TEST(info.get(offs).contiguity == (std::vector<int64_t>{1, 64}));
  // Along dim 0, i*stride + j is a multiple of nothing in general.
  BOOST_TEST(info.get(offs).divisibility == (std::vector<int64_t>{1, 16}));
  BOOST_TEST(info.get(offs).constancy == (std::vector<int64_t>{1, 1}));
  BOOST_TEST(info.get(ptrs).contiguity == (std::vector<int64_t>{1, 64}));
  BOOST_TEST(info.get(ptrs).divisibility == (std::vector<int64_t>{4, 16}));  // bytes
  BOOST_TEST(vector_width(info, *load) == 4);
}

BOOST_AUTO_TEST_CASE(axis_info_division_remainder_and_runs_that_split) {
  Function f("k");
  Builder b(f);
  Type row = Type::block(DType::i32, {128});
  Value* r = arange(b, 0, 128);
  Value* q = b.create1(OpKind::Div, {r, b.constant_int(4, row)}, row);
  Value* m = b.create1(OpKind::Rem, {r, b.constant_int(64, row)}, row);
  Value* m48 = b.create1(OpKind::Rem, {r, b.constant_int(48, row)}, row);
  // [0..7] + [0,0,0,0,16,16,16,16] = [0,1,2,3,20,21,22,23]: runs of 4 starting at multiples of 4.
  Type eight = Type::block(DType::i32, {8});
  Value* step = b.create1(OpKind::Mul, {b.create1(OpKind::Div, {arange(b, 0, 8), b.constant_int(4, eight)}, eight),
                                        b.constant_int(16, eight)}, eight);
  Value* sum = b.create1(OpKind::Add, {arange(b, 0, 8), step}, eight);
  AxisInfoMap info = analyze_axis_info(f);
  BOOST_TEST(info.get(q).constancy == std::vector<int64_t>{4});
  BOOST_TEST(info.get(q).contiguity == std::vector<int64_t>{1});
  BOOST_TEST(info.get(m).contiguity == std::vector<int64_t>{64});
  BOOST_TEST(info.get(m48).contiguity == std::vector<int64_t>{16});
  BOOST_TEST(info.get(step).constancy == std::vector<int64_t>{4});
  BOOST_TEST(info.get(step).divisibility == std::vector<int64_t>{16});
  BOOST_TEST(info.get(sum).contiguity == std::vector<int64_t>{4});
  BOOST_TEST(info.get(sum).divisibility == std::vector<int64_t>{4});  // 20 is not a multiple of 16
}

// The likely step between neighbours (AxisInfo::stride), for an im2col gather as a convolution
// writes it: x + c_stride * c[None, :] + (2 * (pix % W) - 1)[:, None] + h_stride * (pix / W)[:, None].
// Contiguous in neither dim as far as can be proved, but along the pixels it steps by 2 elements
// (4 bytes) between wrap-arounds of the run-time % W; along the channels by an unknown stride.
BOOST_AUTO_TEST_CASE(axis_info_strides_of_a_gather) {
  Function f("k");
  Value* x = add_param(f, "x", Type::pointer(DType::f16), 16);
  Value* width = add_param(f, "width", i32, 1);
  Value* c_stride = add_param(f, "c_stride", i32, 16);
  Value* h_stride = add_param(f, "h_stride", i32, 1);
  Builder b(f);
  const Shape pix_s{64}, col_s{64, 1}, row_s{1, 32}, tile_s{64, 32};
  auto blk = [](const Shape& s) { return Type::block(DType::i32, s); };
  Attrs axis0, axis1;
  axis1.axis = 1;
  Value* pix = arange(b, 0, 64);
  Value* wo = b.create1(OpKind::Rem, {pix, splat(b, width, pix_s)}, blk(pix_s));
  Value* ho = b.create1(OpKind::Div, {pix, splat(b, width, pix_s)}, blk(pix_s));
  Value* wi = b.create1(OpKind::Sub, {b.create1(OpKind::Mul, {b.constant_int(2, blk(pix_s)), wo}, blk(pix_s)),
                                      b.constant_int(1, blk(pix_s))}, blk(pix_s));
  Value* hi = b.create1(OpKind::Mul, {ho, splat(b, h_stride, pix_s)}, blk(pix_s));
  Value* rows = b.create1(OpKind::Add, {wi, hi}, blk(pix_s));
  Value* rows2 = b.create1(OpKind::Broadcast, {b.create1(OpKind::ExpandDims, {rows}, blk(col_s), axis1)}, blk(tile_s));
  Value* ch = b.create1(OpKind::Mul, {arange(b, 0, 32), splat(b, c_stride, {32})}, blk({32}));
  Value* ch2 = b.create1(OpKind::Broadcast, {b.create1(OpKind::ExpandDims, {ch}, blk(row_s), axis0)}, blk(tile_s));
  Value* offs = b.create1(OpKind::Add, {rows2, ch2}, blk(tile_s));
  Value* ptrs = b.create1(OpKind::AddPtr, {splat(b, x, tile_s), offs}, x->type.with_shape(tile_s));
  Value* by4 = b.create1(OpKind::Div, {pix, b.constant_int(4, blk(pix_s))}, blk(pix_s));
  Value* mod3 = b.create1(OpKind::Rem, {b.create1(OpKind::Mul, {pix, b.constant_int(3, blk(pix_s))}, blk(pix_s)),
                                        b.constant_int(3, blk(pix_s))}, blk(pix_s));
  AxisInfoMap info = analyze_axis_info(f);
  const int64_t none = AxisInfo::kNoStride;
  BOOST_TEST(info.get(pix).stride == std::vector<int64_t>{1});
  BOOST_TEST(info.get(wo).stride == std::vector<int64_t>{1});   // wraps now and then
  BOOST_TEST(info.get(wo).contiguity == std::vector<int64_t>{1});
  BOOST_TEST(info.get(ho).stride == std::vector<int64_t>{0});   // steps now and then
  BOOST_TEST(info.get(wi).stride == std::vector<int64_t>{2});
  BOOST_TEST(info.get(hi).stride == std::vector<int64_t>{0});
  BOOST_TEST(info.get(rows).stride == std::vector<int64_t>{2});
  BOOST_TEST(info.get(ch).stride == std::vector<int64_t>{none});  // times a run-time stride
  BOOST_TEST(info.get(offs).stride == (std::vector<int64_t>{2, none}));
  BOOST_TEST(info.get(offs).contiguity == (std::vector<int64_t>{1, 1}));
  BOOST_TEST(info.get(ptrs).stride == (std::vector<int64_t>{4, none}));  // bytes
  BOOST_TEST(info.get(by4).stride == std::vector<int64_t>{0});
  BOOST_TEST(info.get(mod3).stride == std::vector<int64_t>{0});  // 3i % 3
}

BOOST_AUTO_TEST_CASE(axis_info_loops) {
  Function f("k");
  Value* n = add_param(f, "n", i32, 16);
  Builder b(f);
  Type row = Type::block(DType::i32, {256});
  Value* offs = arange(b, 0, 256);
  Value* lb = b.constant_int(0, i32);
  Value* step = b.constant_int(32, i32);
  Op* loop = b.create(OpKind::For, {lb, n, step, offs, b.constant_int(5, i32)}, {row, i32});
  Block* body = f.new_block(loop);
  loop->regions.push_back(body);
  Value* iv = f.add_block_arg(body, i32);
  Value* cur = f.add_block_arg(body, row);
  Value* k = f.add_block_arg(body, i32);
  b.set_insertion_end(body);
  Value* next = b.create1(OpKind::Add, {cur, splat(b, b.constant_int(256, i32), {256})}, row);
  b.create(OpKind::Yield, {next, b.create1(OpKind::Add, {k, b.constant_int(1, i32)}, i32)}, {});
  AxisInfoMap info = analyze_axis_info(f);
  BOOST_TEST(info.get(iv).divisibility == std::vector<int64_t>{32});
  BOOST_TEST(info.get(iv).contiguity == std::vector<int64_t>{1});
  BOOST_TEST(info.get(cur).contiguity == std::vector<int64_t>{256});
  BOOST_TEST(info.get(cur).divisibility == std::vector<int64_t>{256});
  BOOST_TEST(info.get(loop->results[0]).contiguity == std::vector<int64_t>{256});
  BOOST_TEST(!info.get(k).constant.has_value());  // 5, then 6, ...
  BOOST_TEST(info.get(loop->results[1]).divisibility == std::vector<int64_t>{1});
}

BOOST_AUTO_TEST_SUITE_END()
