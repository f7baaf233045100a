// The recurrence of RNN / LSTM / GRU layers (ops/rnn.h): a host loop over time steps, each one
// matmul (h W_hh^T forward, dgates W_hh backward) and one fused gate kernel; dW_hh and the bias
// gradients once over all steps at the end. The gate kernels take one program per (batch row,
// block of hidden units) and compute in f32 for f16 / bf16 (f64 for f64).
#include "ops/rnn.h"

#include <algorithm>

#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;
using detail::shape_str;

constexpr int kMaxBlock = 256;

int mode_int(RnnMode m) { return static_cast<int>(m); }

}  // namespace

namespace rnn_detail {

// One step forward: the gate pre-activations gx (+ b_ih) and gh (+ b_hh) of row b, hidden units
// j, to the new h (and c), and the workspace the backward reads.
Kernel& forward_step_kernel() {
  static Kernel k = tritium::kernel(
      "rnn_forward_step",
      [](P gx, P gh, P bi, P bh, P hp, P cp, P hout, P cout, P ws, tl::i64 H, int ACC, int MODE, bool HAS_BI,
         bool HAS_BH, int BLOCK) {
        const DType acc = static_cast<DType>(ACC);
        const auto mode = static_cast<RnnMode>(MODE);
        const int G = static_cast<int>(rnn_gate_count(mode));
        auto b = tl::program_id(0).to(tl::int64);
        auto j = tl::program_id(1).to(tl::int64) * BLOCK + tl::arange(0, BLOCK);
        auto m = j < H;
        auto ld = [&](P p, const tl::tensor& off) { return tl::load(p + off, m, 0).to(acc); };
        auto row = b * (H * G) + j;  // gate 0 of unit j in the [B, G*H] rows
        auto hidx = b * H + j;       // unit j in the [B, H] states
        auto wrow = b * (H * 4) + j; // the [B, 4H] workspace
        auto xg = [&](int g) {
          auto v = ld(gx, row + H * g);
          return HAS_BI ? v + ld(bi, j + H * g) : v;
        };
        auto hg = [&](int g) {
          auto v = ld(gh, row + H * g);
          return HAS_BH ? v + ld(bh, j + H * g) : v;
        };
        switch (mode) {
          case RnnMode::rnn_tanh: tl::store(hout + hidx, tl::tanh(xg(0) + hg(0)), m); break;
          case RnnMode::rnn_relu: tl::store(hout + hidx, tl::maximum(xg(0) + hg(0), 0.0), m); break;
          case RnnMode::lstm: {
            auto i = tl::sigmoid(xg(0) + hg(0)), f = tl::sigmoid(xg(1) + hg(1));
            auto g = tl::tanh(xg(2) + hg(2)), o = tl::sigmoid(xg(3) + hg(3));
            auto c = f * ld(cp, hidx) + i * g;
            tl::store(cout + hidx, c, m);
            tl::store(hout + hidx, o * tl::tanh(c), m);
            tl::store(ws + wrow, i, m);
            tl::store(ws + wrow + H, f, m);
            tl::store(ws + wrow + H * 2, g, m);
            tl::store(ws + wrow + H * 3, o, m);
            break;
          }
          case RnnMode::gru: {
            auto r = tl::sigmoid(xg(0) + hg(0)), z = tl::sigmoid(xg(1) + hg(1));
            auto hn = hg(2);
            auto n = tl::tanh(xg(2) + r * hn);
            tl::store(hout + hidx, (1.0 - z) * n + z * ld(hp, hidx), m);
            tl::store(ws + wrow, r, m);
            tl::store(ws + wrow + H, z, m);
            tl::store(ws + wrow + H * 2, n, m);
            tl::store(ws + wrow + H * 3, hn, m);
            break;
          }
        }
      },
      {"gx", "gh", "bi", "bh", "hp", "cp", "hout", "cout", "ws", "H", "ACC", "MODE", "HAS_BI", "HAS_BH", "BLOCK"});
  return k;
}

// One step backward: dh = grad of this step's h + dh carried from the next step (dhr: the
// matmul dgates_next W_hh; for gru also dhd, the direct part dh_next * z_next, carried in place),
// to the gates' gradients on the input side (dgx) and the hidden side (dgh: differs from dgx for
// gru's n gate only), and the carried dc (lstm, in place: each lane reads and writes its own).
Kernel& backward_step_kernel() {
  static Kernel k = tritium::kernel(
      "rnn_backward_step",
      [](P gsh, P gsc, P dhr, P dcc, P dhd, P ws, P hp, P cp, P ht, P ct, P dgx, P dgh, tl::i64 H, int ACC, int MODE,
         bool HAS_DHR, int BLOCK) {
        const DType acc = static_cast<DType>(ACC);
        const auto mode = static_cast<RnnMode>(MODE);
        const int G = static_cast<int>(rnn_gate_count(mode));
        auto b = tl::program_id(0).to(tl::int64);
        auto j = tl::program_id(1).to(tl::int64) * BLOCK + tl::arange(0, BLOCK);
        auto m = j < H;
        auto ld = [&](P p, const tl::tensor& off) { return tl::load(p + off, m, 0).to(acc); };
        auto row = b * (H * G) + j;
        auto hidx = b * H + j;
        auto wrow = b * (H * 4) + j;
        auto dh = ld(gsh, hidx);
        if (HAS_DHR) dh = dh + ld(dhr, hidx);
        switch (mode) {
          case RnnMode::rnn_tanh: {
            auto y = ld(ht, hidx);
            tl::store(dgx + row, dh * (1.0 - y * y), m);
            break;
          }
          case RnnMode::rnn_relu:
            tl::store(dgx + row, tl::where(ld(ht, hidx) > 0.0, dh, 0.0), m);
            break;
          case RnnMode::lstm: {
            auto i = ld(ws, wrow), f = ld(ws, wrow + H), g = ld(ws, wrow + H * 2), o = ld(ws, wrow + H * 3);
            auto tc = tl::tanh(ld(ct, hidx));
            auto dc = ld(dcc, hidx) + ld(gsc, hidx) + dh * o * (1.0 - tc * tc);
            tl::store(dgx + row, dc * g * i * (1.0 - i), m);
            tl::store(dgx + row + H, dc * ld(cp, hidx) * f * (1.0 - f), m);
            tl::store(dgx + row + H * 2, dc * i * (1.0 - g * g), m);
            tl::store(dgx + row + H * 3, dh * tc * o * (1.0 - o), m);
            tl::store(dcc + hidx, dc * f, m);
            break;
          }
          case RnnMode::gru: {
            dh = dh + ld(dhd, hidx);
            auto r = ld(ws, wrow), z = ld(ws, wrow + H), n = ld(ws, wrow + H * 2), hn = ld(ws, wrow + H * 3);
            auto dn = dh * (1.0 - z) * (1.0 - n * n);
            auto dz = dh * (ld(hp, hidx) - n) * z * (1.0 - z);
            auto dr = dn * hn * r * (1.0 - r);
            tl::store(dgx + row, dr, m);
            tl::store(dgx + row + H, dz, m);
            tl::store(dgx + row + H * 2, dn, m);
            tl::store(dgh + row, dr, m);
            tl::store(dgh + row + H, dz, m);
            tl::store(dgh + row + H * 2, dn * r, m);
            tl::store(dhd + hidx, dh * z, m);
            break;
          }
        }
      },
      {"gsh", "gsc", "dhr", "dcc", "dhd", "ws", "hp", "cp", "ht", "ct", "dgx", "dgh", "H", "ACC", "MODE", "HAS_DHR",
       "BLOCK"});
  return k;
}

}  // namespace rnn_detail

namespace {

using rnn_detail::backward_step_kernel;
using rnn_detail::forward_step_kernel;

int block_for(int64_t H) { return static_cast<int>(std::clamp<int64_t>(next_power_of_2(H), 16, kMaxBlock)); }

// Row-major [rows, cols] view at element `offset` of a contiguous tensor's storage.
Tensor matrix_at(const Tensor& t, int64_t rows, int64_t cols, int64_t offset) {
  return t.as_strided({rows, cols}, {cols, 1}, t.storage_offset() + offset);
}

// The transpose of a contiguous [rows, cols] matrix, as a view.
Tensor transposed(const Tensor& t) {
  return t.as_strided({t.size(1), t.size(0)}, {1, t.size(1)}, t.storage_offset());
}

// The sizes the recurrence works on, from its arguments (checked).
struct Dims {
  int64_t T, B, H, G;
};

Dims check_recurrence(const char* op, RnnMode mode, const Tensor& gates_x, const Tensor& h0, const Tensor& c0,
                      const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  std::vector<const Tensor*> ts{&gates_x, &h0, &w_hh};
  for (const Tensor* t : {&c0, &b_ih, &b_hh})
    if (t->defined()) ts.push_back(t);
  detail::check_tensors(op, ts);
  if (!is_float(gates_x.dtype())) fail("{}: expected floating-point gates_x, got {}", op, dtype_name(gates_x.dtype()));
  for (const Tensor* t : ts)
    if (t->dtype() != gates_x.dtype())
      fail("{}: all arguments must have gates_x's dtype {}, got {}", op, dtype_name(gates_x.dtype()),
           dtype_name(t->dtype()));
  const int64_t G = rnn_gate_count(mode);
  if (gates_x.dim() != 3) fail("{}: gates_x must be [T, B, {}*H], got {}", op, G, shape_str(gates_x.shape()));
  if (h0.dim() != 2) fail("{}: h0 must be [B, H], got {}", op, shape_str(h0.shape()));
  const Dims d{gates_x.size(0), gates_x.size(1), h0.size(1), G};
  if (h0.size(0) != d.B || gates_x.size(2) != G * d.H)
    fail("{}: gates_x {} does not match h0 {} (expected [T, {}, {}])", op, shape_str(gates_x.shape()),
         shape_str(h0.shape()), d.B, G * d.H);
  if (w_hh.shape() != Shape{G * d.H, d.H})
    fail("{}: w_hh must be [{}, {}], got {}", op, G * d.H, d.H, shape_str(w_hh.shape()));
  for (const Tensor* t : {&b_ih, &b_hh})
    if (t->defined() && t->shape() != Shape{G * d.H})
      fail("{}: biases must be [{}], got {}", op, G * d.H, shape_str(t->shape()));
  if ((mode == RnnMode::lstm) != c0.defined())
    fail("{}: c0 is {} for mode {}", op, c0.defined() ? "given" : "missing", rnn_mode_name(mode));
  if (c0.defined() && c0.shape() != h0.shape())
    fail("{}: c0 must have h0's shape {}, got {}", op, shape_str(h0.shape()), shape_str(c0.shape()));
  return d;
}

// The h (or c: which = 1, lstm) of step t in `states`, a [B, H] contiguous view.
Tensor state_at(RnnMode mode, const Tensor& states, const Dims& d, int64_t t, int which = 0) {
  const int64_t per_step = (mode == RnnMode::lstm ? 2 : 1) * d.B * d.H;
  return matrix_at(states, d.B, d.H, t * per_step + which * d.B * d.H);
}

}  // namespace

RnnMode rnn_mode(const std::string& name) {
  for (RnnMode m : {RnnMode::rnn_tanh, RnnMode::rnn_relu, RnnMode::lstm, RnnMode::gru})
    if (name == rnn_mode_name(m)) return m;
  fail("rnn: unknown mode '{}' (expected rnn_tanh, rnn_relu, lstm or gru)", name);
}

const char* rnn_mode_name(RnnMode mode) {
  switch (mode) {
    case RnnMode::rnn_tanh: return "rnn_tanh";
    case RnnMode::rnn_relu: return "rnn_relu";
    case RnnMode::lstm: return "lstm";
    case RnnMode::gru: return "gru";
  }
  return "?";
}

int64_t rnn_gate_count(RnnMode mode) {
  switch (mode) {
    case RnnMode::lstm: return 4;
    case RnnMode::gru: return 3;
    default: return 1;
  }
}

RnnRecurrenceResult rnn_recurrence(RnnMode mode, const Tensor& gates_x, const Tensor& h0, const Tensor& c0,
                                   const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, bool reverse) {
  const char* op = "rnn_recurrence";
  const Dims d = check_recurrence(op, mode, gates_x, h0, c0, w_hh, b_ih, b_hh);
  const bool lstm = mode == RnnMode::lstm, gated = lstm || mode == RnnMode::gru;
  const Device dev = gates_x.device();
  const DType dt = gates_x.dtype();
  RnnRecurrenceResult r;
  r.states = Tensor::empty(lstm ? Shape{d.T, 2, d.B, d.H} : Shape{d.T, d.B, d.H}, dt, dev);
  r.workspace = Tensor::empty(gated ? Shape{d.T, d.B, 4 * d.H} : Shape{0}, dt, dev);
  if (d.T == 0 || d.B == 0 || d.H == 0) return r;
  const Tensor gx = contiguous(gates_x);
  // W_hh^T [H, G*H] made contiguous once: the per-step matmul runs ~1.5x faster on the CPU with a
  // row-major B than with the transposed view.
  const Tensor w_t = contiguous(transposed(contiguous(w_hh)));
  const Tensor bi = b_ih.defined() ? contiguous(b_ih) : gx, bh = b_hh.defined() ? contiguous(b_hh) : gx;
  Tensor h = contiguous(h0), c = lstm ? contiguous(c0) : gx;
  const int block = block_for(d.H);
  for (int64_t s = 0; s < d.T; ++s) {
    const int64_t t = reverse ? d.T - 1 - s : s;
    const Tensor gh = matmul(h, w_t);  // [B, G*H]
    const Tensor hout = state_at(mode, r.states, d, t), cout = lstm ? state_at(mode, r.states, d, t, 1) : gx;
    const Tensor ws = gated ? matrix_at(r.workspace, d.B, 4 * d.H, t * d.B * 4 * d.H) : gx;
    forward_step_kernel()[{d.B, cdiv(d.H, block)}](matrix_at(gx, d.B, d.G * d.H, t * d.B * d.G * d.H), gh, bi, bh, h,
                                                   c, hout, cout, ws, d.H, static_cast<int>(detail::math_type(dt)),
                                                   mode_int(mode), b_ih.defined(), b_hh.defined(), block);
    h = hout;
    if (lstm) c = cout;
  }
  return r;
}

RnnRecurrenceGrads rnn_recurrence_backward(RnnMode mode, const Tensor& grad_states, const Tensor& h0,
                                           const Tensor& c0, const Tensor& w_hh, bool has_b_ih, bool has_b_hh,
                                           const Tensor& states, const Tensor& workspace, bool reverse) {
  const char* op = "rnn_recurrence_backward";
  const bool lstm = mode == RnnMode::lstm, gru = mode == RnnMode::gru;
  const int64_t T = states.dim() > 0 ? states.size(0) : 0, G = rnn_gate_count(mode);
  if (h0.dim() != 2) fail("{}: h0 must be [B, H], got {}", op, shape_str(h0.shape()));
  const Dims d{T, h0.size(0), h0.size(1), G};
  if (grad_states.shape() != states.shape())
    fail("{}: grad shape {} differs from the states' {}", op, shape_str(grad_states.shape()), shape_str(states.shape()));
  const Device dev = h0.device();
  const DType dt = h0.dtype();
  RnnRecurrenceGrads r;
  r.gates_x = Tensor::empty({d.T, d.B, G * d.H}, dt, dev);
  if (d.T == 0 || d.B == 0 || d.H == 0) {
    fill_(r.gates_x, Scalar(0.0));
    r.h0 = zeros_like(h0);
    if (lstm) r.c0 = zeros_like(c0);
    r.w_hh = zeros_like(w_hh);
    if (has_b_ih) r.b_ih = zeros({G * d.H}, dt, dev);
    if (has_b_hh) r.b_hh = zeros({G * d.H}, dt, dev);
    return r;
  }
  const Tensor g = contiguous(to_dtype(grad_states, dt));
  const Tensor st = contiguous(states), ws = contiguous(workspace), w = contiguous(w_hh);
  const Tensor h0c = contiguous(h0), c0c = lstm ? contiguous(c0) : h0c;
  Tensor dgh = gru ? Tensor::empty({d.T, d.B, G * d.H}, dt, dev) : r.gates_x;
  // Carried in place from step to step: dc (lstm) and gru's direct dh * z.
  Tensor dcc = lstm ? zeros({d.B, d.H}, dt, dev) : h0c, dhd = gru ? zeros({d.B, d.H}, dt, dev) : h0c;
  Tensor dhr;  // dgates_next W_hh, undefined before the first step
  const int block = block_for(d.H);
  const int64_t gate_step = d.B * G * d.H;
  for (int64_t s = 0; s < d.T; ++s) {
    const int64_t t = reverse ? s : d.T - 1 - s;  // the forward's steps, last first
    const bool first = reverse ? t == d.T - 1 : t == 0;
    const int64_t prev = reverse ? t + 1 : t - 1;
    const Tensor hp = first ? h0c : state_at(mode, st, d, prev), cp = !lstm ? h0c : first ? c0c : state_at(mode, st, d, prev, 1);
    const Tensor dgx_t = matrix_at(r.gates_x, d.B, G * d.H, t * gate_step);
    const Tensor dgh_t = matrix_at(dgh, d.B, G * d.H, t * gate_step);
    backward_step_kernel()[{d.B, cdiv(d.H, block)}](
        state_at(mode, g, d, t), lstm ? state_at(mode, g, d, t, 1) : h0c, dhr.defined() ? dhr : h0c, dcc, dhd,
        lstm || gru ? matrix_at(ws, d.B, 4 * d.H, t * d.B * 4 * d.H) : h0c, hp, cp, state_at(mode, st, d, t),
        lstm ? state_at(mode, st, d, t, 1) : h0c, dgx_t, dgh_t, d.H, static_cast<int>(detail::math_type(dt)),
        mode_int(mode), dhr.defined(), block);
    dhr = matmul(dgh_t, w);  // [B, H]
  }
  r.h0 = gru ? add(dhr, dhd) : dhr;
  if (lstm) r.c0 = dcc;
  // dW_hh = sum over steps of dgates_h^T h_prev: the h_prev of every step stacked in step order,
  // then one [G*H, T*B] x [T*B, H] matmul.
  Tensor h_prev = Tensor::empty({d.T, d.B, d.H}, dt, dev);
  if (d.T > 1) {
    const int64_t step = (lstm ? 2 : 1) * d.B * d.H;
    const Tensor hs = st.as_strided({d.T - 1, d.B, d.H}, {step, d.H, 1}, st.storage_offset() + (reverse ? step : 0));
    Tensor dst = h_prev.as_strided({d.T - 1, d.B, d.H}, {d.B * d.H, d.H, 1}, reverse ? 0 : d.B * d.H);
    copy_(dst, hs);
  }
  Tensor h0_dst = matrix_at(h_prev, d.B, d.H, (reverse ? d.T - 1 : 0) * d.B * d.H);
  copy_(h0_dst, h0c);
  r.w_hh = matmul(transposed(matrix_at(dgh, d.T * d.B, G * d.H, 0)), matrix_at(h_prev, d.T * d.B, d.H, 0));
  if (has_b_hh) r.b_hh = sum(dgh, {0, 1}, false);
  if (has_b_ih) r.b_ih = sum(r.gates_x, {0, 1}, false);
  return r;
}

}  // namespace tritium::ops
