// The FMA dot (exact fp32 `input_precision="ieee"`, f64): on the GPU a register-blocked outer
// product - each thread a micro-tile of C, 16-byte reads of swizzled tiles along their contiguous
// dim (jit/cuda/lowering/dot.cpp, assign_layouts' fma_dot_layout). Values on every backend for
// each operand majorness (A as stored or transposed, B as stored or transposed), ragged sizes and
// several block shapes and warp counts: within 1e-5 (f32) of float64, and on a GPU bit for bit
// equal to the sequential fma over k that the loop promises. The generated code for sm_90a: the
// vector reads and the fma count of the loop body.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda_codegen_check.h"
#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;

namespace {

// out[M, N] = A @ B in T: A = x [M, K] as stored or trans(x) with x [K, M]; B = y [K, N] as
// stored or trans(y) with y [N, K] (a Linear's W^T). Rows and columns past the edges wrap.
template <class T> tritium::Kernel& fma_matmul() {
  static tritium::Kernel k = tritium::kernel(
      "fma_matmul", [](tl::ptr<T> x, tl::ptr<T> y, tl::ptr<T> out, tl::i32 M, tl::i32 N, tl::i32 K, int BM, int BN,
                       int BK, bool A_T, bool B_T) {
        auto rm = (tl::program_id(0) * BM + tl::arange(0, BM)) % M, rn = (tl::program_id(1) * BN + tl::arange(0, BN)) % N;
        auto rk = tl::arange(0, BK);
        auto x_ptrs = A_T ? x + rk(tl::_, tl::None) * M + rm(tl::None, tl::_) : x + rm(tl::_, tl::None) * K + rk(tl::None, tl::_);
        auto y_ptrs = B_T ? y + rn(tl::None, tl::_) * K + rk(tl::_, tl::None) : y + rk(tl::_, tl::None) * N + rn(tl::None, tl::_);
        auto acc = tl::zeros({BM, BN}, tritium::dtype_of<T>());
        for (auto kt : tl::range(0, tl::cdiv(K, BK))) {
          auto left = K - kt * BK;
          tl::tensor a = A_T ? tl::trans(tl::load(x_ptrs, rk(tl::_, tl::None) < left, 0.0))
                             : tl::load(x_ptrs, rk(tl::None, tl::_) < left, 0.0);
          tl::tensor b = tl::load(y_ptrs, rk(tl::_, tl::None) < left, 0.0);  // [BK, BN] either way
          acc = tl::dot(a, b, acc, std::nullopt, "ieee");
          if (A_T) x_ptrs += BK * M;
          else x_ptrs += BK;
          if (B_T) y_ptrs += BK;
          else y_ptrs += BK * N;
        }
        auto cm = tl::program_id(0) * BM + tl::arange(0, BM), cn = tl::program_id(1) * BN + tl::arange(0, BN);
        tl::store(out + cm(tl::_, tl::None) * N + cn(tl::None, tl::_), acc,
                  (cm(tl::_, tl::None) < M) & (cn(tl::None, tl::_) < N));
      });
  return k;
}

// The same product (A, B row-major) through block pointers, whose tiles the ring copies into the
// FMA dot's swizzled tiles (16-byte cp.async for sm_90a at present; TMA where tma.cpp takes a tile).
template <class T> tritium::Kernel& fma_matmul_block_pointers() {
  static tritium::Kernel k = tritium::kernel(
      "fma_matmul_bp", [](tl::ptr<T> x, tl::ptr<T> y, tl::ptr<T> out, tl::i32 M, tl::i32 N, tl::i32 K, int BM, int BN, int BK) {
        auto pm = tl::program_id(0) * BM, pn = tl::program_id(1) * BN;
        auto a_bp = tl::make_block_ptr(x, {M, K}, {K.to(tl::int64), 1}, {pm, 0}, {BM, BK}, {1, 0});
        auto b_bp = tl::make_block_ptr(y, {K, N}, {N.to(tl::int64), 1}, {0, pn}, {BK, BN}, {1, 0});
        auto acc = tl::zeros({BM, BN}, tritium::dtype_of<T>());
        for (auto kt : tl::range(0, tl::cdiv(K, BK))) {
          (void)kt;
          acc = tl::dot(tl::load(a_bp, {0, 1}), tl::load(b_bp, {0, 1}), acc, std::nullopt, "ieee");
          a_bp = tl::advance(a_bp, {0, BK});
          b_bp = tl::advance(b_bp, {BK, 0});
        }
        auto c_bp = tl::make_block_ptr(out, {M, N}, {N.to(tl::int64), 1}, {pm, pn}, {BM, BN}, {1, 0});
        tl::store(c_bp, acc, {0, 1});
      });
  return k;
}

struct Case {
  int M, N, K, bm, bn, bk, warps;
};

template <class T>
void run_case(const tt::Backend& be, const Case& c, bool a_t, bool b_t, uint32_t seed, bool block_pointers = false) {
  auto a = tt::random_vector<T>(size_t(c.M) * c.K, seed, -1, 1);  // logical A [M, K], B [K, N]
  auto b = tt::random_vector<T>(size_t(c.K) * c.N, seed + 1, -1, 1);
  tt::host_vector<T> x = a, y = b;  // as stored
  if (a_t)
    for (int i = 0; i < c.M; ++i)
      for (int k = 0; k < c.K; ++k) x[size_t(k) * c.M + i] = a[size_t(i) * c.K + k];
  if (b_t)
    for (int k = 0; k < c.K; ++k)
      for (int j = 0; j < c.N; ++j) y[size_t(j) * c.K + k] = b[size_t(k) * c.N + j];
  std::vector<double> ref(size_t(c.M) * c.N), mag(ref.size());
  tt::host_vector<T> seq(ref.size());  // the sequential fma over k, in T
  for (int i = 0; i < c.M; ++i)
    for (int j = 0; j < c.N; ++j) {
      T s = 0;
      for (int k = 0; k < c.K; ++k) {
        const T p = a[size_t(i) * c.K + k], q = b[size_t(k) * c.N + j];
        s = std::fma(p, q, s);
        ref[size_t(i) * c.N + j] += double(p) * double(q);
        mag[size_t(i) * c.N + j] += std::abs(double(p) * double(q));
      }
      seq[size_t(i) * c.N + j] = s;
    }
  const std::string what = fmt::format("{} {}x{}x{} blocks {}x{}x{} warps {}{}{}", tritium::dtype_name(tritium::dtype_of<T>()),
                                       c.M, c.N, c.K, c.bm, c.bn, c.bk, c.warps, a_t ? " trans(A)" : "", b_t ? " trans(B)" : "")
                           + (block_pointers ? " block pointers" : "");
  BOOST_TEST_CONTEXT(what) {
    auto dx = be.upload<T>(x), dy = be.upload<T>(y);
    auto dout = be.alloc_poisoned<T>(ref.size());
    auto opts = be.options();
    opts.num_warps = c.warps;
    opts.num_stages = 3;
    const tritium::Grid grid{tritium::cdiv(c.M, c.bm), tritium::cdiv(c.N, c.bn)};
    if (block_pointers)
      fma_matmul_block_pointers<T>()[grid](dx.ptr(), dy.ptr(), dout.ptr(), c.M, c.N, c.K, c.bm, c.bn, c.bk, opts);
    else
      fma_matmul<T>()[grid](dx.ptr(), dy.ptr(), dout.ptr(), c.M, c.N, c.K, c.bm, c.bn, c.bk, a_t, b_t, opts);
    const auto out = dout.download();
    tt::check_dot<T>(out, ref, mag, std::is_same_v<T, float> ? 1e-5 : 1e-12, what);
    if (be.device.is_cuda()) tt::check_equal<T>(out, seq, what + " (the sequential fma over k)");
  }
}

// Ragged sizes; micro-tiles from 8 x 8 (128 x 128 on 8 warps) down to one warp's 16 x 16.
const std::vector<Case> kCases = {
    {150, 130, 100, 128, 128, 32, 8}, {200, 72, 64, 128, 64, 32, 4}, {77, 45, 70, 64, 32, 16, 4},
    {33, 70, 48, 32, 64, 32, 2},      {20, 24, 40, 16, 16, 16, 1},
};

template <class T> std::string body(int bm, int bn, int bk, int warps, bool a_t, bool b_t) {
  return tt::kernel_body(tt::compile_cuda(fma_matmul<T>(), tt::CudaCheck().warps(warps).target(90, "sm_90a").routed(),
                                          tt::fake_address<T>(0), tt::fake_address<T>(1), tt::fake_address<T>(2), 1000,
                                          1000, 1000, bm, bn, bk, a_t, b_t));
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_fma_dot)

BOOST_AUTO_TEST_CASE(values_f32_every_majorness) {
  tt::for_each_backend([](const tt::Backend& be) {
    uint32_t seed = 10;
    for (int form = 0; form < 4; ++form)
      for (const Case& c : kCases) run_case<float>(be, c, form & 1, form & 2, seed += 2);
  });
}

// Block pointers, boundary-checked (ragged sizes) and not.
BOOST_AUTO_TEST_CASE(values_block_pointers) {
  tt::for_each_backend([](const tt::Backend& be) {
    run_case<float>(be, {200, 136, 100, 128, 128, 32, 8}, false, false, 90, true);
    run_case<float>(be, {77, 45, 70, 64, 32, 16, 4}, false, false, 92, true);
    run_case<double>(be, {100, 72, 40, 64, 64, 16, 4}, false, false, 94, true);
  });
}

BOOST_AUTO_TEST_CASE(values_f64) {
  tt::for_each_backend([](const tt::Backend& be) {
    uint32_t seed = 50;
    for (int form = 0; form < 4; ++form) {
      run_case<double>(be, {77, 45, 70, 64, 32, 16, 4}, form & 1, form & 2, seed += 2);
      run_case<double>(be, {100, 90, 40, 64, 64, 16, 4}, form & 1, form & 2, seed += 2);
    }
  });
}

// 128 x 128 x 32 on 8 warps: 8 x 8 fragments a thread. K-major tiles are read 4 k at a time (one
// float4 a row of A, a column of B), M- and N-major ones 4 rows (columns) at a time, so the loop
// body has 16 vector reads for 256 fmas (4 for 64 when neither is K-major) and no scalar read.
BOOST_AUTO_TEST_CASE(sm90a_loop_body) {
  if (!tt::nvrtc_or_skip()) return;
  for (int form = 0; form < 4; ++form) {
    const bool a_t = form & 1, b_t = form & 2, k_steps = !a_t || b_t;
    BOOST_TEST_CONTEXT("trans(A) " << a_t << " trans(B) " << b_t) {
      const std::string s = body<float>(128, 128, 32, 8, a_t, b_t);
      BOOST_TEST(count(s, fmt::format("// dot as an FMA loop over K: 8 x 8 fragments a thread, {} k a step", k_steps ? 4 : 1)) == 1u);
      BOOST_TEST(count(s, "= fmaf(tt_fa[") == (k_steps ? 256u : 64u));
      BOOST_TEST(count(s, "*reinterpret_cast<const float4*>(tt_smem") == (k_steps ? 16u : 4u));
      BOOST_TEST(count(s, "*reinterpret_cast<const float*>(tt_smem") == 0u);
    }
  }
  // Small tiles (lanes past the tile replicate) in every form: 16-byte reads still, nothing scalar.
  for (const Case& c : {Case{0, 0, 0, 16, 16, 16, 1}, Case{0, 0, 0, 32, 64, 32, 2}})
    for (int form = 0; form < 4; ++form)
      BOOST_TEST_CONTEXT(c.bm << "x" << c.bn << "x" << c.bk << " form " << form) {
        const std::string s = body<float>(c.bm, c.bn, c.bk, c.warps, form & 1, form & 2);
        BOOST_TEST(count(s, "*reinterpret_cast<const float4*>(tt_smem") > 0u);
        BOOST_TEST(count(s, "*reinterpret_cast<const float*>(tt_smem") == 0u);
      }
  // sm_80 (no warpgroups; the same loop).
  const std::string ampere = tt::kernel_body(tt::compile_cuda(
      fma_matmul<float>(), tt::CudaCheck().warps(8).target(80, "sm_80").routed(), tt::fake_address<float>(0),
      tt::fake_address<float>(1), tt::fake_address<float>(2), 1000, 1000, 1000, 128, 128, 32, false, false));
  BOOST_TEST(count(ampere, "*reinterpret_cast<const float4*>(tt_smem") == 16u);
  // Block pointers: the tiles' copies into the swizzled tiles compile.
  const std::string bp = tt::kernel_body(tt::compile_cuda(
      fma_matmul_block_pointers<float>(), tt::CudaCheck().warps(8).target(90, "sm_90a").routed(), tt::fake_address<float>(0),
      tt::fake_address<float>(1), tt::fake_address<float>(2), 1024, 1024, 1024, 128, 128, 32));
  BOOST_TEST(count(bp, "*reinterpret_cast<const float4*>(tt_smem") == 16u);
  // f64: 16-byte reads are two elements.
  const std::string d = body<double>(64, 64, 16, 4, false, false);
  BOOST_TEST(count(d, "*reinterpret_cast<const double2*>(tt_smem") > 0u);
  BOOST_TEST(count(d, "*reinterpret_cast<const double*>(tt_smem") == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
