// tl::range(..., {.flatten = true}): a loop nest fused into one loop (jit/passes/fuse_nested_loops.h),
// so that software pipelining runs across the outer loop. Values on every backend against float64
// for nests written three ways - a persistent matmul whose K loop carries its pointer blocks
// (tutorial 03's form, not tutorial 09's), a persistent row-sum loop without a dot, and nests the
// pass must leave as written - with programs that walk several outer trips, programs that walk
// none, and an inner loop of no trip (the fused loop's fallback). Plus the IR the pass leaves and,
// for sm_90a, the code: one pipelined loop whose wgmma accumulator starts by its scale-d flag.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda_codegen_check.h"
#include "ir/printer.h"
#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::f16_t;

namespace {

// C = A @ B, tiles walked persistently: program p takes tiles p, p + P, ...; each tile's K loop
// advances carried pointer blocks; the tiles each program finished are counted (an outer carried
// value, updated in the epilogue) and stored at the end.
auto persistent_matmul = tritium::kernel(
    "fuse_persistent_matmul",
    [](tl::ptr<f16_t> a, tl::ptr<f16_t> b, tl::ptr<float> c, tl::ptr<int32_t> done, tl::i32 M, tl::i32 N, tl::i32 K,
       int BM, int BN, int BK) {
      auto pid = tl::program_id(0);
      auto programs = tl::num_programs(0);
      auto tiles_n = tl::cdiv(N, BN);
      auto tiles = tl::cdiv(M, BM) * tiles_n;
      auto count = tl::zeros({}, tl::int32);
      for (auto tile : tl::range(pid, tiles, programs, {.flatten = true})) {
        auto offs_m = (tile / tiles_n) * BM + tl::arange(0, BM);
        auto offs_n = (tile % tiles_n) * BN + tl::arange(0, BN);
        auto offs_k = tl::arange(0, BK);
        auto a_ptrs = a + (offs_m(tl::_, tl::None) * K + offs_k(tl::None, tl::_));
        auto b_ptrs = b + (offs_k(tl::_, tl::None) * N + offs_n(tl::None, tl::_));
        auto acc = tl::zeros({BM, BN}, tl::float32);
        for (auto k : tl::range(0, K, BK)) {
          auto x = tl::load(a_ptrs, (offs_m(tl::_, tl::None) < M) & (offs_k(tl::None, tl::_) < K - k), 0.0);
          auto y = tl::load(b_ptrs, (offs_k(tl::_, tl::None) < K - k) & (offs_n(tl::None, tl::_) < N), 0.0);
          acc = tl::dot(x, y, acc);
          a_ptrs += BK;
          b_ptrs += BK * N;
        }
        tl::store(c + offs_m(tl::_, tl::None) * N + offs_n(tl::None, tl::_), acc,
                  (offs_m(tl::_, tl::None) < M) & (offs_n(tl::None, tl::_) < N));
        count = count + 1;
      }
      tl::store(done + pid, count);
    },
    {"a", "b", "c", "done", "M", "N", "K", "BM", "BN", "BK"});

// sums[r] = sum of row r of x [R, C], rows walked persistently, columns a block a trip.
auto persistent_row_sums = tritium::kernel(
    "fuse_row_sums",
    [](tl::ptr<float> x, tl::ptr<float> sums, tl::ptr<int32_t> done, tl::i32 R, tl::i32 C, int BLOCK) {
      auto pid = tl::program_id(0);
      auto count = tl::zeros({}, tl::int32);
      for (auto row : tl::range(pid, R, tl::num_programs(0), {.flatten = true})) {
        auto base = x + row * C;
        auto acc = tl::zeros({BLOCK}, tl::float32);
        for (auto col : tl::range(0, C, BLOCK)) {
          auto offs = col + tl::arange(0, BLOCK);
          acc = acc + tl::load(base + offs, offs < C, 0.0);
        }
        tl::store(sums + row, tl::sum(acc, 0));
        count = count + 1;
      }
      tl::store(done + pid, count);
    },
    {"x", "sums", "done", "R", "C", "BLOCK"});

// Nests the pass leaves as written: the inner loop's end depends on the outer trip (row r sums its
// first r + 1 elements), or the prologue loads (row r starts at starts[r]).
auto unflattenable = tritium::kernel(
    "fuse_unflattenable",
    [](tl::ptr<float> x, tl::ptr<int32_t> starts, tl::ptr<float> out, tl::i32 R, tl::i32 C, int MODE, int BLOCK) {
      for (auto row : tl::range(tl::program_id(0), R, tl::num_programs(0), {.flatten = true})) {
        auto first = MODE == 0 ? tl::zeros({}, tl::int32) : tl::load(starts + row);
        auto end = MODE == 0 ? row + 1 : tl::minimum(first + 2 * BLOCK, C);
        auto acc = tl::zeros({BLOCK}, tl::float32);
        for (auto col : tl::range(first, end, BLOCK)) {
          auto offs = col + tl::arange(0, BLOCK);
          acc = acc + tl::load(x + row * C + offs, offs < end, 0.0);
        }
        tl::store(out + row, tl::sum(acc, 0));
      }
    },
    {"x", "starts", "out", "R", "C", "MODE", "BLOCK"});

void check_counts(const tt::host_vector<int32_t>& done, int programs, int64_t outer) {
  for (int p = 0; p < programs; ++p) {
    const int64_t want = p < outer ? (outer - p + programs - 1) / programs : 0;
    BOOST_TEST(done[size_t(p)] == want, "program " << p);
  }
}

void run_matmul(const tt::Backend& be, int M, int N, int K, int bm, int bn, int bk, int programs, int warps) {
  const std::string what = fmt::format("{}x{}x{} blocks {}x{}x{}, {} programs, {} warps", M, N, K, bm, bn, bk, programs, warps);
  BOOST_TEST_CONTEXT(what) {
    auto a = tt::random_vector<f16_t>(size_t(M) * K, 7, -1, 1);
    auto b = tt::random_vector<f16_t>(size_t(K) * N, 8, -1, 1);
    std::vector<double> ref(size_t(M) * N), mag(ref.size());
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < K; ++k)
        for (int j = 0; j < N; ++j) {
          const double p = tt::to_double(a[size_t(i) * K + k]) * tt::to_double(b[size_t(k) * N + j]);
          ref[size_t(i) * N + j] += p;
          mag[size_t(i) * N + j] += std::abs(p);
        }
    auto da = be.upload<f16_t>(a), db = be.upload<f16_t>(b);
    auto dc = be.alloc_poisoned<float>(ref.size());
    auto dd = be.alloc_poisoned<int32_t>(size_t(programs));
    auto opts = be.options();
    opts.num_warps = warps;
    opts.num_stages = 3;
    persistent_matmul[{programs}](da.ptr(), db.ptr(), dc.ptr(), dd.ptr(), M, N, K, bm, bn, bk, opts);
    if (K == 0) {
      tt::check_close<float>(dc.download(), ref, 0.0, what);  // zeros, each written once
    } else {
      for (double& m : mag) m = std::max(m, 1e-30);
      tt::check_dot<float>(dc.download(), ref, mag, 1e-3, what);
    }
    check_counts(dd.download(), programs, int64_t(tritium::cdiv(M, bm)) * tritium::cdiv(N, bn));
  }
}

void run_row_sums(const tt::Backend& be, int R, int C, int block, int programs) {
  const std::string what = fmt::format("{} x {} rows, block {}, {} programs", R, C, block, programs);
  BOOST_TEST_CONTEXT(what) {
    auto x = tt::random_vector<float>(size_t(R) * C, 9, -1, 1);
    std::vector<double> ref(static_cast<size_t>(R), 0.0);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) ref[size_t(r)] += x[size_t(r) * C + c];
    auto dx = be.upload<float>(x);
    auto ds = be.alloc_poisoned<float>(size_t(R));
    auto dd = be.alloc_poisoned<int32_t>(size_t(programs));
    persistent_row_sums[{programs}](dx.ptr(), ds.ptr(), dd.ptr(), R, C, block, be.options());
    tt::check_close<float>(ds.download(), ref, 1e-5, what);
    check_counts(dd.download(), programs, R);
  }
}

// The optimised IR of a kernel, printed.
template <class... A> std::string optimized_ir(tritium::Kernel& k, const A&... args) {
  auto f = k.optimized_function(args...);
  return tritium::ir::print(*f);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_fuse_nested_loops)

// Programs walking several tiles (ragged in M, N and K), programs with no tile at all, and K = 0:
// no inner trip, where the nest runs as written and stores zero tiles.
BOOST_AUTO_TEST_CASE(persistent_matmul_values) {
  tt::for_each_backend([](const tt::Backend& be) {
    run_matmul(be, 150, 70, 100, 64, 32, 32, 3, 4);
    run_matmul(be, 70, 90, 40, 64, 64, 32, 5, 4);   // 4 tiles, 5 programs: the last walks none
    run_matmul(be, 33, 20, 0, 64, 32, 32, 2, 4);
  });
}

BOOST_AUTO_TEST_CASE(persistent_row_sums_values) {
  tt::for_each_backend([](const tt::Backend& be) {
    run_row_sums(be, 37, 300, 64, 4);
    run_row_sums(be, 5, 64, 64, 8);   // one column block a row; programs past the rows
    run_row_sums(be, 9, 0, 64, 3);    // no column: the nest as written, sums 0
  });
}

BOOST_AUTO_TEST_CASE(nests_left_as_written_still_compute) {
  tt::for_each_backend([](const tt::Backend& be) {
    const int R = 13, C = 200, BLOCK = 32;
    auto x = tt::random_vector<float>(size_t(R) * C, 11, -1, 1);
    tt::host_vector<int32_t> starts(R);
    for (int r = 0; r < R; ++r) starts[size_t(r)] = (r * 37) % C;
    for (int mode : {0, 1}) {
      BOOST_TEST_CONTEXT("mode " << mode) {
        std::vector<double> ref(static_cast<size_t>(R), 0.0);
        for (int r = 0; r < R; ++r) {
          const int first = mode == 0 ? 0 : starts[size_t(r)];
          const int end = mode == 0 ? r + 1 : std::min(first + 2 * BLOCK, C);
          for (int c = first; c < end; ++c) ref[size_t(r)] += x[size_t(r) * C + c];
        }
        auto dx = be.upload<float>(x);
        auto dst = be.upload<int32_t>(starts);
        auto dout = be.alloc_poisoned<float>(size_t(R));
        unflattenable[{3}](dx.ptr(), dst.ptr(), dout.ptr(), R, C, mode, BLOCK, be.options());
        tt::check_close<float>(dout.download(), ref, 1e-5);
      }
    }
  });
}

// What the pass leaves: a fused nest is a branch on the trip counts holding one loop, with the
// nest as written (its hint consumed) in the other branch; a nest that does not qualify keeps its
// loops and its hint.
BOOST_AUTO_TEST_CASE(the_pass_fuses_qualifying_nests_only) {
  auto* x = tt::fake_address<float>(1);
  auto* s = tt::fake_address<float>(2);
  auto* d = tt::fake_address<int32_t>(3);
  const std::string fused = optimized_ir(persistent_row_sums, x, s, d, 37, 300, 64);
  BOOST_TEST(tt::occurrences(fused, "{flatten}") == 0u, fused);
  // The fused loop, and the nest as written (two loops) in the other branch.
  BOOST_TEST(tt::occurrences(fused, "for %") == 3u, fused);
  for (int mode : {0, 1}) {
    const std::string kept = optimized_ir(unflattenable, x, d, s, 13, 200, mode, 32);
    BOOST_TEST(tt::occurrences(kept, "{flatten}") == 1u, "mode " << mode << ":\n" << kept);
    BOOST_TEST(tt::occurrences(kept, "for %") == 2u, "mode " << mode << ":\n" << kept);
  }
}

// sm_90a: the matmul's tiles and K trips are one pipelined loop; each tile's accumulator starts by
// wgmma's scale-d flag; the tile's store is a branch of that loop.
BOOST_AUTO_TEST_CASE(fused_matmul_is_one_pipelined_loop_on_sm90) {
  if (!tt::nvrtc_or_skip()) return;
  auto* h = tt::fake_address<f16_t>(1);
  const auto ks = tt::compile_cuda(persistent_matmul, tt::CudaCheck().warps(4).stages(3), h, h, tt::fake_address<float>(2),
                                   tt::fake_address<int32_t>(3), 4096, 4096, 512, 128, 128, 64);
  const std::string body = tt::kernel_body(ks);
  const size_t at = body.find("// pipelined: ");
  BOOST_TEST_REQUIRE(at != std::string::npos);
  const std::string loop = body.substr(at, body.find("// no copy lands after the loop", at) - at);
  const std::string trips = loop.substr(loop.find("for ("));
  BOOST_TEST(tt::occurrences(trips, "for (int32_t iv") == 1u, "one loop:\n" << trips);
  BOOST_TEST(tt::occurrences(trips, "tt_wgmma_wait<1>();") == 1u);
  BOOST_TEST(tt::occurrences(trips, "\"r\"((int)(") > 0u);
  BOOST_TEST(tt::occurrences(trips, "tt_wgmma_wait<0>();") == 2u);  // the epilogue's, the drain's
  // C's conversion for the store (through shared memory) only in the epilogue's branch.
  const size_t epilogue = trips.find("tt_wgmma_wait<0>();");
  BOOST_TEST(tt::occurrences(trips.substr(0, epilogue), "tt_vcopy<") == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
