// jsd: Liger-Kernel's generalised Jensen-Shannon divergence (linkedin/Liger-Kernel
// src/liger_kernel/ops/jsd.py, read at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel):
// _jsd_kernel (one program a row walking it in BLOCK_SIZE chunks, input and target in log space;
// beta 0 is the forward KL, beta 1 the reverse KL, anything else the generalised JSD; the loss and
// the gradient of the input are both computed in the forward pass, scaled by 1 / n_non_ignore; a
// row whose shift label is ignore_index stores a zero gradient and returns early), and the wrappers
// jsd_forward (BLOCK_SIZE = min(MAX_FUSED_SIZE = 65536, next_power_of_2(V)), n_non_ignore counted
// from the labels, a dummy label pointer without labels, the loss summed and cast to the input's
// dtype) and jsd_backward (times grad_output unless it is 1).
//
// Deviations: LigerJSDFunction's autograd plumbing is left out; the wrappers' torch reductions are
// Tritium ops; grad_output is a host number (the original compares a device tensor with 1.0).
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

auto _jsd_kernel = tritium::kernel(
    "_jsd_kernel",
    [](P X_ptr, tl::i32 X_stride, P Y_ptr, tl::i32 Y_stride, P loss_ptr, tl::i32 loss_stride, P dX_ptr,
       tl::i32 dX_stride, P label_ptr, double beta, tl::i32 n_non_ignore, int ignore_index, tl::i32 n_cols,
       int BLOCK_SIZE, bool HAS_LABEL) {
      // JSD(P || Q) = (KL(P || M) + KL(Q || M)) / 2, M = (1/2) * (P + Q) = (1/2) * (e ^ Y + e ^ X)
      //             = sum(P * log P + Q * log Q - 2 * M * log M) / 2
      //             = sum(e ^ Y * Y + e ^ X * X - 2 * M * log M) / 2
      // grad_x_i = 0.5 * Q * (X - log_M)
      auto pid = tl::program_id(0).to(tl::int64);
      X_ptr += pid * X_stride;
      dX_ptr += pid * dX_stride;
      Y_ptr += pid * Y_stride;
      loss_ptr += pid * loss_stride;
      label_ptr += pid;

      if (HAS_LABEL) {
        auto label = tl::load(label_ptr);
        tl::if_(label == ignore_index, [&] {
          for (auto i : tl::range(0, n_cols, BLOCK_SIZE)) {
            auto offsets = i + tl::arange(0, BLOCK_SIZE);
            tl::store(dX_ptr + offsets, 0.0, offsets < n_cols);
          }
          tl::return_();
        });
      }

      for (auto i : tl::range(0, n_cols, BLOCK_SIZE)) {
        auto offsets = i + tl::arange(0, BLOCK_SIZE);
        auto mask = offsets < n_cols;
        auto X = tl::load(X_ptr + offsets, mask, -INFINITY).to(tl::float32);
        auto Y = tl::load(Y_ptr + offsets, mask, -INFINITY).to(tl::float32);

        tl::tensor loss, dX;
        if (beta == 0.0) {  // forward KL
          auto Y_max = tl::max(Y, 0);
          auto Y_shifted = Y - Y_max;
          auto Y_prob = tl::exp(Y_shifted) * tl::exp(Y_max);  // Compensate for the shift
          loss = Y_prob * (Y - X);
          dX = -Y_prob;
        } else if (beta == 1.0) {  // reverse KL
          auto X_max = tl::max(X, 0);
          auto X_shifted = X - X_max;
          auto X_prob = tl::exp(X_shifted) * tl::exp(X_max);  // Compensate for the shift
          loss = X_prob * (X - Y);
          dX = loss + X_prob;
        } else {
          auto max_val = tl::maximum(tl::max(X, 0), tl::max(Y, 0));
          auto X_shifted = X - max_val;
          auto Y_shifted = Y - max_val;

          // Pre-compute exp(max_val) since it's used twice
          auto exp_max = tl::exp(max_val);

          // Compute exp terms with compensation
          auto Q = tl::exp(X_shifted) * exp_max;  // = exp(X)
          auto Pr = tl::exp(Y_shifted) * exp_max;  // = exp(Y)

          // Pre-compute common terms
          auto beta_P = beta * Pr;
          auto one_minus_beta_Q = (1 - beta) * Q;
          auto M = beta_P + one_minus_beta_Q;
          auto log_M = tl::log(M);  // No need to compensate as M is already in original scale

          loss = beta_P * Y + one_minus_beta_Q * X - M * log_M;
          dX = one_minus_beta_Q * (X - log_M);
        }

        // Pre-compute scaling factor (Python's 1.0 / int is true division)
        auto scale = 1.0 / n_non_ignore;
        loss = loss * scale;
        dX = dX * scale;

        tl::store(loss_ptr + offsets, loss, mask);
        tl::store(dX_ptr + offsets, dX, mask);
      }
    },
    {"X_ptr", "X_stride", "Y_ptr", "Y_stride", "loss_ptr", "loss_stride", "dX_ptr", "dX_stride", "label_ptr", "beta",
     "n_non_ignore", "ignore_index", "n_cols", "BLOCK_SIZE", "HAS_LABEL"});

constexpr int64_t MAX_FUSED_SIZE = 65536;  // CUDA's (XPU uses 4096)

bool g_poison = false;  // while checking: dX (torch.empty_like in the original) starts as NaN

int32_t i32(int64_t v) {
  if (v > INT32_MAX || v < INT32_MIN) tritium::fail("jsd: {} does not fit the kernel's int32 arguments", v);
  return static_cast<int32_t>(v);
}

struct Forward {
  Tensor loss, dX;
};

// jsd_forward(_input [BT, V], target [BT, V], shift_labels [BT] or undefined, beta, ignore_index)
Forward jsd_forward(const Tensor& _input, const Tensor& target, const Tensor& shift_labels, double beta,
                    int ignore_index, bool has_label) {
  const int64_t BT = _input.size(0), V = _input.size(1);
  const int64_t n_rows = BT;
  const int BLOCK_SIZE = static_cast<int>(std::min(MAX_FUSED_SIZE, liger::next_power_of_2(V)));
  // non reduction loss
  Tensor loss = tritium::ops::zeros({BT, V}, DType::f32, _input.device());
  Tensor dX = g_poison ? tritium::ops::full({BT, V}, NAN, _input.dtype(), _input.device())
                       : Tensor::empty({BT, V}, _input.dtype(), _input.device());

  int64_t n_non_ignore = BT;
  if (has_label)  // (shift_labels != ignore_index).sum().item()
    n_non_ignore = BT - int64_t(liger::host(tritium::ops::sum(tritium::ops::eq(shift_labels, double(ignore_index))))[0]);

  // dummy ptr if no label
  Tensor label = has_label ? shift_labels : Tensor::empty({1}, DType::f32, _input.device());
  _jsd_kernel[{n_rows}](_input, i32(_input.stride(-2)), target, i32(target.stride(-2)), loss, i32(loss.stride(-2)), dX,
                        i32(dX.stride(-2)), label, beta, i32(n_non_ignore), ignore_index, i32(V), BLOCK_SIZE, has_label);
  return {tritium::ops::sum(loss).to(_input.dtype()), dX};
}

// jsd_backward(dX, grad_output): if jsd is the last layer, grad_output is 1.0; skip the mul then.
Tensor jsd_backward(const Tensor& dX, double grad_output) {
  if (grad_output == 1.0) return dX;
  return tritium::ops::mul(dX, grad_output);
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  int64_t BT, V;
  DType dtype;
  double beta;
  bool has_label;
};

// log_softmax rows of N(0, 1) values (Liger's tests and benchmark make inputs this way).
std::vector<double> log_softmax_rows(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> v(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < cols; ++j) m = std::max(m, v[size_t(i * cols + j)] = normal(rng));
    for (int64_t j = 0; j < cols; ++j) s += std::exp(v[size_t(i * cols + j)] - m);
    for (int64_t j = 0; j < cols; ++j) v[size_t(i * cols + j)] -= m + std::log(s);
  }
  return v;
}

// The loss and the gradient against float64; the worst relative error.
double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> x = log_softmax_rows(c.BT, c.V, rng), y = log_softmax_rows(c.BT, c.V, rng);
  Tensor X = Tensor::from_vector(x, {c.BT, c.V}, device).to(c.dtype);
  Tensor Y = Tensor::from_vector(y, {c.BT, c.V}, device).to(c.dtype);
  x = liger::host(X), y = liger::host(Y);
  const int ignore_index = -100;
  std::vector<int64_t> labels(size_t(c.BT));
  for (int64_t i = 0; i < c.BT; ++i) labels[size_t(i)] = (i % 3 == 1) ? ignore_index : int64_t(rng() % uint32_t(c.V));
  Tensor shift_labels = c.has_label ? Tensor::from_vector(labels, {c.BT}, device) : Tensor();

  g_poison = true;
  Forward f = jsd_forward(X, Y, shift_labels, c.beta, ignore_index, c.has_label);
  g_poison = false;
  const double grad_output = 0.75;
  Tensor grad = jsd_backward(f.dX, grad_output);

  int64_t n_non_ignore = c.BT;
  if (c.has_label) n_non_ignore = int64_t(std::count_if(labels.begin(), labels.end(), [&](int64_t l) { return l != ignore_index; }));
  double ref_loss = 0;
  std::vector<double> ref_grad(x.size(), 0.0);
  for (int64_t i = 0; i < c.BT; ++i) {
    if (c.has_label && labels[size_t(i)] == ignore_index) continue;
    for (int64_t j = 0; j < c.V; ++j) {
      const size_t k = size_t(i * c.V + j);
      const double Q = std::exp(x[k]), Pr = std::exp(y[k]);
      double loss, dX;
      if (c.beta == 0.0) {
        loss = Pr * (y[k] - x[k]), dX = -Pr;
      } else if (c.beta == 1.0) {
        loss = Q * (x[k] - y[k]), dX = loss + Q;
      } else {
        const double M = c.beta * Pr + (1 - c.beta) * Q;
        loss = c.beta * Pr * y[k] + (1 - c.beta) * Q * x[k] - M * std::log(M);
        dX = (1 - c.beta) * Q * (x[k] - std::log(M));
      }
      ref_loss += loss / double(n_non_ignore);
      ref_grad[k] = grad_output * dX / double(n_non_ignore);
    }
  }
  // The loss is cast to the input's dtype, as the original's: compare against the rounded value.
  const double ref_loss_rounded = liger::host(Tensor::from_vector(std::vector<double>{ref_loss}, {1}, device).to(c.dtype))[0];
  const double loss_err = std::abs(liger::host(f.loss)[0] - ref_loss) / std::max(std::abs(ref_loss_rounded), 1e-30);
  return std::max(loss_err, liger::rel_error(liger::host(grad), ref_grad));
}

bool check(const tritium::Device& device) {
  // The three branches of beta, with and without labels (every third row ignore_index: its
  // gradient row is zero, its loss row untouched), a vocabulary over MAX_FUSED_SIZE (66000: two
  // chunks, the second partial) and ones under a block (700 of 1024), f32 and bf16.
  const std::vector<Case> cases = {{3, 66000, DType::f32, 0.5, true},
                                   {9, 700, DType::f32, 0.0, true},
                                   {9, 700, DType::f32, 1.0, false},
                                   {7, 1100, DType::bf16, 0.3, true},
                                   {5, 900, DType::f32, 0.5, false}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.BT * 31 + c.V + int(c.beta * 10)));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {}x{} beta={}{} {:.1e}", detail.empty() ? "(loss, grad: " : ", ", tritium::dtype_name(c.dtype),
                          c.BT, c.V, c.beta, c.has_label ? " labels" : "", rel);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("jsd", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_jsd.py: the default model's vocabulary (llama_3_8b: V = 128256), fp32 log_softmax
// inputs, beta 0.5, no labels, a sweep of BT. The forward computes the loss and the gradient (the
// backward with grad_output 1 returns it untouched). GB/s from the bytes moved (X and Y read, the
// f32 loss and dX written).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t V = 128256;
  std::vector<int64_t> bts = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192} : std::vector<int64_t>{16};
  std::vector<suite::Row> rows;
  for (int64_t BT : bts) {
    auto& gen = tritium::ops::default_generator();
    Tensor X = tritium::ops::log_softmax(tritium::ops::randn({BT, V}, gen, DType::f32, device), -1);
    Tensor Y = tritium::ops::log_softmax(tritium::ops::randn({BT, V}, gen, DType::f32, device), -1);
    const double bytes = 4.0 * double(BT) * double(V) * 4.0;
    const double fwd = tritium::do_bench([&] { jsd_forward(X, Y, Tensor(), 0.5, -100, false); }, device).median_ms;
    rows.push_back({fmt::format("fwd+grad BT={} V={} f32 beta=0.5", BT, V), fwd, bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "jsd",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/jsd.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
