// rms_norm: Liger-Kernel's RMSNorm (linkedin/Liger-Kernel src/liger_kernel/ops/rms_norm.py, read at
// commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel, after Unsloth's rms_layernorm): the row
// kernels _rms_norm_forward_kernel / _rms_norm_backward_kernel, the row-block kernels
// _block_rms_norm_forward_kernel / _block_rms_norm_backward_kernel (BLOCK_ROW = 16 rows a program,
// taken for rows of at most 256 columns when there are 32768 rows or more), and the wrappers
// rms_norm_forward / rms_norm_backward with their heuristics: BLOCK_SIZE and num_warps from
// calculate_settings, the casting modes (llama: rstd in fp32, the weight multiply in the input's
// dtype; gemma: everything in fp32; none: the input's dtype), the weight offset (Gemma's 1.0), and
// the backward's grid of one program per SM, each summing its rows' dW in fp32 into its own row of
// _dW, which the wrapper reduces (_dW.sum(0).to(W.dtype)).
//
// Deviations:
//  - X_dtype (a tl.dtype constexpr) is an int meta-parameter holding the DType: Tritium's
//    meta-parameters are numbers. It equals X's element type.
//  - W = None (elementwise_affine False) passes X as the unused W pointer: Tritium has no None
//    pointer argument; the kernels never read it then, as the original's.
//  - The backward's program count: the device's multiprocessor count on CUDA, as the original; on
//    the CPU a fixed 4 (the original uses 1 off CUDA/XPU/NPU) so the per-program partial dW rows
//    and their reduction run in the check.
//  - LigerRMSNormFunction's autograd/DTensor plumbing and the XPU grf mode are left out.
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
using tritium::Tensor;
using P = tl::ptr<tl::any>;

constexpr int _CASTING_MODE_NONE = -1;
constexpr int _CASTING_MODE_LLAMA = 0;
constexpr int _CASTING_MODE_GEMMA = 1;
constexpr int kCpuSmCount = 4;

auto _rms_norm_forward_kernel = tritium::kernel(
    "_rms_norm_forward_kernel",
    [](P Y_ptr, tl::i32 Y_row_stride, P X_ptr, tl::i32 X_row_stride, P W_ptr, [[maybe_unused]] tl::i32 W_row_stride, P RSTD_ptr,
       tl::i32 RSTD_row_stride, tl::i32 n_cols, tl::f32 eps_arg, tl::f32 offset_arg,
       int casting_mode,  // constexpr so the `if` blocks can be optimized out
       bool elementwise_affine, int BLOCK_SIZE) {
      // y_i = (x_i / (RMS)) * (offset + wi), RMS = sqrt(sum(x_i^2) / N)
      auto row_idx = tl::program_id(0).to(tl::int64);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      auto y_base = Y_ptr + row_idx * Y_row_stride;
      auto x_base = X_ptr + row_idx * X_row_stride;
      auto rstd_base = RSTD_ptr + row_idx * RSTD_row_stride;

      auto X_row = tl::load(x_base + col_offsets, mask, 0);
      const DType X_row_dtype = X_row.dtype();
      tl::tensor W_row;
      if (elementwise_affine) W_row = tl::load(W_ptr + col_offsets, mask, 0);

      // On Llama, only rstd is computed on fp32
      if (casting_mode == _CASTING_MODE_LLAMA) X_row = X_row.to(tl::float32);

      // Gemma computes everything on fp32, and then casts back the output to the original dtype
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

      // Caching rstd (one value a row) saves the backward recomputing it.
      tl::store(rstd_base, rstd);

      X_row = X_row * rstd;

      // On Llama, the multiplication with the weight is done on the original dtype
      if (casting_mode == _CASTING_MODE_LLAMA) X_row = X_row.to(X_row_dtype);

      tl::tensor Y_row;
      if (elementwise_affine)
        Y_row = X_row * (offset + W_row);
      else
        Y_row = X_row;

      if (casting_mode == _CASTING_MODE_GEMMA) Y_row = Y_row.to(X_row_dtype);

      tl::store(y_base + col_offsets, Y_row, mask);
    },
    {"Y_ptr", "Y_row_stride", "X_ptr", "X_row_stride", "W_ptr", "W_row_stride", "RSTD_ptr", "RSTD_row_stride", "n_cols",
     "eps", "offset", "casting_mode", "elementwise_affine", "BLOCK_SIZE"});

// m (dY, times W + offset with a weight) in the casting mode's dtype; shared by both backward kernels,
// `W_row` broadcast along the columns (row kernel: [BLOCK_SIZE]; block kernel: [1, BLOCK_SIZE]).
tl::tensor backward_m(tl::tensor& dY_row, const tl::tensor& W_row, int casting_mode, bool elementwise_affine) {
  if (casting_mode == _CASTING_MODE_LLAMA) return elementwise_affine ? (dY_row * W_row).to(tl::float32) : dY_row.to(tl::float32);
  if (casting_mode == _CASTING_MODE_GEMMA) {
    dY_row = dY_row.to(tl::float32);
    return elementwise_affine ? dY_row * W_row : dY_row;
  }
  return elementwise_affine ? dY_row * W_row : dY_row;
}

auto _rms_norm_backward_kernel = tritium::kernel(
    "_rms_norm_backward_kernel",
    [](P dY_ptr, tl::i32 dY_row_stride, P dX_ptr, tl::i32 dX_row_stride, P X_ptr, tl::i32 X_row_stride, int X_dtype_,
       P W_ptr, [[maybe_unused]] tl::i32 W_row_stride, P RSTD_ptr, tl::i32 RSTD_row_stride, P dW_ptr, tl::i32 dW_row_stride,
       tl::i32 n_rows, tl::i32 n_cols, tl::f32 offset, tl::i32 rows_per_program, int casting_mode,
       bool elementwise_affine, int BLOCK_SIZE) {
      // dx = (1 / RMS) * [dy * (w + offset) - (1 / N) * (1 / RMS^2) * ((dy * (w + offset)) dot x) * x]
      // dw = sum(dy * (x / RMS)), summed over the rows
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
        W_row = W_row + offset.to(tl::float32);
      }

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

        // Different backward graphs for different casting modes
        auto m = backward_m(dY_row, W_row, casting_mode, elementwise_affine);

        auto dX_row = rstd_row * m;

        dX_row += rstd_row * (-tl::fdiv(1, n_cols) * rstd_row * rstd_row * tl::sum(m * X_row, 0) * X_row);

        if (elementwise_affine) {
          // calculate the gradient of W
          if (casting_mode == _CASTING_MODE_LLAMA)
            dW_row += dY_row * (X_row * rstd_row).to(X_dtype);
          else
            dW_row += dY_row * (X_row * rstd_row);  // here X_row is already in fp32
        }

        tl::store(dx_base + col_offsets, dX_row.to(X_dtype), mask);
      }

      if (elementwise_affine) tl::store(dW_ptr + row_block_id * dW_row_stride + col_offsets, dW_row, mask);
    },
    {"dY_ptr", "dY_row_stride", "dX_ptr", "dX_row_stride", "X_ptr", "X_row_stride", "X_dtype", "W_ptr", "W_row_stride",
     "RSTD_ptr", "RSTD_row_stride", "dW_ptr", "dW_row_stride", "n_rows", "n_cols", "offset", "rows_per_program",
     "casting_mode", "elementwise_affine", "BLOCK_SIZE"});

auto _block_rms_norm_forward_kernel = tritium::kernel(
    "_block_rms_norm_forward_kernel",
    [](P Y_ptr, tl::i32 Y_row_stride, P X_ptr, tl::i32 X_row_stride, P W_ptr, [[maybe_unused]] tl::i32 W_row_stride, P RSTD_ptr,
       tl::i32 RSTD_row_stride, tl::i32 n_rows, tl::i32 n_cols, tl::f32 eps_arg, tl::f32 offset_arg, int casting_mode,
       bool elementwise_affine, int BLOCK_SIZE, int BLOCK_ROW) {
      auto row_idx = tl::program_id(0) * BLOCK_ROW + tl::arange(0, BLOCK_ROW);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto row_mask = row_idx < n_rows;
      auto col_mask = col_offsets < n_cols;

      auto X_row = tl::load(X_ptr + row_idx(tl::_, tl::None) * X_row_stride + col_offsets(tl::None, tl::_),
                            row_mask(tl::_, tl::None) & col_mask(tl::None, tl::_), 0);
      const DType X_row_dtype = X_row.dtype();
      tl::tensor W_row;
      if (elementwise_affine) W_row = tl::load(W_ptr + col_offsets, col_mask, 0);

      // On Llama, only rstd is computed on fp32
      if (casting_mode == _CASTING_MODE_LLAMA) X_row = X_row.to(tl::float32);

      // Gemma computes everything on fp32, and then casts back the output to the original dtype
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

      auto mean_square = tl::sum(X_row * X_row, 1) / n_cols;
      auto rstd = tl::rsqrt(mean_square + eps);

      tl::store(RSTD_ptr + row_idx * RSTD_row_stride, rstd, row_mask);

      X_row = X_row * rstd(tl::_, tl::None);

      // On Llama, the multiplication with the weight is done on the original dtype
      if (casting_mode == _CASTING_MODE_LLAMA) X_row = X_row.to(X_row_dtype);

      tl::tensor Y_row;
      if (elementwise_affine)
        Y_row = X_row * (offset + W_row)(tl::None, tl::_);
      else
        Y_row = X_row;

      if (casting_mode == _CASTING_MODE_GEMMA) Y_row = Y_row.to(X_row_dtype);

      tl::store(Y_ptr + row_idx(tl::_, tl::None) * Y_row_stride + col_offsets(tl::None, tl::_), Y_row,
                row_mask(tl::_, tl::None) & col_mask(tl::None, tl::_));
    },
    {"Y_ptr", "Y_row_stride", "X_ptr", "X_row_stride", "W_ptr", "W_row_stride", "RSTD_ptr", "RSTD_row_stride", "n_rows",
     "n_cols", "eps", "offset", "casting_mode", "elementwise_affine", "BLOCK_SIZE", "BLOCK_ROW"});

auto _block_rms_norm_backward_kernel = tritium::kernel(
    "_block_rms_norm_backward_kernel",
    [](P dY_ptr, tl::i32 dY_row_stride, P dX_ptr, tl::i32 dX_row_stride, P X_ptr, tl::i32 X_row_stride, int X_dtype_,
       P W_ptr, [[maybe_unused]] tl::i32 W_row_stride, P RSTD_ptr, tl::i32 RSTD_row_stride, P dW_ptr, tl::i32 dW_row_stride,
       tl::i32 n_rows, tl::i32 n_cols, tl::f32 offset, int casting_mode, bool elementwise_affine, int BLOCK_SIZE,
       int BLOCK_ROW) {
      const DType X_dtype = static_cast<DType>(X_dtype_);
      auto pid = tl::program_id(0).to(tl::int64);
      auto NUM_SMS = tl::num_programs(0);

      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto col_mask = col_offsets < n_cols;

      tl::tensor dW_row, W_row;
      if (elementwise_affine) {
        dW_row = tl::zeros({BLOCK_SIZE}, tl::float32);
        W_row = tl::load(W_ptr + col_offsets, col_mask, 0.0);
        W_row = W_row + offset.to(tl::float32);
      }
      tl::tensor W_bcast = elementwise_affine ? W_row(tl::None, tl::_) : W_row;

      for (auto start : tl::range(pid * BLOCK_ROW, n_rows, NUM_SMS * BLOCK_ROW)) {
        auto row_idx = start + tl::arange(0, BLOCK_ROW);
        auto row_mask = row_idx < n_rows;
        auto dY_row = tl::load(dY_ptr + row_idx(tl::_, tl::None) * dY_row_stride + col_offsets(tl::None, tl::_),
                               row_mask(tl::_, tl::None) & col_mask(tl::None, tl::_), 0.0);
        auto X_row = tl::load(X_ptr + row_idx(tl::_, tl::None) * X_row_stride + col_offsets(tl::None, tl::_),
                              row_mask(tl::_, tl::None) & col_mask(tl::None, tl::_), 0.0);

        // Get cached rms
        auto rstd_row = tl::load(RSTD_ptr + row_idx * RSTD_row_stride, row_mask);

        X_row = X_row.to(tl::float32);

        auto m = backward_m(dY_row, W_bcast, casting_mode, elementwise_affine);

        auto dX_row = rstd_row(tl::_, tl::None) * m;

        dX_row += rstd_row(tl::_, tl::None) *
                  (-tl::fdiv(1, n_cols) * (rstd_row * rstd_row * tl::sum(m * X_row, 1))(tl::_, tl::None) * X_row);

        if (elementwise_affine) {
          if (casting_mode == _CASTING_MODE_LLAMA)
            dW_row += tl::sum((dY_row * (X_row * rstd_row(tl::_, tl::None)).to(X_dtype)).to(tl::float32), 0);
          else
            dW_row += tl::sum(dY_row * (X_row * rstd_row(tl::_, tl::None)), 0);  // X_row is already in fp32
        }

        tl::store(dX_ptr + row_idx(tl::_, tl::None) * dX_row_stride + col_offsets(tl::None, tl::_), dX_row,
                  row_mask(tl::_, tl::None) & col_mask(tl::None, tl::_));
      }

      if (elementwise_affine) tl::store(dW_ptr + pid * dW_row_stride + col_offsets, dW_row, col_mask);
    },
    {"dY_ptr", "dY_row_stride", "dX_ptr", "dX_row_stride", "X_ptr", "X_row_stride", "X_dtype", "W_ptr", "W_row_stride",
     "RSTD_ptr", "RSTD_row_stride", "dW_ptr", "dW_row_stride", "n_rows", "n_cols", "offset", "casting_mode",
     "elementwise_affine", "BLOCK_SIZE", "BLOCK_ROW"});

bool g_poison = false;  // while checking: Y, RSTD and dX start as NaN

Tensor output(const std::vector<int64_t>& shape, DType dtype, const tritium::Device& device) {
  return g_poison ? tritium::ops::full(shape, NAN, dtype, device) : Tensor::empty(shape, dtype, device);
}

int32_t i32(int64_t v) {
  if (v > INT32_MAX) tritium::fail("rms_norm: {} does not fit the kernels' int32 arguments", v);
  return static_cast<int32_t>(v);
}

struct Forward {
  Tensor Y, RSTD;
  int BLOCK_SIZE, num_warps, casting_mode;
};

// While checking: take the block kernels whatever the row count (they run only from 32768 rows,
// more than a check can afford on the CPU).
bool g_force_block_kernels = false;

// The row kernels unless the rows are narrow (BLOCK_SIZE <= 256) and many (>= 4096 * 8), as the
// original; row_mode forces the row kernels.
bool use_row_kernels(int BLOCK_SIZE, int64_t n_rows, bool row_mode) {
  if (g_force_block_kernels && BLOCK_SIZE <= 256 && !row_mode) return false;
  return BLOCK_SIZE > 256 || n_rows < 4096 * 8 || row_mode;
}

// rms_norm_forward(X [n_rows, n_cols] contiguous, W [n_cols] or none, eps, offset, casting_mode, row_mode)
Forward rms_norm_forward(const Tensor& X, const std::optional<Tensor>& W, float eps, float offset, int casting_mode,
                         bool row_mode) {
  if (casting_mode != _CASTING_MODE_NONE && casting_mode != _CASTING_MODE_LLAMA && casting_mode != _CASTING_MODE_GEMMA)
    tritium::fail("rms_norm: Invalid casting mode: {}", casting_mode);
  const int64_t n_rows = X.size(0), n_cols = X.size(1);
  auto [BLOCK_SIZE, num_warps] = liger::calculate_settings(n_cols);
  Tensor Y = output({n_rows, n_cols}, X.dtype(), X.device());
  // RSTD is always computed/stored in fp32 if we are using Llama or Gemma casting mode
  const DType rstd_dtype = casting_mode == _CASTING_MODE_NONE ? X.dtype() : DType::f32;
  Tensor RSTD = output({n_rows}, rstd_dtype, X.device());
  const bool elementwise_affine = W.has_value();
  if (elementwise_affine && W->size(0) != n_cols)
    tritium::fail("rms_norm: Incompatible hidden size dimension between tensor1.shape[1] and tensor2.shape[0]");
  const Tensor& Wp = elementwise_affine ? *W : X;  // unused without a weight
  const int32_t w_stride = elementwise_affine ? i32(W->stride(0)) : 0;
  tritium::Meta meta{{"casting_mode", casting_mode}, {"elementwise_affine", elementwise_affine}, {"BLOCK_SIZE", BLOCK_SIZE}};
  if (use_row_kernels(BLOCK_SIZE, n_rows, row_mode)) {
    _rms_norm_forward_kernel[{n_rows}](Y, i32(Y.stride(0)), X, i32(X.stride(0)), Wp, w_stride, RSTD, i32(RSTD.stride(0)),
                                       i32(n_cols), eps, offset, meta, liger::warps(num_warps));
  } else {
    const int BLOCK_ROW = 16;
    meta.set("BLOCK_ROW", BLOCK_ROW);
    _block_rms_norm_forward_kernel[{tritium::cdiv(n_rows, BLOCK_ROW)}](
        Y, i32(Y.stride(0)), X, i32(X.stride(0)), Wp, w_stride, RSTD, i32(RSTD.stride(0)), i32(n_rows), i32(n_cols), eps,
        offset, meta, liger::warps(num_warps));
  }
  return {Y, RSTD, BLOCK_SIZE, num_warps, casting_mode};
}

int sm_count(const tritium::Device& device) {
  return device.is_cuda() ? tritium::runtime::cuda::properties(device.index).multiprocessor_count : kCpuSmCount;
}

// rms_norm_backward: dX (over dY when in_place) and dW (W's dtype) or none.
std::pair<Tensor, std::optional<Tensor>> rms_norm_backward(const Tensor& dY, const Tensor& X, const std::optional<Tensor>& W,
                                                           const Tensor& RSTD, float offset, int casting_mode, int BLOCK_SIZE,
                                                           int num_warps, bool in_place, bool row_mode) {
  const int64_t n_rows = dY.size(0), n_cols = dY.size(1);
  const int sms = sm_count(X.device());
  const bool elementwise_affine = W.has_value();
  // fp32 for numerical stability especially.
  std::optional<Tensor> _dW;
  if (elementwise_affine) _dW = Tensor::empty({sms, n_cols}, DType::f32, W->device());
  if (n_cols > BLOCK_SIZE) tritium::fail("rms_norm: This layer norm doesn't support feature dim >= 64KB.");
  const int64_t rows_per_program = tritium::cdiv(n_rows, sms);
  Tensor dX = in_place ? dY : g_poison ? output({n_rows, n_cols}, dY.dtype(), dY.device()) : tritium::ops::zeros_like(dY);
  const Tensor& Wp = elementwise_affine ? *W : X;
  const Tensor& dWp = elementwise_affine ? *_dW : X;
  const int32_t w_stride = elementwise_affine ? i32(W->stride(0)) : 0, dw_stride = elementwise_affine ? i32(_dW->stride(0)) : 0;
  const int X_dtype = static_cast<int>(X.dtype());  // torch_to_triton_dtype[X.dtype]
  tritium::Meta meta{{"casting_mode", casting_mode}, {"elementwise_affine", elementwise_affine}, {"BLOCK_SIZE", BLOCK_SIZE}};
  if (use_row_kernels(BLOCK_SIZE, n_rows, row_mode)) {
    _rms_norm_backward_kernel[{sms}](dY, i32(dY.stride(0)), dX, i32(dX.stride(0)), X, i32(X.stride(0)), X_dtype, Wp, w_stride, RSTD,
                                     i32(RSTD.stride(0)), dWp, dw_stride, i32(n_rows), i32(n_cols), offset,
                                     i32(rows_per_program), meta, liger::warps(num_warps));
  } else {
    meta.set("BLOCK_ROW", 16);
    _block_rms_norm_backward_kernel[{sms}](dY, i32(dY.stride(0)), dX, i32(dX.stride(0)), X, i32(X.stride(0)), X_dtype, Wp, w_stride,
                                           RSTD, i32(RSTD.stride(0)), dWp, dw_stride, i32(n_rows), i32(n_cols), offset, meta,
                                           liger::warps(num_warps));
  }
  std::optional<Tensor> dW;
  if (elementwise_affine) dW = tritium::ops::sum(*_dW, {0}).to(W->dtype());
  return {dX, dW};
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  int64_t rows, cols;
  DType dtype;
  int casting_mode;
  float offset;
  bool affine, block_kernels;
};

// Forward (Y, RSTD) and backward (dX, dW) against float64; returns the worst relative error.
double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> hx, hw, hdy;
  const float eps = 1e-6f;
  Tensor X = liger::random_tensor({c.rows, c.cols}, c.dtype, device, rng, hx, 1.5, 0.3);
  std::optional<Tensor> W;
  if (c.affine) W = liger::random_tensor({c.cols}, c.dtype, device, rng, hw, 0.5, 1.0);
  Tensor dY = liger::random_tensor({c.rows, c.cols}, c.dtype, device, rng, hdy);
  g_poison = true;
  g_force_block_kernels = c.block_kernels;
  Forward f = rms_norm_forward(X, W, eps, c.offset, c.casting_mode, false);
  std::vector<double> ref_y(hx.size()), ref_rstd(size_t(c.rows)), ref_dx(hx.size()), ref_dw(size_t(c.cols), 0.0);
  for (int64_t i = 0; i < c.rows; ++i) {
    const double* x = &hx[size_t(i * c.cols)];
    const double* dy = &hdy[size_t(i * c.cols)];
    double ss = 0;
    for (int64_t j = 0; j < c.cols; ++j) ss += x[j] * x[j];
    const double rstd = 1.0 / std::sqrt(ss / double(c.cols) + double(eps));
    ref_rstd[size_t(i)] = rstd;
    double mx = 0;
    for (int64_t j = 0; j < c.cols; ++j) {
      const double w = c.affine ? hw[size_t(j)] + double(c.offset) : 1.0;
      ref_y[size_t(i * c.cols + j)] = x[j] * rstd * w;
      mx += dy[j] * w * x[j];
    }
    for (int64_t j = 0; j < c.cols; ++j) {
      const double w = c.affine ? hw[size_t(j)] + double(c.offset) : 1.0;
      ref_dx[size_t(i * c.cols + j)] = rstd * (dy[j] * w - rstd * rstd * mx / double(c.cols) * x[j]);
      ref_dw[size_t(j)] += dy[j] * x[j] * rstd;
    }
  }
  double worst = std::max(liger::rel_error(liger::host(f.Y), ref_y), liger::rel_error(liger::host(f.RSTD), ref_rstd));
  auto [dX, dW] = rms_norm_backward(dY, X, W, f.RSTD, c.offset, c.casting_mode, f.BLOCK_SIZE, f.num_warps, false, false);
  g_force_block_kernels = false;
  g_poison = false;
  worst = std::max(worst, liger::rel_error(liger::host(dX), ref_dx));
  if (c.affine) worst = std::max(worst, liger::rel_error(liger::host(*dW), ref_dw));
  return worst;
}

bool check(const tritium::Device& device) {
  // Each casting mode, Gemma's offset, no weight, rows off the block (300 of 512; 1100 of 2048:
  // 8 warps), and the block kernels (200 of 256 columns, 37 rows: a partial block of 16 rows).
  const std::vector<Case> cases = {
      {37, 300, DType::f32, _CASTING_MODE_NONE, 0.0f, true, false},   {13, 1100, DType::bf16, _CASTING_MODE_LLAMA, 0.0f, true, false},
      {21, 300, DType::bf16, _CASTING_MODE_GEMMA, 1.0f, true, false}, {9, 300, DType::f32, _CASTING_MODE_LLAMA, 0.0f, false, false},
      {37, 200, DType::bf16, _CASTING_MODE_LLAMA, 0.0f, true, true},  {37, 200, DType::f32, _CASTING_MODE_GEMMA, 1.0f, true, true}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  const char* modes[] = {"none", "llama", "gemma"};
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.rows * 31 + c.cols + c.casting_mode));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {}x{} {}{}{}{} {:.1e}", detail.empty() ? "(Y, rstd, dX, dW: " : ", ", tritium::dtype_name(c.dtype),
                          c.rows, c.cols, modes[c.casting_mode + 1], c.offset != 0 ? " offset 1" : "", c.affine ? "" : " no W",
                          c.block_kernels ? " block" : "", rel);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("rms_norm", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_rms_norm.py: the default model (llama_3_8b: hidden 4096, bf16), eps 1e-6, LigerRMSNorm's
// defaults (casting "llama", offset 0, in_place), a sweep of sequence lengths T. GB/s from the bytes
// moved (forward: X read, Y written; backward: dY, X read, dX written; the rstd and dW rows aside).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t H = 4096;
  std::vector<int64_t> tokens = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192, 16384, 32768} : std::vector<int64_t>{256};
  std::vector<suite::Row> rows;
  for (int64_t T : tokens) {
    auto& gen = tritium::ops::default_generator();
    Tensor X = tritium::ops::randn({T, H}, gen, DType::f32, device).to(DType::bf16);
    Tensor W = tritium::ops::full({H}, 1.0, DType::f32, device);
    Tensor dY = tritium::ops::randn({T, H}, gen, DType::f32, device).to(DType::bf16);
    Forward f = rms_norm_forward(X, W, 1e-6f, 0.0f, _CASTING_MODE_LLAMA, false);
    const double bytes = double(T) * double(H) * 2.0;
    const double fwd = tritium::do_bench([&] { rms_norm_forward(X, W, 1e-6f, 0.0f, _CASTING_MODE_LLAMA, false); }, device).median_ms;
    rows.push_back({fmt::format("fwd T={} H={} bf16", T, H), fwd, 2 * bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] {
                         rms_norm_backward(dY, X, W, f.RSTD, 0.0f, _CASTING_MODE_LLAMA, f.BLOCK_SIZE, f.num_warps, true, false);
                       }, device).median_ms;
    rows.push_back({fmt::format("bwd T={} H={} bf16", T, H), bwd, 3 * bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "rms_norm",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/rms_norm.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
