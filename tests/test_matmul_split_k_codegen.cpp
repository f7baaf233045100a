// ops::matmul's split-K kernels as CUDA code without a GPU: the product over one chunk of K
// (block pointers with TMA for 16-bit operands on Hopper, the pointer form for fp32 / tf32 and
// batches) and the sum of the partial tiles, traced with the tuned configs' meta-parameters,
// generated and compiled by NVRTC for sm_90a and sm_80. Running them is for the GPU machine
// (tests/test_matmul_split_k.cpp runs on every backend present).
#include <boost/test/unit_test.hpp>

#ifdef TRITIUM_HAS_CUDA_BACKEND
#include <tritium/tritium.h>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "jit/passes/axis_info.h"
#include "ops/matmul_add.h"
#include "ops/matmul_split_k.h"
#include "ops/ops.h"

namespace cuda = tritium::jit::cuda;
namespace split_k = tritium::ops::split_k;
using tritium::bf16_t;
using tritium::DType;
using tritium::f16_t;
using tritium::Meta;

namespace {

template <class T> T* addr(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x1000000); }

constexpr int64_t kH100SharedMemory = 219 * 1024;

// Generates `k` for `args` at compute capability 90 and 80, compiles both; returns the sm_90a
// source and its tensor maps.
template <class... A> cuda::KernelSource compiles(tritium::Kernel& k, int warps, const A&... args) {
  tritium::jit::CompileOptions opts;
  opts.num_warps = warps;
  opts.num_stages = 3;
  cuda::KernelSource hopper;
  for (auto [cc, arch] : {std::pair{90, "sm_90a"}, std::pair{80, "sm_80"}}) {
    auto f = k.optimized_function(args...);  // generation may change the IR: a fresh trace each
    cuda::KernelSource ks = cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts, kH100SharedMemory, cc);
    std::vector<char> cubin;
    try {
      cubin = cuda::compile_to_cubin(ks.source, ks.entry, arch);
    } catch (const tritium::Error& e) {
      BOOST_ERROR("kernel " << ks.entry << " does not compile for " << arch << ":\n" << e.what());
    }
    BOOST_TEST(!cubin.empty(), ks.entry << " for " << arch);
    if (cc == 90) hopper = ks;
  }
  return hopper;
}

bool nvrtc_present() {
  if (cuda::nvrtc_available()) return true;
  BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << cuda::nvrtc_unavailable_reason());
  return false;
}

Meta config(int bm, int bn, int bk, int tf32, bool carry, bool block) {
  return Meta{{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"GROUP_M", 8},
              {"TF32", tf32},  {"CARRY_POINTERS", carry}, {"BLOCK_POINTERS", block}};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_matmul_split_k_codegen)

// A Linear's weight gradient in bf16, dY^T [1536, 16384] (a transposed view: rows strided by 1)
// @ x [16384, 384], split in 4 chunks of 4096: with K-major A the pointer form; with both
// operands' rows contiguous (as the launch requires for them) block pointers, which keep TMA -
// the chunk's start is only a run-time offset of the tile.
BOOST_AUTO_TEST_CASE(product_kernel_compiles) {
  if (!nvrtc_present()) return;
  tritium::Kernel& bf = split_k::product_kernel(DType::bf16);
  auto tma = compiles(bf, 8, addr<bf16_t>(0), addr<bf16_t>(1), addr<float>(2), 1536, 384, 16384, int64_t{16384},
                      int64_t{1}, int64_t{384}, int64_t{1}, int64_t{384}, int64_t{1}, int64_t{1}, int64_t{0},
                      int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, 4096, int64_t{1536 * 384},
                      config(128, 256, 64, 0, false, true));
  BOOST_TEST(tma.tma_maps.size() == 2u);
  BOOST_TEST(tma.source.find("stages filled by TMA") != std::string::npos);
  compiles(bf, 4, addr<bf16_t>(0), addr<bf16_t>(1), addr<float>(2), 1536, 384, 16384, int64_t{1}, int64_t{1536},
           int64_t{384}, int64_t{1}, int64_t{384}, int64_t{1}, int64_t{1}, int64_t{0}, int64_t{0}, int64_t{0},
           int64_t{0}, int64_t{0}, int64_t{0}, 4096, int64_t{1536 * 384}, config(128, 128, 32, 0, true, false));
  // fp32 on tf32 tensor cores, batched (NB2 = 3), an odd K.
  tritium::Kernel& f32 = split_k::product_kernel(DType::f32);
  compiles(f32, 8, addr<float>(0), addr<float>(1), addr<float>(2), 100, 70, 4099, int64_t{4099}, int64_t{1},
           int64_t{70}, int64_t{1}, int64_t{70}, int64_t{1}, int64_t{3}, int64_t{0}, int64_t{100 * 4099}, int64_t{0},
           int64_t{4099 * 70}, int64_t{0}, int64_t{7000}, 1024, int64_t{6 * 7000}, config(128, 128, 32, 1, true, false));
  // f16 without tensor-map-friendly strides.
  compiles(split_k::product_kernel(DType::f16), 4, addr<f16_t>(0), addr<f16_t>(1), addr<float>(2), 64, 64, 3000,
           int64_t{3001}, int64_t{1}, int64_t{1}, int64_t{3001}, int64_t{64}, int64_t{1}, int64_t{1}, int64_t{0},
           int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, 512, int64_t{4096},
           config(64, 64, 32, 0, true, false));
}

// The split changes the K loop's start and trip count only: for each operand layout the split
// kernel takes the same tensor-core instructions, asynchronous copies and TMA stages as the
// unsplit one (ops::matmul_kernel) on sm_90a.
BOOST_AUTO_TEST_CASE(split_keeps_the_unsplit_loop) {
  if (!nvrtc_present()) return;
  const char* markers[] = {"wgmma.mma_async", "tt_mma_f16(&", "tt_mma_tf32(&", "tt_cp_async16(",
                           "stages filled by TMA", "raw stages"};
  struct Case {
    DType dtype;
    int64_t sam, sak, sbk, sbn;
    int warps;
    Meta meta;
  };
  const int M = 1536, N = 384, K = 16384;
  const Case cases[] = {
      {DType::bf16, K, 1, N, 1, 8, config(128, 256, 64, 0, false, true)},   // TMA
      {DType::bf16, 1, M, N, 1, 4, config(128, 128, 32, 0, true, false)},   // A^T (the weight gradient)
      {DType::f16, K, 1, 1, K, 4, config(64, 128, 32, 0, true, false)},     // B^T
      {DType::f32, 1, M, N, 1, 8, config(128, 128, 32, 1, true, false)},    // tf32, A^T
      {DType::f32, K, 1, N, 1, 4, config(64, 64, 32, 1, true, false)},      // tf32
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(tritium::dtype_name(c.dtype) << " BLOCK_M " << c.meta["BLOCK_M"] << " strides " << c.sam << "," << c.sak << "," << c.sbk << "," << c.sbn) {
      auto generate = [&](tritium::Kernel& k, auto c_ptr, auto... split) {
        tritium::jit::CompileOptions opts;
        opts.num_warps = c.warps;
        opts.num_stages = 3;
        auto run = [&](auto a_ptr) {
          auto f = k.optimized_function(a_ptr, a_ptr + 0x100000, c_ptr, M, N, K, c.sam, c.sak, c.sbk, c.sbn,
                                        int64_t{N}, int64_t{1}, int64_t{1}, int64_t{0}, int64_t{0}, int64_t{0},
                                        int64_t{0}, int64_t{0}, int64_t{0}, split..., c.meta);
          return cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts, kH100SharedMemory, 90).source;
        };
        if (c.dtype == DType::bf16) return run(addr<bf16_t>(0));
        if (c.dtype == DType::f16) return run(addr<f16_t>(0));
        return run(addr<float>(0));
      };
      std::string plain = c.dtype == DType::bf16   ? generate(tritium::ops::matmul_kernel(c.dtype), addr<bf16_t>(2))
                          : c.dtype == DType::f16 ? generate(tritium::ops::matmul_kernel(c.dtype), addr<f16_t>(2))
                                                  : generate(tritium::ops::matmul_kernel(c.dtype), addr<float>(2));
      std::string split = generate(split_k::product_kernel(c.dtype), addr<float>(2), 4096, int64_t{M * N});
      bool any = false;
      for (const char* m : markers) {
        const bool in_plain = plain.find(m) != std::string::npos;
        any |= in_plain;
        BOOST_TEST((split.find(m) != std::string::npos) == in_plain, m);
      }
      BOOST_TEST(any, "the unsplit kernel uses none of the markers");
    }
  }
}

// The sum of the partials, with and without addmm's epilogue (a bias row: stride 0 along M).
BOOST_AUTO_TEST_CASE(sum_kernel_compiles) {
  if (!nvrtc_present()) return;
  for (DType d : {DType::f16, DType::bf16, DType::f32}) {
    for (bool has_self : {false, true}) {
      BOOST_TEST_CONTEXT(tritium::dtype_name(d) << (has_self ? " with self" : "")) {
        tritium::Kernel& k = split_k::sum_kernel(d);
        auto run = [&](auto* c) {
          compiles(k, 4, addr<float>(0), c, int64_t{1536}, int64_t{384}, 4, int64_t{1536 * 384}, int64_t{1},
                   int64_t{0}, int64_t{0}, int64_t{384}, int64_t{1}, c + 0x100000, int64_t{0}, int64_t{0}, int64_t{0},
                   int64_t{1}, 1.0f, 1.0f, 1024, has_self);
        };
        if (d == DType::f16) run(addr<f16_t>(1));
        else if (d == DType::bf16) run(addr<bf16_t>(1));
        else run(addr<float>(1));
      }
    }
  }
  compiles(split_k::sum_kernel(DType::f64), 4, addr<double>(0), addr<double>(1), int64_t{100}, int64_t{70}, 3,
           int64_t{7000}, int64_t{2}, int64_t{14000}, int64_t{7000}, int64_t{1}, int64_t{100}, addr<double>(3),
           int64_t{7000}, int64_t{0}, int64_t{70}, int64_t{1}, 2.0, 0.5, 1024, true);
}

// The unsplit product with the epilogue: a Linear's bias in bf16 through TMA tiles, and addmm's
// full self in fp32 on tf32 tensor cores; the tensor-core path is the plain kernel's.
BOOST_AUTO_TEST_CASE(epilogue_kernel_compiles) {
  if (!nvrtc_present()) return;
  auto bias = compiles(tritium::ops::matmul_epilogue_kernel(DType::bf16), 8, addr<bf16_t>(0), addr<bf16_t>(1),
                       addr<bf16_t>(2), 16384, 1536, 384, int64_t{384}, int64_t{1}, int64_t{1536}, int64_t{1},
                       int64_t{1536}, int64_t{1}, int64_t{1}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0},
                       int64_t{0}, int64_t{0}, addr<bf16_t>(3), int64_t{0}, int64_t{1}, int64_t{0}, int64_t{0}, 1.0f,
                       1.0f, [] {
                         Meta m = config(128, 256, 64, 0, false, true);
                         m.set("HAS_SELF", true);
                         return m;
                       }());
  BOOST_TEST(bias.tma_maps.size() == 2u);
  BOOST_TEST(bias.source.find("wgmma.mma_async") != std::string::npos);
  Meta tf32 = config(128, 128, 32, 1, true, false);
  tf32.set("HAS_SELF", true);
  compiles(tritium::ops::matmul_epilogue_kernel(DType::f32), 8, addr<float>(0), addr<float>(1), addr<float>(2), 1000,
           700, 333, int64_t{333}, int64_t{1}, int64_t{700}, int64_t{1}, int64_t{700}, int64_t{1}, int64_t{1},
           int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, addr<float>(3), int64_t{1},
           int64_t{1000}, int64_t{0}, int64_t{0}, 0.5f, 2.0f, tf32);
}

BOOST_AUTO_TEST_SUITE_END()
#endif
