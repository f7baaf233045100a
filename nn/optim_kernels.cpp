#include "nn/optim_kernels.h"

#include <algorithm>
#include <limits>

#include <tritium/tritium.h>

namespace tritium::nn::optim_kernels {
namespace tl = tritium::tl;

namespace {

constexpr int kBlock = 1024;
// Elements per row of a multi-tensor table (PyTorch's multi_tensor_apply uses 65536 too): small
// tensors take one row, large ones a row per kChunk elements, so the table stays small (a GPT's 50 tensors
// of 120M elements: ~2k rows) while every program has work.
constexpr int kChunk = 65536;
constexpr int kRow = 7;  // p, g, state0, state1, state2 addresses, first offset, end offset

// ---- the arithmetic, shared by both launch shapes ------------------------------------------------

tl::tensor ld(const tl::tensor& ptr, const tl::tensor& offs, const tl::tensor& mask) {
  return tl::load(ptr + offs, mask).to(tl::float32);
}
void st(const tl::tensor& ptr, const tl::tensor& offs, const tl::tensor& mask, const tl::tensor& v) {
  tl::store(ptr + offs, v.to(ptr.element_ty()), mask);
}

// g = grad + wd * p; without momentum p -= lr * g; with it buf = keep * buf + scale * g (keep = momentum
// and scale = 1 - dampening, or 0 and 1 on the first step: buf = g), p -= lr * (nesterov ? g + momentum * buf : buf).
void sgd_body(const tl::tensor& p_ptr, const tl::tensor& g_ptr, const tl::tensor& buf_ptr, const tl::tensor& offs,
              const tl::tensor& mask, const tl::tensor& keep, const tl::tensor& scale, const tl::tensor& lr,
              const tl::tensor& wd, const tl::tensor& momentum, bool MOMENTUM, bool NESTEROV) {
  auto p = ld(p_ptr, offs, mask);
  auto g = ld(g_ptr, offs, mask) + wd * p;
  if (!MOMENTUM) {
    st(p_ptr, offs, mask, p - lr * g);
    return;
  }
  auto buf = keep * ld(buf_ptr, offs, mask) + scale * g;
  st(buf_ptr, offs, mask, buf);
  auto d = NESTEROV ? g + momentum * buf : buf;
  st(p_ptr, offs, mask, p - lr * d);
}

// p *= decay (AdamW's 1 - lr * wd; 1 for Adam); g = grad + l2 * p (Adam's decay; 0 for AdamW);
// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; AMSGRAD: vmax = max(vmax, v) stands in for v;
// p -= step_size * m / (sqrt(v) / bc2_sqrt + eps), step_size = lr / (1 - b1^t), bc2_sqrt = sqrt(1 - b2^t).
// With f16 / bf16 state, m and v are rounded when stored and p's update uses them unrounded (f32),
// as PyTorch's fused Adam.
void adam_body(const tl::tensor& p_ptr, const tl::tensor& g_ptr, const tl::tensor& m_ptr, const tl::tensor& v_ptr,
               const tl::tensor& vmax_ptr, const tl::tensor& offs, const tl::tensor& mask,
               const tl::tensor& step_size, const tl::tensor& bc2_sqrt, const tl::tensor& decay, const tl::tensor& l2,
               const tl::tensor& beta1, const tl::tensor& one_minus_beta1, const tl::tensor& beta2,
               const tl::tensor& one_minus_beta2, const tl::tensor& eps, bool AMSGRAD) {
  auto p = ld(p_ptr, offs, mask);
  auto g = ld(g_ptr, offs, mask) + l2 * p;
  p = p * decay;
  auto m = beta1 * ld(m_ptr, offs, mask) + one_minus_beta1 * g;
  auto v = beta2 * ld(v_ptr, offs, mask) + one_minus_beta2 * (g * g);
  st(m_ptr, offs, mask, m);
  st(v_ptr, offs, mask, v);
  if (AMSGRAD) {
    v = tl::maximum(ld(vmax_ptr, offs, mask), v);
    st(vmax_ptr, offs, mask, v);
  }
  auto denom = tl::sqrt(v) / bc2_sqrt + eps;
  st(p_ptr, offs, mask, p - step_size * (m / denom));
}

// g = grad + wd * p; sq = alpha sq + (1 - alpha) g^2; CENTERED: ga = alpha ga + (1 - alpha) g,
// avg = sqrt(sq - ga^2) + eps, else sqrt(sq) + eps; MOMENTUM: buf = momentum buf + g / avg,
// p -= lr buf, else p -= lr g / avg.
void rmsprop_body(const tl::tensor& p_ptr, const tl::tensor& g_ptr, const tl::tensor& sq_ptr, const tl::tensor& ga_ptr,
                  const tl::tensor& buf_ptr, const tl::tensor& offs, const tl::tensor& mask, const tl::tensor& lr,
                  const tl::tensor& wd, const tl::tensor& alpha, const tl::tensor& one_minus_alpha,
                  const tl::tensor& eps, const tl::tensor& momentum, bool CENTERED, bool MOMENTUM) {
  auto p = ld(p_ptr, offs, mask);
  auto g = ld(g_ptr, offs, mask) + wd * p;
  auto sq = alpha * ld(sq_ptr, offs, mask) + one_minus_alpha * (g * g);
  st(sq_ptr, offs, mask, sq);
  auto var = sq;
  if (CENTERED) {
    auto ga = alpha * ld(ga_ptr, offs, mask) + one_minus_alpha * g;
    st(ga_ptr, offs, mask, ga);
    var = sq - ga * ga;
  }
  auto d = g / (tl::sqrt(var) + eps);
  if (MOMENTUM) {
    d = momentum * ld(buf_ptr, offs, mask) + d;
    st(buf_ptr, offs, mask, d);
  }
  st(p_ptr, offs, mask, p - lr * d);
}

// g = grad + wd * p; sum += g^2; p -= clr * g / (sqrt(sum) + eps).
void adagrad_body(const tl::tensor& p_ptr, const tl::tensor& g_ptr, const tl::tensor& sum_ptr, const tl::tensor& offs,
                  const tl::tensor& mask, const tl::tensor& clr, const tl::tensor& wd, const tl::tensor& eps) {
  auto p = ld(p_ptr, offs, mask);
  auto g = ld(g_ptr, offs, mask) + wd * p;
  auto sum = ld(sum_ptr, offs, mask) + g * g;
  st(sum_ptr, offs, mask, sum);
  st(p_ptr, offs, mask, p - clr * (g / (tl::sqrt(sum) + eps)));
}

// Optimizer::skip_if (GradScaler): with SKIPPABLE the program ends before touching anything when
// the device flag found_inf (a 0-dim f32) is nonzero, so a step with an inf/NaN gradient changes
// no parameter and no state, without a host synchronisation (PyTorch's fused optimisers'
// found_inf). Without it the pointer is never read (the caller passes any tensor of the device).
void return_if_found_inf(const tl::tensor& found_inf_ptr, bool SKIPPABLE) {
  if (SKIPPABLE) tl::if_(tl::load(found_inf_ptr).to(tl::float32) != 0.0f, [] { tl::return_(); });
}

// ---- launch shapes --------------------------------------------------------------------------------

// Per parameter: program i updates elements [i * BLOCK, (i + 1) * BLOCK) of one tensor; s0..s2
// are the state tensors (the parameter itself where unused: never touched), c0 / c1 the slot's
// scalars.
#define PER_PARAM_PROLOGUE                                                 \
  return_if_found_inf(found_inf_ptr, SKIPPABLE);                          \
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);           \
  auto mask = offs < n;

// Multi-tensor: program i reads row i of the table and loops over its chunk in BLOCK steps.
// The pointers start at the chunk (64-bit), so the loop's offsets and mask are 32-bit, as the
// per-parameter kernels' (a 64-bit mask costs as much again on the CPU).
struct Row {
  tl::tensor p, g, s0, s1, s2, count, c0, c1;
};
Row read_row(const tl::tensor& table, const tl::tensor& scalars, DType dt) {
  auto pid = tl::program_id(0);
  auto row = table + pid * kRow;
  auto first = tl::load(row + 5);
  auto addr = [&](int k) { return tl::load(row + k).to(tl::pointer_type(dt)) + first; };
  return {addr(0), addr(1), addr(2), addr(3), addr(4), (tl::load(row + 6) - first).to(tl::int32),
          tl::load(scalars + pid * 2), tl::load(scalars + pid * 2 + 1)};
}

auto sgd_one = tritium::kernel(
    "sgd_step",
    [](tl::ptr<tl::any> p, tl::ptr<tl::any> g, tl::ptr<tl::any> s0, tl::i32 n, tl::f32 c0, tl::f32 c1, tl::f32 lr,
       tl::f32 wd, tl::f32 momentum, bool MOMENTUM, bool NESTEROV, tl::ptr<tl::any> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      PER_PARAM_PROLOGUE
      sgd_body(p, g, s0, offs, mask, c0, c1, lr, wd, momentum, MOMENTUM, NESTEROV);
    },
    {"p", "g", "s0", "n", "c0", "c1", "lr", "wd", "momentum", "MOMENTUM", "NESTEROV", "found_inf_ptr", "SKIPPABLE", "BLOCK"});

auto sgd_multi = tritium::kernel(
    "sgd_multi_tensor_step",
    [](tl::ptr<int64_t> table, tl::ptr<float> scalars, tl::f32 lr, tl::f32 wd, tl::f32 momentum,
       tl::constexpr_<DType> DT, bool MOMENTUM, bool NESTEROV, tl::ptr<float> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      return_if_found_inf(found_inf_ptr, SKIPPABLE);
      Row r = read_row(table, scalars, DT);
      for (auto o : tl::range(0, r.count, BLOCK)) {
        auto offs = o + tl::arange(0, BLOCK);
        sgd_body(r.p, r.g, r.s0, offs, offs < r.count, r.c0, r.c1, lr, wd, momentum, MOMENTUM, NESTEROV);
      }
    },
    {"table", "scalars", "lr", "wd", "momentum", "DT", "MOMENTUM", "NESTEROV", "found_inf_ptr", "SKIPPABLE", "BLOCK"});

auto adam_one = tritium::kernel(
    "adam_step",
    [](tl::ptr<tl::any> p, tl::ptr<tl::any> g, tl::ptr<tl::any> s0, tl::ptr<tl::any> s1, tl::ptr<tl::any> s2,
       tl::i32 n, tl::f32 c0, tl::f32 c1, tl::f32 decay, tl::f32 l2, tl::f32 beta1, tl::f32 one_minus_beta1,
       tl::f32 beta2, tl::f32 one_minus_beta2, tl::f32 eps, bool AMSGRAD, tl::ptr<tl::any> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      PER_PARAM_PROLOGUE
      adam_body(p, g, s0, s1, s2, offs, mask, c0, c1, decay, l2, beta1, one_minus_beta1, beta2, one_minus_beta2, eps,
                AMSGRAD);
    },
    {"p", "g", "s0", "s1", "s2", "n", "c0", "c1", "decay", "l2", "beta1", "one_minus_beta1", "beta2",
     "one_minus_beta2", "eps", "AMSGRAD", "found_inf_ptr", "SKIPPABLE", "BLOCK"});

auto adam_multi = tritium::kernel(
    "adam_multi_tensor_step",
    [](tl::ptr<int64_t> table, tl::ptr<float> scalars, tl::f32 decay, tl::f32 l2, tl::f32 beta1,
       tl::f32 one_minus_beta1, tl::f32 beta2, tl::f32 one_minus_beta2, tl::f32 eps, tl::constexpr_<DType> DT,
       bool AMSGRAD, tl::ptr<float> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      return_if_found_inf(found_inf_ptr, SKIPPABLE);
      Row r = read_row(table, scalars, DT);
      for (auto o : tl::range(0, r.count, BLOCK)) {
        auto offs = o + tl::arange(0, BLOCK);
        adam_body(r.p, r.g, r.s0, r.s1, r.s2, offs, offs < r.count, r.c0, r.c1, decay, l2, beta1, one_minus_beta1,
                  beta2, one_minus_beta2, eps, AMSGRAD);
      }
    },
    {"table", "scalars", "decay", "l2", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2", "eps", "DT",
     "AMSGRAD", "found_inf_ptr", "SKIPPABLE", "BLOCK"});

auto rmsprop_one = tritium::kernel(
    "rmsprop_step",
    [](tl::ptr<tl::any> p, tl::ptr<tl::any> g, tl::ptr<tl::any> s0, tl::ptr<tl::any> s1, tl::ptr<tl::any> s2,
       tl::i32 n, tl::f32 lr, tl::f32 wd, tl::f32 alpha, tl::f32 one_minus_alpha, tl::f32 eps, tl::f32 momentum,
       bool CENTERED, bool MOMENTUM, tl::ptr<tl::any> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      PER_PARAM_PROLOGUE
      rmsprop_body(p, g, s0, s1, s2, offs, mask, lr, wd, alpha, one_minus_alpha, eps, momentum, CENTERED, MOMENTUM);
    },
    {"p", "g", "s0", "s1", "s2", "n", "lr", "wd", "alpha", "one_minus_alpha", "eps", "momentum", "CENTERED",
     "MOMENTUM", "found_inf_ptr", "SKIPPABLE", "BLOCK"});

auto rmsprop_multi = tritium::kernel(
    "rmsprop_multi_tensor_step",
    [](tl::ptr<int64_t> table, tl::ptr<float> scalars, tl::f32 lr, tl::f32 wd, tl::f32 alpha, tl::f32 one_minus_alpha,
       tl::f32 eps, tl::f32 momentum, tl::constexpr_<DType> DT, bool CENTERED, bool MOMENTUM, tl::ptr<float> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      return_if_found_inf(found_inf_ptr, SKIPPABLE);
      Row r = read_row(table, scalars, DT);
      for (auto o : tl::range(0, r.count, BLOCK)) {
        auto offs = o + tl::arange(0, BLOCK);
        rmsprop_body(r.p, r.g, r.s0, r.s1, r.s2, offs, offs < r.count, lr, wd, alpha, one_minus_alpha, eps, momentum,
                     CENTERED, MOMENTUM);
      }
    },
    {"table", "scalars", "lr", "wd", "alpha", "one_minus_alpha", "eps", "momentum", "DT", "CENTERED", "MOMENTUM",
     "found_inf_ptr", "SKIPPABLE", "BLOCK"});

auto adagrad_one = tritium::kernel(
    "adagrad_step",
    [](tl::ptr<tl::any> p, tl::ptr<tl::any> g, tl::ptr<tl::any> s0, tl::i32 n, tl::f32 c0, tl::f32 wd, tl::f32 eps,
       tl::ptr<tl::any> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      PER_PARAM_PROLOGUE
      adagrad_body(p, g, s0, offs, mask, c0, wd, eps);
    },
    {"p", "g", "s0", "n", "c0", "wd", "eps", "found_inf_ptr", "SKIPPABLE", "BLOCK"});

auto adagrad_multi = tritium::kernel(
    "adagrad_multi_tensor_step",
    [](tl::ptr<int64_t> table, tl::ptr<float> scalars, tl::f32 wd, tl::f32 eps, tl::constexpr_<DType> DT, tl::ptr<float> found_inf_ptr, bool SKIPPABLE, int BLOCK) {
      return_if_found_inf(found_inf_ptr, SKIPPABLE);
      Row r = read_row(table, scalars, DT);
      for (auto o : tl::range(0, r.count, BLOCK)) {
        auto offs = o + tl::arange(0, BLOCK);
        adagrad_body(r.p, r.g, r.s0, offs, offs < r.count, r.c0, wd, eps);
      }
    },
    {"table", "scalars", "wd", "eps", "DT", "found_inf_ptr", "SKIPPABLE", "BLOCK"});

#undef PER_PARAM_PROLOGUE

int32_t numel32(const Tensor& p) {
  if (p.numel() > std::numeric_limits<int32_t>::max())
    fail("optimizer step: parameter {} has more than 2^31 - 1 elements", p.str());
  return static_cast<int32_t>(p.numel());
}
tritium::Grid grid_for(int32_t n) { return tritium::Grid(std::max<int64_t>(1, tritium::cdiv(n, kBlock))); }
// A state operand: the tensor, or the parameter where the update does not use it (never touched).
const Tensor& or_p(const Slot& s, int k) { return s.state[size_t(k)].defined() ? s.state[size_t(k)] : s.p; }

// The multi-tensor table of `slots` on their device: rows and per-row scalars.
struct Table {
  Tensor rows, scalars;
  int64_t count = 0;
};
Table make_table(const std::vector<Slot>& slots) {
  std::vector<int64_t> rows;
  std::vector<float> scalars;
  auto addr = [](const Tensor& t) { return t.defined() ? reinterpret_cast<int64_t>(t.raw_data()) : int64_t(0); };
  for (const Slot& s : slots) {
    int64_t n = s.p.numel();
    for (int64_t first = 0; first < n; first += kChunk) {
      rows.insert(rows.end(), {addr(s.p), addr(s.g), addr(s.state[0]), addr(s.state[1]), addr(s.state[2]), first,
                               std::min(n, first + kChunk)});
      scalars.insert(scalars.end(), {s.scalars[0], s.scalars[1]});
    }
  }
  Table t;
  t.count = static_cast<int64_t>(scalars.size() / 2);
  Device dev = slots.front().p.device();
  t.rows = Tensor::from_vector(rows, {static_cast<int64_t>(rows.size())}, dev);
  t.scalars = Tensor::from_vector(scalars, {static_cast<int64_t>(scalars.size())}, dev);
  return t;
}

// skip_if's flag: a 0-dim f32 on the parameters' device (the kernels read it there).
void check_found_inf(const Tensor& found_inf, const std::vector<Slot>& slots) {
  if (!found_inf.defined()) return;
  if (found_inf.dtype() != DType::f32 || found_inf.numel() != 1)
    fail("optimizer step: found_inf must be a 0-dim f32 tensor, got {}", found_inf.str());
  for (const Slot& s : slots)
    if (!(found_inf.device() == s.p.device()))
      fail("optimizer step: found_inf is on {} but a parameter ({}) on {}", found_inf.device().str(), s.p.str(),
           s.p.device().str());
}

}  // namespace

Kernel& multi_tensor_kernel(const std::string& optimizer) {
  if (optimizer == "sgd") return sgd_multi;
  if (optimizer == "adam") return adam_multi;
  if (optimizer == "rmsprop") return rmsprop_multi;
  if (optimizer == "adagrad") return adagrad_multi;
  fail("optim_kernels::multi_tensor_kernel: no optimizer '{}' (sgd, adam, rmsprop, adagrad)", optimizer);
}

int64_t sgd(const std::vector<Slot>& slots, bool multi, float lr, float weight_decay, float momentum, bool has_momentum,
            bool nesterov, const Tensor& found_inf) {
  if (slots.empty()) return 0;
  check_found_inf(found_inf, slots);
  const bool skip = found_inf.defined();
  tritium::Options opts{.device = slots.front().p.device()};
  if (multi) {
    Table t = make_table(slots);
    if (t.count == 0) return 0;
    sgd_multi[tritium::Grid(t.count)](t.rows, t.scalars, lr, weight_decay, momentum, slots.front().p.dtype(),
                                      has_momentum, nesterov, skip ? found_inf : t.scalars, skip, kBlock, opts);
    return 1;
  }
  for (const Slot& s : slots) {
    int32_t n = numel32(s.p);
    sgd_one[grid_for(n)](s.p, s.g, or_p(s, 0), n, s.scalars[0], s.scalars[1], lr, weight_decay, momentum, has_momentum,
                         nesterov, skip ? found_inf : s.p, skip, kBlock, opts);
  }
  return static_cast<int64_t>(slots.size());
}

int64_t adam(const std::vector<Slot>& slots, bool multi, float decay, float l2, double beta1, double beta2, float eps,
             bool amsgrad, const Tensor& found_inf) {
  if (slots.empty()) return 0;
  check_found_inf(found_inf, slots);
  const bool skip = found_inf.defined();
  tritium::Options opts{.device = slots.front().p.device()};
  float omb1 = float(1 - beta1), omb2 = float(1 - beta2);
  if (multi) {
    Table t = make_table(slots);
    if (t.count == 0) return 0;
    adam_multi[tritium::Grid(t.count)](t.rows, t.scalars, decay, l2, float(beta1), omb1, float(beta2), omb2, eps,
                                       slots.front().p.dtype(), amsgrad, skip ? found_inf : t.scalars, skip, kBlock, opts);
    return 1;
  }
  for (const Slot& s : slots) {
    int32_t n = numel32(s.p);
    adam_one[grid_for(n)](s.p, s.g, or_p(s, 0), or_p(s, 1), or_p(s, 2), n, s.scalars[0], s.scalars[1], decay, l2, float(beta1),
                          omb1, float(beta2), omb2, eps, amsgrad, skip ? found_inf : s.p, skip, kBlock, opts);
  }
  return static_cast<int64_t>(slots.size());
}

int64_t rmsprop(const std::vector<Slot>& slots, bool multi, float lr, float weight_decay, double alpha, float eps,
                float momentum, bool centered, bool has_momentum, const Tensor& found_inf) {
  if (slots.empty()) return 0;
  check_found_inf(found_inf, slots);
  const bool skip = found_inf.defined();
  tritium::Options opts{.device = slots.front().p.device()};
  float oma = float(1 - alpha);
  if (multi) {
    Table t = make_table(slots);
    if (t.count == 0) return 0;
    rmsprop_multi[tritium::Grid(t.count)](t.rows, t.scalars, lr, weight_decay, float(alpha), oma, eps, momentum,
                                          slots.front().p.dtype(), centered, has_momentum, skip ? found_inf : t.scalars, skip, kBlock, opts);
    return 1;
  }
  for (const Slot& s : slots) {
    int32_t n = numel32(s.p);
    rmsprop_one[grid_for(n)](s.p, s.g, or_p(s, 0), or_p(s, 1), or_p(s, 2), n, lr, weight_decay, float(alpha), oma, eps,
                             momentum, centered, has_momentum, skip ? found_inf : s.p, skip, kBlock, opts);
  }
  return static_cast<int64_t>(slots.size());
}

int64_t adagrad(const std::vector<Slot>& slots, bool multi, float weight_decay, float eps, const Tensor& found_inf) {
  if (slots.empty()) return 0;
  check_found_inf(found_inf, slots);
  const bool skip = found_inf.defined();
  tritium::Options opts{.device = slots.front().p.device()};
  if (multi) {
    Table t = make_table(slots);
    if (t.count == 0) return 0;
    adagrad_multi[tritium::Grid(t.count)](t.rows, t.scalars, weight_decay, eps, slots.front().p.dtype(), skip ? found_inf : t.scalars, skip, kBlock, opts);
    return 1;
  }
  for (const Slot& s : slots) {
    int32_t n = numel32(s.p);
    adagrad_one[grid_for(n)](s.p, s.g, or_p(s, 0), n, s.scalars[0], weight_decay, eps, skip ? found_inf : s.p, skip, kBlock, opts);
  }
  return static_cast<int64_t>(slots.size());
}

}  // namespace tritium::nn::optim_kernels
