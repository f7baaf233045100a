// Tutorial 06's forward (tutorials/06-fused-attention.cpp's own _attn_fwd, the tutorial's source
// included in a namespace of its own - test_layout_attention_bwd includes it too - its main
// renamed, as tools/attn-codegen does) as the CUDA backend generates it for sm_90a: contract_fma,
// then generate_cuda, at the tiles the autotuner picks on an H100 and the benchmark's
// specialisation (B 4, H 32, N_CTX 4096; issue 27; docs/cuda-backend.md, "Attention's forward
// against Triton's"). Asserted: K and V, read through descriptors the kernel makes with Z * H *
// N_CTX rows, fill each loop's ring by TMA (the map's rows a recipe expression the launcher
// evaluates), with no cp.async copy of them in the TMA branch. Compiled with NVRTC, never run here:
// values are the tutorial's own check (`06-fused-attention --backend cuda`). Also: bf16's P,
// converted for the P V dot alone, rounds without the NaN fix-up.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/ranges.h>

#include "autotune/autotuner.h"
#include "autotune/do_bench.h"
#include "cuda_codegen_check.h"
#include "jit/cuda/nvrtc.h"
#include "jit/passes/contract_fma.h"
#include "jit/passes/dce.h"
#include "nn/autograd.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/thread_pool.h"
#include "tutorial.h"

// (Its headers are all included above: inside the namespace the tutorial's own includes are no-ops.)
namespace tutorial06_fwd {
#define main tutorial06_main
#include "06-fused-attention.cpp"
#undef main
}  // namespace tutorial06_fwd

namespace cuda = tritium::jit::cuda;
namespace tt = tritium::test;

namespace {

// The kernel as the CUDA backend compiles it (cuda_backend.cpp, generate); f16, contiguous.
// layouts_budget: the layout generator's shared memory (0: the tests' 219 KB, an H100's opt-in
// less the element-loop generator's margin; the backend gives it the whole 227 KB).
template <class T = tritium::f16_t>
cuda::KernelSource generate(int bm, int bn, int warps, int stages, int d, int stage, int64_t layouts_budget = 0) {
  auto f = tutorial06_fwd::_attn_fwd.optimized_function(0.125f, tt::fake_address<float>(1), 4, 32, tt::fake_address<T>(2),
                                                        tt::fake_address<T>(3), tt::fake_address<T>(4),
                                                        tt::fake_address<T>(5), 4096, d, bm, bn, 0, stage);
  if (tritium::jit::contract_multiply_add(*f)) tritium::jit::eliminate_dead_code(*f);
  tritium::jit::CompileOptions opts;
  opts.num_warps = warps;
  opts.num_stages = stages;
  return cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts, tt::kH100SharedMemory, 90, layouts_budget);
}

// The text of each run-time loop, from its `for` to the ring's drain after it.
std::vector<std::string> loops(const std::string& body) {
  std::vector<std::string> out;
  for (size_t at = body.find("for (int32_t iv"); at != std::string::npos; at = body.find("for (int32_t iv", at + 1)) {
    const size_t end = body.find("tt_cp_async_wait<0>();  // no copy lands after the loop", at);
    BOOST_REQUIRE(end != std::string::npos);
    out.push_back(body.substr(at, end - at));
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layout_attention_fwd)

// K's and V's maps: base desc_k (parameter 5) / desc_v (6), Z * H * N_CTX rows (parameters 2, 3,
// 8, i32 products as the kernel's), HEAD_DIM columns of row stride HEAD_DIM, f16, a box of 64
// columns by BLOCK_N rows. Each loop (the causal kernel has two: off-band, on-band) has its own
// pair; each trip's refill is thread 0's copies of one stage (HEAD_DIM / 64 per tile).
BOOST_AUTO_TEST_CASE(k_and_v_fill_the_ring_by_tma) {
  if (!tt::nvrtc_or_skip()) return;
  struct Case { int bm, bn, warps, stages, d, stage; };
  for (Case c : {Case{128, 64, 8, 3, 64, 1}, Case{128, 64, 8, 3, 64, 3}, Case{128, 128, 8, 3, 128, 1},
                 Case{128, 128, 8, 3, 128, 3}, Case{64, 64, 4, 3, 64, 3}}) {
    BOOST_TEST_CONTEXT("BLOCK_M " << c.bm << " BLOCK_N " << c.bn << " HEAD_DIM " << c.d << " STAGE " << c.stage) {
      const cuda::KernelSource ks = generate(c.bm, c.bn, c.warps, c.stages, c.d, c.stage);
      const std::string rows = "mul.i32(mul.i32(i2,i3),i8)";
      const std::string shape = fmt::format("{} c{} c{} c1 2 6 64 {}", rows, c.d, c.d, c.bn);
      const size_t num_loops = c.stage == 3 ? 2 : 1;
      std::vector<std::string> want;
      for (size_t l = 0; l < num_loops; ++l) want.insert(want.end(), {"p5 " + shape, "p6 " + shape});
      std::vector<std::string> got = ks.tma_maps;
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      BOOST_TEST(got == want, fmt::format("{}", fmt::join(ks.tma_maps, " | ")));
      for (const std::string& m : ks.tma_maps) BOOST_TEST(cuda::parse_tensor_map_recipe(m, 14).has_value(), m);
      const std::string body = tt::kernel_body(ks);
      const std::vector<std::string> ls = loops(body);
      BOOST_TEST_REQUIRE(ls.size() == num_loops);
      for (const std::string& loop : ls) {
        // One refill a trip: K's and V's copies of 64 columns each, from thread 0, after a wait on
        // the stage's mbarrier; both dots on wgmma.
        BOOST_TEST(tt::occurrences(loop, "tt_tma_load_2d(") == size_t(2 * (c.d / 64)));
        BOOST_TEST(tt::occurrences(loop, "tt_mbarrier_wait(") >= 1u);
        BOOST_TEST(tt::occurrences(loop, "wgmma.mma_async") >= 2u);
      }
      // And S - 1 stages ahead before each loop (S: the ring's stages, fewer than asked where
      // shared memory runs short: 2 at HEAD_DIM 128).
      size_t copies = 0;
      const std::string ring = "// pipelined: 2 load(s) into ";
      for (size_t at = body.find(ring); at != std::string::npos; at = body.find(ring, at + 1))
        copies += size_t(std::atoi(body.c_str() + at + ring.size()) * 2 * (c.d / 64));
      BOOST_TEST(copies == num_loops * 2 * (c.d / 64) * (c.d == 64 ? 3 : 2));
      BOOST_TEST(tt::occurrences(body, "tt_tma_load_2d(") == copies);
      // The guard tests the rows as the launcher computes them (wrapping 32-bit products).
      BOOST_TEST(body.find("tt_tensor_map_usable((int64_t)(int32_t)((uint64_t)(int64_t)(int32_t)((uint64_t)") !=
                 std::string::npos);
      if (c.stage == 3) {  // NVRTC takes it (the causal kernel: both loops)
        const std::vector<char> cubin = cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a", {"--fmad=false"});
        BOOST_TEST(!cubin.empty());
      }
    }
  }
}

// Shared memory counted exactly: with an H100's opt-in 227 KB (232,448 bytes; what the backend gives
// the layout generator) the 128 x 128 x HEAD_DIM 128 forward keeps its 3 stages, as Triton's kernel
// does in 229,432 bytes: Q (32 KB) and 3 stages of K and V (192 KB) with no margin kept back for a
// body that allocates nothing else (its row reductions stay in the warps). 219 KB takes 2; a budget
// the first count overruns is lowered again with the margin, never over the limit.
BOOST_AUTO_TEST_CASE(the_128_by_128_head_dim_128_ring_keeps_3_stages) {
  if (!tt::nvrtc_or_skip()) return;
  for (int stage : {1, 3}) {
    BOOST_TEST_CONTEXT("STAGE " << stage) {
      const cuda::KernelSource h100 = generate(128, 128, 8, 3, 128, stage, 232448);
      BOOST_TEST(h100.smem_bytes <= 232448);
      BOOST_TEST(h100.smem_bytes > 219 * 1024);
      BOOST_TEST(tt::occurrences(h100.source, "// pipelined: 2 load(s) into 3 stages") == (stage == 3 ? 2u : 1u));
      BOOST_TEST(!cuda::compile_to_cubin(h100.source, h100.entry, "sm_90a", {"--fmad=false"}).empty());
      const cuda::KernelSource less = generate(128, 128, 8, 3, 128, stage);
      BOOST_TEST(less.smem_bytes <= 219 * 1024);
      BOOST_TEST(tt::occurrences(less.source, "into 3 stages") == 0u);
    }
  }
}

// bf16 inputs: P (f32 in registers) becomes the P V dot's bf16 A operand with one cvt an element,
// without the NaN fix-up (FSETP, SEL, PRMT: 192 instructions a trip at 128 x 64 x D 128, 4 warps);
// the output, stored, keeps it. The maps are BFLOAT16 (9).
BOOST_AUTO_TEST_CASE(bf16_p_rounds_for_the_dot_alone) {
  if (!tt::nvrtc_or_skip()) return;
  const cuda::KernelSource ks = generate<tritium::bf16_t>(128, 64, 4, 3, 128, 1);
  BOOST_TEST(ks.tma_maps.size() == 2u);
  for (const std::string& m : ks.tma_maps) BOOST_TEST(m.find(" 2 9 64 64") != std::string::npos, m);
  const std::string body = tt::kernel_body(ks);
  const std::vector<std::string> ls = loops(body);
  BOOST_TEST_REQUIRE(ls.size() == 1u);
  BOOST_TEST(tt::occurrences(ls[0], "tt_bf16_from_rn(") >= 1u);
  BOOST_TEST(tt::occurrences(ls[0], "tt_bf16_from(") == 0u);
  BOOST_TEST(tt::occurrences(body.substr(body.find(ls[0]) + ls[0].size()), "tt_bf16_from(") >= 1u);  // O's store
}

BOOST_AUTO_TEST_SUITE_END()
