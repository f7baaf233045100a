// embedding: FlagGems' embedding forward and backward (flagos-ai/FlagGems
// src/flag_gems/ops/embedding.py, read at commit b684fbc78add: embedding_kernel,
// indice_freq_kernel, embedding_backward_kernel, embedding_grad_scale_kernel and the host
// functions embedding and embedding_backward; ext.program_id / num_programs of
// src/flag_gems/utils/triton_lang_extension.py). Apache-2.0, as FlagGems.
//
// Forward: one program an index gathers its weight row (a block of next_power_of_2(N) columns).
// Backward: one program an index adds its gradient row into the weight gradient with
// tl.atomic_add (rows repeat, so programs collide; bf16 gradients accumulate in an f32 buffer,
// converted at the end), skipping padding_idx through a run-time branch; with
// scale_grad_by_freq, a first kernel counts each index with integer atomics and a last one walks
// the weight rows grid-stride, dividing a row by its count when it is above 1.
//
// Deviations: do_not_specialize=["padding_idx"] / ["n_rows"]: Tritium specialises an integer
// equal to 1 (as Triton without the flag), which changes nothing here. libentry (a launch
// cache) has no counterpart. HAS_PADDING_IDX follows `padding_idx is not None`: padding_idx is
// std::optional here, -1 by default as the original's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

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
tl::tensor num_programs(int axis) { return tl::num_programs(axis).to(tl::int64); }
}  // namespace ext

int64_t next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

auto embedding_kernel = tritium::kernel(
    "embedding_kernel",
    [](P out_ptr, P in_ptr, P weight_ptr, int N, int BLOCK_SIZE) {
      auto pid = ext::program_id(0);
      out_ptr += pid * N;
      in_ptr += pid;

      auto mask = tl::arange(0, BLOCK_SIZE) < N;
      auto cols = tl::arange(0, BLOCK_SIZE);

      auto row_idx = tl::load(in_ptr);
      weight_ptr += row_idx * N;
      auto embedding_weight = tl::load(weight_ptr + cols, mask, 0.0);
      tl::store(out_ptr + cols, embedding_weight, mask);
    },
    {"out_ptr", "in_ptr", "weight_ptr", "N", "BLOCK_SIZE"});

auto indice_freq_kernel = tritium::kernel(
    "indice_freq_kernel",
    [](P indices_freq, P indices, int elem_cnt, int INDICE_BLOCK_SIZE) {
      auto pid = ext::program_id(0);
      auto block_start = pid * INDICE_BLOCK_SIZE;

      auto offsets = block_start + tl::arange(0, INDICE_BLOCK_SIZE);
      auto mask = offsets < elem_cnt;

      auto index_element = tl::load(indices + offsets, mask);
      tl::atomic_add(indices_freq + index_element, 1, mask);
    },
    {"indices_freq", "indices", "elem_cnt", "INDICE_BLOCK_SIZE"});

auto embedding_backward_kernel = tritium::kernel(
    "embedding_backward_kernel",
    [](P grad_in, P grad_out, P indices, tl::i64 padding_idx, bool HAS_PADDING_IDX, int N, int BLOCK_SIZE) {
      auto pid = ext::program_id(0);
      grad_out += pid * N;
      indices += pid;

      auto mask = tl::arange(0, BLOCK_SIZE) < N;
      auto cols = tl::arange(0, BLOCK_SIZE);

      auto row_idx = tl::load(indices).to(tl::int32);
      auto accumulate = [&] {
        grad_in += row_idx * N;
        auto embedding_grad = tl::load(grad_out + cols, mask, 0.0);
        if (embedding_grad.dtype() == DType::bf16) embedding_grad = embedding_grad.to(tl::float32);
        tl::atomic_add(grad_in + cols, embedding_grad, mask);
      };
      if (!HAS_PADDING_IDX)
        accumulate();
      else
        tl::if_(row_idx != padding_idx, accumulate);
    },
    {"grad_in", "grad_out", "indices", "padding_idx", "HAS_PADDING_IDX", "N", "BLOCK_SIZE"});

auto embedding_grad_scale_kernel = tritium::kernel(
    "embedding_grad_scale_kernel",
    [](P grad_out, P indice_freq, tl::i32 n_rows, tl::i32 N, int BLOCK_SIZE) {
      auto row_start = ext::program_id(0);
      auto row_step = ext::num_programs(0);

      for (auto row_idx : tl::range(row_start, n_rows, row_step)) {
        auto embedding_scale = tl::full({}, 1.0, tl::float32);  // Python's 1.0, an f32 in Triton
        auto indice_freq_val = tl::load(indice_freq + row_idx);
        tl::if_(indice_freq_val > 1, [&] { embedding_scale = 1.0 / indice_freq_val; });

        auto cols = tl::arange(0, BLOCK_SIZE);
        auto mask = tl::arange(0, BLOCK_SIZE) < N;
        auto embedding_grad = tl::load(grad_out + row_idx * N + cols, mask);
        auto scaled_embedding_grad = embedding_grad * embedding_scale;
        tl::store(grad_out + row_idx * N + cols, scaled_embedding_grad, mask);
      }
    },
    {"grad_out", "indice_freq", "n_rows", "N", "BLOCK_SIZE"});

bool g_poison = false;  // while checking: the forward's output starts as NaN

Tensor embedding(const Tensor& weight_in, const Tensor& indices_in) {
  if (weight_in.dim() != 2) tritium::fail("embedding: weight must be 2-D, got {}", weight_in.str());
  if (!tritium::is_int(indices_in.dtype()) || indices_in.dtype() == DType::i1)
    tritium::fail("embedding: indices must hold integers, got {}", indices_in.str());
  const int64_t M = indices_in.numel();
  const int64_t N = weight_in.size(-1);
  const int64_t BLOCK_SIZE = next_power_of_2(N);
  // TODO: remove contiguous enforcement
  Tensor indices = indices_in.contiguous();
  Tensor weight = weight_in.contiguous();
  Tensor::Shape shape = indices.shape();
  shape.push_back(N);
  Tensor output = g_poison ? tritium::ops::full(shape, NAN, weight.dtype(), weight.device())
                           : Tensor::empty(shape, weight.dtype(), weight.device());
  if (M == 0) return output;
  embedding_kernel[{M}](output, indices, weight, int(N), int(BLOCK_SIZE));
  return output;
}

Tensor embedding_backward(const Tensor& grad_outputs_in, const Tensor& indices_in, int64_t num_weights,
                          std::optional<int64_t> padding_idx = -1, bool scale_grad_by_freq = false) {
  const int64_t M = indices_in.numel();
  const int64_t N = grad_outputs_in.size(-1);
  Tensor indices = indices_in.contiguous();
  Tensor grad_outputs = grad_outputs_in.contiguous();
  const bool bf16 = grad_outputs.dtype() == DType::bf16;
  Tensor grad_inputs = tritium::ops::zeros({num_weights, N}, bf16 ? DType::f32 : grad_outputs.dtype(), grad_outputs.device());

  Tensor indice_freq;
  if (scale_grad_by_freq) {
    indice_freq = tritium::ops::zeros({num_weights}, DType::i32, grad_outputs.device());
    const int INDICE_BLOCK_SIZE = 256;
    indice_freq_kernel[{tritium::cdiv(M, INDICE_BLOCK_SIZE)}](indice_freq, indices, int(M), INDICE_BLOCK_SIZE);
  }
  const int64_t BLOCK_SIZE = next_power_of_2(N);
  const bool HAS_PADDING_IDX = padding_idx.has_value();
  embedding_backward_kernel[{M}](grad_inputs, grad_outputs, indices, padding_idx.value_or(0), HAS_PADDING_IDX, int(N),
                                 int(BLOCK_SIZE));
  if (scale_grad_by_freq)
    embedding_grad_scale_kernel[{M}](grad_inputs, indice_freq, num_weights, N, int(BLOCK_SIZE));
  return bf16 ? grad_inputs.to(DType::bf16) : grad_inputs;
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

// Forward max |error| (a copy: exact) and the backward's relative error (atomics in any order).
std::pair<double, double> errors(const tritium::Device& device, int64_t num_weights, int64_t N, Tensor::Shape ishape,
                                 DType dtype, DType index_dtype, std::optional<int64_t> padding_idx, bool scale,
                                 uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_int_distribution<int64_t> pick(0, num_weights - 1);
  int64_t M = 1;
  for (auto s : ishape) M *= s;
  std::vector<double> hw(static_cast<size_t>(num_weights * N)), hg(static_cast<size_t>(M * N));
  std::vector<int64_t> hi(static_cast<size_t>(M));
  for (auto& v : hw) v = normal(rng);
  for (auto& v : hg) v = normal(rng);
  for (auto& v : hi) v = pick(rng);
  Tensor weight = Tensor::from_vector(hw, {num_weights, N}, device).to(dtype);
  Tensor indices = Tensor::from_vector(hi, ishape, device).to(index_dtype);
  Tensor::Shape gshape = ishape;
  gshape.push_back(N);
  Tensor grad = Tensor::from_vector(hg, gshape, device).to(dtype);
  hw = host(weight), hg = host(grad);

  g_poison = true;
  Tensor out = embedding(weight, indices);
  g_poison = false;
  double fwd = 0;
  const auto got = host(out);
  if (out.shape() != gshape) fwd = INFINITY;
  for (int64_t i = 0; i < M && std::isfinite(fwd); ++i)
    for (int64_t j = 0; j < N; ++j) {
      const double g = got[size_t(i * N + j)];
      fwd = std::isfinite(g) ? std::max(fwd, std::abs(g - hw[size_t(hi[size_t(i)] * N + j)])) : INFINITY;
    }

  Tensor dw = embedding_backward(grad, indices, num_weights, padding_idx, scale);
  std::vector<double> ref(static_cast<size_t>(num_weights * N), 0.0);
  std::vector<int64_t> freq(static_cast<size_t>(num_weights), 0);
  for (int64_t i = 0; i < M; ++i) {
    ++freq[size_t(hi[size_t(i)])];
    if (padding_idx && hi[size_t(i)] == *padding_idx) continue;
    for (int64_t j = 0; j < N; ++j) ref[size_t(hi[size_t(i)] * N + j)] += hg[size_t(i * N + j)];
  }
  if (scale)
    for (int64_t r = 0; r < num_weights; ++r)
      if (freq[size_t(r)] > 1)
        for (int64_t j = 0; j < N; ++j) ref[size_t(r * N + j)] /= double(freq[size_t(r)]);
  const auto gd = host(dw);
  const double bwd = dw.dtype() == dtype ? suite::rel_error(std::vector<float>(gd.begin(), gd.end()), ref) : INFINITY;
  return {fwd, bwd};
}

bool check(const tritium::Device& device) {
  struct Case {
    int64_t num_weights, N;
    Tensor::Shape ishape;
    DType dtype, index_dtype;
    std::optional<int64_t> padding_idx;
    bool scale;
  };
  // Rows off the power-of-two block, 2-D indices, repeated indices (atomics collide), a padding
  // index that occurs, no padding index, scale_grad_by_freq (integer atomics, the grid-stride
  // scaling), bf16 through the f32 buffer, int32 indices.
  const std::vector<Case> cases = {{50, 100, {120}, DType::f32, DType::i64, -1, false},
                                   {30, 77, {4, 25}, DType::f16, DType::i64, 3, true},
                                   {20, 300, {64}, DType::bf16, DType::i32, std::nullopt, true},
                                   {64, 33, {7, 9}, DType::f32, DType::i32, 5, false}};
  bool ok = true;
  std::string detail;
  double worst = 0;
  for (const Case& c : cases) {
    auto [fwd, bwd] = errors(device, c.num_weights, c.N, c.ishape, c.dtype, c.index_dtype, c.padding_idx, c.scale,
                             uint32_t(c.num_weights * 7 + c.N));
    // Forward exact; backward f32 1e-5, f16 1e-3, bf16 1e-2 (one rounding of f32 sums).
    const double bound = c.dtype == DType::bf16 ? 1e-2 : c.dtype == DType::f16 ? 1e-3 : 1e-5;
    if (!(fwd == 0) || !(bwd <= bound)) ok = false;
    worst = std::max(worst, bwd / bound);
    detail += fmt::format("{}{} {}x{} {} indices{}{}: fwd {:.1e} bwd {:.1e}", detail.empty() ? "(" : ", ",
                          tritium::dtype_name(c.dtype), c.num_weights, c.N, tritium::dtype_name(c.index_dtype),
                          c.padding_idx ? fmt::format(" padding {}", *c.padding_idx) : "", c.scale ? " scaled" : "", fwd, bwd);
  }
  detail += "; forward exact, backward bounds f32 1e-5, f16 1e-3, bf16 1e-2; reported: worst backward error / bound)";
  return suite::report("embedding", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// FlagGems' benchmark/test_embedding.py: EmbeddingBenchmark's shapes (benchmark/core_shapes.yaml,
// [num_embeddings, embedding_dim]), num_embeddings random int64 indices, f32 and f16 (Triton has
// no bf16 atomic add, its note says), forward and backward (padding_idx -1). GB/s: the forward
// reads and writes M rows and the indices; the backward reads M gradient rows and adds them.
std::vector<suite::Row> bench(const tritium::Device& device) {
  std::vector<std::array<int64_t, 2>> shapes = {{4, 4}, {16, 16}, {128, 128}, {256, 256}, {1024, 1024}};
  std::vector<suite::Row> rows;
  for (DType dtype : {DType::f32, DType::f16})
    for (auto [ne, dim] : shapes) {
      Tensor indices = tritium::ops::randint(0, ne, {ne}, tritium::ops::default_generator(), DType::i64, device);
      Tensor weight = tritium::ops::randn({ne, dim}, tritium::ops::default_generator(), DType::f32, device).to(dtype);
      Tensor grad = tritium::ops::randn({ne, dim}, tritium::ops::default_generator(), DType::f32, device).to(dtype);
      const double es = double(tritium::dtype_bytes(dtype));
      const double fwd = tritium::do_bench([&] { embedding(weight, indices); }, device).median_ms;
      const double bwd = tritium::do_bench([&] { embedding_backward(grad, indices, ne); }, device).median_ms;
      const double bytes = 2.0 * double(ne * dim) * es + 8.0 * double(ne);
      const std::string shape = fmt::format("{}x{} {}", ne, dim, tritium::dtype_name(dtype));
      rows.push_back({"forward " + shape, fwd, bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
      rows.push_back({"backward " + shape, bwd, bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
    }
  return rows;
}

const bool registered = suite::add({.name = "embedding",
                                    .source = "flagos-ai/FlagGems src/flag_gems/ops/embedding.py",
                                    .category = "atomic",
                                    .check = check,
                                    .bench = bench});

}  // namespace
