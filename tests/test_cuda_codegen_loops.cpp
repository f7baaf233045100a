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

BOOST_AUTO_TEST_SUITE_END()
