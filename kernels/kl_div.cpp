// kl_div: Liger-Kernel's KL divergence loss (linkedin/Liger-Kernel src/liger_kernel/ops/kl_div.py,
// read at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel): _kldiv_kernel_forward (one program
// a row walking it in BLOCK_SIZE chunks, y_pred in log space, the target as probabilities or as
// log-probabilities with log_target, each reduction mode: none stores the pointwise loss, the others
// a row sum) and _kldiv_kernel_backward (the gradient -target or -exp(target)), with the wrappers
// kldiv_forward_triton (BLOCK_SIZE = min(MAX_FUSED_SIZE = 16384, next_power_of_2(V)), get_num_warps,
// the final reductions batchmean / sum / mean on the row sums) and kldiv_backward_triton (times
// grad_output unless it is 1).
//
// Deviations: LigerKLDivLossFunction's autograd plumbing is left out; the wrappers' torch
// reductions are Tritium ops.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "autotune/do_bench.h"
#include "liger_utils.h"
#include "ops/ops.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

constexpr int _REDUCTION_MODE_NONE = 0;
constexpr int _REDUCTION_MODE_SUM = 1;
constexpr int _REDUCTION_MODE_MEAN = 2;
constexpr int _REDUCTION_MODE_BATCHMEAN = 3;

constexpr int64_t MAX_FUSED_SIZE = 65536 / 4;  // CUDA's (XPU and NPU use 8192)

// get_num_warps(BLOCK_SIZE): calculate_settings' warps without its size limit (is_hip() false).
int get_num_warps(int64_t BLOCK_SIZE) {
  int num_warps = 4;
  if (BLOCK_SIZE >= 32768)
    num_warps = 32;
  else if (BLOCK_SIZE >= 8192)
    num_warps = 16;
  else if (BLOCK_SIZE >= 2048)
    num_warps = 8;
  return num_warps;
}

auto _kldiv_kernel_forward = tritium::kernel(
    "_kldiv_kernel_forward",
    [](P y_ptr, tl::i32 y_stride, P gt_ptr, tl::i32 gt_stride, P loss_ptr, tl::i32 loss_stride, tl::i32 n_cols,
       tl::f32 eps, int BLOCK_SIZE, bool log_target, int reduction) {
      auto pid = tl::program_id(0).to(tl::int64);
      y_ptr += pid * y_stride;
      gt_ptr += pid * gt_stride;
      loss_ptr += pid * loss_stride;

      auto base_offsets = tl::arange(0, BLOCK_SIZE);

      tl::tensor loss_sum = tl::full({}, 0.0, tl::float32);  // Python's loss_sum = 0.0
      for (auto i : tl::range(0, n_cols, BLOCK_SIZE)) {
        auto offsets = i + base_offsets;
        auto mask = offsets < n_cols;
        auto y = tl::load(y_ptr + offsets, mask, 0.0);
        auto y_true = tl::load(gt_ptr + offsets, mask, 0.0);

        // KL(y_true || y) = y_true * (log(y_true) - log(y)), with y in the log-space
        tl::tensor loss;
        if (!log_target)
          loss = y_true * (tl::log(tl::maximum(y_true, eps)) - y);
        else
          loss = tl::exp(y_true) * (y_true - y);

        if (reduction == _REDUCTION_MODE_NONE)
          tl::store(loss_ptr + offsets, loss, mask);
        else
          loss_sum += tl::sum(loss, 0);
      }

      if (reduction != _REDUCTION_MODE_NONE) tl::store(loss_ptr, loss_sum);
    },
    {"y_ptr", "y_stride", "gt_ptr", "gt_stride", "loss_ptr", "loss_stride", "n_cols", "eps", "BLOCK_SIZE", "log_target",
     "reduction"});

auto _kldiv_kernel_backward = tritium::kernel(
    "_kldiv_kernel_backward",
    [](P target_ptr, tl::i32 target_stride, P new_grads_ptr, tl::i32 new_grads_stride, tl::i32 n_cols, int BLOCK_SIZE,
       bool log_target) {
      auto pid = tl::program_id(0).to(tl::int64);

      target_ptr += pid * target_stride;
      new_grads_ptr += pid * new_grads_stride;

      for (auto i : tl::range(0, n_cols, BLOCK_SIZE)) {
        auto offsets = i + tl::arange(0, BLOCK_SIZE);
        auto mask = offsets < n_cols;

        auto target = tl::load(target_ptr + offsets, mask, 0.0);

        tl::tensor res;
        if (!log_target)
          res = target * -1;
        else
          res = -tl::exp(target);

        tl::store(new_grads_ptr + offsets, res, mask);
      }
    },
    {"target_ptr", "target_stride", "new_grads_ptr", "new_grads_stride", "n_cols", "BLOCK_SIZE", "log_target"});

bool g_poison = false;  // while checking: the pointwise loss and the gradient start as NaN

int32_t i32(int64_t v) {
  if (v > INT32_MAX) tritium::fail("kl_div: {} does not fit the kernels' int32 arguments", v);
  return static_cast<int32_t>(v);
}

// kldiv_forward_triton(y_pred [BT, V] log-probabilities, y_true [BT, V], log_target, reduction, eps)
Tensor kldiv_forward_triton(const Tensor& y_pred, const Tensor& y_true, bool log_target, int reduction, float eps) {
  const int64_t BT = y_pred.size(0), V = y_pred.size(1);
  const int BLOCK_SIZE = static_cast<int>(std::min(MAX_FUSED_SIZE, liger::next_power_of_2(V)));
  const int num_warps = get_num_warps(BLOCK_SIZE);
  const std::vector<int64_t> out_size = reduction == _REDUCTION_MODE_NONE ? std::vector<int64_t>{BT, V} : std::vector<int64_t>{BT};
  // The row sums are written by every program; the pointwise loss by the masked stores.
  Tensor output_tensor = g_poison ? tritium::ops::full(out_size, NAN, DType::f32, y_pred.device())
                                  : tritium::ops::zeros(out_size, DType::f32, y_pred.device());
  _kldiv_kernel_forward[{BT}](y_pred, i32(y_pred.stride(0)), y_true, i32(y_true.stride(0)), output_tensor,
                              i32(output_tensor.stride(0)), i32(V), eps,
                              Meta{{"BLOCK_SIZE", BLOCK_SIZE}, {"log_target", log_target}, {"reduction", reduction}},
                              liger::warps(num_warps));
  // the reductions as PyTorch's KLDivLoss
  if (reduction == _REDUCTION_MODE_BATCHMEAN) return tritium::ops::div(tritium::ops::sum(output_tensor), double(BT));
  if (reduction == _REDUCTION_MODE_SUM) return tritium::ops::sum(output_tensor, {0});
  if (reduction == _REDUCTION_MODE_MEAN) return tritium::ops::div(tritium::ops::sum(output_tensor), double(BT * V));
  return output_tensor;
}

// kldiv_backward_triton(target, grad_output, new_grads, log_target): the gradient in new_grads.
Tensor kldiv_backward_triton(const Tensor& target, double grad_output, Tensor& new_grads, bool log_target) {
  const int64_t BT = target.size(0), V = target.size(1);
  const int BLOCK_SIZE = static_cast<int>(std::min(MAX_FUSED_SIZE, liger::next_power_of_2(V)));
  const int num_warps = get_num_warps(BLOCK_SIZE);
  _kldiv_kernel_backward[{BT}](target, i32(target.stride(0)), new_grads, i32(new_grads.stride(0)), i32(V),
                               Meta{{"BLOCK_SIZE", BLOCK_SIZE}, {"log_target", log_target}}, liger::warps(num_warps));
  // If cross entropy is the last layer, grad_output is 1.0. Skip the mul then.
  if (grad_output == 1.0) return new_grads;
  return tritium::ops::mul(new_grads, grad_output);
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  int64_t BT, V;
  DType dtype;
  bool log_target;
  int reduction;
};

// The loss and the gradient against float64; the worst relative error.
double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  // log_softmax(randn) predictions and softmax(randn) targets (log_softmax with log_target), as
  // Liger's tests and benchmark make them.
  std::vector<double> pred(size_t(c.BT * c.V)), targ(pred.size());
  for (int64_t i = 0; i < c.BT; ++i)
    for (auto* v : {&pred, &targ}) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < c.V; ++j) m = std::max(m, (*v)[size_t(i * c.V + j)] = normal(rng));
      for (int64_t j = 0; j < c.V; ++j) s += std::exp((*v)[size_t(i * c.V + j)] - m);
      for (int64_t j = 0; j < c.V; ++j) {
        double& x = (*v)[size_t(i * c.V + j)];
        x = x - m - std::log(s);  // log-probability
        if (v == &targ && !c.log_target) x = std::exp(x);
      }
    }
  Tensor y_pred = Tensor::from_vector(pred, {c.BT, c.V}, device).to(c.dtype);
  Tensor y_true = Tensor::from_vector(targ, {c.BT, c.V}, device).to(c.dtype);
  pred = liger::host(y_pred), targ = liger::host(y_true);
  const float eps = 1e-10f;
  g_poison = true;
  Tensor loss = kldiv_forward_triton(y_pred, y_true, c.log_target, c.reduction, eps);
  Tensor grads = tritium::ops::full({c.BT, c.V}, NAN, c.dtype, device);
  const double grad_output = 0.5;
  Tensor g = kldiv_backward_triton(y_true, grad_output, grads, c.log_target);
  g_poison = false;
  std::vector<double> pointwise(pred.size()), ref_grad(pred.size());
  for (size_t k = 0; k < pred.size(); ++k) {
    pointwise[k] = c.log_target ? std::exp(targ[k]) * (targ[k] - pred[k]) : targ[k] * (std::log(std::max(targ[k], double(eps))) - pred[k]);
    ref_grad[k] = grad_output * (c.log_target ? -std::exp(targ[k]) : -targ[k]);
  }
  std::vector<double> ref_loss;
  if (c.reduction == _REDUCTION_MODE_NONE) {
    ref_loss = pointwise;
  } else {
    double total = 0;
    std::vector<double> per_row(size_t(c.BT), 0.0);
    for (int64_t i = 0; i < c.BT; ++i)
      for (int64_t j = 0; j < c.V; ++j) per_row[size_t(i)] += pointwise[size_t(i * c.V + j)];
    for (double r : per_row) total += r;
    ref_loss = c.reduction == _REDUCTION_MODE_SUM     ? std::vector<double>{total}
               : c.reduction == _REDUCTION_MODE_MEAN ? std::vector<double>{total / double(c.BT * c.V)}
                                                      : std::vector<double>{total / double(c.BT)};
  }
  return std::max(liger::rel_error(liger::host(loss), ref_loss),
                  liger::rel_error(liger::host(g), ref_grad));
}

bool check(const tritium::Device& device) {
  // Every reduction, both target spaces, a vocabulary over MAX_FUSED_SIZE (20000: two chunks, the
  // second partial) and one under a block (700 of 1024), f32 and bf16.
  const std::vector<Case> cases = {{7, 20000, DType::f32, false, _REDUCTION_MODE_BATCHMEAN},
                                   {9, 700, DType::f32, true, _REDUCTION_MODE_NONE},
                                   {9, 700, DType::f32, false, _REDUCTION_MODE_SUM},
                                   {5, 1100, DType::bf16, true, _REDUCTION_MODE_MEAN}};
  const char* names[] = {"none", "sum", "mean", "batchmean"};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.BT * 31 + c.V + c.reduction));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {}x{}{} {} {:.1e}", detail.empty() ? "(loss, grad: " : ", ", tritium::dtype_name(c.dtype), c.BT,
                          c.V, c.log_target ? " log_target" : "", names[c.reduction], rel);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("kl_div", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_kl_div.py: the default model's vocabulary (llama_3_8b: V = 128256), fp32, batchmean, a
// sweep of BT. GB/s from the bytes moved (forward: both inputs read; backward: target read,
// gradient written).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t V = 128256;
  std::vector<int64_t> bts = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192} : std::vector<int64_t>{16};
  std::vector<suite::Row> rows;
  for (int64_t BT : bts) {
    auto& gen = tritium::ops::default_generator();
    Tensor y_pred = tritium::ops::randn({BT, V}, gen, DType::f32, device);
    Tensor y_true = tritium::ops::rand({BT, V}, gen, DType::f32, device);
    Tensor grads = Tensor::empty({BT, V}, DType::f32, device);
    const double bytes = double(BT) * double(V) * 4.0;
    const double fwd = tritium::do_bench([&] { kldiv_forward_triton(y_pred, y_true, false, _REDUCTION_MODE_BATCHMEAN, 1e-10f); }, device).median_ms;
    rows.push_back({fmt::format("fwd BT={} V={} f32 batchmean", BT, V), fwd, 2 * bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] { kldiv_backward_triton(y_true, 1.0, grads, false); }, device).median_ms;
    rows.push_back({fmt::format("bwd BT={} V={} f32", BT, V), bwd, 2 * bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "kl_div",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/kl_div.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
