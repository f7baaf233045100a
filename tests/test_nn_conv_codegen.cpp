// The convolution kernels' CUDA code without a GPU (issue 30): the implicit-GEMM forward kernel
// (conv2d's forward and dgrad, conv_transpose2d's forward) and the weight-gradient kernel, traced
// with the arguments ops/conv.cpp passes at ResNet-50 layer shapes (batch 64, bf16, channels-last
// tensors), generated through the layout generator and compiled by NVRTC for sm_90a and sm_80:
// the dot must run on tensor cores (wgmma on Hopper, mma.sync on Ampere) and the gathered tiles be
// loaded with 16-byte cp.async into pipeline stages. Running them is for the GPU machine
// (tests/test_nn_conv.cpp). TRITIUM_DUMP=<dir> writes each generated source there.
#include <boost/test/unit_test.hpp>

#ifdef TRITIUM_HAS_CUDA_BACKEND
#include <tritium/tritium.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <type_traits>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "ops/conv_gemm.h"

namespace cuda = tritium::jit::cuda;
using tritium::bf16_t;

namespace {

template <class T> T* addr(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x1000000); }

template <class... A>
std::string compile_for(tritium::Kernel& k, const std::string& tag, int num_warps, int num_stages, int cc,
                        const std::string& arch, const A&... args) {
  auto f = k.optimized_function(args...);
  tritium::jit::CompileOptions opts;
  opts.num_warps = num_warps;
  opts.num_stages = num_stages;
  cuda::KernelSource ks = cuda::generate_cuda_layouts(*f, opts, 219 * 1024, cc);
  if (const char* dir = std::getenv("TRITIUM_DUMP"); dir && *dir)
    std::ofstream(std::string(dir) + "/" + ks.entry + "." + tag + "." + arch + ".cu") << ks.source;
  std::vector<char> cubin;
  try {
    cubin = cuda::compile_to_cubin(ks.source, ks.entry, arch);
  } catch (const tritium::Error& e) {
    BOOST_ERROR("kernel " << ks.entry << " (" << tag << ") does not compile for " << arch << ":\n" << e.what());
  }
  BOOST_TEST(!cubin.empty());
  if (const char* dir = std::getenv("TRITIUM_DUMP"); dir && *dir)  // registers: cuobjdump -res-usage
    std::ofstream(std::string(dir) + "/" + ks.entry + "." + tag + "." + arch + ".cubin", std::ios::binary)
        .write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  return ks.source.substr(ks.source.find("__global__"));
}

// NHWC strides (n, c, h, w) of an [n, c, h, w] tensor.
struct Strides4 {
  int32_t n, c, h, w;
};
Strides4 nhwc(int32_t c, int32_t h, int32_t w) { return {h * w * c, 1, w * c, c}; }
Strides4 nchw(int32_t c, int32_t h, int32_t w) { return {c * h * w, h * w, w, 1}; }

// One call of the forward kernel as ops/conv_gemm.cpp's implicit_gemm makes it (no bias, one
// group): input [n, c, ih, iw] with strides xs, weight strides ws (group, out_channel,
// in_channel, row, col), output [n, o, oh, ow] with strides ys.
struct ForwardCall {
  int32_t n, c, ih, iw, o, oh, ow, k, stride, pad;
  Strides4 xs, ys;
  int32_t ws[5];
  bool transposed, phased;
};
// T: the operands' element type (bf16_t, or float with tf32 products).
template <class T = bf16_t>
std::string forward(const ForwardCall& a, const std::string& tag, int warps, int stages, int cc,
                    const std::string& arch, int bm, int bn, int bk) {
  const int tf32 = std::is_same_v<T, float>;
  const auto ds = tritium::ops::conv_detail::divisor(a.stride), dc = tritium::ops::conv_detail::divisor(a.c);
  return compile_for(tritium::ops::conv_detail::forward_kernel(), tag, warps, stages, cc, arch, addr<T>(0), addr<T>(1),
                     addr<T>(2), addr<T>(3), addr<int32_t>(4), a.n * a.oh * a.ow, a.ih, a.iw, a.oh, a.ow, a.c, a.o, a.k,
                     a.k, a.stride, a.stride, a.pad, a.pad, 1, 1, a.xs.n, a.xs.c, a.xs.h, a.xs.w, a.ws[0], a.ws[1],
                     a.ws[2], a.ws[3], a.ws[4], a.ys.n, a.ys.c, a.ys.h, a.ys.w, ds.magic, ds.shift, ds.magic, ds.shift,
                     dc.magic, dc.shift, bm, bn, bk, a.transposed, true, a.phased, false, static_cast<int>(tritium::DType::f32), tf32,
                     (a.c + bk - 1) / bk, a.phased ? 0 : a.k);
}

// ResNet-50 layer1's 3x3 convolution: 64 -> 64 channels at 56 x 56, batch 64, padding 1; the
// weight [O, C, 3, 3] channels-last in memory ([O, 3, 3, C]).
constexpr int32_t N = 64, C = 64, H = 56, W = 56, O = 64;
ForwardCall layer1_forward() {
  return {N, C, H, W, O, H, W, 3, 1, 1, nhwc(C, H, W), nhwc(O, H, W), {0, 9 * C, 1, 3 * C, C}, false, false};
}
// Its input gradient: the output gradient [N, O, H, W] through the same weight read transposed
// (transposed_weight_strides: out_channel = w.stride(1), in_channel = w.stride(0)).
ForwardCall layer1_dgrad() {
  return {N, O, H, W, C, H, W, 3, 1, 1, nhwc(O, H, W), nhwc(C, H, W), {O * 9 * C, 1, 9 * C, 3 * C, C}, true, false};
}

bool has(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// Integer divisions and remainders in the kernel's pipelined K loop whose divisor is not a
// compile-time constant (-1: no such loop found). A runtime division is ~25 instructions; they made
// the weight gradient's loop 543 SASS instructions for two wgmma.
int runtime_divisions_in_loop(const std::string& s) {
  const size_t begin = s.find("for (int32_t iv"), end = s.find("// no copy lands after the loop");
  if (begin == std::string::npos || end == std::string::npos || end < begin) return -1;
  std::set<std::string> constants;
  const std::regex constant(R"(int32_t const (t\d+) = \(int32_t\)-?\d+;)");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), constant); it != std::sregex_iterator(); ++it)
    constants.insert((*it)[1]);
  const std::string loop = s.substr(begin, end - begin);
  const std::regex division(R"(tt_(div|rem)<[^>]+>\([^,]+, ([^)]+)\))");
  int n = 0;
  for (auto it = std::sregex_iterator(loop.begin(), loop.end(), division); it != std::sregex_iterator(); ++it) {
    const std::string d = (*it)[2];
    if (!constants.count(d) && !std::regex_match(d, std::regex(R"(\(?(\(int32_t\))?-?\d+\)?)"))) ++n;
  }
  return n;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_conv_codegen)

BOOST_AUTO_TEST_CASE(forward_kernel_uses_tensor_cores_and_cp_async) {
  if (!cuda::nvrtc_available()) {
    BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << cuda::nvrtc_unavailable_reason());
    return;
  }
  const std::string h = forward(layer1_forward(), "fwd", 4, 3, 90, "sm_90a", 128, 64, 64);
  BOOST_TEST(has(h, "wgmma.mma_async"));
  BOOST_TEST(has(h, "tt_cp_async<16>("));
  BOOST_TEST(has(h, "// pipelined:"));
  // The widest candidate (128 x 256 x 64, 8 warps, 3 stages) at ResNet-50 layer2's 1x1 128 -> 512.
  const std::string w = forward({N, 128, 28, 28, 512, 28, 28, 1, 1, 0, nhwc(128, 28, 28), nhwc(512, 28, 28),
                                 {0, 128, 1, 128, 128}, false, false},
                                "fwd_wide", 8, 3, 90, "sm_90a", 128, 256, 64);
  BOOST_TEST(has(w, "wgmma.mma_async"));
  BOOST_TEST(has(w, "tt_cp_async<16>("));
  const std::string a = forward(layer1_forward(), "fwd", 4, 3, 80, "sm_80", 128, 64, 32);
  BOOST_TEST(has(a, "mma.sync"));
  BOOST_TEST(!has(a, "wgmma"));
}

// A contiguous (NCHW) output written directly: the tile's rows (pixels) are contiguous there.
BOOST_AUTO_TEST_CASE(forward_kernel_writes_a_contiguous_output) {
  if (!cuda::nvrtc_available()) return;
  ForwardCall call = layer1_forward();
  call.ys = nchw(O, H, W);
  const std::string h = forward(call, "fwd_nchw_out", 4, 3, 90, "sm_90a", 128, 64, 64);
  BOOST_TEST(has(h, "wgmma.mma_async"));
  BOOST_TEST(has(h, "tt_cp_async<16>("));
}

// dgrad as conv_backward launches it: the transposed index rule, the weight's output channels
// contiguous along the dot's N.
BOOST_AUTO_TEST_CASE(input_gradient_uses_tensor_cores_and_cp_async) {
  if (!cuda::nvrtc_available()) return;
  const std::string h = forward(layer1_dgrad(), "dgrad", 4, 3, 90, "sm_90a", 128, 64, 64);
  BOOST_TEST(has(h, "wgmma.mma_async"));
  BOOST_TEST(has(h, "tt_cp_async<16>("));
  const std::string a = forward(layer1_dgrad(), "dgrad", 4, 3, 80, "sm_80", 128, 64, 32);
  BOOST_TEST(has(a, "mma.sync"));
}

// dgrad of a strided convolution (ResNet-50 layer3's 3x3 stride 2, 256 channels, 28x28 -> 14x14):
// one launch, program_id(2) the output phase, each phase's taps from the host's table.
BOOST_AUTO_TEST_CASE(phased_input_gradient_uses_tensor_cores_and_cp_async) {
  if (!cuda::nvrtc_available()) return;
  const int32_t c = 256, ih = 28, oh = 14;
  ForwardCall call{N, c, oh, oh, c, ih, ih, 3, 2, 1, nhwc(c, oh, oh), nhwc(c, ih, ih),
                   {c * 9 * c, 1, 9 * c, 3 * c, c}, true, true};
  const std::string h = forward(call, "dgrad_phased", 8, 3, 90, "sm_90a", 128, 128, 64);
  BOOST_TEST(has(h, "wgmma.mma_async"));
  BOOST_TEST(has(h, "tt_cp_async<16>("));
  BOOST_TEST(has(h, "// pipelined:"));
  const std::string a = forward(call, "dgrad_phased", 4, 4, 80, "sm_80", 128, 128, 32);
  BOOST_TEST(has(a, "mma.sync"));
  BOOST_TEST(has(a, "tt_cp_async<16>("));
}

// The weight-gradient kernel at layer1's shape as weight_gradient launches it: grad_out [64, 64,
// 56, 56] times the gathered input, K = N*OH*OW split in 8, partial sums in f32; `taps` taps of
// BLOCK_N / taps channels a program. T: the operands' element type (float: tf32 products).
template <class T = bf16_t>
std::string wgrad(const std::string& tag, int warps, int stages, int cc, const std::string& arch, int bm, int bn,
                  int bk, int taps, int32_t c = C, int32_t o = O, int32_t h = H, int32_t w = W) {
  const int32_t p = N * h * w;
  const Strides4 g = nhwc(o, h, w), x = nhwc(c, h, w);
  const auto dw = tritium::ops::conv_detail::divisor(w), dh = tritium::ops::conv_detail::divisor(h);
  return compile_for(tritium::ops::conv_detail::weight_grad_kernel(), tag, warps, stages, cc, arch, addr<T>(0),
                     addr<T>(1), addr<float>(2), p, p / 8, 8, h, w, h, w, c, o, 3, 3, 1, 1, 1, 1, 1, 1, g.n, g.c, g.h,
                     g.w, x.n, x.c, x.h, x.w, o * c * 9, g.w, dw.magic, dw.shift, dh.magic, dh.shift, bm, bn, bk, true,
                     taps, true, true, static_cast<int>(tritium::DType::f32), std::is_same_v<T, float> ? 1 : 0);
}

// On wgmma both operands come MN-major from the cp.async ring (the instruction's two transpose
// bits set): the gradient tile's output channels and the input tile's channels are the
// contiguous dims, copied 16 bytes at a time - no element gathers into a K-major tile. With
// several taps a program (TAPS 2, 4: 64 x 128 and 64 x 256 tiles for 64 channels) the gathered
// offsets are 2-D but constant over each tap's channel run, so the copies stay 16-byte ones.
BOOST_AUTO_TEST_CASE(weight_gradient_kernel_uses_tensor_cores) {
  if (!cuda::nvrtc_available()) return;
  struct Tile {
    int bm, bn, bk, warps, stages, taps;
    const char* shape;
  };
  for (Tile t : {Tile{64, 64, 32, 4, 3, 1, "m64n64k16"}, Tile{64, 128, 32, 4, 3, 2, "m64n128k16"},
                 Tile{64, 256, 32, 8, 3, 4, "m64n128k16"}, Tile{128, 128, 32, 8, 3, 2, "m64n128k16"}}) {
    const std::string s = wgrad("wgrad_taps" + std::to_string(t.taps) + "_" + std::to_string(t.bn), t.warps, t.stages,
                                90, "sm_90a", t.bm, t.bn, t.bk, t.taps);
    BOOST_TEST(has(s, (std::string("wgmma.mma_async.sync.aligned.") + t.shape + ".f32.bf16.bf16").c_str()),
               "BLOCK_N " << t.bn << " TAPS " << t.taps);
    BOOST_TEST(has(s, "p, 1, 1, 1, 1;"), "both operands MN-major from shared memory, TAPS " << t.taps);
    BOOST_TEST(has(s, "tt_cp_async<16>("));
    BOOST_TEST(!has(s, "tt_cp_async<2>("));
    BOOST_TEST(has(s, "// pipelined:"));
  }
  // The small CNN's 32 -> 64 layer at 28 x 28: 4 taps of 32 channels a 64 x 128 tile.
  const std::string small = wgrad("wgrad_taps4_c32", 4, 3, 90, "sm_90a", 64, 128, 32, 4, 32, 64, 28, 28);
  BOOST_TEST(has(small, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"));
  BOOST_TEST(has(small, "p, 1, 1, 1, 1;"));
  BOOST_TEST(has(small, "tt_cp_async<16>("));
  BOOST_TEST(has(wgrad("wgrad", 4, 3, 80, "sm_80", 64, 64, 32, 1), "mma.sync"));
  BOOST_TEST(has(wgrad("wgrad_taps2", 4, 3, 80, "sm_80", 64, 128, 32, 2), "mma.sync"));
  // The autotuner's 2-warp candidates on Hopper: mma.sync, the M-major gradient tile read with
  // ldmatrix.trans behind 16-byte cp.async.
  for (auto [bm, bn, bk, stages] : {std::tuple{64, 64, 32, 4}, std::tuple{64, 128, 32, 4}, std::tuple{128, 64, 32, 4}}) {
    const std::string s = wgrad("wgrad_2warps", 2, stages, 90, "sm_90a", bm, bn, bk, 1);
    BOOST_TEST(has(s, "mma.sync"));
    BOOST_TEST(has(s, "tt_ldsm_x4_trans("));
    BOOST_TEST(has(s, "tt_cp_async<16>("));
    BOOST_TEST(has(s, "// pipelined:"));
  }
}

// fp32 convolutions multiply in tf32 by default (set_conv_allow_tf32, PyTorch's cudnn.allow_tf32):
// the forward, dgrad and weight gradient at layer1's shape in f32 channels-last reach wgmma's
// tf32 form (K-major tiles only: an MN-major operand - dgrad's weight, both of the weight
// gradient's - is transposed into the ring by 4-byte cp.async).
BOOST_AUTO_TEST_CASE(fp32_convolutions_use_tf32_wgmma) {
  if (!cuda::nvrtc_available()) return;
  const std::string f = forward<float>(layer1_forward(), "fwd_tf32", 4, 3, 90, "sm_90a", 128, 64, 32);
  BOOST_TEST(has(f, "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"));
  BOOST_TEST(has(f, "tt_cp_async<16>("));
  const std::string d = forward<float>(layer1_dgrad(), "dgrad_tf32", 4, 3, 90, "sm_90a", 128, 64, 32);
  BOOST_TEST(has(d, "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"));
  BOOST_TEST(has(d, "tt_cp_async<4>("));
  const std::string w = wgrad<float>("wgrad_tf32", 4, 3, 90, "sm_90a", 64, 64, 32, 1);
  BOOST_TEST(has(w, "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"));
  BOOST_TEST(has(w, "tt_cp_async<4>("));
  BOOST_TEST(has(w, "// pipelined:"));
}

// No K loop divides by a runtime value: the forward (direct, transposed, phased) and the weight
// gradient (1 and 2 taps a program) at ResNet-50 shapes.
BOOST_AUTO_TEST_CASE(k_loops_divide_by_no_runtime_value) {
  if (!cuda::nvrtc_available()) return;
  const int32_t c = 256, ih = 28, oh = 14;
  const ForwardCall phased{N, c, oh, oh, c, ih, ih, 3, 2, 1, nhwc(c, oh, oh), nhwc(c, ih, ih),
                           {c * 9 * c, 1, 9 * c, 3 * c, c}, true, true};
  const std::pair<std::string, std::string> kernels[] = {
      {"forward", forward(layer1_forward(), "fwd", 4, 3, 90, "sm_90a", 128, 64, 64)},
      {"dgrad", forward(layer1_dgrad(), "dgrad", 4, 3, 90, "sm_90a", 128, 64, 64)},
      {"phased dgrad", forward(phased, "dgrad_phased", 8, 3, 90, "sm_90a", 128, 128, 64)},
      {"wgrad", wgrad("wgrad_taps1_64", 4, 3, 90, "sm_90a", 64, 64, 32, 1)},
      {"wgrad 2 taps", wgrad("wgrad_taps2_128", 4, 3, 90, "sm_90a", 64, 128, 32, 2)}};
  for (const auto& [what, source] : kernels) BOOST_TEST(runtime_divisions_in_loop(source) == 0, what);
}

BOOST_AUTO_TEST_SUITE_END()

#endif  // TRITIUM_HAS_CUDA_BACKEND
