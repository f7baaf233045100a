// scaled_dot_product_attention (torch.nn.functional.scaled_dot_product_attention without dropout or
// an attention mask): tutorial 06's algorithm (Flash Attention v2 with an online softmax in base 2,
// a backward that recomputes P from the saved log-sum-exp) over any sequence lengths, query and key
// lengths apart, any head dim, f16 / bf16 / f32, strided inputs. Tiles come through block pointers
// whose bounds checks zero what lies past the sequence or the head dim; keys past the end and, when
// causal, keys after the query (PyTorch's top-left aligned lower triangle) get a score of -1e6, so a
// row whose keys are all masked in a block adds nothing (and no 0 * inf turns into NaN).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include "dsl/block_ptr.h"
#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/attention_tuning.h"
#include "ops/ops.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;

// The strides of a [B, H, N, D] tensor as i64 kernel arguments.
struct Strides4 {
  int64_t z, h, n, d;
};
Strides4 strides4(const Tensor& t) { return {t.stride(0), t.stride(1), t.stride(2), t.stride(3)}; }

// fp32 inputs: exact fp32 dots unless set_float32_matmul_precision allows tf32 (as torch.matmul).
int ieee_dots(DType d) { return d == DType::f32 && get_float32_matmul_precision() == "highest" ? 1 : 0; }

Kernel& fwd_kernel() {
  static Kernel k = tritium::kernel(
      "sdpa_fwd",
      [](P Q, P K, P V, P O, tl::ptr<float> LSE, tl::f32 sm_scale,  //
         tl::i64 sqz, tl::i64 sqh, tl::i64 sqn, tl::i64 sqd,  //
         tl::i64 skz, tl::i64 skh, tl::i64 skn, tl::i64 skd,  //
         tl::i64 svz, tl::i64 svh, tl::i64 svn, tl::i64 svd,  //
         tl::i64 soz, tl::i64 soh, tl::i64 son, tl::i64 sod,  //
         tl::i32 H, tl::i32 N_Q, tl::i32 N_KV, tl::i32 D,  //
         int BLOCK_M, int BLOCK_N, int BLOCK_D, int CAUSAL, int IEEE) {
        const DType dtype = Q.type().pointee;
        const char* precision = dtype == DType::f32 ? (IEEE ? "ieee" : "tf32") : nullptr;
        auto dot = [&](const tl::tensor& a, const tl::tensor& b, const tl::tensor& acc) {
          return precision ? tl::dot(a, b, acc, std::nullopt, precision) : tl::dot(a, b, acc);
        };
        auto start_m = tl::program_id(0);
        auto off_hz = tl::program_id(1);
        auto off_z = (off_hz / H).to(tl::int64), off_h = (off_hz % H).to(tl::int64);
        auto q_bp = tl::make_block_ptr(Q + off_z * sqz + off_h * sqh, {N_Q, D}, {sqn, sqd}, {start_m * BLOCK_M, 0},
                                       {BLOCK_M, BLOCK_D}, {1, 0});
        auto k_bp = tl::make_block_ptr(K + off_z * skz + off_h * skh, {D, N_KV}, {skd, skn}, {0, 0}, {BLOCK_D, BLOCK_N},
                                       {0, 1});  // K^T
        auto v_bp = tl::make_block_ptr(V + off_z * svz + off_h * svh, {N_KV, D}, {svn, svd}, {0, 0}, {BLOCK_N, BLOCK_D},
                                       {1, 0});
        auto offs_m = start_m * BLOCK_M + tl::arange(0, BLOCK_M);
        auto offs_n = tl::arange(0, BLOCK_N);
        auto m_i = tl::zeros({BLOCK_M}, tl::float32) - INFINITY;
        auto l_i = tl::zeros({BLOCK_M}, tl::float32) + 1.0;
        auto acc = tl::zeros({BLOCK_M, BLOCK_D}, tl::float32);
        tl::tensor qk_scale = sm_scale;
        qk_scale = qk_scale * 1.44269504;  // exp2 of x / ln 2 is exp of x
        auto q = tl::load(q_bp, {0, 1});
        tl::tensor hi = N_KV;
        if (CAUSAL) hi = tl::minimum((start_m + 1) * BLOCK_M, N_KV);
        for (auto start_n : tl::range(0, hi, BLOCK_N)) {
          auto k = tl::load(k_bp, {0, 1});
          auto qk = dot(q, k, tl::zeros({BLOCK_M, BLOCK_N}, tl::float32));
          auto n = start_n + offs_n;
          auto keep = n(tl::None, tl::_) < N_KV;
          if (CAUSAL) keep = keep && (offs_m(tl::_, tl::None) >= n(tl::None, tl::_));
          qk = qk * qk_scale + tl::where(keep, 0.0f, -1.0e6f);
          auto m_ij = tl::maximum(m_i, tl::max(qk, 1));
          qk -= m_ij(tl::_, tl::None);
          auto p = tl::exp2(qk);
          auto alpha = tl::exp2(m_i - m_ij);
          auto l_ij = tl::sum(p, 1);
          acc = acc * alpha(tl::_, tl::None);
          auto v = tl::load(v_bp, {0, 1});
          acc = dot(p.to(dtype), v, acc);
          l_i = l_i * alpha + l_ij;
          m_i = m_ij;
          k_bp = tl::advance(k_bp, {0, BLOCK_N});
          v_bp = tl::advance(v_bp, {BLOCK_N, 0});
        }
        m_i += tl::log2(l_i);
        acc = acc / l_i(tl::_, tl::None);
        tl::store(LSE + off_hz.to(tl::int64) * N_Q + offs_m, m_i, offs_m < N_Q);
        auto o_bp = tl::make_block_ptr(O + off_z * soz + off_h * soh, {N_Q, D}, {son, sod}, {start_m * BLOCK_M, 0},
                                       {BLOCK_M, BLOCK_D}, {1, 0});
        tl::store(o_bp, acc.to(dtype), {0, 1});
      },
      {"Q", "K", "V", "O", "LSE", "sm_scale", "sqz", "sqh", "sqn", "sqd", "skz", "skh", "skn", "skd", "svz", "svh",
       "svn", "svd", "soz", "soh", "son", "sod", "H", "N_Q", "N_KV", "D", "BLOCK_M", "BLOCK_N", "BLOCK_D", "CAUSAL",
       "IEEE"});
  return k;
}

// delta = rowsum(O * dO), the backward's correction term, per query row.
Kernel& delta_kernel() {
  static Kernel k = tritium::kernel(
      "sdpa_bwd_delta",
      [](P O, P DO, tl::ptr<float> Delta, tl::i64 soz, tl::i64 soh, tl::i64 son, tl::i64 sod, tl::i64 sgz, tl::i64 sgh,
         tl::i64 sgn, tl::i64 sgd, tl::i32 H, tl::i32 N_Q, tl::i32 D, int BLOCK_M, int BLOCK_D) {
        auto start_m = tl::program_id(0);
        auto off_hz = tl::program_id(1);
        auto off_z = (off_hz / H).to(tl::int64), off_h = (off_hz % H).to(tl::int64);
        auto o = tl::load(tl::make_block_ptr(O + off_z * soz + off_h * soh, {N_Q, D}, {son, sod}, {start_m * BLOCK_M, 0},
                                             {BLOCK_M, BLOCK_D}, {1, 0}),
                          {0, 1})
                     .to(tl::float32);
        auto g = tl::load(tl::make_block_ptr(DO + off_z * sgz + off_h * sgh, {N_Q, D}, {sgn, sgd},
                                             {start_m * BLOCK_M, 0}, {BLOCK_M, BLOCK_D}, {1, 0}),
                          {0, 1})
                     .to(tl::float32);
        auto offs_m = start_m * BLOCK_M + tl::arange(0, BLOCK_M);
        tl::store(Delta + off_hz.to(tl::int64) * N_Q + offs_m, tl::sum(o * g, 1), offs_m < N_Q);
      });
  return k;
}

// dK and dV for a block of keys: the queries that see them in blocks (tutorial 06's _attn_bwd_dkdv).
Kernel& dkdv_kernel() {
  static Kernel k = tritium::kernel(
      "sdpa_bwd_dkdv",
      [](P Q, P K, P V, P DO, P DK, P DV, tl::ptr<float> LSE, tl::ptr<float> Delta, tl::f32 sm_scale,  //
         tl::i64 sqz, tl::i64 sqh, tl::i64 sqn, tl::i64 sqd,  // q
         tl::i64 skz, tl::i64 skh, tl::i64 skn, tl::i64 skd,  // k
         tl::i64 svz, tl::i64 svh, tl::i64 svn, tl::i64 svd,  // v
         tl::i64 sgz, tl::i64 sgh, tl::i64 sgn, tl::i64 sgd,  // do
         tl::i64 sdkz, tl::i64 sdkh, tl::i64 sdkn, tl::i64 sdkd,  // dk
         tl::i64 sdvz, tl::i64 sdvh, tl::i64 sdvn, tl::i64 sdvd,  // dv
         tl::i32 H, tl::i32 N_Q, tl::i32 N_KV, tl::i32 D,  //
         int BLOCK_M, int BLOCK_N, int BLOCK_D, int CAUSAL, int IEEE) {
        const DType dtype = Q.type().pointee;
        const char* precision = dtype == DType::f32 ? (IEEE ? "ieee" : "tf32") : nullptr;
        auto dot = [&](const tl::tensor& a, const tl::tensor& b, const tl::tensor& acc) {
          return precision ? tl::dot(a, b, acc, std::nullopt, precision) : tl::dot(a, b, acc);
        };
        auto start_n = tl::program_id(0) * BLOCK_N;
        auto off_hz = tl::program_id(1);
        auto off_z = (off_hz / H).to(tl::int64), off_h = (off_hz % H).to(tl::int64);
        auto kbase = K + off_z * skz + off_h * skh, vbase = V + off_z * svz + off_h * svh;
        auto k = tl::load(tl::make_block_ptr(kbase, {N_KV, D}, {skn, skd}, {start_n, 0}, {BLOCK_N, BLOCK_D}, {1, 0}), {0, 1});
        auto v = tl::load(tl::make_block_ptr(vbase, {N_KV, D}, {svn, svd}, {start_n, 0}, {BLOCK_N, BLOCK_D}, {1, 0}), {0, 1});
        auto offs_n = start_n + tl::arange(0, BLOCK_N);
        auto dk = tl::zeros({BLOCK_N, BLOCK_D}, tl::float32);
        auto dv = tl::zeros({BLOCK_N, BLOCK_D}, tl::float32);
        tl::tensor qk_scale = sm_scale;
        qk_scale = qk_scale * 1.44269504;
        // Causal: only the queries at or after the first key of the block see it.
        tl::tensor lo = tl::full({}, 0, tl::int32);
        if (CAUSAL) lo = (start_n / BLOCK_M) * BLOCK_M;
        auto q_bp = tl::make_block_ptr(Q + off_z * sqz + off_h * sqh, {N_Q, D}, {sqn, sqd}, {lo, 0}, {BLOCK_M, BLOCK_D}, {1, 0});
        auto g_bp = tl::make_block_ptr(DO + off_z * sgz + off_h * sgh, {N_Q, D}, {sgn, sgd}, {lo, 0}, {BLOCK_M, BLOCK_D},
                                       {1, 0});
        auto row = off_hz.to(tl::int64) * N_Q;
        for (auto start_m : tl::range(lo, N_Q, BLOCK_M)) {
          auto q = tl::load(q_bp, {0, 1});
          auto offs_m = start_m + tl::arange(0, BLOCK_M);
          auto m = tl::load(LSE + row + offs_m, offs_m < N_Q, 0.0f);
          auto qkT = dot(k, tl::trans(q), tl::zeros({BLOCK_N, BLOCK_M}, tl::float32));
          auto pT = tl::exp2(qkT * qk_scale - m(tl::None, tl::_));
          auto keep = (offs_m(tl::None, tl::_) < N_Q) && (offs_n(tl::_, tl::None) < N_KV);
          if (CAUSAL) keep = keep && (offs_m(tl::None, tl::_) >= offs_n(tl::_, tl::None));
          pT = tl::where(keep, pT, 0.0f);
          auto g = tl::load(g_bp, {0, 1});
          dv = dot(pT.to(dtype), g, dv);
          auto Di = tl::load(Delta + row + offs_m, offs_m < N_Q, 0.0f);
          auto dpT = dot(v, tl::trans(g), tl::zeros({BLOCK_N, BLOCK_M}, tl::float32));
          auto dsT = pT * (dpT - Di(tl::None, tl::_));
          dk = dot(dsT.to(dtype), q, dk);
          q_bp = tl::advance(q_bp, {BLOCK_M, 0});
          g_bp = tl::advance(g_bp, {BLOCK_M, 0});
        }
        dk = dk * sm_scale;
        tl::store(tl::make_block_ptr(DK + off_z * sdkz + off_h * sdkh, {N_KV, D}, {sdkn, sdkd}, {start_n, 0},
                                     {BLOCK_N, BLOCK_D}, {1, 0}),
                  dk.to(dtype), {0, 1});
        tl::store(tl::make_block_ptr(DV + off_z * sdvz + off_h * sdvh, {N_KV, D}, {sdvn, sdvd}, {start_n, 0},
                                     {BLOCK_N, BLOCK_D}, {1, 0}),
                  dv.to(dtype), {0, 1});
      },
      {"Q", "K", "V", "DO", "DK", "DV", "LSE", "Delta", "sm_scale", "sqz", "sqh", "sqn", "sqd", "skz", "skh", "skn", "skd",
       "svz", "svh", "svn", "svd", "sgz", "sgh", "sgn", "sgd", "sdkz", "sdkh", "sdkn", "sdkd", "sdvz", "sdvh", "sdvn",
       "sdvd", "H", "N_Q", "N_KV", "D", "BLOCK_M", "BLOCK_N", "BLOCK_D",
       "CAUSAL", "IEEE"});
  return k;
}

// dQ for a block of queries: the keys they see in blocks (tutorial 06's _attn_bwd_dq).
Kernel& dq_kernel() {
  static Kernel k = tritium::kernel(
      "sdpa_bwd_dq",
      [](P Q, P K, P V, P DO, P DQ, tl::ptr<float> LSE, tl::ptr<float> Delta, tl::f32 sm_scale,  //
         tl::i64 sqz, tl::i64 sqh, tl::i64 sqn, tl::i64 sqd,  //
         tl::i64 skz, tl::i64 skh, tl::i64 skn, tl::i64 skd,  //
         tl::i64 svz, tl::i64 svh, tl::i64 svn, tl::i64 svd,  //
         tl::i64 sgz, tl::i64 sgh, tl::i64 sgn, tl::i64 sgd,  //
         tl::i64 sdqz, tl::i64 sdqh, tl::i64 sdqn, tl::i64 sdqd,  // dq
         tl::i32 H, tl::i32 N_Q, tl::i32 N_KV, tl::i32 D,  //
         int BLOCK_M, int BLOCK_N, int BLOCK_D, int CAUSAL, int IEEE) {
        const DType dtype = Q.type().pointee;
        const char* precision = dtype == DType::f32 ? (IEEE ? "ieee" : "tf32") : nullptr;
        auto dot = [&](const tl::tensor& a, const tl::tensor& b, const tl::tensor& acc) {
          return precision ? tl::dot(a, b, acc, std::nullopt, precision) : tl::dot(a, b, acc);
        };
        auto start_m = tl::program_id(0) * BLOCK_M;
        auto off_hz = tl::program_id(1);
        auto off_z = (off_hz / H).to(tl::int64), off_h = (off_hz % H).to(tl::int64);
        auto q = tl::load(tl::make_block_ptr(Q + off_z * sqz + off_h * sqh, {N_Q, D}, {sqn, sqd}, {start_m, 0},
                                             {BLOCK_M, BLOCK_D}, {1, 0}),
                          {0, 1});
        auto g = tl::load(tl::make_block_ptr(DO + off_z * sgz + off_h * sgh, {N_Q, D}, {sgn, sgd}, {start_m, 0},
                                             {BLOCK_M, BLOCK_D}, {1, 0}),
                          {0, 1});
        auto offs_m = start_m + tl::arange(0, BLOCK_M);
        auto row = off_hz.to(tl::int64) * N_Q;
        auto m = tl::load(LSE + row + offs_m, offs_m < N_Q, 0.0f);
        auto Di = tl::load(Delta + row + offs_m, offs_m < N_Q, 0.0f);
        auto dq = tl::zeros({BLOCK_M, BLOCK_D}, tl::float32);
        tl::tensor qk_scale = sm_scale;
        qk_scale = qk_scale * 1.44269504;
        tl::tensor hi = N_KV;
        if (CAUSAL) hi = tl::minimum(start_m + BLOCK_M, N_KV);
        auto k_bp = tl::make_block_ptr(K + off_z * skz + off_h * skh, {N_KV, D}, {skn, skd}, {0, 0}, {BLOCK_N, BLOCK_D},
                                       {1, 0});
        auto v_bp = tl::make_block_ptr(V + off_z * svz + off_h * svh, {N_KV, D}, {svn, svd}, {0, 0}, {BLOCK_N, BLOCK_D},
                                       {1, 0});
        auto offs_nb = tl::arange(0, BLOCK_N);
        for (auto start_n : tl::range(0, hi, BLOCK_N)) {
          auto k = tl::load(k_bp, {0, 1});
          auto v = tl::load(v_bp, {0, 1});
          auto qk = dot(q, tl::trans(k), tl::zeros({BLOCK_M, BLOCK_N}, tl::float32));
          auto p = tl::exp2(qk * qk_scale - m(tl::_, tl::None));
          auto n = start_n + offs_nb;
          auto keep = (n(tl::None, tl::_) < N_KV) && (offs_m(tl::_, tl::None) < N_Q);
          if (CAUSAL) keep = keep && (offs_m(tl::_, tl::None) >= n(tl::None, tl::_));
          p = tl::where(keep, p, 0.0f);
          auto dp = dot(g, tl::trans(v), tl::zeros({BLOCK_M, BLOCK_N}, tl::float32));
          auto ds = p * (dp - Di(tl::_, tl::None));
          dq = dot(ds.to(dtype), k, dq);
          k_bp = tl::advance(k_bp, {BLOCK_N, 0});
          v_bp = tl::advance(v_bp, {BLOCK_N, 0});
        }
        dq = dq * sm_scale;
        tl::store(tl::make_block_ptr(DQ + off_z * sdqz + off_h * sdqh, {N_Q, D}, {sdqn, sdqd}, {start_m, 0},
                                     {BLOCK_M, BLOCK_D}, {1, 0}),
                  dq.to(dtype), {0, 1});
      },
      {"Q", "K", "V", "DO", "DQ", "LSE", "Delta", "sm_scale", "sqz", "sqh", "sqn", "sqd", "skz", "skh", "skn", "skd",
       "svz", "svh", "svn", "svd", "sgz", "sgh", "sgn", "sgd", "sdqz", "sdqh", "sdqn", "sdqd", "H", "N_Q", "N_KV", "D",
       "BLOCK_M", "BLOCK_N", "BLOCK_D", "CAUSAL", "IEEE"});
  return k;
}

struct Blocks {
  int m, n, d, warps, stages;
};
// The CPU's tiles (32 x 32, the head dim padded to a power of two of at least 16), and the delta
// kernel's on the GPU (no dots, no pipeline).
Blocks blocks_for(const Tensor& q, int64_t n_q, int64_t d) {
  int bd = 16;
  while (bd < d) bd *= 2;
  if (q.device().is_cpu()) return {32, 32, bd, 4, 1};
  const bool big = n_q >= 1024 && bd <= 128;
  return {big ? 128 : 64, 64, bd, big ? 8 : 4, bd > 128 ? 2 : 3};
}

// GPU tiles (BLOCK_M queries x BLOCK_N keys, warps, stages) per kernel, autotuned per lengths, head
// dim, causality, dot precision and dtype. Shared memory grows with the element size (f32 tiles
// take twice bf16's) and the head dim: a candidate the code generator cannot fit in the device's
// shared memory fails to compile, and the autotuner skips it with its reason (one line on stderr),
// so any dtype and head dim up to 256 finds one that fits (the last candidates are small); only
// when none fits is it an error.
std::vector<Config> tile_configs(std::initializer_list<std::array<int, 4>> list) {
  std::vector<Config> out;
  for (const auto& [m, n, warps, stages] : list) out.emplace_back(Meta{{"BLOCK_M", m}, {"BLOCK_N", n}}, warps, stages);
  return out;
}

Autotuner& tuner_for(Kernel& k, std::vector<Config> configs) {
  AutotuneOptions o;
  o.key = {"N_Q", "N_KV", "D", "CAUSAL", "IEEE"};
  o.warmup_ms = 10, o.rep_ms = 40;  // an op's first call per shape waits for this
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Autotuner>> tuners;
  std::lock_guard lock(mutex);
  auto& t = tuners[k.name()];
  if (!t) t = std::make_unique<Autotuner>(autotune(k, std::move(configs), o));
  return *t;
}

}  // namespace

namespace detail {

const std::vector<Config>& attention_gpu_configs(const std::string& kernel_name) {
  static const std::map<std::string, std::vector<Config>> configs = {
      {"sdpa_fwd", tile_configs({{128, 64, 8, 3}, {128, 64, 8, 2}, {64, 64, 4, 3}, {128, 32, 4, 3}, {64, 32, 4, 2},
                                 {32, 32, 4, 2}})},
      {"sdpa_bwd_dkdv", tile_configs({{128, 64, 8, 3}, {64, 64, 4, 3}, {32, 128, 4, 3}, {64, 128, 8, 2}, {32, 64, 4, 2},
                                      {32, 32, 4, 2}})},
      {"sdpa_bwd_dq", tile_configs({{128, 64, 8, 3}, {64, 64, 4, 3}, {128, 32, 4, 3}, {64, 32, 4, 2}, {32, 32, 4, 2}})}};
  auto it = configs.find(kernel_name);
  if (it == configs.end()) fail("attention_gpu_configs: no kernel {}", kernel_name);
  return it->second;
}

Kernel& attention_kernel(const std::string& kernel_name) {
  if (kernel_name == "sdpa_fwd") return fwd_kernel();
  if (kernel_name == "sdpa_bwd_dkdv") return dkdv_kernel();
  if (kernel_name == "sdpa_bwd_dq") return dq_kernel();
  fail("attention_kernel: no kernel {}", kernel_name);
}

}  // namespace detail

namespace {

// Launches `k` over [cdiv(rows, BLOCK_M or BLOCK_N), B * H]: with the CPU's fixed tiles, or
// autotuned on a GPU. `args` are the kernel's arguments up to D; BLOCK_D, CAUSAL and IEEE follow.
template <class... A>
void launch_tiled(const char* name, const Tensor& q, int64_t rows, const char* row_block, int64_t BH, const Blocks& b,
                  int causal, int ieee, const A&... args) {
  Kernel& k = detail::attention_kernel(name);
  if (q.device().is_cpu()) {
    const int64_t block = std::string(row_block) == "BLOCK_M" ? b.m : b.n;
    k[{cdiv(rows, block), BH}](args..., b.m, b.n, b.d, causal, ieee,
                                Options{.num_warps = b.warps, .num_stages = b.stages, .device = {}});
    return;
  }
  Autotuner& t = tuner_for(k, detail::attention_gpu_configs(name));
  const std::string rb = row_block;
  t[GridSpec([rows, rb, BH](const Meta& m) { return Grid(cdiv(rows, m[rb]), BH); })](
      args..., Meta{{"BLOCK_D", b.d}, {"CAUSAL", causal}, {"IEEE", ieee}});
}

// A new dense tensor of t's shape and dtype whose dims lie in memory in t's order (outermost =
// largest stride; ties keep the dim order), as PyTorch's empty_like keeps a permuted layout. For a
// head view of a projection ([B, T, H, D] transposed to [B, H, T, D]) that is [B, T, H, D] memory.
Tensor empty_in_dim_order_of(const Tensor& t) {
  const int r = t.dim();
  std::array<int, 4> order{};
  for (int i = 0; i < r; ++i) order[static_cast<size_t>(i)] = i;
  std::stable_sort(order.begin(), order.begin() + r, [&](int a, int b) { return t.stride(a) > t.stride(b); });
  Shape strides(static_cast<size_t>(r));
  int64_t step = 1;
  for (int i = r - 1; i >= 0; --i) {
    const int d = order[static_cast<size_t>(i)];
    strides[static_cast<size_t>(d)] = step;
    step *= std::max<int64_t>(t.size(d), 1);
  }
  return Tensor::empty({t.numel()}, t.dtype(), t.device()).as_strided(t.shape(), strides, 0);
}

void check_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4)
    fail("{}: expects [batch, heads, length, head dim] tensors, got q {}, k {}, v {}", op, q.str(), k.str(), v.str());
  if (q.dtype() != k.dtype() || q.dtype() != v.dtype())
    fail("{}: q, k and v must have one dtype, got {}, {}, {}", op, dtype_name(q.dtype()), dtype_name(k.dtype()),
         dtype_name(v.dtype()));
  if (q.dtype() != DType::f16 && q.dtype() != DType::bf16 && q.dtype() != DType::f32)
    fail("{}: supports f16, bf16 and f32, got {}", op, dtype_name(q.dtype()));
  if (q.device() != k.device() || q.device() != v.device())
    fail("{}: q, k and v must be on one device, got {}, {}, {}", op, q.device().str(), k.device().str(), v.device().str());
  if (q.size(0) != k.size(0) || q.size(0) != v.size(0) || q.size(1) != k.size(1) || q.size(1) != v.size(1))
    fail("{}: q, k and v must have the same batch and heads, got {}, {}, {}", op, q.str(), k.str(), v.str());
  if (k.size(2) != v.size(2)) fail("{}: k and v must have the same length, got {} and {}", op, k.str(), v.str());
  if (q.size(3) != k.size(3) || q.size(3) != v.size(3))
    fail("{}: q, k and v must have one head dim, got {}, {}, {}", op, q.size(3), k.size(3), v.size(3));
  if (q.size(3) > 256) fail("{}: head dims up to 256 are supported, got {}", op, q.size(3));
  if (k.size(2) == 0 && q.size(2) > 0) fail("{}: {} queries and no keys", op, q.size(2));
  for (const Tensor* t : {&q, &k, &v})
    if (t->numel() > INT32_MAX) fail("{}: {} has more than 2^31 elements", op, t->str());
}

}  // namespace

double default_attention_scale(int64_t head_dim) { return 1.0 / std::sqrt(static_cast<double>(head_dim)); }

AttentionResult scaled_dot_product_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal,
                                                     std::optional<double> scale) {
  const char* op = "scaled_dot_product_attention";
  check_inputs(op, q, k, v);
  const int64_t B = q.size(0), H = q.size(1), NQ = q.size(2), NK = k.size(2), D = q.size(3);
  const float sm = static_cast<float>(scale.value_or(default_attention_scale(D)));
  // The output in q's dimension order (PyTorch's flash attention writes [B, N, H, D] too): for head
  // views of a [B, N, H D] projection, the caller's transpose + reshape back to [B, N, H D] is a view.
  AttentionResult r{empty_in_dim_order_of(q), Tensor::empty({B, H, NQ}, DType::f32, q.device())};
  if (B * H * NQ == 0) return r;
  const Blocks b = blocks_for(q, NQ, D);
  auto [qz, qh, qn, qd] = strides4(q);
  auto [kz, kh, kn, kd] = strides4(k);
  auto [vz, vh, vn, vd] = strides4(v);
  auto [oz, oh, on, od] = strides4(r.out);
  auto i32 = [](int64_t x) { return static_cast<int32_t>(x); };
  launch_tiled("sdpa_fwd", q, NQ, "BLOCK_M", B * H, b, is_causal ? 1 : 0, ieee_dots(q.dtype()), q, k, v, r.out, r.lse, sm,
               qz, qh, qn, qd, kz, kh, kn, kd, vz, vh, vn, vd, oz, oh, on, od, i32(H), i32(NQ), i32(NK), i32(D));
  return r;
}

AttentionGrads scaled_dot_product_attention_backward(const Tensor& grad_in, const Tensor& q, const Tensor& k,
                                                     const Tensor& v, const Tensor& out, const Tensor& lse,
                                                     bool is_causal, std::optional<double> scale) {
  const char* op = "scaled_dot_product_attention backward";
  check_inputs(op, q, k, v);
  if (grad_in.shape() != q.shape())
    fail("{}: the gradient must have the output's shape {}, got {}", op, q.str(), grad_in.str());
  const Tensor g = grad_in.to(q.dtype());
  const int64_t B = q.size(0), H = q.size(1), NQ = q.size(2), NK = k.size(2), D = q.size(3);
  const float sm = static_cast<float>(scale.value_or(default_attention_scale(D)));
  AttentionGrads r{empty_in_dim_order_of(q), empty_in_dim_order_of(k), empty_in_dim_order_of(v)};
  if (B * H == 0) return r;
  if (NQ == 0) {  // no query reads any key: zero gradients for k and v
    return {r.dq, zeros(k.shape(), k.dtype(), k.device()), zeros(v.shape(), v.dtype(), v.device())};
  }
  const Blocks b = blocks_for(q, NQ, D);
  const int ieee = ieee_dots(q.dtype());
  // The kernels read q, k and v through their strides and write dq, dk and dv through theirs, so
  // no input is copied; the gradients are laid out in their inputs' dimension order, which is
  // what makes the backward of the caller's transpose + reshape (heads split from [B, T, C]) a view.
  auto [qz, qh, qn, qd] = strides4(q);
  auto [kz, kh, kn, kd] = strides4(k);
  auto [vz, vh, vn, vd] = strides4(v);
  auto [oz, oh, on, od] = strides4(out);
  auto [gz, gh, gn, gd] = strides4(g);
  auto [dqz, dqh, dqn, dqd] = strides4(r.dq);
  auto [dkz, dkh, dkn, dkd] = strides4(r.dk);
  auto [dvz, dvh, dvn, dvd] = strides4(r.dv);
  auto i32 = [](int64_t x) { return static_cast<int32_t>(x); };
  const Options opts{.num_warps = b.warps, .num_stages = b.stages, .device = {}};
  Tensor delta = Tensor::empty({B, H, NQ}, DType::f32, q.device());
  delta_kernel()[{cdiv(NQ, b.m), B * H}](out, g, delta, oz, oh, on, od, gz, gh, gn, gd, i32(H), i32(NQ), i32(D), b.m, b.d,
                                         opts);
  const int causal = is_causal ? 1 : 0;
  launch_tiled("sdpa_bwd_dkdv", q, NK, "BLOCK_N", B * H, b, causal, ieee, q, k, v, g, r.dk, r.dv, lse, delta, sm, qz, qh,
               qn, qd, kz, kh, kn, kd, vz, vh, vn, vd, gz, gh, gn, gd, dkz, dkh, dkn, dkd, dvz, dvh, dvn, dvd, i32(H),
               i32(NQ), i32(NK), i32(D));
  launch_tiled("sdpa_bwd_dq", q, NQ, "BLOCK_M", B * H, b, causal, ieee, q, k, v, g, r.dq, lse, delta, sm, qz, qh, qn, qd,
               kz, kh, kn, kd, vz, vh, vn, vd, gz, gh, gn, gd, dqz, dqh, dqn, dqd, i32(H), i32(NQ), i32(NK), i32(D));
  return r;
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal,
                                    std::optional<double> scale) {
  return scaled_dot_product_attention_forward(q, k, v, is_causal, scale).out;
}

}  // namespace tritium::ops
