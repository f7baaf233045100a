// fused_moe: vLLM's fused MoE grouped GEMM, ported from vllm-project/vllm
// vllm/model_executor/layers/fused_moe/fused_moe.py (commit 13cb3e44373beb1c8b9d2c017f565af6f7a1b601):
// fused_moe_kernel, its helper write_zeros_to_output, invoke_fused_moe_kernel (the wrapper that
// launches it) and get_default_config (the launch heuristic), with moe_align_block_size
// (vllm/model_executor/layers/fused_moe/moe_align_block_size.py, as of commit
// 05be99241939c8849bafef74932aed13f956c82f) done on the host.
//
// Each program computes a BLOCK_SIZE_M x BLOCK_SIZE_N tile of C [M, top_k, N] for BLOCK_SIZE_M
// (token, expert) pairs that go to one expert: sorted_token_ids lists the pairs grouped by expert,
// each expert's list padded to a multiple of BLOCK_SIZE_M with the invalid id M * top_k, and
// expert_ids names each block's expert (-1: not on this expert-parallel rank, the tile is zeros).
// A row of A is token id // top_k; B is the stacked expert weights [E, N, K]; the routing weight
// multiplies the row when MUL_ROUTED_WEIGHT. Quantised variants (trace-time branches, as in the
// original): fp8 / int8 w8a8 per tensor, per channel or per [group_n, group_k] block (scales
// applied inside the K loop), int8 weight-only (w8a16) per channel, and a per-expert bias.
//
// Deviations:
//  - Triton's early `return`s (a block past num_tokens_post_padded; an expert of -1 after writing
//    zeros) are run-time branches around the rest of the kernel (tl::if_): Tritium has no early
//    return, and the two spell the same control flow.
//  - compute_type (a tl.dtype constexpr) is an int meta-parameter holding the DType: Tritium's
//    meta-parameters are numbers.
//  - moe_align_block_size runs on the host in C++ (vLLM runs a CUDA op, or Triton kernels for
//    224+ experts); same outputs: ids grouped by expert in token order, padding id numel, expert
//    per block, num_tokens_post_pad; expert_map applied to expert_ids.
//  - Only fused_moe_kernel is ported: invoke_fused_moe_kernel's int4/int8 w*a16 path with group
//    quantisation (block_shape[1] > 0) goes to another kernel (fused_moe_kernel_gptq_awq) or a
//    CUDA op, and is refused here with a message.
//  - try_get_optimal_moe_config's tuned JSON tables (per-GPU data) are not ported: the default
//    config (get_default_config, ported) is used on every device, the CPU included.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "fused_moe_kernel.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using tl::_;
using tl::None;
using P = tl::ptr<tl::any>;

using tritium_ports::fused_moe::write_zeros_to_output;
using tritium_ports::fused_moe::fused_moe_kernel;

// ---- the host side ---------------------------------------------------------------------------

// A config as vLLM's dicts hold it: meta-parameters and launch options.
struct MoeConfig {
  int BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 32, GROUP_SIZE_M = 8, SPLIT_K = 1;
  int num_warps = 4, num_stages = 3;  // Triton's defaults when a config names none
};

// get_default_config(M, E, N, K, topk, dtype, block_shape) for the dtypes fused_moe_kernel runs
// (the int4/int8 w*a16 group-quantised branch belongs to the other kernel).
MoeConfig get_default_config(int64_t M, int64_t E, int64_t N, int64_t K, int64_t topk, const std::string& dtype,
                             const std::vector<int64_t>& block_shape) {
  (void)N, (void)K, (void)topk;
  MoeConfig config;
  if (dtype == "fp8_w8a8" && !block_shape.empty()) {
    // Block-wise quant: BLOCK_SIZE_N must be divisible by block_shape[0]
    // BLOCK_SIZE_K must be divisible by block_shape[1]
    // num_stages=3 can cause triton.runtime.errors.OutOfResources on ROCm, set it to 2 instead.
    config = {64, static_cast<int>(block_shape[0]), static_cast<int>(block_shape[1]), 32, 1, 4, 3};
  } else if (M <= E) {
    config = {16, 32, 64, 1, 1};
  } else {
    config = {64, 64, 32, 8, 1};
  }
  return config;
}

struct AlignedIds {
  Tensor sorted_token_ids, expert_ids, num_tokens_post_padded;  // int32, on the device
};

// moe_align_block_size(topk_ids, block_size, num_experts, expert_map), on the host.
AlignedIds moe_align_block_size(const std::vector<int32_t>& topk_ids, int64_t block_size, int64_t num_experts,
                                const std::vector<int32_t>& expert_map, const tritium::Device& device) {
  const int64_t numel = static_cast<int64_t>(topk_ids.size());
  const int64_t max_num_tokens_padded = numel + num_experts * (block_size - 1);
  const int64_t max_num_m_blocks = tritium::cdiv(max_num_tokens_padded, block_size);
  std::vector<int32_t> sorted_ids(size_t(max_num_tokens_padded), static_cast<int32_t>(numel));
  // Expert ids must be zeroed out to prevent index out of bounds error while mapping global expert
  // ids to local expert ids in expert parallelism.
  std::vector<int32_t> expert_ids(size_t(max_num_m_blocks), 0);
  std::vector<int64_t> count(size_t(num_experts), 0), cumsum(size_t(num_experts + 1), 0);
  for (int32_t e : topk_ids) {
    if (e < 0 || e >= num_experts) tritium::fail("moe_align_block_size: expert id {} is not in [0, {})", e, num_experts);
    ++count[size_t(e)];
  }
  for (int64_t e = 0; e < num_experts; ++e)
    cumsum[size_t(e + 1)] = cumsum[size_t(e)] + tritium::cdiv(count[size_t(e)], block_size) * block_size;
  for (int64_t e = 0; e < num_experts; ++e)
    for (int64_t i = cumsum[size_t(e)]; i < cumsum[size_t(e + 1)]; i += block_size)
      expert_ids[size_t(i / block_size)] = static_cast<int32_t>(e);
  std::vector<int64_t> next(cumsum.begin(), cumsum.end() - 1);
  for (int64_t i = 0; i < numel; ++i) sorted_ids[size_t(next[size_t(topk_ids[size_t(i)])]++)] = static_cast<int32_t>(i);
  if (!expert_map.empty())
    for (auto& e : expert_ids) e = expert_map[size_t(e)];
  const int32_t post_pad = static_cast<int32_t>(cumsum[size_t(num_experts)]);
  return {Tensor::from_vector(sorted_ids, {max_num_tokens_padded}, device),
          Tensor::from_vector(expert_ids, {max_num_m_blocks}, device), Tensor::from_vector(std::vector<int32_t>{post_pad}, {1}, device)};
}

// invoke_fused_moe_kernel(A, B, C, A_scale, B_scale, B_zp, topk_weights, sorted_token_ids,
// expert_ids, num_tokens_post_padded, mul_routed_weight, top_k, config, compute_type,
// use_fp8_w8a8, use_int8_w8a8, use_int8_w8a16, use_int4_w4a16, per_channel_quant, block_shape,
// B_bias). Undefined tensors are Python's None.
struct Quant {
  bool use_fp8_w8a8 = false, use_int8_w8a8 = false, use_int8_w8a16 = false, use_int4_w4a16 = false;
  bool per_channel_quant = false;
  std::vector<int64_t> block_shape;  // empty: None
};

void invoke_fused_moe_kernel(const Tensor& A, const Tensor& B, Tensor& C, const Tensor& A_scale, const Tensor& B_scale,
                             const Tensor& topk_weights, const AlignedIds& ids, bool mul_routed_weight, int top_k,
                             MoeConfig config, DType compute_type, const Quant& q, const Tensor& B_bias) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) tritium::fail("invoke_fused_moe_kernel: {}", what);
  };
  const auto& block_shape = q.block_shape;
  require(topk_weights.defined() || !mul_routed_weight, "mul_routed_weight needs topk_weights");
  require(!topk_weights.defined() || topk_weights.stride(1) == 1, "topk_weights must be contiguous along top_k");
  require(ids.sorted_token_ids.stride(0) == 1, "sorted_token_ids must be contiguous");
  require(A.dim() == 2 && B.dim() == 3 && C.dim() == 3, fmt::format("A {}, B {}, C {}: expected 2-D A, 3-D B and C", A.str(), B.str(), C.str()));
  if (q.use_fp8_w8a8 || q.use_int8_w8a8) {
    require(B_scale.defined(), "B_scale is required");
    require(block_shape.empty() || tritium::cdiv(B.size(-2), block_shape[0]) == B_scale.size(-2), "B_scale rows do not match block_shape");
    require(block_shape.empty() || tritium::cdiv(B.size(-1), block_shape[1]) == B_scale.size(-1), "B_scale columns do not match block_shape");
  } else if (q.use_int8_w8a16 || q.use_int4_w4a16) {
    require(B_scale.defined(), "B_scale is required");
    require(block_shape.empty() || block_shape[0] == 0, "block_shape[0] must be 0 for w*a16");
  } else {
    require(!A_scale.defined() && !B_scale.defined(), "scales are only for quantised weights");
  }
  require((!q.use_int8_w8a16 && !q.use_int4_w4a16) || block_shape.empty() || block_shape[1] <= 0,
          "group-quantised int4/int8 w*a16 runs fused_moe_kernel_gptq_awq, which is not ported");
  require(!q.use_int4_w4a16, "int4 w4a16 runs fused_moe_kernel_gptq_awq, which is not ported");

  const int64_t M = A.size(0);
  const int64_t num_tokens = M * top_k;

  int64_t EM = ids.sorted_token_ids.size(0);
  if (A.size(0) < config.BLOCK_SIZE_M) {
    // optimize for small batch_size. We assume that top_ids of each token is unique, so
    // num_valid_experts <= batch_size <= BLOCK_SIZE_M, and we can skip some invalid blocks.
    EM = std::min(ids.sorted_token_ids.size(0), A.size(0) * top_k * config.BLOCK_SIZE_M);
  }
  const int64_t grid = tritium::cdiv(EM, config.BLOCK_SIZE_M) * tritium::cdiv(B.size(1), config.BLOCK_SIZE_N);
  const bool HAS_BIAS = B_bias.defined();

  config.SPLIT_K = 1;
  int BLOCK_SIZE_K = config.BLOCK_SIZE_K;
  if (!block_shape.empty()) BLOCK_SIZE_K = static_cast<int>(std::min<int64_t>(BLOCK_SIZE_K, std::min(block_shape[0], block_shape[1])));

  // None pointers: an empty tensor of the parameter's dtype, never read (the branches that would
  // read it are not traced).
  auto opt = [&](const Tensor& t, DType d) { return t.defined() ? t : Tensor::empty({0}, d, A.device()); };
  auto stride_or_0 = [](const Tensor& t, bool cond, int d) { return static_cast<int32_t>(cond ? t.stride(d) : 0); };
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  if (grid == 0) return;
  fused_moe_kernel[{static_cast<int>(grid)}](
      A, B, C, opt(B_bias, compute_type), opt(A_scale, DType::f32), opt(B_scale, DType::f32),
      opt(topk_weights, DType::f32), ids.sorted_token_ids, ids.expert_ids, ids.num_tokens_post_padded,  //
      i32(B.size(1)), i32(B.size(2)), i32(EM), i32(num_tokens),                                         //
      i32(A.stride(0)), i32(A.stride(1)), i32(B.stride(0)), i32(B.stride(2)), i32(B.stride(1)),         //
      i32(C.stride(1)), i32(C.stride(2)),                                                               //
      stride_or_0(A_scale, A_scale.defined() && A_scale.dim() == 2, 0),
      stride_or_0(A_scale, A_scale.defined() && A_scale.dim() == 2, 1),
      stride_or_0(B_scale, B_scale.defined() && B_scale.dim() >= 2, 0),
      stride_or_0(B_scale, B_scale.defined() && B_scale.dim() == 3, 2),
      stride_or_0(B_scale, B_scale.defined() && B_scale.dim() >= 2, 1),  //
      stride_or_0(B_bias, HAS_BIAS, 0), stride_or_0(B_bias, HAS_BIAS, 1),
      block_shape.empty() ? 0 : static_cast<int>(block_shape[0]), block_shape.empty() ? 0 : static_cast<int>(block_shape[1]),
      Meta{{"BLOCK_SIZE_M", config.BLOCK_SIZE_M},
           {"BLOCK_SIZE_N", config.BLOCK_SIZE_N},
           {"BLOCK_SIZE_K", BLOCK_SIZE_K},
           {"GROUP_SIZE_M", config.GROUP_SIZE_M},
           {"SPLIT_K", config.SPLIT_K},
           {"MUL_ROUTED_WEIGHT", mul_routed_weight ? 1 : 0},
           {"top_k", top_k},
           {"compute_type", static_cast<int>(compute_type)},
           {"use_fp8_w8a8", q.use_fp8_w8a8 ? 1 : 0},
           {"use_int8_w8a8", q.use_int8_w8a8 ? 1 : 0},
           {"use_int8_w8a16", q.use_int8_w8a16 ? 1 : 0},
           {"per_channel_quant", q.per_channel_quant ? 1 : 0},
           {"HAS_BIAS", HAS_BIAS ? 1 : 0}},
      tritium::Options{.num_warps = config.num_warps, .num_stages = config.num_stages, .device = {}});
}

// ---- the check --------------------------------------------------------------------------------

std::vector<float> host(const Tensor& t) { return t.to(DType::f32).contiguous().to_vector<float>(); }

// top_k distinct experts per token, uniformly at random (fused_topk of random gating logits).
std::vector<int32_t> random_topk_ids(std::mt19937& rng, int64_t M, int64_t E, int64_t top_k) {
  std::vector<int32_t> ids(static_cast<size_t>(M * top_k)), perm(static_cast<size_t>(E));
  for (int64_t m = 0; m < M; ++m) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t j = 0; j < top_k; ++j) ids[size_t(m * top_k + j)] = perm[size_t(j)];
  }
  return ids;
}

struct Case {
  int64_t M, E, top_k, N, K;
  DType dtype;           // hidden states, output (compute_type)
  std::string quant;     // "", "fp8_w8a8" (block-wise), "int8_w8a16" (per channel)
  bool mul_routed_weight, expert_map, bias;
};

// The MoE layer's first GEMM (C = intermediate_cache1 [M, top_k, N]) against float64 from the
// values the kernel reads: C[m, j] = (A[m] . dequant(W[e]) (+ bias[e])) (* w[m, j]) for e =
// topk_ids[m, j], zeros where the expert map sends e to -1.
double check_case(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  std::uniform_real_distribution<float> u(0, 1);
  const int64_t M = c.M, E = c.E, N = c.N, K = c.K, top_k = c.top_k;
  const bool fp8 = c.quant == "fp8_w8a8", w8a16 = c.quant == "int8_w8a16";
  const std::vector<int64_t> block_shape = fp8 ? std::vector<int64_t>{64, 64} : std::vector<int64_t>{};
  const int64_t bn = fp8 ? block_shape[0] : 1, bk = fp8 ? block_shape[1] : 1;
  const int64_t n_tiles = tritium::cdiv(N, bn), k_tiles = tritium::cdiv(K, bk);

  std::vector<float> ha(static_cast<size_t>(M * K)), hw(static_cast<size_t>(E * N * K)), hbias(static_cast<size_t>(E * N)), hweights(static_cast<size_t>(M * top_k));
  for (auto& v : ha) v = fp8 ? (u(rng) - 0.5f) * 2 * 448.0f : normal(rng);
  for (auto& v : hw) v = fp8 ? (u(rng) - 0.5f) * 2 * 448.0f : w8a16 ? std::round((u(rng) - 0.5f) * 254) : normal(rng) / 8;
  for (auto& v : hbias) v = normal(rng);
  for (auto& v : hweights) v = u(rng);
  std::vector<int32_t> topk_ids = random_topk_ids(rng, M, E, top_k);
  std::vector<int32_t> expert_map;
  if (c.expert_map) {  // this rank holds the even experts, renumbered 0, 1, ...
    for (int64_t e = 0; e < E; ++e) expert_map.push_back(e % 2 == 0 ? static_cast<int32_t>(e / 2) : -1);
  }
  const int64_t local_E = c.expert_map ? (E + 1) / 2 : E;

  Tensor A = Tensor::from_vector(ha, {M, K}, device).to(fp8 ? DType::f8e4m3 : c.dtype);
  // The rank's weights: local experts only when mapped.
  std::vector<float> hw_local;
  for (int64_t e = 0; e < E; ++e)
    if (!c.expert_map || e % 2 == 0) hw_local.insert(hw_local.end(), hw.begin() + e * N * K, hw.begin() + (e + 1) * N * K);
  Tensor W = Tensor::from_vector(hw_local, {local_E, N, K}, device).to(fp8 ? DType::f8e4m3 : w8a16 ? DType::i8 : c.dtype);
  Tensor A_scale, B_scale, bias, weights = Tensor::from_vector(hweights, {M, top_k}, device);
  std::vector<float> has, hbs;
  if (fp8) {
    has.resize(static_cast<size_t>(M * k_tiles)), hbs.resize(static_cast<size_t>(local_E * n_tiles * k_tiles));
    for (auto& v : has) v = u(rng) * 1e-2f;
    for (auto& v : hbs) v = u(rng) * 1e-2f;
    A_scale = Tensor::from_vector(has, {M, k_tiles}, device);
    B_scale = Tensor::from_vector(hbs, {local_E, n_tiles, k_tiles}, device);
  } else if (w8a16) {
    hbs.resize(static_cast<size_t>(local_E * N));
    for (auto& v : hbs) v = u(rng) * 1e-2f;
    B_scale = Tensor::from_vector(hbs, {local_E, N}, device);
  }
  std::vector<float> hbias_local;
  if (c.bias) {
    for (int64_t e = 0; e < E; ++e)
      if (!c.expert_map || e % 2 == 0) hbias_local.insert(hbias_local.end(), hbias.begin() + e * N, hbias.begin() + (e + 1) * N);
    bias = Tensor::from_vector(hbias_local, {local_E, N}, device).to(c.dtype);
    hbias_local = host(bias);
  }
  ha = host(A), hw_local = host(W);

  Quant q;
  q.use_fp8_w8a8 = fp8, q.use_int8_w8a16 = w8a16, q.block_shape = block_shape;
  MoeConfig config = get_default_config(M, E, N, K, top_k, c.quant, block_shape);
  AlignedIds ids = moe_align_block_size(topk_ids, config.BLOCK_SIZE_M, E, expert_map, device);
  Tensor C = tritium::ops::full({M, top_k, N}, NAN, c.dtype, device);  // poisoned
  invoke_fused_moe_kernel(A, W, C, A_scale, B_scale, c.mul_routed_weight ? weights : Tensor(), ids, c.mul_routed_weight,
                          static_cast<int>(top_k), config, c.dtype, q, bias);
  std::vector<float> got = host(C);

  std::vector<double> ref(size_t(M * top_k * N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t j = 0; j < top_k; ++j) {
      const int64_t e = c.expert_map ? expert_map[size_t(topk_ids[size_t(m * top_k + j)])] : topk_ids[size_t(m * top_k + j)];
      if (e < 0) continue;  // zeros
      for (int64_t n = 0; n < N; ++n) {
        const float* w = &hw_local[size_t((e * N + n) * K)];
        const float* a = &ha[size_t(m * K)];
        double acc = 0;
        if (fp8) {
          for (int64_t kt = 0; kt < k_tiles; ++kt) {
            double part = 0;
            for (int64_t k = kt * bk; k < std::min(K, (kt + 1) * bk); ++k) part += double(a[k]) * w[k];
            acc += part * has[size_t(m * k_tiles + kt)] * hbs[size_t((e * n_tiles + n / bn) * k_tiles + kt)];
          }
        } else {
          for (int64_t k = 0; k < K; ++k) acc += double(a[k]) * w[k];
        }
        if (c.bias) acc += hbias_local[size_t(e * N + n)];
        if (c.mul_routed_weight) acc *= hweights[size_t(m * top_k + j)];
        if (w8a16) acc *= hbs[size_t(e * N + n)];
        ref[size_t((m * top_k + j) * N + n)] = acc;
      }
    }
  return suite::rel_error(got, ref);
}

bool check(const tritium::Device& device) {
  // Token counts above and below E (the two default configs; below BLOCK_SIZE_M the wrapper's
  // small-batch EM), N and K off every block, routing weights applied or not, an expert-parallel
  // map (odd experts elsewhere: their tiles are zeros), a per-expert bias, DeepSeek-style
  // block-wise fp8 (scales inside the K loop) and int8 weight-only.
  std::vector<Case> cases = {
      {37, 8, 2, 96, 80, DType::f16, "", false, false, false},
      {5, 8, 3, 72, 100, DType::bf16, "", true, true, true},
      {20, 4, 2, 136, 200, DType::bf16, "fp8_w8a8", true, false, false},
      {30, 6, 2, 70, 90, DType::f16, "int8_w8a16", false, false, false},
  };
  if (device.is_cuda())
    cases = {{700, 8, 2, 1000, 520, DType::f16, "", false, false, false},
             {5, 16, 4, 300, 260, DType::bf16, "", true, true, true},
             {300, 16, 4, 520, 700, DType::bf16, "fp8_w8a8", true, false, false},
             {200, 8, 2, 600, 300, DType::f16, "int8_w8a16", false, false, false}};
  bool ok = true;
  uint32_t seed = 200;
  for (const Case& c : cases) {
    double rel = check_case(device, c, ++seed);
    const double bound = c.quant == "fp8_w8a8" ? 5e-2 : c.dtype == DType::bf16 ? 1e-2 : 1e-3;
    ok = suite::report("fused_moe", device, rel, bound,
                       fmt::format("(M={} E={} top_k={} N={} K={} {}{}{}{}{})", c.M, c.E, c.top_k, c.N, c.K,
                                   tritium::dtype_name(c.dtype), c.quant.empty() ? "" : " " + c.quant,
                                   c.mul_routed_weight ? " routed-weight" : "", c.expert_map ? " expert-map" : "",
                                   c.bias ? " bias" : "")) &&
         ok;
  }
  return ok;
}

// ---- the benchmark ----------------------------------------------------------------------------

// vLLM's benchmarks/kernels/benchmark_moe.py times fused_moe for a model's experts (E, top_k,
// hidden, 2 * intermediate / tp) over batch sizes 1 ... 4096; here the first GEMM alone, random
// routing: its default model, Mixtral 8x7B at its default tp 2 (E 8, top_k 2, K 4096, N 14336,
// bf16), at 64 and 4096 tokens, and DeepSeek-V3's experts in block fp8 at tp 1 (E 256, top_k 8,
// K 7168, N 4096). Small shapes on the CPU.
std::vector<suite::Row> bench(const tritium::Device& device) {
  struct Shape {
    int64_t M, E, top_k, N, K;
    bool fp8;
  };
  std::vector<Shape> shapes = {{64, 8, 2, 14336, 4096, false}, {4096, 8, 2, 14336, 4096, false}, {256, 256, 8, 4096, 7168, true}};
  if (device.is_cpu()) shapes = {{64, 8, 2, 512, 256, false}, {64, 8, 2, 512, 256, true}};
  std::vector<suite::Row> rows;
  std::mt19937 rng(7);
  auto& gen = tritium::ops::default_generator();
  for (const Shape& s : shapes) {
    const std::vector<int64_t> block_shape = s.fp8 ? std::vector<int64_t>{128, 128} : std::vector<int64_t>{};
    Tensor A, W, A_scale, B_scale;
    if (s.fp8) {
      A = tritium::ops::mul(tritium::ops::randn({s.M, s.K}, gen, DType::f32, device), 50.0).to(DType::f8e4m3);
      W = tritium::ops::mul(tritium::ops::randn({s.E, s.N, s.K}, gen, DType::f32, device), 50.0).to(DType::f8e4m3);
      A_scale = tritium::ops::mul(tritium::ops::rand({s.M, tritium::cdiv(s.K, 128)}, gen, DType::f32, device), 1e-2);
      B_scale = tritium::ops::mul(
          tritium::ops::rand({s.E, tritium::cdiv(s.N, 128), tritium::cdiv(s.K, 128)}, gen, DType::f32, device), 1e-2);
    } else {
      A = tritium::ops::randn({s.M, s.K}, gen, DType::f32, device).to(DType::bf16);
      W = tritium::ops::mul(tritium::ops::randn({s.E, s.N, s.K}, gen, DType::f32, device), 0.05).to(DType::bf16);
    }
    Quant q;
    q.use_fp8_w8a8 = s.fp8, q.block_shape = block_shape;
    MoeConfig config = get_default_config(s.M, s.E, s.N, s.K, s.top_k, s.fp8 ? "fp8_w8a8" : "", block_shape);
    AlignedIds ids = moe_align_block_size(random_topk_ids(rng, s.M, s.E, s.top_k), config.BLOCK_SIZE_M, s.E, {}, device);
    Tensor C = Tensor::empty({s.M, s.top_k, s.N}, DType::bf16, device);
    double ms = tritium::do_bench(
                    [&] {
                      invoke_fused_moe_kernel(A, W, C, A_scale, B_scale, Tensor(), ids, false, static_cast<int>(s.top_k),
                                              config, DType::bf16, q, Tensor());
                    },
                    device)
                    .median_ms;
    double tflops = 2.0 * double(s.M * s.top_k) * double(s.N) * double(s.K) * 1e-12 / (ms * 1e-3);
    rows.push_back({fmt::format("M={} E={} top_k={} N={} K={} {}", s.M, s.E, s.top_k, s.N, s.K,
                                s.fp8 ? "fp8_w8a8 block=[128,128]" : "bf16"),
                    ms, tflops, "TFLOP/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "fused_moe",
                                    .source = "vllm-project/vllm vllm/model_executor/layers/fused_moe/fused_moe.py",
                                    .category = "dot",
                                    .check = check,
                                    .bench = bench});

}  // namespace
