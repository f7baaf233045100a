// The layout generator's pipelined ring filled by the bulk tensor copy engine (TMA) on Hopper
// (jit/cuda/lowering/tma_ring.cpp, the analysis in jit/cuda/tma.h): generated and compiled with
// NVRTC for sm_90a, never run here (no GPU in CI: scripts/gpu_layouts.sh runs the value checks of
// these kernels through layouts on a GPU). Skips when NVRTC is unavailable.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <algorithm>
#include <string>

#include "cuda_codegen_check.h"
#include "stacked_descriptor_matmul.h"
#include "ops/matmul_block_pointers.h"
#include "ops/ops.h"

namespace tl = tritium::tl;
namespace cuda = tritium::jit::cuda;
namespace tt = tritium::test;
using tritium::f16_t;
using tt::kernel_body;

namespace {

template <class T> T* addr(uint64_t i) { return tt::fake_address<T>(i); }

// Through layouts for `cc` with 3 stages, compiled for `arch` (tests/cuda_codegen_check.h).
template <class... A>
cuda::KernelSource through_layouts(tritium::Kernel& k, int num_warps, int cc, const std::string& arch, const A&... args) {
  return tt::compile_cuda(k, tt::CudaCheck().warps(num_warps).target(cc, arch), args...);
}

size_t count(const std::string& s, const std::string& what) { return tt::occurrences(s, what); }

// Whether the kernel takes exactly these tensor maps (in any order): A's (M x K, row stride K; box
// 64 x BM) and B's (K x N, row stride N; box 64 x BK) recipes: base, shape0, shape1, stride0, 1 (i:
// a 32-bit parameter), 2-byte elements, CU_TENSOR_MAP_DATA_TYPE_FLOAT16 (6), the box.
bool has_maps(const cuda::KernelSource& ks, std::vector<std::string> want) {
  std::vector<std::string> got = ks.tma_maps;
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  return got == want;
}

// The TMA loop's text (from its guard to the cp.async fallback), empty when there is none.
// The ring's loop, from its prefill to its end: one loop whose waits and refills branch on the
// TMA guard (docs/cuda-backend.md, "TMA for the ring").
std::string tma_loop(const std::string& body) {
  const size_t from = body.find("// stages filled by TMA under its guard");
  const size_t to = body.find("tt_cp_async_wait<0>();  // no copy lands after the loop", from);
  if (from == std::string::npos || to == std::string::npos) return "";
  return body.substr(from, to - from);
}

// The guard's variable: the bool defined just before the loop's comment.
std::string tma_guard(const std::string& body) {
  const size_t at = body.rfind("bool const ", body.find("// stages filled by TMA under its guard"));
  if (at == std::string::npos) return "";
  const size_t from = at + 11;
  return body.substr(from, body.find(' ', from) - from);
}

// Tutorial 03's kernel: pointer blocks with rows `% M` and columns `% N`, masks on K.
auto tutorial_matmul = tritium::kernel(
    "mm_layout_tma", [](tl::ptr<f16_t> a, tl::ptr<f16_t> b, tl::ptr<f16_t> c, tl::i32 M, tl::i32 N, tl::i32 K, int BM,
                        int BN, int BK, float OTHER) {
      auto pid_m = tl::program_id(0), pid_n = tl::program_id(1);
      auto offs_am = (pid_m * BM + tl::arange(0, BM)) % M, offs_bn = (pid_n * BN + tl::arange(0, BN)) % N;
      auto offs_k = tl::arange(0, BK);
      auto a_ptrs = a + (offs_am(tl::_, tl::None) * K + offs_k(tl::None, tl::_));
      auto b_ptrs = b + (offs_k(tl::_, tl::None) * N + offs_bn(tl::None, tl::_));
      auto acc = tl::zeros({BM, BN}, tl::float32);
      for (auto k : tl::range(0, tl::cdiv(K, BK))) {
        acc += tl::dot(tl::load(a_ptrs, offs_k(tl::None, tl::_) < K - k * BK, OTHER),
                       tl::load(b_ptrs, offs_k(tl::_, tl::None) < K - k * BK, 0.0));
        a_ptrs += BK;
        b_ptrs += BK * N;
      }
      auto offs_cm = pid_m * BM + tl::arange(0, BM), offs_cn = pid_n * BN + tl::arange(0, BN);
      tl::store(c + N * offs_cm(tl::_, tl::None) + offs_cn(tl::None, tl::_), acc.to(tl::float16),
                (offs_cm(tl::_, tl::None) < M) & (offs_cn(tl::None, tl::_) < N));
    });

// Block pointer A, tensor descriptor B (loaded at the loop variable's offset).
auto block_pointer_matmul = tritium::kernel(
    "mm_layout_tma_bp", [](tl::ptr<f16_t> a, tl::ptr<f16_t> b, tl::ptr<f16_t> c, tl::i32 M, tl::i32 N, tl::i32 K,
                           int BM, int BN, int BK, bool NAN_PAD) {
      auto pm = tl::program_id(0), pn = tl::program_id(1);
      auto a_bp = tl::make_block_ptr(a, {M, K}, {K, 1}, {pm * BM, 0}, {BM, BK}, {1, 0});
      auto b_d = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
      auto acc = tl::zeros({BM, BN}, tl::float32);
      for (auto kt : tl::range(0, tl::cdiv(K, BK))) {
        acc = tl::dot(tl::load(a_bp, {0, 1}, NAN_PAD ? "nan" : "zero"), b_d.load({kt * BK, pn * BN}), acc);
        a_bp = tl::advance(a_bp, {0, BK});
      }
      tl::store(tl::make_block_ptr(c, {M, N}, {N, 1}, {pm * BM, pn * BN}, {BM, BN}, {1, 0}), acc.to(tl::float16), {0, 1});
    });


}  // namespace

BOOST_AUTO_TEST_SUITE(test_layout_tma)

// Tutorial 03 through layouts on sm_90a at 128 x 256 x 64, 3 stages: both tiles by TMA (maps A: M x
// K from the `% M` and the K mask, row stride K; B: K x N, stride N), issued by thread 0 alone (one
// copy for A's 64 columns, four for B's 256), the consumers waiting on the stage's mbarrier, the
// wgmma group kept in flight (wait_group 1) and the stage it read refilled after it. Where the
// guard fails the same loop waits for and refills its stages with cp.async: the loop and its dots
// are emitted once, only the prefill, the waits, the refills and the end branch on the guard.
BOOST_AUTO_TEST_CASE(tutorial_matmul_fills_its_ring_by_tma) {
  if (!cuda::nvrtc_available()) return;
  auto p = addr<f16_t>(0);
  cuda::KernelSource ks =
      through_layouts(tutorial_matmul, 8, 90, "sm_90a", p, addr<f16_t>(1), addr<f16_t>(2), 4096, 4096, 4096, 128, 256, 64, 0.0f);
  const std::string body = kernel_body(ks);
  BOOST_TEST(has_maps(ks, {"p0 i3 i5 i5 c1 2 6 64 128", "p1 i5 i4 i4 c1 2 6 64 64"}));
  BOOST_TEST(body.find("const __grid_constant__ tt_tmap_t tt_tmap1") != std::string::npos);
  BOOST_TEST(body.find("// pipelined: 2 load(s) into 3 stages, 2 trips ahead") != std::string::npos);
  const std::string loop = tma_loop(body);
  BOOST_TEST_REQUIRE(!loop.empty());
  BOOST_TEST(loop.find("(5 bulk tensor copies a stage)") != std::string::npos);
  BOOST_TEST(loop.find("tt_tensor_map_usable(") == std::string::npos);  // the guard is computed before it
  BOOST_TEST(body.find("tt_tensor_map_usable(") < body.find("// stages filled by TMA"));
  // Two stages ahead before the loop and one refill a trip: 3 x (1 + 4) copies, each from thread 0.
  BOOST_TEST(count(loop, "tt_tma_load_2d(") == 15u);
  BOOST_TEST(count(loop, "tt_mbarrier_expect_tx(") == 3u);
  BOOST_TEST(count(loop, "if (tid == 0 && ") == 3u);
  BOOST_TEST(count(loop, "tt_mbarrier_wait(") == 1u);
  // One loop, one dot (4 k-steps of 16), and cp.async's prefill (2 stages) and refill beside TMA's.
  BOOST_TEST(count(body, "for (int32_t iv") == 1u);
  BOOST_TEST(count(body, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16") == 4u);
  BOOST_TEST(count(loop, "tt_cp_async_commit();") == 3u);
  BOOST_TEST(count(loop, "tt_cp_async_wait<1>();  // this trip's tiles") == 1u);
  // The branches: the prefill, the wait, the refill and the end test the guard, computed once.
  const std::string guard = tma_guard(body);
  BOOST_TEST_REQUIRE(!guard.empty());
  BOOST_TEST(count(body, "if (" + guard + ") {") == 4u);
  BOOST_TEST(count(body, "bool const " + guard + " = ") == 1u);
  // The rows' `% M` and columns' `% N` and the pointer blocks only cp.async's stages read are made
  // in the prefill's cp.async branch (stop 41): a TMA-filled program never computes them.
  const size_t fallback = body.find("else {", body.find("if (" + guard + ") {"));
  BOOST_TEST(body.find("tt_rem<int32_t>(v") > fallback);
  BOOST_TEST(count(body, "tt_rem<int32_t>(v") == 2u);
  const size_t wait1 = loop.find("tt_wgmma_wait<1>();");
  BOOST_TEST_REQUIRE(wait1 != std::string::npos);
  BOOST_TEST(loop.find("tt_tma_load_2d(", wait1) != std::string::npos);  // the refill, after the retire
  BOOST_TEST(body.find("tt_mbarrier_inval(") > body.find("tt_cp_async_wait<1>();  // this trip's tiles"));
  BOOST_TEST(count(loop, "tt_cp_async<16>(") > 0u);
  // The stages, the mbarriers and nothing else: three of 16 KB + 32 KB, 3 x 8 bytes (as the
  // element-loop generator's TMA loop); C's staging reuses the stages' bytes.
  BOOST_TEST(ks.smem_bytes == 3 * (128 * 64 + 64 * 256) * 2 + 3 * 8);
}

// What the copy cannot do keeps cp.async alone: sm_80 (no TMA), a row stride with no known 16-byte
// alignment (K = 4100: not a multiple of 16, so not specialised), BK = 32 (A's rows of 64 bytes:
// not a 64-column box). A load whose `other` is not +0 (the copy fills with zeros) is not in the
// ring at all; the other tile's ring still takes TMA.
BOOST_AUTO_TEST_CASE(tiles_the_copy_cannot_serve_keep_cp_async) {
  if (!cuda::nvrtc_available()) return;
  auto a = addr<f16_t>(0), b = addr<f16_t>(1), c = addr<f16_t>(2);
  auto ampere = through_layouts(tutorial_matmul, 4, 80, "sm_80", a, b, c, 4096, 4096, 4096, 128, 128, 64, 0.0f);
  BOOST_TEST(ampere.tma_maps.empty());
  BOOST_TEST(kernel_body(ampere).find("tt_tma_load_2d(") == std::string::npos);
  auto odd = through_layouts(tutorial_matmul, 8, 90, "sm_90a", a, b, c, 4100, 4100, 4100, 128, 256, 64, 0.0f);
  BOOST_TEST(odd.tma_maps.empty());
  BOOST_TEST(kernel_body(odd).find("tt_tma_load_2d(") == std::string::npos);
  BOOST_TEST(kernel_body(odd).find("// pipelined: 2 load(s)") != std::string::npos);  // element by element
  // Stages written element by element (st.shared, the generic proxy) are fenced for wgmma's async
  // proxy by their writers before the barrier that hands them over: in the prefill and the refill.
  BOOST_TEST(count(kernel_body(odd), "tt_fence_async_shared();  // the stage") >= 2u);
  // A's `other` is a run-time value: A is loaded in the loop, B alone fills the ring (by TMA).
  auto other = through_layouts(tutorial_matmul, 8, 90, "sm_90a", a, b, c, 4096, 4096, 4096, 128, 256, 64, 1.0f);
  BOOST_TEST(has_maps(other, {"p1 i5 i4 i4 c1 2 6 64 64"}));
  BOOST_TEST(kernel_body(other).find("// pipelined: 1 load(s)") != std::string::npos);
  auto narrow = through_layouts(tutorial_matmul, 4, 90, "sm_90a", a, b, c, 4096, 4096, 4096, 64, 128, 32, 0.0f);
  BOOST_TEST(narrow.tma_maps.empty());
}

// Block pointers and tensor descriptors (every dim bounds-checked, zero padding): TMA for both
// tiles, the coordinates the block pointer's carried offsets and the loop variable's offset, read
// by thread 0 at element (0, 0). NaN padding is not the copy's fill (nor cp.async's): that load
// stays in the loop, B's ring still takes TMA.
BOOST_AUTO_TEST_CASE(block_pointer_tiles_by_tma) {
  if (!cuda::nvrtc_available()) return;
  auto a = addr<f16_t>(0), b = addr<f16_t>(1), c = addr<f16_t>(2);
  auto ks = through_layouts(block_pointer_matmul, 8, 90, "sm_90a", a, b, c, 4096, 4096, 4096, 128, 256, 64, false);
  BOOST_TEST(has_maps(ks, {"p0 i3 i5 i5 c1 2 6 64 128", "p1 i5 i4 i4 c1 2 6 64 64"}));
  for (const std::string& m : ks.tma_maps) BOOST_TEST(cuda::parse_tensor_map_recipe(m, 10).has_value(), m);
  const std::string loop = tma_loop(kernel_body(ks));
  BOOST_TEST(count(loop, "tt_tma_load_2d(") == 15u);
  BOOST_TEST(count(kernel_body(ks), "for (int32_t iv") == 1u);
  auto nan = through_layouts(block_pointer_matmul, 8, 90, "sm_90a", a, b, c, 4096, 4096, 4096, 128, 256, 64, true);
  BOOST_TEST(has_maps(nan, {"p1 i5 i4 i4 c1 2 6 64 64"}));  // A's NaN padding: A is loaded in the loop
}

// Shapes and strides computed in the kernel from its parameters are recipe expressions (the
// launcher evaluates them as the kernel does: codegen.h, RecipeValue): both tiles by TMA, the
// guard testing the same expressions in the kernel. A row stride whose alignment the
// specialisation does not know (pad = 4: K + pad not a multiple of 16) keeps A in cp.async, and
// with it the whole ring (one mbarrier phase a stage for all of its tiles).
BOOST_AUTO_TEST_CASE(expression_shaped_descriptors_by_tma) {
  if (!tt::nvrtc_or_skip()) return;
  auto a = addr<f16_t>(0), b = addr<f16_t>(1);
  auto c = addr<float>(2);
  auto ks = through_layouts(tt::stacked_descriptor_matmul(), 4, 90, "sm_90a", a, b, c, 3, 4096, 256, 512, 16, 128, 64, 64);
  BOOST_TEST(has_maps(ks, {"p0 mul.i32(i3,i4) i6 add.i32(i6,i7) c1 2 6 64 128", "p1 mul.i32(i3,i6) i5 i5 c1 2 6 64 64"}));
  for (const std::string& m : ks.tma_maps) BOOST_TEST(cuda::parse_tensor_map_recipe(m, 11).has_value(), m);
  const std::string body = kernel_body(ks);
  // The kernel's guard: the same wrapping products and sum as the launcher's, before the loop.
  BOOST_TEST(body.find("tt_tensor_map_usable((int64_t)(int32_t)((uint64_t)(int64_t)(") != std::string::npos);
  BOOST_TEST(body.find("tt_tensor_map_usable(") < body.find("// stages filled by TMA"));
  const std::string loop = tma_loop(body);
  BOOST_TEST_REQUIRE(!loop.empty());
  BOOST_TEST(count(loop, "tt_tma_load_2d(") > 0u);
  BOOST_TEST(count(body, "for (int32_t iv") == 1u);
  auto unaligned = through_layouts(tt::stacked_descriptor_matmul(), 4, 90, "sm_90a", a, b, c, 3, 4096, 256, 512, 4, 128, 64, 64);
  BOOST_TEST(unaligned.tma_maps.empty());
  BOOST_TEST(kernel_body(unaligned).find("tt_tma_load_2d(") == std::string::npos);
}

// bf16 tiles too (CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9), through the op library's matmul kernel
// with block pointers (64-bit strides: parameters read as 64 bits, `pN`). The matcher planned the
// same two maps for this kernel before it was removed (stop 41).
BOOST_AUTO_TEST_CASE(op_library_bf16_matmul_by_tma) {
  if (!tt::nvrtc_or_skip()) return;
  using tritium::bf16_t;
  auto ks = through_layouts(
      tritium::ops::matmul_kernel(tritium::DType::bf16), 8, 90, "sm_90a", addr<bf16_t>(0), addr<bf16_t>(1),
      addr<bf16_t>(2), 4096, 4096, 4096, int64_t{4096}, int64_t{1}, int64_t{4096}, int64_t{1}, int64_t{4096}, int64_t{1},
      int64_t{1}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0},
      tritium::Meta{{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"TF32", 0},
                    {"CARRY_POINTERS", false}, {"BLOCK_POINTERS", true}});
  BOOST_TEST(has_maps(ks, {"p0 i3 i5 p6 c1 2 9 64 128", "p1 i5 i4 p8 c1 2 9 64 64"}));
  BOOST_TEST(!tma_loop(kernel_body(ks)).empty());
}

// A Linear layer's three products through the op library's kernel in bf16 (x [M, K], W [N, K], g
// [M, N] row-major; ops::matmul_block_pointers' forms): each operand's block pointer describes it
// as stored, so both tiles of every product take TMA - the forward's B as W's [N, K] rows, the
// weight gradient's A as g's [M, N] rows (M-major), transposed as tiles, not in memory. Before,
// only the input gradient (both operands' rows along K and N) did; the others took 16-byte cp.async.
BOOST_AUTO_TEST_CASE(op_library_linear_products_by_tma) {
  if (!tt::nvrtc_or_skip()) return;
  using tritium::bf16_t;
  namespace BP = tritium::ops::BlockPointers;
  const int64_t M = 16384, K = 384, N = 1536;
  struct Product {
    const char* name;
    int32_t pm, pn, pk;
    int64_t sam, sak, sbk, sbn;
    int form;
    std::vector<std::string> maps;
  };
  const Product products[] = {
      {"fwd", M, N, K, K, 1, 1, K, BP::a_k_b_k, {"p0 i3 i5 p6 c1 2 9 64 128", "p1 i4 i5 p9 c1 2 9 64 256"}},
      {"dgrad", M, K, N, N, 1, K, 1, BP::a_k_b_mn, {"p0 i3 i5 p6 c1 2 9 64 128", "p1 i5 i4 p8 c1 2 9 64 64"}},
      {"wgrad", N, K, M, 1, N, K, 1, BP::a_mn_b_mn, {"p0 i5 i3 p7 c1 2 9 64 64", "p1 i5 i4 p8 c1 2 9 64 64"}},
  };
  for (const Product& p : products) {
    BOOST_TEST_CONTEXT(p.name) {
      BOOST_TEST(tritium::ops::matmul_block_pointers(tritium::DType::bf16, false, p.sam, p.sak, p.sbk, p.sbn, 90, 1) ==
                 p.form);
      auto ks = through_layouts(
          tritium::ops::matmul_kernel(tritium::DType::bf16), 8, 90, "sm_90a", addr<bf16_t>(0), addr<bf16_t>(1),
          addr<bf16_t>(2), p.pm, p.pn, p.pk, p.sam, p.sak, p.sbk, p.sbn, int64_t{p.pn}, int64_t{1}, int64_t{1},
          int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0},
          tritium::Meta{{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"TF32", 0},
                        {"CARRY_POINTERS", false}, {"BLOCK_POINTERS", p.form}});
      for (const std::string& m : ks.tma_maps) BOOST_TEST_MESSAGE(p.name << " map " << m);
      BOOST_TEST(has_maps(ks, p.maps));
      const std::string loop = tma_loop(kernel_body(ks));
      BOOST_TEST(!loop.empty());
      BOOST_TEST(count(kernel_body(ks), "wgmma.mma_async") > 0u);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
