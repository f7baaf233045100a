// dropout and dropout_backward (docs/ops.md).
//
// One Philox-4x32-10 call (ops/random.h, the random-ops engineer's tl:: Philox built on
// tl::umulhi) gives four words, and each word decides one element, as PyTorch's fused dropout
// uses all four (one call per element spent ~80 % of the kernel's instructions on words it threw
// away: bf16 dropout was issue-bound on the GPU, issue 29). Elements go in groups of kGroup:
// element i (row-major index of the contiguous input) uses word (i / kGroup) % 4 of counter
// offset + (i / (4 kGroup)) kGroup + i % kGroup (key seed), so each of a program's four loads is
// kGroup contiguous elements and the mapping does not depend on the launch. It is kept when that
// word is >= threshold = round(p * 2^32); kept elements are multiplied by scale = 1 / (1 - p)
// (rounded to the compute type), the others are 0. The mask is never stored: the backward
// regenerates it from (seed, offset, index) with the same kernel.
#include <array>
#include <cmath>

#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/random.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;

constexpr int64_t kGroup = 1024;  // elements a word index covers; a program does 4 kGroup

Kernel& dropout_kernel() {
  static Kernel k = tritium::kernel(
      "dropout",
      [](P x, P out, tl::i64 n, tl::u64 seed, tl::u64 offset, tl::u32 threshold, tl::f64 scale, int ACC, int GROUP) {
        const DType acc_t = static_cast<DType>(ACC);
        auto pid = tl::program_id(0).to(tl::int64);
        auto j = tl::arange(0, GROUP);
        auto w = philox::random_words(seed, offset + (pid * GROUP + j).to(tl::uint64, true));
        // The four loads first, then the stores (no load after a store: straight-line PTX).
        std::array<tl::tensor, 4> offs, mask, v;
        for (int q = 0; q < 4; ++q) {
          offs[q] = pid * (4 * GROUP) + q * GROUP + j;
          mask[q] = offs[q] < n;
          v[q] = tl::load(x + offs[q], mask[q]);
          if (v[q].dtype() != acc_t) v[q] = v[q].to(acc_t);
        }
        for (int q = 0; q < 4; ++q)
          tl::store(out + offs[q], tl::where(w[q] >= threshold, v[q] * scale.to(acc_t), 0), mask[q]);
      },
      {"x", "out", "n", "seed", "offset", "threshold", "scale", "ACC", "GROUP"});
  return k;
}

// The counters a draw of n elements uses (each program kGroup of them).
uint64_t counters_for(int64_t n) { return static_cast<uint64_t>(cdiv(n, 4 * kGroup) * kGroup); }

Tensor apply(const Tensor& x_in, const DropoutState& s) {
  Tensor x = contiguous(x_in);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  const int64_t n = x.numel();
  if (n == 0) return out;
  double t = std::round(s.p * 4294967296.0);
  uint32_t threshold = t >= 4294967295.0 ? 4294967295u : static_cast<uint32_t>(t);
  double scale = 1.0 / (1.0 - s.p);  // p < 1 here
  dropout_kernel()[{cdiv(n, 4 * kGroup)}](x, out, n, s.seed, s.offset, threshold, scale,
                                          static_cast<int>(detail::math_type(x.dtype())), static_cast<int>(kGroup));
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
    Generator::Stream r = gen.reserve(counters_for(x.numel()));
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
