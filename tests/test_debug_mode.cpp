// TRITIUM_DEBUG=1 (docs/debug-mode.md): loads, stores and atomics checked against the allocation
// their pointer came from, 32-bit index arithmetic checked for wrap-around, tl::device_assert on;
// failures are tritium::Errors naming the kernel, program, lane, address, bounds and the user's
// line. Without the variable nothing changes (and device_assert is compiled out, as in Triton).
#include "test_support.h"

#include <cstdlib>

#include <fmt/format.h>

#include "ir/printer.h"
#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "jit/cuda/ptx_codegen.h"
#include "jit/passes/debug_checks.h"
#include "jit/passes/pipeline.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
namespace cuda = tritium::jit::cuda;

namespace {

using DebugMode = tt::DebugModeScope;

std::string hex(const void* p) { return fmt::format("{:#x}", reinterpret_cast<uint64_t>(p)); }
std::string hex_at(const tritium::Tensor& t, int64_t byte) {
  return fmt::format("{:#x}", reinterpret_cast<uint64_t>(t.storage()->data()) + static_cast<uint64_t>(byte));
}

unsigned g_load_line = 0, g_store_line = 0, g_mul_line = 0;

// Copies x to out without masks: program p reads and writes [p * BLOCK, (p + 1) * BLOCK).
tritium::Kernel& unmasked_copy() {
  static tritium::Kernel k = tritium::kernel(
      "unmasked_copy",
      [](tl::ptr<float> x, tl::ptr<float> out, int BLOCK) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        g_load_line = __LINE__ + 1;
        auto v = tl::load(x + offs);
        g_store_line = __LINE__ + 1;
        tl::store(out + offs, v * 2);
      },
      {"x", "out", "BLOCK"});
  return k;
}

tritium::Kernel& masked_copy() {
  static tritium::Kernel k = tritium::kernel(
      "masked_copy",
      [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int BLOCK) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto m = offs < n;
        tl::store(out + offs, tl::load(x + offs, m, 0.0f) * 2, m);
      },
      {"x", "out", "n", "BLOCK"});
  return k;
}

std::vector<float> doubled(const std::vector<float>& x) {
  std::vector<float> r;
  for (float v : x) r.push_back(static_cast<float>(2.0 * static_cast<double>(v)));
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_debug_mode)

BOOST_AUTO_TEST_CASE(unmasked_load_past_the_end_is_caught) {
  DebugMode debug;
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000, block = 128, grid = tritium::cdiv(n, block);  // program 7 reads 24 elements too far
    auto xs = tt::random_vector<float>(n, 11);
    auto x = tritium::Tensor::from_vector<float>(xs, {n}, be.device);
    auto out = tritium::Tensor::from_vector<float>(tt::poisoned<float>(grid * block), {grid * block}, be.device);
    std::string msg = tt::check_throws_at([&] { unmasked_copy()[{grid}](x, out, block); }, __FILE__, g_load_line,
                                          {"kernel unmasked_copy", "out-of-bounds load of 4 bytes through argument 'x'",
                                           "program (7, 0, 0), lane 104", "of 4000 bytes", "starts at byte 4000"},
                                          "unmasked load past the end");
    BOOST_TEST(msg.find("address " + hex_at(x, 4000)) != std::string::npos, msg);
    BOOST_TEST(msg.find("allocation [" + hex(x.storage()->data()) + ", " + hex_at(x, 4000) + ")") != std::string::npos, msg);
    // The in-bounds lanes ran; the failing ones were masked off instead of reading past the end.
    auto got = out.to_vector<float>();
    auto want = doubled(xs);
    for (int i = 0; i < n; ++i) BOOST_TEST_REQUIRE(got[static_cast<size_t>(i)] == want[static_cast<size_t>(i)]);
  });
}

BOOST_AUTO_TEST_CASE(unmasked_store_past_the_end_is_caught) {
  DebugMode debug;
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000, block = 128, grid = tritium::cdiv(n, block);
    auto xs = tt::random_vector<float>(grid * block, 12);
    auto x = tritium::Tensor::from_vector<float>(xs, {grid * block}, be.device);
    auto out = tritium::Tensor::from_vector<float>(tt::poisoned<float>(n), {n}, be.device);
    std::string msg = tt::check_throws_at([&] { unmasked_copy()[{grid}](x, out, block); }, __FILE__, g_store_line,
                                          {"kernel unmasked_copy", "out-of-bounds store of 4 bytes through argument 'out'",
                                           "program (7, 0, 0), lane 104", "of 4000 bytes"},
                                          "unmasked store past the end");
    BOOST_TEST(msg.find("address " + hex_at(out, 4000)) != std::string::npos, msg);
    auto got = out.to_vector<float>();
    auto want = doubled(xs);
    for (int i = 0; i < n; ++i) BOOST_TEST_REQUIRE(got[static_cast<size_t>(i)] == want[static_cast<size_t>(i)]);
  });
}

BOOST_AUTO_TEST_CASE(masked_tail_is_not_flagged) {
  DebugMode debug;
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000, block = 128;
    auto xs = tt::random_vector<float>(n, 13);
    auto x = tritium::Tensor::from_vector<float>(xs, {n}, be.device);
    auto out = tritium::Tensor::from_vector<float>(tt::poisoned<float>(n), {n}, be.device);
    BOOST_CHECK_NO_THROW(masked_copy()[{tritium::cdiv(n, block)}](x, out, n, block));
    auto got = out.to_vector<float>();
    auto want = doubled(xs);
    for (int i = 0; i < n; ++i) BOOST_TEST_REQUIRE(got[static_cast<size_t>(i)] == want[static_cast<size_t>(i)]);
    // A view's accesses stay inside its storage: the second half, through an offset pointer.
    auto tail = tritium::Tensor::from_vector<float>(tt::poisoned<float>(n), {n}, be.device);
    BOOST_CHECK_NO_THROW(masked_copy()[{tritium::cdiv(n, block)}](x, tail, n, block));
  });
}

BOOST_AUTO_TEST_CASE(raw_pointers_are_not_checked) {
  DebugMode debug;
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 256, block = 128;
    auto xs = tt::random_vector<float>(n, 14);
    auto dx = be.upload<float>(xs);
    auto dout = be.alloc_poisoned<float>(n);
    BOOST_CHECK_NO_THROW(unmasked_copy()[{2}](dx.ptr(), dout.ptr(), block, be.options()));
    auto got = dout.download();
    auto want = doubled(xs);
    for (int i = 0; i < n; ++i) BOOST_TEST_REQUIRE(got[static_cast<size_t>(i)] == want[static_cast<size_t>(i)]);
  });
}

BOOST_AUTO_TEST_CASE(index_overflow_is_caught) {
  static tritium::Kernel k = tritium::kernel(
      "wide_offsets",
      [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 row, tl::i32 stride, tl::i32 n, int BLOCK) {
        auto cols = tl::arange(0, BLOCK);
        g_mul_line = __LINE__ + 1;
        auto start = row * stride;
        auto m = cols < n;
        tl::store(out + cols, tl::load(x + start + cols, m, 0.0f), m);
      },
      {"x", "out", "row", "stride", "n", "BLOCK"});
  DebugMode debug;
  tt::for_each_backend([&](const tt::Backend& be) {
    auto xs = tt::random_vector<float>(64, 15);
    auto x = tritium::Tensor::from_vector<float>(xs, {64}, be.device);
    auto out = tritium::Tensor::from_vector<float>(tt::poisoned<float>(64), {64}, be.device);
    // 1 * 0: fine, and the values arrive.
    BOOST_CHECK_NO_THROW(k[{1}](x, out, 1, 0, 64, 64));
    auto got = out.to_vector<float>();
    for (size_t i = 0; i < 64; ++i) BOOST_TEST_REQUIRE(got[i] == xs[i]);
    // 65536 * 32768 = 2^31 wraps to INT32_MIN; nothing is accessed (n = 0 masks every lane), so only
    // the overflow check can see it.
    tt::check_throws_at([&] { k[{1}](x, out, 65536, 32768, 0, 64); }, __FILE__, g_mul_line,
                        {"kernel wide_offsets", "32-bit integer overflow in index arithmetic (mul of i32)",
                         "program (0, 0, 0)", "exact value 2147483648"},
                        "32-bit offset overflow");
  });
}

BOOST_AUTO_TEST_CASE(device_assert_fires_only_in_debug_mode) {
  static tritium::Kernel k = tritium::kernel("positive", [](tl::ptr<int32_t> x, tl::i32 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto v = tl::load(x + offs, offs < n, 1);
    tl::device_assert(v > 0, "every value must be positive");
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000;
    auto bad = tt::random_vector<int32_t>(n, 16, 1, 100);
    bad[777] = -4;
    auto dbad = be.upload<int32_t>(bad);
    // Compiled out without TRITIUM_DEBUG, as Triton does without TRITON_DEBUG.
    BOOST_CHECK_NO_THROW(k[{tritium::cdiv(n, 128)}](dbad.ptr(), n, 128, be.options()));
    {
      DebugMode debug;
      tt::check_throws([&] { k[{tritium::cdiv(n, 128)}](dbad.ptr(), n, 128, be.options()); },
                       {"kernel positive", "device assertion failed: every value must be positive",
                        "program (6, 0, 0), lane 9"},
                       "device_assert in debug mode");
    }
    BOOST_CHECK_NO_THROW(k[{tritium::cdiv(n, 128)}](dbad.ptr(), n, 128, be.options()));
    DebugMode off("0");
    BOOST_CHECK_NO_THROW(k[{tritium::cdiv(n, 128)}](dbad.ptr(), n, 128, be.options()));
  });
}

// Without TRITIUM_DEBUG the kernel is what it was: no hidden parameters, no checks, the same
// content hash before and after a debug build of the same specialisation; with it, another hash.
BOOST_AUTO_TEST_CASE(normal_mode_is_unchanged) {
  tt::for_each_backend([&](const tt::Backend& be) {
    auto x = tritium::Tensor::from_vector<float>(tt::random_vector<float>(100, 17), {100}, be.device);
    auto out = tritium::Tensor::from_vector<float>(tt::poisoned<float>(100), {100}, be.device);
    auto args = tritium::LaunchArgs::collect(x, out, 100, 128);
    tritium::Hash128 normal = masked_copy().specialization_hash(args);
    tritium::Hash128 debug_hash;
    {
      DebugMode debug;
      debug_hash = masked_copy().specialization_hash(args);
    }
    BOOST_TEST((masked_copy().specialization_hash(args) == normal));
    BOOST_TEST(!(debug_hash == normal));
  });
  // The passes see the traced function unchanged (a kernel without device_asserts).
  auto f = masked_copy().optimized_function(static_cast<float*>(nullptr), static_cast<float*>(nullptr), 100, 128);
  std::string before = tritium::ir::print(*f);
  BOOST_TEST(!tritium::jit::remove_device_asserts(*f));
  BOOST_TEST(tritium::ir::print(*f) == before);
  BOOST_TEST(before.find("assert") == std::string::npos);
  tritium::jit::add_debug_checks(*f);
  tritium::jit::run_passes(*f, "");
  std::string checked = tritium::ir::print(*f);
  BOOST_TEST(checked.find("out-of-bounds load of 4 bytes through argument 'x'") != std::string::npos, checked);
  BOOST_TEST(checked.find("out-of-bounds store of 4 bytes through argument 'out'") != std::string::npos, checked);
  BOOST_TEST(f->params.size() == 3u + 4u);  // x, out, n; x.begin, x.end, out.begin, out.end
}

// The CUDA generators: the checks compile (NVRTC, sm_90a and sm_80) through the element-loop and
// the layout generators, and report lane and payload; the direct PTX generator declines debug
// kernels. (Generated and compiled only: no GPU ran these.)
BOOST_AUTO_TEST_CASE(cuda_debug_checks_compile) {
  if (!cuda::nvrtc_available()) {
    BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << cuda::nvrtc_unavailable_reason());
    return;
  }
  auto fake = [](int i) { return reinterpret_cast<float*>(uint64_t{0x7f0000000000} + static_cast<uint64_t>(i) * 0x100000); };
  auto make = [&] {
    auto f = masked_copy().optimized_function(fake(0), fake(1), 1000, 128);
    tritium::jit::add_debug_checks(*f);
    tritium::jit::run_passes(*f, "");
    return f;
  };
  tritium::jit::CompileOptions opts;
  opts.debug = true;
  {
    auto normal = masked_copy().optimized_function(fake(0), fake(1), 1000, 128);
    auto ks = cuda::generate_cuda(*normal, tritium::jit::analyze_axis_info(*normal), opts);
    BOOST_TEST(ks.num_asserts == 0);
    BOOST_TEST(ks.source.find("tt_assert_fail(tt_assert") == std::string::npos);
  }
  auto f = make();
  BOOST_TEST(!cuda::generate_ptx(*f, tritium::jit::analyze_axis_info(*f), opts, "sm_90a").has_value());
  auto ks = cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts);
  // (The passes already ran on this function: the offset is pid * BLOCK then an arange.) One
  // overflow check (pid * BLOCK), then the load's and the store's access checks.
  auto sites_of = [](const std::string& src) {
    std::string sites;
    for (size_t at = src.find("// device_assert"); at != std::string::npos; at = src.find("// device_assert", at + 1))
      sites += src.substr(at, src.find('\n', at) - at) + "\n";
    return sites;
  };
  for (auto* s : {&ks}) {
    std::string sites = sites_of(s->source);
    BOOST_TEST(s->num_asserts == 3, sites);
    BOOST_TEST(sites.find("0: 32-bit integer overflow in index arithmetic (mul of i32)") != std::string::npos, sites);
    BOOST_TEST(sites.find("1: out-of-bounds load of 4 bytes through argument 'x'") != std::string::npos, sites);
    BOOST_TEST(sites.find("2: out-of-bounds store of 4 bytes through argument 'out'") != std::string::npos, sites);
    BOOST_TEST(s->source.find("tt_assert_fail(tt_assert, 2, tt_pid0, tt_pid1, tt_pid2, (long long)(") != std::string::npos);
  }
  for (const char* arch : {"sm_90a", "sm_80"}) BOOST_TEST(!cuda::compile_to_cubin(ks.source, ks.entry, arch).empty());
  auto g = make();
  auto kl = cuda::generate_cuda_layouts(*g, opts);
  BOOST_TEST(kl.num_asserts == 3, sites_of(kl.source));
  BOOST_TEST(kl.source.find("tt_assert_fail(tt_assert, 2, tt_pid0, tt_pid1, tt_pid2, (long long)(") != std::string::npos);
  for (const char* arch : {"sm_90a", "sm_80"}) BOOST_TEST(!cuda::compile_to_cubin(kl.source, kl.entry, arch).empty());
}

BOOST_AUTO_TEST_SUITE_END()
