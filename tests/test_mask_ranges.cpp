// Bounds masks the CPU generator proves on for a whole block from the ranges of their integer
// operands (jit/cpu/mask_versions.cpp: such a loop nest runs a copy without per-chunk masks). The
// kernels mix blocks where a mask is on everywhere with blocks where it is not, so a wrong proof
// writes lanes that must stay poisoned or reads what `other` should replace. Run on every backend
// (the CUDA generator evaluates the same masks per element).
#include "test_support.h"

#include <climits>
#include <cstdint>
#include <vector>

namespace tl = tritium::tl;
namespace tt = tritium::test;

namespace {

constexpr int kBlock = 128;
constexpr int32_t kPoison = -777;

std::vector<int32_t> iota_values(int n, int32_t scale) {
  std::vector<int32_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = scale * i + 1;
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_mask_ranges)

// lo <= offs < hi: blocks wholly inside the window, blocks across each end, blocks outside.
BOOST_AUTO_TEST_CASE(a_window_between_two_bounds) {
  auto k = tritium::kernel("mask_window", [](tl::ptr<int32_t> x, tl::ptr<int32_t> y, tl::i64 lo, tl::i64 hi, int B) {
    auto offs = tl::program_id(0).to(tl::int64) * B + tl::arange(0, B).to(tl::int64);
    auto m = (offs >= lo) & (offs < hi);
    tl::store(y + offs, tl::load(x + offs, m, -1) * 2, m);
  });
  const int n = 1000;
  const int64_t lo = 130, hi = 900;
  auto xs = iota_values(n, 3);
  tt::for_each_backend([&](const tt::Backend& be) {
    auto dx = be.upload<int32_t>(xs);
    auto dy = be.upload<int32_t>(std::vector<int32_t>(n, kPoison));
    k[{tritium::cdiv(n, kBlock)}](dx.ptr(), dy.ptr(), lo, hi, kBlock, be.options());
    auto y = dy.download();
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += y[i] != (i >= lo && i < hi ? 2 * xs[i] : kPoison);
    BOOST_TEST(bad == 0, be.name << ": " << bad << " wrong elements");
  });
}

// Offsets through *, /, % and min (negative dividends included): reads under the mask return
// `other` wherever the derived offset leaves [0, n).
BOOST_AUTO_TEST_CASE(offsets_through_arithmetic) {
  auto k = tritium::kernel("mask_arith", [](tl::ptr<int32_t> x, tl::ptr<int32_t> y, tl::ptr<int32_t> z,
                                            tl::ptr<int32_t> w, tl::ptr<int32_t> v, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    auto in = offs < n;
    // (3 offs - 700) / 4: negative below 234, truncating toward zero.
    auto o1 = (offs * 3 - 700) / 4;
    tl::store(y + offs, tl::load(x + o1, in & (o1 >= 0) & (o1 < n), -1), in);
    // A divisor that varies along the block: offs / (1 + offs % 4) - 100.
    auto o2 = offs / (1 + offs % 4) - 100;
    tl::store(z + offs, tl::load(x + o2, in & (o2 >= 0) & (o2 < n), -1), in);
    // min keeps the offset in range everywhere: the mask is provably on wherever offs is.
    auto o3 = tl::minimum(offs * 2, n - 1);
    tl::store(w + offs, tl::load(x + o3, in & (o3 < n), -1), in);
    // A negative dividend over a varying divisor: its lowest quotient comes with the smallest
    // divisor ((offs - 600) / (1 + offs % 4) reaches -88 in the block [512, 640), not -22).
    auto o4 = (offs - 600) / (1 + offs % 4) + 50;
    tl::store(v + offs, tl::load(x + o4, in & (o4 >= 0) & (o4 < n), -1), in);
  });
  const int n = 1000;
  auto xs = iota_values(n, 5);
  tt::for_each_backend([&](const tt::Backend& be) {
    auto dx = be.upload<int32_t>(xs);
    auto dy = be.alloc_poisoned<int32_t>(n), dz = be.alloc_poisoned<int32_t>(n), dw = be.alloc_poisoned<int32_t>(n);
    auto dv = be.alloc_poisoned<int32_t>(n);
    k[{tritium::cdiv(n, kBlock)}](dx.ptr(), dy.ptr(), dz.ptr(), dw.ptr(), dv.ptr(), n, kBlock, be.options());
    auto y = dy.download(), z = dz.download(), w = dw.download(), v = dv.download();
    int bad = 0;
    for (int i = 0; i < n; ++i) {
      const int o1 = (3 * i - 700) / 4, o2 = i / (1 + i % 4) - 100, o3 = std::min(2 * i, n - 1);
      const int o4 = (i - 600) / (1 + i % 4) + 50;
      bad += v[i] != (o4 >= 0 && o4 < n ? xs[o4] : -1);
      bad += y[i] != (o1 >= 0 && o1 < n ? xs[o1] : -1);
      bad += z[i] != (o2 >= 0 && o2 < n ? xs[o2] : -1);
      bad += w[i] != xs[o3];
    }
    BOOST_TEST(bad == 0, be.name << ": " << bad << " wrong elements");
  });
}

// An i32 offset that wraps past INT32_MAX inside the block: the wrapped lanes are negative, so
// `o > 0` is off there. The exact range of o (no wrap) would say on everywhere; the proof must
// see that o leaves its dtype and fall back to the per-lane mask.
BOOST_AUTO_TEST_CASE(a_wrapping_offset_is_not_proven) {
  auto k = tritium::kernel("mask_wrap", [](tl::ptr<int32_t> y, tl::i32 start, int B) {
    auto lane = tl::arange(0, B);
    auto o = start + lane;
    tl::store(y + lane, lane * 0 + 1, o > 0);
  });
  const int32_t start = INT32_MAX - 4;
  tt::for_each_backend([&](const tt::Backend& be) {
    auto dy = be.upload<int32_t>(std::vector<int32_t>(kBlock, kPoison));
    k[{1}](dy.ptr(), start, kBlock, be.options());
    auto y = dy.download();
    int bad = 0;
    for (int i = 0; i < kBlock; ++i) bad += y[i] != (i <= 4 ? 1 : kPoison);
    BOOST_TEST(bad == 0, be.name << ": " << bad << " wrong elements");
  });
}

// A 2-D tile masked by rows and columns, and a sum over a masked 1-D load: edge tiles in both
// dims, whole tiles elsewhere.
BOOST_AUTO_TEST_CASE(two_dimensional_tiles_and_a_reduction) {
  auto k = tritium::kernel("mask_tile", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> s, tl::i32 R, tl::i32 C,
                                           int BR, int BC) {
    auto r = tl::program_id(0) * BR + tl::arange(0, BR);
    auto c = tl::program_id(1) * BC + tl::arange(0, BC);
    auto m = (r < R)(tl::_, tl::None) & (c < C)(tl::None, tl::_);
    auto off = r(tl::_, tl::None) * C + c(tl::None, tl::_);
    auto v = tl::load(x + off, m, 0.0f);
    tl::store(y + off, v + 1.0f, m);
    // One partial sum a tile, at (row tile, column tile).
    tl::store(s + (tl::program_id(0) * tl::num_programs(1) + tl::program_id(1)), tl::sum(tl::sum(v, 1), 0));
  });
  const int R = 100, C = 70, BR = 32, BC = 32;
  std::vector<float> xs(R * C);
  for (int i = 0; i < R * C; ++i) xs[i] = static_cast<float>((i * 37) % 101) - 50.0f;
  const int gr = tritium::cdiv(R, BR), gc = tritium::cdiv(C, BC);
  tt::for_each_backend([&](const tt::Backend& be) {
    auto dx = be.upload<float>(xs);
    auto dy = be.alloc_poisoned<float>(R * C), ds = be.alloc_poisoned<float>(gr * gc);
    k[{gr, gc}](dx.ptr(), dy.ptr(), ds.ptr(), R, C, BR, BC, be.options());
    auto y = dy.download(), s = ds.download();
    int bad = 0;
    for (int i = 0; i < R * C; ++i) bad += y[i] != xs[i] + 1.0f;
    BOOST_TEST(bad == 0, be.name << ": " << bad << " wrong elements");
    for (int a = 0; a < gr; ++a)
      for (int b = 0; b < gc; ++b) {
        double want = 0;
        for (int i = a * BR; i < std::min(R, (a + 1) * BR); ++i)
          for (int j = b * BC; j < std::min(C, (b + 1) * BC); ++j) want += xs[i * C + j];
        BOOST_TEST(s[a * gc + b] == want, be.name << ": tile " << a << ", " << b);  // small integers: exact
      }
  });
}

// A [rows, 1] operand stretched over the columns is read once a chunk (every lane's address is the
// same), but its mask may still vary along the lanes: lanes off take `other`, and the element is
// read when any lane is on, lane 0 or not.
BOOST_AUTO_TEST_CASE(a_broadcast_operand_under_a_varying_mask) {
  auto k = tritium::kernel("mask_bcast", [](tl::ptr<float> u, tl::ptr<float> y, tl::ptr<float> z, tl::i32 R, tl::i32 C,
                                            int BR, int BC) {
    auto r = tl::program_id(0) * BR + tl::arange(0, BR);
    auto c = tl::arange(0, BC);
    auto in = (r < R)(tl::_, tl::None) & (c < C)(tl::None, tl::_);
    // Constant along the columns; every other row (not contiguous down the rows either).
    auto ptrs = u + (r(tl::_, tl::None) * 2 + c(tl::None, tl::_) * 0);
    auto off = r(tl::_, tl::None) * C + c(tl::None, tl::_);
    tl::store(y + off, tl::load(ptrs, in & (c < 5)(tl::None, tl::_), -5.0f), in);  // lane 0 on
    tl::store(z + off, tl::load(ptrs, in & (c >= 3)(tl::None, tl::_), -7.0f), in);  // lane 0 off
  });
  const int R = 70, C = 40, BR = 16, BC = 64;
  std::vector<float> us(2 * R);
  for (int i = 0; i < 2 * R; ++i) us[i] = 0.5f * static_cast<float>(i) - 3.0f;
  tt::for_each_backend([&](const tt::Backend& be) {
    auto du = be.upload<float>(us);
    auto dy = be.alloc_poisoned<float>(R * C), dz = be.alloc_poisoned<float>(R * C);
    k[{tritium::cdiv(R, BR)}](du.ptr(), dy.ptr(), dz.ptr(), R, C, BR, BC, be.options());
    auto y = dy.download(), z = dz.download();
    int bad = 0;
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) {
        bad += y[i * C + j] != (j < 5 ? us[2 * i] : -5.0f);
        bad += z[i * C + j] != (j >= 3 ? us[2 * i] : -7.0f);
      }
    BOOST_TEST(bad == 0, be.name << ": " << bad << " wrong elements");
  });
}

BOOST_AUTO_TEST_SUITE_END()
