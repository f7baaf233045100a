// Declarations of the matmul family by PyTorch's names (mm, bmm, mv, dot, vdot, addmm, addmv,
// addr, baddbmm, addbmm; kernels in ops/matmul_family.cpp) with derivatives.yaml's formulas,
// written in recorded calls so that a create_graph backward differentiates them again.
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

double beta_of(const Ctx& c) { return c.attrs().get<double>("beta"); }
double alpha_of(const Ctx& c) { return c.attrs().get<double>("alpha"); }

// derivatives.yaml's maybe_multiply: no multiply by 1.
Tensor scaled(const Tensor& t, double s) { return s == 1 ? t : t * Scalar(s); }

// The dtype rule of the family: every tensor argument one float dtype, with PyTorch's message
// naming both ("mm: expected self and mat2 to have the same dtype, but got: f32 != f64").
std::function<DType(const Inputs&, const Attrs&)> same_dtype(const char* op, std::vector<const char*> names) {
  return [op, names](const Inputs& in, const Attrs&) {
    check_matmul_family_dtypes(op, in, names);
    return in[0].dtype();
  };
}

using Samples = std::vector<GradcheckSample>;
Attrs scales(double beta, double alpha) { return Attrs{{"beta", beta}, {"alpha", alpha}}; }

// The declaration of a two-operand product (no attributes). Autocast: PyTorch's CUDA list casts
// mm, mv, bmm to the lower precision, not dot or vdot.
void add_product(OpRegistry& r, const char* name, const char* torch_name, std::vector<const char*> names,
                 Tensor (*forward)(const Tensor&, const Tensor&), Derivative d0, Derivative d1,
                 std::function<Samples(Device)> samples, AutocastClass autocast = AutocastClass::lower_precision_fp) {
  r.add({.name = name,
         .torch_name = torch_name,
         .inputs = {{.name = names[0]}, {.name = names[1]}},
         .forward = [forward](const Inputs& in, Attrs&) { return Inputs{forward(in[0], in[1])}; },
         .result_dtype = ResultDType::custom,
         .custom_result_dtype = same_dtype(name, names),
         .autocast = autocast,
         .derivatives = {std::move(d0), std::move(d1)},
         .gradcheck_samples = std::move(samples)});
}

// The declaration of an add* form: beta * self + alpha * product(in[1], in[2]).
void add_scaled_product(OpRegistry& r, const char* name, const char* torch_name, std::vector<const char*> names,
                        Tensor (*forward)(const Tensor&, const Tensor&, const Tensor&, double, double), Derivative d1,
                        Derivative d2, std::function<Samples(Device)> samples) {
  r.add({.name = name,
         .torch_name = torch_name,
         .inputs = {{.name = names[0]}, {.name = names[1]}, {.name = names[2]}},
         .forward =
             [forward](const Inputs& in, Attrs& a) {
               return Inputs{forward(in[0], in[1], in[2], a.get<double>("beta"), a.get<double>("alpha"))};
             },
         .result_dtype = ResultDType::custom,
         .custom_result_dtype = same_dtype(name, names),
         .autocast = AutocastClass::lower_precision_fp,
         .derivatives = {{.input = "self", .text = "maybe_multiply(grad, beta)",
                          .formula = [](const Tensor& g, const Ctx& c) { return scaled(g, beta_of(c)); }},
                         std::move(d1), std::move(d2)},
         .gradcheck_samples = std::move(samples)});
}

}  // namespace

void declare_matmul_family(OpRegistry& r) {
  auto none = [] { return Attrs{}; };
  auto u = [](Device d) { return [d](const Shape& s, uint64_t seed) { return sample_uniform(s, d, seed); }; };

  add_product(
      r, "mm", "torch.mm", {"self", "mat2"}, &ops::mm,
      {.input = "self", .saves = {"mat2"}, .text = "grad.mm(mat2.t())",
       .formula = [](const Tensor& g, const Ctx& c) { return tritium::mm(g, c.saved("mat2").t()); }},
      {.input = "mat2", .saves = {"self"}, .text = "self.t().mm(grad)",
       .formula = [](const Tensor& g, const Ctx& c) { return tritium::mm(c.saved("self").t(), g); }},
      [u, none](Device d) {
        auto x = u(d);
        return Samples{{"[3,5] @ [5,2]", {x({3, 5}, 301), x({5, 2}, 302)}, none},
                       {"[3,5]^T @ [3,4] (strided)", {runtime::t_of(x({5, 3}, 303)), x({5, 4}, 304)}, none}};
      });
  add_product(
      r, "bmm", "torch.bmm", {"self", "mat2"}, &ops::bmm,
      {.input = "self", .saves = {"mat2"}, .text = "grad.bmm(mat2.transpose(1, 2))",
       .formula = [](const Tensor& g, const Ctx& c) { return tritium::bmm(g, c.saved("mat2").transpose(1, 2)); }},
      {.input = "mat2", .saves = {"self"}, .text = "self.transpose(1, 2).bmm(grad)",
       .formula = [](const Tensor& g, const Ctx& c) { return tritium::bmm(c.saved("self").transpose(1, 2), g); }},
      [u, none](Device d) {
        auto x = u(d);
        return Samples{{"[2,3,4] @ [2,4,3]", {x({2, 3, 4}, 311), x({2, 4, 3}, 312)}, none},
                       {"transposed batch2", {x({3, 2, 4}, 313), runtime::transpose_of(x({3, 5, 4}, 314), 1, 2)}, none}};
      });
  add_product(
      r, "mv", "torch.mv", {"self", "vec"}, &ops::mv,
      {.input = "self", .saves = {"vec"}, .text = "grad.ger(vec)",
       .formula = [](const Tensor& g, const Ctx& c) { return tritium::outer(g, c.saved("vec")); }},
      {.input = "vec", .saves = {"self"}, .text = "self.t().mv(grad)",
       .formula = [](const Tensor& g, const Ctx& c) { return tritium::mv(c.saved("self").t(), g); }},
      [u, none](Device d) {
        auto x = u(d);
        return Samples{{"[3,5] @ [5]", {x({3, 5}, 321), x({5}, 322)}, none}};
      });
  for (auto [name, torch_name, other] : {std::tuple{"dot", "torch.dot", "tensor"}, {"vdot", "torch.vdot", "other"}}) {
    std::string o = other;
    add_product(
        r, name, torch_name, {"self", other}, name == std::string("dot") ? &ops::dot : &ops::vdot,
        {.input = "self", .saves = {o}, .text = "grad * " + o,
         .formula = [o](const Tensor& g, const Ctx& c) { return tritium::mul(g, c.saved(o)); }},
        {.input = o, .saves = {"self"}, .text = "grad * self",
         .formula = [](const Tensor& g, const Ctx& c) { return tritium::mul(g, c.saved("self")); }},
        [u, none](Device d) {
          auto x = u(d);
          return Samples{{"[5] . [5]", {x({5}, 331), x({5}, 332)}, none}};
        },
        AutocastClass::promote);  // PyTorch's autocast promote list
  }

  add_scaled_product(
      r, "addmm", "torch.addmm", {"self", "mat1", "mat2"}, &ops::addmm,
      {.input = "mat1", .saves = {"mat2"}, .text = "grad.mm(mat2.t()) * alpha",
       .formula = [](const Tensor& g, const Ctx& c) { return scaled(tritium::mm(g, c.saved("mat2").t()), alpha_of(c)); }},
      {.input = "mat2", .saves = {"mat1"}, .text = "mat1.t().mm(grad) * alpha",
       .formula = [](const Tensor& g, const Ctx& c) { return scaled(tritium::mm(c.saved("mat1").t(), g), alpha_of(c)); }},
      [u](Device d) {
        auto x = u(d);
        return Samples{{"[3,2] + [3,4] @ [4,2], beta 0.5, alpha 2", {x({3, 2}, 341), x({3, 4}, 342), x({4, 2}, 343)},
                        [] { return scales(0.5, 2); }},
                       {"[2] (broadcast) + [3,4]^T @ [4,2]",
                        {x({2}, 344), runtime::t_of(x({4, 3}, 345)), x({4, 2}, 346)}, [] { return scales(1, 1); }}};
      });
  add_scaled_product(
      r, "addmv", "torch.addmv", {"self", "mat", "vec"}, &ops::addmv,
      {.input = "mat", .saves = {"vec"}, .text = "grad.ger(vec) * alpha",
       .formula = [](const Tensor& g, const Ctx& c) { return scaled(tritium::outer(g, c.saved("vec")), alpha_of(c)); }},
      {.input = "vec", .saves = {"mat"}, .text = "mat.t().mv(grad) * alpha",
       .formula = [](const Tensor& g, const Ctx& c) { return scaled(tritium::mv(c.saved("mat").t(), g), alpha_of(c)); }},
      [u](Device d) {
        auto x = u(d);
        return Samples{{"[3] + [3,4] @ [4], beta 2, alpha -1", {x({3}, 351), x({3, 4}, 352), x({4}, 353)},
                        [] { return scales(2, -1); }}};
      });
  add_scaled_product(
      r, "addr", "torch.addr", {"self", "vec1", "vec2"}, &ops::addr,
      {.input = "vec1", .saves = {"vec2"}, .text = "grad.mv(vec2) * alpha",
       .formula = [](const Tensor& g, const Ctx& c) { return scaled(tritium::mv(g, c.saved("vec2")), alpha_of(c)); }},
      {.input = "vec2", .saves = {"vec1"}, .text = "grad.t().mv(vec1) * alpha",
       .formula = [](const Tensor& g, const Ctx& c) { return scaled(tritium::mv(g.t(), c.saved("vec1")), alpha_of(c)); }},
      [u](Device d) {
        auto x = u(d);
        return Samples{{"[3,4] + [3] x [4], beta 0.5, alpha 3", {x({3, 4}, 361), x({3}, 362), x({4}, 363)},
                        [] { return scales(0.5, 3); }}};
      });
  add_scaled_product(
      r, "baddbmm", "torch.baddbmm", {"self", "batch1", "batch2"}, &ops::baddbmm,
      {.input = "batch1", .saves = {"batch2"}, .text = "grad.bmm(batch2.transpose(1, 2)) * alpha",
       .formula =
           [](const Tensor& g, const Ctx& c) {
             return scaled(tritium::bmm(g, c.saved("batch2").transpose(1, 2)), alpha_of(c));
           }},
      {.input = "batch2", .saves = {"batch1"}, .text = "batch1.transpose(1, 2).bmm(grad) * alpha",
       .formula =
           [](const Tensor& g, const Ctx& c) {
             return scaled(tritium::bmm(c.saved("batch1").transpose(1, 2), g), alpha_of(c));
           }},
      [u](Device d) {
        auto x = u(d);
        return Samples{{"[3,2] (broadcast) + [2,3,4] @ [2,4,2], beta 0.5, alpha 2",
                        {x({3, 2}, 371), x({2, 3, 4}, 372), x({2, 4, 2}, 373)}, [] { return scales(0.5, 2); }}};
      });
  // addbmm: grad [n, m] is the same for every batch: expanded (stride 0) to [b, n, m].
  auto expand_grad = [](const Tensor& g, const Ctx& c) {
    const Shape& b1 = c.input_shape("batch1");
    return g.unsqueeze(0).expand({b1[0], g.size(0), g.size(1)});
  };
  add_scaled_product(
      r, "addbmm", "torch.addbmm", {"self", "batch1", "batch2"}, &ops::addbmm,
      {.input = "batch1", .saves = {"batch2"},
       .text = "grad.unsqueeze(0).expand({b, n, m}).bmm(batch2.transpose(1, 2)) * alpha",
       .formula =
           [expand_grad](const Tensor& g, const Ctx& c) {
             return scaled(tritium::bmm(expand_grad(g, c), c.saved("batch2").transpose(1, 2)), alpha_of(c));
           }},
      {.input = "batch2", .saves = {"batch1"},
       .text = "batch1.transpose(1, 2).bmm(grad.unsqueeze(0).expand({b, n, m})) * alpha",
       .formula =
           [expand_grad](const Tensor& g, const Ctx& c) {
             return scaled(tritium::bmm(c.saved("batch1").transpose(1, 2), expand_grad(g, c)), alpha_of(c));
           }},
      [u](Device d) {
        auto x = u(d);
        return Samples{{"[3,2] + sum_b [2,3,4] @ [2,4,2], beta 0.5, alpha 2",
                        {x({3, 2}, 381), x({2, 3, 4}, 382), x({2, 4, 2}, 383)}, [] { return scales(0.5, 2); }}};
      });
}

}  // namespace tritium::ops::decl
