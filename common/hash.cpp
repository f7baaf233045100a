#include "common/hash.h"

#include <bit>
#include <cstring>

namespace tritium {
namespace {

// Odd 64-bit primes (the xxHash64 set): multiplication by an odd constant is a bijection,
// so no input word can collapse a lane.
constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kP3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ULL;

constexpr size_t kStripe = 32;  // four 64-bit lanes

inline uint64_t read64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  // Values name files on disk: read little-endian everywhere.
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

inline uint64_t round_lane(uint64_t acc, uint64_t input) {
  acc += input * kP2;
  acc = std::rotl(acc, 31);
  return acc * kP1;
}

// MurmurHash3's 64-bit finaliser: full avalanche of one word.
inline uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDULL;
  k ^= k >> 33;
  k *= 0xC4CEB93FE53A5EC3ULL;
  k ^= k >> 33;
  return k;
}

struct Lanes {
  uint64_t v[4];
};

// Bulk loop over whole stripes; the final partial stripe is zero-padded (the length,
// mixed in by the finalisers, tells "ab" from "ab\0").
Lanes absorb(const void* data, size_t size, uint64_t seed) {
  Lanes s{{seed + kP1 + kP2, seed + kP2, seed, seed - kP1}};
  const auto* p = static_cast<const unsigned char*>(data);
  size_t whole = size / kStripe;
  for (size_t i = 0; i < whole; ++i, p += kStripe) {
    s.v[0] = round_lane(s.v[0], read64(p));
    s.v[1] = round_lane(s.v[1], read64(p + 8));
    s.v[2] = round_lane(s.v[2], read64(p + 16));
    s.v[3] = round_lane(s.v[3], read64(p + 24));
  }
  size_t rest = size % kStripe;
  if (rest) {
    unsigned char tail[kStripe] = {};
    std::memcpy(tail, p, rest);
    s.v[0] = round_lane(s.v[0], read64(tail));
    s.v[1] = round_lane(s.v[1], read64(tail + 8));
    s.v[2] = round_lane(s.v[2], read64(tail + 16));
    s.v[3] = round_lane(s.v[3], read64(tail + 24));
  }
  return s;
}

}  // namespace

Hash128 hash_bytes(const void* data, size_t size, uint64_t seed) {
  Lanes s = absorb(data, size, seed);
  uint64_t len = static_cast<uint64_t>(size);
  // Fold four lanes into two with different rotations, then cross-mix the halves as
  // MurmurHash3 x64-128 does so every input bit reaches both output words.
  uint64_t h1 = s.v[0] + std::rotl(s.v[2], 27) + len * kP3;
  uint64_t h2 = s.v[1] + std::rotl(s.v[3], 33) + (len ^ kP4) * kP5;
  h1 += h2;
  h2 += h1;
  h1 = fmix64(h1);
  h2 = fmix64(h2);
  h1 += h2;
  h2 += h1;
  return {h1, h2};
}

uint64_t hash64(const void* data, size_t size) {
  Lanes s = absorb(data, size, 0);
  uint64_t h = std::rotl(s.v[0], 1) + std::rotl(s.v[1], 7) + std::rotl(s.v[2], 12) + std::rotl(s.v[3], 18);
  h += static_cast<uint64_t>(size) * kP5;
  return fmix64(h);
}

std::string Hash128::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = kDigits[(hi >> (4 * i)) & 0xF];
    out[31 - i] = kDigits[(lo >> (4 * i)) & 0xF];
  }
  return out;
}

namespace {
void append_u64(std::string& out, uint64_t v) {
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  out.append(bytes, 8);
}
}  // namespace

Hasher& Hasher::add(std::string_view bytes) {
  buffer_.push_back('s');
  append_u64(buffer_, bytes.size());
  buffer_.append(bytes);
  return *this;
}

Hasher& Hasher::add(uint64_t value) {
  buffer_.push_back('u');
  append_u64(buffer_, value);
  return *this;
}

Hasher& Hasher::add(const Hash128& value) {
  buffer_.push_back('h');
  append_u64(buffer_, value.lo);
  append_u64(buffer_, value.hi);
  return *this;
}

Hash128 Hasher::finish() const { return hash_bytes(buffer_.data(), buffer_.size(), seed_); }

}  // namespace tritium
