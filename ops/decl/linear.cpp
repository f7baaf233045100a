// Declaration of linear (torch.nn.functional.linear: input @ weight^T + bias), the op nn::Linear
// runs. One op rather than a matmul of a transposed view and an add, as PyTorch's: autocast then
// casts the weight itself (a parameter, so its cast is cached once per scope) and the bias with
// it, and the output is in the autocast dtype.
#include "ops/decl/op_decl.h"

#include "nn/functional.h"
#include "ops/matmul_add.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include "runtime/views.h"

namespace tritium::ops::decl {
namespace {

using Ctx = DerivativeContext;
using Inputs = std::vector<Tensor>;

// d weight = grad^T @ input with every batch dim flattened into rows ([out, in]).
Tensor grad_weight(const Tensor& g, const Ctx& c) {
  const Tensor& x = c.saved("input");
  const int64_t in = x.size(-1), out = g.dim() == 0 ? 1 : g.size(-1);
  const int64_t rows = x.numel() / std::max<int64_t>(in, 1);
  return tritium::matmul(g.reshape({rows, out}).t(), x.reshape({rows, in}));
}

}  // namespace

void declare_linear(OpRegistry& r) {
  r.add({.name = "linear",
         .torch_name = "torch.nn.functional.linear",
         .inputs = {{.name = "input", .accepts = Accepts::floating},
                    {.name = "weight", .accepts = Accepts::floating},
                    {.name = "bias", .accepts = Accepts::floating, .optional = true}},
         .forward = [](const Inputs& in, Attrs&) {
           // The bias is added in the product's epilogue (one launch).
           const Tensor w_t = runtime::t_of(in[1]);
           return Inputs{in[2].defined() ? matmul_add(in[2], in[0], w_t) : matmul(in[0], w_t)};
         },
         .result_dtype = ResultDType::same_across,
         .autocast = AutocastClass::lower_precision_fp,
         .derivatives = {{.input = "input", .saves = {"weight"}, .text = "grad @ weight",
                          .formula = [](const Tensor& g, const Ctx& c) { return tritium::matmul(g, c.saved("weight")); }},
                         {.input = "weight", .saves = {"input"}, .text = "grad^T @ input (batch dims as rows)",
                          .formula = grad_weight},
                         // The dispatch sums the broadcast dims away (sum_to the bias's shape).
                         {.input = "bias", .saves = {}, .text = "grad summed to bias's shape",
                          .formula = [](const Tensor& g, const Ctx&) { return g; }}},
         .gradcheck_samples = [](Device d) {
           auto u = [d](const Shape& s, uint64_t seed) { return sample_uniform(s, d, seed); };
           return std::vector<GradcheckSample>{
               {"[3,5] x [4,5] + [4]", {u({3, 5}, 81), u({4, 5}, 82), u({4}, 83)}, [] { return Attrs{}; }},
               {"[2,3,5] x [4,5], no bias", {u({2, 3, 5}, 84), u({4, 5}, 85), Tensor()}, [] { return Attrs{}; }},
               {"[5] x [4,5] + [4]", {u({5}, 86), u({4, 5}, 87), u({4}, 88)}, [] { return Attrs{}; }},
           };
         }});
}

}  // namespace tritium::ops::decl
