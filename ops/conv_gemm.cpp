// The implicit-GEMM convolution kernels (ops/conv_gemm.h).
//
// Forward kernel: the output viewed as a GEMM [M = N*OH*OW, OCg] per group (program_id(2)),
// K = Cg*kh*kw. Each program computes a BLOCK_M x BLOCK_N tile; its K loop gathers the input
// tile of the taps it covers (im2col on the fly, the padding as load masks) and multiplies it with
// the weight tile by tl::dot. Two ways to walk K, both general:
//  - TAPS_OUTER: tap by tap, BLOCK_K channels at a time. The channel offsets are an arange, so
//    with channels-last strides a K tile is contiguous (16-byte loads, the tensor-core path on a
//    GPU); used when a group has enough channels to fill BLOCK_K (Cg >= 16).
//  - flat: K as one range of Cg*kh*kw, each element of a K tile decoded to (kh, kw, c), channel
//    fastest. Used for few channels per group (a first layer's 1 or 3 channels, depthwise's 1),
//    where a tap-by-tap walk would multiply mostly padding.
// TRANSPOSED switches the input index rule from conv's i = p*s - pad + k*d to the transposed
// convolution's p = i*s - pad + k*d (i = (p + pad - k*d) / s where that divides evenly), so the
// same kernel is conv2d's forward, its input gradient (a transposed convolution with the same
// weight) and conv_transpose2d's forward. The transposed form reads every tap for every output
// and masks the ones that do not divide: stride^2 more multiplies than needed for stride > 1.
//
// Weight-gradient kernel: the GEMM [OCg, Cg*kh*kw] per group with K = N*OH*OW (grad_out times the
// gathered input). K is long and M, N small, so K is split over program_id(2) (with the group) to
// fill the machine; the partial sums go to an f32 (f64) buffer [splits, O, Cg, kh, kw] that one
// reduction sums in split order: deterministic, no atomics.
#include "ops/conv_gemm.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>

#include "autotune/autotuner.h"
#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/thread_pool.h"

namespace tritium::ops::conv_detail {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;
using tl::_;
using tl::None;

// The input coordinate of output coordinate `o` for tap `k` along one axis (conv's rule), and
// whether it is inside the input.
struct Tap {
  tl::tensor index, valid;
};
Tap tap_index(const tl::tensor& o, const tl::tensor& k, const tl::tensor& stride, const tl::tensor& pad,
              const tl::tensor& dilation, const tl::tensor& size) {
  auto i = o * stride - pad + k * dilation;
  return {i, (i >= 0) & (i < size)};
}

// The forward kernel's transposed index i = (o + pad - k * dilation) / stride without a runtime
// division a row: unphased, the stride is 1 (a transposed launch with a stride is phased);
// phased, the phase's tap table lists only taps whose t the stride divides, so the quotient is
// exact, by magic numbers (`magic`, `shift`: divisor() of the stride; t < 0 is masked off).
Tap transposed_tap(const tl::tensor& o, const tl::tensor& k, const tl::tensor& pad, const tl::tensor& dilation,
                   const tl::tensor& size, bool phased, const tl::tensor& magic, const tl::tensor& shift) {
  auto t = o + pad - k * dilation;
  if (!phased) return {t, (t >= 0) & (t < size)};
  auto i = (tl::umulhi(t, magic) + t) >> shift;
  return {i, (t >= 0) & (i < size)};
}

}  // namespace

Kernel& forward_kernel() {
  static Kernel k = tritium::kernel(
      "conv2d_implicit_gemm",
      [](P x, P w, P bias, P y, P taps, tl::i32 M, tl::i32 IH, tl::i32 IW, tl::i32 OH, tl::i32 OW, tl::i32 CG, tl::i32 OCG,
         tl::i32 KH, tl::i32 KW, tl::i32 SH, tl::i32 SW, tl::i32 PH, tl::i32 PW, tl::i32 DH, tl::i32 DW, tl::i32 sxn,
         tl::i32 sxc, tl::i32 sxh, tl::i32 sxw, tl::i32 swg, tl::i32 swo, tl::i32 swc, tl::i32 swh, tl::i32 sww,
         tl::i32 syn, tl::i32 syc, tl::i32 syh, tl::i32 syw, tl::i32 DIV_SH, tl::i32 SHR_SH, tl::i32 DIV_SW,
         tl::i32 SHR_SW, tl::i32 DIV_CG, tl::i32 SHR_CG, int BLOCK_M, int BLOCK_N, int BLOCK_K, bool TRANSPOSED,
         bool TAPS_OUTER, bool PHASED, bool HAS_BIAS, int ACC, int TF32, int CG_BLOCKS, int TAPS_W) {
        const DType acc_t = static_cast<DType>(ACC);
        const char* precision = TF32 ? "tf32" : "ieee";
        auto m = tl::program_id(0) * BLOCK_M + tl::arange(0, BLOCK_M);
        // Taps along each axis: kh = k0h + step_h * j for j < count_h (every tap unless PHASED).
        tl::tensor g = tl::program_id(2), m_in = m < M, oh = m, ow = m, n = m;
        tl::tensor k0h = KH, step_h = KH, count_h = KH, k0w = KW, step_w = KW, count_w = KW, magic_w = KW, shift_w = KW;
        if (PHASED) {
          // Transposed with stride > 1: program_id(2) is (group, phase); a phase's outputs
          // (oh % SH, ow % SW) = (rh, rw) only meet the taps that the stride divides for them,
          // listed per phase residue in `taps` as (first, step, count, the count's divisor() magic
          // and shift), h residues then w.
          auto phase = tl::program_id(2) % (SH * SW);
          g = tl::program_id(2) / (SH * SW);
          auto rh = phase / SW, rw = phase % SW;
          auto rows = tl::cdiv(OH - rh, SH), cols = tl::cdiv(OW - rw, SW);
          auto batch = M / (OH * OW);
          m_in = m < batch * rows * cols;
          auto t = m / cols;
          ow = rw + (m % cols) * SW;
          oh = rh + (t % rows) * SH;
          n = t / rows;
          k0h = tl::load(taps + rh * 5), step_h = tl::load(taps + rh * 5 + 1), count_h = tl::load(taps + rh * 5 + 2);
          auto tw = taps + SH * 5 + rw * 5;
          k0w = tl::load(tw), step_w = tl::load(tw + 1), count_w = tl::load(tw + 2);
          magic_w = tl::load(tw + 3), shift_w = tl::load(tw + 4);
        } else {
          ow = m % OW;
          auto nh = m / OW;
          oh = nh % OH;
          n = nh / OH;
        }
        auto tap_h = [&](const tl::tensor& j) { return PHASED ? k0h + step_h * j : j; };
        auto tap_w = [&](const tl::tensor& j) { return PHASED ? k0w + step_w * j : j; };
        auto oc = tl::program_id(1) * BLOCK_N + tl::arange(0, BLOCK_N);
        auto oc_in = oc < OCG;
        // Loop-invariant parts of the addresses: the input's sample and group, the weight's group
        // and output channels.
        auto x_rows = x + g * CG * sxc + (n * sxn)(_, None);
        auto w_cols = w + g * swg + (oc * swo)(None, _);
        auto acc = tl::zeros({BLOCK_M, BLOCK_N}, acc_t);
        // A K index's (tap, channel) and a tap's (kh, kw) are divisions by counts the host knows,
        // compile-time where it can - CG_BLOCKS = ceil(CG / BLOCK_K) and, unphased, TAPS_W = KW -
        // else by magic numbers (CG's in DIV_CG / SHR_CG, a phase's tap count along w in its
        // table row): a multiply and shift where a runtime division is ~25 instructions (8 a
        // step with the pipeline's prefetch).
        const bool fixed_w = !PHASED && TAPS_W > 0;
        auto div = [&](const tl::tensor& v, int fixed, const tl::tensor& runtime) {
          return fixed > 0 ? v / fixed : v / runtime;
        };
        auto rem = [&](const tl::tensor& v, int fixed, const tl::tensor& runtime) {
          return fixed > 0 ? v % fixed : v % runtime;
        };
        // (j_h, j_w) of a tap index j_h * count_w + j_w.
        auto split_tap = [&](const tl::tensor& tap) -> std::pair<tl::tensor, tl::tensor> {
          if (PHASED) {
            auto row = (tl::umulhi(tap, magic_w) + tap) >> shift_w;
            return {row, tap - row * count_w};
          }
          return {div(tap, fixed_w ? TAPS_W : 0, count_w), rem(tap, fixed_w ? TAPS_W : 0, count_w)};
        };
        if (TAPS_OUTER) {
          const tl::tensor blocks = tl::cdiv(CG, BLOCK_K);
          const tl::tensor taps_h_w = fixed_w ? count_h * TAPS_W : count_h * count_w;
          auto ck = tl::arange(0, BLOCK_K);
          for (auto step : tl::range(0, CG_BLOCKS > 0 ? taps_h_w * CG_BLOCKS : taps_h_w * blocks)) {
            auto [jh, jw] = split_tap(div(step, CG_BLOCKS, blocks));
            auto kh = tap_h(jh), kw = tap_w(jw);
            auto c = rem(step, CG_BLOCKS, blocks) * BLOCK_K + ck;
            auto c_in = c < CG;
            Tap h = TRANSPOSED ? transposed_tap(oh, kh, PH, DH, IH, PHASED, DIV_SH, SHR_SH)
                               : tap_index(oh, kh, SH, PH, DH, IH);
            Tap v = TRANSPOSED ? transposed_tap(ow, kw, PW, DW, IW, PHASED, DIV_SW, SHR_SW)
                               : tap_index(ow, kw, SW, PW, DW, IW);
            auto a = tl::load(x_rows + (h.index * sxh + v.index * sxw)(_, None) + (c * sxc)(None, _),
                              (m_in & h.valid & v.valid)(_, None) & c_in(None, _), 0.0);
            auto b = tl::load(w_cols + (c * swc)(_, None) + (kh * swh + kw * sww), c_in(_, None) & oc_in(None, _), 0.0);
            acc = tl::dot(a, b, acc, std::nullopt, precision);
          }
        } else {
          auto K = CG * count_h * count_w;
          for (auto k0 : tl::range(0, K, BLOCK_K)) {
            auto kk = k0 + tl::arange(0, BLOCK_K);
            auto k_in = kk < K;
            auto tap = (tl::umulhi(kk, DIV_CG) + kk) >> SHR_CG;
            auto c = kk - tap * CG;
            auto [jh, jw] = split_tap(tap);
            auto kh = tap_h(jh), kw = tap_w(jw);
            Tap h = TRANSPOSED ? transposed_tap(oh(_, None), kh(None, _), PH, DH, IH, PHASED, DIV_SH, SHR_SH)
                               : tap_index(oh(_, None), kh(None, _), SH, PH, DH, IH);
            Tap v = TRANSPOSED ? transposed_tap(ow(_, None), kw(None, _), PW, DW, IW, PHASED, DIV_SW, SHR_SW)
                               : tap_index(ow(_, None), kw(None, _), SW, PW, DW, IW);
            auto a = tl::load(x_rows + h.index * sxh + v.index * sxw + (c * sxc)(None, _),
                              m_in(_, None) & k_in(None, _) & h.valid & v.valid, 0.0);
            auto b = tl::load(w_cols + (c * swc + kh * swh + kw * sww)(_, None), k_in(_, None) & oc_in(None, _), 0.0);
            acc = tl::dot(a, b, acc, std::nullopt, precision);
          }
        }
        auto channel = g * OCG + oc;
        if (HAS_BIAS) acc = acc + tl::load(bias + channel, oc_in, 0.0).to(acc_t)(None, _);
        auto y_ptrs = y + (n * syn + oh * syh + ow * syw)(_, None) + (channel * syc)(None, _);
        tl::store(y_ptrs, acc, m_in(_, None) & oc_in(None, _));
      },
      {"x",   "w",   "bias", "y", "taps",  "M",   "IH",  "IW",  "OH",  "OW",      "CG",      "OCG",     "KH",
       "KW",  "SH",  "SW",   "PH",  "PW",  "DH",  "DW",  "sxn", "sxc",     "sxh",     "sxw",     "swg",
       "swo", "swc", "swh",  "sww", "syn", "syc", "syh", "syw", "DIV_SH", "SHR_SH", "DIV_SW", "SHR_SW",
       "DIV_CG", "SHR_CG", "BLOCK_M", "BLOCK_N", "BLOCK_K", "TRANSPOSED",
       "TAPS_OUTER", "PHASED", "HAS_BIAS", "ACC", "TF32", "CG_BLOCKS", "TAPS_W"});
  return k;
}

Kernel& weight_grad_kernel() {
  static Kernel k = tritium::kernel(
      "conv2d_weight_grad",
      [](P gy, P x, P part, tl::i32 P_TOTAL, tl::i32 CHUNK, tl::i32 SPLITS, tl::i32 IH, tl::i32 IW, tl::i32 OH,
         tl::i32 OW, tl::i32 CG, tl::i32 OCG, tl::i32 KH, tl::i32 KW, tl::i32 SH, tl::i32 SW, tl::i32 PH, tl::i32 PW,
         tl::i32 DH, tl::i32 DW, tl::i32 sgn, tl::i32 sgc, tl::i32 sgh, tl::i32 sgw, tl::i32 sxn, tl::i32 sxc,
         tl::i32 sxh, tl::i32 sxw, tl::i32 spart, tl::i32 sgp, tl::i32 DIV_OW, tl::i32 SHR_OW, tl::i32 DIV_OH,
         tl::i32 SHR_OH, int BLOCK_M, int BLOCK_N, int BLOCK_K, bool TAP_COLUMNS, int TAPS, bool GY_PIXELS,
         bool FAST_DIVMOD, int ACC, int TF32) {
        const DType acc_t = static_cast<DType>(ACC);
        const char* precision = TF32 ? "tf32" : "ieee";
        auto g = tl::program_id(2) / SPLITS;
        auto split = tl::program_id(2) % SPLITS;
        auto o = tl::program_id(0) * BLOCK_M + tl::arange(0, BLOCK_M);
        auto o_in = o < OCG;
        // Columns: (kh, kw, c) with the channel fastest (contiguous in channels-last inputs).
        // TAP_COLUMNS (16 or more channels a group): a program's columns are channels of one tap
        // (program_id(1) = (tap, channel block)), so the gathered input's offsets and masks are
        // a row part plus a column part, not computed per element.
        tl::tensor col = tl::program_id(1) * BLOCK_N + tl::arange(0, BLOCK_N), c = col, kh = col, kw = col;
        tl::tensor col_in = col < CG * KH * KW;
        // TAPS > 1 (TAP_COLUMNS only): the columns are TAPS consecutive taps of BLOCK_N / TAPS
        // channels each (program_id(1) = (tap group, channel block)), so a layer of few channels
        // still gets a wide tile: its gradient tile is loaded once for TAPS taps, and the dot's
        // operand traffic per flop falls (64 output channels: 64 x 64 tiles load 1 byte per
        // 32 flops, 64 x 128 one per 43). The gathered offsets are then 2-D, but constant over
        // each tap's channel run (contiguous: 16-byte copies still).
        if (TAP_COLUMNS && TAPS > 1) {
          const int block_c = BLOCK_N / TAPS;
          auto blocks = tl::cdiv(CG, block_c);
          auto j = tl::arange(0, BLOCK_N);
          auto tap = (tl::program_id(1) / blocks) * TAPS + j / block_c;
          c = (tl::program_id(1) % blocks) * block_c + j % block_c;
          col_in = (c < CG) & (tap < KH * KW);
          kh = tap / KW, kw = tap % KW;
        } else if (TAP_COLUMNS) {
          auto blocks = tl::cdiv(CG, BLOCK_N);
          auto tap = tl::program_id(1) / blocks;
          c = (tl::program_id(1) % blocks) * BLOCK_N + tl::arange(0, BLOCK_N);
          col_in = c < CG;
          kh = tap / KW, kw = tap % KW;
        } else {
          c = col % CG;
          auto tap = col / CG;
          kh = tap / KW, kw = tap % KW;
        }
        auto gy_rows = gy + ((g * OCG + o) * sgc)(_, None);
        auto x_cols = x + ((g * CG + c) * sxc)(None, _);
        auto acc = tl::zeros({BLOCK_M, BLOCK_N}, acc_t);
        auto begin = split * CHUNK;
        auto end = tl::minimum(begin + CHUNK, P_TOTAL);
        for (auto p0 : tl::range(begin, end, BLOCK_K)) {
          auto p = p0 + tl::arange(0, BLOCK_K);
          auto p_in = p < end;
          // The pixel (n, r, q) of each K index. K is the pixels here, so this runs every step for
          // every row a thread copies: by magic numbers (umulhi, add, shift: a few instructions)
          // rather than a runtime division (~25 each, 4 a row: they outweighed the tensor cores).
          tl::tensor nh = p, q = p, r = p, n = p;
          if (FAST_DIVMOD) {
            nh = (tl::umulhi(p, DIV_OW) + p) >> SHR_OW;
            q = p - nh * OW;
            n = (tl::umulhi(nh, DIV_OH) + nh) >> SHR_OH;
            r = nh - n * OH;
          } else {
            q = p % OW, nh = p / OW, r = nh % OH, n = nh / OH;
          }
          // grad_output's pixels as one dim (channels-last): no pixel arithmetic for its tile.
          auto gy_offsets = GY_PIXELS ? p * sgp : n * sgn + r * sgh + q * sgw;
          auto a = tl::load(gy_rows + gy_offsets(None, _), o_in(_, None) & p_in(None, _), 0.0);
          tl::tensor b;
          if (TAP_COLUMNS && TAPS == 1) {
            Tap h = tap_index(r, kh, SH, PH, DH, IH);
            Tap v = tap_index(q, kw, SW, PW, DW, IW);
            b = tl::load(x_cols + (n * sxn + h.index * sxh + v.index * sxw)(_, None),
                         (p_in & h.valid & v.valid)(_, None) & col_in(None, _), 0.0);
          } else {
            Tap h = tap_index(r(_, None), kh(None, _), SH, PH, DH, IH);
            Tap v = tap_index(q(_, None), kw(None, _), SW, PW, DW, IW);
            b = tl::load(x_cols + (n * sxn)(_, None) + h.index * sxh + v.index * sxw,
                         p_in(_, None) & col_in(None, _) & h.valid & v.valid, 0.0);
          }
          acc = tl::dot(a, b, acc, std::nullopt, precision);
        }
        // part[split, g*OCg + o, c, kh, kw], contiguous.
        auto out = part + split * spart + ((g * OCG + o) * (CG * KH * KW))(_, None) + (c * KH * KW + kh * KW + kw)(None, _);
        tl::store(out, acc, o_in(_, None) & col_in(None, _));
      },
      {"gy",  "x",   "part", "P_TOTAL", "CHUNK",   "SPLITS",  "IH",      "IW",  "OH",  "OW",  "CG",  "OCG",
       "KH",  "KW",  "SH",   "SW",      "PH",      "PW",      "DH",      "DW",  "sgn", "sgc", "sgh", "sgw",
       "sxn", "sxc", "sxh",  "sxw",     "spart",   "sgp",     "DIV_OW",  "SHR_OW",  "DIV_OH",      "SHR_OH",
       "BLOCK_M", "BLOCK_N", "BLOCK_K", "TAP_COLUMNS", "TAPS", "GY_PIXELS", "FAST_DIVMOD", "ACC", "TF32"});
  return k;
}

namespace {

int pow2_at_least(int64_t v, int lo, int hi) {
  int p = lo;
  while (p < v && p < hi) p *= 2;
  return p;
}

int32_t i32(int64_t v) {
  if (v > INT32_MAX || v < INT32_MIN) fail("conv2d: a size or stride of {} is past 32-bit indexing", v);
  return static_cast<int32_t>(v);
}

DType acc_dtype(DType d) { return d == DType::f64 ? DType::f64 : DType::f32; }
// fp32 products in tf32 while set_conv_allow_tf32 allows it (PyTorch's cudnn.allow_tf32, on by
// default; the GPU's dot only: the CPU computes fp32).
int tf32_for(DType d) { return d == DType::f32 && get_conv_allow_tf32(); }

// GPU candidates (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages): Triton's matmul / conv tensor-core
// tiles, K steps of 32 and 64 (128 x 128 and 128 x 256 with 64-wide K steps in 3-4 stages: the
// bf16 tiles of wide layers such as ResNet-50's 1x1 128 -> 512); tiles wider than a problem's
// (power-of-two) size are pruned.
std::vector<Config> gpu_forward_configs() {
  struct C { int m, n, k, warps, stages; };
  const C list[] = {{128, 128, 64, 8, 3}, {128, 128, 32, 4, 4}, {128, 64, 64, 4, 3}, {128, 64, 32, 4, 4},
                    {64, 128, 32, 4, 4},  {64, 64, 64, 4, 3},   {64, 64, 32, 4, 4},  {256, 128, 32, 8, 3},
                    {128, 256, 32, 8, 3}, {128, 256, 64, 8, 3}, {128, 128, 64, 4, 4}, {64, 32, 32, 2, 5},
                    {32, 32, 32, 2, 4}};
  std::vector<Config> out;
  for (C c : list) out.emplace_back(Meta{{"BLOCK_M", c.m}, {"BLOCK_N", c.n}, {"BLOCK_K", c.k}}, c.warps, c.stages);
  return out;
}

std::vector<Config> fitting_forward_configs(const std::vector<Config>& configs, const ArgView& args) {
  auto cap = [](int64_t v) { return std::max(32, pow2_at_least(v, 16, 1 << 30)); };
  const int64_t n = args.integer("OCG"), cg = args.integer("CG");
  std::vector<Config> out;
  for (const Config& c : configs)
    if (c.meta["BLOCK_N"] <= cap(n) && c.meta["BLOCK_K"] <= cap(cg)) out.push_back(c);
  if (out.empty()) out.push_back(configs.back());
  return out;
}

// TRITIUM_AUTOTUNE=heuristic: of the fitting configs, the largest tile up to 128 x 128 (two 3-stage
// programs fit an SM, one's epilogue beside another's K loop, as matmul's) whose programs still
// fill every SM once, else the config with the most programs; list order breaks ties. `programs`
// counts a config's programs. One compile per shape instead of compiling and timing them all.
size_t pick_filling(const std::vector<Config>& configs, const ArgView& args, const char* tensor,
                    const std::function<int64_t(const Config&)>& programs) {
  const runtime::Tensor& t = args.tensor(tensor);
  const int64_t sms = t.device().is_cuda() ? runtime::cuda::properties(t.device().index).multiprocessor_count : 1;
  size_t best = configs.size(), most = 0;
  int64_t best_area = 0, most_programs = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    const int64_t area = int64_t{configs[i].meta["BLOCK_M"]} * configs[i].meta["BLOCK_N"], n = programs(configs[i]);
    if (area <= 128 * 128 && n >= sms && area > best_area) best = i, best_area = area;
    if (n > most_programs) most = i, most_programs = n;
  }
  return best < configs.size() ? best : most;
}

size_t forward_heuristic(const std::vector<Config>& configs, const ArgView& args) {
  const int64_t groups = args.tensor("x").size(1) / std::max<int64_t>(1, args.integer("CG"));
  const bool phased = args.integer("PHASED");
  const int64_t sh = args.integer("SH"), sw = args.integer("SW");
  // A phased launch's rows: each phase's outputs (N * ceil(OH / SH) * ceil(OW / SW)).
  const int64_t rows = phased ? args.integer("M") / (args.integer("OH") * args.integer("OW")) *
                                    cdiv(args.integer("OH"), sh) * cdiv(args.integer("OW"), sw)
                              : args.integer("M");
  const int64_t pages = groups * (phased ? sh * sw : 1);
  return pick_filling(configs, args, "x", [&](const Config& c) {
    return cdiv(rows, c.meta["BLOCK_M"]) * cdiv(args.integer("OCG"), c.meta["BLOCK_N"]) * pages;
  });
}

Autotuner& gpu_forward_tuner() {
  static Autotuner tuner = [] {
    AutotuneOptions o;
    o.key = {"M", "IH", "IW", "OH", "OW", "CG", "OCG", "KH", "KW", "SH", "SW", "sxc", "swc", "syc", "TF32"};
    o.prune_configs_by.early_config_prune = fitting_forward_configs;
    o.prune_configs_by.heuristic = forward_heuristic;
    // The channel blocks a tap walks, a compile-time count for the config's BLOCK_K.
    o.heuristics = {{"CG_BLOCKS", [](const ArgView& a) -> MetaValue {
                       return static_cast<int>(cdiv(a.integer("CG"), a.integer("BLOCK_K")));
                     }}};
    o.warmup_ms = 10, o.rep_ms = 40;
    return autotune(forward_kernel(), gpu_forward_configs(), o);
  }();
  return tuner;
}

// The weight-gradient kernel's TAP_COLUMNS: a program's columns are channels of one tap when a
// group has enough channels to fill a tile.
bool tap_columns_for(int64_t cg) { return cg >= 16; }

// Weight-gradient candidates (BLOCK_M over output channels, BLOCK_N over a tap's input
// channels, BLOCK_K over pixels). The gradient's tile is M-major (output channels contiguous,
// pixels strided), which the layout generator's wgmma path cannot take from shared memory (it
// reads A K-major only, so it gathers A one element at a time); with 2 warps the dot lowers to
// mma.sync instead, which reads M-major tiles with ldmatrix.trans behind 16-byte cp.async. Both
// kinds are candidates and the autotuner measures them.
// Column programs of the weight-gradient kernel: tap groups x channel blocks (TAP_COLUMNS), else
// blocks of the flat (kh, kw, c) range.
int64_t column_programs(bool tap_columns, int64_t cg, int64_t taps, int64_t block_n, int64_t tap_group) {
  return tap_columns ? cdiv(taps, tap_group) * cdiv(cg, block_n / tap_group) : cdiv(cg * taps, block_n);
}

// (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, TAPS): 4+ warps lower to wgmma (both operands
// MN-major from the cp.async ring: the gradient tile's output channels and the input tile's
// channels are contiguous), 2 warps to mma.sync (ldmatrix.trans); TAPS > 1 spans several taps of
// a few-channel layer with one wide tile (64 channels: 2 or 4 taps of 64; 32 channels: 4 of 32).
std::vector<Config> gpu_weight_grad_configs() {
  struct C { int m, n, k, warps, stages, taps; };
  const C list[] = {{64, 64, 32, 4, 3, 1},   {128, 64, 32, 4, 4, 1},  {64, 128, 32, 4, 4, 1}, {128, 128, 32, 8, 3, 1},
                    {128, 128, 64, 8, 3, 1}, {64, 128, 32, 4, 3, 2},  {64, 256, 32, 8, 3, 4}, {128, 128, 32, 8, 3, 2},
                    {64, 128, 64, 4, 3, 2},  {64, 128, 32, 4, 3, 4},  {128, 128, 32, 8, 3, 4}, {64, 64, 32, 2, 4, 1},
                    {64, 128, 32, 2, 4, 1},  {128, 64, 32, 2, 4, 1},  {64, 64, 64, 2, 3, 1},  {32, 64, 32, 2, 4, 1},
                    {32, 32, 32, 2, 4, 1}};
  std::vector<Config> out;
  for (C c : list)
    out.emplace_back(Meta{{"BLOCK_M", c.m}, {"BLOCK_N", c.n}, {"BLOCK_K", c.k}, {"TAPS", c.taps}}, c.warps, c.stages);
  return out;
}

// The K split is chosen before the tile (it sizes the partial-sum buffer), so a config's
// BLOCK_K must divide the split's length; tiles wider than the problem are pruned (a tap group's
// channel run against a group's channels, the group against the kernel's taps).
std::vector<Config> fitting_weight_grad_configs(const std::vector<Config>& configs, const ArgView& args) {
  auto cap = [](int64_t v) { return std::max(32, pow2_at_least(v, 16, 1 << 30)); };
  const int64_t ocg = args.integer("OCG"), cg = args.integer("CG"), chunk = args.integer("CHUNK");
  const int64_t taps = args.integer("KH") * args.integer("KW");
  const bool tap_columns = tap_columns_for(cg);
  const int64_t cols = tap_columns ? cg : cg * taps;
  std::vector<Config> out;
  for (const Config& c : configs) {
    const int64_t t = c.meta["TAPS"], run = c.meta["BLOCK_N"] / t;
    const bool columns_fit = t == 1 ? c.meta["BLOCK_N"] <= cap(cols) : tap_columns && t <= taps && run <= cap(cg);
    if (c.meta["BLOCK_M"] <= cap(ocg) && columns_fit && chunk % c.meta["BLOCK_K"] == 0) out.push_back(c);
  }
  if (out.empty()) out.push_back(configs.back());
  return out;
}

// The weight gradient's programs: output-channel tiles x column tiles x groups x K splits.
size_t weight_grad_heuristic(const std::vector<Config>& configs, const ArgView& args) {
  const int64_t cg = args.integer("CG"), taps = args.integer("KH") * args.integer("KW");
  const int64_t groups = args.tensor("x").size(1) / std::max<int64_t>(1, cg);
  const int64_t splits = args.integer("SPLITS");
  return pick_filling(configs, args, "x", [&](const Config& c) {
    const int64_t cols = column_programs(tap_columns_for(cg), cg, taps, c.meta["BLOCK_N"], c.meta["TAPS"]);
    return cdiv(args.integer("OCG"), c.meta["BLOCK_M"]) * cols * groups * splits;
  });
}

Autotuner& gpu_weight_grad_tuner() {
  static Autotuner tuner = [] {
    AutotuneOptions o;
    o.key = {"P_TOTAL", "CHUNK", "IH", "IW", "OH", "OW", "CG", "OCG", "KH", "KW", "SH", "SW", "sgc", "sxc", "TF32"};
    o.prune_configs_by.early_config_prune = fitting_weight_grad_configs;
    o.prune_configs_by.heuristic = weight_grad_heuristic;
    o.warmup_ms = 10, o.rep_ms = 40;
    return autotune(weight_grad_kernel(), gpu_weight_grad_configs(), o);
  }();
  return tuner;
}

// For each output residue r = p % stride along one axis, the taps k whose transposed index
// p + pad - k * dilation the stride divides: k = first + step * j, j < count (count 0: none).
// h residues then w residues, five int32 each: first, step, count and count's divisor() (magic,
// shift; of 1 for no taps), which the kernel divides a phase's tap index by.
Tensor phase_taps(const Conv2dGeometry& geo, int64_t kh, int64_t kw, Device device) {
  std::vector<int32_t> table;
  auto axis = [&](int64_t s, int64_t pad, int64_t d, int64_t k) {
    const int64_t step = s / std::gcd(s, d);
    for (int64_t r = 0; r < s; ++r) {
      int64_t first = -1;
      for (int64_t c = 0; c < step && c < k; ++c)
        if (((r + pad - c * d) % s + s) % s == 0) {
          first = c;
          break;
        }
      const int64_t count = first < 0 ? 0 : cdiv(k - first, step);
      const Divisor dc = divisor(std::max<int64_t>(count, 1));
      table.insert(table.end(), {static_cast<int32_t>(std::max<int64_t>(first, 0)), static_cast<int32_t>(step),
                                 static_cast<int32_t>(count), dc.magic, dc.shift});
    }
  };
  axis(geo.stride[0], geo.padding[0], geo.dilation[0], kh);
  axis(geo.stride[1], geo.padding[1], geo.dilation[1], kw);
  return Tensor::from_vector(table, {static_cast<int64_t>(table.size())}, device);
}

// ---- 1x1 weight gradients as matmuls ------------------------------------------------------
// A 1x1 convolution with stride 1, no padding and one group is a plain GEMM over the pixels
// (P = N*H*W one dim when the pixel dims of the operands merge: channels-last tensors, stride C),
// and its weight gradient is gy^T[O, P] @ x[P, C] - a Linear's weight gradient, which ops::matmul
// runs with TMA tiles for the M-major gy^T and a K split modelled by waves; cuDNN routes 1x1
// convolutions to its GEMMs too. The forward and the input gradient stay on the implicit GEMM
// (one tap: the same GEMM with 128-byte K rows; stop 39 measured its 1x1 forwards at 0.98 and
// 1.47 x cuDNN, the backward at a quarter).
bool pointwise(int64_t kh, int64_t kw, const Conv2dGeometry& geo) {
  return kh == 1 && kw == 1 && geo.groups == 1 && geo.stride[0] == 1 && geo.stride[1] == 1 && geo.padding[0] == 0 &&
         geo.padding[1] == 0;
}

// The stride of `t`'s pixel dims (n, h, w of a 4-D tensor) merged into one, when they merge.
std::optional<int64_t> pixel_stride(const Tensor& t) {
  std::optional<int64_t> row, outer;  // the merged dim's stride; the one the next outer dim needs
  for (int d : {3, 2, 0}) {
    if (t.size(d) == 1) continue;
    if (!row) row = t.stride(d);
    else if (t.stride(d) != *outer) return std::nullopt;
    outer = t.stride(d) * t.size(d);
  }
  return row.value_or(1);
}

// Whether ops::matmul multiplies `dtype` as the convolution would: fp32 on a GPU only when
// matmul's tf32 switch agrees with set_conv_allow_tf32 (both are PyTorch's, set apart).
bool matmul_precision_matches(DType dtype, Device device) {
  return dtype != DType::f32 || !device.is_cuda() || get_conv_allow_tf32() == (get_float32_matmul_precision() != "highest");
}

}  // namespace

Divisor divisor(int64_t d) {
  if (d < 1 || d >= (int64_t{1} << 31)) fail("conv2d: internal error: divisor {} out of range", d);
  int shift = 0;
  while ((int64_t{1} << shift) < d) ++shift;  // ceil(log2 d)
  // m = floor(2^32 (2^shift - d) / d) + 1 < 2^32; n / d = (umulhi(n, m) + n) >> shift for n < 2^30.
  const uint64_t ud = static_cast<uint64_t>(d);
  const uint64_t m = ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - ud)) / ud + 1;
  return {static_cast<int32_t>(static_cast<uint32_t>(m)), shift};
}

WeightStrides conv_weight_strides(const Tensor& w, int64_t out_per_group) {
  return {out_per_group * w.stride(0), w.stride(0), w.stride(1), w.stride(2), w.stride(3)};
}

WeightStrides transposed_weight_strides(const Tensor& w, int64_t in_per_group) {
  return {in_per_group * w.stride(0), w.stride(1), w.stride(0), w.stride(2), w.stride(3)};
}

void implicit_gemm(const Tensor& in, const Tensor& weight, const WeightStrides& ws_in, int64_t kh, int64_t kw,
                   const Tensor& bias, Tensor& out, const Conv2dGeometry& geo, bool transposed) {
  const int64_t N = out.size(0), OH = out.size(2), OW = out.size(3);
  const int64_t groups = geo.groups, cg = in.size(1) / groups, ocg = out.size(1) / groups;
  const int64_t M = N * OH * OW;
  if (M == 0 || ocg == 0) return;
  const WeightStrides& ws = ws_in;
  const DType acc = acc_dtype(in.dtype());
  const bool taps_outer = cg >= 16;
  const Tensor& bias_arg = bias.defined() ? bias : weight;
  if (cg == 0 || kh * kw == 0) {  // an empty sum: the output is the bias (or zeros)
    if (bias.defined()) {
      Tensor b = bias.reshape({1, bias.size(0), 1, 1}).expand(out.shape());
      copy_(out, b);
    } else {
      fill_(out, 0);
    }
    return;
  }
  // Transposed with a stride: one launch axis per output phase (docs in the kernel); the tap
  // table lists each phase residue's taps as (first, step, count, count's magic and shift).
  const bool phased = transposed && (geo.stride[0] > 1 || geo.stride[1] > 1);
  const int64_t phases = phased ? geo.stride[0] * geo.stride[1] : 1;
  const int64_t grid_m = phased ? N * cdiv(OH, geo.stride[0]) * cdiv(OW, geo.stride[1]) : M;
  Tensor taps = phased ? phase_taps(geo, kh, kw, in.device()) : weight;
  const Divisor div_h = divisor(geo.stride[0]), div_w = divisor(geo.stride[1]), div_c = divisor(cg);
  const int taps_w = phased ? 0 : static_cast<int>(kw);  // the K loop's taps along w, when fixed
  auto args = [&](auto&& launch) {
    launch(in, weight, bias_arg, out, taps, i32(M), i32(in.size(2)), i32(in.size(3)), i32(OH), i32(OW), i32(cg), i32(ocg),
           i32(kh), i32(kw), i32(geo.stride[0]), i32(geo.stride[1]), i32(geo.padding[0]), i32(geo.padding[1]),
           i32(geo.dilation[0]), i32(geo.dilation[1]), i32(in.stride(0)), i32(in.stride(1)), i32(in.stride(2)),
           i32(in.stride(3)), i32(ws.group), i32(ws.out_channel), i32(ws.in_channel), i32(ws.row), i32(ws.col),
           i32(out.stride(0)), i32(out.stride(1)), i32(out.stride(2)), i32(out.stride(3)), div_h.magic, div_h.shift,
           div_w.magic, div_w.shift, div_c.magic, div_c.shift);
  };
  if (in.device().is_cuda() && acc == DType::f32) {
    auto grid = [&](const Meta& meta) {
      return Grid(cdiv(grid_m, meta["BLOCK_M"]), cdiv(ocg, meta["BLOCK_N"]), groups * phases);
    };
    args([&](auto&&... a) {
      gpu_forward_tuner()[grid](a..., Meta{{"TRANSPOSED", transposed}, {"TAPS_OUTER", taps_outer}, {"PHASED", phased},
                                           {"HAS_BIAS", bias.defined()}, {"ACC", static_cast<int>(acc)},
                                           {"TF32", tf32_for(in.dtype())}, {"TAPS_W", taps_w}});
    });
    return;
  }
  // CPU (and f64 on a GPU): one heuristic tile per shape (LLVM compiles are too slow to try
  // several). The output-channel tile covers a group's channels up to 64; the row tile is
  // 128 (64 when that leaves too few programs for the threads).
  const int bn = pow2_at_least(ocg, 16, 64);
  const int bk = taps_outer ? pow2_at_least(cg, 16, 32) : pow2_at_least(cg * kh * kw, 16, 32);
  int bm = 128;
  const int64_t threads = in.device().is_cpu() ? runtime::ThreadPool::global().size() : 1;
  while (bm > 32 && cdiv(grid_m, bm) * cdiv(ocg, bn) * groups * phases < 2 * threads) bm /= 2;
  args([&](auto&&... a) {
    forward_kernel()[{cdiv(grid_m, bm), cdiv(ocg, bn), groups * phases}](
        a..., bm, bn, bk, transposed, taps_outer, phased, bias.defined(), static_cast<int>(acc), tf32_for(in.dtype()),
        static_cast<int>(cdiv(cg, bk)), taps_w, Options{.device = in.device()});
  });
}

Tensor weight_gradient(const Tensor& gy, const Tensor& x, int64_t kh, int64_t kw, const Conv2dGeometry& geo,
                       DType dtype) {
  const int64_t groups = geo.groups, cg = x.size(1) / groups, ocg = gy.size(1) / groups, O = gy.size(1);
  const int64_t p_total = gy.size(0) * gy.size(2) * gy.size(3);
  const DType acc = acc_dtype(x.dtype());
  const int64_t cols = cg * kh * kw;
  if (p_total == 0 || cols == 0 || O == 0) return zeros({O, cg, kh, kw}, dtype, x.device());
  if (pointwise(kh, kw, geo) && matmul_precision_matches(x.dtype(), x.device())) {
    const std::optional<int64_t> pg = pixel_stride(gy), px = pixel_stride(x);
    if (pg && px) {
      const Tensor a = gy.as_strided({O, p_total}, {gy.stride(1), *pg}, gy.storage_offset());
      const Tensor b = x.as_strided({p_total, cg}, {*px, x.stride(1)}, x.storage_offset());
      const Tensor gw = matmul(a, b).reshape({O, cg, 1, 1});
      return gw.dtype() == dtype ? gw : to_dtype(gw, dtype);
    }
  }
  const bool gpu = x.device().is_cuda();
  const bool tap_columns = tap_columns_for(cg);
  const bool tuned = gpu && acc == DType::f32;
  // The tile that sizes the K split: the tuned kernel's smallest common one on a GPU (the
  // autotuner then picks the tile), a heuristic tile elsewhere.
  const int bm = pow2_at_least(ocg, 16, 64), bn = pow2_at_least(tap_columns ? cg : cols, 16, 64);
  auto col_programs = [&](int64_t block_n, int64_t tap_group = 1) {
    return column_programs(tap_columns, cg, kh * kw, block_n, tap_group);
  };
  const int bk = gpu ? 64 : pow2_at_least(p_total, 16, 32);
  // Split K until there are enough programs: eight per thread on the CPU (few programs leave
  // threads idle at the end: 5 tiles on 2 threads wait for the fifth), two per SM on a GPU,
  // keeping each split at least 8 K tiles long. On a GPU the split's length is a multiple of 64,
  // which every candidate's BLOCK_K divides.
  const int64_t tiles = cdiv(ocg, bm) * col_programs(bn) * groups;
  const int64_t want = gpu ? 2 * int64_t(runtime::cuda::properties(x.device().index).multiprocessor_count)
                           : 8 * int64_t(runtime::ThreadPool::global().size());
  int64_t splits = std::clamp<int64_t>(cdiv(want, tiles), 1, std::max<int64_t>(1, p_total / (8 * bk)));
  const int64_t chunk = cdiv(cdiv(p_total, splits), bk) * bk;
  splits = cdiv(p_total, chunk);
  Tensor part = Tensor::empty({splits, O, cg, kh, kw}, acc, x.device());
  // Division of the pixel index by OW and OH through magic numbers while the index and its sum
  // with the product stay below 2^31 (K indices < 2^30); grad_output's pixels as one dim when
  // they merge.
  const bool fast_divmod = p_total + chunk < (int64_t{1} << 30);
  const Divisor div_w = divisor(gy.size(3)), div_h = divisor(gy.size(2));
  const std::optional<int64_t> gy_pixels = pixel_stride(gy);
  auto args = [&](auto&& launch) {
    launch(gy, x, part, i32(p_total), i32(chunk), i32(splits), i32(x.size(2)), i32(x.size(3)), i32(gy.size(2)),
           i32(gy.size(3)), i32(cg), i32(ocg), i32(kh), i32(kw), i32(geo.stride[0]), i32(geo.stride[1]),
           i32(geo.padding[0]), i32(geo.padding[1]), i32(geo.dilation[0]), i32(geo.dilation[1]), i32(gy.stride(0)),
           i32(gy.stride(1)), i32(gy.stride(2)), i32(gy.stride(3)), i32(x.stride(0)), i32(x.stride(1)),
           i32(x.stride(2)), i32(x.stride(3)), i32(O * cols), i32(gy_pixels.value_or(0)), div_w.magic, div_w.shift,
           div_h.magic, div_h.shift);
  };
  if (tuned) {
    auto grid = [&](const Meta& meta) {
      return Grid(cdiv(ocg, meta["BLOCK_M"]), col_programs(meta["BLOCK_N"], meta["TAPS"]), groups * splits);
    };
    args([&](auto&&... a) {
      gpu_weight_grad_tuner()[grid](a..., Meta{{"TAP_COLUMNS", tap_columns}, {"GY_PIXELS", gy_pixels.has_value()},
                                               {"FAST_DIVMOD", fast_divmod}, {"ACC", static_cast<int>(acc)},
                                               {"TF32", tf32_for(x.dtype())}});
    });
  } else {
    const int warps = gpu ? 4 : 1;
    args([&](auto&&... a) {
      weight_grad_kernel()[{cdiv(ocg, bm), col_programs(bn), groups * splits}](
          a..., bm, bn, gpu ? 32 : bk, tap_columns, 1, gy_pixels.has_value(), fast_divmod, static_cast<int>(acc), tf32_for(x.dtype()),
          Options{.num_warps = warps, .num_stages = 3, .device = x.device()});
    });
  }
  Tensor total = splits == 1 ? part.select(0, 0) : sum(part, {0});
  return total.dtype() == dtype ? total : to_dtype(total, dtype);
}

}  // namespace tritium::ops::conv_detail
