// Integer division as Triton does it (python/triton/language/semantic.py): `a // b` on integer
// tensors is C's truncating division (sdiv / udiv), `a % b` C's remainder (srem / urem: the sign
// of the dividend), `a / b` is true division in f32. Tritium spells `//` as `/` (C++ has no `//`)
// and Triton's integer `/` as tl::fdiv; docs/language.md, "Integer division", has the table.
// Checked with negative operands on both sides against the values Triton's rules give.
#include "test_support.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tl = tritium::tl;
namespace tt = tritium::test;

namespace {

constexpr int kN = 300, kBlock = 128;

template <class T> T* fake(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000); }

// How many floats lie between a and b (0 when equal; a NaN is far from everything).
int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return INT64_MAX;
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? int64_t(INT32_MIN) - i : int64_t(i);
  };
  return std::abs(ordered(a) - ordered(b));
}

// Dividends in [-50, 50], divisors in [-9, 9] without 0, both signs in both places.
std::vector<int32_t> operands(unsigned seed, int lo, int hi, bool nonzero) {
  std::vector<int32_t> v(kN);
  std::srand(seed);
  for (auto& x : v) {
    do x = lo + std::rand() % (hi - lo + 1);
    while (nonzero && x == 0);
  }
  v[0] = -7, v[1] = 7, v[2] = -7, v[3] = 7;
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_integer_division)

BOOST_AUTO_TEST_CASE(signed_division_truncates_and_remainder_takes_the_dividends_sign) {
  auto k = tritium::kernel("int_div", [](tl::ptr<int32_t> a, tl::ptr<int32_t> b, tl::ptr<int32_t> q,
                                         tl::ptr<int32_t> r, tl::ptr<float> t, tl::ptr<float> h, tl::ptr<int32_t> q3,
                                         tl::ptr<int32_t> r3, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    auto m = offs < n;
    auto x = tl::load(a + offs, m, 1), y = tl::load(b + offs, m, 1);
    tl::store(q + offs, x / y, m);            // Triton's x // y
    tl::store(r + offs, x % y, m);            // Triton's x % y
    tl::store(t + offs, tl::fdiv(x, y), m);   // Triton's x / y (f32)
    tl::store(h + offs, x / 2.0f, m);         // int / float: true division, as Triton's
    tl::store(q3 + offs, x / -3, m);          // a literal divisor: the same rules
    tl::store(r3 + offs, x % -3, m);
  });
  auto a = operands(1, -50, 50, false), b = operands(2, -9, 9, true);
  b[0] = 2, b[1] = -2, b[2] = -2, b[3] = 2;
  tt::for_each_backend([&](const tt::Backend& be) {
    auto da = be.upload<int32_t>(a), db = be.upload<int32_t>(b);
    auto dq = be.alloc_poisoned<int32_t>(kN), dr = be.alloc_poisoned<int32_t>(kN);
    auto dt = be.alloc_poisoned<float>(kN), dh = be.alloc_poisoned<float>(kN);
    auto dq3 = be.alloc_poisoned<int32_t>(kN), dr3 = be.alloc_poisoned<int32_t>(kN);
    k[{tritium::cdiv(kN, kBlock)}](da.ptr(), db.ptr(), dq.ptr(), dr.ptr(), dt.ptr(), dh.ptr(), dq3.ptr(), dr3.ptr(), kN,
                                   kBlock, be.options());
    auto q = dq.download(), r = dr.download(), q3 = dq3.download(), r3 = dr3.download();
    auto t = dt.download(), h = dh.download();
    // Triton's values: sdiv truncates toward zero (-7 // 2 == -3, not Python's -4); srem has the
    // dividend's sign (-7 % 2 == -1, not Python's 1); true division is f32's.
    BOOST_TEST(q[0] == -3);
    BOOST_TEST(r[0] == -1);
    BOOST_TEST(q[1] == -3);
    BOOST_TEST(r[1] == 1);
    BOOST_TEST(q[2] == 3);
    BOOST_TEST(r[2] == -1);
    BOOST_TEST(t[0] == -3.5f);
    // Integer results are exact; true division in f32 is within 2 ulp on CUDA (Triton's
    // div.full.f32, the generated code's, is not IEEE's correctly rounded division) and exact on the CPU.
    const int64_t div_ulps = be.device.is_cuda() ? 2 : 0;
    int wrong_q = 0, wrong_r = 0, wrong_t = 0, wrong_h = 0, wrong_literal = 0;
    for (int i = 0; i < kN; ++i) {
      const int64_t x = a[i], y = b[i];
      const int64_t tq = (x - (x % y)) / y;  // truncating quotient, from the remainder's definition
      const int64_t tr = x - tq * y;
      wrong_q += q[i] != tq;
      wrong_r += r[i] != tr || std::signbit(double(r[i])) != (r[i] != 0 && x < 0);
      wrong_t += ulp_distance(t[i], float(x) / float(y)) > div_ulps;
      wrong_h += ulp_distance(h[i], float(x) / 2.0f) > div_ulps;
      const int64_t tq3 = std::trunc(double(x) / -3.0);
      wrong_literal += q3[i] != tq3 || r3[i] != x - tq3 * -3;
    }
    BOOST_TEST(wrong_q == 0);
    BOOST_TEST(wrong_r == 0);
    BOOST_TEST(wrong_t == 0);
    BOOST_TEST(wrong_h == 0);
    BOOST_TEST(wrong_literal == 0);
  });
}

BOOST_AUTO_TEST_CASE(unsigned_division_and_mixed_signedness) {
  auto k = tritium::kernel("uint_div", [](tl::ptr<uint32_t> a, tl::ptr<uint32_t> b, tl::ptr<uint32_t> q,
                                          tl::ptr<uint32_t> r, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    auto m = offs < n;
    auto x = tl::load(a + offs, m, 1u), y = tl::load(b + offs, m, 1u);
    tl::store(q + offs, x / y, m);
    tl::store(r + offs, x % y, m);
  });
  std::vector<uint32_t> a(kN), b(kN);
  std::srand(3);
  for (int i = 0; i < kN; ++i) a[i] = uint32_t(std::rand()) * 3u, b[i] = 1u + uint32_t(std::rand()) % 1000u;
  a[0] = 0xfffffff9u, b[0] = 2;  // -7 as a u32: udiv, not sdiv
  tt::for_each_backend([&](const tt::Backend& be) {
    auto da = be.upload<uint32_t>(a), db = be.upload<uint32_t>(b);
    auto dq = be.alloc_poisoned<uint32_t>(kN), dr = be.alloc_poisoned<uint32_t>(kN);
    k[{tritium::cdiv(kN, kBlock)}](da.ptr(), db.ptr(), dq.ptr(), dr.ptr(), kN, kBlock, be.options());
    auto q = dq.download(), r = dr.download();
    BOOST_TEST(q[0] == 0x7ffffffcu);
    int wrong = 0;
    for (int i = 0; i < kN; ++i) wrong += q[i] != a[i] / b[i] || r[i] != a[i] % b[i];
    BOOST_TEST(wrong == 0);
  });
  // Triton refuses / and % between signed and unsigned integers; so does Tritium, at the line.
  unsigned line = 0;
  auto mixed = tritium::kernel("mixed_div", [&](tl::ptr<int32_t> a, tl::ptr<uint32_t> b, tl::ptr<int32_t> out) {
    auto x = tl::load(a), y = tl::load(b);
    line = __LINE__; tl::store(out, x / y);
  });
  tt::check_throws_at([&] { (void)mixed.ir(fake<int32_t>(0), fake<uint32_t>(1), fake<int32_t>(2)); }, __FILE__, line,
                      {"different signedness", "i32", "u32"}, "i32 / u32");
}

BOOST_AUTO_TEST_SUITE_END()
