// Golden tests of the IR text form.
#include <boost/test/unit_test.hpp>

#include "ir/builder.h"
#include "ir/printer.h"

using namespace tritium;
using namespace tritium::ir;

namespace {

Value* add_param(Function& f, const std::string& name, const Type& t, int divisibility = 1) {
  f.params.push_back({name, t, divisibility});
  return f.add_block_arg(f.body, t);
}

Attrs axis_attr(int axis) {
  Attrs a;
  a.axis = axis;
  return a;
}

Attrs ints_attr(std::vector<int64_t> ints) {
  Attrs a;
  a.ints = std::move(ints);
  return a;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_ir_printer)

BOOST_AUTO_TEST_CASE(vector_add) {
  Function f("add");
  Value* x = add_param(f, "x", Type::pointer(DType::f32), 16);
  Value* y = add_param(f, "y", Type::pointer(DType::f32), 16);
  Value* out = add_param(f, "out", Type::pointer(DType::f32), 16);
  Value* n = add_param(f, "n", Type::scalar(DType::i32));
  Builder b(f);
  Type i32 = Type::scalar(DType::i32);
  Type offs_t = Type::block(DType::i32, {1024});
  Type ptrs_t = Type::pointer(DType::f32).with_shape({1024});
  Type vals_t = Type::block(DType::f32, {1024});
  Value* pid = b.create1(OpKind::ProgramId, {}, i32, axis_attr(0));
  Value* block = b.constant_int(1024, i32);
  Value* start = b.create1(OpKind::Mul, {pid, block}, i32);
  Value* range = b.create1(OpKind::Arange, {}, offs_t, ints_attr({0, 1024}));
  Value* offs = b.create1(OpKind::Add, {b.create1(OpKind::Splat, {start}, offs_t), range}, offs_t);
  Value* mask = b.create1(OpKind::CmpLt, {offs, b.create1(OpKind::Splat, {n}, offs_t)}, Type::block(DType::i1, {1024}));
  auto load = [&](Value* p) {
    Value* ptrs = b.create1(OpKind::AddPtr, {b.create1(OpKind::Splat, {p}, ptrs_t), offs}, ptrs_t);
    return b.create1(OpKind::Load, {ptrs, mask}, vals_t);
  };
  Value* sum = b.create1(OpKind::Add, {load(x), load(y)}, vals_t);
  Value* out_ptrs = b.create1(OpKind::AddPtr, {b.create1(OpKind::Splat, {out}, ptrs_t), offs}, ptrs_t);
  b.create(OpKind::Store, {out_ptrs, sum, mask}, {});

  const std::string expected =
      "func @add(%0: ptr<f32> {div=16}, %1: ptr<f32> {div=16}, %2: ptr<f32> {div=16}, %3: i32) {\n"
      "  %4 = program_id {axis=0} : i32\n"
      "  %5 = constant 1024 : i32\n"
      "  %6 = mul %4, %5 : i32\n"
      "  %7 = arange {0, 1024} : [1024]i32\n"
      "  %8 = splat %6 : [1024]i32\n"
      "  %9 = add %8, %7 : [1024]i32\n"
      "  %10 = splat %3 : [1024]i32\n"
      "  %11 = cmp_lt %9, %10 : [1024]i1\n"
      "  %12 = splat %0 : [1024]ptr<f32>\n"
      "  %13 = addptr %12, %9 : [1024]ptr<f32>\n"
      "  %14 = load %13, %11 : [1024]f32\n"
      "  %15 = splat %1 : [1024]ptr<f32>\n"
      "  %16 = addptr %15, %9 : [1024]ptr<f32>\n"
      "  %17 = load %16, %11 : [1024]f32\n"
      "  %18 = add %14, %17 : [1024]f32\n"
      "  %19 = splat %2 : [1024]ptr<f32>\n"
      "  %20 = addptr %19, %9 : [1024]ptr<f32>\n"
      "  store %20, %18, %11\n"
      "}\n";
  BOOST_TEST(print(f) == expected);
  BOOST_TEST(print(f) == expected);  // stable across calls
  BOOST_TEST(print_value(sum) == "%18");
  BOOST_TEST(print_value(nullptr) == "<null>");
}

BOOST_AUTO_TEST_CASE(for_with_carried_values) {
  Function f("loop");
  Value* x = add_param(f, "x", Type::pointer(DType::f32), 16);
  Value* n = add_param(f, "n", Type::scalar(DType::i32));
  Builder b(f);
  Type i32 = Type::scalar(DType::i32);
  Type f32 = Type::scalar(DType::f32);
  Type row = Type::block(DType::f32, {64});
  Value* lb = b.constant_int(0, i32);
  Value* step = b.constant_int(1, i32);
  Value* zero = b.constant_float(0.0, f32);
  Value* range = b.create1(OpKind::Arange, {}, Type::block(DType::i32, {64}), ints_attr({0, 64}));
  Value* acc0 = b.constant_float(0.0, row);
  Op* loop = b.create(OpKind::For, {lb, n, step, acc0, zero}, {row, f32});
  Block* body = f.new_block(loop);
  loop->regions.push_back(body);
  f.add_block_arg(body, i32);
  Value* acc = f.add_block_arg(body, row);
  Value* total = f.add_block_arg(body, f32);
  b.set_insertion_end(body);
  Type ptrs_t = Type::pointer(DType::f32).with_shape({64});
  Value* ptrs = b.create1(OpKind::AddPtr, {b.create1(OpKind::Splat, {x}, ptrs_t), range}, ptrs_t);
  Value* next_acc = b.create1(OpKind::Add, {acc, b.create1(OpKind::Load, {ptrs}, row)}, row);
  Value* next_total = b.create1(OpKind::Add, {total, b.constant_float(1.5, f32)}, f32);
  b.create(OpKind::Yield, {next_acc, next_total}, {});
  b.set_insertion_end(f.body);
  Value* out_ptrs = b.create1(OpKind::AddPtr, {b.create1(OpKind::Splat, {x}, ptrs_t), range}, ptrs_t);
  b.create(OpKind::Store, {out_ptrs, loop->results[0]}, {});

  const std::string expected =
      "func @loop(%0: ptr<f32> {div=16}, %1: i32) {\n"
      "  %2 = constant 0 : i32\n"
      "  %3 = constant 1 : i32\n"
      "  %4 = constant 0 : f32\n"
      "  %5 = arange {0, 64} : [64]i32\n"
      "  %6 = constant 0 : [64]f32\n"
      "  %7:2 = for %2, %1, %3 iter(%6, %4) -> ([64]f32, f32) {\n"
      "  ^(%9: i32, %10: [64]f32, %11: f32):\n"
      "    %12 = splat %0 : [64]ptr<f32>\n"
      "    %13 = addptr %12, %5 : [64]ptr<f32>\n"
      "    %14 = load %13 : [64]f32\n"
      "    %15 = add %10, %14 : [64]f32\n"
      "    %16 = constant 1.5 : f32\n"
      "    %17 = add %11, %16 : f32\n"
      "    yield %15, %17\n"
      "  }\n"
      "  %18 = splat %0 : [64]ptr<f32>\n"
      "  %19 = addptr %18, %5 : [64]ptr<f32>\n"
      "  store %19, %7\n"
      "}\n";
  BOOST_TEST(print(f) == expected);
}

BOOST_AUTO_TEST_CASE(if_with_results) {
  Function f("branch");
  Value* n = add_param(f, "n", Type::scalar(DType::i32));
  Builder b(f);
  Type i32 = Type::scalar(DType::i32);
  Value* cond = b.create1(OpKind::CmpGt, {n, b.constant_int(0, i32)}, Type::scalar(DType::i1));
  Op* branch = b.create(OpKind::If, {cond}, {i32});
  Block* then_block = f.new_block(branch);
  Block* else_block = f.new_block(branch);
  branch->regions = {then_block, else_block};
  b.set_insertion_end(then_block);
  b.create(OpKind::Yield, {b.create1(OpKind::Mul, {n, n}, i32)}, {});
  b.set_insertion_end(else_block);
  b.create(OpKind::Yield, {b.create1(OpKind::Neg, {n}, i32)}, {});
  b.set_insertion_end(f.body);
  Attrs prefix;
  prefix.str = "r = \"\n";
  b.create(OpKind::Print, {branch->result()}, {}, prefix);

  const std::string expected =
      "func @branch(%0: i32) {\n"
      "  %1 = constant 0 : i32\n"
      "  %2 = cmp_gt %0, %1 : i1\n"
      "  %3 = if %2 -> (i32) {\n"
      "    %4 = mul %0, %0 : i32\n"
      "    yield %4\n"
      "  } else {\n"
      "    %5 = neg %0 : i32\n"
      "    yield %5\n"
      "  }\n"
      "  print %3 {prefix=\"r = \\\"\\n\"}\n"
      "}\n";
  BOOST_TEST(print(f) == expected);
}

BOOST_AUTO_TEST_CASE(reduce_with_combine_region) {
  Function f("rowmax");
  Value* x = add_param(f, "x", Type::pointer(DType::f32), 16);
  Builder b(f);
  Type tile = Type::block(DType::f32, {16, 32});
  Type ptrs_t = Type::pointer(DType::f32).with_shape({16, 32});
  Value* vals = b.create1(OpKind::Load, {b.create1(OpKind::Splat, {x}, ptrs_t)}, tile);
  Attrs reduce_attrs;
  reduce_attrs.axis = 1;
  reduce_attrs.flag = true;
  Op* reduce = b.create(OpKind::Reduce, {vals}, {Type::block(DType::f32, {16, 1})}, reduce_attrs);
  Block* combine = f.new_block(reduce);
  reduce->regions.push_back(combine);
  Value* lhs = f.add_block_arg(combine, Type::scalar(DType::f32));
  Value* rhs = f.add_block_arg(combine, Type::scalar(DType::f32));
  b.set_insertion_end(combine);
  b.create(OpKind::Yield, {b.create1(OpKind::Max, {lhs, rhs}, Type::scalar(DType::f32))}, {});
  b.set_insertion_end(f.body);
  b.constant_float(0.1, Type::scalar(DType::f64));
  b.constant_float(-0.0, Type::scalar(DType::f32));
  b.constant_int(-1, Type::scalar(DType::u64));
  b.constant_int(1, Type::scalar(DType::i1));
  b.create1(OpKind::MultipleOf, {vals}, tile, ints_attr({1, 16}));

  const std::string expected =
      "func @rowmax(%0: ptr<f32> {div=16}) {\n"
      "  %1 = splat %0 : [16,32]ptr<f32>\n"
      "  %2 = load %1 : [16,32]f32\n"
      "  %3 = reduce %2 {axis=1, keep_dims} -> ([16,1]f32) {\n"
      "  ^(%4: f32, %5: f32):\n"
      "    %6 = max %4, %5 : f32\n"
      "    yield %6\n"
      "  }\n"
      "  %7 = constant 0.1 : f64\n"
      "  %8 = constant -0 : f32\n"
      "  %9 = constant 18446744073709551615 : u64\n"
      "  %10 = constant true : i1\n"
      "  %11 = multiple_of %2 {1, 16} : [16,32]f32\n"
      "}\n";
  BOOST_TEST(print(f) == expected);
}

BOOST_AUTO_TEST_CASE(unusual_attributes_are_printed) {
  // Attributes an op's own format does not use still reach the text (and the cache key).
  Function f("odd");
  Builder b(f);
  Attrs a;
  a.axis = 2;
  a.str = "tag";
  b.create1(OpKind::Add, {b.constant_int(1, Type::scalar(DType::i32)), b.constant_int(2, Type::scalar(DType::i32))},
            Type::scalar(DType::i32), a);
  BOOST_TEST(print(f).find("%2 = add %0, %1 {axis=2, str=\"tag\"} : i32") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
