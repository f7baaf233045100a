// Non-cryptographic hashing for cache keys and hot-path map keys. The 128-bit hash is ours
// (xxHash64-style four-lane bulk loop, MurmurHash3-style 128-bit finalisation); its values are
// stable across runs and hosts, because they name files in the on-disk kernel cache.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace tritium {

struct Hash128 {
  uint64_t lo = 0;
  uint64_t hi = 0;

  bool operator==(const Hash128&) const = default;
  // 32 lowercase hex characters, most significant first (hi, then lo).
  std::string hex() const;
};

Hash128 hash_bytes(const void* data, size_t size, uint64_t seed = 0);
inline Hash128 hash_bytes(std::string_view s, uint64_t seed = 0) { return hash_bytes(s.data(), s.size(), seed); }

// 64-bit variant for in-memory map keys: same bulk loop, cheaper finalisation.
uint64_t hash64(const void* data, size_t size);

// Incremental hashing of a sequence of pieces. Each piece is tagged with its kind and length,
// so the boundaries are part of the input: add("ab").add("c") != add("a").add("bc"), and
// add(uint64_t) never equals add() of the same eight bytes as a string.
class Hasher {
 public:
  explicit Hasher(uint64_t seed = 0) : seed_(seed) {}
  Hasher& add(std::string_view bytes);
  Hasher& add(uint64_t value);
  Hasher& add(const Hash128& value);
  Hash128 finish() const;

 private:
  std::string buffer_;  // tagged pieces; hashed once in finish()
  uint64_t seed_;
};

}  // namespace tritium

template <>
struct std::hash<tritium::Hash128> {
  size_t operator()(const tritium::Hash128& h) const noexcept { return static_cast<size_t>(h.lo); }
};
