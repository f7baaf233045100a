// Tutorial 03: matrix multiplication, ported line by line from Triton's third tutorial.
//
// A short FP16 matrix multiplication kernel: each program computes one BLOCK_SIZE_M x
// BLOCK_SIZE_N tile of C = A @ B by walking along K in BLOCK_SIZE_K steps with tl::dot and an fp32
// accumulator. It shows
//  - block-level matrix multiplication (tl::dot in a run-time tl::range loop over K, masked at the
//    K edge),
//  - multi-dimensional pointer arithmetic: &X[i, j] = X + i * stride_xi + j * stride_xj, for
//    blocks of pointers built with x(_, None) / x(None, _) broadcasting,
//  - program re-ordering for a better L2 hit rate: programs are "super-grouped" GROUP_SIZE_M tile
//    rows at a time, so consecutive programs share tiles of A and B,
//  - automatic performance tuning (tritium::autotune, Triton's triton.autotune), and
//  - a fused epilogue: leaky_relu applied to the fp32 accumulator before the fp16 cast, chosen by
//    the ACTIVATION meta-parameter.
//
//   ./03-matrix-multiplication            checks C (f16, bf16 and fp8 e4m3 / e5m2 inputs, f16
//                                         output, with and without leaky_relu) against a float64
//                                         product on the host, at sizes that are not multiples of
//                                         the blocks
//   ./03-matrix-multiplication --bench    TFLOP/s for square problems: on --backend cuda
//                                         M = N = K in {256, ..., 8192} for f16, bf16 and fp8
//                                         e4m3 inputs (fp8 with B transposed, as Triton's
//                                         tutorial; bench/compare_matmul.py adds Triton and
//                                         cuBLAS); on
//                                         the CPU {256, 512, 1024} in GFLOP/s beside a plain
//                                         C++ loop
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "runtime/thread_pool.h"
#include "tutorial.h"

namespace tl = tritium::tl;
using tritium::Config;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;

// Triton's ACTIVATION is a string constexpr ("leaky_relu" or ""). Tritium's meta-parameters are
// numbers and bools only, so the activation is an int that names one of these.
enum Activation : int { NONE = 0, LEAKY_RELU = 1 };

// ---- configs ------------------------------------------------------------------------------------

// Triton's get_cuda_autotune_config(), config for config: the first eight are for fp16 inputs,
// the last eight "good for fp8 inputs" (they are tried for every dtype, as in Triton).
std::vector<Config> get_cuda_autotune_config() {
  auto c = [](int bm, int bn, int bk, int group, int stages, int warps) {
    return Config(Meta{{"BLOCK_SIZE_M", bm}, {"BLOCK_SIZE_N", bn}, {"BLOCK_SIZE_K", bk}, {"GROUP_SIZE_M", group}},
                  warps, stages);
  };
  return {
      c(128, 256, 64, 8, 3, 8),  c(64, 256, 32, 8, 4, 4),   c(128, 128, 32, 8, 4, 4),  c(128, 64, 32, 8, 4, 4),
      c(64, 128, 32, 8, 4, 4),   c(128, 32, 32, 8, 4, 4),   c(64, 32, 32, 8, 5, 2),    c(32, 64, 32, 8, 5, 2),
      // Good config for fp8 inputs.
      c(128, 256, 128, 8, 3, 8), c(256, 128, 128, 8, 3, 8), c(256, 64, 128, 8, 4, 4),  c(64, 256, 128, 8, 4, 4),
      c(128, 128, 128, 8, 4, 4), c(128, 64, 64, 8, 4, 4),   c(64, 128, 64, 8, 4, 4),   c(128, 32, 64, 8, 4, 4),
  };
}

// The CPU backend (the role of Triton's get_hip_autotune_config: the other target's list). A
// program runs on one core and its tiles live in registers and the L1/L2 caches, so the tiles are
// smaller than a GPU's; num_warps and num_stages mean nothing on the CPU.
std::vector<Config> get_cpu_autotune_config() {
  auto c = [](int bm, int bn, int bk) {
    return Config(Meta{{"BLOCK_SIZE_M", bm}, {"BLOCK_SIZE_N", bn}, {"BLOCK_SIZE_K", bk}, {"GROUP_SIZE_M", 8}}, 4, 1);
  };
  return {c(32, 32, 32), c(64, 64, 32), c(32, 64, 64)};
}

std::vector<Config> get_autotune_config(const tritium::Device& device) {
  return device.is_cuda() ? get_cuda_autotune_config() : get_cpu_autotune_config();
}

// ---- the kernel -----------------------------------------------------------------------------------

// We can fuse `leaky_relu` by providing it as an `ACTIVATION` meta-parameter in `matmul_kernel`.
// (Triton defines it after the kernel as a @triton.jit function; a C++ function used at trace
// time is its equivalent: it is inlined into the kernel.)
tl::tensor leaky_relu(const tl::tensor& x) { return tl::where(x >= 0, x, 0.01f * x); }

using P = tl::ptr<tl::any>;  // A and B are f16, bf16 or fp8 (e4m3, e5m2), C is f16

// Kernel for computing the matmul C = A x B. A has shape (M, K), B has shape (K, N) and C has
// shape (M, N).
auto matmul_kernel = tritium::kernel(
    "matmul_kernel",
    [](P a_ptr, P b_ptr, P c_ptr,  // pointers to matrices
       tl::i32 M, tl::i32 N, tl::i32 K,  // matrix dimensions
       // The stride variables represent how much to increase the ptr by when moving by 1 element
       // in a particular dimension. E.g. `stride_am` is how much to increase `a_ptr` by to get
       // the element one row down (A has M rows).
       tl::i32 stride_am, tl::i32 stride_ak, tl::i32 stride_bk, tl::i32 stride_bn, tl::i32 stride_cm,
       tl::i32 stride_cn,
       // Meta-parameters
       int BLOCK_SIZE_M, int BLOCK_SIZE_N, int BLOCK_SIZE_K, int GROUP_SIZE_M, int ACTIVATION) {
      // -----------------------------------------------------------
      // Map program ids `pid` to the block of C it should compute. This is done in a grouped
      // ordering to promote L2 data reuse: GROUP_SIZE_M rows of tiles are visited column by
      // column, so a group's tiles of B are read from L2 by each of its rows.
      auto pid = tl::program_id(0);
      // number of program ids along the M and N axes
      auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
      auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
      // number of programs in a group, and the group this program is in
      auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;
      auto group_id = pid / num_pid_in_group;  // Triton's `//`
      // row-id of the first program in the group
      auto first_pid_m = group_id * GROUP_SIZE_M;
      // if `num_pid_m` isn't divisible by `GROUP_SIZE_M`, the last group is smaller
      // (Triton's Python `min` of two scalars is tl::minimum here)
      auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
      // *within groups*, programs are ordered in a column-major order: row-id and col-id of the
      // program in the *launch grid*
      auto pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
      auto pid_n = (pid % num_pid_in_group) / group_size_m;

      // ----------------------------------------------------------
      // Create pointers for the first blocks of A and B. We will advance this pointer as we move
      // in the K direction and accumulate.
      // `a_ptrs` is a block of [BLOCK_SIZE_M, BLOCK_SIZE_K] pointers,
      // `b_ptrs` is a block of [BLOCK_SIZE_K, BLOCK_SIZE_N] pointers.
      // Rows of A and columns of B past the edge wrap around (% M, % N): their loads stay in
      // bounds, and the results they produce are masked off at the store.
      auto offs_am = (pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M)) % M;
      auto offs_bn = (pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N)) % N;
      auto offs_k = tl::arange(0, BLOCK_SIZE_K);
      auto a_ptrs = a_ptr + (offs_am(tl::_, tl::None) * stride_am + offs_k(tl::None, tl::_) * stride_ak);
      auto b_ptrs = b_ptr + (offs_k(tl::_, tl::None) * stride_bk + offs_bn(tl::None, tl::_) * stride_bn);

      // -----------------------------------------------------------
      // Iterate to compute a block of the C matrix. We accumulate into a
      // `[BLOCK_SIZE_M, BLOCK_SIZE_N]` block of fp32 values for higher accuracy; `accumulator`
      // will be converted back to fp16 after the loop. The loop is a run-time loop (tl::range):
      // a_ptrs, b_ptrs and accumulator, reassigned inside, are carried from one trip to the next.
      auto accumulator = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, tl::float32);
      for (auto k : tl::range(0, tl::cdiv(K, BLOCK_SIZE_K))) {
        // Load the next block of A and B, generate a mask by checking the K dimension.
        // If it is out of bounds, set it to 0.
        auto a = tl::load(a_ptrs, offs_k(tl::None, tl::_) < K - k * BLOCK_SIZE_K, 0.0);
        auto b = tl::load(b_ptrs, offs_k(tl::_, tl::None) < K - k * BLOCK_SIZE_K, 0.0);
        // We accumulate along the K dimension.
        accumulator = tl::dot(a, b, accumulator);
        // Advance the ptrs to the next K block.
        a_ptrs += BLOCK_SIZE_K * stride_ak;
        b_ptrs += BLOCK_SIZE_K * stride_bk;
      }
      // You can fuse arbitrary activation functions here while the accumulator is still in FP32!
      // (ACTIVATION is a meta-parameter: this C++ `if` runs at trace time, like Triton's
      // constexpr `if`, and each value compiles its own kernel.)
      if (ACTIVATION == LEAKY_RELU) accumulator = leaky_relu(accumulator);
      auto c = accumulator.to(tl::float16);

      // -----------------------------------------------------------
      // Write back the block of the output matrix C with masks.
      auto offs_cm = pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
      auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
      auto c_ptrs = c_ptr + stride_cm * offs_cm(tl::_, tl::None) + stride_cn * offs_cn(tl::None, tl::_);
      auto c_mask = (offs_cm(tl::_, tl::None) < M) & (offs_cn(tl::None, tl::_) < N);
      tl::store(c_ptrs, c, c_mask);
    },
    {"a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
     "stride_cn", "BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "ACTIVATION"});

// `tritium::autotune` wraps the kernel (Triton's @triton.autotune decorator), with
//  - a list of configs: meta-parameter values (BLOCK_SIZE_M, ...) and compilation options
//    (num_warps, num_stages) to try, and
//  - an autotuning *key*: a change in the values of these arguments triggers the evaluation of
//    every config (the argument dtypes and the device always belong to the key).
// One tuner per backend, since the config lists differ; made on first use.
tritium::Autotuner& matmul_tuner(const tritium::Device& device) {
  auto make = [](const tritium::Device& d) {
    tritium::AutotuneOptions options;
    options.key = {"M", "N", "K"};
    return tritium::autotune(matmul_kernel, get_autotune_config(d), options);
  };
  if (device.is_cpu()) {
    static tritium::Autotuner cpu = make(tritium::Device::cpu());
    return cpu;
  }
  static tritium::Autotuner cuda = make(tritium::Device::cuda());
  return cuda;
}

// ---- the host side ----------------------------------------------------------------------------

// While the check runs, the output is filled with NaN before the launch, so an element that the
// kernel never writes shows up in the result.
bool g_poison = false;

// A convenience wrapper that only takes two input tensors, and (1) checks the shape constraints,
// (2) allocates the output, (3) launches the kernel above.
Tensor matmul(const Tensor& a, const Tensor& b, Activation activation = NONE) {
  // Check constraints.
  if (a.dim() != 2 || b.dim() != 2)
    tritium::fail("matmul: expects two 2-D matrices, got {} and {}", a.str(), b.str());
  if (a.size(1) != b.size(0))
    tritium::fail("matmul: incompatible dimensions: A is {} x {} and B is {} x {} (A's columns must equal B's rows)",
                  a.size(0), a.size(1), b.size(0), b.size(1));
  if (!a.is_contiguous()) tritium::fail("matmul: matrix A must be contiguous, got strides [{}, {}]", a.stride(0), a.stride(1));
  const DType in = a.dtype();
  if (in != b.dtype() || (in != DType::f16 && in != DType::bf16 && in != DType::f8e4m3 && in != DType::f8e5m2))
    tritium::fail("matmul: A and B must have one dtype, f16, bf16, f8e4m3 or f8e5m2, got {} and {}",
                  tritium::dtype_name(in), tritium::dtype_name(b.dtype()));
  if (a.device() != b.device())
    tritium::fail("matmul: A is on {} and B on {}", a.device().str(), b.device().str());
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  // The kernel computes offsets in 32 bits (as Triton does for arguments that fit an int32).
  const int64_t largest = std::max({M * K, (K - 1) * std::abs(b.stride(0)) + (N - 1) * std::abs(b.stride(1)) + 1, M * N});
  if (largest > INT32_MAX) tritium::fail("matmul: {} x {} x {} is too large: offsets above 2^31 are not supported", M, N, K);
  // Allocates output.
  Tensor c = g_poison ? tritium::ops::full({M, N}, NAN, DType::f16, a.device())
                      : Tensor::empty({M, N}, DType::f16, a.device());
  if (M == 0 || N == 0) return c;
  // 1D launch grid where each block gets its own program.
  auto grid = [M, N](const Meta& META) {
    return tritium::Grid(tritium::cdiv(M, META["BLOCK_SIZE_M"]) * tritium::cdiv(N, META["BLOCK_SIZE_N"]));
  };
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  matmul_tuner(a.device())[grid](a, b, c,                                  //
                                 i32(M), i32(N), i32(K),                   //
                                 i32(a.stride(0)), i32(a.stride(1)),       //
                                 i32(b.stride(0)), i32(b.stride(1)),       //
                                 i32(c.stride(0)), i32(c.stride(1)),       //
                                 Meta{{"ACTIVATION", static_cast<int>(activation)}});
  return c;
}

// ---- the check --------------------------------------------------------------------------------

std::vector<float> host(const Tensor& t) { return t.to(DType::f32).to_vector<float>(); }

struct Errors {
  double rel = 0;        // ||c - ref|| / ||ref|| (Frobenius norms)
  double worst = 0;      // the largest |c - ref| / bound over the elements
  int64_t unwritten = 0; // NaN or infinite outputs (the poison left in place)
};

// C = act(A @ B) for random A [M, K] and B [K, N] (B given as a transposed view when
// b_transposed), compared with a float64 product of the same rounded inputs.
//
// Bounds. The products of two f16 (or bf16) values are exact in f32, so the kernel's only
// errors are (1) the f32 additions along K, at most (K - 1) * 2^-24 * sum_k |a_ik b_kj| whatever
// the order (and about sqrt(K) times less in practice), (2) leaky_relu's 0.01f * x, one more f32
// rounding (and 0.01f differs from 0.01 by 2.2e-8 relative), and (3) the rounding of the result
// to f16: half an ulp, 2^-11 relative, or 2^-25 absolute for subnormal results. Each element
// must stay within the sum of these, and ||c - ref|| / ||ref|| within DESIGN.md's bound for f16
// inputs, 1e-3 (the f16 rounding alone gives about 2^-11 / sqrt(3) = 2.8e-4). bf16 inputs are
// held to the same bounds: they are exact in f32 too, and the output is f16 for both, as in
// Triton's tutorial. fp8 products are exact in f32 as well, but Hopper's fp8 tensor cores add
// with fewer mantissa bits (about 14 by DeepSeek-V3's measurement; not documented by NVIDIA): on
// a GPU each addition is bounded with 2^-16 instead of 2^-24 (the H100 stayed within about
// 2^-21: the worst element used 0.005 of a 2^-13 bound), and the norm-wise bound is DESIGN.md's
// 5e-2 for fp8.
Errors check_case(const tutorial::Args& args, int64_t M, int64_t N, int64_t K, DType dtype, Activation act,
                  bool b_transposed, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 1);  // torch.randn, as in Triton's test
  std::vector<float> ha(size_t(M * K)), hb(size_t(K * N));
  for (auto& v : ha) v = normal(rng);
  for (auto& v : hb) v = normal(rng);
  Tensor a = Tensor::from_vector(ha, {M, K}, args.device).to(dtype);
  Tensor b = b_transposed ? Tensor::from_vector(hb, {N, K}, args.device).to(dtype).t()  // [K, N], strides [1, K]
                          : Tensor::from_vector(hb, {K, N}, args.device).to(dtype);
  // The reference starts from the values the kernel sees (rounded to f16 / bf16 / fp8).
  ha = host(a), hb = host(b);  // row-major [M, K] and [K, N]

  g_poison = true;
  Tensor c = matmul(a, b, act);
  g_poison = false;
  const std::vector<float> hc = host(c);

  const double u16 = std::ldexp(1.0, -11), tiny = std::ldexp(1.0, -25);
  const double u32 = std::ldexp(1.0, tritium::is_fp8(dtype) && args.device.is_cuda() ? -16 : -24);
  const double gamma = double(std::max<int64_t>(K - 1, 1)) * u32;
  Errors e;
  std::vector<double> diff2(size_t(M), 0.0), ref2(size_t(M), 0.0), worst(size_t(M), 0.0);
  std::vector<int64_t> bad(size_t(M), 0);
  tritium::runtime::ThreadPool::global().parallel_for(M, [&](int64_t i) {
    std::vector<double> acc(size_t(N), 0.0), mag(size_t(N), 0.0);
    for (int64_t k = 0; k < K; ++k) {
      const double aik = ha[size_t(i * K + k)];
      const float* brow = &hb[size_t(k * N)];
      for (int64_t j = 0; j < N; ++j) {
        const double p = aik * brow[j];
        acc[size_t(j)] += p;
        mag[size_t(j)] += std::abs(p);
      }
    }
    for (int64_t j = 0; j < N; ++j) {
      double ref = acc[size_t(j)];
      if (act == LEAKY_RELU && ref < 0) ref *= 0.01;
      const double got = hc[size_t(i * N + j)];
      if (!std::isfinite(got)) {
        ++bad[size_t(i)];
        continue;
      }
      const double d = std::abs(got - ref);
      const double bound = (1 + u16) * gamma * mag[size_t(j)] + (u16 + 1e-5) * std::abs(ref) + tiny;
      diff2[size_t(i)] += d * d, ref2[size_t(i)] += ref * ref;
      worst[size_t(i)] = std::max(worst[size_t(i)], d / bound);
    }
  });
  double d2 = 0, r2 = 0;
  for (int64_t i = 0; i < M; ++i) {
    d2 += diff2[size_t(i)], r2 += ref2[size_t(i)];
    e.worst = std::max(e.worst, worst[size_t(i)]);
    e.unwritten += bad[size_t(i)];
  }
  e.rel = std::sqrt(d2 / std::max(r2, 1e-300));
  return e;
}

// ---- a plain C++ loop for --bench on the CPU ---------------------------------------------------

float f16_to_float(tritium::f16_t h) {
  _Float16 v;
  std::memcpy(&v, &h, 2);
  return static_cast<float>(v);
}
tritium::f16_t float_to_f16(float f) {
  _Float16 v = static_cast<_Float16>(f);
  tritium::f16_t h;
  std::memcpy(&h, &v, 2);
  return h;
}

// C = A @ B for row-major f16 A [M, K], B [K, N]: B is converted to f32 once, then each row of C
// is accumulated in f32 as sum_k a_ik * B[k, :] (an axpy over the row that the compiler
// vectorises), rows spread over the thread pool, and rounded to f16.
void matmul_plain(const tritium::f16_t* a, const tritium::f16_t* b, tritium::f16_t* c, int64_t M, int64_t N,
                  int64_t K) {
  auto& pool = tritium::runtime::ThreadPool::global();
  std::vector<float> bf(size_t(K * N));
  pool.parallel_for(K, [&](int64_t k0, int64_t k1) {
    for (int64_t i = k0 * N; i < k1 * N; ++i) bf[size_t(i)] = f16_to_float(b[i]);
  });
  pool.parallel_for(M, [&](int64_t i0, int64_t i1) {
    std::vector<float> acc(static_cast<size_t>(N));
    for (int64_t i = i0; i < i1; ++i) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t k = 0; k < K; ++k) {
        const float aik = f16_to_float(a[i * K + k]);
        const float* brow = &bf[size_t(k * N)];
        for (int64_t j = 0; j < N; ++j) acc[size_t(j)] += aik * brow[j];
      }
      for (int64_t j = 0; j < N; ++j) c[i * N + j] = float_to_f16(acc[size_t(j)]);
    }
  });
}

// ---- main -------------------------------------------------------------------------------------

int run_tutorial(const tutorial::Args& args) {
  const bool cpu = args.device.is_cpu();
  struct Case {
    int64_t M, N, K;
    DType dtype;
    Activation act;
    bool b_transposed;
  };
  // Triton's unit test (512^3, f16), with and without the fused leaky_relu; sizes that are not
  // multiples of any block (every edge masked); sizes smaller than every block (and K smaller than
  // BLOCK_SIZE_K: one masked trip); B as a transposed view (strided loads, as Triton's fp8 test
  // pre-transposes B); bf16 inputs. M = 1100 makes the last group of tile rows smaller than
  // GROUP_SIZE_M for every config (35, 18, 9 or 5 tile rows for BLOCK_SIZE_M = 32 ... 256).
  const int64_t m1 = 1100, n1 = 1037, k1 = 999;
  const std::vector<Case> cases = {
      {512, 512, 512, DType::f16, NONE, false},     {512, 512, 512, DType::f16, LEAKY_RELU, false},
      {m1, n1, k1, DType::f16, NONE, false},        {m1, n1, k1, DType::f16, LEAKY_RELU, true},
      {13, 7, 5, DType::f16, LEAKY_RELU, false},    {1, 1, 1, DType::f16, NONE, false},
      {m1, n1, k1, DType::bf16, NONE, false},       {97, 130, 61, DType::bf16, LEAKY_RELU, true},
      // fp8: B transposed as in Triton's tutorial (K-major, what Hopper's fp8 wgmma reads), and as stored.
      {512, 512, 512, DType::f8e4m3, NONE, true},   {m1, n1, k1, DType::f8e4m3, LEAKY_RELU, true},
      {m1, n1, k1, DType::f8e5m2, NONE, true},      {97, 130, 64, DType::f8e4m3, NONE, false},
  };
  auto tolerance_of = [](DType d) { return tritium::is_fp8(d) ? 5e-2 : 1e-3; };  // DESIGN.md
  bool ok = true;
  uint32_t seed = 0;
  for (const Case& c : cases) {
    Errors e = check_case(args, c.M, c.N, c.K, c.dtype, c.act, c.b_transposed, ++seed);
    const double tolerance = tolerance_of(c.dtype);
    const bool good = e.unwritten == 0 && e.rel <= tolerance && e.worst <= 1.0;
    std::printf("matmul %4lld x %4lld x %4lld %-6s%-11s%-4s on %s: rel err %.2e (bound %.0e), "
                "max |err| / element bound %.3f  %s",
                static_cast<long long>(c.M), static_cast<long long>(c.N), static_cast<long long>(c.K),
                tritium::dtype_name(c.dtype), c.act == LEAKY_RELU ? " leaky_relu" : "", c.b_transposed ? " B^T" : "",
                args.device.str().c_str(), e.rel, tolerance, e.worst, good ? "OK" : "FAILED");
    if (e.unwritten) std::printf(" (%lld elements not written)", static_cast<long long>(e.unwritten));
    std::printf("\n");
    ok = ok && good;
  }

  // Mistakes are errors with a message, not crashes.
  auto expect_error = [&](const char* what, const char* expected, auto&& fn) {
    try {
      fn();
      std::printf("%s: no error  FAILED\n", what);
      ok = false;
    } catch (const tritium::Error& err) {
      bool right = std::strstr(err.what(), expected) != nullptr;
      std::printf("%s: error \"%s\"  %s\n", what, err.what(), right ? "OK" : "FAILED (not the expected error)");
      ok = ok && right;
    }
  };
  expect_error("matmul of 8 x 16 by 8 x 16", "incompatible dimensions", [&] {
    Tensor x = tritium::ops::randn({8, 16}, tritium::ops::default_generator(), DType::f32, args.device).to(DType::f16);
    matmul(x, x);
  });
  expect_error("matmul with a transposed A", "must be contiguous", [&] {
    Tensor x = tritium::ops::randn({16, 16}, tritium::ops::default_generator(), DType::f32, args.device).to(DType::f16);
    matmul(x.t(), x);
  });
  if (!ok) return 1;
  if (!args.bench) return 0;

  // ---- benchmark: square matrices, as Triton's perf_report, timed with do_bench (median), the
  // autotuning done by an untimed first call.
  const std::vector<int64_t> sizes = tutorial::bench_sizes(
      args, cpu ? std::vector<int64_t>{256, 512, 1024} : std::vector<int64_t>{256, 512, 1024, 2048, 4096, 8192});
  const std::vector<DType> dtypes =
      cpu ? std::vector<DType>{DType::f16} : std::vector<DType>{DType::f16, DType::bf16, DType::f8e4m3};
  auto perf = [](int64_t n, double ms) { return 2.0 * double(n) * double(n) * double(n) * 1e-12 / (ms * 1e-3); };
  if (cpu)
    std::printf("\n%6s %6s %6s %16s %16s %8s  %s\n", "M", "N", "K", "Tritium GFLOP/s", "plain GFLOP/s", "ratio",
                "tuned config");
  else
    std::printf("\n%6s %6s %6s %14s %14s %14s  %s\n", "M", "N", "K", "f16 TFLOP/s", "bf16 TFLOP/s", "e4m3 TFLOP/s",
                "tuned config (f16)");
  for (int64_t n : sizes) {
    std::vector<double> tflops;
    std::string best;
    for (DType dtype : dtypes) {
      Tensor a = tritium::ops::randn({n, n}, tritium::ops::default_generator(), DType::f32, args.device).to(dtype);
      Tensor b = tritium::ops::randn({n, n}, tritium::ops::default_generator(), DType::f32, args.device).to(dtype);
      if (tritium::is_fp8(dtype)) b = b.t();  // Triton's tutorial: b = b.T for fp8 inputs
      double ms = tritium::do_bench([&] { matmul(a, b); }, args.device).median_ms;
      tflops.push_back(perf(n, ms));
      if (best.empty()) {  // the config the tuner picked (a lookup: this key is tuned already)
        Tensor c = Tensor::empty({n, n}, DType::f16, args.device);
        auto grid = [n](const Meta& META) {
          return tritium::Grid(tritium::cdiv(n, META["BLOCK_SIZE_M"]) * tritium::cdiv(n, META["BLOCK_SIZE_N"]));
        };
        int32_t n32 = static_cast<int32_t>(n), one = 1;
        best = matmul_tuner(args.device)
                   .tune(grid, a, b, c, n32, n32, n32, n32, one, n32, one, n32, one, Meta{{"ACTIVATION", 0}})
                   .best_config()
                   .str();
      }
      if (cpu) {
        Tensor c = Tensor::empty({n, n}, DType::f16, args.device);
        double plain_ms = tritium::do_bench([&] {
                            matmul_plain(a.data_ptr<tritium::f16_t>(), b.data_ptr<tritium::f16_t>(),
                                         c.data_ptr<tritium::f16_t>(), n, n, n);
                          }).median_ms;
        tflops.push_back(perf(n, plain_ms));
      }
    }
    const long long nn = static_cast<long long>(n);
    if (cpu)
      std::printf("%6lld %6lld %6lld %16.2f %16.2f %8.2f  %s\n", nn, nn, nn, tflops[0] * 1e3, tflops[1] * 1e3,
                  tflops[0] / tflops[1], best.c_str());
    else std::printf("%6lld %6lld %6lld %14.1f %14.1f %14.1f  %s\n", nn, nn, nn, tflops[0], tflops[1], tflops[2], best.c_str());
    std::fflush(stdout);
  }
  return 0;
}

int main(int argc, char** argv) { return tutorial::run(argc, argv, run_tutorial); }
