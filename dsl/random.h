// Triton's triton.language.random: Philox-4x32-10 (32-bit offsets) and Philox-4x64-10 (64-bit
// offsets), with Triton's mapping, so the same seed and offsets give the same bits as Triton:
//   counter = (offset, 0, 0, 0) in the offset's width; key = (seed low, seed high 32 bits) for
//   32-bit offsets, (seed, 0) for 64-bit ones; the seed is converted to u64 first (an i32 seed
//   sign-extends).
//   rand: the first word as a signed integer, negatives folded (x < 0 ? -x - 1 : x), times
//   4.6566127342e-10 (32-bit) or 1.0842020432385337e-19 (64-bit): a float in [0, 1).
//   randn: Box-Muller on the first two uniforms (u1 clamped to >= 1e-7).
#pragma once
#include <array>

#include "dsl/ops.h"

namespace tritium::tl {

#define TL_LOC loc_t loc = loc_t::current()

inline constexpr int kPhiloxRounds = 10;

// The Philox rounds on four counter blocks (all of one integer width, 32 or 64 bits) with the
// given seed: the four output words, unsigned.
std::array<tensor, 4> philox(operand seed, operand c0, operand c1, operand c2, operand c3,
                             int n_rounds = kPhiloxRounds, TL_LOC);
// Random integers for `offset` (a block of 32- or 64-bit integers): one word, or four.
tensor randint(operand seed, operand offset, int n_rounds = kPhiloxRounds, TL_LOC);
std::array<tensor, 4> randint4x(operand seed, operand offset, int n_rounds = kPhiloxRounds, TL_LOC);
// Uniform floats in [0, 1) (f32).
tensor rand(operand seed, operand offset, int n_rounds = kPhiloxRounds, TL_LOC);
std::array<tensor, 4> rand4x(operand seed, operand offset, int n_rounds = kPhiloxRounds, TL_LOC);
// Standard normal floats (f32).
tensor randn(operand seed, operand offset, int n_rounds = kPhiloxRounds, TL_LOC);
std::array<tensor, 4> randn4x(operand seed, operand offset, int n_rounds = kPhiloxRounds, TL_LOC);

// A random word (u32 or u64) -> a float in [0, 1), as Triton's uint_to_uniform_float.
tensor uint_to_uniform_float(const tensor& word, TL_LOC);
// Box-Muller: two uniforms -> two standard normals (Triton's pair_uniform_to_normal).
std::array<tensor, 2> pair_uniform_to_normal(const tensor& u1, const tensor& u2, TL_LOC);

#undef TL_LOC

}  // namespace tritium::tl
