// The recurrence function (one registry call: nn/dispatch.h records the autograd node) and the
// modules of nn/rnn.h. A layer is one matmul for the input projection of the whole sequence and
// one rnn_recurrence per direction; layers feed each other through a concatenation of both
// directions and, in training, dropout.
#include "nn/rnn.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nn/autograd.h"
#include "nn/dispatch.h"

namespace tritium {

Tensor rnn_recurrence(const std::string& mode, const Tensor& gates_x, const Tensor& h0, const Tensor& c0,
                      const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, bool reverse) {
  return nn::call("rnn_recurrence", {gates_x, h0, c0, w_hh, b_ih, b_hh},
                  ops::Attrs{{"mode", std::string(mode)}, {"reverse", reverse}});
}

namespace nn {

namespace {

// PyTorch's spellings of a shape in its messages: "(2, 3, 20)" for expected, "[1, 3, 20]" for got.
std::string paren_shape(const std::vector<int64_t>& s) { return fmt::format("({})", fmt::join(s, ", ")); }
std::string bracket_shape(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }


// A parameter uniform in +-bound drawn from gen (PyTorch's reset_parameters of RNNs and cells).
Tensor uniform_parameter(const std::vector<int64_t>& shape, double bound, Generator& gen) {
  Tensor t = Tensor::empty(shape, DType::f32);
  ops::uniform_(t, -bound, bound, gen);
  return t;
}

// The states [T, B, H] of one layer's recurrence and its final h (and c).
struct DirectionResult {
  Tensor out, h_n, c_n;
};

DirectionResult run_direction(ops::RnnMode mode, const Tensor& x, const std::vector<Tensor>& w, const Tensor& h0,
                              const Tensor& c0, bool reverse) {
  // Every step's input projection at once. Without autograd, W_ih^T is made row-major first (a
  // faster matmul operand on the CPU than the transposed view); with it, the view, whose backward
  // (dx = dgates W_ih) then reads W_ih row-major.
  const bool recorded = grad_enabled() && (x.requires_grad() || w[0].requires_grad());
  const Tensor gates_x = tritium::matmul(x, recorded ? w[0].t() : w[0].t().contiguous());
  const Tensor states = rnn_recurrence(ops::rnn_mode_name(mode), gates_x, h0, c0, w[1], w[2], w[3], reverse);
  const int64_t last = reverse ? 0 : x.size(0) - 1;
  DirectionResult r;
  if (mode == ops::RnnMode::lstm) {
    r.out = states.select(1, 0);
    r.h_n = states.select(0, last).select(0, 0);
    r.c_n = states.select(0, last).select(0, 1);
  } else {
    r.out = states;
    r.h_n = states.select(0, last);
  }
  return r;
}

}  // namespace

// ---- RNN, LSTM, GRU ---------------------------------------------------------------------------------

RNNBase::RNNBase(const char* name, ops::RnnMode mode_, RNNOptions opts, Generator& gen)
    : mode(mode_), options(std::move(opts)), name_(name), gen_(&gen) {
  const RNNOptions& o = options;
  if (!(o.dropout_ >= 0 && o.dropout_ <= 1))
    fail("{}: dropout should be a number in range [0, 1] representing the probability of an element being zeroed "
         "(got {})",
         name, o.dropout_);
  if (o.hidden_size_ <= 0) fail("{}: hidden_size must be greater than zero (got {})", name, o.hidden_size_);
  if (o.num_layers_ <= 0) fail("{}: num_layers must be greater than zero (got {})", name, o.num_layers_);
  if (o.input_size_ <= 0) fail("{}: input_size must be greater than zero (got {})", name, o.input_size_);
  const int64_t G = ops::rnn_gate_count(mode), H = o.hidden_size_, D = o.bidirectional_ ? 2 : 1;
  const double bound = 1.0 / std::sqrt(static_cast<double>(H));
  NoGradGuard no_grad;
  for (int64_t layer = 0; layer < o.num_layers_; ++layer)
    for (int64_t dir = 0; dir < D; ++dir) {
      const std::string suffix = fmt::format("_l{}{}", layer, dir == 1 ? "_reverse" : "");
      const int64_t in = layer == 0 ? o.input_size_ : D * H;
      register_parameter("weight_ih" + suffix, uniform_parameter({G * H, in}, bound, gen));
      register_parameter("weight_hh" + suffix, uniform_parameter({G * H, H}, bound, gen));
      if (o.bias_) {
        register_parameter("bias_ih" + suffix, uniform_parameter({G * H}, bound, gen));
        register_parameter("bias_hh" + suffix, uniform_parameter({G * H}, bound, gen));
      }
    }
}

std::vector<Tensor> RNNBase::layer_weights(int64_t layer, int64_t direction) const {
  const std::string suffix = fmt::format("_l{}{}", layer, direction == 1 ? "_reverse" : "");
  return {parameter("weight_ih" + suffix), parameter("weight_hh" + suffix),
          options.bias_ ? parameter("bias_ih" + suffix) : Tensor(), options.bias_ ? parameter("bias_hh" + suffix) : Tensor()};
}

Tensor RNNBase::forward(const Tensor&) {
  fail("{}: returns several tensors (output, h_n{}): call forward_many({{input}}) or forward_many({{input, h0{}}})",
       name_, mode == ops::RnnMode::lstm ? ", c_n" : "", mode == ops::RnnMode::lstm ? ", c0" : "");
}

std::vector<Tensor> RNNBase::forward_many(const std::vector<Tensor>& inputs) {
  const bool lstm = mode == ops::RnnMode::lstm;
  const size_t max_inputs = lstm ? 3 : 2;
  if (inputs.empty() || inputs.size() > max_inputs)
    fail("{}: forward_many takes input{} ({} tensors at most), got {}", name_, lstm ? ", h0, c0" : ", h0", max_inputs,
         inputs.size());
  Tensor x = inputs[0];
  Tensor hx = inputs.size() > 1 ? inputs[1] : Tensor(), cx = inputs.size() > 2 ? inputs[2] : Tensor();
  if (!x.defined()) fail("{}: the input is undefined", name_);
  if (lstm && hx.defined() != cx.defined()) fail("LSTM: give both h0 and c0, or neither");
  if (x.dim() != 2 && x.dim() != 3) fail("{}: Expected input to be 2D or 3D, got {}D instead", name_, x.dim());
  const bool batched = x.dim() == 3;
  for (const Tensor* h : {&hx, &cx})
    if (h->defined() && h->dim() != x.dim())
      fail("{}: For {} input, hx should also be {}-D but got {}-D tensor", name_,
           batched ? "batched 3-D" : "unbatched 2-D", x.dim(), h->dim());
  if (!batched) {
    x = x.unsqueeze(1);
    if (hx.defined()) hx = hx.unsqueeze(1);
    if (cx.defined()) cx = cx.unsqueeze(1);
  } else if (options.batch_first_) {
    x = x.transpose(0, 1);
  }
  const RNNOptions& o = options;
  if (x.size(-1) != o.input_size_)
    fail("{}: input.size(-1) must be equal to input_size. Expected {}, got {}", name_, o.input_size_, x.size(-1));
  const int64_t T = x.size(0), B = x.size(1), H = o.hidden_size_, D = o.bidirectional_ ? 2 : 1, L = o.num_layers_;
  if (T == 0) fail("{}: Expected sequence length to be larger than 0 in RNN", name_);
  const std::vector<int64_t> hidden_shape{L * D, B, H};
  for (int i = 0; i < 2; ++i) {
    const Tensor& h = i == 0 ? hx : cx;
    if (h.defined() && h.shape() != hidden_shape)
      fail("{}: Expected hidden{} size {}, got {}", name_, lstm ? fmt::format("[{}]", i) : "",
           paren_shape(batched ? hidden_shape : std::vector<int64_t>{L * D, H}),
           bracket_shape(batched ? h.shape() : std::vector<int64_t>{h.size(0), h.size(2)}));
    if (h.defined() && (h.dtype() != x.dtype() || h.device() != x.device()))
      fail("{}: hidden{} must have the input's dtype {} and device, got {}", name_, i, dtype_name(x.dtype()),
           dtype_name(h.dtype()));
  }
  if (!hx.defined()) hx = tritium::zeros(hidden_shape, x.dtype(), x.device());
  if (lstm && !cx.defined()) cx = tritium::zeros(hidden_shape, x.dtype(), x.device());

  std::vector<Tensor> h_n, c_n;
  Tensor layer_in = x;
  for (int64_t layer = 0; layer < L; ++layer) {
    std::vector<Tensor> outs;
    for (int64_t dir = 0; dir < D; ++dir) {
      const int64_t k = layer * D + dir;
      DirectionResult r = run_direction(mode, layer_in, layer_weights(layer, dir), hx.select(0, k),
                                        lstm ? cx.select(0, k) : Tensor(), dir == 1);
      outs.push_back(r.out);
      h_n.push_back(r.h_n);
      if (lstm) c_n.push_back(r.c_n);
    }
    layer_in = D == 1 ? outs[0] : tritium::cat(outs, 2);
    if (o.dropout_ > 0 && is_training() && layer + 1 < L) layer_in = tritium::dropout(layer_in, o.dropout_, true, *gen_);
  }
  Tensor output = layer_in, hn = tritium::stack(h_n, 0), cn = lstm ? tritium::stack(c_n, 0) : Tensor();
  if (!batched) {
    output = output.squeeze(1);
    hn = hn.squeeze(1);
    if (lstm) cn = cn.squeeze(1);
  } else if (o.batch_first_) {
    output = output.transpose(0, 1);
  }
  return lstm ? std::vector<Tensor>{output, hn, cn} : std::vector<Tensor>{output, hn};
}

// PyTorch's RNNBase.extra_repr: the sizes, then the settings that differ from the defaults.
std::string RNNBase::extra_repr() const {
  const RNNOptions& o = options;
  std::string s = fmt::format("{}, {}", o.input_size_, o.hidden_size_);
  if (o.num_layers_ != 1) s += fmt::format(", num_layers={}", o.num_layers_);
  if (!o.bias_) s += ", bias=False";
  if (o.batch_first_) s += ", batch_first=True";
  if (o.dropout_ != 0) s += ", dropout=" + python_float(o.dropout_);
  if (o.bidirectional_) s += ", bidirectional=True";
  if (mode == ops::RnnMode::rnn_relu) s += ", nonlinearity=relu";
  return s;
}

namespace {
ops::RnnMode rnn_nonlinearity(const char* module, const std::string& nonlinearity) {
  if (nonlinearity == "tanh") return ops::RnnMode::rnn_tanh;
  if (nonlinearity == "relu") return ops::RnnMode::rnn_relu;
  fail("{}: Unknown nonlinearity '{}'. Select from 'tanh' or 'relu'.", module, nonlinearity);
}
}  // namespace

RNN::RNN(RNNOptions o, Generator& gen) : RNNBase("RNN", rnn_nonlinearity("RNN", o.nonlinearity_), o, gen) {}
LSTM::LSTM(LSTMOptions o, Generator& gen) : RNNBase("LSTM", ops::RnnMode::lstm, o, gen) {}
GRU::GRU(GRUOptions o, Generator& gen) : RNNBase("GRU", ops::RnnMode::gru, o, gen) {}

// ---- cells ------------------------------------------------------------------------------------------

RNNCellBase::RNNCellBase(const char* name, ops::RnnMode mode_, int64_t in, int64_t hidden, bool with_bias,
                         Generator& gen)
    : mode(mode_), input_size(in), hidden_size(hidden), bias(with_bias), name_(name) {
  if (hidden <= 0) fail("{}: hidden_size must be greater than zero (got {})", name, hidden);
  if (in <= 0) fail("{}: input_size must be greater than zero (got {})", name, in);
  const int64_t G = ops::rnn_gate_count(mode);
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
  NoGradGuard no_grad;
  weight_ih = register_parameter("weight_ih", uniform_parameter({G * hidden, in}, bound, gen));
  weight_hh = register_parameter("weight_hh", uniform_parameter({G * hidden, hidden}, bound, gen));
  if (with_bias) {
    bias_ih = register_parameter("bias_ih", uniform_parameter({G * hidden}, bound, gen));
    bias_hh = register_parameter("bias_hh", uniform_parameter({G * hidden}, bound, gen));
  }
}

void RNNCellBase::parameters_moved() {
  weight_ih = parameter("weight_ih");
  weight_hh = parameter("weight_hh");
  if (bias) bias_ih = parameter("bias_ih"), bias_hh = parameter("bias_hh");
}

Tensor RNNCellBase::forward(const Tensor& x) {
  if (mode == ops::RnnMode::lstm)
    fail("LSTMCell: returns (h', c'): call forward_many({{input}}) or forward_many({{input, h, c}})");
  return forward_many({x})[0];
}

std::vector<Tensor> RNNCellBase::forward_many(const std::vector<Tensor>& inputs) {
  const bool lstm = mode == ops::RnnMode::lstm;
  const size_t max_inputs = lstm ? 3 : 2;
  if (inputs.empty() || inputs.size() > max_inputs)
    fail("{}: forward_many takes input{} ({} tensors at most), got {}", name_, lstm ? ", h, c" : ", h", max_inputs,
         inputs.size());
  Tensor x = inputs[0];
  Tensor hx = inputs.size() > 1 ? inputs[1] : Tensor(), cx = inputs.size() > 2 ? inputs[2] : Tensor();
  if (!x.defined()) fail("{}: the input is undefined", name_);
  if (lstm && hx.defined() != cx.defined()) fail("LSTMCell: give both h and c, or neither");
  if (x.dim() != 1 && x.dim() != 2) fail("{}: Expected input to be 1D or 2D, got {}D instead", name_, x.dim());
  const bool batched = x.dim() == 2;
  if (!batched) {
    x = x.unsqueeze(0);
    if (hx.defined()) hx = hx.unsqueeze(0);
    if (cx.defined()) cx = cx.unsqueeze(0);
  }
  if (x.size(1) != input_size)
    fail("{}: input has inconsistent input_size: got {} expected {}", name_, x.size(1), input_size);
  const int64_t B = x.size(0);
  for (int i = 0; i < 2; ++i) {
    const Tensor& h = i == 0 ? hx : cx;
    if (!h.defined()) continue;
    if (h.dim() != 2) fail("{}: hidden{} must be {}-D like the input, got {}-D", name_, i, x.dim(), inputs[1 + i].dim());
    if (h.size(0) != B) fail("{}: Input batch size {} doesn't match hidden{} batch size {}", name_, B, i, h.size(0));
    if (h.size(1) != hidden_size)
      fail("{}: hidden{} has inconsistent hidden_size: got {}, expected {}", name_, i, h.size(1), hidden_size);
  }
  if (!hx.defined()) hx = tritium::zeros({B, hidden_size}, x.dtype(), x.device());
  if (lstm && !cx.defined()) cx = tritium::zeros({B, hidden_size}, x.dtype(), x.device());
  const Tensor gates_x = tritium::matmul(x, weight_ih.t()).unsqueeze(0);  // one step
  const Tensor states = rnn_recurrence(ops::rnn_mode_name(mode), gates_x, hx, cx, weight_hh, bias_ih, bias_hh).select(0, 0);
  std::vector<Tensor> out = lstm ? std::vector<Tensor>{states.select(0, 0), states.select(0, 1)} : std::vector<Tensor>{states};
  if (!batched)
    for (Tensor& t : out) t = t.squeeze(0);
  return out;
}

std::string RNNCellBase::extra_repr() const {
  std::string s = fmt::format("{}, {}", input_size, hidden_size);
  if (!bias) s += ", bias=False";
  if (mode == ops::RnnMode::rnn_relu) s += ", nonlinearity=relu";
  return s;
}

RNNCell::RNNCell(int64_t in, int64_t hidden, bool b, const std::string& nonlinearity, Generator& gen)
    : RNNCellBase("RNNCell", rnn_nonlinearity("RNNCell", nonlinearity), in, hidden, b, gen) {}
LSTMCell::LSTMCell(int64_t in, int64_t hidden, bool b, Generator& gen)
    : RNNCellBase("LSTMCell", ops::RnnMode::lstm, in, hidden, b, gen) {}
GRUCell::GRUCell(int64_t in, int64_t hidden, bool b, Generator& gen)
    : RNNCellBase("GRUCell", ops::RnnMode::gru, in, hidden, b, gen) {}

}  // namespace nn
}  // namespace tritium
