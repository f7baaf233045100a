// rope: Liger-Kernel's rotary position embedding (linkedin/Liger-Kernel src/liger_kernel/ops/rope.py,
// read at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel; the HuggingFace Llama/Mistral
// rotation): _triton_rope, one program per token rotating every q and k head of it in place
// ([pad_n_qh, pad_hd / 2] tiles of the two halves of each head, cos and sin of the token's
// position shared by the batch or per batch row), forward and BACKWARD_PASS (the inverse rotation),
// with the wrappers rope_forward / rope_backward (q, k given as (bsz, n_head, seq_len, head_dim)
// views of (bsz, seq_len, n_head, head_dim) storage, made contiguous in that layout).
//
// Deviation: LigerRopeFunction's autograd plumbing is left out. The kernel works in place, so the
// check cannot poison its outputs; it checks every element of q and k instead (padding heads and
// columns included: nothing outside a head's hd columns changes).
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
using tritium::Meta;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

auto _triton_rope = tritium::kernel(
    "_triton_rope",
    [](P q_ptr, tl::i32 q_row_stride, P k_ptr, tl::i32 k_row_stride, P cos, tl::i32 cos_row_stride, P sin,
       tl::i32 sin_row_stride, tl::i32 sl, [[maybe_unused]] int bs, int cos_bs, int n_qh, int n_kh, int hd, int pad_n_qh,
       int pad_n_kh, int pad_hd, [[maybe_unused]] int BLOCK_SIZE, bool BACKWARD_PASS) {
      // q: (bsz, seq_len, num_q_heads, head_dim) storage, one program per (batch, token) row
      auto pid = tl::program_id(0).to(tl::int64);

      // locate start address
      q_ptr = q_ptr + pid * q_row_stride;
      k_ptr = k_ptr + pid * k_row_stride;

      // Programs run over a [bsz, seq_len] grid flattened with seq_len fastest: pid // sl is the
      // batch index, pid % sl the position. Only the left half of cos and sin is read (the right
      // half is a copy).
      auto batch_idx = pid / sl;
      auto cos_row_idx = pid % sl;
      cos = cos + tl::where(cos_bs == 1, cos_row_idx * cos_row_stride,
                            batch_idx * (sl * cos_row_stride) + cos_row_idx * cos_row_stride);
      sin = sin + tl::where(cos_bs == 1, cos_row_idx * sin_row_stride,
                            batch_idx * (sl * sin_row_stride) + cos_row_idx * sin_row_stride);

      auto cos_offsets = tl::arange(0, pad_hd / 2);
      auto cos_mask = cos_offsets < hd / 2;
      auto cos_row = tl::load(cos + cos_offsets, cos_mask, 0);
      auto sin_row = tl::load(sin + cos_offsets, cos_mask, 0);

      // left half of the head
      auto first_half_q_offsets = tl::arange(0, pad_n_qh)(tl::_, tl::None) * hd + tl::arange(0, pad_hd / 2)(tl::None, tl::_);
      auto first_half_k_offsets = tl::arange(0, pad_n_kh)(tl::_, tl::None) * hd + tl::arange(0, pad_hd / 2)(tl::None, tl::_);
      auto first_q_mask = (tl::arange(0, pad_n_qh)(tl::_, tl::None) < n_qh) & (tl::arange(0, pad_hd / 2)(tl::None, tl::_) < hd / 2);
      auto first_k_mask = (tl::arange(0, pad_n_kh)(tl::_, tl::None) < n_kh) & (tl::arange(0, pad_hd / 2)(tl::None, tl::_) < hd / 2);
      auto q_tile_1 = tl::load(q_ptr + first_half_q_offsets, first_q_mask, 0).to(sin_row.dtype());
      auto k_tile_1 = tl::load(k_ptr + first_half_k_offsets, first_k_mask, 0).to(sin_row.dtype());

      // right half of the head
      auto second_half_q_offsets = first_half_q_offsets + (hd / 2);
      auto second_half_k_offsets = first_half_k_offsets + (hd / 2);
      auto second_q_mask = first_q_mask;
      auto second_k_mask = first_k_mask;
      auto q_tile_2 = tl::load(q_ptr + second_half_q_offsets, second_q_mask, 0).to(sin_row.dtype());
      auto k_tile_2 = tl::load(k_ptr + second_half_k_offsets, second_k_mask, 0).to(sin_row.dtype());

      if (!BACKWARD_PASS) {
        // y = [x1, x2] * [cos, cos] + [-x2, x1] * [sin, sin]
        auto new_q_tile_1 = q_tile_1 * cos_row - q_tile_2 * sin_row;
        tl::store(q_ptr + first_half_q_offsets, new_q_tile_1, first_q_mask);
        auto new_q_tile_2 = q_tile_2 * cos_row + q_tile_1 * sin_row;
        tl::store(q_ptr + second_half_q_offsets, new_q_tile_2, second_q_mask);

        auto new_k_tile_1 = k_tile_1 * cos_row - k_tile_2 * sin_row;
        tl::store(k_ptr + first_half_k_offsets, new_k_tile_1, first_k_mask);
        auto new_k_tile_2 = k_tile_2 * cos_row + k_tile_1 * sin_row;
        tl::store(k_ptr + second_half_k_offsets, new_k_tile_2, second_k_mask);
      } else {
        // dy = [dx1, dx2] * [cos, cos] + [-dx2, dx1] * [-sin, -sin]
        auto new_q_tile_1 = q_tile_1 * cos_row + q_tile_2 * sin_row;
        tl::store(q_ptr + first_half_q_offsets, new_q_tile_1, first_q_mask);
        auto new_q_tile_2 = q_tile_2 * cos_row - q_tile_1 * sin_row;
        tl::store(q_ptr + second_half_q_offsets, new_q_tile_2, second_q_mask);

        auto new_k_tile_1 = k_tile_1 * cos_row + k_tile_2 * sin_row;
        tl::store(k_ptr + first_half_k_offsets, new_k_tile_1, first_k_mask);
        auto new_k_tile_2 = k_tile_2 * cos_row - k_tile_1 * sin_row;
        tl::store(k_ptr + second_half_k_offsets, new_k_tile_2, second_k_mask);
      }
    },
    {"q_ptr", "q_row_stride", "k_ptr", "k_row_stride", "cos", "cos_row_stride", "sin", "sin_row_stride", "sl", "bs", "cos_bs",
     "n_qh", "n_kh", "hd", "pad_n_qh", "pad_n_kh", "pad_hd", "BLOCK_SIZE", "BACKWARD_PASS"});

int32_t i32(int64_t v) {
  if (v > INT32_MAX) tritium::fail("rope: {} does not fit the kernel's int32 arguments", v);
  return static_cast<int32_t>(v);
}

// The launch both wrappers make on (bsz, seq_len, n_head, head_dim) storage.
void launch(Tensor& q, Tensor& k, const Tensor& cos, const Tensor& sin, bool backward) {
  const int64_t batch_size = q.size(0), seq_len = q.size(1), n_q_head = q.size(2), head_dim = q.size(3);
  const int64_t n_kv_head = k.size(2);
  const int pad_hd = int(liger::next_power_of_2(head_dim));
  const int pad_n_q_head = int(liger::next_power_of_2(n_q_head));
  const int pad_n_kv_head = int(liger::next_power_of_2(n_kv_head));
  const int BLOCK_SIZE = std::max(pad_n_q_head, pad_n_kv_head);
  const int64_t n_row = batch_size * seq_len;
  const int64_t cos_batch_size = cos.size(0);
  _triton_rope[{n_row}](q, i32(q.stride(1)), k, i32(k.stride(1)), cos, i32(cos.stride(cos.dim() - 2)), sin,
                        i32(sin.stride(sin.dim() - 2)), i32(seq_len), i32(batch_size), i32(cos_batch_size), i32(n_q_head),
                        i32(n_kv_head), i32(head_dim), pad_n_q_head, pad_n_kv_head, pad_hd,
                        Meta{{"BLOCK_SIZE", BLOCK_SIZE}, {"BACKWARD_PASS", backward}});
}

// rope_forward(q (bsz, n_q_head, seq_len, hd), k (bsz, n_kv_head, seq_len, hd), cos, sin
// (1 or bsz, seq_len, hd)): the rotated q and k, in the same (transposed) form.
std::pair<Tensor, Tensor> rope_forward(const Tensor& q_in, const Tensor& k_in, const Tensor& cos_in, const Tensor& sin_in) {
  // transpose back to the physical shape (Triton looks at the physical storage); contiguous is a
  // no-op when the views come from (bsz, seq_len, n_head, hd) storage
  Tensor q = q_in.transpose(1, 2).contiguous();
  Tensor k = k_in.transpose(1, 2).contiguous();
  Tensor cos = cos_in.contiguous(), sin = sin_in.contiguous();
  launch(q, k, cos, sin, false);
  return {q.transpose(1, 2), k.transpose(1, 2)};
}

std::pair<Tensor, Tensor> rope_backward(const Tensor& dq_in, const Tensor& dk_in, const Tensor& cos, const Tensor& sin) {
  Tensor dq = dq_in.transpose(1, 2).contiguous();
  Tensor dk = dk_in.transpose(1, 2).contiguous();
  launch(dq, dk, cos, sin, true);
  return {dq.transpose(1, 2), dk.transpose(1, 2)};
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  int64_t bsz, seq, n_qh, n_kh, hd;
  bool per_batch_cos;
  DType dtype;
};

// Forward and backward against float64 (HF's rotate_half form, y = x * cos + rotate_half(x) * sin, and
// its inverse); the worst relative error.
double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> hq, hk, hdq, hdk, hc, hs;
  // Storage (bsz, seq, heads, hd); the API takes the (bsz, heads, seq, hd) views.
  Tensor q = liger::random_tensor({c.bsz, c.seq, c.n_qh, c.hd}, c.dtype, device, rng, hq);
  Tensor k = liger::random_tensor({c.bsz, c.seq, c.n_kh, c.hd}, c.dtype, device, rng, hk);
  Tensor dq = liger::random_tensor({c.bsz, c.seq, c.n_qh, c.hd}, c.dtype, device, rng, hdq);
  Tensor dk = liger::random_tensor({c.bsz, c.seq, c.n_kh, c.hd}, c.dtype, device, rng, hdk);
  // cos and sin of angles, the right half a copy of the left (as HF's rotary embedding makes them).
  const int64_t cb = c.per_batch_cos ? c.bsz : 1;
  std::uniform_real_distribution<double> angle(0, 6.3);
  std::vector<double> vc(size_t(cb * c.seq * c.hd)), vs(vc.size());
  for (int64_t r = 0; r < cb * c.seq; ++r)
    for (int64_t j = 0; j < c.hd / 2; ++j) {
      const double a = angle(rng);
      for (int64_t h : {j, j + c.hd / 2}) vc[size_t(r * c.hd + h)] = std::cos(a), vs[size_t(r * c.hd + h)] = std::sin(a);
    }
  Tensor cos = Tensor::from_vector(vc, {cb, c.seq, c.hd}, device).to(c.dtype);
  Tensor sin = Tensor::from_vector(vs, {cb, c.seq, c.hd}, device).to(c.dtype);
  hc = liger::host(cos), hs = liger::host(sin);
  auto [oq, ok] = rope_forward(q.transpose(1, 2), k.transpose(1, 2), cos, sin);
  auto [gq, gk] = rope_backward(dq.transpose(1, 2), dk.transpose(1, 2), cos, sin);
  // float64 reference on the storage layout.
  auto rotate = [&](const std::vector<double>& x, int64_t heads, bool inverse) {
    std::vector<double> y(x.size());
    const int64_t half = c.hd / 2;
    for (int64_t b = 0; b < c.bsz; ++b)
      for (int64_t s = 0; s < c.seq; ++s)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t j = 0; j < half; ++j) {
            const size_t base = size_t(((b * c.seq + s) * heads + h) * c.hd), cs = size_t(((c.per_batch_cos ? b : 0) * c.seq + s) * c.hd + j);
            const double x1 = x[base + size_t(j)], x2 = x[base + size_t(j + half)], cv = hc[cs], sv = inverse ? -hs[cs] : hs[cs];
            y[base + size_t(j)] = x1 * cv - x2 * sv;
            y[base + size_t(j + half)] = x2 * cv + x1 * sv;
          }
    return y;
  };
  // The results are transposed views of the rotated storage: compare them as (bsz, seq, heads, hd).
  auto storage = [](const Tensor& t) { return liger::host(t.transpose(1, 2)); };
  return std::max({liger::rel_error(storage(oq), rotate(hq, c.n_qh, false)), liger::rel_error(storage(ok), rotate(hk, c.n_kh, false)),
                   liger::rel_error(storage(gq), rotate(hdq, c.n_qh, true)), liger::rel_error(storage(gk), rotate(hdk, c.n_kh, true))});
}

bool check(const tritium::Device& device) {
  // Heads and head_dim off the powers of two (6 q heads of 8, 3 kv heads of 4, hd 80 of 128: the
  // masks), grouped kv heads, cos shared by the batch or per batch row, f32 and bf16.
  const std::vector<Case> cases = {{2, 7, 6, 3, 80, false, DType::f32}, {3, 5, 4, 2, 64, true, DType::f32},
                                   {2, 9, 8, 2, 128, false, DType::bf16}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.seq * 31 + c.hd));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} bsz {} seq {} heads {}/{} hd {}{} {:.1e}", detail.empty() ? "(q, k, dq, dk: " : ", ",
                          tritium::dtype_name(c.dtype), c.bsz, c.seq, c.n_qh, c.n_kh, c.hd, c.per_batch_cos ? " per-batch cos" : "", rel);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("rope", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_rope.py: the default model (llama_3_8b: 32 q heads, 8 kv heads, head_dim 128, bf16),
// batch 1, a sweep of sequence lengths. GB/s from the bytes moved (q and k read and written; cos
// and sin aside).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t nq = 32, nk = 8, hd = 128;
  std::vector<int64_t> seqs = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192, 16384} : std::vector<int64_t>{128};
  std::vector<suite::Row> rows;
  for (int64_t S : seqs) {
    auto& gen = tritium::ops::default_generator();
    Tensor q = tritium::ops::randn({1, S, nq, hd}, gen, DType::f32, device).to(DType::bf16).transpose(1, 2);
    Tensor k = tritium::ops::randn({1, S, nk, hd}, gen, DType::f32, device).to(DType::bf16).transpose(1, 2);
    Tensor cos = tritium::ops::rand({1, S, hd}, gen, DType::f32, device).to(DType::bf16);
    Tensor sin = tritium::ops::rand({1, S, hd}, gen, DType::f32, device).to(DType::bf16);
    const double bytes = 2.0 * double(S) * double(nq + nk) * double(hd) * 2.0;
    const double fwd = tritium::do_bench([&] { rope_forward(q, k, cos, sin); }, device).median_ms;
    rows.push_back({fmt::format("fwd S={} heads {}/{} hd {} bf16", S, nq, nk, hd), fwd, bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] { rope_backward(q, k, cos, sin); }, device).median_ms;
    rows.push_back({fmt::format("bwd S={} heads {}/{} hd {} bf16", S, nq, nk, hd), bwd, bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "rope",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/rope.py",
                                    .category = "elementwise",
                                    .check = check,
                                    .bench = bench});

}  // namespace
