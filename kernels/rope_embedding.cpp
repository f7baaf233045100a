// rope_embedding: Unsloth's rotary position embedding (unslothai/unsloth
// unsloth/kernels/rope_embedding.py, read at commit 3ce187da021b: _rope_embedding with
// Fast_RoPE_Embedding's forward and backward, and _rope_embedding_QK with Fast_RoPE_Embedding_QK's;
// calculate_settings of unsloth/kernels/utils.py). Apache-2.0, as Unsloth.
//
// Q (and K) are rotated in place: the first and second halves of each head, x0 and x1, become
// x0 cos - x1 sin and x1 cos + x0 sin, with cos and sin the first half of the table row of the
// token's position (the backward negates sin). _rope_embedding runs one program a token and a
// group of ROPE_GROUP_SIZE = 4 heads, looping over the group's heads at run time (the last group
// may be short), in sin's dtype (f32 tables give Gemma's f32 RoPE); _rope_embedding_QK runs one
// program a token and a Q head, rotates the K head of the same index when there is one (grouped
// KV heads), and may read each token's position from an int32 index array (TRL's packed
// sequences) instead of row % seqlen.
//
// Deviations: eviction_policy="evict_first" on the index load is dropped (a caching hint only);
// the heuristics {"BACKWARD_PASS": bool(...), "HAS_ROPE_INDICES": bool(...)} are the identity on a
// bool, so the launches pass the values. Unsloth's torch_gpu_device has no counterpart.
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
#include "unsloth_utils.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

using unsloth::calculate_settings;  // kernels/unsloth_utils.h
using unsloth::MAX_FUSED_SIZE;
using unsloth::next_power_of_2;

auto _rope_embedding_QK = tritium::kernel(
    "_rope_embedding_QK",
    [](P Q, tl::i32 Q_batch_stride, tl::i32 Q_head_stride, tl::i32 Q_seq_stride,  //
       P K, tl::i32 K_batch_stride, tl::i32 K_head_stride, tl::i32 K_seq_stride,  //
       P cos, tl::i32 cos_row_stride, P sin, tl::i32 sin_row_stride,  //
       P rope_embedding_indices, tl::i32 seqlen,  //
       int head_dim, int n_heads_K, bool BACKWARD_PASS, bool HAS_ROPE_INDICES, int BLOCK_SIZE) {
      auto row_position = tl::program_id(0);
      auto head_position = tl::program_id(1);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      const int half_head_dim = head_dim / 2;
      auto mask = col_offsets < half_head_dim;

      tl::tensor rot_position;
      if (HAS_ROPE_INDICES)
        rot_position = tl::load(rope_embedding_indices + row_position).to(tl::int32);  // eviction_policy="evict_first"
      else
        rot_position = row_position % seqlen;

      auto cos_ptr = cos + rot_position * cos_row_stride;
      auto sin_ptr = sin + rot_position * sin_row_stride;
      auto sin1 = tl::load(sin_ptr + col_offsets, mask, 0);
      auto cos1 = tl::load(cos_ptr + col_offsets, mask, 0);
      if (BACKWARD_PASS) sin1 = -sin1;

      auto batch_id = row_position / seqlen;
      auto seq_index = row_position - batch_id * seqlen;

      auto q_ptr = Q + batch_id * Q_batch_stride + head_position * Q_head_stride + seq_index * Q_seq_stride;
      auto q0 = tl::load(q_ptr + col_offsets, mask, 0);
      auto q1 = tl::load(q_ptr + half_head_dim + col_offsets, mask, 0);
      tl::store(q_ptr + col_offsets, q0 * cos1 - q1 * sin1, mask);
      tl::store(q_ptr + half_head_dim + col_offsets, q1 * cos1 + q0 * sin1, mask);

      tl::if_(head_position < n_heads_K, [&] {
        auto k_ptr = K + batch_id * K_batch_stride + head_position * K_head_stride + seq_index * K_seq_stride;
        auto k0 = tl::load(k_ptr + col_offsets, mask, 0);
        auto k1 = tl::load(k_ptr + half_head_dim + col_offsets, mask, 0);
        tl::store(k_ptr + col_offsets, k0 * cos1 - k1 * sin1, mask);
        tl::store(k_ptr + half_head_dim + col_offsets, k1 * cos1 + k0 * sin1, mask);
      });
    },
    {"Q", "Q_batch_stride", "Q_head_stride", "Q_seq_stride", "K", "K_batch_stride", "K_head_stride", "K_seq_stride", "cos",
     "cos_row_stride", "sin", "sin_row_stride", "rope_embedding_indices", "seqlen", "head_dim", "n_heads_K",
     "BACKWARD_PASS", "HAS_ROPE_INDICES", "BLOCK_SIZE"});

constexpr int ROPE_GROUP_SIZE = 4;

auto _rope_embedding = tritium::kernel(
    "_rope_embedding",
    [](P Q, int Q_row_stride, P cos, int cos_row_stride, P sin, int sin_row_stride, tl::i32 seqlen, int head_dim,
       int n_heads, bool BACKWARD_PASS, int BLOCK_SIZE) {
      // Calculates the RoPE Embedding quickly: RoPE is Q * cos + rotate_half(Q) * sin
      const int ROPE_GROUP_SIZE = 4;
      auto row_position = tl::program_id(0);
      auto group_head_position = tl::program_id(1);
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      const int half_head_dim = head_dim / 2;
      auto mask = col_offsets < half_head_dim;

      auto sin1 = tl::load(sin + (row_position % seqlen) * sin_row_stride + half_head_dim * 0 + col_offsets, mask, 0);
      auto cos1 = tl::load(cos + (row_position % seqlen) * cos_row_stride + half_head_dim * 0 + col_offsets, mask, 0);

      if (BACKWARD_PASS) sin1 = -sin1;  // See Unsloth's blog post for more info.

      // [TODO] Autotune ROPE_GROUP_SIZE to be 1, 2, 4, 8
      auto head_start = group_head_position * ROPE_GROUP_SIZE;
      auto head_end = tl::minimum(head_start + ROPE_GROUP_SIZE, n_heads);  // Python's min

      // 10% Faster kernel from [HuyNguyen-hust](https://github.com/unslothai/unsloth/pull/238)
      for (auto k : tl::range(head_start, head_end)) {
        auto offs_q1 = row_position * Q_row_stride + k * head_dim + col_offsets;
        auto offs_q2 = row_position * Q_row_stride + k * head_dim + col_offsets + half_head_dim;

        // For Gemma - sometimes RoPE must be done in float32 and not bfloat16
        auto Q1 = tl::load(Q + offs_q1, mask, 0).to(sin1.dtype());
        auto Q2 = tl::load(Q + offs_q2, mask, 0).to(sin1.dtype());

        tl::store(Q + offs_q1, Q1 * cos1 - Q2 * sin1, mask);
        tl::store(Q + offs_q2, Q2 * cos1 + Q1 * sin1, mask);
      }
    },
    {"Q", "Q_row_stride", "cos", "cos_row_stride", "sin", "sin_row_stride", "seqlen", "head_dim", "n_heads",
     "BACKWARD_PASS", "BLOCK_SIZE"});

// Squeezes cos / sin to [positions, dim] as cos.squeeze() does for HF's [1, 1, positions, dim].
Tensor squeezed(const Tensor& t) { return t.squeeze(); }

// Fast_RoPE_Embedding.forward (backward = false) / .backward (true): Q [batch, seq_len, n_heads,
// head_dim], contiguous, rotated in place; returns it.
Tensor fast_rope(const Tensor& Q, const Tensor& cos_in, const Tensor& sin_in, bool backward) {
  if (Q.dim() != 4 || !Q.is_contiguous()) tritium::fail("fast_rope: Q must be a contiguous [batch, seq_len, n_heads, head_dim] tensor, got {}", Q.str());
  Tensor cos = squeezed(cos_in), sin = squeezed(sin_in);
  const int64_t batch = Q.size(0), seq_len = Q.size(1), n_heads = Q.size(2), head_dim = Q.size(3);
  if (cos.dim() != 2 || sin.dim() != 2 || seq_len > cos.size(0))
    tritium::fail("fast_rope: cos {} and sin {} must be [positions >= seq_len, dim] tables", cos.str(), sin.str());
  Tensor Q2 = Q.view({batch * seq_len, n_heads * head_dim});
  const int64_t n_rows = Q2.size(0);
  // [TODO] Changing blocksize to head_dim//2 seems to have some concurrency / un-deterministic issues.
  auto [BLOCK_SIZE, num_warps] = calculate_settings(head_dim / 2);
  const int64_t n_groups = n_heads / ROPE_GROUP_SIZE + (n_heads % ROPE_GROUP_SIZE != 0);
  _rope_embedding[tritium::Grid(n_rows, n_groups)](
      Q2, int(Q2.stride(0)), cos, int(cos.stride(0)), sin, int(sin.stride(0)), seq_len, int(head_dim), int(n_heads),
      backward, BLOCK_SIZE, tritium::Options{.num_warps = num_warps, .num_stages = 3, .device = std::nullopt});
  return Q;
}

// Fast_RoPE_Embedding_QK.forward / .backward: Q [batch, n_heads_Q, seq_len, head_dim] and K
// [batch, n_heads_K, seq_len, head_dim] rotated in place (copies when not contiguous, as there).
std::pair<Tensor, Tensor> fast_rope_qk(const Tensor& Q, const Tensor& K, const Tensor& cos_in, const Tensor& sin_in,
                                       const std::optional<Tensor>& rope_indices, bool backward) {
  Tensor cos = squeezed(cos_in), sin = squeezed(sin_in);
  const int64_t batch = Q.size(0), n_heads_Q = Q.size(1), seq_len = Q.size(2), head_dim = Q.size(3);
  const int64_t n_heads_K = K.size(1);
  // Inplace rotary embedding is generally fine
  Tensor Q_out = Q.is_contiguous() ? Q : Q.clone();
  Tensor K_out = K.is_contiguous() ? K : K.clone();
  const bool has_indices = rope_indices.has_value();
  // TRL's rotary indices are always in int32, so casting is just for safety
  Tensor rope_ptr = has_indices ? rope_indices->reshape({-1}).to(DType::i32).to(Q.device())
                                : Tensor::empty({1}, DType::i32, cos.device());
  auto [BLOCK_SIZE, num_warps] = calculate_settings(head_dim);
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  _rope_embedding_QK[tritium::Grid(batch * seq_len, n_heads_Q)](
      Q_out, i32(Q_out.stride(0)), i32(Q_out.stride(1)), i32(Q_out.stride(2)),  //
      K_out, i32(K_out.stride(0)), i32(K_out.stride(1)), i32(K_out.stride(2)),  //
      cos, i32(cos.stride(0)), sin, i32(sin.stride(0)), rope_ptr, seq_len,  //
      int(head_dim), int(n_heads_K), backward, has_indices, BLOCK_SIZE,
      tritium::Options{.num_warps = num_warps, .num_stages = 3, .device = std::nullopt});
  return {Q_out, K_out};
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

Tensor random(Tensor::Shape shape, DType dtype, tritium::Device device, std::mt19937& rng) {
  std::normal_distribution<double> normal(0, 1);
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = normal(rng);
  return Tensor::from_vector(v, shape, device).to(dtype);
}

// HF's tables: angle p / 10000^(2i / dim), both halves equal; [1, 1, positions, dim] as Llama's.
std::pair<Tensor, Tensor> tables(int64_t positions, int64_t dim, DType dtype, tritium::Device device) {
  std::vector<double> c(static_cast<size_t>(positions * dim)), s(c.size());
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t i = 0; i < dim; ++i) {
      const double a = double(p) / std::pow(10000.0, double(2 * (i % (dim / 2))) / double(dim));
      c[size_t(p * dim + i)] = std::cos(a), s[size_t(p * dim + i)] = std::sin(a);
    }
  return {Tensor::from_vector(c, {1, 1, positions, dim}, device).to(dtype),
          Tensor::from_vector(s, {1, 1, positions, dim}, device).to(dtype)};
}

// The rotation of one head in float64 (x and the tables as the kernel read them).
void rotate(const double* x, double* out, const double* c, const double* s, int64_t head_dim, bool backward) {
  const int64_t h = head_dim / 2;
  for (int64_t j = 0; j < h; ++j) {
    const double sn = backward ? -s[j] : s[j];
    out[j] = x[j] * c[j] - x[j + h] * sn;
    out[j + h] = x[j + h] * c[j] + x[j] * sn;
  }
}

// _rope_embedding: Q [batch, seq, heads, head_dim]; positions row % seq.
double check_grouped(const tritium::Device& device, int64_t batch, int64_t seq, int64_t heads, int64_t head_dim,
                     DType dtype, DType table_dtype, bool backward, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor Q = random({batch, seq, heads, head_dim}, dtype, device, rng);
  auto [cos, sin] = tables(seq + 3, head_dim, table_dtype, device);
  const auto hq = host(Q), hc = host(cos), hs = host(sin);
  fast_rope(Q, cos, sin, backward);
  std::vector<double> ref(hq.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t h = 0; h < heads; ++h) {
        const size_t at = size_t(((b * seq + t) * heads + h) * head_dim);
        rotate(&hq[at], &ref[at], &hc[size_t(t * head_dim)], &hs[size_t(t * head_dim)], head_dim, backward);
      }
  const auto got = host(Q);
  return suite::rel_error(std::vector<float>(got.begin(), got.end()), ref);
}

// _rope_embedding_QK: Q [batch, heads_q, seq, head_dim] (a transposed view when `strided`),
// K [batch, heads_k, seq, head_dim]; positions from indices or row % seq.
double check_qk(const tritium::Device& device, int64_t batch, int64_t seq, int64_t heads_q, int64_t heads_k,
                int64_t head_dim, DType dtype, bool with_indices, bool backward, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor Q = random({batch, heads_q, seq, head_dim}, dtype, device, rng);
  Tensor K = random({batch, seq, heads_k, head_dim}, dtype, device, rng).transpose(1, 2);  // not contiguous: copied
  const int64_t positions = seq + 5;
  auto [cos, sin] = tables(positions, head_dim, dtype, device);
  std::vector<int64_t> idx(static_cast<size_t>(batch * seq));
  std::uniform_int_distribution<int64_t> pick(0, positions - 1);
  for (auto& v : idx) v = pick(rng);
  std::optional<Tensor> indices;
  if (with_indices) indices = Tensor::from_vector(idx, {batch, seq}, device).to(DType::i64);
  const auto hq = host(Q), hk = host(K.contiguous()), hc = host(cos), hs = host(sin);
  auto [Qo, Ko] = fast_rope_qk(Q, K, cos, sin, indices, backward);
  std::vector<double> rq(hq.size()), rk(hk.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t) {
      const int64_t pos = with_indices ? idx[size_t(b * seq + t)] : t;
      for (int64_t h = 0; h < heads_q; ++h) {
        const size_t at = size_t(((b * heads_q + h) * seq + t) * head_dim);
        rotate(&hq[at], &rq[at], &hc[size_t(pos * head_dim)], &hs[size_t(pos * head_dim)], head_dim, backward);
      }
      for (int64_t h = 0; h < heads_k; ++h) {
        const size_t at = size_t(((b * heads_k + h) * seq + t) * head_dim);
        rotate(&hk[at], &rk[at], &hc[size_t(pos * head_dim)], &hs[size_t(pos * head_dim)], head_dim, backward);
      }
    }
  const auto gq = host(Qo), gk = host(Ko);
  return std::max(suite::rel_error(std::vector<float>(gq.begin(), gq.end()), rq),
                  suite::rel_error(std::vector<float>(gk.begin(), gk.end()), rk));
}

double bound_of(DType d) { return d == DType::bf16 ? 1e-2 : d == DType::f16 ? 1e-3 : 1e-5; }

bool check(const tritium::Device& device) {
  bool ok = true;
  std::string detail;
  double worst = 0;
  auto record = [&](const std::string& what, double rel, DType dtype) {
    const double bound = bound_of(dtype);
    if (!(rel <= bound)) ok = false;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {:.1e}", detail.empty() ? "(" : ", ", what, rel);
  };
  // Grouped heads: 6 heads (a short last group), half a head off the block (head_dim 80: 40 of 64
  // lanes), forward and backward, bf16 tables and Gemma's f32 tables for f16 Q.
  record("grouped bf16 2x5x6x64", check_grouped(device, 2, 5, 6, 64, DType::bf16, DType::bf16, false, 1), DType::bf16);
  record("grouped f32 bwd 1x7x5x80", check_grouped(device, 1, 7, 5, 80, DType::f32, DType::f32, true, 2), DType::f32);
  record("grouped f16, f32 tables, 2x3x4x48", check_grouped(device, 2, 3, 4, 48, DType::f16, DType::f32, false, 3), DType::f16);
  // Q and K: grouped KV heads (K heads < Q heads), position indices, a non-contiguous K.
  record("QK f32 idx 2x6/2x5x80", check_qk(device, 2, 5, 6, 2, 80, DType::f32, true, false, 4), DType::f32);
  record("QK bf16 bwd 1x4/4x9x64", check_qk(device, 1, 9, 4, 4, 64, DType::bf16, false, true, 5), DType::bf16);
  record("QK f16 idx bwd 2x8/2x3x32", check_qk(device, 2, 3, 8, 2, 32, DType::f16, true, true, 6), DType::f16);
  detail += "; bounds f32 1e-5, f16 1e-3, bf16 1e-2; reported: worst error / bound)";
  return suite::report("rope_embedding", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// Unsloth ships no benchmark for these kernels: Llama-3-8B attention (32 query heads, 8 KV heads,
// head_dim 128), 4 x 2048 tokens, bf16, in place. GB/s counts Q (and K) read and written.
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t batch = device.is_cuda() ? 4 : 1, seq = device.is_cuda() ? 2048 : 128, hq = 32, hk = 8, hd = 128;
  auto [cos, sin] = tables(seq, hd, DType::bf16, device);
  auto randn = [&](Tensor::Shape s) {
    return tritium::ops::randn(s, tritium::ops::default_generator(), DType::f32, device).to(DType::bf16);
  };
  std::vector<suite::Row> rows;
  Tensor Q = randn({batch, seq, hq, hd});
  const double q_bytes = 2.0 * double(Q.nbytes());
  const double ms = tritium::do_bench([&] { fast_rope(Q, cos, sin, false); }, device).median_ms;
  rows.push_back({fmt::format("Q {}x{}x{}x{} bf16", batch, seq, hq, hd), ms, q_bytes * 1e-9 / (ms * 1e-3), "GB/s"});
  Tensor Qh = randn({batch, hq, seq, hd}), Kh = randn({batch, hk, seq, hd});
  const double qk_bytes = 2.0 * double(Qh.nbytes() + Kh.nbytes());
  const double ms_qk = tritium::do_bench([&] { fast_rope_qk(Qh, Kh, cos, sin, std::nullopt, false); }, device).median_ms;
  rows.push_back({fmt::format("QK {}x{}/{}x{}x{} bf16", batch, hq, hk, seq, hd), ms_qk, qk_bytes * 1e-9 / (ms_qk * 1e-3), "GB/s"});
  return rows;
}

const bool registered = suite::add({.name = "rope_embedding",
                                    .source = "unslothai/unsloth unsloth/kernels/rope_embedding.py",
                                    .category = "elementwise",
                                    .check = check,
                                    .bench = bench});

}  // namespace
