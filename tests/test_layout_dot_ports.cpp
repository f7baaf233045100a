// The main loops of the kernel suite's slow dot kernels (issue 27's bar: grouped_gemm,
// persistent_matmul, implicit_gemm_conv, fused_moe; kernels/<name>.cpp) as the layout generator
// emits them for sm_90a: each kernel here is the port's kernel, copied (the ports live in another
// binary; fused_moe's reduced to its unquantised and block-fp8 branches, without bias or routing
// weights), with the specialisation of its benchmark's shape and config. What the tests
// assert is the general mechanism each kernel needs (docs/cuda-backend.md, "Pipelining"), not the
// kernel: a K loop nested in a while loop and behind hints is pipelined, a persistent tile loop's
// K loop is, gathered rows go through cp.async. Generated and compiled with NVRTC for sm_90a,
// never run here; the values are the suite's checks (`tritium-kernels --check NAME`, CTest's
// kernel-NAME), speed `bench/compare_kernels.py` on a GPU.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <array>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "cuda_codegen_check.h"

namespace tl = tritium::tl;
namespace cuda = tritium::jit::cuda;
namespace tt = tritium::test;
using tritium::bf16_t;
using tritium::DType;
using tritium::f16_t;
using tl::_;
using tl::None;
using P = tl::ptr<tl::any>;

namespace {

template <class T> T* addr(uint64_t i) { return tt::fake_address<T>(i); }

// ---- kernels/grouped_gemm.cpp: tutorial 08 ---------------------------------------------------------
auto grouped_matmul_kernel = tritium::kernel(
    "grouped_matmul_kernel",
    [](tl::ptr<int64_t> group_a_ptrs, tl::ptr<int64_t> group_b_ptrs, tl::ptr<int64_t> group_c_ptrs,
       tl::ptr<int32_t> group_gemm_sizes, tl::ptr<int32_t> g_lds, tl::i32 group_size, int NUM_SM, int BLOCK_SIZE_M,
       int BLOCK_SIZE_N, int BLOCK_SIZE_K) {
      auto tile_idx = tl::program_id(0);
      auto last_problem_end = tl::full({}, 0, tl::int32);
      for (auto g : tl::range(0, group_size)) {
        auto gm = tl::load(group_gemm_sizes + g * 3);
        auto gn = tl::load(group_gemm_sizes + g * 3 + 1);
        auto gk = tl::load(group_gemm_sizes + g * 3 + 2);
        auto num_m_tiles = tl::cdiv(gm, BLOCK_SIZE_M);
        auto num_n_tiles = tl::cdiv(gn, BLOCK_SIZE_N);
        auto num_tiles = num_m_tiles * num_n_tiles;
        tl::while_([&] { return (tile_idx >= last_problem_end) && (tile_idx < last_problem_end + num_tiles); }, [&] {
          auto k = gk;
          auto lda = tl::load(g_lds + g * 3);
          auto ldb = tl::load(g_lds + g * 3 + 1);
          auto ldc = tl::load(g_lds + g * 3 + 2);
          auto a_ptr = tl::load(group_a_ptrs + g).to(tl::pointer_type(tl::float16));
          auto b_ptr = tl::load(group_b_ptrs + g).to(tl::pointer_type(tl::float16));
          auto c_ptr = tl::load(group_c_ptrs + g).to(tl::pointer_type(tl::float16));
          auto tile_idx_in_gemm = tile_idx - last_problem_end;
          auto tile_m_idx = tile_idx_in_gemm / num_n_tiles;
          auto tile_n_idx = tile_idx_in_gemm % num_n_tiles;
          auto offs_am = tile_m_idx * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
          auto offs_bn = tile_n_idx * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
          auto offs_k = tl::arange(0, BLOCK_SIZE_K);
          auto a_ptrs = a_ptr + offs_am(_, None) * lda + offs_k(None, _);
          auto b_ptrs = b_ptr + offs_k(_, None) * ldb + offs_bn(None, _);
          auto accumulator = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, tl::float32);
          for ([[maybe_unused]] auto kk : tl::range(0, tl::cdiv(k, BLOCK_SIZE_K))) {
            a_ptrs = tl::multiple_of(a_ptrs, {16, 16});
            b_ptrs = tl::multiple_of(b_ptrs, {16, 16});
            auto a = tl::load(a_ptrs);
            auto b = tl::load(b_ptrs);
            accumulator += tl::dot(a, b);
            a_ptrs += BLOCK_SIZE_K;
            b_ptrs += BLOCK_SIZE_K * ldb;
          }
          auto c = accumulator.to(tl::float16);
          auto offs_cm = tile_m_idx * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
          auto offs_cn = tile_n_idx * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
          auto c_ptrs = c_ptr + ldc * offs_cm(_, None) + offs_cn(None, _);
          tl::store(c_ptrs, c);
          tile_idx += NUM_SM;
        });
        last_problem_end = last_problem_end + num_tiles;
      }
    });

// ---- kernels/persistent_matmul.cpp: tutorial 09's non-TMA persistent kernel ------------------------
std::pair<tl::tensor, tl::tensor> compute_pid(const tl::tensor& tile_id, const tl::tensor& num_pid_in_group,
                                              const tl::tensor& num_pid_m, int GROUP_SIZE_M) {
  auto group_id = tile_id / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_SIZE_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
  auto pid_m = first_pid_m + (tile_id % group_size_m);
  auto pid_n = (tile_id % num_pid_in_group) / group_size_m;
  return {pid_m, pid_n};
}

auto matmul_kernel_persistent = tritium::kernel(
    "matmul_kernel_persistent",
    [](P a_ptr, P b_ptr, P c_ptr, tl::i32 M, tl::i32 N, tl::i32 K, tl::i32 stride_am, tl::i32 stride_ak,
       tl::i32 stride_bk, tl::i32 stride_bn, tl::i32 stride_cm, tl::i32 stride_cn, int BLOCK_SIZE_M, int BLOCK_SIZE_N,
       int BLOCK_SIZE_K, int GROUP_SIZE_M, int NUM_SMS) {
      auto start_pid = tl::program_id(0);
      auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
      auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
      auto k_tiles = tl::cdiv(K, BLOCK_SIZE_K);
      auto num_tiles = num_pid_m * num_pid_n;
      auto tile_id_c = start_pid - NUM_SMS;
      auto offs_k_for_mask = tl::arange(0, BLOCK_SIZE_K);
      auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;
      for (auto tile_id : tl::range(start_pid, num_tiles, NUM_SMS)) {
        tl::tensor pid_m, pid_n;
        std::tie(pid_m, pid_n) = compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M);
        auto start_m = pid_m * BLOCK_SIZE_M;
        auto start_n = pid_n * BLOCK_SIZE_N;
        auto offs_am = start_m + tl::arange(0, BLOCK_SIZE_M);
        auto offs_bn = start_n + tl::arange(0, BLOCK_SIZE_N);
        offs_am = tl::where(offs_am < M, offs_am, 0);
        offs_bn = tl::where(offs_bn < N, offs_bn, 0);
        offs_am = tl::max_contiguous(tl::multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M);
        offs_bn = tl::max_contiguous(tl::multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N);
        auto accumulator = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, tl::float32);
        for (auto ki : tl::range(k_tiles)) {
          auto offs_k = ki * BLOCK_SIZE_K + tl::arange(0, BLOCK_SIZE_K);
          auto a_ptrs = a_ptr + (offs_am(_, None) * stride_am + offs_k(None, _) * stride_ak);
          auto b_ptrs = b_ptr + (offs_k(_, None) * stride_bk + offs_bn(None, _) * stride_bn);
          auto a = tl::load(a_ptrs, offs_k_for_mask(None, _) < K - ki * BLOCK_SIZE_K, 0.0);
          auto b = tl::load(b_ptrs, offs_k_for_mask(_, None) < K - ki * BLOCK_SIZE_K, 0.0);
          accumulator = tl::dot(a, b, accumulator);
        }
        tile_id_c += NUM_SMS;
        std::tie(pid_m, pid_n) = compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M);
        auto offs_cm = pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
        auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
        auto c_ptrs = c_ptr + stride_cm * offs_cm(_, None) + stride_cn * offs_cn(None, _);
        auto c_mask = (offs_cm(_, None) < M) & (offs_cn(None, _) < N);
        tl::tensor c;
        if (c_ptr.type().pointee == tl::float8e4nv)
          c = accumulator.to(tl::float8e4nv);
        else
          c = accumulator.to(tl::float16);
        tl::store(c_ptrs, c, c_mask);
      }
    });

// ---- kernels/implicit_gemm_conv.cpp: FlagGems' conv2d_forward_kernel -------------------------------
auto conv2d_forward_kernel = tritium::kernel(
    "conv2d_forward_kernel",
    [](P input_pointer, P weight_pointer, P output_pointer, P bias_pointer, tl::i32 in_n, tl::i32 input_height,
       tl::i32 input_width, tl::i32 out_c, tl::i32 out_height, tl::i32 out_width, tl::i32 input_n_stride,
       tl::i32 input_c_stride, tl::i32 input_height_stride, tl::i32 input_width_stride, tl::i32 weight_n_stride,
       tl::i32 weight_c_stride, tl::i32 weight_height_stride, tl::i32 weight_width_stride, tl::i32 output_n_stride,
       tl::i32 output_c_stride, tl::i32 output_height_stride, tl::i32 output_width_stride, int weight_c,
       int weight_height, int weight_width, int stride_height, int stride_width, int padding_height,
       int padding_width, int dilation_height, int dilation_width, int groups, int BLOCK_NI_HO_WO, int BLOCK_CI,
       int BLOCK_CO, int ACCUM_DTYPE_) {
      const DType ACCUM_DTYPE = static_cast<DType>(ACCUM_DTYPE_);
      auto pid_ni_ho_wo = tl::program_id(0);
      auto pid_co = tl::program_id(1);
      auto pid_group = tl::program_id(2);
      auto ni_ho_wo_offset = pid_ni_ho_wo * BLOCK_NI_HO_WO + tl::arange(0, BLOCK_NI_HO_WO);
      auto ni_ho_offset = ni_ho_wo_offset / out_width;
      auto in_n_point_value = ni_ho_offset / out_height;
      auto output_height_point_value = ni_ho_offset % out_height;
      auto output_width_point_value = ni_ho_wo_offset % out_width;
      auto out_per_group_c = out_c / groups;
      auto output_c_offset = pid_co * BLOCK_CO + tl::arange(0, BLOCK_CO);
      input_pointer += (input_n_stride * in_n_point_value + input_c_stride * pid_group * weight_c)(_, None);
      weight_pointer += (weight_n_stride * output_c_offset + weight_n_stride * pid_group * out_per_group_c)(None, _);
      auto accum = tl::zeros({BLOCK_NI_HO_WO, BLOCK_CO}, ACCUM_DTYPE);
      const int BLOCK_CI_COUNT = (weight_c + BLOCK_CI - 1) / BLOCK_CI;
      for (auto hwc : tl::range(0, weight_height * weight_width * BLOCK_CI_COUNT)) {
        auto c = (hwc % BLOCK_CI_COUNT) * BLOCK_CI;
        auto hw = hwc / BLOCK_CI_COUNT;
        auto h = hw / weight_width;
        auto w = hw % weight_width;
        auto input_c_offset = c + tl::arange(0, BLOCK_CI);
        auto input_height_offset = h * dilation_height - padding_height + stride_height * output_height_point_value;
        auto input_width_offset = w * dilation_width - padding_width + stride_width * output_width_point_value;
        auto curr_input_pointer = input_pointer + (input_c_stride * input_c_offset)(None, _) +
                                  (input_height_stride * input_height_offset)(_, None) +
                                  (input_width_stride * input_width_offset)(_, None);
        auto curr_weight_pointer = weight_pointer + (weight_c_stride * input_c_offset)(_, None) +
                                   (weight_height_stride * h) + (weight_width_stride * w);
        auto input_mask = (in_n_point_value < in_n)(_, None) & (input_c_offset < weight_c)(None, _) &
                          (0 <= input_height_offset)(_, None) & (input_height_offset < input_height)(_, None) &
                          (0 <= input_width_offset)(_, None) & (input_width_offset < input_width)(_, None);
        auto weight_mask = (input_c_offset < weight_c)(_, None) & (output_c_offset < out_per_group_c)(None, _);
        auto input_block = tl::load(curr_input_pointer, input_mask);
        auto weight_block = tl::load(curr_weight_pointer, weight_mask);
        accum += tl::dot(input_block, weight_block, std::nullopt, std::nullopt, "ieee");
      }
      bias_pointer += (pid_group(None) * out_per_group_c)(None, _) + output_c_offset(None, _);
      auto mask_bias = (output_c_offset < out_per_group_c)(None, _);
      auto bias = tl::load(bias_pointer, mask_bias).to(ACCUM_DTYPE);
      accum += bias;
      output_pointer += (output_n_stride * in_n_point_value)(_, None) +
                        (output_c_stride * (pid_group * out_per_group_c + output_c_offset))(None, _) +
                        (output_height_stride * output_height_point_value)(_, None) +
                        (output_width_stride * output_width_point_value)(_, None);
      auto output_mask = (in_n_point_value < in_n)(_, None) & (output_c_offset < out_per_group_c)(None, _) &
                         (output_height_point_value < out_height)(_, None) &
                         (output_width_point_value < out_width)(_, None);
      tl::store(output_pointer, accum, output_mask);
    });

// ---- kernels/fused_moe.cpp: vLLM's fused_moe_kernel (unquantised, and block-wise fp8) ---------------
auto fused_moe_kernel = tritium::kernel(
    "fused_moe_kernel",
    [](P a_ptr, P b_ptr, P c_ptr, tl::ptr<float> a_scale_ptr, tl::ptr<float> b_scale_ptr,
       tl::ptr<int32_t> sorted_token_ids_ptr, tl::ptr<int32_t> expert_ids_ptr, tl::ptr<int32_t> num_tokens_post_padded_ptr,
       tl::i32 N, tl::i32 K, tl::i32 EM, tl::i32 num_valid_tokens, tl::i32 stride_am, tl::i32 stride_ak,
       tl::i32 stride_be, tl::i32 stride_bk, tl::i32 stride_bn, tl::i32 stride_cm, tl::i32 stride_cn,
       tl::i32 stride_asm, tl::i32 stride_ask, tl::i32 stride_bse, tl::i32 stride_bsk, tl::i32 stride_bsn, int group_n,
       int group_k, int BLOCK_SIZE_M, int BLOCK_SIZE_N, int BLOCK_SIZE_K, int GROUP_SIZE_M, int top_k,
       int compute_type_, int use_fp8_w8a8) {
      const DType compute_type = static_cast<DType>(compute_type_);
      auto pid = tl::program_id(0);
      auto num_pid_m = tl::cdiv(EM, BLOCK_SIZE_M);
      auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
      auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;
      auto group_id = pid / num_pid_in_group;
      auto first_pid_m = group_id * GROUP_SIZE_M;
      auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
      auto pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
      auto pid_n = (pid % num_pid_in_group) / group_size_m;
      auto num_tokens_post_padded = tl::load(num_tokens_post_padded_ptr);
      tl::if_(pid_m * BLOCK_SIZE_M < num_tokens_post_padded, [&] {
        auto offs_token_id = pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M).to(tl::int64);
        auto offs_token = tl::load(sorted_token_ids_ptr + offs_token_id);
        auto token_mask = offs_token < num_valid_tokens;
        auto off_experts = tl::load(expert_ids_ptr + pid_m).to(tl::int64);
        tl::if_(
            off_experts == -1,
            [&] {
              auto zeros = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, compute_type);
              auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
              tl::store(c_ptr + stride_cm * offs_token(_, None) + stride_cn * offs_cn(None, _), zeros,
                        token_mask(_, None) & (offs_cn(None, _) < N));
            },
            [&] {
              auto offs_bn = (pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N).to(tl::int64)) % N;
              auto offs_k = tl::arange(0, BLOCK_SIZE_K);
              auto a_ptrs = a_ptr + (offs_token(_, None) / top_k * stride_am + offs_k(None, _) * stride_ak);
              auto b_ptrs = b_ptr + off_experts * stride_be + (offs_k(_, None) * stride_bk + offs_bn(None, _) * stride_bn);
              tl::tensor a_scale_ptrs, b_scale_ptrs;
              if (use_fp8_w8a8) {
                a_scale_ptrs = a_scale_ptr + (offs_token / top_k) * stride_asm;
                auto offs_bsn = offs_bn / group_n;
                b_scale_ptrs = b_scale_ptr + off_experts * stride_bse + offs_bsn * stride_bsn;
              }
              auto accumulator = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, tl::float32);
              for (auto k : tl::range(0, tl::cdiv(K, BLOCK_SIZE_K))) {
                auto a = tl::load(a_ptrs, token_mask(_, None) & (offs_k(None, _) < K - k * BLOCK_SIZE_K), 0.0);
                auto b = tl::load(b_ptrs, offs_k(_, None) < K - k * BLOCK_SIZE_K, 0.0);
                if (use_fp8_w8a8) {
                  auto offs_ks = k * BLOCK_SIZE_K / group_k;
                  auto a_scale_k = tl::load(a_scale_ptrs + offs_ks * stride_ask, token_mask, 0.0);
                  auto b_scale_k = tl::load(b_scale_ptrs + offs_ks * stride_bsk);
                  accumulator += tl::dot(a, b) * a_scale_k(_, None) * b_scale_k(None, _);
                } else {
                  accumulator += tl::dot(a, b);
                }
                a_ptrs += BLOCK_SIZE_K * stride_ak;
                b_ptrs += BLOCK_SIZE_K * stride_bk;
              }
              auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
              tl::store(c_ptr + stride_cm * offs_token(_, None) + stride_cn * offs_cn(None, _),
                        accumulator.to(compute_type), token_mask(_, None) & (offs_cn(None, _) < N));
            });
      });
    });

// The text of the first pipelined `tl::range` loop, from its prefill to its drain (empty when
// no loop is pipelined).
std::string pipelined_loop(const std::string& body) {
  const size_t at = body.find("// pipelined: ");
  if (at == std::string::npos) return "";
  const size_t to = body.find("// no copy lands after the loop", at);
  return body.substr(at, to == std::string::npos ? std::string::npos : to - at);
}

// The loop itself (past its prefill): from the `for` after the pipelining comment.
std::string loop_trips(const std::string& loop) {
  const size_t at = loop.find("for (int32_t iv");
  return at == std::string::npos ? "" : loop.substr(at);
}

// What a K loop like tutorial 03's does a trip, on Hopper: waits for its own cp.async group, keeps
// one wgmma group in flight, refills the stage the previous trip read with 16-byte cp.async, and
// moves nothing else through shared memory (no pointer blocks or masks converted there, no
// loads issued by the trip itself).
void expect_tutorial_loop(const std::string& body, const std::string& what, int loads) {
  const std::string loop = pipelined_loop(body);
  BOOST_TEST_REQUIRE(!loop.empty(), what << ": no pipelined loop");
  BOOST_TEST(loop.find(fmt::format("// pipelined: {} load(s) into 3 stages", loads)) == 0, what);
  const std::string trips = loop_trips(loop);
  BOOST_TEST_REQUIRE(!trips.empty(), what);
  BOOST_TEST(tt::occurrences(trips, "tt_cp_async_wait<1>();") == 1u, what);
  BOOST_TEST(tt::occurrences(trips, "tt_wgmma_wait<1>();") == 1u, what << ": the wgmma group runs on into the next trip");
  BOOST_TEST(tt::occurrences(trips, "tt_wgmma_wait<0>();") == 1u, what << ": only the drain after the loop waits for all");
  BOOST_TEST(tt::occurrences(trips, "tt_cp_async<16>(") > 0u, what);
  BOOST_TEST(tt::occurrences(trips, "tt_cp_async<4>(") + tt::occurrences(trips, "tt_cp_async<8>(") == 0u, what);
  // Nothing but the ring's stages written to shared memory: no layout conversion in the loop.
  BOOST_TEST(tt::occurrences(trips, "tt_vcopy<") == 0u, what);
  BOOST_TEST(tt::occurrences(trips, "reinterpret_cast<") == 0u, what);
  BOOST_TEST(tt::occurrences(trips, "tt_ld_pred") == 0u, what);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layout_dot_ports)

// Tutorial 08: the K loop runs inside a `while_` over tiles inside a `tl::range` over the gemms;
// its pointer blocks start from addresses read from device arrays (no parameter roots them) and are
// hinted with tl::multiple_of at the top of every trip before `a_ptrs += BK`. The hint is the
// carried pointer itself: the pointers are an induction (issued ahead), carried in the layout of
// their load (not converted through shared memory every trip), and, the loop storing nothing, the
// unrooted pointers may be read ahead.
BOOST_AUTO_TEST_CASE(grouped_gemm_k_loop_in_a_while_loop_is_pipelined) {
  if (!tt::nvrtc_or_skip()) return;
  for (auto [bm, bn, bk] : {std::array{128, 128, 64}, std::array{64, 64, 32}}) {
    cuda::KernelSource ks =
        tt::compile_cuda(grouped_matmul_kernel, tt::CudaCheck().warps(4).stages(3), addr<int64_t>(0), addr<int64_t>(1),
                         addr<int64_t>(2), addr<int32_t>(3), addr<int32_t>(4), 4, 132, bm, bn, bk);
    const std::string body = tt::kernel_body(ks);
    expect_tutorial_loop(body, fmt::format("grouped_gemm {}x{}x{}", bm, bn, bk), 2);
    BOOST_TEST(body.find("while (true)") < body.find("// pipelined: "));
  }
}

// Tutorial 09's persistent kernel: the K loop nested in the tile loop, its addresses computed from
// the loop variable and the tile's rows (from the outer loop), K masked; f16 and fp8 (B a
// column-major view: a K-major tile, which 8-bit wgmma needs).
BOOST_AUTO_TEST_CASE(persistent_matmul_k_loop_is_pipelined_in_f16_and_fp8) {
  if (!tt::nvrtc_or_skip()) return;
  using tritium::f8e4m3_t;
  cuda::KernelSource f16 = tt::compile_cuda(matmul_kernel_persistent, tt::CudaCheck().warps(8).stages(3), addr<f16_t>(0),
                                            addr<f16_t>(1), addr<f16_t>(2), 8192, 8192, 512, 512, 1, 1, 512, 8192, 1,
                                            128, 256, 64, 8, 132);
  expect_tutorial_loop(tt::kernel_body(f16), "persistent f16", 2);
  cuda::KernelSource fp8 =
      tt::compile_cuda(matmul_kernel_persistent, tt::CudaCheck().warps(8).stages(3).named("persistent fp8"),
                       addr<f8e4m3_t>(0), addr<f8e4m3_t>(1), addr<f8e4m3_t>(2), 8192, 8192, 512, 512, 1, 1, 512, 8192,
                       1, 128, 256, 128, 8, 132);
  const std::string body = tt::kernel_body(fp8);
  expect_tutorial_loop(body, "persistent fp8", 2);
  BOOST_TEST(body.find("m64n256k32.f32.e4m3.e4m3") != std::string::npos);
}

// vLLM's fused MoE: A's rows gathered through the sorted token ids (a pointer block made before the
// loop from a loaded index vector, in that load's layout), masked by the token rows and the K bound,
// inside two `if_`s. The carried pointers take the layout of their load, the mask is recomputed in
// it (its token part converted once, before the loop): both loads are issued ahead with 16-byte
// cp.async under the row mask, and the wgmma group stays in flight. The block-fp8 variant scales
// each trip's product, so its dot does not run on into the next trip, but its tiles are still
// issued ahead, and its scales a trip ahead in registers.
BOOST_AUTO_TEST_CASE(fused_moe_gathered_rows_are_issued_ahead) {
  if (!tt::nvrtc_or_skip()) return;
  cuda::KernelSource ks =
      tt::compile_cuda(fused_moe_kernel, tt::CudaCheck().warps(4).stages(3), addr<bf16_t>(0), addr<bf16_t>(1),
                       addr<bf16_t>(2), addr<float>(3), addr<float>(4), addr<int32_t>(5), addr<int32_t>(6),
                       addr<int32_t>(7), 14336, 4096, 8696, 8192, 4096, 1, 14336 * 4096, 1, 4096, 14336, 1, 0, 0, 0, 0,
                       0, 0, 0, 64, 64, 32, 8, 2, static_cast<int>(DType::bf16), 0);
  const std::string body = tt::kernel_body(ks);
  expect_tutorial_loop(body, "fused_moe bf16", 2);
  // The rows' mask decides each chunk's size (zero-filled rows past the tokens).
  BOOST_TEST(tt::occurrences(loop_trips(pipelined_loop(body)), " ? 16 : 0)") > 0u);

  using tritium::f8e4m3_t;
  cuda::KernelSource fp8 = tt::compile_cuda(
      fused_moe_kernel, tt::CudaCheck().warps(4).stages(3).named("fused_moe fp8"), addr<f8e4m3_t>(0), addr<f8e4m3_t>(1),
      addr<bf16_t>(2), addr<float>(3), addr<float>(4), addr<int32_t>(5), addr<int32_t>(6), addr<int32_t>(7), 4096, 7168,
      4608, 2048, 7168, 1, 4096 * 7168, 1, 7168, 4096, 1, 56, 1, 32 * 56, 1, 56, 128, 128, 64, 128, 128, 32, 8,
      static_cast<int>(DType::bf16), 1);
  const std::string loop8 = pipelined_loop(tt::kernel_body(fp8));
  BOOST_TEST_REQUIRE(!loop8.empty());
  BOOST_TEST(loop8.find("// pipelined: 2 load(s)") == 0);
  BOOST_TEST(tt::occurrences(loop_trips(loop8), "tt_cp_async<16>(") > 0u);
  // The trip's A and B scales (gathered by token row, and by column block) are not tiles: they are
  // loaded a trip ahead into registers, the first trip's before the loop.
  BOOST_TEST(tt::occurrences(loop8, "// loaded a trip ago") == 2u);
  BOOST_TEST(tt::occurrences(loop_trips(loop8), "// loaded a trip ago") == 2u);
}

// FlagGems' implicit-GEMM conv2d at its large benchmark shape (stride 2: the im2col rows are
// gathered element by element, 2 bytes under a per-element mask, too narrow for cp.async): every
// element of both stages (A's gathered tile and B's weights) is loaded into registers before any is
// stored to the ring, so all the loads of a refill are in flight together (a store right after each
// load made the warp wait out every element's latency in turn; a stage's stores and fence before the
// next stage's loads left the overlap to ptxas), and one proxy fence covers the refill's stores.
BOOST_AUTO_TEST_CASE(conv_gathered_stage_loads_before_it_stores) {
  if (!tt::nvrtc_or_skip()) return;
  cuda::KernelSource ks = tt::compile_cuda(
      conv2d_forward_kernel, tt::CudaCheck().warps(4).stages(3), addr<f16_t>(0), addr<f16_t>(1), addr<f16_t>(2),
      addr<f16_t>(3), 32, 210, 210, 16, 104, 104, 2822400, 44100, 210, 1, 1600, 25, 5, 1, 173056, 10816, 104, 1, 64, 5,
      5, 2, 2, 1, 1, 1, 1, 1, 128, 32, 32, static_cast<int>(DType::f32));
  const std::string loop = pipelined_loop(tt::kernel_body(ks));
  BOOST_TEST_REQUIRE(!loop.empty());
  BOOST_TEST(loop.find("// pipelined: 2 load(s) into 3 stages") == 0);
  // The order of element loads (L) and stores to the ring (S) over the prefill's two issues and a
  // trip's refill: one run of loads (A 32, B 8 elements a thread) then one of stores per issue.
  std::string seq;
  const std::regex access(R"(\? \*t\d+ : tt_f16\{\}|\*reinterpret_cast<tt_f16\*>\(tt_smem)");
  for (auto it = std::sregex_iterator(loop.begin(), loop.end(), access); it != std::sregex_iterator(); ++it)
    seq += it->str()[0] == '?' ? 'L' : 'S';
  size_t runs = seq.empty() ? 0 : 1;
  for (size_t i = 1; i < seq.size(); ++i) runs += seq[i] != seq[i - 1];
  BOOST_TEST(seq.size() == 3u * (32 + 8) * 2);  // loads and stores of 3 issues of both tiles
  BOOST_TEST(runs == 2u * 3, "runs of loads and stores: " << runs);
  // One proxy fence an issue, after its stores (wgmma reads the ring through the async proxy), and
  // none at the top of a trip: no stage is a cp.async copy.
  BOOST_TEST(tt::occurrences(loop, "tt_fence_async_shared();") == 3u);
  BOOST_TEST(tt::occurrences(loop, "tt_fence_async_shared();  // the stages' st.shared (2)") == 3u);
  const std::string trips = loop_trips(loop);
  BOOST_TEST(tt::occurrences(trips, "tt_fence_async_shared();") == 1u);
  BOOST_TEST(trips.find("tt_fence_async_shared();") > trips.find("tt_wgmma_wait<1>();"));
  BOOST_TEST(tt::occurrences(trips, "tt_wgmma_wait<1>();") == 1u);
}

// The same kernel at FlagGems' 32 x 32 x 32 config (4 warps: a 32-row tile, too short for wgmma):
// the dot runs on mma.sync, whose ldmatrix reads the ring through the generic proxy like the
// element stores that fill it - no proxy fence at all, where each stage of each issue had one (a
// MEMBAR.ALL.CTA in the SASS).
BOOST_AUTO_TEST_CASE(conv_element_stages_for_mma_sync_need_no_proxy_fence) {
  if (!tt::nvrtc_or_skip()) return;
  cuda::KernelSource ks = tt::compile_cuda(
      conv2d_forward_kernel, tt::CudaCheck().warps(4).stages(3), addr<f16_t>(0), addr<f16_t>(1), addr<f16_t>(2),
      addr<f16_t>(3), 32, 128, 128, 32, 130, 130, 1048576, 16384, 128, 1, 576, 9, 3, 1, 540800, 16900, 130, 1, 64, 3,
      3, 1, 1, 2, 2, 1, 1, 1, 32, 32, 32, static_cast<int>(DType::f32));
  const std::string body = tt::kernel_body(ks);
  const std::string loop = pipelined_loop(body);
  BOOST_TEST_REQUIRE(!loop.empty());
  BOOST_TEST(loop.find("// pipelined: 2 load(s) into 3 stages") == 0);
  BOOST_TEST(body.find("wgmma.mma_async") == std::string::npos);
  BOOST_TEST(body.find("tt_mma_f16(") != std::string::npos);
  BOOST_TEST(tt::occurrences(body, "tt_fence_async_shared();") == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
