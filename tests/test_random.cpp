// tl::philox / randint / randint4x / rand / rand4x / randn / randn4x (dsl/random.h) on every
// backend: Random123's known-answer vectors for Philox-4x32-10 and 4x64-10, and Triton's mapping
// (counter (offset, 0, 0, 0), key (seed lo, seed hi) or (seed, 0), uint_to_uniform_float,
// Box-Muller) against an independent host implementation, for 32- and 64-bit offsets.
#include <cmath>
#include <cstdint>
#include <vector>

#include "test_support.h"

namespace tt = tritium::test;
namespace tl = tritium::tl;

namespace {

// Host Philox (Random123's definition), 32- and 64-bit words.
template <class U> struct HostPhilox;
template <> struct HostPhilox<uint32_t> {
  static constexpr uint32_t ka = 0x9E3779B9u, kb = 0xBB67AE85u, ra = 0xD2511F53u, rb = 0xCD9E8D57u;
  static uint32_t hi(uint32_t a, uint32_t b) { return static_cast<uint32_t>((uint64_t{a} * b) >> 32); }
};
template <> struct HostPhilox<uint64_t> {
  static constexpr uint64_t ka = 0x9E3779B97F4A7C15ull, kb = 0xBB67AE8584CAA73Bull, ra = 0xD2E7470EE14C6C93ull,
                            rb = 0xCA5A826395121157ull;
  static uint64_t hi(uint64_t a, uint64_t b) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
  }
};
template <class U> std::array<U, 4> host_philox(std::array<U, 4> c, U k0, U k1, int rounds = 10) {
  using P = HostPhilox<U>;
  for (int r = 0; r < rounds; ++r) {
    U p0 = c[0], p2 = c[2];
    c[0] = P::hi(P::rb, p2) ^ c[1] ^ k0;
    c[2] = P::hi(P::ra, p0) ^ c[3] ^ k1;
    c[1] = static_cast<U>(P::rb * p2);
    c[3] = static_cast<U>(P::ra * p0);
    k0 = static_cast<U>(k0 + P::ka);
    k1 = static_cast<U>(k1 + P::kb);
  }
  return c;
}

float host_uniform32(uint32_t w) {
  int32_t x = static_cast<int32_t>(w);
  x = x < 0 ? -x - 1 : x;
  return static_cast<float>(x) * 4.6566127342e-10f;
}
float host_uniform64(uint64_t w) {
  int64_t x = static_cast<int64_t>(w);
  x = x < 0 ? -x - 1 : x;
  return static_cast<float>(x) * 1.0842020432385337e-19f;
}

// Kernel: the four Philox words for counters (c0..c3 loaded) and a 64-bit seed.
template <class U> tritium::Kernel philox_kernel() {
  return tritium::kernel("philox_words", [](tl::ptr<U> ctr, tl::ptr<U> out, tl::i64 seed, int N) {
    auto i = tl::arange(0, N);
    auto w = tl::philox(seed, tl::load(ctr + i * 4), tl::load(ctr + i * 4 + 1), tl::load(ctr + i * 4 + 2),
                        tl::load(ctr + i * 4 + 3));
    for (int j = 0; j < 4; ++j) tl::store(out + i * 4 + j, w[j]);
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_random)

BOOST_AUTO_TEST_CASE(philox_known_answers) {
  tt::for_each_backend([&](const tt::Backend& be) {
    // Random123 kat_vectors: counters, key -> outputs (10 rounds).
    struct Kat32 { std::array<uint32_t, 4> c; uint32_t k0, k1; std::array<uint32_t, 4> out; };
    std::vector<Kat32> k32 = {
        {{0, 0, 0, 0}, 0, 0, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, 0xffffffffu, 0xffffffffu,
         {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, 0xa4093822u, 0x299f31d0u,
         {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    // The key is the seed's two halves; one launch per vector.
    for (size_t v = 0; v < k32.size(); ++v) {
      tt::host_vector<uint32_t> row(k32[v].c.begin(), k32[v].c.end()), out(4, 0xdeadbeefu);
      auto dc = be.upload<uint32_t>(row);
      auto dout = be.upload<uint32_t>(out);
      int64_t seed = static_cast<int64_t>(uint64_t{k32[v].k0} | (uint64_t{k32[v].k1} << 32));
      philox_kernel<uint32_t>()[{1}](dc.ptr(), dout.ptr(), seed, 1, be.options());
      auto got = dout.download();
      for (int j = 0; j < 4; ++j) BOOST_TEST(got[j] == k32[v].out[j], "4x32 vector " << v << " word " << j);
      auto host = host_philox<uint32_t>(k32[v].c, k32[v].k0, k32[v].k1);
      for (int j = 0; j < 4; ++j) BOOST_TEST(host[j] == k32[v].out[j], "host 4x32 vector " << v);
    }
    struct Kat64 { std::array<uint64_t, 4> c; uint64_t k0, k1; std::array<uint64_t, 4> out; };
    std::vector<Kat64> k64 = {
        {{0, 0, 0, 0}, 0, 0, {0x16554d9eca36314cull, 0xdb20fe9d672d0fdcull, 0xd7e772cee186176bull, 0x7e68b68aec7ba23bull}},
    };
    // tl::philox with 64-bit counters takes key (seed, 0): vector 0 has key (0, 0).
    for (const auto& k : k64) {
      tt::host_vector<uint64_t> row(k.c.begin(), k.c.end()), out(4, 0xdeadbeefull);
      auto dc = be.upload<uint64_t>(row);
      auto dout = be.upload<uint64_t>(out);
      philox_kernel<uint64_t>()[{1}](dc.ptr(), dout.ptr(), static_cast<int64_t>(k.k0), 1, be.options());
      auto got = dout.download();
      for (int j = 0; j < 4; ++j) BOOST_TEST(got[j] == k.out[j], "4x64 word " << j);
      auto host = host_philox<uint64_t>(k.c, k.k0, k.k1);
      for (int j = 0; j < 4; ++j) BOOST_TEST(host[j] == k.out[j], "host 4x64 word " << j);
    }
  });
}

// rand / randint / randn for i32 and i64 offsets, bit for bit against the host's Triton mapping.
BOOST_AUTO_TEST_CASE(triton_mapping_for_32_and_64_bit_offsets) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 3001;  // not a multiple of the block
    auto k32 = tritium::kernel("rand32", [](tl::ptr<uint32_t> ri, tl::ptr<float> u, tl::ptr<float> g, tl::i32 seed,
                                            tl::i32 n, int BLOCK) {
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto m = offs < n;
      tl::store(ri + offs, tl::randint(seed, offs), m);
      tl::store(u + offs, tl::rand(seed, offs), m);
      tl::store(g + offs, tl::randn(seed, offs), m);
    });
    auto k64 = tritium::kernel("rand64", [](tl::ptr<uint64_t> ri, tl::ptr<float> u, tl::i64 seed, tl::i64 base,
                                            tl::i32 n, int BLOCK) {
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto m = offs < n;
      auto o = base + offs.to(tl::int64);
      tl::store(ri + offs, tl::randint(seed, o), m);
      tl::store(u + offs, tl::rand(seed, o), m);
    });
    for (int32_t seed : {123, -7}) {
      auto ri = be.alloc_poisoned<uint32_t>(n);
      auto u = be.alloc_poisoned<float>(n), g = be.alloc_poisoned<float>(n);
      k32[{tritium::cdiv(n, 512)}](ri.ptr(), u.ptr(), g.ptr(), seed, n, 512, be.options());
      auto hri = ri.download();
      auto hu = u.download(), hg = g.download();
      uint64_t s = static_cast<uint64_t>(static_cast<int64_t>(seed));  // sign-extended, as Triton
      int bad_bits = 0, bad_u = 0;
      double max_gauss_err = 0;
      for (int i = 0; i < n; ++i) {
        auto w = host_philox<uint32_t>({static_cast<uint32_t>(i), 0, 0, 0}, static_cast<uint32_t>(s),
                                       static_cast<uint32_t>(s >> 32));
        bad_bits += hri[i] != w[0];
        bad_u += std::bit_cast<uint32_t>(hu[i]) != std::bit_cast<uint32_t>(host_uniform32(w[0]));
        double u1 = std::max(1.0e-7, static_cast<double>(host_uniform32(w[0])));
        double u2 = host_uniform32(w[1]);
        double ref = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
        double err = std::abs(hg[i] - ref) / (1 + std::abs(ref));
        if (!(err <= max_gauss_err)) max_gauss_err = std::isnan(err) ? INFINITY : err;  // NaN: the poison, never written
      }
      BOOST_TEST(bad_bits == 0, "randint, seed " << seed);
      BOOST_TEST(bad_u == 0, "rand, seed " << seed);
      BOOST_TEST(max_gauss_err < 2e-5, "randn, seed " << seed << ": " << max_gauss_err);
    }
    // 64-bit offsets past 2^32: Philox-4x64 with key (seed, 0).
    const int64_t seed = 0x123456789ll, base = (int64_t{1} << 33) + 5;
    auto ri = be.alloc_poisoned<uint64_t>(n);
    auto u = be.alloc_poisoned<float>(n);
    k64[{tritium::cdiv(n, 512)}](ri.ptr(), u.ptr(), seed, base, n, 512, be.options());
    auto hri = ri.download();
    auto hu = u.download();
    int bad_bits = 0, bad_u = 0;
    for (int i = 0; i < n; ++i) {
      auto w = host_philox<uint64_t>({static_cast<uint64_t>(base + i), 0, 0, 0}, static_cast<uint64_t>(seed), 0);
      bad_bits += hri[i] != w[0];
      bad_u += std::bit_cast<uint32_t>(hu[i]) != std::bit_cast<uint32_t>(host_uniform64(w[0]));
    }
    BOOST_TEST(bad_bits == 0, "randint, 64-bit offsets");
    BOOST_TEST(bad_u == 0, "rand, 64-bit offsets");
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  auto bad_counter = tritium::kernel("bad_counter", [](tl::ptr<float> out) {
    tl::store(out + tl::arange(0, 16), tl::rand(1, tl::arange(0, 16).to(tl::int16)));
  });
  tt::check_throws([&] { (void)bad_counter.ir(static_cast<float*>(nullptr)); },
                   {"tl::philox", "32- or 64-bit integers", "i16"}, "16-bit offsets");
  auto float_seed = tritium::kernel("float_seed", [](tl::ptr<float> out) {
    tl::store(out + tl::arange(0, 16), tl::rand(1.5f, tl::arange(0, 16)));
  });
  tt::check_throws([&] { (void)float_seed.ir(static_cast<float*>(nullptr)); }, {"the seed must be an integer"},
                   "float seed");
  auto mixed = tritium::kernel("mixed_counters", [](tl::ptr<float> out) {
    auto i = tl::arange(0, 16);
    auto w = tl::philox(1, i, i.to(tl::int64), i, i);
    tl::store(out + i, w[0].to(tl::float32));
  });
  tt::check_throws([&] { (void)mixed.ir(static_cast<float*>(nullptr)); }, {"counter 1 is i64", "same width"},
                   "mixed widths");
}

BOOST_AUTO_TEST_SUITE_END()
