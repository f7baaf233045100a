// unsloth_cross_entropy: Unsloth's fast cross-entropy loss (unslothai/unsloth
// unsloth/kernels/cross_entropy_loss.py, read at commit ee73bcb209df: _cross_entropy_forward,
// _chunked_cross_entropy_forward, _cross_entropy_backward and Fast_CrossEntropyLoss's forward and
// backward; calculate_settings, MAX_FUSED_SIZE and triton_tanh of unsloth/kernels/utils.py).
// Apache-2.0, as Unsloth.
//
// One program a row of logits: the row's logsumexp (max, then the log of the summed exponentials,
// in f32) and the loss logsumexp - logit[label], 0 for the ignored label -100; Cohere's logit
// scaling and Gemma 2's tanh softcapping apply to the logits first. Vocabularies past 65536 are
// cut into 65536-wide chunks, one program each: each stores its chunk's logsumexp and the first
// also -logit[label]; the host then merges the chunks' logsumexps (torch.logsumexp, here Tritium's
// op library: amax, exp, sum, log) and masks ignored rows. The backward overwrites the logits with
// the gradient, dloss * (softmax - onehot(label)) through the scaling and softcap derivatives, in
// 4096-wide blocks.
//
// Deviations: triton_tanh is libdevice's tanh on current Triton; Tritium's tl::tanh computes the
// same function. is_cdna() (AMD) is false here: num_warps as on NVIDIA. The heuristics
// {"DO_SOFTCAPPING": bool(...), "DO_LOGIT_SCALING": bool(...)} are the identity on a bool, so the
// launches pass the values. A run-time `if` assigning `loss` a tensor on one side and 0.0 on the
// other is a tl::if_ over a loss that starts as 0.0 (the same values).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "suite.h"
#include "unsloth_utils.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

using unsloth::calculate_settings;  // kernels/unsloth_utils.h
using unsloth::MAX_FUSED_SIZE;
using unsloth::next_power_of_2;

tl::tensor triton_tanh(const tl::tensor& x) { return tl::tanh(x); }
tl::tensor triton_cast(const tl::operand& x, tritium::DType d) { return tl::cast(x, d); }

// Cohere's scaling and Gemma 2's softcapping of logits (the kernels' two `if`s, written once).
tl::tensor scale_and_cap(tl::tensor x, bool DO_SOFTCAPPING, double SOFTCAP, bool DO_LOGIT_SCALING, double LOGIT_SCALE) {
  // Go logit scaling for Cohere: t * x
  if (DO_LOGIT_SCALING) x = LOGIT_SCALE * x;
  // Do logit softcapping for Gemma 2: t * tanh(1/t * x)
  if (DO_SOFTCAPPING) x = SOFTCAP * triton_tanh(x / SOFTCAP);
  return x;
}

auto _cross_entropy_forward = tritium::kernel(
    "_cross_entropy_forward",
    [](P logits_ptr, tl::i32 logits_row_stride, P loss_ptr, P logsumexp_ptr, P labels_ptr, int VOCAB_SIZE, int BLOCK_SIZE,
       bool DO_SOFTCAPPING, double SOFTCAP, bool DO_LOGIT_SCALING, double LOGIT_SCALE) {
      auto row_idx = tl::program_id(0);
      logits_ptr += row_idx * triton_cast(logits_row_stride, tl::int64);
      loss_ptr += row_idx;
      logsumexp_ptr += row_idx;
      labels_ptr += row_idx;

      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < VOCAB_SIZE;

      auto label_idx = tl::load(labels_ptr).to(tl::int32);
      auto logits = tl::load(logits_ptr + col_offsets, mask, -INFINITY).to(tl::float32);
      logits = scale_and_cap(logits, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE);

      auto c = tl::max(logits, 0);
      auto logsumexp = c + tl::log(tl::sum(tl::exp(logits - c), 0));

      auto loss = tl::full({}, 0.0, tl::float32);
      tl::if_(label_idx != -100, [&] {
        auto x = tl::load(logits_ptr + label_idx).to(tl::float32);
        x = scale_and_cap(x, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE);
        loss = logsumexp - x;
      });
      tl::store(logsumexp_ptr, logsumexp);
      tl::store(loss_ptr, loss);
    },
    {"logits_ptr", "logits_row_stride", "loss_ptr", "logsumexp_ptr", "labels_ptr", "VOCAB_SIZE", "BLOCK_SIZE",
     "DO_SOFTCAPPING", "SOFTCAP", "DO_LOGIT_SCALING", "LOGIT_SCALE"});

auto _chunked_cross_entropy_forward = tritium::kernel(
    "_chunked_cross_entropy_forward",
    [](P logits_ptr, int logits_row_stride, P loss_ptr, P logsumexp_ptr, P labels_ptr, int VOCAB_SIZE, int N_CHUNKS,
       int BLOCK_SIZE, bool DO_SOFTCAPPING, double SOFTCAP, bool DO_LOGIT_SCALING, double LOGIT_SCALE) {
      auto row_idx = tl::program_id(0);
      auto chunk_idx = tl::program_id(1);
      logits_ptr += row_idx * triton_cast(logits_row_stride, tl::int64);
      loss_ptr += row_idx;
      logsumexp_ptr += row_idx * N_CHUNKS + chunk_idx;
      labels_ptr += row_idx;

      auto col_offsets = chunk_idx * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < VOCAB_SIZE;

      auto label_idx = tl::load(labels_ptr).to(tl::int32);
      auto logits = tl::load(logits_ptr + col_offsets, mask, -INFINITY).to(tl::float32);
      logits = scale_and_cap(logits, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE);

      auto c = tl::max(logits, 0);
      auto logsumexp = c + tl::log(tl::sum(tl::exp(logits - c), 0));

      tl::if_(chunk_idx == 0, [&] {
        // logsumexp(chunked_logsumexp) - x: do the -x separately
        auto loss = tl::full({}, 0.0, tl::float32);
        tl::if_(label_idx != -100, [&] {
          auto x = tl::load(logits_ptr + label_idx).to(tl::float32);
          x = scale_and_cap(x, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE);
          loss = -1.0 * x;
        });
        tl::store(loss_ptr, loss);
      });
      tl::store(logsumexp_ptr, logsumexp);
    },
    {"logits_ptr", "logits_row_stride", "loss_ptr", "logsumexp_ptr", "labels_ptr", "VOCAB_SIZE", "N_CHUNKS",
     "BLOCK_SIZE", "DO_SOFTCAPPING", "SOFTCAP", "DO_LOGIT_SCALING", "LOGIT_SCALE"});

auto _cross_entropy_backward = tritium::kernel(
    "_cross_entropy_backward",
    [](P logits_ptr, int logits_row_stride, P dloss_ptr, int dloss_row_stride, P logsumexp_ptr, P labels_ptr,
       int VOCAB_SIZE, int BLOCK_SIZE, bool DO_SOFTCAPPING, double SOFTCAP, bool DO_LOGIT_SCALING, double LOGIT_SCALE) {
      // dC/dx = exp(x - logsumexp) - [x is the label], 0 for an ignored row
      auto row_idx = tl::program_id(0);
      auto block_idx = tl::program_id(1);

      logits_ptr += row_idx * triton_cast(logits_row_stride, tl::int64);
      dloss_ptr += row_idx * dloss_row_stride;
      auto col_offsets = block_idx * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
      auto mask = col_offsets < VOCAB_SIZE;
      auto label_idx = tl::load(labels_ptr + row_idx).to(tl::int32);

      auto dloss = tl::full({}, 0.0, tl::float32);
      tl::if_(label_idx != -100, [&] { dloss = tl::load(dloss_ptr); });

      auto x = tl::load(logits_ptr + col_offsets, mask, -INFINITY).to(tl::float32);

      // Do logit scaling for Cohere
      if (DO_LOGIT_SCALING) x = x * LOGIT_SCALE;  // d/dx [s * x] = s

      // Do logit softcapping for Gemma 2: t * tanh(1/t * x)
      auto partial = x;
      if (DO_SOFTCAPPING) {
        // d/dx [t * tanh(1/t * x)] = 1 - tanh^2(1/t * x)
        partial = triton_tanh(x / SOFTCAP);
        x = SOFTCAP * partial;
      }

      auto logsumexp = tl::load(logsumexp_ptr + row_idx);
      auto y = tl::exp(x - logsumexp);
      y = tl::where(col_offsets == label_idx,
                    y - 1.0,  // exp(x - logsumexp) - 1
                    y);       // exp(x - logsumexp)

      if (DO_LOGIT_SCALING) y = y * LOGIT_SCALE;                   // d/dx [s * x] = s
      if (DO_SOFTCAPPING) y = y * (1.0 - partial * partial);       // d/dx [t * tanh(1/t * x)]

      // If y == 0: dC/dx = 0 ==> we already masked it to be = 0, so dloss = 0.
      tl::store(logits_ptr + col_offsets, dloss * y, mask);
    },
    {"logits_ptr", "logits_row_stride", "dloss_ptr", "dloss_row_stride", "logsumexp_ptr", "labels_ptr", "VOCAB_SIZE",
     "BLOCK_SIZE", "DO_SOFTCAPPING", "SOFTCAP", "DO_LOGIT_SCALING", "LOGIT_SCALE"});

bool g_poison = false;  // while checking: losses and logsumexps start as NaN

Tensor empty(Tensor::Shape shape, tritium::Device device) {
  return g_poison ? tritium::ops::full(shape, NAN, DType::f32, device) : Tensor::empty(shape, DType::f32, device);
}

struct Saved {
  Tensor logits, logsumexp, labels;
  bool DO_SOFTCAPPING, DO_LOGIT_SCALING;
  double logit_softcapping, logit_scaling;
};

// Fast_CrossEntropyLoss.forward: the losses [n_rows] (f32) and what the backward needs.
std::pair<Tensor, Saved> ce_forward(const Tensor& logits, const Tensor& labels_in, double logit_softcapping = 0,
                                    double logit_scaling = 0) {
  if (logits.dim() != 2 || labels_in.dim() != 1 || labels_in.size(0) != logits.size(0) || logits.stride(1) != 1)
    tritium::fail("cross_entropy: logits must be [n_rows, vocab] with unit column stride and labels [n_rows], got {} and {}",
                  logits.str(), labels_in.str());
  const int64_t n_rows = logits.size(0), vocab_size = logits.size(1);
  const tritium::Device device = logits.device();
  Tensor labels = labels_in.to(device);
  const int64_t n_chunks = vocab_size / MAX_FUSED_SIZE + (vocab_size % MAX_FUSED_SIZE != 0);
  Tensor losses = empty({n_rows}, device);
  const bool DO_SOFTCAPPING = logit_softcapping != 0, DO_LOGIT_SCALING = logit_scaling != 0;
  Tensor logsumexp;
  auto warps = [](int w) { return tritium::Options{.num_warps = w, .num_stages = 3, .device = std::nullopt}; };
  if (n_chunks == 1) {
    // For small vocabs <= 65336 like Llama, Mistral
    auto [BLOCK_SIZE, num_warps] = calculate_settings(vocab_size);
    logsumexp = empty({n_rows}, device);
    _cross_entropy_forward[{n_rows}](logits, logits.stride(0), losses, logsumexp, labels, int(vocab_size), BLOCK_SIZE,
                                     DO_SOFTCAPPING, logit_softcapping, DO_LOGIT_SCALING, logit_scaling, warps(num_warps));
  } else {
    // For large vocabs > 65336 like Gemma 256K
    Tensor chunked = empty({n_rows, n_chunks}, device);
    _chunked_cross_entropy_forward[tritium::Grid(n_rows, n_chunks)](
        logits, int(logits.stride(0)), losses, chunked, labels, int(vocab_size), int(n_chunks), int(MAX_FUSED_SIZE),
        DO_SOFTCAPPING, logit_softcapping, DO_LOGIT_SCALING, logit_scaling, warps(32));
    // logsumexp(chunked_logsumexp) - x: do the -x separately (torch.logsumexp(logsumexp, dim = 1))
    namespace ops = tritium::ops;
    Tensor m = ops::amax(chunked, {1}, true);
    logsumexp = ops::add(ops::log(ops::sum(ops::exp(ops::sub(chunked, m)), {1})), m.reshape({n_rows}));
    losses = ops::add(losses, logsumexp);
    losses = ops::where(ops::eq(labels, -100), ops::zeros({n_rows}, DType::f32, device), losses);  // masked_fill_
  }
  return {losses, Saved{logits, logsumexp, labels, DO_SOFTCAPPING, DO_LOGIT_SCALING, logit_softcapping, logit_scaling}};
}

// Fast_CrossEntropyLoss.backward: the logits' gradient, written over the logits.
Tensor ce_backward(const Saved& s, const Tensor& dlosses) {
  const int64_t n_rows = s.logits.size(0), vocab_size = s.logits.size(1);
  const int BLOCK_SIZE = 4096;
  const int64_t n_blocks = vocab_size / BLOCK_SIZE + (vocab_size % BLOCK_SIZE != 0);
  _cross_entropy_backward[tritium::Grid(n_rows, n_blocks)](
      s.logits, int(s.logits.stride(0)), dlosses, int(dlosses.stride(0)), s.logsumexp, s.labels, int(vocab_size),
      BLOCK_SIZE, s.DO_SOFTCAPPING, s.logit_softcapping, s.DO_LOGIT_SCALING, s.logit_scaling,
      tritium::Options{.num_warps = 8, .num_stages = 3, .device = std::nullopt});
  return s.logits;
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

// Relative errors of the losses and of the logits' gradient against float64.
std::pair<double, double> errors(const tritium::Device& device, int64_t rows, int64_t vocab, DType dtype, double softcap,
                                 double scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 3);
  std::uniform_int_distribution<int64_t> pick(0, vocab - 1);
  std::vector<double> hx(static_cast<size_t>(rows * vocab)), hd(static_cast<size_t>(rows));
  std::vector<int64_t> hl(static_cast<size_t>(rows));
  for (auto& v : hx) v = normal(rng);
  for (auto& v : hd) v = 1 + 0.5 * normal(rng);
  for (size_t i = 0; i < hl.size(); ++i) hl[i] = i % 4 == 1 ? -100 : pick(rng);  // ignored rows included
  Tensor logits = Tensor::from_vector(hx, {rows, vocab}, device).to(dtype);
  Tensor labels = Tensor::from_vector(hl, {rows}, device);
  Tensor dloss = Tensor::from_vector(hd, {rows}, device).to(DType::f32);
  hx = host(logits), hd = host(dloss);
  g_poison = true;
  auto [losses, saved] = ce_forward(logits, labels, softcap, scale);
  g_poison = false;
  const auto gl = host(losses);
  Tensor grad = ce_backward(saved, dloss);
  const auto gg = host(grad);
  std::vector<double> ref_loss(static_cast<size_t>(rows)), ref_grad(hx.size());
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> z(static_cast<size_t>(vocab)), dz(z.size());  // transformed logits, d z / d x
    double mx = -INFINITY;
    for (int64_t j = 0; j < vocab; ++j) {
      double x = hx[size_t(r * vocab + j)], d = 1;
      if (scale != 0) x *= scale, d *= scale;
      if (softcap != 0) {
        const double t = std::tanh(x / softcap);
        x = softcap * t, d *= 1 - t * t;
      }
      z[size_t(j)] = x, dz[size_t(j)] = d, mx = std::max(mx, x);
    }
    double s = 0;
    for (double v : z) s += std::exp(v - mx);
    const double lse = mx + std::log(s);
    const int64_t label = hl[size_t(r)];
    ref_loss[size_t(r)] = label == -100 ? 0 : lse - z[size_t(label)];
    for (int64_t j = 0; j < vocab; ++j) {
      const double p = std::exp(z[size_t(j)] - lse) - (j == label ? 1 : 0);
      ref_grad[size_t(r * vocab + j)] = label == -100 ? 0 : hd[size_t(r)] * p * dz[size_t(j)];
    }
  }
  return {suite::rel_error(std::vector<float>(gl.begin(), gl.end()), ref_loss),
          suite::rel_error(std::vector<float>(gg.begin(), gg.end()), ref_grad)};
}

bool check(const tritium::Device& device) {
  struct Case {
    int64_t rows, vocab;
    DType dtype;
    double softcap, scale;
  };
  // Vocabularies off the power-of-two block, ignored rows (-100), Gemma 2's softcap, Cohere's
  // scaling, and a vocabulary past 65536 (two chunks, the host's merge) with both; the backward
  // over 4096-wide blocks with a partial last one.
  const std::vector<Case> cases = {{9, 1000, DType::f32, 0, 0},     {6, 5000, DType::bf16, 30.0, 0},
                                   {5, 777, DType::f16, 0, 0.125},  {4, 70000, DType::f32, 30.0, 0.5}};
  bool ok = true;
  std::string detail;
  double worst = 0;
  for (const Case& c : cases) {
    auto [el, eg] = errors(device, c.rows, c.vocab, c.dtype, c.softcap, c.scale, uint32_t(c.vocab + c.rows));
    // f32 1e-5; the gradient is written in the logits' dtype: f16 1e-3, bf16 1e-2 (the losses are
    // f32 from rounded inputs).
    const double bound = c.dtype == DType::bf16 ? 1e-2 : c.dtype == DType::f16 ? 1e-3 : 1e-5;
    const double e = std::max(el, eg);
    if (!(e <= bound)) ok = false;
    worst = std::max(worst, e / bound);
    detail += fmt::format("{}{} {}x{}{}{}: loss {:.1e} grad {:.1e}", detail.empty() ? "(" : ", ", tritium::dtype_name(c.dtype),
                          c.rows, c.vocab, c.softcap != 0 ? " softcap" : "", c.scale != 0 ? " scaled" : "", el, eg);
  }
  detail += "; bounds f32 1e-5, f16 1e-3, bf16 1e-2; reported: worst error / bound)";
  return suite::report("unsloth_cross_entropy", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// Unsloth ships no benchmark for this kernel: 4 x 1024 tokens over Llama-3's vocabulary (128256,
// two chunks), Llama-2's (32000) and Gemma 2's (256000, softcap 30), bf16, forward and backward
// (in place over the logits). GB/s counts the logits read (forward) or read and written (backward).
std::vector<suite::Row> bench(const tritium::Device& device) {
  struct Shape {
    int64_t vocab;
    double softcap;
  };
  const int64_t rows = device.is_cuda() ? 4096 : 16;
  std::vector<Shape> shapes = {{32000, 0}, {128256, 0}, {256000, 30.0}};
  if (!device.is_cuda()) shapes = {{32000, 0}};
  std::vector<suite::Row> out;
  for (const Shape& s : shapes) {
    Tensor logits = tritium::ops::randn({rows, s.vocab}, tritium::ops::default_generator(), DType::f32, device).to(DType::bf16);
    Tensor labels = tritium::ops::randint(0, s.vocab, {rows}, tritium::ops::default_generator(), DType::i64, device);
    Tensor dloss = tritium::ops::full({rows}, 1.0 / double(rows), DType::f32, device);
    const double bytes = double(logits.nbytes());
    auto [losses, saved] = ce_forward(logits, labels, s.softcap);
    const double fwd = tritium::do_bench([&] { ce_forward(logits, labels, s.softcap); }, device).median_ms;
    const double bwd = tritium::do_bench([&] { ce_backward(saved, dloss); }, device).median_ms;
    const std::string shape = fmt::format("{}x{} bf16{}", rows, s.vocab, s.softcap != 0 ? " softcap" : "");
    out.push_back({"forward " + shape, fwd, bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    out.push_back({"backward " + shape, bwd, 2 * bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return out;
}

const bool registered = suite::add({.name = "unsloth_cross_entropy",
                                    .source = "unslothai/unsloth unsloth/kernels/cross_entropy_loss.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
