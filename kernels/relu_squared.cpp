// relu_squared: Liger-Kernel's squared ReLU, y = relu(x)^2 (linkedin/Liger-Kernel
// src/liger_kernel/ops/relu_squared.py, read at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel):
// _relu_squared_forward_kernel and _relu_squared_backward_kernel (dx = dy * 2 * relu(x)), one
// program a row, with the wrappers relu_squared_forward / relu_squared_backward
// (calculate_settings' block and warps).
//
// Deviation: LigerReLUSquaredFunction's autograd plumbing is left out.
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

auto _relu_squared_forward_kernel = tritium::kernel(
    "_relu_squared_forward_kernel",
    [](P Y_ptr, tl::i32 Y_stride, P X_ptr, tl::i32 X_stride, int n_cols, int BLOCK_SIZE) {
      auto row_idx = tl::program_id(0).to(tl::int64);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      X_ptr += row_idx * X_stride;
      Y_ptr += row_idx * Y_stride;

      auto x_row = tl::load(X_ptr + col_offsets, mask, 0);
      // relu(x) = max(0, x), then square
      auto relu_x = tl::maximum(x_row, 0);
      auto y_row = relu_x * relu_x;

      tl::store(Y_ptr + col_offsets, y_row, mask);
    },
    {"Y_ptr", "Y_stride", "X_ptr", "X_stride", "n_cols", "BLOCK_SIZE"});

auto _relu_squared_backward_kernel = tritium::kernel(
    "_relu_squared_backward_kernel",
    [](P dX_ptr, tl::i32 dX_stride, P dY_ptr, tl::i32 dY_stride, P X_ptr, tl::i32 X_stride, int n_cols, int BLOCK_SIZE) {
      auto row_idx = tl::program_id(0).to(tl::int64);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      dX_ptr += row_idx * dX_stride;
      dY_ptr += row_idx * dY_stride;
      X_ptr += row_idx * X_stride;

      auto dy_row = tl::load(dY_ptr + col_offsets, mask, 0);
      auto x_row = tl::load(X_ptr + col_offsets, mask, 0);

      // d/dx[relu(x)^2] = 2 * relu(x) = 2 * x * (x > 0)
      auto relu_x = tl::maximum(x_row, 0);
      auto dx_row = dy_row * 2 * relu_x;

      tl::store(dX_ptr + col_offsets, dx_row, mask);
    },
    {"dX_ptr", "dX_stride", "dY_ptr", "dY_stride", "X_ptr", "X_stride", "n_cols", "BLOCK_SIZE"});

bool g_poison = false;  // while checking: y and dx start as NaN

Tensor output(const std::vector<int64_t>& shape, DType dtype, const tritium::Device& device) {
  return g_poison ? tritium::ops::full(shape, NAN, dtype, device) : Tensor::empty(shape, dtype, device);
}

int32_t i32(int64_t v) {
  if (v > INT32_MAX) tritium::fail("relu_squared: {} does not fit the kernels' int32 arguments", v);
  return static_cast<int32_t>(v);
}

// relu_squared_forward(X [n_rows, n_cols] contiguous)
Tensor relu_squared_forward(const Tensor& X) {
  const int64_t n_rows = X.size(0), n_cols = X.size(1);
  Tensor Y = output({n_rows, n_cols}, X.dtype(), X.device());
  auto [BLOCK_SIZE, num_warps] = liger::calculate_settings(n_cols);
  _relu_squared_forward_kernel[{n_rows}](Y, i32(Y.stride(0)), X, i32(X.stride(0)),
                                         Meta{{"n_cols", i32(n_cols)}, {"BLOCK_SIZE", BLOCK_SIZE}}, liger::warps(num_warps));
  return Y;
}

Tensor relu_squared_backward(const Tensor& X, const Tensor& dY) {
  const int64_t n_rows = dY.size(0), n_cols = dY.size(1);
  Tensor dX = output({n_rows, n_cols}, dY.dtype(), dY.device());
  auto [BLOCK_SIZE, num_warps] = liger::calculate_settings(n_cols);
  _relu_squared_backward_kernel[{n_rows}](dX, i32(dX.stride(0)), dY, i32(dY.stride(0)), X, i32(X.stride(0)),
                                          Meta{{"n_cols", i32(n_cols)}, {"BLOCK_SIZE", BLOCK_SIZE}}, liger::warps(num_warps));
  return dX;
}

// ---- check ------------------------------------------------------------------------------------

double relative_error(const tritium::Device& device, int64_t rows, int64_t cols, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> hx, hdy;
  Tensor x = liger::random_tensor({rows, cols}, dtype, device, rng, hx);
  Tensor dy = liger::random_tensor({rows, cols}, dtype, device, rng, hdy);
  g_poison = true;
  Tensor y = relu_squared_forward(x);
  Tensor dx = relu_squared_backward(x, dy);
  g_poison = false;
  std::vector<double> ref_y(hx.size()), ref_dx(hx.size());
  for (size_t k = 0; k < hx.size(); ++k) {
    const double r = std::max(hx[k], 0.0);
    ref_y[k] = r * r;
    ref_dx[k] = hdy[k] * 2 * r;
  }
  return std::max(liger::rel_error(liger::host(y), ref_y), liger::rel_error(liger::host(dx), ref_dx));
}

bool check(const tritium::Device& device) {
  struct Case {
    int64_t rows, cols;
    DType dtype;
  };
  // Rows off the block (300 of 512; 3000 of 4096: 8 warps), f32 and bf16.
  const std::vector<Case> cases = {{37, 300, DType::f32}, {9, 3000, DType::f32}, {29, 300, DType::bf16}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c.rows, c.cols, c.dtype, uint32_t(c.rows * 31 + c.cols));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {}x{} {:.1e}", detail.empty() ? "(y, dx: " : ", ", tritium::dtype_name(c.dtype), c.rows, c.cols, rel);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("relu_squared", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_relu_squared.py: the default model (llama_3_8b: hidden 4096, bf16), a sweep of BT rows.
// GB/s from the bytes moved (forward: x read, y written; backward: dy, x read, dx written).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t H = 4096;
  std::vector<int64_t> bts = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192, 16384, 32768} : std::vector<int64_t>{256};
  std::vector<suite::Row> rows;
  for (int64_t BT : bts) {
    auto& gen = tritium::ops::default_generator();
    Tensor x = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
    Tensor dy = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
    const double bytes = double(BT) * double(H) * 2.0;
    const double fwd = tritium::do_bench([&] { relu_squared_forward(x); }, device).median_ms;
    rows.push_back({fmt::format("fwd BT={} H={} bf16", BT, H), fwd, 2 * bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] { relu_squared_backward(x, dy); }, device).median_ms;
    rows.push_back({fmt::format("bwd BT={} H={} bf16", BT, H), bwd, 3 * bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "relu_squared",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/relu_squared.py",
                                    .category = "elementwise",
                                    .check = check,
                                    .bench = bench});

}  // namespace
