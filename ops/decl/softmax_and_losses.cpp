// Declarations of softmax, log_softmax (attribute dim; backward kernels from the output) and
// cross_entropy (logits and integer targets; a fused backward kernel for the logits).
#include "ops/decl/op_decl.h"

#include "nn/autograd.h"
#include "nn/functional.h"

// Declarations name only the fields they set (designated initializers); GCC 12 warns about the
// rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include "runtime/views.h"

namespace tritium::ops::decl {
namespace {

using Ctx = DerivativeContext;
using Inputs = std::vector<Tensor>;

std::vector<GradcheckSample> softmax_samples(Device d) {
  auto dim = [](int v) { return [v] { return Attrs{{"dim", v}}; }; };
  return {
      {"[3,5] dim -1", {sample_uniform({3, 5}, d, 81, -2, 2)}, dim(-1)},
      {"[3,5] dim 0", {sample_uniform({3, 5}, d, 82, -2, 2)}, dim(0)},
      {"[2,3,4] dim 1", {sample_uniform({2, 3, 4}, d, 83, -2, 2)}, dim(1)},
      {"strided [3,5] dim 1", {runtime::t_of(sample_uniform({5, 3}, d, 84, -2, 2))}, dim(1)},
  };
}

// The backward in recorded ops, for create_graph (the fused kernel serves the plain backward).
using RecordedBackward = Tensor (*)(const Tensor& grad, const Tensor& result, int dim);
Tensor softmax_backward_recorded(const Tensor& g, const Tensor& y, int dim) {
  return y * (g - tritium::sum(g * y, {dim}, /*keepdim=*/true));
}
Tensor log_softmax_backward_recorded(const Tensor& g, const Tensor& y, int dim) {
  return g - tritium::exp(y) * tritium::sum(g, {dim}, /*keepdim=*/true);
}

OpDecl softmax_like(std::string name, Tensor (*fw)(const Tensor&, int),
                    Tensor (*bw)(const Tensor&, const Tensor&, int), RecordedBackward recorded, std::string text) {
  OpDecl op;
  op.torch_name = "torch." + name;
  op.name = std::move(name);
  op.inputs = {{.name = "self", .accepts = Accepts::floating}};
  op.forward = [fw](const Inputs& in, Attrs& a) { return Inputs{fw(in[0], a.get<int>("dim"))}; };
  op.autocast = AutocastClass::fp32;
  op.derivatives = {{.input = "self", .saves = {"result"}, .text = std::move(text),
                     .formula = [bw, recorded](const Tensor& g, const Ctx& c) {
                       int dim = c.attrs().get<int>("dim");
                       return nn::grad_enabled() ? recorded(g, c.saved("result"), dim) : bw(g, c.saved("result"), dim);
                     }}};
  op.gradcheck_samples = softmax_samples;
  return op;
}

}  // namespace

void declare_softmax_and_losses(OpRegistry& r) {
  r.add(softmax_like("softmax", softmax, softmax_backward, softmax_backward_recorded,
                     "softmax_backward(grad, result, dim)"));
  r.add(softmax_like("log_softmax", log_softmax, log_softmax_backward, log_softmax_backward_recorded,
                     "log_softmax_backward(grad, result, dim)"));
  r.add({.name = "cross_entropy",
         .torch_name = "torch.nn.functional.cross_entropy",
         .inputs = {{.name = "self", .accepts = Accepts::floating},
                    {.name = "target", .accepts = Accepts::integral_index, .promotes = false, .differentiable = false}},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{cross_entropy(in[0], in[1])}; },
         .autocast = AutocastClass::fp32,
         .derivatives = {{.input = "self", .saves = {"self", "target"}, .text = "cross_entropy_backward(grad, self, target)",
                          .formula = [](const Tensor& g, const Ctx& c) {
                            return cross_entropy_backward(g, c.saved("self"), c.saved("target"));
                          }}},
         .twice_differentiable = false,  // cross_entropy_backward is a fused kernel
         .gradcheck_samples = [](Device d) {
           Generator gen(91);
           Tensor t = randint(0, 5, {4}, gen, DType::i64, d);
           return std::vector<GradcheckSample>{
               {"[4,5]", {sample_uniform({4, 5}, d, 92, -3, 3), t}, [] { return Attrs{}; }},
               {"strided [4,5]", {runtime::t_of(sample_uniform({5, 4}, d, 93, -3, 3)), t}, [] { return Attrs{}; }},
           };
         }});
}

}  // namespace tritium::ops::decl
