// Declaration of rnn_recurrence (ops/rnn.h): the time loop of an RNN / LSTM / GRU layer over
// precomputed input gates, attributes mode ("rnn_tanh", "rnn_relu", "lstm", "gru") and reverse;
// the workspace (gate activations) is an extra, non-differentiable output that the fused backward
// reads beside the states.
#include <fmt/format.h>

#include "ops/decl/op_decl.h"
#include "ops/rnn.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tritium::ops::decl {

void declare_rnn(OpRegistry& r) {
  using Inputs = std::vector<Tensor>;
  auto mode_of = [](const Attrs& a) { return rnn_mode(a.get<std::string>("mode")); };
  r.add({.name = "rnn_recurrence",
         .torch_name = "torch.nn.RNN/LSTM/GRU's time loop (torch.rnn_tanh_cell / lstm_cell / gru_cell per step)",
         .inputs = {{.name = "gates_x", .accepts = Accepts::floating},
                    {.name = "h0", .accepts = Accepts::floating, .promotes = false},
                    {.name = "c0", .accepts = Accepts::floating, .promotes = false, .optional = true},
                    {.name = "w_hh", .accepts = Accepts::floating, .promotes = false},
                    {.name = "b_ih", .accepts = Accepts::floating, .promotes = false, .optional = true},
                    {.name = "b_hh", .accepts = Accepts::floating, .promotes = false, .optional = true}},
         .outputs = {"result", "workspace"},
         .forward = [mode_of](const Inputs& in, Attrs& a) {
           RnnRecurrenceResult y =
               rnn_recurrence(mode_of(a), in[0], in[1], in[2], in[3], in[4], in[5], a.get<bool>("reverse"));
           return Inputs{y.states, y.workspace};
         },
         .autocast = AutocastClass::lower_precision_fp,
         .fused_backward = [mode_of](const Tensor& g, const DerivativeContext& c) {
           RnnRecurrenceGrads d = rnn_recurrence_backward(
               mode_of(c.attrs()), g, c.saved("h0"), c.saved("c0"), c.saved("w_hh"), c.needs_input_grad("b_ih"),
               c.needs_input_grad("b_hh"), c.saved("result"), c.saved("workspace"), c.attrs().get<bool>("reverse"));
           return Inputs{d.gates_x, d.h0, d.c0, d.w_hh, d.b_ih, d.b_hh};
         },
         .fused_saves = {"h0", "c0", "w_hh", "result", "workspace"},
         .fused_backward_name = "rnn_recurrence_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           std::vector<GradcheckSample> samples;
           uint64_t seed = 900;
           for (const char* mode : {"rnn_tanh", "rnn_relu", "lstm", "gru"})
             for (bool reverse : {false, true})
               for (bool bias : {true, false}) {
                 if (!bias && reverse) continue;  // one biasless case per mode
                 const RnnMode m = rnn_mode(mode);
                 const int64_t T = 3, B = 2, H = 3, G = rnn_gate_count(m);
                 const double lo = m == RnnMode::rnn_relu ? 0.1 : -1;  // relu: away from the kink
                 Inputs in{sample_uniform({T, B, G * H}, d, seed++, lo, 1), sample_uniform({B, H}, d, seed++, lo, 1),
                           m == RnnMode::lstm ? sample_uniform({B, H}, d, seed++) : Tensor(),
                           sample_uniform({G * H, H}, d, seed++, lo * 0.5, 0.5),
                           bias ? sample_uniform({G * H}, d, seed++, lo * 0.5, 0.5) : Tensor(),
                           bias ? sample_uniform({G * H}, d, seed++, lo * 0.5, 0.5) : Tensor()};
                 std::string what = fmt::format("{}{}{}", mode, reverse ? " reverse" : "", bias ? "" : " no bias");
                 samples.push_back({what, in, [mode, reverse] {
                                      return Attrs{{"mode", std::string(mode)}, {"reverse", reverse}};
                                    }});
               }
           return samples;
         }});
}

}  // namespace tritium::ops::decl
