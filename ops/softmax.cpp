// softmax, log_softmax and their backwards over any dim (docs/ops.md).
//
// The input is made contiguous (ops::contiguous: a copy only for strided inputs) and viewed as
// (O, R, I) around the softmax dim (R). One kernel, two variants, as the reductions:
//  - I == 1 (the last dim): a program handles T0 rows of a [T0, T1] block: several rows when a
//    row fits one warp's 16-byte lanes, else one (with warps for 32 bytes a thread). Rows that
//    fit one block (R <= 4096) are loaded once: max, exp, sum and the store use the registers;
//    longer rows loop over blocks (a pass for the max, one for the sum, one for the output).
//  - I > 1: a program handles a [T0 (along R), T1 (along I)] block, reducing along axis 0.
// Numerically stable: exp(x - max). f16/bf16 compute in f32; the output has the input's dtype.
#include <algorithm>
#include <cmath>
#include <limits>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/norm_loss_kernels.h"
#include "ops/reduce_plan.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;
using detail::shape_str;

enum class Mode : int { softmax, log_softmax, softmax_bw, log_softmax_bw };

constexpr int64_t kMaxBlock = 4096;

}  // namespace

// a: x (forward) or grad (backward); b: y (backward; unused forward).
Kernel& detail::softmax_kernel() {
  static Kernel k = tritium::kernel(
      "softmax",
      [](P a, P b, P out, tl::i64 O, tl::i64 R, tl::i64 I, int MODE, int ACC, bool INNER, bool ONE, int T0, int T1) {
        const Mode mode = static_cast<Mode>(MODE);
        const DType acc_t = static_cast<DType>(ACC);
        const int axis = INNER ? 0 : 1;
        const int RB = INNER ? T0 : T1;
        const double inf = std::numeric_limits<double>::infinity();
        auto pid = tl::program_id(0).to(tl::int64);
        tl::tensor base, kmask, sr;
        if (!INNER) {
          auto o = pid * T0 + tl::arange(0, T0);
          kmask = (o < O)(tl::_, tl::None);
          base = (o * R)(tl::_, tl::None);
        } else {
          auto nib = tl::cdiv(I, T1);
          auto o = pid / nib;
          auto i = (pid % nib) * T1 + tl::arange(0, T1);
          kmask = (i < I)(tl::None, tl::_);
          base = o * R * I + i(tl::None, tl::_);
        }
        // Offsets and mask of the block starting at r0.
        auto block = [&](const tl::tensor& r0) {
          auto r = r0 + tl::arange(0, RB);
          auto r2 = INNER ? r(tl::_, tl::None) : r(tl::None, tl::_);
          auto off = base + (INNER ? r2 * I : r2);
          return std::pair<tl::tensor, tl::tensor>(off, kmask && (r2 < R));
        };
        auto load = [&](P p, const tl::tensor& off, const tl::tensor& m) {
          auto v = tl::load(p + off, m, 0);
          return v.dtype() == acc_t ? v : v.to(acc_t);
        };
        auto zero = tl::zeros({}, tl::int64);

        if (mode == Mode::softmax || mode == Mode::log_softmax) {
          auto finish = [&](const tl::tensor& v, const tl::tensor& M, const tl::tensor& S) {
            return mode == Mode::softmax ? tl::exp(v - M) / S : (v - M) - tl::log(S);
          };
          if (ONE) {
            auto [off, m] = block(zero);
            auto v = tl::where(m, load(a, off, m), -inf);
            auto M = tl::max(v, axis, true);
            auto e = tl::exp(v - M);
            auto S = tl::sum(e, axis, true);
            tl::store(out + off, mode == Mode::softmax ? e / S : (v - M) - tl::log(S), m);
          } else {
            auto M = tl::full(INNER ? ir::Shape{1, T1} : ir::Shape{T0, 1}, -inf, acc_t);
            for (auto r0 : tl::range(0, R, RB)) {
              auto [off, m] = block(r0);
              M = tl::maximum(M, tl::max(tl::where(m, load(a, off, m), -inf), axis, true));
            }
            auto S = tl::zeros(INNER ? ir::Shape{1, T1} : ir::Shape{T0, 1}, acc_t);
            for (auto r0 : tl::range(0, R, RB)) {
              auto [off, m] = block(r0);
              S = S + tl::sum(tl::exp(tl::where(m, load(a, off, m), -inf) - M), axis, true);
            }
            for (auto r0 : tl::range(0, R, RB)) {
              auto [off, m] = block(r0);
              tl::store(out + off, finish(load(a, off, m), M, S), m);
            }
          }
          return;
        }
        // Backward: softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g).
        const bool sm = mode == Mode::softmax_bw;
        if (ONE) {
          auto [off, m] = block(zero);
          auto g = load(a, off, m), y = load(b, off, m);
          auto D = tl::sum(sm ? g * y : g, axis, true);
          tl::store(out + off, sm ? y * (g - D) : g - tl::exp(y) * D, m);
        } else {
          auto D = tl::zeros(INNER ? ir::Shape{1, T1} : ir::Shape{T0, 1}, acc_t);
          for (auto r0 : tl::range(0, R, RB)) {
            auto [off, m] = block(r0);
            auto g = load(a, off, m);
            D = D + tl::sum(sm ? g * load(b, off, m) : g, axis, true);
          }
          for (auto r0 : tl::range(0, R, RB)) {
            auto [off, m] = block(r0);
            auto g = load(a, off, m), y = load(b, off, m);
            tl::store(out + off, sm ? y * (g - D) : g - tl::exp(y) * D, m);
          }
        }
      });
  return k;
}

namespace {

Tensor run(const char* op, Mode mode, const Tensor& a_in, const Tensor* b_in, int dim) {
  std::vector<const Tensor*> ts{&a_in};
  if (b_in) ts.push_back(b_in);
  detail::check_tensors(op, ts);
  if (b_in && b_in->shape() != a_in.shape())
    fail("{}: grad shape {} differs from output shape {}", op, shape_str(a_in.shape()), shape_str(b_in->shape()));
  DType dt = a_in.dtype();
  if (b_in) dt = detail::promote_types(op, dt, b_in->dtype());
  if (!is_float(dt)) fail("{}: expected a floating-point tensor, got {}", op, dtype_name(dt));
  const int d = detail::normalize_dim(op, dim, a_in.dim());
  Tensor a = contiguous(a_in);
  Tensor b = b_in ? contiguous(*b_in) : a;
  Tensor out = Tensor::empty(a.shape(), dt, a.device());
  if (out.numel() == 0) return out;
  int64_t O = 1, R = a.dim() ? a.size(d) : 1, I = 1;
  for (int k = 0; k < d; ++k) O *= a.size(k);
  for (int k = d + 1; k < a.dim(); ++k) I *= a.size(k);
  const DType acc = detail::math_type(dt);
  if (I == 1) {
    bool one = R <= kMaxBlock;
    int64_t t1 = one ? std::max<int64_t>(16, next_power_of_2(R)) : kMaxBlock;
    // The CUDA generator gives a thread 16 bytes of a row at a time (V elements of the narrowest
    // type). A row of at most 32 such pieces sits in one warp's lanes and is reduced by
    // shuffles, so a program takes T0 rows. Longer rows of a multi-row tile are reduced one warp
    // a row from a shared copy: the [4, 1024] f32 tile copied x (16 KB) there for the max and the
    // exponentials (16 KB) for the sum (912 SASS instructions, 6 CTAs an SM), where one row a
    // program keeps the row in registers (216). Such rows go one a program, with warps for 32
    // bytes a thread on CUDA.
    const int64_t elem = std::min({a.element_size(), b.element_size(), out.element_size()});
    const bool lane_rows = one && t1 * elem <= 32 * 16;
    int64_t t0 = lane_rows ? std::clamp<int64_t>(kMaxBlock / t1, 1, next_power_of_2(O)) : 1;
    const int warps = lane_rows || !a.device().is_cuda() ? 4 : detail::row_warps(t1 * elem, 16);
    detail::softmax_kernel()[{cdiv(O, t0)}](a, b, out, O, R, I, static_cast<int>(mode), static_cast<int>(acc), false, one,
                                            static_cast<int>(t0), static_cast<int>(t1),
                                            Options{.num_warps = warps, .num_stages = 3, .device = a.device()});
  } else {
    int64_t t1 = std::clamp<int64_t>(next_power_of_2(I), 16, 256);
    int64_t t0 = std::clamp<int64_t>(kMaxBlock / t1, 1, next_power_of_2(R));
    bool one = R <= t0;
    detail::softmax_kernel()[{O * cdiv(I, t1)}](a, b, out, O, R, I, static_cast<int>(mode), static_cast<int>(acc), true, one,
                                        static_cast<int>(t0), static_cast<int>(t1));
  }
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int dim) { return run("softmax", Mode::softmax, x, nullptr, dim); }
Tensor log_softmax(const Tensor& x, int dim) { return run("log_softmax", Mode::log_softmax, x, nullptr, dim); }
Tensor softmax_backward(const Tensor& grad, const Tensor& y, int dim) {
  return run("softmax_backward", Mode::softmax_bw, grad, &y, dim);
}
Tensor log_softmax_backward(const Tensor& grad, const Tensor& y, int dim) {
  return run("log_softmax_backward", Mode::log_softmax_bw, grad, &y, dim);
}

}  // namespace tritium::ops
