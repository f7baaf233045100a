// tl::return_(): Triton's `return` anywhere in a kernel outside run-time loops. Programs that
// return skip everything after the return (their outputs stay poisoned); the others run on. The
// CUDA code of such kernels is generated and compiled for sm_90a and sm_80 (no GPU needed).
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvjitlink.h"
#include "jit/cuda/nvrtc.h"
#include "jit/cuda/ptx_codegen.h"
#include "jit/passes/axis_info.h"
#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
namespace cuda = tritium::jit::cuda;
using tritium::f16_t;

namespace {

constexpr int kN = 1000, kBlock = 64;  // 16 programs, the last one partial
constexpr int kPrograms = (kN + kBlock - 1) / kBlock;

// Liger's cross-entropy shape: a program whose flag is set writes its marker and returns; the
// others write 2x and x+1. `first` is written by everyone before the branch.
tritium::Kernel flagged_kernel() {
  return tritium::kernel("early_return_flagged", [](tl::ptr<float> x, tl::ptr<int32_t> flags, tl::ptr<float> first,
                                                    tl::ptr<float> second, tl::ptr<float> third, tl::i32 n, int B) {
    auto pid = tl::program_id(0);
    auto offs = pid * B + tl::arange(0, B);
    auto mask = offs < n;
    auto v = tl::load(x + offs, mask);
    tl::store(first + offs, v, mask);
    tl::if_(tl::load(flags + pid) != 0, [&] {
      tl::store(second + offs, tl::full({B}, -1.0f, tl::float32), mask);
      tl::return_();
      tl::store(third + offs, v, mask);  // after the return: never runs
    });
    tl::store(second + offs, v * 2.0f, mask);
    tl::store(third + offs, v + 1.0f, mask);
  });
}

// Nested branches, a value reassigned after a nested return, a reduction and a run-time loop
// after the return (vLLM's fused_moe returns before its main loop).
tritium::Kernel nested_kernel() {
  return tritium::kernel("early_return_nested", [](tl::ptr<float> x, tl::ptr<int32_t> a, tl::ptr<int32_t> b,
                                                   tl::ptr<float> out, tl::ptr<float> sums, tl::i32 n, int B) {
    auto pid = tl::program_id(0);
    auto offs = pid * B + tl::arange(0, B);
    auto mask = offs < n;
    auto v = tl::load(x + offs, mask, 0.0f);
    tl::if_(tl::load(a + pid) != 0, [&] {
      tl::if_(tl::load(b + pid) != 0, [&] { tl::return_(); }, [&] { v = v * 3.0f; });
      v = v + 1.0f;  // only where b == 0: after the nested return
    });
    auto acc = tl::zeros({B}, tl::float32);
    for (auto k : tl::range(0, 3)) acc += v * (k + 1).to(tl::float32);  // 6 v
    tl::store(out + offs, acc, mask);
    tl::store(sums + pid, tl::sum(tl::where(mask, v, 0.0f), 0));
  });
}

std::vector<int32_t> random_flags(unsigned seed) {
  std::vector<int32_t> f(kPrograms);
  std::srand(seed);
  for (auto& v : f) v = std::rand() % 2;
  f[0] = 1, f[1] = 0;  // both kinds present
  return f;
}

bool nvrtc_or_skip() {
  if (cuda::nvrtc_available()) return true;
  BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << cuda::nvrtc_unavailable_reason());
  return false;
}

// The kernel through each CUDA generator, compiled for sm_90a and sm_80: the element-loop
// generator (generate_cuda's choice without a dot), the layout generator, and the direct PTX
// generator when it takes the kernel (it declines run-time branches).
template <class... A> void compile_every_cuda_generator(tritium::Kernel& k, const A&... args) {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    BOOST_TEST_CONTEXT(k.name() << " for " << arch) {
      const int cc = std::string(arch) == "sm_80" ? 80 : 90;
      {
        auto f = k.optimized_function(args...);
        auto ks = cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), {}, cuda::kSharedMemoryBudget, cc);
        BOOST_TEST(!cuda::compile_to_cubin(ks.source, ks.entry, arch).empty());
      }
      {
        auto f = k.optimized_function(args...);
        auto ks = cuda::generate_cuda_layouts(*f, {}, cuda::kSharedMemoryBudget, cc);
        BOOST_TEST(!cuda::compile_to_cubin(ks.source, ks.entry, arch).empty());
      }
      auto f = k.optimized_function(args...);
      std::string declined;
      auto ptx = cuda::generate_ptx(*f, tritium::jit::analyze_axis_info(*f), {}, arch, &declined);
      if (!ptx) BOOST_TEST_MESSAGE("the PTX generator declines: " << declined);
      else if (cuda::nvjitlink_available()) BOOST_TEST(!cuda::ptx_to_cubin(ptx->source, ptx->entry, arch).empty());
    }
  }
}

template <class T> T* fake(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_early_return)

BOOST_AUTO_TEST_CASE(programs_that_return_write_nothing_after) {
  auto k = flagged_kernel();
  auto x = tt::random_vector<float>(kN, 1);
  auto flags = random_flags(2);
  tt::for_each_backend([&](const tt::Backend& be) {
    auto dx = be.upload<float>(x);
    auto df = be.upload<int32_t>(flags);
    auto d1 = be.alloc_poisoned<float>(kN), d2 = be.alloc_poisoned<float>(kN), d3 = be.alloc_poisoned<float>(kN);
    k[{kPrograms}](dx.ptr(), df.ptr(), d1.ptr(), d2.ptr(), d3.ptr(), kN, kBlock, be.options());
    auto first = d1.download(), second = d2.download(), third = d3.download();
    int wrong = 0;
    for (int i = 0; i < kN; ++i) {
      const bool returned = flags[i / kBlock] != 0;
      if (first[i] != x[i]) ++wrong;
      if (second[i] != (returned ? -1.0f : 2.0f * x[i])) ++wrong;
      if (returned ? !std::isnan(third[i]) : third[i] != x[i] + 1.0f) ++wrong;
    }
    BOOST_TEST(wrong == 0);
  });
}

BOOST_AUTO_TEST_CASE(return_in_nested_branches_before_a_loop_and_a_reduction) {
  auto k = nested_kernel();
  auto x = tt::random_vector<float>(kN, 3);
  auto a = random_flags(4), b = random_flags(5);
  a[2] = 1, b[2] = 1, a[3] = 1, b[3] = 0, a[4] = 0;  // every path
  tt::for_each_backend([&](const tt::Backend& be) {
    auto dx = be.upload<float>(x);
    auto da = be.upload<int32_t>(a), db = be.upload<int32_t>(b);
    auto dout = be.alloc_poisoned<float>(kN), dsums = be.alloc_poisoned<float>(kPrograms);
    k[{kPrograms}](dx.ptr(), da.ptr(), db.ptr(), dout.ptr(), dsums.ptr(), kN, kBlock, be.options());
    auto out = dout.download(), sums = dsums.download();
    std::vector<double> ref_sum(kPrograms, 0.0);
    int wrong = 0;
    for (int i = 0; i < kN; ++i) {
      const int p = i / kBlock;
      if (a[p] && b[p]) {
        if (!std::isnan(out[i])) ++wrong;
        continue;
      }
      double v = a[p] ? double(x[i]) * 3.0 + 1.0 : double(x[i]);
      ref_sum[p] += v;
      if (std::abs(out[i] - 6.0 * v) > 1e-5 * (1.0 + std::abs(6.0 * v))) ++wrong;
    }
    for (int p = 0; p < kPrograms; ++p) {
      if (a[p] && b[p]) wrong += !std::isnan(sums[p]);
      else wrong += std::abs(sums[p] - ref_sum[p]) > 1e-4 * (1.0 + std::abs(ref_sum[p]));
    }
    BOOST_TEST(wrong == 0);
  });
}

BOOST_AUTO_TEST_CASE(unconditional_returns_end_every_program) {
  // At the top level, and in both branches of an if_: nothing after runs.
  auto top = tritium::kernel("early_return_top", [](tl::ptr<float> out, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    tl::store(out + offs, offs.to(tl::float32), offs < n / 2);
    tl::return_();
    tl::store(out + offs, tl::full({B}, 7.0f, tl::float32), offs < n);
  });
  auto both = tritium::kernel("early_return_both", [](tl::ptr<float> out, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    tl::if_(tl::program_id(0) % 2 == 0, [&] { tl::store(out + offs, offs.to(tl::float32), offs < n); tl::return_(); },
            [&] { tl::return_(); });
    tl::store(out + offs, tl::full({B}, 7.0f, tl::float32), offs < n);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    auto d = be.alloc_poisoned<float>(kN);
    top[{kPrograms}](d.ptr(), kN, kBlock, be.options());
    auto out = d.download();
    int wrong = 0;
    for (int i = 0; i < kN; ++i) wrong += i < kN / 2 ? out[i] != float(i) : !std::isnan(out[i]);
    BOOST_TEST(wrong == 0);
    auto d2 = be.alloc_poisoned<float>(kN);
    both[{kPrograms}](d2.ptr(), kN, kBlock, be.options());
    out = d2.download();
    wrong = 0;
    for (int i = 0; i < kN; ++i) wrong += (i / kBlock) % 2 == 0 ? out[i] != float(i) : !std::isnan(out[i]);
    BOOST_TEST(wrong == 0);
  });
}

BOOST_AUTO_TEST_CASE(return_is_refused_in_loops_and_combine_functions) {
  unsigned line = 0;
  auto in_range = tritium::kernel("return_in_range", [&](tl::ptr<float> out, tl::i32 n) {
    for (auto i : tl::range(0, n)) {
      tl::if_(i == 3, [&] {
        line = __LINE__; tl::return_();
      });
    }
    tl::store(out, 1.0f);
  });
  tt::check_throws_at([&] { (void)in_range.ir(fake<float>(0), 8); }, __FILE__, line,
                      {"tl::return_", "run-time loop", "Triton"}, "return in tl::range");
  auto in_while = tritium::kernel("return_in_while", [&](tl::ptr<int32_t> lock) {
    tl::while_([&] { return tl::atomic_cas(lock, 0, 1) == 1; }, [&] {
      line = __LINE__; tl::return_();
    });
  });
  tt::check_throws_at([&] { (void)in_while.ir(fake<int32_t>(0)); }, __FILE__, line, {"tl::return_", "run-time loop"},
                      "return in tl::while_");
  auto in_combine = tritium::kernel("return_in_combine", [&](tl::ptr<float> x, tl::ptr<float> out) {
    auto v = tl::load(x + tl::arange(0, 16));
    tl::store(out, tl::reduce(v, 0, [&](const tl::tensor& p, const tl::tensor& q) {
      line = __LINE__; tl::return_();
      return p + q;
    }));
  });
  tt::check_throws_at([&] { (void)in_combine.ir(fake<float>(0), fake<float>(1)); }, __FILE__, line,
                      {"tl::return_", "combine function"}, "return in a combine function");
  // Triton's return conditions are per-program scalars; a block condition is refused.
  auto block_cond = tritium::kernel("return_block_condition", [&](tl::ptr<float> x) {
    auto v = tl::load(x + tl::arange(0, 16));
    line = __LINE__; tl::if_(v > 0.0f, [&] { tl::return_(); });
  });
  tt::check_throws_at([&] { (void)block_cond.ir(fake<float>(0)); }, __FILE__, line,
                      {"tl::if_", "condition must be a scalar", "[16]i1"}, "block condition");
}

BOOST_AUTO_TEST_CASE(a_branch_returning_a_value_does_not_compile) {
  // tl::if_'s branches return nothing (a returned value would be dropped silently): a
  // static_assert rejects them. is_branch_v is the trait it checks.
  auto returns_value = [] { return tl::tensor(); };
  auto returns_nothing = [] {};
  static_assert(!tl::is_branch_v<decltype(returns_value)>);
  static_assert(tl::is_branch_v<decltype(returns_nothing)>);
  BOOST_TEST(true);
}

BOOST_AUTO_TEST_CASE(ir_of_a_return_is_a_guarded_rest) {
  // Passes see plain structured branches: the rest after a conditional return sits in an If on
  // "not returned", and code after an unconditional return folds away.
  auto k = flagged_kernel();
  std::string ir = k.optimized_ir(fake<float>(0), fake<int32_t>(1), fake<float>(2), fake<float>(3), fake<float>(4), kN,
                                  kBlock);
  BOOST_TEST_MESSAGE(ir);
  BOOST_TEST(ir.find("not") != std::string::npos);
  size_t stores = 0;
  for (size_t at = ir.find("store"); at != std::string::npos; at = ir.find("store", at + 1)) ++stores;
  BOOST_TEST(stores <= 5u);  // first, marker, 2x, x+1 (the dead store after return_ may stay, never run)
}

BOOST_AUTO_TEST_CASE(cuda_code_of_early_returns_compiles, *boost::unit_test::timeout(300)) {
  if (!nvrtc_or_skip()) return;
  auto flagged = flagged_kernel();
  compile_every_cuda_generator(flagged, fake<float>(0), fake<int32_t>(1), fake<float>(2), fake<float>(3),
                               fake<float>(4), kN, kBlock);
  auto nested = nested_kernel();
  compile_every_cuda_generator(nested, fake<float>(0), fake<int32_t>(1), fake<int32_t>(2), fake<float>(3),
                               fake<float>(4), kN, kBlock);
  // vLLM fused_moe's shape: return when the block is past the padded token count, then a dot loop.
  auto moe = tritium::kernel("early_return_dot", [](tl::ptr<f16_t> a, tl::ptr<f16_t> b, tl::ptr<float> c,
                                                    tl::ptr<int32_t> num_tokens_post_padded, tl::i32 M, tl::i32 N,
                                                    tl::i32 K, int BM, int BN, int BK) {
    auto pid_m = tl::program_id(0), pid_n = tl::program_id(1);
    tl::if_(pid_m * BM >= tl::load(num_tokens_post_padded), [&] { tl::return_(); });
    auto rm = pid_m * BM + tl::arange(0, BM), rn = pid_n * BN + tl::arange(0, BN);
    auto acc = tt::tutorial_matmul_tile(a, b, rm, rn, M, N, K, BK);
    tl::store(c + rm(tl::_, tl::None) * N + rn(tl::None, tl::_), acc,
              (rm(tl::_, tl::None) < M) & (rn(tl::None, tl::_) < N));
  });
  compile_every_cuda_generator(moe, fake<f16_t>(0), fake<f16_t>(1), fake<float>(2), fake<int32_t>(3), 256, 256, 256,
                               64, 64, 32);
}

BOOST_AUTO_TEST_SUITE_END()
