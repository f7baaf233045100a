// Tutorial 06's backward (tutorials/06-fused-attention.cpp's own _attn_bwd: the tutorial's source is
// included, its main renamed, as tools/attn-codegen does) as the CUDA backend generates it for sm_90a - contract_fma, then generate_cuda -
// at the tutorial's config (BLOCK_M1 32, BLOCK_N1 128, BLOCK_M2 128, BLOCK_N2 32, 4 warps, 5
// stages) and its benchmark's specialisation (issue 27; docs/cuda-backend.md, "Attention's backward
// against Triton's"). What is asserted is the general mechanisms the kernel needs, read in the
// kernel body: shared memory reused once a tile is dead (its dK/dV phase's K and V tiles give their
// bytes to the dQ phase's Q and dO tiles), the loops' tiles pipelined, P and dS passed to their
// dots in registers, nothing else through shared memory in the loops. Generated and compiled with
// NVRTC, never run here: values are the tutorial's own check (`06-fused-attention --backend cuda`).
#define main tutorial06_main
#include "06-fused-attention.cpp"
#undef main

#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <string>
#include <tuple>

#include "cuda_codegen_check.h"
#include "jit/passes/contract_fma.h"
#include "jit/passes/dce.h"

namespace cuda = tritium::jit::cuda;
namespace tt = tritium::test;

namespace {

// The kernel as the CUDA backend compiles it (cuda_backend.cpp, generate): contract_fma, then the
// generator's routing; B 4, H 32, N_CTX 4096, contiguous f16 as the tutorial's benchmark.
cuda::KernelSource generate(int d, int causal) {
  using tritium::f16_t;
  const int n = 4096, h = 32;
  auto f = _attn_bwd.optimized_function(tt::fake_address<f16_t>(1), tt::fake_address<f16_t>(2), tt::fake_address<f16_t>(3),
                                       0.125f, tt::fake_address<f16_t>(4), tt::fake_address<f16_t>(5),
                                       tt::fake_address<f16_t>(6), tt::fake_address<f16_t>(7), tt::fake_address<float>(8),
                                       tt::fake_address<float>(9), h * n * d, n * d, d, 1, h, n, 32, 128, 128, 32, 2, d,
                                       causal);
  if (tritium::jit::contract_multiply_add(*f)) tritium::jit::eliminate_dead_code(*f);
  tritium::jit::CompileOptions opts;
  opts.num_warps = 4;
  opts.num_stages = 5;
  return cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts, tt::kH100SharedMemory, 90);
}

// The loops of the kernel body, in order: from each `for (int32_t iv` to the ring's drain after it
// ("no copy lands after the loop").
std::vector<std::string> loops(const std::string& body) {
  std::vector<std::string> out;
  for (size_t at = body.find("for (int32_t iv"); at != std::string::npos; at = body.find("for (int32_t iv", at + 1)) {
    const size_t end = body.rfind("tt_cp_async_wait<0>();  // no copy lands after the loop",
                                  body.find("no copy lands after the loop", at));
    BOOST_REQUIRE(end != std::string::npos);
    BOOST_REQUIRE(end > at);
    out.push_back(body.substr(at, end - at));
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layout_attention_bwd)

// Tiles from registers lived until the end of their block: K and V (the dK/dV loops' A operands,
// 64 KB at HEAD_DIM 128) kept their bytes through the dQ loop, whose Q and dO tiles and ring came
// on top - 208 KB, so the L1 the kernel's spills go to kept 28 KB of the SM's 256. A tile is now
// freed after the last op that reads it (a barrier, and the wgmma groups waited for, before its
// bytes are written again), as Triton's allocator reuses a buffer past its liveness: 144 KB, one
// phase's tiles and ring (Triton's kernel: 145 KB).
BOOST_AUTO_TEST_CASE(dead_tiles_give_their_bytes_to_the_next_phase) {
  if (!tt::nvrtc_or_skip()) return;
  struct Case { int d, causal; int64_t max_bytes; };
  // One phase: K and V (2 x 128 x d f16), the dK/dV ring (5 stages of 32-row Q^T and dO tiles and
  // of the 32 f32 m and delta values); the dQ phase's Q and dO tiles and ring (5 stages of 32-row
  // K^T and V^T tiles) are no larger.
  for (const Case& c : {Case{128, 1, 2 * 128 * 128 * 2 + 5 * 2 * 32 * 128 * 2 + 5 * 2 * 32 * 4},
                        Case{128, 0, 2 * 128 * 128 * 2 + 5 * 2 * 32 * 128 * 2 + 5 * 2 * 32 * 4},
                        Case{64, 1, 2 * 128 * 64 * 2 + 5 * 2 * 32 * 64 * 2 + 5 * 2 * 32 * 4}}) {
    BOOST_TEST_CONTEXT("HEAD_DIM " << c.d << (c.causal ? ", causal" : "")) {
      cuda::KernelSource ks;
      BOOST_REQUIRE_NO_THROW(ks = generate(c.d, c.causal));
      BOOST_TEST(ks.smem_bytes <= c.max_bytes);
      const std::string body = tt::kernel_body(ks);
      // The dQ phase's first tile (Q) is written where K was: at the bottom of the buffer, after a
      // barrier that follows the last dK/dV loop.
      const std::vector<std::string> ls = loops(body);
      BOOST_REQUIRE(ls.size() == (c.causal ? 4u : 2u));
      const size_t dq_phase = body.find(ls[c.causal ? 2 : 1]);
      const size_t last_dkdv = body.find(ls[c.causal ? 1 : 0]);
      const size_t k_tile = body.find("tt_vcopy<16>(tt_smem + 0 + ");
      const size_t reuse = body.find("tt_vcopy<16>(tt_smem + 0 + ", last_dkdv + ls[c.causal ? 1 : 0].size());
      BOOST_TEST(k_tile < last_dkdv);
      BOOST_TEST(reuse < dq_phase);
      BOOST_TEST(body.rfind("__syncthreads();", reuse) > last_dkdv);
      BOOST_TEST(!cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a", {"--fmad=false"}).empty());
    }
  }
}

// What a trip of each loop holds (HEAD_DIM 128, causal): the two dots of shared tiles on wgmma (S^T
// or S from K / Q and the ring's tile, dP^T or dP), the two dots of P^T / dS^T (dS) from registers
// into the carried accumulators, exp2 as Triton's, one wait for the landed tiles and barriers as
// the forward's loop (the landed stage, the retired group), no f32 or f16 buffer (no layout
// conversion through shared memory in any loop), no zeroed accumulator, and m and delta through the
// ring as vectors.
BOOST_AUTO_TEST_CASE(the_loops_keep_p_and_ds_in_registers) {
  if (!tt::nvrtc_or_skip()) return;
  cuda::KernelSource ks;
  BOOST_REQUIRE_NO_THROW(ks = generate(128, 1));
  const std::vector<std::string> ls = loops(tt::kernel_body(ks));
  BOOST_REQUIRE(ls.size() == 4u);
  for (size_t i = 0; i < ls.size(); ++i) {
    BOOST_TEST_CONTEXT("loop " << i << (i < 2 ? " (dK, dV)" : " (dQ)")) {
      const std::string& l = ls[i];
      BOOST_TEST(tt::occurrences(l, "(shared A)") == 2u);
      BOOST_TEST(tt::occurrences(l, "(register A)") == (i < 2 ? 2u : 1u));
      BOOST_TEST(tt::occurrences(l, "tt_exp2(") == 1u);
      BOOST_TEST(l.find("exp2f(") == std::string::npos);
      BOOST_TEST(tt::occurrences(l, "tt_cp_async_wait<") == 1u);
      BOOST_TEST(tt::occurrences(l, "__syncthreads();") == 2u);
      BOOST_TEST(l.find("tt_stmatrix") == std::string::npos);
      BOOST_TEST(l.find("reinterpret_cast<float*>(tt_smem") == std::string::npos);
      BOOST_TEST(l.find("reinterpret_cast<tt_f16*>(tt_smem") == std::string::npos);
      BOOST_TEST(l.find("tt_cp_async<16>(") != std::string::npos);  // the ring's refill
      // S^T (S) and dP^T (dP) start from zero: their first k-step's wgmma (2 row tiles each) sets
      // the registers with scale-d 0 (Triton's useD = false), no register is zeroed before them.
      BOOST_TEST(tt::occurrences(l, "\"r\"(0), ") == 4u);
      BOOST_TEST(l.find("] = 0.0f;") == std::string::npos);
      // The dK/dV loops' m and delta are stages of the ring too (as Triton's), two consecutive
      // columns an 8-byte cp.async in the refill and an 8-byte read from the trip's slot (8 columns
      // a thread: 4 of each; 4 columns in the masked loop), nothing a trip ahead in registers (ptxas
      // spilled those right after their LDG, waiting for the data); the dQ loops load nothing but
      // their tiles.
      const unsigned scales = i == 0 ? 4u : i == 1 ? 8u : 0u;
      BOOST_TEST(tt::occurrences(l, "tt_cp_async<8>(") == scales);
      BOOST_TEST(tt::occurrences(l, "tt_vcopy<8>(&v") == scales);
      BOOST_TEST(tt::occurrences(l, "tt_vcopy<8>(&v") == tt::occurrences(l, "tt_smem + ("));
      BOOST_TEST(l.find("loaded a trip ago") == std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
