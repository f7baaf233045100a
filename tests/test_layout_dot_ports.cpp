// The main loops of the kernel suite's slow dot kernels (issue 27's bar: grouped_gemm,
// persistent_matmul, implicit_gemm_conv, fused_moe) as the layout generator emits them for sm_90a:
// the ports' own kernels (kernels/<name>_kernel.h, included by kernels/<name>.cpp too), with the
// specialisation of their benchmarks' shapes and configs. What the tests assert is the general
// mechanism each kernel needs (docs/cuda-backend.md, "Pipelining"), not the kernel: a K loop nested
// in a while loop and behind hints is pipelined, a persistent tile loop fuses with its K loop, gathered rows
// go through cp.async. Generated and compiled with NVRTC for sm_90a, never run here; the values
// are the suite's checks (`tritium-kernels --check NAME`, CTest's kernel-NAME), speed
// `bench/compare_kernels.py` on a GPU.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <array>
#include <regex>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "cuda_codegen_check.h"
#include "jit/cuda/nvrtc_log.h"
#include "jit/passes/assign_layouts.h"
#include "kernels/fused_moe_kernel.h"
#include "kernels/grouped_gemm_kernel.h"
#include "kernels/implicit_gemm_conv_kernel.h"
#include "kernels/persistent_matmul_kernel.h"

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

using tritium_ports::fused_moe::fused_moe_kernel;
using tritium_ports::grouped_gemm::grouped_matmul_kernel;
using tritium_ports::implicit_gemm_conv::conv2d_forward_kernel;
using tritium_ports::persistent_matmul::matmul_kernel_persistent;

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

// What tutorial 09's tile loop (`flatten=True`) becomes: one pipelined loop over every K trip of
// every tile (jit/passes/fuse_nested_loops.h). A trip waits for its own cp.async group, keeps one
// wgmma group in flight, refills the stage the previous trip read with 16-byte cp.async - across
// tile boundaries, as the ring is never drained - and starts each tile's accumulator by the first
// k-step's scale-d flag (no zeroing of 128 registers, no wait). The tile's epilogue runs in a
// branch at its last K trip: only there does the trip wait for all of its wgmma groups and go
// through shared memory (C's conversion for the coalesced store).
void expect_fused_tile_loop(const std::string& body, const std::string& what) {
  const std::string loop = pipelined_loop(body);
  BOOST_TEST_REQUIRE(!loop.empty(), what << ": no pipelined loop");
  BOOST_TEST(loop.find("// pipelined: 2 load(s) into 3 stages") == 0, what);
  const std::string trips = loop_trips(loop);
  BOOST_TEST_REQUIRE(!trips.empty(), what);
  BOOST_TEST(tt::occurrences(trips, "for (int32_t iv") == 1u, what << ": one loop, the K loop fused into the tile loop");
  BOOST_TEST(tt::occurrences(trips, "tt_cp_async_wait<1>();") == 1u, what);
  BOOST_TEST(tt::occurrences(trips, "tt_wgmma_wait<1>();") == 1u, what << ": the wgmma group runs on into the next trip");
  // The epilogue's wait, in its branch, and the drain after the loop.
  BOOST_TEST(tt::occurrences(trips, "tt_wgmma_wait<0>();") == 2u, what);
  const size_t epilogue = trips.find("tt_wgmma_wait<0>();");
  BOOST_TEST_REQUIRE(epilogue != std::string::npos, what);
  BOOST_TEST(trips.rfind("if (", epilogue) > trips.find("tt_wgmma_wait<1>();"), what << ": the epilogue is a branch after the dot");
  BOOST_TEST(tt::occurrences(trips, "\"r\"((int)(") > 0u, what << ": the accumulator starts by the scale-d flag");
  // The tile's rows and masks are made again only when the refilled trip's tile changes (quotient
  // caching); the trip's own counter divides by the inner trip count with magic numbers.
  BOOST_TEST(tt::occurrences(trips, "the refilled trip's quotient changed") == 1u, what);
  BOOST_TEST(tt::occurrences(loop, "tt_div_fast<int32_t>(") > 0u, what);
  BOOST_TEST(tt::occurrences(trips, "tt_cp_async<16>(") > 0u, what);
  BOOST_TEST(tt::occurrences(trips, "tt_cp_async<4>(") + tt::occurrences(trips, "tt_cp_async<8>(") == 0u, what);
  BOOST_TEST(tt::occurrences(trips.substr(0, epilogue), "tt_vcopy<") == 0u, what << ": nothing converted before the epilogue");
  BOOST_TEST(tt::occurrences(trips, "tt_ld_pred") == 0u, what);
  // The nest as written stays for counts the fused loop cannot take (no K trip): after it.
  BOOST_TEST(body.find("for (int32_t iv", body.find("// no copy lands after the loop")) != std::string::npos, what);
}

// Tutorial 09's persistent kernel: the K loop nested in the tile loop, its addresses computed from
// the loop variable and the tile's rows (from the outer loop), K masked; f16 and fp8 (B a
// column-major view: a K-major tile, which 8-bit wgmma needs).
BOOST_AUTO_TEST_CASE(persistent_matmul_tile_and_k_loops_are_one_pipelined_loop_in_f16_and_fp8) {
  if (!tt::nvrtc_or_skip()) return;
  using tritium::f8e4m3_t;
  cuda::KernelSource f16 = tt::compile_cuda(matmul_kernel_persistent, tt::CudaCheck().warps(8).stages(3), addr<f16_t>(0),
                                            addr<f16_t>(1), addr<f16_t>(2), 8192, 8192, 512, 512, 1, 1, 512, 8192, 1,
                                            128, 256, 64, 8, 132);
  expect_fused_tile_loop(tt::kernel_body(f16), "persistent f16");
  {
    const std::string log = cuda::compile_log(f16.source, f16.entry, "sm_90a", {"--ptxas-options=-v"});
    BOOST_TEST(log.find("C7514") == std::string::npos, log);
  }
  cuda::KernelSource fp8 =
      tt::compile_cuda(matmul_kernel_persistent, tt::CudaCheck().warps(8).stages(3).named("persistent fp8"),
                       addr<f8e4m3_t>(0), addr<f8e4m3_t>(1), addr<f8e4m3_t>(2), 8192, 8192, 512, 512, 1, 1, 512, 8192,
                       1, 128, 256, 128, 8, 132);
  const std::string body = tt::kernel_body(fp8);
  expect_fused_tile_loop(body, "persistent fp8");
  BOOST_TEST(body.find("m64n256k32.f32.e4m3.e4m3") != std::string::npos);
}

// vLLM's fused MoE: A's rows gathered through the sorted token ids (a pointer block made before the
// loop from a loaded index vector, in that load's layout), masked by the token rows and the K bound,
// inside two `if_`s. The carried pointers take the layout of their load, the mask is recomputed in
// it (its token part converted once, before the loop): both loads are issued ahead with 16-byte
// cp.async under the row mask, and the wgmma group stays in flight. The block-fp8 variant scales
// each trip's product, so its dot does not run on into the next trip, but its tiles are still
// issued ahead, and so are its scales, as two more stages of the ring (s45).
BOOST_AUTO_TEST_CASE(fused_moe_gathered_rows_are_issued_ahead) {
  if (!tt::nvrtc_or_skip()) return;
  cuda::KernelSource ks =
      tt::compile_cuda(fused_moe_kernel, tt::CudaCheck().warps(4).stages(3), addr<bf16_t>(0), addr<bf16_t>(1),
                       addr<bf16_t>(2), addr<bf16_t>(8), addr<float>(3), addr<float>(4), addr<float>(9),
                       addr<int32_t>(5), addr<int32_t>(6), addr<int32_t>(7), 14336, 4096, 8696, 8192, 4096, 1,
                       14336 * 4096, 1, 4096, 14336, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64, 64, 32, 8, 1, 0, 2,
                       static_cast<int>(DType::bf16), 0, 0, 0, 0, 0);
  const std::string body = tt::kernel_body(ks);
  expect_tutorial_loop(body, "fused_moe bf16", 2);
  // The rows' mask decides each chunk's size (zero-filled rows past the tokens).
  BOOST_TEST(tt::occurrences(loop_trips(pipelined_loop(body)), " ? 16 : 0)") > 0u);

  using tritium::f8e4m3_t;
  cuda::KernelSource fp8 = tt::compile_cuda(
      fused_moe_kernel, tt::CudaCheck().warps(4).stages(3).named("fused_moe fp8"), addr<f8e4m3_t>(0), addr<f8e4m3_t>(1),
      addr<bf16_t>(2), addr<bf16_t>(8), addr<float>(3), addr<float>(4), addr<float>(9), addr<int32_t>(5),
      addr<int32_t>(6), addr<int32_t>(7), 4096, 7168, 4608, 2048, 7168, 1, 4096 * 7168, 1, 7168, 4096, 1, 56, 1,
      32 * 56, 1, 56, 0, 0, 128, 128, 64, 128, 128, 32, 1, 0, 8, static_cast<int>(DType::bf16), 1, 0, 0, 0, 0);
  const std::string loop8 = pipelined_loop(tt::kernel_body(fp8));
  BOOST_TEST_REQUIRE(!loop8.empty());
  BOOST_TEST(loop8.find("// pipelined: 4 load(s)") == 0);
  BOOST_TEST(tt::occurrences(loop_trips(loop8), "tt_cp_async<16>(") > 0u);
  // The trip's A and B scales (gathered by token row, and by column block) are not tiles: they are
  // stages of the ring too (cp.async, read from the trip's slot into their layouts), not register
  // arrays a trip ahead (tests/test_layout_ring_register_loads.cpp).
  BOOST_TEST(tt::occurrences(loop8, "// loaded a trip ago") == 0u);
  BOOST_TEST(loop_trips(loop8).find("tt_smem + (") != std::string::npos);
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

// FlagGems' conv at its first benchmark shape (NCHW f16, 3x3, stride 1, pad 2; out 130 x 130) and
// the 128 x 32 x 32 tile, 4 warps. The im2col tile's pointer is contiguous in no dim the axis
// analysis can prove (the pixels wrap at the run-time out_width; the channels lie H*W apart), and
// Triton's Coalesce tie-break (the last dim) put a warp's 32 lanes on 32 channels: 32 sectors a
// warp load (ncu, stop 43), 32 rows' index math and masks a thread (255 registers). The likely
// step between neighbours (AxisInfo::stride: 2 bytes along the pixels, unknown along the channels)
// puts the lanes along the pixels: a thread holds one row of 32 channels, a warp loads 32
// consecutive pixels (64 bytes at stride 1), and the output is stored along the pixels as well.
BOOST_AUTO_TEST_CASE(conv_gather_lanes_run_along_the_output_pixels) {
  namespace ir = tritium::ir;
  const auto args = std::make_tuple(addr<f16_t>(0), addr<f16_t>(1), addr<f16_t>(2), addr<f16_t>(3), 32, 128, 128, 32,
                                    130, 130, 1048576, 16384, 128, 1, 576, 9, 3, 1, 540800, 16900, 130, 1, 64, 3, 3,
                                    1, 1, 2, 2, 1, 1, 1, 128, 32, 32, static_cast<int>(DType::f32));
  auto f = std::apply([](const auto&... a) { return conv2d_forward_kernel.optimized_function(a...); }, args);
  tritium::jit::AxisInfoMap axis = tritium::jit::analyze_axis_info(*f);
  tritium::jit::LayoutMap layouts = tritium::jit::assign_layouts(*f, axis, tritium::jit::LayoutOptions{4, 90});
  auto along_rows = [](const tritium::jit::Layout& l) {
    for (const auto& bit : l.lane)
      if (bit.dim != 0) return false;
    for (const auto& bit : l.warp)
      if (bit.dim != 0) return false;
    return true;
  };
  int gathers = 0, stores = 0;
  f->walk([&](ir::Op* op) {
    if (op->kind == ir::OpKind::Load && op->result()->type.shape == ir::Shape{128, 32}) {
      ++gathers;
      BOOST_TEST(along_rows(layouts.of(op->result())), layouts.of(op->result()).str());
    }
    if (op->kind == ir::OpKind::Store && op->operand(0)->type.is_block()) {
      ++stores;
      BOOST_TEST(along_rows(layouts.of(op->operand(1))), layouts.of(op->operand(1)).str());
    }
  });
  BOOST_TEST(gathers == 1);
  BOOST_TEST(stores == 1);
  // The weights' tile ([channels, out channels], both steps unknown) keeps the last dim.
  if (!tt::nvrtc_or_skip()) return;
  cuda::KernelSource ks = std::apply(
      [](const auto&... a) { return tt::compile_cuda(conv2d_forward_kernel, tt::CudaCheck().warps(4).stages(3), a...); },
      args);
  const std::string loop = pipelined_loop(tt::kernel_body(ks));
  BOOST_TEST(loop.find("// pipelined: 2 load(s) into 3 stages") == 0);
  // Each channel's address is the thread's row pointer (its row terms added before the broadcast:
  // jit/passes/reassociate_addptr) plus one wide multiply-add of the channel offset (tt_addptr).
  BOOST_TEST(loop.find("tt_addptr(") != std::string::npos);
  // One row a thread: 255 registers (64 bytes of stack) before, the index math of 32 rows; 128
  // with three 64-bit adds an element (SHF + LEA + LEA.HI.X each, stop 44), 96 with one IMAD.WIDE.
  const std::string log = cuda::compile_log(ks.source, ks.entry, "sm_90a", {"--ptxas-options=-v"});
  std::smatch m;
  BOOST_TEST_REQUIRE(std::regex_search(log, m, std::regex(R"(Used (\d+) registers)")), log);
  BOOST_TEST(std::stoi(m[1]) <= 104, log);
  BOOST_TEST(log.find(" 0 bytes stack frame") != std::string::npos, log);
}

BOOST_AUTO_TEST_SUITE_END()
