// Declarations of batch_norm, group_norm and rms_norm (ops/norm.h): fused backward kernels as
// layer_norm's; mean and rstd are extra (non-differentiable) outputs the backward reads.
// batch_norm's running statistics are non-differentiable inputs that the training forward
// updates in place.
#include "ops/decl/op_decl.h"
#include "ops/norm.h"

// Declarations name only the fields they set (designated initializers); GCC 12 warns about the
// rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tritium::ops::decl {

void declare_norm(OpRegistry& r) {
  using Inputs = std::vector<Tensor>;
  const TensorArg param_w{.name = "weight", .accepts = Accepts::floating, .promotes = false, .optional = true};
  const TensorArg param_b{.name = "bias", .accepts = Accepts::floating, .promotes = false, .optional = true};
  auto stat = [](const char* name) {
    return TensorArg{.name = name, .accepts = Accepts::floating, .promotes = false, .optional = true,
                     .differentiable = false};
  };

  r.add({.name = "batch_norm",
         .torch_name = "torch.nn.functional.batch_norm",
         .inputs = {{.name = "input", .accepts = Accepts::floating}, stat("running_mean"), stat("running_var"), param_w,
                    param_b},
         .outputs = {"result", "mean", "rstd"},
         .forward = [](const Inputs& in, Attrs& a) {
           NormResult y = batch_norm(in[0], in[1], in[2], in[3], in[4], a.get<bool>("training"),
                                     a.get<double>("momentum"), a.get<double>("eps"));
           return Inputs{y.y, y.mean, y.rstd};
         },
         .autocast = AutocastClass::fp32,
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           NormGrads d = batch_norm_backward(g, c.saved("input"), c.saved("weight"), c.saved("bias"), c.saved("mean"),
                                             c.saved("rstd"), c.attrs().get<bool>("training"));
           return Inputs{d.dx, Tensor(), Tensor(), d.dweight, d.dbias};
         },
         .fused_saves = {"input", "weight", "bias", "mean", "rstd"},
         .fused_backward_name = "batch_norm_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           auto attrs = [](bool training) {
             return [training] { return Attrs{{"training", training}, {"momentum", 0.1}, {"eps", 1e-5}}; };
           };
           return std::vector<GradcheckSample>{
               {"[4,3] training affine",
                {sample_uniform({4, 3}, d, 301, -2, 2), Tensor(), Tensor(), sample_uniform({3}, d, 302, 0.5, 1.5),
                 sample_uniform({3}, d, 303)},
                attrs(true)},
               {"[2,3,5] training no affine", {sample_uniform({2, 3, 5}, d, 304, -2, 2), Tensor(), Tensor(), Tensor(), Tensor()},
                attrs(true)},
               {"[2,2,3,2] eval affine",
                {sample_uniform({2, 2, 3, 2}, d, 305, -2, 2), sample_uniform({2}, d, 306),
                 sample_uniform({2}, d, 307, 0.5, 1.5), sample_uniform({2}, d, 308, 0.5, 1.5), sample_uniform({2}, d, 309)},
                attrs(false)},
           };
         }});

  r.add({.name = "group_norm",
         .torch_name = "torch.nn.functional.group_norm",
         .inputs = {{.name = "input", .accepts = Accepts::floating}, param_w, param_b},
         .outputs = {"result", "mean", "rstd"},
         .forward = [](const Inputs& in, Attrs& a) {
           NormResult y = group_norm(in[0], a.get<int64_t>("num_groups"), in[1], in[2], a.get<double>("eps"));
           return Inputs{y.y, y.mean, y.rstd};
         },
         .autocast = AutocastClass::fp32,
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           NormGrads d = group_norm_backward(g, c.saved("input"), c.attrs().get<int64_t>("num_groups"), c.saved("weight"),
                                             c.saved("bias"), c.saved("mean"), c.saved("rstd"));
           return Inputs{d.dx, d.dweight, d.dbias};
         },
         .fused_saves = {"input", "weight", "bias", "mean", "rstd"},
         .fused_backward_name = "group_norm_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           auto attrs = [](int64_t g) { return [g] { return Attrs{{"num_groups", g}, {"eps", 1e-5}}; }; };
           return std::vector<GradcheckSample>{
               {"[2,4,3] 2 groups affine",
                {sample_uniform({2, 4, 3}, d, 311, -2, 2), sample_uniform({4}, d, 312, 0.5, 1.5), sample_uniform({4}, d, 313)},
                attrs(2)},
               {"[3,6] 2 groups no affine", {sample_uniform({3, 6}, d, 314, -2, 2), Tensor(), Tensor()}, attrs(2)},
           };
         }});

  r.add({.name = "rms_norm",
         .torch_name = "torch.nn.functional.rms_norm",
         .inputs = {{.name = "input", .accepts = Accepts::floating}, param_w},
         .outputs = {"result", "rstd"},
         .forward = [](const Inputs& in, Attrs& a) {
           NormResult y = rms_norm(in[0], a.get<Shape>("normalized_shape"), in[1], a.get<std::optional<double>>("eps"));
           return Inputs{y.y, y.rstd};
         },
         .autocast = AutocastClass::fp32,
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           NormGrads d = rms_norm_backward(g, c.saved("input"), c.attrs().get<Shape>("normalized_shape"),
                                           c.saved("weight"), c.saved("rstd"));
           return Inputs{d.dx, d.dweight};
         },
         .fused_saves = {"input", "weight", "rstd"},
         .fused_backward_name = "rms_norm_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           auto attrs = [](Shape s, std::optional<double> eps) {
             return [s, eps] { return Attrs{{"normalized_shape", s}, {"eps", eps}}; };
           };
           return std::vector<GradcheckSample>{
               {"[3,5] over [5] weight", {sample_uniform({3, 5}, d, 321, -2, 2), sample_uniform({5}, d, 322, 0.5, 1.5)},
                attrs({5}, 1e-6)},
               {"[2,3,4] over [3,4] no weight eps None", {sample_uniform({2, 3, 4}, d, 323, -2, 2), Tensor()},
                attrs({3, 4}, std::nullopt)},
           };
         }});
}

}  // namespace tritium::ops::decl
