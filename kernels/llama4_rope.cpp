// llama4_rope: Liger-Kernel's Llama 4 rotary embedding (linkedin/Liger-Kernel
// src/liger_kernel/ops/llama4_rope.py, read at commit ead96b618e5c; BSD-2-Clause, as
// Liger-Kernel): _llama4_rope_kernel (a (batch * seq, head) grid; a program past the batch or the
// sequence returns early; head_dim / 2 in BLOCK_SIZE tiles unrolled at trace time; the
// interleaved (real, imag) pairs of one query head and one key head rotated in place by the
// complex frequencies with FMAs, the imaginary part times imag_sign: -1 conjugates for the
// backward), _select_kernel_meta (BLOCK_SIZE and num_warps from head_dim / 2),
// _cast_and_contiguous and llama4_rope_forward (num_stages 2).
//
// Deviations: Tritium has no complex dtype, so freqs_cis is given as torch.view_as_real's
// [seq_len, head_dim / 2, 2] f32 tensor (the original takes a complex tensor, reshapes it to its
// rows, truncates it to seq_len and views it as real; a real one is used as it is);
// LigerLlama4RopeFunction's autograd plumbing is left out (its backward is llama4_rope_forward
// with imag_sign -1, which the check runs).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
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

auto _llama4_rope_kernel = tritium::kernel(
    "_llama4_rope_kernel",
    [](P q_ptr, P k_ptr, P freqs_complex_ptr, tl::i32 q_row_stride, tl::i32 k_row_stride, tl::i32 q_head_stride,
       tl::i32 k_head_stride, tl::i32 freqs_row_stride, tl::i32 seq_len, tl::i32 batch_size, tl::f32 imag_sign,
       int head_dim_half, int n_q_heads, int n_k_heads, int BLOCK_SIZE) {
      // 2D grid
      auto pid_bs = tl::program_id(0);  // over batch*seq
      auto pid_h = tl::program_id(1);   // over heads

      auto batch_idx = pid_bs / seq_len;
      auto seq_idx = pid_bs % seq_len;

      // Bounds check
      tl::if_(batch_idx >= batch_size || seq_idx >= seq_len, [&] { tl::return_(); });

      // Base pointers for this (batch, seq) position
      auto base_offset = batch_idx * seq_len + seq_idx;
      auto q_base = q_ptr + base_offset * q_row_stride;
      auto k_base = k_ptr + base_offset * k_row_stride;
      auto freq_base = seq_idx * freqs_row_stride;

      // Tiling over dim/2 (tl.static_range: a C++ loop)
      for (int d_start = 0; d_start < head_dim_half; d_start += BLOCK_SIZE) {
        auto d_indices = d_start + tl::arange(0, BLOCK_SIZE);
        auto mask_d = d_indices < head_dim_half;

        // Compute offsets for the block
        auto freq_offsets = d_indices(tl::_, tl::None) * 2 + tl::arange(0, 2)(tl::None, tl::_);
        // Load the block
        auto freqs_complex = tl::load(freqs_complex_ptr + freq_base + freq_offsets, mask_d(tl::_, tl::None), 0.0);
        auto [freqs_real, freqs_imag] = tl::split(freqs_complex);
        freqs_imag = freqs_imag * imag_sign;

        // Process one query head per program in pid_h
        tl::if_(pid_h < n_q_heads, [&] {
          auto q_head_ptr = q_base + pid_h * q_head_stride;
          auto q_real = tl::load(q_head_ptr + d_indices * 2, mask_d, 0.0);
          auto q_imag = tl::load(q_head_ptr + d_indices * 2 + 1, mask_d, 0.0);

          // Complex multiply with FMAs: (a+ib)*(c+i d) = (a*c - b*d) + i(a*d + b*c)
          auto new_q_real = tl::fma(q_real, freqs_real, -(q_imag * freqs_imag));
          auto new_q_imag = tl::fma(q_real, freqs_imag, q_imag * freqs_real);

          tl::store(q_head_ptr + d_indices * 2, new_q_real, mask_d);
          tl::store(q_head_ptr + d_indices * 2 + 1, new_q_imag, mask_d);
        });

        // Process one key head per program in pid_h
        tl::if_(pid_h < n_k_heads, [&] {
          auto k_head_ptr = k_base + pid_h * k_head_stride;
          auto k_real = tl::load(k_head_ptr + d_indices * 2, mask_d, 0.0);
          auto k_imag = tl::load(k_head_ptr + d_indices * 2 + 1, mask_d, 0.0);

          auto new_k_real = tl::fma(k_real, freqs_real, -(k_imag * freqs_imag));
          auto new_k_imag = tl::fma(k_real, freqs_imag, k_imag * freqs_real);

          tl::store(k_head_ptr + d_indices * 2, new_k_real, mask_d);
          tl::store(k_head_ptr + d_indices * 2 + 1, new_k_imag, mask_d);
        });
      }
    },
    {"q_ptr", "k_ptr", "freqs_complex_ptr", "q_row_stride", "k_row_stride", "q_head_stride", "k_head_stride",
     "freqs_row_stride", "seq_len", "batch_size", "imag_sign", "head_dim_half", "n_q_heads", "n_k_heads", "BLOCK_SIZE"});

// Heuristic tuning for block size and num_warps
std::pair<int, int> _select_kernel_meta(int64_t head_dim_half) {
  if (head_dim_half >= 256) return {128, 8};
  if (head_dim_half >= 96) return {128, 4};
  if (head_dim_half >= 48) return {64, 4};
  if (head_dim_half >= 24) return {32, 2};
  return {16, 2};
}

int32_t i32(int64_t v) {
  if (v > INT32_MAX || v < INT32_MIN) tritium::fail("llama4_rope: {} does not fit the kernel's int32 arguments", v);
  return static_cast<int32_t>(v);
}

// Align dtype: fp32 only when q is fp32; otherwise keep q dtype for perf
void _cast_and_contiguous(Tensor& q, Tensor& k, Tensor& freqs_complex) {
  const DType compute_dtype = q.dtype() == DType::f32 ? DType::f32 : q.dtype();
  if (k.dtype() != q.dtype()) k = k.to(q.dtype());
  q = tritium::ops::contiguous(q.to(compute_dtype));
  k = tritium::ops::contiguous(k.to(compute_dtype));
  freqs_complex = tritium::ops::contiguous(freqs_complex);
}

// llama4_rope_forward(q [B, S, Hq, D], k [B, S, Hk, D], freqs_cis [S', D / 2, 2] real view):
// q and k rotated in place (when already contiguous in the compute dtype) and returned.
// `extra_rows` adds programs past batch * seq (the check's bounds-check case; 0 in the wrapper).
std::pair<Tensor, Tensor> llama4_rope_forward(Tensor q, Tensor k, Tensor freqs_cis, int BLOCK_SIZE = 0,
                                              float imag_sign = 1.0f, int64_t extra_rows = 0) {
  // Save original dtype for casting back
  const DType original_dtype = q.dtype();
  const int64_t batch_size = q.size(0), seq_len = q.size(1), n_q_heads = q.size(2), head_dim = q.size(3);
  const int64_t n_k_heads = k.size(2);
  const int64_t head_dim_half = head_dim / 2;
  if (freqs_cis.dim() != 3 || freqs_cis.size(1) != head_dim_half || freqs_cis.size(2) != 2)
    tritium::fail("llama4_rope: freqs_cis must be the real view [seq_len, {}, 2] of the complex frequencies, got {}",
                  head_dim_half, tritium::ir::shape_str(freqs_cis.shape()));
  if (freqs_cis.size(0) > seq_len) freqs_cis = freqs_cis.slice(0, 0, seq_len);

  // Cast to appropriate dtype and make contiguous only when needed
  _cast_and_contiguous(q, k, freqs_cis);

  // H100-optimized meta-params
  int num_warps;
  if (BLOCK_SIZE == 0)
    std::tie(BLOCK_SIZE, num_warps) = _select_kernel_meta(head_dim_half);
  else  // Provide a default num_warps if caller pins BLOCK_SIZE
    num_warps = _select_kernel_meta(head_dim_half).second;

  // 2D grid: one program per (batch, seq, head)
  const int64_t n_heads_max = std::max(n_q_heads, n_k_heads);
  const tritium::Grid grid(batch_size * seq_len + extra_rows, n_heads_max);

  _llama4_rope_kernel[grid](q, k, freqs_cis, i32(q.stride(1)), i32(k.stride(1)), i32(q.stride(2)), i32(k.stride(2)),
                            i32(freqs_cis.stride(0)), i32(seq_len), i32(batch_size), imag_sign, int(head_dim_half),
                            int(n_q_heads), int(n_k_heads), BLOCK_SIZE,
                            tritium::Options{.num_warps = num_warps, .num_stages = 2, .device = {}});

  // Cast back to original dtype only if it differs from compute dtype
  if (q.dtype() != original_dtype) q = q.to(original_dtype);
  if (k.dtype() != original_dtype) k = k.to(original_dtype);
  return {q, k};
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  int64_t B, S, Hq, Hk, head_dim;
  DType dtype;
  float imag_sign;
  int64_t extra_rows;  // programs past batch * seq, which must return before touching memory
};

double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t half = c.head_dim / 2;
  std::vector<double> qv, kv;
  // q and k as the first rows of one buffer each, whose tail (one more batch) programs past the
  // batch would write: it must keep its values.
  std::vector<double> qall, kall;
  Tensor qbuf = liger::random_tensor({c.B + 1, c.S, c.Hq, c.head_dim}, c.dtype, device, rng, qall);
  Tensor kbuf = liger::random_tensor({c.B + 1, c.S, c.Hk, c.head_dim}, c.dtype, device, rng, kall);
  Tensor q = qbuf.slice(0, 0, c.B), k = kbuf.slice(0, 0, c.B);
  // Llama 4's frequencies: angle pos * theta^(-2j / head_dim), as cos + i sin, over a longer table
  // than the sequence (the wrapper truncates it to seq_len).
  const int64_t table = c.S + 3;
  std::vector<double> f(size_t(table * half * 2));
  for (int64_t s = 0; s < table; ++s)
    for (int64_t j = 0; j < half; ++j) {
      const double a = double(s) * std::pow(500000.0, -2.0 * double(j) / double(c.head_dim));
      f[size_t((s * half + j) * 2)] = std::cos(a), f[size_t((s * half + j) * 2 + 1)] = std::sin(a);
    }
  Tensor freqs = Tensor::from_vector(f, {table, half, 2}, device).to(DType::f32);
  f = liger::host(freqs);

  auto [qo, ko] = llama4_rope_forward(q, k, freqs, 0, c.imag_sign, c.extra_rows);

  auto rotate = [&](const std::vector<double>& x, int64_t H) {
    std::vector<double> out(size_t(c.B * c.S * H * c.head_dim));
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t s = 0; s < c.S; ++s)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t j = 0; j < half; ++j) {
            const size_t at = size_t(((b * c.S + s) * H + h) * c.head_dim + 2 * j);
            const double re = x[at], im = x[at + 1];
            const double fr = f[size_t((s * half + j) * 2)], fi = c.imag_sign * f[size_t((s * half + j) * 2 + 1)];
            out[at] = re * fr - im * fi, out[at + 1] = re * fi + im * fr;
          }
    return out;
  };
  const std::vector<double> ref_q = rotate(qall, c.Hq), ref_k = rotate(kall, c.Hk);
  double err = std::max(liger::rel_error(liger::host(qo), ref_q), liger::rel_error(liger::host(ko), ref_k));
  // The extra batch of each buffer untouched (the programs past batch * seq returned).
  const std::vector<double> qtail = liger::host(qbuf.slice(0, c.B, c.B + 1)), ktail = liger::host(kbuf.slice(0, c.B, c.B + 1));
  if (!std::equal(qtail.begin(), qtail.end(), qall.begin() + ptrdiff_t(c.B * c.S * c.Hq * c.head_dim)) ||
      !std::equal(ktail.begin(), ktail.end(), kall.begin() + ptrdiff_t(c.B * c.S * c.Hk * c.head_dim)))
    return INFINITY;
  return err;
}

bool check(const tritium::Device& device) {
  // head_dim / 2 of 40 (two 32-wide tiles, the second partial), 64 (one tile) and 10 (16 of
  // which 10 used); more query than key heads and the reverse; the backward's conjugate
  // (imag_sign -1); programs past batch * seq (which return); f32 and bf16.
  const std::vector<Case> cases = {{2, 5, 4, 2, 80, DType::f32, 1.0f, 0},
                                   {1, 7, 3, 5, 128, DType::bf16, -1.0f, 0},
                                   {2, 3, 2, 1, 20, DType::f32, 1.0f, 4},
                                   {2, 4, 4, 4, 128, DType::f16, 1.0f, 3}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.B * 1000 + c.S * 10 + c.head_dim));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} B{} S{} Hq{} Hk{} D{}{}{} {:.1e}", detail.empty() ? "(q, k: " : ", ", tritium::dtype_name(c.dtype),
                          c.B, c.S, c.Hq, c.Hk, c.head_dim, c.imag_sign < 0 ? " conj" : "",
                          c.extra_rows ? fmt::format(" +{} rows", c.extra_rows) : "", rel);
  }
  // Complex frequencies cannot be passed (no complex dtype): anything but their real view is an
  // error naming the shape expected.
  bool refused = false;
  try {
    Tensor q = tritium::ops::zeros({1, 2, 1, 8}, DType::f32, device);
    llama4_rope_forward(q, q, tritium::ops::zeros({2, 4}, DType::f32, device));
  } catch (const tritium::Error& e) {
    refused = std::string(e.what()).find("freqs_cis must be the real view [seq_len, 4, 2]") != std::string::npos;
  }
  ok = ok && refused;
  detail += fmt::format("; bounds f32 1e-5, f16 1e-3, bf16 1e-2; shown: worst error / bound; freqs not [S, D/2, 2] {})",
                        refused ? "refused" : "NOT REFUSED");
  return suite::report("llama4_rope", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_llama4_rope.py: the default model (llama_3_8b: hidden 4096, 32 query and 8 key heads
// of 128, bf16), batch 1, a sweep of seq_len; the forward. GB/s from the bytes moved (q and k read
// and written, the frequencies read per program).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t Hq = 32, Hk = 8, D = 128;
  std::vector<int64_t> seqs = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192} : std::vector<int64_t>{64};
  std::vector<suite::Row> rows;
  for (int64_t S : seqs) {
    auto& gen = tritium::ops::default_generator();
    Tensor q = tritium::ops::randn({1, S, Hq, D}, gen, DType::bf16, device);
    Tensor k = tritium::ops::randn({1, S, Hk, D}, gen, DType::bf16, device);
    Tensor freqs = tritium::ops::rand({S, D / 2, 2}, gen, DType::f32, device);
    const double bytes = 2.0 * double(S) * double((Hq + Hk) * D) * 2.0 + double(S) * double(D) * 4.0;
    const double ms = tritium::do_bench([&] { llama4_rope_forward(q, k, freqs); }, device).median_ms;
    rows.push_back({fmt::format("fwd S={} Hq={} Hk={} D={} bf16", S, Hq, Hk, D), ms, bytes * 1e-9 / (ms * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "llama4_rope",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/llama4_rope.py",
                                    .category = "elementwise",
                                    .check = check,
                                    .bench = bench});

}  // namespace
