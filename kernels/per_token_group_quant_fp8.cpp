// per_token_group_quant_fp8: vLLM's per-token-group fp8 quantisation (vllm-project/vllm
// vllm/model_executor/layers/quantization/utils/fp8_utils.py, read at commit 007d50058a06:
// _per_token_group_quant_fp8, _per_token_group_quant_fp8_colmajor and the Triton fallback of
// per_token_group_quant_fp8; get_fp8_min_max of .../quantization/utils/quant_utils.py gives
// e4m3's -448 / 448 on CUDA). Apache-2.0, as vLLM. The activation quantiser in front of the
// block-scaled fp8 matmul (kernels/fp8_block_matmul.cpp).
//
// One program a group of group_size consecutive values of a row (BLOCK = next_power_of_2 of it,
// num_warps = min(max(BLOCK / 256, 1), 8), one stage): the group's absolute maximum (at least
// eps) over 448 is its scale - rounded up to a power of two for DeepGEMM's UE8M0 scales - and the
// values divided by it are clamped and rounded to e4m3. Scales are stored row-major
// [rows, groups] or column-major (a [groups, rows] buffer seen transposed, as DeepGEMM and
// CUTLASS read them).
//
// Deviations: vLLM prefers its CUDA kernel (torch.ops._C.per_token_group_fp8_quant) when the
// input is contiguous on CUDA; the port is the Triton fallback, and bench/kernels/ times that
// fallback too. The fused _silu_mul_per_token_group_quant_fp8_colmajor is kernels/silu_mul_quant_fp8.cpp.
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

// The value of e4m3 bits (bias 7, no infinities, 0x7f / 0xff NaN).
double e4m3_value(uint8_t bits) {
  const int exponent = (bits >> 3) & 0xf, mantissa = bits & 7;
  const double sign = (bits & 0x80) ? -1.0 : 1.0;
  if (exponent == 0xf && mantissa == 7) return NAN;
  if (exponent == 0) return sign * std::ldexp(mantissa / 8.0, -6);
  return sign * std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
}

int64_t next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// The quantisation both kernels end with: a group of values at y_ptr + cols to y_q_ptr + cols,
// its scale to y_s_ptr.
void quantize_group(P y_ptr, P y_q_ptr, P y_s_ptr, const tl::tensor& group_size, const tl::tensor& eps,
                    const tl::tensor& fp8_min, const tl::tensor& fp8_max, bool use_ue8m0, int BLOCK) {
  auto cols = tl::arange(0, BLOCK);  // group_size <= BLOCK
  auto mask = cols < group_size;

  auto y = tl::load(y_ptr + cols, mask, 0.0).to(tl::float32);
  // Quant
  auto _absmax = tl::maximum(tl::max(tl::abs(y)), eps);
  auto scale_raw = _absmax / fp8_max;
  auto y_s = use_ue8m0 ? tl::exp2(tl::ceil(tl::log2(scale_raw))) : scale_raw;
  auto y_q = tl::clamp(y / y_s, fp8_min, fp8_max).to(y_q_ptr.type().pointee);

  tl::store(y_q_ptr + cols, y_q, mask);
  tl::store(y_s_ptr, y_s);
}

auto _per_token_group_quant_fp8 = tritium::kernel(
    "_per_token_group_quant_fp8",
    [](P y_ptr, P y_q_ptr, P y_s_ptr, tl::i32 group_size, tl::i32 y_num_columns, tl::i32 y_row_stride, tl::f32 eps,
       tl::f32 fp8_min, tl::f32 fp8_max, bool use_ue8m0, int BLOCK) {
      auto groups_per_row = y_num_columns / group_size;

      // Map the program id to the row of X and Y it should compute.
      auto g_id = tl::program_id(0);
      auto row = g_id / groups_per_row;
      auto row_g_id = g_id % groups_per_row;

      // Ensure offset calculations use int64 to prevent overflow
      auto y_ptr_offset = (row.to(tl::int64) * y_row_stride) + (row_g_id.to(tl::int64) * group_size);
      y_ptr += y_ptr_offset;

      auto y_q_ptr_offset = g_id.to(tl::int64) * group_size;
      y_q_ptr += y_q_ptr_offset;
      y_s_ptr += g_id;

      quantize_group(y_ptr, y_q_ptr, y_s_ptr, group_size, eps, fp8_min, fp8_max, use_ue8m0, BLOCK);
    },
    {"y_ptr", "y_q_ptr", "y_s_ptr", "group_size", "y_num_columns", "y_row_stride", "eps", "fp8_min", "fp8_max",
     "use_ue8m0", "BLOCK"});

auto _per_token_group_quant_fp8_colmajor = tritium::kernel(
    "_per_token_group_quant_fp8_colmajor",
    [](P y_ptr, P y_q_ptr, P y_s_ptr, tl::i32 group_size, tl::i32 y_num_columns, tl::i32 y_row_stride,
       tl::i32 y_s_col_stride, tl::f32 eps, tl::f32 fp8_min, tl::f32 fp8_max, bool use_ue8m0, int BLOCK) {
      auto groups_per_row = y_num_columns / group_size;

      // Map the program id to the row of X and Y it should compute.
      auto g_id = tl::program_id(0);
      auto row = g_id / groups_per_row;
      auto row_g_id = g_id % groups_per_row;

      // Ensure offset calculations use int64 to prevent overflow
      auto y_ptr_offset = (row.to(tl::int64) * y_row_stride) + (row_g_id.to(tl::int64) * group_size);
      y_ptr += y_ptr_offset;

      auto y_q_ptr_offset = g_id.to(tl::int64) * group_size;
      y_q_ptr += y_q_ptr_offset;

      // Convert g_id the flattened block coordinate to 2D so we can index
      // into the output y_scales matrix
      auto blocks_per_row = y_num_columns / group_size;
      auto scale_col = g_id % blocks_per_row;
      auto scale_row = g_id / blocks_per_row;
      // Ensure offset calculation uses int64 for y_s_ptr
      auto y_s_ptr_offset = (scale_col.to(tl::int64) * y_s_col_stride) + scale_row.to(tl::int64);
      y_s_ptr += y_s_ptr_offset;

      quantize_group(y_ptr, y_q_ptr, y_s_ptr, group_size, eps, fp8_min, fp8_max, use_ue8m0, BLOCK);
    },
    {"y_ptr", "y_q_ptr", "y_s_ptr", "group_size", "y_num_columns", "y_row_stride", "y_s_col_stride", "eps", "fp8_min",
     "fp8_max", "use_ue8m0", "BLOCK"});

bool g_poison = false;  // while checking: the scales start as NaN, the values as e4m3's NaN

// per_token_group_quant_fp8's Triton fallback for a 2-D x: (x_q e4m3 [M, N], x_s f32 [M, N / group_size]).
std::pair<Tensor, Tensor> per_token_group_quant_fp8(const Tensor& x, int64_t group_size, double eps = 1e-10,
                                                    bool column_major_scales = false, bool use_ue8m0 = false) {
  if (x.dim() != 2) tritium::fail("per_token_group_quant_fp8: the port takes a 2-D x (as x.shape[1] is read), got {}", x.str());
  if (x.size(-1) % group_size != 0)
    tritium::fail("per_token_group_quant_fp8: the last dimension of `x` {} must be divisible by `group_size` {}", x.size(-1),
                  group_size);
  if (x.stride(-1) != 1) tritium::fail("per_token_group_quant_fp8: `x` groups must be contiguous, got {}", x.str());
  const double fp8_min = -448.0, fp8_max = 448.0;  // get_fp8_min_max() for e4m3fn

  auto make = [](Tensor::Shape shape, DType dtype, tritium::Device device) {
    // (ops::full has no fp8 fill: NaN in f32, converted, is e4m3's NaN 0x7f)
    return g_poison ? tritium::ops::full(shape, NAN, DType::f32, device).to(dtype) : Tensor::empty(shape, dtype, device);
  };
  Tensor x_q = make(x.shape(), DType::f8e4m3, x.device());
  const int64_t groups = x.size(-1) / group_size;
  Tensor x_s = column_major_scales ? make({groups, x.size(0)}, DType::f32, x.device()).transpose(0, 1)
                                   : make({x.size(0), groups}, DType::f32, x.device());

  // TRITON FALLBACK
  const int64_t M = x.numel() / group_size;
  const int64_t N = group_size;
  const int64_t BLOCK = next_power_of_2(N);
  // heuristics for number of warps
  const int num_warps = int(std::min<int64_t>(std::max<int64_t>(BLOCK / 256, 1), 8));
  const int num_stages = 1;
  const tritium::Options options{.num_warps = num_warps, .num_stages = num_stages, .device = std::nullopt};
  if (M == 0) return {x_q, x_s};
  if (column_major_scales)
    _per_token_group_quant_fp8_colmajor[{M}](x, x_q, x_s, group_size, x.size(1), x.stride(0), x_s.stride(1), eps, fp8_min,
                                             fp8_max, use_ue8m0, int(BLOCK), options);
  else
    _per_token_group_quant_fp8[{M}](x, x_q, x_s, group_size, x.size(1), x.stride(0), eps, fp8_min, fp8_max, use_ue8m0,
                                    int(BLOCK), options);
  return {x_q, x_s};
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

struct Errors {
  double scale = 0;        // largest relative error of a scale against float64
  double mismatched = 0;   // fraction of e4m3 values that differ from the float64 rounding
  double worst_step = 0;   // largest relative difference of such a value (one e4m3 step is <= 1/8)
};

// x [M, N] (a row stride of N + pad: a view), against a float64 quantisation: each scale from the
// rounded inputs; each value rounded to e4m3 (Tritium's host conversion, round to nearest even,
// saturating) from x / the kernel's own scale, so one f32 division's rounding is all that may
// differ.
Errors errors(const tritium::Device& device, int64_t M, int64_t N, int64_t pad, int64_t group_size, DType dtype,
              bool column_major, bool ue8m0, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> hx(static_cast<size_t>(M * (N + pad)));
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = normal(rng) * double(1 + (i / size_t(group_size)) % 5);  // ranges differ
  for (size_t i = 0; i < size_t(group_size); ++i) hx[i] = 0;            // an all-zero group: eps
  Tensor x = Tensor::from_vector(hx, {M, N + pad}, device).to(dtype).slice(1, 0, N);
  const auto xr = host(x.contiguous());
  g_poison = true;
  auto [q, s] = per_token_group_quant_fp8(x, group_size, 1e-10, column_major, ue8m0);
  g_poison = false;
  const int64_t groups = N / group_size;
  Errors e;
  if (q.shape() != Tensor::Shape{M, N} || s.shape() != Tensor::Shape{M, groups} ||
      (column_major ? s.stride(0) != 1 : s.stride(1) != 1))
    return {INFINITY, 1, INFINITY};
  const auto hq = host(q), hs = host(s.contiguous());
  std::vector<double> ratio(static_cast<size_t>(M * N));
  for (int64_t r = 0; r < M; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      double amax = 0;
      for (int64_t j = 0; j < group_size; ++j) amax = std::max(amax, std::abs(xr[size_t(r * N + g * group_size + j)]));
      double ref = std::max(amax, double(1e-10f)) / 448.0;
      if (ue8m0) ref = std::exp2(std::ceil(std::log2(ref)));
      const double got = hs[size_t(r * groups + g)];
      e.scale = std::isfinite(got) ? std::max(e.scale, std::abs(got - ref) / ref) : INFINITY;
      for (int64_t j = 0; j < group_size; ++j) {
        const size_t i = size_t(r * N + g * group_size + j);
        ratio[i] = std::clamp(xr[i] / got, -448.0, 448.0);
      }
    }
  // Rounded to e4m3 on the host (ir/types.h's conversion, the generated code's rounding), not by a
  // kernel: the check must not need the CPU backend on a CUDA-only build.
  std::vector<double> qref(ratio.size());
  for (size_t i = 0; i < ratio.size(); ++i) qref[i] = e4m3_value(tritium::fp8_from_float(float(ratio[i]), DType::f8e4m3));
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

bool check(const tritium::Device& device) {
  struct Case {
    int64_t M, N, pad, group_size;
    DType dtype;
    bool column_major, ue8m0;
  };
  // Group sizes on and off the power-of-two block (masked lanes), a padded row stride, both scale
  // layouts, UE8M0 scales, each input dtype; an all-zero group takes eps.
  const std::vector<Case> cases = {{7, 512, 0, 128, DType::bf16, false, false}, {5, 384, 16, 96, DType::f16, true, false},
                                   {9, 256, 3, 64, DType::f32, false, true},    {6, 600, 0, 200, DType::bf16, true, true}};
  bool ok = true;
  std::string detail;
  double worst = 0;
  for (const Case& c : cases) {
    const Errors e = errors(device, c.M, c.N, c.pad, c.group_size, c.dtype, c.column_major, c.ue8m0, uint32_t(c.M * 11 + c.N));
    // Scales to f32 rounding; values equal to the float64 rounding but where one f32 division
    // lands on the other side of a rounding boundary (at most 1 in 200 here, one e4m3 step).
    const bool pass = e.scale <= 1e-6 && e.mismatched <= 5e-3 && e.worst_step <= 0.125;
    ok = ok && pass;
    worst = std::max(worst, e.scale);
    detail += fmt::format("{}{} {}x{} group {}{}{}: scale {:.1e}, e4m3 values off {:.2}% (step {:.2})",
                          detail.empty() ? "(" : ", ", tritium::dtype_name(c.dtype), c.M, c.N, c.group_size,
                          c.column_major ? " col-major" : "", c.ue8m0 ? " ue8m0" : "", e.scale, 100 * e.mismatched,
                          e.worst_step);
  }
  detail += "; bounds: scales 1e-6, values off <= 0.5% by <= one e4m3 step; reported: worst scale error)";
  return suite::report("per_token_group_quant_fp8", device, ok ? worst : INFINITY, 1e-6, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// vLLM ships no benchmark for the Triton fallback: DeepSeek-V3 activations (hidden 7168, groups of
// 128, the block-fp8 linear layers' input) for 128 to 16384 tokens in bf16, row-major scales, and
// column-major UE8M0 scales (DeepGEMM's). GB/s counts x read, the e4m3 values and scales written.
std::vector<suite::Row> bench(const tritium::Device& device) {
  std::vector<int64_t> tokens = device.is_cuda() ? std::vector<int64_t>{128, 1024, 4096, 16384} : std::vector<int64_t>{64};
  const int64_t hidden = 7168, group = 128;
  std::vector<suite::Row> rows;
  for (bool colmajor_ue8m0 : {false, true})
    for (int64_t M : tokens) {
      Tensor x = tritium::ops::randn({M, hidden}, tritium::ops::default_generator(), DType::f32, device).to(DType::bf16);
      const double ms = tritium::do_bench([&] { per_token_group_quant_fp8(x, group, 1e-10, colmajor_ue8m0, colmajor_ue8m0); },
                                          device).median_ms;
      const double bytes = double(M * hidden) * (2.0 + 1.0) + 4.0 * double(M * hidden / group);
      rows.push_back({fmt::format("{}x{} group {} bf16{}", M, hidden, group, colmajor_ue8m0 ? " col-major ue8m0" : ""), ms,
                      bytes * 1e-9 / (ms * 1e-3), "GB/s"});
    }
  return rows;
}

const bool registered = suite::add({.name = "per_token_group_quant_fp8",
                                    .source = "vllm-project/vllm vllm/model_executor/layers/quantization/utils/fp8_utils.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
