// group_norm: Liger-Kernel's GroupNorm (linkedin/Liger-Kernel src/liger_kernel/ops/group_norm.py,
// read at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel): _group_norm_forward_kernel (a
// (batch, group) grid; two passes over the group's channels_per_group * H values in BLOCK_SIZE
// chunks: the sums for mean and variance, then the normalised, per-channel scaled and shifted
// output) and _group_norm_backward_kernel (per (batch, group): a pass per channel accumulating
// dW and dB, added atomically in `dtype`, and the c1 / c2 sums, then a pass writing dX), with the
// wrappers group_norm_forward / group_norm_backward (BLOCK_SIZE = min(MAX_FUSED_SIZE = 65536,
// next_power_of_2(hidden_size)); mean and rstd kept in X's dtype).
//
// Deviations: `dtype` (a tl.dtype constexpr) is an int meta-parameter holding the DType;
// LigerGroupNormFunction's autograd plumbing is left out.
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
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

constexpr int64_t MAX_FUSED_SIZE = 65536;  // (16384 on NPU)

auto _group_norm_forward_kernel = tritium::kernel(
    "_group_norm_forward_kernel",
    [](P Y_ptr, tl::i32 Y_row_stride, tl::i32 Y_col_stride, P X_ptr, tl::i32 X_row_stride, tl::i32 X_col_stride, P Mean_ptr,
       tl::i32 Mean_row_stride, tl::i32 Mean_col_stride, P RSTD_ptr, tl::i32 RSTD_row_stride, tl::i32 RSTD_col_stride, P W_ptr,
       P B_ptr, tl::i32 hidden_size, tl::i32 channels_per_group, tl::f32 eps, int BLOCK_SIZE) {
      auto batch_idx = tl::program_id(0);
      auto group_idx = tl::program_id(1);

      X_ptr += batch_idx * X_row_stride + group_idx * X_col_stride;
      Y_ptr += batch_idx * Y_row_stride + group_idx * Y_col_stride;

      auto block_range = tl::arange(0, BLOCK_SIZE);

      // Compute mean and variance using the online algorithm
      tl::tensor s = tl::full({}, 0.0, tl::float32);  // Python's s = 0.0
      tl::tensor squared_sum = tl::full({}, 0.0, tl::float32);
      for (auto i : tl::range(0, hidden_size, BLOCK_SIZE)) {
        auto hidden_size_offsets = i + block_range;
        auto mask = hidden_size_offsets < hidden_size;
        auto X = tl::load(X_ptr + hidden_size_offsets, mask, 0.0);
        s += tl::sum(X);
        // X**2
        squared_sum += tl::sum(X * X);
      }

      auto m = s / hidden_size;

      // variance = E[X**2] - E[X]**2
      auto variance = (squared_sum / hidden_size) - (m * m);

      // 1/std
      auto rstd = tl::rsqrt(variance + eps.to(tl::float32));

      // Normalize
      auto hidden_size_per_channel = hidden_size / channels_per_group;  // Triton's //
      for (auto i : tl::range(0, hidden_size, BLOCK_SIZE)) {
        auto hidden_size_offsets = i + block_range;
        auto mask = hidden_size_offsets < hidden_size;
        auto X = tl::load(X_ptr + hidden_size_offsets, mask, m);
        auto local_channel = hidden_size_offsets / hidden_size_per_channel;
        auto global_channel = group_idx * channels_per_group + local_channel;
        auto W = tl::load(W_ptr + global_channel, mask);
        auto B = tl::load(B_ptr + global_channel, mask);
        auto Y = (X - m) * rstd * W + B;
        tl::store(Y_ptr + hidden_size_offsets, Y, mask);
      }

      tl::store(Mean_ptr + batch_idx * Mean_row_stride + group_idx * Mean_col_stride, m);
      tl::store(RSTD_ptr + batch_idx * RSTD_row_stride + group_idx * RSTD_col_stride, rstd);
    },
    {"Y_ptr", "Y_row_stride", "Y_col_stride", "X_ptr", "X_row_stride", "X_col_stride", "Mean_ptr", "Mean_row_stride",
     "Mean_col_stride", "RSTD_ptr", "RSTD_row_stride", "RSTD_col_stride", "W_ptr", "B_ptr", "hidden_size",
     "channels_per_group", "eps", "BLOCK_SIZE"});

auto _group_norm_backward_kernel = tritium::kernel(
    "_group_norm_backward_kernel",
    [](P X_ptr, tl::i32 X_row_stride, tl::i32 X_col_stride, P W_ptr, P Mean_ptr, tl::i32 Mean_ptr_row_stride,
       tl::i32 Mean_ptr_col_stride, P RSTD_ptr, P DX_ptr, P DW_ptr, P DB_ptr, P UPSTREAM_ptr, int hidden_size,
       int channels_per_group, int BLOCK_SIZE, int dtype_) {
      // The backprop equations of layer_norm, over the group's channels_per_group * hidden_size
      // values, with each channel's weight.
      const DType dtype = static_cast<DType>(dtype_);
      auto batch_idx = tl::program_id(0);
      auto group_idx = tl::program_id(1);

      // Move the pointers to the correct batch
      X_ptr += batch_idx * X_row_stride;
      DX_ptr += batch_idx * X_row_stride;
      UPSTREAM_ptr += batch_idx * X_row_stride;

      // Mean and rstd are the same shape so have the same strides
      auto mean = tl::load(Mean_ptr + batch_idx * Mean_ptr_row_stride + group_idx * Mean_ptr_col_stride);
      auto rstd = tl::load(RSTD_ptr + batch_idx * Mean_ptr_row_stride + group_idx * Mean_ptr_col_stride);

      tl::tensor c1 = tl::full({}, 0.0, tl::float32);
      tl::tensor c2 = tl::full({}, 0.0, tl::float32);
      auto block_range = tl::arange(0, BLOCK_SIZE);

      // We need to compute the sum terms of the backprop equations across all channels in the group
      for (auto channel_idx : tl::range(group_idx * channels_per_group, (group_idx + 1) * channels_per_group)) {
        tl::tensor dW = tl::full({}, 0.0, tl::float32);
        tl::tensor dB = tl::full({}, 0.0, tl::float32);
        // Move the pointers to the correct channel
        auto W = tl::load(W_ptr + channel_idx);
        for (auto i : tl::range(0, hidden_size, BLOCK_SIZE)) {
          auto hidden_size_offsets = i + block_range;
          auto mask = hidden_size_offsets < hidden_size;
          auto X = tl::load(X_ptr + channel_idx * X_col_stride + hidden_size_offsets, mask, 0.0);
          auto UPSTREAM_grad = tl::load(UPSTREAM_ptr + channel_idx * X_col_stride + hidden_size_offsets, mask, 0.0);

          auto x_hat = (X - mean) * rstd;
          dW += tl::sum(UPSTREAM_grad * x_hat);
          dB += tl::sum(UPSTREAM_grad);

          auto wdy = W * UPSTREAM_grad;
          c1 += tl::sum(x_hat * wdy);
          c2 += tl::sum(wdy);
        }

        // Need to ensure additions to the same channel are atomic
        tl::atomic_add(DW_ptr + channel_idx, dW.to(dtype));
        tl::atomic_add(DB_ptr + channel_idx, dB.to(dtype));
      }

      const int N = hidden_size * channels_per_group;
      c1 = c1 / N;
      c2 = c2 / N;

      for (auto channel_idx : tl::range(group_idx * channels_per_group, (group_idx + 1) * channels_per_group)) {
        // Move the pointers to the correct channel
        auto W = tl::load(W_ptr + channel_idx);
        for (auto i : tl::range(0, hidden_size, BLOCK_SIZE)) {
          auto hidden_size_offsets = i + block_range;
          auto mask = hidden_size_offsets < hidden_size;
          auto X = tl::load(X_ptr + channel_idx * X_col_stride + hidden_size_offsets, mask, 0.0);
          auto UPSTREAM_grad = tl::load(UPSTREAM_ptr + channel_idx * X_col_stride + hidden_size_offsets, mask, 0.0);

          auto x_hat = (X - mean) * rstd;
          auto wdy = W * UPSTREAM_grad;
          auto dx = (wdy - (x_hat * c1 + c2)) * rstd;
          tl::store(DX_ptr + channel_idx * X_col_stride + hidden_size_offsets, dx, mask);
        }
      }
    },
    {"X_ptr", "X_row_stride", "X_col_stride", "W_ptr", "Mean_ptr", "Mean_ptr_row_stride", "Mean_ptr_col_stride", "RSTD_ptr",
     "DX_ptr", "DW_ptr", "DB_ptr", "UPSTREAM_ptr", "hidden_size", "channels_per_group", "BLOCK_SIZE", "dtype"});

bool g_poison = false;  // while checking: Y, Mean, RSTD and DX start as NaN

Tensor output(const std::vector<int64_t>& shape, DType dtype, const tritium::Device& device, bool zero) {
  if (g_poison) return tritium::ops::full(shape, NAN, dtype, device);
  return zero ? tritium::ops::zeros(shape, dtype, device) : Tensor::empty(shape, dtype, device);
}

int32_t i32(int64_t v) {
  if (v > INT32_MAX) tritium::fail("group_norm: {} does not fit the kernels' int32 arguments", v);
  return static_cast<int32_t>(v);
}

struct Forward {
  Tensor Y, Mean, RSTD;
  int BLOCK_SIZE;
};

// group_norm_forward(X (batch, num_channels, H) contiguous, num_channels, num_groups, W, B, eps)
Forward group_norm_forward(const Tensor& X_in, int64_t num_channels, int64_t num_groups, const Tensor& W, const Tensor& B,
                           float eps) {
  const int64_t batch_size = X_in.size(0);
  const int64_t channels_per_group = num_channels / num_groups;
  Tensor X = X_in.view({batch_size, num_groups, X_in.numel() / (batch_size * num_groups)}).contiguous();
  const int64_t hidden_size = X.size(2);
  const int BLOCK_SIZE = static_cast<int>(std::min(MAX_FUSED_SIZE, liger::next_power_of_2(hidden_size)));
  Tensor Y = output({batch_size, num_groups, hidden_size}, X.dtype(), X.device(), false);
  Tensor Mean = output({batch_size, num_groups}, X.dtype(), X.device(), true);
  Tensor RSTD = output({batch_size, num_groups}, X.dtype(), X.device(), true);
  _group_norm_forward_kernel[{batch_size, num_groups}](
      Y, i32(Y.stride(0)), i32(Y.stride(1)), X, i32(X.stride(0)), i32(X.stride(1)), Mean, i32(Mean.stride(0)),
      i32(Mean.stride(1)), RSTD, i32(RSTD.stride(0)), i32(RSTD.stride(1)), W, B, i32(hidden_size), i32(channels_per_group), eps,
      Meta{{"BLOCK_SIZE", BLOCK_SIZE}});
  return {Y.view(X_in.shape()), Mean, RSTD, BLOCK_SIZE};
}

struct Backward {
  Tensor DX, DW, DB;
};

// group_norm_backward(dY, X (batch, num_channels, H), W, B, Mean, RSTD, num_channels, num_groups)
Backward group_norm_backward(const Tensor& dY, const Tensor& X, const Tensor& W, const Tensor& B, const Tensor& Mean,
                             const Tensor& RSTD, int64_t num_channels, int64_t num_groups) {
  const int64_t batch_size = dY.size(0);
  const int64_t hidden_size = dY.size(dY.dim() - 1);
  const int64_t channels_per_group = num_channels / num_groups;
  Tensor DX = output({batch_size, num_groups, hidden_size * channels_per_group}, X.dtype(), X.device(), false);
  Tensor DW = tritium::ops::zeros({num_channels}, W.dtype(), W.device());
  Tensor DB = tritium::ops::zeros({num_channels}, B.dtype(), B.device());
  const DType triton_dtype = X.dtype() == DType::f32 ? DType::f32 : DType::bf16;
  const int BLOCK_SIZE = static_cast<int>(std::min(MAX_FUSED_SIZE, liger::next_power_of_2(hidden_size)));
  _group_norm_backward_kernel[{batch_size, num_groups}](
      X, i32(X.stride(0)), i32(X.stride(1)), W, Mean, i32(Mean.stride(0)), i32(Mean.stride(1)), RSTD, DX, DW, DB, dY,
      i32(hidden_size), i32(channels_per_group), BLOCK_SIZE, static_cast<int>(triton_dtype));
  return {DX.view(dY.shape()), DW, DB};
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  int64_t batch, channels, groups, H;
  DType dtype;
};

// Y, mean, rstd, dX, dW, dB against float64; the worst relative error.
double relative_error(const tritium::Device& device, const Case& c, uint32_t seed, std::string& worst_name) {
  std::mt19937 rng(seed);
  std::vector<double> hx, hw, hb, hdy;
  const float eps = 1e-6f;
  Tensor X = liger::random_tensor({c.batch, c.channels, c.H}, c.dtype, device, rng, hx, 1.5, 0.7);
  Tensor W = liger::random_tensor({c.channels}, c.dtype, device, rng, hw, 0.5, 1.0);
  Tensor B = liger::random_tensor({c.channels}, c.dtype, device, rng, hb, 0.5);
  Tensor dY = liger::random_tensor({c.batch, c.channels, c.H}, c.dtype, device, rng, hdy);
  g_poison = true;
  Forward f = group_norm_forward(X, c.channels, c.groups, W, B, eps);
  Backward b = group_norm_backward(dY, X, W, B, f.Mean, f.RSTD, c.channels, c.groups);
  g_poison = false;
  const int64_t cpg = c.channels / c.groups, n = cpg * c.H;
  std::vector<double> ref_y(hx.size()), ref_mean(size_t(c.batch * c.groups)), ref_rstd(ref_mean.size()), ref_dx(hx.size()),
      ref_dw(size_t(c.channels), 0.0), ref_db(size_t(c.channels), 0.0);
  for (int64_t bi = 0; bi < c.batch; ++bi)
    for (int64_t g = 0; g < c.groups; ++g) {
      const size_t base = size_t((bi * c.channels + g * cpg) * c.H);
      double mean = 0, var = 0;
      for (int64_t k = 0; k < n; ++k) mean += hx[base + size_t(k)];
      mean /= double(n);
      for (int64_t k = 0; k < n; ++k) var += (hx[base + size_t(k)] - mean) * (hx[base + size_t(k)] - mean);
      const double rstd = 1.0 / std::sqrt(var / double(n) + double(eps));
      ref_mean[size_t(bi * c.groups + g)] = mean, ref_rstd[size_t(bi * c.groups + g)] = rstd;
      double c1 = 0, c2 = 0;
      for (int64_t k = 0; k < n; ++k) {
        const size_t ch = size_t(g * cpg + k / c.H), e = base + size_t(k);
        const double xh = (hx[e] - mean) * rstd, wdy = hw[ch] * hdy[e];
        ref_y[e] = xh * hw[ch] + hb[ch];
        c1 += xh * wdy, c2 += wdy;
        ref_dw[ch] += hdy[e] * xh, ref_db[ch] += hdy[e];
      }
      c1 /= double(n), c2 /= double(n);
      for (int64_t k = 0; k < n; ++k) {
        const size_t ch = size_t(g * cpg + k / c.H), e = base + size_t(k);
        const double xh = (hx[e] - mean) * rstd;
        ref_dx[e] = (hw[ch] * hdy[e] - (xh * c1 + c2)) * rstd;
      }
    }
  const std::vector<std::pair<const char*, double>> errors = {
      {"Y", liger::rel_error(liger::host(f.Y), ref_y)},          {"mean", liger::rel_error(liger::host(f.Mean), ref_mean)},
      {"rstd", liger::rel_error(liger::host(f.RSTD), ref_rstd)}, {"dX", liger::rel_error(liger::host(b.DX), ref_dx)},
      {"dW", liger::rel_error(liger::host(b.DW), ref_dw)},       {"dB", liger::rel_error(liger::host(b.DB), ref_db)}};
  auto worst = *std::max_element(errors.begin(), errors.end(), [](auto& a, auto& b) { return a.second < b.second; });
  worst_name = worst.first;
  return worst.second;
}

bool check(const tritium::Device& device) {
  // Groups of several channels, H and the group size off the block (H 50: groups of 200 in a 256
  // block; H 37 with 2 channels a group), batches adding into dW / dB atomically, f32 and bf16
  // (bf16 atomics, mean and rstd kept in bf16, as the original).
  const std::vector<Case> cases = {{3, 12, 3, 50, DType::f32}, {2, 8, 4, 37, DType::f32}, {3, 8, 4, 37, DType::bf16}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    std::string worst_name;
    const double rel = relative_error(device, c, uint32_t(c.channels * 31 + c.H), worst_name);
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {}x{}x{} groups {} {:.1e} ({})", detail.empty() ? "(worst of Y, mean, rstd, dX, dW, dB: " : ", ",
                          tritium::dtype_name(c.dtype), c.batch, c.channels, c.H, c.groups, rel, worst_name);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("group_norm", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_group_norm.py: the default model (llama_3_8b: 4096 channels, bf16), 4 channels a
// group, H = 512, M = BT / H over the BT sweep. GB/s from the bytes moved (forward: X read twice,
// Y written; backward: X and dY read twice, dX written).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t C = 4096, H = 512, groups = C / 4;
  std::vector<int64_t> bts = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192, 16384} : std::vector<int64_t>{512};
  std::vector<suite::Row> rows;
  for (int64_t BT : bts) {
    const int64_t M = std::max<int64_t>(1, BT / H);
    auto& gen = tritium::ops::default_generator();
    Tensor X = tritium::ops::randn({M, C, H}, gen, DType::f32, device).to(DType::bf16);
    Tensor dY = tritium::ops::randn({M, C, H}, gen, DType::f32, device).to(DType::bf16);
    Tensor W = tritium::ops::full({C}, 1.0, DType::bf16, device);
    Tensor B = tritium::ops::zeros({C}, DType::bf16, device);
    Forward f = group_norm_forward(X, C, groups, W, B, 1e-6f);
    const double bytes = double(M) * double(C) * double(H) * 2.0;
    const double fwd = tritium::do_bench([&] { group_norm_forward(X, C, groups, W, B, 1e-6f); }, device).median_ms;
    rows.push_back({fmt::format("fwd M={} C={} H={} groups {} bf16", M, C, H, groups), fwd, 3 * bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] { group_norm_backward(dY, X, W, B, f.Mean, f.RSTD, C, groups); }, device).median_ms;
    rows.push_back({fmt::format("bwd M={} C={} H={} groups {} bf16", M, C, H, groups), bwd, 5 * bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "group_norm",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/group_norm.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
