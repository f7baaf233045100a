// geglu: Liger-Kernel's GEGLU with the tanh approximation of GELU (linkedin/Liger-Kernel
// src/liger_kernel/ops/geglu.py, read at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel):
// _geglu_tanh_forward_kernel c = gelu_tanh(a) * b and _geglu_tanh_backward_kernel, which
// recomputes gelu and writes da and db over a and b in place, with their wrappers geglu_forward /
// geglu_backward (one program a row, block and warps from calculate_settings).
//
// Deviations: libdevice's tanh is tl::tanh; LigerGELUMulFunction's autograd plumbing is left out
// (the suite times the kernels).
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
using tritium::Tensor;
using P = tl::ptr<tl::any>;

auto _geglu_tanh_forward_kernel = tritium::kernel(
    "_geglu_tanh_forward_kernel",
    [](P a, P b, P c, tl::i32 stride, int n_cols, int BLOCK_SIZE) {
      auto program_id = tl::program_id(0).to(tl::int64);

      // locate start index
      a += program_id * stride;
      b += program_id * stride;
      c += program_id * stride;

      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;
      auto a_row = tl::load(a + col_offsets, mask, 0).to(tl::float32);
      auto b_row = tl::load(b + col_offsets, mask, 0);

      // tanh approximation form of GELU is computed with:
      // 0.5 * a * (1 + tanh(sqrt(2 / pi) * (a + 0.044715 * a^3)))
      const double sqrt_2_over_pi = 0.7978845608028654;  // sqrt(2 / pi)
      auto a_cubed = a_row * a_row * a_row;
      auto tanh_arg = sqrt_2_over_pi * (a_row + 0.044715 * a_cubed);
      auto tanh_result = tl::tanh(tanh_arg);
      auto geglu_a = 0.5 * a_row * (1 + tanh_result);
      auto c_row = geglu_a.to(b_row.dtype()) * b_row;
      tl::store(c + col_offsets, c_row, mask);
    },
    {"a", "b", "c", "stride", "n_cols", "BLOCK_SIZE"});

auto _geglu_tanh_backward_kernel = tritium::kernel(
    "_geglu_tanh_backward_kernel",
    [](P dc, P a, P b, tl::i32 stride, int n_cols, int BLOCK_SIZE) {
      auto program_id = tl::program_id(0).to(tl::int64);

      // locate start index
      dc += program_id * stride;
      a += program_id * stride;
      b += program_id * stride;

      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < n_cols;

      auto dc_row = tl::load(dc + col_offsets, mask, 0);
      auto a_row = tl::load(a + col_offsets, mask, 0).to(tl::float32);
      auto b_row = tl::load(b + col_offsets, mask, 0);

      // recomputation to save memory
      const double sqrt_2_over_pi = 0.7978845608028654;  // sqrt(2 / pi)
      auto a_cubed = a_row * a_row * a_row;
      auto tanh_arg = sqrt_2_over_pi * (a_row + 0.044715 * a_cubed);
      auto tanh_result = tl::tanh(tanh_arg);
      auto geglu_a = 0.5 * a_row * (1 + tanh_result);
      geglu_a = geglu_a.to(dc_row.dtype()).to(tl::float32);

      auto db_row = dc_row.to(tl::float32) * geglu_a;

      // Gradient w.r.t. a can be computed with:
      // b * (0.5 * (1 + tanh(z)) + 0.5 * a * (1 - tanh(z)^2) * (sqrt(2/pi) * (1 + 3 * 0.044715 * a^2)))
      // where z = sqrt(2/pi) * (a + 0.044715 * a^3)
      auto term1 = 0.5 * (1 + tanh_result);
      auto tanh_sq = tanh_result * tanh_result;
      auto term2 = 0.5 * a_row * (1 - tanh_sq) * (sqrt_2_over_pi * (1 + 3 * 0.044715 * a_row * a_row));
      auto da_row = dc_row * b_row * (term1 + term2);

      tl::store(a + col_offsets, da_row, mask);
      tl::store(b + col_offsets, db_row.to(dc_row.dtype()), mask);
    },
    {"dc", "a", "b", "stride", "n_cols", "BLOCK_SIZE"});

bool g_poison = false;  // while checking: c starts as NaN

int32_t i32(int64_t v, const char* what) {
  if (v > INT32_MAX) tritium::fail("geglu: {} = {} does not fit the kernel's int32 argument", what, v);
  return static_cast<int32_t>(v);
}

// geglu_forward(a, b) -> c, over the rows of the last dim (a and b contiguous,
// as ensure_contiguous makes them).
Tensor geglu_forward(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    tritium::fail("geglu: a {} and b {} must share shape and dtype", a.str(), b.str());
  const int64_t n_cols = a.size(a.dim() - 1);
  const int64_t n_rows = a.numel() / n_cols;
  Tensor c = g_poison ? tritium::ops::full(a.shape(), NAN, a.dtype(), a.device()) : Tensor::empty(a.shape(), a.dtype(), a.device());
  auto [BLOCK_SIZE, num_warps] = liger::calculate_settings(n_cols);
  _geglu_tanh_forward_kernel[{n_rows}](a, b, c, i32(n_cols, "stride"), tritium::Meta{{"n_cols", i32(n_cols, "n_cols")}, {"BLOCK_SIZE", BLOCK_SIZE}},
                                   liger::warps(num_warps));
  return c;
}

// geglu_backward(a, b, dc): da and db overwrite a and b.
void geglu_backward(Tensor& a, Tensor& b, const Tensor& dc) {
  const int64_t n_cols = dc.size(dc.dim() - 1);
  const int64_t n_rows = dc.numel() / n_cols;
  auto [BLOCK_SIZE, num_warps] = liger::calculate_settings(n_cols);
  _geglu_tanh_backward_kernel[{n_rows}](dc, a, b, i32(n_cols, "stride"),
                                    tritium::Meta{{"n_cols", i32(n_cols, "n_cols")}, {"BLOCK_SIZE", BLOCK_SIZE}},
                                    liger::warps(num_warps));
}

// ---- check ------------------------------------------------------------------------------------

// Forward and backward on random rows against float64 (GELU's tanh form, as the original); returns
// the worst relative error.
double relative_error(const tritium::Device& device, int64_t rows, int64_t cols, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> ha, hb, hdc;
  Tensor a = liger::random_tensor({rows, cols}, dtype, device, rng, ha, 2.0);
  Tensor b = liger::random_tensor({rows, cols}, dtype, device, rng, hb);
  Tensor dc = liger::random_tensor({rows, cols}, dtype, device, rng, hdc);
  g_poison = true;
  Tensor c = geglu_forward(a, b);
  g_poison = false;
  const double k = std::sqrt(2.0 / M_PI);
  std::vector<double> ref_c(ha.size()), ref_da(ha.size()), ref_db(ha.size());
  for (size_t i = 0; i < ha.size(); ++i) {
    const double x = ha[i], t = std::tanh(k * (x + 0.044715 * x * x * x)), gelu = 0.5 * x * (1 + t);
    ref_c[i] = gelu * hb[i];
    ref_db[i] = hdc[i] * gelu;
    ref_da[i] = hdc[i] * hb[i] * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x));
  }
  const double e_c = liger::rel_error(liger::host(c), ref_c);
  geglu_backward(a, b, dc);
  return std::max({e_c, liger::rel_error(liger::host(a), ref_da), liger::rel_error(liger::host(b), ref_db)});
}

bool check(const tritium::Device& device) {
  struct Case {
    int64_t rows, cols;
    DType dtype;
  };
  // Rows off the block (300 of 512, 1100 of 2048: 8 warps), f32 and bf16.
  const std::vector<Case> cases = {{37, 300, DType::f32}, {13, 1100, DType::f32}, {29, 300, DType::bf16}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c.rows, c.cols, c.dtype, uint32_t(c.rows * 31 + c.cols));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {}x{} {:.1e}", detail.empty() ? "(fwd+bwd: " : ", ", tritium::dtype_name(c.dtype),
                          c.rows, c.cols, rel);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("geglu", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_geglu.py: the default model (llama_3_8b: intermediate_size 14336, bf16), bsz 1, a
// sweep of total tokens T; the kernels see [T, 14336] rows. GB/s from the bytes each kernel moves
// (forward: a, b read, c written; backward: dc, a, b read, da, db written).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t I = 14336;
  std::vector<int64_t> tokens = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192, 16384} : std::vector<int64_t>{64};
  std::vector<suite::Row> rows;
  for (int64_t T : tokens) {
    auto& gen = tritium::ops::default_generator();
    Tensor a = tritium::ops::randn({T, I}, gen, DType::f32, device).to(DType::bf16);
    Tensor b = tritium::ops::randn({T, I}, gen, DType::f32, device).to(DType::bf16);
    Tensor dc = tritium::ops::randn({T, I}, gen, DType::f32, device).to(DType::bf16);
    const double bytes = double(T) * double(I) * 2.0;
    const double fwd = tritium::do_bench([&] { geglu_forward(a, b); }, device).median_ms;
    rows.push_back({fmt::format("fwd T={} I={} bf16", T, I), fwd, 3 * bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] { geglu_backward(a, b, dc); }, device).median_ms;
    rows.push_back({fmt::format("bwd T={} I={} bf16", T, I), bwd, 5 * bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "geglu",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/geglu.py",
                                    .category = "elementwise",
                                    .check = check,
                                    .bench = bench});

}  // namespace
