// grouped_gemm: Triton's tutorial 08, "Group GEMM" (triton-lang/triton
// python/tutorials/08-grouped-gemm.py, read at commit 7649d87cce6c: grouped_matmul_kernel, its
// autotune configs with num_sms(), group_gemm_fn and triton_perf_fn; the TMA variant beside it,
// grouped_matmul_tma_kernel, is not ported). Copyright (c) 2023 - 2025 NVIDIA Corporation &
// Affiliates, MIT licence (as the original's header).
//
// "This group gemm kernel launches a fixed number of CTA to compute a group of gemms. The
// scheduling is static and we do it on device." NUM_SM programs walk the tiles of every gemm of
// the group in turn (tile_idx += NUM_SM); each gemm's matrices are found through device arrays of
// addresses, read with tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16)).
//
// Deviations, each for a reason:
//  - The kernel "assume[s] full tile[s]" (no masks), as the original. Where the original silently
//    reads and writes out of bounds for other sizes, group_gemm_fn refuses them with an error: M
//    and N must be multiples of the largest BLOCK_SIZE_M / BLOCK_SIZE_N of the configs and K of the
//    largest BLOCK_SIZE_K (any config may be picked), A and B must have unit inner strides (the
//    kernel has no inner stride), and rows must be 16-byte aligned (the kernel's multiple_of hint
//    says so). The check therefore uses sizes that are multiples of the blocks, with a different
//    number of tiles per gemm (the programs' tiles straddle gemms), leading dimensions wider than
//    the matrices, and C inside a NaN-poisoned wider buffer (every element outside C must stay NaN).
//  - The original's `tl.multiple_of(a_ptrs, [16, 16])` sets the hint on a_ptrs in place (Triton's
//    multiple_of annotates the value's defining op); tl::multiple_of returns the hinted value, so
//    the port assigns it back to a_ptrs.
//  - On the CPU the configs are two CPU-sized tiles with NUM_SM = the thread pool's size (the
//    original's num_sms() returns a fixed 148 off CUDA, more programs than the check has tiles;
//    with a core count the programs walk several tiles each); on CUDA they are the original's six.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/thread_pool.h"
#include "grouped_gemm_kernel.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::Config;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;

// Triton's num_sms(): the multiprocessor count of the GPU; on the CPU the threads that run a grid
// (the original's 148 off CUDA would give each program at most one of the check's tiles).
int num_sms(const tritium::Device& device) {
  if (device.is_cuda()) return tritium::runtime::cuda::properties(device.index).multiprocessor_count;
  return tritium::runtime::ThreadPool::global().size();
}

Config config(int bm, int bn, int bk, int num_sm) {
  return Config(Meta{{"BLOCK_SIZE_M", bm}, {"BLOCK_SIZE_N", bn}, {"BLOCK_SIZE_K", bk}, {"NUM_SM", num_sm}});
}

// The original's @triton.autotune configs (num_warps and num_stages left at Triton's defaults, 4
// and 3, as there).
std::vector<Config> get_autotune_config(const tritium::Device& device) {
  if (device.is_cpu())  // a program runs on one core: smaller tiles
    return {config(32, 32, 32, num_sms(device)), config(64, 64, 32, num_sms(device))};
  return {config(128, 128, 32, 84),
          config(128, 128, 32, 128),
          config(64, 64, 32, 84),
          config(64, 64, 32, 128),
          config(128, 128, 64, num_sms(device)),
          config(64, 128, 64, num_sms(device))};
}

using tritium_ports::grouped_gemm::grouped_matmul_kernel;

// @triton.autotune(configs=[...], key=['group_size']); one tuner per backend (their config lists
// differ), made on first use.
tritium::Autotuner& grouped_matmul_tuner(const tritium::Device& device) {
  auto make = [](const tritium::Device& d) {
    tritium::AutotuneOptions options;
    options.key = {"group_size"};
    return tritium::autotune(grouped_matmul_kernel, get_autotune_config(d), options);
  };
  if (device.is_cpu()) {
    static tritium::Autotuner cpu = make(tritium::Device::cpu());
    return cpu;
  }
  static tritium::Autotuner cuda = make(tritium::Device::cuda());
  return cuda;
}

// The largest tile of any config: the sizes every gemm must be a multiple of (the kernel has no
// masks and the tuner may pick any config).
std::array<int64_t, 3> largest_tile(const tritium::Device& device) {
  std::array<int64_t, 3> t{1, 1, 1};
  for (const Config& c : get_autotune_config(device)) {
    t[0] = std::max<int64_t>(t[0], c.meta["BLOCK_SIZE_M"]);
    t[1] = std::max<int64_t>(t[1], c.meta["BLOCK_SIZE_N"]);
    t[2] = std::max<int64_t>(t[2], c.meta["BLOCK_SIZE_K"]);
  }
  return t;
}

// The device arrays the kernel reads (group_gemm_fn's d_a_ptrs ... d_g_lds).
struct GroupArrays {
  Tensor d_a_ptrs, d_b_ptrs, d_c_ptrs, d_g_sizes, d_g_lds;
  int32_t group_size = 0;
};

// Checks what the kernel assumes of one gemm (see the header) and adds it to the arrays' lists.
void add_gemm(const Tensor& A, const Tensor& B, const Tensor& C, std::vector<int64_t>& addrs_a,
              std::vector<int64_t>& addrs_b, std::vector<int64_t>& addrs_c, std::vector<int32_t>& g_sizes,
              std::vector<int32_t>& g_lds) {
  if (A.dim() != 2 || B.dim() != 2 || C.dim() != 2)
    tritium::fail("group_gemm: expects 2-D matrices, got {}, {} and {}", A.str(), B.str(), C.str());
  if (A.dtype() != DType::f16 || B.dtype() != DType::f16 || C.dtype() != DType::f16)
    tritium::fail("group_gemm: the kernel reads and writes f16 (tl.pointer_type(tl.float16)), got {}, {} and {}",
                  tritium::dtype_name(A.dtype()), tritium::dtype_name(B.dtype()), tritium::dtype_name(C.dtype()));
  if (A.size(1) != B.size(0) || C.size(0) != A.size(0) || C.size(1) != B.size(1))
    tritium::fail("group_gemm: incompatible shapes A {} x {}, B {} x {}, C {} x {}", A.size(0), A.size(1), B.size(0),
                  B.size(1), C.size(0), C.size(1));
  if (A.device() != B.device() || A.device() != C.device())
    tritium::fail("group_gemm: A, B and C are on {}, {} and {}", A.device().str(), B.device().str(), C.device().str());
  const int64_t M = A.size(0), K = A.size(1), N = B.size(1);
  const auto tile = largest_tile(A.device());
  if (M % tile[0] || N % tile[1] || K % tile[2])
    tritium::fail("group_gemm: the kernel assumes full tiles: M, N and K must be multiples of {}, {} and {} (the "
                  "largest tiles of its configs), got {} x {} x {}",
                  tile[0], tile[1], tile[2], M, N, K);
  for (const Tensor* t : {&A, &B, &C}) {
    if (t->stride(1) != 1)
      tritium::fail("group_gemm: the kernel assumes unit strides along rows, got strides [{}, {}]", t->stride(0),
                    t->stride(1));
    if (reinterpret_cast<uintptr_t>(t->raw_data()) % 16 || t->stride(0) % 8 || t->stride(0) > INT32_MAX)
      tritium::fail("group_gemm: rows must start on 16-byte boundaries (the kernel's multiple_of hint), got address {} "
                    "and row stride {}",
                    t->raw_data(), t->stride(0));
  }
  addrs_a.push_back(reinterpret_cast<int64_t>(A.raw_data()));
  addrs_b.push_back(reinterpret_cast<int64_t>(B.raw_data()));
  addrs_c.push_back(reinterpret_cast<int64_t>(C.raw_data()));
  g_sizes.insert(g_sizes.end(), {int32_t(M), int32_t(N), int32_t(K)});
  g_lds.insert(g_lds.end(), {int32_t(A.stride(0)), int32_t(B.stride(0)), int32_t(C.stride(0))});
}

GroupArrays make_arrays(const std::vector<Tensor>& group_A, const std::vector<Tensor>& group_B,
                        const std::vector<Tensor>& group_C) {
  std::vector<int64_t> A_addrs, B_addrs, C_addrs;
  std::vector<int32_t> g_sizes, g_lds;
  for (size_t i = 0; i < group_A.size(); ++i)
    add_gemm(group_A[i], group_B[i], group_C[i], A_addrs, B_addrs, C_addrs, g_sizes, g_lds);
  const tritium::Device device = group_A.at(0).device();
  const int64_t n = static_cast<int64_t>(group_A.size());
  // note these are device tensors
  return {Tensor::from_vector(A_addrs, {n}, device), Tensor::from_vector(B_addrs, {n}, device),
          Tensor::from_vector(C_addrs, {n}, device), Tensor::from_vector(g_sizes, {n * 3}, device),
          Tensor::from_vector(g_lds, {n * 3}, device), static_cast<int32_t>(n)};
}

// triton_perf_fn: only launch the kernel, no tensor preparation here to remove all overhead.
void triton_perf_fn(const GroupArrays& g) {
  // we use a fixed number of CTA, and it's auto-tunable
  auto grid = [](const Meta& META) { return tritium::Grid(META["NUM_SM"]); };
  grouped_matmul_tuner(g.d_a_ptrs.device())[grid](g.d_a_ptrs, g.d_b_ptrs, g.d_c_ptrs, g.d_g_sizes, g.d_g_lds,
                                                  g.group_size);
}

bool g_poison = false;  // while checking: outputs start as NaN

std::vector<Tensor> group_gemm_fn(const std::vector<Tensor>& group_A, const std::vector<Tensor>& group_B) {
  if (group_A.size() != group_B.size())
    tritium::fail("group_gemm: {} matrices A but {} matrices B", group_A.size(), group_B.size());
  if (group_A.empty()) return {};
  std::vector<Tensor> group_C;
  for (size_t i = 0; i < group_A.size(); ++i) {
    const Tensor& A = group_A[i];
    const Tensor& B = group_B[i];
    if (A.dim() != 2 || B.dim() != 2) tritium::fail("group_gemm: expects 2-D matrices, got {} and {}", A.str(), B.str());
    const int64_t M = A.size(0), N = B.size(1);
    group_C.push_back(g_poison ? tritium::ops::full({M, N}, NAN, A.dtype(), A.device())
                               : Tensor::empty({M, N}, A.dtype(), A.device()));
  }
  triton_perf_fn(make_arrays(group_A, group_B, group_C));
  return group_C;
}

// ---- check ------------------------------------------------------------------------------------

std::vector<float> host(const Tensor& t) { return t.to(DType::f32).to_vector<float>(); }

Tensor randn(std::mt19937& rng, int64_t rows, int64_t cols, const tritium::Device& device) {
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> v(size_t(rows * cols));
  for (auto& x : v) x = normal(rng);
  return Tensor::from_vector(v, {rows, cols}, device).to(DType::f16);
}

// ||C - A @ B|| accumulated over the group, the reference in float64 from the f16 inputs.
struct Norms {
  double d2 = 0, r2 = 0;
  void add(const Tensor& A, const Tensor& B, const Tensor& C) {
    const int64_t M = A.size(0), K = A.size(1), N = B.size(1);
    auto a = host(A), b = host(B), c = host(C);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double ref = 0;
        for (int64_t k = 0; k < K; ++k) ref += double(a[size_t(i * K + k)]) * b[size_t(k * N + j)];
        const double got = c[size_t(i * N + j)];
        d2 += std::isfinite(got) ? (got - ref) * (got - ref) : INFINITY;
        r2 += ref * ref;
      }
  }
  double rel() const { return std::sqrt(d2 / std::max(r2, 1e-300)); }
};

bool check(const tritium::Device& device) {
  std::mt19937 rng(8);
  const auto tile = largest_tile(device);
  const int64_t bm = tile[0], bn = tile[1], bk = tile[2];
  // Gemms of different sizes, 6, 1, 10 and 3 tiles of the largest config: the NUM_SM programs'
  // tiles straddle the gemms.
  // On a GPU, 8 times the rows: more tiles (160) than any config's NUM_SM.
  const int64_t r = device.is_cuda() ? 8 : 1;
  const std::vector<std::array<int64_t, 3>> sizes = {
      {3 * r * bm, 2 * bn, 5 * bk}, {r * bm, bn, bk}, {2 * r * bm, 5 * bn, 3 * bk}, {r * bm, 3 * bn, 2 * bk}};
  std::vector<Tensor> group_A, group_B;
  for (auto [M, N, K] : sizes) {
    group_A.push_back(randn(rng, M, K, device));
    group_B.push_back(randn(rng, K, N, device));
  }
  g_poison = true;
  std::vector<Tensor> group_C = group_gemm_fn(group_A, group_B);
  g_poison = false;
  Norms dense;
  for (size_t i = 0; i < sizes.size(); ++i) dense.add(group_A[i], group_B[i], group_C[i]);

  // The same gemms with leading dimensions wider than the matrices (A and B are column slices of
  // wider matrices, C a slice of a NaN buffer): lda, ldb and ldc are used, and nothing outside C
  // is written.
  std::vector<Tensor> wide_A, wide_B, buf_C, view_A, view_B, view_C;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto [M, N, K] = sizes[i];
    wide_A.push_back(randn(rng, M, K + 24, device));
    wide_B.push_back(randn(rng, K, N + 8, device));
    buf_C.push_back(tritium::ops::full({M, N + 40}, NAN, DType::f16, device));
    view_A.push_back(wide_A.back().slice(1, 0, K));
    view_B.push_back(wide_B.back().slice(1, 8, N + 8));
    view_C.push_back(buf_C.back().slice(1, 16, N + 16));
  }
  triton_perf_fn(make_arrays(view_A, view_B, view_C));
  Norms strided;
  int64_t outside_written = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    strided.add(view_A[i].contiguous(), view_B[i].contiguous(), view_C[i].contiguous());
    auto whole = host(buf_C[i]);
    const int64_t N = sizes[i][1], W = N + 40;
    for (size_t e = 0; e < whole.size(); ++e) {
      const int64_t col = int64_t(e) % W;
      if ((col < 16 || col >= N + 16) && !std::isnan(whole[e])) ++outside_written;
    }
  }

  bool refused = false;  // a gemm off the tiles is an error, not an out-of-bounds access
  try {
    group_gemm_fn({randn(rng, bm + 1, bk, device)}, {randn(rng, bk, bn, device)});
  } catch (const tritium::Error&) {
    refused = true;
  }
  const double rel = std::max(dense.rel(), outside_written ? INFINITY : strided.rel());
  return suite::report("grouped_gemm", device, refused ? rel : INFINITY, 1e-3,
                       "(4 f16 gemms; contiguous " + fmt::format("{:.2e}", dense.rel()) + ", strided " +
                           fmt::format("{:.2e}", strided.rel()) + (outside_written ? ", wrote outside C" : "") +
                           (refused ? "" : ", a size off the tiles was not refused") + ")");
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_square_matrices (group of 4 N x N x N) and benchmark_batches (4 x M x 8192 x 8192):
// the kernel launch alone (triton_perf_fn) on torch.rand-like inputs.
std::vector<suite::Row> bench(const tritium::Device& device) {
  struct Shape {
    int64_t M, N, K;
    std::string name;
  };
  std::vector<Shape> shapes;
  if (device.is_cuda()) {
    for (int64_t n : {128, 256, 512, 1024}) shapes.push_back({n, n, n, fmt::format("group 4 x M=N=K={} f16", n)});
    for (int64_t m : {128, 256, 512, 1024}) shapes.push_back({m, 8192, 8192, fmt::format("group 4 x M={} N=K=8192 f16", m)});
  } else {
    for (int64_t n : {128, 256}) shapes.push_back({n, n, n, fmt::format("group 4 x M=N=K={} f16", n)});
  }
  std::vector<suite::Row> rows;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(0, 1);
  for (const Shape& s : shapes) {
    const int group_size = 4;
    std::vector<Tensor> group_A, group_B, group_C;
    for (int i = 0; i < group_size; ++i) {
      std::vector<float> a(size_t(s.M * s.K)), b(size_t(s.K * s.N));
      for (auto& x : a) x = uniform(rng);
      for (auto& x : b) x = uniform(rng);
      group_A.push_back(Tensor::from_vector(a, {s.M, s.K}, device).to(DType::f16));
      group_B.push_back(Tensor::from_vector(b, {s.K, s.N}, device).to(DType::f16));
      group_C.push_back(Tensor::empty({s.M, s.N}, DType::f16, device));
    }
    GroupArrays arrays = make_arrays(group_A, group_B, group_C);
    const double ms = tritium::do_bench([&] { triton_perf_fn(arrays); }, device).median_ms;
    const double flops = 2.0 * group_size * double(s.M) * double(s.N) * double(s.K);
    rows.push_back({s.name, ms, flops * 1e-12 / (ms * 1e-3), "TFLOP/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "grouped_gemm",
                                    .source = "triton-lang/triton python/tutorials/08-grouped-gemm.py",
                                    .category = "dot",
                                    .check = check,
                                    .bench = bench});

}  // namespace
