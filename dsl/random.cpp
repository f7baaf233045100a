#include "dsl/random.h"

#include "common/error.h"
#include "dsl/semantic.h"

namespace tritium::tl {
namespace {

// Weyl key increments and round multipliers (Random123's Philox constants).
constexpr uint64_t kKeyA32 = 0x9E3779B9u, kKeyB32 = 0xBB67AE85u;
constexpr uint64_t kRoundA32 = 0xD2511F53u, kRoundB32 = 0xCD9E8D57u;
constexpr uint64_t kKeyA64 = 0x9E3779B97F4A7C15ull, kKeyB64 = 0xBB67AE8584CAA73Bull;
constexpr uint64_t kRoundA64 = 0xD2E7470EE14C6C93ull, kRoundB64 = 0xCA5A826395121157ull;

tensor as_tensor(const operand& o, const char* op) { return tensor(dsl::operand_value(op, o)); }

// Converts a counter block to the unsigned type of its width (bitcast, as Triton does).
tensor to_unsigned(const tensor& c, DType u) {
  return c.dtype() == u ? c : c.to(u, /*bitcast=*/true);
}

}  // namespace

std::array<tensor, 4> philox(operand seed_o, operand c0_o, operand c1_o, operand c2_o, operand c3_o, int n_rounds,
                             loc_t loc) {
  SourceLoc where = SourceLoc::from(loc);
  if (n_rounds < 1) fail(where, "tl::philox: n_rounds must be at least 1, got {}", n_rounds);
  tensor seed = as_tensor(seed_o, "philox"), c0 = as_tensor(c0_o, "philox");
  if (!is_int(seed.dtype()) || seed.dtype() == DType::i1)
    fail(where, "tl::philox: the seed must be an integer, got {}", dtype_name(seed.dtype()));
  const int bits = dtype_bits(c0.dtype());
  if (!is_int(c0.dtype()) || (bits != 32 && bits != 64))
    fail(where, "tl::philox: counters must be 32- or 64-bit integers, got {}", dtype_name(c0.dtype()));
  const DType u = bits == 32 ? DType::u32 : DType::u64;
  std::array<tensor, 4> c = {to_unsigned(c0, u), as_tensor(c1_o, "philox"), as_tensor(c2_o, "philox"),
                             as_tensor(c3_o, "philox")};
  for (int i = 1; i < 4; ++i) {
    if (dtype_bits(c[i].dtype()) != bits || !is_int(c[i].dtype()))
      fail(where, "tl::philox: counter {} is {} but counter 0 is {}: all four need the same width", i,
           dtype_name(c[i].dtype()), dtype_name(c0.dtype()));
    c[i] = to_unsigned(c[i], u);
  }
  tensor s = seed.to(uint64);
  tensor k0 = bits == 32 ? (s & 0xffffffffull).to(uint32) : s;
  tensor k1 = bits == 32 ? (s >> 32).to(uint32) : zeros({}, uint64);
  const uint64_t ka = bits == 32 ? kKeyA32 : kKeyA64, kb = bits == 32 ? kKeyB32 : kKeyB64;
  const uint64_t ra = bits == 32 ? kRoundA32 : kRoundA64, rb = bits == 32 ? kRoundB32 : kRoundB64;
  tensor A = full({}, ra, u), B = full({}, rb, u), KA = full({}, ka, u), KB = full({}, kb, u);
  for (int r = 0; r < n_rounds; ++r) {
    tensor p0 = c[0], p2 = c[2];
    c[0] = umulhi(B, p2) ^ c[1] ^ k0;
    c[2] = umulhi(A, p0) ^ c[3] ^ k1;
    c[1] = B * p2;
    c[3] = A * p0;
    if (r + 1 < n_rounds) {  // the key after the last round is never used
      k0 = k0 + KA;
      k1 = k1 + KB;
    }
  }
  return c;
}

std::array<tensor, 4> randint4x(operand seed, operand offset, int n_rounds, loc_t loc) {
  tensor off = as_tensor(offset, "randint4x");
  tensor zero = off * 0;
  return philox(seed, off, zero, zero, zero, n_rounds, loc);
}

tensor randint(operand seed, operand offset, int n_rounds, loc_t loc) {
  return randint4x(seed, offset, n_rounds, loc)[0];
}

tensor uint_to_uniform_float(const tensor& word, loc_t) {
  const bool wide = dtype_bits(word.dtype()) == 64;
  tensor x = word.to(wide ? int64 : int32, /*bitcast=*/true);
  x = where(x < 0, -x - 1, x);
  // The largest scales with (INT_MAX * scale) < 1 in f32.
  return x.to(float32) * (wide ? 1.0842020432385337e-19f : 4.6566127342e-10f);
}

std::array<tensor, 2> pair_uniform_to_normal(const tensor& u1, const tensor& u2, loc_t) {
  tensor v1 = maximum(1.0e-7f, u1);
  tensor th = 6.283185307179586f * u2;
  tensor r = sqrt(-2.0f * log(v1));
  return {r * cos(th), r * sin(th)};
}

tensor rand(operand seed, operand offset, int n_rounds, loc_t loc) {
  return uint_to_uniform_float(randint(seed, offset, n_rounds, loc), loc);
}

std::array<tensor, 4> rand4x(operand seed, operand offset, int n_rounds, loc_t loc) {
  auto w = randint4x(seed, offset, n_rounds, loc);
  return {uint_to_uniform_float(w[0], loc), uint_to_uniform_float(w[1], loc), uint_to_uniform_float(w[2], loc),
          uint_to_uniform_float(w[3], loc)};
}

tensor randn(operand seed, operand offset, int n_rounds, loc_t loc) {
  auto w = randint4x(seed, offset, n_rounds, loc);
  return pair_uniform_to_normal(uint_to_uniform_float(w[0], loc), uint_to_uniform_float(w[1], loc), loc)[0];
}

std::array<tensor, 4> randn4x(operand seed, operand offset, int n_rounds, loc_t loc) {
  auto u = rand4x(seed, offset, n_rounds, loc);
  auto a = pair_uniform_to_normal(u[0], u[1], loc), b = pair_uniform_to_normal(u[2], u[3], loc);
  return {a[0], a[1], b[0], b[1]};
}

}  // namespace tritium::tl
