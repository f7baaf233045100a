// Philox-4x32-10 inside Tritium kernels, with Triton's mapping (triton/language/random.py), so
// tl.rand(seed, offsets) in Triton and these functions give the same numbers for the same seed
// and offsets (offsets below 2^32):
//   counter = (c0, c1, c2, c3) = (low 32 bits of offset, high 32 bits, 0, 0), key = (seed low
//   32 bits, seed high 32 bits); uniform = the first output word as int32, negatives folded
//   (x < 0 ? -x - 1 : x), times 4.6566127342e-10 in f32; normal = Box-Muller on words 0 and 1.
// The trace-time functions below are for use inside any kernel (dropout, rand, randn...).
#pragma once
#include <array>
#include <cstdint>

#include "dsl/ops.h"
#include "runtime/tensor.h"

namespace tritium::ops::philox {

namespace tl = tritium::tl;

inline constexpr uint32_t kKeyA = 0x9E3779B9u, kKeyB = 0xBB67AE85u;      // Weyl key increments
inline constexpr uint32_t kRoundA = 0xD2511F53u, kRoundB = 0xCD9E8D57u;  // multipliers
inline constexpr int kRounds = 10;

// The Philox-4x32 rounds on u32 blocks (c0..c3) with a u32 key (k0, k1); 10 rounds by default.
std::array<tl::tensor, 4> philox4x32(tl::tensor c0, tl::tensor c1, tl::tensor c2, tl::tensor c3, tl::tensor k0,
                                     tl::tensor k1, int rounds = kRounds);
// The four words for the 64-bit counters `offset` (an i64 or u64 block) and a 64-bit seed (a
// scalar i64/u64): counter (offset lo, offset hi, 0, 0), key (seed lo, seed hi).
std::array<tl::tensor, 4> random_words(const tl::tensor& seed, const tl::tensor& offset);
// u32 word -> f32 in [0, 1), as Triton's uint_to_uniform_float.
tl::tensor uint_to_uniform_float(const tl::tensor& word);
// Box-Muller, as Triton's pair_uniform_to_normal: the first of the two normals.
tl::tensor uniform_pair_to_normal(const tl::tensor& u1, const tl::tensor& u2);

// Host-callable: runs the Philox kernel on counters [N, 4] (u32, contiguous) with key (k0, k1)
// and returns [N, 4] u32 output words. For known-answer tests.
runtime::Tensor philox4x32_10(const runtime::Tensor& counters, uint32_t k0, uint32_t k1);

}  // namespace tritium::ops::philox
