// wgmma operand tiles in the majorness of their memory (issue 27 (a), (b); jit/passes/assign_layouts
// dot_operand, jit/cuda/lowering/dot.cpp emit_wgmma, tile_offset in lowering/convert.cpp): an
// M-major A (tl::dot(tl::trans(x), y), x [K, M] row-major) and N-major B down to 16 columns a
// warpgroup reach wgmma with the transpose bits set, from tiles the loads copy 16 bytes at a time
// (no element-by-element transpose through registers); tf32 and 8-bit tiles stay K-major (wgmma
// has no transpose for them). Generated and compiled with NVRTC for sm_90a (and sm_80), never run
// here: the values are test_layout_operand_values, on a GPU through TRITIUM_CUDA_CODEGEN=layouts.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <iterator>
#include <memory>
#include <regex>
#include <string>

#include "cuda_codegen_check.h"
#include "jit/cuda/nvrtc_log.h"
#include "jit/passes/assign_layouts.h"
#include "ops/matmul_block_pointers.h"
#include "ops/matmul_split_k.h"
#include "ops/ops.h"
#include "operand_matmul_kernel.h"

namespace tl = tritium::tl;
namespace cuda = tritium::jit::cuda;
using namespace tritium::jit;
using tritium::test::operand_matmul;

namespace {

template <class T> T* addr(uint64_t i) { return tritium::test::fake_address<T>(i); }

// One dot, no loop: the tiles are written by the threads from registers (store_tile).
template <class T>
tritium::Kernel& single_dot() {
  static tritium::Kernel k = tritium::kernel(
      "single_transposed_dot", [](tl::ptr<T> x, tl::ptr<T> y, tl::ptr<float> out, int BM, int BN, int BK) {
        auto rm = tl::arange(0, BM), rn = tl::arange(0, BN), rk = tl::arange(0, BK);
        auto a = tl::trans(tl::load(x + rk(tl::_, tl::None) * BM + rm(tl::None, tl::_)));
        auto b = tl::load(y + rk(tl::_, tl::None) * BN + rn(tl::None, tl::_));
        tl::store(out + rm(tl::_, tl::None) * BN + rn(tl::None, tl::_), tl::dot(a, b));
      });
  return k;
}

struct Generated {
  std::string body;  // the kernel, past the device header
  LayoutMap layouts;
  std::unique_ptr<tritium::ir::Function> f;
};

// The layouts of the kernel's dot operands, and its CUDA through layouts compiled for `arch`.
template <class... A>
Generated generate(tritium::Kernel& k, int num_warps, int num_stages, int cc, const std::string& arch, const A&... args) {
  Generated g;
  {
    auto f = k.optimized_function(args...);
    AxisInfoMap axis = analyze_axis_info(*f);
    g.layouts = assign_layouts(*f, axis, LayoutOptions{num_warps, cc});
    g.f = std::move(f);
  }
  g.body = tritium::test::kernel_body(tritium::test::compile_cuda(
      k, tritium::test::CudaCheck().warps(num_warps).stages(num_stages).target(cc, arch), args...));
  return g;
}

// The shared layout the pass gave the dot's operand `i` (seen through a transposing view).
const Layout& operand_tile(const Generated& g, int i) {
  const Layout* out = nullptr;
  g.f->walk([&](tritium::ir::Op* op) {
    if (op->kind == tritium::ir::OpKind::Dot) out = &g.layouts.of(op->operand(static_cast<size_t>(i)));
  });
  BOOST_REQUIRE(out);
  return *out;
}

// Every wgmma instruction's immediates after the scale-d predicate: "1, 1, tnspA, tnspB" for 16-bit
// tiles, "1, 1" for tf32 and fp8.
std::vector<std::string> wgmma_tails(const std::string& body) {
  std::vector<std::string> out;
  static const std::regex re(R"(wgmma\.mma_async[^"]*\}, %\d+, %\d+, p((?:, \d)*); \})");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

// Element-by-element writes into shared memory (st.shared of one element: a transpose through registers).
bool element_tile_writes(const std::string& body) {
  static const std::regex re(R"(\*reinterpret_cast<[a-z0-9_]+\*>\(tt_smem \+ [^;]*\) = )");
  return std::regex_search(body, re);
}

bool skip() { return !tritium::test::nvrtc_or_skip(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layout_wgmma)

BOOST_AUTO_TEST_CASE(transposed_a_is_an_m_major_tile_with_the_transpose_bit) {
  if (skip()) return;
  using tritium::f16_t;
  auto* p = addr<f16_t>(0);
  auto* o = addr<float>(1);
  // Tutorial 03's shape with A^T: 128 x 128 x 64 on two warpgroups along M.
  Generated g = generate(operand_matmul<f16_t>(), 8, 3, 90, "sm_90a", p, p, o, 4096, 4096, 4096, 128, 128, 64, true);
  BOOST_TEST_CONTEXT(g.body) {
    const Layout& a = operand_tile(g, 0);
    BOOST_TEST((a.is_shared() && a.order == std::vector<int>{0, 1} && a.swizzle == 128), a.str());
    const Layout& b = operand_tile(g, 1);
    BOOST_TEST((b.is_shared() && b.order == std::vector<int>{1, 0} && b.swizzle == 128), b.str());
    // Both tiles pipelined, copied as stored (16-byte cp.async; no transpose through registers).
    BOOST_TEST(g.body.find("// pipelined: 2 load(s) into 3 stages") != std::string::npos);
    BOOST_TEST(g.body.find("tt_cp_async<16>(") != std::string::npos);
    BOOST_TEST(!element_tile_writes(g.body));
    // cp.async writes in the generic proxy: each trip's landed stage is fenced before wgmma reads it.
    const size_t wait = g.body.find("// this trip's tiles");
    BOOST_TEST((wait != std::string::npos &&
                g.body.find("tt_fence_async_shared();  // cp.async's writes", wait) < g.body.find("wgmma.mma_async", wait)));
    // A's descriptor: 64-row blocks of K rows (64 x 128 bytes apart: the leading offset), 8-row
    // groups 1024 bytes apart, the 128-byte swizzle; every instruction transposes A and B.
    // (B's is alike: 64-column blocks of 64 rows.)
    const std::regex mn_desc(R"(tt_wgmma_desc\(tt_smem_base \+ [^;]*\(\w+ / 64\) \* 8192, 8192, 1024, 1\))");
    BOOST_TEST(std::distance(std::sregex_iterator(g.body.begin(), g.body.end(), mn_desc), std::sregex_iterator()) == 2);
    std::vector<std::string> tails = wgmma_tails(g.body);
    BOOST_TEST(tails.size() == 4u);  // K 64: 4 k16 steps of one 64-row tile a warpgroup
    for (const std::string& t : tails) BOOST_TEST(t == ", 1, 1, 1, 1");
  }
  // mma.sync reads the same M-major tile with ldmatrix.trans.
  Generated s = generate(operand_matmul<f16_t>(), 4, 3, 80, "sm_80", p, p, o, 4096, 4096, 4096, 128, 128, 32, true);
  BOOST_TEST(s.body.find("tt_ldsm_x4_trans(tt_a[") != std::string::npos);
  BOOST_TEST(!element_tile_writes(s.body));
}

BOOST_AUTO_TEST_CASE(a_single_transposed_dot_writes_its_tile_in_16_byte_chunks) {
  if (skip()) return;
  for (auto [bm, bn, bk, nw] : {std::tuple{64, 64, 32, 4}, std::tuple{128, 32, 64, 8}}) {
    Generated g = generate(single_dot<tritium::bf16_t>(), nw, 1, 90, "sm_90a", addr<tritium::bf16_t>(0),
                           addr<tritium::bf16_t>(1), addr<float>(2), bm, bn, bk);
    BOOST_TEST_CONTEXT(bm << "x" << bn << "x" << bk << "\n" << g.body) {
      BOOST_TEST(operand_tile(g, 0).order == (std::vector<int>{0, 1}));
      BOOST_TEST(g.body.find("tt_vcopy<16>(tt_smem + ") != std::string::npos);
      BOOST_TEST(!element_tile_writes(g.body));
      for (const std::string& t : wgmma_tails(g.body)) BOOST_TEST(t == ", 1, 1, 1, 1");
    }
  }
}

BOOST_AUTO_TEST_CASE(narrow_b_tiles_are_n_major_in_narrower_swizzles) {
  if (skip()) return;
  using tritium::f16_t;
  auto* p = addr<f16_t>(0);
  auto* o = addr<float>(1);
  // BN (bytes a warpgroup's columns) -> the swizzle, and the descriptor's leading offset (BK rows
  // of a column block), stride offset (8 rows) and mode (1: 128 B, 2: 64 B, 3: 32 B).
  struct Want {
    int bn, warps, swizzle;
    std::string desc;
  };
  for (const Want& w : {Want{32, 4, 64, "4096, 512, 2"}, Want{16, 4, 32, "2048, 256, 3"},
                        Want{64, 8, 64, "4096, 512, 2"} /* M 64: two warpgroups along N, 32 columns each */}) {
    const int bm = w.warps == 8 ? 64 : 128;
    for (bool at : {false, true}) {
      Generated g = generate(operand_matmul<f16_t>(), w.warps, 3, 90, "sm_90a", p, p, o, 4096, 4096, 4096, bm, w.bn, 64, at);
      BOOST_TEST_CONTEXT("BN " << w.bn << " warps " << w.warps << (at ? " trans(A)" : "") << "\n" << g.body) {
        const Layout& b = operand_tile(g, 1);
        BOOST_TEST((b.order == std::vector<int>{1, 0} && b.swizzle == w.swizzle), b.str());
        BOOST_TEST(g.body.find("tt_cp_async<16>(") != std::string::npos);
        BOOST_TEST(!element_tile_writes(g.body));
        BOOST_TEST(g.body.find(w.desc + ")") != std::string::npos);
        const std::vector<std::string> tails = wgmma_tails(g.body);
        BOOST_TEST(!tails.empty());
        for (const std::string& t : tails) BOOST_TEST(t == (at ? ", 1, 1, 1, 1" : ", 1, 1, 0, 1"));
      }
    }
  }
  // mma.sync: the same N-major tiles through ldmatrix.trans.
  Generated s = generate(operand_matmul<f16_t>(), 4, 3, 80, "sm_80", p, p, o, 4096, 4096, 4096, 64, 32, 32, false);
  BOOST_TEST(s.body.find("tt_ldsm_x4_trans(tt_b[") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(tf32_and_8_bit_tiles_stay_k_major) {
  if (skip()) return;
  // wgmma transposes 16-bit tiles only: a tf32 trans(A) is written K-major through registers, and
  // so is an N-major B; the instructions carry no transpose immediates.
  Generated g = generate(operand_matmul<float>(), 4, 3, 90, "sm_90a", addr<float>(0), addr<float>(1), addr<float>(2),
                         4096, 4096, 4096, 64, 32, 32, true);
  BOOST_TEST_CONTEXT(g.body) {
    BOOST_TEST(operand_tile(g, 0).order == (std::vector<int>{1, 0}));
    BOOST_TEST(operand_tile(g, 1).order == (std::vector<int>{0, 1}));
    const std::vector<std::string> tails = wgmma_tails(g.body);
    BOOST_TEST(!tails.empty());
    for (const std::string& t : tails) BOOST_TEST(t == ", 1, 1");
  }
  using tritium::f8e4m3_t;
  Generated e = generate(operand_matmul<f8e4m3_t>(), 4, 3, 90, "sm_90a", addr<f8e4m3_t>(0), addr<f8e4m3_t>(1),
                         addr<float>(2), 4096, 4096, 4096, 64, 64, 64, true);
  BOOST_TEST_CONTEXT(e.body) {
    BOOST_TEST(operand_tile(e, 0).order == (std::vector<int>{1, 0}));
    BOOST_TEST(operand_tile(e, 1).order == (std::vector<int>{0, 1}));
    BOOST_TEST(e.body.find("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3") != std::string::npos);
  }
}

// wgmma groups stay asynchronous when the accumulator is stored as it is (f32 C: the tf32 products,
// every split-K partial): the final wgmma.wait_group is followed by an empty asm tied to the
// accumulator's registers, so no read of them (the copies at the loop's exit, an f32 store's bit
// casts) moves above the wait. Before, ptxas serialized every wgmma of those kernels - each waited
// for the previous to finish, none stayed in flight into the next trip - and said so in its log:
// "(C7514) ... wgmma.mma_async instructions are serialized due to non wgmma instructions reading
// accumulator registers of a wgmma between start and end of the pipeline stage".
BOOST_AUTO_TEST_CASE(f32_accumulators_stored_as_they_are_keep_wgmma_asynchronous) {
  if (!tritium::test::nvrtc_or_skip()) return;
  using tritium::DType;
  namespace split_k = tritium::ops::split_k;
  const int32_t M = 16384, K = 384, N = 1536;
  struct Case {
    const char* what;
    DType dtype;
    bool split;
    int32_t pm, pn, pk;
    int64_t sam, sak, sbk, sbn;
    int bm, bn, bk, warps;
  };
  const Case cases[] = {
      {"tf32 fwd", DType::f32, false, M, N, K, K, 1, 1, K, 128, 128, 32, 8},
      {"tf32 dgrad", DType::f32, false, M, K, N, N, 1, K, 1, 128, 128, 32, 8},
      {"tf32 wgrad split", DType::f32, true, N, K, M, 1, N, K, 1, 128, 128, 32, 8},
      {"bf16 wgrad split", DType::bf16, true, N, K, M, 1, N, K, 1, 128, 256, 64, 8},
      {"bf16 fwd", DType::bf16, false, M, N, K, K, 1, 1, K, 128, 256, 64, 8},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.what) {
      const bool tf32 = c.dtype == DType::f32;
      const int bp = tritium::ops::matmul_block_pointers(c.dtype, tf32, c.sam, c.sak, c.sbk, c.sbn, 90, 1);
      const tritium::Meta meta{{"BLOCK_M", c.bm}, {"BLOCK_N", c.bn},        {"BLOCK_K", c.bk},
                               {"GROUP_M", 8},    {"TF32", tf32 ? 1 : 0},   {"CARRY_POINTERS", bp == 0},
                               {"BLOCK_POINTERS", bp}};
      auto trace = [&](auto a) {
        if (c.split)
          return split_k::product_kernel(c.dtype).optimized_function(
              a, a, addr<float>(2), c.pm, c.pn, c.pk, c.sam, c.sak, c.sbk, c.sbn, int64_t{c.pn}, int64_t{1},
              int64_t{1}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int32_t{5504},
              int64_t{c.pm} * c.pn, meta);
        return tritium::ops::matmul_kernel(c.dtype).optimized_function(
            a, a, a, c.pm, c.pn, c.pk, c.sam, c.sak, c.sbk, c.sbn, int64_t{c.pn}, int64_t{1}, int64_t{1}, int64_t{0},
            int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, meta);
      };
      auto f = c.dtype == DType::bf16 ? trace(addr<tritium::bf16_t>(0)) : trace(addr<float>(0));
      CompileOptions opts;
      opts.num_warps = c.warps;
      opts.num_stages = 3;
      const cuda::KernelSource ks = cuda::generate_cuda(*f, analyze_axis_info(*f), opts, tritium::test::kH100SharedMemory, 90);
      const std::string body = tritium::test::kernel_body(ks);
      const size_t wait = body.find("tt_wgmma_wait<0>();");
      BOOST_TEST_REQUIRE(wait != std::string::npos);
      BOOST_TEST(body.find("asm volatile(\"\" : \"+f\"(", wait) != std::string::npos);  // the tie
      const std::string log = cuda::compile_log(ks.source, ks.entry, "sm_90a");
      BOOST_TEST(log.find("serialized") == std::string::npos, log);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
