// tvd: Liger-Kernel's total variation distance loss (linkedin/Liger-Kernel
// src/liger_kernel/ops/tvd.py, read at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel):
// _tv_distance_kernel (one program a row walking it in BLOCK_SIZE chunks: the pointwise loss
// 0.5 |p - q| stored (reduction none) or summed, the gradient +-0.5 times the reduction's scale
// written in the same pass; a row whose shift label is ignore_index zeroes its gradient (and its
// pointwise loss) and returns early), and the wrappers tv_distance_forward_triton
// (BLOCK_SIZE = min(MAX_FUSED_SIZE = 16384, next_power_of_2(V)), get_num_warps, the scale
// 1 / n_non_ignore (batchmean) or 1 / (n_non_ignore V) (mean) fused into the kernel, the row sums
// reduced after) and tvd_backward_triton (times grad_output unless it is 1).
//
// Deviations: LigerTVDLossFunction's autograd plumbing is left out; the wrappers' torch reductions
// are Tritium ops; grad_output is a host number.
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

constexpr int64_t MAX_FUSED_SIZE = 65536 / 4;

constexpr int _REDUCTION_MODE_NONE = 0;
constexpr int _REDUCTION_MODE_SUM = 1;
constexpr int _REDUCTION_MODE_MEAN = 2;
constexpr int _REDUCTION_MODE_BATCHMEAN = 3;

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

auto _tv_distance_kernel = tritium::kernel(
    "_tv_distance_kernel",
    [](P p_ptr, tl::i32 p_stride, P q_ptr, tl::i32 q_stride, P loss_ptr, tl::i32 loss_stride, P grads_ptr,
       tl::i32 grads_stride, P label_ptr, int ignore_index, tl::i32 n_cols,
       tl::f32 scale,  // pre-computed reduction scale for gradients (fused into kernel)
       int BLOCK_SIZE, bool HAS_LABEL, int reduction) {
      auto pid = tl::program_id(0).to(tl::int64);
      p_ptr += pid * p_stride;
      q_ptr += pid * q_stride;
      loss_ptr += pid * loss_stride;
      grads_ptr += pid * grads_stride;
      label_ptr += pid;

      auto base_offsets = tl::arange(0, BLOCK_SIZE);

      if (HAS_LABEL) {
        auto label = tl::load(label_ptr);
        tl::if_(label == ignore_index, [&] {
          for (auto i : tl::range(0, n_cols, BLOCK_SIZE)) {
            auto offsets = i + base_offsets;
            auto mask = offsets < n_cols;
            tl::store(grads_ptr + offsets, 0.0, mask);
            if (reduction == _REDUCTION_MODE_NONE) tl::store(loss_ptr + offsets, 0.0, mask);
          }
          tl::return_();
        });
      }

      tl::tensor loss_sum = tl::full({}, 0.0, tl::float32);  // Python's loss_sum = 0.0
      for (auto i : tl::range(0, n_cols, BLOCK_SIZE)) {
        auto offsets = i + base_offsets;
        auto mask = offsets < n_cols;

        auto p = tl::load(p_ptr + offsets, mask, 0.0);
        auto q = tl::load(q_ptr + offsets, mask, 0.0);

        // TVD(P || Q) = 0.5 * |P - Q|
        auto tv_loss = 0.5 * tl::abs(p - q);

        // Fuse reduction scaling into gradient computation (eliminates separate Python division)
        auto grad_res = tl::where(p > q, 0.5 * scale, -0.5 * scale);

        tl::store(grads_ptr + offsets, grad_res, mask);

        if (reduction == _REDUCTION_MODE_NONE)
          tl::store(loss_ptr + offsets, tv_loss, mask);
        else
          loss_sum += tl::sum(tv_loss, 0);
      }

      // Fuse reduction scaling into loss (same scale as gradients; avoids Python division)
      if (reduction != _REDUCTION_MODE_NONE) tl::store(loss_ptr, loss_sum * scale);
    },
    {"p_ptr", "p_stride", "q_ptr", "q_stride", "loss_ptr", "loss_stride", "grads_ptr", "grads_stride", "label_ptr",
     "ignore_index", "n_cols", "scale", "BLOCK_SIZE", "HAS_LABEL", "reduction"});

bool g_poison = false;  // while checking: grads (torch.empty_like) and a pointwise loss start as NaN

int32_t i32(int64_t v) {
  if (v > INT32_MAX || v < INT32_MIN) tritium::fail("tvd: {} does not fit the kernel's int32 arguments", v);
  return static_cast<int32_t>(v);
}

struct Forward {
  Tensor loss, grads;
};

// tv_distance_forward_triton(p [BT, V], q [BT, V], shift_labels [BT] or undefined, reduction, ignore_index)
Forward tv_distance_forward_triton(const Tensor& p, const Tensor& q, const Tensor& shift_labels, int reduction,
                                   int ignore_index, bool has_label) {
  const int64_t BT = p.size(0), V = p.size(1);
  const int BLOCK_SIZE = static_cast<int>(std::min(MAX_FUSED_SIZE, liger::next_power_of_2(V)));
  const int num_warps = get_num_warps(BLOCK_SIZE);
  const tritium::Grid grid(BT);

  const std::vector<int64_t> out_size = reduction == _REDUCTION_MODE_NONE ? std::vector<int64_t>{BT, V} : std::vector<int64_t>{BT};
  // Ignored rows leave their row sum as torch.zeros made it; the pointwise loss is written everywhere.
  Tensor output_tensor = g_poison && reduction == _REDUCTION_MODE_NONE
                             ? tritium::ops::full(out_size, NAN, DType::f32, p.device())
                             : tritium::ops::zeros(out_size, DType::f32, p.device());
  Tensor grads = g_poison ? tritium::ops::full({BT, V}, NAN, p.dtype(), p.device()) : Tensor::empty({BT, V}, p.dtype(), p.device());

  int64_t n_non_ignore = BT;
  if (has_label)  // (shift_labels != ignore_index).sum().item()
    n_non_ignore = BT - int64_t(liger::host(tritium::ops::sum(tritium::ops::eq(shift_labels, double(ignore_index))))[0]);

  // Pre-compute gradient scale factor (fused into kernel to avoid separate division)
  double scale = 1.0;
  if (reduction == _REDUCTION_MODE_BATCHMEAN)
    scale = 1.0 / double(n_non_ignore);
  else if (reduction == _REDUCTION_MODE_MEAN)
    scale = 1.0 / double(n_non_ignore * V);

  Tensor label = has_label ? shift_labels : Tensor::empty({1}, DType::f32, p.device());
  _tv_distance_kernel[grid](p, i32(p.stride(0)), q, i32(q.stride(0)), output_tensor, i32(output_tensor.stride(0)), grads,
                            i32(grads.stride(0)), label, ignore_index, i32(V), float(scale),
                            Meta{{"BLOCK_SIZE", BLOCK_SIZE}, {"HAS_LABEL", has_label}, {"reduction", reduction}},
                            liger::warps(num_warps));

  // Loss and gradients are already scaled inside the kernel: no separate division needed
  if (reduction == _REDUCTION_MODE_BATCHMEAN || reduction == _REDUCTION_MODE_MEAN) return {tritium::ops::sum(output_tensor), grads};
  if (reduction == _REDUCTION_MODE_SUM) return {tritium::ops::sum(output_tensor, {0}), grads};
  return {output_tensor, grads};
}

// tvd_backward_triton(grad_output, grads): if this is the last layer, grad_output is 1.0; skip the mul.
Tensor tvd_backward_triton(double grad_output, const Tensor& grads) {
  if (grad_output == 1.0) return grads;
  return tritium::ops::mul(grads, grad_output);
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  int64_t BT, V;
  DType dtype;
  int reduction;
  bool has_label;
};

// softmax rows of N(0, 1) values, as benchmark_tvd.py and Liger's tests make the distributions.
std::vector<double> softmax_rows(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> v(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < cols; ++j) m = std::max(m, v[size_t(i * cols + j)] = normal(rng));
    for (int64_t j = 0; j < cols; ++j) s += (v[size_t(i * cols + j)] = std::exp(v[size_t(i * cols + j)] - m));
    for (int64_t j = 0; j < cols; ++j) v[size_t(i * cols + j)] /= s;
  }
  return v;
}

double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> pv = softmax_rows(c.BT, c.V, rng), qv = softmax_rows(c.BT, c.V, rng);
  Tensor p = Tensor::from_vector(pv, {c.BT, c.V}, device).to(c.dtype);
  Tensor q = Tensor::from_vector(qv, {c.BT, c.V}, device).to(c.dtype);
  pv = liger::host(p), qv = liger::host(q);
  const int ignore_index = -100;
  std::vector<int64_t> labels(size_t(c.BT));
  for (int64_t i = 0; i < c.BT; ++i) labels[size_t(i)] = (i % 3 == 2) ? ignore_index : int64_t(rng() % uint32_t(c.V));
  Tensor shift_labels = c.has_label ? Tensor::from_vector(labels, {c.BT}, device) : Tensor();

  g_poison = true;
  Forward f = tv_distance_forward_triton(p, q, shift_labels, c.reduction, ignore_index, c.has_label);
  g_poison = false;
  const double grad_output = 0.5;
  Tensor g = tvd_backward_triton(grad_output, f.grads);

  int64_t n_non_ignore = c.BT;
  if (c.has_label) n_non_ignore = int64_t(std::count_if(labels.begin(), labels.end(), [&](int64_t l) { return l != ignore_index; }));
  const double scale = c.reduction == _REDUCTION_MODE_BATCHMEAN ? 1.0 / double(n_non_ignore)
                       : c.reduction == _REDUCTION_MODE_MEAN    ? 1.0 / double(n_non_ignore * c.V)
                                                                : 1.0;
  std::vector<double> pointwise(pv.size(), 0.0), ref_grad(pv.size(), 0.0);
  double total = 0;
  for (int64_t i = 0; i < c.BT; ++i) {
    if (c.has_label && labels[size_t(i)] == ignore_index) continue;
    for (int64_t j = 0; j < c.V; ++j) {
      const size_t k = size_t(i * c.V + j);
      pointwise[k] = 0.5 * std::abs(pv[k] - qv[k]);
      total += pointwise[k] * scale;
      ref_grad[k] = grad_output * (pv[k] > qv[k] ? 0.5 : -0.5) * scale;
    }
  }
  const std::vector<double> ref_loss = c.reduction == _REDUCTION_MODE_NONE ? pointwise : std::vector<double>{total};
  std::vector<double> got_loss = liger::host(f.loss);
  if (c.reduction != _REDUCTION_MODE_NONE && got_loss.size() != 1) return INFINITY;
  return std::max(liger::rel_error(got_loss, ref_loss), liger::rel_error(liger::host(g), ref_grad));
}

bool check(const tritium::Device& device) {
  // Every reduction, with labels (every third row ignore_index) and without, a vocabulary over
  // MAX_FUSED_SIZE (20000: two chunks, the second partial) and ones under a block, f32 and bf16.
  const std::vector<Case> cases = {{7, 20000, DType::f32, _REDUCTION_MODE_BATCHMEAN, true},
                                   {9, 700, DType::f32, _REDUCTION_MODE_NONE, true},
                                   {9, 700, DType::f32, _REDUCTION_MODE_SUM, false},
                                   {8, 1100, DType::bf16, _REDUCTION_MODE_MEAN, true},
                                   {5, 900, DType::f16, _REDUCTION_MODE_BATCHMEAN, false}};
  const char* names[] = {"none", "sum", "mean", "batchmean"};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.BT * 31 + c.V + c.reduction));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {}x{} {}{} {:.1e}", detail.empty() ? "(loss, grad: " : ", ", tritium::dtype_name(c.dtype), c.BT,
                          c.V, names[c.reduction], c.has_label ? " labels" : "", rel);
  }
  detail += "; bounds f32 1e-5, f16 1e-3, bf16 1e-2; shown: worst error / bound)";
  return suite::report("tvd", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_tvd.py: the default model's vocabulary (llama_3_8b: V = 128256), fp32 softmax
// distributions, batchmean, a sweep of BT. GB/s from the bytes moved (p and q read, the gradient
// written; the row sums are negligible).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t V = 128256;
  std::vector<int64_t> bts = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192} : std::vector<int64_t>{16};
  std::vector<suite::Row> rows;
  for (int64_t BT : bts) {
    auto& gen = tritium::ops::default_generator();
    Tensor p = tritium::ops::softmax(tritium::ops::randn({BT, V}, gen, DType::f32, device), -1);
    Tensor q = tritium::ops::softmax(tritium::ops::randn({BT, V}, gen, DType::f32, device), -1);
    const double bytes = 3.0 * double(BT) * double(V) * 4.0;
    const double fwd =
        tritium::do_bench([&] { tv_distance_forward_triton(p, q, Tensor(), _REDUCTION_MODE_BATCHMEAN, -100, false); }, device)
            .median_ms;
    rows.push_back({fmt::format("fwd+grad BT={} V={} f32 batchmean", BT, V), fwd, bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "tvd",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/tvd.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
