// flaggems_softmax: FlagGems' softmax forward (flagos-ai/FlagGems src/flag_gems/ops/softmax.py, read at
// commit 17c275fbdd3a: softmax_kernel_non_inner, softmax_kernel_inner, prev_multiple_of and the
// host functions softmax and softmax_out; the "softmax_non_inner" / "softmax_inner" heuristics of
// src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py at b684fbc78add; ext.program_id
// of src/flag_gems/utils/triton_lang_extension.py). Apache-2.0, as FlagGems.
//
// The input is viewed as [M, N, K] around the softmax dim. K == 1 (inner): one program a row;
// rows up to 32768 are one tile (max, exp, sum in f32), longer rows stream 4096-wide tiles twice -
// an online max and rescaled sum over the tiles (the last, masked tile apart from the unmasked
// ones), then the outputs, walking back from the last tile so it is still in cache. K > 1
// (non-inner): a program owns TILE_K columns of one m, with TILE_K grown until the grid fills
// about one wave of SMs and TILE_N = 8192 / TILE_K; the same one-tile and streaming forms run
// down the N axis with [TILE_N, TILE_K] accumulators.
//
// Deviations, each for a reason:
//  - The heuristics also choose num_warps; tritium::heuristics sets meta-parameters only, so the
//    host computes num_warps with the same functions from the same arguments and passes it as a
//    launch option (the result is the same launch).
//  - eviction_policy="evict_first" on the inner kernel's last loads is dropped: tl::load has no
//    eviction policies (a caching hint only).
//  - softmax_heur_tile_k's NUM_SMS off CUDA is the CPU thread pool's size.
//  - libentry (a launch cache) has no counterpart. The backward kernels (autotuned) are not ported.
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
#include "runtime/cuda_device.h"
#include "runtime/thread_pool.h"
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

int num_sms(const tritium::Device& device) {
  if (device.is_cuda()) return tritium::runtime::cuda::properties(device.index).multiprocessor_count;
  return int(tritium::runtime::ThreadPool::global().size());
}

// @triton.jit prev_multiple_of: the largest x < a that x % b == 0
tl::tensor prev_multiple_of(const tl::operand& a, const tl::operand& b) { return tl::cdiv(a, b) * b - b; }

auto softmax_kernel_non_inner = tritium::kernel(
    "softmax_kernel_non_inner",
    [](P output_ptr, P input_ptr, tl::i32 M, tl::i32 N, tl::i32 K, int TILE_N, int TILE_K, bool ONE_TILE_PER_CTA) {
      (void)M;
      auto pid_k = ext::program_id(1);
      auto pid_m = ext::program_id(0);

      auto k_offsets = pid_k * TILE_K + tl::arange(0, TILE_K);

      if (ONE_TILE_PER_CTA) {
        auto n_offsets = tl::arange(0, TILE_N);
        auto offset = pid_m * N * K + n_offsets(tl::_, tl::None) * K + k_offsets;
        auto mask = (n_offsets(tl::_, tl::None) < N) & (k_offsets < K);
        auto input_ptrs = input_ptr + offset;
        // Reduce in fp32: some triton backends (e.g. Cambricon MLU) reject
        // fp16/bf16 in tl.exp, and fp32 accumulation is more accurate anyway.
        auto inp = tl::load(input_ptrs, mask, -INFINITY).to(tl::float32);
        auto m = tl::max(inp, 0);
        auto e = tl::exp(inp - m(tl::None, tl::_));
        auto z = tl::sum(e, 0);
        auto out = (e / z).to(output_ptr.type().pointee);
        auto output_ptrs = output_ptr + offset;
        tl::store(output_ptrs, out, mask);
      } else {
        auto m = tl::full({TILE_N, TILE_K}, -INFINITY, tl::float32);
        auto z = tl::full({TILE_N, TILE_K}, 0.0, tl::float32);

        // specialization does not improve performance inn this example, as tested
        for (auto start_n : tl::range(0, N, TILE_N)) {
          auto n_offsets = start_n + tl::arange(0, TILE_N);
          auto offsets = pid_m * N * K + n_offsets(tl::_, tl::None) * K + k_offsets;
          auto mask = (n_offsets(tl::_, tl::None) < N) & (k_offsets < K);
          auto inp = tl::load(input_ptr + offsets, mask, -INFINITY);
          auto m_new = tl::maximum(m, inp);
          auto all_neg_inf = m_new == -INFINITY;
          z = tl::where(all_neg_inf, z, z * tl::exp(m - m_new) + tl::exp(inp - m_new));
          m = m_new;
        }

        auto m_reduced = tl::max(m, 0);  // (TILE_K,)
        z = tl::sum(z * tl::exp(m - m_reduced(tl::None, tl::_)), 0);  // (TILE_K, )
        m = m_reduced;

        // specialization does not improve performance inn this example, as tested
        auto previous_multiple = prev_multiple_of(N, TILE_N);
        for (auto start_n : tl::range(0, N, TILE_N)) {
          auto n_offsets = (previous_multiple - start_n) + tl::arange(0, TILE_N);
          auto offsets = pid_m * N * K + n_offsets(tl::_, tl::None) * K + k_offsets;
          auto mask = (n_offsets(tl::_, tl::None) < N) & (k_offsets(tl::None, tl::_) < K);
          auto inp = tl::load(input_ptr + offsets, mask, -INFINITY);
          auto o = tl::exp(inp - m(tl::None, tl::_)) / z(tl::None, tl::_);
          tl::store(output_ptr + offsets, o, mask);
        }
      }
    },
    {"output_ptr", "input_ptr", "M", "N", "K", "TILE_N", "TILE_K", "ONE_TILE_PER_CTA"});

auto softmax_kernel_inner = tritium::kernel(
    "softmax_kernel_inner",
    [](P output_ptr, P input_ptr, tl::i32 M, tl::i32 N, int TILE_N, bool ONE_TILE_PER_CTA) {
      (void)M;
      auto pid_m = ext::program_id(0);
      if (ONE_TILE_PER_CTA) {
        auto n_offsets = tl::arange(0, TILE_N);
        auto offset = pid_m * N + n_offsets;
        auto input_ptrs = input_ptr + offset;
        auto mask = n_offsets < N;
        // Reduce in fp32: some triton backends (e.g. Cambricon MLU) reject
        // fp16/bf16 in tl.exp, and fp32 accumulation is more accurate anyway.
        auto inp = tl::load(input_ptrs, mask, -INFINITY).to(tl::float32);
        auto m = tl::max(inp, 0);
        auto e = tl::exp(inp - m);
        auto z = tl::sum(e, 0);
        auto out = (e / z).to(output_ptr.type().pointee);
        auto output_ptrs = output_ptr + offset;
        tl::store(output_ptrs, out, mask);
      } else {
        auto m = tl::full({TILE_N}, -INFINITY, tl::float32);
        auto z = tl::full({TILE_N}, 0.0, tl::float32);
        input_ptr += pid_m * N;
        output_ptr += pid_m * N;

        auto previous_multiple = prev_multiple_of(N, TILE_N);
        for (auto start_n : tl::range(0, previous_multiple, TILE_N)) {
          auto n_offsets = start_n + tl::arange(0, TILE_N);
          auto inp = tl::load(input_ptr + n_offsets);
          auto m_new = tl::maximum(m, inp);
          // it is possible that there are -inf's in the input
          auto all_neg_inf = m_new == -INFINITY;
          z = tl::where(all_neg_inf, z, z * tl::exp(m - m_new) + tl::exp(inp - m_new));
          m = m_new;
        }
        // specialize the last iteration
        for (auto start_n : tl::range(previous_multiple, N, TILE_N)) {
          auto n_offsets = start_n + tl::arange(0, TILE_N);
          auto mask = n_offsets < N;
          auto inp = tl::load(input_ptr + n_offsets, mask, -INFINITY);
          auto m_new = tl::maximum(m, inp);
          auto all_neg_inf = m_new == -INFINITY;
          z = tl::where(all_neg_inf, z, z * tl::exp(m - m_new) + tl::exp(inp - m_new));
          m = m_new;
        }

        auto m_reduced = tl::max(m, 0);
        z = tl::sum(z * tl::exp(m - m_reduced), 0);
        m = m_reduced;

        previous_multiple = prev_multiple_of(N, TILE_N);
        // specialize the first iteration
        for (auto start_n : tl::range(0, TILE_N, TILE_N)) {
          auto n_offsets = (previous_multiple - start_n) + tl::arange(0, TILE_N);
          auto mask = n_offsets < N;
          auto inp = tl::load(input_ptr + n_offsets, mask, -INFINITY);  // eviction_policy="evict_first"
          auto o = tl::exp(inp - m) / z;
          tl::store(output_ptr + n_offsets, o, mask);
        }
        for (auto start_n : tl::range(TILE_N, N, TILE_N)) {
          auto n_offsets = (previous_multiple - start_n) + tl::arange(0, TILE_N);
          auto inp = tl::load(input_ptr + n_offsets);  // eviction_policy="evict_first"
          auto o = tl::exp(inp - m) / z;
          tl::store(output_ptr + n_offsets, o);
        }
      }
    },
    {"output_ptr", "input_ptr", "M", "N", "TILE_N", "ONE_TILE_PER_CTA"});

// ---- heuristics (heuristics_config_utils.py) --------------------------------------------------

int64_t softmax_heur_tile_k(int64_t M, int64_t K, int NUM_SMS) {
  const int64_t MAX_TILE_K = 8192;
  int64_t tile_k = 1;
  const int64_t upper_bound = std::min(K, MAX_TILE_K);
  while (tile_k <= upper_bound) {
    const int64_t num_blocks = M * tritium::cdiv(K, tile_k);
    const double num_waves = double(num_blocks) / NUM_SMS;
    if (num_waves > 1 && tile_k * 2 <= upper_bound)
      tile_k *= 2;
    else
      break;
  }
  return tile_k;
}
int64_t softmax_heur_tile_n_non_inner(int64_t TILE_K) { return tritium::cdiv(8192, TILE_K); }
bool softmax_heur_one_tile_per_cta(int64_t TILE_N, int64_t N) { return TILE_N >= N; }
int softmax_heur_num_warps_non_inner(int64_t TILE_N, int64_t TILE_K) {
  const int64_t tile_size = TILE_N * TILE_K;
  return tile_size < 2048 ? 4 : tile_size < 4096 ? 8 : 16;
}
int64_t softmax_heur_tile_n_inner(int64_t N) { return N <= 32 * 1024 ? next_power_of_2(N) : 4096; }
int softmax_heur_num_warps_inner(int64_t TILE_N) { return TILE_N < 2048 ? 4 : TILE_N < 4096 ? 8 : 16; }

// @triton.heuristics(runtime.get_heuristic_config("softmax_non_inner" / "softmax_inner")), the
// meta-parameters; one per kernel, made once.
tritium::Heuristics& non_inner() {
  static tritium::Heuristics h = tritium::heuristics(
      softmax_kernel_non_inner,
      {{"TILE_K",
        [](const tritium::ArgView& a) {
          return softmax_heur_tile_k(a.integer("M"), a.integer("K"), num_sms(a.tensor("input_ptr").device()));
        }},
       {"TILE_N", [](const tritium::ArgView& a) { return softmax_heur_tile_n_non_inner(a.integer("TILE_K")); }},
       {"ONE_TILE_PER_CTA",
        [](const tritium::ArgView& a) { return softmax_heur_one_tile_per_cta(a.integer("TILE_N"), a.integer("N")); }}});
  return h;
}
tritium::Heuristics& inner() {
  static tritium::Heuristics h = tritium::heuristics(
      softmax_kernel_inner,
      {{"TILE_N", [](const tritium::ArgView& a) { return softmax_heur_tile_n_inner(a.integer("N")); }},
       {"ONE_TILE_PER_CTA",
        [](const tritium::ArgView& a) { return softmax_heur_one_tile_per_cta(a.integer("TILE_N"), a.integer("N")); }}});
  return h;
}

bool g_poison = false;  // while checking: the output starts as NaN

// softmax(self, dim, half_to_float)
Tensor softmax(const Tensor& self_in, int dim, bool half_to_float = false) {
  if (dim < -self_in.dim() || dim >= self_in.dim()) tritium::fail("softmax: Invalid dim {} for {}", dim, self_in.str());
  if (!tritium::is_float(self_in.dtype()) || tritium::is_fp8(self_in.dtype()))
    tritium::fail("softmax: expects a floating-point tensor, got {}", self_in.str());
  const DType dtype = half_to_float ? DType::f32 : self_in.dtype();
  Tensor out = g_poison ? tritium::ops::full(self_in.shape(), NAN, dtype, self_in.device())
                        : Tensor::empty(self_in.shape(), dtype, self_in.device());
  if (self_in.numel() == 0) return out;
  dim = (dim + self_in.dim()) % self_in.dim();
  int64_t M = 1;
  const int64_t N = self_in.size(dim);
  for (int i = 0; i < dim; ++i) M *= self_in.size(i);
  Tensor self = self_in.contiguous();
  const int64_t K = self.numel() / M / N;
  auto options = [](int warps) { return tritium::Options{.num_warps = warps, .num_stages = 3, .device = std::nullopt}; };
  if (K > 1) {
    const int64_t TILE_K = softmax_heur_tile_k(M, K, num_sms(self.device()));
    const int warps = softmax_heur_num_warps_non_inner(softmax_heur_tile_n_non_inner(TILE_K), TILE_K);
    auto grid = [=](const tritium::Meta& meta) { return tritium::Grid(M, tritium::cdiv(K, meta["TILE_K"]), 1); };
    non_inner()[grid](out, self, M, N, K, options(warps));
  } else {
    const int warps = softmax_heur_num_warps_inner(softmax_heur_tile_n_inner(N));
    inner()[tritium::Grid(M, 1, 1)](out, self, M, N, options(warps));
  }
  return out;
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

double relative_error(const tritium::Device& device, const Tensor::Shape& shape, int dim, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 2);
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<double> hx(static_cast<size_t>(n));
  for (auto& v : hx) v = normal(rng);
  Tensor x = Tensor::from_vector(hx, shape, device).to(dtype);
  hx = host(x);
  g_poison = true;
  Tensor y = softmax(x, dim);
  g_poison = false;
  const std::vector<double> got = host(y);
  dim = (dim + int(shape.size())) % int(shape.size());
  int64_t M = 1, K = 1;
  for (int i = 0; i < dim; ++i) M *= shape[size_t(i)];
  for (size_t i = size_t(dim) + 1; i < shape.size(); ++i) K *= shape[i];
  const int64_t N = shape[size_t(dim)];
  std::vector<double> ref(hx.size());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      auto at = [&](int64_t j) { return size_t((m * N + j) * K + k); };
      double mx = -INFINITY, z = 0;
      for (int64_t j = 0; j < N; ++j) mx = std::max(mx, hx[at(j)]);
      for (int64_t j = 0; j < N; ++j) z += std::exp(hx[at(j)] - mx);
      for (int64_t j = 0; j < N; ++j) ref[at(j)] = std::exp(hx[at(j)] - mx) / z;
    }
  return suite::rel_error(std::vector<float>(got.begin(), got.end()), ref);
}

bool check(const tritium::Device& device) {
  struct Case {
    Tensor::Shape shape;
    int dim;
    DType dtype;
  };
  // Inner: one tile (rows off the power of two) and rows past 32768 (4096-wide tiles, the last
  // one masked). Non-inner: one tile down N, and N past TILE_N (the streaming loops; TILE_K is 1
  // or 2 there on a GPU or the CPU), columns K off TILE_K.
  const std::vector<Case> cases = {{{5, 1000}, 1, DType::f32},     {{3, 777}, -1, DType::f16},
                                   {{2, 40000}, 1, DType::bf16},    {{1, 33000}, 1, DType::f32},
                                   {{3, 50, 20}, 1, DType::f16},    {{1, 9000, 3}, 1, DType::f32},
                                   {{2, 9000, 3}, 1, DType::bf16},  {{7, 5, 33}, 0, DType::f32}};
  bool ok = true;
  std::string detail;
  double worst = 0;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c.shape, c.dim, c.dtype, uint32_t(c.shape[0] * 13 + c.shape.back()));
    const double bound = c.dtype == DType::bf16 ? 1e-2 : c.dtype == DType::f16 ? 1e-3 : 1e-5;
    if (!(rel <= bound)) ok = false;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {} dim {} {:.1e}", detail.empty() ? "(" : ", ", tritium::dtype_name(c.dtype),
                          fmt::join(c.shape, "x"), c.dim, rel);
  }
  detail += "; bounds f32 1e-5, f16 1e-3, bf16 1e-2; reported: worst error / bound)";
  return suite::report("flaggems_softmax", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// FlagGems' benchmark/test_softmax.py: UnaryReductionBenchmark's shapes (benchmark/core_shapes.yaml),
// dim 1 (dim 0 for the 1-D shape), its float dtypes; GB/s counts the input read and the output
// written, as its get_gbps.
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
      const int dim = shape.size() > 1 ? 1 : 0;
      const double ms = tritium::do_bench([&] { softmax(x, dim); }, device).median_ms;
      const double bytes = 2.0 * double(x.nbytes());
      rows.push_back({fmt::format("{} {}", fmt::join(shape, "x"), tritium::dtype_name(dtype)), ms,
                      bytes * 1e-9 / (ms * 1e-3), "GB/s"});
    }
  return rows;
}

const bool registered = suite::add({.name = "flaggems_softmax",
                                    .source = "flagos-ai/FlagGems src/flag_gems/ops/softmax.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
