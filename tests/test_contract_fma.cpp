// Floating-point contraction (jit/passes/contract_fma.h): which products the pass fuses, and that
// a kernel rounds as the IR says on every backend: the CPU backend never contracts, the CUDA
// backend fuses exactly the IR's products, whichever of its generators (direct PTX or NVRTC)
// compiles the kernel. Also f16 + - *, which the CUDA generator computes natively (add.rn.f16):
// the same bits as the CPU's f32 op rounded to f16, on every backend.
#include "test_support.h"

#include <cmath>

#include "ir/builder.h"
#include "jit/passes/contract_fma.h"
#include "jit/passes/dce.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
using namespace tritium;
using namespace tritium::ir;

namespace {

size_t count_ops(Function& f, OpKind kind) {
  size_t n = 0;
  f.walk([&](Op* op) { n += op->kind == kind; });
  return n;
}

Value* add_param(Function& f, const std::string& name, const Type& t) {
  f.params.push_back({name, t, 16});
  return f.add_block_arg(f.body, t);
}

// out[i] = x*y + c, x*y - c, c - x*y in f32, computed by a straight-line kernel (the PTX
// generator's subset on CUDA) or inside a one-trip loop (NVRTC's).
Kernel& fused_kernel(bool in_loop) {
  static Kernel straight = kernel("contract_straight", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> c,
                                                          tl::ptr<float> o, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    auto m = offs < n;
    auto a = tl::load(x + offs, m), b = tl::load(y + offs, m), z = tl::load(c + offs, m);
    tl::store(o + offs, a * b + z, m);
    tl::store(o + n + offs, a * b - z, m);
    tl::store(o + 2 * n + offs, z - a * b, m);
  });
  static Kernel looped = kernel("contract_loop", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> c,
                                                    tl::ptr<float> o, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    auto m = offs < n;
    for (auto i : tl::range(0, 1)) {
      auto at = offs + i;
      auto a = tl::load(x + at, m), b = tl::load(y + at, m), z = tl::load(c + at, m);
      tl::store(o + at, a * b + z, m);
      tl::store(o + n + at, a * b - z, m);
      tl::store(o + 2 * n + at, z - a * b, m);
    }
  });
  return in_loop ? looped : straight;
}

// out = a + b, a - b, a * b and (a + b) * a in f16, in a one-trip loop (NVRTC's generator on CUDA).
Kernel& f16_ops_kernel() {
  static Kernel k = kernel("f16_ops", [](tl::ptr<f16_t> x, tl::ptr<f16_t> y, tl::ptr<f16_t> o, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    auto m = offs < n;
    for (auto i : tl::range(0, 1)) {
      auto at = offs + i;
      auto a = tl::load(x + at, m), b = tl::load(y + at, m);
      tl::store(o + at, a + b, m);
      tl::store(o + n + at, a - b, m);
      tl::store(o + 2 * n + at, a * b, m);
      tl::store(o + 3 * n + at, (a + b) * a, m);
    }
  });
  return k;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_contract_fma)

// Finite f16 bit patterns of every exponent (subnormals, zeros of both signs, the largest values:
// sums overflow to inf, products underflow to subnormals and zero); the reference rounds the f32
// op to f16, as the CPU backend computes.
BOOST_AUTO_TEST_CASE(f16_ops_round_once_on_every_backend) {
  const int n = 3000;
  auto bits = tt::random_vector<int32_t>(2 * n, 21, 0, 0xffff);
  tt::host_vector<f16_t> x(n), y(n), want(4 * n);
  auto finite = [](int32_t b) { return f16_t{uint16_t((b & 0x7c00) == 0x7c00 ? b & 0x83ff : b)}; };
  for (int i = 0; i < n; ++i) x[i] = finite(bits[2 * i]), y[i] = finite(bits[2 * i + 1]);
  x[0] = f16_t{0x7bff}, y[0] = f16_t{0x7bff};  // 65504 + 65504: inf
  x[1] = f16_t{0x0001}, y[1] = f16_t{0x3800};  // the smallest subnormal times 0.5: zero (to even)
  auto f16_of = [](float v) { return tt::from_double<f16_t>(double(v)); };
  for (int i = 0; i < n; ++i) {
    const float a = tt::to_float(x[i]), b = tt::to_float(y[i]);
    const f16_t s = f16_of(a + b);
    want[i] = s, want[n + i] = f16_of(a - b), want[2 * n + i] = f16_of(a * b);
    want[3 * n + i] = f16_of(tt::to_float(s) * a);
  }
  tt::for_each_backend([&](const tt::Backend& be) {
    auto dx = be.upload<f16_t>(x), dy = be.upload<f16_t>(y);
    auto dout = be.alloc_poisoned<f16_t>(4 * n);
    f16_ops_kernel()[{(n + 127) / 128}](dx.ptr(), dy.ptr(), dout.ptr(), n, 128, be.options());
    tt::check_equal<f16_t>(dout.download(), want, "f16 + - * and a chain");
  });
}

BOOST_AUTO_TEST_CASE(fuses_products_whose_every_use_is_an_add_or_sub_in_the_same_block) {
  Function f("k");
  Builder b(f);
  const Type f32 = Type::scalar(DType::f32), f16 = Type::scalar(DType::f16);
  Value* out = add_param(f, "out", Type::pointer(DType::f32));
  Value* out16 = add_param(f, "out16", Type::pointer(DType::f16));
  Value* x = add_param(f, "x", f32);
  Value* y = add_param(f, "y", f32);
  Value* c = add_param(f, "c", f32);
  Value* h = add_param(f, "h", f16);
  auto store = [&](Value* p, Value* v) { b.create(OpKind::Store, {p, v}, {}); };
  Value* xy = b.create1(OpKind::Mul, {x, y}, f32);
  store(out, b.create1(OpKind::Add, {c, xy}, f32));  // c + x*y: fused (product on the right)
  store(out, b.create1(OpKind::Sub, {xy, c}, f32));  // x*y - c: fma(x, y, -c)
  Value* yc = b.create1(OpKind::Mul, {y, c}, f32);
  store(out, b.create1(OpKind::Sub, {x, yc}, f32));  // x - y*c: fma(-y, c, x)
  Value* kept = b.create1(OpKind::Mul, {x, c}, f32);  // also stored: not fused anywhere
  store(out, kept);
  store(out, b.create1(OpKind::Add, {kept, y}, f32));
  Value* hh = b.create1(OpKind::Mul, {h, h}, f16);  // f16 rounds between: never fused
  store(out16, b.create1(OpKind::Add, {hh, h}, f16));

  BOOST_TEST(jit::contract_multiply_add(f));
  jit::eliminate_dead_code(f);
  BOOST_TEST(count_ops(f, OpKind::Fma) == 3u);
  BOOST_TEST(count_ops(f, OpKind::Mul) == 2u);  // x*c (kept) and h*h
  BOOST_TEST(count_ops(f, OpKind::Neg) == 2u);
  BOOST_TEST(count_ops(f, OpKind::Add) == 2u);
  BOOST_TEST(count_ops(f, OpKind::Sub) == 0u);
  std::vector<Op*> fmas;
  f.walk([&](Op* op) { if (op->kind == OpKind::Fma) fmas.push_back(op); });
  BOOST_REQUIRE(fmas.size() == 3u);
  BOOST_TEST((fmas[0]->operand(0) == x && fmas[0]->operand(1) == y && fmas[0]->operand(2) == c));
  BOOST_TEST((fmas[1]->operand(0) == x && fmas[1]->operand(1) == y));
  BOOST_TEST((fmas[1]->operand(2)->def && fmas[1]->operand(2)->def->kind == OpKind::Neg &&
              fmas[1]->operand(2)->def->operand(0) == c));
  BOOST_TEST((fmas[2]->operand(0)->def && fmas[2]->operand(0)->def->kind == OpKind::Neg &&
              fmas[2]->operand(0)->def->operand(0) == y && fmas[2]->operand(1) == c && fmas[2]->operand(2) == x));
  BOOST_TEST(!jit::contract_multiply_add(f));  // nothing left to fuse
}

BOOST_AUTO_TEST_CASE(a_product_outside_the_loop_is_not_fused_into_it) {
  Function f("k");
  Builder b(f);
  const Type f32 = Type::scalar(DType::f32), i32 = Type::scalar(DType::i32);
  Value* out = add_param(f, "out", Type::pointer(DType::f32));
  Value* x = add_param(f, "x", f32);
  Value* xx = b.create1(OpKind::Mul, {x, x}, f32);
  Value* lb = b.constant(0, i32);
  Value* ub = b.constant(4, i32);
  Value* step = b.constant(1, i32);
  Op* loop = b.create(OpKind::For, {lb, ub, step, x}, {f32});
  Block* body = f.new_block(loop);
  loop->regions.push_back(body);
  f.add_block_arg(body, i32);
  Value* carried = f.add_block_arg(body, f32);
  b.set_insertion_end(body);
  Value* next = b.create1(OpKind::Add, {carried, xx}, f32);
  b.create(OpKind::Yield, {next}, {});
  b.set_insertion_end(f.body);
  b.create(OpKind::Store, {out, loop->result()}, {});
  BOOST_TEST(!jit::contract_multiply_add(f));
  BOOST_TEST(count_ops(f, OpKind::Fma) == 0u);
}

BOOST_AUTO_TEST_CASE(kernels_round_as_the_ir_says_on_every_backend) {
  const int n = 1000;  // a masked tail with B = 128
  auto x = tt::random_vector<float>(n, 11), y = tt::random_vector<float>(n, 12), c = tt::random_vector<float>(n, 13);
  // Fused and unfused roundings, on the host; the inputs must tell them apart somewhere.
  tt::host_vector<float> fused(3 * n), unfused(3 * n);
  for (int i = 0; i < n; ++i) {
    fused[i] = std::fma(x[i], y[i], c[i]);
    fused[n + i] = std::fma(x[i], y[i], -c[i]);
    fused[2 * n + i] = std::fma(-x[i], y[i], c[i]);
    volatile float p = x[i] * y[i];  // rounded to f32 before the add
    unfused[i] = p + c[i], unfused[n + i] = p - c[i], unfused[2 * n + i] = c[i] - p;
  }
  int differ = 0;
  for (int i = 0; i < 3 * n; ++i) differ += fused[i] != unfused[i];
  BOOST_REQUIRE(differ > 100);
  tt::for_each_backend([&](const tt::Backend& be) {
    for (bool in_loop : {false, true}) {
      BOOST_TEST_CONTEXT((in_loop ? "in a loop (NVRTC on CUDA)" : "straight-line (PTX on CUDA)")) {
        auto dx = be.upload<float>(x), dy = be.upload<float>(y), dc = be.upload<float>(c);
        auto dout = be.alloc_poisoned<float>(3 * n);
        fused_kernel(in_loop)[{(n + 127) / 128}](dx.ptr(), dy.ptr(), dc.ptr(), dout.ptr(), n, 128, be.options());
        // The CPU backend computes each op in IEEE f32; the CUDA backend fuses the IR's products.
        tt::check_equal<float>(dout.download(), be.device.is_cuda() ? fused : unfused);
      }
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
