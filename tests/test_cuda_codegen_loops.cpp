// Barriers between the trips of a loop in the element-loop generator, without a GPU: trips that
// load and store one buffer get a __syncthreads between them unless every access of a trip lies
// in a window the next trip's does not overlap (Codegen::trips_touch_disjoint_memory: RoPE's loop
// over a group's heads, where Triton issues all the heads' loads at once); then the loads of later
// trips are also issued ahead. Compiled by NVRTC for sm_90a; the values are test_control_flow's
// loop_trips_on_rows on every backend.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <string>

#include "cuda_codegen_check.h"
#include "jit/cuda/cubin_stats.h"
#include "trip_rows_kernels.h"

namespace tt = tritium::test;

BOOST_AUTO_TEST_SUITE(test_cuda_codegen_loops)

BOOST_AUTO_TEST_CASE(trips_on_disjoint_rows_need_no_barrier) {
  if (!tt::nvrtc_or_skip()) return;
  for (auto [D, BLOCK] : {std::pair{128, 64}, std::pair{64, 32}}) {
    auto ks = tt::compile_cuda(tt::rotate_rows_kernel(), tt::CudaCheck().routed(), tt::fake_address<float>(0),
                               tt::fake_address<float>(1), 4, 1000, D, BLOCK);
    const std::string body = tt::kernel_body(ks);
    BOOST_TEST(tt::occurrences(body, "__syncthreads") == 0u, "D " << D << "\n" << body);
    BOOST_TEST(tt::occurrences(body, "loads issued ahead") == 1u, "D " << D << "\n" << body);
  }
  // BLOCK 128 > D / 2: the masked lanes' window (128 + 64 columns) is wider than a row; the
  // analysis does not read masks, so the barrier stays.
  auto wide = tt::compile_cuda(tt::rotate_rows_kernel(), tt::CudaCheck().routed(), tt::fake_address<float>(0),
                               tt::fake_address<float>(1), 4, 1000, 128, 128);
  BOOST_TEST(tt::occurrences(tt::kernel_body(wide), "__syncthreads") >= 1u);
}

BOOST_AUTO_TEST_CASE(trips_on_overlapping_rows_keep_their_barrier) {
  if (!tt::nvrtc_or_skip()) return;
  auto ks = tt::compile_cuda(tt::shift_rows_kernel(), tt::CudaCheck().routed(), tt::fake_address<float>(0), 9, 256);
  const std::string body = tt::kernel_body(ks);
  BOOST_TEST(tt::occurrences(body, "__syncthreads") >= 1u, body);
  BOOST_TEST(tt::occurrences(body, "loads issued ahead") == 0u, body);
}

// A loop of at most one trip (its bound min(lb + c, n) with c <= step: FlagGems' cumsum block
// kernels, one tile a program) issues nothing ahead - there is no next trip to overlap, and the
// copy cost the block-scan kernel 88 registers instead of 56 (2 CTAs an SM instead of 4). Two
// tiles a program (c = 2 steps) or an open bound keep the copy ahead.
BOOST_AUTO_TEST_CASE(one_trip_loops_issue_nothing_ahead) {
  if (!tt::nvrtc_or_skip()) return;
  namespace tl = tritium::tl;
  auto k = tritium::kernel("tiles_of_a_program", [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int TILES, int TILE) {
    auto lb = tl::program_id(1).to(tl::int64) * (TILES * TILE);
    auto ub = TILES > 0 ? tl::minimum(lb + TILES * TILE, n) : n.to(tl::int64);
    for (auto start : tl::range(lb, ub, TILE)) {
      auto offs = start + tl::arange(0, TILE);
      auto v = tl::load(x + offs, offs < n);
      tl::store(out + offs, v * v + tl::sum(v, 0), offs < n);
    }
  });
  for (int tiles : {1, 2, 0}) {
    auto ks = tt::compile_cuda(k, tt::CudaCheck().routed().warps(8), tt::fake_address<float>(0), tt::fake_address<float>(1),
                               65536, tiles, 4096);
    const std::string body = tt::kernel_body(ks);
    BOOST_TEST(tt::occurrences(body, "loads issued ahead") == (tiles == 1 ? 0u : 1u), tiles << " tiles\n" << body);
    // Nor is it unrolled (s49: NVRTC made three copies of FlagGems' block-sum body, 99 registers
    // against 62 for one); loops of more trips are left to NVRTC.
    BOOST_TEST(tt::occurrences(body, "#pragma unroll 1\n") == (tiles == 1 ? 1u : 0u), tiles << " tiles\n" << body);
  }
}

// FlagGems' block sum in int32 (one 4096 tile a program, 8 warps, int64 accumulators): one copy of
// the loop body in the SASS - 99 registers and 392 instructions unrolled, Triton's 57 and 216.
BOOST_AUTO_TEST_CASE(one_trip_reduction_loop_stays_one_copy) {
  if (!tt::nvrtc_or_skip()) return;
  namespace tl = tritium::tl;
  auto k = tritium::kernel("block_sum_of_a_program", [](tl::ptr<int32_t> x, tl::ptr<int64_t> sums, tl::i32 n, int TILES, int TILE) {
    auto m = tl::program_id(0).to(tl::int64);
    auto lb = tl::program_id(1).to(tl::int64) * (TILES * TILE);
    auto acc = tl::zeros({TILE}, tl::int64);
    for (auto start : tl::range(lb, tl::minimum(lb + TILES * TILE, n), TILE)) {
      auto offs = start + tl::arange(0, TILE);
      acc += tl::load(x + m * n + offs, offs < n).to(tl::int64);
    }
    tl::store(sums + m * tl::num_programs(1) + tl::program_id(1), tl::sum(acc, 0));
  });
  auto ks = tt::compile_cuda(k, tt::CudaCheck().routed().warps(8), tt::fake_address<int32_t>(0), tt::fake_address<int64_t>(1),
                             65536, 1, 4096);
  const auto cubin = tritium::jit::cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a");
  const int64_t instructions = tritium::jit::cuda::cubin_instructions(cubin);
  BOOST_TEST_MESSAGE("block_sum_of_a_program: " << instructions << " SASS instructions");
  BOOST_TEST(instructions <= 300);
}

BOOST_AUTO_TEST_SUITE_END()
