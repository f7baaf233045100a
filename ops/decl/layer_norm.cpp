// Declaration of layer_norm: input, optional weight and bias, attributes normalized_shape and eps;
// the forward's mean and rstd are extra (non-differentiable) outputs that the fused backward
// kernel reads.
#include "ops/decl/op_decl.h"

// Declarations name only the fields they set (designated initializers); GCC 12 warns about the
// rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tritium::ops::decl {

void declare_layer_norm(OpRegistry& r) {
  using Inputs = std::vector<Tensor>;
  r.add({.name = "layer_norm",
         .torch_name = "torch.nn.functional.layer_norm",
         .inputs = {{.name = "input", .accepts = Accepts::floating},
                    {.name = "weight", .accepts = Accepts::floating, .promotes = false, .optional = true},
                    {.name = "bias", .accepts = Accepts::floating, .promotes = false, .optional = true}},
         .outputs = {"result", "mean", "rstd"},
         .forward = [](const Inputs& in, Attrs& a) {
           LayerNormResult y = layer_norm(in[0], a.get<Shape>("normalized_shape"), in[1], in[2], a.get<double>("eps"));
           return Inputs{y.y, y.mean, y.rstd};
         },
         .autocast = AutocastClass::fp32,
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           LayerNormGrads d = layer_norm_backward(g, c.saved("input"), c.attrs().get<Shape>("normalized_shape"),
                                                  c.saved("weight"), c.saved("mean"), c.saved("rstd"));
           return Inputs{d.dx, d.dweight, d.dbias};
         },
         .fused_saves = {"input", "weight", "mean", "rstd"},
         .fused_backward_name = "layer_norm_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           auto attrs = [](Shape s) { return [s] { return Attrs{{"normalized_shape", s}, {"eps", 1e-5}}; }; };
           return std::vector<GradcheckSample>{
               {"[3,5] over [5] affine",
                {sample_uniform({3, 5}, d, 101, -2, 2), sample_uniform({5}, d, 102, 0.5, 1.5), sample_uniform({5}, d, 103)},
                attrs({5})},
               {"[3,5] over [5] weight only (bias=False)",
                {sample_uniform({3, 5}, d, 105, -2, 2), sample_uniform({5}, d, 106, 0.5, 1.5), Tensor()},
                attrs({5})},
               {"[2,3,4] over [3,4] no affine", {sample_uniform({2, 3, 4}, d, 104, -2, 2), Tensor(), Tensor()}, attrs({3, 4})},
           };
         }});
}

}  // namespace tritium::ops::decl
