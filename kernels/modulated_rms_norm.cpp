// modulated_rms_norm: Liger-Kernel's modulated RMSNorm, y = (1 + scale) * RMSNorm(x) + shift
// (AdaLN-style modulation; linkedin/Liger-Kernel src/liger_kernel/ops/modulated_rms_norm.py, read at
// commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel): _modulated_rms_norm_forward_kernel (rms_norm's
// row kernel, its casting modes and weight offset, then the modulation; scale and shift rows shared
// by rows_per_modulation rows) and _modulated_rms_norm_backward_kernel (one program per SM over
// rows_per_program rows: dX, fp32 partial dW rows reduced by the wrapper, dScale / dShift stored per
// row or, when modulation rows are shared, added atomically in fp32), with the wrappers
// modulated_rms_norm_forward / _backward (_check_modulation_shape's broadcasting rules).
//
// Deviations:
//  - X_dtype (a tl.dtype constexpr) is an int meta-parameter holding the DType.
//  - W = None passes X as the unused W / dW pointers (Tritium has no None pointer argument); the
//    kernels never touch them then, as the original's.
//  - The backward's program count: the multiprocessor count on CUDA, as the original; a fixed 4
//    on the CPU (the original uses 1 off CUDA/XPU/NPU). XPU options and autograd plumbing left out.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
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

auto _modulated_rms_norm_forward_kernel = tritium::kernel(
    "_modulated_rms_norm_forward_kernel",
    [](P Y_ptr, tl::i32 Y_row_stride, P X_ptr, tl::i32 X_row_stride, P W_ptr, [[maybe_unused]] tl::i32 W_row_stride, P Scale_ptr,
       tl::i32 Scale_row_stride, P Shift_ptr, tl::i32 Shift_row_stride, P RSTD_ptr, tl::i32 RSTD_row_stride, tl::i32 n_cols,
       tl::f32 eps_arg, tl::f32 offset_arg, int casting_mode, bool elementwise_affine, bool has_shift, int rows_per_modulation,
       int BLOCK_SIZE) {
      auto row_idx = tl::program_id(0).to(tl::int64);
      auto mod_row_idx = row_idx / rows_per_modulation;  // Triton's //
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      auto y_base = Y_ptr + row_idx * Y_row_stride;
      auto x_base = X_ptr + row_idx * X_row_stride;
      auto scale_base = Scale_ptr + mod_row_idx * Scale_row_stride;
      auto rstd_base = RSTD_ptr + row_idx * RSTD_row_stride;

      auto X_row = tl::load(x_base + col_offsets, mask, 0);
      const DType X_row_dtype = X_row.dtype();
      auto Scale_row = tl::load(scale_base + col_offsets, mask, 0.0);
      tl::tensor W_row, Shift_row;
      if (elementwise_affine) W_row = tl::load(W_ptr + col_offsets, mask, 0.0);
      if (has_shift) {
        auto shift_base = Shift_ptr + mod_row_idx * Shift_row_stride;
        Shift_row = tl::load(shift_base + col_offsets, mask, 0.0);
      }

      if (casting_mode == _CASTING_MODE_LLAMA) X_row = X_row.to(tl::float32);

      if (casting_mode == _CASTING_MODE_GEMMA) {
        if (elementwise_affine) W_row = W_row.to(tl::float32);
        X_row = X_row.to(tl::float32);
      }

      tl::tensor eps, offset;
      if (casting_mode == _CASTING_MODE_NONE) {
        eps = eps_arg.to(X_row_dtype);
        offset = offset_arg.to(X_row_dtype);
      } else {
        eps = eps_arg.to(tl::float32);
        offset = offset_arg.to(tl::float32);
      }

      auto mean_square = tl::sum(X_row * X_row, 0) / n_cols;
      auto rstd = tl::rsqrt(mean_square + eps);
      tl::store(rstd_base, rstd);

      X_row = X_row * rstd;

      if (casting_mode == _CASTING_MODE_LLAMA) X_row = X_row.to(X_row_dtype);

      tl::tensor Y_row;
      if (elementwise_affine)
        Y_row = X_row * (offset + W_row);
      else
        Y_row = X_row;

      if (casting_mode == _CASTING_MODE_GEMMA) Y_row = Y_row.to(X_row_dtype);

      Y_row = Y_row * (1.0 + Scale_row);
      if (has_shift) Y_row = Y_row + Shift_row;

      tl::store(y_base + col_offsets, Y_row, mask);
    },
    {"Y_ptr", "Y_row_stride", "X_ptr", "X_row_stride", "W_ptr", "W_row_stride", "Scale_ptr", "Scale_row_stride", "Shift_ptr",
     "Shift_row_stride", "RSTD_ptr", "RSTD_row_stride", "n_cols", "eps", "offset", "casting_mode", "elementwise_affine",
     "has_shift", "rows_per_modulation", "BLOCK_SIZE"});

auto _modulated_rms_norm_backward_kernel = tritium::kernel(
    "_modulated_rms_norm_backward_kernel",
    [](P dY_ptr, tl::i32 dY_row_stride, P dX_ptr, tl::i32 dX_row_stride, P X_ptr, tl::i32 X_row_stride, int X_dtype_, P W_ptr,
       [[maybe_unused]] tl::i32 W_row_stride, P Scale_ptr, tl::i32 Scale_row_stride, P RSTD_ptr, tl::i32 RSTD_row_stride, P dW_ptr,
       tl::i32 dW_row_stride, P dScale_ptr, tl::i32 dScale_row_stride, P dShift_ptr, tl::i32 dShift_row_stride, tl::i32 n_rows,
       tl::i32 n_cols, float offset, tl::i32 rows_per_program, int casting_mode, bool elementwise_affine, bool has_shift,
       int rows_per_modulation, int BLOCK_SIZE) {
      const DType X_dtype = static_cast<DType>(X_dtype_);
      auto row_block_id = tl::program_id(0).to(tl::int64);
      auto row_start = row_block_id * rows_per_program;
      auto row_end = tl::minimum((row_block_id + 1) * rows_per_program, n_rows);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      tl::tensor dW_row, W_row;
      if (elementwise_affine) {
        dW_row = tl::zeros({BLOCK_SIZE}, tl::float32);
        W_row = tl::load(W_ptr + col_offsets, mask, 0.0);
        W_row = W_row + offset;  // a constexpr: W's dtype is kept, as Triton's Python scalars
      }

      for (auto row_idx : tl::range(row_start, row_end)) {
        auto mod_row_idx = row_idx / rows_per_modulation;
        auto dy_base = dY_ptr + row_idx * dY_row_stride;
        auto dx_base = dX_ptr + row_idx * dX_row_stride;
        auto x_base = X_ptr + row_idx * X_row_stride;
        auto scale_base = Scale_ptr + mod_row_idx * Scale_row_stride;
        auto rstd_base = RSTD_ptr + row_idx * RSTD_row_stride;
        auto dscale_base = dScale_ptr + mod_row_idx * dScale_row_stride;

        auto dY_row = tl::load(dy_base + col_offsets, mask, 0.0);
        auto X_row = tl::load(x_base + col_offsets, mask, 0.0);
        auto Scale_row = tl::load(scale_base + col_offsets, mask, 0.0);
        auto rstd_row = tl::load(rstd_base);

        X_row = X_row.to(tl::float32);
        auto X_norm = X_row * rstd_row;
        auto Mod_row = 1.0 + Scale_row;
        auto dRms_row = dY_row * Mod_row;

        tl::tensor rms_output, m;
        if (casting_mode == _CASTING_MODE_LLAMA) {
          auto X_norm_for_output = X_norm.to(X_dtype);
          if (elementwise_affine) {
            rms_output = X_norm_for_output * W_row;
            m = (dRms_row * W_row).to(tl::float32);
          } else {
            rms_output = X_norm_for_output;
            m = dRms_row.to(tl::float32);
          }
        } else if (casting_mode == _CASTING_MODE_GEMMA) {
          dRms_row = dRms_row.to(tl::float32);
          if (elementwise_affine) {
            rms_output = (X_norm * W_row).to(X_dtype);
            m = dRms_row * W_row;
          } else {
            rms_output = X_norm.to(X_dtype);
            m = dRms_row;
          }
        } else {
          if (elementwise_affine) {
            rms_output = X_norm * W_row;
            m = dRms_row * W_row;
          } else {
            rms_output = X_norm;
            m = dRms_row;
          }
        }

        auto dX_row = rstd_row * m;
        dX_row += rstd_row * (-tl::fdiv(1, n_cols) * rstd_row * rstd_row * tl::sum(m * X_row, 0) * X_row);

        if (elementwise_affine) {
          if (casting_mode == _CASTING_MODE_LLAMA)
            dW_row += dRms_row * X_norm.to(X_dtype);
          else
            dW_row += dRms_row * X_norm;
        }

        auto dScale_row = dY_row * rms_output;
        if (rows_per_modulation == 1)
          tl::store(dscale_base + col_offsets, dScale_row, mask);
        else
          tl::atomic_add(dscale_base + col_offsets, dScale_row, mask, "relaxed");
        if (has_shift) {
          auto dshift_base = dShift_ptr + mod_row_idx * dShift_row_stride;
          if (rows_per_modulation == 1)
            tl::store(dshift_base + col_offsets, dY_row, mask);
          else
            tl::atomic_add(dshift_base + col_offsets, dY_row, mask, "relaxed");
        }

        tl::store(dx_base + col_offsets, dX_row.to(X_dtype), mask);
      }

      if (elementwise_affine) tl::store(dW_ptr + row_block_id * dW_row_stride + col_offsets, dW_row, mask);
    },
    {"dY_ptr", "dY_row_stride", "dX_ptr", "dX_row_stride", "X_ptr", "X_row_stride", "X_dtype", "W_ptr", "W_row_stride", "Scale_ptr",
     "Scale_row_stride", "RSTD_ptr", "RSTD_row_stride", "dW_ptr", "dW_row_stride", "dScale_ptr", "dScale_row_stride", "dShift_ptr",
     "dShift_row_stride", "n_rows", "n_cols", "offset", "rows_per_program", "casting_mode", "elementwise_affine", "has_shift",
     "rows_per_modulation", "BLOCK_SIZE"});

bool g_poison = false;  // while checking: Y, RSTD, dX and the per-row dScale / dShift start as NaN

Tensor output(const std::vector<int64_t>& shape, DType dtype, const tritium::Device& device) {
  return g_poison ? tritium::ops::full(shape, NAN, dtype, device) : Tensor::empty(shape, dtype, device);
}

int32_t i32(int64_t v) {
  if (v > INT32_MAX) tritium::fail("modulated_rms_norm: {} does not fit the kernels' int32 arguments", v);
  return static_cast<int32_t>(v);
}

// _check_modulation_shape: (scale_rows, rows_per_modulation).
std::pair<int64_t, int64_t> check_modulation_shape(const Tensor& X, const Tensor& scale, const std::optional<Tensor>& shift) {
  const int64_t dim = X.size(X.dim() - 1);
  if (scale.numel() % dim != 0) tritium::fail("modulated_rms_norm: Scale element count must be a multiple of the hidden size.");
  const int64_t n_rows = X.numel() / dim, scale_rows = scale.numel() / dim;
  if (scale_rows <= 0) tritium::fail("modulated_rms_norm: Scale must have at least one row.");
  if (n_rows % scale_rows != 0) tritium::fail("modulated_rms_norm: Scale rows must divide hidden state rows for broadcasting.");
  if (shift && shift->numel() != scale_rows * dim)
    tritium::fail("modulated_rms_norm: Shift must use the same broadcast rows as scale.");
  return {scale_rows, n_rows / scale_rows};
}

struct Forward {
  Tensor Y, RSTD;
  int BLOCK_SIZE, num_warps, casting_mode;
  int64_t rows_per_modulation;
};

// modulated_rms_norm_forward(X [n_rows, n_cols], W or none, scale / shift [scale_rows, n_cols], ...)
Forward modulated_rms_norm_forward(const Tensor& X, const std::optional<Tensor>& W, const Tensor& scale_in,
                                   const std::optional<Tensor>& shift_in, float eps, float offset, int casting_mode) {
  if (casting_mode != _CASTING_MODE_NONE && casting_mode != _CASTING_MODE_LLAMA && casting_mode != _CASTING_MODE_GEMMA)
    tritium::fail("modulated_rms_norm: Invalid casting mode: {}", casting_mode);
  auto [scale_rows, rows_per_modulation] = check_modulation_shape(X, scale_in, shift_in);
  const int64_t n_rows = X.size(0), n_cols = X.size(1);
  Tensor scale = scale_in.view({scale_rows, n_cols});
  auto [BLOCK_SIZE, num_warps] = liger::calculate_settings(n_cols);
  Tensor Y = output({n_rows, n_cols}, X.dtype(), X.device());
  Tensor RSTD = output({n_rows}, casting_mode == _CASTING_MODE_NONE ? X.dtype() : DType::f32, X.device());
  const bool elementwise_affine = W.has_value();
  if (elementwise_affine && W->size(0) != n_cols) tritium::fail("modulated_rms_norm: Incompatible hidden size dimension between X and W.");
  const bool has_shift = shift_in.has_value();
  Tensor shift = has_shift ? shift_in->view({scale_rows, n_cols}) : scale;
  _modulated_rms_norm_forward_kernel[{n_rows}](
      Y, i32(Y.stride(0)), X, i32(X.stride(0)), elementwise_affine ? *W : X, elementwise_affine ? i32(W->stride(0)) : 0, scale,
      i32(scale.stride(0)), shift, has_shift ? i32(shift.stride(0)) : 0, RSTD, i32(RSTD.stride(0)), i32(n_cols), eps, offset,
      casting_mode, elementwise_affine, has_shift, i32(rows_per_modulation), Meta{{"BLOCK_SIZE", BLOCK_SIZE}}, liger::warps(num_warps));
  return {Y, RSTD, BLOCK_SIZE, num_warps, casting_mode, rows_per_modulation};
}

struct Backward {
  Tensor dX;
  std::optional<Tensor> dW;
  Tensor dScale;
  std::optional<Tensor> dShift;
};

Backward modulated_rms_norm_backward(const Tensor& dY, const Tensor& X, const std::optional<Tensor>& W, const Tensor& scale_in,
                                     const std::optional<Tensor>& shift_in, const Tensor& RSTD, float offset, int casting_mode,
                                     int BLOCK_SIZE, int num_warps, int64_t rows_per_modulation, bool in_place) {
  const int64_t n_rows = dY.size(0), n_cols = dY.size(1);
  Tensor scale = scale_in.view({scale_in.numel() / n_cols, n_cols});
  const int64_t scale_rows = scale.size(0);
  const int sm_count = X.device().is_cuda() ? tritium::runtime::cuda::properties(X.device().index).multiprocessor_count : kCpuSmCount;
  const bool elementwise_affine = W.has_value();
  std::optional<Tensor> _dW;
  if (elementwise_affine) _dW = Tensor::empty({sm_count, n_cols}, DType::f32, W->device());
  // Per-row modulation gradients are stored; shared rows are summed atomically in fp32.
  auto modulation_grad = [&](DType dtype) {
    return rows_per_modulation == 1 ? output({scale_rows, n_cols}, dtype, scale.device())
                                    : tritium::ops::zeros({scale_rows, n_cols}, DType::f32, scale.device());
  };
  Tensor dScale = modulation_grad(scale.dtype());
  const bool has_shift = shift_in.has_value();
  Tensor dShift = has_shift ? modulation_grad(shift_in->dtype()) : dScale;
  if (n_cols > BLOCK_SIZE) tritium::fail("modulated_rms_norm: This layer norm doesn't support feature dim >= 64KB.");
  const int64_t rows_per_program = tritium::cdiv(n_rows, sm_count);
  Tensor dX = in_place ? dY : output({n_rows, n_cols}, dY.dtype(), dY.device());
  _modulated_rms_norm_backward_kernel[{sm_count}](
      dY, i32(dY.stride(0)), dX, i32(dX.stride(0)), X, i32(X.stride(0)), static_cast<int>(X.dtype()), elementwise_affine ? *W : X,
      elementwise_affine ? i32(W->stride(0)) : 0, scale, i32(scale.stride(0)), RSTD, i32(RSTD.stride(0)),
      elementwise_affine ? *_dW : X, elementwise_affine ? i32(_dW->stride(0)) : 0, dScale, i32(dScale.stride(0)), dShift,
      has_shift ? i32(dShift.stride(0)) : 0, i32(n_rows), i32(n_cols), offset, i32(rows_per_program), casting_mode,
      elementwise_affine, has_shift, i32(rows_per_modulation), Meta{{"BLOCK_SIZE", BLOCK_SIZE}}, liger::warps(num_warps));
  Backward b{dX, std::nullopt, dScale.dtype() != scale.dtype() ? dScale.to(scale.dtype()) : dScale, std::nullopt};
  if (elementwise_affine) b.dW = tritium::ops::sum(*_dW, {0}).to(W->dtype());
  if (has_shift) b.dShift = dShift.dtype() != shift_in->dtype() ? dShift.to(shift_in->dtype()) : dShift;
  return b;
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  int64_t rows, cols, scale_rows;
  DType dtype;
  int casting_mode;
  float offset;
  bool affine, shift;
};

// Y, rstd, dX, dW, dScale, dShift against float64; the worst relative error.
double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> hx, hw, hs, hsh, hdy;
  const float eps = 1e-6f;
  Tensor X = liger::random_tensor({c.rows, c.cols}, c.dtype, device, rng, hx, 1.5, 0.3);
  std::optional<Tensor> W, shift;
  if (c.affine) W = liger::random_tensor({c.cols}, c.dtype, device, rng, hw, 0.5, 1.0);
  Tensor scale = liger::random_tensor({c.scale_rows, c.cols}, c.dtype, device, rng, hs, 0.3);
  if (c.shift) shift = liger::random_tensor({c.scale_rows, c.cols}, c.dtype, device, rng, hsh, 0.3);
  Tensor dY = liger::random_tensor({c.rows, c.cols}, c.dtype, device, rng, hdy);
  g_poison = true;
  Forward f = modulated_rms_norm_forward(X, W, scale, shift, eps, c.offset, c.casting_mode);
  Backward b = modulated_rms_norm_backward(dY, X, W, scale, shift, f.RSTD, c.offset, f.casting_mode, f.BLOCK_SIZE, f.num_warps,
                                           f.rows_per_modulation, false);
  g_poison = false;
  const int64_t rpm = c.rows / c.scale_rows;
  std::vector<double> ref_y(hx.size()), ref_rstd(static_cast<size_t>(c.rows)), ref_dx(hx.size()), ref_dw(static_cast<size_t>(c.cols), 0.0),
      ref_ds(hs.size(), 0.0), ref_dsh(hs.size(), 0.0);
  for (int64_t i = 0; i < c.rows; ++i) {
    const double* x = &hx[size_t(i * c.cols)];
    const double* dy = &hdy[size_t(i * c.cols)];
    const size_t mrow = size_t((i / rpm) * c.cols);
    double ss = 0, mx = 0;
    for (int64_t j = 0; j < c.cols; ++j) ss += x[j] * x[j];
    const double rstd = 1.0 / std::sqrt(ss / double(c.cols) + double(eps));
    ref_rstd[size_t(i)] = rstd;
    for (int64_t j = 0; j < c.cols; ++j) {
      const double w = c.affine ? hw[size_t(j)] + double(c.offset) : 1.0, mod = 1.0 + hs[mrow + size_t(j)];
      const double rms = x[j] * rstd * w;
      ref_y[size_t(i * c.cols + j)] = rms * mod + (c.shift ? hsh[mrow + size_t(j)] : 0.0);
      ref_ds[mrow + size_t(j)] += dy[j] * rms;
      ref_dsh[mrow + size_t(j)] += dy[j];
      ref_dw[size_t(j)] += dy[j] * mod * x[j] * rstd;
      mx += dy[j] * mod * w * x[j];
    }
    for (int64_t j = 0; j < c.cols; ++j) {
      const double w = c.affine ? hw[size_t(j)] + double(c.offset) : 1.0, mod = 1.0 + hs[mrow + size_t(j)];
      ref_dx[size_t(i * c.cols + j)] = rstd * (dy[j] * mod * w - rstd * rstd * mx / double(c.cols) * x[j]);
    }
  }
  double worst = std::max({liger::rel_error(liger::host(f.Y), ref_y), liger::rel_error(liger::host(f.RSTD), ref_rstd),
                           liger::rel_error(liger::host(b.dX), ref_dx), liger::rel_error(liger::host(b.dScale), ref_ds)});
  if (c.affine) worst = std::max(worst, liger::rel_error(liger::host(*b.dW), ref_dw));
  if (c.shift) worst = std::max(worst, liger::rel_error(liger::host(*b.dShift), ref_dsh));
  return worst;
}

bool check(const tritium::Device& device) {
  // Per-row modulation (stored) and modulation rows shared by 7 or 37 rows (atomic adds), each
  // casting mode, Gemma's offset, without weight or shift, rows off the block, f32 and bf16.
  const std::vector<Case> cases = {{37, 300, 37, DType::f32, _CASTING_MODE_NONE, 0.0f, true, true},
                                   {21, 300, 3, DType::f32, _CASTING_MODE_LLAMA, 0.0f, false, true},
                                   {37, 300, 1, DType::f32, _CASTING_MODE_GEMMA, 1.0f, true, false},
                                   {13, 1100, 13, DType::bf16, _CASTING_MODE_LLAMA, 0.0f, true, true}};
  const char* modes[] = {"none", "llama", "gemma"};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.rows * 31 + c.cols + c.scale_rows));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {}x{} {} scale rows {}{}{}{} {:.1e}", detail.empty() ? "(Y, rstd, dX, dW, dScale, dShift: " : ", ",
                          tritium::dtype_name(c.dtype), c.rows, c.cols, modes[c.casting_mode + 1], c.scale_rows,
                          c.offset != 0 ? " offset 1" : "", c.affine ? "" : " no W", c.shift ? " shift" : "", rel);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("modulated_rms_norm", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_modulated_rms_norm.py: the default model (llama_3_8b: hidden 4096, bf16), per-token scale
// and shift (randn_like(x) * 0.1), fp32 weight, llama casting, not in place, a sweep of BT. GB/s from
// the bytes moved (forward: x, scale, shift read, y written; backward: dy, x, scale read, dx,
// dscale, dshift written).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t H = 4096;
  std::vector<int64_t> bts = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192, 16384} : std::vector<int64_t>{256};
  std::vector<suite::Row> rows;
  for (int64_t BT : bts) {
    auto& gen = tritium::ops::default_generator();
    Tensor X = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
    Tensor scale = tritium::ops::mul(tritium::ops::randn({BT, H}, gen, DType::f32, device), 0.1).to(DType::bf16);
    Tensor shift = tritium::ops::mul(tritium::ops::randn({BT, H}, gen, DType::f32, device), 0.1).to(DType::bf16);
    Tensor dY = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
    std::optional<Tensor> W = tritium::ops::full({H}, 1.0, DType::f32, device);
    Forward f = modulated_rms_norm_forward(X, W, scale, shift, 1e-6f, 0.0f, _CASTING_MODE_LLAMA);
    const double bytes = double(BT) * double(H) * 2.0;
    const double fwd = tritium::do_bench([&] { modulated_rms_norm_forward(X, W, scale, shift, 1e-6f, 0.0f, _CASTING_MODE_LLAMA); }, device).median_ms;
    rows.push_back({fmt::format("fwd BT={} H={} bf16 shift", BT, H), fwd, 4 * bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] {
                         modulated_rms_norm_backward(dY, X, W, scale, shift, f.RSTD, 0.0f, f.casting_mode, f.BLOCK_SIZE, f.num_warps,
                                                     f.rows_per_modulation, false);
                       }, device).median_ms;
    rows.push_back({fmt::format("bwd BT={} H={} bf16 shift", BT, H), bwd, 6 * bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "modulated_rms_norm",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/modulated_rms_norm.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
