// The kernels of cat / stack (cat_copy) and of pooling (pool2d_fwd / pool2d_bwd) as CUDA code
// without a GPU, at the benchmark's shapes (bench/ops_bench_table.cpp: four 2^22-element inputs;
// [83, 64, 56, 56] planes, 3x3 s2 p1 max, 2x2 s2 avg; [83, 64, 3136] for 1-D), in f32 and bf16,
// generated as the backend routes them and compiled by NVRTC for sm_90a and sm_80; TRITIUM_DUMP
// keeps the sources. Checks the properties the s48 changes are for: the copy's 16-byte vector
// accesses, and the pooling kernels' 32-bit index arithmetic. Values run in test_cat_batched and
// test_nn_pool on every backend.
#include <boost/test/unit_test.hpp>

#ifdef TRITIUM_HAS_CUDA_BACKEND
#include <tritium/tritium.h>

#include <array>

#include "cuda_codegen_check.h"
#include "jit/cuda/cubin_stats.h"
#include "ops/cat_pool_kernels.h"
#include "ops/elementwise_kernels.h"

namespace ops = tritium::ops;
namespace tt = tritium::test;
using tritium::DType;

namespace {

template <class T> T* addr(uint64_t i) { return tt::fake_address<T>(i); }

// Registers and SASS instructions of the kernel (for the log: what the lead compares on the GPU).
void log_stats(const tritium::jit::cuda::KernelSource& ks, const std::string& arch, const std::string& what) {
  auto cubin = tritium::jit::cuda::compile_to_cubin(ks.source, ks.entry, arch);
  BOOST_TEST_MESSAGE(what << " " << arch << ": " << tritium::jit::cuda::cubin_registers(cubin) << " registers, "
                          << tritium::jit::cuda::cubin_instructions(cubin) << " SASS instructions");
}

template <class T> std::string cat_source(const std::string& arch, int cc) {
  const int64_t w = int64_t{1} << 22;
  auto ks = tt::compile_cuda(ops::detail::cat_kernel(), tt::CudaCheck().routed().target(cc, arch), addr<T>(0),
                             addr<T>(1), addr<T>(2), addr<T>(3), addr<T>(4), addr<T>(0), addr<T>(0), addr<T>(0),
                             addr<T>(0), w, w, w, w, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, w, w, w, w,
                             int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, w, 2 * w, 3 * w, int64_t{0},
                             int64_t{0}, int64_t{0}, int64_t{0}, int64_t{1}, 4 * w, w / 4096, 4,
                             static_cast<int>(tritium::dtype_of<T>()), 1, 4096);
  log_stats(ks, arch, std::string("cat_copy ") + tritium::dtype_name(tritium::dtype_of<T>()));
  return tt::kernel_body(ks);
}

// cat_copy of `num` inputs of `w` columns along the last dim of [rows, w] tensors (stack along the
// last dim: w = 1): a [4096 / BLOCK, BLOCK] tile of many rows.
template <class T> void cat_narrow_rows(const std::string& arch, int cc, int num, int64_t w) {
  const int64_t rows = 5000, block = w == 1 ? 1 : 4, r = 4096 / block;
  std::array<int64_t, 8> ws{}, os{};
  for (int s = 0; s < num; ++s) ws[s] = w, os[s] = s * w;
  auto ks = tt::compile_cuda(ops::detail::cat_kernel(), tt::CudaCheck().routed().target(cc, arch), addr<T>(0),
                             addr<T>(1), addr<T>(2), addr<T>(3), addr<T>(0), addr<T>(0), addr<T>(0), addr<T>(0),
                             addr<T>(0), w, w, w, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, ws[0],
                             ws[1], ws[2], ws[3], ws[4], ws[5], ws[6], ws[7], os[0], os[1], os[2], os[3], os[4], os[5],
                             os[6], os[7], rows, num * w, int64_t{1}, num, static_cast<int>(tritium::dtype_of<T>()),
                             static_cast<int>(r), static_cast<int>(block));
  log_stats(ks, arch, fmt::format("cat_copy {} inputs of {} columns", num, w));
}

// pool2d_fwd over an NCHW [83, 64, H, W] input (1-D: H = 1) with window k x k, stride s, pad p.
template <class T>
std::string pool_fwd_source(const std::string& arch, int cc, int mode, int64_t H, int64_t W, int64_t kh, int64_t kw,
                            int64_t s, int64_t p, int bw, int bc, bool i64 = false) {
  const int64_t C = 64, OH = (H + 2 * (kh > 1 ? p : 0) - kh) / (kh > 1 ? s : 1) + 1, OW = (W + 2 * p - kw) / s + 1;
  auto ks = tt::compile_cuda(ops::detail::pool2d_forward_kernel(), tt::CudaCheck().routed().target(cc, arch),
                             addr<T>(0), addr<T>(1), addr<int64_t>(2), C, H, W, OH, OW, C * H * W, H * W, W,
                             int64_t{1}, C * OH * OW, OH * OW, OW, int64_t{1}, kh, kw, kh > 1 ? s : int64_t{1}, s,
                             kh > 1 ? p : int64_t{0}, p, int64_t{1}, int64_t{1}, int64_t{0}, mode, true,
                             static_cast<int>(ops::detail::math_type(tritium::dtype_of<T>())), false, i64,
                             kh * kw <= 16 ? static_cast<int>(kh) : 0, kh * kw <= 16 ? static_cast<int>(kw) : 0, 0, 0, bw, bc);
  log_stats(ks, arch, fmt::format("pool2d_fwd mode {} {} {}x{} k{}x{} i64 {}", mode,
                                  tritium::dtype_name(tritium::dtype_of<T>()), H, W, kh, kw, i64));
  return tt::kernel_body(ks);
}

template <class T> std::string pool_bwd_source(const std::string& arch, int cc, bool i64 = false) {
  const int64_t C = 64, H = 56, W = 56, OH = 28, OW = 28;
  auto ks = tt::compile_cuda(ops::detail::pool2d_backward_kernel(), tt::CudaCheck().routed().target(cc, arch),
                             addr<T>(0), addr<int64_t>(1), addr<T>(2), C, H, W, OH, OW, C * OH * OW, OH * OW, OW,
                             int64_t{1}, C * OH * OW, OH * OW, OW, int64_t{1}, C * H * W, H * W, W, int64_t{1},
                             int64_t{2}, int64_t{2}, int64_t{3}, int64_t{3}, int64_t{2}, int64_t{2}, int64_t{1},
                             int64_t{1}, int64_t{0}, 0, false,
                             static_cast<int>(ops::detail::math_type(tritium::dtype_of<T>())),
                             static_cast<int>(tritium::dtype_of<T>()), false, i64, 2, 2, 0, 0, 32, 8);
  log_stats(ks, arch, fmt::format("pool2d_bwd max {} i64 {}", tritium::dtype_name(tritium::dtype_of<T>()), i64));
  return tt::kernel_body(ks);
}

// Channels-last [83, 64, 56, 56] (strides H W C, 1, W C, C): max 3x3 s2 p1 forward and backward
// over a [4 columns, 64 channels] tile, channels the fast dim.
template <class T> void pool_channels_last(const std::string& arch, int cc) {
  const int64_t C = 64, H = 56, W = 56, OH = 28, OW = 28, one = 1, two = 2, three = 3, zero = 0;
  const int acc = static_cast<int>(ops::detail::math_type(tritium::dtype_of<T>()));
  auto c = tt::CudaCheck().routed().target(cc, arch);
  log_stats(tt::compile_cuda(ops::detail::pool2d_forward_kernel(), c, addr<T>(0), addr<T>(1), addr<int64_t>(2), C, H,
                             W, OH, OW, H * W * C, one, W * C, C, OH * OW * C, one, OW * C, C, three, three, two, two,
                             one, one, one, one, zero, 0, true, acc, true, false, 3, 3, 0, 0, 4, 64),
            arch, std::string("pool2d_fwd channels-last ") + tritium::dtype_name(tritium::dtype_of<T>()));
  log_stats(tt::compile_cuda(ops::detail::pool2d_backward_kernel(), c, addr<T>(0), addr<int64_t>(1), addr<T>(2), C, H,
                             W, OH, OW, OH * OW * C, one, OW * C, C, OH * OW * C, one, OW * C, C, H * W * C, one, W * C,
                             C, two, two, three, three, two, two, one, one, zero, 0, false, acc,
                             static_cast<int>(tritium::dtype_of<T>()), true, false, 2, 2, 0, 0, 4, 64),
            arch, std::string("pool2d_bwd channels-last ") + tritium::dtype_name(tritium::dtype_of<T>()));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_cat_pool_codegen)

BOOST_AUTO_TEST_CASE(cat_copy_moves_16_bytes_a_thread) {
  if (!tt::nvrtc_or_skip()) return;
  for (auto [arch, cc] : {std::pair<std::string, int>{"sm_90a", 90}, {"sm_80", 80}}) {
    BOOST_TEST_CONTEXT(arch) {
      for (const std::string& body : {cat_source<float>(arch, cc), cat_source<tritium::bf16_t>(arch, cc)}) {
        // Each input's rows as predicated 16-byte loads and stores (the mask is constant over a
        // vector: the widths are multiples of 16), not element accesses.
        BOOST_TEST(tt::occurrences(body, "tt_ld_pred<16>") == 4u);
        BOOST_TEST(tt::occurrences(body, "tt_st_pred<16>") == 4u);
      }
      cat_narrow_rows<float>(arch, cc, 3, 3);
      cat_narrow_rows<tritium::bf16_t>(arch, cc, 2, 1);
    }
  }
}

BOOST_AUTO_TEST_CASE(pool_kernels_index_in_32_bits) {
  if (!tt::nvrtc_or_skip()) return;
  for (auto [arch, cc] : {std::pair<std::string, int>{"sm_90a", 90}, {"sm_80", 80}}) {
    BOOST_TEST_CONTEXT(arch) {
      // max 3x3 s2 p1 and avg 2x2 s2 over 56 x 56 (tile [8 channels, 32 columns]); avg 2 s2 over 3136.
      for (const std::string& body :
           {pool_fwd_source<float>(arch, cc, 0, 56, 56, 3, 3, 2, 1, 32, 8),
            pool_fwd_source<tritium::bf16_t>(arch, cc, 0, 56, 56, 3, 3, 2, 1, 32, 8),
            pool_fwd_source<float>(arch, cc, 1, 56, 56, 2, 2, 2, 0, 32, 8),
            pool_fwd_source<tritium::bf16_t>(arch, cc, 1, 1, 3136, 1, 2, 2, 0, 128, 2),
            pool_bwd_source<float>(arch, cc), pool_bwd_source<tritium::bf16_t>(arch, cc)}) {
        // The window and address arithmetic is int32_t; only the saved indices are 64-bit.
        BOOST_TEST(tt::occurrences(body, "int32_t") > 0u);
      }
      pool_channels_last<float>(arch, cc);
      pool_channels_last<tritium::bf16_t>(arch, cc);
      // Past 2^31 the same kernels index in 64 bits (max, adaptive average, max backward).
      pool_fwd_source<float>(arch, cc, 0, 56, 56, 3, 3, 2, 1, 32, 8, true);
      pool_fwd_source<tritium::bf16_t>(arch, cc, 2, 56, 56, 2, 2, 2, 0, 32, 8, true);
      pool_bwd_source<float>(arch, cc, true);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

#endif  // TRITIUM_HAS_CUDA_BACKEND
