// The recurrence of torch.nn.RNN / LSTM / GRU over a whole sequence (raw, non-differentiable;
// ops/decl/rnn.cpp declares it for autograd, nn/rnn.h builds the layers and modules on it), laid
// out as cuDNN and PyTorch do it: the input projection x W_ih^T of every time step is one matmul
// done by the caller (gates_x); this op then runs, per time step, one matmul h W_hh^T and one fused
// kernel for the gates (bias adds, sigmoid / tanh, the cell update). Its backward runs, per step in
// reverse, one fused kernel for the gates' gradients and one matmul for dh, and at the end one
// matmul for dW_hh over all steps (the saved h's stacked) and one sum per bias. docs/ops.md,
// "Recurrent layers".
//
// Gate order and formulas are PyTorch's (hidden size H, gates stacked along W's rows):
//   rnn_tanh / rnn_relu  h' = act(gx + b_ih + h W_hh^T + b_hh)
//   lstm (i, f, g, o)     c' = f * c + i * g,  h' = o * tanh(c')  (i, f, o sigmoid; g tanh)
//   gru (r, z, n)         n = tanh(gx_n + b_in + r * (h W_hn^T + b_hn)),  h' = (1 - z) * n + z * h
#pragma once
#include <string>

#include "ops/ops.h"

namespace tritium {
class Kernel;
}

namespace tritium::ops {

enum class RnnMode { rnn_tanh, rnn_relu, lstm, gru };
// "rnn_tanh", "rnn_relu", "lstm", "gru" (PyTorch's mode names, lower case); an error otherwise.
RnnMode rnn_mode(const std::string& name);
const char* rnn_mode_name(RnnMode mode);
int64_t rnn_gate_count(RnnMode mode);  // rows of W per hidden unit: 1, 1, 4, 3

// gates_x [T, B, G*H]: x W_ih^T of every step (without b_ih); h0 [B, H]; c0 [B, H] for lstm
// (undefined otherwise); w_hh [G*H, H]; b_ih, b_hh [G*H], each optional. All of one float dtype
// and device. reverse: the steps run T-1 ... 0 (the backward direction of a bidirectional layer).
// states: the state after each step at that step's position, [T, B, H] (lstm: [T, 2, B, H], h
// then c), so the output of the layer is states (lstm: states[:, 0]) and h_n is the state at the
// last step processed. workspace: what the backward reads beside the states (lstm: i, f, g, o;
// gru: r, z, n and h W_hn^T + b_hn; [T, B, 4H]; rnn: empty).
struct RnnRecurrenceResult {
  Tensor states, workspace;
};
RnnRecurrenceResult rnn_recurrence(RnnMode mode, const Tensor& gates_x, const Tensor& h0, const Tensor& c0,
                                   const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, bool reverse);

// Gradients of every input for grad_states (the gradient of `states`, any element may carry one):
// undefined where the input is undefined.
struct RnnRecurrenceGrads {
  Tensor gates_x, h0, c0, w_hh, b_ih, b_hh;
};
RnnRecurrenceGrads rnn_recurrence_backward(RnnMode mode, const Tensor& grad_states, const Tensor& h0,
                                           const Tensor& c0, const Tensor& w_hh, bool has_b_ih, bool has_b_hh,
                                           const Tensor& states, const Tensor& workspace, bool reverse);

namespace rnn_detail {
// The per-step gate kernels, for the CUDA code-generation tests (tests/test_nn_rnn_codegen.cpp).
// Forward: gx, gh, b_ih, b_hh, h_prev, c_prev, h_out, c_out, workspace, H, ACC, MODE, HAS_BI,
// HAS_BH, BLOCK. Backward: grad_h, grad_c, dh_rec, dc_carry, dh_direct, workspace, h_prev, c_prev,
// h_t, c_t, dgates_x, dgates_h, H, ACC, MODE, HAS_DHR, BLOCK. Grid: (B, cdiv(H, BLOCK)).
Kernel& forward_step_kernel();
Kernel& backward_step_kernel();
}  // namespace rnn_detail

}  // namespace tritium::ops
