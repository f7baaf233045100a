// Row reductions whose rows sit in aligned groups of lanes (issue 28: vLLM's
// silu_mul_quant_fp8 takes the absmax of each row of an [8, 128] tile, then divides the row by
// it). In the element-loop generator's register mapping a row of K elements with V a thread is
// owned by K / V consecutive lanes; the reduction then combines in the thread and shuffles within
// those lanes, and consumers evaluated in the same mapping read the row's result from a register
// (Triton's blocked layout does the same). Code checks compile with NVRTC for sm_90a without a
// GPU; the value checks run on every backend against float64.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <tuple>
#include <string>
#include <vector>

#include "test_support.h"

#ifdef TRITIUM_HAS_CUDA_BACKEND
#include "cuda_codegen_check.h"
#include "jit/cuda/cubin_stats.h"
#include "jit/cuda/nvrtc.h"
#endif

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::bf16_t;
using P = tl::ptr<tl::any>;

namespace {

// Per-row-group scaling as silu_mul_quant_fp8 does it: y = x * g (bf16 in, f32 math), each row of
// a [BLOCK_M, BLOCK_N] tile scaled by its absmax (at least eps), the scaled values and the row
// scales stored. Rows past M are masked (the suite's kernel has no masks; this one also covers a
// ragged last tile).
tritium::Kernel& row_scale() {
  static auto k = tritium::kernel("row_absmax_scale", [](P X, P G, P Q, P S, tl::i32 M, tl::i32 N, int BLOCK_M, int BLOCK_N) {
    auto pid_m = tl::program_id(0);
    auto pid_n = tl::program_id(1);
    auto rows = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
    auto cols = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
    auto mask = rows(tl::_, tl::None) < M;
    auto offs = rows(tl::_, tl::None) * N + cols(tl::None, tl::_);
    auto y = (tl::load(X + offs, mask, 0.0) * tl::load(G + offs, mask, 0.0)).to(tl::float32);
    auto s = tl::maximum(tl::max(tl::abs(y), 1), 1e-10f) / 448.0f;
    tl::store(Q + offs, y / tl::reshape(s, {BLOCK_M, 1}), mask);
    tl::store(S + pid_n * M + rows, s, rows < M);
  });
  return k;
}

// float64 reference of row_scale for x, g (row-major M x N, BLOCK_N-wide groups).
void row_scale_reference(const tt::host_vector<bf16_t>& x, const tt::host_vector<bf16_t>& g, int M, int N, int BLOCK_N,
                         std::vector<double>& q, std::vector<double>& s) {
  const int groups = N / BLOCK_N;
  q.assign(size_t(M) * N, 0.0);
  s.assign(size_t(groups) * M, 0.0);
  for (int r = 0; r < M; ++r)
    for (int b = 0; b < groups; ++b) {
      double amax = 0;
      std::vector<double> y(static_cast<size_t>(BLOCK_N));
      for (int j = 0; j < BLOCK_N; ++j) {
        const size_t i = size_t(r) * N + size_t(b * BLOCK_N + j);
        y[size_t(j)] = double(tt::to_float(tt::to_bf16(tt::to_float(x[i]) * tt::to_float(g[i]))));
        amax = std::max(amax, std::abs(y[size_t(j)]));
      }
      const double sc = std::max(amax, double(1e-10f)) / 448.0;
      s[size_t(b) * M + size_t(r)] = sc;
      for (int j = 0; j < BLOCK_N; ++j) q[size_t(r) * N + size_t(b * BLOCK_N + j)] = y[size_t(j)] / sc;
    }
}

// Softmax attention over the depth of n_blocks rows (Liger's attn_res forward in small): each row
// is scored against W (a whole-row sum), the score kept at its place of a [MAX_BLOCKS] vector by
// tl::where, the softmax taken over that vector, and each weight picked back out by a sum of a
// where - small vectors whose sums must not go through shared memory. The weights are also
// added atomically into Sum ([MAX_BLOCKS], over the tokens): each warp holds a copy of the
// vector, and only one copy may add.
tritium::Kernel& depth_softmax() {
  static auto k = tritium::kernel("depth_softmax", [](P V, P W, P Out, P Alpha, P Sum, tl::i32 n_blocks, tl::i32 n_tokens, tl::i32 D,
                                                      int BLOCK_D, int MAX_BLOCKS) {
    auto tok = tl::program_id(0);
    auto cols = tl::arange(0, BLOCK_D);
    auto mask = cols < D;
    auto w = tl::load(W + cols, mask, 0.0).to(tl::float32);
    tl::tensor scores = tl::zeros({MAX_BLOCKS}, tl::float32) + (-INFINITY);
    for (int i = 0; i < MAX_BLOCKS; ++i)
      tl::if_(n_blocks > i, [&] {
        auto v = tl::load(V + i * n_tokens * D + tok * D + cols, mask, 0.0).to(tl::float32);
        scores = tl::where(tl::arange(0, MAX_BLOCKS) == i, tl::sum(v * w, 0), scores);
      });
    auto e = tl::where(tl::arange(0, MAX_BLOCKS) < n_blocks, tl::exp(scores - tl::max(scores, 0)), 0.0);
    auto alpha = e / tl::sum(e, 0);
    tl::atomic_add(Sum + tl::arange(0, MAX_BLOCKS), alpha, tl::arange(0, MAX_BLOCKS) < n_blocks);
    auto h = tl::zeros({BLOCK_D}, tl::float32);
    for (int i = 0; i < MAX_BLOCKS; ++i)
      tl::if_(n_blocks > i, [&] {
        auto a = tl::sum(tl::where(tl::arange(0, MAX_BLOCKS) == i, alpha, 0.0));
        tl::store(Alpha + tok * n_blocks + i, a);
        h += a * tl::load(V + i * n_tokens * D + tok * D + cols, mask, 0.0).to(tl::float32);
      });
    tl::store(Out + tok * D + cols, h, mask);
  });
  return k;
}

// A softmax over each row of a [BLOCK_M, BLOCK_N] f32 tile with the row's argmax and sum kept
// ([BLOCK_M] stores): a max, a sum and an argmax (two operands) along the last dim, whose
// results are read both by the tile's loop (row registers) and by [BLOCK_M] stores (buffers).
tritium::Kernel& row_softmax() {
  static auto k = tritium::kernel("row_softmax", [](P X, P Y, P Idx, P Sum, tl::i32 M, int BLOCK_M, int BLOCK_N) {
    auto rows = tl::program_id(0) * BLOCK_M + tl::arange(0, BLOCK_M);
    auto cols = tl::arange(0, BLOCK_N);
    auto offs = rows(tl::_, tl::None) * BLOCK_N + cols(tl::None, tl::_);
    auto mask = rows(tl::_, tl::None) < M;
    auto x = tl::load(X + offs, mask, 0.0);
    auto e = tl::exp(x - tl::max(x, 1, true));
    auto s = tl::sum(e, 1);
    tl::store(Y + offs, e / s(tl::_, tl::None), mask);
    tl::store(Idx + rows, tl::argmax(x, 1), rows < M);
    tl::store(Sum + rows, s, rows < M);
  });
  return k;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_cuda_codegen_row_reduce)

// Every backend: several tile shapes and warps (lane groups of 32, 8 and 1 lanes on a GPU), a
// last tile cut short, outputs poisoned.
BOOST_AUTO_TEST_CASE(row_softmax_values) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (auto [M, BM, BN, warps] : {std::tuple{37, 4, 32, 4}, std::tuple{50, 16, 64, 4}, std::tuple{70, 32, 16, 2}, std::tuple{9, 2, 256, 8}}) {
      auto x = tt::random_vector<float>(size_t(M) * BN, uint32_t(M + BN), -3.0, 3.0);
      auto dx = be.upload<float>(x);
      auto dy = be.alloc_poisoned<float>(size_t(M) * BN), ds = be.alloc_poisoned<float>(size_t(M));
      auto di = be.alloc_poisoned<int32_t>(size_t(M));
      auto opts = be.options();
      opts.num_warps = warps;
      row_softmax()[{(M + BM - 1) / BM}](dx.ptr(), dy.ptr(), di.ptr(), ds.ptr(), M, BM, BN, opts);
      std::vector<double> y(static_cast<size_t>(M) * BN), sum(static_cast<size_t>(M)), idx(static_cast<size_t>(M));
      for (int r = 0; r < M; ++r) {
        double mx = -INFINITY;
        int at = 0;
        for (int j = 0; j < BN; ++j)
          if (x[size_t(r * BN + j)] > mx) mx = x[size_t(r * BN + j)], at = j;
        double z = 0;
        for (int j = 0; j < BN; ++j) z += std::exp(double(x[size_t(r * BN + j)]) - mx);
        for (int j = 0; j < BN; ++j) y[size_t(r * BN + j)] = std::exp(double(x[size_t(r * BN + j)]) - mx) / z;
        sum[size_t(r)] = z;
        idx[size_t(r)] = at;
      }
      tt::check_close<float>(dy.download(), y, 1e-5, "softmax");
      tt::check_close<float>(ds.download(), sum, 1e-5, "row sums");
      tt::check_close<int32_t>(di.download(), idx, 0, "row argmax");
    }
  });
}

// Every backend: 5 and 8 of 8 blocks, D not a multiple of the block, outputs poisoned.
BOOST_AUTO_TEST_CASE(depth_softmax_values) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (int N : {5, 8}) {
      const int T = 6, D = 300, BLOCK_D = 512;
      auto v = tt::random_vector<bf16_t>(size_t(N) * T * D, 21, -2.0, 2.0), w = tt::random_vector<bf16_t>(size_t(D), 22, -0.2, 0.2);
      auto dv = be.upload<bf16_t>(v), dw = be.upload<bf16_t>(w);
      auto dout = be.alloc_poisoned<float>(size_t(T) * D), dalpha = be.alloc_poisoned<float>(size_t(T) * N);
      auto dsum = be.upload<float>(tt::host_vector<float>(size_t(N), 0.0f));
      depth_softmax()[{T}](dv.ptr(), dw.ptr(), dout.ptr(), dalpha.ptr(), dsum.ptr(), N, T, D, BLOCK_D, 8, be.options());
      std::vector<double> out(size_t(T) * D, 0.0), alpha(size_t(T) * N), sum_alpha(size_t(N), 0.0);
      for (int t = 0; t < T; ++t) {
        std::vector<double> sc(static_cast<size_t>(N));
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < N; ++i) {
          double d = 0;
          for (int j = 0; j < D; ++j) d += double(tt::to_float(v[size_t((i * T + t) * D + j)])) * tt::to_float(w[size_t(j)]);
          sc[size_t(i)] = d;
          mx = std::max(mx, d);
        }
        for (int i = 0; i < N; ++i) sum += std::exp(sc[size_t(i)] - mx);
        for (int i = 0; i < N; ++i) {
          const double a = std::exp(sc[size_t(i)] - mx) / sum;
          alpha[size_t(t * N + i)] = a;
          sum_alpha[size_t(i)] += a;
          for (int j = 0; j < D; ++j) out[size_t(t * D + j)] += a * tt::to_float(v[size_t((i * T + t) * D + j)]);
        }
      }
      tt::check_close<float>(dalpha.download(), alpha, 1e-5, "alpha");
      tt::check_close<float>(dout.download(), out, 1e-5, "out");
      tt::check_close<float>(dsum.download(), sum_alpha, 1e-5, "weights added atomically (once per program)");
    }
  });
}

// Every backend: tiles of 8 x 128 (the suite's) and 4 x 64 on 4 warps, a last row tile that is
// cut short, outputs poisoned.
BOOST_AUTO_TEST_CASE(row_absmax_scale_values) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (auto [M, N, BM, BN] : {std::tuple{37, 256, 8, 128}, std::tuple{21, 192, 4, 64}}) {
      auto x = tt::random_vector<bf16_t>(size_t(M) * N, 11, -3.0, 3.0), g = tt::random_vector<bf16_t>(size_t(M) * N, 12);
      auto dx = be.upload<bf16_t>(x), dg = be.upload<bf16_t>(g);
      auto dq = be.alloc_poisoned<float>(size_t(M) * N), ds = be.alloc_poisoned<float>(size_t(N / BN) * M);
      row_scale()[{(M + BM - 1) / BM, N / BN}](dx.ptr(), dg.ptr(), dq.ptr(), ds.ptr(), M, N, BM, BN, be.options());
      std::vector<double> q, s;
      row_scale_reference(x, g, M, N, BN, q, s);
      tt::check_close<float>(dq.download(), q, 1e-6, "scaled values");
      tt::check_close<float>(ds.download(), s, 1e-6, "row scales");
    }
  });
}

#ifdef TRITIUM_HAS_CUDA_BACKEND

template <class T> T* addr(uint64_t i) { return tt::fake_address<T>(i); }

// Writes the cubin of ks under TRITIUM_DUMP (for cuobjdump) and returns its SASS instructions.
int64_t sass_instructions(const tritium::jit::cuda::KernelSource& ks) {
  const auto cubin = tritium::jit::cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a");
  if (const char* dir = std::getenv("TRITIUM_DUMP"); dir && *dir)
    std::ofstream(std::string(dir) + "/" + ks.entry + ".sm_90a.cubin", std::ios::binary).write(cubin.data(), std::streamsize(cubin.size()));
  return tritium::jit::cuda::cubin_instructions(cubin);
}

// vLLM's silu_mul_quant_fp8 tile ([8, 128], 4 warps, bf16 loads: 8 elements a thread, 16 lanes a
// row): the row absmax combines a thread's 8 elements and shuffles over xor 8, 4, 2, 1; y stays
// in registers and the division reads the row's scale from a register. Shared memory holds the 8
// row results only, for the [8] scale store (one barrier, as Triton's layout change). Before:
// y copied to shared memory and reduced one warp a row (4160 bytes, 4 barriers, 864 SASS
// instructions against 192 now).
BOOST_AUTO_TEST_CASE(row_reduction_in_lane_groups) {
  if (!tt::nvrtc_or_skip()) return;
  auto ks = tt::compile_cuda(row_scale(), tt::CudaCheck().routed(), addr<bf16_t>(0), addr<bf16_t>(1), addr<float>(2), addr<float>(3),
                             65536, 2048, 8, 128);
  const std::string body = tt::kernel_body(ks);
  BOOST_TEST_MESSAGE("row_absmax_scale: " << sass_instructions(ks) << " SASS instructions, " << ks.smem_bytes << " bytes shared");
  // (Since s49 the f32 store of the tile caps the mapping at 4 lanes a thread - each store 16
  // bytes - so a row of 128 is 32 lanes: xor 16 .. 1. vLLM's fp8 store keeps 8 lanes, 16 a row.)
  BOOST_TEST(tt::occurrences(body, "tt_shfl_xor(") == 5u, body);
  for (int off : {16, 8, 4, 2, 1}) BOOST_TEST(tt::occurrences(body, fmt::format(", {})", off)) >= 1u, off);
  BOOST_TEST(tt::occurrences(body, "__syncthreads") == 1u, body);
  BOOST_TEST(ks.smem_bytes == 32);
  BOOST_TEST(tt::occurrences(body, "(shared)") == 1u, body);  // the [8] results' buffer
}

// A row too long for a warp's lanes (4096 bf16 at 8 a thread: 512 lanes) keeps the path through
// a buffer, and rows of 4 elements at 4 a thread (one lane a row; the f32 store caps the mapping
// at 4 lanes since s49) need no shuffle.
BOOST_AUTO_TEST_CASE(lane_groups_only_where_a_row_fits_a_warp) {
  if (!tt::nvrtc_or_skip()) return;
  auto wide = tt::compile_cuda(row_scale(), tt::CudaCheck().routed(), addr<bf16_t>(0), addr<bf16_t>(1), addr<float>(2), addr<float>(3),
                               64, 8192, 2, 4096);
  BOOST_TEST(tt::occurrences(tt::kernel_body(wide), "one a step") == 0u);        // no row registers
  BOOST_TEST(tt::occurrences(tt::kernel_body(wide), "tt_shfl_xor(") == 2u);      // the warp loop's value and flag
  auto narrow = tt::compile_cuda(row_scale(), tt::CudaCheck().routed(), addr<bf16_t>(0), addr<bf16_t>(1), addr<float>(2),
                                 addr<float>(3), 4096, 64, 128, 4);
  const std::string body = tt::kernel_body(narrow);
  BOOST_TEST(tt::occurrences(body, "tt_shfl_xor(") == 0u, body);
  BOOST_TEST(tt::occurrences(body, "one a step") == 1u, body);
  BOOST_TEST(tt::occurrences(body, "__syncthreads") == 1u, body);
}

// The row softmax's tiles as the value test launches them: each compiles, and the ones whose rows
// fit a warp's lanes reduce with shuffles inside the lane groups only.
BOOST_AUTO_TEST_CASE(row_softmax_tiles_compile) {
  if (!tt::nvrtc_or_skip()) return;
  for (auto [BM, BN, warps, group] : {std::tuple{4, 32, 4, 32}, std::tuple{16, 64, 4, 16}, std::tuple{32, 16, 2, 4}, std::tuple{2, 256, 8, 0}}) {
    auto ks = tt::compile_cuda(row_softmax(), tt::CudaCheck().warps(warps).routed(), addr<float>(0), addr<float>(1), addr<int32_t>(2),
                               addr<float>(3), 4096, BM, BN);
    const std::string body = tt::kernel_body(ks);
    BOOST_TEST(tt::occurrences(body, "one a step") == (group ? 4u : 0u), BM << "x" << BN << "\n" << body);  // max, sum, argmax's two
    if (group) BOOST_TEST(tt::occurrences(body, fmt::format("tt_shfl_xor(acc")) == 4u * size_t(std::countr_zero(unsigned(group))), body);  // argmax shuffles two
  }
}

// Liger's attn_res in small (8 warps, rows of 4096, MAX_BLOCKS 8): the [8] vectors sit in every
// warp (element tid & 7), and their max, sum and 8 picked weights are butterflies over xor 4, 2,
// 1 - no shared memory. Only the 8 row sums over [4096] keep shared partials. Before: 28 shared
// arrays (each [8] sum went through the warps' partials and flags), 36 barriers, 2984 SASS
// instructions against 1736 now. The atomic add of the [8] weights stays one copy's (tid < 8).
BOOST_AUTO_TEST_CASE(small_vectors_in_every_warp) {
  if (!tt::nvrtc_or_skip()) return;
  auto ks = tt::compile_cuda(depth_softmax(), tt::CudaCheck().warps(8).routed(), addr<bf16_t>(0), addr<bf16_t>(1), addr<float>(2),
                             addr<float>(3), addr<float>(4), 8, 4096, 4096, 4096, 8);
  const std::string body = tt::kernel_body(ks);
  BOOST_TEST_MESSAGE("depth_softmax: " << sass_instructions(ks) << " SASS instructions, " << ks.smem_bytes << " bytes shared, "
                                       << tt::occurrences(body, "__syncthreads") << " barriers");
  BOOST_TEST(tt::occurrences(body, "* const sh") == 8u, body);
  BOOST_TEST(tt::occurrences(body, "tt_shfl_xor(acc") == 8u + 10u * 3u, body);  // 8 warp loops, 10 unrolled butterflies
  // One barrier a row sum (its partials); none after each block's if, whose side has its writes
  // behind that barrier already (there was one after every if: 16).
  BOOST_TEST(tt::occurrences(body, "__syncthreads") == 8u, body);
  BOOST_TEST(tt::occurrences(body, "tid & 7") >= 10u, body);
}

#endif

BOOST_AUTO_TEST_SUITE_END()
