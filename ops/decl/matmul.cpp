// Declaration of matmul (torch.matmul: 1-D, 2-D and batched with broadcast batch dims).
#include "ops/decl/op_decl.h"

#include "nn/functional.h"

// Declarations name only the fields they set (designated initializers); GCC 12 warns about the
// rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include "runtime/views.h"

namespace tritium::ops::decl {
namespace {

using Ctx = DerivativeContext;
using Inputs = std::vector<Tensor>;

// With 1-D operands promoted to matrices (self [k] -> [1, k], other [k] -> [k, 1]), grad_self =
// grad @ other^T and grad_other = self^T @ grad; broadcast batch dims are summed away (sum_to)
// and the promotion is undone by a reshape.
Tensor grad_as_matrix(const Tensor& g, const Ctx& c) {
  bool a1 = c.input_shape("self").size() == 1, b1 = c.input_shape("other").size() == 1;
  if (a1 && b1) return g.reshape({1, 1});
  if (a1) return g.unsqueeze(-2);
  if (b1) return g.unsqueeze(-1);
  return g;
}

Tensor grad_self(const Tensor& g, const Ctx& c) {
  const Shape& a_shape = c.input_shape("self");
  const Tensor& b = c.saved("other");
  bool a1 = a_shape.size() == 1;
  Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  Shape a2_shape = a1 ? Shape{1, a_shape[0]} : a_shape;
  Tensor ga = tritium::matmul(grad_as_matrix(g, c), b2.transpose(-1, -2));
  if (ga.shape() != a2_shape) ga = tritium::sum_to(ga, a2_shape);
  return a1 ? ga.reshape(a_shape) : ga;
}

Tensor grad_other(const Tensor& g, const Ctx& c) {
  const Shape& b_shape = c.input_shape("other");
  const Tensor& a = c.saved("self");
  bool b1 = b_shape.size() == 1;
  Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  Shape b2_shape = b1 ? Shape{b_shape[0], 1} : b_shape;
  Tensor gb = tritium::matmul(a2.transpose(-1, -2), grad_as_matrix(g, c));
  if (gb.shape() != b2_shape) gb = tritium::sum_to(gb, b2_shape);
  return b1 ? gb.reshape(b_shape) : gb;
}

}  // namespace

void declare_matmul(OpRegistry& r) {
  r.add({.name = "matmul",
         .torch_name = "torch.matmul",
         .inputs = {{.name = "self"}, {.name = "other"}},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{matmul(in[0], in[1])}; },
         .result_dtype = ResultDType::same_across,
         .autocast = AutocastClass::lower_precision_fp,
         .derivatives = {{.input = "self", .saves = {"other"}, .text = "grad @ other^T", .formula = grad_self},
                         {.input = "other", .saves = {"self"}, .text = "self^T @ grad", .formula = grad_other}},
         .gradcheck_samples = [](Device d) {
           auto u = [d](const Shape& s, uint64_t seed) { return sample_uniform(s, d, seed); };
           return std::vector<GradcheckSample>{
               {"[3,5] @ [5,2]", {u({3, 5}, 61), u({5, 2}, 62)}, [] { return Attrs{}; }},
               {"[5] @ [5]", {u({5}, 63), u({5}, 64)}, [] { return Attrs{}; }},
               {"[5] @ [5,2]", {u({5}, 65), u({5, 2}, 66)}, [] { return Attrs{}; }},
               {"[3,5] @ [5]", {u({3, 5}, 67), u({5}, 68)}, [] { return Attrs{}; }},
               {"[2,3,5] @ [5,2] (broadcast batch)", {u({2, 3, 5}, 69), u({5, 2}, 70)}, [] { return Attrs{}; }},
               {"strided [3,5]^T", {runtime::t_of(u({5, 3}, 71)), u({5, 4}, 72)}, [] { return Attrs{}; }},
           };
         }});
}

}  // namespace tritium::ops::decl
