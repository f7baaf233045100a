// Declaration of scaled_dot_product_attention: q, k, v; attributes is_causal and scale; the
// forward's row log-sum-exp is an extra (non-differentiable) output the fused backward reads.
#include "ops/decl/op_decl.h"

// Declarations name only the fields they set (designated initializers); GCC 12 warns about the
// rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tritium::ops::decl {

void declare_attention(OpRegistry& r) {
  using Inputs = std::vector<Tensor>;
  r.add({.name = "scaled_dot_product_attention",
         .torch_name = "torch.nn.functional.scaled_dot_product_attention",
         .inputs = {{.name = "query", .accepts = Accepts::floating},
                    {.name = "key", .accepts = Accepts::floating},
                    {.name = "value", .accepts = Accepts::floating}},
         .outputs = {"result", "lse"},
         .forward = [](const Inputs& in, Attrs& a) {
           AttentionResult y = scaled_dot_product_attention_forward(in[0], in[1], in[2], a.get<bool>("is_causal"),
                                                                    a.get<std::optional<double>>("scale"));
           return Inputs{y.out, y.lse};
         },
         .result_dtype = ResultDType::same_across,
         .autocast = AutocastClass::lower_precision_fp,
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           AttentionGrads d = scaled_dot_product_attention_backward(
               g, c.saved("query"), c.saved("key"), c.saved("value"), c.saved("result"), c.saved("lse"),
               c.attrs().get<bool>("is_causal"), c.attrs().get<std::optional<double>>("scale"));
           return Inputs{d.dq, d.dk, d.dv};
         },
         .fused_saves = {"query", "key", "value", "result", "lse"},
         .fused_backward_name = "scaled_dot_product_attention_backward",
         .twice_differentiable = false,
         // The kernels take f16, bf16 and f32 (no f64): an f32 check with a larger step and bound.
         .gradcheck_samples = [](Device d) {
           auto u = [d](const Shape& s, uint64_t seed) { return to_dtype(sample_uniform(s, d, seed), DType::f32); };
           auto attrs = [](bool causal, std::optional<double> scale) {
             return [=] { return Attrs{{"is_causal", causal}, {"scale", scale}}; };
           };
           return std::vector<GradcheckSample>{
               {"[1,2,5,4] x [1,2,7,4]", {u({1, 2, 5, 4}, 111), u({1, 2, 7, 4}, 112), u({1, 2, 7, 4}, 113)},
                attrs(false, std::nullopt), 2e-2, 1e-2},
               {"causal, scale 0.3", {u({1, 1, 6, 8}, 114), u({1, 1, 6, 8}, 115), u({1, 1, 6, 8}, 116)},
                attrs(true, 0.3), 2e-2, 1e-2},
           };
         }});
}

}  // namespace tritium::ops::decl
