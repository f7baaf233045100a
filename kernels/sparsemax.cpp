// sparsemax: Liger-Kernel's sparsemax (linkedin/Liger-Kernel src/liger_kernel/ops/sparsemax.py,
// read at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel): _sparsemax_forward_kernel (one
// program a row over the row sorted in descending order: the cumulative sum gives the support and
// the threshold tau, then max(x - tau, 0)), _sparsemax_backward_kernel (two passes over the row in
// BLOCK_SIZE chunks: the mean of grad_out over the support, subtracted on it), and the wrappers
// _sparsemax_forward / _sparsemax_backward (dim moved last and made contiguous, calculate_settings,
// one program a row).
//
// Deviations: the forward wrapper's `torch.sort(x_flat.float(), dim=-1, descending=True).values`
// is x_flat.float() then sort_rows_descending below, a one-program-a-row kernel over tl::sort (the row padded with -inf
// to BLOCK_SIZE sorts it to the end); LigerSparsemaxFunction's autograd plumbing is left out.
// The kernels' `num_warps: tl.constexpr` parameter is a meta-parameter here too, and also the
// launch's num_warps, as Triton's launcher takes it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
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
using tritium::Tensor;
using P = tl::ptr<tl::any>;

auto _sparsemax_forward_kernel = tritium::kernel(
    "_sparsemax_forward_kernel",
    [](P x_ptr, tl::i32 x_stride_row, P sorted_x_ptr, tl::i32 sorted_x_stride_row, P o_ptr, tl::i32 o_stride_row,
       tl::i32 n_cols, int BLOCK_SIZE, int num_warps) {
      (void)num_warps;  // a launch option, passed to the kernel too
      auto pid_row = tl::program_id(0);
      auto ptr_x_data_row = x_ptr + pid_row * x_stride_row;
      auto ptr_sorted_x_data_row = sorted_x_ptr + pid_row * sorted_x_stride_row;
      auto ptr_output_row = o_ptr + pid_row * o_stride_row;

      auto offs = tl::arange(0, BLOCK_SIZE);
      auto mask = offs < n_cols;

      auto z_sorted_block = tl::load(ptr_sorted_x_data_row + offs, mask, -INFINITY, ".cg").to(tl::float32);

      auto z_valid = tl::where(mask, z_sorted_block, 0.0);
      auto cssv = tl::cumsum(z_valid, 0);

      auto r = (offs + 1).to(tl::float32);
      auto t_vec = (cssv - 1.0) / r;

      auto support = (z_sorted_block > t_vec) & mask;

      auto k_int = tl::sum(support.to(tl::int32), 0);
      auto k_clamped_int = tl::maximum(k_int, 1);
      auto k = k_clamped_int.to(tl::float32);

      auto s = tl::sum(tl::where(support, z_sorted_block, 0.0), 0);

      auto tau = (s - 1.0) / k;

      auto x_block = tl::load(ptr_x_data_row + offs, mask, 0.0, ".cg").to(tl::float32);

      auto y = tl::maximum(x_block - tau, 0.0);

      tl::store(ptr_output_row + offs, y.to(ptr_output_row.element_ty()), mask, ".cs");
    },
    {"x_ptr", "x_stride_row", "sorted_x_ptr", "sorted_x_stride_row", "o_ptr", "o_stride_row", "n_cols", "BLOCK_SIZE",
     "num_warps"});

auto _sparsemax_backward_kernel = tritium::kernel(
    "_sparsemax_backward_kernel",
    [](P o_ptr, P go_ptr, P gi_ptr, tl::i32 stride, tl::i32 n_cols, int BLOCK_SIZE, int num_warps) {
      (void)num_warps;
      auto row = tl::program_id(0);
      auto o_row = o_ptr + row * stride;
      auto go_row = go_ptr + row * stride;
      auto gi_row = gi_ptr + row * stride;

      auto offs = tl::arange(0, BLOCK_SIZE);

      tl::tensor supp_cnt = tl::zeros({}, tl::float32);
      tl::tensor go_sum = tl::zeros({}, tl::float32);

      for (auto i : tl::range(0, tl::cdiv(n_cols, BLOCK_SIZE))) {
        auto offs_iter = i * BLOCK_SIZE + offs;
        auto mask_iter = offs_iter < n_cols;
        auto o_val = tl::load(o_row + offs_iter, mask_iter, 0.0, ".ca").to(tl::float32);
        auto go_val = tl::load(go_row + offs_iter, mask_iter, 0.0).to(tl::float32);
        auto supp = o_val > 0.0;
        go_sum += tl::sum(tl::where(supp, go_val, 0.0));
        supp_cnt += tl::sum(supp.to(tl::float32));
      }

      for (auto i : tl::range(0, tl::cdiv(n_cols, BLOCK_SIZE))) {
        auto offs_iter = i * BLOCK_SIZE + offs;
        auto mask_iter = offs_iter < n_cols;
        auto o_val = tl::load(o_row + offs_iter, mask_iter, 0.0, ".ca").to(tl::float32);
        auto go_val = tl::load(go_row + offs_iter, mask_iter, 0.0).to(tl::float32);
        auto supp = o_val > 0.0;
        auto gi_val = tl::where(supp, go_val - (go_sum / tl::maximum(supp_cnt, 1e-6)).to(gi_row.element_ty()).to(tl::float32),
                                0.0);
        tl::store(gi_row + offs_iter, gi_val.to(gi_row.element_ty()), mask_iter, ".wb");
      }
    },
    {"o_ptr", "go_ptr", "gi_ptr", "stride", "n_cols", "BLOCK_SIZE", "num_warps"});

// torch.sort(x.float(), dim=-1, descending=True).values over [n_rows, n_cols], one program a row.
auto sort_rows_descending = tritium::kernel(
    "sort_rows_descending",
    [](P x_ptr, tl::i32 x_stride, P out_ptr, tl::i32 out_stride, tl::i32 n_cols, int BLOCK_SIZE) {
      auto row = tl::program_id(0).to(tl::int64);
      auto offs = tl::arange(0, BLOCK_SIZE);
      auto mask = offs < n_cols;
      auto v = tl::load(x_ptr + row * x_stride + offs, mask, -INFINITY).to(tl::float32);
      tl::store(out_ptr + row * out_stride + offs, tl::sort(v, std::nullopt, true), mask);
    },
    {"x_ptr", "x_stride", "out_ptr", "out_stride", "n_cols", "BLOCK_SIZE"});

bool g_poison = false;  // while checking: the outputs (torch.empty_like) start as NaN

int32_t i32(int64_t v) {
  if (v > INT32_MAX || v < INT32_MIN) tritium::fail("sparsemax: {} does not fit the kernels' int32 arguments", v);
  return static_cast<int32_t>(v);
}

Tensor empty_like(const Tensor& t) {
  return g_poison ? tritium::ops::full(t.shape(), NAN, t.dtype(), t.device()) : Tensor::empty(t.shape(), t.dtype(), t.device());
}

struct Forward {
  Tensor y, out_flat;
};

Forward _sparsemax_forward(const Tensor& x, int dim) {
  if (dim < 0) dim += int(x.dim());
  Tensor x_sw = tritium::ops::contiguous(x.transpose(dim, -1));
  const int64_t n_cols = x_sw.size(-1);
  const int64_t n_rows = x_sw.numel() / n_cols;
  Tensor x_flat = x_sw.view({n_rows, n_cols});

  auto [BLOCK_SIZE, num_warps] = liger::calculate_settings(n_cols);
  Tensor x_sorted_flat = g_poison ? tritium::ops::full({n_rows, n_cols}, NAN, DType::f32, x.device())
                                  : Tensor::empty({n_rows, n_cols}, DType::f32, x.device());
  Tensor x_float = x_flat.dtype() == DType::f32 ? x_flat : tritium::ops::to_dtype(x_flat, DType::f32);  // x_flat.float()
  sort_rows_descending[{n_rows}](x_float, i32(x_float.stride(0)), x_sorted_flat, i32(x_sorted_flat.stride(0)), i32(n_cols),
                                 BLOCK_SIZE, liger::warps(num_warps));

  Tensor out_flat = empty_like(x_flat);
  _sparsemax_forward_kernel[{n_rows}](x_flat, i32(x_flat.stride(0)), x_sorted_flat, i32(x_sorted_flat.stride(0)), out_flat,
                                      i32(out_flat.stride(0)), i32(n_cols), BLOCK_SIZE, num_warps, liger::warps(num_warps));

  Tensor y = out_flat.view(x_sw.shape()).transpose(dim, -1);
  return {y, out_flat};
}

Tensor _sparsemax_backward(const Tensor& grad_out, const Tensor& out_flat, int dim) {
  if (dim < 0) dim += int(grad_out.dim());
  Tensor grad_sw = tritium::ops::contiguous(grad_out.transpose(dim, -1));
  const int64_t n_cols = grad_sw.size(-1);
  const int64_t n_rows = grad_sw.numel() / n_cols;
  Tensor go_flat = grad_sw.view({n_rows, n_cols});

  auto [BLOCK_SIZE, num_warps] = liger::calculate_settings(n_cols);
  Tensor dx_flat = empty_like(go_flat);
  _sparsemax_backward_kernel[{n_rows}](out_flat, go_flat, dx_flat, i32(out_flat.stride(0)), i32(n_cols), BLOCK_SIZE,
                                       num_warps, liger::warps(num_warps));

  return dx_flat.view(grad_sw.shape()).transpose(dim, -1);
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  std::vector<int64_t> shape;
  int dim;
  DType dtype;
};

// Element (index along dim) of a row-major tensor: calls f(row of values' flat offsets) for every
// line along `dim`.
void for_each_line(const std::vector<int64_t>& shape, int dim, const std::function<void(const std::vector<size_t>&)>& f) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = int(shape.size()) - 2; d >= 0; --d) strides[size_t(d)] = strides[size_t(d) + 1] * shape[size_t(d) + 1];
  int64_t total = 1;
  for (auto s : shape) total *= s;
  for (int64_t flat = 0; flat < total; ++flat) {
    if ((flat / strides[size_t(dim)]) % shape[size_t(dim)] != 0) continue;  // one start a line
    std::vector<size_t> line(size_t(shape[size_t(dim)]));
    for (int64_t j = 0; j < shape[size_t(dim)]; ++j) line[size_t(j)] = size_t(flat + j * strides[size_t(dim)]);
    f(line);
  }
}

double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> xv, gv;
  Tensor x = liger::random_tensor(c.shape, c.dtype, device, rng, xv, 1.5);
  Tensor go = liger::random_tensor(c.shape, c.dtype, device, rng, gv);
  g_poison = true;
  Forward f = _sparsemax_forward(x, c.dim);
  // The backward of the forward's own output (the kernel's input), against float64 from it.
  Tensor dx = _sparsemax_backward(go, f.out_flat, c.dim);
  g_poison = false;
  const std::vector<double> y = liger::host(f.y), yk = liger::host(tritium::ops::contiguous(f.y));
  (void)y;
  std::vector<double> ref_y(xv.size()), ref_dx(xv.size());
  const int dim = c.dim < 0 ? c.dim + int(c.shape.size()) : c.dim;
  for_each_line(c.shape, dim, [&](const std::vector<size_t>& line) {
    // sparsemax by its definition: tau from the largest k with 1 + k z_(k) > sum_{j<=k} z_(j)
    std::vector<double> z;
    for (size_t at : line) z.push_back(xv[at]);
    std::sort(z.begin(), z.end(), std::greater<>());
    double cs = 0, s = 0;
    int k = 0;
    for (size_t j = 0; j < z.size(); ++j) {
      cs += z[j];
      if (1 + double(j + 1) * z[j] > cs) k = int(j + 1), s = cs;
    }
    const double tau = (s - 1) / std::max(k, 1);
    for (size_t at : line) ref_y[at] = std::max(xv[at] - tau, 0.0);
    // the backward on the kernel's forward output: go - mean(go over the support), on the support
    double sum = 0, cnt = 0;
    for (size_t at : line)
      if (yk[at] > 0) sum += gv[at], cnt += 1;
    for (size_t at : line) ref_dx[at] = yk[at] > 0 ? gv[at] - sum / std::max(cnt, 1e-6) : 0.0;
  });
  return std::max(liger::rel_error(yk, ref_y), liger::rel_error(liger::host(tritium::ops::contiguous(dx)), ref_dx));
}

bool check(const tritium::Device& device) {
  // Rows under a block (100 and 120 of 128, 7 of 16), sparsemax over a middle dim of a 3-D tensor
  // and over the first dim of a 2-D one (moved last and back), f32, bf16 and f16. (Blocks stay
  // small: the CPU compiles tl::sort's network in about 1.5 s at 256, 3 s at 1024; two sizes
  // here, the rows sorted in f32 whatever the input.)
  const std::vector<Case> cases = {{{9, 100}, -1, DType::f32},
                                   {{5, 7}, -1, DType::f32},
                                   {{3, 100, 6}, 1, DType::f32},
                                   {{6, 120}, -1, DType::bf16},
                                   {{100, 4}, 0, DType::f16}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.shape[0] * 131 + c.shape[1] + c.dim));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    std::string shape;
    for (auto s : c.shape) shape += (shape.empty() ? "" : "x") + std::to_string(s);
    detail += fmt::format("{}{} {} dim {} {:.1e}", detail.empty() ? "(y, dx: " : ", ", tritium::dtype_name(c.dtype), shape,
                          c.dim, rel);
  }
  detail += "; bounds f32 1e-5, f16 1e-3, bf16 1e-2; shown: worst error / bound)";
  return suite::report("sparsemax", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_sparsemax.py: the default model (llama_3_8b: hidden 4096, bf16), dim -1, a sweep of
// BT; forward (the sort and the kernel) and backward. GB/s from the bytes the kernels move
// (forward: x read twice, the f32 sorted copy written and read, y written; backward: y and
// grad_out read twice, dx written).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t H = 4096;
  std::vector<int64_t> bts = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192} : std::vector<int64_t>{16};
  std::vector<suite::Row> rows;
  for (int64_t BT : bts) {
    auto& gen = tritium::ops::default_generator();
    Tensor x = tritium::ops::randn({BT, H}, gen, DType::bf16, device);
    Tensor go = tritium::ops::randn({BT, H}, gen, DType::bf16, device);
    const double n = double(BT) * double(H);
    Forward f = _sparsemax_forward(x, -1);
    const double fwd = tritium::do_bench([&] { _sparsemax_forward(x, -1); }, device).median_ms;
    rows.push_back({fmt::format("fwd BT={} H={} bf16", BT, H), fwd, n * (2 * 2 + 4 * 2 + 2) * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] { _sparsemax_backward(go, f.out_flat, -1); }, device).median_ms;
    rows.push_back({fmt::format("bwd BT={} H={} bf16", BT, H), bwd, n * (4 * 2 + 2) * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "sparsemax",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/sparsemax.py",
                                    .category = "sort",
                                    .check = check,
                                    .bench = bench});

}  // namespace
