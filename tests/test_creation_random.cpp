// ops/creation.cpp and ops/random.cpp: factories on every dtype, fill_ on strided views, and
// Philox-4x32-10 (known-answer vectors, a host reference, Triton's mapping, distributions,
// reproducibility, generators shared between threads).
#include "test_support.h"

#include <array>
#include <cmath>
#include <numeric>
#include <thread>

#include "ops/ops.h"
#include "ops/random.h"
#include "runtime/views.h"

namespace tt = tritium::test;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;
using Shape = std::vector<int64_t>;

namespace {

// Elements as doubles, whatever the dtype.
std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> out;
  auto put = [&](auto v) {
    for (auto x : v) out.push_back(tt::to_double(x));
  };
  switch (t.dtype()) {
    case DType::i1: { auto v = t.to_vector<bool>(); for (bool b : v) out.push_back(b ? 1 : 0); break; }
    case DType::i8: put(t.to_vector<int8_t>()); break;
    case DType::i16: put(t.to_vector<int16_t>()); break;
    case DType::i32: put(t.to_vector<int32_t>()); break;
    case DType::i64: put(t.to_vector<int64_t>()); break;
    case DType::u8: put(t.to_vector<uint8_t>()); break;
    case DType::u16: put(t.to_vector<uint16_t>()); break;
    case DType::u32: put(t.to_vector<uint32_t>()); break;
    case DType::u64: put(t.to_vector<uint64_t>()); break;
    case DType::f16: put(t.to_vector<tritium::f16_t>()); break;
    case DType::bf16: put(t.to_vector<tritium::bf16_t>()); break;
    case DType::f32: put(t.to_vector<float>()); break;
    case DType::f64: put(t.to_vector<double>()); break;
    default: BOOST_FAIL("unexpected dtype");
  }
  return out;
}

const std::vector<DType> kAll = {DType::i1,  DType::i8,  DType::i16, DType::i32, DType::i64, DType::u8,  DType::u16,
                                 DType::u32, DType::u64, DType::f16, DType::bf16, DType::f32, DType::f64};
const std::vector<DType> kFloats = {DType::f16, DType::bf16, DType::f32, DType::f64};

// Random123's reference Philox4x32-10 on the host (philox.h: mulhilo, then the key bump
// between rounds).
std::array<uint32_t, 4> philox_host(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) k[0] += 0x9E3779B9u, k[1] += 0xBB67AE85u;
    uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
  }
  return c;
}

// Triton's uint_to_uniform_float on the host.
float uniform_host(uint32_t w) {
  int32_t x = static_cast<int32_t>(w);
  if (x < 0) x = -x - 1;
  return static_cast<float>(x) * 4.6566127342e-10f;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_creation_random)

BOOST_AUTO_TEST_CASE(full_zeros_ones_every_dtype) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (DType d : kAll) {
      BOOST_TEST_CONTEXT(tritium::dtype_name(d)) {
        Shape shape{3, 1000};  // not a multiple of the block
        auto z = as_doubles(ops::zeros(shape, d, be.device));
        auto o = as_doubles(ops::ones(shape, d, be.device));
        BOOST_TEST_REQUIRE(z.size() == 3000u);
        BOOST_TEST(std::all_of(z.begin(), z.end(), [](double v) { return v == 0; }));
        BOOST_TEST(std::all_of(o.begin(), o.end(), [](double v) { return v == 1; }));
        double value = tritium::is_bool(d) ? 1 : tritium::is_float(d) ? 2.5 : 7;
        Tensor f = ops::full(shape, value, d, be.device);
        BOOST_TEST((f.device() == be.device));
        BOOST_TEST((f.dtype() == d));
        BOOST_TEST(f.shape() == shape);
        auto fv = as_doubles(f);
        BOOST_TEST(std::all_of(fv.begin(), fv.end(), [&](double v) { return v == value; }));
        Tensor zl = ops::zeros_like(f), ol = ops::ones_like(f);
        BOOST_TEST(zl.shape() == shape);
        BOOST_TEST((ol.dtype() == d));
        BOOST_TEST((zl.device() == be.device && ol.device() == be.device));
        BOOST_TEST(as_doubles(ol)[2999] == 1);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(full_value_conversions) {
  tt::for_each_backend([&](const tt::Backend& be) {
    BOOST_TEST((ops::full({4}, 2.9, DType::i32).device() == be.device));  // the default device
    BOOST_TEST(as_doubles(ops::full({4}, 2.9, DType::i32)) == (std::vector<double>{2, 2, 2, 2}));  // truncation
    BOOST_TEST(as_doubles(ops::full({2}, -2.9, DType::i64)) == (std::vector<double>{-2, -2}));
    BOOST_TEST(as_doubles(ops::full({2}, 300, DType::u8)) == (std::vector<double>{44, 44}));      // wraps like a cast
    BOOST_TEST(as_doubles(ops::full({2}, true, DType::f32)) == (std::vector<double>{1, 1}));
    BOOST_TEST(as_doubles(ops::full({2}, 0.1, DType::f16))[0] == double(tt::to_float(tt::to_f16(0.1f))));
    BOOST_TEST(as_doubles(ops::full({2}, 3.0, DType::i1)) == (std::vector<double>{1, 1}));
    auto big = ops::full({1}, uint64_t(0xF000000000000001ull), DType::u64).to_vector<uint64_t>();
    BOOST_TEST(big[0] == 0xF000000000000001ull);
    BOOST_TEST(ops::full({0, 5}, 1.0, DType::f32).numel() == 0);
    tt::check_throws([] { ops::full({2}, 1.0, DType::ptr); }, {"dtype"}, "pointer dtype");
    tt::check_throws([] { ops::full({-1}, 1.0, DType::f32); }, {"negative size"}, "negative size");
  });
}

BOOST_AUTO_TEST_CASE(fill_strided_views) {
  tt::for_each_backend([&](const tt::Backend&) {
    // fill_ through a view writes exactly the viewed elements.
    Tensor x = ops::zeros({6, 8}, DType::f32);
    Tensor v = tritium::runtime::slice_of(tritium::runtime::slice_of(x, 0, 1, 5), 1, 0, 8, 3);  // rows 1..4, cols 0,3,6
    ops::fill_(v, 5.0);
    auto xv = x.to_vector<float>();
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 8; ++j) BOOST_TEST(xv[i * 8 + j] == ((i >= 1 && i < 5 && j % 3 == 0) ? 5.0f : 0.0f));
    Tensor t = tritium::runtime::t_of(x);
    ops::fill_(t, -1);
    auto tv = t.to_vector<float>();
    BOOST_TEST(std::all_of(tv.begin(), tv.end(), [](float f) { return f == -1; }));
    // Rank 6 after collapsing: more than the strided kernel's 4 dims.
    Tensor big = ops::zeros({2, 3, 2, 3, 2, 3}, DType::i16);
    Tensor p = tritium::runtime::permute_of(big, {5, 4, 3, 2, 1, 0});
    Tensor q = tritium::runtime::slice_of(p, 0, 0, 3, 2);
    ops::fill_(q, 9);
    auto bv = big.to_vector<int16_t>();
    int nines = 0;
    for (size_t i = 0; i < bv.size(); ++i) {
      bool expect = (i % 3) != 1;  // last dim of big: indices 0 and 2
      BOOST_TEST(bv[i] == (expect ? 9 : 0));
      nines += bv[i] == 9;
    }
    BOOST_TEST(nines == 144);
  });
}

BOOST_AUTO_TEST_CASE(arange_every_dtype) {
  tt::for_each_backend([&](const tt::Backend& be) {
    BOOST_TEST(as_doubles(ops::arange(0, 5)) == (std::vector<double>{0, 1, 2, 3, 4}));
    BOOST_TEST((ops::arange(0, 5).dtype() == DType::i64));
    BOOST_TEST((ops::arange(0, 5).device() == be.device));
    BOOST_TEST(as_doubles(ops::arange(2, 11, 3, DType::f32)) == (std::vector<double>{2, 5, 8}));
    BOOST_TEST(as_doubles(ops::arange(5, -4, -2, DType::i8)) == (std::vector<double>{5, 3, 1, -1, -3}));
    BOOST_TEST(ops::arange(3, 3).numel() == 0);
    for (DType d : kAll) {
      if (d == DType::i1) continue;
      BOOST_TEST_CONTEXT(tritium::dtype_name(d)) {
        auto v = as_doubles(ops::arange(0, 100, 1, d));
        BOOST_TEST_REQUIRE(v.size() == 100u);
        for (int i = 0; i < 100; ++i) BOOST_TEST(v[i] == i);
      }
    }
    auto long_range = ops::arange(0, 5000, 1, DType::i32).to_vector<int32_t>();
    for (int i = 0; i < 5000; ++i) BOOST_TEST_REQUIRE(long_range[i] == i);
    tt::check_throws([] { ops::arange(0, 5, 0); }, {"step must be nonzero"}, "zero step");
    tt::check_throws([] { ops::arange(5, 0, 1); }, {"inconsistent with step sign"}, "wrong sign");
    tt::check_throws([] { ops::arange(0, 2, 1, DType::i1); }, {"arange", "i1"}, "bool");
  });
}

BOOST_AUTO_TEST_CASE(philox_known_answers) {
  tt::for_each_backend([&](const tt::Backend& be) {
    // Random123's kat_vectors for philox4x32_10, checked on the host reference and on the kernel.
    struct Kat {
      std::array<uint32_t, 4> ctr;
      std::array<uint32_t, 2> key;
      std::array<uint32_t, 4> out;
    };
    const Kat kats[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (const Kat& k : kats) {
      BOOST_TEST((philox_host(k.ctr, k.key) == k.out));
      Tensor ctr = Tensor::from_vector<uint32_t>({k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}, {1, 4});
      Tensor words = ops::philox::philox4x32_10(ctr, k.key[0], k.key[1]);
      BOOST_TEST((words.device() == be.device));
      auto out = words.to_vector<uint32_t>();
      for (int j = 0; j < 4; ++j) BOOST_TEST(out[j] == k.out[j], "word " << j);
    }
    // Many counters at once (not a multiple of the block) against the host reference.
    std::mt19937 rng(7);
    std::vector<uint32_t> ctrs(4 * 1000);
    for (auto& c : ctrs) c = static_cast<uint32_t>(rng());
    auto out = ops::philox::philox4x32_10(Tensor::from_vector(ctrs, {1000, 4}), 0x12345678u, 0x9abcdef0u)
                   .to_vector<uint32_t>();
    size_t bad = 0;
    for (size_t i = 0; i < 1000; ++i) {
      auto ref =
          philox_host({ctrs[4 * i], ctrs[4 * i + 1], ctrs[4 * i + 2], ctrs[4 * i + 3]}, {0x12345678u, 0x9abcdef0u});
      for (int j = 0; j < 4; ++j) bad += out[4 * i + j] != ref[j];
    }
    BOOST_TEST(bad == 0u);
  });
}

BOOST_AUTO_TEST_CASE(rand_matches_triton_mapping) {
  tt::for_each_backend([&](const tt::Backend& be) {
    // rand element i = uint_to_uniform_float(philox(seed, counter = offset + i)[0]), Triton's tl.rand.
    uint64_t seed = 0x0123456789abcdefull;
    ops::Generator gen(seed);
    gen.advance(100);  // the draw starts at counter 100
    Tensor rt = ops::rand({777}, gen);
    BOOST_TEST((rt.device() == be.device));
    auto r = rt.to_vector<float>();
    for (uint32_t i = 0; i < 777; ++i) {
      auto w = philox_host({100 + i, 0, 0, 0}, {uint32_t(seed), uint32_t(seed >> 32)});
      BOOST_TEST_REQUIRE(r[i] == uniform_host(w[0]), "element " << i);
    }
    // Counters above 2^32 use the second counter word.
    ops::Generator g2(5);
    g2.advance((uint64_t(1) << 32) + 3);
    auto r2 = ops::rand({2}, g2).to_vector<float>();
    BOOST_TEST(r2[1] == uniform_host(philox_host({4, 1, 0, 0}, {5, 0})[0]));
    // f64: 53 bits of words 0 and 1 times 2^-53, exact on every backend.
    ops::Generator g3(seed);
    auto r3 = ops::rand({333}, g3, DType::f64).to_vector<double>();
    for (uint32_t i = 0; i < 333; ++i) {
      auto w = philox_host({i, 0, 0, 0}, {uint32_t(seed), uint32_t(seed >> 32)});
      uint64_t bits = ((uint64_t(w[0]) << 32) | w[1]) >> 11;
      BOOST_TEST_REQUIRE(r3[i] == double(bits) * 0x1p-53, "f64 element " << i);
    }
    // randn (f32) is Triton's pair_uniform_to_normal of words 0 and 1: the same uniforms, then
    // log/sqrt/cos in f32 (the device's math library may differ from this double reference in the
    // last ulps).
    ops::Generator g4(seed);
    g4.advance(7);
    Tensor nt = ops::randn({1001}, g4);
    BOOST_TEST((nt.device() == be.device));
    auto n4 = nt.to_vector<float>();
    std::vector<double> ref(n4.size());
    for (uint32_t i = 0; i < n4.size(); ++i) {
      auto w = philox_host({7 + i, 0, 0, 0}, {uint32_t(seed), uint32_t(seed >> 32)});
      double u1 = std::max(1.0e-7, double(uniform_host(w[0]))), u2 = uniform_host(w[1]);
      ref[i] = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
    tt::check_close<float>(tt::host_vector<float>(n4.begin(), n4.end()), ref, 1e-5, "randn vs host Box-Muller");
  });
}

BOOST_AUTO_TEST_CASE(distributions) {
  tt::for_each_backend([&](const tt::Backend&) {
    const int64_t n = 200000;
    for (DType d : kFloats) {
      BOOST_TEST_CONTEXT(tritium::dtype_name(d)) {
        ops::Generator gen(1234);
        auto u = as_doubles(ops::rand({n}, gen, d));
        double mean = 0, var = 0, lo = 1, hi = 0;
        for (double v : u) mean += v, lo = std::min(lo, v), hi = std::max(hi, v);
        mean /= n;
        for (double v : u) var += (v - mean) * (v - mean);
        var /= n;
        BOOST_TEST(lo >= 0.0);
        BOOST_TEST(hi < 1.0);  // never rounds up to 1, even in f16/bf16
        BOOST_TEST(std::abs(mean - 0.5) < 0.005);
        BOOST_TEST(std::abs(var - 1.0 / 12) < 0.003);
        auto z = as_doubles(ops::randn({n}, gen, d));
        double zm = 0, zv = 0, z4 = 0;
        for (double v : z) {
          BOOST_TEST_REQUIRE(std::isfinite(v));
          zm += v;
        }
        zm /= n;
        for (double v : z) zv += (v - zm) * (v - zm), z4 += std::pow(v - zm, 4);
        zv /= n;
        z4 /= n;
        BOOST_TEST(std::abs(zm) < 0.01);
        BOOST_TEST(std::abs(zv - 1) < 0.02);
        BOOST_TEST(std::abs(z4 / (zv * zv) - 3) < 0.1);  // kurtosis of a normal
      }
    }
    // Uniform buckets (a coarse chi-square): 10 buckets of 20000 expected each.
    ops::Generator gen(99);
    auto u = ops::rand({n}, gen).to_vector<float>();
    std::vector<int> bucket(10, 0);
    for (float v : u) ++bucket[std::min(9, int(v * 10))];
    double chi2 = 0;
    for (int b : bucket) chi2 += (b - n / 10.0) * (b - n / 10.0) / (n / 10.0);
    BOOST_TEST(chi2 < 30);  // 9 degrees of freedom: p < 0.001 above ~27.9
  });
}

BOOST_AUTO_TEST_CASE(reproducibility) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::Generator a(42), b(42), c(43);
    auto x = ops::rand({1000}, a).to_vector<float>();
    auto y = ops::rand({1000}, b).to_vector<float>();
    auto z = ops::rand({1000}, c).to_vector<float>();
    BOOST_TEST(x == y);  // same seed, same offset
    BOOST_TEST(x != z);  // another seed
    auto x2 = ops::rand({1000}, a).to_vector<float>();
    BOOST_TEST(x2 != x);  // the generator advanced: the next draw differs
    a.manual_seed(42);
    BOOST_TEST(ops::rand({1000}, a).to_vector<float>() == x);  // reseeding restarts
    ops::Generator g(1);
    BOOST_TEST(g.advance(10) == 0u);
    BOOST_TEST(g.advance(5) == 10u);
    BOOST_TEST(g.advance(0) == 15u);
    // The default generator advances too.
    auto d1 = ops::randn({8}).to_vector<float>(), d2 = ops::randn({8}).to_vector<float>();
    BOOST_TEST(d1 != d2);
  });
}

// Threads sharing one generator: every counter is handed out exactly once, so no (seed, offset)
// is used twice (an unguarded offset += n loses updates and hands out overlapping ranges).
BOOST_AUTO_TEST_CASE(generator_counters_are_disjoint_across_threads) {
  ops::Generator gen(77);
  constexpr int kThreads = 4, kCalls = 200000;
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> got(kThreads);  // (first, n) per call
  for (auto& g : got) g.reserve(kCalls);
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();  // all start together
      for (int i = 0; i < kCalls; ++i) {
        uint64_t n = 1 + static_cast<uint64_t>((i + t) % 3);
        got[t].emplace_back(gen.advance(n), n);
      }
    });
  for (auto& th : threads) th.join();
  std::vector<std::pair<uint64_t, uint64_t>> all;
  for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  uint64_t next = 0, overlaps = 0;
  for (auto [first, n] : all) {
    overlaps += first != next;
    next = first + n;
  }
  BOOST_TEST(overlaps == 0u, overlaps << " of " << all.size() << " reservations overlap or leave a gap");
  BOOST_TEST(gen.advance(0) == next);  // the offset is the sum of every reservation
}

// Draws from one generator on four threads give the numbers a single thread would (the same
// counters, handed out in another order): none repeats, none is missing.
BOOST_AUTO_TEST_CASE(concurrent_draws_never_repeat) {
  tt::for_each_backend([&](const tt::Backend& be) {
    constexpr int kThreads = 4, kDraws = 50, kSize = 100;
    const int64_t high = int64_t(1) << 62;  // 64 random bits per value: a repeat means a reused counter
    ops::Generator shared(2024);
    std::vector<std::vector<int64_t>> got(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < kDraws; ++i) {
          auto v = ops::randint(0, high, {kSize}, shared, DType::i64, be.device).to_vector<int64_t>();
          got[t].insert(got[t].end(), v.begin(), v.end());
        }
      });
    for (auto& th : threads) th.join();
    std::vector<int64_t> all;
    for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
    std::sort(all.begin(), all.end());
    size_t repeats = all.size() - static_cast<size_t>(std::unique(all.begin(), all.end()) - all.begin());
    BOOST_TEST(repeats == 0u, repeats << " repeated values in " << all.size() << " concurrent draws");
    ops::Generator single(2024);
    auto ref = ops::randint(0, high, {kThreads * kDraws * kSize}, single, DType::i64, be.device).to_vector<int64_t>();
    std::sort(ref.begin(), ref.end());
    all.clear();
    for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
    std::sort(all.begin(), all.end());
    BOOST_TEST((all == ref), "the concurrent draws are not the single-threaded draw's values");
    BOOST_TEST(shared.offset() == single.offset());
  });
}

BOOST_AUTO_TEST_CASE(randint_and_uniform) {
  tt::for_each_backend([&](const tt::Backend& be) {
    ops::Generator gen(3);
    auto r = ops::randint(-5, 7, {50000}, gen).to_vector<int64_t>();
    std::vector<int> hits(12, 0);
    for (int64_t v : r) {
      BOOST_TEST_REQUIRE((v >= -5 && v < 7));
      ++hits[v + 5];
    }
    for (int h : hits) BOOST_TEST(std::abs(h - 50000 / 12) < 400);
    auto u8 = as_doubles(ops::randint(0, 256, {1000}, gen, DType::u8));
    BOOST_TEST(*std::max_element(u8.begin(), u8.end()) > 200);
    auto bools = as_doubles(ops::randint(0, 2, {1000}, gen, DType::i1));
    double ones = std::accumulate(bools.begin(), bools.end(), 0.0);
    BOOST_TEST((ones > 400 && ones < 600));
    auto fl = as_doubles(ops::randint(10, 20, {100}, gen, DType::f32));
    for (double v : fl) BOOST_TEST((v == std::floor(v) && v >= 10 && v < 20));
    auto wide = ops::randint(0, int64_t(1) << 40, {1000}, gen).to_vector<int64_t>();
    BOOST_TEST(*std::max_element(wide.begin(), wide.end()) > (int64_t(1) << 33));  // 64-bit draws
    // Bits against the host: low + word0 % range (32-bit ranges), low + (word0:word1) % range (wider).
    const uint64_t seed = 0xfedcba9876543210ull;
    ops::Generator gr(seed);
    auto narrow = ops::randint(-5, 7, {1000}, gr).to_vector<int64_t>();
    auto wide_r = ops::randint(-3, (int64_t(1) << 40) - 3, {1000}, gr).to_vector<int64_t>();  // counters 1000..
    for (uint32_t i = 0; i < 1000; ++i) {
      auto w = philox_host({i, 0, 0, 0}, {uint32_t(seed), uint32_t(seed >> 32)});
      BOOST_TEST_REQUIRE(narrow[i] == -5 + int64_t(w[0] % 12u), "narrow element " << i);
      auto ww = philox_host({1000 + i, 0, 0, 0}, {uint32_t(seed), uint32_t(seed >> 32)});
      uint64_t bits = (uint64_t(ww[0]) << 32) | ww[1];
      BOOST_TEST_REQUIRE(wide_r[i] == -3 + int64_t(bits % (uint64_t(1) << 40)), "wide element " << i);
    }
    tt::check_throws([&] { ops::randint(5, 5, {2}, gen); }, {"randint", "low=5 >= high=5"}, "empty range");
    tt::check_throws([&] { ops::randint(0, 300, {2}, gen, DType::u8); }, {"does not fit dtype u8"}, "range vs dtype");

    Tensor w = ops::zeros({64, 100}, DType::f32);
    ops::uniform_(w, -0.25, 0.5, gen);
    BOOST_TEST((w.device() == be.device));
    auto wv = w.to_vector<float>();
    double m = 0;
    for (float v : wv) {
      BOOST_TEST_REQUIRE((v >= -0.25f && v <= 0.5f));
      m += v;
    }
    BOOST_TEST(std::abs(m / wv.size() - 0.125) < 0.01);
    // Through a transposed view: the same values land at the transposed places (the counter is
    // the logical row-major index of the view).
    ops::Generator g1(8), g2(8);
    Tensor base = ops::zeros({30, 20}, DType::f64);
    Tensor tv = tritium::runtime::t_of(base);
    ops::uniform_(tv, 0, 1, g1);
    Tensor direct = ops::zeros({20, 30}, DType::f64);
    ops::uniform_(direct, 0, 1, g2);
    BOOST_TEST(tv.to_vector<double>() == direct.to_vector<double>());
    tt::check_throws([&] { ops::uniform_(direct, 1, 0, gen); }, {"uniform_", "low <= high"}, "bad bounds");
    Tensor ints = ops::zeros({3}, DType::i32);
    tt::check_throws([&] { ops::uniform_(ints, 0, 1, gen); }, {"floating-point dtype"}, "integer tensor");
    tt::check_throws([&] { ops::rand({3}, gen, DType::i32); }, {"rand", "floating-point"}, "rand of ints");
  });
}

BOOST_AUTO_TEST_SUITE_END()
