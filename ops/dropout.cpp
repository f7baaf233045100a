// dropout and dropout_backward (docs/ops.md).
//
// Element i (row-major index of the contiguous input) is kept when the first Philox-4x32-10 word
// for counter (offset + i) and key seed (ops/random.h, the random-ops engineer's tl:: Philox
// built on tl::umulhi) is >= threshold = round(p * 2^32); kept elements are multiplied by
// scale = 1 / (1 - p) (rounded to the compute type), the others are 0. The mask is never
// stored: the backward regenerates it from (seed, offset, index) with the same kernel.
#include <cmath>

#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/random.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;

Kernel& dropout_kernel() {
  static Kernel k = tritium::kernel(
      "dropout",
      [](P x, P out, tl::i64 n, tl::u64 seed, tl::u64 offset, tl::u32 threshold, tl::f64 scale, int ACC, int BLOCK) {
        const DType acc_t = static_cast<DType>(ACC);
        auto offs = tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK);
        auto mask = offs < n;
        auto w = philox::random_words(seed, offset + offs.to(tl::uint64, true));
        auto keep = w[0] >= threshold;
        auto v = tl::load(x + offs, mask);
        if (v.dtype() != acc_t) v = v.to(acc_t);
        tl::store(out + offs, tl::where(keep, v * scale.to(acc_t), 0), mask);
      },
      {"x", "out", "n", "seed", "offset", "threshold", "scale", "ACC", "BLOCK"});
  return k;
}

Tensor apply(const Tensor& x_in, const DropoutState& s) {
  Tensor x = contiguous(x_in);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  const int64_t n = x.numel();
  if (n == 0) return out;
  double t = std::round(s.p * 4294967296.0);
  uint32_t threshold = t >= 4294967295.0 ? 4294967295u : static_cast<uint32_t>(t);
  double scale = 1.0 / (1.0 - s.p);  // p < 1 here
  const int64_t block = detail::default_block(n);
  dropout_kernel()[{cdiv(n, block)}](x, out, n, s.seed, s.offset, threshold, scale,
                                     static_cast<int>(detail::math_type(x.dtype())), static_cast<int>(block));
  return out;
}

}  // namespace

Tensor dropout(const Tensor& x, double p, Generator& gen, DropoutState* state) {
  detail::check_tensors("dropout", {&x});
  if (!(p >= 0 && p <= 1)) fail("dropout: probability has to be between 0 and 1, but got {}", p);
  if (!is_float(x.dtype())) fail("dropout: expected a floating-point tensor, got {}", dtype_name(x.dtype()));
  DropoutState s;
  s.p = p;
  if (p > 0 && p < 1) {
    Generator::Stream r = gen.reserve(static_cast<uint64_t>(x.numel()));
    s.seed = r.seed;
    s.offset = r.offset;
  }
  if (state) *state = s;
  if (p == 0) return clone(x);
  if (p == 1) return zeros(x.shape(), x.dtype(), x.device());
  return apply(x, s);
}

Tensor dropout_backward(const Tensor& grad, const DropoutState& state) {
  detail::check_tensors("dropout_backward", {&grad});
  if (!(state.p >= 0 && state.p <= 1)) fail("dropout_backward: probability has to be between 0 and 1, but got {}", state.p);
  if (state.p == 0) return clone(grad);
  if (state.p == 1) return zeros(grad.shape(), grad.dtype(), grad.device());
  return apply(grad, state);
}

}  // namespace tritium::ops
