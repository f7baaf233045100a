// Recurrent layers for users (issue 30 item 1): the differentiable recurrence
// tritium::rnn_recurrence (ops/rnn.h through the op registry), and the modules nn::RNN, nn::LSTM,
// nn::GRU and nn::RNNCell, nn::LSTMCell, nn::GRUCell in libtorch's shape, with PyTorch's
// parameter names, gate order, initialisation and repr. Include this header (nn/module.h does
// not): docs/nn.md, "Recurrent layers".
//
//   nn::LSTM lstm(nn::RNNOptions(128, 256).num_layers(2).batch_first(true).bidirectional(true));
//   auto out = lstm.forward_many({x});           // {output, h_n, c_n}; or ({x, h0, c0})
//   nn::GRUCell cell(10, 20);
//   Tensor h = cell.forward_many({x, h})[0];
#pragma once
#include <string>
#include <vector>

#include "nn/module.h"
#include "ops/rnn.h"

namespace tritium {

// The time loop of one layer in one direction (ops::rnn_recurrence, recorded): gates_x [T, B, G*H]
// = x W_ih^T of every step; h0 [B, H]; c0 [B, H] for "lstm" (undefined otherwise); w_hh
// [G*H, H]; b_ih, b_hh [G*H] or undefined. Returns the states [T, B, H] (lstm: [T, 2, B, H], h
// then c), each at its step's position (reverse: steps run from T-1 down to 0).
Tensor rnn_recurrence(const std::string& mode, const Tensor& gates_x, const Tensor& h0, const Tensor& c0,
                      const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, bool reverse = false);

namespace nn {

// torch.nn.RNN / LSTM / GRU's arguments (libtorch's RNNOptions / LSTMOptions / GRUOptions, one
// struct here): chained setters.
struct RNNOptions {
  RNNOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
#define TRITIUM_RNN_OPTION(type, name) \
  RNNOptions& name(type v) {           \
    name##_ = v;                       \
    return *this;                      \
  }                                    \
  type name##_
  int64_t input_size_, hidden_size_;
  TRITIUM_RNN_OPTION(int64_t, num_layers) = 1;
  TRITIUM_RNN_OPTION(bool, bias) = true;
  TRITIUM_RNN_OPTION(bool, batch_first) = false;
  TRITIUM_RNN_OPTION(double, dropout) = 0;
  TRITIUM_RNN_OPTION(bool, bidirectional) = false;
  TRITIUM_RNN_OPTION(std::string, nonlinearity) = "tanh";  // RNN only: "tanh" or "relu"
#undef TRITIUM_RNN_OPTION
};
using LSTMOptions = RNNOptions;
using GRUOptions = RNNOptions;

// What RNN, LSTM and GRU share. forward_many({input[, h0[, c0]]}) -> {output, h_n[, c_n]}:
// input [T, B, input_size] ([B, T, ...] with batch_first) or unbatched [T, input_size]; h0 / c0
// [num_layers * D, B, H] ([num_layers * D, H] unbatched), zeros when absent (an undefined tensor
// counts as absent); output [T, B, D * H] (batch_first: [B, T, D * H]); D = 2 when bidirectional.
// Dropout (training only) applies to every layer's output except the last's, drawn from `gen`.
// Parameters weight_ih_l{k}[_reverse] [G*H, in], weight_hh_l{k}[_reverse] [G*H, H],
// bias_ih_l{k}[_reverse], bias_hh_l{k}[_reverse] [G*H], all uniform in +-1/sqrt(H) (PyTorch's
// reset_parameters, in registration order). proj_size is not offered.
class RNNBase : public Module {
 public:
  std::vector<Tensor> forward_many(const std::vector<Tensor>& inputs) override;
  // One output is not what these modules return: an error naming forward_many.
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return name_; }
  // The parameters of layer `layer`, direction `direction` (0 forward, 1 reverse): w_ih, w_hh,
  // b_ih, b_hh (undefined without bias), as PyTorch's all_weights.
  std::vector<Tensor> layer_weights(int64_t layer, int64_t direction) const;

  ops::RnnMode mode;
  RNNOptions options;

 protected:
  RNNBase(const char* name, ops::RnnMode mode, RNNOptions options, Generator& gen);

 private:
  std::string name_;
  Generator* gen_;
};

// torch.nn.RNN: h' = tanh or relu(x W_ih^T + b_ih + h W_hh^T + b_hh) (options.nonlinearity).
class RNN : public RNNBase {
 public:
  explicit RNN(RNNOptions options, Generator& gen = ops::default_generator());
  RNN(int64_t input_size, int64_t hidden_size, Generator& gen = ops::default_generator())
      : RNN(RNNOptions(input_size, hidden_size), gen) {}
};

// torch.nn.LSTM (gates i, f, g, o).
class LSTM : public RNNBase {
 public:
  explicit LSTM(LSTMOptions options, Generator& gen = ops::default_generator());
  LSTM(int64_t input_size, int64_t hidden_size, Generator& gen = ops::default_generator())
      : LSTM(LSTMOptions(input_size, hidden_size), gen) {}
};

// torch.nn.GRU (gates r, z, n).
class GRU : public RNNBase {
 public:
  explicit GRU(GRUOptions options, Generator& gen = ops::default_generator());
  GRU(int64_t input_size, int64_t hidden_size, Generator& gen = ops::default_generator())
      : GRU(GRUOptions(input_size, hidden_size), gen) {}
};

// What the cells share: one step. forward_many({input[, h[, c]]}) -> {h'} ({h', c'} for
// LSTMCell); input [B, input_size] or unbatched [input_size]; h / c [B, H] ([H]), zeros when
// absent. forward(x) gives h' with zero state (RNNCell, GRUCell). Parameters weight_ih, weight_hh,
// bias_ih, bias_hh, uniform in +-1/sqrt(H).
class RNNCellBase : public Module {
 public:
  std::vector<Tensor> forward_many(const std::vector<Tensor>& inputs) override;
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return name_; }

  ops::RnnMode mode;
  int64_t input_size, hidden_size;
  bool bias;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;  // biases undefined without bias

 protected:
  RNNCellBase(const char* name, ops::RnnMode mode, int64_t input_size, int64_t hidden_size, bool bias, Generator& gen);
  void parameters_moved() override;

 private:
  std::string name_;
};

class RNNCell : public RNNCellBase {
 public:
  // nonlinearity "tanh" or "relu".
  RNNCell(int64_t input_size, int64_t hidden_size, bool bias = true, const std::string& nonlinearity = "tanh",
          Generator& gen = ops::default_generator());
};

class LSTMCell : public RNNCellBase {
 public:
  LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true, Generator& gen = ops::default_generator());
};

class GRUCell : public RNNCellBase {
 public:
  GRUCell(int64_t input_size, int64_t hidden_size, bool bias = true, Generator& gen = ops::default_generator());
};

}  // namespace nn
}  // namespace tritium
