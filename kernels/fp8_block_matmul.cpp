// fp8_block_matmul: the DeepSeek-V3 style block-scaled fp8 matmul, ported from vllm-project/vllm
// vllm/model_executor/layers/quantization/utils/fp8_utils.py (commit 007d50058a06dec0f82472d63c819244d460c40d):
// the kernel _w8a8_triton_block_scaled_mm (earlier _w8a8_block_fp8_matmul, adapted by vLLM from
// sgl-project/sglang PR 2575) and its wrapper w8a8_triton_block_scaled_mm.
//
// C = A @ B^T with A [M, K] fp8 e4m3 quantised per token and per group of group_k columns (As
// [M, cdiv(K, group_k)] f32) and B [N, K] fp8 e4m3 quantised per [group_n, group_k] block (Bs
// [cdiv(N, group_n), cdiv(K, group_k)] f32); each K step's fp8 dot is scaled by the A row's and
// the B column's scale for that K group inside the loop (BLOCK_SIZE_K divides group_k), and C is
// bf16, f16 or f32.
//
// Ported: the kernel line by line (grouped program order as written upstream - pid % group_size_m,
// a bijection within each group - the % M / % N wrapped offsets, the scale pointers, the output
// cast chosen by C's element type), and the wrapper's checks, grid and launch heuristic:
// get_w8a8_block_fp8_configs looks for a tuned JSON table per (N, K, device, block shape), else the
// default config {BLOCK_SIZE_M 64, BLOCK_SIZE_N block_n, BLOCK_SIZE_K block_k, GROUP_SIZE_M 32,
// num_warps 4, num_stages 2}. Deviations: no tuned tables are ported (they are per-GPU data, not
// code), so the default config is used on every device, the CPU included (the Python benchmark
// uses it too, so both sides run the same config).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using tl::_;
using tl::None;
using P = tl::ptr<tl::any>;

auto _w8a8_triton_block_scaled_mm = tritium::kernel(
    "_w8a8_triton_block_scaled_mm",
    [](  // Pointers to inputs and output
        tl::ptr<tritium::f8e4m3_t> A, tl::ptr<tritium::f8e4m3_t> B, P C, tl::ptr<float> As, tl::ptr<float> Bs,
        // Shape for matmul
        tl::i32 M, tl::i32 N, tl::i32 K,
        // Block size for block-wise quantization
        tl::i32 group_n, tl::i32 group_k,
        // Stride for inputs and output
        tl::i32 stride_am, tl::i32 stride_ak, tl::i32 stride_bk, tl::i32 stride_bn, tl::i32 stride_cm, tl::i32 stride_cn,
        tl::i32 stride_As_m, tl::i32 stride_As_k, tl::i32 stride_Bs_k, tl::i32 stride_Bs_n,
        // Meta-parameters
        int BLOCK_SIZE_M, int BLOCK_SIZE_N, int BLOCK_SIZE_K, int GROUP_SIZE_M) {
      // Triton-accelerated function used to perform linear operations (dot product) on input
      // tensors `A` and `B` with block-wise quantization, and store the result in output tensor `C`.
      auto pid = tl::program_id(0);
      auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
      auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
      auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;
      auto group_id = pid / num_pid_in_group;
      auto first_pid_m = group_id * GROUP_SIZE_M;
      auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
      auto pid_m = first_pid_m + (pid % group_size_m);
      auto pid_n = (pid % num_pid_in_group) / group_size_m;

      auto offs_am = (pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M)) % M;
      auto offs_bn = (pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N)) % N;
      auto offs_k = tl::arange(0, BLOCK_SIZE_K);
      auto a_ptrs = A + (offs_am(_, None) * stride_am + offs_k(None, _) * stride_ak);
      auto b_ptrs = B + (offs_k(_, None) * stride_bk + offs_bn(None, _) * stride_bn);

      auto As_ptrs = As + offs_am * stride_As_m;
      auto offs_bsn = offs_bn / group_n;
      auto Bs_ptrs = Bs + offs_bsn * stride_Bs_n;

      auto accumulator = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, tl::float32);
      for (auto k : tl::range(0, tl::cdiv(K, BLOCK_SIZE_K))) {
        auto a = tl::load(a_ptrs, offs_k(None, _) < K - k * BLOCK_SIZE_K, 0.0);
        auto b = tl::load(b_ptrs, offs_k(_, None) < K - k * BLOCK_SIZE_K, 0.0);

        auto k_start = k * BLOCK_SIZE_K;
        auto offs_ks = k_start / group_k;
        auto a_s = tl::load(As_ptrs + offs_ks * stride_As_k);
        auto b_s = tl::load(Bs_ptrs + offs_ks * stride_Bs_k);

        accumulator += tl::dot(a, b) * a_s(_, None) * b_s(None, _);
        a_ptrs += BLOCK_SIZE_K * stride_ak;
        b_ptrs += BLOCK_SIZE_K * stride_bk;
      }

      tl::tensor c;
      if (C.type().pointee == DType::bf16)
        c = accumulator.to(tl::bfloat16);
      else if (C.type().pointee == DType::f16)
        c = accumulator.to(tl::float16);
      else
        c = accumulator.to(tl::float32);

      auto offs_cm = pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
      auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
      auto c_ptrs = C + stride_cm * offs_cm(_, None) + stride_cn * offs_cn(None, _);
      auto c_mask = (offs_cm(_, None) < M) & (offs_cn(None, _) < N);
      tl::store(c_ptrs, c, c_mask);
    },
    {"A", "B", "C", "As", "Bs", "M", "N", "K", "group_n", "group_k", "stride_am", "stride_ak", "stride_bk", "stride_bn",
     "stride_cm", "stride_cn", "stride_As_m", "stride_As_k", "stride_Bs_k", "stride_Bs_n", "BLOCK_SIZE_M",
     "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M"});

bool g_poison = false;  // the check fills C with NaN before the launch

// w8a8_triton_block_scaled_mm(A, B, As, Bs, block_size, output_dtype): A [..., K] and As [..., K
// groups], B [N, K] and Bs [N groups, K groups]; C [..., N] of output_dtype.
Tensor w8a8_triton_block_scaled_mm(const Tensor& A, const Tensor& B, const Tensor& As, const Tensor& Bs,
                                   const std::vector<int64_t>& block_size, DType output_dtype = DType::f16) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) tritium::fail("w8a8_triton_block_scaled_mm: {}", what);
  };
  require(block_size.size() == 2, "block_size must have 2 entries");
  const int64_t block_n = block_size[0], block_k = block_size[1];
  require(A.dim() >= 1 && B.dim() == 2 && Bs.dim() == 2, fmt::format("A {} B {} Bs {}: B and Bs must be 2-D", A.str(), B.str(), Bs.str()));
  require(A.dtype() == DType::f8e4m3 && B.dtype() == DType::f8e4m3, "A and B must be float8_e4m3fn");
  require(As.dtype() == DType::f32 && Bs.dtype() == DType::f32, "the scales must be f32");
  require(A.size(-1) == B.size(-1), fmt::format("A {} and B {} differ in K", A.str(), B.str()));
  std::vector<int64_t> a_rows(A.shape().begin(), A.shape().end() - 1), as_rows(As.shape().begin(), As.shape().end() - 1);
  require(a_rows == as_rows && A.is_contiguous(), fmt::format("A {} must be contiguous with As {} of the same rows", A.str(), As.str()));
  require(tritium::cdiv(A.size(-1), block_k) == As.size(-1), fmt::format("As {} needs cdiv(K, {}) columns", As.str(), block_k));
  const int64_t M = A.numel() / A.size(-1);
  const int64_t N = B.size(0), K = B.size(1);
  require(tritium::cdiv(N, block_n) == Bs.size(0), fmt::format("Bs {} needs cdiv(N, {}) rows", Bs.str(), block_n));
  require(tritium::cdiv(K, block_k) == Bs.size(1), fmt::format("Bs {} needs cdiv(K, {}) columns", Bs.str(), block_k));
  require(output_dtype == DType::bf16 || output_dtype == DType::f16 || output_dtype == DType::f32,
          "output_dtype must be bf16, f16 or f32");

  std::vector<int64_t> c_shape = a_rows;
  c_shape.push_back(N);
  Tensor C = g_poison ? tritium::ops::full(c_shape, NAN, output_dtype, A.device()) : Tensor::empty(c_shape, output_dtype, A.device());
  if (M == 0 || N == 0) return C;
  // As seen by the kernel: A and As as 2-D [M, K] / [M, K groups] (A is contiguous).
  Tensor A2 = A.reshape({M, K}), As2 = As.reshape({M, As.size(-1)}), C2 = C.reshape({M, N});

  // get_w8a8_block_fp8_configs(N, K, block_n, block_k) finds no tuned table here: default config.
  // Block-wise quant: BLOCK_SIZE_N must be divisible by block_size[0], BLOCK_SIZE_K must be
  // divisible by block_size[1].
  const int BLOCK_SIZE_M = 64, BLOCK_SIZE_N = static_cast<int>(block_size[0]), BLOCK_SIZE_K = static_cast<int>(block_size[1]);
  const int GROUP_SIZE_M = 32, num_warps = 4, num_stages = 2;

  const int grid = static_cast<int>(tritium::cdiv(M, BLOCK_SIZE_M) * tritium::cdiv(N, BLOCK_SIZE_N));
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  _w8a8_triton_block_scaled_mm[{grid}](A2, B, C2, As2, Bs, i32(M), i32(N), i32(K), i32(block_n), i32(block_k),
                                       i32(A2.stride(-2)), i32(A2.stride(-1)), i32(B.stride(1)), i32(B.stride(0)),
                                       i32(C2.stride(-2)), i32(C2.stride(-1)), i32(As2.stride(-2)), i32(As2.stride(-1)),
                                       i32(Bs.stride(1)), i32(Bs.stride(0)), BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K,
                                       GROUP_SIZE_M,
                                       tritium::Options{.num_warps = num_warps, .num_stages = num_stages, .device = {}});
  return C;
}

std::vector<float> host(const Tensor& t) { return t.to(DType::f32).contiguous().to_vector<float>(); }

// Random fp8 inputs as vLLM's test_w8a8_block_fp8_matmul makes them: (rand - 0.5) * 2 * fp8_max
// rounded to e4m3, scales rand * 1e-2. The reference (vLLM's native_w8a8_block_matmul, in float64)
// dequantises the fp8 values the kernel reads with their block scales and multiplies.
double check_case(const tritium::Device& device, int64_t M, int64_t N, int64_t K, int64_t block_n, int64_t block_k,
                  DType out_dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  const float fp8_max = 448.0f, factor_for_scale = 1e-2f;
  const int64_t n_tiles = tritium::cdiv(N, block_n), k_tiles = tritium::cdiv(K, block_k);
  std::vector<float> ha(static_cast<size_t>(M * K)), hb(static_cast<size_t>(N * K)), has(static_cast<size_t>(M * k_tiles)), hbs(static_cast<size_t>(n_tiles * k_tiles));
  for (auto& v : ha) v = (u(rng) - 0.5f) * 2 * fp8_max;
  for (auto& v : hb) v = (u(rng) - 0.5f) * 2 * fp8_max;
  for (auto& v : has) v = u(rng) * factor_for_scale;
  for (auto& v : hbs) v = u(rng) * factor_for_scale;
  Tensor A = Tensor::from_vector(ha, {M, K}, device).to(DType::f8e4m3);
  Tensor B = Tensor::from_vector(hb, {N, K}, device).to(DType::f8e4m3);
  Tensor As = Tensor::from_vector(has, {M, k_tiles}, device);
  Tensor Bs = Tensor::from_vector(hbs, {n_tiles, k_tiles}, device);
  ha = host(A), hb = host(B);

  g_poison = true;
  Tensor C = w8a8_triton_block_scaled_mm(A, B, As, Bs, {block_n, block_k}, out_dtype);
  g_poison = false;
  std::vector<float> got = host(C);

  std::vector<double> ref(size_t(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t kt = 0; kt < k_tiles; ++kt) {
        double part = 0;
        for (int64_t k = kt * block_k; k < std::min(K, (kt + 1) * block_k); ++k)
          part += double(ha[size_t(i * K + k)]) * hb[size_t(j * K + k)];
        acc += part * has[size_t(i * k_tiles + kt)] * hbs[size_t((j / block_n) * k_tiles + kt)];
      }
      ref[size_t(i * N + j)] = acc;
    }
  return suite::rel_error(got, ref);
}

bool check(const tritium::Device& device) {
  // Sizes off the 64 x 128 x 128 tiles and off the 128 x 128 quantisation blocks (the last N and K
  // blocks are partial), each output dtype the kernel chooses between; DeepSeek's [128, 128]
  // blocks, and [64, 64] (BLOCK_SIZE_N/K follow block_size, as the default config says).
  struct Case {
    int64_t M, N, K, bn, bk;
    DType out;
  };
  std::vector<Case> cases = {{33, 300, 400, 128, 128, DType::bf16}, {70, 129, 200, 64, 64, DType::f16},
                             {5, 100, 130, 128, 128, DType::f32}};
  if (device.is_cuda())
    cases = {{1000, 1100, 999, 128, 128, DType::bf16}, {130, 700, 1500, 128, 128, DType::f16},
             {257, 300, 520, 64, 64, DType::f32}};
  double worst = 0;
  uint32_t seed = 100;
  for (const Case& c : cases) worst = std::max(worst, check_case(device, c.M, c.N, c.K, c.bn, c.bk, c.out, ++seed));
  return suite::report("fp8_block_matmul", device, worst, 5e-2, "(fp8 e4m3 inputs)");
}

// vLLM's benchmarks/kernels/bench_block_fp8_gemm.py: DeepSeek-V3 weight shapes (N, K), block
// [128, 128], bf16 output; a few of its batch sizes M. Small shapes on the CPU.
std::vector<suite::Row> bench(const tritium::Device& device) {
  struct Shape {
    int64_t M, N, K;
  };
  std::vector<Shape> shapes = {{128, 7168, 16384}, {4096, 7168, 2048}, {4096, 24576, 1536}, {4096, 4096, 7168}};
  if (device.is_cpu()) shapes = {{128, 512, 512}, {256, 1024, 1024}};
  const int64_t block_n = 128, block_k = 128;
  std::vector<suite::Row> rows;
  auto& gen = tritium::ops::default_generator();
  for (const Shape& s : shapes) {
    const double fp8_max = 448.0;
    auto fp8 = [&](int64_t r, int64_t c) {
      Tensor x = tritium::ops::mul(tritium::ops::sub(tritium::ops::rand({r, c}, gen, DType::f32, device), 0.5), 2 * fp8_max);
      return x.to(DType::f8e4m3);
    };
    Tensor A = fp8(s.M, s.K), B = fp8(s.N, s.K);
    Tensor As = tritium::ops::mul(tritium::ops::rand({s.M, tritium::cdiv(s.K, block_k)}, gen, DType::f32, device), 1e-2);
    Tensor Bs = tritium::ops::mul(
        tritium::ops::rand({tritium::cdiv(s.N, block_n), tritium::cdiv(s.K, block_k)}, gen, DType::f32, device), 1e-2);
    double ms = tritium::do_bench([&] { w8a8_triton_block_scaled_mm(A, B, As, Bs, {block_n, block_k}, DType::bf16); },
                                  device)
                    .median_ms;
    double tflops = 2.0 * double(s.M) * double(s.N) * double(s.K) * 1e-12 / (ms * 1e-3);
    rows.push_back({fmt::format("M={} N={} K={} block=[128,128] bf16", s.M, s.N, s.K), ms, tflops, "TFLOP/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "fp8_block_matmul",
                                    .source = "vllm-project/vllm vllm/model_executor/layers/quantization/utils/fp8_utils.py",
                                    .category = "dot",
                                    .check = check,
                                    .bench = bench});

}  // namespace
