// unsloth_swiglu: Unsloth's SwiGLU (unslothai/unsloth unsloth/kernels/swiglu.py, read at commit
// 3ce187da021b: _fg_kernel with swiglu_fg_kernel, _DWf_DW_dfg_kernel with
// swiglu_DWf_DW_dfg_kernel, and the module constants BLOCK_SIZE and INT32_SAFETY_BUFFER).
// Apache-2.0, as Unsloth.
//
// h = silu(e) * g elementwise over 1024-element blocks, silu computed in f32 and rounded to g's
// dtype before the product (as Hugging Face); the backward recomputes it and writes h, df = dW * f
// and de over its three inputs (dW, e, g). Tensors of more than 2^31 - 4096 elements switch to
// 64-bit offsets (LONG_INDEXING).
//
// Deviations: n_elements is an int64 argument (Triton types a Python int by its value, int32
// below 2^31; an int32 offset compared with it is widened, the same comparison). Unsloth's
// torch_gpu_device context has no counterpart (the tensors carry the device).
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

auto _fg_kernel = tritium::kernel(
    "_fg_kernel",
    [](P e, P g, P h, tl::i64 n_elements_arg, int BLOCK_SIZE, bool LONG_INDEXING) {
      auto [offsets, n_elements] = block_offsets(n_elements_arg, BLOCK_SIZE, LONG_INDEXING);
      auto mask = offsets < n_elements;

      auto e_row = tl::load(e + offsets, mask, 0).to(tl::float32);
      auto g_row = tl::load(g + offsets, mask, 0);  // .to(tl.float32)

      // f = e * sigmoid(e)
      auto f_row = e_row * tl::sigmoid(e_row);  // e_row / (1 + tl.exp(-e_row))
      f_row = f_row.to(g_row.dtype());          // Exact copy from HF
      // h = f * g
      auto h_row = f_row * g_row;

      // Store h
      tl::store(h + offsets, h_row, mask);
    },
    {"e", "g", "h", "n_elements", "BLOCK_SIZE", "LONG_INDEXING"});

auto _DWf_DW_dfg_kernel = tritium::kernel(
    "_DWf_DW_dfg_kernel",
    [](P DW, P e, P g, tl::i64 n_elements_arg, int BLOCK_SIZE, bool LONG_INDEXING) {
      // e = e.float(); se = 1.0 / (1.0 + torch.exp(-e)); f = (se * e).to(dtype); h = f * g
      // df = DW * f; dg = DW * g; de = (dg.float() * se * (1.0 + e * (1.0 - se))).to(dtype)
      auto [offsets, n_elements] = block_offsets(n_elements_arg, BLOCK_SIZE, LONG_INDEXING);
      auto mask = offsets < n_elements;

      auto DW_row = tl::load(DW + offsets, mask, 0);  // .to(tl.float32)
      auto e_row = tl::load(e + offsets, mask, 0).to(tl::float32);
      auto g_row = tl::load(g + offsets, mask, 0);  // .to(tl.float32)

      // e = e.float()
      // se = 1.0 / (1.0 + torch.exp(-e))
      auto se_row = tl::sigmoid(e_row);  // 1.0 / (1.0 + tl.exp(-e_row))
      // f = (se * e).to(dtype)
      auto f_row = se_row * e_row;
      f_row = f_row.to(DW_row.dtype());
      // h = f * g
      auto h_row = f_row * g_row;
      // df = DW * f
      auto df_row = DW_row * f_row;
      // dg = DW * g
      auto dg_row = DW_row * g_row;
      // de = (dg.float() * se * (1.0 + e * (1.0 - se))).to(dtype)
      auto de_row = dg_row.to(tl::float32) * se_row * (1.0 + e_row * (1.0 - se_row));
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

Tensor swiglu_fg_kernel(const Tensor& e, const Tensor& g) {
  if (e.dim() != 3 || e.shape() != g.shape() || e.dtype() != g.dtype() || !e.is_contiguous() || !g.is_contiguous())
    tritium::fail("swiglu_fg_kernel: e and g must be contiguous [batch, seq_len, hd] tensors of one shape and dtype, got {} and {}",
                  e.str(), g.str());
  const int64_t n_elements = e.numel();
  Tensor h = g_poison ? tritium::ops::full(e.shape(), NAN, e.dtype(), e.device()) : Tensor::empty(e.shape(), e.dtype(), e.device());
  auto grid = [=](const tritium::Meta& meta) { return tritium::Grid(tritium::cdiv(n_elements, meta["BLOCK_SIZE"])); };
  _fg_kernel[grid](e, g, h, n_elements, tritium::Meta{{"BLOCK_SIZE", BLOCK_SIZE}, {"LONG_INDEXING", long_indexing(n_elements)}});
  return h;
}

// In place: DW becomes h, e becomes df, g becomes de (e and g flattened to [batch * seq_len, hd]).
void swiglu_DWf_DW_dfg_kernel(const Tensor& DW, const Tensor& e, const Tensor& g) {
  if (e.dim() != 2 || e.shape() != g.shape() || DW.shape() != e.shape() || !DW.is_contiguous() || !e.is_contiguous() ||
      !g.is_contiguous())
    tritium::fail("swiglu_DWf_DW_dfg_kernel: DW, e and g must be contiguous 2-D tensors of one shape, got {}, {}, {}",
                  DW.str(), e.str(), g.str());
  const int64_t n_elements = e.numel();
  auto grid = [=](const tritium::Meta& meta) { return tritium::Grid(tritium::cdiv(n_elements, meta["BLOCK_SIZE"])); };
  _DWf_DW_dfg_kernel[grid](DW, e, g, n_elements,
                           tritium::Meta{{"BLOCK_SIZE", BLOCK_SIZE}, {"LONG_INDEXING", long_indexing(n_elements)}});
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// Relative errors of h (forward), and of h, df, de (backward) against float64.
std::array<double, 4> relative_errors(const tritium::Device& device, int64_t batch, int64_t seq, int64_t hd, DType dtype,
                                      uint32_t seed) {
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
  Tensor h = swiglu_fg_kernel(e, g);
  g_poison = false;
  Tensor DW = dw.clone().view({batch * seq, hd}), E = e.clone().view({batch * seq, hd}), G = g.clone().view({batch * seq, hd});
  swiglu_DWf_DW_dfg_kernel(DW, E, G);
  std::vector<double> ref_h(he.size()), ref_df(he.size()), ref_de(he.size());
  for (size_t i = 0; i < he.size(); ++i) {
    const double s = sigmoid(he[i]), f = he[i] * s;
    ref_h[i] = f * hg[i];
    ref_df[i] = hdw[i] * f;
    ref_de[i] = hdw[i] * hg[i] * s * (1 + he[i] * (1 - s));
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
    int force_long;
  };
  // Element counts off the 1024 block; LONG_INDEXING forced on once (the 64-bit path needs 2^31
  // elements to be taken by the original's rule).
  const std::vector<Case> cases = {{2, 3, 333, DType::f32, -1}, {1, 5, 1000, DType::f16, -1}, {3, 2, 777, DType::bf16, -1},
                                   {2, 3, 333, DType::f32, 1},  {1, 3, 500, DType::bf16, 1}};
  bool ok = true;
  std::string detail;
  double worst = 0;
  for (const Case& c : cases) {
    g_force_long = c.force_long;
    auto r = relative_errors(device, c.batch, c.seq, c.hd, c.dtype, uint32_t(c.hd * 5 + c.seq));
    g_force_long = -1;
    // f32 1e-5, f16 1e-3, bf16 1e-2 (f and dg are rounded to the dtype before the products).
    const double bound = c.dtype == DType::bf16 ? 1e-2 : c.dtype == DType::f16 ? 1e-3 : 1e-5;
    const double e = std::max({r[0], r[1], r[2], r[3]});
    if (!(e <= bound)) ok = false;
    worst = std::max(worst, e / bound);
    detail += fmt::format("{}{} {}x{}x{}{} h {:.1e} bwd h {:.1e} df {:.1e} de {:.1e}", detail.empty() ? "(" : ", ",
                          tritium::dtype_name(c.dtype), c.batch, c.seq, c.hd, c.force_long == 1 ? " LONG_INDEXING" : "",
                          r[0], r[1], r[2], r[3]);
  }
  detail += "; bounds f32 1e-5, f16 1e-3, bf16 1e-2; reported: worst error / bound)";
  return suite::report("unsloth_swiglu", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// Unsloth ships no benchmark for this kernel: Llama MLP activations (4 x 2048 tokens, intermediate
// sizes 11008 and 14336) in bf16 and f16, forward and backward.
std::vector<suite::Row> bench(const tritium::Device& device) {
  std::vector<int64_t> hds = device.is_cuda() ? std::vector<int64_t>{11008, 14336} : std::vector<int64_t>{1024};
  const int64_t batch = device.is_cuda() ? 4 : 1, seq = device.is_cuda() ? 2048 : 256;
  std::vector<suite::Row> rows;
  for (DType dtype : {DType::bf16, DType::f16})
    for (int64_t hd : hds) {
      auto randn = [&] {
        return tritium::ops::randn({batch, seq, hd}, tritium::ops::default_generator(), DType::f32, device).to(dtype);
      };
      Tensor e = randn(), g = randn(), dw = randn();
      const double es = double(tritium::dtype_bytes(dtype)), n = double(batch * seq * hd);
      const double fwd = tritium::do_bench([&] { swiglu_fg_kernel(e, g); }, device).median_ms;
      Tensor DW = dw.view({batch * seq, hd}), E = e.view({batch * seq, hd}), G = g.view({batch * seq, hd});
      // In place, as Unsloth's: the values change from run to run, the traffic not.
      const double bwd = tritium::do_bench([&] { swiglu_DWf_DW_dfg_kernel(DW, E, G); }, device).median_ms;
      const std::string shape = fmt::format("{}x{}x{} {}", batch, seq, hd, tritium::dtype_name(dtype));
      rows.push_back({"forward " + shape, fwd, 3 * n * es * 1e-9 / (fwd * 1e-3), "GB/s"});
      rows.push_back({"backward " + shape, bwd, 6 * n * es * 1e-9 / (bwd * 1e-3), "GB/s"});
    }
  return rows;
}

const bool registered = suite::add({.name = "unsloth_swiglu",
                                    .source = "unslothai/unsloth unsloth/kernels/swiglu.py",
                                    .category = "elementwise",
                                    .check = check,
                                    .bench = bench});

}  // namespace
