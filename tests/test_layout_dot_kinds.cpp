// Every kind of `dot` the element-loop generator's matmul-loop matcher lowered (removed at stop 41,
// issue 27) has a path through the layout generator: each is traced in a tutorial-03 loop,
// generated through generate_cuda's routing (as the backend does: a kernel with a dot goes through
// layouts) and compiled with NVRTC for sm_90a or sm_80, and the instruction that runs the dot is
// checked in the kernel body. Never run here (no GPU in CI): the values are test_dot's and
// test_layout_operand_values' on a GPU. Skips when NVRTC is unavailable.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <string>

#include "cuda_codegen_check.h"
#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::DType;

namespace {

// A tutorial-03 loop over any operand dtype: `acc = dot(a tile, b tile, acc)` with pointer blocks
// advanced by BK, K masked, C stored masked. PRECISION: 0 the default, 1 tf32, 2 tf32x3, 3 ieee.
tritium::Kernel& any_dot() {
  static tritium::Kernel k = tritium::kernel(
      "dot_kind", [](tl::ptr<tl::any> a, tl::ptr<tl::any> b, tl::ptr<tl::any> c, tl::i32 M, tl::i32 N, tl::i32 K, int BM,
                     int BN, int BK, int PRECISION) {
        static const char* precisions[] = {"", "tf32", "tf32x3", "ieee"};
        const DType out = c.type().pointee;
        auto rm = tl::program_id(0) * BM + tl::arange(0, BM), rn = tl::program_id(1) * BN + tl::arange(0, BN);
        auto rk = tl::arange(0, BK);
        auto a_ptrs = a + (rm % M)(tl::_, tl::None) * K + rk(tl::None, tl::_);
        auto b_ptrs = b + rk(tl::_, tl::None) * N + (rn % N)(tl::None, tl::_);
        auto acc = tl::zeros({BM, BN}, out);
        for (auto kt : tl::range(0, tl::cdiv(K, BK))) {
          acc = tl::dot(tl::load(a_ptrs, rk(tl::None, tl::_) < K - kt * BK, 0),
                        tl::load(b_ptrs, rk(tl::_, tl::None) < K - kt * BK, 0), acc, std::nullopt,
                        precisions[PRECISION]);
          a_ptrs += BK;
          b_ptrs += BK * N;
        }
        tl::store(c + rm(tl::_, tl::None) * N + rn(tl::None, tl::_), acc,
                  (rm(tl::_, tl::None) < M) & (rn(tl::None, tl::_) < N));
      });
  return k;
}

// The kernel body of `In` operands into `Out`, 64 x 64 x 32 tiles, for `arch`.
template <class In, class Out>
std::string body(int num_warps, int cc, const std::string& arch, int precision = 0) {
  return tt::kernel_body(tt::compile_cuda(any_dot(), tt::CudaCheck().warps(num_warps).target(cc, arch).routed(),
                                          tt::fake_address<In>(0), tt::fake_address<In>(1), tt::fake_address<Out>(2),
                                          200, 136, 256, 64, 64, 32, precision));
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_layout_dot_kinds)

// sm_90a, one warpgroup: wgmma for 16-bit, tf32 and 8-bit operands (k16, k8, k32); the tf32x3 dot
// splits its operands into big and small tf32 parts (three products, on mma.sync: wgmma reads its
// operands from shared memory, where the split parts are not); ieee fp32 and f64 take the FMA loop.
BOOST_AUTO_TEST_CASE(hopper_warpgroups) {
  if (!tt::nvrtc_or_skip()) return;
  using tritium::bf16_t;
  using tritium::f16_t;
  BOOST_TEST(has(body<f16_t, float>(4, 90, "sm_90a"), "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"));
  BOOST_TEST(has(body<bf16_t, float>(4, 90, "sm_90a"), "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"));
  BOOST_TEST(has(body<float, float>(4, 90, "sm_90a", 1), "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"));
  BOOST_TEST(has(body<float, float>(4, 90, "sm_90a", 0), "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"));
  const std::string x3 = body<float, float>(4, 90, "sm_90a", 2);
  BOOST_TEST(has(x3, "tt_tf32_split("));
  BOOST_TEST(has(x3, "tt_mma_tf32("));
  BOOST_TEST(has(body<tritium::f8e4m3_t, float>(4, 90, "sm_90a"), "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3"));
  BOOST_TEST(has(body<tritium::f8e5m2_t, float>(4, 90, "sm_90a"), "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2"));
  BOOST_TEST(has(body<int8_t, int32_t>(4, 90, "sm_90a"), "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8"));
  const std::string ieee = body<float, float>(4, 90, "sm_90a", 3);
  BOOST_TEST(has(ieee, "// dot as an FMA loop over K"));
  BOOST_TEST((!has(ieee, "wgmma") && !has(ieee, "tt_mma_")));
  const std::string f64 = body<double, double>(4, 90, "sm_90a");
  BOOST_TEST(has(f64, "// dot as an FMA loop over K"));
  BOOST_TEST(has(f64, "] = fma("));
}

// sm_90a with 1 or 2 warps (no whole warpgroup): mma.sync from ldmatrix fragments. 3 warps (which
// the matcher tiled 3 x 1 where BM was a multiple of 48) is refused with a clear error, as Triton
// refuses a num_warps that is not a power of two: the layouts' thread maps are bit maps.
BOOST_AUTO_TEST_CASE(hopper_without_a_warpgroup) {
  if (!tt::nvrtc_or_skip()) return;
  for (int warps : {1, 2}) {
    BOOST_TEST_CONTEXT(warps << " warps") {
      const std::string s = body<tritium::f16_t, float>(warps, 90, "sm_90a");
      BOOST_TEST(has(s, "// dot on mma.sync"));
      BOOST_TEST(has(s, "tt_mma_f16("));
      BOOST_TEST(!has(s, "wgmma.mma_async"));
    }
  }
  tt::check_throws([] { body<tritium::f16_t, float>(3, 90, "sm_90a"); },
                   {"num_warps = 3", "dot_kind", "power of two"}, "3 warps");
}

// sm_80: mma.sync for f16, bf16 and tf32 (tf32x3 too); 8-bit operands have no Ampere tensor-core
// path here (as under the matcher): the FMA loop.
BOOST_AUTO_TEST_CASE(ampere) {
  if (!tt::nvrtc_or_skip()) return;
  BOOST_TEST(has(body<tritium::f16_t, float>(4, 80, "sm_80"), "tt_mma_f16("));
  BOOST_TEST(has(body<tritium::bf16_t, float>(4, 80, "sm_80"), "tt_mma_bf16("));
  BOOST_TEST(has(body<float, float>(4, 80, "sm_80", 1), "tt_mma_tf32("));
  BOOST_TEST(has(body<float, float>(4, 80, "sm_80", 2), "tt_tf32_split("));
  const std::string s8 = body<int8_t, int32_t>(4, 80, "sm_80");
  BOOST_TEST(has(s8, "// dot as an FMA loop over K"));
  BOOST_TEST(!has(s8, "wgmma"));
}

BOOST_AUTO_TEST_SUITE_END()
