// Triton's load/store cache_modifier and eviction_policy, and tl::debug_barrier: part of the IR
// (printed, never merged), honoured by the three CUDA generators (checked in the generated code,
// NVRTC- or nvJitLink-compiled for sm_90a and sm_80; no GPU ran them), ignored on the CPU (same
// values), bad strings refused at the user's line.
#include "test_support.h"

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvjitlink.h"
#include "jit/cuda/nvrtc.h"
#include "jit/cuda/ptx_codegen.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
namespace cuda = tritium::jit::cuda;

namespace {

// out = x * 2 + 1 over n elements, the load and store carrying the given hints.
tritium::Kernel hinted_scale(const std::string& load_cm, const std::string& load_ev, const std::string& store_cm,
                             const std::string& store_ev) {
  return tritium::kernel(
      "hinted_scale",
      [=](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int BLOCK) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto m = offs < n;
        auto v = tl::load(x + offs, m, 0.0f, load_cm, load_ev);
        tl::store(out + offs, v * 2.0f + 1.0f, m, store_cm, store_ev);
      },
      {"x", "out", "n", "BLOCK"});
}

float* fake(int i) { return reinterpret_cast<float*>(uint64_t{0x7f0000000000} + static_cast<uint64_t>(i) * 0x100000); }

std::string body_of(const std::string& src) { return src.substr(src.find("__global__")); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_cache_hints)

BOOST_AUTO_TEST_CASE(printed_and_never_merged) {
  auto k = tritium::kernel("two_loads", [](tl::ptr<float> x, tl::ptr<float> out, int BLOCK) {
    auto offs = tl::arange(0, BLOCK);
    auto a = tl::load(x + offs, std::nullopt, std::nullopt, ".cg");
    auto b = tl::load(x + offs, std::nullopt, std::nullopt, "", "evict_first");
    auto c = tl::load(x + offs);
    tl::store(out + offs, a + b + c, std::nullopt, ".cs", "evict_last");
  });
  std::string ir = k.optimized_ir(fake(0), fake(1), 64);
  BOOST_TEST(ir.find("cache=.cg") != std::string::npos, ir);
  BOOST_TEST(ir.find("evict=evict_first") != std::string::npos, ir);
  BOOST_TEST(ir.find("cache=.cs, evict=evict_last") != std::string::npos, ir);
  size_t loads = 0;
  for (size_t at = ir.find("= load "); at != std::string::npos; at = ir.find("= load ", at + 1)) ++loads;
  BOOST_TEST(loads == 3u, ir);
}

BOOST_AUTO_TEST_CASE(bad_values_are_refused) {
  unsigned line = 0;
  auto trace = [&](auto body) { tritium::kernel("bad_hints", body).ir(fake(0)); };
  tt::check_throws_at([&] { trace([&](tl::ptr<float> x) { line = __LINE__; tl::load(x, std::nullopt, std::nullopt, ".cs"); }); },
                      __FILE__, line, {"tl::load", "cache_modifier", "\".ca\", \".cg\" or \".cv\"", "\".cs\""}, "load .cs");
  tt::check_throws_at([&] { trace([&](tl::ptr<float> x) { line = __LINE__; tl::store(x, 1.0f, std::nullopt, ".ca"); }); },
                      __FILE__, line, {"tl::store", "cache_modifier", "\".wb\", \".cg\", \".cs\" or \".wt\"", "\".ca\""},
                      "store .ca");
  tt::check_throws_at(
      [&] { trace([&](tl::ptr<float> x) { line = __LINE__; tl::load(x, std::nullopt, std::nullopt, "", "evict_normal"); }); },
      __FILE__, line, {"tl::load", "eviction_policy", "\"evict_first\" or \"evict_last\"", "\"evict_normal\""},
      "evict_normal");
  tt::check_throws_at([&] { trace([&](tl::ptr<float> x) { line = __LINE__; tl::store(x, 1.0f, std::nullopt, "", "first"); }); },
                      __FILE__, line, {"tl::store", "eviction_policy", "\"first\""}, "store eviction");
  tt::check_throws_at([&] { trace([&](tl::ptr<float> x) { line = __LINE__; tl::load(x, std::nullopt, std::nullopt, "cg"); }); },
                      __FILE__, line, {"cache_modifier", "\"cg\""}, "no dot");
}

// The CPU ignores the hints; every backend computes the same values with any of them.
BOOST_AUTO_TEST_CASE(values_unchanged) {
  const int n = 1000, block = 128;
  auto xs = tt::random_vector<float>(n, 31);
  std::vector<double> ref;
  for (float v : xs) ref.push_back(static_cast<double>(v) * 2.0 + 1.0);
  struct Hints {
    const char *lc, *le, *sc, *se;
  };
  for (Hints h : {Hints{"", "", "", ""}, Hints{".ca", "", ".wb", ""}, Hints{".cg", "evict_last", ".cs", "evict_first"},
                  Hints{".cv", "", ".wt", ""}, Hints{"", "evict_first", ".cg", "evict_last"}}) {
    auto k = hinted_scale(h.lc, h.le, h.sc, h.se);
    tt::for_each_backend([&](const tt::Backend& be) {
      auto dx = be.upload<float>(xs);
      auto dout = be.alloc_poisoned<float>(n);
      k[{tritium::cdiv(n, block)}](dx.ptr(), dout.ptr(), n, block, be.options());
      auto got = dout.download();
      BOOST_TEST(tt::all_written<float>(got));
      BOOST_TEST(tt::rel_error<float>(got, ref) < 1e-6, h.lc << h.le << h.sc << h.se);
    });
  }
}

// Each value reaches the generated code of the element-loop, layout and PTX generators, and the
// result compiles for sm_90a and sm_80.
BOOST_AUTO_TEST_CASE(cuda_generators_emit_the_qualifiers) {
  if (!cuda::nvrtc_available()) {
    BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << cuda::nvrtc_unavailable_reason());
    return;
  }
  struct Case {
    const char *lc, *le, *sc, *se;
    const char *load_suffix, *store_suffix, *load_ptx, *store_ptx;
  };
  const Case cases[] = {
      {".ca", "", ".wb", "", "_ca", "_wb", "ld.global.ca", "st.global.wb"},
      {".cg", "", ".cg", "", "_cg", "_cg", "ld.global.cg", "st.global.cg"},
      {".cv", "", ".cs", "", "_cv", "_cs", "ld.global.cv", "st.global.cs"},
      {"", "evict_first", ".wt", "", "_ef", "_wt", "ld.global.L1::evict_first", "st.global.wt"},
      {"", "evict_last", "", "evict_first", "_el", "_ef", "ld.global.L1::evict_last", "st.global.L1::evict_first"},
      {".cg", "evict_last", "", "evict_last", "_cg", "_el", "ld.global.cg", "st.global.L1::evict_last"},
  };
  tritium::jit::CompileOptions opts;
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.lc << "/" << c.le << " " << c.sc << "/" << c.se) {
      auto k = hinted_scale(c.lc, c.le, c.sc, c.se);
      for (int n : {1000, 1024}) {  // a per-lane masked tail, and a mask constant over each vector
        auto f = k.optimized_function(fake(0), fake(1), n, 512);
        auto ks = cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts);
        std::string body = body_of(ks.source);
        auto has = [&](const std::string& s) { return body.find(s) != std::string::npos; };
        BOOST_TEST((has(std::string("tt_ld_pred") + c.load_suffix + "<") || has(std::string("tt_ld") + c.load_suffix + "(")),
                   body);
        BOOST_TEST((has(std::string("tt_st_pred") + c.store_suffix + "<") || has(std::string("tt_st") + c.store_suffix + "(")),
                   body);
        for (const char* arch : {"sm_90a", "sm_80"})
          BOOST_TEST(!cuda::compile_to_cubin(ks.source, ks.entry, arch).empty());

        auto g = k.optimized_function(fake(0), fake(1), n, 512);
        auto kl = cuda::generate_cuda_layouts(*g, opts);
        std::string lbody = body_of(kl.source);
        BOOST_TEST((lbody.find(std::string("tt_ld_pred") + c.load_suffix + "<") != std::string::npos ||
                    lbody.find(std::string("tt_ld") + c.load_suffix + "(") != std::string::npos),
                   lbody);
        BOOST_TEST((lbody.find(std::string("tt_st_pred") + c.store_suffix + "<") != std::string::npos ||
                    lbody.find(std::string("tt_st") + c.store_suffix + "(") != std::string::npos),
                   lbody);
        for (const char* arch : {"sm_90a", "sm_80"})
          BOOST_TEST(!cuda::compile_to_cubin(kl.source, kl.entry, arch).empty());

        auto h = k.optimized_function(fake(0), fake(1), n, 512);
        for (const char* arch : {"sm_90a", "sm_80"}) {
          auto kp = cuda::generate_ptx(*h, tritium::jit::analyze_axis_info(*h), opts, arch);
          BOOST_TEST_REQUIRE(kp.has_value());
          BOOST_TEST(kp->source.find(c.load_ptx) != std::string::npos, kp->source);
          BOOST_TEST(kp->source.find(c.store_ptx) != std::string::npos, kp->source);
          if (cuda::nvjitlink_available()) BOOST_TEST(!cuda::ptx_to_cubin(kp->source, kp->entry, arch).empty());
        }
      }
    }
  }
  // Without hints nothing changes: plain accesses, no hinted helper called.
  auto plain = hinted_scale("", "", "", "");
  auto f = plain.optimized_function(fake(0), fake(1), 1000, 512);
  std::string body = body_of(cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts).source);
  for (const char* s : {"_ca", "_cg", "_cv", "_wb", "_cs", "_wt", "_ef", "_el"})
    BOOST_TEST(body.find(std::string("tt_ld") + s) == std::string::npos);
}

BOOST_AUTO_TEST_CASE(debug_barrier) {
  auto k = tritium::kernel("barrier", [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto m = offs < n;
    auto v = tl::load(x + offs, m, 0.0f);
    tl::debug_barrier();
    tl::store(out + offs, v + 3.0f, m);
  });
  const int n = 300, block = 64;
  auto xs = tt::random_vector<float>(n, 32);
  std::vector<double> ref;
  for (float v : xs) ref.push_back(static_cast<double>(v) + 3.0);
  tt::for_each_backend([&](const tt::Backend& be) {
    auto dx = be.upload<float>(xs);
    auto dout = be.alloc_poisoned<float>(n);
    k[{tritium::cdiv(n, block)}](dx.ptr(), dout.ptr(), n, block, be.options());
    BOOST_TEST(tt::rel_error<float>(dout.download(), ref) < 1e-6);
  });
  std::string ir = k.optimized_ir(fake(0), fake(1), n, block);
  BOOST_TEST(ir.find("debug_barrier") != std::string::npos, ir);
  if (!cuda::nvrtc_available()) return;
  tritium::jit::CompileOptions opts;
  auto f = k.optimized_function(fake(0), fake(1), n, block);
  auto ks = cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts);
  auto g = k.optimized_function(fake(0), fake(1), n, block);
  auto kl = cuda::generate_cuda_layouts(*g, opts);
  for (auto* s : {&ks, &kl}) {
    std::string body = body_of(s->source);
    BOOST_TEST(body.find("__syncthreads();") != std::string::npos, body);
    for (const char* arch : {"sm_90a", "sm_80"}) BOOST_TEST(!cuda::compile_to_cubin(s->source, s->entry, arch).empty());
  }
}

BOOST_AUTO_TEST_SUITE_END()
