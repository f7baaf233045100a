// rms_layernorm: Unsloth's fast RMS LayerNorm (unslothai/unsloth unsloth/kernels/rms_layernorm.py,
// read at commit ee73bcb209df: _rms_layernorm_forward, _gemma_rms_layernorm_forward,
// _rms_layernorm_backward and the host side of Fast_RMS_Layernorm; calculate_settings and
// MAX_FUSED_SIZE from unsloth/kernels/utils.py). Apache-2.0, as Unsloth.
//
// One program a row: the whole row is one block (BLOCK_SIZE = next_power_of_2(n_cols), at most
// 65536), the mean square is a tl.sum, the inverse RMS is saved (r) for the backward, which
// recomputes the normalised row from it. Llama's form rounds the normalised row to W's dtype
// before the product (as Hugging Face does); Gemma's computes everything in f32 with (W + 1).
// The backward writes dX over dY (Llama) or into dX (Gemma).
//
// As in the original, the row strides, n_cols and eps are constexpr (meta-parameters here: a
// specialisation per shape), and num_warps follows calculate_settings. Deviations: none in the
// kernels; Triton's torch_gpu_device context has no counterpart (the tensors carry the device).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "suite.h"
#include "unsloth_utils.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

using unsloth::calculate_settings;  // kernels/unsloth_utils.h
using unsloth::MAX_FUSED_SIZE;
using unsloth::next_power_of_2;

auto _rms_layernorm_forward = tritium::kernel(
    "_rms_layernorm_forward",
    [](P Y, int Y_row_stride, P X, int X_row_stride, P W, [[maybe_unused]] int W_row_stride, P r, int r_row_stride,
       int n_cols, double eps, int BLOCK_SIZE) {
      auto row_idx = tl::program_id(0);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      Y += row_idx * Y_row_stride;
      X += row_idx * X_row_stride;
      r += row_idx * r_row_stride;

      auto X_row = tl::load(X + col_offsets, mask, 0).to(tl::float32);
      auto W_row = tl::load(W + col_offsets, mask, 0);  // .to(tl.float32)

      auto row_var = tl::sum(X_row * X_row, 0) / n_cols;
      // Explicit float32 scalar to ensure correct type promotion on HIP/ROCm
      auto eps_f32 = tl::full({}, eps, tl::float32);
      auto inv_var = tl::rsqrt(row_var + eps_f32);
      tl::store(r, inv_var);
      auto normed = X_row * inv_var;
      normed = normed.to(W_row.dtype());  // Exact copy from HF
      auto output = normed * W_row;
      tl::store(Y + col_offsets, output, mask);
    },
    {"Y", "Y_row_stride", "X", "X_row_stride", "W", "W_row_stride", "r", "r_row_stride", "n_cols", "eps", "BLOCK_SIZE"});

auto _gemma_rms_layernorm_forward = tritium::kernel(
    "_gemma_rms_layernorm_forward",
    [](P Y, int Y_row_stride, P X, int X_row_stride, P W, [[maybe_unused]] int W_row_stride, P r, int r_row_stride,
       int n_cols, double eps, int BLOCK_SIZE) {
      auto row_idx = tl::program_id(0);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      Y += row_idx * Y_row_stride;
      X += row_idx * X_row_stride;
      r += row_idx * r_row_stride;

      auto X_row = tl::load(X + col_offsets, mask, 0).to(tl::float32);
      auto W_row = tl::load(W + col_offsets, mask, 0).to(tl::float32);

      auto row_var = tl::sum(X_row * X_row, 0) / n_cols;
      auto eps_f32 = tl::full({}, eps, tl::float32);
      auto inv_var = tl::rsqrt(row_var + eps_f32);
      tl::store(r, inv_var);
      auto normed = X_row * inv_var;
      auto output = normed * (W_row + 1.0);

      tl::store(Y + col_offsets, output, mask);
    },
    {"Y", "Y_row_stride", "X", "X_row_stride", "W", "W_row_stride", "r", "r_row_stride", "n_cols", "eps", "BLOCK_SIZE"});

// @triton.heuristics({"GEMMA": lambda args: bool(args["GEMMA"])}): the identity on a bool, so
// the launch passes GEMMA directly.
auto _rms_layernorm_backward = tritium::kernel(
    "_rms_layernorm_backward",
    [](P dY, int dY_row_stride, P dX, [[maybe_unused]] int dX_row_stride, P X, int X_row_stride, P W,
       [[maybe_unused]] int W_row_stride, P r, int r_row_stride, int n_cols, [[maybe_unused]] double eps, bool GEMMA,
       int BLOCK_SIZE) {
      auto row_idx = tl::program_id(0);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      dY += row_idx * dY_row_stride;
      X += row_idx * X_row_stride;
      r += row_idx * r_row_stride;

      if (GEMMA)
        dX += row_idx * dY_row_stride;
      else
        dX = dY;

      auto dY_row = tl::load(dY + col_offsets, mask, 0).to(tl::float32);
      auto X_row = tl::load(X + col_offsets, mask, 0).to(tl::float32);
      auto W_row = tl::load(W + col_offsets, mask, 0).to(tl::float32);

      // Get saved row variance
      auto inv_var = tl::load(r).to(tl::float32);
      auto normed = X_row * inv_var;

      tl::tensor dY_W;
      if (GEMMA)
        dY_W = dY_row * (W_row + 1.0);
      else
        dY_W = dY_row * W_row;

      auto rowsum_dY_normed = tl::sum(dY_W * normed, 0);
      auto output = inv_var / n_cols * (n_cols * dY_W - normed * rowsum_dY_normed);
      tl::store(dX + col_offsets, output, mask);
    },
    {"dY", "dY_row_stride", "dX", "dX_row_stride", "X", "X_row_stride", "W", "W_row_stride", "r", "r_row_stride",
     "n_cols", "eps", "GEMMA", "BLOCK_SIZE"});

bool g_poison = false;  // while checking: outputs start as NaN

Tensor empty(Tensor::Shape shape, DType dtype, tritium::Device device) {
  return g_poison ? tritium::ops::full(shape, NAN, dtype, device) : Tensor::empty(shape, dtype, device);
}

struct Forward {
  Tensor Y, r;  // r: the saved inverse RMS a row (f32)
  int BLOCK_SIZE, num_warps;
};

// Fast_RMS_Layernorm.forward
Forward rms_forward(const Tensor& X_in, const Tensor& W, double eps, bool gemma) {
  if (X_in.dim() < 1 || W.dim() != 1 || W.size(0) != X_in.size(-1))
    tritium::fail("fast_rms_layernorm: X {} and W {} do not match (W is [X.shape[-1]])", X_in.str(), W.str());
  const int64_t dim = X_in.size(-1);
  Tensor X = X_in.reshape({X_in.numel() / dim, dim});
  const int64_t n_rows = X.size(0), n_cols = X.size(1);
  auto [BLOCK_SIZE, num_warps] = calculate_settings(n_cols);
  Tensor Y = empty({n_rows, n_cols}, X.dtype(), X.device());
  Tensor r = empty({n_rows}, DType::f32, X.device());
  auto& fx = gemma ? _gemma_rms_layernorm_forward : _rms_layernorm_forward;
  fx[{n_rows}](Y, int(Y.stride(0)), X, int(X.stride(0)), W, int(W.stride(0)), r, int(r.stride(0)), int(n_cols), eps,
               BLOCK_SIZE, tritium::Options{.num_warps = num_warps, .num_stages = 3, .device = std::nullopt});
  return {Y.view(X_in.shape()), r, BLOCK_SIZE, num_warps};
}

// Fast_RMS_Layernorm.backward: dX (over dY for Llama, which the caller must not reuse).
Tensor rms_backward(const Tensor& dY_in, const Tensor& X, const Tensor& W, const Forward& f, double eps, bool gemma) {
  const int64_t dim = dY_in.size(-1);
  Tensor dY = dY_in.reshape({dY_in.numel() / dim, dim});
  const int64_t n_rows = dY.size(0), n_cols = dY.size(1);
  Tensor Xr = X.reshape({n_rows, n_cols});
  Tensor dX = gemma ? empty(dY.shape(), dY.dtype(), dY.device()) : dY;
  _rms_layernorm_backward[{n_rows}](dY, int(dY.stride(0)), dX, int(dX.stride(0)), Xr, int(Xr.stride(0)), W,
                                    int(W.stride(0)), f.r, int(f.r.stride(0)), int(n_cols), eps, gemma, f.BLOCK_SIZE,
                                    tritium::Options{.num_warps = f.num_warps, .num_stages = 3, .device = std::nullopt});
  return dX.view(dY_in.shape());
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

Tensor random(Tensor::Shape shape, DType dtype, tritium::Device device, std::mt19937& rng, double mean = 0) {
  std::normal_distribution<double> normal(mean, 1);
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = normal(rng);
  return Tensor::from_vector(v, shape, device).to(dtype);
}

std::vector<float> as_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// Relative errors of Y, r and dX against float64 (rows x cols; a 3-D X when rows splits).
std::array<double, 3> relative_errors(const tritium::Device& device, int64_t batch, int64_t rows, int64_t cols,
                                      DType dtype, bool gemma, uint32_t seed) {
  std::mt19937 rng(seed);
  const double eps = 1e-6;
  Tensor X = random({batch, rows, cols}, dtype, device, rng);
  Tensor W = random({cols}, dtype, device, rng, gemma ? 0.0 : 1.0);
  Tensor dY = random({batch, rows, cols}, dtype, device, rng);
  const auto hx = host(X), hw = host(W), hdy = host(dY);
  g_poison = true;
  Forward f = rms_forward(X, W, eps, gemma);
  Tensor dX = rms_backward(dY.clone(), X, W, f, eps, gemma);
  g_poison = false;
  const int64_t n_rows = batch * rows;
  std::vector<double> ref_y(size_t(n_rows * cols)), ref_r(static_cast<size_t>(n_rows)), ref_dx(size_t(n_rows * cols));
  for (int64_t i = 0; i < n_rows; ++i) {
    const double* x = &hx[size_t(i * cols)];
    const double* dy = &hdy[size_t(i * cols)];
    double ss = 0;
    for (int64_t j = 0; j < cols; ++j) ss += x[j] * x[j];
    const double inv = 1 / std::sqrt(ss / double(cols) + eps);
    ref_r[size_t(i)] = inv;
    double dot = 0;  // sum_j dy_j w'_j x_j inv
    for (int64_t j = 0; j < cols; ++j) {
      const double w = gemma ? hw[size_t(j)] + 1 : hw[size_t(j)];
      ref_y[size_t(i * cols + j)] = x[j] * inv * w;
      dot += dy[j] * w * x[j] * inv;
    }
    // d/dx of x * inv * w: inv * (dy w - x inv * mean(dy w x inv))
    for (int64_t j = 0; j < cols; ++j) {
      const double w = gemma ? hw[size_t(j)] + 1 : hw[size_t(j)];
      ref_dx[size_t(i * cols + j)] = inv * (dy[j] * w - x[j] * inv * dot / double(cols));
    }
  }
  return {suite::rel_error(as_float(host(f.Y)), ref_y), suite::rel_error(as_float(host(f.r)), ref_r),
          suite::rel_error(as_float(host(dX)), ref_dx)};
}

bool check(const tritium::Device& device) {
  struct Case {
    int64_t batch, rows, cols;
    DType dtype;
    bool gemma;
  };
  // Row lengths off the power-of-two blocks (masked tails), one past 2048 (num_warps 8), both
  // forms, each dtype.
  const std::vector<Case> cases = {{2, 5, 100, DType::f32, false}, {1, 7, 2500, DType::f16, false},
                                   {3, 3, 333, DType::bf16, false}, {2, 4, 77, DType::f32, true},
                                   {1, 6, 1000, DType::f16, true},  {1, 3, 129, DType::bf16, true}};
  bool ok = true;
  std::string detail;
  double worst = 0;
  for (const Case& c : cases) {
    auto rel = relative_errors(device, c.batch, c.rows, c.cols, c.dtype, c.gemma, uint32_t(c.cols * 3 + c.rows));
    // fp32 1e-5; f16 1e-3 and bf16 1e-2 (the row rounded to W's dtype, then the product rounded).
    const double bound = c.dtype == DType::bf16 ? 1e-2 : c.dtype == DType::f16 ? 1e-3 : 1e-5;
    const double e = std::max({rel[0], rel[1], rel[2]});
    if (!(e <= bound)) ok = false;
    worst = std::max(worst, e / bound);
    detail += fmt::format("{}{}{} {}x{}x{} Y {:.1e} r {:.1e} dX {:.1e}", detail.empty() ? "(" : ", ",
                          c.gemma ? "gemma " : "", tritium::dtype_name(c.dtype), c.batch, c.rows, c.cols, rel[0], rel[1],
                          rel[2]);
  }
  detail += "; bounds f32 1e-5, f16 1e-3, bf16 1e-2; reported: worst error / bound)";
  return suite::report("rms_layernorm", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// Unsloth ships no benchmark for this kernel: Llama-sized rows (hidden 2048 to 16384) over
// 4 x 2048 tokens, in bf16 (Unsloth's training dtype) and f16, forward and backward.
std::vector<suite::Row> bench(const tritium::Device& device) {
  std::vector<int64_t> hidden = device.is_cuda() ? std::vector<int64_t>{2048, 4096, 8192, 16384} : std::vector<int64_t>{1024};
  const int64_t tokens = device.is_cuda() ? 4 * 2048 : 256;
  std::vector<suite::Row> rows;
  for (DType dtype : {DType::bf16, DType::f16})
    for (int64_t n : hidden) {
      Tensor X = tritium::ops::randn({tokens, n}, tritium::ops::default_generator(), DType::f32, device).to(dtype);
      Tensor W = tritium::ops::randn({n}, tritium::ops::default_generator(), DType::f32, device).to(dtype);
      Tensor dY = tritium::ops::randn({tokens, n}, tritium::ops::default_generator(), DType::f32, device).to(dtype);
      const double es = double(tritium::dtype_bytes(dtype));
      Forward f = rms_forward(X, W, 1e-6, false);
      const double fwd = tritium::do_bench([&] { rms_forward(X, W, 1e-6, false); }, device).median_ms;
      // In place over dY, as Unsloth's backward: the values change from run to run, the traffic not.
      const double bwd = tritium::do_bench([&] { rms_backward(dY, X, W, f, 1e-6, false); }, device).median_ms;
      const double fwd_bytes = (2.0 * double(tokens * n) + double(n)) * es + 4.0 * double(tokens);
      const double bwd_bytes = (3.0 * double(tokens * n) + double(n)) * es + 4.0 * double(tokens);
      const std::string shape = fmt::format("{}x{} {}", tokens, n, tritium::dtype_name(dtype));
      rows.push_back({"forward " + shape, fwd, fwd_bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
      rows.push_back({"backward " + shape, bwd, bwd_bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
    }
  return rows;
}

const bool registered = suite::add({.name = "rms_layernorm",
                                    .source = "unslothai/unsloth unsloth/kernels/rms_layernorm.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
