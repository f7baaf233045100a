// Random sampling ops (torch's sampling functions and in-place samplers) as Tritium kernels.
// Every draw reserves counters from a Generator (ops/ops.h) and element e of the draw uses the
// Philox-4x32-10 counter (offset + e) with the generator's seed as key (ops/random.h); samplers
// that need more randomness per element take it from counter word 2 (the subsequence), never
// from a neighbour's counter. So the numbers depend on the seed, the offset and the element's
// row-major index only: not on the block size, num_warps or the backend (docs/ops.md, "Random
// sampling", has each op's layout). These are the raw ops: nn/sampling_inplace.h has the in-place
// samplers on tensors with autograd's checks and version counters.
#pragma once
#include <cstdint>
#include <optional>

#include "ops/ops.h"

namespace tritium::ops {

// torch.rand_like / randn_like / randint_like: x's shape, dtype and device (randint_like in
// [0, high) or [low, high)). The contents of x are not read.
Tensor rand_like(const Tensor& x, Generator& gen = default_generator());
Tensor randn_like(const Tensor& x, Generator& gen = default_generator());
Tensor randint_like(const Tensor& x, int64_t high, Generator& gen = default_generator());
Tensor randint_like(const Tensor& x, int64_t low, int64_t high, Generator& gen = default_generator());

// torch.normal's four overloads: mean and std tensors broadcast together (the result has their
// promoted float dtype); a float for either takes the other's shape; both floats need a size.
// std >= 0 everywhere (checked; a tensor std is read back to check it).
Tensor normal(const Tensor& mean, const Tensor& std, Generator& gen = default_generator());
Tensor normal(const Tensor& mean, double std = 1.0, Generator& gen = default_generator());
Tensor normal(double mean, const Tensor& std, Generator& gen = default_generator());
Tensor normal(double mean, double std, const Shape& size, Generator& gen = default_generator(),
              DType dtype = DType::f32, Device device = default_device());

// torch.bernoulli(p): 1 with probability p[i] (p a float tensor in [0, 1], checked), in p's dtype;
// torch.bernoulli(x, p): x's shape and dtype, probability p for every element.
Tensor bernoulli(const Tensor& p, Generator& gen = default_generator());
Tensor bernoulli(const Tensor& x, double p, Generator& gen = default_generator());

// torch.poisson(rates): Poisson(rate[i]) counts in the rates' float dtype (rates >= 0, checked).
// Rates below 10 by inversion, larger ones by Hormann's PTRS (transformed rejection with
// squeeze): exact for every rate, no Gaussian approximation.
Tensor poisson(const Tensor& rates, Generator& gen = default_generator());

// torch.multinomial(probs, num_samples, replacement): probs a 1-D [C] or 2-D [R, C] float
// tensor of non-negative finite weights (rows need not sum to 1; a zero row is an error); i64
// category indices [num_samples] or [R, num_samples]. Without replacement the samples of a row
// are distinct; categories of weight 0 come only after every positive one (as PyTorch).
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false,
                   Generator& gen = default_generator());

// torch.randperm(n): a uniformly random permutation of 0..n-1 (i64 by default; any integer
// dtype that holds n - 1, or f16/bf16/f32/f64 as PyTorch allows).
Tensor randperm(int64_t n, Generator& gen = default_generator(), DType dtype = DType::i64,
                Device device = default_device());

// The in-place samplers on raw tensors (any strides; f16/bf16/f32/f64 unless said), with
// PyTorch's argument checks. They write x's storage and do nothing else: nn/sampling_inplace.h
// has the versions that bump the version counter and respect autograd.
void normal_(Tensor& x, double mean = 0.0, double std = 1.0, Generator& gen = default_generator());
void exponential_(Tensor& x, double lambd = 1.0, Generator& gen = default_generator());
void geometric_(Tensor& x, double p, Generator& gen = default_generator());          // any dtype; values >= 1
void log_normal_(Tensor& x, double mean = 1.0, double std = 2.0, Generator& gen = default_generator());
void cauchy_(Tensor& x, double median = 0.0, double sigma = 1.0, Generator& gen = default_generator());
void bernoulli_(Tensor& x, double p = 0.5, Generator& gen = default_generator());    // any dtype
void bernoulli_(Tensor& x, const Tensor& p, Generator& gen = default_generator());   // p broadcast to x
// random_(): integers in [0, 2^mantissa digits] for floats, [0, max] for integer dtypes
// (bool: {0, 1}); random_(to): [0, to); random_(from, to): [from, to) (to = nullopt: up to the
// dtype's max as above).
void random_(Tensor& x, Generator& gen = default_generator());
void random_(Tensor& x, int64_t to, Generator& gen = default_generator());
void random_(Tensor& x, int64_t from, std::optional<int64_t> to, Generator& gen = default_generator());

}  // namespace tritium::ops
