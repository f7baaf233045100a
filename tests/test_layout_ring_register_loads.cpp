// Register loads of a pipelined loop (docs/cuda-backend.md, "Software pipelining of loop loads"):
// a K loop whose trip also loads a per-row and a per-column scale (block-scaled matmuls' a_s and
// b_s, attention backward's m and delta), consumed in the accumulator's layout. On a cp.async ring
// they are stages of the ring as the tiles are (Triton's pipeliner stages every load of the loop),
// read from the trip's slot into their layout - not a register array a trip ahead, whose registers
// stay live across the trip (at the register limit ptxas spilled them right after their LDG, the
// STL waiting for the load's data: tutorial 06's backward at HEAD_DIM 128). Values on every
// backend against float64 (masked rows and columns, sizes not multiples of the blocks, poisoned
// output); the code for sm_90a and sm_80 through NVRTC.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda_codegen_check.h"
#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::f16_t;

namespace {

// c = sum over K blocks kb of (A[:, kb] @ B[kb, :]) * sa[kb, rows] * sb[kb, cols], sa [KB, M] and sb
// [KB, N] f32: the scales are loaded a K block a trip, masked by the rows and columns.
auto scaled_matmul = tritium::kernel(
    "ring_scaled_matmul",
    [](tl::ptr<f16_t> a, tl::ptr<f16_t> b, tl::ptr<float> sa, tl::ptr<float> sb, tl::ptr<float> c, tl::i32 M, tl::i32 N,
       tl::i32 K, int BM, int BN, int BK) {
      auto offs_m = tl::program_id(0) * BM + tl::arange(0, BM), offs_n = tl::program_id(1) * BN + tl::arange(0, BN);
      auto offs_k = tl::arange(0, BK);
      auto rows = offs_m < M, cols = offs_n < N;
      auto a_ptrs = a + (offs_m(tl::_, tl::None) * K + offs_k(tl::None, tl::_));
      auto b_ptrs = b + (offs_k(tl::_, tl::None) * N + offs_n(tl::None, tl::_));
      auto acc = tl::zeros({BM, BN}, tl::float32);
      for (auto kb : tl::range(0, tl::cdiv(K, BK))) {
        auto in_k = offs_k < K - kb * BK;
        auto x = tl::load(a_ptrs, rows(tl::_, tl::None) & in_k(tl::None, tl::_), 0.0);
        auto y = tl::load(b_ptrs, in_k(tl::_, tl::None) & cols(tl::None, tl::_), 0.0);
        auto s = tl::load(sa + kb * M + offs_m, rows, 0.0);
        auto t = tl::load(sb + kb * N + offs_n, cols, 0.0);
        acc += tl::dot(x, y) * s(tl::_, tl::None) * t(tl::None, tl::_);
        a_ptrs += BK;
        b_ptrs += BK * N;
      }
      tl::store(c + offs_m(tl::_, tl::None) * N + offs_n(tl::None, tl::_), acc, rows(tl::_, tl::None) & cols(tl::None, tl::_));
    },
    {"a", "b", "sa", "sb", "c", "M", "N", "K", "BM", "BN", "BK"});

struct Case {
  int M, N, K, bm, bn, bk, warps;
};

void run_case(const tt::Backend& be, const Case& c, uint32_t seed) {
  const int KB = (c.K + c.bk - 1) / c.bk;
  auto a = tt::random_vector<f16_t>(size_t(c.M) * c.K, seed, -1, 1);
  auto b = tt::random_vector<f16_t>(size_t(c.K) * c.N, seed + 1, -1, 1);
  auto sa = tt::random_vector<float>(size_t(KB) * c.M, seed + 2, 0.5, 2);
  auto sb = tt::random_vector<float>(size_t(KB) * c.N, seed + 3, -2, 2);
  std::vector<double> ref(size_t(c.M) * c.N), mag(ref.size());
  for (int i = 0; i < c.M; ++i)
    for (int j = 0; j < c.N; ++j)
      for (int kb = 0; kb < KB; ++kb) {
        double part = 0, part_mag = 0;
        for (int kk = kb * c.bk; kk < std::min(c.K, (kb + 1) * c.bk); ++kk) {
          const double p = tt::to_double(a[size_t(i) * c.K + kk]) * tt::to_double(b[size_t(kk) * c.N + j]);
          part += p;
          part_mag += std::abs(p);
        }
        const double scale = double(sa[size_t(kb) * c.M + i]) * double(sb[size_t(kb) * c.N + j]);
        ref[size_t(i) * c.N + j] += part * scale;
        mag[size_t(i) * c.N + j] += part_mag * std::abs(scale);
      }
  const std::string what = std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) + " blocks " +
                           std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x" + std::to_string(c.bk) + " warps " +
                           std::to_string(c.warps);
  BOOST_TEST_CONTEXT(what) {
    auto da = be.upload<f16_t>(a), db = be.upload<f16_t>(b);
    auto dsa = be.upload<float>(sa), dsb = be.upload<float>(sb);
    auto dc = be.alloc_poisoned<float>(ref.size());
    auto opts = be.options();
    opts.num_warps = c.warps;
    opts.num_stages = 3;
    scaled_matmul[{tritium::cdiv(c.M, c.bm), tritium::cdiv(c.N, c.bn)}](da.ptr(), db.ptr(), dsa.ptr(), dsb.ptr(), dc.ptr(),
                                                                        c.M, c.N, c.K, c.bm, c.bn, c.bk, opts);
    tt::check_dot<float>(dc.download(), ref, mag, 1e-3, what);  // f16 inputs, f32 sums
  }
}

// The loop's text, from the pipelining comment to the drain after it.
std::string pipelined_loop(const std::string& body) {
  const size_t at = body.find("// pipelined: ");
  if (at == std::string::npos) return "";
  return body.substr(at, body.find("// no copy lands after the loop", at) - at);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layout_ring_register_loads)

// Ragged everywhere (rows, columns and the last K block masked), one and two warpgroups.
BOOST_AUTO_TEST_CASE(scales_of_a_pipelined_loop_values) {
  tt::for_each_backend([](const tt::Backend& be) {
    run_case(be, {150, 70, 200, 64, 32, 32, 4}, 10);
    run_case(be, {200, 100, 136, 128, 64, 64, 8}, 20);
    run_case(be, {64, 32, 40, 64, 32, 32, 4}, 30);  // one program, two trips, the second ragged
  });
}

// The scales are two more stages of the ring (4-byte cp.async under their row / column mask, zero
// fill), refilled with the tiles and read from the trip's slot after its wait; nothing is loaded
// a trip ahead into registers.
BOOST_AUTO_TEST_CASE(scales_of_a_pipelined_loop_are_stages_of_its_ring) {
  if (!tt::nvrtc_or_skip()) return;
  auto* h = tt::fake_address<f16_t>(1);
  auto* f = tt::fake_address<float>(2);
  for (int cc : {90, 80}) {
    BOOST_TEST_CONTEXT("sm_" << cc) {
      const auto ks = tt::compile_cuda(scaled_matmul, tt::CudaCheck().warps(4).stages(3).target(cc, cc == 90 ? "sm_90a" : "sm_80"),
                                       h, h, f, f, f, 150, 70, 200, 64, 32, 32);
      const std::string loop = pipelined_loop(tt::kernel_body(ks));
      BOOST_TEST_REQUIRE(!loop.empty());
      BOOST_TEST(loop.find("// pipelined: 4 load(s) into 3 stages") == 0);
      BOOST_TEST(loop.find("loaded a trip ago") == std::string::npos);
      const std::string trips = loop.substr(loop.find("for (int32_t iv"));
      BOOST_TEST(tt::occurrences(trips, "tt_cp_async<4>(") > 0u);  // the scales' refill
      BOOST_TEST(trips.find("tt_smem + (") != std::string::npos);  // read from the slot
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
