// cross_entropy (the full torch.nn.functional.cross_entropy) and nll_loss, forward and backward
// (ops/losses.h; docs/ops.md "Losses").
//
// The input is seen as rows [R, C] (R = N * d1 * ...; a class dim that is not last is moved last by
// one copy). Forward: one program per T0 rows walks the row in T1-wide blocks once, keeping an
// online log-sum-exp (running max and rescaled sum) and, as needed, sum_c w_c x_c (label
// smoothing) or sum_c w_c p_c x_c and sum_c w_c p_c (probability targets), so every loss term is
// known after one read: nll = w_t (lse - x_t), smooth = sum_c w_c (lse - x_c), prob = lse sum w p
// - sum w p x. Labels outside [0, C) that are not ignore_index are reported through a
// runtime::DeviceCheck (the first bad row, by tl::atomic_max of R - row), read at the launch on
// the CPU and at the next host read or sync on CUDA. The reduction is
// ops::sum over the rows (mean divides by the summed picked weights, on the device). Backward:
// one pass per row from the saved lse: dx = g (w_t (1 - eps) (softmax - onehot) + eps / C (W
// softmax - w)) for class targets (W = sum of the weights), g (softmax sum w p - w p) for
// probabilities; nll_loss's is -g w_t at the target.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/losses.h"
#include "ops/norm_loss_kernels.h"
#include "runtime/device_checks.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {
using P = tl::ptr<tl::any>;
using detail::shape_str;
constexpr int64_t kTile = 4096;  // elements of a [T0, T1] tile
constexpr int64_t kMaxT1 = 2048;
}  // namespace

Kernel& detail::class_loss_forward_kernel() {
  static Kernel k = tritium::kernel(
      "class_loss_fwd",
      [](P x, P t, P w, P loss_out, P lse_out, P aux_out, P bad, tl::i64 R, tl::i64 C, tl::i64 ignore_index,
         tl::f64 smoothing, bool NLL, bool PROB, bool WEIGHT, bool SMOOTH, int ACC, int T0, int T1) {
        const DType acc = static_cast<DType>(ACC);
        const double inf = std::numeric_limits<double>::infinity();
        auto row = tl::program_id(0).to(tl::int64) * T0 + tl::arange(0, T0).to(tl::int64);
        auto rm = row < R;
        auto ls = smoothing.to(acc);
        auto weights_at = [&](const tl::tensor& c, const tl::tensor& m) {
          return WEIGHT ? tl::load(w + c, m, 0).to(acc) : tl::where(m, 1.0, 0.0).to(acc);
        };
        tl::tensor label, ok;
        if (!PROB) {
          label = tl::load(t + row, rm, 0).to(tl::int64);
          auto ignored = label == ignore_index;
          auto valid = (label >= 0) && (label < C);
          ok = rm && valid && !ignored;
          // The first bad row r as the code R - r (a DeviceCheck's slot: 0 = none, the largest wins).
          auto code = tl::max(tl::where(rm && !valid && !ignored, R - row, 0));
          tl::atomic_max(bad, code, code > 0, "relaxed");  // no atomic from a program with good labels
        }
        if (NLL) {
          auto wt = weights_at(label, ok);
          auto xt = tl::load(x + row * C + label, ok, 0).to(acc);
          tl::store(loss_out + row, -(wt * xt), rm);
          tl::store(aux_out + row, wt, rm);
          return;
        }
        auto M = tl::full({T0}, -inf, acc), S = tl::zeros({T0}, acc);
        auto SX = tl::zeros({T0}, acc), SP = tl::zeros({T0}, acc), SW = tl::zeros({T0}, acc);
        auto cols = tl::arange(0, T1).to(tl::int64);
        for (auto c0 : tl::range(0, C, T1)) {
          auto c = c0 + cols;
          auto cm = c < C;
          auto m2 = rm(tl::_, tl::None) & cm(tl::None, tl::_);
          auto off = row(tl::_, tl::None) * C + c(tl::None, tl::_);
          auto xv = tl::load(x + off, m2, 0).to(acc);
          auto Mn = tl::maximum(M, tl::max(tl::where(m2, xv, -inf), 1));
          auto rescale = tl::where(Mn == -inf, 0.0, tl::exp(M - Mn)).to(acc);
          S = S * rescale + tl::sum(tl::where(m2, tl::exp(xv - Mn(tl::_, tl::None)), 0.0), 1);
          M = Mn;
          auto wc = weights_at(c, cm)(tl::None, tl::_);
          if (PROB) {
            auto p = tl::where(m2, tl::load(t + off, m2, 0).to(acc) * (1 - ls) + ls / C.to(acc), 0.0).to(acc);
            SX = SX + tl::sum(wc * p * xv, 1);
            SP = SP + tl::sum(wc * p, 1);
          } else if (SMOOTH) {
            SX = SX + tl::sum(wc * xv, 1);
            SW = SW + tl::sum(tl::where(m2, wc, 0.0), 1);
          }
        }
        auto lse = M + tl::log(S);
        tl::store(lse_out + row, lse, rm);
        if (PROB) {
          tl::store(loss_out + row, lse * SP - SX, rm);
          tl::store(aux_out + row, SP, rm);
          return;
        }
        auto wt = weights_at(label, ok);
        auto xt = tl::load(x + row * C + label, ok, 0).to(acc);
        auto loss = wt * (lse - xt);
        if (SMOOTH) loss = loss * (1 - ls) + tl::where(ok, SW * lse - SX, 0.0) * (ls / C.to(acc));
        tl::store(loss_out + row, loss, rm);
        tl::store(aux_out + row, wt, rm);
      });
  return k;
}

Kernel& detail::class_loss_backward_kernel() {
  static Kernel k = tritium::kernel(
      "class_loss_bwd",
      [](P x, P t, P w, P lse, P aux, P g, P wsum, P dx, tl::i64 R, tl::i64 C, tl::i64 g_stride,
         tl::i64 ignore_index, tl::f64 smoothing, bool NLL, bool PROB, bool WEIGHT, bool SMOOTH, int ACC, int T0,
         int T1) {
        const DType acc = static_cast<DType>(ACC);
        auto row = tl::program_id(0).to(tl::int64) * T0 + tl::arange(0, T0).to(tl::int64);
        auto rm = row < R;
        auto ls = smoothing.to(acc);
        auto gi = tl::load(g + row * g_stride, rm, 0).to(acc)(tl::_, tl::None);
        auto a = tl::load(aux + row, rm, 0).to(acc)(tl::_, tl::None);  // w_t (0 if ignored) or sum w p
        auto l = NLL ? a : tl::load(lse + row, rm, 0).to(acc)(tl::_, tl::None);
        tl::tensor label, ok_row, ok;
        if (!PROB) {
          label = tl::load(t + row, rm, 0).to(tl::int64);
          ok_row = (rm && (label != ignore_index) && (label >= 0) && (label < C))(tl::_, tl::None);
          ok = ok_row.to(acc);
          label = label(tl::_, tl::None);
        }
        auto W = SMOOTH && !PROB ? tl::load(wsum).to(acc) : tl::zeros({}, acc);
        auto cols = tl::arange(0, T1).to(tl::int64);
        if (NLL && !PROB) {
          // Only the target column of a row gets -w_t g (nothing else depends on x): the row's
          // value once, then per element a 32-bit compare and a select. The general form below
          // (a one-hot in 64-bit compares, multiplied through) was 38 instructions a chunk on the
          // CPU, 2.9 x PyTorch's zero fill and scatter.
          auto v = tl::where(ok_row, -(a * gi), 0.0).to(acc).to(dx.element_ty());  // rounded once a row
          auto cols32 = tl::arange(0, T1);
          for (auto c0 : tl::range(0, C, T1)) {
            auto cm = (c0 + cols) < C;
            auto hit = cols32(tl::None, tl::_) == (label - c0).to(tl::int32);
            tl::store(dx + row(tl::_, tl::None) * C + (c0 + cols)(tl::None, tl::_), tl::where(hit, v, 0),
                      rm(tl::_, tl::None) & cm(tl::None, tl::_));
          }
          return;
        }
        for (auto c0 : tl::range(0, C, T1)) {
          auto c = c0 + cols;
          auto cm = c < C;
          auto m2 = rm(tl::_, tl::None) & cm(tl::None, tl::_);
          auto off = row(tl::_, tl::None) * C + c(tl::None, tl::_);
          auto wc = (WEIGHT ? tl::load(w + c, cm, 0).to(acc) : tl::where(cm, 1.0, 0.0).to(acc))(tl::None, tl::_);
          tl::tensor d;
          auto onehot = [&] { return tl::where(c(tl::None, tl::_) == label, 1.0, 0.0).to(acc); };
          auto sm = tl::exp(tl::load(x + off, m2, 0).to(acc) - l);
          if (PROB) {
            auto p = tl::load(t + off, m2, 0).to(acc) * (1 - ls) + ls / C.to(acc);
            d = sm * a - wc * p;
          } else {
            d = a * (sm - onehot());
            if (SMOOTH) d = d * (1 - ls) + ok * (W * sm - wc) * (ls / C.to(acc));
          }
          // Ignored rows get 0, also when the mean's 1 / total weight is infinite (all ignored).
          tl::store(dx + off, PROB ? gi * d : tl::where(ok_row, gi * d, 0.0).to(acc), m2);
        }
      });
  return k;
}

// One program: the sum (MEAN: the mean) of R rows' losses and picked weights (see kReduceRows).
Kernel& detail::class_loss_reduce_kernel() {
  static Kernel k = tritium::kernel(
      "class_loss_reduce", [](P loss, P aux, P out, P total, tl::i64 R, bool MEAN, int ACC, int ODT, int B) {
        const DType acc = static_cast<DType>(ACC);
        auto offs = tl::arange(0, B).to(tl::int64);
        auto sl = tl::zeros({B}, acc), sw = tl::zeros({B}, acc);
        for (auto r0 : tl::range(0, R, B)) {
          auto r = r0 + offs;
          auto m = r < R;
          sl = sl + tl::load(loss + r, m, 0).to(acc);
          sw = sw + tl::load(aux + r, m, 0).to(acc);
        }
        auto L = tl::sum(sl, 0), W = tl::sum(sw, 0);
        tl::store(total, W);
        tl::store(out, (MEAN ? L / W : L).to(static_cast<DType>(ODT)));
      });
  return k;
}

namespace {

// The mean / sum of class targets' losses for up to kReduceRows rows: one program sums the rows'
// losses and picked weights, divides (mean) and stores the result in the input's dtype and the
// total weight, so a reduced loss is two launches (no sum, sum, div, cast). More rows take ops::sum.
constexpr int64_t kReduceRows = int64_t{1} << 16;

struct Rows {
  Tensor x, t;   // [R, C] contiguous; t [R] labels or [R, C] probabilities
  Shape out_shape;  // of the 'none' reduction
  int64_t R = 0, C = 0;
  bool prob = false;
  int class_dim_moved = 0;  // input dims when the class dim was moved last (the backward moves it back)
};

// [N, C, d...] -> [N, d..., C] rows; [C] (unbatched) -> [1, C].
Tensor class_dim_last(const Tensor& x) {
  if (x.dim() <= 2) return contiguous(x.dim() == 1 ? x.reshape({1, x.size(0)}) : x);
  std::vector<int> perm{0};
  for (int d = 2; d < x.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  Tensor moved = contiguous(x.permute(perm));
  return moved.reshape({moved.numel() / x.size(1), x.size(1)});
}

Rows prepare(const char* op, const Tensor& input, const Tensor& target, const Tensor& weight, bool allow_prob) {
  std::vector<const Tensor*> ts{&input, &target};
  if (weight.defined()) ts.push_back(&weight);
  detail::check_tensors(op, ts);
  if (!is_float(input.dtype())) fail("{}: expected a floating-point input, got {}", op, dtype_name(input.dtype()));
  if (input.dim() < 1) fail("{}: expected an input of shape [C], [N, C] or [N, C, d1, ...], got a 0-d tensor", op);
  Rows r;
  r.C = input.dim() == 1 ? input.size(0) : input.size(1);
  if (weight.defined() && (weight.dim() != 1 || weight.size(0) != r.C))
    fail("{}: weight tensor should be defined either for all {} classes or no classes but got weight tensor of shape: "
         "{}",
         op, r.C, shape_str(weight.shape()));
  if (weight.defined() && !is_float(weight.dtype()))
    fail("{}: expected a floating-point weight, got {}", op, dtype_name(weight.dtype()));
  Shape without_class = input.shape();
  without_class.erase(without_class.begin() + (input.dim() == 1 ? 0 : 1));
  r.prob = allow_prob && is_float(target.dtype());
  if (r.prob) {
    if (target.shape() != input.shape())
      fail("{}: probability targets must have the input's shape {}, got {}", op, shape_str(input.shape()),
           shape_str(target.shape()));
    r.out_shape = without_class;
  } else {
    if (target.dtype() != DType::i64 && target.dtype() != DType::u8)
      fail("{}: expected target dtype to be i64 or u8 (class indices){}, but got {}", op,
           allow_prob ? " or floating (class probabilities)" : "", dtype_name(target.dtype()));
    if (input.dim() == 2 && target.dim() != 1)
      fail("{}: 0D or 1D target tensor expected, multi-target not supported (input {}, target {})", op,
           shape_str(input.shape()), shape_str(target.shape()));
    if (input.dim() == 2 && target.size(0) != input.size(0))
      fail("{}: expected input batch_size ({}) to match target batch_size ({})", op, input.size(0), target.size(0));
    if (target.shape() != without_class)
      fail("{}: expected target size {}, got {} (input {})", op, shape_str(without_class), shape_str(target.shape()),
           shape_str(input.shape()));
    r.out_shape = without_class;
  }
  r.x = class_dim_last(input);
  r.R = r.x.size(0);
  r.t = r.prob ? class_dim_last(target) : contiguous(target).reshape({r.R});
  r.class_dim_moved = input.dim() > 2 ? input.dim() : 0;
  return r;
}

// nll's forward reads one element a row (t1 unused): more rows a program.
std::pair<int64_t, int64_t> tiles(const Rows& r, bool nll_forward = false) {
  int64_t t1 = std::clamp<int64_t>(next_power_of_2(r.C), 16, kMaxT1);
  int64_t t0 = std::clamp<int64_t>(nll_forward ? 256 : kTile / t1, 1, std::max<int64_t>(next_power_of_2(r.R), 1));
  while (t0 > 1 && cdiv(r.R, t0) < 2) t0 /= 2;  // two programs at least, when rows allow
  return {t0, t1};
}

int64_t element_as_i64(const Tensor& t, int64_t index) {
  return to_dtype(t.as_strided({1}, {1}, t.storage_offset() + index), DType::i64).to_vector<int64_t>()[0];
}

ClassLossResult run_forward(const char* op, const Rows& r, const Tensor& input, const Tensor& weight,
                            int64_t ignore_index, Reduction reduction, double smoothing, bool nll) {
  const DType acc = detail::math_type(input.dtype());
  const Device dev = input.device();
  ClassLossResult res;
  Tensor loss = Tensor::empty({r.R}, acc, dev);
  res.lse = Tensor::empty({r.R}, acc, dev);
  res.aux = Tensor::empty({r.R}, acc, dev);
  if (r.R > 0 && r.C > 0) {
    // Reported at the launch on the CPU, at the next host read or sync on CUDA (runtime/device_checks.h);
    // the message reads the label back then (the check keeps the targets alive).
    std::optional<runtime::DeviceCheck> check;
    if (!r.prob)
      check.emplace(dev, 1, [op = std::string(op), t = r.t, R = r.R, C = r.C, ignore_index](const int64_t* code) {
        const int64_t first = R - code[0];
        return fmt::format(
            "{}: target {} at index {} is out of range for {} classes (expected 0 <= target < {}, or ignore_index {})",
            op, element_as_i64(t, first), first, C, C, ignore_index);
      });
    Tensor w = weight.defined() ? contiguous(weight) : loss;  // the kernel converts to acc
    auto [t0, t1] = tiles(r, nll);
    detail::class_loss_forward_kernel()[{cdiv(r.R, t0)}](r.x, r.t, w, loss, res.lse, res.aux, check ? check->slots() : loss, r.R, r.C, ignore_index, smoothing, nll,
                                      r.prob, weight.defined(), smoothing > 0, static_cast<int>(acc),
                                      static_cast<int>(t0), static_cast<int>(t1));
    if (check) check->launched();
  } else if (r.R > 0) {
    fail("{}: the input has no classes (shape {})", op, shape_str(input.shape()));
  }
  if (!r.prob && reduction != Reduction::none && r.R > 0 && r.R <= kReduceRows) {
    res.total_weight = Tensor::empty({1}, acc, dev);
    res.loss = Tensor::empty({}, input.dtype(), dev);
    detail::class_loss_reduce_kernel()[{1}](loss, res.aux, res.loss, res.total_weight, r.R, reduction == Reduction::mean,
                                    static_cast<int>(acc), static_cast<int>(input.dtype()), 1024);
    return res;
  }
  res.total_weight = r.prob ? full({1}, Scalar(static_cast<double>(r.R)), acc, dev) : sum(res.aux).reshape({1});
  switch (reduction) {
    case Reduction::none: res.loss = to_dtype(loss.reshape(r.out_shape), input.dtype()); break;
    case Reduction::sum: res.loss = to_dtype(sum(loss), input.dtype()); break;
    case Reduction::mean: res.loss = to_dtype(div(sum(loss), res.total_weight.reshape({})), input.dtype()); break;
  }
  return res;
}

Tensor run_backward(const char* op, const Rows& r, const Tensor& grad, const Tensor& input, const Tensor& weight,
                    int64_t ignore_index, Reduction reduction, double smoothing, bool nll, const Tensor& lse,
                    const Tensor& aux, const Tensor& total_weight) {
  const DType acc = detail::math_type(input.dtype());
  const Device dev = input.device();
  Tensor g;
  if (reduction == Reduction::none) {
    if (grad.shape() != r.out_shape)
      fail("{}: grad shape {} differs from the loss shape {}", op, shape_str(grad.shape()), shape_str(r.out_shape));
    g = contiguous(to_dtype(grad, acc)).reshape({r.R});
  } else {
    if (grad.numel() != 1) fail("{}: grad must have one element (the loss is a scalar), got shape {}", op, shape_str(grad.shape()));
    g = to_dtype(grad, acc).reshape({1});
    if (reduction == Reduction::mean) g = contiguous(div(g, total_weight.reshape({1})));
  }
  Tensor dx_rows = Tensor::empty({r.R, r.C}, input.dtype(), dev);
  if (r.R > 0 && r.C > 0) {
    Tensor w = weight.defined() ? contiguous(weight) : g;  // the kernel converts to acc
    Tensor wsum = !(smoothing > 0) || r.prob ? g  // read only with label smoothing
                  : weight.defined() ? sum(to_dtype(w, acc)).reshape({1}) : full({1}, Scalar(static_cast<double>(r.C)), acc, dev);
    auto [t0, t1] = tiles(r);
    detail::class_loss_backward_kernel()[{cdiv(r.R, t0)}](r.x, r.t, w, lse.defined() ? contiguous(lse) : g, contiguous(aux), g, wsum,
                                       dx_rows, r.R, r.C, reduction == Reduction::none ? int64_t{1} : int64_t{0},
                                       ignore_index, smoothing, nll, r.prob, weight.defined(), smoothing > 0,
                                       static_cast<int>(acc), static_cast<int>(t0), static_cast<int>(t1));
  }
  if (input.dim() <= 2) return dx_rows.reshape(input.shape());
  // [N, d..., C] back to [N, C, d...].
  Shape moved{input.size(0)};
  for (int d = 2; d < input.dim(); ++d) moved.push_back(input.size(d));
  moved.push_back(input.size(1));
  std::vector<int> back{0, input.dim() - 1};
  for (int d = 1; d < input.dim() - 1; ++d) back.push_back(d);
  return contiguous(dx_rows.reshape(moved).permute(back));
}

void check_smoothing(const char* op, double s) {
  if (!(s >= 0 && s <= 1)) fail("{}: label_smoothing must be between 0.0 and 1.0. Got: {}", op, s);
}

}  // namespace

Reduction parse_reduction(const char* op, std::string_view reduction) {
  if (reduction == "none") return Reduction::none;
  if (reduction == "mean") return Reduction::mean;
  if (reduction == "sum") return Reduction::sum;
  fail("{}: {} is not a valid value for reduction (expected 'none', 'mean' or 'sum')", op, reduction);
}

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::none: return "none";
    case Reduction::mean: return "mean";
    case Reduction::sum: return "sum";
  }
  return "?";
}

ClassLossResult cross_entropy_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                   int64_t ignore_index, Reduction reduction, double label_smoothing) {
  const char* op = "cross_entropy";
  check_smoothing(op, label_smoothing);
  Rows r = prepare(op, input, target, weight, /*allow_prob=*/true);
  return run_forward(op, r, input, weight, ignore_index, reduction, label_smoothing, false);
}

Tensor cross_entropy_loss_backward(const Tensor& grad, const Tensor& input, const Tensor& target, const Tensor& weight,
                                   int64_t ignore_index, Reduction reduction, double label_smoothing,
                                   const Tensor& lse, const Tensor& aux, const Tensor& total_weight) {
  const char* op = "cross_entropy_backward";
  check_smoothing(op, label_smoothing);
  Rows r = prepare(op, input, target, weight, true);
  return run_backward(op, r, grad, input, weight, ignore_index, reduction, label_smoothing, false, lse, aux,
                      total_weight);
}

ClassLossResult nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                         Reduction reduction) {
  const char* op = "nll_loss";
  Rows r = prepare(op, input, target, weight, /*allow_prob=*/false);
  ClassLossResult res = run_forward(op, r, input, weight, ignore_index, reduction, 0.0, true);
  res.lse = Tensor();
  return res;
}

Tensor nll_loss_backward(const Tensor& grad, const Tensor& input, const Tensor& target, const Tensor& weight,
                         int64_t ignore_index, Reduction reduction, const Tensor& aux, const Tensor& total_weight) {
  const char* op = "nll_loss_backward";
  Rows r = prepare(op, input, target, weight, false);
  return run_backward(op, r, grad, input, weight, ignore_index, reduction, 0.0, true, Tensor(), aux, total_weight);
}

}  // namespace tritium::ops
