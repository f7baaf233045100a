// The CUDA code generator without a GPU: kernels covering every DSL op family are traced, turned
// into CUDA C++ and compiled by NVRTC for sm_90a. Skips (with the reason) when libnvrtc cannot be
// opened. Running the kernels is the job of the shared suites (for_each_backend) on a GPU machine.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "common/shared_library.h"
#include "cuda_codegen_check.h"
#include "ir/ir.h"
#include "ops/ops.h"
#include "runtime/cuda_allocator.h"
#include "runtime/device.h"
#include "jit/cuda/cubin_stats.h"
#include "jit/cuda/nvjitlink.h"
#include "jit/cuda/ptx_codegen.h"
#include "test_support.h"

namespace tl = tritium::tl;
namespace cuda = tritium::jit::cuda;
namespace tt = tritium::test;
using tritium::bf16_t;
using tritium::f16_t;

namespace {

template <class T> T* addr(uint64_t i) { return tt::fake_address<T>(i); }
using tt::kernel_body;
using tt::nvrtc_or_skip;

// Traces `k` for `args`, generates CUDA C++ through generate_cuda's routing (as the backend does)
// and compiles it for sm_90a (tests/cuda_codegen_check.h); returns the source. Shared memory: the
// generator's default budget, or an H100's with g_smem_budget = tt::kH100SharedMemory.
inline int64_t g_smem_budget = cuda::kSharedMemoryBudget;
inline int g_num_stages = 3;  // CompileOptions::num_stages for the compiles below
template <class... A> cuda::KernelSource compile(tritium::Kernel& k, int num_warps, const A&... args) {
  return tt::compile_cuda(k, tt::CudaCheck().warps(num_warps).stages(g_num_stages).routed().budget(g_smem_budget), args...);
}
template <class... A> cuda::KernelSource compile(tritium::Kernel& k, const A&... args) { return compile(k, 4, args...); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_cuda_codegen)

// A one-warp program reduces a block to one value with warp shuffles only (Triton's lowering: no
// shared partials, no barrier): grpo_loss's forward (num_warps=1, an online log-sum-exp over the
// vocabulary) had three barriers and two shared-memory round trips in each chunk's trip. With
// four warps the partials and the barrier stay. Values: tests/test_one_warp_reductions.cpp.
BOOST_AUTO_TEST_CASE(one_warp_block_reductions_need_no_shared_memory_or_barrier) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("lse1", [](tl::ptr<tritium::bf16_t> x, tl::ptr<float> out, tl::i32 n, int BLOCK) {
    auto base = x + tl::program_id(0).to(tl::int64) * n;
    tl::tensor m = tl::full({}, -INFINITY, tl::float32);
    tl::tensor l = tl::full({}, 0.0, tl::float32);
    for (auto start : tl::range(0, n, BLOCK)) {
      auto cols = start + tl::arange(0, BLOCK);
      auto v = tl::load(base + cols, cols < n, -INFINITY).to(tl::float32);
      auto m_new = tl::maximum(m, tl::max(v));
      l = l * tl::exp(m - m_new) + tl::sum(tl::exp(v - m_new));
      m = m_new;
    }
    tl::store(out + tl::program_id(0), m + tl::log(l));
  });
  auto one = compile(k, 1, addr<tritium::bf16_t>(0), addr<float>(1), 32000, 2048);
  BOOST_TEST(kernel_body(one).find("__syncthreads") == std::string::npos, kernel_body(one));
  BOOST_TEST(kernel_body(one).find("[tid >> 5]") == std::string::npos);  // no per-warp partials
  BOOST_TEST(one.smem_bytes == 0);
  BOOST_TEST(one.num_threads == 32);
  auto four = compile(k, 4, addr<tritium::bf16_t>(0), addr<float>(1), 32000, 2048);
  BOOST_TEST(kernel_body(four).find("[tid >> 5]") != std::string::npos);
  BOOST_TEST(kernel_body(four).find("__syncthreads") != std::string::npos);
  BOOST_TEST(four.smem_bytes > 0);
}

// An if ends in a barrier only when a side wrote shared memory or a block result: tl::return_()
// inside tl::if_ (a flag and an if around the rest) cost two barriers a program where Triton
// exits (grpo_loss's backward had 3 against Triton's 1). Global writes in a side stay pending: a
// later load through the same pointer still gets its barrier.
BOOST_AUTO_TEST_CASE(an_if_ends_in_a_barrier_only_for_what_other_threads_read) {
  if (!nvrtc_or_skip()) return;
  auto early = tritium::kernel("early_exit", [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 rows, tl::i32 n, int BLOCK) {
    auto row = tl::program_id(0);
    tl::if_(row >= rows, [&] { tl::return_(); });
    auto cols = tl::arange(0, BLOCK);
    tl::store(out + row * n + cols, tl::load(x + row * n + cols, cols < n) * 2.0f, cols < n);
  });
  auto ks = compile(early, addr<float>(0), addr<float>(1), 7, 1000, 1024);
  BOOST_TEST(kernel_body(ks).find("__syncthreads") == std::string::npos, kernel_body(ks));
  // Written in a branch, read by other threads after it: the barrier stays.
  auto reread = tritium::kernel("branch_write_reread", [](tl::ptr<float> buf, tl::ptr<float> out, tl::i32 flag, int BLOCK) {
    auto offs = tl::arange(0, BLOCK);
    tl::if_(flag > 0, [&] { tl::store(buf + offs, offs.to(tl::float32)); });
    tl::store(out + offs, tl::load(buf + (BLOCK - 1 - offs)));
  });
  auto ks2 = compile(reread, addr<float>(0), addr<float>(1), 1, 256);
  BOOST_TEST(kernel_body(ks2).find("__syncthreads") != std::string::npos, kernel_body(ks2));
  // Each side starts from the state before the if: the else side's load does not wait for the
  // then side's store (they are on different paths), and nothing reads buf after the if.
  auto sides = tritium::kernel("sides_apart", [](tl::ptr<float> buf, tl::ptr<float> out, tl::i32 flag, int BLOCK) {
    auto offs = tl::arange(0, BLOCK);
    tl::if_(
        flag > 0, [&] { tl::store(buf + offs, offs.to(tl::float32)); },
        [&] { tl::store(out + offs, tl::load(buf + (BLOCK - 1 - offs))); });
  });
  const std::string body3 = kernel_body(compile(sides, addr<float>(0), addr<float>(1), 1, 256));
  BOOST_TEST(body3.find("__syncthreads") == std::string::npos, body3);
}

BOOST_AUTO_TEST_CASE(vector_add_uses_16_byte_accesses) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("add", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    tl::store(out + offs, tl::load(x + offs, mask) + tl::load(y + offs, mask), mask);
  });
  auto ks = compile(k, addr<float>(0), addr<float>(1), addr<float>(2), 1000, 1024);
  BOOST_TEST(ks.source.find("*reinterpret_cast<const uint4*>") != std::string::npos);  // 16-byte loads
  BOOST_TEST(ks.source.find("*reinterpret_cast<uint4*>") != std::string::npos);        // 16-byte store
  BOOST_TEST(ks.num_threads == 128);
  BOOST_TEST(ks.smem_bytes == 0);
  // Other widths of the CTA.
  auto ks8 = compile(k, 8, addr<float>(0), addr<float>(1), addr<float>(2), 1000, 4096);
  BOOST_TEST(ks8.num_threads == 256);
}

BOOST_AUTO_TEST_CASE(broadcast_2d_and_i64_offsets) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("bcast", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 M, tl::i32 N,
                                       tl::i64 stride, int BM, int BN) {
    auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
    auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
    auto mask = (rm(tl::_, tl::None) < M) & (rn(tl::None, tl::_) < N);
    auto a = tl::load(x + rm, rm < M);
    auto b = tl::load(y + rn, rn < N);
    auto row = rm.to(tl::int64) * stride;  // 64-bit offsets
    tl::store(out + row(tl::_, tl::None) + rn(tl::None, tl::_), a(tl::_, tl::None) * b(tl::None, tl::_) + 1.0f, mask);
    auto t = tl::permute(a(tl::_, tl::None) + b(tl::None, tl::_), {1, 0});
    tl::store(out + rn(tl::_, tl::None) * M + rm(tl::None, tl::_), tl::reshape(t, {BN, BM}));
  });
  auto ks = compile(k, addr<float>(0), addr<float>(1), addr<float>(2), 100, 200, int64_t{1} << 33, 32, 64);
  BOOST_TEST(kernel_body(ks).find("int64_t") != std::string::npos);  // the header has int64_t too
}

BOOST_AUTO_TEST_CASE(reductions_on_each_axis) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("reduce", [](tl::ptr<float> x, tl::ptr<float> out, tl::ptr<int32_t> idx, tl::ptr<int32_t> ix,
                                        int M, int N) {
    auto rm = tl::arange(0, M), rn = tl::arange(0, N);
    auto v = tl::load(x + rm(tl::_, tl::None) * N + rn(tl::None, tl::_));
    tl::store(out + rm, tl::sum(v, 1));                     // along the last axis (warp per row)
    tl::store(out + M + rn, tl::max(v, 0));                 // along the first axis (thread per column)
    tl::store(out + M + N, tl::sum(v));                     // everything (CTA-wide)
    tl::store(out + M + N + 1 + rm, tl::reshape(tl::min(v, 1, true), {M}));
    tl::store(idx + rm, tl::argmax(v, 1));                  // two operands
    tl::store(idx + M + rn, tl::argmin(v, 0));
    auto iv = tl::load(ix + rn);
    tl::store(idx + M + N, tl::xor_sum(iv, 0));
    tl::store(out + 2 * M + N + 1,
              tl::reduce(v, std::nullopt, [](tl::tensor a, tl::tensor b) { return tl::maximum(a, b) * 1.0f; }));
  });
  compile(k, addr<float>(0), addr<float>(1), addr<int32_t>(2), addr<int32_t>(3), 32, 64);
  compile(k, 1, addr<float>(0), addr<float>(1), addr<int32_t>(2), addr<int32_t>(3), 4, 16);
}

// A row softmax (tutorial 02's body) keeps its row and numerator in per-thread registers: no
// shared-memory buffer but the warps' reduction partials, 16-byte loads and stores.
BOOST_AUTO_TEST_CASE(softmax_row_stays_in_registers) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("softmax_row", [](tl::ptr<float> out, tl::ptr<float> in, tl::i32 n_rows, tl::i32 n_cols,
                                             int BLOCK) {
    for (auto row : tl::range(tl::program_id(0), n_rows, tl::num_programs(0))) {
      auto cols = tl::arange(0, BLOCK);
      auto mask = cols < n_cols;
      auto x = tl::load(in + row * n_cols + cols, mask, -INFINITY);
      auto num = tl::exp(x - tl::max(x, 0));
      tl::store(out + row * n_cols + cols, num / tl::sum(num, 0), mask);
    }
  });
  for (int block : {1024, 4096}) {
    auto ks = compile(k, addr<float>(0), addr<float>(1), 4096, block, block);
    BOOST_TEST(ks.source.find("in registers") != std::string::npos);
    BOOST_TEST(ks.source.find("(shared)") == std::string::npos);
    BOOST_TEST(ks.source.find("(global scratch)") == std::string::npos);
    BOOST_TEST(ks.scratch_bytes == 0);
    BOOST_TEST(ks.smem_bytes <= 2 * 16 * 8 + 2 * 16);  // two reductions' partials per warp
    // 16-byte accesses: one predicated load and store per vector (the mask is constant over 4 lanes).
    BOOST_TEST(ks.source.find("tt_ld_pred<16>(") != std::string::npos);
    BOOST_TEST(ks.source.find("tt_st_pred<16>(") != std::string::npos);
  }
  // Rows too long for registers fall back to buffers.
  auto big = compile(k, addr<float>(0), addr<float>(1), 4096, 65536, 65536);
  BOOST_TEST(big.source.find("in registers") == std::string::npos);
}

// Loop-carried accumulators (tutorial 05's mean and variance) live in registers across the loop;
// read at other elements after it (a reduction along the first axis), they get a buffer copy.
BOOST_AUTO_TEST_CASE(carried_accumulators_in_registers) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("acc_rows", [](tl::ptr<f16_t> x, tl::ptr<float> out, tl::i32 N, int BM, int BN) {
    auto acc = tl::zeros({BN}, tl::float32);
    auto acc2 = tl::zeros({BM, BN}, tl::float32);
    auto rm = tl::arange(0, BM);
    for (auto off : tl::range(0, N, BN)) {
      auto cols = off + tl::arange(0, BN);
      auto a = tl::load(x + cols, cols < N, 0.0f).to(tl::float32);
      acc += a;
      acc2 += tl::load(x + rm(tl::_, tl::None) * N + cols(tl::None, tl::_), cols(tl::None, tl::_) < N, 0.0f).to(tl::float32);
    }
    tl::store(out, tl::sum(acc, 0));
    tl::store(out + 1 + tl::arange(0, BN), tl::sum(acc2, 0));
  });
  auto ks = compile(k, addr<f16_t>(0), addr<float>(1), 1000, 8, 256);
  BOOST_TEST(ks.source.find("[256]f32 in registers") != std::string::npos);
  BOOST_TEST(ks.source.find("[8,256]f32 in registers") != std::string::npos);
  BOOST_TEST(ks.source.find("// [8,256]f32 (shared)") != std::string::npos);  // the spilled copy
}

BOOST_AUTO_TEST_CASE(reductions_of_half_and_int64) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("reduce_types", [](tl::ptr<f16_t> h, tl::ptr<bf16_t> b, tl::ptr<int64_t> l, tl::ptr<float> out,
                                              tl::ptr<int64_t> lout, int N) {
    auto rn = tl::arange(0, N);
    tl::store(out, tl::sum(tl::load(h + rn), 0).to(tl::float32));
    tl::store(out + 1, tl::max(tl::load(b + rn), 0).to(tl::float32));
    tl::store(lout, tl::sum(tl::load(l + rn), 0));
    tl::store(lout + 1, tl::argmax(tl::load(l + rn), 0).to(tl::int64));
  });
  compile(k, addr<f16_t>(0), addr<bf16_t>(1), addr<int64_t>(2), addr<float>(3), addr<int64_t>(4), 256);
}

BOOST_AUTO_TEST_CASE(scans) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("scan", [](tl::ptr<float> x, tl::ptr<float> out, tl::ptr<int32_t> iout, int M, int N) {
    auto rm = tl::arange(0, M), rn = tl::arange(0, N);
    auto offs = rm(tl::_, tl::None) * N + rn(tl::None, tl::_);
    auto v = tl::load(x + offs);
    tl::store(out + offs, tl::cumsum(v, 1));
    tl::store(out + M * N + offs, tl::cumsum(v, 0, true));
    tl::store(out + 2 * M * N + offs,
              tl::associative_scan(v, 1, [](tl::tensor a, tl::tensor b) { return tl::maximum(a, b); }));
    tl::store(iout + rn, tl::cumsum(rn, 0));
  });
  compile(k, addr<float>(0), addr<float>(1), addr<int32_t>(2), 16, 32);
}

// The launcher reads a 32-bit recipe parameter as the kernel does (sign- or zero-extended, whatever
// the slot's upper half holds), and encodes a tensor map only for a tensor TMA can describe - the
// rule the kernel's guard repeats before it takes the TMA loop.
BOOST_AUTO_TEST_CASE(tensor_map_recipes) {
  const uint64_t args[3] = {0xdeadbeefffffffffull, 0xdeadbeefffffffffull, 0x123456789ull};
  BOOST_TEST(cuda::recipe_value(*cuda::parse_recipe_value("i0"), args) == -1);
  BOOST_TEST(cuda::recipe_value(*cuda::parse_recipe_value("u1"), args) == int64_t{0xffffffff});
  BOOST_TEST(cuda::recipe_value(*cuda::parse_recipe_value("p2"), args) == int64_t{0x123456789});
  BOOST_TEST(cuda::recipe_value(*cuda::parse_recipe_value("c-7"), args) == -7);
  for (const char* bad : {"x1", "p", "i-1", "c", "p1x", ""}) BOOST_TEST(!cuda::parse_recipe_value(bad), bad);
  // A whole recipe as the launcher reads it back from a cache entry (a kernel of 10 parameters).
  auto r = cuda::parse_tensor_map_recipe("p0 i3 i5 i6 c1 2 6 64 128", 10);
  BOOST_TEST_REQUIRE(r.has_value());
  BOOST_TEST((r->values[0].kind == 'p' && r->values[3].kind == 'i' && r->values[3].value == 6));
  BOOST_TEST((r->esize == 2 && r->dtype == 6 && r->box[0] == 64u && r->box[1] == 128u));
  for (const char* bad : {"p0 i3 i5 i10 c1 2 6 64 128",    // parameter 10 of 10
                          "p0 i3 i5 i6 c2 2 6 64 128",     // stride1 not 1
                          "p0 i3 i5 i6 i7 2 6 64 128",     // stride1 a parameter
                          "p0 i3 i5 i6 c1 0 6 64 128",     // no element size
                          "p0 i3 i5 i6 c1 2 6 64",         // a field missing
                          "p0 i3 i5 i6 c1 2 6 64 128 7",   // one too many
                          "p0 i3 x5 i6 c1 2 6 64 128", ""})
    BOOST_TEST(!cuda::parse_tensor_map_recipe(bad, 10), bad);
  BOOST_TEST(cuda::tensor_map_usable(4096, 4096, 4096, 2));
  BOOST_TEST(cuda::tensor_map_usable(int64_t{1} << 32, 1, 8, 2));
  BOOST_TEST(!cuda::tensor_map_usable(0, 4096, 4096, 2));                   // an empty dim
  BOOST_TEST(!cuda::tensor_map_usable(4096, 0, 4096, 2));
  BOOST_TEST(!cuda::tensor_map_usable((int64_t{1} << 32) + 1, 16, 16, 2));  // a dim past 2^32
  BOOST_TEST(!cuda::tensor_map_usable(4096, 4096, -4096, 2));               // rows upside down
  BOOST_TEST(!cuda::tensor_map_usable(4096, 4096, 4100, 2));                // rows not 16-byte aligned
  BOOST_TEST(!cuda::tensor_map_usable(16, 16, int64_t{1} << 39, 2));        // a row stride of 2^40 bytes
}

// A shape or stride the kernel computes from its parameters (tutorial 06's Z * H * N_CTX rows) is
// a recipe expression the launcher evaluates with the kernel's integer semantics: 32-bit products
// wrap as the kernel's do, conversions sign- or zero-extend as C's. A malformed expression, one
// nested too deep or naming a parameter the kernel does not have is refused (the cache entry
// holding it is then recompiled, never trusted).
BOOST_AUTO_TEST_CASE(tensor_map_recipe_expressions) {
  // Parameters: Z = 4, H = 32 (upper halves of the slots hold garbage), N_CTX = 4095, big = 2^31 - 1.
  const uint64_t args[5] = {0xdeadbeef00000004ull, 0xdeadbeef00000020ull, 0xabcdef0000000fffull, 0x7fffffffull,
                            0xffffffff00000000ull | 0xfffffff0ull};
  auto eval = [&](const std::string& t) {
    std::optional<cuda::RecipeValue> v = cuda::parse_recipe_value(t);
    BOOST_TEST_REQUIRE(v.has_value(), t);
    BOOST_TEST(cuda::recipe_string(*v) == t);  // the token back, as the kernel source names it
    return cuda::recipe_value(*v, args);
  };
  BOOST_TEST(eval("mul.i32(mul.i32(i0,i1),i2)") == int64_t{4} * 32 * 4095);
  BOOST_TEST(eval("sub.i64(cvt.i64(i2),c-5)") == 4100);
  BOOST_TEST(eval("add.i32(i3,c1)") == INT32_MIN);                          // wraps as the kernel's i32 add
  BOOST_TEST(eval("cvt.i64(add.u32(u3,c1))") == int64_t{1} << 31);          // u32: zero-extended
  BOOST_TEST(eval("mul.i32(i3,c2)") == -2);
  BOOST_TEST(eval("cvt.u32(c-1)") == int64_t{0xffffffff});
  BOOST_TEST(eval("cvt.i32(p4)") == -16);                                   // truncated, sign-extended
  BOOST_TEST(eval("mul.u64(p0,c2)") == static_cast<int64_t>(0xbd5b7dde00000008ull));  // 64-bit wrap
  // A whole recipe with expression fields, and its evaluation as the launcher keys its maps.
  auto r = cuda::parse_tensor_map_recipe("p4 mul.i32(mul.i32(i0,i1),i2) c64 c64 c1 2 6 64 128", 5);
  BOOST_TEST_REQUIRE(r.has_value());
  BOOST_TEST(r->values[1].expr());
  BOOST_TEST(cuda::recipe_value(r->values[1], args) == 524160);
  std::string deep = "i0";
  for (int i = 0; i < cuda::kMaxRecipeDepth; ++i) deep = "cvt.i64(" + deep + ")";
  BOOST_TEST(cuda::parse_recipe_value(deep).has_value());                   // at the limit
  for (const std::string& bad : {std::string("mul.i32(i0)"),                // an operand missing
                                 std::string("cvt.i64(i0,i1)"),             // one too many
                                 std::string("mul.i16(i0,i1)"),             // no such type
                                 std::string("div.i32(i0,i1)"),             // no such op
                                 std::string("mul.i32(i0,i1"), std::string("mul.i32(i0,i1))"),
                                 std::string("mul.i32(i0, i1)"),            // a space (recipes split on them)
                                 std::string("mul.i32(i-1,i1)"), std::string("mul.i32(,i1)"),
                                 std::string("mul.i32"), std::string("mul.i32()"), std::string("mul(i0,i1)"),
                                 std::string("p99999999999999999999"),      // out of range
                                 "cvt.i64(" + deep + ")",                    // nested too deep
                                 std::string(600, 'c')})
    BOOST_TEST(!cuda::parse_recipe_value(bad), bad);
  for (const char* bad : {"p4 mul.i32(i0,i5) c64 c64 c1 2 6 64 128",       // parameter 5 of 5, inside
                          "p4 mul.i32(i0,i1 c64 c64 c1 2 6 64 128",        // unclosed
                          "p4 c64 c64 c64 add.i64(c0,c1) 2 6 64 128"})     // stride1 an expression
    BOOST_TEST(!cuda::parse_tensor_map_recipe(bad, 5), bad);
}

// TRITIUM_CUDA_CODEGEN picks the generator: unset, a dot-free kernel goes through the element-loop
// generator and a kernel with a dot through layouts (the only generator that lowers dots);
// "layouts" sends both through layouts. "legacy" (the matmul-loop matcher, removed at stop 41) and
// unknown values are errors that name the variable, not silently the default: a benchmark script
// still setting it would otherwise measure something else than it says.
BOOST_AUTO_TEST_CASE(codegen_mode_picks_the_generator_and_refuses_legacy) {
  auto add = tritium::kernel("mode_add", [](tl::ptr<float> x, tl::ptr<float> y, tl::i32 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    tl::store(y + offs, tl::load(x + offs, offs < n) * 2.0f, offs < n);
  });
  auto mm = tritium::kernel("mode_dot", [](tl::ptr<f16_t> a, tl::ptr<f16_t> b, tl::ptr<float> c, int B) {
    auto r = tl::arange(0, B);
    auto at = r(tl::_, tl::None) * B + r(tl::None, tl::_);
    tl::store(c + at, tl::dot(tl::load(a + at), tl::load(b + at)));
  });
  auto generate = [](tritium::Kernel& k, auto... args) {
    auto f = k.optimized_function(args...);
    return cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), tritium::jit::CompileOptions{});
  };
  auto element_loop = [&] { return generate(add, addr<float>(0), addr<float>(1), 1000, 256); };
  auto with_dot = [&] { return generate(mm, addr<f16_t>(0), addr<f16_t>(1), addr<float>(2), 32); };
  const std::string layouts_mark = "lowered through layouts", element_mark = "bytes of scratch per program";
  {
    tt::ScopedEnv env("TRITIUM_CUDA_CODEGEN", nullptr);
    BOOST_TEST(element_loop().source.find(element_mark) != std::string::npos);
    BOOST_TEST(with_dot().source.find(layouts_mark) != std::string::npos);
  }
  {
    tt::ScopedEnv env("TRITIUM_CUDA_CODEGEN", " Layouts ");  // trimmed, any case
    BOOST_TEST(element_loop().source.find(layouts_mark) != std::string::npos);
    BOOST_TEST(with_dot().source.find(layouts_mark) != std::string::npos);
  }
  {
    tt::ScopedEnv env("TRITIUM_CUDA_CODEGEN", "legacy");
    tt::check_throws([&] { element_loop(); }, {"TRITIUM_CUDA_CODEGEN=legacy", "matcher was removed", "layouts"}, "legacy");
    tt::check_throws([&] { with_dot(); }, {"TRITIUM_CUDA_CODEGEN=legacy"}, "legacy, a dot");
  }
  {
    tt::ScopedEnv env("TRITIUM_CUDA_CODEGEN", "elements");
    tt::check_throws([&] { element_loop(); }, {"TRITIUM_CUDA_CODEGEN=elements", "unknown value", "'layouts'"}, "unknown");
  }
}

// fp8 conversions both ways compile for sm_90a (cvt.rn.satfinite there; the GPU checks the bits in test_fp8).
BOOST_AUTO_TEST_CASE(fp8_conversions) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("fp8_casts", [](tl::ptr<float> x, tl::ptr<tritium::f8e4m3_t> e4, tl::ptr<tritium::f8e5m2_t> e5,
                                           tl::ptr<float> back, int BLOCK) {
    auto offs = tl::arange(0, BLOCK);
    auto v = tl::load(x + offs);
    tl::store(e4 + offs, v.to(tl::float8e4nv));
    tl::store(e5 + offs, v.to(tl::float8e5));
    tl::store(back + offs, tl::load(e4 + offs).to(tl::float32) + tl::load(e5 + offs).to(tl::float32));
  });
  auto src = compile(k, addr<float>(0), addr<tritium::f8e4m3_t>(1), addr<tritium::f8e5m2_t>(2), addr<float>(3), 256).source;
  BOOST_TEST(src.find("tt_f8e4m3_from(") != std::string::npos);
  BOOST_TEST(src.find("tt_f8e5m2_from(") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(atomics) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("atomics", [](tl::ptr<float> f, tl::ptr<int32_t> i, tl::ptr<int64_t> l, tl::ptr<f16_t> h,
                                         tl::ptr<bf16_t> bh, tl::ptr<uint8_t> u8, tl::ptr<double> d, tl::ptr<int32_t> olds,
                                         tl::i32 n, int BLOCK) {
    (void)u8;  // the DSL has no 8-bit atomics
    auto pid = tl::program_id(0);
    auto offs = pid * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto fv = tl::load(f + offs, mask, 0.0f);
    tl::atomic_add(f + BLOCK + offs, fv, mask);
    tl::atomic_max(f + 2 * BLOCK + offs, fv, mask);
    tl::atomic_min(f + 3 * BLOCK + offs, fv);
    tl::store(olds + offs, tl::atomic_add(i + offs, 1, mask), mask);
    tl::atomic_max(i + BLOCK + offs, offs);
    tl::atomic_min(i + 2 * BLOCK + offs, offs);
    tl::atomic_and(i + 3 * BLOCK + offs, offs);
    tl::atomic_or(i + 4 * BLOCK + offs, offs);
    tl::atomic_xor(i + 5 * BLOCK + offs, offs);
    tl::atomic_xchg(i + 6 * BLOCK + offs, offs);
    tl::atomic_cas(i + 7 * BLOCK + offs, offs, offs + 1);
    auto lo = offs.to(tl::int64);
    tl::atomic_add(l + offs, lo);
    tl::atomic_max(l + BLOCK + offs, lo);
    tl::atomic_xor(l + 2 * BLOCK + offs, lo);
    tl::atomic_cas(l + 3 * BLOCK + offs, lo, lo * 1000000007ll);
    tl::atomic_xchg(f + 4 * BLOCK + offs, fv);
    tl::atomic_cas(f + 5 * BLOCK + offs, fv, fv * -0.25f);
    tl::atomic_add(h + offs, fv.to(tl::float16), mask);
    tl::atomic_max(h + BLOCK + offs, fv.to(tl::float16), mask);
    tl::atomic_add(bh + offs, fv.to(tl::bfloat16), mask);
    tl::atomic_add(d + offs, fv.to(tl::float64), mask);
    tl::atomic_max(d + BLOCK + offs, fv.to(tl::float64), mask);
    // Scalar atomics: one thread, the old value broadcast to the others.
    auto ticket = tl::atomic_add(i + 8 * BLOCK, 1);
    tl::store(olds + n + pid, ticket);
    tl::atomic_max(f + 6 * BLOCK, tl::sum(fv, 0), pid % 2 == 1);
    tl::atomic_cas(l + 4 * BLOCK, ticket.to(tl::int64), ticket.to(tl::int64) + 1);
  });
  compile(k, addr<float>(0), addr<int32_t>(1), addr<int64_t>(2), addr<f16_t>(3), addr<bf16_t>(4), addr<uint8_t>(5),
          addr<double>(6), addr<int32_t>(7), 1000, 128);
}

BOOST_AUTO_TEST_CASE(loops_with_carried_blocks_and_if) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("loops", [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::i32 steps, int BLOCK) {
    auto pid = tl::program_id(0);
    auto offs = tl::arange(0, BLOCK);
    auto acc = tl::zeros({BLOCK}, tl::float32);
    auto other = tl::full({BLOCK}, 1.0f, tl::float32);
    auto count = tl::full({}, 0, tl::int32);
    for (auto i : tl::range(0, n, BLOCK)) {
      auto v = tl::load(x + i + offs, i + offs < n, 0.0f);
      acc = acc + v;
      auto swap = acc;  // carried blocks swapped: needs temporaries
      acc = other;
      other = swap;
      count = count + 1;
    }
    for (auto s : tl::range(0, steps)) {
      acc = tl::where(offs == s, acc * 2.0f, acc);  // updated in place
    }
    tl::if_(pid == 0, [&] { acc = acc + 1.0f; count = count * 2; }, [&] { acc = tl::exp(acc); });
    tl::device_assert(count >= 0, "count went negative");
    tl::device_assert(acc == acc, "acc has a NaN");
    tl::store(out + pid * BLOCK + offs, acc + other + count.to(tl::float32));
  });
  auto ks = compile(k, addr<float>(0), addr<float>(1), 1000, 7, 256);
  BOOST_TEST(ks.num_asserts == 2);
}

BOOST_AUTO_TEST_CASE(while_loops) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("spin", [](tl::ptr<int32_t> lock, tl::ptr<float> x, tl::i32 n, int BLOCK) {
    auto offs = tl::arange(0, BLOCK);
    auto v = tl::load(x + offs, offs < n) * 2.0f;  // live across the loop, in registers
    auto tries = tl::full({}, 0, tl::int32);
    tl::while_([&] { return tl::atomic_cas(lock, 0, 1) == 1; }, [&] { tries += 1; });
    tl::store(x + offs, v + tl::load(x + offs, offs < n) + tries.to(tl::float32), offs < n);
    tl::atomic_xchg(lock, 0);
  });
  auto ks = compile(k, addr<int32_t>(0), addr<float>(1), 1000, 1024);
  BOOST_TEST(kernel_body(ks).find("while (true)") != std::string::npos);  // the header has loops too
  BOOST_TEST(kernel_body(ks).find("break;") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(device_print) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("printer", [](tl::ptr<int32_t> x, tl::ptr<float> y, tl::ptr<f16_t> h, int BLOCK) {
    auto pid = tl::program_id(0);
    auto offs = pid * BLOCK + tl::arange(0, BLOCK);
    tl::device_print("x \"quoted\" %d", tl::load(x + offs));
    tl::device_print("pid", pid);
    tl::device_print("pair", {tl::load(y + offs), offs});
    tl::device_print("half", tl::load(h + offs));
    tl::device_print("flags", offs < 2);
  });
  compile(k, addr<int32_t>(0), addr<float>(1), addr<f16_t>(2), 4);
}

BOOST_AUTO_TEST_CASE(half_precision_math) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("halves", [](tl::ptr<f16_t> h, tl::ptr<bf16_t> b, tl::ptr<f16_t> ho, tl::ptr<bf16_t> bo,
                                        tl::ptr<float> fo, tl::ptr<int8_t> io, tl::i32 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto hv = tl::load(h + offs, mask);
    auto bv = tl::load(b + offs, mask);
    tl::store(ho + offs, tl::exp(hv) * hv + tl::sqrt(tl::abs(hv)), mask);
    tl::store(bo + offs, tl::maximum(bv, hv.to(tl::bfloat16)) / (bv + 2.0f) - tl::sigmoid(bv), mask);
    tl::store(fo + offs, hv.to(tl::float32) + bv.to(tl::float32) + tl::erf(hv).to(tl::float32) + tl::tanh(bv).to(tl::float32), mask);
    tl::store(io + offs, (hv * 100.0f).to(tl::int8), mask);
    tl::store(ho + n + offs, hv.to(tl::int16, true).to(tl::float16, true), mask);  // bitcasts
    tl::store(fo + n + offs, tl::where(hv > bv.to(tl::float16), tl::log(hv.to(tl::float32)), tl::floor(bv.to(tl::float32))), mask);
  });
  auto ks = compile(k, addr<f16_t>(0), addr<bf16_t>(1), addr<f16_t>(2), addr<bf16_t>(3), addr<float>(4), addr<int8_t>(5),
                    1000, 256);
  BOOST_TEST(ks.source.find("cuda_fp16") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(integer_arithmetic) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("ints", [](tl::ptr<int32_t> x, tl::ptr<uint32_t> u, tl::ptr<int64_t> l, tl::ptr<int8_t> c, int BLOCK) {
    auto offs = tl::arange(0, BLOCK);
    auto xv = tl::load(x + offs), uv = tl::load(u + offs);
    auto lv = tl::load(l + offs);
    auto cv = tl::load(c + offs);
    tl::store(x + offs, xv / (xv % 7) + (xv << 3) - (xv >> 2) + tl::umulhi(xv, xv) + (xv ^ 5) + tl::abs(xv));
    tl::store(u + offs, uv / 3u + (uv >> 31) + tl::minimum(uv, 7u) + (~uv));
    tl::store(l + offs, lv * lv - lv / 3 + tl::maximum(lv, (int64_t)-5) + (lv << 40));
    tl::store(c + offs, cv * cv + (cv & 3) + cv.to(tl::float32).to(tl::int8));
    tl::store(x + BLOCK + offs, (xv.to(tl::float64) * 0.5).to(tl::int32));
  });
  compile(k, addr<int32_t>(0), addr<uint32_t>(1), addr<int64_t>(2), addr<int8_t>(3), 128);
}

BOOST_AUTO_TEST_CASE(large_blocks_use_the_global_scratch) {
  if (!nvrtc_or_skip()) return;
  auto k = tritium::kernel("big", [](tl::ptr<float> x, tl::ptr<float> out, int M, int N) {
    auto rm = tl::arange(0, M), rn = tl::arange(0, N);
    auto offs = rm(tl::_, tl::None) * N + rn(tl::None, tl::_);
    auto v = tl::load(x + offs);
    auto e = tl::exp(v - tl::max(v, 1, true));
    tl::store(out + offs, e / tl::sum(e, 1, true));
  });
  auto ks = compile(k, addr<float>(0), addr<float>(1), 256, 256);
  BOOST_TEST(ks.scratch_bytes > 0);
  BOOST_TEST(ks.smem_bytes <= cuda::kSharedMemoryBudget + 4096);
}

BOOST_AUTO_TEST_CASE(bad_nvrtc_options_are_named) {
  if (!nvrtc_or_skip()) return;
  try {
    cuda::compile_to_cubin("extern \"C\" __global__ void k() {}", "k", "sm_90a", {"--no-such-option"});
    BOOST_ERROR("NVRTC accepted an unknown option");
  } catch (const tritium::Error& e) {
    std::string m = e.what();
    BOOST_TEST(m.find("kernel k") != std::string::npos, m);
    BOOST_TEST(m.find("--no-such-option") != std::string::npos, m);
  }
}

BOOST_AUTO_TEST_CASE(short_straight_line_kernels_compile_fast) {
  auto add = tritium::kernel("fast_add", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    tl::store(out + offs, tl::load(x + offs, offs < n) + tl::load(y + offs, offs < n), offs < n);
  });
  auto softmax = tritium::kernel("fast_softmax", [](tl::ptr<float> x, tl::ptr<float> out, int B) {
    auto v = tl::load(x + tl::arange(0, B));
    tl::store(out + tl::arange(0, B), v / tl::sum(v, 0));
  });
  auto loop = tritium::kernel("fast_loop", [](tl::ptr<float> x, tl::i32 n, int B) {
    for (auto i : tl::range(0, n, B)) tl::store(x + i + tl::arange(0, B), tl::zeros({B}, tl::float32));
  });
  auto dropout = tritium::kernel("fast_dropout", [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 seed, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    tl::store(out + offs, tl::where(tl::rand(seed, offs) > 0.5f, tl::load(x + offs) * 2.0f, 0.0f));
  });
  BOOST_TEST(cuda::compiles_fast(*add.optimized_function(addr<float>(0), addr<float>(1), addr<float>(2), 1000, 1024)));
  BOOST_TEST(!cuda::compiles_fast(*softmax.optimized_function(addr<float>(0), addr<float>(1), 1024)));  // a reduction
  BOOST_TEST(!cuda::compiles_fast(*loop.optimized_function(addr<float>(0), 4096, 1024)));              // a loop
  // Philox's ten rounds: long arithmetic, where the fast level's weaker optimisation costs speed.
  BOOST_TEST(!cuda::compiles_fast(*dropout.optimized_function(addr<float>(0), addr<float>(1), 7, 1024)));
  if (!nvrtc_or_skip()) return;
  auto f = add.optimized_function(addr<float>(0), addr<float>(1), addr<float>(2), 1000, 1024);
  cuda::KernelSource ks = cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), tritium::jit::CompileOptions{});
  BOOST_TEST(!cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a", {cuda::kFastCompileOption}).empty());
}

BOOST_AUTO_TEST_CASE(fast_compile_can_be_turned_off) {
  {
    tt::ScopedEnv off("TRITIUM_FAST_COMPILE", "off");
    BOOST_TEST(!tritium::env().fast_compile);
  }
  tt::ScopedEnv unset("TRITIUM_FAST_COMPILE", nullptr);
  BOOST_TEST(tritium::env().fast_compile);
}

// ---- straight-line kernels as PTX (jit/cuda/ptx_codegen.h) ----------------------------------------

namespace {

bool nvjitlink_or_skip() {
  if (cuda::nvjitlink_available()) return true;
  BOOST_TEST_MESSAGE("skipped: nvJitLink is unavailable: " << cuda::nvjitlink_unavailable_reason());
  return false;
}

template <class... A>
std::optional<cuda::KernelSource> ptx_of(tritium::Kernel& k, const std::string& arch, std::string* declined,
                                         const A&... args) {
  auto f = k.optimized_function(args...);
  return cuda::generate_ptx(*f, tritium::jit::analyze_axis_info(*f), tritium::jit::CompileOptions{}, arch, declined);
}

// Every operation and type the PTX generator covers, in one kernel: it must take all of it and
// ptxas must accept the result.
tritium::Kernel ptx_everything_kernel() {
  return tritium::kernel("ptx_everything", [](tl::ptr<float> xf, tl::ptr<f16_t> xh, tl::ptr<bf16_t> xb,
                                              tl::ptr<int32_t> xi, tl::ptr<int64_t> xl, tl::ptr<uint32_t> xu,
                                              tl::ptr<float> of, tl::ptr<f16_t> oh, tl::ptr<bf16_t> ob,
                                              tl::ptr<int32_t> oi, tl::ptr<int64_t> ol, tl::ptr<uint32_t> ou,
                                              tl::i32 n, tl::i64 big, tl::f32 scale, bool flag, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    auto m = offs < n;
    auto f = tl::load(xf + offs, m, 0.5f);
    auto h = tl::load(xh + offs, m).to(tl::float32);
    auto b = tl::load(xb + offs, m, 2.0f).to(tl::float32);
    auto i = tl::load(xi + offs, m, -1);
    auto l = tl::load(xl + offs * 2, m);  // strided: lane by lane
    auto u = tl::load(xu + offs, m);
    auto g = tl::load(xf + tl::num_programs(0));  // a scalar load
    auto fr = tl::fma(f, h, b) / scale - tl::exp(f) + tl::sqrt(tl::abs(h)) * tl::rsqrt(b * b + 1.0f);
    fr = tl::maximum(tl::minimum(fr, tl::floor(f * 8.0f)), -tl::ceil(h)) + g;
    auto ir = (i / (i % 5)) + (i << 3) - (i >> 2) * i + tl::abs(i) + tl::maximum(i, -7) - ((i & 12) ^ (~i | 3));
    auto lr = l / (l - 9) + (l % 7) + (l << 40) + (l >> 63) + big + offs.to(tl::int64) + tl::minimum(l, big);
    auto ur = tl::umulhi(u, u + 1u) + u / 3u + (u >> 31) + (u % 11u) + (f > 0.0f).to(tl::uint32);
    auto cond = ((f != h) & ((i < 0) | (u >= 5u))) ^ flag;
    tl::store(of + offs, tl::where(cond, fr, ir.to(tl::float32) + lr.to(tl::float32)), m);
    tl::store(oh + offs, tl::where(cond, fr.to(tl::float16), b.to(tl::float16)), m);
    tl::store(ob + offs, (fr + ur.to(tl::float32)).to(tl::bfloat16), m);
    tl::store(oi + offs, fr.to(tl::int32) + lr.to(tl::int32) + cond.to(tl::int32), m);
    tl::store(ol + offs, tl::where(m, lr, (fr.to(tl::int64))), m);
    tl::store(ou + offs, ur + tl::cast(f, tl::uint32, /*bitcast=*/true), m);
    tl::store(of + n, g * 2.0f);  // a scalar store: one thread
  });
}

}  // namespace

BOOST_AUTO_TEST_CASE(straight_line_kernels_become_ptx) {
  auto add = tritium::kernel("ptx_add", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    tl::store(out + offs, tl::load(x + offs, offs < n) + tl::load(y + offs, offs < n), offs < n);
  });
  std::string declined;
  auto ks = ptx_of(add, "sm_90a", &declined, addr<float>(0), addr<float>(1), addr<float>(2), 1000, 1024);
  BOOST_TEST_REQUIRE(ks.has_value(), declined);
  BOOST_TEST(ks->entry == "ptx_add");
  BOOST_TEST(ks->num_threads == 128);
  BOOST_TEST(ks->smem_bytes == 0);
  // 1024 elements, 128 threads: two 16-byte accesses per thread and operand, under the mask.
  BOOST_TEST(ks->source.find(".target sm_90a") != std::string::npos, ks->source);
  size_t loads = 0, stores = 0;
  for (size_t at = 0; (at = ks->source.find("ld.global.v4.b32", at)) != std::string::npos; ++at) ++loads;
  for (size_t at = 0; (at = ks->source.find("st.global.v4.b32", at)) != std::string::npos; ++at) ++stores;
  BOOST_TEST(loads == 4u, ks->source);
  BOOST_TEST(stores == 2u, ks->source);
  BOOST_TEST(ks->source.find("@%p") != std::string::npos);
  if (!nvjitlink_or_skip()) return;
  BOOST_TEST(!cuda::ptx_to_cubin(ks->source, ks->entry, "sm_90a").empty());
}

BOOST_AUTO_TEST_CASE(every_op_of_the_ptx_subset_assembles) {
  auto k = ptx_everything_kernel();
  for (const char* arch : {"sm_90a", "sm_80"}) {
    BOOST_TEST_CONTEXT(arch) {
      std::string declined;
      auto ks = ptx_of(k, arch, &declined, addr<float>(0), addr<f16_t>(1), addr<bf16_t>(2), addr<int32_t>(3),
                       addr<int64_t>(4), addr<uint32_t>(5), addr<float>(6), addr<f16_t>(7), addr<bf16_t>(8),
                       addr<int32_t>(9), addr<int64_t>(10), addr<uint32_t>(11), 1000, int64_t{1} << 40, 0.5f, true,
                       512);
      BOOST_TEST_REQUIRE(ks.has_value(), declined);
      if (!nvjitlink_or_skip()) return;
      try {
        BOOST_TEST(!cuda::ptx_to_cubin(ks->source, ks->entry, arch).empty());
      } catch (const tritium::Error& e) {
        BOOST_ERROR(e.what());
      }
    }
  }
}

// ---- memory-bound kernels against Triton's code (docs/cuda-backend.md, 2026-11-26) ----------------

namespace {


using tritium::jit::cuda::cubin_instructions;  // jit/cuda/cubin_stats.h
using tritium::jit::cuda::cubin_registers;

// What the CUDA backend builds for a kernel on an H100/H200 (CudaBackend::generate without a
// device): the PTX generator's code through nvJitLink when it takes the kernel, else NVRTC's,
// at the fast level for the short kernels compiles_fast() accepts.
struct BackendBuild {
  bool ptx = false;
  std::string source;
  std::vector<char> cubin;
};
template <class... A> BackendBuild backend_build(tritium::Kernel& k, int num_warps, const A&... args) {
  auto f = k.optimized_function(args...);
  tritium::jit::AxisInfoMap axis = tritium::jit::analyze_axis_info(*f);
  tritium::jit::CompileOptions opts;
  opts.num_warps = num_warps;
  BackendBuild b;
  if (auto ks = cuda::generate_ptx(*f, axis, opts, "sm_90a")) {
    b.ptx = true, b.source = ks->source, b.cubin = cuda::ptx_to_cubin(ks->source, ks->entry, "sm_90a");
    return b;
  }
  cuda::KernelSource ks = cuda::generate_cuda(*f, axis, opts, tt::kH100SharedMemory);
  std::vector<std::string> options;
  if (cuda::compiles_fast(*f)) options.push_back(cuda::kFastCompileOption);
  b.source = kernel_body(ks), b.cubin = cuda::compile_to_cubin(ks.source, ks.entry, "sm_90a", options);
  return b;
}

using tt::occurrences;

}  // namespace

// Liger's swiglu forward at its benchmark settings (bf16 rows of 14336, a 16384 block over 16
// warps, rows 16-byte aligned): 128-bit loads and stores, and few enough registers for 3 blocks of
// 512 threads an SM, as Triton's build of the original (36 registers). With sigmoid as expf and an
// IEEE division the kernel took 65 registers (one block an SM: a quarter of the warps) and 2.5
// times Triton's instructions.
BOOST_AUTO_TEST_CASE(swiglu_row_keeps_triton_occupancy) {
  if (!nvrtc_or_skip() || !nvjitlink_or_skip()) return;
  using P = tl::ptr<tl::any>;
  auto swiglu = tritium::kernel(
      "liger_swiglu_fwd", [](P a, P b, P c, tl::i32 stride, tl::f32 gate, int n_cols, int BLOCK) {
        auto row = tl::program_id(0).to(tl::int64);
        a += row * stride, b += row * stride, c += row * stride;
        auto cols = tl::arange(0, BLOCK);
        auto mask = cols < n_cols;
        auto x = tl::load(a + cols, mask, 0).to(tl::float32) * gate;
        auto y = tl::load(b + cols, mask, 0);
        tl::store(c + cols, (x * tl::sigmoid(x)).to(y.dtype()) * y, mask);
      });
  BackendBuild built = backend_build(swiglu, 16, addr<bf16_t>(0), addr<bf16_t>(1), addr<bf16_t>(2), 14336, 1.0f, 14336, 16384);
  const int regs = cubin_registers(built.cubin);
  BOOST_TEST(regs > 0);
  BOOST_TEST(regs <= 40, "registers: " << regs << (built.ptx ? " (PTX generator)" : " (NVRTC)"));
  // 32 elements a thread: 4 16-byte accesses per operand.
  if (built.ptx) {
    BOOST_TEST(occurrences(built.source, "ld.global.v4.b32") == 8u, built.source);
    BOOST_TEST(occurrences(built.source, "st.global.v4.b32") == 4u, built.source);
  } else {
    BOOST_TEST(occurrences(built.source, "tt_ld_pred<16>") == 2u, built.source);  // in a loop of 4
    BOOST_TEST(occurrences(built.source, "tt_st_pred<16>") == 1u, built.source);
  }
}

// Liger's swiglu backward (bf16 rows of 14336, a 16384 block over 16 warps): two stores (da over
// a, db over b) share dc, a * gate and sigmoid(a * gate). Each store in its own loop nest kept
// those three as 32-register f32 arrays across both nests: 102 registers, one block of 512
// threads an SM where Triton's build (64) fits two. The stores run in one loop nest now, each
// shared value a scalar of the element, and the kernel (32 elements a thread) compiles at NVRTC's
// default level.
BOOST_AUTO_TEST_CASE(stores_sharing_values_run_in_one_loop) {
  if (!nvrtc_or_skip() || !nvjitlink_or_skip()) return;
  using P = tl::ptr<tl::any>;
  auto bwd = tritium::kernel(
      "liger_swiglu_bwd", [](P dc, P a, P b, tl::i32 stride, tl::f32 gate, int n_cols, int BLOCK) {
        auto row = tl::program_id(0).to(tl::int64);
        dc += row * stride, a += row * stride, b += row * stride;
        auto cols = tl::arange(0, BLOCK);
        auto mask = cols < n_cols;
        auto dc_row = tl::load(dc + cols, mask, 0);
        auto a_row = tl::load(a + cols, mask, 0).to(tl::float32) * gate;
        auto b_row = tl::load(b + cols, mask, 0);
        auto sig_a = tl::sigmoid(a_row);
        auto silu_a = a_row * sig_a;
        auto db_row = dc_row * silu_a;
        auto da_row = dc_row * (silu_a * (1 - sig_a) + sig_a) * b_row * gate;
        tl::store(a + cols, da_row, mask);
        tl::store(b + cols, db_row, mask);
      });
  BackendBuild built = backend_build(bwd, 16, addr<bf16_t>(0), addr<bf16_t>(1), addr<bf16_t>(2), 14336, 1.0f, 14336, 16384);
  const int regs = cubin_registers(built.cubin);
  BOOST_TEST(regs > 0);
  BOOST_TEST(regs <= 64, "registers: " << regs << (built.ptx ? " (PTX generator)" : " (NVRTC)") << "\n" << built.source);
  // One loop nest: each row loaded once (16 bytes a chunk), both stores after the chunk's values.
  BOOST_TEST(tt::occurrences(built.source, "tt_ld_pred<16>(") == 3u, built.source);
  BOOST_TEST(tt::occurrences(built.source, "tt_st_pred<16>(") == 2u, built.source);
  // A bf16 row and f32 rows in one group: 4 lanes a chunk (the f32 row's 16 bytes), every row
  // loaded once and stored as one vector a chunk, sigmoid computed once.
  auto mixed = tritium::kernel("mixed_group", [](tl::ptr<bf16_t> A, tl::ptr<float> B, tl::ptr<float> C, tl::i32 n, int BLK) {
    auto offs = tl::program_id(0) * BLK + tl::arange(0, BLK);
    auto a = tl::load(A + offs).to(tl::float32);
    auto b = tl::load(B + offs);
    auto s = tl::sigmoid(a * b);
    tl::store(A + offs, (a * s).to(tl::bfloat16));
    tl::store(B + offs, b * s + a);
    tl::store(C + offs, s);
  });
  auto ks = compile(mixed, 4, addr<bf16_t>(0), addr<float>(1), addr<float>(2), 4096, 1024);
  const std::string body = kernel_body(ks);
  BOOST_TEST(tt::occurrences(body, "tt_sigmoid(") == 1u, body);
  BOOST_TEST(tt::occurrences(body, "reinterpret_cast<uint4*>") == 3u, body);  // B loaded; B and C stored
  BOOST_TEST(tt::occurrences(body, "reinterpret_cast<uint2*>") == 2u, body);  // A loaded and stored
}

// A f32 weight beside a bf16 row (Liger's rms_norm forward: bf16 X, f32 W, 4096 columns, 8 warps):
// the row sets 8 lanes a chunk (16 bytes of bf16), and the weight's 8 lanes (32 bytes) were
// loaded one by one - 16 LDG.E.32 a thread where Triton has 4 LDG.128. They move as two 16-byte
// accesses now, masked (the mask is constant over each) or not.
BOOST_AUTO_TEST_CASE(wider_loads_beside_a_narrow_row_stay_vectors) {
  if (!nvrtc_or_skip()) return;
  auto scale = tritium::kernel("bf16_row_f32_weight", [](tl::ptr<bf16_t> y, tl::ptr<bf16_t> x, tl::ptr<float> w,
                                                           tl::i32 n_cols, int BLOCK, bool masked) {
    auto row = tl::program_id(0).to(tl::int64);
    auto cols = tl::arange(0, BLOCK);
    auto mask = cols < n_cols;
    auto xr = masked ? tl::load(x + row * n_cols + cols, mask, 0.0f) : tl::load(x + row * n_cols + cols);
    auto wr = masked ? tl::load(w + cols, mask, 0.0f) : tl::load(w + cols);
    auto v = xr.to(tl::float32);
    auto r = tl::rsqrt(tl::sum(v * v, 0) / n_cols + 1e-6f);
    if (masked) tl::store(y + row * n_cols + cols, (v * r * wr).to(tl::bfloat16), mask);
    else tl::store(y + row * n_cols + cols, (v * r * wr).to(tl::bfloat16));
  });
  {
    auto ks = compile(scale, 8, addr<bf16_t>(0), addr<bf16_t>(1), addr<float>(2), 4096, 4096, true);
    const std::string body = kernel_body(ks);
    BOOST_TEST(occurrences(body, "tt_ld_pred<16>(") == 3u, body);  // x once, w twice, in the loop of 2 chunks
  }
  {
    auto ks = compile(scale, 8, addr<bf16_t>(0), addr<bf16_t>(1), addr<float>(2), 4096, 4096, false);
    const std::string body = kernel_body(ks);
    BOOST_TEST(occurrences(body, "reinterpret_cast<uint4*>") == 4u, body);  // x, w twice, the store of y
  }
  // And a f32 store of the row's shape: 4 lanes a thread (s49), so each store is 16 bytes a thread
  // and a warp's consecutive 512 bytes (8 lanes stored two 16-byte halves 32 bytes apart, each warp
  // store writing half of twice the lines); the bf16 row is read 8 bytes a thread.
  auto to_f32 = tritium::kernel("bf16_row_f32_out", [](tl::ptr<float> y, tl::ptr<bf16_t> x, tl::i32 n_cols, int BLOCK) {
    auto row = tl::program_id(0).to(tl::int64);
    auto cols = tl::arange(0, BLOCK);
    auto mask = cols < n_cols;
    auto v = tl::load(x + row * n_cols + cols, mask, 0.0f).to(tl::float32);
    tl::store(y + row * n_cols + cols, v * tl::rsqrt(tl::sum(v * v, 0) / n_cols + 1e-6f), mask);
  });
  auto ks = compile(to_f32, 8, addr<float>(0), addr<bf16_t>(1), 4096, 4096);
  const std::string body = kernel_body(ks);
  BOOST_TEST(occurrences(body, "tt_st_pred<16>(") == 1u, body);
  BOOST_TEST(occurrences(body, "tt_ld_pred<8>(") == 1u, body);
  BOOST_TEST(occurrences(body, "tt_ld_pred<16>(") == 0u, body);
}

// bf16 results are rounded by one cvt.rn.bf16.f32 (and the NaN fix-up) from sm_80 on, not by the
// 9-instruction integer rounding: on swiglu it was half of the PTX generator's instructions.
BOOST_AUTO_TEST_CASE(ptx_rounds_bf16_with_cvt) {
  auto k = tritium::kernel("ptx_bf16_round", [](tl::ptr<float> x, tl::ptr<bf16_t> out, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    tl::store(out + offs, tl::load(x + offs).to(tl::bfloat16));
  });
  for (const char* arch : {"sm_90a", "sm_80"}) {
    BOOST_TEST_CONTEXT(arch) {
      std::string declined;
      auto ks = ptx_of(k, arch, &declined, addr<float>(0), addr<bf16_t>(1), 1024);
      BOOST_TEST_REQUIRE(ks.has_value(), declined);
      BOOST_TEST(occurrences(ks->source, "cvt.rn.bf16.f32") == 8u, ks->source);  // 8 elements a thread
      BOOST_TEST(occurrences(ks->source, "setp.nan.f32") == 8u, ks->source);
      BOOST_TEST(occurrences(ks->source, "32767") == 0u, ks->source);
      if (nvjitlink_or_skip()) BOOST_TEST(!cuda::ptx_to_cubin(ks->source, ks->entry, arch).empty());
    }
  }
}

// NVRTC and nvJitLink are found by common/shared_library: without a usable candidate the reason
// names every path tried and why, and the environment variable that overrides them.
BOOST_AUTO_TEST_CASE(shared_library_loader_says_what_it_tried) {
  tt::ScopedEnv unset("TRITIUM_TEST_LIBRARY", nullptr);
  void* (*fn)(size_t) = nullptr;
  auto bind_missing = [&](void* h) { return tritium::bind_symbol(h, "tritium_no_such_entry_point", fn); };
  tritium::SharedLibrary none =
      tritium::open_shared_library("libexample", "TRITIUM_TEST_LIBRARY", {"/no/such/libexample.so", "libc.so.6"}, bind_missing);
  BOOST_TEST(none.handle == nullptr);
  BOOST_TEST(none.reason.find("libexample could not be opened (set TRITIUM_TEST_LIBRARY to its path)") != std::string::npos,
             none.reason);
  BOOST_TEST(none.reason.find("/no/such/libexample.so: ") != std::string::npos, none.reason);
  BOOST_TEST(none.reason.find("libc.so.6: missing libexample entry points") != std::string::npos, none.reason);

  auto bind_malloc = [&](void* h) { return tritium::bind_symbol(h, "malloc", fn); };
  tritium::SharedLibrary libc =
      tritium::open_shared_library("libc", "TRITIUM_TEST_LIBRARY", {"/no/such/libc.so", "libc.so.6"}, bind_malloc);
  BOOST_TEST(libc.handle != nullptr, libc.reason);
  BOOST_TEST(libc.path == "libc.so.6");
  BOOST_TEST(fn != nullptr);

  tt::ScopedEnv only("TRITIUM_TEST_LIBRARY", "/no/such/override.so");  // the override is the only path tried
  tritium::SharedLibrary overridden =
      tritium::open_shared_library("libc", "TRITIUM_TEST_LIBRARY", {"libc.so.6"}, bind_malloc);
  BOOST_TEST(overridden.handle == nullptr);
  BOOST_TEST(overridden.reason.find("/no/such/override.so") != std::string::npos, overridden.reason);
  BOOST_TEST(overridden.reason.find("libc.so.6") == std::string::npos, overridden.reason);
}

BOOST_AUTO_TEST_CASE(ptx_assembly_errors_show_the_log_and_the_ptx) {
  if (!nvjitlink_or_skip()) return;
  std::string ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry broken()\n{\n  no.such.op;\n}\n";
  // ptxas's complaint and the PTX itself
  tt::check_throws([&] { cuda::ptx_to_cubin(ptx, "broken", "sm_90a"); },
                   {"nvJitLink could not assemble kernel broken for sm_90a", "Not a name of any known instruction",
                    "generated PTX (broken.ptx)", "no.such.op;"},
                   "broken PTX");
}

// The op library's element-wise kernels take their scalars as f64 (most ops leave them unused):
// an unused f64 parameter is declared (8 bytes, so the launch's parameter layout holds) and the
// kernel stays on the PTX path; reading it declines (no f64 arithmetic here).
BOOST_AUTO_TEST_CASE(ptx_path_takes_unused_f64_parameters) {
  auto scale = [](bool use) {
    return tritium::kernel(use ? "ptx_f64_used" : "ptx_f64_unused",
                           [use](tl::ptr<float> x, tl::ptr<float> out, tl::i64 n, tl::f64 /*e0*/, tl::f64 e1, int B) {
                             auto offs = tl::program_id(0).to(tl::int64) * B + tl::arange(0, B);
                             auto v = tl::abs(tl::load(x + offs, offs < n));
                             tl::store(out + offs, use ? v * e1.to(tl::float32) : v, offs < n);
                           });
  };
  auto unused = scale(false), used = scale(true);
  std::string why;
  auto ks = ptx_of(unused, "sm_90a", &why, addr<float>(0), addr<float>(1), int64_t(1000), 0.5, 2.0, 4096);
  BOOST_TEST_REQUIRE(ks.has_value(), why);
  BOOST_TEST(ks->source.find(".param .b64 ptx_f64_unused_param_3") != std::string::npos, ks->source);
  BOOST_TEST(ks->source.find(".param .b64 ptx_f64_unused_param_4") != std::string::npos, ks->source);
  // 4096 elements on 128 threads: all 8 loads of a thread are issued before its stores.
  size_t loads = 0;
  for (size_t at = 0; (at = ks->source.find("ld.global.v4.b32", at)) != std::string::npos; ++at) ++loads;
  BOOST_TEST(loads == 8u, ks->source);
  if (nvjitlink_or_skip()) BOOST_TEST(!cuda::ptx_to_cubin(ks->source, ks->entry, "sm_90a").empty());
  why.clear();
  BOOST_TEST(!ptx_of(used, "sm_90a", &why, addr<float>(0), addr<float>(1), int64_t(1000), 0.5, 2.0, 4096).has_value());
  BOOST_TEST(why.find("f64") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(ptx_path_declines_what_it_does_not_cover) {
  auto softmax = tritium::kernel("ptx_softmax", [](tl::ptr<float> x, tl::ptr<float> out, int B) {
    auto v = tl::load(x + tl::arange(0, B));
    tl::store(out + tl::arange(0, B), v / tl::sum(v, 0));
  });
  auto outer = tritium::kernel("ptx_outer", [](tl::ptr<float> x, tl::ptr<float> out, int B) {
    auto r = tl::arange(0, B);
    auto v = tl::load(x + r);
    tl::store(out + r(tl::_, tl::None) * B + r(tl::None, tl::_), v(tl::_, tl::None) * v(tl::None, tl::_));
  });
  auto log = tritium::kernel("ptx_log", [](tl::ptr<float> x, int B) {
    tl::store(x + tl::arange(0, B), tl::log(tl::load(x + tl::arange(0, B))));
  });
  auto bytes = tritium::kernel("ptx_bytes", [](tl::ptr<int8_t> x, tl::ptr<float> out, int B) {
    tl::store(out + tl::arange(0, B), tl::load(x + tl::arange(0, B)).to(tl::float32));
  });
  auto reread = tritium::kernel("ptx_reread", [](tl::ptr<float> x, int B) {
    tl::store(x + tl::arange(0, B), 1.0f);
    tl::store(x + B + tl::arange(0, B), tl::load(x + B - 1 - tl::arange(0, B)));
  });
  auto small = tritium::kernel("ptx_small", [](tl::ptr<float> x, int B) { tl::store(x + tl::arange(0, B), 1.0f); });
  auto declined = [](auto&& ks, const std::string& why, const std::string& expected) {
    BOOST_TEST(!ks.has_value());
    BOOST_TEST(why.find(expected) != std::string::npos, why << " (expected: " << expected << ")");
  };
  std::string why;
  declined(ptx_of(softmax, "sm_90a", &why, addr<float>(0), addr<float>(1), 1024), why, "operation reduce");
  declined(ptx_of(outer, "sm_90a", &why, addr<float>(0), addr<float>(1), 32), why, "operation expand_dims");
  declined(ptx_of(log, "sm_90a", &why, addr<float>(0), 1024), why, "operation log");
  declined(ptx_of(bytes, "sm_90a", &why, addr<int8_t>(0), addr<float>(1), 1024), why, "i8");
  declined(ptx_of(reread, "sm_90a", &why, addr<float>(0), 1024), why, "a load after a store");
  declined(ptx_of(small, "sm_90a", &why, addr<float>(0), 64), why, "a block of 64 for 128 threads");
}

BOOST_AUTO_TEST_CASE(compile_errors_show_the_source) {
  if (!nvrtc_or_skip()) return;
  std::string src = "extern \"C\" __global__ void broken(float* x) {\n  x[0] = 1.0f;\n  this is not C++;\n}\n";
  tt::check_throws([&] { cuda::compile_to_cubin(src, "broken", "sm_90a"); },
                   {"NVRTC could not compile kernel broken", ">    3 |   this is not C++;"}, "broken CUDA C++");
}

// ---- on a GPU: run a few kernels through the whole backend (skipped without a CUDA device) ---------

namespace {

namespace cu = tritium::runtime::cuda;

bool gpu_or_skip() {
  if (tritium::runtime::device_available(tritium::Device::cuda(0))) return true;
  BOOST_TEST_MESSAGE("skipped: no CUDA device: " << tritium::runtime::device_unavailable_reason(tritium::Device::cuda(0)));
  return false;
}

tritium::Options on_gpu(int num_warps = 4) {
  tritium::Options o;
  o.device = tritium::Device::cuda(0);
  o.num_warps = num_warps;
  return o;
}

// Device memory holding a copy of a host vector; freed at scope exit.
template <class T> struct DeviceVec {
  cu::CUdeviceptr p = 0;
  size_t n = 0;
  explicit DeviceVec(const std::vector<T>& v) : n(v.size()) {
    p = cu::allocate(std::max<size_t>(1, n) * sizeof(T), 0);
    cu::copy_h2d(p, v.data(), n * sizeof(T), 0);
  }
  ~DeviceVec() { cu::free(p); }
  T* ptr() const { return reinterpret_cast<T*>(p); }
  std::vector<T> get() const {
    std::vector<T> v(n);
    cu::copy_d2h(v.data(), p, n * sizeof(T), 0);
    return v;
  }
};

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  return v;
}

double rel_error(const std::vector<float>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    double d = static_cast<double>(out[i]) - ref[i];
    if (!std::isfinite(static_cast<double>(out[i]))) return INFINITY;
    num += d * d, den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

}  // namespace

BOOST_AUTO_TEST_CASE(gpu_vector_add) {
  auto k = tritium::kernel("add", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    tl::store(out + offs, tl::load(x + offs, mask) + tl::load(y + offs, mask), mask);
  });
  if (!gpu_or_skip()) {  // still check that it compiles
    if (cuda::nvrtc_available()) compile(k, addr<float>(0), addr<float>(1), addr<float>(2), 100003, 1024);
    return;
  }
  const int n = 100003, BLOCK = 1024;
  auto x = random_floats(n, 1), y = random_floats(n, 2);
  DeviceVec<float> dx(x), dy(y), dout(std::vector<float>(n, NAN));
  k[{(n + BLOCK - 1) / BLOCK}](dx.ptr(), dy.ptr(), dout.ptr(), n, BLOCK, on_gpu());
  auto out = dout.get();
  size_t bad = 0;
  for (int i = 0; i < n; ++i) bad += out[i] != x[i] + y[i];
  BOOST_TEST(bad == 0u);
}

// The PTX generator against the CUDA C++ one: the same kernel, compiled each way (fast compiles on
// and off), on the same random inputs (n = 1000: masked tails, per-lane accesses). Integer
// results must be equal; float ones within rounding (the two compilers may contract a * b + c
// differently). The op-by-op references are test_elementwise's, which runs through both paths.
BOOST_AUTO_TEST_CASE(gpu_ptx_and_cuda_paths_agree) {
  if (!gpu_or_skip() || !nvjitlink_or_skip()) return;
  const int n = 1000, B = 512;
  {  // the PTX generator must take this kernel, or the comparison below would be of NVRTC with itself
    auto k = ptx_everything_kernel();
    std::string declined;
    BOOST_TEST_REQUIRE(ptx_of(k, "sm_90a", &declined, addr<float>(0), addr<f16_t>(1), addr<bf16_t>(2), addr<int32_t>(3),
                              addr<int64_t>(4), addr<uint32_t>(5), addr<float>(6), addr<f16_t>(7), addr<bf16_t>(8),
                              addr<int32_t>(9), addr<int64_t>(10), addr<uint32_t>(11), n, int64_t{1} << 40, 0.5f,
                              true, B)
                           .has_value(),
                       declined);
  }
  auto f = random_floats(n + 1, 11), fh = random_floats(n, 12), fb = random_floats(n, 13);
  std::vector<f16_t> h(n);
  std::vector<bf16_t> b(n);
  std::vector<int32_t> i(n);
  std::vector<int64_t> l(2 * n);
  std::vector<uint32_t> u(n);
  uint64_t st = 7;
  auto next = [&] { return st = st * 6364136223846793005ull + 1442695040888963407ull; };
  for (int k = 0; k < n; ++k) {
    h[k] = tt::to_f16(fh[k] * 4), b[k] = tt::to_bf16(fb[k] * 4);
    i[k] = static_cast<int32_t>(next() >> 32);
    u[k] = static_cast<uint32_t>(next() >> 32);
    l[2 * k] = static_cast<int64_t>(next()), l[2 * k + 1] = 0;
  }
  i[0] = 0, i[1] = -1, i[2] = INT32_MIN, l[0] = 9, l[2] = INT64_MIN, u[0] = 0, u[1] = UINT32_MAX;  // edge cases
  struct Out {
    std::vector<float> of;
    std::vector<f16_t> oh;
    std::vector<bf16_t> ob;
    std::vector<int32_t> oi;
    std::vector<int64_t> ol;
    std::vector<uint32_t> ou;
  };
  auto run = [&](const char* fast) {
    tt::ScopedEnv env("TRITIUM_FAST_COMPILE", fast);
    auto k = ptx_everything_kernel();  // a new kernel object: its own in-memory cache
    DeviceVec<float> xf(f), of(std::vector<float>(n + 1, NAN));
    DeviceVec<f16_t> xh(h), oh(std::vector<f16_t>(n, f16_t{0x7e00}));
    DeviceVec<bf16_t> xb(b), ob(std::vector<bf16_t>(n, bf16_t{0x7fc0}));
    DeviceVec<int32_t> xi(i), oi(std::vector<int32_t>(n, 0x5a5a5a5a));
    DeviceVec<int64_t> xl(l), ol(std::vector<int64_t>(n, 0x5a5a5a5a5a5a));
    DeviceVec<uint32_t> xu(u), ou(std::vector<uint32_t>(n, 0x5a5a5a5a));
    k[{(n + B - 1) / B}](xf.ptr(), xh.ptr(), xb.ptr(), xi.ptr(), xl.ptr(), xu.ptr(), of.ptr(), oh.ptr(), ob.ptr(),
                         oi.ptr(), ol.ptr(), ou.ptr(), n, int64_t{1} << 40, 0.5f, true, B, on_gpu());
    return Out{of.get(), oh.get(), ob.get(), oi.get(), ol.get(), ou.get()};
  };
  Out ptx = run("1"), cu = run("0");
  auto close = [](double a, double c, double tol) { return a == c || std::abs(a - c) <= tol * std::max(1.0, std::abs(c)); };
  size_t bad_f = 0, bad_h = 0, bad_b = 0, bad_i = 0, bad_l = 0, bad_u = 0;
  for (int k = 0; k <= n; ++k) bad_f += !close(ptx.of[k], cu.of[k], 1e-6);
  for (int k = 0; k < n; ++k) {
    bad_h += !close(tt::to_float(ptx.oh[k]), tt::to_float(cu.oh[k]), 1e-3);
    bad_b += !close(tt::to_float(ptx.ob[k]), tt::to_float(cu.ob[k]), 1e-2);
    bad_i += std::abs(int64_t{ptx.oi[k]} - cu.oi[k]) > 1;  // a float truncated: may move by one
    bad_l += ptx.ol[k] != cu.ol[k];
    bad_u += ptx.ou[k] != cu.ou[k];
  }
  BOOST_TEST(bad_f == 0u);
  BOOST_TEST(bad_h == 0u);
  BOOST_TEST(bad_b == 0u);
  BOOST_TEST(bad_i == 0u);
  BOOST_TEST(bad_l == 0u);
  BOOST_TEST(bad_u == 0u);
  BOOST_TEST(std::isfinite(ptx.of[n]));  // the scalar store happened
}

BOOST_AUTO_TEST_CASE(gpu_softmax_and_reductions) {
  auto k = tritium::kernel("softmax", [](tl::ptr<float> x, tl::ptr<float> out, tl::ptr<int32_t> amax, tl::ptr<float> total,
                                         tl::i32 n, int BLOCK) {
    auto row = tl::program_id(0);
    auto offs = tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto v = tl::load(x + row * n + offs, mask, -INFINITY);
    auto e = tl::exp(v - tl::max(v, 0));
    tl::store(out + row * n + offs, e / tl::sum(e, 0), mask);
    tl::store(amax + row, tl::argmax(v, 0));
    tl::atomic_add(total, tl::sum(tl::where(mask, v, 0.0f), 0));
  });
  if (!gpu_or_skip()) {  // still check that it compiles
    if (cuda::nvrtc_available()) compile(k, 8, addr<float>(0), addr<float>(1), addr<int32_t>(2), addr<float>(3), 781, 1024);
    return;
  }
  const int rows = 37, n = 781, BLOCK = 1024;
  auto x = random_floats(size_t(rows) * n, 3);
  DeviceVec<float> dx(x), dout(std::vector<float>(x.size(), NAN)), dtotal(std::vector<float>{0.0f});
  DeviceVec<int32_t> damax(std::vector<int32_t>(rows, -1));
  k[{rows}](dx.ptr(), dout.ptr(), damax.ptr(), dtotal.ptr(), n, BLOCK, on_gpu(8));
  std::vector<double> ref(x.size());
  double total = 0;
  for (int r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    int am = 0;
    for (int j = 0; j < n; ++j)
      if (x[r * n + j] > m) m = x[r * n + j], am = j;
    for (int j = 0; j < n; ++j) s += std::exp(x[r * n + j] - m), total += x[r * n + j];
    for (int j = 0; j < n; ++j) ref[r * n + j] = std::exp(x[r * n + j] - m) / s;
    BOOST_TEST(damax.get()[r] == am);
  }
  BOOST_TEST(rel_error(dout.get(), ref) < 1e-5);
  BOOST_TEST(std::abs(dtotal.get()[0] - total) < 1e-2);
}

BOOST_AUTO_TEST_CASE(gpu_matmul_and_scan) {
  auto k = tritium::kernel("matmul", [](tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> c, tl::i32 M, tl::i32 N, tl::i32 K,
                                        int BM, int BN, int BK) {
    auto rm = tl::program_id(0) * BM + tl::arange(0, BM), rn = tl::program_id(1) * BN + tl::arange(0, BN);
    auto rk = tl::arange(0, BK);
    auto acc = tl::zeros({BM, BN}, tl::float32);
    for (auto k0 : tl::range(0, K, BK)) {
      auto kk = k0 + rk;
      auto av = tl::load(a + rm(tl::_, tl::None) * K + kk(tl::None, tl::_), (rm(tl::_, tl::None) < M) & (kk(tl::None, tl::_) < K), 0.0f);
      auto bv = tl::load(b + kk(tl::_, tl::None) * N + rn(tl::None, tl::_), (kk(tl::_, tl::None) < K) & (rn(tl::None, tl::_) < N), 0.0f);
      acc = tl::dot(av, bv, acc);
    }
    auto mask = (rm(tl::_, tl::None) < M) & (rn(tl::None, tl::_) < N);
    tl::store(c + rm(tl::_, tl::None) * N + rn(tl::None, tl::_), tl::cumsum(acc, 1), mask);
  });
  if (!gpu_or_skip()) {  // still check that it compiles
    if (cuda::nvrtc_available()) compile(k, addr<float>(0), addr<float>(1), addr<float>(2), 100, 120, 300, 32, 32, 32);
    return;
  }
  const int M = 100, N = 120, K = 300, BM = 32, BN = 32, BK = 32;
  auto a = random_floats(size_t(M) * K, 4), b = random_floats(size_t(K) * N, 5);
  DeviceVec<float> da(a), db(b), dc(std::vector<float>(size_t(M) * N, NAN));
  k[{(M + BM - 1) / BM, (N + BN - 1) / BN}](da.ptr(), db.ptr(), dc.ptr(), M, N, K, BM, BN, BK, on_gpu());
  std::vector<double> ref(size_t(M) * N);
  for (int i = 0; i < M; ++i) {
    double run = 0;
    for (int j = 0; j < N; ++j) {
      if (j % BN == 0) run = 0;  // the scan runs within each BN-wide tile
      double s = 0;
      for (int q = 0; q < K; ++q) s += double(a[i * K + q]) * b[q * N + j];
      run += s;
      ref[i * N + j] = run;
    }
  }
  BOOST_TEST(rel_error(dc.get(), ref) < 1e-3);  // tl::dot's default fp32 precision is tf32
}

BOOST_AUTO_TEST_CASE(gpu_histogram_loop_if_and_assert) {
  auto k = tritium::kernel("hist", [](tl::ptr<int32_t> keys, tl::ptr<int32_t> bins, tl::ptr<float> fmax, tl::i32 n, int BLOCK) {
    auto pid = tl::program_id(0);
    auto offs = tl::arange(0, BLOCK);
    auto count = tl::full({}, 0, tl::int32);
    for (auto i : tl::range(pid * BLOCK * 4, tl::minimum(n, (pid + 1) * BLOCK * 4), BLOCK)) {
      auto o = i + offs;
      auto key = tl::load(keys + o, o < n, 0);
      tl::atomic_add(bins + key, 1, o < n);
      tl::atomic_max(fmax + key, o.to(tl::float32), o < n);
      count = count + 1;
    }
    tl::if_(count > 4, [&] { tl::store(bins + 64, 12345); });
    tl::device_assert(count <= 4, "too many steps");
  });
  if (!gpu_or_skip()) {  // still check that it compiles
    if (cuda::nvrtc_available()) compile(k, addr<int32_t>(0), addr<int32_t>(1), addr<float>(2), 50000, 512);
    return;
  }
  const int n = 50000, BLOCK = 512, NB = 64;
  std::vector<int32_t> keys(n);
  for (int i = 0; i < n; ++i) keys[i] = (i * 7919) % NB;
  DeviceVec<int32_t> dkeys(keys), dbins(std::vector<int32_t>(NB + 1, 0));
  DeviceVec<float> dmax(std::vector<float>(NB, -1.0f));
  int programs = (n + BLOCK * 4 - 1) / (BLOCK * 4);
  k[{programs}](dkeys.ptr(), dbins.ptr(), dmax.ptr(), n, BLOCK, on_gpu());
  auto bins = dbins.get();
  auto mx = dmax.get();
  std::vector<int32_t> ref(NB + 1, 0);
  std::vector<float> ref_max(NB, -1.0f);
  for (int i = 0; i < n; ++i) ++ref[keys[i]], ref_max[keys[i]] = std::max(ref_max[keys[i]], float(i));
  BOOST_TEST(bins == ref, boost::test_tools::per_element());
  BOOST_TEST(mx == ref_max, boost::test_tools::per_element());
  auto bad = tritium::kernel("bad", [](tl::ptr<int32_t> x, int BLOCK) {
    auto v = tl::load(x + tl::arange(0, BLOCK));
    tl::device_assert(v < 3, "v must stay below 3");
  });
  DeviceVec<int32_t> dv(std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  tritium::test::DebugModeScope debug;  // device_assert is compiled in only in debug mode
  BOOST_CHECK_EXCEPTION(bad[{2}](dv.ptr(), 8, on_gpu()), tritium::Error, [](const tritium::Error& e) {
    return std::string(e.what()).find("v must stay below 3") != std::string::npos;
  });
}

BOOST_AUTO_TEST_SUITE_END()
