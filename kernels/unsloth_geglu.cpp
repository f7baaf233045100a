// unsloth_geglu: Unsloth's GEGLU (unslothai/unsloth unsloth/kernels/geglu.py, read at commit
// 02540371c20f: _exact_forward_kernel / geglu_exact_forward_kernel, _exact_backward_kernel /
// geglu_exact_backward_kernel, _approx_forward_kernel / geglu_approx_forward_kernel,
// _approx_backward_kernel / geglu_approx_backward_kernel, and the module constants BLOCK_SIZE and
// INT32_SAFETY_BUFFER; triton_tanh of unsloth/kernels/utils.py). Apache-2.0, as Unsloth.
//
// h = gelu(e) * g elementwise over 1024-element blocks, gelu computed in f32 - exactly (erf) or
// by the tanh approximation - and rounded to g's dtype before the product (as Hugging Face); the
// backwards recompute it and write h, df = dW * f and de over their three inputs (dW, e, g).
// Tensors of more than 2^31 - 4096 elements switch to 64-bit offsets (LONG_INDEXING).
//
// Deviations: n_elements is an int64 argument (Triton types a Python int by its value, int32
// below 2^31; an int32 offset compared with it is widened, the same comparison). triton_tanh is
// libdevice's tanh on current Triton; Tritium's tl::tanh computes the same function. Unsloth's
// torch_gpu_device has no counterpart (the tensors carry the device).
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

// signed int32 max is 2**31-1 so num_elements cannot exceed 2**31
constexpr int64_t NUM_INT32_ELEMENTS = int64_t(1) << 31;
constexpr int64_t SAFE_INT32_BUFFER_MULTIPLIER = 4;
constexpr int BLOCK_SIZE = 1024;
constexpr int64_t INT32_SAFETY_BUFFER = NUM_INT32_ELEMENTS - BLOCK_SIZE * SAFE_INT32_BUFFER_MULTIPLIER;

// The offsets of a program's block and the bound they are compared with (both 64-bit when
// LONG_INDEXING), as the kernels' first lines.
std::pair<tl::tensor, tl::tensor> block_offsets(const tl::tensor& n_elements_in, int BLOCK_SIZE, bool LONG_INDEXING) {
  auto block_idx = tl::program_id(0);
  tl::tensor offsets, n_elements = n_elements_in;
  if (LONG_INDEXING) {
    offsets = block_idx.to(tl::int64) * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE).to(tl::int64);
    n_elements = tl::cast(n_elements, tl::int64);
  } else {
    offsets = block_idx * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
  }
  return {offsets, n_elements};
}

tl::tensor triton_tanh(const tl::tensor& x) { return tl::tanh(x); }

auto _exact_forward_kernel = tritium::kernel(
    "_exact_forward_kernel",
    [](P e, P g, P h, tl::i64 n_elements_arg, int BLOCK_SIZE, bool LONG_INDEXING) {
      auto [offsets, n_elements] = block_offsets(n_elements_arg, BLOCK_SIZE, LONG_INDEXING);
      auto mask = offsets < n_elements;

      // f = 1/2 * e * (1 + erf(1/sqrt(2) * e))
      // h = f * up
      auto e_row = tl::load(e + offsets, mask, 0).to(tl::float32);
      auto g_row = tl::load(g + offsets, mask, 0);  // .to(tl.float32)

      auto f_row = 0.5 * e_row * (tl::erf(tl::rsqrt(2.0) * e_row) + 1.0);
      f_row = f_row.to(g_row.dtype());  // Exact copy from HF
      auto h_row = f_row * g_row;

      // Store h
      tl::store(h + offsets, h_row, mask);
    },
    {"e", "g", "h", "n_elements", "BLOCK_SIZE", "LONG_INDEXING"});

auto _exact_backward_kernel = tritium::kernel(
    "_exact_backward_kernel",
    [](P DW, P e, P g, tl::i64 n_elements_arg, int BLOCK_SIZE, bool LONG_INDEXING) {
      // f = 1/2 * e * (1 + erf(1/sqrt(2) * e)), h = f * up
      // df/de = 1/2 * (1 + erf(1/sqrt(2) * e)) + 1/sqrt(2*pi) * e * exp(-1/2 * e^2)
      auto [offsets, n_elements] = block_offsets(n_elements_arg, BLOCK_SIZE, LONG_INDEXING);
      auto mask = offsets < n_elements;

      auto DW_row = tl::load(DW + offsets, mask, 0);  // .to(tl.float32)
      auto e_row = tl::load(e + offsets, mask, 0).to(tl::float32);
      auto g_row = tl::load(g + offsets, mask, 0);  // .to(tl.float32)

      // Break e_row away for reuse
      // f = 1/2 * e * (1 + erf(1/sqrt(2) * e))
      auto f_partial_row = 0.5 * (tl::erf(tl::rsqrt(2.0) * e_row) + 1.0);
      auto f_row = f_partial_row * e_row;

      f_row = f_row.to(DW_row.dtype());
      // h = f * g
      auto h_row = f_row * g_row;
      // df = DW * f
      auto df_row = DW_row * f_row;
      // dg = DW * g
      auto dg_row = DW_row * g_row;

      // df/de = 1/2 * (1 + erf(1/sqrt(2) * e)) + 1/sqrt(2*pi) * e * exp(-1/2 * e^2)
      const double t = 0.3989422804014327;  // 1/sqrt(2*pi)
      auto df_de = f_partial_row + t * e_row * tl::exp(-0.5 * e_row * e_row);

      auto de_row = dg_row.to(tl::float32) * df_de;
      de_row = de_row.to(DW_row.dtype());

      // Store derivatives in buffers
      tl::store(DW + offsets, h_row, mask);  // h  = f * g
      tl::store(e + offsets, df_row, mask);  // df = DW * f
      tl::store(g + offsets, de_row, mask);  // de
    },
    {"DW", "e", "g", "n_elements", "BLOCK_SIZE", "LONG_INDEXING"});

auto _approx_forward_kernel = tritium::kernel(
    "_approx_forward_kernel",
    [](P e, P g, P h, tl::i64 n_elements_arg, int BLOCK_SIZE, bool LONG_INDEXING) {
      auto [offsets, n_elements] = block_offsets(n_elements_arg, BLOCK_SIZE, LONG_INDEXING);
      auto mask = offsets < n_elements;

      // f = 1/2 * e * (1 + tanh( sqrt(2/pi) * x * (1 + 0.044715 * x^2 ) )), h = f * up
      const double s = 0.7978845608028654;  // math.sqrt(2 / math.pi)

      auto e_row = tl::load(e + offsets, mask, 0).to(tl::float32);
      auto g_row = tl::load(g + offsets, mask, 0);  // .to(tl.float32)

      auto f_row = 0.5 * e_row * (triton_tanh(s * e_row * (1.0 + 0.044715 * e_row * e_row)) + 1.0);
      f_row = f_row.to(g_row.dtype());  // Exact copy from HF
      auto h_row = f_row * g_row;

      // Store h
      tl::store(h + offsets, h_row, mask);
    },
    {"e", "g", "h", "n_elements", "BLOCK_SIZE", "LONG_INDEXING"});

auto _approx_backward_kernel = tritium::kernel(
    "_approx_backward_kernel",
    [](P DW, P e, P g, tl::i64 n_elements_arg, int BLOCK_SIZE, bool LONG_INDEXING) {
      // df/de = 1/2 * [1 + tanh(u)] + 1/2 * sech^2(u) * sqrt(2/pi) * x * (1 + 3 * 0.044715 * x^2),
      // u = sqrt(2/pi) * x * (1 + 0.044715 * x^2), with sech^2 = 1 - tanh^2 reusing tanh(u)
      auto [offsets, n_elements] = block_offsets(n_elements_arg, BLOCK_SIZE, LONG_INDEXING);
      auto mask = offsets < n_elements;

      auto DW_row = tl::load(DW + offsets, mask, 0);  // .to(tl.float32)
      auto e_row = tl::load(e + offsets, mask, 0).to(tl::float32);
      auto g_row = tl::load(g + offsets, mask, 0);  // .to(tl.float32)

      const double s = 0.7978845608028654;  // math.sqrt(2 / math.pi)
      auto a = s * e_row;                      // a = sqrt(2 / pi) * x
      auto b = a * 0.044715 * e_row * e_row;   // b = a * 0.044715 * x^2
      auto T = 1.0 + triton_tanh(a + b);
      auto T2 = 0.5 * T;
      // Q = 0.5 * -T * (T - 2.0) * (a + 3.0 * b)
      auto Q2 = -T2 * (T - 2.0) * (a + 3.0 * b);
      auto df_de = T2 + Q2;  // 1/2 * (T + Q)

      // f = 1/2 * e * (1 + tanh( sqrt(2/pi) * (x + 0.044715 * x^3 ) ))
      auto f_row = T2 * e_row;
      f_row = f_row.to(DW_row.dtype());
      // h = f * g
      auto h_row = f_row * g_row;
      // df = DW * f
      auto df_row = DW_row * f_row;
      // dg = DW * g
      auto dg_row = DW_row * g_row;

      auto de_row = dg_row.to(tl::float32) * df_de;
      de_row = de_row.to(DW_row.dtype());

      // Store derivatives in buffers
      tl::store(DW + offsets, h_row, mask);  // h  = f * g
      tl::store(e + offsets, df_row, mask);  // df = DW * f
      tl::store(g + offsets, de_row, mask);  // de
    },
    {"DW", "e", "g", "n_elements", "BLOCK_SIZE", "LONG_INDEXING"});

bool g_poison = false;     // while checking: h starts as NaN
int g_force_long = -1;     // while checking: LONG_INDEXING forced to 0 or 1 (-1: the original's rule)

bool long_indexing(int64_t n_elements) {
  return g_force_long >= 0 ? g_force_long == 1 : !(n_elements <= INT32_SAFETY_BUFFER);
}

// geglu_{exact,approx}_forward_kernel(gate, up)
Tensor geglu_forward(const Tensor& gate, const Tensor& up, bool approx) {
  if (gate.dim() != 3 || gate.shape() != up.shape() || gate.dtype() != up.dtype() || !gate.is_contiguous() ||
      !up.is_contiguous())
    tritium::fail("geglu forward: gate and up must be contiguous [batch, seq_len, hd] tensors of one shape and dtype, got {} and {}",
                  gate.str(), up.str());
  const int64_t n_elements = gate.numel();
  Tensor out = g_poison ? tritium::ops::full(gate.shape(), NAN, gate.dtype(), gate.device())
                        : Tensor::empty(gate.shape(), gate.dtype(), gate.device());
  auto grid = [=](const tritium::Meta& meta) { return tritium::Grid(tritium::cdiv(n_elements, meta["BLOCK_SIZE"])); };
  auto& kernel = approx ? _approx_forward_kernel : _exact_forward_kernel;
  kernel[grid](gate, up, out, n_elements, tritium::Meta{{"BLOCK_SIZE", BLOCK_SIZE}, {"LONG_INDEXING", long_indexing(n_elements)}});
  return out;
}

// geglu_{exact,approx}_backward_kernel(DW, e, g), in place: DW becomes h, e df, g de.
void geglu_backward(const Tensor& DW, const Tensor& e, const Tensor& g, bool approx) {
  if (e.dim() != 2 || e.shape() != g.shape() || DW.shape() != e.shape() || !DW.is_contiguous() || !e.is_contiguous() ||
      !g.is_contiguous())
    tritium::fail("geglu backward: DW, e and g must be contiguous 2-D tensors of one shape, got {}, {}, {}", DW.str(),
                  e.str(), g.str());
  const int64_t n_elements = e.numel();
  auto grid = [=](const tritium::Meta& meta) { return tritium::Grid(tritium::cdiv(n_elements, meta["BLOCK_SIZE"])); };
  auto& kernel = approx ? _approx_backward_kernel : _exact_backward_kernel;
  kernel[grid](DW, e, g, n_elements, tritium::Meta{{"BLOCK_SIZE", BLOCK_SIZE}, {"LONG_INDEXING", long_indexing(n_elements)}});
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

// gelu and its derivative in float64: exact (erf) or the tanh approximation.
std::pair<double, double> gelu(double x, bool approx) {
  if (!approx) {
    const double cdf = 0.5 * (1 + std::erf(x / std::sqrt(2.0)));
    return {x * cdf, cdf + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI)};
  }
  const double k = std::sqrt(2 / M_PI), u = k * (x + 0.044715 * x * x * x), t = std::tanh(u);
  return {0.5 * x * (1 + t), 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)};
}

// Relative errors of h (forward), and of h, df, de (backward) against float64.
std::array<double, 4> relative_errors(const tritium::Device& device, int64_t batch, int64_t seq, int64_t hd, DType dtype,
                                      bool approx, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 2);
  const int64_t n = batch * seq * hd;
  auto random = [&] {
    std::vector<double> v(static_cast<size_t>(n));
    for (auto& x : v) x = normal(rng);
    return Tensor::from_vector(v, {batch, seq, hd}, device).to(dtype);
  };
  Tensor e = random(), g = random(), dw = random();
  const auto he = host(e), hg = host(g), hdw = host(dw);
  g_poison = true;
  Tensor h = geglu_forward(e, g, approx);
  g_poison = false;
  Tensor DW = dw.clone().view({batch * seq, hd}), E = e.clone().view({batch * seq, hd}), G = g.clone().view({batch * seq, hd});
  geglu_backward(DW, E, G, approx);
  std::vector<double> ref_h(he.size()), ref_df(he.size()), ref_de(he.size());
  for (size_t i = 0; i < he.size(); ++i) {
    auto [f, dfde] = gelu(he[i], approx);
    ref_h[i] = f * hg[i];
    ref_df[i] = hdw[i] * f;
    ref_de[i] = hdw[i] * hg[i] * dfde;
  }
  auto rel = [](const Tensor& t, const std::vector<double>& ref) {
    auto v = host(t);
    return suite::rel_error(std::vector<float>(v.begin(), v.end()), ref);
  };
  return {rel(h, ref_h), rel(DW, ref_h), rel(E, ref_df), rel(G, ref_de)};
}

bool check(const tritium::Device& device) {
  struct Case {
    int64_t batch, seq, hd;
    DType dtype;
    bool approx;
    int force_long;
  };
  // Element counts off the 1024 block, both gelu forms, each dtype; LONG_INDEXING forced on once
  // (the 64-bit path needs 2^31 elements to be taken by the original's rule).
  const std::vector<Case> cases = {{2, 3, 333, DType::f32, false, -1}, {1, 5, 1000, DType::f16, false, -1},
                                   {3, 2, 777, DType::bf16, true, -1},  {2, 3, 333, DType::f32, true, -1},
                                   {1, 3, 500, DType::bf16, false, 1}};
  bool ok = true;
  std::string detail;
  double worst = 0;
  for (const Case& c : cases) {
    g_force_long = c.force_long;
    auto r = relative_errors(device, c.batch, c.seq, c.hd, c.dtype, c.approx, uint32_t(c.hd * 5 + c.seq));
    g_force_long = -1;
    // f32 1e-5, f16 1e-3, bf16 1e-2 (f and dg are rounded to the dtype before the products).
    const double bound = c.dtype == DType::bf16 ? 1e-2 : c.dtype == DType::f16 ? 1e-3 : 1e-5;
    const double e = std::max({r[0], r[1], r[2], r[3]});
    if (!(e <= bound)) ok = false;
    worst = std::max(worst, e / bound);
    detail += fmt::format("{}{} {} {}x{}x{}{} h {:.1e} bwd h {:.1e} df {:.1e} de {:.1e}", detail.empty() ? "(" : ", ",
                          c.approx ? "approx" : "exact", tritium::dtype_name(c.dtype), c.batch, c.seq, c.hd,
                          c.force_long == 1 ? " LONG_INDEXING" : "", r[0], r[1], r[2], r[3]);
  }
  detail += "; bounds f32 1e-5, f16 1e-3, bf16 1e-2; reported: worst error / bound)";
  return suite::report("unsloth_geglu", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// Unsloth ships no benchmark for these kernels: Gemma MLP activations (4 x 2048 tokens,
// intermediate sizes 14336 of Gemma 2 9B and 24576 of Gemma 7B) in bf16, exact and approximate
// gelu, forward and backward.
std::vector<suite::Row> bench(const tritium::Device& device) {
  std::vector<int64_t> hds = device.is_cuda() ? std::vector<int64_t>{14336, 24576} : std::vector<int64_t>{1024};
  const int64_t batch = device.is_cuda() ? 4 : 1, seq = device.is_cuda() ? 2048 : 256;
  std::vector<suite::Row> rows;
  for (bool approx : {false, true})
    for (int64_t hd : hds) {
      auto randn = [&] {
        return tritium::ops::randn({batch, seq, hd}, tritium::ops::default_generator(), DType::f32, device).to(DType::bf16);
      };
      Tensor e = randn(), g = randn(), dw = randn();
      const double es = 2.0, n = double(batch * seq * hd);
      const double fwd = tritium::do_bench([&] { geglu_forward(e, g, approx); }, device).median_ms;
      Tensor DW = dw.view({batch * seq, hd}), E = e.view({batch * seq, hd}), G = g.view({batch * seq, hd});
      // In place, as Unsloth's: the values change from run to run, the traffic not.
      const double bwd = tritium::do_bench([&] { geglu_backward(DW, E, G, approx); }, device).median_ms;
      const std::string shape = fmt::format("{} {}x{}x{} bf16", approx ? "approx" : "exact", batch, seq, hd);
      rows.push_back({"forward " + shape, fwd, 3 * n * es * 1e-9 / (fwd * 1e-3), "GB/s"});
      rows.push_back({"backward " + shape, bwd, 6 * n * es * 1e-9 / (bwd * 1e-3), "GB/s"});
    }
  return rows;
}

const bool registered = suite::add({.name = "unsloth_geglu",
                                    .source = "unslothai/unsloth unsloth/kernels/geglu.py",
                                    .category = "elementwise",
                                    .check = check,
                                    .bench = bench});

}  // namespace
