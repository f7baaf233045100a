// Block atomics in the element-loop generator without a GPU: a float atomic_add whose old values
// are unused, over contiguous aligned lanes under a mask constant over them, becomes vector
// reductions (tt_red_add_v: red.global.add.noftz.v8.f16 and the like on sm_90, Triton's
// vectorised atomics); other masks stay one atomic a lane (a 16-bit float one a red of its
// aligned pair, tt_red_add_16). sem picks the fences (acq_rel both, relaxed none). The indexing
// ops' kernel keeps its indices in registers (no shared memory, no barrier, no fence). Compiled by
// NVRTC for sm_90a and sm_80 (the header's pre-Hopper path). The values are test_atomics'
// row_scatter_add and relaxed_and_half_atomics on every backend.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <string>

#include "cuda_codegen_check.h"
#include "test_support.h"
#include "ir/printer.h"
#include "ops/indexing_kernels.h"
#include "scatter_rows_kernel.h"

namespace tt = tritium::test;
using tritium::bf16_t;
using tritium::DType;
using tritium::f16_t;
namespace tl = tritium::tl;

BOOST_AUTO_TEST_SUITE(test_cuda_codegen_atomics)

namespace {

template <class T> std::string scatter_body(int N, int BLOCK, bool sparse) {
  auto ks = tt::compile_cuda(tt::scatter_rows_kernel<T>(), tt::CudaCheck().routed().also_for("sm_80"),
                             tt::fake_address<T>(0), tt::fake_address<T>(1), tt::fake_address<int64_t>(2), N, BLOCK,
                             sparse);
  return tt::kernel_body(ks);
}

}  // namespace

BOOST_AUTO_TEST_CASE(row_scatter_adds_are_vector_reductions) {
  if (!tt::nvrtc_or_skip()) return;
  // 1024 columns, 4 warps: 8 lanes a thread, 16 bytes of f16 / bf16 in one red; f32 4 lanes a step.
  {
    const std::string body = scatter_body<f16_t>(1024, 1024, false);
    BOOST_TEST(tt::occurrences(body, "tt_red_add_v<8>") == 1u);
    BOOST_TEST(tt::occurrences(body, "tt_atomic_add_16") == 0u);
  }
  BOOST_TEST(tt::occurrences(scatter_body<bf16_t>(1024, 1024, false), "tt_red_add_v<8>") == 1u);
  BOOST_TEST(tt::occurrences(scatter_body<float>(1024, 1024, false), "tt_red_add_v<4>") == 1u);
  // Rows of 400 f16 in a 512 block: 4 lanes a thread (a thread each), masked past column 400.
  BOOST_TEST(tt::occurrences(scatter_body<f16_t>(400, 512, false), "tt_red_add_v<4>") == 1u);
  // 128 lanes over 128 threads: one a thread (Codegen::choose_width), so one atomic a lane.
  BOOST_TEST(tt::occurrences(scatter_body<f16_t>(100, 128, false), "tt_red_add_v") == 0u);
}

BOOST_AUTO_TEST_CASE(lane_masks_keep_one_atomic_a_lane) {
  if (!tt::nvrtc_or_skip()) return;
  for (const std::string& body : {scatter_body<f16_t>(1024, 1024, true), scatter_body<bf16_t>(1024, 1024, true)}) {
    BOOST_TEST(tt::occurrences(body, "tt_red_add_v") == 0u);
    // old values unused: the pair's red (one REDG .x2 on sm_90), not an atom (ptxas makes a
    // 16-bit atom a CAS loop)
    BOOST_TEST(tt::occurrences(body, "tt_red_add_16") >= 1u);
    BOOST_TEST(tt::occurrences(body, "tt_atomic_add_16") == 0u);
  }
}

namespace {

// SEM: 0 acq_rel (the default spelling), 1 "acq_rel", 2 "relaxed", 3 "acquire", 4 "release";
// SCALAR: one scalar atomic instead of a block's; OLD: the old values are stored.
tritium::Kernel& sem_kernel() {
  static tritium::Kernel k = tritium::kernel("sem_atomics", [](tl::ptr<int32_t> c, tl::ptr<int32_t> out, int SEM, bool SCALAR,
                                                               bool OLD) {
    static const char* names[] = {"", "acq_rel", "relaxed", "acquire", "release"};
    auto lanes = tl::arange(0, 128);
    auto p = SCALAR ? tl::tensor(c) : c + lanes % 7;
    tl::tensor old = SEM == 0 ? tl::atomic_add(p, 1) : tl::atomic_add(p, 1, std::nullopt, names[SEM]);
    if (OLD) tl::store(SCALAR ? tl::tensor(out) : out + lanes, old);
  });
  return k;
}

std::string sem_body(int sem, bool scalar, bool old) {
  return tt::kernel_body(tt::compile_cuda(sem_kernel(), tt::CudaCheck().routed().also_for("sm_80"),
                                          tt::fake_address<int32_t>(0), tt::fake_address<int32_t>(1), sem, scalar, old));
}

}  // namespace

BOOST_AUTO_TEST_CASE(sem_sets_the_fences) {
  // The IR keeps the order: printed (so in the cache key), nothing for acq_rel.
  auto f = sem_kernel().optimized_function(tt::fake_address<int32_t>(0), tt::fake_address<int32_t>(1), 2, false, true);
  BOOST_TEST(tritium::ir::print(*f).find("sem=relaxed") != std::string::npos);
  auto g = sem_kernel().optimized_function(tt::fake_address<int32_t>(0), tt::fake_address<int32_t>(1), 1, false, true);
  BOOST_TEST(tritium::ir::print(*g).find("sem=") == std::string::npos);
  // Another order is a trace error naming the four.
  auto bad = tritium::kernel("bad_sem", [](tl::ptr<int32_t> c) { tl::atomic_max(c + tl::arange(0, 16), 1, std::nullopt, "seq_cst"); });
  tt::check_throws([&] { bad.optimized_function(tt::fake_address<int32_t>(0)); },
                   {"tl::atomic_max", "sem must be \"acq_rel\", \"acquire\", \"release\" or \"relaxed\"", "seq_cst"});
  if (!tt::nvrtc_or_skip()) return;
  for (bool scalar : {false, true})
    for (bool old : {false, true}) {
      BOOST_TEST_CONTEXT((scalar ? "scalar" : "block") << (old ? ", old values stored" : "")) {
        BOOST_TEST(tt::occurrences(sem_body(0, scalar, old), "tt_fence_acq_rel()") == 2u);
        BOOST_TEST(tt::occurrences(sem_body(1, scalar, old), "tt_fence_acq_rel()") == 2u);
        BOOST_TEST(tt::occurrences(sem_body(2, scalar, old), "tt_fence_acq_rel()") == 0u);
        BOOST_TEST(tt::occurrences(sem_body(3, scalar, old), "tt_fence_acq_rel()") == 1u);
        BOOST_TEST(tt::occurrences(sem_body(4, scalar, old), "tt_fence_acq_rel()") == 1u);
      }
    }
}

// ops::gather / scatter_add's kernel (ops/indexing.cpp) on bench/ops_bench_table.cpp's shapes
// ([16384, 1024] along dim 1, i64 indices), as tools/index-codegen generates it: the indices
// are loaded once into registers and read there by the bounds check's atomics, the mask and the
// address (they went to a 32 KB shared buffer, read back by four loops between barriers, with two
// acq_rel fences around each atomic); a bf16 scatter adds by the pair's red.
BOOST_AUTO_TEST_CASE(indexing_kernel_keeps_indices_in_registers) {
  if (!tt::nvrtc_or_skip()) return;
  namespace d = tritium::ops::detail;
  const int64_t rows = 16384, cols = 1024, one = 1, zero = 0;
  const int64_t tile = d::kIndexCopyTile;
  BOOST_TEST(tile == 1024);
  for (bool scatter : {false, true})
    for (DType dt : {DType::f32, DType::bf16}) {
      BOOST_TEST_CONTEXT((scatter ? "scatter_add " : "gather ") << tritium::dtype_name(dt)) {
        auto compile = [&](auto tag) {
          using T = decltype(tag);
          return tt::compile_cuda(d::index_copy_kernel(), tt::CudaCheck().routed().also_for("sm_80"), tt::fake_address<T>(0),
                                  tt::fake_address<T>(1), tt::fake_address<int64_t>(2), tt::fake_address<int64_t>(3), cols,
                                  one, rows, cols, rows, one, one, one, one,             //
                                  cols, zero, zero, zero, zero, scatter ? zero : one,    // dst strides
                                  cols, zero, zero, zero, zero, scatter ? one : zero,    // src strides
                                  cols, zero, zero, zero, zero, one,                     // index strides
                                  2, scatter ? 1 : 0, scatter ? 2 : 1, 1, static_cast<int>(dt), 1, static_cast<int>(tile),
                                  scatter ? 2 | 4 | 16 : 1 | 4 | 32);
        };
        const std::string body = tt::kernel_body(dt == DType::f32 ? compile(float{}) : compile(bf16_t{}));
        BOOST_TEST(tt::occurrences(body, "(shared)") == 0u);
        BOOST_TEST(tt::occurrences(body, "__syncthreads") == 0u);
        BOOST_TEST(tt::occurrences(body, "tt_fence_acq_rel") == 0u);
        BOOST_TEST(tt::occurrences(body, "in registers") >= 1u);
        if (scatter && dt == DType::bf16) BOOST_TEST(tt::occurrences(body, "tt_red_add_16") >= 1u);
        if (scatter && dt == DType::f32) BOOST_TEST(tt::occurrences(body, "atomicAdd") >= 1u);
      }
    }
}

BOOST_AUTO_TEST_SUITE_END()
