// GPU layouts (jit/layouts, jit/passes/assign_layouts) without a GPU: the bit maps against the
// fragment formulas of mma.sync and wgmma (which element each thread's register holds), the
// transforms (slice, expand_dims, broadcast, permute, reshape) as register correspondences, and
// the layout pass on the kernel shapes that need it (attention's two dots with a softmax between,
// a matmul loop, reductions, loop-carried values).
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <map>
#include <set>

#include "cuda_codegen_check.h"
#include "ir/ir.h"
#include "jit/layouts/layout.h"
#include "jit/passes/assign_layouts.h"
#include "jit/passes/axis_info.h"
#include "jit/passes/contract_fma.h"
#include "jit/passes/dce.h"

namespace tl = tritium::tl;
using namespace tritium::jit;
using tritium::ir::Shape;

namespace {

// The element coordinates of register r in thread `tid` (the reference evaluation of a bit map).
std::vector<int64_t> element(const Layout& l, int r, int tid) {
  std::vector<int64_t> c = l.reg_coords(r);
  const int lane = tid & 31, warp = tid >> 5;
  for (size_t i = 0; i < l.lane.size(); ++i)
    if ((lane >> i) & 1) {
      auto d = l.lane_coords(static_cast<int>(i));
      for (size_t k = 0; k < c.size(); ++k) c[k] += d[k];
    }
  for (size_t i = 0; i < l.warp.size(); ++i)
    if ((warp >> i) & 1) {
      auto d = l.warp_coords(static_cast<int>(i));
      for (size_t k = 0; k < c.size(); ++k) c[k] += d[k];
    }
  return c;
}

// Every element of the shape is held, each by the same number of threads, and no thread holds an
// element twice.
void check_covers(const Layout& l, int num_warps) {
  std::map<std::vector<int64_t>, int> count;
  for (int t = 0; t < 32 * num_warps; ++t) {
    std::set<std::vector<int64_t>> mine;
    for (int r = 0; r < l.num_regs(); ++r) {
      auto c = element(l, r, t);
      for (size_t d = 0; d < c.size(); ++d) BOOST_REQUIRE(c[d] >= 0 && c[d] < l.shape[d]);
      BOOST_REQUIRE(mine.insert(c).second);
      ++count[c];
    }
  }
  int64_t n = 1;
  for (int64_t s : l.shape) n *= s;
  BOOST_TEST(static_cast<int64_t>(count.size()) == n);
  for (auto& [c, k] : count) BOOST_REQUIRE(k == count.begin()->second);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layouts)

BOOST_AUTO_TEST_CASE(blocked_layouts_cover_their_shape) {
  for (int nw : {1, 4, 8})
    for (Shape s : {Shape{1024}, Shape{64, 64}, Shape{16, 128}, Shape{128, 16}, Shape{8}, Shape{4, 2, 32}})
      for (int64_t vec : {1, 4, 8}) {
        std::vector<int> order = default_order(static_cast<int>(s.size()));
        Layout l = default_blocked_layout(s, nw, order, vec);
        BOOST_TEST_CONTEXT(l.str() << " " << l.bits_str()) { check_covers(l, nw); }
      }
  // 16-byte runs along the last dim, lanes along it first: a warp reads 4 rows of 128 bytes.
  Layout l = default_blocked_layout({128, 64}, 8, {1, 0}, 8);
  BOOST_TEST(l.contiguous_regs(1) == 8);
  BOOST_TEST(element(l, 0, 1)[1] == 8);
  BOOST_TEST(element(l, 0, 8)[0] == 1);
  BOOST_TEST(l.name == "blocked<spt=[1,8],tpw=[4,8],wpc=[8,1],order=[1,0]>");
}

BOOST_AUTO_TEST_CASE(mma_sync_layout_is_the_m16n8_fragment) {
  // Warp w of a WM x WN tiling owns rows (w / WN) * WTM.., cols (w % WN) * WTN..; register
  // (mi * NT + ni) * 4 + h * 2 + j of lane 4g + q holds row mi * 16 + g + 8h, col ni * 8 + 2q + j.
  for (auto [M, N, wm, wn, nw] : {std::tuple{64, 64, 2, 2, 4}, std::tuple{128, 32, 4, 1, 4}, std::tuple{32, 64, 1, 2, 2}}) {
    Layout l = mma_layout({M, N}, MmaParams{2, wm, wn}, nw);
    check_covers(l, nw);
    const int WTM = M / wm, WTN = N / wn, NT = WTN / 8;
    for (int t = 0; t < 32 * nw; ++t)
      for (int r = 0; r < l.num_regs(); ++r) {
        int w = t >> 5, g = (t & 31) >> 2, q = t & 3;
        int j = r & 1, h = (r >> 1) & 1, ni = (r >> 2) % NT, mi = (r >> 2) / NT;
        auto c = element(l, r, t);
        BOOST_REQUIRE(c[0] == (w / wn) * WTM + mi * 16 + g + 8 * h);
        BOOST_REQUIRE(c[1] == (w % wn) * WTN + ni * 8 + 2 * q + j);
      }
  }
}

BOOST_AUTO_TEST_CASE(wgmma_layout_is_the_m64nN_accumulator) {
  // Warpgroup G of WM x WN owns rows (G / WN) * WTM.., cols (G % WN) * WTN..; its warp w % 4
  // rows 16 (w % 4)..; accumulator i of 64-row tile mi (register mi * WTN / 2 + i) of lane 4g + q
  // holds row 16 (w % 4) + g + 8 ((i >> 1) & 1), col 8 (i >> 2) + 2q + (i & 1).
  for (auto [M, N, wm, wn, nw] : {std::tuple{128, 128, 2, 1, 8}, std::tuple{64, 256, 1, 1, 4}, std::tuple{128, 64, 1, 2, 8},
                                  std::tuple{256, 64, 1, 1, 4}}) {
    Layout l = mma_layout({M, N}, MmaParams{3, wm, wn}, nw);
    check_covers(l, nw);
    const int WTM = M / wm, WTN = N / wn, nr = WTN / 2;
    for (int t = 0; t < 32 * nw; ++t)
      for (int r = 0; r < l.num_regs(); ++r) {
        int w = t >> 5, G = w >> 2, g = (t & 31) >> 2, q = t & 3;
        int mi = r / nr, i = r % nr;
        auto c = element(l, r, t);
        BOOST_REQUIRE(c[0] == (G / wn) * WTM + mi * 64 + 16 * (w % 4) + g + 8 * ((i >> 1) & 1));
        BOOST_REQUIRE(c[1] == (G % wn) * WTN + 8 * (i >> 2) + 2 * q + (i & 1));
      }
  }
}

BOOST_AUTO_TEST_CASE(an_accumulator_is_the_next_dots_a_fragment) {
  // Attention's P = softmax(Q K^T) in the first dot's accumulator layout, cast to f16, is the A
  // operand of P @ V: the same placement, so the conversion moves nothing.
  for (int version : {2, 3}) {
    const int nw = version == 3 ? 8 : 4;
    MmaParams p{version, version == 3 ? 2 : 4, 1};
    Layout s = mma_layout({128, 64}, p, nw);   // S = Q K^T: [BLOCK_M, BLOCK_N]
    Layout o = mma_layout({128, 128}, p, nw);  // O += P V: [BLOCK_M, HEAD_DIM]
    Layout a = dot_operand_layout(o, 0, 64, 2, nw);
    BOOST_TEST(a.same_placement(s));
    check_covers(a, nw);
    // The row statistics (max, sum) of S and the rows of O are one slice layout.
    BOOST_TEST(slice_layout(s, 1).same_placement(slice_layout(o, 1)));
  }
  // The mma.sync A fragment of m16n8k16: a0..a7 = (g, 2q..), (g+8, 2q..), (g, 2q+8..), (g+8, 2q+8..).
  Layout parent = mma_layout({16, 16}, MmaParams{2, 1, 1}, 1);
  Layout a = dot_operand_layout(parent, 0, 16, 2, 1);
  for (int t = 0; t < 32; ++t)
    for (int h = 0; h < 8; ++h) {
      int g = t >> 2, q = t & 3;
      auto c = element(a, h, t);
      BOOST_REQUIRE(c[0] == g + 8 * ((h >> 1) & 1));
      BOOST_REQUIRE(c[1] == 2 * q + (h & 1) + 8 * (h >> 2));
    }
  // ... and B of m16n8k16: b0..b3 = (k 2q.., n g), (k 2q+8.., n g).
  Layout b = dot_operand_layout(parent, 1, 16, 2, 1);
  for (int t = 0; t < 32; ++t)
    for (int h = 0; h < 8; ++h) {
      int g = t >> 2, q = t & 3;
      auto c = element(b, h, t);
      BOOST_REQUIRE(c[0] == 2 * q + (h & 1) + 8 * ((h >> 1) & 1));
      BOOST_REQUIRE(c[1] == g + 8 * (h >> 2));
    }
}

BOOST_AUTO_TEST_CASE(views_relabel_bits) {
  Layout l = mma_layout({64, 64}, MmaParams{2, 2, 2}, 4);
  // A row reduction's result, expanded and broadcast back, reads the thread's own registers.
  Layout row = slice_layout(l, 1);
  check_covers(row, 4);
  BOOST_TEST(row.num_regs() == 4);  // two row tiles of g and g + 8
  Layout col = expand_dims_layout(row, 1);
  BOOST_TEST(squeeze_layout(col, 1).same_placement(row));
  BOOST_TEST(broadcast_source_layout(l, {64, 1}).same_placement(col));
  auto map = register_map(col, l, [](const std::vector<int64_t>& c) { return std::vector<int64_t>{c[0], 0}; });
  BOOST_REQUIRE(map.has_value());
  for (int r = 0; r < l.num_regs(); ++r) BOOST_REQUIRE(col.reg_coords((*map)[r])[0] == l.reg_coords(r)[0]);
  // Permute there and back; reshape there and back.
  Layout b = default_blocked_layout({8, 16, 32}, 4, {2, 1, 0}, 4);
  Layout p = permute_layout(b, {2, 0, 1});
  BOOST_TEST((p.shape == Shape{32, 8, 16}));
  BOOST_TEST(permute_source_layout(p, {2, 0, 1}).same_placement(b));
  check_covers(p, 4);
  Layout r = reshape_layout(b, {128, 32});
  check_covers(r, 4);
  BOOST_TEST(reshape_layout(r, {8, 16, 32}).same_placement(b));
  // A layout moves data to another: no register map.
  BOOST_TEST(!register_map(default_blocked_layout({64, 64}, 4, {1, 0}, 8), l).has_value());
  // Shared tiles: a transposed view is the same bytes with the dims swapped.
  Layout s = shared_layout({64, 128}, {1, 0}, 128);
  Layout t = permute_source_layout(s, {1, 0});
  BOOST_TEST((t.shape == Shape{128, 64}));
  BOOST_TEST((t.order == std::vector<int>{0, 1}));
}

// ---- the pass ---------------------------------------------------------------------------------

namespace {

struct Assigned {
  std::unique_ptr<tritium::ir::Function> f;
  LayoutMap layouts;
  std::string text;
};

template <class... A> Assigned assign(tritium::Kernel& k, int num_warps, int cc, const A&... args) {
  Assigned out;
  out.f = k.optimized_function(args...);
  AxisInfoMap axis = analyze_axis_info(*out.f);
  out.layouts = assign_layouts(*out.f, axis, LayoutOptions{num_warps, cc});
  verify_layouts(*out.f, out.layouts);
  out.text = out.layouts.annotated(*out.f);
  return out;
}

template <class F> void each_op(tritium::ir::Function& f, F fn) {
  f.walk([&](tritium::ir::Op* op) { fn(op); });
}

// Whether `op` is inside a run-time loop.
bool in_loop(const tritium::ir::Op* op) {
  for (const tritium::ir::Block* b = op->parent; b && b->parent; b = b->parent->parent)
    if (b->parent->kind == tritium::ir::OpKind::For) return true;
  return false;
}

// Triton's fused attention forward inner loop, as tutorial 06 writes it.
auto attention_kernel = tritium::kernel(
    "attn_fwd_like", [](tl::ptr<tritium::f16_t> Q, tl::ptr<tritium::f16_t> K, tl::ptr<tritium::f16_t> V,
                        tl::ptr<tritium::f16_t> O, tl::i32 N_CTX, int BM, int BN, int D) {
      auto start_m = tl::program_id(0);
      auto offs_m = start_m * BM + tl::arange(0, BM);
      auto offs_n = tl::arange(0, BN);
      auto offs_d = tl::arange(0, D);
      auto q = tl::load(Q + offs_m(tl::_, tl::None) * D + offs_d(tl::None, tl::_));
      auto m_i = tl::zeros({BM}, tl::float32) - INFINITY;
      auto l_i = tl::zeros({BM}, tl::float32) + 1.0f;
      auto acc = tl::zeros({BM, D}, tl::float32);
      for (auto start_n : tl::range(0, N_CTX, BN)) {
        auto k = tl::load(K + (start_n + offs_n)(tl::None, tl::_) * D + offs_d(tl::_, tl::None));
        auto qk = tl::dot(q, k);
        auto mask = offs_m(tl::_, tl::None) >= (start_n + offs_n(tl::None, tl::_));
        qk = qk * 0.5f + tl::where(mask, 0.0f, -1.0e6f);
        auto m_ij = tl::maximum(m_i, tl::max(qk, 1));
        qk = qk - m_ij(tl::_, tl::None);
        auto p = tl::exp2(qk);
        auto l_ij = tl::sum(p, 1);
        auto alpha = tl::exp2(m_i - m_ij);
        l_i = l_i * alpha + l_ij;
        acc = acc * alpha(tl::_, tl::None);
        auto v = tl::load(V + (start_n + offs_n)(tl::_, tl::None) * D + offs_d(tl::None, tl::_));
        acc = tl::dot(p.to(tl::float16), v, acc);
        m_i = m_ij;
      }
      acc = acc / l_i(tl::_, tl::None);
      tl::store(O + offs_m(tl::_, tl::None) * D + offs_d(tl::None, tl::_), acc.to(tl::float16));
    });

}  // namespace

BOOST_AUTO_TEST_CASE(attention_keeps_the_softmax_in_the_accumulator_layout) {
  for (int cc : {90, 80}) {
    const int nw = cc == 90 ? 8 : 4;
    auto* ptr = reinterpret_cast<tritium::f16_t*>(uint64_t{0x7f0000000000});
    Assigned a = assign(attention_kernel, nw, cc, ptr, ptr, ptr, ptr, 4096, 128, 64, 128);
    if (std::getenv("TRITIUM_TEST_PRINT")) std::printf("%s\n", a.text.c_str());
    BOOST_TEST_CONTEXT(a.text) {
      int dots = 0, converts_in_loop = 0, shared_in_loop = 0;
      each_op(*a.f, [&](tritium::ir::Op* op) {
        using tritium::ir::OpKind;
        if (op->kind == OpKind::Dot) {
          ++dots;
          const Layout& acc = a.layouts.of(op->result());
          BOOST_TEST((acc.kind == LayoutKind::Mma && acc.mma.version == (cc == 90 ? 3 : 2) && acc.mma.wn == 1));
        }
        if (op->kind == OpKind::ConvertLayout && in_loop(op)) {
          if (a.layouts.of(op->result()).is_shared()) ++shared_in_loop;
          else ++converts_in_loop;
        }
        // The row statistics are carried in the slice of the accumulator layout.
        if (op->kind == OpKind::For)
          for (auto* arg : op->regions[0]->args)
            if (arg->type.rank() == 1) BOOST_TEST((a.layouts.of(arg).kind == LayoutKind::Slice));
      });
      BOOST_TEST(dots == 2);
      // K and V become tiles in the loop; P goes to the second dot as it is: nothing else moves.
      BOOST_TEST(shared_in_loop == 2);
      BOOST_TEST(converts_in_loop == 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(matmul_operands_are_tiles_and_the_result_is_stored_coalesced) {
  auto k = tritium::kernel("mm_like", [](tl::ptr<tritium::f16_t> A, tl::ptr<tritium::f16_t> B, tl::ptr<tritium::f16_t> C,
                                          tl::i32 K, int BM, int BN, int BK) {
    auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
    auto rn = tl::arange(0, BN);
    auto rk = tl::arange(0, BK);
    auto a_ptrs = A + rm(tl::_, tl::None) * K + rk(tl::None, tl::_);
    auto b_ptrs = B + rk(tl::_, tl::None) * BN + rn(tl::None, tl::_);
    auto acc = tl::zeros({BM, BN}, tl::float32);
    for (auto kt : tl::range(0, K, BK)) {
      (void)kt;
      acc += tl::dot(tl::load(a_ptrs), tl::load(b_ptrs));
      a_ptrs += BK;
      b_ptrs += BK * BN;
    }
    tl::store(C + rm(tl::_, tl::None) * BN + rn(tl::None, tl::_), acc.to(tl::float16));
  });
  auto* ptr = reinterpret_cast<tritium::f16_t*>(uint64_t{0x7f0000000000});
  Assigned a = assign(k, 8, 90, ptr, ptr, ptr, 4096, 128, 256, 64);
  BOOST_TEST_CONTEXT(a.text) {
    using tritium::ir::OpKind;
    int dots = 0, adds = 0;
    each_op(*a.f, [&](tritium::ir::Op* op) {
      if (op->kind == OpKind::Dot) {
        ++dots;
        // acc += dot(a, b) became dot(a, b, acc): the carried value is the accumulator.
        BOOST_TEST(op->operand(2)->is_block_arg());
        BOOST_TEST(a.layouts.of(op->operand(0)).is_shared());
        BOOST_TEST(a.layouts.of(op->operand(1)).is_shared());
        BOOST_TEST((a.layouts.of(op->operand(1)).order == std::vector<int>{1, 0}));  // B as stored: N-major
      }
      if (op->kind == OpKind::Add && op->result()->type.dtype == tritium::DType::f32) ++adds;
      if (op->kind == OpKind::Store) {
        const Layout& l = a.layouts.of(op->operand(1));
        BOOST_TEST((l.kind == LayoutKind::Blocked && l.contiguous_regs(1) == 8));
      }
    });
    BOOST_TEST(dots == 1);
    BOOST_TEST(adds == 0);
  }
}

BOOST_AUTO_TEST_CASE(an_accumulator_too_large_for_the_registers_is_a_clear_error) {
  auto k = tritium::kernel("big_dot", [](tl::ptr<tritium::f16_t> A, tl::ptr<float> C, int BM, int BN) {
    auto r = tl::arange(0, BM);
    auto c = tl::arange(0, BN);
    auto a = tl::load(A + r(tl::_, tl::None) * 16 + tl::arange(0, 16)(tl::None, tl::_));
    auto b = tl::load(A + tl::arange(0, 16)(tl::_, tl::None) * BN + c(tl::None, tl::_));
    tl::store(C + r(tl::_, tl::None) * BN + c(tl::None, tl::_), tl::dot(a, b));
  });
  auto* ptr = reinterpret_cast<tritium::f16_t*>(uint64_t{0x7f0000000000});
  auto* out = reinterpret_cast<float*>(uint64_t{0x7f0000100000});
  try {
    assign(k, 4, 90, ptr, out, 256, 256);
    BOOST_ERROR("no error for a 256 x 256 accumulator on 4 warps");
  } catch (const tritium::Error& e) {
    BOOST_TEST(std::string(e.what()).find("registers a thread") != std::string::npos, e.what());
    BOOST_TEST(std::string(e.what()).find("test_layouts.cpp") != std::string::npos, e.what());
  }
}


// ---- the generator -------------------------------------------------------------------------------

namespace {

// The kernel body through layouts for `cc`, compiled with NVRTC for `arch` (tests/cuda_codegen_check.h).
template <class... A>
std::string compile_layouts(tritium::Kernel& k, int num_warps, int num_stages, int cc, const std::string& arch,
                            const A&... args) {
  namespace tt = tritium::test;
  return tt::kernel_body(
      tt::compile_cuda(k, tt::CudaCheck().warps(num_warps).stages(num_stages).target(cc, arch), args...));
}

}  // namespace

BOOST_AUTO_TEST_CASE(attention_compiles_to_wgmma_and_mma_sync) {
  if (!tritium::jit::cuda::nvrtc_available()) {
    BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << tritium::jit::cuda::nvrtc_unavailable_reason());
    return;
  }
  auto* ptr = reinterpret_cast<tritium::f16_t*>(uint64_t{0x7f0000000000});
  std::string h = compile_layouts(attention_kernel, 8, 3, 90, "sm_90a", ptr, ptr, ptr, ptr, 4096, 128, 64, 128);
  BOOST_TEST(h.find("wgmma.mma_async") != std::string::npos);
  BOOST_TEST(h.find("tt_cp_async<16>") != std::string::npos);  // K and V pipelined
  std::string a = compile_layouts(attention_kernel, 4, 3, 80, "sm_80", ptr, ptr, ptr, ptr, 4096, 64, 64, 64);
  BOOST_TEST(a.find("tt_mma_f16") != std::string::npos);
}

// Tutorial 03's loop through layouts: both tiles pipelined with cp.async (the carried pointer
// blocks advance by a loop-invariant step), the wgmma group kept in flight into the next trip and the
// stage it read refilled after it; on sm_80 mma.sync from ldmatrix fragments.
auto pointer_matmul = tritium::kernel(
    "mm_pointer_blocks", [](tl::ptr<tritium::f16_t> a, tl::ptr<tritium::f16_t> b, tl::ptr<tritium::f16_t> c, tl::i32 M,
                            tl::i32 N, tl::i32 K, int BM, int BN, int BK) {
      auto pid_m = tl::program_id(0), pid_n = tl::program_id(1);
      auto offs_am = (pid_m * BM + tl::arange(0, BM)) % M, offs_bn = (pid_n * BN + tl::arange(0, BN)) % N;
      auto offs_k = tl::arange(0, BK);
      auto a_ptrs = a + (offs_am(tl::_, tl::None) * K + offs_k(tl::None, tl::_));
      auto b_ptrs = b + (offs_k(tl::_, tl::None) * N + offs_bn(tl::None, tl::_));
      auto acc = tl::zeros({BM, BN}, tl::float32);
      for (auto k : tl::range(0, tl::cdiv(K, BK))) {
        acc += tl::dot(tl::load(a_ptrs, offs_k(tl::None, tl::_) < K - k * BK, 0.0),
                       tl::load(b_ptrs, offs_k(tl::_, tl::None) < K - k * BK, 0.0));
        a_ptrs += BK;
        b_ptrs += BK * N;
      }
      auto offs_cm = pid_m * BM + tl::arange(0, BM), offs_cn = pid_n * BN + tl::arange(0, BN);
      tl::store(c + N * offs_cm(tl::_, tl::None) + offs_cn(tl::None, tl::_), acc.to(tl::float16),
                (offs_cm(tl::_, tl::None) < M) & (offs_cn(tl::None, tl::_) < N));
    });

BOOST_AUTO_TEST_CASE(matmul_loop_pipelines_its_tiles) {
  if (!tritium::jit::cuda::nvrtc_available()) return;
  auto* p = reinterpret_cast<tritium::f16_t*>(uint64_t{0x7f0000000000});
  std::string h = compile_layouts(pointer_matmul, 8, 3, 90, "sm_90a", p, p, p, 4096, 4096, 4096, 128, 256, 64);
  BOOST_TEST(h.find("// pipelined: 2 load(s) into 3 stages, 2 trips ahead") != std::string::npos);
  BOOST_TEST(h.find("tt_cp_async<16>(") != std::string::npos);
  BOOST_TEST(h.find("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16") != std::string::npos);
  // In flight: the previous trip's group retired after this trip's is issued, then the refill.
  const size_t wait1 = h.find("tt_wgmma_wait<1>();");
  BOOST_TEST(wait1 != std::string::npos);
  BOOST_TEST(h.find("tt_cp_async_commit();", wait1) != std::string::npos);
  // The store of C through shared memory into 16-byte row chunks.
  BOOST_TEST(h.find("tt_vcopy<16>(") != std::string::npos);
  std::string a = compile_layouts(pointer_matmul, 4, 3, 80, "sm_80", p, p, p, 4096, 4096, 4096, 128, 128, 32);
  BOOST_TEST(a.find("tt_ldsm_x4(") != std::string::npos);
  BOOST_TEST(a.find("tt_ldsm_x4_trans(") != std::string::npos);
  BOOST_TEST(a.find("tt_mma_f16(") != std::string::npos);
  BOOST_TEST(a.find("// pipelined: 2 load(s) into 3 stages") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(stages_shrink_to_fit_shared_memory) {
  if (!tritium::jit::cuda::nvrtc_available()) return;
  auto* p = reinterpret_cast<tritium::f16_t*>(uint64_t{0x7f0000000000});
  // 4 stages of 128 x 128 + 128 x 256 f16 tiles are 384 KB: as many as fit (2: 192 KB).
  std::string h = compile_layouts(pointer_matmul, 8, 4, 90, "sm_90a", p, p, p, 4096, 4096, 4096, 128, 256, 128);
  BOOST_TEST(h.find("into 2 stages") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(attention_passes_p_in_registers) {
  if (!tritium::jit::cuda::nvrtc_available()) return;
  auto* ptr = reinterpret_cast<tritium::f16_t*>(uint64_t{0x7f0000000000});
  std::string h = compile_layouts(attention_kernel, 8, 3, 90, "sm_90a", ptr, ptr, ptr, ptr, 4096, 128, 64, 128);
  // S = Q K^T from two tiles, O += P V with P from registers: no tile or conversion for P.
  BOOST_TEST(h.find("2 x 1 warpgroups of m64n64k16 (shared A)") != std::string::npos);
  BOOST_TEST(h.find("2 x 1 warpgroups of m64n128k16 (register A)") != std::string::npos);
  // The row max and sum: shuffles across the 4 lanes that share a row, no shared memory.
  BOOST_TEST(h.find("tt_shfl_xor(") != std::string::npos);
  const size_t loop = h.find("for (int32_t iv"), end = h.find("tt_cp_async_wait<0>();  // no copy lands after the loop");
  BOOST_REQUIRE(loop != std::string::npos);
  BOOST_REQUIRE(end != std::string::npos);
  const std::string body = h.substr(loop, end - loop);
  BOOST_TEST(body.find("reinterpret_cast<float*>(tt_smem") == std::string::npos);  // no f32 conversion buffer
  // P @ V runs on into the next trip (Triton's schedule): no wait after it; the next trip's wait for
  // S = Q K^T retires it too, and the stages it read are refilled after that.
  const size_t pv = body.find("(register A)");
  BOOST_REQUIRE(pv != std::string::npos);
  const size_t after = h.find("tt_wgmma_wait<", loop + pv);  // the first wait after P @ V: past the loop
  // Between it and the loop's epilogue: only the ties of the finished accumulators to the wait (empty
  // asm statements, "The wait ties the accumulators" in docs/cuda-backend.md).
  std::string between = h.substr(after, end - after);
  for (size_t t; (t = between.find("asm volatile(\"\" :")) != std::string::npos;)
    between.erase(t, between.find('\n', t) + 1 - t);
  BOOST_TEST(between.size() < 40u, between);
  const size_t qk = body.find("(shared A)");
  const size_t wait0 = body.find("tt_wgmma_wait<0>();", qk);
  BOOST_REQUIRE(wait0 != std::string::npos);
  const size_t retired = body.find("every warpgroup retired the previous trip's wgmma", wait0);
  BOOST_TEST(retired != std::string::npos);
  BOOST_TEST(body.find("tt_cp_async<16>(", retired) != std::string::npos);
  BOOST_TEST(body.find("tt_cp_async<16>(", retired) < pv);
}

namespace {

// Tutorial 06's off-band trip (no mask): qk * qk_scale - m_ij[:, None], which the CUDA backend
// contracts into fma(qk, qk_scale, -broadcast(m_ij)) before the layouts (contract_fma).
auto attention_off_band = tritium::kernel(
    "attn_fwd_off_band", [](tl::ptr<tritium::f16_t> Q, tl::ptr<tritium::f16_t> K, tl::ptr<tritium::f16_t> V,
                            tl::ptr<tritium::f16_t> O, tl::f32 qk_scale, tl::i32 N_CTX, int BM, int BN, int D) {
      auto offs_m = tl::program_id(0) * BM + tl::arange(0, BM);
      auto offs_n = tl::arange(0, BN);
      auto offs_d = tl::arange(0, D);
      auto q = tl::load(Q + offs_m(tl::_, tl::None) * D + offs_d(tl::None, tl::_));
      auto m_i = tl::zeros({BM}, tl::float32) - INFINITY;
      auto l_i = tl::zeros({BM}, tl::float32) + 1.0f;
      auto acc = tl::zeros({BM, D}, tl::float32);
      for (auto start_n : tl::range(0, N_CTX, BN)) {
        auto k = tl::load(K + (start_n + offs_n)(tl::None, tl::_) * D + offs_d(tl::_, tl::None));
        auto qk = tl::dot(q, k);
        auto m_ij = tl::maximum(m_i, tl::max(qk, 1) * qk_scale);
        qk = qk * qk_scale - m_ij(tl::_, tl::None);
        auto p = tl::exp2(qk);
        auto alpha = tl::exp2(m_i - m_ij);
        auto l_ij = tl::sum(p, 1);
        acc = acc * alpha(tl::_, tl::None);
        auto v = tl::load(V + (start_n + offs_n)(tl::_, tl::None) * D + offs_d(tl::None, tl::_));
        acc = tl::dot(p.to(tl::float16), v, acc);
        l_i = l_i * alpha + l_ij;
        m_i = m_ij;
      }
      acc = acc / l_i(tl::_, tl::None);
      tl::store(O + offs_m(tl::_, tl::None) * D + offs_d(tl::None, tl::_), acc.to(tl::float16));
    });

// The IR as the CUDA backend hands it to the generator: its fmas made (cuda_backend.cpp, generate).
template <class... A> Assigned assign_contracted(tritium::Kernel& k, int num_warps, int cc, const A&... args) {
  Assigned out;
  out.f = k.optimized_function(args...);
  BOOST_TEST_REQUIRE(contract_multiply_add(*out.f));
  eliminate_dead_code(*out.f);
  AxisInfoMap axis = analyze_axis_info(*out.f);
  out.layouts = assign_layouts(*out.f, axis, LayoutOptions{num_warps, cc});
  verify_layouts(*out.f, out.layouts);
  out.text = out.layouts.annotated(*out.f);
  return out;
}

}  // namespace

// Issue 27 (stop 42): tutorial 06's forward ran at half its stop-36 speed once contract_fma made
// fma(qk, scale, -broadcast(m_ij)): the neg kept the broadcast's register-replicated layout and
// its [M, N] result went through shared memory into the accumulator layout every trip. A cheap
// elementwise op over a view is recomputed in the layout its use needs instead.
BOOST_AUTO_TEST_CASE(a_contracted_softmax_stays_in_the_accumulator_layout) {
  for (int cc : {90, 80}) {
    const int nw = cc == 90 ? 8 : 4;
    auto* ptr = reinterpret_cast<tritium::f16_t*>(uint64_t{0x7f0000000000});
    Assigned a = assign_contracted(attention_off_band, nw, cc, ptr, ptr, ptr, ptr, 0.18f, 4096, 128, 64, 64);
    if (std::getenv("TRITIUM_TEST_PRINT")) std::printf("%s\n", a.text.c_str());
    BOOST_TEST_CONTEXT("cc " << cc << "\n" << a.text) {
      int fmas = 0, converts_in_loop = 0, shared_in_loop = 0;
      each_op(*a.f, [&](tritium::ir::Op* op) {
        using tritium::ir::OpKind;
        if (op->kind == OpKind::Fma && op->result()->type.rank() == 2 && in_loop(op)) {
          ++fmas;
          BOOST_TEST((a.layouts.of(op->result()).kind == LayoutKind::Mma));
        }
        if (op->kind == OpKind::ConvertLayout && in_loop(op)) {
          if (a.layouts.of(op->result()).is_shared()) ++shared_in_loop;
          else ++converts_in_loop;
        }
      });
      BOOST_TEST(fmas == 1);             // qk * qk_scale - m_ij, contracted
      BOOST_TEST(shared_in_loop == 2);   // the K and V tiles
      BOOST_TEST(converts_in_loop == 0);  // nothing else moves
    }
  }
}

// The same through the generator and NVRTC as the backend runs them: no f32 buffer in the loop,
// and 128 x 128 tiles at HEAD_DIM 128 fit in shared memory again (the conversion's 64 KB buffer
// had taken them past the budget: "needs 231424 bytes").
BOOST_AUTO_TEST_CASE(a_contracted_softmax_needs_no_shared_memory_in_the_loop) {
  if (!tritium::jit::cuda::nvrtc_available()) {
    BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << tritium::jit::cuda::nvrtc_unavailable_reason());
    return;
  }
  namespace cuda = tritium::jit::cuda;
  auto* ptr = reinterpret_cast<tritium::f16_t*>(uint64_t{0x7f0000000000});
  struct Case { int bm, bn, d, warps, stages; };
  for (const Case& c : {Case{128, 64, 64, 8, 3}, Case{128, 128, 128, 8, 3}, Case{64, 64, 64, 4, 3}}) {
    BOOST_TEST_CONTEXT(c.bm << "x" << c.bn << ", HEAD_DIM " << c.d << ", " << c.warps << " warps") {
      auto f = attention_off_band.optimized_function(ptr, ptr, ptr, ptr, 0.18f, 4096, c.bm, c.bn, c.d);
      BOOST_TEST_REQUIRE(contract_multiply_add(*f));
      eliminate_dead_code(*f);
      CompileOptions opts;
      opts.num_warps = c.warps;
      opts.num_stages = c.stages;
      cuda::KernelSource ks;
      BOOST_REQUIRE_NO_THROW(ks = cuda::generate_cuda(*f, analyze_axis_info(*f), opts, tritium::test::kH100SharedMemory, 90));
      const std::string h = tritium::test::kernel_body(ks);
      BOOST_TEST(h.find("(register A)") != std::string::npos);  // P from registers
      const size_t loop = h.find("for (int32_t iv"), end = h.find("no copy lands after the loop");
      BOOST_REQUIRE(loop != std::string::npos);
      BOOST_REQUIRE(end != std::string::npos);
      const std::string body = h.substr(loop, end - loop);
      BOOST_TEST(body.find("reinterpret_cast<float*>(tt_smem") == std::string::npos);
      // One barrier for the landed tiles, one after the previous trip's wgmma retired: no third.
      BOOST_TEST(tritium::test::occurrences(body, "__syncthreads();") == 2u);
      // exp2 as Triton's (one ex2.approx.ftz), not CUDA's exp2f with its subnormal scaling.
      BOOST_TEST(body.find("tt_exp2(") != std::string::npos);
      BOOST_TEST(body.find("exp2f(") == std::string::npos);
      // The row max's lane steps put the lower lane first (2 rows a thread x 2 lane bits x 2
      // selects); the row sum's combine in either order, with no selects.
      BOOST_TEST(tritium::test::occurrences(body, "(tt_lane & ") == 8u);
      BOOST_TEST(!cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a", {"--fmad=false"}).empty());
    }
  }
}

namespace {

// A [64, 32] block read through steps of STEP_M and STEP_N elements (0: a run-time value S) along
// its dims: contiguous in neither dim (steps of 2 or more), so only the likely steps between
// neighbours (AxisInfo::stride) can choose where the lanes go.
auto strided_gather = tritium::kernel(
    "strided_gather", [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 S, int STEP_M, int STEP_N) {
      auto rows = tl::arange(0, 64);
      auto cols = tl::arange(0, 32);
      auto m = STEP_M ? rows * STEP_M : rows * S;
      auto n = STEP_N ? cols * STEP_N : cols * S;
      auto v = tl::load(x + m(tl::_, tl::None) + n(tl::None, tl::_));
      tl::store(out + rows(tl::_, tl::None) * 32 + cols(tl::None, tl::_), v);
    });

}  // namespace

// Between dims of equal contiguity the lanes run along the smaller known step, an unknown step
// (times a run-time value) last; Triton 3.9's tie-break (the last dim) took dim 1 in every case.
BOOST_AUTO_TEST_CASE(a_gathers_lanes_run_along_its_smallest_likely_step) {
  auto* x = reinterpret_cast<float*>(uint64_t{0x7f0000000000});
  struct Case {
    int step_m, step_n, lanes_dim;
  };
  for (Case c : {Case{2, 0, 0}, Case{0, 3, 1}, Case{2, 5, 0}, Case{5, 2, 1}, Case{0, 0, 1}}) {
    Assigned a = assign(strided_gather, 4, 90, x, x, 48, c.step_m, c.step_n);
    int loads = 0;
    each_op(*a.f, [&](tritium::ir::Op* op) {
      if (op->kind != tritium::ir::OpKind::Load) return;
      ++loads;
      const Layout& l = a.layouts.of(op->result());
      for (const LayoutBit& bit : l.lane)
        BOOST_TEST(bit.dim == c.lanes_dim, c.step_m << " x " << c.step_n << ": " << l.str());
    });
    BOOST_TEST(loads == 1);
  }
}

BOOST_AUTO_TEST_SUITE_END()
