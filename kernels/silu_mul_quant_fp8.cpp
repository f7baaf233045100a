// silu_mul_quant_fp8: vLLM's fused SiLU-and-multiply with per-token-group fp8 quantisation and
// column-major scales (vllm-project/vllm vllm/model_executor/layers/quantization/utils/fp8_utils.py,
// read at commit 007d50058a06: _silu_mul_per_token_group_quant_fp8_colmajor and its wrapper
// silu_mul_per_token_group_quant_fp8_colmajor). Apache-2.0, as vLLM. The activation between a
// fused MoE's two block-scaled fp8 GEMMs (DeepGEMM's path).
//
// A (M / BLOCK_M, (N / 2) / GROUP_SIZE) grid, BLOCK_M = 8, BLOCK_N = GROUP_SIZE = 128; a program
// past M returns early. Each program reads [BLOCK_M, 128] of the gate half and of the up half,
// computes silu(gate) (in f32, rounded to the input dtype) times up, and quantises each row of the
// tile with its own scale (absmax over 448, at least eps; a power of two with UE8M0) into e4m3,
// the scales stored column-major (a [groups, M] buffer seen transposed). The wrapper asserts M a
// multiple of 128 and N of 256: no masks.
//
// Deviations: use_ue8m0 = None (is_deep_gemm_e8m0_used()) is false here; current_platform is CUDA
// (e4m3fn, -448 / 448; ROCm's fnuz 224 not ported).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

auto _silu_mul_per_token_group_quant_fp8_colmajor = tritium::kernel(
    "_silu_mul_per_token_group_quant_fp8_colmajor",
    [](P y_ptr,    // [M, N]
       P y_q_ptr,  // [M, N // 2]
       P y_s_ptr,  // [M, (N // 2) // GROUP_SIZE]
       tl::i32 M,  // num tokens
       tl::i32 N,  // intermediate size
       tl::i64 y_s_col_stride, tl::f32 eps, tl::f32 fp8_min, tl::f32 fp8_max, bool use_ue8m0, int GROUP_SIZE,
       int BLOCK_M, int BLOCK_N) {
      // Each thread block (BLOCK_N) computes [BLOCK_M, GROUP_SIZE] act-mul outputs, then quantizes
      // the block and fills the outputs at the right positions.
      auto pid_m = tl::program_id(0);
      auto pid_n = tl::program_id(1);
      auto N_2 = N / 2;

      auto m_offset = pid_m * BLOCK_M;
      auto n_offset = pid_n * BLOCK_N;
      tl::if_(m_offset >= M, [&] { tl::return_(); });

      auto offs_n = tl::arange(0, BLOCK_N).to(tl::int64);
      auto offs_m = tl::arange(0, BLOCK_M).to(tl::int64);

      auto base_y_ptr = y_ptr + m_offset * N + n_offset;

      auto act_in_ptrs = base_y_ptr + offs_m(tl::_, tl::None) * N + offs_n(tl::None, tl::_);

      auto act_in = tl::load(act_in_ptrs);
      auto mul_in = tl::load(act_in_ptrs + N_2);

      // silu & mul
      act_in = act_in.to(tl::float32);
      auto one_f32 = tl::full({}, 1, tl::float32);  // tl.cast(1, tl.float32)
      auto silu_out = (act_in / (one_f32 + tl::exp(-act_in))).to(y_ptr.element_ty());
      auto y = (silu_out * mul_in).to(tl::float32);

      // quant
      auto _absmax = tl::maximum(tl::max(tl::abs(y), 1), eps);
      auto scale_raw = _absmax / fp8_max;
      auto y_s = use_ue8m0 ? tl::exp2(tl::ceil(tl::log2(scale_raw))) : scale_raw;
      y_s = tl::reshape(y_s, {BLOCK_M, 1});
      auto y_q = tl::clamp(y / y_s, fp8_min, fp8_max).to(y_q_ptr.element_ty());

      // store y_q
      auto base_y_q_ptr = y_q_ptr + m_offset * N_2 + n_offset;
      auto y_q_ptrs = base_y_q_ptr + offs_m(tl::_, tl::None) * N_2 + offs_n(tl::None, tl::_);
      tl::store(y_q_ptrs, y_q);

      // store y_s
      auto group_id = n_offset / GROUP_SIZE;
      auto base_y_s_ptr = y_s_ptr + group_id * y_s_col_stride + m_offset;
      auto y_s_ptrs = base_y_s_ptr + offs_m;
      y_s = tl::reshape(y_s, {BLOCK_M});
      tl::store(y_s_ptrs, y_s);
    },
    {"y_ptr", "y_q_ptr", "y_s_ptr", "M", "N", "y_s_col_stride", "eps", "fp8_min", "fp8_max", "use_ue8m0", "GROUP_SIZE",
     "BLOCK_M", "BLOCK_N"});

bool g_poison = false;  // while checking: the values start as e4m3's NaN, the scales as NaN

// An fp8 / f32 tensor filled with NaN (e4m3's 0x7f) while checking, else uninitialised.
Tensor make(const std::vector<int64_t>& shape, DType dtype, const tritium::Device& device) {
  if (!g_poison) return Tensor::empty(shape, dtype, device);
  return tritium::ops::full(shape, NAN, DType::f32, device).to(dtype);
}

// silu_mul_per_token_group_quant_fp8_colmajor(input [M, N], output [M, N / 2] or undefined):
// (e4m3 values [M, N / 2], f32 scales [M, N / 2 / 128] with column-major strides).
std::pair<Tensor, Tensor> silu_mul_per_token_group_quant_fp8_colmajor(const Tensor& input, Tensor output = Tensor(),
                                                                      bool use_ue8m0 = false, double eps = 1e-10) {
  const int64_t GROUP_SIZE = 128;
  if (input.dim() != 2) tritium::fail("silu_mul_per_token_group_quant_fp8_colmajor: input must be 2-D, got {}-D", input.dim());
  if (output.defined() && output.dim() != 2) tritium::fail("silu_mul_per_token_group_quant_fp8_colmajor: output must be 2-D");
  if (input.size(0) % GROUP_SIZE != 0)
    tritium::fail("silu_mul_per_token_group_quant_fp8_colmajor: input.size(0) = {} is not a multiple of {}", input.size(0), GROUP_SIZE);
  if (input.size(1) % (GROUP_SIZE * 2) != 0)
    tritium::fail("silu_mul_per_token_group_quant_fp8_colmajor: input.size(1) = {} is not a multiple of {}", input.size(1),
                  GROUP_SIZE * 2);
  const int64_t M = input.size(0), N = input.size(1), N_2 = N / 2;
  if (!output.defined()) output = make({M, N_2}, DType::f8e4m3, input.device());
  Tensor output_scales = make({N_2 / GROUP_SIZE, M}, DType::f32, input.device()).transpose(0, 1);

  const int BLOCK_M = 8, BLOCK_N = int(GROUP_SIZE);
  const double fp8_min = -448.0, fp8_max = 448.0;  // torch.finfo(float8_e4m3fn)
  const tritium::Grid grid(M / BLOCK_M, N_2 / BLOCK_N);
  _silu_mul_per_token_group_quant_fp8_colmajor[grid](input, output, output_scales, int32_t(M), int32_t(N),
                                                     output_scales.stride(-1), float(eps), float(fp8_min), float(fp8_max),
                                                     use_ue8m0, int(GROUP_SIZE), BLOCK_M, BLOCK_N);
  return {output, output_scales};
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

// Rounds float64 values to `dtype` on the host (round to nearest even, as the kernel's casts).
std::vector<double> rounded(std::vector<double> v, DType dtype) {
  for (double& x : v) x = suite::round_to(x, dtype);
  return v;
}

struct Errors {
  double scale = 0;       // largest relative error of a scale against float64
  double mismatched = 0;  // fraction of e4m3 values that differ from the float64 rounding
  double worst_step = 0;  // largest relative difference of such a value (one e4m3 step is <= 1/8)
};

// y = silu(gate) rounded to the input dtype, times up, rounded (the kernel's casts), in float64;
// scales from its rows' groups; values rounded to e4m3 from y / the kernel's own scale.
Errors errors(const tritium::Device& device, int64_t M, int64_t N, DType dtype, bool ue8m0, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> hx(size_t(M * N));
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = normal(rng) * double(1 + (i / 128) % 4);  // ranges differ by group
  for (int64_t j = 0; j < 128; ++j) hx[size_t(N / 2 + j)] = 0;  // row 0's first up group all zero: eps
  Tensor x = Tensor::from_vector(hx, {M, N}, device).to(dtype);
  const auto xr = host(x);
  const int64_t N_2 = N / 2, groups = N_2 / 128;
  std::vector<double> silu(size_t(M * N_2));
  for (int64_t r = 0; r < M; ++r)
    for (int64_t j = 0; j < N_2; ++j) {
      const double g = xr[size_t(r * N + j)];
      silu[size_t(r * N_2 + j)] = g / (1 + std::exp(-g));
    }
  silu = rounded(silu, dtype);
  std::vector<double> y(silu.size());
  for (int64_t r = 0; r < M; ++r)
    for (int64_t j = 0; j < N_2; ++j) y[size_t(r * N_2 + j)] = silu[size_t(r * N_2 + j)] * xr[size_t(r * N + N_2 + j)];
  y = rounded(y, dtype);

  g_poison = true;
  auto [q, s] = silu_mul_per_token_group_quant_fp8_colmajor(x, Tensor(), ue8m0);
  g_poison = false;
  Errors e;
  if (q.shape() != Tensor::Shape{M, N_2} || s.shape() != Tensor::Shape{M, groups} || s.stride(0) != 1)
    return {INFINITY, 1, INFINITY};
  const auto hq = host(q), hs = host(tritium::ops::contiguous(s));
  std::vector<double> ratio(y.size());
  for (int64_t r = 0; r < M; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      double amax = 0;
      for (int64_t j = 0; j < 128; ++j) amax = std::max(amax, std::abs(y[size_t(r * N_2 + g * 128 + j)]));
      double ref = std::max(amax, double(1e-10f)) / 448.0;
      if (ue8m0) ref = std::exp2(std::ceil(std::log2(ref)));
      const double got = hs[size_t(r * groups + g)];
      e.scale = std::isfinite(got) ? std::max(e.scale, std::abs(got - ref) / ref) : INFINITY;
      for (int64_t j = 0; j < 128; ++j) {
        const size_t i = size_t(r * N_2 + g * 128 + j);
        ratio[i] = std::clamp(y[i] / got, -448.0, 448.0);
      }
    }
  const auto qref = rounded(ratio, DType::f8e4m3);
  int64_t differ = 0;
  for (size_t i = 0; i < qref.size(); ++i)
    if (hq[i] != qref[i]) {
      ++differ;
      e.worst_step = std::isfinite(hq[i]) ? std::max(e.worst_step, std::abs(hq[i] - qref[i]) / std::max(std::abs(qref[i]), 1.0 / 512))
                                          : INFINITY;
    }
  e.mismatched = double(differ) / double(qref.size());
  return e;
}

// Programs past M (a grid larger than the wrapper's) must return before touching memory: the
// input, values and scales continue past M rows into sentinels that must keep their values.
bool extra_programs_return(const tritium::Device& device) {
  const int64_t M = 128, pad = 16, N = 512, N_2 = N / 2, groups = N_2 / 128;
  Tensor x = tritium::ops::ones({M + pad, N}, DType::bf16, device);
  g_poison = true;
  Tensor q = make({M + pad, N_2}, DType::f8e4m3, device);
  Tensor s = make({groups, M + pad}, DType::f32, device);
  g_poison = false;
  _silu_mul_per_token_group_quant_fp8_colmajor[tritium::Grid((M + pad) / 8, N_2 / 128)](
      x, q, s, int32_t(M), int32_t(N), s.stride(0), 1e-10f, -448.0f, 448.0f, false, 128, 8, 128);
  const auto hq = host(q.slice(0, M, M + pad)), hs = host(s.slice(1, M, M + pad));
  const auto inside = host(q.slice(0, 0, M));
  return std::all_of(hq.begin(), hq.end(), [](double v) { return std::isnan(v); }) &&
         std::all_of(hs.begin(), hs.end(), [](double v) { return std::isnan(v); }) &&
         std::none_of(inside.begin(), inside.end(), [](double v) { return std::isnan(v); });
}

bool check(const tritium::Device& device) {
  struct Case {
    int64_t M, N;
    DType dtype;
    bool ue8m0;
  };
  // M and N as the wrapper requires (multiples of 128 and 256: the kernel has no masks); several
  // column groups and row tiles; f32 scales and UE8M0; bf16, f16 and f32 inputs.
  const std::vector<Case> cases = {{128, 512, DType::bf16, false}, {256, 768, DType::f16, true}, {128, 256, DType::f32, false}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const Errors e = errors(device, c.M, c.N, c.dtype, c.ue8m0, uint32_t(c.M + c.N));
    // a scale off by at most a rounding of y in the input dtype (one ulp of its absmax)
    const double scale_bound = c.dtype == DType::bf16 ? 8e-3 : c.dtype == DType::f16 ? 1e-3 : 1e-6;
    const bool good = e.scale <= scale_bound && e.mismatched <= 0.01 && e.worst_step <= 0.126;
    ok = ok && good;
    worst = std::max(worst, e.scale / scale_bound);
    detail += fmt::format("{}{} {}x{}{}: scale {:.1e}, e4m3 values off {:.2}% (step {:.2})", detail.empty() ? "(" : ", ",
                          tritium::dtype_name(c.dtype), c.M, c.N, c.ue8m0 ? " ue8m0" : "", e.scale, 100 * e.mismatched,
                          e.worst_step);
  }
  const bool returned = extra_programs_return(device);
  ok = ok && returned;
  bool refused = false;
  try {
    silu_mul_per_token_group_quant_fp8_colmajor(tritium::ops::zeros({100, 256}, DType::bf16, device));
  } catch (const tritium::Error& e) {
    refused = std::string(e.what()).find("input.size(0) = 100 is not a multiple of 128") != std::string::npos;
  }
  ok = ok && refused;
  detail += fmt::format("; programs past M {}; M = 100 {}; bounds: scales one input-dtype rounding, values off <= 1% by <= "
                        "one e4m3 step; shown: worst scale error / bound)",
                        returned ? "return" : "DID NOT RETURN", refused ? "refused" : "NOT REFUSED");
  return suite::report("silu_mul_quant_fp8", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// DeepSeek-V3's MoE activation between the two expert GEMMs (moe_intermediate_size 2048: N = 4096),
// bf16, float32 scales, over a sweep of routed tokens. GB/s counts the input read, the e4m3
// values and the scales written.
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t N = 4096;
  std::vector<int64_t> ms = device.is_cuda() ? std::vector<int64_t>{1024, 4096, 16384, 65536} : std::vector<int64_t>{256};
  std::vector<suite::Row> rows;
  for (int64_t M : ms) {
    Tensor x = tritium::ops::randn({M, N}, tritium::ops::default_generator(), DType::bf16, device);
    const double bytes = double(M) * double(N) * 2 + double(M) * double(N / 2) + double(M) * double(N / 2 / 128) * 4;
    const double t = tritium::do_bench([&] { silu_mul_per_token_group_quant_fp8_colmajor(x); }, device).median_ms;
    rows.push_back({fmt::format("M={} N={} bf16", M, N), t, bytes * 1e-9 / (t * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "silu_mul_quant_fp8",
                                    .source = "vllm-project/vllm vllm/model_executor/layers/quantization/utils/fp8_utils.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
