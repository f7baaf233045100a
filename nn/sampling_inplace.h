// The in-place samplers on tensors (x.normal_(), x.exponential_(), ... in PyTorch; free functions
// here, as runtime/tensor.h is not theirs to grow) with the version-counter and autograd rules of
// every in-place op (nn/inplace_ops.cpp): each samples into a fresh tensor (ops/sampling.h) and
// writes it with Tensor::copy_, so a leaf that requires grad, an inference tensor outside
// inference mode or a tensor with overlapping elements is refused with PyTorch's message, the
// storage's version counter is bumped, and a recorded history gets no gradient through the
// overwritten values. Also brings the sampling functions and seeds into namespace tritium.
#pragma once
#include <optional>

#include "ops/rng_state.h"
#include "ops/sampling.h"

namespace tritium {

using runtime::Tensor;

using ops::bernoulli;
using ops::ForkRng;
using ops::get_rng_state;
using ops::initial_seed;
using ops::manual_seed;
using ops::multinomial;
using ops::normal;
using ops::poisson;
using ops::rand_like;
using ops::randint_like;
using ops::randn_like;
using ops::randperm;
using ops::seed;
using ops::set_rng_state;

Tensor& uniform_(Tensor& x, double from = 0.0, double to = 1.0, ops::Generator& gen = ops::default_generator());
Tensor& normal_(Tensor& x, double mean = 0.0, double std = 1.0, ops::Generator& gen = ops::default_generator());
Tensor& exponential_(Tensor& x, double lambd = 1.0, ops::Generator& gen = ops::default_generator());
Tensor& geometric_(Tensor& x, double p, ops::Generator& gen = ops::default_generator());
Tensor& log_normal_(Tensor& x, double mean = 1.0, double std = 2.0, ops::Generator& gen = ops::default_generator());
Tensor& cauchy_(Tensor& x, double median = 0.0, double sigma = 1.0, ops::Generator& gen = ops::default_generator());
Tensor& bernoulli_(Tensor& x, double p = 0.5, ops::Generator& gen = ops::default_generator());
Tensor& bernoulli_(Tensor& x, const Tensor& p, ops::Generator& gen = ops::default_generator());
Tensor& random_(Tensor& x, ops::Generator& gen = ops::default_generator());
Tensor& random_(Tensor& x, int64_t to, ops::Generator& gen = ops::default_generator());
Tensor& random_(Tensor& x, int64_t from, std::optional<int64_t> to, ops::Generator& gen = ops::default_generator());

}  // namespace tritium
