// var_mean: FlagGems' var_mean (flagos-ai/FlagGems src/flag_gems/ops/var_mean.py, read at commit
// b684fbc78add: welford_func, var_mean_welford_kernel, var_mean_kernel_1, var_mean_kernel_2 and
// the host function var_mean; var_mean_heur_block_n of
// src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py and dim_compress of
// src/flag_gems/utils/shape_utils.py at the same commit; ext.program_id of
// src/flag_gems/utils/triton_lang_extension.py). Apache-2.0, as FlagGems.
//
// Over some dims: the reduced dims are moved last (dim_compress), and one program a row makes two
// passes of 1024-wide blocks - the mean, then the sum of squared deviations - in f32. Over every
// dim: 1024-element programs store each block's mean, count and sum of squared deviations (in the
// input's dtype, as the original), and one program merges them with tl.reduce over the three
// tensors at once, Welford's (Chan's) pairwise combination.
//
// Deviations: do_not_specialize on correction / M / N: Tritium specialises an integer equal to 1
// (as Triton without the flag), which changes nothing here. correction is an f32 argument (the
// original's default 1.0, a Python float, is one). libentry has no counterpart.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "autotune/autotuner.h"
#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

namespace ext {
tl::tensor program_id(int axis) { return tl::program_id(axis).to(tl::int64); }
}  // namespace ext

int64_t next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// @triton.jit welford_func: merges (mean, count, M2) pairs.
std::vector<tl::tensor> welford_func(std::span<const tl::tensor> x, std::span<const tl::tensor> y) {
  const tl::tensor &mean_x = x[0], &count_x = x[1], &M_x = x[2];
  const tl::tensor &mean_y = y[0], &count_y = y[1], &M_y = y[2];
  auto count = count_x + count_y;
  auto _count = tl::maximum(count, 1);
  auto mc_x = mean_x * count_x;
  auto mc_y = mean_y * count_y;
  auto mean = (mc_x + mc_y) / _count;
  auto M = M_x + mc_x * mean_x + M_y + mc_y * mean_y - count * mean * mean;
  return {mean, count, M};
}

auto var_mean_welford_kernel = tritium::kernel(
    "var_mean_welford_kernel",
    [](P X, P Var, P Mean, tl::i32 M, tl::i32 N, tl::f32 correction, int BLOCK_N) {
      (void)M;
      // One row per program to avoid autotune correctness issues on some backends.
      auto pid = ext::program_id(0);
      X = X + pid * N;
      Var = Var + pid;
      Mean = Mean + pid;

      auto _sum = tl::zeros({BLOCK_N}, tl::float32);
      for (auto off : tl::range(0, N, BLOCK_N)) {
        auto cols = off + tl::arange(0, BLOCK_N);
        auto mask = cols < N;
        auto x = tl::load(X + cols, mask, 0.0).to(tl::float32);
        _sum += x;
      }
      auto mean = tl::sum(_sum) / N;

      auto _acc = tl::zeros({BLOCK_N}, tl::float32);
      for (auto off : tl::range(0, N, BLOCK_N)) {
        auto cols = off + tl::arange(0, BLOCK_N);
        auto mask = cols < N;
        auto x = tl::load(X + cols, mask, 0.0).to(tl::float32);
        auto diff = tl::where(mask, x - mean, 0.0);
        _acc += diff * diff;
      }
      auto var = tl::sum(_acc) / (N - correction);
      // Write mean / var
      tl::store(Mean, mean);
      tl::store(Var, var);
    },
    {"X", "Var", "Mean", "M", "N", "correction", "BLOCK_N"});

auto var_mean_kernel_1 = tritium::kernel(
    "var_mean_kernel_1",
    [](P X, P Acc, P Average, P Count, tl::i32 N, int BLOCK_N) {
      // Map the program id to the row of X it should compute.
      auto pid = ext::program_id(0);
      auto offset = pid * BLOCK_N + tl::arange(0, BLOCK_N);

      X = X + offset;
      Acc = Acc + pid;
      Average = Average + pid;
      Count = Count + pid;
      auto mask = offset < N;

      auto x = tl::load(X, mask, 0.0).to(tl::float32);

      auto count = tl::sum(mask.to(tl::float32));
      auto average = tl::sum(x) / count;
      auto acc = tl::sum(x * x) - count * average * average;

      tl::store(Average, average);
      tl::store(Acc, acc);
      tl::store(Count, count);
    },
    {"X", "Acc", "Average", "Count", "N", "BLOCK_N"});

auto var_mean_kernel_2 = tritium::kernel(
    "var_mean_kernel_2",
    [](P Acc, P Average, P Count, P Var, P Mean, tl::i32 N, tl::f32 correction, tl::i32 BLOCK_NUM, int BLOCK_N) {
      auto offset = tl::arange(0, BLOCK_N);
      auto mask = offset < BLOCK_NUM;
      Acc = Acc + offset;
      Average = Average + offset;
      Count = Count + offset;
      auto acc = tl::load(Acc, mask, 0.0).to(tl::float32);
      auto average = tl::load(Average, mask, 0.0).to(tl::float32);
      auto count = tl::load(Count, mask, 0.0).to(tl::float32);

      auto r = tl::reduce({average, count, acc}, 0, welford_func);
      auto mean = r[0], nvar = r[2];

      auto var = nvar / (N - correction);
      tl::store(Mean, mean);
      tl::store(Var, var);
    },
    {"Acc", "Average", "Count", "Var", "Mean", "N", "correction", "BLOCK_NUM", "BLOCK_N"});

// @triton.heuristics(runtime.get_heuristic_config("var_mean")): BLOCK_N = next_power_of_2(BLOCK_NUM)
tritium::Heuristics& kernel_2() {
  static tritium::Heuristics h = tritium::heuristics(
      var_mean_kernel_2,
      {{"BLOCK_N", [](const tritium::ArgView& a) { return next_power_of_2(a.integer("BLOCK_NUM")); }}});
  return h;
}

// shape_utils.dim_compress(inp, dims): the other dims, then the reduced ones by decreasing stride.
Tensor dim_compress(const Tensor& inp, std::vector<int> dims) {
  std::vector<int> order;
  for (int i = 0; i < inp.dim(); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) order.push_back(i);
  std::stable_sort(dims.begin(), dims.end(), [&](int a, int b) { return inp.stride(a) > inp.stride(b); });
  order.insert(order.end(), dims.begin(), dims.end());
  return inp.permute(order).contiguous();
}

bool g_poison = false;  // while checking: outputs and partials start as NaN

Tensor empty(Tensor::Shape shape, DType dtype, tritium::Device device) {
  return g_poison ? tritium::ops::full(shape, NAN, dtype, device) : Tensor::empty(shape, dtype, device);
}

// var_mean(x, dim, correction, keepdim): (var, mean) in x's dtype.
std::pair<Tensor, Tensor> var_mean(const Tensor& x_in, std::optional<std::vector<int>> dim, double correction = 1.0,
                                   bool keepdim = false) {
  if (!tritium::is_float(x_in.dtype()) || tritium::is_fp8(x_in.dtype()))
    tritium::fail("var_mean: expects a floating-point tensor, got {}", x_in.str());
  Tensor x = x_in;
  Tensor var, mean;
  std::vector<int> dims;
  if (!dim || int(dim->size()) == x.dim()) {
    for (int i = 0; i < x.dim(); ++i) dims.push_back(i);
    Tensor::Shape shape(size_t(x.dim()), 1);
    x = x.contiguous();
    const int64_t N = x.numel();
    var = empty(shape, x.dtype(), x.device());
    mean = empty(shape, x.dtype(), x.device());
    const int BLOCK_N = 1024;
    const int64_t BLOCK_NUM = tritium::cdiv(N, BLOCK_N);
    Tensor acc = empty({BLOCK_NUM}, x.dtype(), x.device());
    Tensor average = empty({BLOCK_NUM}, x.dtype(), x.device());
    Tensor count = empty({BLOCK_NUM}, x.dtype(), x.device());
    var_mean_kernel_1[{BLOCK_NUM}](x, acc, average, count, N, tritium::Meta{{"BLOCK_N", BLOCK_N}});
    kernel_2()[{1}](acc, average, count, var, mean, N, correction, BLOCK_NUM);
  } else {
    Tensor::Shape shape = x.shape();
    for (int d : *dim) {
      if (d < -x.dim() || d >= x.dim()) tritium::fail("var_mean: dim {} out of range for {}", d, x.str());
      dims.push_back((d + x.dim()) % x.dim());
    }
    x = dim_compress(x, dims);
    int64_t N = 1;
    for (int i : dims) {
      N *= shape[size_t(i)];
      shape[size_t(i)] = 1;
    }
    const int64_t M = x.numel() / N;
    var = empty(shape, x.dtype(), x.device());
    mean = empty(shape, x.dtype(), x.device());
    const int BLOCK_N = 1024;
    var_mean_welford_kernel[{M}](x, var, mean, M, N, correction, tritium::Meta{{"BLOCK_N", BLOCK_N}});
  }
  if (!keepdim) {
    Tensor::Shape kept;
    for (int i = 0; i < x_in.dim(); ++i)
      if (std::find(dims.begin(), dims.end(), i) == dims.end()) kept.push_back(x_in.size(i));
    var = var.reshape(kept), mean = mean.reshape(kept);
  }
  return {var, mean};
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

// Relative errors of var and mean against float64 (two-pass sums of the rounded inputs).
std::pair<double, double> errors(const tritium::Device& device, const Tensor::Shape& shape,
                                 std::optional<std::vector<int>> dim, double correction, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.5, 2);  // a mean away from 0: the two terms of var differ
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<double> hx(static_cast<size_t>(n));
  for (auto& v : hx) v = normal(rng);
  Tensor x = Tensor::from_vector(hx, shape, device).to(dtype);
  g_poison = true;
  auto [var, mean] = var_mean(x, dim, correction);
  g_poison = false;
  // The reference over the same layout: reduced dims last.
  std::vector<int> dims;
  if (dim)
    for (int d : *dim) dims.push_back((d + int(shape.size())) % int(shape.size()));
  else
    for (int i = 0; i < int(shape.size()); ++i) dims.push_back(i);
  Tensor xc = dim_compress(x, dims);
  const auto hc = host(xc);
  int64_t N = 1;
  for (int d : dims) N *= shape[size_t(d)];
  const int64_t M = n / N;
  std::vector<double> ref_var(static_cast<size_t>(M)), ref_mean(static_cast<size_t>(M));
  for (int64_t r = 0; r < M; ++r) {
    double s = 0, q = 0;
    for (int64_t j = 0; j < N; ++j) s += hc[size_t(r * N + j)];
    const double m = s / double(N);
    for (int64_t j = 0; j < N; ++j) q += (hc[size_t(r * N + j)] - m) * (hc[size_t(r * N + j)] - m);
    ref_mean[size_t(r)] = m, ref_var[size_t(r)] = q / (double(N) - correction);
  }
  if (var.numel() != M || mean.numel() != M) return {INFINITY, INFINITY};
  const auto gv = host(var), gm = host(mean);
  return {suite::rel_error(std::vector<float>(gv.begin(), gv.end()), ref_var),
          suite::rel_error(std::vector<float>(gm.begin(), gm.end()), ref_mean)};
}

bool check(const tritium::Device& device) {
  struct Case {
    Tensor::Shape shape;
    std::optional<std::vector<int>> dim;
    double correction;
    DType dtype;
  };
  // Rows longer than the 1024 block (both passes loop, a masked tail), reduced dims first and
  // split (dim_compress), f16 rows; whole-tensor reductions (partials merged by the three-tensor
  // tl.reduce), correction 0 and 1.
  const std::vector<Case> cases = {{{5, 3000}, std::vector<int>{1}, 1.0, DType::f32},
                                   {{6, 40, 7}, std::vector<int>{0, 2}, 0.0, DType::f32},
                                   {{9, 777}, std::vector<int>{-1}, 1.0, DType::f16},
                                   {{5000}, std::nullopt, 1.0, DType::f32},
                                   {{3, 1500}, std::nullopt, 0.0, DType::bf16}};
  bool ok = true;
  std::string detail;
  double worst = 0;
  for (const Case& c : cases) {
    auto [ev, em] = errors(device, c.shape, c.dim, c.correction, c.dtype, uint32_t(c.shape[0] * 3 + c.shape.back()));
    // f32 1e-5; f16 1e-3, bf16 1e-2 (outputs, and the whole-tensor partials, in the input dtype).
    const double bound = c.dtype == DType::bf16 ? 1e-2 : c.dtype == DType::f16 ? 1e-3 : 1e-5;
    const double e = std::max(ev, em);
    if (!(e <= bound)) ok = false;
    worst = std::max(worst, e / bound);
    detail += fmt::format("{}{} {} dim {} corr {}: var {:.1e} mean {:.1e}", detail.empty() ? "(" : ", ",
                          tritium::dtype_name(c.dtype), fmt::join(c.shape, "x"),
                          c.dim ? fmt::format("{}", fmt::join(*c.dim, ",")) : std::string("all"), c.correction, ev, em);
  }
  detail += "; bounds f32 1e-5, f16 1e-3, bf16 1e-2; reported: worst error / bound)";
  return suite::report("var_mean", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// FlagGems' benchmark/test_var_mean.py: UnaryReductionBenchmark's shapes (benchmark/core_shapes.yaml),
// dim 1 (every dim for the 1-D shape), its float dtypes. GB/s counts the input read once.
std::vector<suite::Row> bench(const tritium::Device& device) {
  std::vector<Tensor::Shape> shapes;
  if (device.is_cuda())
    shapes = {{1048576}, {64, 64}, {4096, 4096}, {64, 512, 512}, {1024, 1024, 1024}};
  else
    shapes = {{65536}, {64, 64}, {256, 256}, {16, 64, 64}};
  std::vector<suite::Row> rows;
  for (DType dtype : {DType::f16, DType::f32, DType::bf16})
    for (const auto& shape : shapes) {
      Tensor x = tritium::ops::randn(shape, tritium::ops::default_generator(), DType::f32, device).to(dtype);
      std::optional<std::vector<int>> dim;
      if (shape.size() > 1) dim = std::vector<int>{1};
      const double ms = tritium::do_bench([&] { var_mean(x, dim); }, device).median_ms;
      rows.push_back({fmt::format("{} {}", fmt::join(shape, "x"), tritium::dtype_name(dtype)), ms,
                      double(x.nbytes()) * 1e-9 / (ms * 1e-3), "GB/s"});
    }
  return rows;
}

const bool registered = suite::add({.name = "var_mean",
                                    .source = "flagos-ai/FlagGems src/flag_gems/ops/var_mean.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
