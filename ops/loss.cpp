// cross_entropy and its backward (docs/ops.md).
//
// Forward: the kernel `ce_rows` computes, for T0 rows per program, loss_i = max + log(sum(exp(x -
// max))) - x[i, t_i] (the row in one block when C <= 4096, else loops over blocks) into a [N]
// buffer in the compute type, and validates the labels: the lowest row index with a label outside
// [0, C) is reported through a runtime::DeviceCheck (the row's logit is not read), which raises an
// error naming the first bad label at the launch on the CPU, at the next host read or sync on CUDA;
// then the mean over the batch is ops::mean (a kernel). Backward: one kernel writes g / N * (softmax(x) - onehot).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "runtime/device_checks.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;
using detail::shape_str;

constexpr int64_t kMaxBlock = 4096;

// BACKWARD false: loss[i] and the first bad row into bad[0]. true: dx = g * scale * (softmax - onehot).
Kernel& ce_kernel() {
  static Kernel k = tritium::kernel(
      "cross_entropy",
      [](P x, P t, P out, P aux, tl::i64 N, tl::i64 C, tl::f64 scale, bool BACKWARD, int ACC, bool ONE, int T0, int T1) {
        const DType acc_t = static_cast<DType>(ACC);
        const double inf = std::numeric_limits<double>::infinity();
        auto pid = tl::program_id(0).to(tl::int64);
        auto row = pid * T0 + tl::arange(0, T0);  // [T0]
        auto rmask = row < N;
        auto label = tl::load(t + row, rmask, 0).to(tl::int64);
        auto valid = (label >= 0) && (label < C);
        auto base = (row * C)(tl::_, tl::None);  // [T0, 1]
        auto km = rmask(tl::_, tl::None);
        auto block = [&](const tl::tensor& c0) {
          auto c = (c0 + tl::arange(0, T1))(tl::None, tl::_);  // [1, T1]
          return std::tuple<tl::tensor, tl::tensor, tl::tensor>(base + c, km && (c < C), c);
        };
        auto load = [&](const tl::tensor& off, const tl::tensor& m) {
          auto v = tl::load(x + off, m, 0);
          return v.dtype() == acc_t ? v : v.to(acc_t);
        };
        auto zero = tl::zeros({}, tl::int64);
        tl::tensor M, S, v1, m1;
        if (ONE) {
          auto [off, m, c] = block(zero);
          v1 = tl::where(m, load(off, m), -inf);
          m1 = m;
          M = tl::max(v1, 1, true);
          S = tl::sum(tl::exp(v1 - M), 1, true);
        } else {
          M = tl::full({T0, 1}, -inf, acc_t);
          for (auto c0 : tl::range(0, C, T1)) {
            auto [off, m, c] = block(c0);
            M = tl::maximum(M, tl::max(tl::where(m, load(off, m), -inf), 1, true));
          }
          S = tl::zeros({T0, 1}, acc_t);
          for (auto c0 : tl::range(0, C, T1)) {
            auto [off, m, c] = block(c0);
            S = S + tl::sum(tl::exp(tl::where(m, load(off, m), -inf) - M), 1, true);
          }
        }
        if (!BACKWARD) {
          auto ok = rmask && valid;
          auto xt = tl::load(x + row * C + label, ok, 0).to(acc_t);
          auto loss = tl::reshape(M, {T0}) + tl::log(tl::reshape(S, {T0})) - xt;
          tl::store(out + row, loss, rmask);
          auto bad = rmask && !valid;
          // aux: a DeviceCheck's slot; the first bad row r as the code N - r (0 = none, the largest wins).
          auto code = tl::max(tl::where(bad, N - row, 0));
          tl::atomic_max(aux, code, code > 0, "relaxed");
          return;
        }
        auto g = tl::load(aux).to(acc_t) * scale.to(acc_t);  // aux: the upstream gradient (one element)
        auto lab = label(tl::_, tl::None);
        auto write = [&](const tl::tensor& off, const tl::tensor& m, const tl::tensor& c, const tl::tensor& v) {
          auto p = tl::exp(v - M) / S;
          auto onehot = tl::where(c == lab, 1.0, 0.0).to(acc_t);
          tl::store(out + off, (p - onehot) * g, m);
        };
        if (ONE) {
          auto [off, m, c] = block(zero);
          write(off, m, c, v1);
        } else {
          for (auto c0 : tl::range(0, C, T1)) {
            auto [off, m, c] = block(c0);
            write(off, m, c, load(off, m));
          }
        }
      });
  return k;
}


struct Prepared {
  Tensor x, t;
  int64_t N, C;
  DType acc;
};

Prepared prepare(const char* op, const Tensor& logits, const Tensor& targets) {
  detail::check_tensors(op, {&logits, &targets});
  if (logits.dim() != 2)
    fail("{}: logits must be 2-D [N, C], got shape {}", op, shape_str(logits.shape()));
  if (targets.dim() != 1 || targets.size(0) != logits.size(0))
    fail("{}: logits shape {} and targets shape {} do not match (expected targets of shape [{}])", op,
         shape_str(logits.shape()), shape_str(targets.shape()), logits.size(0));
  if (!is_float(logits.dtype())) fail("{}: logits must be floating point, got {}", op, dtype_name(logits.dtype()));
  if (targets.dtype() != DType::i64 && targets.dtype() != DType::i32)
    fail("{}: targets must be class indices of dtype i64 or i32, got {}", op, dtype_name(targets.dtype()));
  if (logits.size(1) == 0) fail("{}: logits have no classes (shape {})", op, shape_str(logits.shape()));
  return {contiguous(logits), contiguous(targets), logits.size(0), logits.size(1), detail::math_type(logits.dtype())};
}

void launch(const Prepared& p, Tensor& out, const Tensor& aux, double scale, bool backward) {
  bool one = p.C <= kMaxBlock;
  int64_t t1 = one ? std::max<int64_t>(16, next_power_of_2(p.C)) : kMaxBlock;
  int64_t t0 = one ? std::clamp<int64_t>(kMaxBlock / t1, 1, next_power_of_2(p.N)) : 1;
  // Two programs at least when there are rows enough, so both threads work.
  while (t0 > 16 && cdiv(p.N, t0) < 2) t0 /= 2;
  ce_kernel()[{cdiv(p.N, t0)}](p.x, p.t, out, aux, p.N, p.C, scale, backward, static_cast<int>(p.acc), one,
                               static_cast<int>(t0), static_cast<int>(t1));
}

int64_t element_as_i64(const Tensor& t, int64_t index) {
  Tensor one = to_dtype(t.as_strided({1}, {1}, t.storage_offset() + index * (t.dim() ? t.stride(0) : 0)), DType::i64);
  return one.to_vector<int64_t>()[0];
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  Prepared p = prepare("cross_entropy", logits, targets);
  if (p.N == 0) return mean(Tensor::empty({0}, logits.dtype(), logits.device()));
  Tensor losses = Tensor::empty({p.N}, p.acc, logits.device());
  // Reported at the launch on the CPU, at the next host read or sync on CUDA (runtime/device_checks.h).
  runtime::DeviceCheck check(logits.device(), 1, [t = p.t, N = p.N, C = p.C](const int64_t* code) {
    const int64_t first = N - code[0];
    return fmt::format("cross_entropy: target {} at index {} is out of range for {} classes (expected 0 <= target < {})",
                       element_as_i64(t, first), first, C, C);
  });
  launch(p, losses, check.slots(), 0.0, false);
  check.launched();
  Tensor loss = mean(losses);
  return to_dtype(loss, logits.dtype());
}

Tensor cross_entropy_backward(const Tensor& grad, const Tensor& logits, const Tensor& targets) {
  Prepared p = prepare("cross_entropy_backward", logits, targets);
  detail::check_tensors("cross_entropy_backward", {&grad, &logits});
  if (grad.numel() != 1)
    fail("cross_entropy_backward: grad must have one element (the loss is a scalar), got shape {}",
         shape_str(grad.shape()));
  Tensor out = Tensor::empty({p.N, p.C}, logits.dtype(), logits.device());
  if (p.N == 0) return out;
  launch(p, out, grad, 1.0 / static_cast<double>(p.N), true);
  return out;
}

}  // namespace tritium::ops
