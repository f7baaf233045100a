// poly_norm: Liger-Kernel's PolyNorm, y = w0 norm(x^3) + w1 norm(x^2) + w2 norm(x) + b with
// norm(u) = u / sqrt(mean(u^2) + eps) (linkedin/Liger-Kernel src/liger_kernel/ops/poly_norm.py,
// read at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel): _poly_norm_forward_kernel (a row a
// program, the powers in X's dtype, the three rstd cached in fp32) and _poly_norm_backward_kernel
// (one program per SM over rows_per_program rows in fp32, writing its partial dW (3) and dB, which
// the wrapper sums), with the wrappers poly_norm_forward / poly_norm_backward (calculate_settings).
//
// Deviations: the backward's program count is the multiprocessor count on CUDA, as the original,
// and a fixed 4 on the CPU (the original uses 1 off CUDA/XPU/NPU); the XPU options and the
// autograd plumbing are left out.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "autotune/do_bench.h"
#include "liger_utils.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

constexpr int kCpuSmCount = 4;

auto _poly_norm_forward_kernel = tritium::kernel(
    "_poly_norm_forward_kernel",
    [](P Y_ptr, tl::i32 Y_row_stride, P X_ptr, tl::i32 X_row_stride, P W_ptr, P B_ptr, P RSTD_ptr, tl::i32 RSTD_row_stride,
       tl::i32 n_cols, tl::f32 eps_arg, int BLOCK_SIZE) {
      auto row_idx = tl::program_id(0).to(tl::int64);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      Y_ptr += row_idx * Y_row_stride;
      X_ptr += row_idx * X_row_stride;
      RSTD_ptr += row_idx * RSTD_row_stride;

      auto X_row = tl::load(X_ptr + col_offsets, mask, 0.0);
      auto w0 = tl::load(W_ptr + 0);
      auto w1 = tl::load(W_ptr + 1);
      auto w2 = tl::load(W_ptr + 2);
      auto b = tl::load(B_ptr);

      // Compute x³, x², x
      auto X_pow3 = X_row * X_row * X_row;
      auto X_pow2 = X_row * X_row;
      auto X_pow1 = X_row;

      auto eps = eps_arg.to(tl::float32);

      // norm(x³): x³ * rsqrt(mean(x⁶) + eps)
      auto mean_square_3 = tl::sum(X_pow3 * X_pow3, 0) / n_cols;
      auto rstd_3 = tl::rsqrt(mean_square_3 + eps);
      auto norm_x3 = X_pow3 * rstd_3;

      // norm(x²): x² * rsqrt(mean(x⁴) + eps)
      auto mean_square_2 = tl::sum(X_pow2 * X_pow2, 0) / n_cols;
      auto rstd_2 = tl::rsqrt(mean_square_2 + eps);
      auto norm_x2 = X_pow2 * rstd_2;

      // norm(x): x * rsqrt(mean(x²) + eps)
      auto mean_square_1 = tl::sum(X_pow1 * X_pow1, 0) / n_cols;
      auto rstd_1 = tl::rsqrt(mean_square_1 + eps);
      auto norm_x1 = X_pow1 * rstd_1;

      // Cache rstd values for backward pass
      tl::store(RSTD_ptr + 0, rstd_3);
      tl::store(RSTD_ptr + 1, rstd_2);
      tl::store(RSTD_ptr + 2, rstd_1);

      // y = w₀·norm(x³) + w₁·norm(x²) + w₂·norm(x) + b
      auto Y_row = w0 * norm_x3 + w1 * norm_x2 + w2 * norm_x1 + b;

      tl::store(Y_ptr + col_offsets, Y_row, mask);
    },
    {"Y_ptr", "Y_row_stride", "X_ptr", "X_row_stride", "W_ptr", "B_ptr", "RSTD_ptr", "RSTD_row_stride", "n_cols", "eps",
     "BLOCK_SIZE"});

auto _poly_norm_backward_kernel = tritium::kernel(
    "_poly_norm_backward_kernel",
    [](P dY_ptr, tl::i32 dY_row_stride, P dX_ptr, tl::i32 dX_row_stride, P X_ptr, tl::i32 X_row_stride, P W_ptr, P RSTD_ptr,
       tl::i32 RSTD_row_stride, P dW_ptr, tl::i32 dW_row_stride, P dB_ptr, tl::i32 n_rows, tl::i32 n_cols, int rows_per_program,
       int BLOCK_SIZE) {
      // dL/dx_i = sum_p w_p [p x_i^(p-1) grad_i / D_p - (p / d) x_i^(2p-1) S_p / D_p^3],
      // D_p = 1 / rstd_p, S_p = sum(grad * x^p) over the row, d = n_cols, p in {3, 2, 1}
      auto row_block_id = tl::program_id(0).to(tl::int64);
      auto row_start = row_block_id * rows_per_program;
      auto row_end = tl::minimum((row_block_id + 1) * rows_per_program, n_rows);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      // Initialize accumulators for weight and bias gradients (scalars)
      tl::tensor dW0_acc = tl::full({}, 0.0, tl::float32);
      tl::tensor dW1_acc = tl::full({}, 0.0, tl::float32);
      tl::tensor dW2_acc = tl::full({}, 0.0, tl::float32);
      tl::tensor dB_acc = tl::full({}, 0.0, tl::float32);

      // Load weights
      auto w0 = tl::load(W_ptr + 0).to(tl::float32);
      auto w1 = tl::load(W_ptr + 1).to(tl::float32);
      auto w2 = tl::load(W_ptr + 2).to(tl::float32);

      for (auto row_idx : tl::range(row_start, row_end)) {
        auto dy_base = dY_ptr + row_idx * dY_row_stride;
        auto x_base = X_ptr + row_idx * X_row_stride;
        auto dx_base = dX_ptr + row_idx * dX_row_stride;
        auto rstd_base = RSTD_ptr + row_idx * RSTD_row_stride;

        auto dY_row = tl::load(dy_base + col_offsets, mask, 0.0).to(tl::float32);
        auto X_row = tl::load(x_base + col_offsets, mask, 0.0).to(tl::float32);

        // Load cached rstd values
        auto rstd_3 = tl::load(rstd_base + 0).to(tl::float32);
        auto rstd_2 = tl::load(rstd_base + 1).to(tl::float32);
        auto rstd_1 = tl::load(rstd_base + 2).to(tl::float32);

        // Compute powers
        auto X_pow3 = X_row * X_row * X_row;
        auto X_pow2 = X_row * X_row;
        auto X_pow1 = X_row;

        // Accumulate bias gradient: dB = sum(dY)
        dB_acc += tl::sum(dY_row, 0);

        // p = 3
        auto S_3 = tl::sum(dY_row * X_pow3, 0);  // scalar
        auto grad_x_3 = w0 * (3.0 * X_pow2 * rstd_3 * dY_row -
                              (3.0 / n_cols) * X_row * X_row * X_row * X_row * X_row * (rstd_3 * rstd_3 * rstd_3) * S_3);

        // p = 2
        auto S_2 = tl::sum(dY_row * X_pow2, 0);  // scalar
        auto grad_x_2 = w1 * (2.0 * X_row * rstd_2 * dY_row - (2.0 / n_cols) * X_row * X_row * X_row * (rstd_2 * rstd_2 * rstd_2) * S_2);

        // p = 1
        auto S_1 = tl::sum(dY_row * X_pow1, 0);  // scalar
        auto grad_x_1 = w2 * (1.0 * rstd_1 * dY_row - (1.0 / n_cols) * X_row * (rstd_1 * rstd_1 * rstd_1) * S_1);

        // Accumulate weight gradients using closed-form: dW_p = rstd_p * S_p
        dW0_acc += rstd_3 * S_3;
        dW1_acc += rstd_2 * S_2;
        dW2_acc += rstd_1 * S_1;

        // Total gradient
        auto dX_row = grad_x_3 + grad_x_2 + grad_x_1;

        tl::store(dx_base + col_offsets, dX_row, mask);
      }

      // Store accumulated gradients (scalars)
      tl::store(dW_ptr + row_block_id * dW_row_stride + 0, dW0_acc);
      tl::store(dW_ptr + row_block_id * dW_row_stride + 1, dW1_acc);
      tl::store(dW_ptr + row_block_id * dW_row_stride + 2, dW2_acc);
      tl::store(dB_ptr + row_block_id, dB_acc);
    },
    {"dY_ptr", "dY_row_stride", "dX_ptr", "dX_row_stride", "X_ptr", "X_row_stride", "W_ptr", "RSTD_ptr", "RSTD_row_stride", "dW_ptr",
     "dW_row_stride", "dB_ptr", "n_rows", "n_cols", "rows_per_program", "BLOCK_SIZE"});

bool g_poison = false;  // while checking: Y, RSTD and dX start as NaN

Tensor output(const std::vector<int64_t>& shape, DType dtype, const tritium::Device& device) {
  return g_poison ? tritium::ops::full(shape, NAN, dtype, device) : Tensor::empty(shape, dtype, device);
}

int32_t i32(int64_t v) {
  if (v > INT32_MAX) tritium::fail("poly_norm: {} does not fit the kernels' int32 arguments", v);
  return static_cast<int32_t>(v);
}

struct Forward {
  Tensor Y, RSTD;
  int BLOCK_SIZE, num_warps;
};

// poly_norm_forward(X [n_rows, n_cols] contiguous, W [3], B (one value), eps)
Forward poly_norm_forward(const Tensor& X, const Tensor& W, const Tensor& B, float eps = 1e-6f) {
  const int64_t n_rows = X.size(0), n_cols = X.size(1);
  auto [BLOCK_SIZE, num_warps] = liger::calculate_settings(n_cols);
  Tensor Y = output({n_rows, n_cols}, X.dtype(), X.device());
  Tensor RSTD = output({n_rows, 3}, DType::f32, X.device());
  if (W.size(0) != 3) tritium::fail("poly_norm: Weight tensor must have shape (3,), got {}", W.str());
  if (B.numel() != 1) tritium::fail("poly_norm: Bias must be a scalar, got {}", B.str());
  _poly_norm_forward_kernel[{n_rows}](Y, i32(Y.stride(0)), X, i32(X.stride(0)), W, B, RSTD, i32(RSTD.stride(0)), i32(n_cols), eps,
                                      Meta{{"BLOCK_SIZE", BLOCK_SIZE}}, liger::warps(num_warps));
  return {Y, RSTD, BLOCK_SIZE, num_warps};
}

// poly_norm_backward -> (dX, dW, dB)
std::tuple<Tensor, Tensor, Tensor> poly_norm_backward(const Tensor& dY, const Tensor& X, const Tensor& W, const Tensor& RSTD,
                                                      int BLOCK_SIZE, int num_warps, bool in_place) {
  const int64_t n_rows = dY.size(0), n_cols = dY.size(1);
  const int sm_count = X.device().is_cuda() ? tritium::runtime::cuda::properties(X.device().index).multiprocessor_count : kCpuSmCount;
  Tensor dX = in_place ? dY : g_poison ? output({n_rows, n_cols}, dY.dtype(), dY.device()) : tritium::ops::zeros_like(dY);
  Tensor _dW = Tensor::empty({sm_count, 3}, DType::f32, W.device());
  Tensor _dB = Tensor::empty({sm_count}, DType::f32, W.device());
  const int64_t rows_per_program = tritium::cdiv(n_rows, sm_count);
  _poly_norm_backward_kernel[{sm_count}](dY, i32(dY.stride(0)), dX, i32(dX.stride(0)), X, i32(X.stride(0)), W, RSTD,
                                         i32(RSTD.stride(0)), _dW, i32(_dW.stride(0)), _dB, i32(n_rows), i32(n_cols),
                                         i32(rows_per_program), Meta{{"BLOCK_SIZE", BLOCK_SIZE}}, liger::warps(num_warps));
  return {dX, tritium::ops::sum(_dW, {0}).to(W.dtype()), tritium::ops::sum(_dB).to(W.dtype())};
}

// ---- check ------------------------------------------------------------------------------------

// Y, rstd, dX, dW and dB against float64; the worst relative error.
double relative_error(const tritium::Device& device, int64_t rows, int64_t cols, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> hx, hdy, hw, hb;
  const float eps = 1e-6f;
  Tensor X = liger::random_tensor({rows, cols}, dtype, device, rng, hx);
  Tensor dY = liger::random_tensor({rows, cols}, dtype, device, rng, hdy);
  // LigerPolyNorm's parameters are fp32 (1/3 each and 1.0 initially; random here).
  Tensor W = liger::random_tensor({3}, DType::f32, device, rng, hw, 0.3, 0.4);
  Tensor B = liger::random_tensor({1}, DType::f32, device, rng, hb, 0.5, 1.0);
  g_poison = true;
  Forward f = poly_norm_forward(X, W, B, eps);
  auto [dX, dW, dB] = poly_norm_backward(dY, X, W, f.RSTD, f.BLOCK_SIZE, f.num_warps, false);
  g_poison = false;
  std::vector<double> ref_y(hx.size()), ref_rstd(size_t(rows * 3)), ref_dx(hx.size()), ref_dw(3, 0.0), ref_db(1, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    const double* x = &hx[size_t(i * cols)];
    const double* dy = &hdy[size_t(i * cols)];
    double rstd[4] = {0, 0, 0, 0}, S[4] = {0, 0, 0, 0};
    for (int p = 1; p <= 3; ++p) {
      double ms = 0;
      for (int64_t j = 0; j < cols; ++j) ms += std::pow(x[j], 2 * p);
      rstd[p] = 1.0 / std::sqrt(ms / double(cols) + double(eps));
      for (int64_t j = 0; j < cols; ++j) S[p] += dy[j] * std::pow(x[j], p);
      ref_rstd[size_t(i * 3 + (3 - p))] = rstd[p];
      ref_dw[size_t(3 - p)] += rstd[p] * S[p];
    }
    for (int64_t j = 0; j < cols; ++j) {
      double y = hb[0], dx = 0;
      for (int p = 1; p <= 3; ++p) {
        const double w = hw[size_t(3 - p)];
        y += w * std::pow(x[j], p) * rstd[p];
        dx += w * (p * std::pow(x[j], p - 1) * rstd[p] * dy[j] - double(p) / double(cols) * std::pow(x[j], 2 * p - 1) * std::pow(rstd[p], 3) * S[p]);
      }
      ref_y[size_t(i * cols + j)] = y, ref_dx[size_t(i * cols + j)] = dx;
      ref_db[0] += dy[j];
    }
  }
  return std::max({liger::rel_error(liger::host(f.Y), ref_y), liger::rel_error(liger::host(f.RSTD), ref_rstd),
                   liger::rel_error(liger::host(dX), ref_dx), liger::rel_error(liger::host(dW), ref_dw),
                   liger::rel_error(liger::host(dB), ref_db)});
}

bool check(const tritium::Device& device) {
  struct Case {
    int64_t rows, cols;
    DType dtype;
  };
  // Rows off the block (300 of 512; 1100 of 2048: 8 warps) and off the programs, f32 and bf16.
  const std::vector<Case> cases = {{37, 300, DType::f32}, {13, 1100, DType::f32}, {29, 300, DType::bf16}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c.rows, c.cols, c.dtype, uint32_t(c.rows * 31 + c.cols));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {}x{} {:.1e}", detail.empty() ? "(Y, rstd, dX, dW, dB: " : ", ", tritium::dtype_name(c.dtype), c.rows,
                          c.cols, rel);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("poly_norm", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_poly_norm.py: the default model (llama_3_8b: hidden 4096, bf16 input, fp32 parameters),
// a sweep of BT rows. GB/s from the bytes moved (forward: x read, y written; backward: dy, x read,
// dx written).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t H = 4096;
  std::vector<int64_t> bts = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192, 16384, 32768} : std::vector<int64_t>{256};
  std::vector<suite::Row> rows;
  for (int64_t BT : bts) {
    auto& gen = tritium::ops::default_generator();
    Tensor X = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
    Tensor dY = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
    Tensor W = tritium::ops::full({3}, 1.0 / 3.0, DType::f32, device);
    Tensor B = tritium::ops::full({1}, 1.0, DType::f32, device);
    Forward f = poly_norm_forward(X, W, B);
    const double bytes = double(BT) * double(H) * 2.0;
    const double fwd = tritium::do_bench([&] { poly_norm_forward(X, W, B); }, device).median_ms;
    rows.push_back({fmt::format("fwd BT={} H={} bf16", BT, H), fwd, 2 * bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] { poly_norm_backward(dY, X, W, f.RSTD, f.BLOCK_SIZE, f.num_warps, false); }, device).median_ms;
    rows.push_back({fmt::format("bwd BT={} H={} bf16", BT, H), bwd, 3 * bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "poly_norm",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/poly_norm.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
