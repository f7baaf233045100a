// fp32 dots on tf32 wgmma through the layout generator (docs/cuda-backend.md, "tf32 operands";
// issue 27 item 4): every tile of a Linear layer's three products is pipelined. K-major tiles (the
// forward's both operands) are filled by TMA where the analysis takes the ring - the tensor maps'
// TFLOAT32 type has the copy engine round each f32 to tf32 - and by 16-byte cp.async otherwise;
// MN-major ones (the input gradient's B, the weight gradient's A and B) by 4-byte cp.async into
// K-major tiles (wgmma has no transpose for 32-bit types), from loads whose layout puts 8 lanes
// along the memory's contiguous dim and 4 along K. No tile of the ring is written through
// registers and nothing rounds per element. Generated and compiled with NVRTC for sm_90a, never run
// here: the values are test_tf32_values.cpp (on a GPU).
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <memory>
#include <regex>
#include <string>

#include "cuda_codegen_check.h"
#include "jit/cuda/codegen.h"
#include "jit/passes/assign_layouts.h"
#include "tf32_linear_kernel.h"

namespace cuda = tritium::jit::cuda;
namespace tt = tritium::test;
using namespace tritium::jit;
using tritium::ir::OpKind;

namespace {

struct Generated {
  cuda::KernelSource ks;
  std::string body;  // the kernel, past the device header
  LayoutMap layouts;
  std::unique_ptr<tritium::ir::Function> f;
};

// The tf32 Linear kernel at BM x BN x BK (M = N = K = 4096: rows 16-byte aligned) through layouts
// for sm_90a with 3 stages; its layouts as the pass gives them.
Generated generate(int warps, int bm, int bn, int bk, bool a_mn, bool b_mn) {
  Generated g;
  auto* p = tt::fake_address<float>(0);
  auto* o = tt::fake_address<float>(1);
  {
    auto f = tt::tf32_linear().optimized_function(p, p, o, 4096, 4096, 4096, bm, bn, bk, a_mn, b_mn);
    AxisInfoMap axis = analyze_axis_info(*f);
    g.layouts = assign_layouts(*f, axis, LayoutOptions{warps, 90});
    g.f = std::move(f);
  }
  g.ks = tt::compile_cuda(tt::tf32_linear(), tt::CudaCheck().warps(warps).stages(3).target(90, "sm_90a"), p, p, o, 4096,
                          4096, 4096, bm, bn, bk, a_mn, b_mn);
  g.body = tt::kernel_body(g.ks);
  return g;
}

size_t count(const std::string& s, const std::string& what) { return tt::occurrences(s, what); }

// Element-by-element writes into shared memory (st.shared from registers: a transpose through them).
bool element_tile_writes(const std::string& body) {
  static const std::regex re(R"(\*reinterpret_cast<[a-z0-9_]+\*>\(tt_smem \+ [^;]*\) = )");
  return std::regex_search(body, re);
}

// The layouts of the kernel's two loads, in program order (A's, then B's).
std::vector<Layout> load_layouts(const Generated& g) {
  std::vector<Layout> out;
  g.f->walk([&](tritium::ir::Op* op) {
    if (op->kind == OpKind::Load && op->result()->type.rank() == 2) out.push_back(g.layouts.of(op->result()));
  });
  return out;
}

bool skip() { return !tt::nvrtc_or_skip(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layout_tf32)

BOOST_AUTO_TEST_CASE(k_major_operands_take_tma_rounding_to_tf32) {
  if (skip()) return;
  // The forward (x @ W^T): 128 x 128 x 32 on two warpgroups; both tiles K-major, 128-byte rows.
  Generated g = generate(8, 128, 128, 32, false, false);
  BOOST_TEST_CONTEXT(g.body) {
    BOOST_TEST(count(g.body, "// pipelined: 2 load(s) into 3 stages") == 1u);
    BOOST_TEST(count(g.body, "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32") > 0u);
    // Two maps of f32 (4 bytes) as TFLOAT32 (11), boxes of 32 elements (128 bytes) x 128 rows;
    // one copy a tile a stage (32 columns: one block).
    BOOST_TEST(g.ks.tma_maps.size() == 2u);
    for (const std::string& m : g.ks.tma_maps) {
      BOOST_TEST(m.find(" c1 4 11 32 128") != std::string::npos, m);
      BOOST_TEST(cuda::parse_tensor_map_recipe(m, 11).has_value(), m);
    }
    BOOST_TEST(count(g.body, "tt_tma_load_2d(") > 0u);
    BOOST_TEST(count(g.body, "tt_tensor_map_usable(") == 2u);
    BOOST_TEST(count(g.body, ", 4)") >= 2u);  // the guard's element size
    // The fallback copies 16 bytes; nothing rounds per element, no tile is written from registers.
    BOOST_TEST(count(g.body, "tt_cp_async<16>(") > 0u);
    BOOST_TEST(count(g.body, "tt_tf32(") == 0u);
    BOOST_TEST(!element_tile_writes(g.body));
  }
  // 64-wide K: two 32-column blocks a tile, two copies each a stage.
  Generated w = generate(4, 64, 64, 64, false, false);
  BOOST_TEST_CONTEXT(w.body) {
    BOOST_TEST(w.ks.tma_maps.size() == 2u);
    for (const std::string& m : w.ks.tma_maps) BOOST_TEST(m.find(" c1 4 11 32 64") != std::string::npos, m);
    BOOST_TEST(count(w.body, "+ 32, ") > 0u);  // the second block's column
  }
}

BOOST_AUTO_TEST_CASE(mn_major_operands_are_copied_4_bytes_into_k_major_tiles) {
  if (skip()) return;
  for (auto [a_mn, b_mn] : {std::pair{false, true}, std::pair{true, true}, std::pair{true, false}}) {
    Generated g = generate(8, 128, 128, 32, a_mn, b_mn);
    BOOST_TEST_CONTEXT("A " << (a_mn ? "M" : "K") << "-major, B " << (b_mn ? "N" : "K") << "-major\n" << g.body) {
      BOOST_TEST(count(g.body, "// pipelined: 2 load(s) into 3 stages") == 1u);
      BOOST_TEST(count(g.body, "tt_cp_async<4>(") > 0u);
      if (a_mn && b_mn) BOOST_TEST(count(g.body, "tt_cp_async<16>(") == 0u);
      else BOOST_TEST(count(g.body, "tt_cp_async<16>(") > 0u);  // the K-major one
      BOOST_TEST(g.ks.tma_maps.empty());  // a ring TMA cannot fill whole stays cp.async
      BOOST_TEST(count(g.body, "tt_tf32(") == 0u);
      BOOST_TEST(!element_tile_writes(g.body));
      BOOST_TEST(count(g.body, "m64n128k8.f32.tf32.tf32") > 0u);
      // The transposed loads: lanes 0-2 along the memory's contiguous dim (8 x 4 bytes: a sector),
      // lanes 3-4 along K, one element a register run.
      const std::vector<Layout> loads = load_layouts(g);
      BOOST_TEST_REQUIRE(loads.size() == 2u);
      for (int i = 0; i < 2; ++i) {
        const bool mn = i == 0 ? a_mn : b_mn;
        if (!mn) continue;
        const Layout& l = loads[static_cast<size_t>(i)];
        const int c = l.order[0], k = 1 - c;  // A^T is x [K, M]; B is y [K, N]: K is dim 0
        BOOST_TEST(k == 0, l.str());
        BOOST_TEST((l.lane == std::vector<LayoutBit>{{c, 0}, {c, 1}, {c, 2}, {k, 0}, {k, 1}}), l.str());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(tiles_written_from_registers_round_16_bytes_at_a_time) {
  if (skip()) return;
  // One stage: nothing is pipelined, the K-major tiles are written from registers and rounded to
  // tf32 there (cvt.rna, 4 a 16-byte store).
  auto* p = tt::fake_address<float>(0);
  auto* o = tt::fake_address<float>(1);
  cuda::KernelSource ks = tt::compile_cuda(tt::tf32_linear(), tt::CudaCheck().warps(4).stages(1).target(90, "sm_90a"), p, p,
                                           o, 4096, 4096, 4096, 64, 64, 32, false, false);
  const std::string body = tt::kernel_body(ks);
  BOOST_TEST_CONTEXT(body) {
    BOOST_TEST(count(body, "pipelined") == 0u);
    BOOST_TEST(count(body, "tt_q[3] = tt_tf32(") > 0u);
    BOOST_TEST(count(body, "tt_vcopy<16>(") > 0u);
  }
}

BOOST_AUTO_TEST_SUITE_END()
