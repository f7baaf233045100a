// attn_res: Liger-Kernel's Attention Residuals (Kimi's AttnRes: softmax attention over the depth of
// a model's block outputs instead of a plain residual sum; linkedin/Liger-Kernel
// src/liger_kernel/ops/attn_res.py, read at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel):
// _attn_res_fwd_kernel (a program per token: for each of the N <= MAX_BLOCKS block values, an
// RMSNorm key scored against a learned query, kept in a [MAX_BLOCKS] register vector by tl.where;
// the softmax over blocks; the weighted sum of the values) and _attn_res_bwd_kernel (the softmax,
// RMSNorm and weighted-sum gradients per block, dW_query / dW_norm added atomically in fp32), with
// the wrappers attn_res_forward / attn_res_backward (BLOCK_D = next_power_of_2(D), MAX_BLOCKS the
// next of 4, 8, 16, 32, num_warps 4 / 8 / 16 by BLOCK_D).
//
// The original's `for i in tl.static_range(MAX_BLOCKS): if i < n_blocks:` is a C++ loop (unrolled,
// as static_range) around tl::if_ on the run-time block count.
//
// Deviation: LigerAttnResFunction's autograd plumbing is left out.
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

auto _attn_res_fwd_kernel = tritium::kernel(
    "_attn_res_fwd_kernel",
    [](P V_ptr, P W_query_ptr, P W_norm_ptr, P Out_ptr, P Alpha_ptr, P RSTD_ptr, tl::i32 n_blocks, tl::i32 n_tokens, tl::i32 D,
       float eps, int BLOCK_D, int MAX_BLOCKS) {
      // one program per token position
      auto tok = tl::program_id(0);
      auto cols = tl::arange(0, BLOCK_D);
      auto d_mask = cols < D;

      // Load shared vectors
      auto w_query = tl::load(W_query_ptr + cols, d_mask, 0.0).to(tl::float32);
      auto w_norm = tl::load(W_norm_ptr + cols, d_mask, 0.0);

      // Pass 1: scores[i] = dot(w_query, RMSNorm(v_i)), kept at register position i through tl.where
      tl::tensor scores = tl::zeros({MAX_BLOCKS}, tl::float32) + (-INFINITY);
      tl::tensor score_max = tl::full({}, -INFINITY, tl::float32);

      for (int i = 0; i < MAX_BLOCKS; ++i)  // tl.static_range
        tl::if_(n_blocks > i, [&] {
          auto v_off = i * n_tokens * D + tok * D;
          auto v = tl::load(V_ptr + v_off + cols, d_mask, 0.0).to(tl::float32);

          // RMSNorm: k = v * rstd * w_norm
          auto ms = tl::sum(v * v, 0) / D;
          auto rstd = tl::rsqrt(ms + eps);
          // Alpha/RSTD layout: [B*T, N], contiguous along N for each token
          tl::store(RSTD_ptr + tok * n_blocks + i, rstd);

          auto k = (v * rstd).to(w_norm.dtype()) * w_norm;

          // score = dot(w_query, k)
          auto sc = tl::sum(w_query * k.to(tl::float32), 0);
          scores = tl::where(tl::arange(0, MAX_BLOCKS) == i, sc, scores);
          score_max = tl::maximum(score_max, sc);
        });

      // Softmax over blocks
      auto exp_scores = tl::where(tl::arange(0, MAX_BLOCKS) < n_blocks, tl::exp(scores - score_max), 0.0);
      auto sum_exp = tl::sum(exp_scores, 0);
      auto alpha = exp_scores / sum_exp;  // [MAX_BLOCKS]

      // Store alpha for backward, layout [B*T, N]
      for (int i = 0; i < MAX_BLOCKS; ++i)
        tl::if_(n_blocks > i, [&] {
          auto a_i = tl::sum(tl::where(tl::arange(0, MAX_BLOCKS) == i, alpha, 0.0));
          tl::store(Alpha_ptr + tok * n_blocks + i, a_i);
        });

      // Pass 2: weighted sum h = sum(alpha_i * v_i)
      auto h = tl::zeros({BLOCK_D}, tl::float32);
      for (int i = 0; i < MAX_BLOCKS; ++i)
        tl::if_(n_blocks > i, [&] {
          auto v_off = i * n_tokens * D + tok * D;
          auto v = tl::load(V_ptr + v_off + cols, d_mask, 0.0).to(tl::float32);
          auto a_i = tl::sum(tl::where(tl::arange(0, MAX_BLOCKS) == i, alpha, 0.0));
          h += a_i * v;
        });

      // the store converts to Out's dtype
      tl::store(Out_ptr + tok * D + cols, h, d_mask);
    },
    {"V_ptr", "W_query_ptr", "W_norm_ptr", "Out_ptr", "Alpha_ptr", "RSTD_ptr", "n_blocks", "n_tokens", "D", "eps", "BLOCK_D",
     "MAX_BLOCKS"});

auto _attn_res_bwd_kernel = tritium::kernel(
    "_attn_res_bwd_kernel",
    [](P dOut_ptr, P V_ptr, P W_query_ptr, P W_norm_ptr, P Alpha_ptr, P RSTD_ptr, P dV_ptr, P dW_query_ptr, P dW_norm_ptr,
       tl::i32 n_blocks, tl::i32 n_tokens, tl::i32 D, [[maybe_unused]] tl::f32 eps, int BLOCK_D, int MAX_BLOCKS) {
      // one program per token
      auto tok = tl::program_id(0);
      auto cols = tl::arange(0, BLOCK_D);
      auto d_mask = cols < D;

      auto dh = tl::load(dOut_ptr + tok * D + cols, d_mask, 0.0).to(tl::float32);
      auto w_query = tl::load(W_query_ptr + cols, d_mask, 0.0).to(tl::float32);
      auto w_norm = tl::load(W_norm_ptr + cols, d_mask, 0.0).to(tl::float32);

      // Load alpha for all blocks (layout [B*T, N])
      auto d_alpha = tl::zeros({MAX_BLOCKS}, tl::float32);
      auto alpha = tl::zeros({MAX_BLOCKS}, tl::float32);

      for (int i = 0; i < MAX_BLOCKS; ++i)
        tl::if_(n_blocks > i, [&] {
          auto v_off = i * n_tokens * D + tok * D;
          auto v = tl::load(V_ptr + v_off + cols, d_mask, 0.0).to(tl::float32);
          auto a_i = tl::load(Alpha_ptr + tok * n_blocks + i);

          auto da_i = tl::sum(dh * v, 0);
          d_alpha = tl::where(tl::arange(0, MAX_BLOCKS) == i, da_i, d_alpha);
          alpha = tl::where(tl::arange(0, MAX_BLOCKS) == i, a_i, alpha);
        });

      // Softmax backward: d_score_i = alpha_i * (d_alpha_i - sum_j(alpha_j * d_alpha_j))
      auto sum_a_da = tl::sum(alpha * d_alpha, 0);
      auto d_scores = alpha * (d_alpha - sum_a_da);

      // For each block: compute dV_i and accumulate dW_query, dW_norm
      auto dw_query_acc = tl::zeros({BLOCK_D}, tl::float32);
      auto dw_norm_acc = tl::zeros({BLOCK_D}, tl::float32);

      for (int i = 0; i < MAX_BLOCKS; ++i)
        tl::if_(n_blocks > i, [&] {
          auto v_off = i * n_tokens * D + tok * D;
          auto v = tl::load(V_ptr + v_off + cols, d_mask, 0.0).to(tl::float32);
          auto a_i = tl::sum(tl::where(tl::arange(0, MAX_BLOCKS) == i, alpha, 0.0));
          auto ds_i = tl::sum(tl::where(tl::arange(0, MAX_BLOCKS) == i, d_scores, 0.0));
          auto rstd = tl::load(RSTD_ptr + tok * n_blocks + i);

          // dV_i from the weighted sum: alpha_i * dh
          auto dv_from_sum = a_i * dh;

          // dV_i from the score path: score_i = dot(w_query, RMSNorm(v_i) * w_norm), and
          // RMSNorm's backward d(v*rstd)/dv = rstd * (I - (1/D) * rstd^2 * v * v^T)
          auto v_norm = v * rstd;
          auto dk = ds_i * w_query * w_norm;  // [D]
          auto sum_dk_v = tl::sum(dk * v, 0);
          auto dv_from_score = rstd * dk - rstd * rstd * rstd * (sum_dk_v / D) * v;

          auto dv_total = dv_from_sum + dv_from_score;
          tl::store(dV_ptr + v_off + cols, dv_total, d_mask);

          // dW_query += d_score_i * k_i
          auto k_i = v_norm * w_norm;
          dw_query_acc += ds_i * k_i;

          // dW_norm += d_score_i * w_query * v_norm (element-wise)
          dw_norm_acc += ds_i * w_query * v_norm;
        });

      tl::atomic_add(dW_query_ptr + cols, dw_query_acc, d_mask);
      tl::atomic_add(dW_norm_ptr + cols, dw_norm_acc, d_mask);
    },
    {"dOut_ptr", "V_ptr", "W_query_ptr", "W_norm_ptr", "Alpha_ptr", "RSTD_ptr", "dV_ptr", "dW_query_ptr", "dW_norm_ptr", "n_blocks",
     "n_tokens", "D", "eps", "BLOCK_D", "MAX_BLOCKS"});

bool g_poison = false;  // while checking: Out, Alpha, RSTD and dV start as NaN

Tensor output(const std::vector<int64_t>& shape, DType dtype, const tritium::Device& device) {
  return g_poison ? tritium::ops::full(shape, NAN, dtype, device) : Tensor::empty(shape, dtype, device);
}

int32_t i32(int64_t v) {
  if (v > INT32_MAX) tritium::fail("attn_res: {} does not fit the kernels' int32 arguments", v);
  return static_cast<int32_t>(v);
}

// _get_max_blocks: the block count rounded up to 4, 8, 16 or 32 (at most 32).
int get_max_blocks(int64_t n_blocks) {
  for (int mb : {4, 8, 16, 32})
    if (n_blocks <= mb) return mb;
  return 32;
}

// num_warps 4, 8 from BLOCK_D 2048, 16 from 8192.
int warps_for(int BLOCK_D) { return BLOCK_D >= 8192 ? 16 : BLOCK_D >= 2048 ? 8 : 4; }

struct Forward {
  Tensor h, V_3d, Alpha, RSTD;
};

// attn_res_forward(V [N, B*T, D] stacked block values, w_query [D], w_norm [D], eps)
Forward attn_res_forward(const Tensor& V, const Tensor& w_query, const Tensor& w_norm, float eps = 1e-6f) {
  const int64_t N = V.size(0), D = V.size(V.dim() - 1);
  Tensor V_3d = V.reshape({N, V.numel() / (N * D), D}).contiguous();
  const int64_t n_tokens = V_3d.size(1);
  Tensor Out = output({n_tokens, D}, V.dtype(), V.device());
  Tensor Alpha = output({n_tokens, N}, DType::f32, V.device());
  Tensor RSTD = output({n_tokens, N}, DType::f32, V.device());
  const int BLOCK_D = static_cast<int>(liger::next_power_of_2(D));
  const int MAX_BLOCKS = get_max_blocks(N);
  _attn_res_fwd_kernel[{n_tokens}](V_3d, w_query.contiguous(), w_norm.contiguous(), Out, Alpha, RSTD, i32(N), i32(n_tokens), i32(D),
                                   Meta{{"eps", eps}, {"BLOCK_D", BLOCK_D}, {"MAX_BLOCKS", MAX_BLOCKS}}, liger::warps(warps_for(BLOCK_D)));
  return {Out, V_3d, Alpha, RSTD};
}

// attn_res_backward -> (dV [N, B*T, D], dW_query, dW_norm)
std::tuple<Tensor, Tensor, Tensor> attn_res_backward(const Tensor& dh, const Tensor& V_3d, const Tensor& w_query, const Tensor& w_norm,
                                                     const Tensor& Alpha, const Tensor& RSTD, float eps = 1e-6f) {
  const int64_t N = V_3d.size(0), n_tokens = V_3d.size(1), D = V_3d.size(2);
  Tensor dh_2d = dh.contiguous().reshape({n_tokens, D});
  Tensor dV = output({N, n_tokens, D}, V_3d.dtype(), V_3d.device());
  Tensor dW_query = tritium::ops::zeros({D}, DType::f32, dh.device());
  Tensor dW_norm = tritium::ops::zeros({D}, DType::f32, dh.device());
  const int BLOCK_D = static_cast<int>(liger::next_power_of_2(D));
  const int MAX_BLOCKS = get_max_blocks(N);
  _attn_res_bwd_kernel[{n_tokens}](dh_2d, V_3d, w_query, w_norm, Alpha, RSTD, dV, dW_query, dW_norm, i32(N), i32(n_tokens), i32(D), eps,
                                   Meta{{"BLOCK_D", BLOCK_D}, {"MAX_BLOCKS", MAX_BLOCKS}}, liger::warps(warps_for(BLOCK_D)));
  return {dV, dW_query.to(w_query.dtype()), dW_norm.to(w_norm.dtype())};
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  int64_t N, tokens, D;
  DType dtype;
};

// h, alpha, rstd, dV, dW_query, dW_norm against float64; the worst relative error.
double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> hv, hq, hn, hdh;
  const double eps = 1e-6;
  Tensor V = liger::random_tensor({c.N, c.tokens, c.D}, c.dtype, device, rng, hv);
  Tensor w_query = liger::random_tensor({c.D}, c.dtype, device, rng, hq, 0.1);
  Tensor w_norm = liger::random_tensor({c.D}, c.dtype, device, rng, hn, 0.3, 1.0);
  Tensor dh = liger::random_tensor({c.tokens, c.D}, c.dtype, device, rng, hdh);
  g_poison = true;
  Forward f = attn_res_forward(V, w_query, w_norm, float(eps));
  auto [dV, dWq, dWn] = attn_res_backward(dh, f.V_3d, w_query, w_norm, f.Alpha, f.RSTD, float(eps));
  g_poison = false;
  const size_t D = size_t(c.D), N = size_t(c.N);
  std::vector<double> ref_h(size_t(c.tokens) * D), ref_alpha(size_t(c.tokens) * N), ref_rstd(ref_alpha.size()), ref_dv(hv.size()),
      ref_dwq(D, 0.0), ref_dwn(D, 0.0);
  for (size_t t = 0; t < size_t(c.tokens); ++t) {
    std::vector<double> rstd(N), score(N), alpha(N), dalpha(N);
    auto v = [&](size_t i, size_t d) { return hv[(i * size_t(c.tokens) + t) * D + d]; };
    double m = -INFINITY, s = 0;
    for (size_t i = 0; i < N; ++i) {
      double ms = 0;
      for (size_t d = 0; d < D; ++d) ms += v(i, d) * v(i, d);
      rstd[i] = 1.0 / std::sqrt(ms / double(D) + eps);
      score[i] = 0;
      for (size_t d = 0; d < D; ++d) score[i] += hq[d] * v(i, d) * rstd[i] * hn[d];
      m = std::max(m, score[i]);
    }
    for (size_t i = 0; i < N; ++i) s += std::exp(score[i] - m);
    double sum_a_da = 0;
    for (size_t i = 0; i < N; ++i) {
      alpha[i] = std::exp(score[i] - m) / s;
      ref_alpha[t * N + i] = alpha[i], ref_rstd[t * N + i] = rstd[i];
      dalpha[i] = 0;
      for (size_t d = 0; d < D; ++d) dalpha[i] += hdh[t * D + d] * v(i, d);
      sum_a_da += alpha[i] * dalpha[i];
    }
    for (size_t d = 0; d < D; ++d) {
      ref_h[t * D + d] = 0;
      for (size_t i = 0; i < N; ++i) ref_h[t * D + d] += alpha[i] * v(i, d);
    }
    for (size_t i = 0; i < N; ++i) {
      const double ds = alpha[i] * (dalpha[i] - sum_a_da), r = rstd[i];
      double sum_dk_v = 0;
      for (size_t d = 0; d < D; ++d) sum_dk_v += ds * hq[d] * hn[d] * v(i, d);
      for (size_t d = 0; d < D; ++d) {
        const double dk = ds * hq[d] * hn[d];
        ref_dv[(i * size_t(c.tokens) + t) * D + d] = alpha[i] * hdh[t * D + d] + r * dk - r * r * r * (sum_dk_v / double(D)) * v(i, d);
        ref_dwq[d] += ds * v(i, d) * r * hn[d];
        ref_dwn[d] += ds * hq[d] * v(i, d) * r;
      }
    }
  }
  return std::max({liger::rel_error(liger::host(f.h), ref_h), liger::rel_error(liger::host(f.Alpha), ref_alpha),
                   liger::rel_error(liger::host(f.RSTD), ref_rstd), liger::rel_error(liger::host(dV), ref_dv),
                   liger::rel_error(liger::host(dWq), ref_dwq), liger::rel_error(liger::host(dWn), ref_dwn)});
}

bool check(const tritium::Device& device) {
  // Block counts off MAX_BLOCKS (5 of 8, 3 of 4: the run-time `if`s), D off the block (300 of 512;
  // 1100 of 2048: 8 warps), f32 and bf16.
  const std::vector<Case> cases = {{5, 13, 300, DType::f32}, {3, 7, 1100, DType::f32}, {3, 11, 300, DType::bf16}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.N * 97 + c.tokens * 31 + c.D));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} N {} tokens {} D {} {:.1e}", detail.empty() ? "(h, alpha, rstd, dV, dW_query, dW_norm: " : ", ",
                          tritium::dtype_name(c.dtype), c.N, c.tokens, c.D, rel);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("attn_res", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_attn_res.py: the default model (llama_3_8b: hidden 4096, bf16), N = 8 blocks, batch 1,
// a sweep of sequence lengths. GB/s from the bytes moved (forward: V read twice, h written;
// backward: V read twice, dh read, dV written).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t N = 8, D = 4096;
  std::vector<int64_t> seqs = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192} : std::vector<int64_t>{64};
  std::vector<suite::Row> rows;
  for (int64_t T : seqs) {
    auto& gen = tritium::ops::default_generator();
    Tensor V = tritium::ops::randn({N, T, D}, gen, DType::f32, device).to(DType::bf16);
    Tensor w_query = tritium::ops::mul(tritium::ops::randn({D}, gen, DType::f32, device), 0.02).to(DType::bf16);
    Tensor w_norm = tritium::ops::full({D}, 1.0, DType::bf16, device);
    Tensor dh = tritium::ops::randn({T, D}, gen, DType::f32, device).to(DType::bf16);
    Forward f = attn_res_forward(V, w_query, w_norm);
    const double vbytes = double(N) * double(T) * double(D) * 2.0, tbytes = double(T) * double(D) * 2.0;
    const double fwd = tritium::do_bench([&] { attn_res_forward(V, w_query, w_norm); }, device).median_ms;
    rows.push_back({fmt::format("fwd N={} T={} D={} bf16", N, T, D), fwd, (2 * vbytes + tbytes) * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] { attn_res_backward(dh, f.V_3d, w_query, w_norm, f.Alpha, f.RSTD); }, device).median_ms;
    rows.push_back({fmt::format("bwd N={} T={} D={} bf16", N, T, D), bwd, (3 * vbytes + tbytes) * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "attn_res",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/attn_res.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
