// The verifier accepts well-formed IR and names the op (and where it was written) otherwise.
#include <boost/test/unit_test.hpp>

#include <functional>

#include "ir/builder.h"
#include "ir/verifier.h"

using namespace tritium;
using namespace tritium::ir;

namespace {

const Type i1 = Type::scalar(DType::i1);
const Type i32 = Type::scalar(DType::i32);
const Type f32 = Type::scalar(DType::f32);
const Type row_i32 = Type::block(DType::i32, {64});
const Type row_f32 = Type::block(DType::f32, {64});
const Type row_i1 = Type::block(DType::i1, {64});
const Type row_ptr = Type::pointer(DType::f32).with_shape({64});

// A function @k(x: ptr<f32>, n: i32) with a builder positioned in its body.
struct Kernel {
  Function f{"k"};
  Builder b{f};
  Value* x;
  Value* n;

  Kernel() {
    f.params.push_back({"x", Type::pointer(DType::f32), 16});
    x = f.add_block_arg(f.body, Type::pointer(DType::f32));
    f.params.push_back({"n", i32, 1});
    n = f.add_block_arg(f.body, i32);
    b.loc = SourceLoc{"kernel.cpp", 42, 7};
  }
  Value* range() {
    Attrs a;
    a.ints = {0, 64};
    return b.create1(OpKind::Arange, {}, row_i32, a);
  }
  Value* ptrs() { return b.create1(OpKind::AddPtr, {b.create1(OpKind::Splat, {x}, row_ptr), range()}, row_ptr); }
  Value* row() { return b.create1(OpKind::Load, {ptrs()}, row_f32); }
  // An op with regions, each region given its argument types.
  Op* with_regions(OpKind kind, std::vector<Value*> operands, std::vector<Type> results, Attrs attrs,
                   std::vector<std::vector<Type>> region_args) {
    Op* op = b.create(kind, std::move(operands), std::move(results), std::move(attrs));
    for (auto& args : region_args) {
      Block* r = f.new_block(op);
      op->regions.push_back(r);
      for (auto& t : args) f.add_block_arg(r, t);
    }
    return op;
  }
};

// Builds a kernel with `build` and checks that verify() rejects it naming `op` and the location.
void check_rejected(const std::string& op, const std::function<void(Kernel&)>& build) {
  Kernel k;
  build(k);
  try {
    verify(k.f);
    BOOST_ERROR("verify accepted malformed '" << op << "'");
  } catch (const Error& e) {
    std::string msg = e.what();
    BOOST_TEST_INFO("message: " << msg);
    BOOST_TEST(msg.find("'" + op + "'") != std::string::npos);
    BOOST_TEST(msg.find("kernel.cpp:42") != std::string::npos);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_ir_verifier)

BOOST_AUTO_TEST_CASE(well_formed_function_passes) {
  Kernel k;
  Value* offs = k.range();
  Value* mask = k.b.create1(OpKind::CmpLt, {offs, k.b.create1(OpKind::Splat, {k.n}, row_i32)}, row_i1);
  Value* p = k.ptrs();
  Value* v = k.b.create1(OpKind::Load, {p, mask, k.b.constant_float(0, row_f32)}, row_f32);
  Attrs reduce_attrs;
  Op* red = k.with_regions(OpKind::Reduce, {v}, {f32}, reduce_attrs, {{f32, f32}});
  k.b.set_insertion_end(red->regions[0]);
  k.b.create(OpKind::Yield, {k.b.create1(OpKind::Add, red->regions[0]->args, f32)}, {});
  k.b.set_insertion_end(k.f.body);
  Op* loop = k.with_regions(OpKind::For, {k.b.constant_int(0, i32), k.n, k.b.constant_int(1, i32), v}, {row_f32}, {},
                            {{i32, row_f32}});
  k.b.set_insertion_end(loop->regions[0]);
  // An outer value (red) used inside the region is fine.
  Value* acc = loop->regions[0]->args[1];
  k.b.create(OpKind::Yield, {k.b.create1(OpKind::Add, {acc, k.b.create1(OpKind::Splat, {red->result()}, row_f32)}, row_f32)}, {});
  k.b.set_insertion_end(k.f.body);
  Op* branch = k.with_regions(OpKind::If, {k.b.create1(OpKind::CmpGt, {k.n, k.b.constant_int(0, i32)}, i1)}, {}, {}, {{}, {}});
  k.b.set_insertion_end(branch->regions[0]);
  k.b.create(OpKind::Store, {p, loop->result(), mask}, {});
  k.b.set_insertion_end(k.f.body);
  BOOST_CHECK_NO_THROW(verify(k.f));
}

BOOST_AUTO_TEST_CASE(operand_counts) {
  check_rejected("add", [](Kernel& k) { k.b.create1(OpKind::Add, {k.n}, i32); });
  check_rejected("store", [](Kernel& k) { k.b.create(OpKind::Store, {k.ptrs()}, {}); });
  check_rejected("program_id", [](Kernel& k) { k.b.create(OpKind::ProgramId, {}, {}); });
}

BOOST_AUTO_TEST_CASE(elementwise_types) {
  check_rejected("add", [](Kernel& k) { k.b.create1(OpKind::Add, {k.range(), k.n}, row_i32); });
  check_rejected("mul", [](Kernel& k) { k.b.create1(OpKind::Mul, {k.n, k.n}, f32); });
  check_rejected("cmp_lt", [](Kernel& k) { k.b.create1(OpKind::CmpLt, {k.n, k.n}, i32); });
  check_rejected("select", [](Kernel& k) { k.b.create1(OpKind::Select, {k.n, k.n, k.n}, i32); });
  check_rejected("bitcast", [](Kernel& k) { k.b.create1(OpKind::Bitcast, {k.n}, Type::scalar(DType::f64)); });
  check_rejected("cast", [](Kernel& k) { k.b.create1(OpKind::Cast, {k.range()}, Type::block(DType::f32, {32})); });
  check_rejected("addptr", [](Kernel& k) {
    Value* ptrs = k.b.create1(OpKind::Splat, {k.x}, row_ptr);
    k.b.create1(OpKind::AddPtr, {ptrs, k.row()}, row_ptr);
  });
  check_rejected("and", [](Kernel& k) { k.b.create1(OpKind::And, {k.row(), k.row()}, row_f32); });
  check_rejected("exp", [](Kernel& k) { k.b.create1(OpKind::Exp, {k.n}, i32); });
}

BOOST_AUTO_TEST_CASE(shape_ops) {
  check_rejected("splat", [](Kernel& k) { k.b.create1(OpKind::Splat, {k.range()}, row_i32); });
  check_rejected("broadcast", [](Kernel& k) {
    k.b.create1(OpKind::Broadcast, {k.range()}, Type::block(DType::i32, {128}));
  });
  check_rejected("expand_dims", [](Kernel& k) {
    Attrs a;
    a.axis = 0;
    k.b.create1(OpKind::ExpandDims, {k.range()}, Type::block(DType::i32, {64, 1}), a);
  });
  check_rejected("reshape", [](Kernel& k) { k.b.create1(OpKind::Reshape, {k.range()}, Type::block(DType::i32, {8, 4})); });
  check_rejected("permute", [](Kernel& k) {
    Value* tile = k.b.create1(OpKind::Reshape, {k.range()}, Type::block(DType::i32, {8, 8}));
    Attrs a;
    a.ints = {0, 0};
    k.b.create1(OpKind::Permute, {tile}, Type::block(DType::i32, {8, 8}), a);
  });
  check_rejected("arange", [](Kernel& k) {
    Attrs a;
    a.ints = {0, 64};
    k.b.create1(OpKind::Arange, {}, Type::block(DType::i32, {32}), a);
  });
}

BOOST_AUTO_TEST_CASE(data_movement_ops) {
  // Well formed: each op accepted.
  {
    Kernel k;
    Value* r = k.range();
    Value* j = k.b.create1(OpKind::Join, {r, r}, Type::block(DType::i32, {64, 2}));
    k.b.create(OpKind::Split, {j}, {row_i32, row_i32});
    k.b.create1(OpKind::Histogram, {r}, Type::block(DType::i32, {16}));
    Value* tile = k.b.create1(OpKind::Reshape, {k.row()}, Type::block(DType::f32, {8, 8}));
    Attrs a;
    a.axis = 1;
    k.b.create1(OpKind::Gather, {tile, k.b.create1(OpKind::Reshape, {r}, Type::block(DType::i32, {8, 8}))},
                Type::block(DType::f32, {8, 8}), a);
    BOOST_CHECK_NO_THROW(verify(k.f));
  }
  check_rejected("join", [](Kernel& k) { k.b.create1(OpKind::Join, {k.range(), k.row()}, Type::block(DType::i32, {64, 2})); });
  check_rejected("join", [](Kernel& k) { k.b.create1(OpKind::Join, {k.range(), k.range()}, Type::block(DType::i32, {2, 64})); });
  check_rejected("split", [](Kernel& k) { k.b.create(OpKind::Split, {k.range()}, {i32, i32}); });
  check_rejected("histogram", [](Kernel& k) { k.b.create1(OpKind::Histogram, {k.row()}, Type::block(DType::i32, {16})); });
  check_rejected("histogram", [](Kernel& k) { k.b.create1(OpKind::Histogram, {k.range()}, Type::block(DType::f32, {16})); });
  check_rejected("gather", [](Kernel& k) {
    Attrs a;
    a.axis = 0;
    k.b.create1(OpKind::Gather, {k.row(), k.row()}, row_f32, a);  // float index
  });
  check_rejected("gather", [](Kernel& k) {
    Attrs a;
    a.axis = 1;  // out of range for rank 1
    k.b.create1(OpKind::Gather, {k.row(), k.range()}, row_f32, a);
  });
}

BOOST_AUTO_TEST_CASE(memory_ops) {
  check_rejected("load", [](Kernel& k) { k.b.create1(OpKind::Load, {k.ptrs()}, Type::block(DType::f16, {64})); });
  check_rejected("load", [](Kernel& k) { k.b.create1(OpKind::Load, {k.ptrs(), k.range()}, row_f32); });
  check_rejected("load", [](Kernel& k) { k.b.create1(OpKind::Load, {k.range()}, row_i32); });
  check_rejected("store", [](Kernel& k) { k.b.create(OpKind::Store, {k.ptrs(), k.range()}, {}); });
  check_rejected("store", [](Kernel& k) {
    k.b.create(OpKind::Store, {k.ptrs(), k.row(), k.b.constant_int(1, Type::block(DType::i1, {32}))}, {});
  });
  check_rejected("atomic_add", [](Kernel& k) { k.b.create1(OpKind::AtomicAdd, {k.ptrs(), k.range()}, row_i32); });
}

BOOST_AUTO_TEST_CASE(reduce_and_scan_regions) {
  check_rejected("reduce", [](Kernel& k) {  // one region argument too few
    Op* r = k.with_regions(OpKind::Reduce, {k.row()}, {f32}, {}, {{f32}});
    k.b.set_insertion_end(r->regions[0]);
    k.b.create(OpKind::Yield, {r->regions[0]->args[0]}, {});
  });
  check_rejected("reduce", [](Kernel& k) {  // yields two values for one operand
    Op* r = k.with_regions(OpKind::Reduce, {k.row()}, {f32}, {}, {{f32, f32}});
    k.b.set_insertion_end(r->regions[0]);
    k.b.create(OpKind::Yield, r->regions[0]->args, {});
  });
  check_rejected("reduce", [](Kernel& k) {  // no yield
    k.with_regions(OpKind::Reduce, {k.row()}, {f32}, {}, {{f32, f32}});
  });
  check_rejected("reduce", [](Kernel& k) {  // result of the wrong shape
    Op* r = k.with_regions(OpKind::Reduce, {k.row()}, {row_f32}, {}, {{f32, f32}});
    k.b.set_insertion_end(r->regions[0]);
    k.b.create(OpKind::Yield, {r->regions[0]->args[0]}, {});
  });
  check_rejected("scan", [](Kernel& k) {
    Op* r = k.with_regions(OpKind::Scan, {k.row()}, {row_f32}, {}, {{f32, f32}});
    k.b.set_insertion_end(r->regions[0]);
    k.b.create(OpKind::Yield, {k.n}, {});
  });
}

BOOST_AUTO_TEST_CASE(for_and_if_regions) {
  auto zero = [](Kernel& k) { return k.b.constant_int(0, i32); };
  check_rejected("for", [&](Kernel& k) {  // yield type differs from the init
    Op* loop = k.with_regions(OpKind::For, {zero(k), k.n, k.n, zero(k)}, {i32}, {}, {{i32, i32}});
    k.b.set_insertion_end(loop->regions[0]);
    k.b.create(OpKind::Yield, {k.b.constant_float(1, f32)}, {});
  });
  check_rejected("for", [&](Kernel& k) {  // missing induction variable argument
    Op* loop = k.with_regions(OpKind::For, {zero(k), k.n, k.n, zero(k)}, {i32}, {}, {{i32}});
    k.b.set_insertion_end(loop->regions[0]);
    k.b.create(OpKind::Yield, {k.n}, {});
  });
  check_rejected("for", [&](Kernel& k) {  // results disagree with the inits
    Op* loop = k.with_regions(OpKind::For, {zero(k), k.n, k.n, zero(k)}, {}, {}, {{i32, i32}});
    k.b.set_insertion_end(loop->regions[0]);
    k.b.create(OpKind::Yield, {k.n}, {});
  });
  check_rejected("for", [&](Kernel& k) {  // float bounds
    Value* one = k.b.constant_float(1, f32);
    Op* loop = k.with_regions(OpKind::For, {one, one, one}, {}, {}, {{f32}});
    k.b.set_insertion_end(loop->regions[0]);
    k.b.create(OpKind::Yield, {}, {});
  });
  check_rejected("if", [&](Kernel& k) {  // one region only
    Value* c = k.b.create1(OpKind::CmpGt, {k.n, zero(k)}, i1);
    k.with_regions(OpKind::If, {c}, {}, {}, {{}});
  });
  check_rejected("if", [&](Kernel& k) {  // else yields nothing for a result
    Value* c = k.b.create1(OpKind::CmpGt, {k.n, zero(k)}, i1);
    Op* br = k.with_regions(OpKind::If, {c}, {i32}, {}, {{}, {}});
    k.b.set_insertion_end(br->regions[0]);
    k.b.create(OpKind::Yield, {k.n}, {});
  });
  check_rejected("if", [&](Kernel& k) { k.with_regions(OpKind::If, {k.n}, {}, {}, {{}, {}}); });
  check_rejected("yield", [](Kernel& k) { k.b.create(OpKind::Yield, {k.n}, {}); });
  check_rejected("add", [](Kernel& k) {  // an add with a region
    k.with_regions(OpKind::Add, {k.n, k.n}, {i32}, {}, {{}});
  });
}

BOOST_AUTO_TEST_CASE(definitions_dominate_uses) {
  check_rejected("mul", [](Kernel& k) {  // used before its definition
    Value* later = k.b.constant_int(3, i32);
    Op* def = later->def;
    k.b.create1(OpKind::Mul, {k.n, later}, i32);
    auto& ops = k.f.body->ops;
    std::erase(ops, def);
    ops.push_back(def);
  });
  check_rejected("add", [](Kernel& k) {  // a value from inside a loop used after it
    Op* loop = k.with_regions(OpKind::For, {k.n, k.n, k.n}, {}, {}, {{i32}});
    k.b.set_insertion_end(loop->regions[0]);
    Value* inner = k.b.create1(OpKind::Neg, {k.n}, i32);
    k.b.create(OpKind::Yield, {}, {});
    k.b.set_insertion_end(k.f.body);
    k.b.create1(OpKind::Add, {inner, k.n}, i32);
  });
  check_rejected("add", [](Kernel& k) {  // a value of another function
    static Function other("other");  // outlives the check
    Builder ob(other);
    Value* foreign = ob.constant_int(1, i32);
    k.b.create1(OpKind::Add, {foreign, k.n}, i32);
  });
}

BOOST_AUTO_TEST_CASE(hints_and_dot) {
  check_rejected("multiple_of", [](Kernel& k) {
    Attrs a;
    a.ints = {16, 16};
    k.b.create1(OpKind::MultipleOf, {k.range()}, row_i32, a);
  });
  check_rejected("dot", [](Kernel& k) {
    Type a = Type::block(DType::f32, {16, 8});
    Value* x = k.b.constant_float(1, a);
    k.b.create1(OpKind::Dot, {x, x, k.b.constant_float(0, Type::block(DType::f32, {16, 16}))},
                Type::block(DType::f32, {16, 16}));
  });
  // input_precision: one of tf32, tf32x3, ieee on fp32 operands; none on others.
  auto square_dot = [](Kernel& k, DType in, const std::string& precision) {
    Type t = Type::block(in, {16, 16});
    Value* x = in == DType::f32 ? k.b.constant_float(1, t) : k.b.constant_int(1, t);
    Attrs a;
    a.str = precision;
    k.b.create1(OpKind::Dot, {x, x, k.b.constant_float(0, Type::block(DType::f32, {16, 16}))},
                Type::block(DType::f32, {16, 16}), a);
  };
  check_rejected("dot", [&](Kernel& k) { square_dot(k, DType::f32, "fast"); });
  check_rejected("dot", [&](Kernel& k) { square_dot(k, DType::f32, ""); });
  check_rejected("dot", [&](Kernel& k) { square_dot(k, DType::i8, "tf32"); });
}

BOOST_AUTO_TEST_SUITE_END()
