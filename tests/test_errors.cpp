// Every trace-time and launch-time mistake raises tritium::Error with a clear message: trace
// errors name the user's file and the line of the offending tl:: call, and the op. Nothing crashes.
#include "test_support.h"

#include <cstdlib>

#include <vector>

namespace tl = tritium::tl;
namespace tt = tritium::test;

namespace {

// Traces (without compiling) a kernel whose only parameter is a float pointer.
template <class F> void trace(F body) {
  auto k = tritium::kernel("bad_kernel", body);
  k.ir(static_cast<float*>(nullptr));
}

// A kernel used for launch-time argument errors.
tritium::Kernel& add_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "add_kernel",
      [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int BLOCK) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto m = offs < n;
        tl::store(out + offs, tl::load(x + offs, m) + 1, m);
      },
      {"x", "out", "n", "BLOCK"});
  return k;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_errors)

BOOST_AUTO_TEST_CASE(binary_op_shape_mismatch) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto a = tl::load(x + tl::arange(0, 16));
      auto b = tl::load(x + tl::arange(0, 32));
      line = __LINE__; auto c = a + b;
      (void)c;
    });
  }, __FILE__, line, {"tl::add", "[16]", "[32]", "broadcast"}, "[16] + [32]");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto a = tl::load(x + tl::arange(0, 16))(tl::_, tl::None);   // [16, 1]
      auto b = tl::load(x + tl::arange(0, 8))(tl::None, tl::_);    // [1, 8]
      auto c = a * b;                                              // [16, 8]: fine
      line = __LINE__; auto d = tl::where(c > 0, c, tl::load(x + tl::arange(0, 4)));
      (void)d;
    });
  }, __FILE__, line, {"where", "[16, 8]", "[4]"}, "where with incompatible shapes");
}

BOOST_AUTO_TEST_CASE(arange_not_power_of_two) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float>) { line = __LINE__; auto r = tl::arange(0, 10); (void)r; });
  }, __FILE__, line, {"arange", "power of two"}, "arange(0, 10)");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float>) { line = __LINE__; auto r = tl::arange(8, 4); (void)r; });
  }, __FILE__, line, {"arange", "greater"}, "arange(8, 4)");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float>) { line = __LINE__; auto z = tl::zeros({16, 12}, tl::float32); (void)z; });
  }, __FILE__, line, {"full", "power of two"}, "zeros({16, 12})");
}

BOOST_AUTO_TEST_CASE(mask_pointer_shape_mismatch) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto offs = tl::arange(0, 16);
      auto mask = tl::arange(0, 32) < 5;
      line = __LINE__; auto v = tl::load(x + offs, mask);
      (void)v;
    });
  }, __FILE__, line, {"tl::load", "mask shape [32]", "pointer shape [16]"}, "load mask [32] for pointers [16]");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto offs = tl::arange(0, 16);
      line = __LINE__; tl::store(x + offs, 1.0f, tl::arange(0, 8) < 3);
    });
  }, __FILE__, line, {"tl::store", "mask shape [8]", "pointer shape [16]"}, "store mask [8] for pointers [16]");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      line = __LINE__; auto v = tl::load(x, tl::arange(0, 16) < 3);
      (void)v;
    });
  }, __FILE__, line, {"tl::load", "scalar"}, "block mask for a scalar pointer");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto offs = tl::arange(0, 16);
      line = __LINE__; auto v = tl::load(x + offs, offs);  // an i32 mask
      (void)v;
    });
  }, __FILE__, line, {"tl::load", "boolean"}, "non-boolean mask");
}

BOOST_AUTO_TEST_CASE(store_through_non_pointer) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16));
      line = __LINE__; tl::store(v, 1.0f);
    });
  }, __FILE__, line, {"tl::store", "pointer", "[16]f32"}, "store into a value");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16));
      line = __LINE__; auto w = tl::load(v);
      (void)w;
    });
  }, __FILE__, line, {"tl::load", "pointer", "[16]f32"}, "load from a value");
}

BOOST_AUTO_TEST_CASE(block_stored_through_scalar_pointer) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16));
      line = __LINE__; tl::store(x, v);
    });
  }, __FILE__, line, {"tl::store", "block", "scalar", "[16]f32"}, "block through scalar pointer");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 32));
      line = __LINE__; tl::store(x + tl::arange(0, 16), v);
    });
  }, __FILE__, line, {"tl::store", "[32]", "[16]"}, "value [32] through pointers [16]");
}

BOOST_AUTO_TEST_CASE(other_without_mask) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      line = __LINE__; auto v = tl::load(x + tl::arange(0, 16), std::nullopt, 0.0f);
      (void)v;
    });
  }, __FILE__, line, {"tl::load", "other", "mask"}, "other without mask");
}

BOOST_AUTO_TEST_CASE(float_bitwise_ops) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16));
      line = __LINE__; auto w = v & v;
      (void)w;
    });
  }, __FILE__, line, {"tl::and", "integer", "f32"}, "f32 & f32");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16)).to(tl::int32);
      line = __LINE__; auto w = v << 1.5;
      (void)w;
    });
  }, __FILE__, line, {"tl::shl", "integer", "f32"}, "i32 << 1.5");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16));
      line = __LINE__; auto w = ~v;
      (void)w;
    });
  }, __FILE__, line, {"~", "integer", "f32"}, "~f32");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16)).to(tl::int32);
      line = __LINE__; auto w = tl::exp(v);
      (void)w;
    });
  }, __FILE__, line, {"tl::exp", "floating-point", "i32"}, "exp of an integer");
}

BOOST_AUTO_TEST_CASE(bitcast_width_mismatch) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16));
      line = __LINE__; auto w = v.to(tl::int16, /*bitcast=*/true);
      (void)w;
    });
  }, __FILE__, line, {"cast", "bitcast", "32", "16", "i16"}, "f32 -> i16 bitcast");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      line = __LINE__; auto w = tl::cast(x, tl::int64, true);
      (void)w;
    });
  }, __FILE__, line, {"cast", "pointer"}, "pointer bitcast");
}

BOOST_AUTO_TEST_CASE(dot_shape_errors) {
  unsigned line = 0;
  auto tile = [](tl::ptr<float> x, int64_t r, int64_t c) {
    return tl::load(x + tl::arange(0, r)(tl::_, tl::None) * c + tl::arange(0, c)(tl::None, tl::_));
  };
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto a = tile(x, 16, 32), b = tile(x, 16, 16);
      line = __LINE__; auto c = tl::dot(a, b);
      (void)c;
    });
  }, __FILE__, line, {"tl::dot", "inner", "32", "16"}, "[16,32] @ [16,16]");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto a = tl::load(x + tl::arange(0, 16));
      line = __LINE__; auto c = tl::dot(a, tile(x, 16, 16));
      (void)c;
    });
  }, __FILE__, line, {"tl::dot", "2-D"}, "1-D operand");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto a = tile(x, 8, 16), b = tile(x, 16, 16);
      line = __LINE__; auto c = tl::dot(a, b);
      (void)c;
    });
  }, __FILE__, line, {"tl::dot", "16", "M=8"}, "M < 16");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto a = tile(x, 16, 16), b = tile(x, 16, 32);
      line = __LINE__; auto c = tl::dot(a, b, tile(x, 16, 16));
      (void)c;
    });
  }, __FILE__, line, {"tl::dot", "accumulator", "[16, 32]"}, "accumulator shape");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto a = tile(x, 16, 16);
      line = __LINE__; auto c = tl::dot(a, a, std::nullopt, std::nullopt, "tf16");
      (void)c;
    });
  }, __FILE__, line, {"tl::dot", "input_precision", "\"tf32\", \"tf32x3\" or \"ieee\"", "\"tf16\""}, "bad input_precision");
}

// TRITIUM_F32_DEFAULT picks the precision of fp32 dots that name none (visible in the IR); a
// value that is not one of the three is an error where such a dot is traced. An explicit
// input_precision wins, and other dtypes carry none.
BOOST_AUTO_TEST_CASE(f32_default_precision) {
  const char* old = std::getenv("TRITIUM_F32_DEFAULT");
  std::string saved = old ? old : "";
  struct Restore {
    const char* old;
    std::string saved;
    ~Restore() {
      if (old) ::setenv("TRITIUM_F32_DEFAULT", saved.c_str(), 1);
      else ::unsetenv("TRITIUM_F32_DEFAULT");
      tritium::reload_env_for_tests();
    }
  } restore{old, saved};
  auto ir_of = [](const std::string& precision) {
    auto k = tritium::kernel("dot_precision", [precision](tl::ptr<float> x, tl::ptr<tritium::f16_t> h) {
      auto offs = tl::arange(0, 16)(tl::_, tl::None) * 16 + tl::arange(0, 16)(tl::None, tl::_);
      auto a = tl::load(x + offs);
      tl::store(x + offs, tl::dot(a, a, std::nullopt, std::nullopt, precision));
      auto b = tl::load(h + offs);
      tl::store(x + offs, tl::dot(b, b));
    });
    return k.ir(static_cast<float*>(nullptr), static_cast<tritium::f16_t*>(nullptr));
  };
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  ::unsetenv("TRITIUM_F32_DEFAULT");
  tritium::reload_env_for_tests();
  std::string ir = ir_of("");
  BOOST_TEST(count(ir, "input_precision=tf32}") == 1u, ir);
  BOOST_TEST(count(ir, "input_precision") == 1u, ir);  // not on the f16 dot
  ::setenv("TRITIUM_F32_DEFAULT", "ieee", 1);
  tritium::reload_env_for_tests();
  BOOST_TEST(count(ir_of(""), "input_precision=ieee}") == 1u);
  BOOST_TEST(count(ir_of("tf32x3"), "input_precision=tf32x3}") == 1u);
  ::setenv("TRITIUM_F32_DEFAULT", "fast", 1);
  tritium::reload_env_for_tests();
  tt::check_throws([&] { ir_of(""); }, {"tl::dot", "TRITIUM_F32_DEFAULT", "\"fast\""}, "bad TRITIUM_F32_DEFAULT");
  BOOST_TEST(count(ir_of("ieee"), "input_precision=ieee}") == 1u);
}

BOOST_AUTO_TEST_CASE(reduce_axis_out_of_range) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16));
      line = __LINE__; auto s = tl::sum(v, 1);
      (void)s;
    });
  }, __FILE__, line, {"tl::sum", "axis 1", "out of range"}, "sum(axis=1) of 1-D");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16));
      line = __LINE__; auto s = tl::argmax(v, -3);
      (void)s;
    });
  }, __FILE__, line, {"tl::argmax", "out of range"}, "argmax(axis=-3)");
}

BOOST_AUTO_TEST_CASE(launch_argument_errors) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 100;
    auto x = tt::random_vector<float>(n, 1);
    auto dx = be.upload<float>(x);
    auto out = be.alloc_poisoned<float>(n);
    auto& k = add_kernel();
    tt::check_throws([&] { k[{1}](dx.ptr(), out.ptr(), n, be.options()); },
                     {"add_kernel", "meta-parameter", "BLOCK", "missing"}, "meta-parameter missing");
    tt::check_throws([&] { k[{1}](dx.ptr(), out.ptr(), be.options()); }, {"add_kernel", "takes 4 arguments", "got 2"},
                     "too few arguments");
    tt::check_throws([&] { k[{1}](dx.ptr(), out.ptr(), n, 128, 5, be.options()); },
                     {"add_kernel", "takes 4 arguments", "got 5"}, "too many arguments");
    std::vector<double> xd(n, 1.0);
    tt::check_throws([&] { k[{1}](xd.data(), out.ptr(), n, 128, be.options()); },
                     {"add_kernel", "argument 0", "x", "f32", "f64"}, "wrong pointer dtype");
    tt::check_throws([&] { k[{1}](dx.ptr(), 5, n, 128, be.options()); }, {"add_kernel", "argument 1", "out", "pointer"},
                     "number for a pointer");
    tt::check_throws([&] { k[{1}](dx.ptr(), out.ptr(), int64_t(1) << 40, 128, be.options()); },
                     {"add_kernel", "argument 2", "n", "1099511627776", "does not fit in i32"}, "i64 for tl::i32");
    tt::check_throws([&] { k[{1}](dx.ptr(), out.ptr(), uint32_t(3'000'000'000u), 128, be.options()); },
                     {"add_kernel", "3000000000", "does not fit in i32"}, "u32 for tl::i32");
    tt::check_throws([&] { k[{1}](dx.ptr(), out.ptr(), 2.5, 128, be.options()); },
                     {"add_kernel", "argument 2", "n", "integer"}, "float for tl::i32");
    tt::check_throws([&] { k[{1}](dx.ptr(), out.ptr(), n, dx.ptr(), be.options()); },
                     {"add_kernel", "BLOCK", "meta-parameter"}, "pointer for a meta-parameter");
    // Nothing was launched by the failed calls, and the kernel still works.
    BOOST_TEST(tt::count_poison<float>(out.download()) == size_t(n));
    k[{tritium::cdiv(n, 64)}](dx.ptr(), out.ptr(), n, 64, be.options());
    std::vector<double> ref(n);
    for (int i = 0; i < n; ++i) ref[i] = x[i] + 1.0f;
    tt::check_close<float>(out.download(), ref, 0, "launch after errors");
  });
}

BOOST_AUTO_TEST_CASE(op_outside_a_kernel) {
  unsigned line = 0;
  tt::check_throws_at([&] { line = __LINE__; auto r = tl::arange(0, 16); (void)r; }, __FILE__, line,
                      {"tl::arange", "outside a kernel"}, "arange outside a kernel");
  tt::check_throws_at([&] { line = __LINE__; auto r = tl::program_id(0); (void)r; }, __FILE__, line,
                      {"tl::program_id", "outside a kernel"}, "program_id outside a kernel");
  tt::check_throws_at([&] { line = __LINE__; auto z = tl::zeros({16}, tl::float32); (void)z; }, __FILE__, line,
                      {"outside a kernel"}, "zeros outside a kernel");
}

BOOST_AUTO_TEST_CASE(loop_carried_value_changes_type) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto acc = tl::zeros({16}, tl::float32);
      line = __LINE__; for (auto i : tl::range(0, 4)) {
        acc = (acc + tl::load(x + i * 16 + tl::arange(0, 16))).to(tl::float16);
      }
      tl::store(x + tl::arange(0, 16), acc);
    });
  }, __FILE__, line, {"tl::range", "f32", "f16", "type"}, "f32 accumulator becomes f16");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto acc = tl::zeros({16}, tl::float32);
      line = __LINE__; for (auto i : tl::range(0, 4)) {
        acc = tl::load(x + i) + tl::zeros({32}, tl::float32);
      }
      tl::store(x + tl::arange(0, 16), acc);
    });
  }, __FILE__, line, {"tl::range", "[16]f32", "[32]f32"}, "accumulator changes shape");
}

BOOST_AUTO_TEST_CASE(if_branches_with_different_types) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x);
      line = __LINE__; tl::if_(tl::program_id(0) == 0, [&] { v = v.to(tl::int32); }, [&] { v = v * 2; });
      tl::store(x, v);
    });
  }, __FILE__, line, {"tl::if_", "f32", "i32", "type"}, "then-branch makes it i32");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16));
      line = __LINE__; tl::if_(tl::program_id(0) == 0, [&] { v = v + 1; }, [&] { v = tl::load(x + tl::arange(0, 32)); });
      tl::store(x + tl::arange(0, 16), v);
    });
  }, __FILE__, line, {"tl::if_", "[16]f32", "[32]f32"}, "else-branch changes shape");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      line = __LINE__; tl::if_(tl::arange(0, 16) < 3, [&] { tl::store(x, 1.0f); });
    });
  }, __FILE__, line, {"tl::if_", "scalar"}, "block condition");
}

BOOST_AUTO_TEST_CASE(static_assert_failing) {
  unsigned line = 0;
  auto k = tritium::kernel("static_assert_kernel", [&](tl::ptr<float> x, int BLOCK) {
    line = __LINE__; tl::static_assert_(BLOCK % 16 == 0, "BLOCK must be a multiple of 16");
    tl::store(x + tl::arange(0, BLOCK), 1.0f);
  });
  tt::check_throws_at([&] { k.ir(static_cast<float*>(nullptr), 24); }, __FILE__, line,
                      {"static_assert", "BLOCK must be a multiple of 16"}, "static_assert_ false");
  BOOST_CHECK_NO_THROW(k.ir(static_cast<float*>(nullptr), 32));
}

BOOST_AUTO_TEST_CASE(literal_does_not_fit) {
  unsigned line = 0;
  auto trace_u8 = [](auto body) {
    auto k = tritium::kernel("literal_kernel", body);
    k.ir(static_cast<uint8_t*>(nullptr));
  };
  tt::check_throws_at([&] {
    trace_u8([&](tl::ptr<uint8_t> x) {
      auto v = tl::load(x + tl::arange(0, 16));
      line = __LINE__; auto w = v + 300;
      (void)w;
    });
  }, __FILE__, line, {"tl::add", "300", "does not fit", "u8"}, "u8 + 300");
  tt::check_throws_at([&] {
    trace_u8([&](tl::ptr<uint8_t> x) {
      auto v = tl::load(x + tl::arange(0, 16)).to(tl::int8);
      line = __LINE__; auto w = v < -129;
      (void)w;
    });
  }, __FILE__, line, {"-129", "does not fit", "i8"}, "i8 < -129");
  tt::check_throws_at([&] {
    trace_u8([&](tl::ptr<uint8_t> x) {
      line = __LINE__; tl::store(x, 256);
    });
  }, __FILE__, line, {"tl::store", "256", "does not fit", "u8"}, "store 256 through a u8 pointer");
  tt::check_throws_at([&] {
    trace_u8([&](tl::ptr<uint8_t> x) {
      line = __LINE__; auto v = tl::full({16}, 1.5, tl::int32);
      tl::store(x + tl::arange(0, 16), v);
    });
  }, __FILE__, line, {"tl::full", "1.5", "i32"}, "full of i32 with a float literal");
}

BOOST_AUTO_TEST_CASE(mixed_signedness_division) {
  unsigned line = 0;
  auto k = tritium::kernel("signedness_kernel", [&](tl::ptr<int32_t> a, tl::ptr<uint32_t> b, int op) {
    auto x = tl::load(a + tl::arange(0, 16));
    auto y = tl::load(b + tl::arange(0, 16));
    if (op == 0) { line = __LINE__; auto z = x / y; (void)z; }
    else { line = __LINE__; auto z = x % y; (void)z; }
  });
  tt::check_throws_at([&] { k.ir(static_cast<int32_t*>(nullptr), static_cast<uint32_t*>(nullptr), 0); }, __FILE__,
                      line, {"tl::div", "signedness", "i32", "u32"}, "i32 / u32");
  tt::check_throws_at([&] { k.ir(static_cast<int32_t*>(nullptr), static_cast<uint32_t*>(nullptr), 1); }, __FILE__,
                      line, {"tl::rem", "signedness", "i32", "u32"}, "i32 % u32");
}

BOOST_AUTO_TEST_CASE(errors_at_launch_point_at_the_kernel_line) {
  // Trace errors raised by launch (not only by ir()) carry the user's line, and the kernel can
  // be launched with good arguments afterwards.
  unsigned line = 0;
  auto k = tritium::kernel("launch_trace_error", [&](tl::ptr<float> x, tl::i32 n, int BLOCK) {
    line = __LINE__; auto offs = tl::arange(0, BLOCK);
    tl::store(x + offs, 2.0f, offs < n);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    auto out = be.alloc_poisoned<float>(16);
    tt::check_throws_at([&] { k[{1}](out.ptr(), 16, 12, be.options()); }, __FILE__, line, {"arange", "power of two"},
                        "launch with BLOCK=12");
    k[{1}](out.ptr(), 16, 16, be.options());
    tt::check_close<float>(out.download(), std::vector<double>(16, 2.0), 0, "launch after a trace error");
  });
}

BOOST_AUTO_TEST_CASE(device_assert_fails_at_run_time) {
  tt::DebugModeScope debug;  // device_assert is compiled in only in debug mode, as in Triton
  static tritium::Kernel k = tritium::kernel("assert_kernel", [](tl::ptr<int32_t> x, tl::i32 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto m = offs < n;
    auto v = tl::load(x + offs, m, 1);
    tl::device_assert(v > 0, "every value must be positive");
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000;
    auto good = tt::random_vector<int32_t>(n, 2, 1, 100);
    auto dgood = be.upload<int32_t>(good);
    BOOST_CHECK_NO_THROW(k[{tritium::cdiv(n, 128)}](dgood.ptr(), n, 128, be.options()));
    auto bad = good;
    bad[777] = -4;
    auto dbad = be.upload<int32_t>(bad);
    tt::check_throws([&] { k[{tritium::cdiv(n, 128)}](dbad.ptr(), n, 128, be.options()); },
                     {"assert_kernel", "every value must be positive"}, "device_assert");
    // The process and the kernel survive: a good launch works again.
    BOOST_CHECK_NO_THROW(k[{tritium::cdiv(n, 128)}](dgood.ptr(), n, 128, be.options()));
  });
}

BOOST_AUTO_TEST_CASE(shape_op_errors) {
  unsigned line = 0;
  auto check = [&](auto body, std::initializer_list<std::string_view> subs, const char* what) {
    tt::check_throws_at([&] { trace(body); }, __FILE__, line, subs, what);
  };
  check([&](tl::ptr<float> x) {
    auto v = tl::load(x + tl::arange(0, 16));
    line = __LINE__; auto w = tl::reshape(v, {4, 8});
    (void)w;
  }, {"tl::reshape", "16 elements", "32 elements"}, "reshape 16 -> 32");
  check([&](tl::ptr<float> x) {
    auto v = tl::load(x + tl::arange(0, 16)(tl::_, tl::None) + tl::arange(0, 4)(tl::None, tl::_));
    line = __LINE__; auto w = tl::permute(v, {0, 0});
    (void)w;
  }, {"tl::permute", "not a permutation"}, "permute (0, 0)");
  check([&](tl::ptr<float> x) {
    auto v = tl::load(x + tl::arange(0, 16));
    line = __LINE__; auto w = tl::broadcast_to(v, {16, 8});
    (void)w;
  }, {"broadcast_to", "[16]f32", "[16, 8]"}, "broadcast_to [16] -> [16, 8]");
  check([&](tl::ptr<float> x) {
    auto v = tl::load(x + tl::arange(0, 16));
    line = __LINE__; auto w = tl::expand_dims(v, 3);
    (void)w;
  }, {"tl::expand_dims", "axis 3", "out of range"}, "expand_dims axis 3");
  check([&](tl::ptr<float> x) {
    auto v = tl::load(x + tl::arange(0, 16)(tl::_, tl::None) + tl::arange(0, 4)(tl::None, tl::_));
    line = __LINE__; auto w = v(tl::_, tl::None);
    (void)w;
  }, {"rank"}, "x[:, None] of a 2-D block");
  check([&](tl::ptr<float>) {
    line = __LINE__; auto w = tl::program_id(3);
    (void)w;
  }, {"tl::program_id", "axis"}, "program_id(3)");
}

BOOST_AUTO_TEST_CASE(pointer_arithmetic_errors) {
  unsigned line = 0;
  auto check = [&](auto body, std::initializer_list<std::string_view> subs, const char* what) {
    tt::check_throws_at([&] { trace(body); }, __FILE__, line, subs, what);
  };
  check([&](tl::ptr<float> x) { line = __LINE__; auto p = x * 2; (void)p; }, {"tl::mul", "pointer"}, "ptr * 2");
  check([&](tl::ptr<float> x) { line = __LINE__; auto p = x + x; (void)p; }, {"tl::add", "pointer"}, "ptr + ptr");
  check([&](tl::ptr<float> x) { line = __LINE__; auto p = 4 - x; (void)p; }, {"tl::sub", "pointer"}, "4 - ptr");
  check([&](tl::ptr<float> x) { line = __LINE__; auto p = x + 1.5; (void)p; }, {"tl::add", "integer", "f32"},
        "ptr + 1.5");
  check([&](tl::ptr<float> x) { line = __LINE__; auto p = -x; (void)p; }, {"neg", "pointer"}, "-ptr");
}

BOOST_AUTO_TEST_CASE(compound_assignment_errors_name_the_line) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto acc = tl::zeros({16}, tl::float32);
      auto other = tl::load(x + tl::arange(0, 32));
      line = __LINE__; acc += other;
    });
  }, __FILE__, line, {"tl::add", "[16]", "[32]"}, "acc += [32]");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto acc = tl::zeros({16}, tl::float32);
      line = __LINE__; acc &= 3;
      tl::store(x + tl::arange(0, 16), acc);
    });
  }, __FILE__, line, {"tl::and", "integer"}, "f32 &= 3");
}

BOOST_AUTO_TEST_CASE(half_scalar_argument) {
  auto k = tritium::kernel("half_scalar", [](tl::ptr<float> x, tl::f16 s) { tl::store(x, s); }, {"x", "s"});
  tt::for_each_backend([&](const tt::Backend& be) {
    auto out = be.alloc_poisoned<float>(1);
    tt::check_throws([&] { k[{1}](out.ptr(), 1.5f, be.options()); }, {"half_scalar", "argument 1", "s", "f16"},
                     "tl::f16 scalar parameter");
  });
}

BOOST_AUTO_TEST_SUITE_END()
