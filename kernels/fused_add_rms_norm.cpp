// fused_add_rms_norm: Liger-Kernel's residual add fused with RMSNorm (linkedin/Liger-Kernel
// src/liger_kernel/ops/fused_add_rms_norm.py, read at commit ead96b618e5c; BSD-2-Clause, as
// Liger-Kernel): _fused_add_rms_norm_forward_kernel (S = X + R stored as the new residual, then
// rmsnorm(S) in the casting mode, with the weight offset; rstd cached) and
// _fused_add_rms_norm_backward_kernel (one program per SM over rows_per_program rows: dW in fp32
// partial rows reduced by the wrapper, dX = rmsnorm's input gradient plus the residual's dS_out;
// dR equals dX), with the wrappers fused_add_rms_norm_forward / _backward (calculate_settings'
// block and warps, num_stages 2).
//
// Deviations: X_dtype (a tl.dtype constexpr) is an int meta-parameter holding the DType; the
// backward's program count is the multiprocessor count on CUDA, as the original, and a fixed 4 on
// the CPU (the original uses 1 off CUDA/XPU/NPU); the XPU options and the autograd plumbing are
// left out.
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

constexpr int _CASTING_MODE_NONE = -1;
constexpr int _CASTING_MODE_LLAMA = 0;
constexpr int _CASTING_MODE_GEMMA = 1;
constexpr int kCpuSmCount = 4;

auto _fused_add_rms_norm_forward_kernel = tritium::kernel(
    "_fused_add_rms_norm_forward_kernel",
    [](P Y_ptr, tl::i32 Y_row_stride, P S_ptr, tl::i32 S_row_stride, P X_ptr, tl::i32 X_row_stride, P R_ptr,
       tl::i32 R_row_stride, P W_ptr, [[maybe_unused]] tl::i32 W_row_stride, P RSTD_ptr, tl::i32 RSTD_row_stride,
       tl::i32 n_cols, tl::f32 eps_arg, tl::f32 offset_arg, int casting_mode, int BLOCK_SIZE) {
      // 1. hidden_states = residual + hidden_states; 2. residual = hidden_states;
      // 3. hidden_states = rmsnorm(hidden_states)
      auto row_idx = tl::program_id(0).to(tl::int64);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      Y_ptr += row_idx * Y_row_stride;
      S_ptr += row_idx * S_row_stride;
      X_ptr += row_idx * X_row_stride;
      R_ptr += row_idx * R_row_stride;
      RSTD_ptr += row_idx * RSTD_row_stride;

      auto X_row = tl::load(X_ptr + col_offsets, mask, 0);
      auto R_row = tl::load(R_ptr + col_offsets, mask, 0);
      auto S_row = X_row + R_row;
      tl::store(S_ptr + col_offsets, S_row, mask);
      const DType S_row_dtype = S_row.dtype();
      auto W_row = tl::load(W_ptr + col_offsets, mask, 0);

      // On Llama, only rstd is computed on fp32
      if (casting_mode == _CASTING_MODE_LLAMA) S_row = S_row.to(tl::float32);

      // Gemma computes everything on fp32, and then casts back the output to the original dtype
      if (casting_mode == _CASTING_MODE_GEMMA) {
        W_row = W_row.to(tl::float32);
        S_row = S_row.to(tl::float32);
      }

      tl::tensor eps, offset;
      if (casting_mode == _CASTING_MODE_NONE) {
        eps = eps_arg.to(S_row_dtype);
        offset = offset_arg.to(S_row_dtype);
      } else {
        eps = eps_arg.to(tl::float32);
        offset = offset_arg.to(tl::float32);
      }

      auto mean_square = tl::sum(S_row * S_row, 0) / n_cols;
      auto rstd = tl::rsqrt(mean_square + eps);

      // Caching rstd (one value a row) saves the backward recomputing it.
      tl::store(RSTD_ptr, rstd);

      S_row = S_row * rstd;

      // On Llama, the multiplication with the weight is done on the original dtype
      if (casting_mode == _CASTING_MODE_LLAMA) S_row = S_row.to(S_row_dtype);

      auto Y_row = S_row * (offset + W_row);

      if (casting_mode == _CASTING_MODE_GEMMA) Y_row = Y_row.to(S_row_dtype);

      tl::store(Y_ptr + col_offsets, Y_row, mask);
    },
    {"Y_ptr", "Y_row_stride", "S_ptr", "S_row_stride", "X_ptr", "X_row_stride", "R_ptr", "R_row_stride", "W_ptr",
     "W_row_stride", "RSTD_ptr", "RSTD_row_stride", "n_cols", "eps", "offset", "casting_mode", "BLOCK_SIZE"});

auto _fused_add_rms_norm_backward_kernel = tritium::kernel(
    "_fused_add_rms_norm_backward_kernel",
    [](P dY_ptr, tl::i32 dY_row_stride, P dS_out_ptr, tl::i32 dS_out_row_stride, P dX_ptr, tl::i32 dX_row_stride, P X_ptr,
       tl::i32 X_row_stride, int X_dtype_, P W_ptr, [[maybe_unused]] tl::i32 W_row_stride, P RSTD_ptr,
       tl::i32 RSTD_row_stride, P dW_ptr, tl::i32 dW_row_stride, tl::i32 n_rows, tl::i32 n_cols, tl::f32 offset,
       int rows_per_program, int casting_mode, int BLOCK_SIZE, bool has_dS_out) {
      // rms_norm's backward plus the residual's gradient: dX = dR = d(rmsnorm input) + dS_out.
      // dW is accumulated before dX, and dX is factored as rstd * m + c * X (c a scalar), to keep
      // fewer vectors live.
      const DType X_dtype = static_cast<DType>(X_dtype_);
      auto row_block_id = tl::program_id(0).to(tl::int64);
      auto row_start = row_block_id * rows_per_program;
      auto row_end = tl::minimum((row_block_id + 1) * rows_per_program, n_rows);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      auto dW_row = tl::zeros({BLOCK_SIZE}, tl::float32);

      auto W_row = tl::load(W_ptr + col_offsets, mask, 0.0);
      W_row = W_row + offset.to(tl::float32);

      for (auto row_idx : tl::range(row_start, row_end)) {
        auto dy_base = dY_ptr + row_idx * dY_row_stride;
        auto dx_base = dX_ptr + row_idx * dX_row_stride;
        auto x_base = X_ptr + row_idx * X_row_stride;
        auto rstd_base = RSTD_ptr + row_idx * RSTD_row_stride;

        auto dY_row = tl::load(dy_base + col_offsets, mask, 0.0);
        auto X_row = tl::load(x_base + col_offsets, mask, 0.0);

        // Get cached rms
        auto rstd_row = tl::load(rstd_base);

        X_row = X_row.to(tl::float32);

        // Calculate the gradient of W first to reduce peak register liveness
        if (casting_mode == _CASTING_MODE_LLAMA)
          dW_row += dY_row * (X_row * rstd_row).to(X_dtype);
        else
          dW_row += dY_row * (X_row * rstd_row);  // here X_row is already in fp32

        // Different backward graphs for different casting modes
        tl::tensor m;
        if (casting_mode == _CASTING_MODE_LLAMA) {
          m = (dY_row * W_row).to(tl::float32);
        } else if (casting_mode == _CASTING_MODE_GEMMA) {
          dY_row = dY_row.to(tl::float32);
          m = dY_row * W_row;
        } else {
          m = dY_row * W_row;
        }

        // dX = rstd * m - (rstd^3 / n_cols) * dot(m, X) * X + dS_out
        auto dot = tl::sum(m * X_row, 0);
        auto c = -tl::fdiv(1.0, n_cols) * rstd_row * rstd_row * rstd_row * dot;
        auto dX_row = rstd_row * m + c * X_row;

        if (has_dS_out) {
          auto ds_base = dS_out_ptr + row_idx * dS_out_row_stride;
          auto dS_out_row = tl::load(ds_base + col_offsets, mask, 0.0);
          dX_row += dS_out_row;
        }

        tl::store(dx_base + col_offsets, dX_row.to(X_dtype), mask);
      }

      tl::store(dW_ptr + row_block_id * dW_row_stride + col_offsets, dW_row, mask);
    },
    {"dY_ptr", "dY_row_stride", "dS_out_ptr", "dS_out_row_stride", "dX_ptr", "dX_row_stride", "X_ptr", "X_row_stride",
     "X_dtype", "W_ptr", "W_row_stride", "RSTD_ptr", "RSTD_row_stride", "dW_ptr", "dW_row_stride", "n_rows", "n_cols", "offset",
     "rows_per_program", "casting_mode", "BLOCK_SIZE", "has_dS_out"});

bool g_poison = false;  // while checking: Y, S, RSTD and dX start as NaN

Tensor output(const std::vector<int64_t>& shape, DType dtype, const tritium::Device& device) {
  return g_poison ? tritium::ops::full(shape, NAN, dtype, device) : Tensor::empty(shape, dtype, device);
}

int32_t i32(int64_t v) {
  if (v > INT32_MAX) tritium::fail("fused_add_rms_norm: {} does not fit the kernels' int32 arguments", v);
  return static_cast<int32_t>(v);
}

struct Forward {
  Tensor Y, S, RSTD;
  int BLOCK_SIZE, num_warps, num_stages, casting_mode;
};

// fused_add_rms_norm_forward(X, R [n_rows, n_cols] contiguous, W [n_cols], eps, offset, casting_mode)
Forward fused_add_rms_norm_forward(const Tensor& X, const Tensor& R, const Tensor& W, float eps, float offset, int casting_mode) {
  if (casting_mode != _CASTING_MODE_NONE && casting_mode != _CASTING_MODE_LLAMA && casting_mode != _CASTING_MODE_GEMMA)
    tritium::fail("fused_add_rms_norm: Invalid casting mode: {}", casting_mode);
  const int64_t n_rows = X.size(0), n_cols = X.size(1);
  auto [BLOCK_SIZE, num_warps] = liger::calculate_settings(n_cols);
  const int num_stages = 2;
  Tensor Y = output({n_rows, n_cols}, X.dtype(), X.device());
  Tensor S = output({n_rows, n_cols}, X.dtype(), X.device());
  // RSTD is always computed/stored in fp32 if we are using Llama or Gemma casting mode
  Tensor RSTD = output({n_rows}, casting_mode == _CASTING_MODE_NONE ? X.dtype() : DType::f32, X.device());
  if (X.size(1) != W.size(0))
    tritium::fail("fused_add_rms_norm: Incompatible hidden size dimension between tensor1.shape[1] and tensor2.shape[0]");
  _fused_add_rms_norm_forward_kernel[{n_rows}](Y, i32(Y.stride(0)), S, i32(S.stride(0)), X, i32(X.stride(0)), R, i32(R.stride(0)),
                                               W, i32(W.stride(0)), RSTD, i32(RSTD.stride(0)), i32(n_cols), eps, offset,
                                               casting_mode, Meta{{"BLOCK_SIZE", BLOCK_SIZE}},
                                               tritium::Options{.num_warps = num_warps, .num_stages = num_stages, .device = {}});
  return {Y, S, RSTD, BLOCK_SIZE, num_warps, num_stages, casting_mode};
}

// fused_add_rms_norm_backward(dY, dS_out, S, W, RSTD, ...) -> (dX, dR = dX, dW)
std::tuple<Tensor, Tensor, Tensor> fused_add_rms_norm_backward(const Tensor& dY, const Tensor& dS_out, const Tensor& S,
                                                               const Tensor& W, const Tensor& RSTD, float offset, int casting_mode,
                                                               int BLOCK_SIZE, int num_warps, int num_stages, bool in_place) {
  const int64_t n_rows = dY.size(0), n_cols = dY.size(1);
  const int sm_count = S.device().is_cuda() ? tritium::runtime::cuda::properties(S.device().index).multiprocessor_count : kCpuSmCount;
  // fp32 for numerical stability especially.
  Tensor _dW = Tensor::empty({sm_count, n_cols}, DType::f32, W.device());
  if (n_cols > BLOCK_SIZE) tritium::fail("fused_add_rms_norm: This layer norm doesn't support feature dim >= 64KB.");
  const int64_t rows_per_program = tritium::cdiv(n_rows, sm_count);
  Tensor dX = in_place ? dY : output({n_rows, n_cols}, dY.dtype(), dY.device());
  _fused_add_rms_norm_backward_kernel[{sm_count}](
      dY, i32(dY.stride(0)), dS_out, i32(dS_out.stride(0)), dX, i32(dX.stride(0)), S, i32(S.stride(0)), static_cast<int>(S.dtype()),
      W, i32(W.stride(0)), RSTD, i32(RSTD.stride(0)), _dW, i32(_dW.stride(0)), i32(n_rows), i32(n_cols), offset,
      i32(rows_per_program), casting_mode, Meta{{"BLOCK_SIZE", BLOCK_SIZE}, {"has_dS_out", true}},
      tritium::Options{.num_warps = num_warps, .num_stages = num_stages, .device = {}});
  Tensor dW = tritium::ops::sum(_dW, {0}).to(W.dtype());
  return {dX, dX, dW};  // dR is equal to dX
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  int64_t rows, cols;
  DType dtype;
  int casting_mode;
  float offset;
};

// Y, S, rstd, dX and dW against float64; the worst relative error.
double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> hx, hr, hw, hdy, hds;
  const float eps = 1e-6f;
  Tensor X = liger::random_tensor({c.rows, c.cols}, c.dtype, device, rng, hx, 1.0, 0.3);
  Tensor R = liger::random_tensor({c.rows, c.cols}, c.dtype, device, rng, hr);
  Tensor W = liger::random_tensor({c.cols}, c.dtype, device, rng, hw, 0.5, 1.0);
  Tensor dY = liger::random_tensor({c.rows, c.cols}, c.dtype, device, rng, hdy);
  Tensor dS = liger::random_tensor({c.rows, c.cols}, c.dtype, device, rng, hds);
  g_poison = true;
  Forward f = fused_add_rms_norm_forward(X, R, W, eps, c.offset, c.casting_mode);
  auto [dX, dR, dW] = fused_add_rms_norm_backward(dY, dS, f.S, W, f.RSTD, c.offset, f.casting_mode, f.BLOCK_SIZE, f.num_warps,
                                                  f.num_stages, false);
  g_poison = false;
  // The reference starts from S as the kernel stored it (rounded to the dtype), as the backward does.
  std::vector<double> hs = liger::host(f.S), ref_s(hx.size());
  for (size_t k = 0; k < hx.size(); ++k) ref_s[k] = hx[k] + hr[k];
  std::vector<double> ref_y(hx.size()), ref_rstd(static_cast<size_t>(c.rows)), ref_dx(hx.size()), ref_dw(static_cast<size_t>(c.cols), 0.0);
  for (int64_t i = 0; i < c.rows; ++i) {
    const double* s = &hs[size_t(i * c.cols)];
    double ss = 0, ms = 0;
    for (int64_t j = 0; j < c.cols; ++j) ss += s[j] * s[j];
    const double rstd = 1.0 / std::sqrt(ss / double(c.cols) + double(eps));
    ref_rstd[size_t(i)] = rstd;
    for (int64_t j = 0; j < c.cols; ++j) {
      const double w = hw[size_t(j)] + double(c.offset), dy = hdy[size_t(i * c.cols + j)];
      ref_y[size_t(i * c.cols + j)] = s[j] * rstd * w;
      ms += dy * w * s[j];
      ref_dw[size_t(j)] += dy * s[j] * rstd;
    }
    for (int64_t j = 0; j < c.cols; ++j) {
      const double w = hw[size_t(j)] + double(c.offset), dy = hdy[size_t(i * c.cols + j)];
      ref_dx[size_t(i * c.cols + j)] = rstd * dy * w - rstd * rstd * rstd * ms / double(c.cols) * s[j] + hds[size_t(i * c.cols + j)];
    }
  }
  return std::max({liger::rel_error(hs, ref_s), liger::rel_error(liger::host(f.Y), ref_y), liger::rel_error(liger::host(f.RSTD), ref_rstd),
                   liger::rel_error(liger::host(dX), ref_dx), liger::rel_error(liger::host(dR), ref_dx),
                   liger::rel_error(liger::host(dW), ref_dw)});
}

bool check(const tritium::Device& device) {
  // Each casting mode, Gemma's offset, rows off the block (300 of 512; 1100 of 2048: 8 warps), rows
  // that do not split evenly over the programs, f32 and bf16.
  const std::vector<Case> cases = {{37, 300, DType::f32, _CASTING_MODE_NONE, 0.0f},
                                   {13, 1100, DType::bf16, _CASTING_MODE_LLAMA, 0.0f},
                                   {21, 300, DType::bf16, _CASTING_MODE_GEMMA, 1.0f}};
  const char* modes[] = {"none", "llama", "gemma"};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.rows * 31 + c.cols + c.casting_mode));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {}x{} {}{} {:.1e}", detail.empty() ? "(S, Y, rstd, dX, dR, dW: " : ", ", tritium::dtype_name(c.dtype),
                          c.rows, c.cols, modes[c.casting_mode + 1], c.offset != 0 ? " offset 1" : "", rel);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("fused_add_rms_norm", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_fused_add_rms_norm.py: the default model (llama_3_8b: hidden 4096, bf16 inputs, fp32
// weight), eps 1e-6, llama casting, a sweep of BT. GB/s from the bytes moved (forward: X, R read, S,
// Y written; backward: dY, dS_out, S read, dX written; rstd and dW rows aside).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t H = 4096;
  std::vector<int64_t> bts = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192, 16384, 32768} : std::vector<int64_t>{256};
  std::vector<suite::Row> rows;
  for (int64_t BT : bts) {
    auto& gen = tritium::ops::default_generator();
    Tensor X = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
    Tensor R = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
    Tensor W = tritium::ops::full({H}, 1.0, DType::f32, device);
    Tensor dY = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
    Tensor dS = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
    Forward f = fused_add_rms_norm_forward(X, R, W, 1e-6f, 0.0f, _CASTING_MODE_LLAMA);
    const double bytes = double(BT) * double(H) * 2.0;
    const double fwd = tritium::do_bench([&] { fused_add_rms_norm_forward(X, R, W, 1e-6f, 0.0f, _CASTING_MODE_LLAMA); }, device).median_ms;
    rows.push_back({fmt::format("fwd BT={} H={} bf16", BT, H), fwd, 4 * bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] {
                         fused_add_rms_norm_backward(dY, dS, f.S, W, f.RSTD, 0.0f, _CASTING_MODE_LLAMA, f.BLOCK_SIZE, f.num_warps,
                                                     f.num_stages, false);
                       }, device).median_ms;
    rows.push_back({fmt::format("bwd BT={} H={} bf16", BT, H), bwd, 4 * bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "fused_add_rms_norm",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/fused_add_rms_norm.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
