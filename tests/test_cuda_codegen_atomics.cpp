// Block atomics in the element-loop generator without a GPU: a float atomic_add whose old values
// are unused, over contiguous aligned lanes under a mask constant over them, becomes vector
// reductions (tt_red_add_v: red.global.add.noftz.v8.f16 and the like on sm_90, Triton's
// vectorised atomics); other masks stay one atomic a lane. Compiled by NVRTC for sm_90a and sm_80
// (the header's pre-Hopper path). The values are test_atomics' row_scatter_add on every backend.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <string>

#include "cuda_codegen_check.h"
#include "scatter_rows_kernel.h"

namespace tt = tritium::test;
using tritium::bf16_t;
using tritium::f16_t;

BOOST_AUTO_TEST_SUITE(test_cuda_codegen_atomics)

namespace {

template <class T> std::string scatter_body(int N, int BLOCK, bool sparse) {
  auto ks = tt::compile_cuda(tt::scatter_rows_kernel<T>(), tt::CudaCheck().routed().also_for("sm_80"),
                             tt::fake_address<T>(0), tt::fake_address<T>(1), tt::fake_address<int64_t>(2), N, BLOCK,
                             sparse);
  return tt::kernel_body(ks);
}

}  // namespace

BOOST_AUTO_TEST_CASE(row_scatter_adds_are_vector_reductions) {
  if (!tt::nvrtc_or_skip()) return;
  // 1024 columns, 4 warps: 8 lanes a thread, 16 bytes of f16 / bf16 in one red; f32 4 lanes a step.
  {
    const std::string body = scatter_body<f16_t>(1024, 1024, false);
    BOOST_TEST(tt::occurrences(body, "tt_red_add_v<8>") == 1u);
    BOOST_TEST(tt::occurrences(body, "tt_atomic_add_16") == 0u);
  }
  BOOST_TEST(tt::occurrences(scatter_body<bf16_t>(1024, 1024, false), "tt_red_add_v<8>") == 1u);
  BOOST_TEST(tt::occurrences(scatter_body<float>(1024, 1024, false), "tt_red_add_v<4>") == 1u);
  // Rows of 400 f16 in a 512 block: 4 lanes a thread (a thread each), masked past column 400.
  BOOST_TEST(tt::occurrences(scatter_body<f16_t>(400, 512, false), "tt_red_add_v<4>") == 1u);
  // 128 lanes over 128 threads: one a thread (Codegen::choose_width), so one atomic a lane.
  BOOST_TEST(tt::occurrences(scatter_body<f16_t>(100, 128, false), "tt_red_add_v") == 0u);
}

BOOST_AUTO_TEST_CASE(lane_masks_keep_one_atomic_a_lane) {
  if (!tt::nvrtc_or_skip()) return;
  const std::string body = scatter_body<f16_t>(1024, 1024, true);
  BOOST_TEST(tt::occurrences(body, "tt_red_add_v") == 0u);
  BOOST_TEST(tt::occurrences(body, "tt_atomic_add_16") >= 1u);
}

BOOST_AUTO_TEST_SUITE_END()
