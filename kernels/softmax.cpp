// softmax: Liger-Kernel's row softmax (linkedin/Liger-Kernel src/liger_kernel/ops/softmax.py, read
// at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel): _softmax_single_block_forward_kernel and
// _softmax_single_block_backward_kernel (one program a row, the row in one block), with the
// wrappers _softmax_forward / _softmax_backward (calculate_settings' block and warps).
//
// Deviations:
//  - The multi-block kernels are not ported: the wrappers launch them only when n_cols exceeds
//    BLOCK_SIZE = next_power_of_2(n_cols), which never happens (calculate_settings raises past
//    65536 first). (Their online max also reads `tl.max(m, blk_max)`, which passes blk_max as
//    tl.max's axis argument.)
//  - cache_modifier hints (".ca", ".cs", ".wb") are dropped: Tritium's load and store take none.
//  - LigerSoftmaxFunction's autograd plumbing is left out.
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

auto _softmax_single_block_forward_kernel = tritium::kernel(
    "_softmax_single_block_forward_kernel",
    [](P Y_ptr, tl::i32 Y_row_stride, P X_ptr, tl::i32 X_row_stride, tl::i32 n_cols, int BLOCK_SIZE) {
      auto row_id = tl::program_id(0);
      auto offs = tl::arange(0, BLOCK_SIZE);
      auto mask = offs < n_cols;

      auto x = tl::load(X_ptr + row_id * X_row_stride + offs, mask, -INFINITY);
      auto m = tl::max(x, 0);
      auto e = tl::exp(x - m);
      auto d = tl::sum(e, 0);
      auto y = e / d;
      tl::store(Y_ptr + row_id * Y_row_stride + offs, y, mask);
    },
    {"Y_ptr", "Y_row_stride", "X_ptr", "X_row_stride", "n_cols", "BLOCK_SIZE"});

auto _softmax_single_block_backward_kernel = tritium::kernel(
    "_softmax_single_block_backward_kernel",
    [](P dy_ptr, tl::i32 dy_stride, P y_ptr, tl::i32 y_stride, P dx_ptr, tl::i32 dx_stride, tl::i32 n_cols, int BLOCK_SIZE) {
      auto row_id = tl::program_id(0);
      auto offs = tl::arange(0, BLOCK_SIZE);
      auto mask = offs < n_cols;

      auto dy = tl::load(dy_ptr + row_id * dy_stride + offs, mask, 0.0);
      auto y = tl::load(y_ptr + row_id * y_stride + offs, mask, 0.0);
      auto dot = tl::sum(dy * y, 0);
      auto dx = y * (dy - dot);
      tl::store(dx_ptr + row_id * dx_stride + offs, dx, mask);
    },
    {"dy_ptr", "dy_stride", "y_ptr", "y_stride", "dx_ptr", "dx_stride", "n_cols", "BLOCK_SIZE"});

bool g_poison = false;  // while checking: y and dx start as NaN

Tensor output(const std::vector<int64_t>& shape, DType dtype, const tritium::Device& device) {
  return g_poison ? tritium::ops::full(shape, NAN, dtype, device) : Tensor::empty(shape, dtype, device);
}

int32_t i32(int64_t v) {
  if (v > INT32_MAX) tritium::fail("softmax: {} does not fit the kernels' int32 arguments", v);
  return static_cast<int32_t>(v);
}

struct Forward {
  Tensor y;
  int BLOCK_SIZE, num_warps;
};

// _softmax_forward(x [n_rows, n_cols] contiguous): softmax over the last dim.
Forward _softmax_forward(const Tensor& x) {
  const int64_t n_rows = x.size(0), n_cols = x.size(1);
  auto [BLOCK_SIZE, num_warps] = liger::calculate_settings(n_cols);
  Tensor y = output({n_rows, n_cols}, x.dtype(), x.device());
  // n_cols <= BLOCK_SIZE always holds (calculate_settings): the single-block kernel.
  _softmax_single_block_forward_kernel[{n_rows}](y, i32(y.stride(0)), x, i32(x.stride(0)), i32(n_cols), Meta{{"BLOCK_SIZE", BLOCK_SIZE}},
                                                 liger::warps(num_warps));
  return {y, BLOCK_SIZE, num_warps};
}

Tensor _softmax_backward(const Tensor& dy, const Tensor& y, int BLOCK_SIZE, int num_warps) {
  const int64_t n_rows = dy.size(0), n_cols = dy.size(1);
  Tensor dx = output({n_rows, n_cols}, dy.dtype(), dy.device());
  _softmax_single_block_backward_kernel[{n_rows}](dy, i32(dy.stride(0)), y, i32(y.stride(0)), dx, i32(dx.stride(0)), i32(n_cols),
                                                  Meta{{"BLOCK_SIZE", BLOCK_SIZE}}, liger::warps(num_warps));
  return dx;
}

// ---- check ------------------------------------------------------------------------------------

// y against float64 of x, dx against float64 from the y the kernel produced (the backward's input).
double relative_error(const tritium::Device& device, int64_t rows, int64_t cols, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> hx, hdy;
  Tensor x = liger::random_tensor({rows, cols}, dtype, device, rng, hx, 3.0);
  Tensor dy = liger::random_tensor({rows, cols}, dtype, device, rng, hdy);
  g_poison = true;
  Forward f = _softmax_forward(x);
  Tensor dx = _softmax_backward(dy, f.y, f.BLOCK_SIZE, f.num_warps);
  g_poison = false;
  std::vector<double> hy = liger::host(f.y), ref_y(hx.size()), ref_dx(hx.size());
  for (int64_t i = 0; i < rows; ++i) {
    const size_t b = size_t(i * cols);
    double m = -INFINITY, d = 0, dot = 0;
    for (int64_t j = 0; j < cols; ++j) m = std::max(m, hx[b + size_t(j)]);
    for (int64_t j = 0; j < cols; ++j) d += std::exp(hx[b + size_t(j)] - m);
    for (int64_t j = 0; j < cols; ++j) ref_y[b + size_t(j)] = std::exp(hx[b + size_t(j)] - m) / d;
    for (int64_t j = 0; j < cols; ++j) dot += hdy[b + size_t(j)] * hy[b + size_t(j)];
    for (int64_t j = 0; j < cols; ++j) ref_dx[b + size_t(j)] = hy[b + size_t(j)] * (hdy[b + size_t(j)] - dot);
  }
  return std::max(liger::rel_error(hy, ref_y), liger::rel_error(liger::host(dx), ref_dx));
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
  return suite::report("softmax", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_softmax.py: the default model (llama_3_8b: hidden 4096, bf16), a sweep of BT rows.
// GB/s from the bytes moved (forward: x read, y written; backward: dy, y read, dx written).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t H = 4096;
  std::vector<int64_t> bts = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192, 16384, 32768} : std::vector<int64_t>{256};
  std::vector<suite::Row> rows;
  for (int64_t BT : bts) {
    auto& gen = tritium::ops::default_generator();
    Tensor x = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
    Tensor dy = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
    Forward f = _softmax_forward(x);
    const double bytes = double(BT) * double(H) * 2.0;
    const double fwd = tritium::do_bench([&] { _softmax_forward(x); }, device).median_ms;
    rows.push_back({fmt::format("fwd BT={} H={} bf16", BT, H), fwd, 2 * bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] { _softmax_backward(dy, f.y, f.BLOCK_SIZE, f.num_warps); }, device).median_ms;
    rows.push_back({fmt::format("bwd BT={} H={} bf16", BT, H), bwd, 3 * bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "softmax",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/softmax.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
