// Declaration of dropout (training mode; nn/functional.h's dropout returns its input when not
// training): attributes p and the generator; the forward stores the random stream it drew
// (attribute "state"), from which the backward regenerates the keep mask.
#include "ops/decl/op_decl.h"

// Declarations name only the fields they set (designated initializers); GCC 12 warns about the
// rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <memory>

namespace tritium::ops::decl {

void declare_dropout(OpRegistry& r) {
  using Inputs = std::vector<Tensor>;
  r.add({.name = "dropout",
         .torch_name = "torch.nn.functional.dropout",
         .inputs = {{.name = "input", .accepts = Accepts::floating}},
         .forward = [](const Inputs& in, Attrs& a) {
           DropoutState state;
           Tensor y = dropout(in[0], a.get<double>("p"), *a.get<Generator*>("generator"), &state);
           a.set("state", state);
           return Inputs{y};
         },
         .derivatives = {{.input = "input", .text = "dropout_backward(grad, state)",
                          .formula = [](const Tensor& g, const DerivativeContext& c) {
                            return dropout_backward(g, c.attrs().get<DropoutState>("state"));
                          }}},
         .twice_differentiable = false,  // dropout_backward is a fused kernel
         // Each evaluation restarts the generator, so the finite differences see one mask.
         .gradcheck_samples = [](Device d) {
           auto gen = std::make_shared<Generator>(0);
           auto attrs = [gen](double p) {
             return [gen, p] {
               gen->manual_seed(121);
               return Attrs{{"p", p}, {"generator", gen.get()}};
             };
           };
           return std::vector<GradcheckSample>{
               {"p 0.3", {sample_uniform({4, 5}, d, 122)}, attrs(0.3)},
               {"p 0", {sample_uniform({4, 5}, d, 123)}, attrs(0.0)},
           };
         }});
}

}  // namespace tritium::ops::decl
