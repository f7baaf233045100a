#include <boost/test/unit_test.hpp>

#include <set>
#include <string>
#include <vector>

#include "common/hash.h"

using tritium::Hash128;
using tritium::hash_bytes;
using tritium::Hasher;

BOOST_AUTO_TEST_SUITE(test_hash)

BOOST_AUTO_TEST_CASE(distinct_inputs_give_distinct_hashes) {
  std::set<std::string> seen;
  std::vector<std::string> inputs = {"", std::string(1, '\0'), std::string(2, '\0'), "a", "b", "ab", "ba", "abc"};
  // Every length around the 32-byte stripe and 8-byte word boundaries, all-zero and patterned.
  for (int len = 1; len <= 130; ++len) {
    inputs.push_back(std::string(static_cast<size_t>(len), '\0'));
    inputs.push_back(std::string(static_cast<size_t>(len), 'x'));
  }
  for (int i = 0; i < 20000; ++i) inputs.push_back("kernel_" + std::to_string(i));
  std::set<std::string> unique_inputs(inputs.begin(), inputs.end());
  for (const auto& s : unique_inputs) seen.insert(hash_bytes(s.data(), s.size()).hex());
  BOOST_TEST(seen.size() == unique_inputs.size());
}

BOOST_AUTO_TEST_CASE(single_bit_flips_change_both_halves) {
  std::string base(100, 'q');
  Hash128 h0 = hash_bytes(base.data(), base.size());
  for (size_t bit = 0; bit < base.size() * 8; ++bit) {
    std::string s = base;
    s[bit / 8] = static_cast<char>(s[bit / 8] ^ (1 << (bit % 8)));
    Hash128 h = hash_bytes(s.data(), s.size());
    BOOST_TEST(h.lo != h0.lo);
    BOOST_TEST(h.hi != h0.hi);
  }
}

BOOST_AUTO_TEST_CASE(seed_changes_the_hash) {
  std::string s = "same bytes";
  BOOST_TEST(!(hash_bytes(s.data(), s.size(), 0) == hash_bytes(s.data(), s.size(), 1)));
  BOOST_TEST((hash_bytes(s.data(), s.size(), 7) == hash_bytes(s.data(), s.size(), 7)));
}

BOOST_AUTO_TEST_CASE(incremental_boundaries_matter) {
  BOOST_TEST(!(Hasher().add("ab").add("c").finish() == Hasher().add("a").add("bc").finish()));
  BOOST_TEST(!(Hasher().add("abc").finish() == Hasher().add("ab").add("c").finish()));
  BOOST_TEST(!(Hasher().add("").finish() == Hasher().finish()));
  BOOST_TEST(!(Hasher().add("").add("").finish() == Hasher().add("").finish()));
  // A number is not the same as a string of its eight bytes.
  uint64_t v = 0x0102030405060708ULL;
  std::string bytes(reinterpret_cast<const char*>(&v), 8);
  BOOST_TEST(!(Hasher().add(v).finish() == Hasher().add(bytes).finish()));
  BOOST_TEST(!(Hasher().add(uint64_t{1}).add(uint64_t{2}).finish() == Hasher().add(uint64_t{2}).add(uint64_t{1}).finish()));
  // Deterministic.
  BOOST_TEST((Hasher().add("ab").add(uint64_t{3}).finish() == Hasher().add("ab").add(uint64_t{3}).finish()));
  BOOST_TEST(!(Hasher(1).add("ab").finish() == Hasher(2).add("ab").finish()));
}

BOOST_AUTO_TEST_CASE(hex_format) {
  Hash128 h{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  BOOST_TEST(h.hex() == "fedcba98765432100123456789abcdef");
  BOOST_TEST(Hash128{}.hex() == std::string(32, '0'));
  std::string hex = hash_bytes("tritium", 7).hex();
  BOOST_TEST(hex.size() == 32u);
  BOOST_TEST(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
}

// Values name files in the on-disk cache: they must not change between builds or hosts.
// If this fails, the hash changed: bump jit::kDiskCacheFormatVersion along with these values.
BOOST_AUTO_TEST_CASE(stable_known_values) {
  BOOST_TEST(hash_bytes("", 0).hex() == "c3cda53d18d67106b00f2157b9b30fe5");
  BOOST_TEST(hash_bytes("tritium", 7).hex() == "e6cab8cee236778720db5013956d7a82");
  std::string long_input;
  for (int i = 0; i < 1000; ++i) long_input.push_back(static_cast<char>(i * 7 + 3));
  BOOST_TEST(hash_bytes(long_input.data(), long_input.size(), 42).hex() == "ad9b64442e54d9deb2c9c75b3b3a1b13");
  BOOST_TEST(Hasher().add("add").add(uint64_t{1024}).finish().hex() == "153c9c0065dca93274467e76bb7c5115");
  BOOST_TEST(tritium::hash64("tritium", 7) == 0x8634b594764f2d5bULL);
}

BOOST_AUTO_TEST_CASE(hash64_distinct_and_deterministic) {
  std::set<uint64_t> seen;
  for (uint64_t i = 0; i < 100000; ++i) seen.insert(tritium::hash64(&i, sizeof i));
  BOOST_TEST(seen.size() == 100000u);
  BOOST_TEST(tritium::hash64("abc", 3) == tritium::hash64("abc", 3));
  BOOST_TEST(tritium::hash64("abc", 3) != tritium::hash64("abd", 3));
}

BOOST_AUTO_TEST_SUITE_END()
