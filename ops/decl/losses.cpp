// Declarations of the losses with fused kernels (ops/losses.h): cross_entropy_loss (the full
// torch.nn.functional.cross_entropy) and nll_loss. The target and the class weight are not
// differentiable; the per-row log-sum-exp, the per-row aux values and the total weight are extra
// outputs the fused backward reads. The element-wise losses are compositions (nn/loss.cpp).
#include "ops/decl/op_decl.h"
#include "ops/losses.h"

// Declarations name only the fields they set (designated initializers); GCC 12 warns about the
// rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tritium::ops::decl {

namespace {

using Inputs = std::vector<Tensor>;

Reduction reduction_of(const char* op, const Attrs& a) { return parse_reduction(op, a.get<std::string>("reduction")); }

Tensor labels(Device d, uint64_t seed, Shape shape, int64_t classes, int64_t ignore_at = -1) {
  Generator gen(seed);
  Tensor t = randint(0, classes, shape, gen, DType::i64, d);
  if (ignore_at >= 0) {
    Tensor one = t.as_strided({1}, {1}, ignore_at);
    fill_(one, Scalar(int64_t{-100}));
  }
  return t;
}

}  // namespace

void declare_losses(OpRegistry& r) {
  const TensorArg target{.name = "target", .accepts = Accepts::any, .promotes = false, .differentiable = false};
  const TensorArg weight{.name = "weight", .accepts = Accepts::floating, .promotes = false, .optional = true,
                         .differentiable = false};

  r.add({.name = "cross_entropy_loss",
         .torch_name = "torch.nn.functional.cross_entropy",
         .inputs = {{.name = "self", .accepts = Accepts::floating}, target, weight},
         .outputs = {"result", "lse", "aux", "total_weight"},
         .forward = [](const Inputs& in, Attrs& a) {
           ClassLossResult y = cross_entropy_loss(in[0], in[1], in[2], a.get<int64_t>("ignore_index"),
                                                  reduction_of("cross_entropy", a), a.get<double>("label_smoothing"));
           return Inputs{y.loss, y.lse, y.aux, y.total_weight};
         },
         .autocast = AutocastClass::fp32,
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           const Attrs& a = c.attrs();
           Tensor dx = cross_entropy_loss_backward(g, c.saved("self"), c.saved("target"), c.saved("weight"),
                                                   a.get<int64_t>("ignore_index"), reduction_of("cross_entropy", a),
                                                   a.get<double>("label_smoothing"), c.saved("lse"), c.saved("aux"),
                                                   c.saved("total_weight"));
           return Inputs{dx, Tensor(), Tensor()};
         },
         .fused_saves = {"self", "target", "weight", "lse", "aux", "total_weight"},
         .fused_backward_name = "cross_entropy_loss_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           auto attrs = [](int64_t ignore, std::string red, double ls) {
             return [=] { return Attrs{{"ignore_index", ignore}, {"reduction", red}, {"label_smoothing", ls}}; };
           };
           return std::vector<GradcheckSample>{
               {"[4,5] mean", {sample_uniform({4, 5}, d, 401, -3, 3), labels(d, 402, {4}, 5), Tensor()},
                attrs(-100, "mean", 0.0)},
               {"[5,3] weight ignore_index smoothing mean",
                {sample_uniform({5, 3}, d, 403, -3, 3), labels(d, 404, {5}, 3, 2), sample_uniform({3}, d, 405, 0.5, 2)},
                attrs(-100, "mean", 0.2)},
               {"[2,3,4] none", {sample_uniform({2, 3, 4}, d, 406, -3, 3), labels(d, 407, {2, 4}, 3), Tensor()},
                attrs(-100, "none", 0.0)},
               {"[3,4] probabilities sum weight",
                {sample_uniform({3, 4}, d, 408, -3, 3), sample_uniform({3, 4}, d, 409, 0, 1), sample_uniform({4}, d, 410, 0.5, 2)},
                attrs(-100, "sum", 0.1)},
           };
         }});

  r.add({.name = "nll_loss",
         .torch_name = "torch.nn.functional.nll_loss",
         .inputs = {{.name = "self", .accepts = Accepts::floating}, target, weight},
         .outputs = {"result", "aux", "total_weight"},
         .forward = [](const Inputs& in, Attrs& a) {
           ClassLossResult y = nll_loss(in[0], in[1], in[2], a.get<int64_t>("ignore_index"), reduction_of("nll_loss", a));
           return Inputs{y.loss, y.aux, y.total_weight};
         },
         .autocast = AutocastClass::fp32,
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           const Attrs& a = c.attrs();
           Tensor dx = nll_loss_backward(g, c.saved("self"), c.saved("target"), c.saved("weight"),
                                         a.get<int64_t>("ignore_index"), reduction_of("nll_loss", a), c.saved("aux"),
                                         c.saved("total_weight"));
           return Inputs{dx, Tensor(), Tensor()};
         },
         .fused_saves = {"self", "target", "weight", "aux", "total_weight"},
         .fused_backward_name = "nll_loss_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           auto attrs = [](std::string red) {
             return [=] { return Attrs{{"ignore_index", int64_t{-100}}, {"reduction", red}}; };
           };
           return std::vector<GradcheckSample>{
               {"[4,5] mean weight ignore", {sample_uniform({4, 5}, d, 421, -3, 0), labels(d, 422, {4}, 5, 1),
                                             sample_uniform({5}, d, 423, 0.5, 2)}, attrs("mean")},
               {"[2,3,4] none", {sample_uniform({2, 3, 4}, d, 424, -3, 0), labels(d, 425, {2, 4}, 3), Tensor()},
                attrs("none")},
           };
         }});
}

}  // namespace tritium::ops::decl
