// The kernels of batch_norm / group_norm / rms_norm (ops/norm_channels.h, ops/norm_loss_kernels.h)
// and of cross_entropy / nll_loss, softmax, and the reductions' lane rows (a global average pool's
// mean), turned into CUDA C++ and compiled by NVRTC for sm_90a (and a few for sm_80: NVRTC is slow
// on the 2-core machine) without a GPU, with the argument kinds the ops launch them with; the
// s49 cases also bound registers, shared memory and loads. Running them is test_nn_norm's,
// test_ops_softmax's, test_ops_reduce's and test_nn_loss's job on a GPU machine. Skips when NVRTC
// cannot be opened or the CUDA backend is not built.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include "test_support.h"

#if TRITIUM_HAS_CUDA_BACKEND
#include "cuda_codegen_check.h"
#include "ir/ir.h"
#include "ops/norm_channels.h"
#include "ops/norm_loss_kernels.h"
#include "jit/cuda/cubin_stats.h"
#include "ops/reduce_kernels.h"

#include <fstream>
#include <fmt/format.h>

namespace cuda = tritium::jit::cuda;
namespace detail = tritium::ops::detail;
using tritium::DType;

namespace {

template <class T> T* addr(uint64_t i) { return tritium::test::fake_address<T>(i); }

// Through generate_cuda's routing (as the backend), for sm_90a and, when also_sm80, sm_80.
template <class... A> void compile(tritium::Kernel& k, const std::string& what, bool also_sm80, const A&... args) {
  tritium::test::CudaCheck check = tritium::test::CudaCheck().routed().budget(cuda::kSharedMemoryBudget).named(what);
  if (also_sm80) check.also_for("sm_80");
  tritium::test::compile_cuda(k, check, args...);
}

using tritium::test::nvrtc_or_skip;

int d(DType t) { return static_cast<int>(t); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_cuda_codegen_norm)

BOOST_AUTO_TEST_CASE(channel_kernels) {
  if (!nvrtc_or_skip()) return;
  auto& sums = detail::channel_sums_kernel();
  const int64_t N = 64, C = 256, S = 3136, one = 1;
  // NCHW f32: sums, squared deviations, and the backward's two sums ([2, 1024] tiles).
  for (int mode = 0; mode < 3; ++mode)
    compile(sums, "channel sums NCHW mode " + std::to_string(mode), false, addr<float>(0), addr<float>(1),
            addr<float>(2), addr<float>(3), addr<float>(4), addr<float>(5), N, C, S, C * S, S, one, int64_t(0),
            int64_t(0), one, int64_t(50), mode, mode != 0, false, d(DType::f32), 2, 1024);
  // Channels-last bf16 ([256, 8] tiles along the channels), and rms_norm's columns (statistics per position).
  compile(sums, "channel sums channels-last bf16", false, addr<tritium::bf16_t>(0), addr<tritium::bf16_t>(1),
          addr<float>(2), addr<float>(3), addr<float>(4), addr<float>(5), one, C, N * S, int64_t(0), one, C, int64_t(0),
          int64_t(0), one, int64_t(50), 2, true, false, d(DType::f32), 256, 8);
  compile(sums, "rms_norm column sums", false, addr<tritium::bf16_t>(0), addr<tritium::bf16_t>(1), addr<float>(2),
          addr<float>(3), addr<float>(4), addr<float>(5), one, int64_t(4096), int64_t(8192), int64_t(0), one,
          int64_t(4096), int64_t(0), one, one, int64_t(64), 2, false, true, d(DType::f32), 256, 8);
  auto& affine = detail::channel_affine_kernel();
  compile(affine, "channel affine forward NCHW", true, addr<float>(0), addr<float>(1), addr<float>(2), addr<float>(3),
          addr<float>(4), addr<float>(5), addr<float>(6), C, S, C * S, S, one, int64_t(0), int64_t(128), int64_t(4), false,
          1, d(DType::f32), 2, 1024);
  compile(affine, "channel affine backward channels-last f16", false, addr<tritium::f16_t>(0),
          addr<tritium::f16_t>(1), addr<tritium::f16_t>(2), addr<float>(3), addr<float>(4), addr<float>(5),
          addr<float>(6), C, N * S, int64_t(0), one, C, int64_t(0), int64_t(1), int64_t(25088), true, 2, d(DType::f32),
          256, 8);
}

BOOST_AUTO_TEST_CASE(batch_norm_coefficients) {
  if (!nvrtc_or_skip()) return;
  auto& k = detail::batch_norm_coefficients_kernel();
  for (int mode = 0; mode < 4; ++mode)
    compile(k, "batch_norm coefficients mode " + std::to_string(mode), false, addr<float>(0), addr<float>(1),
            addr<float>(2), addr<float>(3), addr<tritium::bf16_t>(4), addr<tritium::bf16_t>(5), addr<float>(6),
            addr<float>(7), addr<float>(8), addr<float>(9), addr<float>(10), int64_t(256), 1.0 / 200704,
            200704.0 / 200703, 0.1, 1e-5, mode, true, true, mode == 0, d(DType::f32), 256);
}

BOOST_AUTO_TEST_CASE(group_norm_coefficients) {
  if (!nvrtc_or_skip()) return;
  for (bool backward : {false, true})
    compile(detail::group_norm_coefficients_kernel(), backward ? "group_norm coefficients backward" : "forward",
            false, addr<float>(0), addr<float>(1), addr<float>(2), addr<float>(3), addr<float>(4),
            addr<tritium::bf16_t>(5), addr<tritium::bf16_t>(6), addr<float>(7), addr<float>(8), addr<float>(9),
            addr<float>(10), int64_t(32), int64_t(2), 1.0 / 6272, 1e-5, backward, true, !backward, d(DType::f32), 16);
}

BOOST_AUTO_TEST_CASE(row_kernels) {
  if (!nvrtc_or_skip()) return;
  compile(detail::rms_norm_forward_kernel(), "rms_norm forward bf16", false, addr<tritium::bf16_t>(0),
          addr<tritium::bf16_t>(1), addr<tritium::bf16_t>(2), addr<float>(3), int64_t(16384), 1e-6, d(DType::f32), true,
          false, 2048);
  compile(detail::rms_norm_backward_dx_kernel(), "rms_norm backward bf16", false, addr<tritium::bf16_t>(0),
          addr<tritium::bf16_t>(1), addr<tritium::bf16_t>(2), addr<float>(3), addr<tritium::bf16_t>(4), int64_t(4096),
          d(DType::f32), true, 2048);
  const int64_t R = 8192, C = 50304;
  // cross_entropy with label smoothing and weight; probability targets; nll_loss.
  compile(detail::class_loss_forward_kernel(), "cross_entropy forward", true, addr<float>(0), addr<int64_t>(1),
          addr<float>(2), addr<float>(3), addr<float>(4), addr<float>(5), addr<int64_t>(6), R, C, int64_t(-100), 0.1,
          false, false, true, true, d(DType::f32), 2, 2048);
  compile(detail::class_loss_forward_kernel(), "cross_entropy forward probabilities bf16", false,
          addr<tritium::bf16_t>(0), addr<tritium::bf16_t>(1), addr<float>(2), addr<float>(3), addr<float>(4),
          addr<float>(5), addr<int64_t>(6), R, int64_t(1000), int64_t(-100), 0.0, false, true, false, false,
          d(DType::f32), 4, 1024);
  compile(detail::class_loss_forward_kernel(), "nll_loss forward", false, addr<float>(0), addr<int64_t>(1),
          addr<float>(2), addr<float>(3), addr<float>(4), addr<float>(5), addr<int64_t>(6), R, int64_t(10), int64_t(-100),
          0.0, true, false, true, false, d(DType::f32), 256, 16);
  compile(detail::class_loss_forward_kernel(), "nll_loss forward bf16, bf16 weight", false, addr<tritium::bf16_t>(0),
          addr<int64_t>(1), addr<tritium::bf16_t>(2), addr<float>(3), addr<float>(4), addr<float>(5), addr<int64_t>(6), R,
          int64_t(1024), int64_t(-100), 0.0, true, false, true, false, d(DType::f32), 256, 1024);
  // The mean of the rows' losses and picked weights, stored in bf16.
  compile(detail::class_loss_reduce_kernel(), "class loss mean", false, addr<float>(0), addr<float>(1),
          addr<tritium::bf16_t>(2), addr<float>(3), R, true, d(DType::f32), d(DType::bf16), 1024);
  compile(detail::class_loss_backward_kernel(), "cross_entropy backward", false, addr<float>(0), addr<int64_t>(1),
          addr<float>(2), addr<float>(3), addr<float>(4), addr<float>(5), addr<float>(6), addr<float>(7), R, C,
          int64_t(0), int64_t(-100), 0.1, false, false, true, true, d(DType::f32), 2, 2048);
  compile(detail::class_loss_backward_kernel(), "nll_loss backward, per-row grad", false, addr<float>(0),
          addr<int64_t>(1), addr<float>(2), addr<float>(3), addr<float>(4), addr<float>(5), addr<float>(6),
          addr<float>(7), R, int64_t(10), int64_t(1), int64_t(-100), 0.0, true, false, false, false, d(DType::f32), 256,
          16);
}

namespace {
// SASS instructions and registers of a generated kernel (sm_90a), written under TRITIUM_DUMP too.
std::pair<int64_t, int> sass_stats(const cuda::KernelSource& ks) {
  const auto cubin = cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a");
  if (const char* dir = std::getenv("TRITIUM_DUMP"); dir && *dir)
    std::ofstream(std::string(dir) + "/" + ks.entry + ".sm_90a.cubin", std::ios::binary)
        .write(cubin.data(), std::streamsize(cubin.size()));
  return {cuda::cubin_instructions(cubin), cuda::cubin_registers(cubin)};
}
}  // namespace

// softmax along the last dim of [16384, 1024] f32 (the op table's row): one row a program over 4
// warps keeps the row in registers (a block reduction: shuffles and 16 bytes of partials a warp);
// the [4, 1024] tile of before copied each of its max and exp passes to a 16 KB shared buffer and
// reduced them one warp a row from there (32 KB, 912 SASS instructions against 216).
BOOST_AUTO_TEST_CASE(softmax_long_rows_stay_in_registers) {
  if (!nvrtc_or_skip()) return;
  namespace tt = tritium::test;
  auto gen = [](int warps, int t0) {
    return tt::compile_cuda(detail::softmax_kernel(), tt::CudaCheck().warps(warps).routed().named("softmax f32 rows"),
                            addr<float>(0), addr<float>(1), addr<float>(2), int64_t(16384), int64_t(1024), int64_t(1), 0,
                            d(DType::f32), false, true, t0, 1024);
  };
  auto tile = gen(4, 4);
  auto row = gen(4, 1);
  auto [n_tile, r_tile] = sass_stats(tile);
  auto [n_row, r_row] = sass_stats(row);
  BOOST_TEST_MESSAGE("softmax f32 [4, 1024]: " << n_tile << " SASS, " << r_tile << " registers, " << tile.smem_bytes
                                               << " bytes shared; [1, 1024]: " << n_row << ", " << r_row << ", "
                                               << row.smem_bytes);
  BOOST_TEST(tile.smem_bytes > 16384);
  BOOST_TEST(row.smem_bytes <= 256);
  BOOST_TEST(n_row * 2 < n_tile);
  // bf16 rows of 1024 at 2 warps (16 elements a thread) likewise.
  auto bf = tt::compile_cuda(detail::softmax_kernel(), tt::CudaCheck().warps(2).routed().named("softmax bf16 rows"),
                             addr<tritium::bf16_t>(0), addr<tritium::bf16_t>(1), addr<tritium::bf16_t>(2), int64_t(16384),
                             int64_t(1024), int64_t(1), 0, d(DType::f32), false, true, 1, 1024);
  BOOST_TEST(bf.smem_bytes <= 256);
}

// rms_norm at the op table's shape (8192 x 4096 bf16; the forward at 8 warps, the backward at 16):
// the forward loads x once (and the weight); the backward's row loop loads dy and x once a row,
// keeps the weight gradient in registers, and fits 2 CTAs of 16 warps an SM (<= 64 registers; 8
// warps took 119); the partials' sum compiles.
BOOST_AUTO_TEST_CASE(rms_norm_rows_in_registers) {
  if (!nvrtc_or_skip()) return;
  namespace tt = tritium::test;
  using bf = tritium::bf16_t;
  auto fw = tt::compile_cuda(detail::rms_norm_forward_kernel(), tt::CudaCheck().warps(8).routed().also_for("sm_80"),
                             addr<bf>(0), addr<bf>(1), addr<bf>(2), addr<float>(3), int64_t(4096), 1e-6, d(DType::f32),
                             true, true, 4096);
  BOOST_TEST(tt::occurrences(tt::kernel_body(fw), "tt_ld_pred<16>(") == 2u);  // x, w
  auto bw = tt::compile_cuda(detail::rms_norm_backward_kernel(), tt::CudaCheck().warps(16).routed().also_for("sm_80"),
                             addr<bf>(0), addr<bf>(1), addr<bf>(2), addr<float>(3), addr<bf>(4), addr<float>(5),
                             int64_t(8192), int64_t(4096), int64_t(32), d(DType::f32), true, 4096);
  auto [n_bw, r_bw] = sass_stats(bw);
  auto [n_fw, r_fw] = sass_stats(fw);
  BOOST_TEST_MESSAGE("rms_norm bf16 forward: " << n_fw << " SASS, " << r_fw << " registers; backward: " << n_bw << ", "
                                               << r_bw << ", " << bw.smem_bytes << " bytes shared");
  BOOST_TEST(r_bw <= 64);
  BOOST_TEST(bw.smem_bytes <= 256);
  // dy and x: one prologue load and one a row ahead each, the weight once.
  BOOST_TEST(tt::occurrences(tt::kernel_body(bw), "tt_ld_pred<16>(") == 5u);
  tt::compile_cuda(detail::rms_norm_weight_grad_kernel(), tt::CudaCheck().routed(), addr<float>(0), addr<bf>(1),
                   int64_t(256), int64_t(4096), d(DType::f32), 64, 32);
  tt::compile_cuda(detail::rms_norm_backward_kernel(), tt::CudaCheck().warps(4).routed().named("rms_norm bwd f32 no weight"),
                   addr<float>(0), addr<float>(1), addr<float>(2), addr<float>(3), addr<float>(4), addr<float>(5),
                   int64_t(100), int64_t(1000), int64_t(4), d(DType::f32), false, 1024);
}

// Lane rows (ops/reduce_plan.h): adaptive_avg_pool2d to 1x1 of [83, 64, 56, 56] is the mean of
// 5312 rows of 3136. [4, 256] bf16 tiles (a row a warp) reduce by 5 shuffles with nothing in
// shared memory but the 4 results, 2 trips of loads ahead, in fewer registers than the [1, 2048]
// tile a program of before (56: 9 CTAs an SM; now 40); [4, 128] f32 likewise. argmax / max.dim
// (i64 keys), f64 and i32 sums compile in such tiles too.
BOOST_AUTO_TEST_CASE(lane_rows_reduce_by_shuffles) {
  if (!nvrtc_or_skip()) return;
  namespace tt = tritium::test;
  const int64_t O = 5312, R = 3136;
  auto gen = [&](auto* x, auto* out, int kind, int acc, int t0, int t1, bool val_out, const std::string& what) {
    return tt::compile_cuda(tritium::ops::detail::plain_reduce_kernel(), tt::CudaCheck().routed().named(what), x, x, x, x, out,
                            x, out, out, O, R, int64_t(1), R, int64_t(1), int64_t(0), int64_t(0), int64_t(0), int64_t(0),
                            int64_t(0), int64_t(0), R, int64_t(1), 1.0 / R, 0.0, kind, acc, false, t0, t1, false, val_out,
                            false, 0, false, 0);
  };
  using bf = tritium::bf16_t;
  auto row = gen(addr<bf>(0), addr<bf>(1), 1, d(DType::f32), 1, 2048, false, "mean bf16 [1, 2048]");
  auto lanes = gen(addr<bf>(0), addr<bf>(1), 1, d(DType::f32), 4, 256, false, "mean bf16 [4, 256]");
  auto [n_row, r_row] = sass_stats(row);
  auto [n_lanes, r_lanes] = sass_stats(lanes);
  BOOST_TEST_MESSAGE("mean bf16 rows of 3136: [1, 2048] " << n_row << " SASS, " << r_row << " registers, "
                                                          << row.smem_bytes << " bytes shared; [4, 256] " << n_lanes
                                                          << ", " << r_lanes << ", " << lanes.smem_bytes);
  const std::string body = tt::kernel_body(lanes);
  BOOST_TEST(tt::occurrences(body, "tt_shfl_xor(") == 5u);
  BOOST_TEST(tt::occurrences(body, "__syncthreads") == 1u);  // before the [4] results' store
  BOOST_TEST(lanes.smem_bytes <= 16);
  BOOST_TEST(r_lanes < r_row);
  auto f32 = gen(addr<float>(0), addr<float>(1), 1, d(DType::f32), 4, 128, false, "mean f32 [4, 128]");
  BOOST_TEST(f32.smem_bytes <= 16);
  gen(addr<float>(0), addr<int64_t>(1), 4, d(DType::f32), 4, 128, true, "max.dim f32 [4, 128]");
  gen(addr<bf>(0), addr<int64_t>(1), 4, d(DType::f32), 4, 256, false, "argmax bf16 [4, 256]");
  gen(addr<double>(0), addr<double>(1), 0, d(DType::f64), 4, 64, false, "sum f64 [4, 64]");
  gen(addr<int32_t>(0), addr<int64_t>(1), 0, d(DType::i64), 4, 128, false, "sum i32 [4, 128]");
}

BOOST_AUTO_TEST_SUITE_END()

#else
BOOST_AUTO_TEST_SUITE(test_cuda_codegen_norm)
BOOST_AUTO_TEST_CASE(skipped_without_the_cuda_backend) { BOOST_TEST_MESSAGE("skipped: the CUDA backend is not built"); }
BOOST_AUTO_TEST_SUITE_END()
#endif
