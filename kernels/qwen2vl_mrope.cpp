// qwen2vl_mrope: Liger-Kernel's multimodal RoPE of Qwen2-VL (linkedin/Liger-Kernel
// src/liger_kernel/ops/qwen2vl_mrope.py, read at commit ead96b618e5c; BSD-2-Clause, as
// Liger-Kernel): _triton_qwen2vl_mrope, rope's kernel (a program per token rotating its q and k
// heads in place, forward and BACKWARD_PASS) whose cos and sin rows are assembled from three
// position streams (temporal, height, width: cos and sin are (3, bsz, seq_len, head_dim)) by the
// mrope_section split of the half head, with the wrappers qwen2vl_mrope_forward / _backward.
//
// Deviation: LigerQwen2VLMRopeFunction's autograd plumbing is left out. The kernel works in place,
// so the check cannot poison its outputs; it compares every element of q and k instead.
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

auto _triton_qwen2vl_mrope = tritium::kernel(
    "_triton_qwen2vl_mrope",
    [](P q_ptr, P k_ptr, P cos, P sin, tl::i32 sl, int bs, int n_qh, int n_kh, int hd, int pad_n_qh, int pad_n_kh, int pad_hd,
       int mrope_section_t, int mrope_section_h, [[maybe_unused]] int BLOCK_SIZE, bool BACKWARD_PASS) {
      auto pid = tl::program_id(0);

      // locate start address
      q_ptr = q_ptr + pid * (n_qh * hd);
      k_ptr = k_ptr + pid * (n_kh * hd);

      // Programs run over a [bsz, seq_len] grid flattened with seq_len fastest; only the left half
      // of cos and sin is read (the right half is a copy). The half head is split into the
      // temporal, height and width sections, each reading its own stream's row.
      const int t_end = mrope_section_t;
      const int h_end = t_end + mrope_section_h;

      auto t_cos = cos + pid * hd;
      auto h_cos = t_cos + bs * sl * hd;
      auto w_cos = h_cos + bs * sl * hd;
      auto t_sin = sin + pid * hd;
      auto h_sin = t_sin + bs * sl * hd;
      auto w_sin = h_sin + bs * sl * hd;

      auto cos_offsets = tl::arange(0, pad_hd / 2);
      auto t_mask = cos_offsets < t_end;
      auto h_mask = (t_end <= cos_offsets) & (cos_offsets < h_end);
      auto w_mask = (h_end <= cos_offsets) & (cos_offsets < hd / 2);
      auto t_cos_row = tl::load(t_cos + cos_offsets, t_mask, 0);
      auto h_cos_row = tl::load(h_cos + cos_offsets, h_mask, 0);
      auto w_cos_row = tl::load(w_cos + cos_offsets, w_mask, 0);
      auto t_sin_row = tl::load(t_sin + cos_offsets, t_mask, 0);
      auto h_sin_row = tl::load(h_sin + cos_offsets, h_mask, 0);
      auto w_sin_row = tl::load(w_sin + cos_offsets, w_mask, 0);
      auto cos_row = t_cos_row + h_cos_row + w_cos_row;
      auto sin_row = t_sin_row + h_sin_row + w_sin_row;

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
    {"q_ptr", "k_ptr", "cos", "sin", "sl", "bs", "n_qh", "n_kh", "hd", "pad_n_qh", "pad_n_kh", "pad_hd", "mrope_section_t",
     "mrope_section_h", "BLOCK_SIZE", "BACKWARD_PASS"});

int32_t i32(int64_t v) {
  if (v > INT32_MAX) tritium::fail("qwen2vl_mrope: {} does not fit the kernel's int32 arguments", v);
  return static_cast<int32_t>(v);
}

// The launch both wrappers make on (bsz, seq_len, n_head, head_dim) storage.
void launch(Tensor& q, Tensor& k, const Tensor& cos, const Tensor& sin, const std::vector<int64_t>& mrope_section, bool backward) {
  const int64_t batch_size = q.size(0), seq_len = q.size(1), n_q_head = q.size(2), head_dim = q.size(3);
  const int64_t n_kv_head = k.size(2);
  const int pad_hd = int(liger::next_power_of_2(head_dim));
  const int pad_n_q_head = int(liger::next_power_of_2(n_q_head));
  const int pad_n_kv_head = int(liger::next_power_of_2(n_kv_head));
  const int BLOCK_SIZE = std::max(pad_n_q_head, pad_n_kv_head);
  const int64_t n_row = batch_size * seq_len;
  _triton_qwen2vl_mrope[{n_row}](q, k, cos, sin, i32(seq_len), i32(batch_size), i32(n_q_head), i32(n_kv_head), i32(head_dim),
                                 pad_n_q_head, pad_n_kv_head, pad_hd, i32(mrope_section[0]), i32(mrope_section[1]),
                                 Meta{{"BLOCK_SIZE", BLOCK_SIZE}, {"BACKWARD_PASS", backward}});
}

// qwen2vl_mrope_forward(q (bsz, n_q_head, seq_len, hd), k (bsz, n_kv_head, seq_len, hd), cos, sin
// (3, bsz, seq_len, hd), mrope_section): the rotated q and k, in the same (transposed) form.
std::pair<Tensor, Tensor> qwen2vl_mrope_forward(const Tensor& q_in, const Tensor& k_in, const Tensor& cos_in, const Tensor& sin_in,
                                                const std::vector<int64_t>& mrope_section) {
  // transpose back to the physical shape (Triton looks at the physical storage)
  Tensor q = q_in.transpose(1, 2).contiguous();
  Tensor k = k_in.transpose(1, 2).contiguous();
  Tensor cos = cos_in.contiguous(), sin = sin_in.contiguous();
  launch(q, k, cos, sin, mrope_section, false);
  return {q.transpose(1, 2), k.transpose(1, 2)};
}

std::pair<Tensor, Tensor> qwen2vl_mrope_backward(const Tensor& dq_in, const Tensor& dk_in, const Tensor& cos, const Tensor& sin,
                                                 const std::vector<int64_t>& mrope_section) {
  Tensor dq = dq_in.transpose(1, 2).contiguous();
  Tensor dk = dk_in.transpose(1, 2).contiguous();
  launch(dq, dk, cos, sin, mrope_section, true);
  return {dq.transpose(1, 2), dk.transpose(1, 2)};
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  int64_t bsz, seq, n_qh, n_kh, hd;
  std::vector<int64_t> mrope_section;  // temporal, height, width: half the head in all
  DType dtype;
};

// Forward and backward against float64 (HF's apply_multimodal_rotary_pos_emb: each half-head
// column takes the cos / sin of its section's position stream); the worst relative error.
double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> hq, hk, hdq, hdk;
  Tensor q = liger::random_tensor({c.bsz, c.seq, c.n_qh, c.hd}, c.dtype, device, rng, hq);
  Tensor k = liger::random_tensor({c.bsz, c.seq, c.n_kh, c.hd}, c.dtype, device, rng, hk);
  Tensor dq = liger::random_tensor({c.bsz, c.seq, c.n_qh, c.hd}, c.dtype, device, rng, hdq);
  Tensor dk = liger::random_tensor({c.bsz, c.seq, c.n_kh, c.hd}, c.dtype, device, rng, hdk);
  // Three streams of angles, the right half of each row a copy of the left.
  std::uniform_real_distribution<double> angle(0, 6.3);
  std::vector<double> vc(size_t(3 * c.bsz * c.seq * c.hd)), vs(vc.size());
  for (int64_t r = 0; r < 3 * c.bsz * c.seq; ++r)
    for (int64_t j = 0; j < c.hd / 2; ++j) {
      const double a = angle(rng);
      for (int64_t h : {j, j + c.hd / 2}) vc[size_t(r * c.hd + h)] = std::cos(a), vs[size_t(r * c.hd + h)] = std::sin(a);
    }
  Tensor cos = Tensor::from_vector(vc, {3, c.bsz, c.seq, c.hd}, device).to(c.dtype);
  Tensor sin = Tensor::from_vector(vs, {3, c.bsz, c.seq, c.hd}, device).to(c.dtype);
  std::vector<double> hc = liger::host(cos), hs = liger::host(sin);
  auto [oq, ok] = qwen2vl_mrope_forward(q.transpose(1, 2), k.transpose(1, 2), cos, sin, c.mrope_section);
  auto [gq, gk] = qwen2vl_mrope_backward(dq.transpose(1, 2), dk.transpose(1, 2), cos, sin, c.mrope_section);
  const int64_t t_end = c.mrope_section[0], h_end = t_end + c.mrope_section[1];
  auto rotate = [&](const std::vector<double>& x, int64_t heads, bool inverse) {
    std::vector<double> y(x.size());
    const int64_t half = c.hd / 2;
    for (int64_t row = 0; row < c.bsz * c.seq; ++row)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t j = 0; j < half; ++j) {
          const int64_t stream = j < t_end ? 0 : j < h_end ? 1 : 2;
          const size_t base = size_t((row * heads + h) * c.hd), cs = size_t((stream * c.bsz * c.seq + row) * c.hd + j);
          const double x1 = x[base + size_t(j)], x2 = x[base + size_t(j + half)], cv = hc[cs], sv = inverse ? -hs[cs] : hs[cs];
          y[base + size_t(j)] = x1 * cv - x2 * sv;
          y[base + size_t(j + half)] = x2 * cv + x1 * sv;
        }
    return y;
  };
  auto storage = [](const Tensor& t) { return liger::host(t.transpose(1, 2)); };
  return std::max({liger::rel_error(storage(oq), rotate(hq, c.n_qh, false)), liger::rel_error(storage(ok), rotate(hk, c.n_kh, false)),
                   liger::rel_error(storage(gq), rotate(hdq, c.n_qh, true)), liger::rel_error(storage(gk), rotate(hdk, c.n_kh, true))});
}

bool check(const tritium::Device& device) {
  // Heads and head_dim off the powers of two (6 q heads of 8, 3 kv heads of 4, hd 80 of 128),
  // grouped kv heads, uneven sections (Qwen2-VL's [16, 24, 24] for hd 128), f32 and bf16.
  const std::vector<Case> cases = {{2, 7, 6, 3, 80, {16, 12, 12}, DType::f32}, {3, 5, 4, 2, 64, {8, 12, 12}, DType::f32},
                                   {2, 9, 8, 2, 128, {16, 24, 24}, DType::bf16}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.seq * 31 + c.hd));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} bsz {} seq {} heads {}/{} hd {} sections {}/{}/{} {:.1e}", detail.empty() ? "(q, k, dq, dk: " : ", ",
                          tritium::dtype_name(c.dtype), c.bsz, c.seq, c.n_qh, c.n_kh, c.hd, c.mrope_section[0], c.mrope_section[1],
                          c.mrope_section[2], rel);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("qwen2vl_mrope", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_qwen2vl_mrope.py: the default model (llama_3_8b: 32 q heads, 8 kv heads, head_dim 128,
// bf16), mrope_section [16, 24, 24] (head_dim * 3 // 16 for height and width), batch 1, a sweep of
// sequence lengths. GB/s from the bytes moved (q and k read and written; cos and sin aside).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t nq = 32, nk = 8, hd = 128;
  const std::vector<int64_t> sections = {16, 24, 24};
  std::vector<int64_t> seqs = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192, 16384} : std::vector<int64_t>{128};
  std::vector<suite::Row> rows;
  for (int64_t S : seqs) {
    auto& gen = tritium::ops::default_generator();
    Tensor q = tritium::ops::randn({1, S, nq, hd}, gen, DType::f32, device).to(DType::bf16).transpose(1, 2);
    Tensor k = tritium::ops::randn({1, S, nk, hd}, gen, DType::f32, device).to(DType::bf16).transpose(1, 2);
    Tensor cos = tritium::ops::rand({3, 1, S, hd}, gen, DType::f32, device).to(DType::bf16);
    Tensor sin = tritium::ops::rand({3, 1, S, hd}, gen, DType::f32, device).to(DType::bf16);
    const double bytes = 2.0 * double(S) * double(nq + nk) * double(hd) * 2.0;
    const double fwd = tritium::do_bench([&] { qwen2vl_mrope_forward(q, k, cos, sin, sections); }, device).median_ms;
    rows.push_back({fmt::format("fwd S={} heads {}/{} hd {} bf16", S, nq, nk, hd), fwd, bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    const double bwd = tritium::do_bench([&] { qwen2vl_mrope_backward(q, k, cos, sin, sections); }, device).median_ms;
    rows.push_back({fmt::format("bwd S={} heads {}/{} hd {} bf16", S, nq, nk, hd), bwd, bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "qwen2vl_mrope",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/qwen2vl_mrope.py",
                                    .category = "elementwise",
                                    .check = check,
                                    .bench = bench});

}  // namespace
