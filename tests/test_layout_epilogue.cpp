// How the layout generator stores a dot's result and what a pipelined loop costs before its first
// trip (issue 27, tutorial 03's per-program costs; docs/cuda-backend.md, "The epilogue and the
// prologue of a pipelined dot"). Values on every backend: C = A @ B over a K loop, the f32
// accumulator stored as f16, bf16 or f32, row-major or transposed, masked into a padded C whose
// padding must stay poisoned, sizes not multiples of the blocks. Code shape (NVRTC for sm_90a and
// sm_80, never run here): a 16-bit result of an mma accumulator goes to shared memory by stmatrix
// (16-byte rows, a quarter of the stores), and a TMA-filled ring carries no pointer blocks.
#include <boost/test/unit_test.hpp>

#include "test_support.h"

#include <cmath>
#include <string>
#include <vector>

#ifdef TRITIUM_HAS_CUDA_BACKEND
#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#endif

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::bf16_t;
using tritium::f16_t;

namespace {

// C[M, N] = A[M, K] @ B[K, N] (tutorial 03's loop: wrapped rows and columns, K masked), stored as
// O through `c + m * ldc + n` or, TRANSPOSED_C, `c + m + n * ldc` (C^T row-major) under the mask
// m < M, n < N.
template <class T, class O>
tritium::Kernel& epilogue_matmul() {
  static tritium::Kernel k = tritium::kernel(
      "epilogue_matmul", [](tl::ptr<T> a, tl::ptr<T> b, tl::ptr<O> c, tl::i32 M, tl::i32 N, tl::i32 K, tl::i32 ldc,
                            int BM, int BN, int BK, bool TRANSPOSED_C) {
        auto pid_m = tl::program_id(0), pid_n = tl::program_id(1);
        auto rm = (pid_m * BM + tl::arange(0, BM)) % M, rn = (pid_n * BN + tl::arange(0, BN)) % N;
        auto rk = tl::arange(0, BK);
        auto a_ptrs = a + (rm(tl::_, tl::None) * K + rk(tl::None, tl::_));
        auto b_ptrs = b + (rk(tl::_, tl::None) * N + rn(tl::None, tl::_));
        auto acc = tl::zeros({BM, BN}, tl::float32);
        for (auto kk : tl::range(0, tl::cdiv(K, BK))) {
          auto left = K - kk * BK;
          acc += tl::dot(tl::load(a_ptrs, rk(tl::None, tl::_) < left, 0.0), tl::load(b_ptrs, rk(tl::_, tl::None) < left, 0.0));
          a_ptrs += BK;
          b_ptrs += BK * N;
        }
        auto cm = pid_m * BM + tl::arange(0, BM), cn = pid_n * BN + tl::arange(0, BN);
        auto offs = TRANSPOSED_C ? cm(tl::_, tl::None) + cn(tl::None, tl::_) * ldc : cm(tl::_, tl::None) * ldc + cn(tl::None, tl::_);
        tl::store(c + offs, acc.to(tritium::dtype_of<O>()), (cm(tl::_, tl::None) < M) & (cn(tl::None, tl::_) < N));
      });
  return k;
}

struct Case {
  int M, N, K, bm, bn, bk, warps;
  bool transposed_c;
};

template <class T, class O> void run_case(const tt::Backend& be, const Case& c, uint32_t seed) {
  auto a = tt::random_vector<T>(size_t(c.M) * c.K, seed, -1, 1);
  auto b = tt::random_vector<T>(size_t(c.K) * c.N, seed + 1, -1, 1);
  // C's rows (transposed: columns) padded by 3 elements the mask must leave alone.
  const int inner = c.transposed_c ? c.M : c.N, ldc = inner + 3;
  const size_t size = size_t(ldc) * (c.transposed_c ? c.N : c.M);
  auto at = [&](int i, int j) { return c.transposed_c ? size_t(j) * ldc + i : size_t(i) * ldc + j; };
  std::vector<double> ref(size_t(c.M) * c.N), mag(ref.size());
  for (int i = 0; i < c.M; ++i)
    for (int kk = 0; kk < c.K; ++kk) {
      const double av = tt::to_double(a[size_t(i) * c.K + kk]);
      for (int j = 0; j < c.N; ++j) {
        const double p = av * tt::to_double(b[size_t(kk) * c.N + j]);
        ref[size_t(i) * c.N + j] += p;
        mag[size_t(i) * c.N + j] += std::abs(p);
      }
    }
  const std::string what = std::string(tritium::dtype_name(tritium::dtype_of<T>())) + " -> " +
                           tritium::dtype_name(tritium::dtype_of<O>()) + " " + std::to_string(c.M) + "x" +
                           std::to_string(c.N) + "x" + std::to_string(c.K) + " blocks " + std::to_string(c.bm) + "x" +
                           std::to_string(c.bn) + "x" + std::to_string(c.bk) + " warps " + std::to_string(c.warps) +
                           (c.transposed_c ? " C^T" : "");
  BOOST_TEST_CONTEXT(what) {
    auto da = be.template upload<T>(a), db = be.template upload<T>(b);
    auto dc = be.template alloc_poisoned<O>(size);
    auto opts = be.options();
    opts.num_warps = c.warps;
    opts.num_stages = 3;
    epilogue_matmul<T, O>()[{tritium::cdiv(c.M, c.bm), tritium::cdiv(c.N, c.bn)}](
        da.ptr(), db.ptr(), dc.ptr(), c.M, c.N, c.K, ldc, c.bm, c.bn, c.bk, c.transposed_c, opts);
    const tt::host_vector<O> out = dc.download();
    // The padding stays poisoned; the rest against float64 (16-bit results rounded once).
    size_t written_padding = 0;
    for (size_t x = 0; x < size; ++x)
      if (x % size_t(ldc) >= size_t(inner) && !tt::is_poison<O>(out[x])) ++written_padding;
    BOOST_TEST(written_padding == 0u, what << ": " << written_padding << " padding elements written past the mask");
    tt::host_vector<O> inside(ref.size());
    for (int i = 0; i < c.M; ++i)
      for (int j = 0; j < c.N; ++j) inside[size_t(i) * c.N + j] = out[at(i, j)];
    const double tol = std::is_same_v<O, float> ? 1e-3 : std::is_same_v<O, bf16_t> ? 1e-2 : 2e-3;
    tt::check_dot<O>(inside, ref, mag, tol, what);
  }
}

// Ragged sizes (no dim a multiple of its block) through one and two warpgroups (4 / 8 warps).
std::vector<Case> cases(bool transposed) {
  return {
      {150, 70, 130, 64, 32, 32, 4, transposed},
      {200, 136, 72, 128, 64, 32, 8, transposed},
      {90, 260, 40, 64, 128, 32, 4, transposed},
  };
}

template <class T, class O> void run_all(uint32_t seed) {
  tt::for_each_backend([&](const tt::Backend& be) {
    uint32_t s = seed;
    for (bool tr : {false, true})
      for (const Case& c : cases(tr)) run_case<T, O>(be, c, s += 2);
  });
}

#ifdef TRITIUM_HAS_CUDA_BACKEND
namespace cuda = tritium::jit::cuda;

template <class X> X* addr(uint64_t i) { return reinterpret_cast<X*>(uint64_t{0x7f0000000000} + i * 0x100000); }

// Through layouts for `cc`, compiled for `arch` (a compile error fails the test): the kernel's text.
template <class T, class O>
std::string through_layouts(int num_warps, int cc, const std::string& arch, int bm, int bn, int bk, bool transposed_c) {
  auto f = epilogue_matmul<T, O>().optimized_function(addr<T>(0), addr<T>(1), addr<O>(2), 4096, 4096, 4096, 4096, bm,
                                                       bn, bk, transposed_c);
  tritium::jit::CompileOptions opts;
  opts.num_warps = num_warps;
  opts.num_stages = 3;
  cuda::KernelSource ks = cuda::generate_cuda_layouts(*f, opts, 219 * 1024, cc);
  try {
    BOOST_TEST(!cuda::compile_to_cubin(ks.source, ks.entry, arch).empty());
  } catch (const tritium::Error& e) {
    BOOST_ERROR("kernel " << ks.entry << " does not compile for " << arch << ":\n" << e.what());
  }
  return ks.source.substr(ks.source.find("__global__"));
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}
#endif

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layout_epilogue)

BOOST_AUTO_TEST_CASE(f16_inputs_f16_result) { run_all<f16_t, f16_t>(10); }
BOOST_AUTO_TEST_CASE(bf16_inputs_bf16_result) { run_all<bf16_t, bf16_t>(20); }
BOOST_AUTO_TEST_CASE(f16_inputs_f32_result) { run_all<f16_t, float>(30); }

#ifdef TRITIUM_HAS_CUDA_BACKEND
// Tutorial 03's 4096 config (128 x 256 x 64, 8 warps): the accumulator (128 f32 a thread) cast to
// f16 or bf16 goes to shared memory as 16 stmatrix.x4 (8 elements each) and no element store; the
// store reads it back 16 bytes at a time. Transposed, the writes stay stmatrix (the read-back
// changes). An f32 result and mma.sync on sm_80 (no stmatrix) keep element stores.
BOOST_AUTO_TEST_CASE(sixteen_bit_results_leave_the_accumulator_by_stmatrix) {
  if (!cuda::nvrtc_available()) return;
  for (bool tr : {false, true}) {
    BOOST_TEST(count(through_layouts<f16_t, f16_t>(8, 90, "sm_90a", 128, 256, 64, tr), "tt_stmatrix_x4(") == 16u);
    BOOST_TEST(count(through_layouts<bf16_t, bf16_t>(8, 90, "sm_90a", 128, 256, 64, tr), "tt_stmatrix_x4(") == 16u);
  }
  BOOST_TEST(count(through_layouts<f16_t, float>(8, 90, "sm_90a", 128, 256, 64, false), "tt_stmatrix") == 0u);
  BOOST_TEST(count(through_layouts<f16_t, f16_t>(4, 80, "sm_80", 128, 128, 32, false), "tt_stmatrix") == 0u);
  // A 64 x 16 wgmma accumulator holds 8 elements a thread: one instruction.
  BOOST_TEST(count(through_layouts<f16_t, f16_t>(4, 90, "sm_90a", 64, 16, 64, false), "tt_stmatrix_x4(") == 1u);
}

// The ring filled by TMA reads no pointer: the pointer blocks A and B advance through are not
// carried (no pointer array in the loop), their initial values are made in the prefill's cp.async
// branch only, and cp.async's stages compute their addresses as init + (trip + ahead) * step.
BOOST_AUTO_TEST_CASE(a_tma_ring_carries_no_pointer_blocks) {
  if (!cuda::nvrtc_available()) return;
  const std::string body = through_layouts<f16_t, f16_t>(8, 90, "sm_90a", 128, 256, 64, false);
  BOOST_TEST(body.find("tt_tma_load_2d(") != std::string::npos);
  const size_t loop = body.find("for (int32_t iv");
  const size_t end = body.find("tt_cp_async_wait<0>();  // no copy lands after the loop", loop);
  BOOST_TEST_REQUIRE(end != std::string::npos);
  BOOST_TEST(count(body.substr(0, loop), "tt_f16* v") == 2u);  // A's and B's initial blocks, declared
  const std::string loop_text = body.substr(loop, end - loop);
  BOOST_TEST(count(loop_text, "tt_f16* v") == 0u);
  BOOST_TEST(count(loop_text, "(int64_t)((trip") >= 2u);
}
#endif

BOOST_AUTO_TEST_SUITE_END()
