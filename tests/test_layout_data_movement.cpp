// tl::join, tl::split (and so tl::interleave), tl::gather and tl::histogram through the CUDA layout
// generator (jit/cuda/lowering/data_movement.cpp, layout rules in jit/passes/assign_layouts.cpp):
// generated for sm_90a and sm_80 and compiled with NVRTC, never run here (no GPU in CI). The values
// are checked on a GPU by test_tensor_ops/values_through_the_layout_generator, which runs the
// suite's join / gather / histogram checks with TRITIUM_CUDA_CODEGEN=layouts. Skips when NVRTC is
// unavailable. Blocks are powers of two (the DSL's rule); the tensors behind them are not.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "jit/layouts/layout.h"
#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
namespace cuda = tritium::jit::cuda;
using tritium::f16_t;

namespace {

template <class T> T* addr(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000); }

int dumps = 0;  // dump files of one kernel's several specialisations apart

// The kernel through layouts for sm_90a and sm_80 (each compiled by NVRTC; a compile error fails
// the test); returns the sm_90a kernel's body (after the device header, which every kernel has).
template <class... A> std::string through_layouts(tritium::Kernel& k, int num_warps, const A&... args) {
  const int calls = ++dumps;
  std::string body;
  for (int cc : {90, 80}) {
    auto f = k.optimized_function(args...);
    tritium::jit::CompileOptions opts;
    opts.num_warps = num_warps;
    cuda::KernelSource ks = cuda::generate_cuda_layouts(*f, opts, cuda::kSharedMemoryBudget, cc);
    const std::string arch = cc == 90 ? "sm_90a" : "sm_80";
    if (const char* dir = std::getenv("TRITIUM_DUMP"); dir && *dir)
      std::ofstream(fmt::format("{}/{}.{}.{}.cu", dir, ks.entry, calls, arch)) << ks.source;
    try {
      BOOST_TEST(!cuda::compile_to_cubin(ks.source, ks.entry, arch).empty());
    } catch (const tritium::Error& e) {
      BOOST_ERROR("kernel " << ks.entry << " does not compile for " << arch << ":\n" << e.what());
    }
    if (cc == 90) body = ks.source.substr(ks.source.find("__global__"));
  }
  return body;
}

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// [BR, C] row-major offsets of program p's rows and the mask of rows < n.
std::pair<tl::tensor, tl::tensor> rows_of(int BR, int C, const tl::tensor& n) {
  auto r = tl::program_id(0) * BR + tl::arange(0, BR);
  auto c = tl::arange(0, C);
  return {r(tl::_, tl::None) * C + c(tl::None, tl::_), tl::broadcast_to(r(tl::_, tl::None) < n, {BR, C})};
}

auto join_split = tritium::kernel(
    "lay_join_split", [](tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> joined, tl::ptr<float> inter,
                         tl::ptr<float> lo, tl::ptr<float> hi, tl::i32 n, int BR, int C) {
      auto [offs, m] = rows_of(BR, C, n);
      auto x = tl::load(a + offs, m), y = tl::load(b + offs, m);
      auto two = tl::reshape(tl::arange(0, 2), {1, 1, 2});
      tl::store(joined + tl::expand_dims(offs, 2) * 2 + two, tl::join(x, y),
                tl::broadcast_to(tl::expand_dims(m, 2), {BR, C, 2}));
      auto r = tl::program_id(0) * BR + tl::arange(0, BR);
      tl::store(inter + r(tl::_, tl::None) * (2 * C) + tl::arange(0, 2 * C)(tl::None, tl::_), tl::interleave(x, y),
                r(tl::_, tl::None) < n);
      auto [p, q] = tl::split(tl::join(y * 2.0f, x));
      tl::store(lo + offs, p, m);
      tl::store(hi + offs, q, m);
    });

// split(join(a, b)) alone: both in registers, nothing through shared memory.
auto join_then_split = tritium::kernel(
    "lay_join_then_split", [](tl::ptr<f16_t> a, tl::ptr<f16_t> b, tl::ptr<f16_t> lo, tl::ptr<f16_t> hi, tl::i32 n, int BR, int C) {
      auto [offs, m] = rows_of(BR, C, n);
      auto x = tl::load(a + offs, m), y = tl::load(b + offs, m);
      auto [p, q] = tl::split(tl::join(y, x));
      tl::store(lo + offs, p * 2.0f, m);
      tl::store(hi + offs, q, m);
    });

// A block whose minor size-2 dim the load spreads over lanes (its memory runs along dim 0): the
// split converts it first so that each thread holds both halves.
auto split_across_lanes = tritium::kernel(
    "lay_split_lanes", [](tl::ptr<f16_t> x, tl::ptr<f16_t> lo, tl::ptr<f16_t> hi, tl::i32 n, int B) {
      auto i = tl::program_id(0) * B + tl::arange(0, B);
      auto m = i < n;
      auto pair = tl::load(x + i(tl::_, tl::None) + tl::arange(0, 2)(tl::None, tl::_) * n, m(tl::_, tl::None));
      auto [p, q] = tl::split(pair);
      tl::store(lo + i, p, m);
      tl::store(hi + i, q, m);
    });

// Two scalars join into a [2]; its split gives them back.
auto scalar_join = tritium::kernel("lay_scalar_join", [](tl::ptr<int32_t> out, tl::i32 a, tl::i32 b) {
  auto j = tl::join(a, b);
  tl::store(out + tl::arange(0, 2), j);
  auto [x, y] = tl::split(j);
  tl::store(out + 2, y);
  tl::store(out + 3, x);
});

// Gather along AXIS of a [BR, C] source with an index of [BR, K] (axis 1) or [K, C] (axis 0).
template <class I> tritium::Kernel& gather_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "lay_gather", [](tl::ptr<float> src, tl::ptr<I> index, tl::ptr<float> out, tl::i32 n, int AXIS, int BR, int C, int K) {
        auto [offs, m] = rows_of(BR, C, n);
        auto s = tl::load(src + offs, m, 0.0f);
        int IR = AXIS == 0 ? K : BR, IC = AXIS == 0 ? C : K;
        auto r = tl::program_id(0) * IR + tl::arange(0, IR);
        auto ioffs = r(tl::_, tl::None) * IC + tl::arange(0, IC)(tl::None, tl::_);
        auto idx = tl::load(index + ioffs);
        tl::store(out + ioffs, tl::gather(s, idx, AXIS));
      });
  return k;
}

auto histogram = tritium::kernel(
    "lay_histogram", [](tl::ptr<int32_t> x, tl::ptr<int32_t> out, tl::i32 n, int BLOCK, int BINS, bool MASKED) {
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto m = offs < n;
      auto v = tl::load(x + offs, m, -1);
      auto h = MASKED ? tl::histogram(v, BINS, m) : tl::histogram(v, BINS);
      tl::store(out + tl::program_id(0) * BINS + tl::arange(0, BINS), h);
    });

// The ops on a tensor-core accumulator (an mma layout): the kernel shape the layout generator used
// to refuse (test_tensor_ops's old layout_generator_refuses_clearly).
auto after_dot = tritium::kernel("lay_after_dot", [](tl::ptr<f16_t> x, tl::ptr<int32_t> index, tl::ptr<float> out) {
  auto offs = tl::arange(0, 32)(tl::_, tl::None) * 32 + tl::arange(0, 32)(tl::None, tl::_);
  auto a = tl::load(x + offs);
  auto d = tl::dot(a, a);  // [32, 32] f32
  auto g = tl::gather(d, tl::load(index + offs), 1);
  auto [p, q] = tl::split(tl::reshape(d, {32, 16, 2}));
  auto h = tl::histogram(tl::reshape(tl::load(index + offs), {1024}), 64);
  tl::store(out + offs, g);
  tl::store(out + 1024 + tl::arange(0, 32)(tl::_, tl::None) * 16 + tl::arange(0, 16)(tl::None, tl::_), p + q);
  tl::store(out + 2048 + tl::arange(0, 64), h.to(tl::float32));
});

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layout_data_movement)

BOOST_AUTO_TEST_CASE(join_and_split_move_registers_only) {
  if (!cuda::nvrtc_available()) return;
  float* f = nullptr;
  for (int w : {1, 4}) through_layouts(join_split, w, f, f, f, f, f, f, 13, 4, 8);
  f16_t* h = nullptr;
  for (auto [br, c] : {std::pair{4, 64}, {16, 8}, {1, 2}}) {
    BOOST_TEST_CONTEXT(br << " x " << c) {
      std::string body = through_layouts(join_then_split, 4, h, h, h, h, 13, br, c);
      BOOST_TEST(!has(body, "tt_smem + "));
      BOOST_TEST(!has(body, "__syncthreads"));
    }
  }
  int32_t* i = nullptr;
  through_layouts(scalar_join, 4, i, 7, -3);
}

BOOST_AUTO_TEST_CASE(join_split_layouts_are_register_interleaves) {
  // The rules themselves: join adds the minor dim as register bit 0, split drops it again; a layout
  // whose minor dim is in a lane bit cannot be split in place.
  auto l = tritium::jit::default_blocked_layout({8, 16}, 4, {1, 0}, 4);
  auto j = tritium::jit::join_layout(l);
  BOOST_TEST(j.rank() == 3);
  BOOST_TEST(j.num_regs() == 2 * l.num_regs());
  BOOST_TEST((j.reg[0] == tritium::jit::LayoutBit{2, 0}));
  BOOST_TEST(j.lane == l.lane);
  auto back = tritium::jit::split_layout(j);
  BOOST_TEST_REQUIRE(back.has_value());
  BOOST_TEST(back->same_placement(l));
  auto lanes = tritium::jit::default_blocked_layout({16, 2}, 4, {0, 1}, 4);  // dim 1 on a lane bit
  BOOST_TEST(!tritium::jit::split_layout(lanes).has_value());
  auto s = tritium::jit::join_layout(tritium::jit::scalar_layout(4));
  BOOST_TEST(s.num_regs() == 2);
  BOOST_TEST(s.lane_replication() == 31);
}

BOOST_AUTO_TEST_CASE(split_of_a_minor_dim_across_lanes_converts_first) {
  if (!cuda::nvrtc_available()) return;
  f16_t* h = nullptr;
  std::string body = through_layouts(split_across_lanes, 4, h, h, h, 100, 64);
  BOOST_TEST(has(body, "tt_smem + "));  // the convert goes through shared memory
}

BOOST_AUTO_TEST_CASE(gather_through_shuffles_or_shared_memory) {
  if (!cuda::nvrtc_available()) return;
  float* f = nullptr;
  int32_t* i = nullptr;
  int64_t* l = nullptr;
  // Source [4, 16] f32 and index [4, 16] i32: the same layout, each row in one warp: shuffles.
  std::string same = through_layouts(gather_kernel<int32_t>(), 4, f, i, f, 11, 1, 4, 16, 16);
  BOOST_TEST(has(same, "index shuffles within the warp"));
  BOOST_TEST(has(same, "tt_shfl_xor"));
  BOOST_TEST(!has(same, "through shared memory"));
  // [8, 64] on 2 warps: 4 source registers a thread along the row: a shuffle from each, one selected.
  std::string wide = through_layouts(gather_kernel<int32_t>(), 2, f, i, f, 11, 1, 8, 64, 64);
  BOOST_TEST(has(wide, "index shuffles within the warp"));
  BOOST_TEST(has(wide, "& 3) == 3 ?"));
  // Index [4, 8] against source [4, 16], an i64 index of [2, 32] against [2, 8], along rows with
  // the rows spread over warps: through shared memory.
  BOOST_TEST(has(through_layouts(gather_kernel<int32_t>(), 4, f, i, f, 11, 1, 4, 16, 8), "gather along dim 1"));
  BOOST_TEST(has(through_layouts(gather_kernel<int64_t>(), 4, f, l, f, 6, 1, 2, 8, 32), "gather along dim 1"));
  std::string rows = through_layouts(gather_kernel<int32_t>(), 8, f, i, f, 16, 0, 64, 32, 128);
  BOOST_TEST(has(rows, "gather along dim 0: through shared memory"));
}

BOOST_AUTO_TEST_CASE(histogram_counts_in_shared_memory) {
  if (!cuda::nvrtc_available()) return;
  int32_t* i = nullptr;
  for (auto [block, bins, masked] : {std::tuple{256, 16, true}, {128, 128, false}, {64, 2, true}, {32, 512, false}}) {
    BOOST_TEST_CONTEXT("block " << block << ", " << bins << " bins") {
      std::string body = through_layouts(histogram, 4, i, i, 1000, block, bins, masked);
      BOOST_TEST(has(body, "histogram of " + std::to_string(bins) + " bins"));
      BOOST_TEST(has(body, "atomicAdd(&"));
    }
  }
}

BOOST_AUTO_TEST_CASE(ops_on_a_tensor_core_accumulator) {
  if (!cuda::nvrtc_available()) return;
  f16_t* h = nullptr;
  int32_t* i = nullptr;
  float* f = nullptr;
  std::string body = through_layouts(after_dot, 4, h, i, f);
  BOOST_TEST(has(body, "mma"));
  BOOST_TEST(has(body, "gather along dim 1"));
  BOOST_TEST(has(body, "histogram of 64 bins"));
}

BOOST_AUTO_TEST_SUITE_END()
