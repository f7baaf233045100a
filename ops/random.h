// Philox-4x32-10 inside Tritium kernels, with Triton's mapping (triton/language/random.py), so
// tl.rand(seed, offsets) in Triton and these functions give the same numbers for the same seed
// and offsets (offsets below 2^32):
//   counter = (c0, c1, c2, c3) = (low 32 bits of offset, high 32 bits, 0, 0), key = (seed low
//   32 bits, seed high 32 bits); uniform = the first output word as int32, negatives folded
//   (x < 0 ? -x - 1 : x), times 4.6566127342e-10 in f32; normal = Box-Muller on words 0 and 1.
// The rounds themselves are tl::philox (dsl/random.h); random_words is the op library's
// counter layout for 64-bit element offsets.
#pragma once
#include <array>
#include <cstdint>

#include "dsl/ops.h"
#include "dsl/random.h"
#include "runtime/tensor.h"

namespace tritium::ops::philox {

namespace tl = tritium::tl;

// The four words for the 64-bit counters `offset` (an i64 or u64 block) and a 64-bit seed (a
// scalar i64/u64): counter (offset lo, offset hi, 0, 0), key (seed lo, seed hi).
std::array<tl::tensor, 4> random_words(const tl::tensor& seed, const tl::tensor& offset);
// Host-callable: runs the Philox kernel on counters [N, 4] (u32, contiguous) with key (k0, k1)
// and returns [N, 4] u32 output words. For known-answer tests.
runtime::Tensor philox4x32_10(const runtime::Tensor& counters, uint32_t k0, uint32_t k1);
// As random_words, with counter word 2 = `subsequence` (a u32 scalar or block): the further
// independent draws of one element (a rejection sampler's tries) use subsequences 1, 2, ...
std::array<tl::tensor, 4> random_words(const tl::tensor& seed, const tl::tensor& offset, const tl::tensor& subsequence);

// The op library's conversions of the words of one counter (used by every sampler, so that one
// counter gives the same value whatever the op):
// a uniform in [0, 1) in dtype d's compute type (f32 as Triton from word 0, clamped below 1 for
// f16/bf16; f64 from 53 bits of words 0 and 1);
tl::tensor uniform01(const std::array<tl::tensor, 4>& w, DType d);
// a standard normal (f32 Box-Muller on words 0 and 1 as Triton's randn; f64 from all four words);
tl::tensor standard_normal(const std::array<tl::tensor, 4>& w, DType d);
// f64 uniforms from the 53 high bits of (hi, lo): in [0, 1), and in (0, 1) (never 0, so its log
// is finite).
tl::tensor uniform_f64(const tl::tensor& hi, const tl::tensor& lo);
tl::tensor open_uniform_f64(const tl::tensor& hi, const tl::tensor& lo);

}  // namespace tritium::ops::philox
