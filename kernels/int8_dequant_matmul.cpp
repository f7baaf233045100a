// int8_dequant_matmul: bitsandbytes' SwitchBack int8 matmul with row-wise dequantisation in the
// epilogue, ported from bitsandbytes-foundation/bitsandbytes
// bitsandbytes/triton/int8_matmul_rowwise_dequantize.py (commit 5754411e6f6ca1d57c887ca66b6be64ef7058883),
// which is "based on triton.ops.matmul, modified to support rowwise quantized input and
// columnwise quantized weight". C = (A_i8 @ B_i8) * state_x[:, None] * state_w[None, :] / 127^2
// (+ bias), A [M, K] int8 quantised row by row (state_x: each row's absmax), B [K, N] int8 the
// transposed weight quantised per output column (state_w), C f16.
//
// Ported: the kernel (grouped program order, the hints on the wrapped row/column offsets, split-K
// over program_id(1), the EVEN_K heuristic, the int32 dot accumulator and the dequantising
// epilogue), the wrapper (divfactor, the contiguity rule, the shape check, the grid) and the
// autotuner: the one config the original leaves uncommented, key (M, N, K), and the EVEN_K
// heuristic. Deviations:
//  - ACC_TYPE (a dtype constexpr the kernel never reads: its use is commented out) is not a
//    parameter: Tritium's meta-parameters are numbers.
//  - prune_configs_by (matmul_perf_model's early_config_prune / estimate_matmul_time, top_k 10)
//    is not ported: with the single config Triton never calls it (one config is not tuned).
//  - The bias load is masked with rn < N. The original reads bias[rn] unmasked, up to
//    BLOCK_N - 1 elements past the end of bias for the last column tile (only columns that the
//    store masks off use them); a GPU tolerates that read, a CPU can fault on it.
//  - On the CPU the config list is the tutorial-03 style CPU list (a program is one core's work;
//    num_warps / num_stages mean nothing there); on CUDA it is the original's.
//  - has_bias is an int meta-parameter (0/1), as Triton's constexpr is.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autotune/autotuner.h"
#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::Config;
using tritium::DType;
using tritium::f16_t;
using tritium::Meta;
using tritium::Tensor;
using tl::_;
using tl::None;

// The original's @triton.autotune list: one config for compute-bound matmuls is left uncommented
// (the others, and get_configs_io_bound(), are commented out upstream).
std::vector<Config> get_cuda_configs() {
  return {Config(Meta{{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 32}, {"SPLIT_K", 1}}, /*num_warps=*/4, /*num_stages=*/4)};
}

// The CPU backend: one core runs a program, so the tiles are smaller.
std::vector<Config> get_cpu_configs() {
  return {Config(Meta{{"BLOCK_M", 32}, {"BLOCK_N", 64}, {"BLOCK_K", 32}, {"SPLIT_K", 1}}, 4, 1)};
}

auto _int8_matmul_rowwise_dequantize = tritium::kernel(
    "_int8_matmul_rowwise_dequantize",
    [](tl::ptr<int8_t> A, tl::ptr<int8_t> B, tl::ptr<f16_t> C, tl::ptr<f16_t> bias, tl::ptr<f16_t> state_x_ptr,
       tl::ptr<f16_t> state_w_ptr, tl::i32 M, tl::i32 N, tl::i32 K, tl::f32 divfactor, int has_bias,
       tl::i32 stride_am, tl::i32 stride_ak, tl::i32 stride_bk, tl::i32 stride_bn, tl::i32 stride_cm,
       tl::i32 stride_cn, int BLOCK_M, int BLOCK_N, int BLOCK_K, int GROUP_M, int SPLIT_K, int EVEN_K) {
      // matrix multiplication
      auto pid = tl::program_id(0);
      auto pid_z = tl::program_id(1);
      auto grid_m = tl::cdiv(M, BLOCK_M);
      auto grid_n = tl::cdiv(N, BLOCK_N);
      // re-order program ID for better L2 performance
      auto width = GROUP_M * grid_n;
      auto group_id = pid / width;
      auto group_size = tl::minimum(grid_m - group_id * GROUP_M, GROUP_M);
      auto pid_m = group_id * GROUP_M + (pid % group_size);
      auto pid_n = (pid % width) / group_size;
      // do matrix multiplication
      auto rm = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
      auto rn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
      auto ram = tl::max_contiguous(tl::multiple_of(rm % M, BLOCK_M), BLOCK_M);
      auto rbn = tl::max_contiguous(tl::multiple_of(rn % N, BLOCK_N), BLOCK_N);
      auto rk = pid_z * BLOCK_K + tl::arange(0, BLOCK_K);
      // pointers
      A = A + (ram(_, None) * stride_am + rk(None, _) * stride_ak);
      B = B + (rk(_, None) * stride_bk + rbn(None, _) * stride_bn);

      // rematerialize rm and rn to save registers
      rm = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
      rn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);

      auto w_factor = tl::load(state_w_ptr + rbn)(None, _);
      auto x_factor = tl::load(state_x_ptr + ram)(_, None);

      // acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
      auto acc = tl::zeros({BLOCK_M, BLOCK_N}, tl::int32);
      for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K * SPLIT_K))) {
        tl::tensor a, b;
        if (EVEN_K) {
          a = tl::load(A);
          b = tl::load(B);
        } else {
          auto k_remaining = K - k * (BLOCK_K * SPLIT_K);
          a = tl::load(A, rk(None, _) < k_remaining, 0.0);
          b = tl::load(B, rk(_, None) < k_remaining, 0.0);
        }
        acc += tl::dot(a, b);
        A += BLOCK_K * SPLIT_K * stride_ak;
        B += BLOCK_K * SPLIT_K * stride_bk;
      }

      auto out = w_factor * (x_factor * (acc * divfactor));  // int32 * f32 scalar: f32, as in Triton
      out = out.to(tl::float16);                              // C.dtype.element_ty

      if (has_bias) {
        auto b = tl::load(bias + rn, rn < N).to(tl::float16);  // masked: see the header
        out = out + b(None, _);
      }

      C = C + (rm(_, None) * stride_cm + rn(None, _) * stride_cn);
      auto mask = (rm < M)(_, None) & (rn < N)(None, _);
      // handles write-back with reduction-splitting
      if (SPLIT_K == 1)
        tl::store(C, out, mask);
      else
        tl::atomic_add(C, out, mask);
    },
    {"A", "B", "C", "bias", "state_x_ptr", "state_w_ptr", "M", "N", "K", "divfactor", "has_bias", "stride_am",
     "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn", "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M",
     "SPLIT_K", "EVEN_K"});

// @triton.autotune(configs, key=["M", "N", "K"]) over @triton.heuristics(EVEN_K). One tuner per
// backend, since the config lists differ.
tritium::Autotuner& tuner(const tritium::Device& device) {
  auto make = [](const tritium::Device& d) {
    tritium::AutotuneOptions options;
    options.key = {"M", "N", "K"};
    options.heuristics = {{"EVEN_K", [](const tritium::ArgView& args) -> tritium::MetaValue {
                             return args.integer("K") % (args.integer("BLOCK_K") * args.integer("SPLIT_K")) == 0 ? 1 : 0;
                           }}};
    return tritium::autotune(_int8_matmul_rowwise_dequantize, d.is_cuda() ? get_cuda_configs() : get_cpu_configs(),
                             options);
  };
  if (device.is_cpu()) {
    static tritium::Autotuner cpu = make(tritium::Device::cpu());
    return cpu;
  }
  static tritium::Autotuner cuda = make(tritium::Device::cuda());
  return cuda;
}

bool g_poison = false;  // the check fills C with NaN before the launch

// int8_matmul_rowwise_dequantize(a, b, state_x, state_w, bias): bias may be undefined (None).
Tensor int8_matmul_rowwise_dequantize(Tensor a, Tensor b, const Tensor& state_x, const Tensor& state_w,
                                      const Tensor& bias) {
  const float divfactor = 1.0f / (127.0f * 127.0f);
  const int has_bias = bias.defined() ? 1 : 0;
  if (a.dim() != 2 || b.dim() != 2) tritium::fail("int8_matmul_rowwise_dequantize: expects 2-D a and b, got {} and {}", a.str(), b.str());
  if (a.dtype() != DType::i8 || b.dtype() != DType::i8)
    tritium::fail("int8_matmul_rowwise_dequantize: a and b must be int8, got {} and {}", a.str(), b.str());
  for (const Tensor* s : {&state_x, &state_w})
    if (s->dtype() != DType::f16 || s->dim() != 1)
      tritium::fail("int8_matmul_rowwise_dequantize: the states must be 1-D f16, got {}", s->str());
  // handle non-contiguous inputs if necessary
  if (a.stride(0) > 1 && a.stride(1) > 1) a = a.contiguous();
  if (b.stride(0) > 1 && b.stride(1) > 1) b = b.contiguous();
  // checks constraints
  if (a.size(1) != b.size(0)) tritium::fail("int8_matmul_rowwise_dequantize: incompatible dimensions {} and {}", a.str(), b.str());
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  if (state_x.size(0) != M || state_w.size(0) != N || (has_bias && (bias.dim() != 1 || bias.size(0) != N)))
    tritium::fail("int8_matmul_rowwise_dequantize: state_x {} must have M = {} rows, state_w {} and bias N = {}",
                  state_x.str(), M, state_w.str(), N);
  // allocates output
  Tensor c = g_poison ? tritium::ops::full({M, N}, NAN, DType::f16, a.device()) : Tensor::empty({M, N}, DType::f16, a.device());
  if (M == 0 || N == 0) return c;
  auto grid = [M, N](const Meta& META) {
    return tritium::Grid(tritium::cdiv(M, META["BLOCK_M"]) * tritium::cdiv(N, META["BLOCK_N"]), META["SPLIT_K"]);
  };
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  // bias None: any f16 pointer, the kernel never reads it (has_bias = 0)
  const Tensor& bias_arg = has_bias ? bias : state_w;
  tuner(a.device())[grid](a, b, c, bias_arg, state_x, state_w, i32(M), i32(N), i32(K), divfactor, has_bias,
                          i32(a.stride(0)), i32(a.stride(1)), i32(b.stride(0)), i32(b.stride(1)), i32(c.stride(0)),
                          i32(c.stride(1)), Meta{{"GROUP_M", 8}});
  return c;
}

std::vector<float> host(const Tensor& t) { return t.to(DType::f32).contiguous().to_vector<float>(); }

// One case: x_int8 [M, K] and w_int8 [N, K] random in [-127, 127], b = w_int8.t() (a strided view,
// as SwitchBack passes it), positive absmax states, bias or not. The reference is float64 from
// the same int8 values and the f16 states; the kernel's errors are the f32 epilogue and two f16
// roundings (before and after the bias), about 2^-11.
double check_case(const tritium::Device& device, int64_t M, int64_t N, int64_t K, bool with_bias, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> q(-127, 127);
  std::uniform_real_distribution<float> scale(0.5f, 4.0f), normal(-1.0f, 1.0f);
  std::vector<int8_t> hx(static_cast<size_t>(M * K)), hw(static_cast<size_t>(N * K));
  for (auto& v : hx) v = static_cast<int8_t>(q(rng));
  for (auto& v : hw) v = static_cast<int8_t>(q(rng));
  std::vector<float> hsx(static_cast<size_t>(M)), hsw(static_cast<size_t>(N)), hbias(static_cast<size_t>(N));
  for (auto& v : hsx) v = scale(rng);
  for (auto& v : hsw) v = scale(rng);
  for (auto& v : hbias) v = normal(rng);
  Tensor x = Tensor::from_vector(hx, {M, K}, device);
  Tensor w = Tensor::from_vector(hw, {N, K}, device);
  Tensor sx = Tensor::from_vector(hsx, {M}, device).to(DType::f16);
  Tensor sw = Tensor::from_vector(hsw, {N}, device).to(DType::f16);
  Tensor bias = with_bias ? Tensor::from_vector(hbias, {N}, device).to(DType::f16) : Tensor();
  hsx = host(sx), hsw = host(sw);
  if (with_bias) hbias = host(bias);

  g_poison = true;
  Tensor c = int8_matmul_rowwise_dequantize(x, w.t(), sx, sw, bias);
  g_poison = false;
  std::vector<float> got = host(c);

  std::vector<double> ref(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t dot = 0;
      for (int64_t k = 0; k < K; ++k) dot += int64_t(hx[size_t(i * K + k)]) * hw[size_t(j * K + k)];
      double r = double(hsw[size_t(j)]) * double(hsx[size_t(i)]) * double(dot) / (127.0 * 127.0);
      if (with_bias) r += hbias[size_t(j)];
      ref[size_t(i * N + j)] = r;
    }
  return suite::rel_error(got, ref);
}

bool check(const tritium::Device& device) {
  struct Case {
    int64_t M, N, K;
    bool bias;
  };
  // Sizes off every block (the last row and column tiles wrap and are masked; K off BLOCK_K takes
  // the masked EVEN_K = 0 loop); K a multiple of BLOCK_K (EVEN_K = 1, unmasked loads); larger
  // problems on a GPU.
  const bool cuda = device.is_cuda();
  std::vector<Case> cases = {{77, 150, 300, true}, {40, 97, 256, false}};
  if (cuda) cases = {{1000, 1100, 999, true}, {300, 4100, 1024, false}};
  double worst = 0;
  uint32_t seed = 0;
  for (const Case& c : cases) worst = std::max(worst, check_case(device, c.M, c.N, c.K, c.bias, ++seed));
  return suite::report("int8_dequant_matmul", device, worst, 1e-3, "(f16 output)");
}

// SwitchBack's speed_benchmark.py, rowwise_fwd: x_int8 [batch, dim] @ w_int8.t() [dim, 4 dim]
// with batch 256 * 32 (its smallest "batch_size * embed_dim"), dim 1024, 2048, 4096; small ones
// on the CPU.
std::vector<suite::Row> bench(const tritium::Device& device) {
  struct Shape {
    int64_t M, N, K;
  };
  std::vector<Shape> shapes = {{8192, 4096, 1024}, {8192, 8192, 2048}, {8192, 16384, 4096}};
  if (device.is_cpu()) shapes = {{256, 1024, 256}, {512, 2048, 512}};
  std::vector<suite::Row> rows;
  for (const Shape& s : shapes) {
    auto& gen = tritium::ops::default_generator();
    Tensor x = tritium::ops::mul(tritium::ops::randn({s.M, s.K}, gen, DType::f32, device), 40.0).to(DType::i8);
    Tensor w = tritium::ops::mul(tritium::ops::randn({s.N, s.K}, gen, DType::f32, device), 40.0).to(DType::i8);
    Tensor sx = tritium::ops::full({s.M}, 1.5, DType::f16, device);
    Tensor sw = tritium::ops::full({s.N}, 2.5, DType::f16, device);
    Tensor wt = w.t();
    double ms = tritium::do_bench([&] { int8_matmul_rowwise_dequantize(x, wt, sx, sw, Tensor()); }, device).median_ms;
    double tops = 2.0 * double(s.M) * double(s.N) * double(s.K) * 1e-12 / (ms * 1e-3);
    rows.push_back({fmt::format("M={} N={} K={} int8", s.M, s.N, s.K), ms, tops, "TOP/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "int8_dequant_matmul",
                                    .source = "bitsandbytes-foundation/bitsandbytes bitsandbytes/triton/int8_matmul_rowwise_dequantize.py",
                                    .category = "dot",
                                    .check = check,
                                    .bench = bench});

}  // namespace
