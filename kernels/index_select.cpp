// index_select: FlagGems' index_select (flagos-ai/FlagGems src/flag_gems/ops/index_select.py, read
// at commit b684fbc78add: index_select_kernel and the host function index_select; its heuristics
// index_select_heur_block_m / _n of src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py
// and dim_compress of src/flag_gems/utils/shape_utils.py at the same commit; ext.program_id of
// src/flag_gems/utils/triton_lang_extension.py). Apache-2.0, as FlagGems.
//
// A gather through an index vector: the selected dim is moved last (dim_compress: a permuted
// contiguous copy), so the input is [M, N] and the output [M, index_len]; a program loads BLOCK_N
// indices once and gathers them for BLOCK_M rows (BLOCK_M grows when rows are short, BLOCK_N with
// N). Indices outside [0, N) are masked off (their outputs are left unwritten, as the original).
// The output is permuted back when the dim was not the last.
//
// Deviations: libentry (a launch cache) has no counterpart. Python's `rows_mask and (...)` on
// tensors is Triton's logical and, `&&` here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
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

auto index_select_kernel = tritium::kernel(
    "index_select_kernel",
    [](P inp, P out, tl::i32 M, tl::i32 N, P index, tl::i32 index_len, int BLOCK_M, int BLOCK_N) {
      auto pid_x = ext::program_id(0);
      auto pid_y = ext::program_id(1);
      auto rows_offsets = pid_x * BLOCK_M + tl::arange(0, BLOCK_M)(tl::_, tl::None);
      auto rows_mask = rows_offsets < M;
      auto cols_offsets = pid_y * BLOCK_N + tl::arange(0, BLOCK_N);

      auto out_mask = rows_mask && (cols_offsets < index_len);

      auto indices = tl::load(index + cols_offsets, cols_offsets < index_len, 0);
      auto valid_lower_bound = indices >= 0;
      auto valid_upper_bound = indices < N;
      auto index_valid_mask = valid_lower_bound & valid_upper_bound;

      auto inp_off = rows_offsets * N + indices(tl::None, tl::_);
      auto out_off = rows_offsets * index_len + cols_offsets(tl::None, tl::_);

      auto final_mask = out_mask & index_valid_mask;
      auto selected = tl::load(inp + inp_off, final_mask, 0.0);
      tl::store(out + out_off, selected, final_mask);
    },
    {"inp", "out", "M", "N", "index", "index_len", "BLOCK_M", "BLOCK_N"});

// @triton.heuristics(runtime.get_heuristic_config("index_select"))
tritium::Heuristics& index_select_heuristics() {
  static tritium::Heuristics h = tritium::heuristics(
      index_select_kernel,
      {{"BLOCK_M",
        [](const tritium::ArgView& a) {
          return std::min<int64_t>(4, next_power_of_2(tritium::cdiv(256, a.integer("N"))));
        }},
       {"BLOCK_N", [](const tritium::ArgView& a) {
          const int64_t m = std::min<int64_t>(next_power_of_2(tritium::cdiv(a.integer("N"), 16)), 512);
          return std::max<int64_t>(m, 16);
        }}});
  return h;
}

// shape_utils.dim_compress(inp, dim): the other dims first, dim last, as a contiguous copy.
Tensor dim_compress(const Tensor& inp, int dim) {
  std::vector<int> order;
  for (int i = 0; i < inp.dim(); ++i)
    if (i != dim) order.push_back(i);
  order.push_back(dim);
  return inp.permute(order).contiguous();
}

bool g_poison = false;  // while checking: the output starts as NaN

Tensor index_select(const Tensor& inp_in, int dim, Tensor index) {
  if (dim < -inp_in.dim() || dim >= inp_in.dim()) tritium::fail("index_select: Invalid dim {} for {}", dim, inp_in.str());
  if (index.dim() > 1) tritium::fail("index_select: Index should have dimension 1 or 0, got {}", index.str());
  if (!tritium::is_int(index.dtype()) || index.dtype() == DType::i1)
    tritium::fail("index_select: the index must hold integers, got {}", index.str());
  if (index.dim() == 0) index = index.unsqueeze(0);
  index = index.contiguous();
  dim = (dim + inp_in.dim()) % inp_in.dim();
  const int64_t index_len = index.numel();

  // with dim_compress
  Tensor inp = dim_compress(inp_in, dim);
  const int64_t N = inp_in.size(dim);
  const int64_t M = inp.numel() / N;
  Tensor::Shape out_shape = inp.shape();
  out_shape.back() = index_len;
  Tensor out = g_poison ? tritium::ops::full(out_shape, NAN, inp.dtype(), inp.device())
                        : Tensor::empty(out_shape, inp.dtype(), inp.device());
  if (out.numel() == 0) return out;

  auto grid = [=](const tritium::Meta& meta) {
    return tritium::Grid(tritium::cdiv(M, meta["BLOCK_M"]), tritium::cdiv(index_len, meta["BLOCK_N"]));
  };
  index_select_heuristics()[grid](inp, out, M, N, index, index_len);
  if (dim != out.dim() - 1) {
    std::vector<int> order;
    for (int i = 0; i < out.dim() - 1; ++i) order.push_back(i);
    order.insert(order.begin() + dim, out.dim() - 1);
    return out.permute(order).contiguous();
  }
  return out;
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

// Exact comparison (a gather copies): the largest |got - ref| over the output, infinity on a NaN.
double max_error(const tritium::Device& device, const Tensor::Shape& shape, int dim, int64_t index_len, DType dtype,
                 DType index_dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<double> hx(static_cast<size_t>(n));
  for (auto& v : hx) v = normal(rng);
  Tensor x = Tensor::from_vector(hx, shape, device).to(dtype);
  hx = host(x);
  const int d = (dim + int(shape.size())) % int(shape.size());
  std::uniform_int_distribution<int64_t> pick(0, shape[size_t(d)] - 1);
  std::vector<int64_t> hi(static_cast<size_t>(index_len));
  for (auto& v : hi) v = pick(rng);  // repeats included
  Tensor index = Tensor::from_vector(hi, {index_len}, device).to(index_dtype);
  g_poison = true;
  Tensor y = index_select(x, dim, index);
  g_poison = false;
  Tensor::Shape out_shape = shape;
  out_shape[size_t(d)] = index_len;
  if (y.shape() != out_shape) return INFINITY;
  const std::vector<double> got = host(y);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < d; ++i) outer *= shape[size_t(i)];
  for (size_t i = size_t(d) + 1; i < shape.size(); ++i) inner *= shape[i];
  double worst = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < index_len; ++j)
      for (int64_t k = 0; k < inner; ++k) {
        const double g = got[size_t((o * index_len + j) * inner + k)];
        const double r = hx[size_t((o * shape[size_t(d)] + hi[size_t(j)]) * inner + k)];
        if (!std::isfinite(g)) return INFINITY;
        worst = std::max(worst, std::abs(g - r));
      }
  return worst;
}

bool check(const tritium::Device& device) {
  struct Case {
    Tensor::Shape shape;
    int dim;
    int64_t index_len;
    DType dtype, index_dtype;
  };
  // The last dim (no permutes), dim 0 of 2-D and a middle dim of 3-D (dim_compress and the
  // permute back), short rows (BLOCK_M 4) and long ones (BLOCK_N 512, several column programs),
  // int64 and int32 indices, each float dtype.
  const std::vector<Case> cases = {{{37, 100}, 1, 45, DType::f32, DType::i64},
                                   {{300, 20}, 0, 70, DType::f16, DType::i64},
                                   {{3, 50, 7}, 1, 33, DType::bf16, DType::i32},
                                   {{5, 9000}, -1, 1100, DType::f32, DType::i32},
                                   {{2, 3}, 0, 5, DType::f64, DType::i64}};
  bool ok = true;
  std::string detail;
  double worst = 0;
  for (const Case& c : cases) {
    const double e = max_error(device, c.shape, c.dim, c.index_len, c.dtype, c.index_dtype,
                               uint32_t(c.shape[0] * 17 + c.index_len));
    if (!(e == 0)) ok = false;
    worst = std::max(worst, e);
    detail += fmt::format("{}{} {} dim {} {} {} indices: {:.1e}", detail.empty() ? "(" : ", ", tritium::dtype_name(c.dtype),
                          fmt::join(c.shape, "x"), c.dim, c.index_len, tritium::dtype_name(c.index_dtype), e);
  }
  detail += "; max |error|, exact: bound 0)";
  return suite::report("index_select", device, ok ? worst : INFINITY, 0.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// FlagGems' benchmark/test_index_select.py: GenericBenchmark2DOnly's 2-D shapes over 16
// (benchmark/core_shapes.yaml), dim 0, floor(0.1 x rows) random int64 indices, its float dtypes.
// GB/s counts the selected rows read and written and the indices (not the original's
// size(inp) * 2 / size(dim), the bytes of one slice).
std::vector<suite::Row> bench(const tritium::Device& device) {
  std::vector<std::array<int64_t, 2>> shapes;
  if (device.is_cuda())
    shapes = {{64, 64}, {256, 256}, {1024, 1024}, {4096, 4096}, {1024, 65536}};
  else
    shapes = {{64, 64}, {256, 256}, {1024, 1024}};
  std::vector<suite::Row> rows;
  for (DType dtype : {DType::f16, DType::f32, DType::bf16})
    for (auto [S0, S1] : shapes) {
      Tensor x = tritium::ops::randn({S0, S1}, tritium::ops::default_generator(), DType::f32, device).to(dtype);
      const int64_t index_len = int64_t(std::floor(double(S0) * 0.1));
      Tensor index = tritium::ops::randint(0, S0, {index_len}, tritium::ops::default_generator(), DType::i64, device);
      const double ms = tritium::do_bench([&] { index_select(x, 0, index); }, device).median_ms;
      const double bytes = 2.0 * double(index_len * S1 * tritium::dtype_bytes(dtype)) + 8.0 * double(index_len);
      rows.push_back({fmt::format("{}x{} dim 0 {}", S0, S1, tritium::dtype_name(dtype)), ms, bytes * 1e-9 / (ms * 1e-3),
                      "GB/s"});
    }
  return rows;
}

const bool registered = suite::add({.name = "index_select",
                                    .source = "flagos-ai/FlagGems src/flag_gems/ops/index_select.py",
                                    .category = "gather",
                                    .check = check,
                                    .bench = bench});

}  // namespace
